"""What ``n_landmarks="auto"`` costs against a plain fit, and how far its m is from the
smallest sufficient one (issue 43, item 2), on the tables of ``bench/search_tables.py``.

For each table, n and seed:

  m            the m the search returns, its stop and its mode ("exact" or "validation")
  search/fit   process CPU time (``time.process_time()``, every thread of the process) of
               ``NystromKME(n_landmarks="auto")`` over a plain ``NystromKME(n_landmarks=m)``
               fit with the same kernel (the plain fit repeated until 0.2 s, its mean)
  m/m*         m* = the smallest m whose *returned* weights (the core's solve on the first
               m landmarks of the search's own stream) meet the target tol sigma, measured
               exactly: ||mu_hat_n||^2 over every pair, sigma the sample's
               ((mean k(x,x) - ||mu_hat_n||^2) / (n - 1))^(1/2); found by a geometric scan
               and bisection below the returned m (up to ``--mstar-up-to`` rows)
  e/sigma      the exact distance of the returned weights over sigma (target 0.458)

For the near-constant kernel the plain fit is at m = the number of distinct rows (a plateau
should be decided within 2 such fits).

    python -m bench.search_cost                     # every table, n = 10^4 and 10^5, 3 seeds
    python -m bench.search_cost --tables zip --n 20000 --seeds 5
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
import warnings

import numpy as np

import nystrom_kme as nk
from bench.harness import machine, utc_now
from bench.search_tables import TABLES, Table
from nystrom_kme import _core


def _cpu(fn) -> float:  # type: ignore[no-untyped-def]
    """Mean process CPU seconds of ``fn()``, repeated until 0.2 s."""
    total, count = 0.0, 0
    while total < 0.2 or count == 0:
        t = time.process_time()
        fn()
        total += time.process_time() - t
        count += 1
    return total / count


def _returned_error(X: np.ndarray, idx: np.ndarray, core: _core.Kernel, N2: float) -> float:
    """||mu_hat_n - mu_alpha||, alpha the core's solve on the rows idx (every pair exact)."""
    from nystrom_kme._solve import solve_weights

    n = len(X)
    L = np.ascontiguousarray(X[idx])
    s = np.asarray(_core.kernel_row_sums(L, X, core)) / n
    a = solve_weights(L, s, core, 0, solver="auto", rcond=0.0)[0][:, 0]
    e2 = N2 - 2.0 * float(a @ s) + float(a @ np.asarray(_core.kernel_matrix(L, L, core)) @ a)
    return math.sqrt(max(e2, 0.0))


def smallest_sufficient(X: np.ndarray, idx: np.ndarray, core: _core.Kernel, N2: float, target: float) -> int | None:
    """m*: the smallest prefix of idx whose returned weights meet ``target`` (geometric scan
    at 60 points, then bisection; None when no prefix up to idx.size does)."""
    prev = 0
    for m in sorted({int(round(x)) for x in np.geomspace(1, idx.size, 60)}):
        if _returned_error(X, idx[:m], core, N2) <= target:
            lo, hi = prev, m
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if _returned_error(X, idx[:mid], core, N2) <= target:
                    hi = mid
                else:
                    lo = mid
            return hi
        prev = m
    return None


def trial(table: Table, n: int, seed: int, mstar_up_to: int) -> dict:
    X = np.ascontiguousarray(table.sample(n, np.random.default_rng(1000 + seed)), dtype=np.float64)
    kernel = nk.Gaussian(table.bandwidth_factor * nk.median_distance(X, random_state=seed))
    box: dict = {}

    def search() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            box["est"] = nk.NystromKME(kernel, n_landmarks="auto", random_state=seed).fit(X)

    t = time.process_time()
    search()
    search_s = time.process_time() - t
    est = box["est"]
    rep = est.n_landmarks_report_
    distinct = len(np.unique(X, axis=0))
    m_plain = distinct if table.bandwidth_factor > 10 else rep.n_landmarks
    fit_s = _cpu(lambda: nk.NystromKME(kernel, n_landmarks=m_plain, random_state=seed).fit(X))
    row = {
        "m": rep.n_landmarks,
        "stop": rep.stop,
        "mode": rep.validation,
        "certified": rep.certified,
        "ratio": search_s / fit_s,
        "search_s": search_s,
        "fit_s": fit_s,
        "distinct": distinct,
        "m_star": None,
        "e_sigma": math.nan,
    }
    if n <= mstar_up_to:
        core = kernel.to_core()
        N2 = float(_core.kernel_total_sum(X, X, core)) / n**2
        sigma = math.sqrt(max(1.0 - N2, 0.0) / (n - 1))  # k(x, x) = 1
        idx = np.asarray(est.landmark_indices_)
        row["e_sigma"] = _returned_error(X, idx, core, N2) / sigma if sigma > 0 else math.nan
        row["m_star"] = smallest_sufficient(X, idx, core, N2, rep.tol * sigma) if sigma > 0 else None
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tables", nargs="*", default=None, help="table names (prefixes) of bench/search_tables.py")
    p.add_argument("--n", type=int, nargs="*", default=[10_000, 100_000])
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--mstar-up-to", type=int, default=100_000, help="m* only for n up to this")
    args = p.parse_args()
    print(f"# bench.search_cost, {utc_now()}; {machine()}; SIMD {nk.simd_level()}\n")
    print(
        "| table | n | seeds | m: median [min, max] | mode | stops | certified | search/fit CPU: median [max] "
        "| search s (median) | m/m*: median [max] | e/σ max |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for table in TABLES:
        if args.tables and not any(table.name.startswith(t) for t in args.tables):
            continue
        sizes = [5000] if table.bandwidth_factor > 10 else args.n
        for n in sizes:
            rows = [trial(table, n, seed, args.mstar_up_to) for seed in range(args.seeds)]
            ms = [r["m"] for r in rows]
            ratios = [r["ratio"] for r in rows]
            mm = [r["m"] / r["m_star"] for r in rows if r["m_star"]]
            stops: dict[str, int] = {}
            for r in rows:
                stops[r["stop"]] = stops.get(r["stop"], 0) + 1
            modes = sorted({r["mode"] for r in rows})
            mm_text = f"{statistics.median(mm):.2f} [{max(mm):.2f}]" if mm else "n/a"
            e_max = max((r["e_sigma"] for r in rows), default=math.nan)
            plain = " (plain fit at the distinct rows)" if table.bandwidth_factor > 10 else ""
            print(
                f"| {table.name}{plain} | {n} | {len(rows)} | {int(statistics.median(ms))} [{min(ms)}, {max(ms)}] "
                f"| {'/'.join(modes)} | {', '.join(f'{k} {v}' for k, v in sorted(stops.items()))} "
                f"| {sum(r['certified'] for r in rows)}/{len(rows)} "
                f"| {statistics.median(ratios):.1f} [{max(ratios):.1f}] "
                f"| {statistics.median(r['search_s'] for r in rows):.2f} | {mm_text} | {e_max:.3f} |",
                flush=True,
            )
    print(f"\nfinished {utc_now()}; {machine()}")


if __name__ == "__main__":
    main()
