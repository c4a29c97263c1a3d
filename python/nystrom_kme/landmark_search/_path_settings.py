"""What the walk of ``n_landmarks="auto"`` (:mod:`._certified_path`) is given, grouped by
what belongs together, each group a small frozen object: the sample (rows, weights,
kernel and its range, the rows' kernel sums), the target and its confidence, the
landmark stream and its limits, the solver, and the random draws; the records it keeps
as it goes (the validation rows, the exact norm, its tries and its trace); and what it
hands back (sigma, a check, where it stopped).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .. import _core
from .._compensated import CompensatedSum
from ._certificate import z_value

if TYPE_CHECKING:
    from .._validation import Weights
    from ..kernels import Kernel
    from ..sampling.base import NestedDraws
    from ..sources import RowSource
    from ._kernel_range import KernelRange


class RowSums:
    """Kernel sums of rows of the source against every row, each row's computed once."""

    def __init__(self, src: RowSource, kernel: Kernel, weights: Weights | None, n_threads: int) -> None:
        self.src, self.kernel, self.weights, self.n_threads = src, kernel, weights, n_threads
        self.sum: dict[int, float] = {}
        self.comp: dict[int, float] = {}
        self.total = math.nan

    def of(self, idx: np.ndarray) -> CompensatedSum:
        """sum_i w_i k(x, x_i) at the rows idx (compensated)."""
        rows = idx.tolist()
        new = sorted({i for i in rows if i not in self.sum})
        if new:
            points = np.ascontiguousarray(self.src.take(np.asarray(new, dtype=np.int64)))
            acc, self.total = self.src.kernel_sums(points, self.kernel, weights=self.weights, n_threads=self.n_threads)
            for i, a, c in zip(new, acc.sum.tolist(), acc.comp.tolist()):
                self.sum[i], self.comp[i] = a, c
        if not (math.isfinite(self.total) and self.total > 0):
            raise ValueError("sample_weight: the total weight must be positive and finite")
        out = CompensatedSum((idx.size,))
        out.sum = np.array([self.sum[i] for i in rows])
        out.comp = np.array([self.comp[i] for i in rows])
        return out

    def means(self, idx: np.ndarray) -> np.ndarray:
        """mu_hat_n at the rows idx: sum_i p_i k(x, x_i)."""
        return np.asarray(self.of(idx).value() / self.total)


@dataclass(frozen=True)
class Sample:
    """The data and the kernel: the rows, their distribution p (None: uniform) with
    q = sum_i p_i^2, the kernel's range on them and the rows' kernel sums."""

    src: RowSource
    kernel: Kernel
    sums: RowSums
    p: np.ndarray | None
    q: float
    krange: KernelRange

    @property
    def n(self) -> int:
        return self.src.count_rows()

    @property
    def n_features(self) -> int:
        return max(self.src.n_features or 1, 1)

    @property
    def core(self) -> _core.Kernel:
        return self.kernel.to_core()

    def draw_rows(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """``count`` rows drawn from p with replacement."""
        return rng.integers(0, self.n, size=count) if self.p is None else rng.choice(self.n, count, p=self.p)


@dataclass(frozen=True)
class Sigma:
    """The statistical error's estimate sigma_hat^2 and lower confidence bound (squared)."""

    squared: float
    lower: float
    n_used: int
    std_error: float


@dataclass(frozen=True)
class Levels:
    """The target and its confidence: e <= ``ratio_bound`` sigma at ``confidence``; how
    ||mu_hat_n||^2 is obtained (``check``: "auto", "exact" or "validation"); sigma from a
    subsample (``pilot``, ``stat_samples``) or None (from the path's own sums)."""

    ratio_bound: float
    confidence: float
    check: str
    pilot: Sigma | None = None

    @property
    def delta(self) -> float:
        return 1.0 - self.confidence

    @property
    def tol2(self) -> float:
        return self.ratio_bound**2

    @property
    def z(self) -> float:
        return z_value(self.confidence)


@dataclass(frozen=True)
class LandmarkStream:
    """Where the landmarks come from: the policy's nested draws, the size of the first
    block and the largest m."""

    draws: NestedDraws
    first: int
    cap: int


@dataclass(frozen=True)
class SolverSettings:
    """How the weights are solved (the core's ``solver`` and ``rcond``) and the threads
    of every core call."""

    solver: str
    rcond: float
    n_threads: int


@dataclass(frozen=True)
class Draws:
    """The walk's random generators: ``screen`` for the probes of samplers whose
    landmarks are not draws from p, ``validation`` for the validation rows (seeded before
    any landmark is drawn: independent of them)."""

    screen: np.random.Generator
    validation: np.random.Generator


@dataclass(frozen=True)
class Check:
    """The certificate at one m (squared quantities)."""

    m: int
    bound: float  # upper confidence bound on e_beta(m)^2 (inf: none)
    estimate: float  # point estimate of e(m)^2
    sigma: Sigma
    round_off: float
    certified: bool
    zero: bool  # the error and the gap both zero to round-off: sigma = 0, exact
    n_values: int  # rows behind the bound (n for "exact")
    solution: tuple[np.ndarray, str, int]  # the core's (alpha (m, 1), solver used, rank), certified as is


@dataclass(frozen=True)
class PathResult:
    """Where the walk stopped."""

    indices: np.ndarray
    check: Check
    stop: str
    path: list[int]
    path_ratios: list[float]
    attempts: list[tuple[int, float]]
    validation: str
    screening: str
    nested: bool


#: (L, alpha, the core's solution, alpha^T s, c): a solve and what the certificate needs of it.
Solved = tuple[np.ndarray, np.ndarray, tuple[np.ndarray, str, int], float, float]


@dataclass
class ValidationRows:
    """The validation rows: their draw (fixed in advance), and how many are in use (the
    first VALIDATION_FIRST, then doubling)."""

    indices: np.ndarray
    floor: float  # the rows below which no test can certify (at the screen's sigma)
    first: int = 0  # the first batch, set before any row is read
    used: int = 0

    def size_first(self, fraction: float, margin: float, least: int) -> None:
        """The first batch: ``margin`` floors over 1 - ``fraction`` (the screen's estimate of
        e^2 over the target's; the test needs about 1 / (1 - fraction) floors), at least
        ``least`` rows."""
        want = math.ceil(min(margin * self.floor / (1.0 - fraction), self.indices.size))
        self.first = min(max(least, want), self.indices.size)

    @property
    def looks(self) -> int:
        """The validation set sizes sigma's bound can be computed at, fixed in advance (the
        first batch, then doublings up to the whole draw): its union bound's count."""
        return 1 + max(math.ceil(math.log2(self.indices.size / self.first)), 0)


@dataclass(frozen=True)
class ExactNorm:
    """||mu_hat||^2 computed over every pair of rows, and the standard deviation of
    mu_hat(x) over the rows (sigma^2's standard error)."""

    norm2: float
    mu_spread: float


@dataclass
class Trace:
    """What the walk reports: m at each block's end, the screen's e / sigma there, every
    try (m, bound on e / sigma), and whether every draw extended the last."""

    path: list[int] = field(default_factory=list)
    ratios: list[float] = field(default_factory=list)
    attempts: list[tuple[int, float]] = field(default_factory=list)
    nested: bool = True


@dataclass
class Tries:
    """The certificate's tries so far: their number (each spends its share of delta), the
    m of the last, and the m at which a plateau was last looked for."""

    attempt: int = 0
    last_attempt: int = 0
    plateau_checked: int = 0
    hopeless: bool = False  # sigma's bound is 0 on every validation row: no try can certify
    screened: int = 0  # the m of the screen's last solve
    failed: int = 0  # the largest m whose try failed (exact mode's bisection)
    screen_fraction: float = 1.0  # the screen's last estimate of e^2 over the target's


__all__ = [
    "Check",
    "Draws",
    "ExactNorm",
    "LandmarkStream",
    "Levels",
    "PathResult",
    "RowSums",
    "Sample",
    "Sigma",
    "Solved",
    "SolverSettings",
    "Trace",
    "Tries",
    "ValidationRows",
]
