"""The Nyström kernel mean embedding (Chatalic et al., 2022, eq. 5), fitted over
any row source: in memory, out of core, iterables of chunks or dask arrays.

With landmarks L (m, d) the embedding depends on the data only through the
sufficient statistics ``s = sum_i w_i k(L, x_i)`` (m,) and ``W = sum_i w_i``
(``W = n`` unweighted): alpha = K_m^+ s / W. Both add up over any split of the
rows, so one code path serves ``fit`` on every source, ``partial_fit`` and ``merge``.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._columns import check_feature_names
from .._compensated import CompensatedSum
from .._estimator import ParamsMixin
from .._scaling import Scaling, check_scaling
from .._validation import (
    RandomStateLike,
    Weights,
    check_not_sparse,
    check_random_state,
    check_sample_weight,
    n_threads_arg,
    scale_or_drop_weights,
)
from ..bounds import LandmarkSuggestion
from ..defaults import FIT_SAMPLER
from ..embedding import KernelMeanEmbedding, check_same_scaling
from ..kernels import Kernel, get_kernel
from ..landmark_search import AutoLandmarks, LandmarkSearch, as_auto_spec
from ..persistence import persistable
from ..sampling import Policy, SamplerLike
from ..sources import ArraySource, IterableSource, RowSource, SourceLike, as_source, scaled
from ._fitted_state import attributes_of_state, describe, fitted_attributes, state_of, summary_of
from ._landmark_choice import LandmarkChoice, LandmarkSettings
from ._merge import merged_sums
from ._parameters import SOLVERS, check_params, scaled_sampler, scaling_for
from ._score import embedding_score, warn_if_other_kernel
from ._sufficient_statistics import add_statistics, check_statistics_normal, solve_statistics


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
        m >= 1. An m above the rows the landmarks are drawn from (n_samples, or the
        first chunk of :meth:`partial_fit`) is capped at them with a UserWarning, as
        scikit-learn's ``Nystroem`` caps ``n_components``. None: ceil(sqrt(n) log
        sqrt(n)) capped at n, the size for which the paper's Corollary 4.1 keeps the
        O(1/sqrt(n)) rate (n of the first chunk in :meth:`partial_fit`).
        "auto" (or :class:`~nystrom_kme.AutoLandmarks` to set its target): the
        landmarks join in blocks along the sampler's stream, and the first m whose
        returned weights are certified within ``tol`` (0.458) x the empirical
        embedding's statistical error, at confidence 0.99 for any data, is kept
        (:mod:`nystrom_kme.landmark_search`: the certificate, its stops and its cost);
        its :class:`~nystrom_kme.LandmarkSearch` is kept in ``n_landmarks_report_``.
        Any source, any sampler that nests (see there).
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
        COD rank threshold relative to the largest pivot; None: m * float64 epsilon for
        float64 data, float32's epsilon (1.2e-7) for float32 data, whose kernel sums are
        float32-accurate (the directions below it would hold their rounding only).
    sampler : str, SamplingPolicy, array-like or callable, default="uniform"
        How landmarks are chosen: a name of :data:`nystrom_kme.sampling.SAMPLER_NAMES`
        ("uniform" is uniform with replacement, the paper's guarantee), a policy
        object, a function ``f(X, kernel, n_landmarks, rng) -> indices``, landmark
        row indices (1-D ints) or landmark points (2-D; then ``landmark_indices_`` is
        None). A policy object is copied, never modified; when its ``n_threads`` is
        None the copy gets this estimator's. Policies whose ``needs_data_in_memory``
        is True (all but uniform draws and given indices) need the data in memory (or
        ``passes=1``). ``sample_weight`` weights the uniform draws; the other
        policies select on X unweighted.
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
    standardize : bool or {"standard", "robust"}, default=False
        Put the columns on one scale first (for columns in arbitrary units: a radial
        kernel otherwise sees little but the column with the largest spread). True or
        "standard": each column centred at its mean and divided by its standard
        deviation (ddof=1); "robust": at its median, divided by its interquartile range
        / 1.349 (at most 100,000 rows sampled). The statistics are those of the rows
        :meth:`fit` sees (unweighted; one extra pass over a streamed source, which must
        then be re-iterable), or of the first chunk of :meth:`partial_fit`; they are
        kept as ``scaling_`` and applied to every later input: evaluations, :meth:`score`,
        :meth:`partial_fit` and landmark points given as ``sampler``. ``landmarks_``,
        ``support_`` and the kernel's bandwidth are in the standardised units; embeddings
        with different scalings are not merged or compared. A constant column keeps
        scale 1.

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
    feature_names_in_ : ndarray of shape (n_features_in_,), dtype object
        The column names of the data fitted on (a DataFrame's, a data file's header),
        only when it had names (scikit-learn's convention). Later batches with names
        (``partial_fit``, ``score``, evaluation) must have these, in this order
        (:func:`nystrom_kme._columns.check_feature_names`); a batch without names
        (an array) is taken by position.
    solver_ : str, the solver actually used ("cholesky" or "cod")
    rank_ : int, numerical rank of K_m (COD) or number of distinct landmarks
    s_sum_ : ndarray of shape (m,), float64, sufficient statistic sum_i w_i k(L, x_i)
        (w_i = 1 unweighted); weights_ = K_m^+ s_sum_ / weight_sum_
    weight_sum_ : float, sum_i w_i (n_samples_ unweighted)
    n_landmarks_report_ : LandmarkSearch ("auto"), LandmarkSuggestion ("bound") or None
    scaling_ : Scaling or None
        The columns' scaling of ``standardize=`` (``center`` and ``scale``, (n_features,)
        float64, and ``kind``): an input row x is evaluated as (x - center) / scale.
        None without ``standardize``.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> X = np.random.default_rng(0).normal(size=(10_000, 3))
    >>> kme = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=200, random_state=0).fit(X)
    >>> kme.landmarks_.shape, kme.weights_.shape
    ((200, 3), (200,))
    >>> bool(abs(kme([[0.0, 0.0, 0.0]])[0] - 0.35) < 0.01)    # mu(0) = E k(x, 0) = 8^(-1/2)
    True

    A column in other units (here x 1000) is put back on the others' scale:

    >>> X[:, 2] *= 1000
    >>> std = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=200, random_state=0, standardize=True).fit(X)
    >>> (std.scaling_.scale / [1, 1, 1000]).round(1)        # the columns' standard deviations
    array([1., 1., 1.])
    >>> bool(abs(std([[0.0, 0.0, 0.0]])[0] - 0.35) < 0.01)    # the input in X's units
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
    scaling_: Scaling | None
    _sums: CompensatedSum

    def __init__(
        self,
        kernel: Kernel | str = "gaussian",
        *,
        n_landmarks: int | str | AutoLandmarks | None = None,
        solver: str = "auto",
        rcond: float | None = None,
        sampler: SamplerLike = FIT_SAMPLER,
        random_state: RandomStateLike = None,
        n_threads: int | None = None,
        chunk_rows: int | None = None,
        passes: int = 2,
        standardize: bool | str = False,
    ) -> None:
        self.kernel = kernel
        self.n_landmarks = n_landmarks
        self.solver = solver
        self.rcond = rcond
        self.sampler = sampler
        self.random_state = random_state
        self.n_threads = n_threads
        self.chunk_rows = chunk_rows
        self.passes = passes
        self.standardize = standardize

    # --- checks ---
    def _check_params(self) -> tuple[float, int]:
        """Validated (rcond, n_threads) (:func:`~nystrom_kme.nystrom._parameters.check_params`)."""
        return check_params(self.solver, self.rcond, self.passes, self.chunk_rows, self.standardize, self.n_threads)

    def _settings(self, scaling: Scaling | None = None) -> LandmarkSettings:
        """The parameters that choose the landmarks (:mod:`nystrom_kme.nystrom._landmark_choice`)."""
        return LandmarkSettings(self.kernel, self.n_landmarks, scaled_sampler(self.sampler, scaling), self.n_threads)

    def _solve(
        self,
        choice: LandmarkChoice,
        acc: CompensatedSum,
        weight_sum: float,
        n: int,
        solved: tuple[np.ndarray, str, int] | None = None,
        scale: float = 1.0,
        names: tuple[str, ...] | None = None,
        scaling: Scaling | None = None,
    ) -> NystromKME:
        """Solve K_m alpha = s_sum / weight_sum on ``choice``'s landmarks and set the fitted
        attributes; ``acc`` and ``weight_sum`` in units of ``scale``, ``solved`` as for
        :func:`~nystrom_kme.nystrom._sufficient_statistics.solve_statistics`. ``s_sum_`` and ``weight_sum_``
        keep the weights' own units; ``names`` become ``feature_names_in_`` (None: the
        attribute is removed, as scikit-learn does for data without names); ``scaling``
        becomes ``scaling_`` (the columns' scaling the landmarks are in)."""
        rcond, n_threads = self._check_params()
        landmarks = choice.landmarks
        out = solve_statistics(
            landmarks,
            choice.kernel,
            acc,
            weight_sum,
            scale,
            solver=self.solver,
            rcond=rcond,
            n_threads=n_threads,
            solved=solved,
        )
        # All fitted attributes change in one step, the embedding used by evaluations
        # last and as one object: a reader never sees a mix of two fits.
        self.__dict__.update(
            fitted_attributes(
                kernel=choice.kernel,
                indices=choice.indices,
                policy=choice.policy,
                landmarks=landmarks,
                weights=out.weights,
                n_samples=int(n),
                solver=out.solver,
                rank=out.rank,
                sums=out.sums,
                weight_sum=out.weight_sum,
                report=choice.report,
                scaling=scaling,
            )
        )
        self._keep_names(names)
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

        ``standardize=`` adds a read before these (the columns' statistics), and X is then
        seen through that scaling by every pass; a generator is refused.

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
            draws proportional to them. As in scikit-learn, unit weights are no
            weights, nor is any constant: ``sample_weight=np.full(n, c)`` gives the
            landmarks and weights of ``fit(X)`` bit for bit (``s_sum_`` and
            ``weight_sum_`` in units of c). For a
            streamed source X they are read into memory (n float64) unless they are
            a dask array beside dask X.

        Returns
        -------
        self
        """
        self._check_params()
        check_not_sparse(X, "X")
        rng = check_random_state(self.random_state)
        src = as_source(X, "X", chunk_rows=self.chunk_rows)
        streamed = None if isinstance(src, ArraySource) else "a streamed source"
        scaling = scaling_for(self.standardize, src, rng, "the fit")
        src = scaled(src, scaling)
        if streamed and self.passes == 1:
            return self._fit_one_pass(src, sample_weight, rng, scaling)
        if not src.reiterable:
            raise ValueError(
                "a generator or iterator can be read only once, and passes=2 reads "
                "the data more than once: pass a list of chunks, a callable "
                "returning a fresh iterator, or an array; or use passes=1"
            )
        n = src.count_rows()
        sample_weight, scale = scale_or_drop_weights(check_sample_weight(sample_weight, n))
        if as_auto_spec(self.n_landmarks) is not None:
            return self._fit_auto(src, sample_weight, scale, rng, scaling)
        choice = self._settings(scaling).choose(src, sample_weight, rng, streamed=streamed)
        acc, total = src.kernel_sums(
            choice.landmarks, choice.kernel, weights=sample_weight, n_threads=n_threads_arg(self.n_threads)
        )
        return self._solve(choice, acc, total, n, scale=scale, names=src.feature_names, scaling=scaling)

    def _fit_auto(
        self,
        src: RowSource,
        sample_weight: Weights | None,
        scale: float,
        rng: np.random.Generator,
        scaling: Scaling | None,
    ) -> NystromKME:
        """n_landmarks="auto": the certified search of :mod:`nystrom_kme.landmark_search`."""
        rcond, n_threads = self._check_params()
        choice, sums, weight_sum, solution = self._settings(scaling).search(
            src, sample_weight, rng, solver=self.solver, rcond=rcond, n_threads=n_threads
        )
        n = src.count_rows()
        return self._solve(choice, sums, weight_sum, n, solution, scale=scale, names=src.feature_names, scaling=scaling)

    def _fit_one_pass(
        self, src: RowSource, sample_weight: Weights | None, rng: np.random.Generator, scaling: Scaling | None
    ) -> NystromKME:
        if sample_weight is not None:
            raise ValueError(
                "sample_weight is not supported with passes=1; weight each chunk "
                "with partial_fit(chunk, sample_weight=...)"
            )
        choice, blocks = self._settings(scaling).choose_from_stream(src, rng)
        acc, total = IterableSource(blocks, src.name).kernel_sums(
            choice.landmarks, choice.kernel, n_threads=n_threads_arg(self.n_threads)
        )
        return self._solve(choice, acc, total, int(total), names=src.feature_names, scaling=scaling)

    def partial_fit(self, X: SourceLike, y: object = None, *, sample_weight: ArrayLike | None = None) -> NystromKME:
        """Add the rows of X (n_chunk, n_features) to the embedding, landmarks fixed.

        The first call (on an unfitted estimator) chooses the landmarks among the rows
        of this chunk, as :meth:`fit` on it would: ``n_landmarks=None`` takes the
        paper's m for this chunk's n_chunk rows (the total is not known yet; for a
        stream of N rows pass ``n_landmarks=nk.default_n_landmarks(N)``), an integer
        above n_chunk is capped at n_chunk with a UserWarning, and "auto" and "bound"
        are refused (they need all the rows). Later calls (and calls after :meth:`fit`)
        keep ``landmarks_`` and ``kernel_`` and add K(L, X) w to ``s_sum_`` and sum(w)
        to ``weight_sum_``; the weights are re-solved, O(n_chunk m d + m^3) per call.
        The result after any sequence of calls equals ``fit`` on the concatenated rows
        with these landmarks (the sums agree to ~1e-16 relative). X may be any source.

        ``y`` is ignored (see :meth:`fit`). ``sample_weight`` (n_chunk,), keyword only:
        non-negative and not normalised (missing weights count 1 per row); the
        statistics are kept in the weights' own units, so weights across calls keep
        their ratios. When those statistics are subnormal (``weight_sum_`` below
        2.2e-308) adding to them would lose precision, and a later call refuses.

        With ``standardize=``, the first call fits ``scaling_`` on its chunk's rows (a
        generator is refused: it reads the chunk twice); later calls see X through it.
        """
        self._check_params()
        check_not_sparse(X, "X")
        first = not hasattr(self, "_sums")
        scaling = None if first else self.scaling_
        src = self._source(X, "X", self.chunk_rows, scaling)  # names checked once fitted
        if first:
            rng = check_random_state(self.random_state)
            scaling = scaling_for(self.standardize, src, rng, "partial_fit")
            src = scaled(src, scaling)
        n_chunk = src.count_rows()
        sample_weight, part_scale = scale_or_drop_weights(
            check_sample_weight(sample_weight, n_chunk, normalisable=False)
        )
        if first:
            choice = self._settings(scaling).choose_first_chunk(src, sample_weight, rng)
            part, part_total = src.kernel_sums(
                choice.landmarks, choice.kernel, weights=sample_weight, n_threads=n_threads_arg(self.n_threads)
            )
            return self._solve(
                choice, part, part_total, n_chunk, scale=part_scale, names=src.feature_names, scaling=scaling
            )
        self._check_n_features(src)
        check_statistics_normal(self.weight_sum_, "partial_fit")
        choice = LandmarkChoice(
            self.kernel_, self.sampler_, self.landmark_indices_, self.landmarks_, self.n_landmarks_report_
        )
        part, part_total = src.kernel_sums(
            choice.landmarks, choice.kernel, weights=sample_weight, n_threads=n_threads_arg(self.n_threads)
        )
        acc, total, scale = add_statistics(self._sums, self.weight_sum_, part, part_total, part_scale)
        n = self.n_samples_ + n_chunk
        return self._solve(choice, acc, total, n, scale=scale, names=self._names(), scaling=scaling)

    def _check_n_features(self, src: RowSource) -> None:
        """X's column names, then its width, against the fitted ones, in scikit-learn's
        words (streamed sources of unknown width are checked when their first block is
        read)."""
        check_feature_names(self._names(), src.feature_names, owner=type(self).__name__, what=src.name)
        if src.n_features is not None and src.n_features != self.n_features_in_:
            raise ValueError(
                f"X has {src.n_features} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input"
            )

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

        All must see their inputs through the same scaling (``scaling_`` of
        ``standardize=``: none, or equal centres and scales), which the result keeps.
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
            check_feature_names(self._names(), e._names(), owner="this NystromKME", what="an embedding merged")
            check_same_scaling(self.scaling_, e.scaling_, "the embeddings merged")
            check_statistics_normal(e.weight_sum_, "merge")
        total = float(sum(e.weight_sum_ for e in parts))
        n = sum(e.n_samples_ for e in parts)
        landmarks, acc = merged_sums(
            [(e.landmarks_, e.weights_, e.weight_sum_, e._sums) for e in parts],
            self.kernel_,
            n_threads_arg(self.n_threads),
        )
        choice = LandmarkChoice(self.kernel_, self.sampler_, None, landmarks, self.n_landmarks_report_)
        names = self._names() or next((e._names() for e in others if e._names() is not None), None)
        return copy.copy(self)._solve(choice, acc, total, n, names=names, scaling=self.scaling_)

    def score(self, X: SourceLike, y: object = None, *, sample_weight: ArrayLike | None = None) -> float:
        """2 <mu, mu_hat_X> - ||mu||^2 = ||mu_hat_X||^2 - ||mu - mu_hat_X||^2, higher is
        better: it compares embeddings of one kernel.

        For one kernel, differences of scores on the same X are exactly differences of
        the squared RKHS distances ||mu - mu_hat_X||^2 between each embedding and the
        empirical embedding of X, so model selection on held-out data (e.g.
        ``GridSearchCV`` over ``n_landmarks`` or ``sampler``) picks the embedding
        closest to it. Across kernels or bandwidths the RKHS changes: the scores are
        numbers in different spaces, and the widest kernel (under which all data look
        alike) scores best. A UserWarning says so when in-memory rows already scored
        with another ``kernel`` in this process are scored again (the last 64 sets of
        rows are remembered by a hash, see :mod:`nystrom_kme.nystrom._score`): choose the
        kernel first (e.g. the median heuristic), then search the rest by score.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features), or a streamed source
            The held-out rows; read once, O(n m d).
        y : ignored
            Not used (see :meth:`fit`).
        sample_weight : array-like of shape (n_samples,), optional, keyword only
            Weights of the rows of X, as in :meth:`fit` (unit weights are no weights).

        Returns
        -------
        float

        Examples
        --------
        >>> import numpy as np, nystrom_kme as nk
        >>> rng = np.random.default_rng(0)
        >>> X, X_test = rng.normal(size=(2000, 2)), rng.normal(size=(500, 2))
        >>> few, many = (nk.NystromKME(nk.Gaussian(1.0), n_landmarks=m, random_state=0).fit(X) for m in (2, 100))
        >>> many.score(X_test) > few.score(X_test)          # closer to the held-out embedding
        True
        """
        landmarks, weights, kernel, scaling = self._snapshot()
        check_not_sparse(X, "X")
        src = self._source(X, "X", self.chunk_rows, scaling)  # in the fit's units
        self._check_n_features(src)
        sample_weight = scale_or_drop_weights(check_sample_weight(sample_weight, src.count_rows()))[0]
        try:
            spec = repr(get_kernel(self.kernel))  # the choice the user made ("median" is one choice)
        except ValueError:  # a kernel parameter changed after fit to an invalid one
            spec = repr(kernel)
        warn_if_other_kernel(spec, src, sample_weight)
        return embedding_score(landmarks, weights, kernel, src, sample_weight, n_threads_arg(self.n_threads))

    def summary(self) -> dict[str, Any]:
        """What ``nystrom-kme info`` prints: the fitted embedding's fields as JSON data."""
        self.fitted()
        return summary_of(dict(vars(self)), self.sampler, self.norm())

    def _fitted_summary(self) -> str | None:
        return describe(dict(vars(self)), self.sampler) if hasattr(self, "weights_") else None

    def _state(self) -> dict[str, Any]:
        """The fitted state as data (for :mod:`nystrom_kme.persistence`), read at once: one
        fit's even while another thread refits (the keys:
        :func:`~nystrom_kme.nystrom._fitted_state.state_of`).
        NotFittedError before a fit. The inverse of :meth:`_from_state`."""
        self.fitted()
        return state_of(dict(vars(self)))

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
        attributes = attributes_of_state(state)
        check_scaling(attributes["scaling_"], est.standardize, attributes["landmarks_"].shape[1])
        est.__dict__.update(attributes)
        est._keep_names(state.get("feature_names"))
        est._publish()
        return est


__all__ = ["NystromKME", "SOLVERS"]
