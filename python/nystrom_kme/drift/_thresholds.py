"""The online detector's threshold for an expected run time (ert): one threshold c for
every full window, chosen so that the mean number of updates from a reset to the first
alarm, ARL(c), is ert when nothing drifts.

ARL(c) is read from one long simulated stream. Everything here is a pure function of the
held-out rows' kernel matrix, mu_R at those rows, |R|, W, ert and a Generator:

* **The stream.** Rows are drawn with replacement from the held-out rows H (independent
  of mu_R), so that each window is W independent draws from H's distribution. Windows
  drawn without replacement (alibi-detect's and this detector's earlier streams) have a
  variance smaller by about 2W/|H| (5% at W = 100, |H| = 2000), which shortens the live
  run length by tens of percent. A row drawn twice in one window would pair with itself
  (k(x, x), which no two rows of a continuous distribution have): that pair gets its
  expected value instead. The windows are compared with H's leave-one-out embedding, so
  that the simulated statistic is the null statistic of H's distribution to O(1/|H|).
* **The reference's own error.** The live statistic compares the window with mu_R rather
  than the distribution's mu: with delta = mu - mu_R it gains
  2 mean_i (delta(y_i) - <mu, delta>) + ||delta||^2, whose expectations over the draw of
  R are a mean tr(C) / |R| and a variance (4 / W) sum_j lambda_j^2 / |R| (C the kernel's
  covariance operator, lambda_j its eigenvalues). Left out, they make the run length 6%
  short at W = 100, |R| = 18 000. The simulated windows are centred on
  (1 - gamma) mu_H + gamma mu_R, which adds a linear term of that variance
  (gamma^2 Var_H(mu_H - mu_R) = sum lambda^2 / |R|), and shifted by tr(C) / |R|. One
  reference's delta departs from these expectations (by about half of them: its
  leading eigen-directions are few), which |H| held-out rows cannot measure; the run
  length then moves by a few percent at W = 100 and |R| ~ 2 10^4, less at smaller W or
  larger references.
* **The run lengths.** After an alarm the detector is reset and needs W new rows, so the
  run lengths of a threshold c are the gaps of the greedy chain of exceedances along one
  long stream (the next alarm is the first exceedance at least W windows later): a
  renewal process, and ARL(c) = simulated rows / alarms, whatever the hazard does after
  the window fills (conditional quantiles of the first W windows, as alibi-detect sets
  them, reuse the last threshold from then on while the hazard keeps changing: 10% above
  its target at W = 20, one cause of the earlier run lengths' 8-20% shortfall). The cost
  is the stream's, ``VALUES`` kernel values (about ``VALUES / (W - 1)`` rows), for any
  ert.
* **The threshold.** Where the streams have at least ``DIRECT_ALARMS`` alarms at ert, a
  quadratic in the level fitted to log ARL at the levels around ert (within a factor 3)
  is solved for ert. Beyond, the streams' longest run lengths (from 64 times below the
  longest read with ``DIRECT_ALARMS`` alarms) are fitted in the standardised level u
  (median and standard deviation of the simulated statistics) twice, with the two tails
  a degenerate U-statistic lies between: a + b u + g log u (a weighted chi-square's:
  exponential, W small beside the leading eigenvalues' weight) and
  a + b u + q u^2 + g log u (Gaussian-like, large W); the mean of the two is solved for
  ert. Against streams of 10^9 (W = 10), 4 10^8 (W = 50) and 2 10^8 rows (W = 100), the
  exponential fit alone was within 5% up to 10 times beyond at W = 10 and 50 but 28% and
  70% long at 10 and 100 times at W = 100, the quadratic one 10-25% short everywhere;
  their mean was within 9% of ert up to 10 times beyond and 18% up to 100 times (means
  over 5 calibrations; one calibration 18-60% off at 100 times: bench/RESULTS.md). More
  than ``MAX_EXTRAPOLATION`` times beyond is refused.
"""

from __future__ import annotations

import bisect
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from .._validation import check_allocation

#: Held-out rows the stream draws from at most (their kernel matrix: 72 MB in float64).
POOL_ROWS = 3000
#: Kernel values of the simulated stream by default, rows x (W - 1): seconds on one core.
VALUES = 10**9
#: Simulated rows at most (their statistics stay in memory: 64 MiB).
MAX_ROWS = 1 << 23
#: Simulated rows per unit of ert at most: about that many alarms at the threshold.
ROWS_PER_ERT = 10_000
#: Alarms at ert from which ARL(ert) is read from the stream rather than extrapolated.
DIRECT_ALARMS = 400
#: Fewest alarms of a level used in a fit.
FIT_ALARMS = 50
#: Largest factor between ert and the longest run length read with DIRECT_ALARMS alarms.
MAX_EXTRAPOLATION = 1000
#: Levels of the run-length curve.
LEVELS = 24
#: Rows per chunk of the simulation (its arrays stay in the cache).
CHUNK_ROWS = 1 << 15
#: Independent simulated streams (run on threads; the result does not depend on them).
STREAMS = 8


@dataclass(frozen=True)
class Pool:
    """The simulation's rows: H's kernel matrix in float16 or float32, the diagonal
    replaced by the expected value of a pair, the centring f (h,) and the offset: a window with pair sum
    P and f-sum F has the statistic 2 P / (W (W - 1)) - 2 F / W + offset."""

    kernel_values: np.ndarray
    f: np.ndarray
    offset: float


@dataclass(frozen=True)
class Calibration:
    """The threshold for ert and the run-length curve it was read from.

    levels (G,) increasing; alarms (G,) the simulated stream's alarms at each (ARL =
    rows / alarms); rows the stream's rows; center and scale the median and standard
    deviation of its statistics (the extrapolation's units); extrapolated whether ert
    lies beyond the run lengths read directly."""

    threshold: float
    levels: np.ndarray
    alarms: np.ndarray
    rows: int
    center: float
    scale: float
    extrapolated: bool


def pool(K: np.ndarray, f_rest: np.ndarray, n_rest: int) -> Pool:
    """The simulation's pool from H's kernel matrix K (h, h), mu_R at H's rows (h,) and
    |R|, the rows behind mu_R (the module's docstring explains the centring)."""
    h = K.shape[0]
    if h < 2:
        raise ValueError(f"the simulation needs at least 2 held-out rows, got {h}")
    diag = np.diag(K).astype(np.float64)
    row = K.sum(axis=1, dtype=np.float64) - diag
    f_loo = row / (h - 1)  # mu_H(x_a) without x_a
    mean_pair = float(row.sum()) / (h * (h - 1))  # ||mu_H||^2 over distinct pairs
    psi2 = 0.0  # sum(lambda^2) = E psi(x, y)^2 of the centred kernel, over distinct pairs of H
    for start in range(0, h, 512):
        stop = min(h, start + 512)
        block = K[start:stop] - f_loo[start:stop, None] - f_loo[None, :] + mean_pair
        block[np.arange(stop - start), np.arange(start, stop)] = 0.0
        psi2 += float(np.sum(block * block))
    psi2 /= h * (h - 1)
    trace = max(float(diag.mean()) - mean_pair, 0.0)  # tr(C) = E k(x, x) - ||mu||^2
    d = f_loo - f_rest
    spread = float(np.var(d))
    gamma = math.sqrt(psi2 / n_rest / spread) if spread > 0 else 0.0  # about sqrt(|H| / (|H| + |R|))
    f = f_loo - gamma * d  # (1 - gamma) mu_H + gamma mu_R at H's rows
    offset = 2.0 * float(f.mean()) - mean_pair + trace / n_rest  # E T = tr(C) / |R|
    # kernel values in [0, 1] (the radial kernels) as float16: 2^-12 at most off, 1/500 of
    # a centred value psi ~ 0.1, and half the memory of float32, which the stream's random
    # reads of an h x h matrix make 3 times faster; others (linear, polynomial) in float32
    small = bool(K.min() >= 0.0 and K.max() <= 1.0)
    values = np.array(K, dtype=np.float16 if small else np.float32)
    np.fill_diagonal(values, (2.0 * f_loo - mean_pair).astype(values.dtype))  # psi(x, x) = 0
    return Pool(values, f, offset)


def simulate(p: Pool, window: int, n_rows: int, rng: np.random.Generator) -> np.ndarray:
    """The statistics of the n_rows - W + 1 windows of one stream of ``n_rows`` rows
    drawn with replacement from the pool: (W - 1) n_rows kernel values read from it.

    Each row's sums with the W - 1 rows before it (``new``) and after it (``ahead``) are
    gathered lag by lag; a window's pair sum is the previous one's minus the leaving
    row's ``ahead`` plus the entering row's ``new``, from the exact sum of each chunk's
    first window (the running difference never outlives a chunk)."""
    W = window
    h = p.f.shape[0]
    flat = p.kernel_values.ravel()
    out = np.empty(n_rows - W + 1)
    tail = rng.integers(0, h, size=W - 1)  # the rows before the next chunk's windows
    for a in range(0, n_rows - W + 1, CHUNK_ROWS):
        b = min(n_rows - W + 1, a + CHUNK_ROWS)  # windows [a, b): rows a .. b + W - 2
        rows = np.concatenate([tail, rng.integers(0, h, size=b - a)])
        tail = rows[rows.size - (W - 1) :]
        m = b - a
        index = rows.astype(np.int32)  # h^2 < 2^31: POOL_ROWS
        scaled = index * np.int32(h)
        new = np.zeros(rows.size)
        ahead = np.zeros(rows.size)
        for lag in range(1, W):  # the pairs (j - lag, j)
            values = flat.take(scaled[lag:] + index[:-lag])
            new[lag:] += values
            ahead[:-lag] += values
        first = p.kernel_values[np.ix_(rows[:W], rows[:W])].astype(np.float64)
        pairs = np.empty(m)
        pairs[0] = (first.sum() - np.trace(first)) / 2.0
        np.cumsum(new[W : W + m - 1] - ahead[: m - 1], out=pairs[1:])  # window s + 1: drop row s, add row s + W
        pairs[1:] += pairs[0]
        F = np.concatenate([[0.0], np.cumsum(p.f[rows])])
        out[a:b] = 2.0 * pairs / (W * (W - 1)) - 2.0 * (F[W : W + m] - F[:m]) / W + p.offset
    return out


def simulate_streams(
    p: Pool, window: int, n_rows: int, rng: np.random.Generator, n_threads: int = 1
) -> list[np.ndarray]:
    """STREAMS independent streams of about n_rows / STREAMS rows each (their seeds drawn
    from ``rng``), simulated on up to ``n_threads`` threads (numpy's gathers release the
    GIL): the same statistics for any number of threads."""
    seeds = rng.integers(0, 2**63, size=STREAMS, dtype=np.int64)
    sizes = [n_rows // STREAMS + (i < n_rows % STREAMS) for i in range(STREAMS)]

    def one(i: int) -> np.ndarray:
        return simulate(p, window, sizes[i], np.random.default_rng(int(seeds[i])))

    if n_threads <= 1:
        return [one(i) for i in range(STREAMS)]
    with ThreadPoolExecutor(max_workers=min(n_threads, STREAMS)) as pool_:
        return list(pool_.map(one, range(STREAMS)))


def alarms(exceed: np.ndarray, window: int) -> int:
    """The detector's alarms on a stream whose windows at the sorted positions
    ``exceed`` cross the threshold: the first exceedance, then the first one at least W
    windows after each alarm (the reset, and W new rows to fill the window)."""
    if exceed.size == 0:
        return 0
    cut = np.flatnonzero(np.diff(exceed) >= window) + 1  # clusters: each one's first is an alarm
    starts = np.concatenate([[0], cut])
    ends = np.concatenate([cut, [exceed.size]])
    long = exceed[ends - 1] - exceed[starts] >= window
    count = int(starts.size)
    for a, b in zip(starts[long].tolist(), ends[long].tolist()):  # the greedy chain through a long cluster
        positions = exceed[a:b].tolist()
        i = 0
        while True:
            i = bisect.bisect_left(positions, positions[i] + window, i)
            if i >= len(positions):
                break
            count += 1
    return count


def run_length_curve(streams: list[np.ndarray], window: int, ert: float) -> tuple[np.ndarray, np.ndarray, float, float]:
    """LEVELS levels and their alarms, summed over the streams of window statistics:
    spanning run lengths from about ert / 3 to 3 ert when the streams have DIRECT_ALARMS
    alarms at ert, else their longest run lengths (from 64 times below the longest with
    DIRECT_ALARMS alarms); and the statistics' median and standard deviation."""
    rows = sum(stats.size + window - 1 for stats in streams)
    ordered = np.concatenate(streams)
    ordered.sort()

    def level(k: int) -> float:  # the level with k windows above it (all: just below the smallest)
        return float(ordered[ordered.size - k]) if k < ordered.size else float(np.nextafter(ordered[0], -np.inf))

    def count(c: float) -> int:
        return sum(alarms(np.flatnonzero(stats > c), window) for stats in streams)

    top = rows / DIRECT_ALARMS  # the longest run length read with DIRECT_ALARMS alarms
    short, long = (ert / 3, 3 * ert) if ert <= top else (top / 64, top)
    # from the top down, doubling the windows above the level: the alarms about double
    k, highest, lowest = 1, level(1), level(ordered.size)
    while k < ordered.size:
        n = count(level(k))
        if n <= rows / long:
            highest = level(k)
        if n >= rows / max(float(window), short):
            lowest = level(k)
            break
        k *= 2
    levels = np.unique(np.linspace(lowest, highest, LEVELS))
    counts = np.array([count(c) for c in levels], dtype=np.int64)
    return levels, counts, float(np.median(ordered)), float(np.std(ordered))


def threshold(
    levels: np.ndarray, counts: np.ndarray, rows: int, window: int, ert: float, center: float, scale: float
) -> tuple[float, bool]:
    """The threshold for ert read from a run-length curve, and whether it was
    extrapolated (the module's docstring gives the two fits)."""
    check_reach(rows, window, ert)
    top = rows / DIRECT_ALARMS
    arl = rows / np.maximum(counts, 1)
    use = counts >= FIT_ALARMS
    extrapolated = ert > top
    target = math.log(ert)
    if not extrapolated:
        near = use & (arl >= ert / 3) & (arl <= 3 * ert)
        if np.count_nonzero(near) >= 5:
            use = near  # the curve is fitted where it is read
        x, y, w = levels[use], np.log(arl[use]), np.sqrt(counts[use].astype(np.float64))
        if x.size < 3:
            raise ValueError(f"the simulated stream ({rows} rows, n_bootstraps) has too few alarms to set a threshold")
        span = float(x[-1] - x[0]) or 1.0
        a, b, c = (float(v) for v in np.polyfit((x - x[0]) / span, y, 2, w=w))
        disc = b * b - 4.0 * a * (c - target)
        if abs(a) * 1e6 < abs(b) or disc < 0:  # no curvature to speak of, or a maximum below ert
            b, c = (float(v) for v in np.polyfit((x - x[0]) / span, y, 1, w=w))
            root = (target - c) / b
        else:
            root = (-b + math.sqrt(disc)) / (2.0 * a)  # the rising root: its slope is +sqrt(disc)
        return float(x[0] + root * span), False
    u = (levels - center) / scale
    tail = use & (u > 0.1)  # the tail, where log u is defined
    if np.count_nonzero(tail) >= 4:
        bases = [["1", "u", "log"], ["1", "u", "u2", "log"]]  # exponential tail; Gaussian-like tail
    else:  # a short stream, without a tail to fit: log ARL linear in the level
        if np.count_nonzero(use) < 2:
            raise ValueError(f"the simulated stream ({rows} rows, n_bootstraps) has too few alarms to extrapolate from")
        tail, bases = use, [["1", "u"]]

    def design(z: np.ndarray, names: list[str]) -> np.ndarray:
        columns = {"1": np.ones_like(z), "u": z, "u2": z * z}
        return np.stack([columns[n] if n != "log" else np.log(np.maximum(z, 1e-300)) for n in names], axis=-1)

    w = np.sqrt(counts[tail].astype(np.float64))
    fits = [
        (names, np.linalg.lstsq(design(u[tail], names) * w[:, None], np.log(arl[tail]) * w, rcond=None)[0])
        for names in bases
    ]

    def crossing(models: list[tuple[list[str], np.ndarray]]) -> float | None:
        """Where the models' mean log ARL reaches log ert above the highest level fitted."""

        def excess(z: float) -> float:
            return float(np.mean([design(np.array(z), names) @ coef for names, coef in models])) - target

        lo, step = float(u[tail][-1]), 1.0
        hi = lo + step
        while excess(hi) < 0:
            if step > 1e3:
                return None  # it does not rise that far
            step *= 2.0
            lo, hi = hi, hi + step
        for _ in range(200):  # bisection
            mid = 0.5 * (lo + hi)
            if excess(mid) < 0:
                lo = mid
            else:
                hi = mid
        return hi

    z = crossing(fits)
    if z is None:  # the Gaussian-like fit bends down: the exponential tail alone
        z = crossing(fits[:1])
    if z is None:
        raise ValueError(f"the run-length curve of the simulated stream does not rise to ert={ert:g}")
    return float(center + z * scale), True


def check_reach(rows: int, window: int, ert: float) -> None:
    """Refuse an ert more than MAX_EXTRAPOLATION times beyond the longest run length a
    stream of ``rows`` rows reads directly (rows / DIRECT_ALARMS)."""
    top = rows / DIRECT_ALARMS
    if ert > MAX_EXTRAPOLATION * top:
        raise ValueError(
            f"ert={ert:g} is beyond the run lengths the simulation can set a threshold for: at most "
            f"{MAX_EXTRAPOLATION * top:.4g} with window_size={window} and {rows} simulated rows (the "
            f"longest run length read from the stream, {top:.4g}, extrapolated {MAX_EXTRAPOLATION}-fold); "
            f"n_bootstraps >= {math.ceil(ert * DIRECT_ALARMS / MAX_EXTRAPOLATION)} simulated rows reach it"
        )


def check_curve(levels: np.ndarray, alarms: np.ndarray, rows: int, window: int, center: float, scale: float) -> None:
    """ValueError unless a (saved) run-length curve is one a simulation of ``rows`` rows
    can give: at least 3 increasing levels, each with its alarms, at most one per W rows;
    ``center`` and ``scale``, the median and standard deviation of the simulated
    statistics, bound them: at least one alarm per W of the half of the windows above the
    median, at most the windows above a level, which Cantelli's inequality bounds."""
    W = window
    if levels.ndim != 1 or levels.size < 3 or np.any(np.diff(levels) <= 0):
        raise ValueError(f"levels must be at least 3 increasing numbers, got {levels.size}")
    if alarms.shape != levels.shape:
        raise ValueError(f"alarms must have one count per level, {levels.size}, got shape {alarms.shape}")
    if alarms.min() < 0 or alarms.max() > rows // W + 1:
        raise ValueError(
            f"alarms must lie in [0, simulated_rows / window_size + 1 = {rows // W + 1}] (alarms are W rows apart)"
        )
    if not scale > 0:
        raise ValueError(f"scale={scale!r}: expected a positive number")
    half = (rows - W + 1) // (2 * W)
    if np.any(alarms[levels < center] < half):
        raise ValueError(f"center={center!r}: a level below it has fewer than {half} alarms")
    excess = np.clip((levels - center) / scale - 1.0, 0.0, None)
    if np.any(alarms > rows / (1.0 + excess**2) + 1):
        raise ValueError(f"scale={scale!r}: the alarms above center + scale exceed Cantelli's bound")


def calibrate(
    K: np.ndarray,
    f_rest: np.ndarray,
    n_rest: int,
    window: int,
    ert: float,
    rng: np.random.Generator,
    n_rows: int | None = None,
    n_threads: int = 1,
) -> Calibration:
    """The threshold for ert from H's kernel matrix K (h, h), mu_R at H's rows (h,), |R|
    and W: STREAMS simulated streams of ``n_rows`` rows in all (None: ``default_rows``),
    on up to ``n_threads`` threads (the result does not depend on them)."""
    rows = default_rows(window, ert) if n_rows is None else int(n_rows)
    if rows < 64 * window * STREAMS:
        raise ValueError(
            f"n_bootstraps={rows} simulated rows are too few: at least {64 * STREAMS} window_size = "
            f"{64 * STREAMS * window}"
        )
    check_allocation(16.0 * rows, f"n_bootstraps={rows}")  # the statistics and their sorted copy
    check_reach(rows, window, ert)
    streams = simulate_streams(pool(K, f_rest, n_rest), window, rows, rng, n_threads)
    levels, counts, center, scale = run_length_curve(streams, window, ert)
    rows = sum(stats.size + window - 1 for stats in streams)
    c, extrapolated = threshold(levels, counts, rows, window, ert, center, scale)
    return Calibration(c, levels, counts, rows, center, scale, extrapolated)


def default_rows(window: int, ert: float) -> int:
    """Simulated rows by default: VALUES kernel values' worth, at most MAX_ROWS and
    ROWS_PER_ERT ert (enough alarms at ert), at least 64 STREAMS window_size."""
    budget = min(MAX_ROWS, VALUES // max(1, window - 1), int(min(ROWS_PER_ERT * ert, MAX_ROWS)))
    return int(max(64 * STREAMS * window, budget))


__all__ = [
    "DIRECT_ALARMS",
    "MAX_EXTRAPOLATION",
    "POOL_ROWS",
    "Calibration",
    "Pool",
    "alarms",
    "calibrate",
    "check_curve",
    "check_reach",
    "default_rows",
    "pool",
    "run_length_curve",
    "simulate",
    "simulate_streams",
    "threshold",
]
