"""Batch drift detection: :class:`DriftDetector` tests each new batch against a frozen
Nyström reference with the library's default two-sample statistic, at a cost that does
not depend on the reference's size.

The reference is read once (:mod:`._reference`, shared with the online detector): a
held-out sample H of ``n_holdout`` rows, and from the other rows R the landmarks, the
bandwidths and R's Nyström mean embedding mu_R. A statistic of ``STATISTICS``
(:mod:`._statistic`; the default: for each of B + 1 splits of the units of X and H, single
rows for small batches, bins of BIN rows for larger ones, each kernel's
||mean phi(S_s) - mu_R||^2 in the Nyström features phi) gives every kernel's permuted
statistics; the two-sample engine decides (:mod:`nystrom_kme.two_sample`: the rules, the
p-value, the kernel that decided, the interval). Under H0 the units of X and H are
exchangeable given R, so the p-value is exact, whatever n_ref, over the draw of H. For
one detector (H fixed) H's own deviation from the distribution moves its false-alarm
rate away from alpha, by about 0.054 (b / |pool|)^(1/2) in standard deviation (measured,
bench/RESULTS.md): a batch larger than the pool over POOL_RATIO is tested with a warning
that names the largest calibrated batch.

Cost per ``predict``: O(b m d) for the batch's kernel values, O(B b m) for the splits'
sums (each split's batch units gathered) and O(B m^2) for the features, per kernel,
whatever the sizes of the reference and of H; memory O(K (ROW_POOL + h / BIN) m) in
float32 for the pools.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import _plots, defaults
from .._columns import check_feature_names, fitted_feature_names, keep_feature_names
from .._frames import Tabular
from .._landmark_plan import DefaultLandmarks
from .._scaling import (
    Scaling,
    check_scaling,
    check_standardize,
    fit_scaling,
    scaling_from_state,
    scaling_state,
    scaling_summary,
    warn_scales,
)
from .._validation import (
    SPLIT_SEED_BOUND,
    RandomStateLike,
    as_data_matrix,
    check_positive_int,
    check_random_state,
    draw_seed,
    n_threads_arg,
)
from ..column_report import ColumnReport, column_report
from ..kernel_collection import KernelCollection
from ..kernels import Kernel
from ..landmark_search import AutoLandmarks
from ..persistence import persistable
from ..sampling import SamplerLike
from ..sources import SourceLike, as_rows, scaled
from ..two_sample import Effect
from ..two_sample.engine import (
    check_landmarks,
    check_level,
    check_permutations,
    decide,
    distance,
    given_kernels,
    kernels_and_rule,
)
from ..two_sample.rules import ONE_KERNEL, RULES, Rule
from ._reference import Reference, as_float64, build_reference, reference_source, save_detector
from ._statistic import POOL_RATIO, STATISTICS

#: Landmarks by default: the paper's m for min(n_ref - n_holdout, MAX_DEFAULT_ROWS) rows
#: (302: the test's resolution is set by the batch and the held-out rows, not by a huge
#: reference, and a predict costs the same at any n_ref above 10^4).
MAX_DEFAULT_ROWS = defaults.DRIFT_MAX_DEFAULT_ROWS
#: The default m (the rule of every Nyström test and detector, capped at the paper's m
#: for MAX_DEFAULT_ROWS rows).
DEFAULT_LANDMARKS = DefaultLandmarks.up_to(MAX_DEFAULT_ROWS)
#: The statistic of a batch against the reference (``STATISTICS``).
DEFAULT_STATISTIC = "nystrom-mmd"


@dataclass(frozen=True)
class DriftResult(Tabular):
    """One batch against the reference (``row()`` and ``to_frame()``: one row of a table,
    :func:`nystrom_kme.results_frame` for many; ``plot()``: the permutation null).

    Attributes
    ----------
    is_drift : bool
        ``pvalue <= threshold``.
    pvalue : float
        (1 + #{s >= 1: F_s >= F_0}) / (1 + B): uniform under H0 (no drift), exactly.
    threshold : float
        The level alpha the p-value is compared with (alibi-detect's ``threshold``).
    statistic : float
        The test's aggregate F_0, larger being more extreme (for the default rule "maxz":
        the largest standardised MMD^2; for "fuse+median" and "mmdagg": minus a marginal
        p-value, as :attr:`AggregatedTestResult.statistic`; one kernel: its MMD^2).
    distance : Effect
        The MMD between the batch's and the reference's distributions with the kernel that
        decided, with a 95% interval (the unbiased estimate, the reference's own noise
        included; first- and second-order variance: :func:`nystrom_kme.two_sample._effect.distance`).
    kernel : Kernel
        The kernel whose p-value decided (the two-sample engine's rule: for the default,
        the kernel of smallest marginal p-value).
    kernel_pvalues : ndarray (K,)
        Each kernel's own permutation p-value (not corrected for K).
    n_batch : int
    null_distribution : ndarray (B,) or None
        The aggregates F_s of the random splits (what ``plot()`` draws).

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> det = nk.DriftDetector(rng.normal(size=(20_000, 2)), n_holdout=6000, n_permutations=99, random_state=0)
    >>> res = det.predict(rng.normal(size=(200, 2)) * 1.5)
    >>> res.is_drift, res.pvalue, res.threshold
    (True, 0.01, 0.05)
    """

    is_drift: bool
    pvalue: float
    threshold: float
    statistic: float
    distance: Effect
    kernel: Kernel
    kernel_pvalues: np.ndarray
    n_batch: int
    null_distribution: np.ndarray | None = field(default=None, repr=False)

    def plot(self, ax: Any = None, *, bins: int | str = "auto") -> Any:
        """The splits' statistics (histogram), the batch's, and the threshold at the
        detector's alpha (drift when the batch's lies right of it); matplotlib is imported
        here (an ImportError names it when it is missing). Returns the Axes."""
        if self.null_distribution is None:
            raise ValueError("this DriftResult holds no null_distribution to plot")
        title = f"drift: p-value {self.pvalue:.3g}, batch of {self.n_batch} rows"
        return _plots.plot_null(self.null_distribution, self.statistic, self.threshold, title=title, ax=ax, bins=bins)

    def __repr__(self) -> str:
        return (
            f"DriftResult(is_drift={self.is_drift}, pvalue={self.pvalue:.4g}, threshold={self.threshold:g}, "
            f"distance={self.distance.mmd:.4g} [{self.distance.low:.4g}, {self.distance.high:.4g}], "
            f"kernel={self.kernel!r}, n_batch={self.n_batch})"
        )


@persistable
class DriftDetector:
    """Drift detection against a frozen Nyström reference, one permutation test per batch.

    Parameters
    ----------
    x_ref : array-like (n_ref, d) or row source
        The reference data, read once (memmaps, data files through ``nk.sources``,
        iterables of chunks, dask arrays: 10^7 rows stream in O(m d) memory besides the
        held-out rows). At least 2 rows.
    kernel : "auto", Kernel, str, KernelCollection or list of kernels, default="auto"
        "auto": the default test of :func:`~nystrom_kme.two_sample_test` (the largest
        standardised MMD^2 over six Gaussian and l1 Laplacian kernels); a kernel:
        that kernel alone (a name: the median bandwidth of the reference); a collection:
        ``aggregation`` over it (default "fuse"). Bandwidths come from the reference only.
    aggregation : {"fuse+median", "fuse", "mmdagg", "maxz"} or None
    n_landmarks : int, None, "auto" or AutoLandmarks
        m, drawn from the reference rows outside the held-out ones (above them capped with
        a warning); None: ceil(sqrt(n) log sqrt(n)) for those n rows, at most 302 (the
        paper's m for 5000 rows: reached from 10^4 reference rows on); "auto": the
        certified search of :mod:`nystrom_kme.landmark_search` on those rows, for the
        narrowest kernel. The landmark plan of :func:`~nystrom_kme.two_sample_test`.
    sampler : sampling policy name or object, or None
        How the landmarks are chosen from those rows (the names of
        ``NystromKME(sampler=...)``; a policy that reads the rows looks at the narrowest
        kernel, among 20 m rows drawn uniformly); None: uniform without replacement.
    n_permutations : int, default=200
    n_holdout : int, default=100000
        Reference rows held out to permute against each batch (at most half the
        reference). Batches of at most 333 rows are permuted row by row with the first
        10 000 of them; larger batches in bins of 10 rows with all of them. A batch of more
        than n_holdout / 30 rows (``summary()["largest_calibrated_batch"]``) gets a warning:
        its false-alarm rate may stray from alpha. Memory (10 000 + n_holdout / 10) m K
        4 bytes (73 MB each at the default m = 302 and 6 kernels), time per batch
        O(B b m + B m^2), whatever n_holdout.
    statistic : str, default="nystrom-mmd"
        The per-batch statistic, a name of ``STATISTICS`` (``drift/_statistic.py``).
    standardize : bool or {"standard", "robust"}, default=False
        Centre and scale every column with the reference's statistics (saved with the
        detector, applied to every batch): the mean and standard deviation, or the median
        and IQR / 1.349. Without it, a UserWarning names the columns whose variance dwarfs
        the others' (one column in thousands drowns the rest).
    alpha : float, default=0.05
        The level: ``is_drift`` when ``pvalue <= alpha``.
    preprocess : callable or None
        Applied to x_ref (then in memory) and to every batch before the test (e.g. a
        fitted scaler's ``transform``); a detector with one cannot be saved.
    random_state : None, int or numpy Generator
        The held-out rows, the landmarks and every batch's splits (the i-th ``predict``
        draws from (seed, i): reproducible, also after ``nk.load``).
    n_threads : int or None
    chunk_rows : int or None
        Rows per read of the reference.
    progress : bool or None
        A progress bar over the reference's passes (tqdm); None: only when stderr is a terminal.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(1)
    >>> det = nk.DriftDetector(rng.normal(size=(40_000, 3)), n_holdout=10_000, random_state=0)
    >>> res = det.predict(rng.normal(size=(300, 3)))                  # same distribution
    >>> res.is_drift, res.pvalue > 0.05                                # (a false alarm 1 time in 20)
    (False, True)
    >>> res = det.predict(rng.normal(size=(300, 3)) + 0.3)            # shifted
    >>> res.is_drift, res.kernel.family
    (True, 'Gaussian')
    """

    def __init__(
        self,
        x_ref: SourceLike,
        *,
        kernel: Kernel | str | KernelCollection | list[Any] = "auto",
        aggregation: str | None = None,
        n_landmarks: int | str | AutoLandmarks | None = None,
        sampler: SamplerLike | None = None,
        n_permutations: int = defaults.N_PERMUTATIONS,
        n_holdout: int = defaults.DRIFT_N_HOLDOUT,
        alpha: float = defaults.ALPHA,
        statistic: str = DEFAULT_STATISTIC,
        standardize: bool | str = False,
        preprocess: Callable[[Any], Any] | None = None,
        random_state: RandomStateLike = None,
        n_threads: int | None = None,
        chunk_rows: int | None = None,
        progress: bool | None = None,
    ) -> None:
        self.kernel = kernel
        self.aggregation = aggregation
        self.n_landmarks = n_landmarks
        self.sampler = sampler
        self.n_permutations = check_permutations(n_permutations)
        self.n_holdout = check_positive_int(n_holdout, "n_holdout")
        self.alpha = check_level(alpha)
        if statistic not in STATISTICS:
            raise ValueError(f"statistic must be one of {tuple(STATISTICS)}, got {statistic!r}")
        self.statistic = statistic
        self.standardize = standardize
        kind = check_standardize(standardize)
        self.preprocess = preprocess
        self.n_threads = n_threads
        nt = n_threads_arg(n_threads)
        single, collection, rule, _ = kernels_and_rule(kernel, aggregation)
        m, auto = check_landmarks(n_landmarks, sampler, "nystrom", collection is not None)
        src, names = reference_source(x_ref, preprocess, chunk_rows)
        n = src.count_rows()
        if n < 4:
            raise ValueError(f"x_ref must have at least 4 rows (2 held out), got {n}")
        if self.n_holdout < 2:
            raise ValueError(f"n_holdout must be at least 2 (rows to permute against each batch), got {n_holdout!r}")
        rng = check_random_state(random_state)
        self._seed = draw_seed(rng, SPLIT_SEED_BOUND)
        self._calls = 0
        kernels = single if single is not None else collection
        assert kernels is not None
        scaling = None if kind is None else fit_scaling([src], kind)
        if scaling is None:
            warn_scales([src], given_kernels(single, collection), "the drift reference")
        ref = build_reference(
            scaled(src, scaling),
            kernels,
            rule.adds_median,
            auto if auto is not None else m,
            sampler,
            self.n_holdout,
            DEFAULT_LANDMARKS,
            rng,
            nt,
            progress,
        )
        assert src.n_features is not None  # known once the rows are counted
        keep_feature_names(self, names)
        self._build(None if rule is ONE_KERNEL else rule.name, ref, src.n_features, n, scaling)

    # ---------------------------------------------------------------- state

    def _build(
        self, rule: str | None, ref: Reference, n_features: int, n_ref: int, scaling: Scaling | None = None
    ) -> None:
        """The fitted attributes, and the statistic's pools derived from them (not saved:
        recomputed, bit for bit, at load). Every invariant of a detector is checked here
        (``Reference.check``, the rule against the kernels, the sizes, the scaling against
        ``standardize``), for a new detector and a loaded one alike."""
        ref.check()
        if ref.landmarks.shape[1] != n_features:
            raise ValueError(f"landmarks must have n_features_in = {n_features} columns, got {ref.landmarks.shape[1]}")
        if not ref.n_rest + ref.holdout.shape[0] == n_ref:
            raise ValueError(
                f"n_rest + the held-out rows must be n_reference = {n_ref}, got {ref.n_rest} + {ref.holdout.shape[0]}"
            )
        if rule is not None and rule not in RULES:
            raise ValueError(f"rule must be one of {tuple(RULES)} or None, got {rule!r}")
        self._rule: Rule = ONE_KERNEL if rule is None else RULES[rule]
        if len(ref.kernels) < self._rule.min_kernels or (rule is None and len(ref.kernels) != 1):
            raise ValueError(f"rule {self._rule.name!r} does not take {len(ref.kernels)} kernels")
        if not (isinstance(self._seed, (int, np.integer)) and 0 <= self._seed < SPLIT_SEED_BOUND):
            raise ValueError(f"seed must be an integer in [0, {SPLIT_SEED_BOUND}), got {self._seed!r}")
        if not (isinstance(self._calls, (int, np.integer)) and self._calls >= 0):
            raise ValueError(f"calls must be a non-negative integer, got {self._calls!r}")
        check_scaling(scaling, self.standardize, n_features)
        self.scaling_ = scaling
        self.kernels_ = ref.kernels
        self.rule_ = rule
        self.reference_ = ref
        self.n_features_in_ = n_features
        self.n_reference_ = n_ref
        self.n_landmarks_ = ref.landmarks.shape[0]
        self._lock = threading.Lock()
        self._statistic = STATISTICS[self.statistic](ref, n_threads_arg(self.n_threads))

    def _state(self) -> dict[str, Any]:
        ref = self.reference_
        return {
            "kernels": self.kernels_,
            "rule": self.rule_,
            "holdout": ref.holdout,
            "landmarks": ref.landmarks,
            "sums": ref.sums,
            "n_rest": ref.n_rest,
            "mean_sq": ref.mean_sq,
            "seed": self._seed,
            "calls": self._calls,
            "n_features_in": self.n_features_in_,
            "n_reference": self.n_reference_,
            "feature_names": fitted_feature_names(self),
            **scaling_state(self.scaling_),
        }

    @classmethod
    def _from_state(cls, params: dict[str, Any], state: dict[str, Any]) -> DriftDetector:
        """A detector from saved parameters and state (nk.load), every field checked
        against the others where a new detector's are (``_build``)."""
        det = cls.__new__(cls)
        det.kernel = params["kernel"]
        det.aggregation = params["aggregation"]
        det.n_landmarks = params["n_landmarks"]
        det.sampler = params.get("sampler")
        det.n_permutations = check_permutations(params["n_permutations"])
        det.n_holdout = check_positive_int(params["n_holdout"], "n_holdout")
        det.alpha = check_level(params["alpha"])
        det.statistic = params.get("statistic", DEFAULT_STATISTIC)
        det.standardize = params.get("standardize", False)
        if det.statistic not in STATISTICS:
            raise ValueError(f"statistic must be one of {tuple(STATISTICS)}, got {det.statistic!r}")
        det.preprocess = None
        det.n_threads = params["n_threads"]
        check_landmarks(det.n_landmarks, det.sampler, "nystrom", len(state["kernels"]) > 1)
        det._seed = state["seed"]
        det._calls = state["calls"]
        ref = Reference(
            list(state["kernels"]),
            state["holdout"],
            state["landmarks"],
            state["sums"],
            state["n_rest"],
            state["mean_sq"],
        )
        keep_feature_names(det, state.get("feature_names"))
        det._build(state["rule"], ref, state["n_features_in"], state["n_reference"], scaling_from_state(state))
        return det

    def get_params(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "aggregation": self.aggregation,
            "n_landmarks": self.n_landmarks,
            "sampler": self.sampler,
            "n_permutations": self.n_permutations,
            "n_holdout": self.n_holdout,
            "alpha": self.alpha,
            "statistic": self.statistic,
            "standardize": self.standardize,
            "n_threads": self.n_threads,
        }

    def save(self, path: Any) -> None:
        """Write the detector to ``path`` (.npz: the held-out rows, the landmarks, R's sums,
        the kernels and the seed; nk.load reads it back)."""
        save_detector(self, path)

    def summary(self) -> dict[str, Any]:
        """What ``nystrom-kme info`` prints: the detector's fields as JSON data."""
        return {
            "kernels": [repr(k) for k in self.kernels_],
            "rule": self.rule_,
            "statistic": self.statistic,
            "n_reference": self.n_reference_,
            "n_features": self.n_features_in_,
            "n_landmarks": self.n_landmarks_,
            "n_holdout": int(self.reference_.holdout.shape[0]),
            "n_permutations": self.n_permutations,
            "alpha": self.alpha,
            "largest_calibrated_batch": self._statistic.largest_exact_batch(),
            "batches_tested": self._calls,
            **scaling_summary(self.scaling_),
        }

    def __repr__(self) -> str:
        what = self.rule_ if self.rule_ is not None else repr(self.kernels_[0])
        return (
            f"DriftDetector({what}, n_reference={self.n_reference_}, m={self.n_landmarks_}, "
            f"n_holdout={self.reference_.holdout.shape[0]}, n_permutations={self.n_permutations})"
        )

    # ---------------------------------------------------------------- predict

    def predict(self, x: Any) -> DriftResult:
        """Test one batch (b, d), b >= 2, against the reference.

        Returns a :class:`DriftResult`: ``is_drift``, the exact permutation ``pvalue``,
        the ``distance`` (MMD with a 95% interval) and the ``kernel`` whose p-value
        decided. Each call draws its own splits (reproducibly: the i-th call from
        (seed, i); calls from several threads each take their own i).
        """
        X = self._batch(x)
        nt = n_threads_arg(self.n_threads)
        b = X.shape[0]
        largest = self._statistic.largest_exact_batch()
        if b > largest:
            held = self.reference_.holdout.shape[0]
            remedy = (
                "hold out more reference rows (n_holdout) or test smaller batches"
                if 2 * held < self.n_reference_
                else f"the reference's {self.n_reference_} rows allow no more than {held} held out, and each "
                "batch is compared with those alone: with a reference this small, "
                "nk.two_sample_test(reference, batch) is exact at any batch size and compares it with every "
                "reference row, or test smaller batches"
            )
            warnings.warn(
                f"a batch of {b} rows is more than this detector's pool of held-out rows calibrates "
                f"(at most {largest} rows, 1/{POOL_RATIO} of it): its false-alarm rate may differ from "
                f"alpha = {self.alpha:g}; {remedy}",
                UserWarning,
                stacklevel=2,
            )
        with self._lock:  # each call its own draw, also from several threads
            call = self._calls
            self._calls += 1
        rng = np.random.default_rng([self._seed, call])
        found = self._statistic.permuted(X, self.n_permutations, rng, nt)
        decision = decide(self._rule, found.statistics, self.kernels_, self.reference_.mean_sq)
        j = decision.deciding
        shown = distance(
            self.kernels_[j],
            found.batch_features[j],
            self._statistic.pool_covariance(j),
            self._statistic.means[j],
            self.reference_.n_rest,
        )
        return DriftResult(
            is_drift=bool(decision.pvalue <= self.alpha),
            pvalue=decision.pvalue,
            threshold=self.alpha,
            statistic=decision.statistic,
            distance=shown,
            kernel=self.kernels_[j],
            kernel_pvalues=decision.kernel_pvalues,
            n_batch=b,
            null_distribution=decision.null,
        )

    def column_report(self, x: Any, **options: Any) -> ColumnReport:
        """Which columns moved: each column of the batch (b, d) against the same column of
        the held-out reference rows (all of them, in the detector's units: after
        ``preprocess`` and ``standardize``), its own two-sample test, the p-values adjusted
        for the number of columns, the columns ranked (:func:`nystrom_kme.column_report`;
        the names are the reference's ``feature_names_in_``, or x0, x1, ... for the columns
        a ``preprocess`` returns: they need not be the input's). ``options`` are
        column_report's (``correction``, ``columns``, ``n_permutations``, ``kernel``, ...);
        ``random_state`` defaults to one drawn from the detector's seed and the batches
        tested so far (reproducible after ``nk.load``, without changing later batches' draws).

        Examples
        --------
        >>> import numpy as np, nystrom_kme as nk
        >>> rng = np.random.default_rng(1)
        >>> det = nk.DriftDetector(rng.normal(size=(20_000, 3)), n_holdout=5000, random_state=0)
        >>> batch = rng.normal(size=(500, 3)); batch[:, 1] += 0.4
        >>> rep = det.column_report(batch)
        >>> rep.moved[0], rep.columns                     # the column that moved most first
        ('x1', ('x0', 'x1', 'x2'))
        """
        X = self._batch(x)
        names = fitted_feature_names(self)
        options.setdefault("random_state", np.random.default_rng([self._seed, self._calls, 1]))
        if names is not None and self.preprocess is None:
            options.setdefault("names", list(names))
        return column_report(self.reference_.holdout, X, **options)

    def _batch(self, x: Any) -> np.ndarray:
        rows, names = as_rows(x, "x")  # a path read here; names checked before preprocess
        check_feature_names(fitted_feature_names(self), names, owner="DriftDetector", what="x")
        if self.preprocess is not None:
            rows = self.preprocess(rows)
        X = as_data_matrix(rows, "x", min_rows=2)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"x has {X.shape[1]} features but the reference has {self.n_features_in_}")
        return as_float64(X if self.scaling_ is None else self.scaling_.apply(X))


__all__ = ["DEFAULT_LANDMARKS", "DEFAULT_STATISTIC", "STATISTICS", "DriftDetector", "DriftResult"]
