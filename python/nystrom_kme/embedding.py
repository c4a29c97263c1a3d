"""Kernel mean embeddings: the empirical one (eq. 2) and the Nyström one (eq. 5).

An embedding is stored as a weighted point set, mu = sum_j w_j phi(z_j), with
``support_`` (m, d), ``weights_`` (m,) and the resolved ``kernel_``. Evaluations,
inner products, norms and distances are streaming sums in the compiled core:
no matrix larger than a block is ever formed.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import numpy as np

from . import _core
from ._validation import (
    as_data_matrix,
    as_weights,
    check_positive_int,
    check_random_state,
    common_dtype,
    n_threads_arg,
)
from .chunked import CompensatedSum, RowSource, add_row_sums, is_chunked_source, is_dask_array
from .kernels import MEDIAN_SUBSET, Kernel, get_kernel
from .sampling import (
    FixedLandmarks,
    UniformSampling,
    landmark_points,
    resolve_sampler,
    validate_indices,
)

SOLVERS = ("auto", "cod", "cholesky")
#: n_landmarks="auto" takes at most this many times the paper's sqrt(n) log sqrt(n).
AUTO_CAP_FACTOR = 4


def default_n_landmarks(n_samples: int) -> int:
    """The paper's m = ceil(sqrt(n) log sqrt(n)), at least 1 and at most n (Cor. 4.1)."""
    root = math.sqrt(n_samples)
    return int(min(n_samples, max(1, math.ceil(root * math.log(root)))))


class KernelMeanEmbedding:
    """Base class: a fitted embedding mu = sum_j weights_[j] phi(support_[j]).

    Attributes (after ``fit``)
    --------------------------
    support_ : ndarray of shape (m, n_features), float32 or float64
    weights_ : ndarray of shape (m,), float64
    kernel_ : Kernel, with a numeric bandwidth
    n_samples_ : int
    n_features_in_ : int
    """

    def _check_fitted(self) -> None:
        if not hasattr(self, "weights_"):
            raise RuntimeError(f"this {type(self).__name__} is not fitted yet; call fit(X) first")

    def __call__(self, Y: Any) -> np.ndarray:
        """Evaluate the embedding: mu(y) = sum_j w_j k(z_j, y) for each row y of Y.

        Parameters
        ----------
        Y : array-like of shape (n_points, n_features)

        Returns
        -------
        ndarray of shape (n_points,), float64
        """
        self._check_fitted()
        Y = as_data_matrix(Y, "Y")
        if Y.shape[1] != self.n_features_in_:
            raise ValueError(f"Y has {Y.shape[1]} features but the embedding has {self.n_features_in_}")
        Y, S = common_dtype(Y, self.support_)
        out = _core.kernel_sums(Y, S, self.weights_.reshape(-1, 1), self.kernel_.to_core(),
                                n_threads_arg(getattr(self, "n_threads", None)))
        return out[:, 0]

    def inner(self, other: KernelMeanEmbedding) -> float:
        """RKHS inner product <self, other> = w^T K(Z, Z') w'. See :func:`inner_product`."""
        return inner_product(self, other)

    def norm(self) -> float:
        """RKHS norm ||mu||."""
        return math.sqrt(max(inner_product(self, self), 0.0))

    def distance(self, other: KernelMeanEmbedding) -> float:
        """RKHS distance ||self - other|| (the MMD between the two embeddings)."""
        return rkhs_distance(self, other)


def _parts(embedding: KernelMeanEmbedding) -> tuple[np.ndarray, np.ndarray, Kernel]:
    if not isinstance(embedding, KernelMeanEmbedding):
        raise ValueError(f"expected a fitted embedding, got {type(embedding).__name__}")
    embedding._check_fitted()
    return embedding.support_, embedding.weights_, embedding.kernel_


def inner_product(a: KernelMeanEmbedding, b: KernelMeanEmbedding, *, n_threads: int | None = None) -> float:
    """<mu_a, mu_b> in the RKHS, by one streaming pass over both supports.

    Costs O(m_a m_b d) time and O(min(m_a, m_b)) extra memory. Both embeddings must
    use the same kernel (same type and bandwidth).
    """
    Za, wa, ka = _parts(a)
    Zb, wb, kb = _parts(b)
    if ka != kb:
        raise ValueError(f"the embeddings use different kernels: {ka!r} and {kb!r}")
    if Za.shape[1] != Zb.shape[1]:
        raise ValueError(f"the embeddings live in R^{Za.shape[1]} and R^{Zb.shape[1]}")
    if Za.shape[0] > Zb.shape[0]:  # the smaller support is the output side
        Za, wa, Zb, wb = Zb, wb, Za, wa
    Za, Zb = common_dtype(Za, Zb)
    s = _core.kernel_sums(Za, Zb, wb.reshape(-1, 1), ka.to_core(), n_threads_arg(n_threads))
    return float(wa @ s[:, 0])


def rkhs_distance(a: KernelMeanEmbedding, b: KernelMeanEmbedding, *, n_threads: int | None = None) -> float:
    """||mu_a - mu_b|| = sqrt(<a, a> + <b, b> - 2 <a, b>), clamped at 0 against round-off."""
    d2 = (inner_product(a, a, n_threads=n_threads) + inner_product(b, b, n_threads=n_threads)
          - 2.0 * inner_product(a, b, n_threads=n_threads))
    return math.sqrt(max(d2, 0.0))


class EmpiricalKME(KernelMeanEmbedding):
    """Empirical kernel mean embedding mu_hat = (1/n) sum_i phi(x_i) (paper eq. 2).

    Parameters
    ----------
    kernel : Kernel or str, default="gaussian"
        A Kernel instance or a name; radial kernels given by name use the median
        heuristic for their bandwidth.
    random_state : None, int or numpy.random.Generator
        Only used by the median heuristic.
    n_threads : int or None
        OpenMP threads for the core (None: all); results do not depend on it.
    """

    def __init__(self, kernel: Kernel | str = "gaussian", *, random_state: Any = None,
                 n_threads: int | None = None) -> None:
        self.kernel = kernel
        self.random_state = random_state
        self.n_threads = n_threads

    def fit(self, X: Any, sample_weight: Any = None) -> EmpiricalKME:
        """Store X (n, d) and the weights 1/n (or ``sample_weight`` normalised)."""
        X = as_data_matrix(X, "X")
        n = X.shape[0]
        n_threads_arg(self.n_threads)
        rng = check_random_state(self.random_state)
        self.kernel_ = get_kernel(self.kernel).resolve(X, rng)
        self.support_ = X
        self.weights_ = (np.full(n, 1.0 / n) if sample_weight is None
                         else as_weights(sample_weight, n))
        self.n_samples_ = n
        self.n_features_in_ = X.shape[1]
        return self


class NystromKME(KernelMeanEmbedding):
    """Nyström kernel mean embedding (Chatalic et al., 2022, eq. 5).

    mu_m = sum_j alpha_j phi(l_j) is the orthogonal projection of the empirical
    embedding onto span{phi(l_1), ..., phi(l_m)}, with landmarks l_j drawn by
    ``sampler`` (by default uniformly with replacement from X, the paper's setting)
    and alpha = (1/n) K_m^+ K_mn 1_n. Costs O(n m d + m^3) time and O(m^2 + m d)
    memory plus the sampler's cost; K_mn is never stored.

    Parameters
    ----------
    kernel : Kernel or str, default="gaussian"
        A Kernel instance or a name; radial kernels given by name use the median
        heuristic for their bandwidth.
    n_landmarks : int, None or "auto", default=None
        m, with 1 <= m <= n_samples. None: ceil(sqrt(n) log sqrt(n)) capped at n,
        the size for which the paper's Corollary 4.1 keeps the O(1/sqrt(n)) rate.
        "auto": :func:`nystrom_kme.bounds.suggest_n_landmarks` fits the decay of the
        estimated covariance spectrum and applies Corollary 4.1, capped at
        4 ceil(sqrt(n) log sqrt(n)) (the corollary's constants are conservative);
        its report is kept in ``n_landmarks_report_``.
    solver : {"auto", "cod", "cholesky"}, default="auto"
        How K_m alpha = s is solved. "cod": complete orthogonal decomposition of
        K_m, the minimum-norm solution K_m^+ s of eq. 5. "cholesky": merge
        duplicate landmarks, then Cholesky; fails on a numerically singular K_m.
        "auto": Cholesky when its estimated RKHS error is below 1e-12 of the
        embedding's norm, else COD. All give the same embedding.
    rcond : float or None, default=None
        COD rank threshold relative to the largest pivot; None: m * machine epsilon.
    sampler : str, SamplingPolicy, array-like or callable, default="uniform"
        How landmarks are chosen: a name of :data:`nystrom_kme.sampling.SAMPLER_NAMES`
        ("uniform" is uniform with replacement, the paper's guarantee), a policy
        object with ``select_indices(X, kernel, n_landmarks, rng)``, a function of
        that signature, user-supplied landmark row indices (1-D ints) or landmark
        points (2-D, n_features columns; then ``landmark_indices_`` is None). With
        explicit landmarks ``n_landmarks`` must be None or their number. Pivoted
        Cholesky and farthest-point policies may return fewer than m landmarks
        when the kernel matrix has numerical rank below m. ``sample_weight``
        weights the uniform draws; the other policies select on X unweighted.
    random_state : None, int or numpy.random.Generator
        Landmark sampling and the median heuristic.
    n_threads : int or None
        OpenMP threads for the core (None: all); results do not depend on it.
    chunk_rows : int or None, default=None
        Rows per read when ``fit`` streams a chunked source (memmap, h5py, zarr);
        None: about 16 MiB of data. Rounded up to a multiple of the core's block.
    passes : {2, 1}, default=2
        How ``fit`` reads a chunked source: 2 draws the landmarks over all rows
        (the in-memory fit's draws), 1 takes them from the first chunk(s) in a
        single read (generators). See :meth:`fit`.

    Attributes
    ----------
    landmarks_ : ndarray of shape (m, n_features), dtype of X
    landmark_indices_ : ndarray of shape (m,), int64 rows of X (None for given points)
    sampler_ : the resolved sampling policy (None for given points); policies keep
        what they computed, e.g. ``sampler_.scores_`` for "rls"
    weights_ : ndarray of shape (m,), float64 (alpha)
    support_ : alias of landmarks_
    kernel_ : Kernel with a numeric bandwidth
    n_samples_, n_features_in_ : int
    solver_ : str, the solver actually used ("cholesky" or "cod")
    rank_ : int, numerical rank of K_m (COD) or number of distinct landmarks
    s_sum_ : ndarray of shape (m,), float64, sufficient statistic sum_i w_i k(L, x_i)
        (w_i = 1 unweighted); weights_ = K_m^+ s_sum_ / weight_sum_
    weight_sum_ : float, sum_i w_i (n_samples_ unweighted)
    """

    def __init__(self, kernel: Kernel | str = "gaussian", *, n_landmarks: int | None = None,
                 solver: str = "auto", rcond: float | None = None, sampler: Any = "uniform",
                 random_state: Any = None, n_threads: int | None = None,
                 chunk_rows: int | None = None, passes: int = 2) -> None:
        self.kernel = kernel
        self.n_landmarks = n_landmarks
        self.solver = solver
        self.rcond = rcond
        self.sampler = sampler
        self.random_state = random_state
        self.n_threads = n_threads
        self.chunk_rows = chunk_rows
        self.passes = passes

    # ------------------------------------------------------------------ #
    # shared steps of fit / partial_fit / merge
    # ------------------------------------------------------------------ #
    def _solver_args(self) -> tuple[float, int]:
        """Validated (rcond, n_threads)."""
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {self.solver!r}")
        rcond = 0.0 if self.rcond is None else float(self.rcond)
        if not (math.isfinite(rcond) and 0.0 <= rcond < 1.0):
            raise ValueError(f"rcond must be in [0, 1), got {self.rcond!r}")
        return rcond, n_threads_arg(self.n_threads)

    def _landmark_spec(self, X: np.ndarray) -> tuple[np.ndarray | None, Any, int | None]:
        """(given landmark points or None, resolved policy or None, number of given landmarks)."""
        points = landmark_points(self.sampler, X)
        policy = None if points is not None else resolve_sampler(self.sampler)
        n_given = (points.shape[0] if points is not None
                   else policy.indices.size if isinstance(policy, FixedLandmarks) else None)
        return points, policy, n_given

    def _resolve_m(self, n: int, n_given: int | None, *, streaming: str | None = None) -> int | None:
        """m for n rows (None: "auto", resolved later). ``streaming`` names the mode that
        cannot look at all of X, where "auto" is refused."""
        if n_given is not None:
            if self.n_landmarks is not None and self.n_landmarks != n_given:
                raise ValueError(f"n_landmarks={self.n_landmarks!r} but the sampler gives "
                                 f"{n_given} landmarks; leave n_landmarks=None")
            return n_given
        if self.n_landmarks is None:
            return default_n_landmarks(n)
        if isinstance(self.n_landmarks, str) and self.n_landmarks == "auto":
            if streaming is not None:
                raise ValueError(f"n_landmarks='auto' needs all of X in memory; {streaming} "
                                 "needs an integer n_landmarks (or explicit landmarks)")
            return None
        m = check_positive_int(self.n_landmarks, "n_landmarks")
        if m > n:
            raise ValueError(f"n_landmarks={m} exceeds n_samples={n}")
        return m

    def _select(self, X: np.ndarray, w: np.ndarray | None, rng: np.random.Generator,
                points: np.ndarray | None, policy: Any,
                m: int | None) -> tuple[Kernel, np.ndarray | None, np.ndarray]:
        """Resolve the kernel on X and pick the landmarks among its rows (in memory)."""
        n = X.shape[0]
        kernel = get_kernel(self.kernel).resolve(X, rng)
        self.n_landmarks_report_ = None
        if m is None:
            from .bounds import suggest_n_landmarks

            report = suggest_n_landmarks(X, kernel, random_state=rng, n_threads=self.n_threads,
                                         max_landmarks=AUTO_CAP_FACTOR * default_n_landmarks(n))
            self.n_landmarks_report_ = report
            m = min(n, report.n_landmarks)

        if points is not None:
            return kernel, None, points
        if w is not None and isinstance(policy, UniformSampling):
            # weighted data: uniform draws become draws proportional to w
            indices = rng.choice(n, size=m, replace=policy.replace, p=w)
        else:
            # default: the paper's sampling, uniform with replacement
            indices = policy.select_indices(X, kernel, m, rng)
        indices = validate_indices(indices, n, "the indices returned by the sampler")
        return kernel, indices, np.ascontiguousarray(X[indices])

    def _store(self, kernel: Kernel, policy: Any, indices: np.ndarray | None,
               landmarks: np.ndarray, acc: CompensatedSum, weight_sum: float, n: int,
               rcond: float, n_threads: int, s: np.ndarray | None = None) -> NystromKME:
        """Solve K_m alpha = s (s = row sums / total weight unless given) and set the attributes."""
        if not weight_sum > 0:
            raise ValueError("the total sample weight must be positive")
        if s is None:
            s = acc.value() / weight_sum
        alpha, used, rank = _core.nystrom_weights(landmarks, s.reshape(-1, 1), kernel.to_core(),
                                                  self.solver, rcond, 1e-12, n_threads)
        self.kernel_ = kernel
        self.landmark_indices_ = indices
        self.sampler_ = policy
        self.landmarks_ = landmarks
        self.support_ = landmarks
        self.weights_ = np.ascontiguousarray(alpha[:, 0])
        self.n_samples_ = int(n)
        self.n_features_in_ = landmarks.shape[1]
        self.solver_ = used
        self.rank_ = int(rank)
        self._acc = acc
        self.s_sum_ = acc.value()
        self.weight_sum_ = float(weight_sum)
        return self

    # ------------------------------------------------------------------ #
    # fitting
    # ------------------------------------------------------------------ #
    def fit(self, X: Any, sample_weight: Any = None) -> NystromKME:
        """Fit on X of shape (n_samples, n_features), float32 or float64.

        ``sample_weight`` (n,), non-negative, makes the target the weighted empirical
        embedding; landmarks are then drawn with probability proportional to it.

        X may also be a source that does not fit in memory (see
        :mod:`nystrom_kme.chunked`): a ``numpy.memmap``, an h5py or zarr dataset, a
        list of 2-D chunks, a callable returning an iterator of chunks, or a
        generator of chunks; or a dask array chunked by rows (see
        :mod:`nystrom_kme.distributed`). These are streamed in blocks of
        ``chunk_rows`` rows with peak memory O(chunk_rows d + m d + m^2),
        independent of n:

        * ``passes=2`` (default): landmarks are drawn uniformly over all rows, with
          the same random draws as the in-memory fit, then gathered by index; then
          the row sums are streamed. For an array-like source (memmap, h5py, zarr)
          the result is bit-identical to ``fit(np.asarray(X))`` (same landmarks,
          same row sums, same weights). Iterables of chunks are read three times
          (count the rows, gather the landmarks, sum) and must be re-iterable (a
          list, or a callable returning a fresh iterator); their landmarks are the
          in-memory fit's too, their sums agree to ~1e-16 relative. Only the
          "uniform" samplers and explicit landmarks work on all rows.
        * ``passes=1``: one read. The first chunk(s), at least m rows, are pooled;
          the kernel bandwidth ("median") and the landmarks (any sampler) are taken
          from that pool, then all rows are summed. Works with generators. The
          landmarks then only represent the start of the stream: shuffle ordered
          data first. m must be an integer unless the source's length is known.

        ``sample_weight`` is not supported for chunked sources; weight each chunk
        with :meth:`partial_fit` instead.
        """
        if is_dask_array(X):
            from .distributed import fit_dask

            return fit_dask(self, X, sample_weight)
        if is_chunked_source(X):
            return self._fit_stream(X, sample_weight)
        X = as_data_matrix(X, "X")
        n = X.shape[0]
        rcond, n_threads = self._solver_args()
        points, policy, n_given = self._landmark_spec(X)
        m = self._resolve_m(n, n_given)
        w = None if sample_weight is None else as_weights(sample_weight, n)
        rng = check_random_state(self.random_state)
        kernel, indices, landmarks = self._select(X, w, rng, points, policy, m)
        core_kernel = kernel.to_core()
        if w is None:
            sums = _core.kernel_row_sums(landmarks, X, core_kernel, n_threads)
            s = sums / n
            acc, total = CompensatedSum.of(sums), float(n)
        else:
            s = _core.kernel_sums(landmarks, X, w.reshape(-1, 1), core_kernel, n_threads)[:, 0]
            total = float(np.sum(np.asarray(sample_weight, dtype=np.float64)))
            acc = CompensatedSum.of(s * total)
        return self._store(kernel, policy, indices, landmarks, acc, total, n, rcond, n_threads, s)

    def _fit_stream(self, X: Any, sample_weight: Any) -> NystromKME:
        """fit on a chunked source (see :meth:`fit`)."""
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported with a chunked source; call "
                             "partial_fit(chunk, sample_weight=...) for each chunk instead")
        if self.passes not in (1, 2) or isinstance(self.passes, bool):
            raise ValueError(f"passes must be 1 or 2, got {self.passes!r}")
        if self.chunk_rows is not None:
            check_positive_int(self.chunk_rows, "chunk_rows")
        rcond, n_threads = self._solver_args()
        src = RowSource(X, self.chunk_rows)
        rng = check_random_state(self.random_state)
        if self.passes == 1:
            return self._fit_one_pass(src, rng, rcond, n_threads)
        if not src.reiterable:
            raise ValueError("a generator or iterator can be read only once, and passes=2 reads "
                             "the data more than once: pass a list of chunks, a callable "
                             "returning a fresh iterator, or an array; or use passes=1")
        n = src.count_rows()
        probe = np.empty((0, src.n_features), dtype=src.dtype)
        points, policy, n_given = self._landmark_spec(probe)
        m = self._resolve_m(n, n_given, streaming="a chunked source")
        kernel = get_kernel(self.kernel)
        if not kernel.is_resolved:  # the draws of median_distance(X, random_state=rng)
            rows = (rng.choice(n, size=MEDIAN_SUBSET, replace=False) if n > MEDIAN_SUBSET
                    else np.arange(n))
            kernel = kernel.resolve(src.take(rows), rng)
        self.n_landmarks_report_ = None
        if points is not None:
            indices, landmarks = None, points
        else:
            if isinstance(policy, FixedLandmarks):
                indices = policy.indices
            elif type(policy) is UniformSampling:  # the draws of UniformSampling.select_indices
                if policy.replace:
                    indices = rng.integers(0, n, size=m)
                elif m > n:
                    raise ValueError(f"n_landmarks={m} exceeds n_samples={n} (sampling without "
                                     "replacement)")
                else:
                    indices = rng.choice(n, size=m, replace=False)
            else:
                raise ValueError(f"sampler {policy!r} needs all of X in memory; with a chunked "
                                 "source use 'uniform', explicit landmarks, or passes=1 (the "
                                 "sampler then runs on the first chunk(s))")
            indices = validate_indices(indices, n, "the indices returned by the sampler")
            landmarks = np.ascontiguousarray(src.take(indices))
        acc, count = self._stream_sums(src.chunks(), landmarks, kernel, n_threads)
        return self._store(kernel, policy, indices, landmarks, acc, float(count), count, rcond,
                           n_threads)

    def _fit_one_pass(self, src: RowSource, rng: np.random.Generator, rcond: float,
                      n_threads: int) -> NystromKME:
        chunks = src.chunks()
        pool = [next(chunks, None)]
        if pool[0] is None:
            raise ValueError("the source has no rows")
        points, policy, n_given = self._landmark_spec(pool[0])
        if n_given is None and self.n_landmarks is None and src.n_rows is None:
            raise ValueError("passes=1 over an iterable of unknown length needs an integer "
                             "n_landmarks (or explicit landmarks)")
        m = self._resolve_m(src.n_rows if src.n_rows is not None else 2**62, n_given,
                            streaming="passes=1")
        while points is None and sum(c.shape[0] for c in pool) < m:
            nxt = next(chunks, None)
            if nxt is None:
                break
            pool.append(nxt)
        X0 = pool[0] if len(pool) == 1 else np.concatenate(common_dtype(*pool))
        if m > X0.shape[0] and points is None:
            raise ValueError(f"n_landmarks={m} exceeds n_samples={X0.shape[0]}")
        kernel, indices, landmarks = self._select(X0, None, rng, points, policy, m)
        del X0
        acc, count = self._stream_sums(iter_chain(pool, chunks), landmarks, kernel, n_threads)
        return self._store(kernel, policy, indices, landmarks, acc, float(count), count, rcond,
                           n_threads)

    def _stream_sums(self, chunks: Any, landmarks: np.ndarray, kernel: Kernel,
                     n_threads: int) -> tuple[CompensatedSum, int]:
        acc = CompensatedSum((landmarks.shape[0],))
        count = 0
        core_kernel = kernel.to_core()
        for chunk in chunks:
            if chunk.shape[1] != landmarks.shape[1]:
                raise ValueError(f"a chunk has {chunk.shape[1]} features but the landmarks "
                                 f"{landmarks.shape[1]}")
            add_row_sums(acc, landmarks, chunk, core_kernel, n_threads)
            count += chunk.shape[0]
        return acc, count

    def partial_fit(self, X: Any, sample_weight: Any = None) -> NystromKME:
        """Add the rows of X (n_chunk, n_features) to the embedding, landmarks fixed.

        The first call (on an unfitted estimator) chooses the landmarks among the rows
        of this chunk, as :meth:`fit` would (the sampler, the median bandwidth, given
        landmark points or indices into this chunk); ``n_landmarks`` must then be an
        integer or come from the sampler. Later calls (and calls after :meth:`fit`)
        keep ``landmarks_`` and ``kernel_`` and add K(L, X) 1 to the sufficient
        statistics ``s_sum_`` and the count to ``weight_sum_``; the weights are
        re-solved, O(n_chunk m d + m^3) per call. The result after any sequence of
        calls equals ``fit`` on the concatenated rows with these landmarks (the sums
        agree to ~1e-16 relative).

        ``sample_weight`` (n_chunk,), non-negative and *not* normalised: it adds
        sum_i w_i k(L, x_i) and sum_i w_i (missing weights count 1 per row).
        """
        X = as_data_matrix(X, "X")
        rcond, n_threads = self._solver_args()
        w = None
        if sample_weight is not None:
            w = np.asarray(sample_weight, dtype=np.float64)
            if w.shape != (X.shape[0],) or not np.isfinite(w).all() or (w < 0).any():
                raise ValueError(f"sample_weight must be non-negative and finite, of shape "
                                 f"({X.shape[0]},); got shape {w.shape}")
        if not hasattr(self, "_acc"):
            points, policy, n_given = self._landmark_spec(X)
            if n_given is None and isinstance(self.n_landmarks, (str, type(None))):
                raise ValueError("partial_fit chooses the landmarks from the first chunk: give an "
                                 f"integer n_landmarks or explicit landmarks, not {self.n_landmarks!r}")
            m = self._resolve_m(X.shape[0], n_given, streaming="partial_fit")
            p = None if w is None or w.sum() <= 0 else w / w.sum()
            kernel, indices, landmarks = self._select(X, p, check_random_state(self.random_state),
                                                      points, policy, m)
            policy_, acc, total, n = policy, CompensatedSum((landmarks.shape[0],)), 0.0, 0
        else:
            if X.shape[1] != self.n_features_in_:
                raise ValueError(f"X has {X.shape[1]} features but the embedding has "
                                 f"{self.n_features_in_}")
            kernel, indices, landmarks, policy_ = (self.kernel_, self.landmark_indices_,
                                                   self.landmarks_, self.sampler_)
            acc, total, n = self._acc.copy(), self.weight_sum_, self.n_samples_
        add_row_sums(acc, landmarks, X, kernel.to_core(), n_threads, w)
        total += float(X.shape[0]) if w is None else float(w.sum())
        return self._store(kernel, policy_, indices, landmarks, acc, total, n + X.shape[0],
                           rcond, n_threads)

    # ------------------------------------------------------------------ #
    # merging
    # ------------------------------------------------------------------ #
    def merge(self, *others: NystromKME) -> NystromKME:
        """A new embedding of the union of the data behind ``self`` and ``others``.

        Each embedding must be fitted (by ``fit``, ``partial_fit`` or ``merge``) with
        the same kernel ``kernel_`` on disjoint data (shards). With weights
        W_e = ``weight_sum_`` (the row count when unweighted):

        * **Same landmarks** (``landmarks_`` equal in every embedding): the
          sufficient statistics add up, s = sum_e ``s_sum_``, W = sum_e W_e, and the
          result is the Nyström embedding of the union with those landmarks, as
          ``fit`` on the concatenated data would give (to round-off in the sums,
          ~1e-16 relative). It can go on with :meth:`partial_fit`.
        * **Different landmarks**: the union L_u of the landmark sets (exact
          duplicate rows dropped) becomes the support, and the result is the
          orthogonal projection onto span{phi(l), l in L_u} of the combined
          embedding mu_c = sum_e (W_e / W) mu_e, where mu_e = sum_j alpha_ej phi(l_ej)
          are the fitted Nyström embeddings: alpha_u = K_u^+ s_u with
          s_u = sum_e (W_e / W) K(L_u, L_e) alpha_e. Since mu_c already lies in that
          span, this is mu_c itself (up to the solver's rank threshold) written with
          minimum-norm weights on L_u. It is *not* the Nyström embedding of the
          union with landmarks L_u (that needs K(L_u, X) 1 over all data, which the
          shards' statistics do not hold); the difference is at most
          sum_e (W_e / W) ||(P_u - P_e) mu_hat_e||, each shard's own Nyström error.
          ``s_sum_`` becomes W s_u, so :meth:`partial_fit` can add new data exactly.

        ``landmark_indices_`` of the result is None (shard rows are not rows of the
        union); solver, rcond and n_threads are this estimator's.

        Returns
        -------
        NystromKME
            A new fitted estimator; the inputs are unchanged.
        """
        parts = (self, *others)
        for e in parts:
            if not isinstance(e, NystromKME):
                raise ValueError(f"can only merge NystromKME embeddings, got {type(e).__name__}")
            e._check_fitted()
            if not hasattr(e, "_acc"):
                raise ValueError("an embedding has no sufficient statistics (fitted by an older version)")
            if e.kernel_ != self.kernel_:
                raise ValueError(f"the embeddings use different kernels: {self.kernel_!r} and {e.kernel_!r}")
            if e.n_features_in_ != self.n_features_in_:
                raise ValueError(f"the embeddings live in R^{self.n_features_in_} and R^{e.n_features_in_}")
        rcond, n_threads = self._solver_args()
        total = float(sum(e.weight_sum_ for e in parts))
        n = sum(e.n_samples_ for e in parts)
        out = copy.copy(self)
        same = all(e.landmarks_.shape == self.landmarks_.shape
                   and e.landmarks_.dtype == self.landmarks_.dtype
                   and np.array_equal(e.landmarks_, self.landmarks_) for e in parts)
        if same:
            acc = self._acc.copy()
            for e in others:
                acc.add(e._acc.sum)
                acc.add(e._acc.comp)
            return out._store(self.kernel_, self.sampler_, None, self.landmarks_, acc, total, n,
                              rcond, n_threads)
        union = _union_rows([e.landmarks_ for e in parts])
        core_kernel = self.kernel_.to_core()
        acc = CompensatedSum((union.shape[0],))
        for e in parts:
            U, Le = common_dtype(union, e.landmarks_)
            acc.add(e.weight_sum_ * _core.kernel_sums(U, Le, e.weights_.reshape(-1, 1), core_kernel,
                                                      n_threads)[:, 0])
        return out._store(self.kernel_, self.sampler_, None, union, acc, total, n, rcond, n_threads)


def iter_chain(first: list[np.ndarray], rest: Any) -> Any:
    """The pooled chunks, then the rest of the stream (the pool is released as it goes)."""
    while first:
        yield first.pop(0)
    yield from rest


def _union_rows(blocks: list[np.ndarray]) -> np.ndarray:
    """Rows of the blocks in order, exact duplicates dropped; float32 only if all are."""
    blocks = common_dtype(*blocks)
    seen: set[bytes] = set()
    keep = []
    for row in np.concatenate(blocks):
        key = row.tobytes()
        if key not in seen:
            seen.add(key)
            keep.append(row)
    return np.ascontiguousarray(np.stack(keep))
