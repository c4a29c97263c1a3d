"""What a permutation test will compute, decided before any pass over the data: the
samples' canonical order, the kernels (bandwidths resolved from the pooled sample,
label-blind), the rule, the landmarks and the units that the permutations move. One
plan serves every path: one kernel is a plan whose rule is ``ONE_KERNEL``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._landmark_plan import DefaultLandmarks, distinct_rows, plan_landmarks
from ..kernel_collection import KernelCollection
from ..kernels import Kernel, resolve_kernel
from ..permutation import SplitSpec
from ..sources import RowSource
from ._arguments import DEFAULT_COLLECTION, Arguments
from ._statistics import Binning, make_binning
from .rules import Rule

#: The default test permutes single rows up to this many pooled rows, and bins of rows
#: beyond 2 N / K of them (K kernels), so that it costs a few single-kernel tests.
DEFAULT_MIN_BINS = 256
#: The tests' landmarks, decided by power (issue 36; docs/user_guide/mmd.rst, "How many
#: landmarks", bench/RESULTS.md): every pooled row (the exact test) up to exact_rows(d)
#: pooled rows, where it costs about 2 s on two cores: at 5000 pooled rows 1024 landmarks
#: lost 0.095 of power against the exact test on a dependence change in d = 20 (200
#: paired repetitions; its narrow kernels), so every row up to 5000 per sample, the
#: issue's range, in up to 20 dimensions; beyond, the paper's m = sqrt(N) log sqrt(N)
#: kept between MIN_LANDMARKS and MAX_LANDMARKS. Not fewer: at 10^5 rows per sample,
#: 1024 landmarks against the paper's 2730 on a local difference (0.2% of the rows in a
#: tight cluster) gave -0.09 +- 0.06 of power in one run of 35 paired repetitions and
#: +0.10 in another of 10, so 1024 could not be shown within 0.02 of the previous default,
#: whose m keeps its power by construction (narrow kernels may need more than 2 sqrt(N)
#: landmarks). Not more: MAX_LANDMARKS is a cost cap (the paper's m is 10^4 landmarks and
#: 10 minutes at 10^6 rows per sample; the permuted product costs B (2N / unit) m).
EXACT_ROWS = 10_000
#: Up to this many features; beyond, fewer rows at the same cost: the exact test's time
#: per pair of pooled rows is about proportional to d + EXACT_D0 (fitted to 2.35 s at
#: (N, d) = (10^4, 20) and 11.9 s at (10^4, 784); at the limits 1.9-2.5 s, measured by
#: bench.power --exact-cost on two cores).
EXACT_FEATURES = 20
EXACT_D0 = 168
MIN_LANDMARKS = 1024
MAX_LANDMARKS = 3000
#: The default test's narrowest kernel of each family takes at least this many landmarks
#: above the exact limit (landmarks_by_kernel).
NARROW_LANDMARKS = 4096
#: The tests' default m (the rule of every Nyström test and detector, this range).
DEFAULT_LANDMARKS = DefaultLandmarks(MIN_LANDMARKS, MAX_LANDMARKS)
#: Rows compared (at fixed positions) to order two samples of equal size.
ORDER_ROWS = 256


@dataclass(frozen=True)
class Plan:
    """A test's plan.

    Attributes
    ----------
    kernels : list of Kernel
        Numeric bandwidths; for a rule with ``adds_median`` the median Gaussian is last.
    collection : KernelCollection or None
        The resolved collection (None: one kernel).
    rule : Rule
    method : str
    landmarks : ndarray (m, d) or None
        None for the exact method.
    binning : Binning or None
        The bins the permutations move (None: single rows, streamed).
    spec : SplitSpec
        The random splits of the units.
    kernel_landmarks : tuple of int or None
        Each kernel's landmarks: the first ``kernel_landmarks[j]`` rows of ``landmarks``
        (their distinct rows; the default test above the exact limit,
        :func:`landmarks_by_kernel`); None: every kernel takes all of ``landmarks``.
    """

    kernels: list[Kernel]
    collection: KernelCollection | None
    rule: Rule
    method: str
    landmarks: np.ndarray | None
    binning: Binning | None
    spec: SplitSpec
    kernel_landmarks: tuple[int, ...] | None = None

    def landmarks_of(self, j: int) -> np.ndarray | None:
        """Kernel j's landmarks (None for the exact method)."""
        if self.landmarks is None or self.kernel_landmarks is None:
            return self.landmarks
        return distinct_rows(np.ascontiguousarray(self.landmarks[: self.kernel_landmarks[j]]))


def swapped(sx: RowSource, sy: RowSource) -> bool:
    """Whether the samples' canonical order puts Y first: the larger first; for equal
    sizes, the sample with the smaller value at the first (row, column) where they differ,
    rows taken at fixed positions (first, last, middle, then ORDER_ROWS spread by a fixed
    generator), all rows only when those coincide. Comparisons only, so that a change of
    units (any positive scale) keeps the order; identical samples give the same test
    either way."""
    n1, n2 = sx.count_rows(), sy.count_rows()
    if n1 != n2:
        return n2 > n1
    n = n1
    fixed = np.random.default_rng(0x5EED).integers(0, n, size=ORDER_ROWS)
    positions = np.concatenate([[0, n - 1, n // 2], fixed]).astype(np.int64)
    order = _first_difference(np.asarray(sx.take(positions)), np.asarray(sy.take(positions)))
    if order is None and sx.random_access and sy.random_access:
        for start in range(0, n, 1 << 16):
            rows = np.arange(start, min(n, start + (1 << 16)), dtype=np.int64)
            order = _first_difference(np.asarray(sx.take(rows)), np.asarray(sy.take(rows)))
            if order is not None:
                break
    return bool(order)


def _first_difference(A: np.ndarray, B: np.ndarray) -> bool | None:
    """Whether B is smaller than A at their first differing entry (row-major), None if equal."""
    differ = np.flatnonzero((A != B).ravel())
    if differ.size == 0:
        return None
    i = differ[0]
    return bool(B.ravel()[i] < A.ravel()[i])


def make_plan(args: Arguments, sx: RowSource, sy: RowSource, Z: RowSource, seed: int, rng: np.random.Generator) -> Plan:
    """The plan of a test of ``sx`` against ``sy`` (in canonical order, pooled as ``Z``);
    ``rng`` draws, in this order, the bandwidths' subset, the bins and the landmarks."""
    n1, n2 = sx.count_rows(), sy.count_rows()
    N = n1 + n2
    collection: KernelCollection | None = None
    if args.kernel is not None:
        kernels = [resolve_kernel(args.kernel, [sx, sy], rng)]
    else:
        assert args.collection is not None
        collection = args.collection.resolve(Z, rng, with_median=args.rule.adds_median)
        kernels = list(collection)
    method = resolved_method(args, N, Z.n_features)
    binning: Binning | None = None
    if method == "nystrom" and collection is not None:
        max_bins = args.max_bins
        if args.default and max_bins is not None:
            # the default test's work budget: K kernels on G bins cost about K G / N single-kernel
            # tests in their permutations (bench/RESULTS.md, issue 27)
            max_bins = min(max_bins, max(DEFAULT_MIN_BINS, 2 * N // len(kernels)))
        binning = make_binning(n1, n2, max_bins, rng)
    landmarks = None
    counts = None
    wanted = args.auto if args.auto is not None else args.n_landmarks
    if method != "exact" and args.collection is DEFAULT_COLLECTION and wanted is None and args.sampler is None:
        # the default test: each kernel the landmarks its bandwidth needs, nested uniform draws
        counts = landmarks_by_kernel(kernels, N)
        landmarks = np.ascontiguousarray(Z.take(rng.choice(N, size=max(counts), replace=False)))
    elif method != "exact":  # label-blind: the search for the narrowest kernel, or m rows drawn
        landmarks = plan_landmarks(
            Z, kernels, wanted, args.sampler, rng, args.n_threads, default=DEFAULT_LANDMARKS, rows="the {n} pooled rows"
        )
    units = (n1, n2) if binning is None else (binning.n1, binning.n2)
    spec = SplitSpec(units[0], units[1], args.n_permutations, seed)
    return Plan(kernels, collection, args.rule, method, landmarks, binning, spec, counts)


def landmarks_by_kernel(kernels: list[Kernel], n_rows: int) -> tuple[int, ...]:
    """The default test's landmarks per kernel for N pooled rows above the exact limit:
    ``DEFAULT_LANDMARKS(N)`` for each kernel, and at least NARROW_LANDMARKS (at most N)
    for the narrowest kernel of each family (its grid's lower end), whose effective
    dimension is the largest (issue 42: bench/RESULTS.md, docs/user_guide/mmd.rst).

    >>> import nystrom_kme as nk
    >>> landmarks_by_kernel([nk.Gaussian(0.5), nk.Gaussian(2.0), nk.LaplacianL1(0.7)], 12_000)
    (4096, 1024, 4096)
    """
    m = DEFAULT_LANDMARKS(n_rows)
    narrowest: dict[str, float] = {}
    for k in kernels:
        narrowest[k.family] = min(narrowest.get(k.family, math.inf), float(k.bandwidth))
    wide = min(n_rows, max(m, NARROW_LANDMARKS))
    return tuple(wide if float(k.bandwidth) == narrowest[k.family] else m for k in kernels)


def default_landmarks(n_rows: int) -> int:
    """The tests' m for N pooled rows (``DEFAULT_LANDMARKS``; see EXACT_ROWS for where every
    row is taken).

    >>> default_landmarks(2 * 10**6), default_landmarks(2 * 10**5), default_landmarks(40_000), default_landmarks(500)
    (3000, 2730, 1060, 500)
    """
    return DEFAULT_LANDMARKS(n_rows)


def exact_rows(n_features: int | None) -> int:
    """The most pooled rows ``method="auto"`` tests exactly: EXACT_ROWS up to EXACT_FEATURES
    features, fewer beyond at the same cost (unknown width: EXACT_ROWS).

    >>> exact_rows(2), exact_rows(20), exact_rows(100), exact_rows(784)
    (10000, 10000, 8375, 4443)
    """
    d = EXACT_FEATURES if n_features is None else max(EXACT_FEATURES, n_features)
    return int(EXACT_ROWS * math.sqrt((EXACT_FEATURES + EXACT_D0) / (d + EXACT_D0)))


def resolved_method(args: Arguments, n_rows: int, n_features: int | None) -> str:
    """ "exact" or "nystrom" for ``method="auto"``: every pooled row (exact) up to
    ``exact_rows(n_features)``, unless landmarks were asked for (``n_landmarks``, ``sampler``)."""
    if args.method != "auto":
        return args.method
    chosen = args.n_landmarks is not None or args.auto is not None or args.sampler is not None
    return "exact" if n_rows <= exact_rows(n_features) and not chosen else "nystrom"


__all__ = [
    "DEFAULT_LANDMARKS",
    "DEFAULT_MIN_BINS",
    "EXACT_ROWS",
    "exact_rows",
    "MAX_LANDMARKS",
    "MIN_LANDMARKS",
    "ORDER_ROWS",
    "Plan",
    "default_landmarks",
    "landmarks_by_kernel",
    "make_plan",
    "resolved_method",
    "swapped",
]
