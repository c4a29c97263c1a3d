"""Figure 1 of the paper (Section 6.1): exact embedding error vs m on a Gaussian mixture.

rho = (1/8) sum_i N(c_i, I_10), c_i ~ N(0, 5 I) (fixed: the same distribution for
every n and trial); Gaussian kernel with sigma = median inter-point distance of a
random subset of 1000 points (computed once, from a fixed draw of rho); for each
n, each trial draws X ~ rho^n afresh and records the exact error ||mu - mu_hat||
(closed forms of Appendix G, `GaussianMixture.embedding_error`) of

  * the empirical estimator (1/n) sum_i phi(x_i)            -> policy "empirical"
  * the Nyström estimator with m uniform landmarks          -> policy "uniform"
  * other landmark policies of nystrom_kme (same weights alpha = K_m^+ K_mn 1/n):
    by default the paper's greedy comparisons, Cortes & Scott ("cortes-scott")
    and L. Chen et al. 2018's greedy DPP MAP ("dpp-greedy"); only for n <= 10^4
    as in the paper ("settings where n is moderate"), and with fewer trials.

Writes bench/out/figure1.csv (one row per fit) and bench/out/figure1.png (+ copy in
docs/figures/), and prints the Markdown summary: per n, the smallest grid m whose
mean Nyström error is within 10% of the mean empirical error, next to
sqrt(n) log sqrt(n).

    python -m bench.figure1 --quick      # ~2-3 minutes
    python -m bench.figure1              # ~15 minutes on 2 cores (see --help for trials)

The paper used 100 trials everywhere. On a 2-core machine the default full run uses
100 trials for n = 10^3, 10^4, 20 for n = 10^5 (whose empirical error alone is a
10^10-term kernel sum per trial) and 10 for the other policies; all are options.
The paper's third comparison (Keriven et al. 2017, sketching) is not in nystrom_kme.
"""

from __future__ import annotations

import argparse
import functools
import time
from pathlib import Path

import numpy as np

import nystrom_kme as nk
from bench import figures
from bench.harness import machine
from nystrom_kme.datasets import GaussianMixture

FIELDS = ["n", "policy", "m", "trial", "m_used", "error", "time_s", "sigma"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--quick", action="store_true", help="n = 10^3, 10^4 (10^5 with 2 trials), 8-point grid, 5 trials, 3 for others"
    )
    p.add_argument("--n", type=int, nargs="*", help="sample sizes (default 1000 10000 100000)")
    p.add_argument("--trials", type=int, help="trials for n <= 10^4 (default 100; quick 5)")
    p.add_argument("--trials-large", type=int, help="trials for n > 10^4 (default 20; quick 2)")
    p.add_argument("--trials-others", type=int, help="trials for the other policies (default 10; quick 3)")
    p.add_argument(
        "--policies",
        nargs="*",
        default=["cortes-scott", "dpp-greedy"],
        help="other landmark policies besides uniform (default: cortes-scott dpp-greedy)",
    )
    p.add_argument("--others-max-n", type=int, default=10_000, help="run other policies only for n <= this")
    p.add_argument("--others-max-m", type=int, default=2048, help="largest m for the other policies")
    p.add_argument("--grid-points", type=int, help="points of the log m grid 10..4096 (default 16; quick 8)")
    p.add_argument("--out", default=str(figures.OUT))
    a = p.parse_args()

    ns = a.n or [1_000, 10_000, 100_000]
    trials = a.trials or (5 if a.quick else 100)
    trials_large = a.trials_large or (2 if a.quick else 20)
    trials_others = a.trials_others or (3 if a.quick else 10)
    grid_points = a.grid_points or (8 if a.quick else 16)
    grid = figures.m_grid(10, 4096, grid_points)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)

    mixture = GaussianMixture(8, 10, random_state=0)
    sigma = nk.median_distance(mixture.sample(1000, random_state=12345), random_state=0)
    kernel = nk.Gaussian(sigma)
    print(f"# Figure 1 — {machine()}; sigma = {sigma:.4f} (median distance, 1000 points); grid {grid}", flush=True)

    t_start = time.perf_counter()
    csv_path = out / "figure1.csv"
    with figures.CsvRows(csv_path, FIELDS) as table:
        record = functools.partial(table.add, sigma=sigma)
        for n in ns:
            n_trials = trials if n <= 10_000 else trials_large
            others = [q for q in a.policies if n <= a.others_max_n]
            t_n = time.perf_counter()
            for t in range(n_trials):
                X = mixture.sample(n, random_state=1_000_000 * (n % 997) + t)
                t0 = time.perf_counter()
                err = mixture.embedding_error(X, np.full(n, 1.0 / n), sigma)
                record(n=n, policy="empirical", m=n, trial=t, m_used=n, error=err, time_s=time.perf_counter() - t0)
                for policy in ["uniform"] + (others if t < trials_others else []):
                    for m in grid:
                        if m > n or (policy != "uniform" and m > a.others_max_m):
                            continue
                        t0 = time.perf_counter()
                        est = nk.NystromKME(kernel, n_landmarks=m, sampler=policy, random_state=t).fit(X)
                        elapsed = time.perf_counter() - t0
                        err = mixture.embedding_error(est.landmarks_, est.weights_, sigma)
                        record(n=n, policy=policy, m=m, trial=t, m_used=len(est.weights_), error=err, time_s=elapsed)
                table.flush()
            print(
                f"n = {n}: {n_trials} trials (others: {min(n_trials, trials_others) if others else 0}) "
                f"in {time.perf_counter() - t_n:.0f} s",
                flush=True,
            )

    rows = table.rows
    policies = ["uniform", *a.policies]
    lines = [
        "",
        f"Total {time.perf_counter() - t_start:.0f} s. CSV: {csv_path}",
        "",
        ("| n | trials | empirical error (mean) | policy | smallest m within 10% | √n log √n | error at that m |"),
        "|---|---|---|---|---|---|---|",
    ]
    for n in ns:
        emp = [r["error"] for r in rows if r["n"] == n and r["policy"] == "empirical"]
        target = float(np.mean(emp))
        for policy in policies:
            sub = [r for r in rows if r["n"] == n and r["policy"] == policy]
            if not sub:
                continue
            m_cell, at = figures.smallest_m_cells(rows, "n", n, policy, target)
            lines.append(
                f"| {n} | {len({r['trial'] for r in sub})} | {target:.3e} | {policy} | "
                f"{m_cell} | {figures.sqrt_log(n)} | {at} |"
            )
    print("\n".join(lines), flush=True)

    panels = [(n, policies, n, f"n = {n:,}  (d = 10, p = 8 mixture)") for n in ns]
    figures.plot_figure(
        rows,
        "n",
        panels,
        (5.2, 4.4),
        "Exact error of the empirical and Nyström embeddings: mean, 5–95% band",
        "figure1.png",
        out,
    )


if __name__ == "__main__":
    main()
