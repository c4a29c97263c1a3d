"""The Nyström kernel mean embedding (Chatalic et al., 2022, eq. 5), fitted over
any row source: in memory, out of core, iterables of chunks or dask arrays.

With landmarks L (m, d) the embedding depends on the data only through the
sufficient statistics ``s = sum_i w_i k(L, x_i)`` (m,) and ``W = sum_i w_i``
(``W = n`` unweighted): alpha = K_m^+ s / W. Both add up over any split of the
rows, so one code path serves ``fit`` on every source, ``partial_fit`` and ``merge``.
"""

from __future__ import annotations

import copy
import math
import numbers
from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from . import _core
from ._compensated import CompensatedSum, fsum_dot
from ._estimator import ParamsMixin
from ._landmark_count import resolve_n_landmarks
from ._union import union_sums
from ._validation import (
    RandomStateLike,
    Weights,
    check_not_sparse,
    check_positive_int,
    check_random_state,
    check_sample_weight,
    common_dtype,
    n_threads_arg,
    power_of_two_scale,
    scale_weights,
)
from .bounds import LandmarkSuggestion, default_n_landmarks, suggest_n_landmarks
from .embedding import KernelMeanEmbedding
from .kernels import Kernel, resolve_kernel
from .landmark_search import AutoLandmarks, LandmarkSearch, as_auto_spec, search_landmarks
from .persistence import persistable
from .sampling import FixedLandmarks, Policy, SamplerLike, as_policy, describe_sampler, landmark_points, resolve_sampler
from .sources import ArraySource, IterableSource, RowSource, SourceLike, as_source

SOLVERS = ("auto", "cod", "cholesky")
#: n_landmarks="bound" takes at most this many times the paper's sqrt(n) log sqrt(n).
AUTO_CAP_FACTOR = 4


@persistable
class NystromKME(ParamsMixin, KernelMeanEmbedding):
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
    n_landmarks : int, None, "auto", AutoLandmarks or "bound", default=None
        m, with 1 <= m <= n_samples. None: ceil(sqrt(n) log sqrt(n)) capped at n,
        the size for which the paper's Corollary 4.1 keeps the O(1/sqrt(n)) rate.
        "auto" (or :class:`~nystrom_kme.AutoLandmarks` to set its tolerance): the
        smallest m on a doubling path of nested landmark sets whose change of the
        embedding is at most 0.1 x the estimated statistical error of the empirical
        embedding (:mod:`nystrom_kme.landmark_search`); costs about one fit at the
        final m; its :class:`~nystrom_kme.LandmarkSearch` is kept in
        ``n_landmarks_report_``. Any source, any sampler that nests (see there).
        "bound": :func:`nystrom_kme.bounds.suggest_n_landmarks`
        fits the decay of the estimated covariance spectrum and applies Corollary 4.1,
        capped at 4 ceil(sqrt(n) log sqrt(n)) (the corollary's constants are
        conservative); its LandmarkSuggestion is kept in ``n_landmarks_report_``.
        In-memory data only.
    solver : {"auto", "cod", "cholesky"}, default="auto"
        How K_m alpha = s is solved. "cod": complete orthogonal decomposition of
        K_m, the minimum-norm solution K_m^+ s of eq. 5 for its rank threshold
        ``rcond``. "cholesky": merge duplicate landmarks, then Cholesky; fails on a
        numerically singular K_m. "auto": one pivoted Cholesky, kept when its
        estimated RKHS error is below 1e-12 of the embedding's norm, else COD.
        They give the same embedding up to round-off on a well-conditioned K_m; on a
        numerically singular one they differ by up to ~2e-4 of the embedding's norm
        (measured in the user guide, "Solvers"), and the weights, not unique there,
        by O(1): compare embeddings, not weights.
    rcond : float or None, default=None
        COD rank threshold relative to the largest pivot; None: m * machine epsilon.
    sampler : str, SamplingPolicy, array-like or callable, default="uniform"
        How landmarks are chosen: a name of :data:`nystrom_kme.sampling.SAMPLER_NAMES`
        ("uniform" is uniform with replacement, the paper's guarantee), a policy
        object, a function ``f(X, kernel, n_landmarks, rng) -> indices``, landmark
        row indices (1-D ints) or landmark points (2-D; then ``landmark_indices_`` is
        None). A policy object is copied, never modified; when its ``n_threads`` is
        None the copy gets this estimator's. Policies whose ``needs_data_in_memory``
        is True (all but uniform draws and given indices) need the data in memory (or
        ``passes=1``). ``sample_weight`` weights the uniform draws; the other policies
        select on X unweighted.
    random_state : None, int, numpy Generator or SeedSequence
        Landmark sampling and the median heuristic.
    n_threads : int or None
        OpenMP threads for the core (None: all); results do not depend on it.
    chunk_rows : int or None, default=None
        Rows per read when X is streamed from an array-like source (memmap, h5py,
        zarr); None: about 16 MiB of data. Rounded up to a multiple of the core's block.
    passes : {2, 1}, default=2
        How ``fit`` reads a streamed source: 2 draws the landmarks over all rows
        (the in-memory fit's draws), 1 takes them from the first chunk(s) in a
        single read (generators). See :meth:`fit`.

    Attributes
    ----------
    landmarks_ : ndarray of shape (m, n_features), dtype of X
    landmark_indices_ : ndarray of shape (m,), int64 rows of X (None for given points)
    sampler_ : the copy of the sampling policy that chose them (None for given
        points); policies keep what they computed, e.g. ``sampler_.scores_`` for "rls"
    weights_ : ndarray of shape (m,), float64 (alpha)
    support_ : alias of landmarks_
    kernel_ : Kernel with a numeric bandwidth
    n_samples_, n_features_in_ : int
    solver_ : str, the solver actually used ("cholesky" or "cod")
    rank_ : int, numerical rank of K_m (COD) or number of distinct landmarks
    s_sum_ : ndarray of shape (m,), float64, sufficient statistic sum_i w_i k(L, x_i)
        (w_i = 1 unweighted); weights_ = K_m^+ s_sum_ / weight_sum_
    weight_sum_ : float, sum_i w_i (n_samples_ unweighted)
    n_landmarks_report_ : LandmarkSearch ("auto"), LandmarkSuggestion ("bound") or None

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> X = np.random.default_rng(0).normal(size=(10_000, 3))
    >>> kme = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=200, random_state=0).fit(X)
    >>> kme.landmarks_.shape, kme.weights_.shape
    ((200, 3), (200,))
    >>> bool(abs(kme([[0.0, 0.0, 0.0]])[0] - 0.35) < 0.01)    # mu(0) = E k(x, 0) = 8^(-1/2)
    True
    """

    landmarks_: np.ndarray
    landmark_indices_: np.ndarray | None
    sampler_: Policy | None
    solver_: str
    rank_: int
    s_sum_: np.ndarray
    weight_sum_: float
    n_landmarks_report_: LandmarkSearch | LandmarkSuggestion | None
    _sums: CompensatedSum

    def __init__(self, kernel: Kernel | str = "gaussian", *, n_landmarks: int | str | AutoLandmarks | None = None,
                 solver: str = "auto", rcond: float | None = None, sampler: SamplerLike = "uniform",
                 random_state: RandomStateLike = None, n_threads: int | None = None,
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

    # --- checks ---
    def _check_params(self) -> tuple[float, int]:
        """Validated (rcond, n_threads); also checks solver, passes and chunk_rows."""
        if self.solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS}, got {self.solver!r}")
        try:
            rcond = 0.0 if self.rcond is None else float(self.rcond)
        except (TypeError, ValueError):
            raise ValueError(f"rcond must be a number in [0, 1), got {self.rcond!r}") from None
        if not (math.isfinite(rcond) and 0.0 <= rcond < 1.0):
            raise ValueError(f"rcond must be in [0, 1), got {self.rcond!r}")
        if self.passes not in (1, 2) or isinstance(self.passes, bool):
            raise ValueError(f"passes must be 1 or 2, got {self.passes!r}")
        if self.chunk_rows is not None:
            check_positive_int(self.chunk_rows, "chunk_rows")
        return rcond, n_threads_arg(self.n_threads)

    def _policy(self, X: np.ndarray | None, src: RowSource) -> tuple[np.ndarray | None, Policy | None]:
        """(given landmark points or None, a private copy of the sampling policy or None);
        points take the dtype of the data (X, else a probe of src's shape and dtype)."""
        probe = X if X is not None else np.empty((0, src.n_features or 0), dtype=src.dtype or np.float64)
        points = landmark_points(self.sampler, probe)
        if points is not None:
            return points, None
        policy = copy.deepcopy(resolve_sampler(self.sampler))
        params = policy.get_params() if hasattr(policy, "get_params") else {}
        if ("n_threads" in params and params["n_threads"] is None and self.n_threads is not None
                and hasattr(policy, "set_params")):
            policy.set_params(n_threads=self.n_threads)
        return None, policy

    def _n_landmarks(self, n: int, points: np.ndarray | None, policy: Policy | None, *,
                     streamed: str | None) -> int | None:
        """m for n rows (None: "bound"); see :func:`~nystrom_kme._landmark_count.resolve_n_landmarks`."""
        given = (points.shape[0] if points is not None
                 else np.asarray(policy.indices).size if isinstance(policy, FixedLandmarks) else None)
        return resolve_n_landmarks(self.n_landmarks, n, given, streamed=streamed)

    # --- the one fitting path ---
    def _choose_landmarks(self, src: RowSource, sample_weight: Weights | None, rng: np.random.Generator,
                          *, streamed: str | None = None, n_total: int | None = None
                          ) -> tuple[Kernel, Policy | None, np.ndarray | None, np.ndarray]:
        """Resolve the kernel and pick the landmarks among the rows of ``src``, reading
        only the rows needed; m is sized for ``n_total`` rows (default: src's).

        The draws are those of an in-memory fit whatever the source: the median
        heuristic's rows, then the policy's (``policy.draw``)."""
        n = src.count_rows()
        X = src.to_array()
        points, policy = self._policy(X, src)
        m = self._n_landmarks(n if n_total is None else n_total, points, policy,
                              streamed=streamed if X is None else None)
        if m is not None and points is None and not isinstance(policy, FixedLandmarks) and m > n:
            raise ValueError(f"n_landmarks={m} exceeds the {n} rows the landmarks are drawn from")
        kernel = resolve_kernel(self.kernel, [src], rng)
        self.n_landmarks_report_ = None
        if m is None:
            assert X is not None  # "bound" is refused on streamed data (_n_landmarks)
            report = suggest_n_landmarks(X, kernel, random_state=rng, n_threads=self.n_threads,
                                         max_landmarks=AUTO_CAP_FACTOR * default_n_landmarks(n))
            self.n_landmarks_report_ = report
            m = min(n, report.n_landmarks)
        if points is not None:
            src.check_features(points.shape[1], "the given landmarks")
            return kernel, None, None, points
        assert policy is not None  # no points: _policy gave one
        drawer = as_policy(policy)
        if drawer.needs_data_in_memory and X is None:
            raise ValueError(f"sampler {policy!r} needs all of X in memory; with {streamed} use "
                             "'uniform', explicit landmarks, or passes=1 (the sampler then runs on "
                             "the first chunk(s))")
        indices = drawer.draw(src, kernel, m, rng, sample_weight=sample_weight)
        return kernel, policy, indices, np.ascontiguousarray(src.take(indices))

    def _solve(self, kernel: Kernel, policy: Policy | None, indices: np.ndarray | None, landmarks: np.ndarray,
               acc: CompensatedSum, weight_sum: float, n: int,
               solved: tuple[np.ndarray, str, int] | None = None, scale: float = 1.0) -> NystromKME:
        """Solve K_m alpha = s_sum / weight_sum and set the fitted attributes; ``solved``:
        the core's (alpha (m, 1), solver used, rank) for these inputs when already known.

        ``acc`` and ``weight_sum`` are in units of ``scale`` (the power of two the
        weights were divided by, :func:`~nystrom_kme._validation.scale_weights`): the
        solve uses their ratio, exact at any scale, and ``s_sum_`` and ``weight_sum_``
        keep the weights' own units (multiplied back by ``scale``)."""
        rcond, n_threads = self._check_params()
        stored_sums, stored_total = acc, weight_sum
        if scale != 1.0:
            stored_sums = CompensatedSum(acc.sum.shape)
            with np.errstate(over="ignore"):  # an overflow is reported just below
                stored_sums.sum, stored_sums.comp = acc.sum * scale, acc.comp * scale
            stored_total = weight_sum * scale
        if not math.isfinite(stored_total):
            raise ValueError("sample_weight: the weighted sums overflow float64; divide the weights by "
                             "a constant (only their ratios matter to the embedding)")
        if not np.isfinite(acc.value()).all():
            raise ValueError(f"the kernel values overflow float64 ({kernel!r} on data of this scale); "
                             "scale the data or raise the bandwidth")
        if not weight_sum > 0:
            raise ValueError("the total sample weight must be positive")
        s = acc.value() / weight_sum
        alpha, used, rank = solved or _core.nystrom_weights(landmarks, s.reshape(-1, 1), kernel.to_core(),
                                                            self.solver, rcond, 1e-12, n_threads)
        weights = np.ascontiguousarray(alpha[:, 0])
        if not np.isfinite(weights).all():
            raise ValueError(f"the kernel values overflow float64 ({kernel!r} on data of this scale); "
                             "scale the data or raise the bandwidth")
        # All fitted attributes change in one step, the embedding used by evaluations
        # last and as one object: a reader never sees a mix of two fits.
        self.__dict__.update(
            kernel_=kernel, landmark_indices_=indices, sampler_=policy, landmarks_=landmarks,
            support_=landmarks, weights_=weights, n_samples_=int(n), n_features_in_=landmarks.shape[1],
            solver_=used, rank_=int(rank), _sums=stored_sums, s_sum_=stored_sums.value(),
            weight_sum_=float(stored_total))
        self._publish()
        return self

    def fit(self, X: SourceLike, y: object = None, *, sample_weight: ArrayLike | None = None) -> NystromKME:
        """Fit on X of shape (n_samples, n_features), float32 or float64.

        X may be an in-memory array, or a source that is read block by block (see
        :mod:`nystrom_kme.sources`): a ``numpy.memmap``, an h5py or zarr dataset, a
        list of 2-D chunks, a callable returning an iterator of chunks, a generator
        of chunks, or a dask array chunked by rows (summed on the dask workers).
        Streamed sources use peak memory O(chunk_rows d + m d + m^2), independent of n:

        * ``passes=2`` (default): the landmarks are drawn over all rows with the
          in-memory fit's random draws, gathered by index, then the row sums are
          streamed. Array-likes give a result bit-identical to ``fit(np.asarray(X))``;
          iterables (read three times: count, gather, sum; they must be re-iterable)
          and dask arrays agree to ~1e-16 relative. Only "uniform" sampling and
          explicit landmarks work without all of X in memory.
        * ``passes=1``: one read. The first chunk(s), at least m rows, are pooled;
          the bandwidth ("median") and the landmarks (any sampler) are taken from that
          pool, then all rows are summed. Works with generators. The landmarks then
          only represent the start of the stream: shuffle ordered data first.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or a streamed source
            Dense rows (scipy.sparse input is refused).
        y : ignored
            Not used: the embedding is unsupervised. Accepted so that scikit-learn's
            ``Pipeline``, ``GridSearchCV(...).fit(X, y)`` and ``cross_val_score`` can
            pass labels through; they are never read (in particular never used as
            weights).
        sample_weight : array-like of shape (n_samples,), optional, keyword only
            Non-negative weights (any scale, down to subnormal numbers: only their
            ratios matter to the embedding; they are divided by a power of two near
            their maximum before they meet the kernel values): the target becomes
            the weighted empirical embedding, and uniform landmark draws become
            draws proportional to them. For a streamed source X they are read into
            memory (n float64) unless they are a dask array beside dask X.

        Returns
        -------
        self
        """
        self._check_params()
        check_not_sparse(X, "X")
        rng = check_random_state(self.random_state)
        src = as_source(X, "X", chunk_rows=self.chunk_rows)
        streamed = None if isinstance(src, ArraySource) else "a streamed source"
        if streamed and self.passes == 1:
            return self._fit_one_pass(src, sample_weight, rng)
        if not src.reiterable:
            raise ValueError("a generator or iterator can be read only once, and passes=2 reads "
                             "the data more than once: pass a list of chunks, a callable "
                             "returning a fresh iterator, or an array; or use passes=1")
        n = src.count_rows()
        sample_weight, scale = scale_weights(check_sample_weight(sample_weight, n))
        if as_auto_spec(self.n_landmarks) is not None:
            return self._fit_auto(src, sample_weight, scale, rng)
        kernel, policy, indices, landmarks = self._choose_landmarks(src, sample_weight, rng,
                                                                    streamed=streamed)
        acc, total = src.kernel_sums(landmarks, kernel, weights=sample_weight,
                                     n_threads=n_threads_arg(self.n_threads))
        return self._solve(kernel, policy, indices, landmarks, acc, total, n, scale=scale)

    def _fit_auto(self, src: RowSource, sample_weight: Weights | None, scale: float,
                  rng: np.random.Generator) -> NystromKME:
        """n_landmarks="auto": the doubling search of :mod:`nystrom_kme.landmark_search`."""
        rcond, n_threads = self._check_params()
        points, policy = self._policy(src.to_array(), src)
        if points is not None or isinstance(policy, FixedLandmarks):
            raise ValueError("n_landmarks='auto' searches over landmark sets drawn by the sampler; "
                             "with given landmarks leave n_landmarks=None")
        kernel = resolve_kernel(self.kernel, [src], rng)
        spec = as_auto_spec(self.n_landmarks)
        assert policy is not None and spec is not None  # fit chose this path for "auto"
        found = search_landmarks(src, kernel, policy, rng, spec=spec,
                                 sample_weight=sample_weight, solver=self.solver, rcond=rcond,
                                 n_threads=n_threads)
        self.n_landmarks_report_ = found.report
        return self._solve(kernel, policy, found.indices, found.landmarks, found.sums, found.weight_sum,
                           src.count_rows(), found.solution, scale=scale)

    def _fit_one_pass(self, src: RowSource, sample_weight: Weights | None, rng: np.random.Generator) -> NystromKME:
        if sample_weight is not None:
            raise ValueError("sample_weight is not supported with passes=1; weight each chunk "
                             "with partial_fit(chunk, sample_weight=...)")
        chunks = src.chunks()
        first = next(chunks, None)
        if first is None:
            raise ValueError(f"{src.name} has no rows")
        pool = [first[1]]
        points, policy = self._policy(pool[0], src)
        if (src.n_rows is None and points is None and not isinstance(policy, FixedLandmarks)
                and not isinstance(self.n_landmarks, numbers.Integral)):
            raise ValueError("passes=1 over an iterable of unknown length needs an integer "
                             "n_landmarks (or explicit landmarks)")
        n_total = src.n_rows if src.n_rows is not None else 2**62
        m = self._n_landmarks(n_total, points, policy, streamed="passes=1")
        while points is None and sum(b.shape[0] for b in pool) < m:  # pool at least m rows
            nxt = next(chunks, None)
            if nxt is None:
                break
            pool.append(nxt[1])
        head = pool[0] if len(pool) == 1 else np.concatenate(common_dtype(*pool))
        kernel, policy, indices, landmarks = self._choose_landmarks(ArraySource(head), None, rng,
                                                                    n_total=n_total)
        del head

        def replay() -> Iterator[np.ndarray]:
            while pool:
                yield pool.pop(0)
            for _, block in chunks:
                yield block

        acc, total = IterableSource(replay(), src.name).kernel_sums(
            landmarks, kernel, n_threads=n_threads_arg(self.n_threads))
        return self._solve(kernel, policy, indices, landmarks, acc, total, int(total))

    def partial_fit(self, X: SourceLike, y: object = None, *, sample_weight: ArrayLike | None = None) -> NystromKME:
        """Add the rows of X (n_chunk, n_features) to the embedding, landmarks fixed.

        The first call (on an unfitted estimator) chooses the landmarks among the rows
        of this chunk, as :meth:`fit` would; ``n_landmarks`` must then be an integer or
        come from the sampler. Later calls (and calls after :meth:`fit`) keep
        ``landmarks_`` and ``kernel_`` and add K(L, X) w to ``s_sum_`` and sum(w) to
        ``weight_sum_``; the weights are re-solved, O(n_chunk m d + m^3) per call. The
        result after any sequence of calls equals ``fit`` on the concatenated rows with
        these landmarks (the sums agree to ~1e-16 relative). X may be any source.

        ``y`` is ignored (see :meth:`fit`). ``sample_weight`` (n_chunk,), keyword only:
        non-negative and not normalised (missing weights count 1 per row); the
        statistics are kept in the weights' own units, so weights across calls keep
        their ratios. When those statistics are subnormal (``weight_sum_`` below
        2.2e-308) adding to them would lose precision, and a later call refuses.
        """
        self._check_params()
        check_not_sparse(X, "X")
        src = as_source(X, "X", chunk_rows=self.chunk_rows)
        n_chunk = src.count_rows()
        sample_weight, part_scale = scale_weights(check_sample_weight(sample_weight, n_chunk,
                                                                      normalisable=False))
        if not hasattr(self, "_sums"):
            if self.n_landmarks is None or (isinstance(self.n_landmarks, str)):
                points, policy = self._policy(src.to_array(), src)
                if points is None and not isinstance(policy, FixedLandmarks):
                    raise ValueError("partial_fit chooses the landmarks from the first chunk: give an "
                                     f"integer n_landmarks or explicit landmarks, not {self.n_landmarks!r}")
            kernel, policy, indices, landmarks = self._choose_landmarks(
                src, sample_weight, check_random_state(self.random_state), streamed="partial_fit")
            part, part_total = src.kernel_sums(landmarks, kernel, weights=sample_weight,
                                               n_threads=n_threads_arg(self.n_threads))
            return self._solve(kernel, policy, indices, landmarks, part, part_total, n_chunk,
                               scale=part_scale)
        self._check_n_features(src)
        self._check_statistics_normal("partial_fit")
        kernel, policy, indices, landmarks = (self.kernel_, self.sampler_, self.landmark_indices_,
                                              self.landmarks_)
        part, part_total = src.kernel_sums(landmarks, kernel, weights=sample_weight,
                                           n_threads=n_threads_arg(self.n_threads))
        # Both parts in the units of the larger scale (powers of two: exact division).
        scale = max(part_scale, power_of_two_scale(self.weight_sum_))
        acc = CompensatedSum(self._sums.sum.shape)
        acc.sum, acc.comp = self._sums.sum / scale, self._sums.comp / scale
        ratio = part_scale / scale
        acc.add(part.sum * ratio)
        acc.add(part.comp * ratio)
        return self._solve(kernel, policy, indices, landmarks, acc, self.weight_sum_ / scale + part_total * ratio,
                           self.n_samples_ + n_chunk, scale=scale)

    def _check_n_features(self, src: RowSource) -> None:
        """X's width against the fitted one, in scikit-learn's words (streamed sources
        of unknown width are checked when their first block is read)."""
        if src.n_features is not None and src.n_features != self.n_features_in_:
            raise ValueError(f"X has {src.n_features} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input")

    def _check_statistics_normal(self, what: str) -> None:
        """Refuse to add to sufficient statistics that are subnormal (weights so small
        that their sums left float64's normal range): their few significant bits would
        make the result inexact. A fit's own embedding is exact at any weight scale."""
        if 0.0 < self.weight_sum_ < np.finfo(np.float64).tiny:
            raise ValueError(f"{what}: the sufficient statistics of this embedding are subnormal "
                             f"(weight_sum_={self.weight_sum_:.3g}, sample weights near 1e-308 or below) "
                             "and adding to them would lose precision; refit with the sample weights "
                             "multiplied by a constant (only their ratios matter)")

    # --- merging and scoring ---
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
          embedding mu_c = sum_e (W_e / W) mu_e: alpha_u = K_u^+ s_u with
          s_u = sum_e (W_e / W) K(L_u, L_e) alpha_e. Since mu_c lies in that span,
          this is mu_c itself written with minimum-norm weights on L_u. It is not
          the Nyström embedding of the union with landmarks L_u (that needs
          K(L_u, X) 1 over all data); the difference is at most
          sum_e (W_e / W) ||(P_u - P_e) mu_hat_e||, each shard's own Nyström error.
          ``s_sum_`` becomes W s_u, so :meth:`partial_fit` can add new data exactly.

        ``landmark_indices_`` of the result is None; solver, rcond and n_threads are
        this estimator's.

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
            if e.kernel_ != self.kernel_:
                raise ValueError(f"the embeddings use different kernels: {self.kernel_!r} and {e.kernel_!r}")
            if e.n_features_in_ != self.n_features_in_:
                raise ValueError(f"the embeddings live in R^{self.n_features_in_} and R^{e.n_features_in_}")
            e._check_statistics_normal("merge")
        total = float(sum(e.weight_sum_ for e in parts))
        n = sum(e.n_samples_ for e in parts)
        out = copy.copy(self)
        same = all(e.landmarks_.shape == self.landmarks_.shape and e.landmarks_.dtype == self.landmarks_.dtype
                   and np.array_equal(e.landmarks_, self.landmarks_) for e in parts)
        if same:
            acc = self._sums.copy()
            for e in others:
                acc.merge(e._sums)
            return out._solve(self.kernel_, self.sampler_, None, self.landmarks_, acc, total, n)
        union, acc = union_sums([(e.landmarks_, e.weights_, e.weight_sum_) for e in parts], self.kernel_,
                                n_threads_arg(self.n_threads))
        return out._solve(self.kernel_, self.sampler_, None, union, acc, total, n)

    def score(self, X: SourceLike, y: object = None, *, sample_weight: ArrayLike | None = None) -> float:
        """2 <mu, mu_hat_X> - ||mu||^2 = ||mu_hat_X||^2 - ||mu - mu_hat_X||^2: higher is
        better. For one kernel, differences of scores on the same X are exactly
        differences of the squared RKHS distances ||mu - mu_hat_X||^2 between this
        embedding and the empirical embedding of X, so model selection on held-out
        data (e.g. ``GridSearchCV`` over ``n_landmarks`` or ``sampler``) picks the
        embedding closest to it. Across bandwidths the RKHS changes and scores are
        not comparable. O(n m d) streaming; X may be any source; ``y`` is ignored;
        ``sample_weight`` (keyword only) weights the rows of X as in :meth:`fit`.
        """
        landmarks, weights, kernel = self.fitted()
        check_not_sparse(X, "X")
        src = as_source(X, "X", chunk_rows=self.chunk_rows)
        self._check_n_features(src)
        sample_weight = scale_weights(check_sample_weight(sample_weight, src.count_rows()))[0]
        acc, total = src.kernel_sums(landmarks, kernel, weights=sample_weight,
                                     n_threads=n_threads_arg(self.n_threads))
        mean_eval = fsum_dot(weights, acc.value()) / total
        core = kernel.to_core()
        L, = common_dtype(landmarks)
        norm2 = fsum_dot(weights, _core.kernel_sums(L, L, weights.reshape(-1, 1), core,
                                                    n_threads_arg(self.n_threads))[:, 0])
        return 2.0 * mean_eval - norm2

    def _fitted_summary(self) -> str | None:
        if not hasattr(self, "weights_"):
            return None
        return (f"{self.landmarks_.shape[0]} landmarks in R^{self.n_features_in_}, "
                f"n_samples={self.n_samples_}, kernel={self.kernel_!r}, "
                f"sampler={describe_sampler(self.sampler, self.sampler_)!r}, solver={self.solver_!r}, "
                f"rank={self.rank_}")

    def _state(self) -> dict[str, Any]:
        """The fitted state as data (for :mod:`nystrom_kme.persistence`), read at once: one
        fit's even while another thread refits. ``kernel``, ``landmarks`` (m, d),
        ``weights``, ``s_sum``, ``s_comp`` (m,) (the compensated statistic, kept apart so
        that ``partial_fit`` and ``merge`` continue exactly), ``weight_sum``, ``n_samples``,
        ``solver``, ``rank``, ``landmark_indices``, ``sampler`` (the policy used).
        NotFittedError before a fit. The inverse of :meth:`_from_state`."""
        self.fitted()
        st = dict(vars(self))
        return {"kernel": st["kernel_"], "landmarks": st["landmarks_"], "weights": st["weights_"],
                "s_sum": st["_sums"].sum, "s_comp": st["_sums"].comp, "weight_sum": st["weight_sum_"],
                "n_samples": st["n_samples_"], "solver": st["solver_"], "rank": st["rank_"],
                "landmark_indices": st.get("landmark_indices_"), "sampler": st.get("sampler_")}

    @classmethod
    def _from_state(cls, params: dict[str, Any], state: dict[str, Any]) -> NystromKME:
        """The fitted estimator ``cls(**params)`` with the state :meth:`_state` returns (the
        hook :mod:`nystrom_kme.persistence` loads with: it checks the state's values
        against what a fit produces, this checks the parameters as ``fit`` does).

        Examples
        --------
        >>> import numpy as np, nystrom_kme as nk
        >>> kme = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=10, random_state=0).fit(np.eye(20))
        >>> copy = nk.NystromKME._from_state(kme.get_params(), kme._state())
        >>> bool((copy(np.eye(20)) == kme(np.eye(20))).all()), copy.n_samples_
        (True, 20)
        """
        est = cls(**params)
        est._check_params()
        sums = CompensatedSum(state["s_sum"].shape)
        sums.sum, sums.comp = state["s_sum"], state["s_comp"]
        landmarks = state["landmarks"]
        est.__dict__.update(
            kernel_=state["kernel"], landmark_indices_=state["landmark_indices"], sampler_=state["sampler"],
            landmarks_=landmarks, support_=landmarks, weights_=state["weights"], n_samples_=state["n_samples"],
            n_features_in_=landmarks.shape[1], solver_=state["solver"], rank_=state["rank"], _sums=sums,
            s_sum_=sums.value(), weight_sum_=state["weight_sum"], n_landmarks_report_=None)
        est._publish()
        return est


__all__ = ["NystromKME", "SOLVERS"]
