"""The walk of ``n_landmarks="auto"`` along a landmark stream: blocks of landmarks join
the nested projection (:mod:`nystrom_kme.landmark_search._nested_projection`), a screen decides when the
certificate is worth trying, and the certificate (:mod:`nystrom_kme.landmark_search._certificate`) either
computes e(m) ("exact") or bounds it from validation rows. The walk stops at the first m
it certifies, at a plateau (no row can join the landmarks' span), or at the cap
(:mod:`nystrom_kme.landmark_search` documents the rule).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .. import _core
from .._compensated import fsum_dot
from .._solve import solve_weights
from ._certificate import (
    Bound,
    attempt_delta,
    certified_distance,
    mean_upper,
    prequential_bound,
    probe_bound,
    round_off_level,
    u_statistic_lower,
)
from ._nested_projection import PIVOT_TOL, NestedProjection
from ._path_settings import Check, Draws, LandmarkStream, Levels, PathResult, Sample, Sigma, SolverSettings

#: Landmarks per call of the kernel sums: four of the core's tasks of 16 landmarks (two
#: threads busy here; more threads share fewer tasks, a price for the same bits on any).
SUM_CHUNK = 64
#: The later blocks of landmarks: BLOCK_FRACTION m, between BLOCK_MIN and BLOCK_MAX.
BLOCK_FRACTION = 0.05
BLOCK_MIN, BLOCK_MAX = 16, 512
#: Screening probe rows of the samplers whose landmarks are not draws from p.
PROBE_ROWS = 256
#: The screen tries the certificate when its estimate of e^2 is at most SCREEN tol^2 sigma^2
#: (e about 0.84 of the target: the validation rows then decide at a few log(1/delta) / e
#: of them) and m grew by GROWTH since the last try.
SCREEN = 0.7
GROWTH = 1.25
#: "exact": the weights are tried at prefixes that grow by at least this factor (each try
#: solves for them, O(m^3)), from the first prefix whose projection meets the target.
EXACT_GROWTH = 1.05
#: The validation rows' budget: VALIDATION_FACTOR ln(1/delta_1) sqrt(kappa) / (tol sigma)
#: rows, the number at which the test certifies e up to ~0.9 of the target; drawn in
#: batches, doubling from VALIDATION_FIRST. Where n^2 / 2 kernel values cost less than the
#: budget's n of them, ||mu_hat||^2 is computed instead ("exact").
VALIDATION_FACTOR = 8.0
VALIDATION_FIRST = 1024
#: The certificate's confidence is spent as: SIGMA_SHARE on sigma's lower bound, the rest
#: on the tries of the test (attempt_delta).
SIGMA_SHARE = 0.2
#: A plateau is looked for when the last max(PLATEAU_MIN, PLATEAU_FRACTION m) landmarks
#: added no direction to the span; it is confirmed when every row lies in the span to
#: PIVOT_TOL (one pass, O(n r (d + r))), if that costs at most PLATEAU_BUDGET times the
#: sums already computed (n m d).
PLATEAU_MIN = 64
PLATEAU_FRACTION = 0.25
PLATEAU_BUDGET = 4.0
#: Rows of the exact norm's blocks (their kernel sums against every row at once).
EXACT_BLOCK = 4096
#: The round-off allowance of the weights' products (see CertifiedPath._slack).
SLACK_FACTOR = 8.0
EPS = float(np.finfo(np.float64).eps)


@dataclass
class _Validation:
    """The validation rows: their draw (fixed in advance), and how many are in use."""

    indices: np.ndarray
    used: int = 0
    sizes: list[int] = field(default_factory=list)  # the batch ends, for sigma's union bound


@dataclass(frozen=True)
class _ExactNorm:
    """||mu_hat||^2 computed over every pair of rows, and the standard deviation of
    mu_hat(x) over the rows (sigma^2's standard error)."""

    norm2: float
    mu_spread: float


@dataclass
class _Tries:
    """The certificate's tries so far: their number (each spends its share of delta), the
    m of the last, and the m at which a plateau was last looked for."""

    attempt: int = 0
    last_attempt: int = 0
    plateau_checked: int = 0


class CertifiedPath:
    """One walk (see the module documentation); ``run`` returns a :class:`PathResult`."""

    def __init__(
        self,
        *,
        sample: Sample,
        levels: Levels,
        landmarks: LandmarkStream,
        solver: SolverSettings,
        draws: Draws,
    ) -> None:
        self.sample, self.levels, self.landmarks, self.solver, self.draws = sample, levels, landmarks, solver, draws
        self.mode: str | None = None  # "exact" or "validation", decided at the first check
        self.exact: _ExactNorm | None = None  # ||mu_hat||^2 when computed ("exact")
        self.validation: _Validation | None = None  # the validation rows ("validation")
        self.tries = _Tries()
        self.n_screen = 0  # screening probes among the projection's probes

    # ------------------------------------------------------------ the screen

    def _diagonal(self, points: np.ndarray) -> np.ndarray:
        return np.asarray(_core.kernel_diagonal(np.ascontiguousarray(points), self.sample.core, self.solver.n_threads))

    def _weighted_sums(self, A: np.ndarray, B: np.ndarray, w: np.ndarray) -> np.ndarray:
        """sum_j w_j k(a, b_j) at every row a of A, shape (len(A),)."""
        core, n_threads = self.sample.core, self.solver.n_threads
        return np.asarray(_core.kernel_sums(A, B, w.reshape(-1, 1), core, n_threads))[:, 0]

    def _screen_probes(self) -> tuple[np.ndarray, np.ndarray]:
        idx = self.sample.draw_rows(PROBE_ROWS, self.draws.screen)
        return np.ascontiguousarray(self.sample.src.take(idx)), self.sample.sums.means(idx)

    def _screen_sigma2(self, screen: Bound) -> float:
        q = self.sample.q
        return q / (1.0 - q) * (self.sample.krange.mean_diagonal - screen.norm2)

    # ------------------------------------------------------------ sigma

    def _u_lower(self, gap: float) -> float:
        """sigma^2's lower bound from the sample's U-statistic gap / (1 - q) (delta share)."""
        # exact: sigma is the one random quantity; validation rows: it shares with N^2's bound
        delta, q = self.levels.delta, self.sample.q
        spend = delta if self.mode == "exact" else SIGMA_SHARE * delta / 2.0
        return q * u_statistic_lower(gap / (1.0 - q), 1.0 / q, self.sample.krange.gap_high, spend)

    def _sigma(self) -> Sigma:
        if self.levels.pilot is not None:
            return self.levels.pilot
        q, krange = self.sample.q, self.sample.krange
        if self.exact is not None:
            gap = krange.mean_diagonal - self.exact.norm2
            squared = max(q / (1.0 - q) * gap, 0.0)
            se = q / (1.0 - q) * 2.0 * self.exact.mu_spread * math.sqrt(q)
            return Sigma(squared, max(self._u_lower(gap), 0.0), self.sample.n, se)
        val = self.validation
        assert val is not None and val.used >= 2
        means = self.means_validation()
        gap = krange.mean_diagonal - float(np.mean(means))
        sizes = max(len(val.sizes), 1)
        spend = SIGMA_SHARE * self.levels.delta / 2.0 / sizes  # a union over the batch sizes used
        n2_high = mean_upper(means, krange.kappa - krange.value_low, spend)
        lower = self._u_lower(krange.mean_diagonal - n2_high)
        se = q / (1.0 - q) * float(np.std(means, ddof=1)) / math.sqrt(means.size)
        return Sigma(max(q / (1.0 - q) * gap, 0.0), max(lower, 0.0), val.used, se)

    def means_validation(self) -> np.ndarray:
        val = self.validation
        assert val is not None
        return np.asarray(self.sample.sums.means(val.indices[: val.used]))

    # ------------------------------------------------------------ the two checks

    def _decide(self, screen: Bound) -> None:
        """exact or validation, at the first check: whichever costs fewer kernel values."""
        levels, n = self.levels, self.sample.n
        sigma2 = self._screen_sigma2(screen) if levels.pilot is None else levels.pilot.squared
        budget = math.inf
        if sigma2 > 0:
            level = math.log(1.0 / attempt_delta(1, (1.0 - SIGMA_SHARE) * levels.delta))
            budget = VALIDATION_FACTOR * level * math.sqrt(self.sample.krange.kappa / (levels.tol2 * sigma2))
        if levels.check == "exact" or (levels.check == "auto" and n <= 2.0 * budget):
            self.mode = "exact"
            self.exact = self._exact_norm2()
            return
        self.mode = "validation"
        # more rows than 2n cost more than the exact norm (n^2 / 2 values), whatever sigma
        total = max(VALIDATION_FIRST, math.ceil(min(budget, 2.0 * n)))
        self.validation = _Validation(self.sample.draw_rows(total, self.draws.validation))

    def _exact_norm2(self) -> _ExactNorm:
        """||mu_hat||^2 = sum_j p_j mu_hat(x_j): every row's sums, block by block."""
        sample = self.sample
        terms, squares = [], []
        for start, rows in sample.src.chunks():
            for s in range(0, rows.shape[0], EXACT_BLOCK):
                block = np.ascontiguousarray(rows[s : s + EXACT_BLOCK])
                acc, total = sample.src.kernel_sums(
                    block, sample.kernel, weights=sample.sums.weights, n_threads=self.solver.n_threads
                )
                lo = start + s
                p = np.full(block.shape[0], 1.0 / sample.n) if sample.p is None else sample.p[lo : lo + block.shape[0]]
                mu = acc.value() / total
                terms.append(math.fsum((p * mu).tolist()))
                squares.append(math.fsum((p * mu * mu).tolist()))
        norm2 = math.fsum(terms)
        # the spread of mu_hat over the rows: sigma^2's standard error, Hoeffding's first projection
        return _ExactNorm(norm2, math.sqrt(max(math.fsum(squares) - norm2 * norm2, 0.0)))

    def _grow_validation(self, count: int) -> None:
        val = self.validation
        assert val is not None
        new = val.indices[val.used : val.used + count]
        if new.size:
            self.sample.sums.of(new)  # their kernel sums over every row: the expensive part
            val.used += new.size
            val.sizes.append(val.used)

    def _solve(self, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, str, int], float, float]:
        """The core's weights alpha for these landmarks, and what the certificate needs of
        them: (L, s = mu_hat at L, solution, alpha^T s, c = alpha^T (K alpha - s)), with
        c's round-off folded into the caller's slack."""
        L = np.ascontiguousarray(self.sample.src.take(indices))
        s = np.asarray(self.sample.sums.means(indices), dtype=np.float64)
        solution = solve_weights(
            L, s, self.sample.core, self.solver.n_threads, solver=self.solver.solver, rcond=self.solver.rcond
        )
        alpha = np.ascontiguousarray(solution[0][:, 0], dtype=np.float64)
        K_alpha = np.asarray(_core.kernel_sums(L, L, alpha.reshape(-1, 1), self.sample.core, self.solver.n_threads))[
            :, 0
        ]
        return L, alpha, solution, fsum_dot(alpha, s), fsum_dot(alpha, K_alpha - s)

    def _slack(self, alpha: np.ndarray, kappa: float, rank: int) -> float:
        """The round-off of e_alpha^2 = N^2 - alpha^T s + alpha^T (K alpha - s): the level of
        the path's sums plus a random-walk estimate for the weights' products,
        SLACK_FACTOR eps kappa sqrt(m) ||alpha||^2 (issue 31 measured such products against
        extended precision at 100x below this)."""
        norm2 = float(alpha @ alpha)
        return round_off_level(kappa, rank) + SLACK_FACTOR * EPS * kappa * math.sqrt(alpha.size) * norm2

    def _check(self, indices: np.ndarray, proj: NestedProjection, final: bool) -> Check:
        """The certificate of the core's weights on these landmarks (the mode decided):
        for any weights alpha, e_alpha^2 = ||mu_hat - sum_j alpha_j phi(l_j)||^2 =
        N^2 - alpha^T s + c with c = alpha^T (K alpha - s) (exact: O(m^2 d))."""
        m = indices.size
        kappa = max(proj.max_diagonal, self.sample.krange.kappa)
        L, alpha, solution, a_s, c = self._solve(indices)
        level = self._slack(alpha, kappa, proj.rank)
        if self.mode == "exact":
            assert self.exact is not None
            e2 = self.exact.norm2 - a_s + c
            sigma = self._sigma()
            bound = max(e2, 0.0) + level
            zero = bound <= 2.0 * level and self.sample.krange.mean_diagonal - self.exact.norm2 <= level
            certified = zero or bound <= self.levels.tol2 * sigma.lower
            return Check(m, bound, e2, sigma, level, certified, zero, self.sample.n, solution)
        # validation rows: y(v) = mu_hat(v) - sum_j alpha_j k(l_j, v) + c has mean e_alpha^2 and
        # |y - c| <= sqrt(kappa) e_alpha; grow them while the test is short of certifying and could
        self.tries.attempt += 1
        delta = attempt_delta(self.tries.attempt, (1.0 - SIGMA_SHARE) * self.levels.delta)
        val = self.validation
        assert val is not None
        if val.used == 0:
            self._grow_validation(min(VALIDATION_FIRST, val.indices.size))
        while True:
            rows = val.indices[: val.used]
            V = np.ascontiguousarray(self.sample.src.take(rows))
            fitted = np.asarray(_core.kernel_sums(V, L, alpha.reshape(-1, 1), self.sample.core, self.solver.n_threads))[
                :, 0
            ]
            y = self.sample.sums.means(rows) - fitted + c
            sigma = self._sigma()
            target = math.sqrt(self.levels.tol2 * sigma.lower)
            estimate = float(np.mean(y))
            n2_high = mean_upper(self.means_validation(), self.sample.krange.kappa - self.sample.krange.value_low, 1.0)
            zero = (
                float(np.max(np.abs(y), initial=0.0)) <= level
                and self.sample.krange.mean_diagonal - n2_high <= level
                and sigma.lower <= level
            )
            if zero:
                return Check(m, level, estimate, sigma, level, True, True, val.used, solution)
            e_star = (
                certified_distance(y, kappa, level, abs(c) + 2.0 * level, 0.25 * target, delta, val.indices.size)
                if target > 0
                else math.inf
            )
            bound = e_star * e_star
            if bound <= target * target:
                return Check(m, bound, estimate, sigma, level, True, False, val.used, solution)
            promising = estimate < 0.9 * target * target or final
            if val.used >= val.indices.size or not promising:
                return Check(m, bound, estimate, sigma, level, False, False, val.used, solution)
            self._grow_validation(val.used)  # double

    # ------------------------------------------------------------ the plateau

    def _plateau(self, proj: NestedProjection, done: int) -> bool:
        """Whether no row can join the span: the last landmarks added none, and every row
        lies in the span to PIVOT_TOL (checked over all rows if affordable)."""
        quiet = max(PLATEAU_MIN, math.ceil(PLATEAU_FRACTION * done))
        joined = np.flatnonzero(proj.is_pivot)
        last = int(joined[-1]) + 1 if joined.size else 0
        if done - last < quiet or done - self.tries.plateau_checked < quiet:
            return False
        self.tries.plateau_checked = done
        d, r = self.sample.n_features, proj.rank
        if r * (r + d) > PLATEAU_BUDGET * done * d:
            return False
        for _, rows in self.sample.src.chunks():
            block = np.ascontiguousarray(rows, dtype=np.float64)
            resid = proj.residual_diagonal(block)
            if (resid > PIVOT_TOL * self._diagonal(block)).any():
                return False
        return True

    # ------------------------------------------------------------ the walk

    def run(self) -> PathResult:
        n = self.sample.n
        drawn = self.landmarks.draws.get(self.landmarks.first)
        exhausted = drawn.size < self.landmarks.first
        prequential = self.landmarks.draws.available_mass(1) is not None
        probes = None if prequential else self._screen_probes()
        self.n_screen = 0 if probes is None else PROBE_ROWS
        proj = NestedProjection(self.sample.core, self.solver.n_threads, probes)
        u = np.zeros(0)
        path: list[int] = []
        ratios: list[float] = []
        attempts: list[tuple[int, float]] = []
        nested, done, summed = True, 0, 0  # summed: the rows of the stream whose sums are known
        check: Check | None = None
        screen: Bound | None = None
        while True:
            b = self.landmarks.first if done == 0 else min(max(math.ceil(BLOCK_FRACTION * done), BLOCK_MIN), BLOCK_MAX)
            if done + b > drawn.size and drawn.size < self.landmarks.cap and not exhausted:
                want = min(done + b if prequential else max(2 * drawn.size, done + b), self.landmarks.cap)
                new = self.landmarks.draws.get(want)
                exhausted = new.size < want
                if not np.array_equal(new[:done], drawn[:done]):  # not nested: start again on this draw
                    nested, done, summed, u, b = False, 0, 0, np.zeros(0), self.landmarks.first
                    proj = self._restart(proj, probes)
                drawn = new
            b = min(b, drawn.size - done)
            if b <= 0:
                break
            block = drawn[done : done + b]
            if done + b > summed:  # a chunk's worth at once: the core splits it over its threads
                end = min(max(done + b, summed + SUM_CHUNK), self.landmarks.cap)
                if prequential and drawn.size < end:
                    drawn = self.landmarks.draws.get(end)
                self.sample.sums.of(drawn[summed:end])
                summed = min(end, drawn.size)
            points = np.ascontiguousarray(self.sample.src.take(block))
            block_means = self.sample.sums.means(block)
            proj.extend(points, block_means)
            if prequential:
                mass = self.landmarks.draws.available_mass(done + b)
                assert mass is not None
                t_before = np.concatenate([[proj.t[done - 1] if done else 0.0], proj.t[done : done + b - 1]])
                u = np.concatenate([u, mass[done : done + b] * proj.residuals[done:] + t_before])
            done += b
            t_m = float(proj.t[-1])
            screen = (
                prequential_bound(u, t_m, self.levels.z)
                if prequential
                else probe_bound(proj.probe_residuals()[: self.n_screen], t_m, self.levels.z)
            )
            path.append(done)
            sigma2 = self._screen_sigma2(screen)
            ratios.append(_ratio(max(screen.estimate, 0.0), sigma2))
            end_reason = None
            if self.landmarks.draws.exhaustive and done == n:
                end_reason = "every row"
            elif done >= self.landmarks.cap:
                end_reason = "max_landmarks"
            elif exhausted and done >= drawn.size:
                end_reason = "exhausted"
            elif self._plateau(proj, done):
                end_reason = "plateau"
            if self.mode is None:
                self._decide(screen)
            if end_reason == "every row":  # exact: e = 0, but no cheaper than the empirical embedding
                check = self._check(drawn[:done], proj, True)
                return self._result(drawn[:done], proj, check, end_reason, path, ratios, attempts, prequential, nested)
            if self.mode == "exact":
                found = self._exact_prefixes(drawn[:done], proj, attempts)
                if found is not None:
                    return self._result(
                        drawn[: found.m], proj, found, "tolerance", path, ratios, attempts, prequential, nested
                    )
            screened = (
                screen.estimate <= SCREEN * self.levels.tol2 * max(sigma2, 0.0)
                and done >= GROWTH * self.tries.last_attempt
            )
            if end_reason is not None or (self.mode == "validation" and screened):
                self.tries.last_attempt = done
                check = self._check(drawn[:done], proj, end_reason is not None)
                attempts.append((done, _ratio(check.bound, check.sigma.lower)))
                if check.certified:
                    return self._result(
                        drawn[:done], proj, check, "tolerance", path, ratios, attempts, prequential, nested
                    )
                if end_reason is not None:
                    return self._result(
                        drawn[:done], proj, check, end_reason, path, ratios, attempts, prequential, nested
                    )
        # the stream ended without a final check (it drew fewer rows than asked)
        assert screen is not None, "the search drew no landmark"
        if check is None or check.m != done:
            if self.mode is None:
                self._decide(screen)
            check = self._check(drawn[:done], proj, True)
            attempts.append((done, _ratio(check.bound, check.sigma.lower)))
        stop = "tolerance" if check.certified else "exhausted" if exhausted else "max_landmarks"
        return self._result(drawn[: check.m], proj, check, stop, path, ratios, attempts, prequential, nested)

    def _exact_prefixes(
        self, drawn: np.ndarray, proj: NestedProjection, attempts: list[tuple[int, float]]
    ) -> Check | None:
        """Exact mode: e(m) is known for every prefix, so the smallest prefix is certified,
        not only block ends. The nested projection proposes (its e(m')^2 = N^2 - t(m') is
        the projection's, to its round-off); the core's weights decide, tried at prefixes
        at least EXACT_GROWTH apart."""
        assert self.exact is not None
        sigma = self._sigma()
        target2 = self.levels.tol2 * sigma.lower
        proposed = np.flatnonzero(self.exact.norm2 - proj.t <= target2) + 1  # prefixes m' (1-based)
        start = 1 if not self.tries.last_attempt else math.ceil(EXACT_GROWTH * self.tries.last_attempt)
        while True:
            later = proposed[proposed >= start]
            if later.size == 0:
                return None
            m = int(later[0])
            self.tries.last_attempt = m
            check = self._check(drawn[:m], proj, False)
            attempts.append((m, _ratio(check.bound, check.sigma.lower)))
            if check.certified:
                return check
            start = math.ceil(EXACT_GROWTH * m)

    def _restart(self, proj: NestedProjection, probes: tuple[np.ndarray, np.ndarray] | None) -> NestedProjection:
        """A new projection for a draw that did not extend the last one, with the same probes."""
        fresh = NestedProjection(self.sample.core, self.solver.n_threads, probes)
        val = self.validation
        if val is not None and val.used:
            idx = val.indices[: val.used]
            fresh.add_probes(np.ascontiguousarray(self.sample.src.take(idx)), self.sample.sums.means(idx))
        return fresh

    def _result(
        self,
        indices: np.ndarray,
        proj: NestedProjection,
        check: Check,
        stop: str,
        path: list[int],
        ratios: list[float],
        attempts: list[tuple[int, float]],
        prequential: bool,
        nested: bool,
    ) -> PathResult:
        return PathResult(
            indices=np.asarray(indices, dtype=np.int64),
            check=check,
            stop=stop,
            path=path,
            path_ratios=ratios,
            attempts=attempts,
            validation=self.mode or "exact",
            screening="landmarks" if prequential else "probes",
            nested=nested,
        )


def _ratio(bound: float, sigma2: float) -> float:
    if not math.isfinite(bound):
        return math.inf
    return math.sqrt(max(bound, 0.0) / sigma2) if sigma2 > 0 else (0.0 if bound == 0 else math.inf)


__all__ = [
    "BLOCK_FRACTION",
    "BLOCK_MAX",
    "BLOCK_MIN",
    "PROBE_ROWS",
    "SIGMA_SHARE",
    "CertifiedPath",
]
