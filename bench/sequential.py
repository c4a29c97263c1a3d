"""Sequential drift tests by betting (issue 45): level, the null with a finite reference,
detection delay, speed, memory and the looks figure.

Sections (any subset; every long one appends one JSON line per stream to
``bench/out/sequential_<section>.jsonl`` and skips the streams already there, so a run
stopped anywhere resumes where it stopped; ``--report`` prints the tables from them):

* ``--level``: ``nk.SequentialDriftTest`` (defaults: five kernels, paired and margin bets)
  on null streams of ``--rows`` rows (10^5) against references of 10^4 and 10^6 rows,
  for N(0, I_d) data at d = 2, 10, 50 and two standardised real tables (scikit-learn's
  bundled breast-cancer and digits tables, rows drawn with replacement: P is the table's
  empirical distribution); each stream its own reference. The false-alarm rate (a
  rejection anywhere in the stream) per cell, with its binomial band.
* ``--nulls``: the null with a finite reference, one Gaussian kernel at d = 10, references
  of 10^4 and 10^6 rows, the same streams for four bets: naive (margin bets with eps = 0),
  margin only, paired only (within the pool), both (the default).
* ``--delay``: detection delays at d = 10 (n_ref = 10^5) for a mean shift, a scale change,
  a new mode of 5% and a correlation change, starting at row 0 or after ``--late`` null
  rows: the sequential test, ``OnlineDriftDetector`` (W = 50) with its threshold set to the
  0.95 quantile of its statistic's maximum over the same horizon on null streams (the
  same false-alarm probability, 0.05, measured), and the reference algorithm of the
  papers (plain numpy, its witness over every past row: O(t) per step; one Gaussian
  kernel, paired with held-out rows, ONS) on the first ``--short`` rows.
* ``--betting``: the delays of ``--delay``'s drifts (``--reps`` streams each, from the start
  and late) for the betting fraction by ONS, by aGRAPA and by their mixture (the default).
* ``--speed``: rows per second of ``update`` at d = 10, m = 256 (one kernel and the
  default five), in blocks of 10^4 rows, in blocks of 100 and one row per call, 1 and 2
  threads; the compiled loop alone.
* ``--memory``: the peak RSS growth over 10^7 rows (blocks of 10^4), the RSS at 10^5,
  10^6 and 10^7 rows.
* ``--looks``: under H0, the probability of a false alarm by the k-th look (a look every
  ``--look-rows`` rows) for the fixed-sample test (``nk.two_sample_test`` of all rows so
  far against a reference sample, at every look), the online detector (its alarm by that
  row) and the sequential test; ``docs/figures/sequential_looks.png``.

Usage: python -m bench.sequential [--level] [--nulls] [--delay] [--speed] [--memory]
       [--looks] [--report] [--streams N] [--rows N] [--reps N]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from bench.harness import OUT, load_average, machine, peak_rss_mb, rss_mb, utc_now

ALPHA = 0.05
REFERENCES = (10_000, 1_000_000)
GAUSSIAN_DIMS = (2, 10, 50)
TABLES = ("breast_cancer", "digits")
FIGURE = Path(__file__).resolve().parent.parent / "docs" / "figures" / "sequential_looks.png"


# --------------------------------------------------------------------------- data


def table(name: str) -> np.ndarray:
    """A scikit-learn bundled table, its constant columns dropped, standardised."""
    from sklearn import datasets

    X = getattr(datasets, f"load_{name}")().data.astype(np.float64)
    X = X[:, X.std(axis=0) > 0]
    return (X - X.mean(axis=0)) / X.std(axis=0)


def sampler(source: str) -> Callable[[np.random.Generator, int], np.ndarray]:
    """rows(rng, n): n i.i.d. rows of the source ("gauss<d>" or a table's name)."""
    if source.startswith("gauss"):
        d = int(source[5:])
        return lambda rng, n: rng.standard_normal((n, d))
    T = table(source)
    return lambda rng, n: T[rng.integers(0, T.shape[0], size=n)]


def results(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def append(path: Path, record: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(json.dumps(record) + "\n")


def band(k: int, n: int) -> str:
    """The rate and its 95% Wilson interval."""
    if n == 0:
        return "-"
    p, z = k / n, 1.96
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"{p:.3f} [{max(0, centre - half):.3f}, {min(1, centre + half):.3f}] ({k}/{n})"


def stream_blocks(
    rows: Callable[[np.random.Generator, int], np.ndarray], rng: np.random.Generator, n: int
) -> Iterator[np.ndarray]:
    for start in range(0, n, 10_000):
        yield rows(rng, min(10_000, n - start))


# --------------------------------------------------------------------------- level


def run_level(streams: int, n_rows: int, threads: int) -> None:
    import nystrom_kme as nk

    path = OUT / "sequential_level.jsonl"
    done = {(r["source"], r["n_ref"], r["seed"]) for r in results(path)}
    cells = [(f"gauss{d}", n) for d in GAUSSIAN_DIMS for n in REFERENCES] + [(t, n) for t in TABLES for n in REFERENCES]
    for seed in range(streams):  # seed-major: a stopped run covers every cell alike
        for source, n_ref in cells:
            if (source, n_ref, seed) in done:
                continue
            rows = sampler(source)
            rng = np.random.default_rng([45, seed, n_ref, len(source), sum(map(ord, source))])
            start = time.perf_counter()
            test = nk.SequentialDriftTest(rows(rng, n_ref), random_state=seed, n_threads=threads)
            built = time.perf_counter() - start
            peak = -math.inf
            for block in stream_blocks(rows, rng, n_rows):
                peak = max(peak, float(test.update(block).log_wealth.max()))
            append(
                path,
                {
                    "source": source,
                    "n_ref": n_ref,
                    "seed": seed,
                    "rows": n_rows,
                    "kernels": [repr(k) for k in test.kernels_],
                    "rejection_time": test.rejection_time_,
                    "max_log_wealth": peak,
                    "final_log_wealth": test.log_wealth_,
                    "log_threshold": math.log(test.threshold_),
                    "build_s": built,
                    "seconds": time.perf_counter() - start,
                    "load": load_average(),
                },
            )
            print(
                source,
                n_ref,
                seed,
                test.rejection_time_,
                f"{peak:.2f}",
                f"{time.perf_counter() - start:.1f}s",
                flush=True,
            )


def report_level() -> None:
    rec = results(OUT / "sequential_level.jsonl")
    if not rec:
        return
    print("\nLevel: false alarms over null streams (a rejection anywhere in the stream), alpha = 0.05")
    print("| data | n_ref = 10^4 | n_ref = 10^6 | rows per stream | max log wealth, median (10^4 / 10^6) |")
    print("|---|---|---|---|---|")
    for source in [f"gauss{d}" for d in GAUSSIAN_DIMS] + list(TABLES):
        cells = []
        med = []
        for n_ref in REFERENCES:
            r = [x for x in rec if x["source"] == source and x["n_ref"] == n_ref]
            cells.append(band(sum(x["rejection_time"] is not None for x in r), len(r)))
            med.append(f"{np.median([x['max_log_wealth'] for x in r]):.2f}" if r else "-")
        rows = {x["rows"] for x in rec if x["source"] == source}
        print(f"| {source} | {cells[0]} | {cells[1]} | {sorted(rows)} | {' / '.join(med)} |")
    loads = [x["load"] for x in rec]
    seconds = np.median([x["seconds"] for x in rec])
    print(f"({len(rec)} streams; seconds per stream median {seconds:.1f}; loads {loads[0]} .. {loads[-1]})")


# --------------------------------------------------------------------------- nulls


NULL_BETS = ("naive", "margin", "paired", "both")


def null_test(reference: np.ndarray, bet: str, seed: int, threads: int) -> Any:
    import nystrom_kme as nk
    from nystrom_kme.sequential import _betting

    if bet == "margin":
        return nk.SequentialDriftTest(reference, kernel="gaussian", n_holdout=0, random_state=seed, n_threads=threads)
    if bet == "paired":
        return nk.SequentialDriftTest(reference, kernel="gaussian", delta=0, random_state=seed, n_threads=threads)
    test = nk.SequentialDriftTest(reference, kernel="gaussian", random_state=seed, n_threads=threads)
    if bet == "naive":  # margin bets with eps = 0: the bet the module's docstring refuses
        m = test._model
        test._model = _betting.Model.build(
            m.kernels,
            m.landmarks,
            np.zeros(1),
            _betting.mixture_weights(1, test.betting, True, False),
            margin_bets=True,
            pairs_join=False,
            refresh=m.refresh,
            n_threads=threads,
        )
        test.reset()
    return test


def run_nulls(streams: int, n_rows: int, threads: int) -> None:
    path = OUT / "sequential_nulls.jsonl"
    done = {(r["n_ref"], r["seed"], r["bet"]) for r in results(path)}
    rows = sampler("gauss10")
    for seed in range(streams):
        for n_ref in REFERENCES:
            for bet in NULL_BETS:
                if (n_ref, seed, bet) in done:
                    continue
                rng = np.random.default_rng([451, seed, n_ref])  # the same reference and stream for every bet
                start = time.perf_counter()
                test = null_test(rows(rng, n_ref), bet, seed, threads)
                peak, seen = -math.inf, 0
                for block in stream_blocks(rows, rng, n_rows):
                    if bet == "paired":
                        block = block[: test.n_paired_left_]
                        if not block.shape[0]:
                            break
                    peak = max(peak, float(test.update(block).log_wealth.max()))
                    seen += block.shape[0]
                append(
                    path,
                    {
                        "n_ref": n_ref,
                        "seed": seed,
                        "bet": bet,
                        "rows": seen,
                        "rejection_time": test.rejection_time_,
                        "max_log_wealth": peak,
                        "seconds": time.perf_counter() - start,
                        "load": load_average(),
                    },
                )
                print("nulls", n_ref, seed, bet, test.rejection_time_, f"{peak:.2f}", flush=True)


def report_nulls() -> None:
    rec = results(OUT / "sequential_nulls.jsonl")
    if not rec:
        return
    print("\nThe null with a finite reference: false alarms, one Gaussian kernel, d = 10")
    print("| bet | n_ref = 10^4 | rows bet on | n_ref = 10^6 | rows bet on |")
    print("|---|---|---|---|---|")
    for bet in NULL_BETS:
        cells = []
        for n_ref in REFERENCES:
            r = [x for x in rec if x["bet"] == bet and x["n_ref"] == n_ref]
            cells += [
                band(sum(x["rejection_time"] is not None for x in r), len(r)),
                str(sorted({x["rows"] for x in r})),
            ]
        print(f"| {bet} | " + " | ".join(cells) + " |")


# --------------------------------------------------------------------------- delay

DRIFTS = ("shift", "scale", "mode", "corr")
DELAY_DIM, DELAY_REF, DELAY_AFTER, WINDOW = 10, 100_000, 20_000, 50


def drifted(rng: np.random.Generator, kind: str, n: int, d: int = DELAY_DIM) -> np.ndarray:
    """n rows after the change: a mean shift of 0.25 in one coordinate, every scale x 1.15,
    a new mode of 5% (N((2, 0, ...), 0.3^2 I)), or a correlation of 0.5 between two
    coordinates; each keeps N(0, I)'s other features."""
    X = rng.standard_normal((n, d))
    if kind == "shift":
        X[:, 0] += 0.25
    elif kind == "scale":
        X *= 1.15
    elif kind == "mode":
        new = rng.random(n) < 0.05
        X[new] = rng.standard_normal((int(new.sum()), d)) * 0.3
        X[new, 0] += 2.0
    elif kind == "corr":
        X[:, 1] = 0.5 * X[:, 0] + math.sqrt(0.75) * X[:, 1]
    return X


def online_max(det: Any, X: np.ndarray) -> np.ndarray:
    """The online detector's statistic after each row (reset first)."""
    det.reset()
    return np.concatenate([det.update(X[i : i + 10_000]).statistic for i in range(0, X.shape[0], 10_000)])


def implied_ert(det: Any, threshold: float) -> str:
    """The ert whose threshold (the detector's own run-length curve) is ``threshold``."""
    from nystrom_kme.drift import _thresholds

    cal = det._calibration

    def level(ert: float) -> float:
        return _thresholds.threshold(cal.levels, cal.alarms, cal.rows, det.window_size, ert, cal.center, cal.scale)[0]

    lo, hi = float(det.window_size) * 2, float(det.window_size) * 2
    try:
        while level(hi) < threshold:
            lo, hi = hi, hi * 2
        for _ in range(40):
            mid = math.sqrt(lo * hi)
            lo, hi = (mid, hi) if level(mid) < threshold else (lo, mid)
    except ValueError as err:
        return f"> {lo:.3g} ({err})"
    return f"{math.sqrt(lo * hi):.4g}"


def reference_algorithm(X: np.ndarray, Y: np.ndarray, bandwidth: float, alpha: float = ALPHA) -> int | None:
    """The kernel betting test of the papers, plain numpy: the witness mu_X - mu_Y of every
    past pair (O(t) kernel values per step), normalised by its RKHS norm, paired payoff
    (f(x_t) - f(y_t)) / 2, ONS fraction in [0, 1/2]; the first t with wealth >= 1/alpha."""
    step = 2 / (2 - math.log(3))
    g2 = 2 * bandwidth * bandwidth
    lam, A, log_wealth = 0.0, 1.0, 0.0
    a = b = c = 0.0  # sum k(x, x'), sum k(x, y'), sum k(y, y') over past pairs (all ordered pairs)
    for t in range(X.shape[0]):
        x, y = X[t], Y[t]
        kxx = np.exp(-((X[:t] - x) ** 2).sum(1) / g2)
        kxy = np.exp(-((Y[:t] - x) ** 2).sum(1) / g2)
        kyx = np.exp(-((X[:t] - y) ** 2).sum(1) / g2)
        kyy = np.exp(-((Y[:t] - y) ** 2).sum(1) / g2)
        if t:
            norm = math.sqrt(max(a - 2 * b + c, 1e-300)) / t
            fx = (kxx.sum() - kxy.sum()) / t / norm
            fy = (kyx.sum() - kyy.sum()) / t / norm
            g = 0.5 * (fx - fy)
            log_wealth += math.log1p(lam * g)
            z = g / (1 + lam * g)
            A += z * z
            lam = min(max(lam + step * z / A, 0.0), 0.5)
            if log_wealth >= math.log(1 / alpha):
                return t + 1
        kxy_new = math.exp(-((x - y) ** 2).sum() / g2)
        a += 2 * kxx.sum() + 1
        c += 2 * kyy.sum() + 1
        b += kxy.sum() + kyx.sum() + kxy_new
    return None


def run_delay(reps: int, late: int, short: int, threads: int, window: int = WINDOW) -> None:
    """Delays on the same streams for every method; ``window`` other than WINDOW: the
    online detector alone, at that window (its own calibration: method "online-w<W>")."""
    import nystrom_kme as nk

    path = OUT / "sequential_delay.jsonl"
    records = results(path)
    rng0 = np.random.default_rng(4545)
    reference = rng0.standard_normal((DELAY_REF, DELAY_DIM))
    horizon = late + DELAY_AFTER
    online = nk.OnlineDriftDetector(reference, ert=10 * horizon, window_size=window, random_state=0, n_threads=threads)
    name = "online" if window == WINDOW else f"online-w{window}"
    calib = [r for r in records if r["kind"] == "calibration" and r.get("window", WINDOW) == window]
    if not calib:  # the online threshold with P(false alarm within the horizon) = alpha, and the sequential test's rate
        peaks, seq_alarms = [], 0
        for i in range(reps * 10):
            rng = np.random.default_rng([4546, i])
            X = rng.standard_normal((horizon, DELAY_DIM))
            peaks.append(float(np.nanmax(online_max(online, X))))
            if window == WINDOW:
                test = nk.SequentialDriftTest(reference, random_state=i, n_threads=threads)
                seq_alarms += test.update(X).reject
        threshold = float(np.quantile(peaks, 1 - ALPHA))
        rec = {
            "kind": "calibration",
            "window": window,
            "streams": len(peaks),
            "horizon": horizon,
            "threshold": threshold,
            "ert": implied_ert(online, threshold),
            "own_threshold": online.threshold_,
            "sequential_false_alarms": seq_alarms,
            "load": load_average(),
        }
        append(path, rec)
        calib = [rec]
        print("calibration", rec, flush=True)
    online.threshold_ = calib[0]["threshold"]
    done = {(r["drift"], r["start"], r["method"], r["rep"]) for r in records if r["kind"] == "delay"}
    bandwidth = float(nk.median_distance(reference[:1000]))
    for rep in range(reps):
        for kind in DRIFTS:
            for start in (0, late):
                rng = np.random.default_rng([4547, rep, DRIFTS.index(kind), start])
                X = np.concatenate([rng.standard_normal((start, DELAY_DIM)), drifted(rng, kind, DELAY_AFTER)])
                methods = ["sequential", name] if window == WINDOW else [name]
                Y = None
                if start == 0 and window == WINDOW:
                    Y = rng.standard_normal((short, DELAY_DIM))  # fresh reference rows, paired once
                    methods += ["reference-algorithm", "paired-one-kernel"]
                for method in methods:
                    if (kind, start, method, rep) in done:
                        continue
                    t0 = time.perf_counter()
                    extra: dict[str, Any] = {}
                    if method == "sequential":
                        test = nk.SequentialDriftTest(reference, random_state=rep, n_threads=threads)
                        at = test.update(X).rejection_time
                        extra["kernels"] = [repr(k) for k in test.kernels_]
                    elif method == name:
                        at = _first_alarm(online_max(online, X), online.threshold_)
                    elif method == "reference-algorithm":
                        at = reference_algorithm(X[:short], Y, bandwidth)
                    else:  # the compiled test alone, as the papers' (one kernel, paired bets): the compression's cost
                        one = nk.Gaussian(bandwidth)
                        paired = nk.SequentialDriftTest(
                            reference, kernel=one, n_holdout=short, delta=0, random_state=rep
                        )
                        at = paired.update(X[:short]).rejection_time
                    append(
                        path,
                        {
                            "kind": "delay",
                            "drift": kind,
                            "start": start,
                            "method": method,
                            "rep": rep,
                            "rows": short if method in ("reference-algorithm", "paired-one-kernel") else X.shape[0],
                            "delay": None if at is None else at - start,
                            "seconds": time.perf_counter() - t0,
                            "load": load_average(),
                            **extra,
                        },
                    )
                    print("delay", kind, start, method, rep, None if at is None else at - start, flush=True)


def _first_alarm(statistic: np.ndarray, threshold: float) -> int | None:
    hits = np.flatnonzero(statistic > threshold)
    return int(hits[0]) + 1 if hits.size else None


def report_delay() -> None:
    rec = results(OUT / "sequential_delay.jsonl")
    cal = [r for r in rec if r["kind"] == "calibration"]
    rows = [r for r in rec if r["kind"] == "delay"]
    if not cal or not rows:
        return
    c = next(r for r in cal if r.get("window", WINDOW) == WINDOW)
    for other in cal:
        if other.get("window", WINDOW) != WINDOW:
            print(
                f"online-w{other['window']}: threshold {other['threshold']:.4g} (0.95 quantile over "
                f"{other['streams']} null streams; its own ert for it: {other['ert']})"
            )
    print(
        f"\nDetection delay (rows after the change until the alarm), d = {DELAY_DIM}, n_ref = {DELAY_REF}: median "
        "[quartiles], detected/streams. Online detector: W = 50, threshold "
        f"{c['threshold']:.4g} = the 0.95 quantile of its maximum over {c['horizon']} null rows ({c['streams']} "
        f"streams; its own ert for that threshold: {c['ert']}); the sequential test's false alarms on the same "
        f"streams: {c['sequential_false_alarms']}/{c['streams']}."
    )
    starts = sorted({r["start"] for r in rows})
    methods = ["sequential", "online"] + sorted({r["method"] for r in rows if r["method"].startswith("online-w")})
    methods += ["paired-one-kernel", "reference-algorithm"]
    print("| drift | change at | " + " | ".join(methods) + " |")
    print("|---|---|" + "---|" * len(methods))
    for kind in DRIFTS:
        for start in starts:
            cells = []
            for method in methods:
                r = [x for x in rows if x["drift"] == kind and x["start"] == start and x["method"] == method]
                if not r:
                    cells.append("-")
                    continue
                d = [x["delay"] for x in r if x["delay"] is not None]
                q = np.percentile(d, [25, 50, 75]) if d else [math.nan] * 3
                cells.append(f"{q[1]:.0f} [{q[0]:.0f}, {q[2]:.0f}] {len(d)}/{len(r)}")
            print(f"| {kind} | {start} | " + " | ".join(cells) + " |")


# --------------------------------------------------------------------------- betting fraction


def run_betting(reps: int, late: int, threads: int) -> None:
    """The betting fraction's rule (ONS, aGRAPA, their mixture) on the delay study's drifts,
    from the start and after ``late`` null rows (one reference of DELAY_REF rows)."""
    import nystrom_kme as nk

    path = OUT / "sequential_betting.jsonl"
    done = {(r["drift"], r["start"], r["betting"], r["rep"]) for r in results(path)}
    reference = np.random.default_rng(4545).standard_normal((DELAY_REF, DELAY_DIM))
    for rep in range(reps):
        for kind in DRIFTS:
            for start in (0, late):
                rng = np.random.default_rng([4552, rep, DRIFTS.index(kind), start])
                X = np.concatenate([rng.standard_normal((start, DELAY_DIM)), drifted(rng, kind, DELAY_AFTER)])
                for betting in ("ons", "agrapa", "mixture"):
                    if (kind, start, betting, rep) in done:
                        continue
                    test = nk.SequentialDriftTest(reference, betting=betting, random_state=rep, n_threads=threads)
                    at = test.update(X).rejection_time
                    rec = {"drift": kind, "start": start, "betting": betting, "rep": rep}
                    append(path, {**rec, "delay": None if at is None else at - start, "load": load_average()})
                    print("betting", kind, start, betting, rep, None if at is None else at - start, flush=True)


def report_betting() -> None:
    rows = results(OUT / "sequential_betting.jsonl")
    if not rows:
        return
    print("\nBetting fraction: detection delay, median over streams (detected/streams)")
    print("| drift | change at | ONS | aGRAPA | mixture (default) |")
    print("|---|---|---|---|---|")
    for kind in DRIFTS:
        for start in sorted({r["start"] for r in rows}):
            cells = []
            for betting in ("ons", "agrapa", "mixture"):
                r = [x for x in rows if x["drift"] == kind and x["start"] == start and x["betting"] == betting]
                d = [x["delay"] for x in r if x["delay"] is not None]
                cells.append(f"{np.median(d):.0f} ({len(d)}/{len(r)})" if d else f"- (0/{len(r)})")
            print(f"| {kind} | {start} | " + " | ".join(cells) + " |")


# --------------------------------------------------------------------------- speed, memory


def run_speed(threads: int) -> None:
    import nystrom_kme as nk
    from nystrom_kme import _core

    rng = np.random.default_rng(4548)
    d, m = 10, 256
    reference = rng.standard_normal((100_000, d))
    X = rng.standard_normal((100_000, d))
    print(f"\nSpeed: update rows per second, d = {d}, m = {m}, n_ref = 10^5 ({load_average()})")
    print("| kernels | bets | threads | blocks of 10^4 | blocks of 100 | one row per call | compiled loop alone |")
    print("|---|---|---|---|---|---|---|")
    for kernel, name in ((nk.Gaussian(), "1 (Gaussian)"), ("auto", "6 (default)")):
        for holdout, bets in ((0, "margin"), (None, "paired + margin")):
            for nt in sorted({1, threads}):
                test = nk.SequentialDriftTest(
                    reference, kernel=kernel, n_landmarks=m, n_holdout=holdout, random_state=0, n_threads=nt
                )
                rates = []
                for block, rows in ((10_000, 100_000), (100, 20_000), (1, 3000)):
                    test.reset()
                    if holdout is None:  # a fresh pool for each timing: paired rows cost their kernel values too
                        test._paired = 0
                    t0 = time.perf_counter()
                    for i in range(0, rows, block):
                        test.update(X[i : i + block])
                    rates.append(rows / (time.perf_counter() - t0))
                test.reset()
                test._paired = 0
                pool = test.reference_.pool[: X.shape[0]]
                t0 = time.perf_counter()
                _core.bet_rows(test._model.core, X, pool, test._betting, nt)
                rates.append(X.shape[0] / (time.perf_counter() - t0))
                print(f"| {name} | {bets} | {nt} | " + " | ".join(f"{r:,.0f}" for r in rates) + " |", flush=True)


def run_memory(rows: int, threads: int) -> None:
    import nystrom_kme as nk

    rng = np.random.default_rng(4549)
    test = nk.SequentialDriftTest(rng.standard_normal((100_000, 10)), random_state=0, n_threads=threads)
    marks, t0 = {}, time.perf_counter()
    base = rss_mb()
    for _ in range(0, rows, 10_000):
        test.update(rng.standard_normal((10_000, 10)))
        if test.t_ in (100_000, 1_000_000, 10_000_000) or test.t_ == rows:
            marks[test.t_] = rss_mb()
    seconds = time.perf_counter() - t0
    print(f"\nMemory over {rows:,} rows (blocks of 10^4, default test, d = 10, m = {test.landmarks_.shape[0]}):")
    print(f"RSS before {base:.1f} MB; " + "; ".join(f"t = {t:,}: {v:.1f} MB" for t, v in sorted(marks.items())))
    rate = rows / seconds
    print(f"peak RSS {peak_rss_mb():.1f} MB; {rate:,.0f} rows/s ({load_average()}); wealth {test.log_wealth_:.3g}")


# --------------------------------------------------------------------------- looks


def run_looks(streams: int, look_rows: int, looks: int, threads: int) -> None:
    import nystrom_kme as nk

    path = OUT / "sequential_looks.jsonl"
    done = {r["seed"] for r in results(path)}
    rng0 = np.random.default_rng(4550)
    reference = rng0.standard_normal((20_000, 2))
    sample = reference[:1000]  # the fixed-sample test's reference rows
    online = nk.OnlineDriftDetector(reference, ert=10_000, window_size=WINDOW, random_state=0, n_threads=threads)
    for seed in range(streams):
        if seed in done:
            continue
        rng = np.random.default_rng([4551, seed])
        X = rng.standard_normal((look_rows * looks, 2))
        fixed = [
            bool(nk.two_sample_test(X[: k * look_rows], sample, random_state=seed, n_threads=threads).reject)
            for k in range(1, looks + 1)
        ]
        first = _first_alarm(online_max(online, X), online.threshold_)
        test = nk.SequentialDriftTest(reference, random_state=seed, n_threads=threads)
        rejected = test.update(X).rejection_time
        append(
            path,
            {"seed": seed, "look_rows": look_rows, "fixed": fixed, "online": first, "sequential": rejected},
        )
        print("looks", seed, sum(fixed), first, rejected, flush=True)


def report_looks(figure: bool) -> None:
    rec = results(OUT / "sequential_looks.jsonl")
    if not rec:
        return
    L, looks = rec[0]["look_rows"], len(rec[0]["fixed"])
    k = np.arange(1, looks + 1)
    fixed = np.mean([np.maximum.accumulate(r["fixed"]) for r in rec], axis=0)
    online = np.mean([[r["online"] is not None and r["online"] <= j * L for j in k] for r in rec], axis=0)
    seq = np.mean([[r["sequential"] is not None and r["sequential"] <= j * L for j in k] for r in rec], axis=0)
    print(f"\nFalse alarms by the k-th look (a look every {L} rows), {len(rec)} null streams, d = 2:")
    print("| looks | fixed-sample test at every look | online detector (ert = 10^4) | sequential test |")
    print("|---|---|---|---|")
    for j in (1, 2, 5, 10, 20, 30, 40):
        if j <= looks:
            print(f"| {j} | {fixed[j - 1]:.3f} | {online[j - 1]:.3f} | {seq[j - 1]:.3f} |")
    if not figure:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 3.8))
    ax.plot(k, fixed, marker="o", ms=3, label="fixed-sample test, re-run at every look")
    ax.plot(k, online, marker="s", ms=3, label="OnlineDriftDetector (ert = 10⁴ rows)")
    ax.plot(k, seq, marker="^", ms=3, label="SequentialDriftTest")
    ax.axhline(ALPHA, color="grey", ls="--", lw=1, label="α = 0.05")
    ax.set_xlabel(f"looks (one every {L} rows)")
    ax.set_ylabel("P(a false alarm so far)")
    ax.set_title(f"No drift: {len(rec)} streams, N(0, I₂) against its reference")
    ax.legend(fontsize=8, loc="upper left")
    ax.set_ylim(0, max(0.35, float(fixed.max()) + 0.05))
    fig.tight_layout()
    FIGURE.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(FIGURE, dpi=110)
    print(f"figure: {FIGURE}")


# --------------------------------------------------------------------------- main


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for flag in ("level", "nulls", "delay", "betting", "speed", "memory", "looks", "report"):
        p.add_argument(f"--{flag}", action="store_true")
    p.add_argument("--streams", type=int, default=2000)
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--late", type=int, default=5000)
    p.add_argument("--short", type=int, default=4000)
    p.add_argument("--look-rows", type=int, default=50)
    p.add_argument("--window", type=int, default=WINDOW, help="--delay: the online detector's window")
    p.add_argument("--looks-count", type=int, default=30)
    p.add_argument("--memory-rows", type=int, default=10_000_000)
    p.add_argument("--figure", action="store_true", help="with --report: draw the looks figure")
    args = p.parse_args()
    print(machine(), "|", utc_now())
    if args.level:
        run_level(args.streams, args.rows, args.threads)
    if args.nulls:
        run_nulls(args.streams, args.rows, args.threads)
    if args.delay:
        run_delay(args.reps, args.late, args.short, args.threads, args.window)
    if args.betting:
        run_betting(args.reps, args.late, args.threads)
        report_betting()
    if args.speed:
        run_speed(args.threads)
    if args.memory:
        run_memory(args.memory_rows, args.threads)
    if args.looks:
        run_looks(args.streams, args.look_rows, args.looks_count, args.threads)
    if args.looks or args.report:
        report_looks(figure=args.looks or args.figure)
    if args.report or args.level or args.nulls or args.delay:
        report_level()
        report_nulls()
        report_delay()
        report_betting()


if __name__ == "__main__":
    main()
