"""Batch drift detection: :class:`DriftDetector` tests each new batch against a frozen
Nyström reference with the library's default two-sample statistic, at a cost that does
not depend on the reference's size.

The reference is read once (:mod:`._reference`): a held-out sample H of ``n_holdout``
rows, and from the other rows R the landmarks, the bandwidths and R's Nyström mean
embedding mu_R. For a batch X of b rows, each of B + 1 splits of the units of X and H
(single rows for small batches; bins of BIN rows, X's drawn at random, for larger ones)
chooses X's number of them as the "batch" S_s (split 0: X itself), and each kernel's
statistic is ||mean phi(S_s) - mu_R||^2 in the Nyström features phi of the landmarks.
Under H0 the units of X and H are exchangeable given R, so the p-value (the rank of split
0 among the B + 1) is exact, whatever n_ref. For one detector (H fixed) the null is exact
only on average over H: H's own deviation from the distribution shifts it, by a fraction
of the batch's noise of about sqrt(b / |H|); the pool is therefore kept at least
POOL_RATIO times the batch's rows where the reference allows. The kernels' statistics
combine by the rules of :mod:`nystrom_kme.two_sample.rules` (the default: "fuse+median",
as ``two_sample_test``).

Cost per ``predict``: O(b m d) for the batch's kernel values, O(B b m) for the splits'
sums (each split's batch units gathered) and O(B m^2) for the features, per kernel,
whatever the sizes of the reference and of H; memory O(K (h + m) m).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from .. import _core
from .._progress import progress_bar
from .._validation import (
    SPLIT_SEED_BOUND,
    RandomStateLike,
    as_data_matrix,
    check_positive_int,
    check_random_state,
    draw_seed,
    n_threads_arg,
)
from ..bounds import default_n_landmarks
from ..kernel_collection import KernelCollection, as_collection
from ..kernels import Kernel, get_kernel, median_distance
from ..permutation import SplitSpec
from ..persistence import persistable
from ..sources import SourceLike
from ..two_sample import DEFAULT_COLLECTION, Effect
from ..two_sample.rules import AGGREGATIONS, RULES, marginal_pvalues, permutation_pvalue
from ._reference import (
    SUBSET,
    Reference,
    as_float64,
    draw_holdout,
    mean_squares,
    reference_source,
    rest_rows,
    rest_sums,
    save_detector,
)

#: The default test's rule (as ``two_sample_test(kernel="auto")``); a collection: "fuse".
DEFAULT_RULE = "fuse+median"
#: Landmarks by default: the paper's m for min(n_ref - n_holdout, MAX_DEFAULT_ROWS) rows
#: (302: the test's resolution is set by the batch and the held-out rows, not by a huge
#: reference, and a predict costs the same at any n_ref above 10^4).
MAX_DEFAULT_ROWS = 5_000
#: The level of the distance's interval.
LEVEL = 0.95
#: Splits whose batch units are summed per block of gathered rows (SPLIT_BLOCK x b x m
#: values at a time).
SPLIT_BLOCK = 16
#: Held-out rows permuted one by one with small batches.
ROW_POOL = 2000
#: Larger batches permute bins of this many rows, against every held-out row in bins.
BIN = 10
#: The pool of held-out units holds at least this many times the batch's rows: a fixed
#: pool much smaller than that shifts the permutation null of one detector (the p-values
#: are exact over the draw of the held-out rows, not for every draw; bench/RESULTS.md).
POOL_RATIO = 20


@dataclass(frozen=True)
class DriftResult:
    """One batch against the reference.

    Attributes
    ----------
    is_drift : bool
        ``pvalue <= threshold``.
    pvalue : float
        (1 + #{s >= 1: F_s >= F_0}) / (1 + B): uniform under H0 (no drift), exactly.
    threshold : float
        The level alpha the p-value is compared with (alibi-detect's ``threshold``).
    statistic : float
        The test's aggregate F_0 (for "fuse+median": minus the smaller marginal p-value).
    distance : Effect
        The MMD between the batch's and the reference's distributions, with a 95% interval
        (the unbiased estimate; first-order and permutation spread), in the units of one
        kernel (``distance.kernel``): the median-bandwidth Gaussian for the default test,
        the kernel of a one-kernel test, else the kernel that fired.
    kernel : Kernel
        The kernel that fired: the smallest marginal p-value (the median-bandwidth
        Gaussian for a plain shift, a narrow kernel for a local change).
    kernel_pvalues : ndarray (K,)
        Each kernel's own permutation p-value (not corrected for K).
    n_batch : int

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> det = nk.DriftDetector(rng.normal(size=(5000, 2)), n_holdout=500, n_permutations=99, random_state=0)
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
        "auto": the default test of :func:`~nystrom_kme.two_sample_test` (MMD-FUSE over
        four kernels or the median-bandwidth Gaussian, the smaller p-value); a kernel:
        that kernel alone (a name: the median bandwidth of the reference); a collection:
        ``aggregation`` over it (default "fuse"). Bandwidths come from the reference only.
    aggregation : {"fuse+median", "fuse", "mmdagg", "maxz"} or None
    n_landmarks : int or None
        m; None: ceil(sqrt(n) log sqrt(n)) for n = min(n_ref - n_holdout, 5000) (302 above
        10^4 reference rows).
    n_permutations : int, default=200
    n_holdout : int, default=20000
        Reference rows held out to permute against each batch (at most half the
        reference). Batches of at most 100 rows are permuted row by row with the first
        2000 of them; larger batches in bins of 10 rows with all of them, so that the pool
        holds 20 times the batch's rows up to batches of n_holdout / 20 rows. Memory
        O(K (2000 + n_holdout / 10) m), time per batch O(B b m + B m^2), whatever n_holdout.
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
    >>> rng = np.random.default_rng(0)
    >>> det = nk.DriftDetector(rng.normal(size=(20_000, 3)), n_holdout=1000, random_state=0)
    >>> det.predict(rng.normal(size=(300, 3))).is_drift                # same distribution
    False
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
        n_landmarks: int | None = None,
        n_permutations: int = 200,
        n_holdout: int = 20_000,
        alpha: float = 0.05,
        preprocess: Callable[[Any], Any] | None = None,
        random_state: RandomStateLike = None,
        n_threads: int | None = None,
        chunk_rows: int | None = None,
        progress: bool | None = None,
    ) -> None:
        self.kernel = kernel
        self.aggregation = aggregation
        self.n_landmarks = n_landmarks
        self.n_permutations = check_positive_int(n_permutations, "n_permutations")
        self.n_holdout = check_positive_int(n_holdout, "n_holdout")
        self.alpha = _level(alpha)
        self.preprocess = preprocess
        self.n_threads = n_threads
        nt = n_threads_arg(n_threads)
        kernels, rule = _kernels_and_rule(kernel, aggregation)
        src = reference_source(x_ref, preprocess, chunk_rows)
        n = src.count_rows()
        if n < 2:
            raise ValueError(f"x_ref must have at least 2 rows, got {n}")
        rng = check_random_state(random_state)
        self._seed = draw_seed(rng, SPLIT_SEED_BOUND)
        self._calls = 0
        h = min(self.n_holdout, n // 2)
        held = draw_holdout(n, h, rng)
        sample = as_float64(src.take(rest_rows(n, held, min(SUBSET, n - h), rng)))
        resolved = _resolve(kernels, rule, sample, rng)
        m_default = default_n_landmarks(min(n - h, MAX_DEFAULT_ROWS))
        m = m_default if n_landmarks is None else check_positive_int(n_landmarks, "n_landmarks")
        if m > n - h:
            raise ValueError(f"n_landmarks={m} exceeds the {n - h} reference rows outside the held-out ones")
        L = np.unique(as_float64(src.take(rest_rows(n, held, m, rng))), axis=0)
        holdout = as_float64(src.take(held))[rng.permutation(h)]  # shuffled: random bins
        bar = progress_bar(len(resolved) * n, progress, "drift reference")
        sums = rest_sums(src, holdout, L, resolved, nt, None if bar is None else bar.update)
        if bar is not None:
            bar.close()
        ref = Reference(holdout, L, sums, n - h, mean_squares(sample, resolved, nt))
        assert src.n_features is not None  # known once the rows are counted
        self._build(resolved, rule, ref, src.n_features, n)

    # ---------------------------------------------------------------- state

    def _build(self, kernels: list[Kernel], rule: str | None, ref: Reference, n_features: int, n_ref: int) -> None:
        """The fitted attributes, and the per-kernel matrices derived from them (not saved:
        recomputed, bit for bit, at load)."""
        self.kernels_ = kernels
        self.rule_ = rule
        self.reference_ = ref
        self.n_features_in_ = n_features
        self.n_reference_ = n_ref
        self.n_landmarks_ = ref.landmarks.shape[0]
        nt = n_threads_arg(self.n_threads)
        m = ref.landmarks.shape[0]
        self._features: list[np.ndarray] = []  # P_k (r, m): phi(x) = P_k k(L, x)
        self._means: list[np.ndarray] = []  # mu_R in features (r,)
        self._row_pool: list[np.ndarray] = []  # K(H[:ROW_POOL], L) (rows, m)
        self._bin_pool: list[np.ndarray] = []  # K(L, .) summed over bins of BIN held-out rows (bins, m)
        H = ref.holdout
        rows, bins = min(ROW_POOL, H.shape[0]), H.shape[0] // BIN
        for j, k in enumerate(kernels):
            P, _ = _core.nystrom_feature_sums(ref.landmarks, np.eye(m), k.to_core(), 0.0, nt)
            self._features.append(np.ascontiguousarray(P))
            self._means.append(P @ (ref.sums[j] / ref.n_rest))
            self._row_pool.append(_core.kernel_matrix(H[:rows], ref.landmarks, k.to_core(), nt))
            E = np.empty((bins, m))
            step = max(1, (1 << 22) // (BIN * m)) * BIN  # rows per block: ~32 MiB of kernel values
            for start in range(0, bins * BIN, step):
                block = _core.kernel_matrix(H[start : min(bins * BIN, start + step)], ref.landmarks, k.to_core(), nt)
                E[start // BIN : start // BIN + block.shape[0] // BIN] = block.reshape(-1, BIN, m).sum(axis=1)
            self._bin_pool.append(E)

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
        }

    @classmethod
    def _from_state(cls, params: dict[str, Any], state: dict[str, Any]) -> DriftDetector:
        """A detector from saved parameters and state (nk.load), without its reference."""
        det = cls.__new__(cls)
        det.kernel = params["kernel"]
        det.aggregation = params["aggregation"]
        det.n_landmarks = params["n_landmarks"]
        det.n_permutations = check_positive_int(params["n_permutations"], "n_permutations")
        det.n_holdout = check_positive_int(params["n_holdout"], "n_holdout")
        det.alpha = _level(params["alpha"])
        det.preprocess = None
        det.n_threads = params["n_threads"]
        det._seed = state["seed"]
        det._calls = state["calls"]
        ref = Reference(state["holdout"], state["landmarks"], state["sums"], state["n_rest"], state["mean_sq"])
        det._build(state["kernels"], state["rule"], ref, state["n_features_in"], state["n_reference"])
        return det

    def get_params(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "aggregation": self.aggregation,
            "n_landmarks": self.n_landmarks,
            "n_permutations": self.n_permutations,
            "n_holdout": self.n_holdout,
            "alpha": self.alpha,
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
            "n_reference": self.n_reference_,
            "n_features": self.n_features_in_,
            "n_landmarks": self.n_landmarks_,
            "n_holdout": int(self.reference_.holdout.shape[0]),
            "n_permutations": self.n_permutations,
            "alpha": self.alpha,
            "batches_tested": self._calls,
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
        the ``distance`` (MMD with a 95% interval) and the ``kernel`` that fired. Each call
        draws its own splits (reproducibly: the i-th call from (seed, i)).
        """
        X = self._batch(x)
        nt = n_threads_arg(self.n_threads)
        b = X.shape[0]
        rng = np.random.default_rng([self._seed, self._calls])
        seed = draw_seed(rng, SPLIT_SEED_BOUND)
        by_rows = b * POOL_RATIO <= self._row_pool[0].shape[0] or b < 2 * BIN or self._bin_pool[0].shape[0] < 2
        size = 1 if by_rows else BIN
        units_x = b if by_rows else b // BIN
        units_h = self._row_pool[0].shape[0] if by_rows else self._bin_pool[0].shape[0]
        # the batch's rows in random bins of BIN (b mod BIN dropped at random)
        keep = np.arange(b) if by_rows else rng.permutation(b)[: units_x * BIN]
        chosen = SplitSpec(units_x, units_h, self.n_permutations, seed).new().next_weights(units_x + units_h) > 0
        chosen_t = np.ascontiguousarray(chosen.T)  # (B + 1, units): split s's batch units
        # each split's batch units by index: gathering them costs O(B b m), whatever |H|
        picks = np.nonzero(chosen_t)[1].reshape(chosen_t.shape[0], units_x) if _gather(units_x, units_h) else None
        V = np.empty((len(self.kernels_), self.n_permutations + 1))
        batch_values = []
        for j, k in enumerate(self.kernels_):
            KX = _core.kernel_matrix(X, self.reference_.landmarks, k.to_core(), nt)  # (b, m)
            batch_values.append(KX)
            if by_rows:
                units = np.vstack([KX, self._row_pool[j]])
            else:
                units = np.vstack([KX[keep].reshape(units_x, BIN, -1).sum(axis=1), self._bin_pool[j]])
            if picks is not None:
                C = _split_sums(units, picks) / (units_x * size)  # (B + 1, m): the chosen rows' mean
            else:  # large batches: one product over every unit
                C = _core.matrix_product(chosen_t.astype(np.float64), units, nt) / (units_x * size)
            D = C @ self._features[j].T - self._means[j]
            V[j] = np.einsum("sr,sr->s", D, D)
        self._calls += 1
        n1, n2 = units_x * size, units_h * size
        U = V - V.mean(axis=1, keepdims=True)  # unbiased up to a split-invariant term: centred
        pvals = marginal_pvalues(U)[:, 0]
        if self.rule_ is None:
            F = V[0]
        else:
            rule = RULES[self.rule_]
            frob = None
            if rule.needs_frobenius:
                N = n1 + n2
                frob = np.sqrt(np.maximum(self.reference_.mean_sq, 0.0) * N * (N - 1))
            F = rule.aggregate(rule.scores(U, frob, n1, n2, 1.0))
        pvalue = permutation_pvalue(F)
        fired = int(np.lexsort((np.arange(len(pvals)), -U[:, 0], pvals))[0])
        # the distance in one fixed kernel's units (comparable from batch to batch): the
        # median-bandwidth Gaussian of the default, the one kernel, else the one that fired
        shown = len(self.kernels_) - 1 if self.rule_ in ("fuse+median", None) else fired
        distance = self._distance(batch_values[shown], shown, float(np.std(V[shown])))
        return DriftResult(
            is_drift=bool(pvalue <= self.alpha),
            pvalue=pvalue,
            threshold=self.alpha,
            statistic=float(F[0]),
            distance=distance,
            kernel=self.kernels_[fired],
            kernel_pvalues=pvals,
            n_batch=b,
        )

    def _batch(self, x: Any) -> np.ndarray:
        if self.preprocess is not None:
            x = self.preprocess(x)
        X = as_data_matrix(x, "x", min_rows=2)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"x has {X.shape[1]} features but the reference has {self.n_features_in_}")
        return as_float64(X)

    def _distance(self, KX: np.ndarray, j: int, permutation_sd: float) -> Effect:
        """The batch's MMD to mu_R for kernel j: ||mean phi - mu||^2 less the batch's own
        variance term (unbiased), interval +- z SE with SE^2 = 4 Var(f) / b + the
        permutation spread^2 (f = <phi, mean phi - mu>, the witness; Gretton et al. 2012)."""
        Phi = KX @ self._features[j].T  # (b, r)
        b = Phi.shape[0]
        mean = Phi.mean(axis=0)
        delta = mean - self._means[j]
        centred = Phi - mean
        spread = float(np.einsum("ir,ir->", centred, centred)) / (b - 1)
        mmd2 = float(delta @ delta) - spread / b
        f = Phi @ delta
        se = math.sqrt(4.0 * float(np.var(f, ddof=1)) / b + permutation_sd**2)
        z = NormalDist().inv_cdf(0.5 + LEVEL / 2)
        point = math.sqrt(max(mmd2, 0.0))
        low, high = math.sqrt(max(mmd2 - z * se, 0.0)), math.sqrt(max(mmd2 + z * se, 0.0))
        return Effect(self.kernels_[j], point, min(low, point), max(high, point), LEVEL)


def _level(alpha: object) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < float(alpha) < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    return float(alpha)


def _kernels_and_rule(kernel: object, aggregation: object) -> tuple[KernelCollection | Kernel, str | None]:
    """The unresolved kernel(s) and the rule (None: one kernel); ValueError by name."""
    if aggregation is not None and aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS} or None, got {aggregation!r}")
    if isinstance(kernel, str) and kernel == "auto":
        if aggregation in (None, DEFAULT_RULE):
            return DEFAULT_COLLECTION, DEFAULT_RULE
        return KernelCollection(), str(aggregation)
    collection = as_collection(kernel)
    if collection is not None:
        return collection, "fuse" if aggregation is None else str(aggregation)
    if not isinstance(kernel, (Kernel, str)):
        raise ValueError(
            f"kernel must be 'auto', a Kernel, a kernel name, a KernelCollection or a list, got {kernel!r}"
        )
    if aggregation is not None:
        raise ValueError(f"aggregation={aggregation!r} combines several kernels; kernel is one ({kernel!r})")
    return get_kernel(kernel), None


def _resolve(
    kernels: KernelCollection | Kernel, rule: str | None, sample: np.ndarray, rng: np.random.Generator
) -> list[Kernel]:
    """Numeric bandwidths from the reference rows ``sample`` (R only)."""
    if isinstance(kernels, Kernel):
        if kernels.is_resolved:
            return [kernels]
        return [kernels.with_bandwidth(median_distance(sample, random_state=rng))]
    return list(kernels.resolve(sample, rng, with_median=rule == "fuse+median"))


def _gather(units_x: int, units_h: int) -> bool:
    """Whether summing each split's gathered batch units (memory-bound, O(B b m)) beats one
    product over all units (O(B (b + |H|) m) at matrix-product speed): when the held-out
    units outnumber the batch's several times, i.e. always at the default pool sizes."""
    return 4 * units_x <= units_x + units_h


def _split_sums(units: np.ndarray, picks: np.ndarray) -> np.ndarray:
    """(B + 1, m): for each split, the sum of the rows of ``units`` it picks (``picks``:
    (B + 1, k) row indices), SPLIT_BLOCK splits at a time."""
    out = np.empty((picks.shape[0], units.shape[1]))
    for s in range(0, picks.shape[0], SPLIT_BLOCK):
        out[s : s + SPLIT_BLOCK] = units[picks[s : s + SPLIT_BLOCK]].sum(axis=1)
    return out


__all__ = ["DriftDetector", "DriftResult"]
