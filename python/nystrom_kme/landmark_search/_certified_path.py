"""The walk of ``n_landmarks="auto"`` along a landmark stream: blocks of landmarks join
the nested projection (:mod:`nystrom_kme.landmark_search._nested_projection`), a screen decides when the
certificate is worth trying, and the certificate (:mod:`nystrom_kme.landmark_search._certificate`) either
computes e(m) ("exact") or bounds it from validation rows. The walk stops at the first m
it certifies, at a plateau (no row can join the landmarks' span), or at the cap
(:mod:`nystrom_kme.landmark_search` documents the rule).
"""

from __future__ import annotations

import math

import numpy as np

from .. import _core
from .._compensated import fsum_dot
from .._solve import solve_weights
from ._certificate import (
    MAX_BET,
    WINDOW_MIN,
    Bound,
    attempt_delta,
    certified_distance,
    mean_upper,
    prequential_bound,
    probe_bound,
    round_off_level,
    u_statistic_lower,
    value_range,
)
from ._nested_projection import PIVOT_TOL, NestedProjection
from ._path_settings import (
    Check,
    Draws,
    ExactNorm,
    LandmarkStream,
    Levels,
    PathResult,
    Sample,
    Sigma,
    Solved,
    SolverSettings,
    Trace,
    Tries,
    ValidationRows,
)

#: Landmarks per call of the kernel sums: four of the core's tasks of 16 landmarks (two
#: threads busy here; more threads share fewer tasks, a price for the same bits on any).
SUM_CHUNK = 64
#: The later blocks of landmarks: BLOCK_FRACTION m, between BLOCK_MIN and BLOCK_MAX.
BLOCK_FRACTION = 0.05
BLOCK_MIN, BLOCK_MAX = 16, 512
#: Screening probe rows of the samplers whose landmarks are not draws from p.
PROBE_ROWS = 256
#: With validation rows, the screen reads this many probe rows (drawn apart from the test's
#: rows, so it cannot bias the test): an unbiased estimate of e(m)^2 at every block, where
#: the landmarks' own residuals (a short window, skewed to the right) often read e^2 below
#: a tenth of its value (issue 43: diamonds-like rows, tries at m = 144 to 525 that could
#: not certify, each spending its share of delta). They cost VALIDATION_PROBES kernel sums.
VALIDATION_PROBES = 1024
#: The screen tries the certificate when its estimate of e^2 is at most SCREEN tol^2 sigma^2
#: (e about 0.84 of the target: the validation rows then decide at a few log(1/delta) / e
#: of them) and m grew by GROWTH since the last try.
SCREEN = 0.7
GROWTH = 1.25
#: With validation rows the screen solves for the weights (O(m^3)) once the projection's
#: estimate is within SOLVER_SCREEN of the target, at m at least SCREEN_GROWTH apart: the
#: projection's e^2 can be 5 times the weights' (issue 43, diamonds-like rows, PIVOT_TOL).
SOLVER_SCREEN = 8.0
SCREEN_GROWTH = 1.1
#: Exact mode's bisection for the smallest certified prefix stops within this fraction of m.
BISECT_TOL = 0.01
#: "exact": the weights are tried at prefixes that grow by at least this factor (each try
#: solves for them, O(m^3)), from the first prefix whose projection meets the target.
EXACT_GROWTH = 1.05
#: The validation rows, in units of the test's floor: k residuals that all read 0 reject e
#: down to about r ln(1/delta_1) / (MAX_BET k), r the values' range factor (sqrt(kappa), or
#: (2 gap_high)^(1/2) when narrower: _certificate.value_range), so the target tol sigma
#: needs at least one floor, r ln(1/delta_1) / (MAX_BET tol sigma) rows, and about 1 / (1 -
#: e^2 / (tol sigma)^2) floors at e. The first batch is FLOOR_MARGIN / (1 - f) floors, f
#: the screen's estimate of e^2 over the target's at the first try (the probes': no
#: validation row is read to size it; at most MAX_SCREEN_FRACTION), at least
#: VALIDATION_FIRST rows; later ones double, up to VALIDATION_FACTOR floors or 2n rows.
FLOOR_MARGIN = 1.2
MAX_SCREEN_FRACTION = 0.8
VALIDATION_FACTOR = 8.0
VALIDATION_FIRST = 256
#: "auto" computes ||mu_hat||^2 (n kernel sums over the n rows) unless the validation rows'
#: most, VALIDATION_FACTOR floors, cost less, with a premium of EXACT_PREMIUM times the m of
#: the first try: validation certifies at a larger m, its bound being looser.
EXACT_PREMIUM = 0.5
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
        self.exact: ExactNorm | None = None  # ||mu_hat||^2 when computed ("exact")
        self.validation: ValidationRows | None = None  # the validation rows ("validation")
        self.tries = Tries()
        self.trace = Trace()
        self.probes: list[tuple[np.ndarray, np.ndarray]] = []  # the projection's probe rows, in order
        self.screen_rows: slice | None = None  # the probes the screen reads (None: the landmarks)
        self._solved: tuple[int, Solved] | None = None  # the last solve, by m

    # ------------------------------------------------------------ the screen

    def _diagonal(self, points: np.ndarray) -> np.ndarray:
        return np.asarray(_core.kernel_diagonal(np.ascontiguousarray(points), self.sample.core, self.solver.n_threads))

    def _weighted_sums(self, A: np.ndarray, B: np.ndarray, w: np.ndarray) -> np.ndarray:
        """sum_j w_j k(a, b_j) at every row a of A, shape (len(A),)."""
        core, n_threads = self.sample.core, self.solver.n_threads
        return np.asarray(_core.kernel_sums(A, B, w.reshape(-1, 1), core, n_threads))[:, 0]

    def _add_probes(self, proj: NestedProjection, count: int) -> None:
        """``count`` rows drawn from p (the screen's generator) as the projection's probes,
        and the screen reads them from now on."""
        idx = self.sample.draw_rows(count, self.draws.screen)
        rows = (np.ascontiguousarray(self.sample.src.take(idx)), self.sample.sums.means(idx))
        start = proj.n_probes
        proj.add_probes(*rows)
        self.probes.append(rows)
        self.screen_rows = slice(start, start + count)

    def _screen(self, proj: NestedProjection, u: np.ndarray) -> Bound:
        """The screen at the projection's m: the probes' residuals, else the landmarks' (u)."""
        t_m = float(proj.t[-1])
        if self.screen_rows is None:
            return prequential_bound(u, t_m, self.levels.z)
        return probe_bound(proj.probe_residuals()[self.screen_rows], t_m, self.levels.z)

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
        spend = SIGMA_SHARE * self.levels.delta / 2.0 / val.looks  # a union over the possible sizes
        n2_high = mean_upper(means, krange.kappa - krange.value_low, spend)
        lower = self._u_lower(krange.mean_diagonal - n2_high)
        se = q / (1.0 - q) * float(np.std(means, ddof=1)) / math.sqrt(means.size)
        return Sigma(max(q / (1.0 - q) * gap, 0.0), max(lower, 0.0), val.used, se)

    def means_validation(self) -> np.ndarray:
        val = self.validation
        assert val is not None
        return np.asarray(self.sample.sums.means(val.indices[: val.used]))

    # ------------------------------------------------------------ the two checks

    def _floor_rows(self, screen: Bound) -> float:
        """The validation rows below which the test cannot certify the screen's target
        (see FLOOR_MARGIN); inf when the screen sees no statistical error."""
        levels, krange = self.levels, self.sample.krange
        sigma2 = self._screen_sigma2(screen) if levels.pilot is None else levels.pilot.squared
        if not sigma2 > 0:
            return math.inf
        level = math.log(1.0 / attempt_delta(1, (1.0 - SIGMA_SHARE) * levels.delta))
        r = math.sqrt(max(min(krange.kappa, 2.0 * krange.gap_high), 0.0))
        return r * level / (MAX_BET * math.sqrt(levels.tol2 * sigma2))

    def _decide(self, screen: Bound, done: int, proj: NestedProjection) -> None:
        """exact or validation, at the first try (``done`` landmarks summed): exact unless
        the most validation rows cost fewer kernel sums over the n rows (EXACT_PREMIUM)."""
        n = self.sample.n
        floor = self._floor_rows(screen)
        if self.levels.check == "exact" or (
            self.levels.check == "auto" and n <= VALIDATION_FACTOR * floor + EXACT_PREMIUM * done
        ):
            self.mode = "exact"
            self.exact = self._exact_norm2()
            return
        self.mode = "validation"
        if self.screen_rows is None:
            self._add_probes(proj, VALIDATION_PROBES)
        total = max(VALIDATION_FIRST, math.ceil(min(VALIDATION_FACTOR * floor, 2.0 * n)))
        self.validation = ValidationRows(self.sample.draw_rows(total, self.draws.validation), floor)

    def _exact_norm2(self) -> ExactNorm:
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
        return ExactNorm(norm2, math.sqrt(max(math.fsum(squares) - norm2 * norm2, 0.0)))

    def _grow_validation(self, count: int) -> None:
        val = self.validation
        assert val is not None
        new = val.indices[val.used : val.used + count]
        if new.size:
            self.sample.sums.of(new)  # their kernel sums over every row: the expensive part
            val.used += new.size

    def _solve(self, indices: np.ndarray) -> Solved:
        """The core's weights alpha for these landmarks, and what the certificate needs of
        them: (L, s = mu_hat at L, solution, alpha^T s, c = alpha^T (K alpha - s)), with
        c's round-off folded into the caller's slack. The last one is kept (the screen's
        solve is the try's)."""
        if self._solved is not None and self._solved[0] == indices.size:
            return self._solved[1]
        L = np.ascontiguousarray(self.sample.src.take(indices))
        s = np.asarray(self.sample.sums.means(indices), dtype=np.float64)
        solution = solve_weights(
            L, s, self.sample.core, self.solver.n_threads, solver=self.solver.solver, rcond=self.solver.rcond
        )
        alpha = np.ascontiguousarray(solution[0][:, 0], dtype=np.float64)
        K_alpha = self._weighted_sums(L, L, alpha)
        out = (L, alpha, solution, fsum_dot(alpha, s), fsum_dot(alpha, K_alpha - s))
        self._solved = (indices.size, out)
        return out

    def _solver_screen(self, indices: np.ndarray, proj: NestedProjection) -> float:
        """The screen's estimate of e_alpha^2 for the solver's weights on these landmarks:
        the mean of y at the screen's probes (O(m^3) for the solve, O(q m d) for y)."""
        L, alpha, _, _, c = self._solve(indices)
        assert self.screen_rows is not None
        points, means = proj.probe_points()[self.screen_rows], proj.probe_means()[self.screen_rows]
        return float(np.mean(means - self._weighted_sums(points, L, alpha) + c))

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
        # validation rows: y(v) = mu_hat(v) - sum_j alpha_j k(l_j, v) + c has mean e_alpha^2 and a
        # range proportional to e_alpha (the module documentation); grow them while the test is
        # short of certifying and could
        self.tries.attempt += 1
        delta = attempt_delta(self.tries.attempt, (1.0 - SIGMA_SHARE) * self.levels.delta)
        val = self.validation
        assert val is not None
        if val.used == 0:
            fraction = min(max(self.tries.screen_fraction, 0.0), MAX_SCREEN_FRACTION)
            val.size_first(fraction, FLOOR_MARGIN, VALIDATION_FIRST)
            self._grow_validation(val.first)
        krange = self.sample.krange
        # y at the first landmark (a row): the centre of the narrower range, |y - y(l_1)| <= rho e_alpha
        centre = float(self.sample.sums.means(indices[:1])[0] - self._weighted_sums(L[:1], L, alpha)[0] + c)
        while True:
            rows = val.indices[: val.used]
            V = np.ascontiguousarray(self.sample.src.take(rows))
            y = self.sample.sums.means(rows) - self._weighted_sums(V, L, alpha) + c
            sigma = self._sigma()
            target = math.sqrt(self.levels.tol2 * sigma.lower)
            estimate = float(np.mean(y))
            if krange.gap_high <= level:  # every row's phi(x) within round-off of every other's
                # N^2 <= mean k(x, x): a bound for any data, tight here (sigma = 0 to round-off)
                bound = max(krange.mean_diagonal - a_s + c, 0.0) + level
                if bound <= 2.0 * level:
                    return Check(m, bound, estimate, sigma, level, True, True, val.used, solution)
            scale2, spread = value_range(kappa, krange.gap_high, c, centre, level, target)
            e_star = (
                certified_distance(y, scale2, level, spread, 0.25 * target, delta, val.indices.size)
                if target > 0
                else math.inf
            )
            bound = e_star * e_star
            if bound <= target * target:
                return Check(m, bound, estimate, sigma, level, True, False, val.used, solution)
            promising = estimate < 0.9 * target * target or final
            if val.used >= val.indices.size and target <= 0:
                self.tries.hopeless = True
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
        proj = NestedProjection(self.sample.core, self.solver.n_threads)
        if not prequential:
            self._add_probes(proj, PROBE_ROWS)
        u = np.zeros(0)
        path, ratios, attempts = self.trace.path, self.trace.ratios, self.trace.attempts
        done, summed = 0, 0  # summed: the rows of the stream whose sums are known
        check: Check | None = None
        screen: Bound | None = None
        while True:
            b = self.landmarks.first if done == 0 else min(max(math.ceil(BLOCK_FRACTION * done), BLOCK_MIN), BLOCK_MAX)
            if done + b > drawn.size and drawn.size < self.landmarks.cap and not exhausted:
                want = min(done + b if prequential else max(2 * drawn.size, done + b), self.landmarks.cap)
                new = self.landmarks.draws.get(want)
                exhausted = new.size < want
                if not np.array_equal(new[:done], drawn[:done]):  # not nested: start again on this draw
                    self.trace.nested, done, summed, u, b = False, 0, 0, np.zeros(0), self.landmarks.first
                    proj = self._restart()
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
            screen = self._screen(proj, u)
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
            target2 = self.levels.tol2 * max(sigma2, 0.0)
            screened = (
                screen.n_values >= WINDOW_MIN
                and screen.estimate <= SCREEN * target2
                and done >= GROWTH * self.tries.last_attempt
            )
            if self.mode is None and (screened or end_reason is not None):
                self._decide(screen, done, proj)
                if self.mode == "validation":  # the validation probes' screen from now on
                    screen = self._screen(proj, u)
            if self.mode == "validation":
                # the projection proposes (its span leaves out directions under PIVOT_TOL that
                # the solver's weights use); the solver's weights at the probes decide
                sigma2 = self._screen_sigma2(screen)
                target2 = self.levels.tol2 * max(sigma2, 0.0)
                screened = False
                near = screen.estimate <= SOLVER_SCREEN * target2 and done >= SCREEN_GROWTH * self.tries.screened
                if near and done >= GROWTH * self.tries.last_attempt and not self.tries.hopeless:
                    self.tries.screened = done
                    estimate = self._solver_screen(drawn[:done], proj)
                    self.tries.screen_fraction = _fraction(estimate, target2)
                    screened = self.tries.screen_fraction <= SCREEN
            if end_reason == "every row":  # exact: e = 0, but no cheaper than the empirical embedding
                check = self._check(drawn[:done], proj, True)
                return self._result(drawn[:done], check, end_reason)
            if self.mode == "exact":
                found = self._exact_prefixes(drawn[:done], proj, attempts, done - b)
                if found is not None:
                    return self._result(drawn[: found.m], found, "tolerance")
            validating = screened and self.mode == "validation"
            if end_reason is not None or validating:
                self.tries.last_attempt = done
                check = self._check(drawn[:done], proj, end_reason is not None)
                attempts.append((done, _ratio(check.bound, check.sigma.lower)))
                if check.certified:
                    return self._result(drawn[:done], check, "tolerance")
                if end_reason is not None:
                    return self._result(drawn[:done], check, end_reason)
        # the stream ended without a final check (it drew fewer rows than asked)
        assert screen is not None, "the search drew no landmark"
        if check is None or check.m != done:
            if self.mode is None:
                self._decide(screen, done, proj)
            check = self._check(drawn[:done], proj, True)
            attempts.append((done, _ratio(check.bound, check.sigma.lower)))
        stop = "tolerance" if check.certified else "exhausted" if exhausted else "max_landmarks"
        return self._result(drawn[: check.m], check, stop)

    def _exact_prefixes(
        self, drawn: np.ndarray, proj: NestedProjection, attempts: list[tuple[int, float]], before: int
    ) -> Check | None:
        """Exact mode: e(m) is known for every prefix, so the smallest prefix is certified,
        not only block ends. The nested projection proposes (its e(m')^2 = N^2 - t(m') is
        the projection's, to its round-off); the core's weights decide, tried at prefixes
        at least EXACT_GROWTH apart. The projection's span leaves out directions under
        PIVOT_TOL that the weights use (issue 43: on 2-D tables it stalls above the target
        long before the weights meet it), so the weights on all the landmarks are tried as
        well, at m at least SCREEN_GROWTH apart, when the projection is within SOLVER_SCREEN
        of the target or the last block (landmarks ``before`` on) added no pivot; once they
        are certified, the smallest certified prefix above the last failed try is found by
        bisection."""
        assert self.exact is not None
        sigma = self._sigma()
        target2 = self.levels.tol2 * sigma.lower
        excess = self.exact.norm2 - proj.t
        proposed = np.flatnonzero(excess <= target2) + 1  # prefixes m' (1-based)
        start = 1 if not self.tries.last_attempt else math.ceil(EXACT_GROWTH * self.tries.last_attempt)
        for m in proposed:
            if m < start:
                continue
            check = self._try_prefix(drawn, int(m), proj, attempts)
            if check.certified:
                return check
            start = math.ceil(EXACT_GROWTH * m)
        done = drawn.size
        near = excess[-1] <= SOLVER_SCREEN * target2 or not proj.is_pivot[before:done].any()
        if not (near and done >= SCREEN_GROWTH * self.tries.last_attempt and done > self.tries.failed):
            return None
        check = self._try_prefix(drawn, done, proj, attempts)
        if not check.certified:
            return None
        lo, hi = self.tries.failed, done  # lo fails (or is 0), hi is certified
        while hi - lo > max(1, math.ceil(BISECT_TOL * hi)):
            mid = (lo + hi) // 2
            trial = self._try_prefix(drawn, mid, proj, attempts)
            lo, hi, check = (lo, mid, trial) if trial.certified else (mid, hi, check)
        return check

    def _try_prefix(
        self, drawn: np.ndarray, m: int, proj: NestedProjection, attempts: list[tuple[int, float]]
    ) -> Check:
        """The certificate of the weights on the first m landmarks (exact mode), recorded."""
        check = self._check(drawn[:m], proj, False)
        attempts.append((m, _ratio(check.bound, check.sigma.lower)))
        self.tries.last_attempt = max(self.tries.last_attempt, m)
        if not check.certified:
            self.tries.failed = max(self.tries.failed, m)
        return check

    def _restart(self) -> NestedProjection:
        """A new projection for a draw that did not extend the last one, with the same probes."""
        fresh = NestedProjection(self.sample.core, self.solver.n_threads)
        for rows in self.probes:
            fresh.add_probes(*rows)
        return fresh

    def _result(self, indices: np.ndarray, check: Check, stop: str) -> PathResult:
        trace = self.trace
        return PathResult(
            indices=np.asarray(indices, dtype=np.int64),
            check=check,
            stop=stop,
            path=trace.path,
            path_ratios=trace.ratios,
            attempts=trace.attempts,
            validation=self.mode or "exact",
            screening="landmarks" if self.screen_rows is None else "probes",
            nested=trace.nested,
        )


def _fraction(estimate: float, target2: float) -> float:
    """estimate / target2, the screen's e^2 over the target's (0 for an estimate at most 0
    when the target is 0: constant data, whose check is deterministic)."""
    if target2 > 0:
        return estimate / target2
    return 0.0 if estimate <= 0 else math.inf


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
