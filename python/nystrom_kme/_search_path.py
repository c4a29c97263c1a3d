"""The walk of ``n_landmarks="auto"`` along a landmark stream: blocks of landmarks join
the nested projection (:mod:`nystrom_kme._nested_projection`), the certificate
(:mod:`nystrom_kme._certificate`) is evaluated at every m, and the walk stops at the first
m it certifies (:mod:`nystrom_kme.landmark_search` documents the rule).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from . import _core
from ._certificate import Bound, prequential_bound, probe_bound, round_off_level, z_value
from ._compensated import CompensatedSum
from ._nested_projection import NestedProjection
from ._statistical_error import StatisticalError, statistical_error_from_norm

if TYPE_CHECKING:
    from ._validation import Weights
    from .kernels import Kernel
    from .sampling.base import NestedDraws
    from .sources import RowSource

#: Landmarks per call of the kernel sums: four of the core's tasks of 16 landmarks (two
#: threads busy here; more threads share fewer tasks, a price for the same bits on any).
SUM_CHUNK = 64
#: The later blocks of landmarks: BLOCK_FRACTION m, between BLOCK_MIN and BLOCK_MAX.
BLOCK_FRACTION = 0.05
BLOCK_MIN, BLOCK_MAX = 16, 512
#: Probe rows of the samplers whose landmarks are not draws from the data's distribution.
PROBE_ROWS = 256


class RowSums:
    """Kernel sums of rows of the source, each row's computed once."""

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
class Check:
    """The certificate at one m (squared quantities)."""

    m: int
    bound: Bound
    sigma2: float  # the statistical error's estimate, q (E k(x,x) - ||mu_hat_n||^2) / (1 - q)
    gap: float  # E k(x,x) - ||mu_hat_n||^2, estimated
    round_off: float
    verdict: str | None  # "tolerance", "round-off" or None (go on)
    zero: bool  # the error and the gap both zero to round-off: sigma = 0, exact


@dataclass(frozen=True)
class PathResult:
    """Where the walk stopped."""

    indices: np.ndarray
    projection_weights: np.ndarray  # (m,): P_m mu_hat_n = sum_i w_i phi(x_i)
    check: Check
    stop: str
    statistical_error: StatisticalError
    path: list[int]
    path_ratios: list[float]
    validation: str
    nested: bool


class CertifiedPath:
    """One walk (see the module documentation); ``run`` returns a :class:`PathResult`."""

    def __init__(
        self,
        src: RowSource,
        kernel: Kernel,
        stream: NestedDraws,
        sums: RowSums,
        confidence: float,
        ratio_bound: float,
        rng: np.random.Generator,
        p: np.ndarray | None,
        q: float,
        first: int,
        cap: int,
        n_threads: int,
    ) -> None:
        self.src, self.stream, self.sums, self.rng, self.p, self.q = src, stream, sums, rng, p, q
        self.first, self.cap, self.n_threads = first, cap, n_threads
        self.core = kernel.to_core()
        self.z, self.tol2 = z_value(confidence), ratio_bound**2
        # the same chunks for every source and every thread count: the core centres each
        # call's landmarks, so the sums (and the search) are bit for bit those of an array
        # on any number of threads; a streamed source is then read once per chunk
        self.chunk = SUM_CHUNK
        # the rows behind the statistical error: the landmarks so far, or the probes
        self.diag, self.means = np.zeros(0), np.zeros(0)

    def _diagonal(self, points: np.ndarray) -> np.ndarray:
        return np.asarray(_core.kernel_diagonal(np.ascontiguousarray(points), self.core, self.n_threads))

    def _probes(self) -> tuple[np.ndarray, np.ndarray]:
        """Rows drawn from p with replacement, independently of the landmarks."""
        n = self.src.count_rows()
        idx = self.rng.integers(0, n, size=PROBE_ROWS) if self.p is None else self.rng.choice(n, PROBE_ROWS, p=self.p)
        points = np.ascontiguousarray(self.src.take(idx))
        means = self.sums.means(idx)
        self.diag, self.means = self._diagonal(points), means
        return points, means

    def _check(self, m: int, bound: Bound, proj: NestedProjection) -> Check:
        gap = float(self.diag.mean()) - bound.norm2
        sigma2 = self.q / (1.0 - self.q) * gap
        kappa = max(proj.max_diagonal, float(self.diag.max(initial=0.0)))
        level = round_off_level(kappa, proj.rank)
        zero = bound.bound <= level and gap <= level
        if zero:  # sigma = 0 and the embedding exact, both to round-off: certified
            verdict: str | None = "round-off"
        elif bound.bound <= self.tol2 * sigma2:
            verdict = "tolerance"
        elif bound.bound <= level:  # above the target, but more landmarks cannot lower it
            verdict = "round-off"
        else:
            verdict = None
        return Check(m=m, bound=bound, sigma2=sigma2, gap=gap, round_off=level, verdict=verdict, zero=zero)

    def run(self) -> PathResult:
        n = self.src.count_rows()
        drawn = self.stream.get(self.first)
        exhausted = drawn.size < self.first
        prequential = self.stream.available_mass(1) is not None
        probes = None if prequential else self._probes()
        proj = NestedProjection(self.core, self.n_threads, probes)
        u = np.zeros(0)
        path: list[int] = []
        ratios: list[float] = []
        nested, done, summed = True, 0, 0  # summed: the rows of the stream whose sums are known
        check: Check | None = None
        while True:
            b = self.first if done == 0 else min(max(math.ceil(BLOCK_FRACTION * done), BLOCK_MIN), BLOCK_MAX)
            if done + b > drawn.size and drawn.size < self.cap and not exhausted:
                want = min(done + b if prequential else max(2 * drawn.size, done + b), self.cap)
                new = self.stream.get(want)
                exhausted = new.size < want
                if not np.array_equal(new[:done], drawn[:done]):  # not nested: start again on this draw
                    nested, done, summed, u, b = False, 0, 0, np.zeros(0), self.first
                    proj = NestedProjection(self.core, self.n_threads, probes)
                    if prequential:
                        self.diag, self.means = np.zeros(0), np.zeros(0)
                drawn = new
            b = min(b, drawn.size - done)
            if b <= 0:
                break
            block = drawn[done : done + b]
            if done + b > summed:  # a chunk's worth at once: the core splits it over its threads
                end = min(max(done + b, summed + self.chunk), self.cap)
                if prequential and drawn.size < end:
                    drawn = self.stream.get(end)
                self.sums.of(drawn[summed:end])
                summed = min(end, drawn.size)
            points = np.ascontiguousarray(self.src.take(block))
            block_means = self.sums.means(block)
            proj.extend(points, block_means)
            if prequential:
                self.diag = np.concatenate([self.diag, self._diagonal(points)])
                self.means = np.concatenate([self.means, block_means])
                mass = self.stream.available_mass(done + b)
                assert mass is not None
                t_before = np.concatenate([[proj.t[done - 1] if done else 0.0], proj.t[done : done + b - 1]])
                u = np.concatenate([u, mass[done : done + b] * proj.residuals[done:] + t_before])
            done += b
            t_m = float(proj.t[-1])
            bound = (
                prequential_bound(u, t_m, self.z) if prequential else probe_bound(proj.probe_residuals(), t_m, self.z)
            )
            check = self._check(done, bound, proj)
            path.append(done)
            ratios.append(_ratio(bound.bound, check.sigma2))
            if check.verdict is not None:
                return self._result(drawn[:done], proj, check, check.verdict, path, ratios, prequential, nested)
            if self.stream.exhaustive and done == n:
                break
        assert check is not None, "the search drew no landmark"
        stop = "every row" if self.stream.exhaustive and done == n else "exhausted" if exhausted else "max_landmarks"
        return self._result(drawn[:done], proj, check, stop, path, ratios, prequential, nested)

    def _result(
        self,
        indices: np.ndarray,
        proj: NestedProjection,
        check: Check,
        stop: str,
        path: list[int],
        ratios: list[float],
        prequential: bool,
        nested: bool,
    ) -> PathResult:
        stat = statistical_error_from_norm(check.bound.norm2, self.diag, self.means, self.q)
        return PathResult(
            indices=np.asarray(indices, dtype=np.int64),
            projection_weights=proj.weights(indices.size),
            check=check,
            stop=stop,
            statistical_error=stat,
            path=path,
            path_ratios=ratios,
            validation="landmarks" if prequential else "probes",
            nested=nested,
        )


def _ratio(bound: float, sigma2: float) -> float:
    if not math.isfinite(bound):
        return math.inf
    return math.sqrt(bound / sigma2) if sigma2 > 0 else (0.0 if bound == 0 else math.inf)


__all__ = ["BLOCK_FRACTION", "BLOCK_MAX", "BLOCK_MIN", "PROBE_ROWS", "CertifiedPath", "Check", "PathResult", "RowSums"]
