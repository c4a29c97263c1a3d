"""Landmark policies on the paper's Section 6.1 mixture: exact error vs m and vs time.

For each policy and n, fits NystromKME(sampler=policy) over a grid of m and
records the exact RKHS error ||mu - mu_hat_m|| (closed form, Appendix G) and the
wall time of the fit (landmark selection + weights). Writes
``bench/out/samplers.csv`` and ``bench/out/samplers.png`` and prints, as Markdown,
the smallest m on the grid whose mean error is within 10% of the empirical
estimator's error (paper eq. 2, all n points), with the fit time at that m.

    python -m bench.samplers --quick      # n = 10^4, short grid, ~1-2 minutes
    python -m bench.samplers              # n = 10^4 and 10^5

Policies that keep an n x m factor (the pivoted Cholesky family) are capped at
m = 1024 for n = 10^5 (0.8 GB); herding uses 10^4 random candidates at n = 10^5
(its target mu_hat costs O(n_c n d)); RLS is capped at m = 512 there (its
dictionary costs O(n m^2)).
"""

from __future__ import annotations

import argparse
import csv
import os
import time
from pathlib import Path

import numpy as np
import nystrom_kme as nk
from nystrom_kme import sampling as S
from nystrom_kme.datasets import GaussianMixture

from bench import figures
from bench.harness import OUT

DETERMINISTIC = {"greedy-cholesky", "dpp-greedy"}


def policy_for(name: str, n: int) -> object:
    if name == "herding" and n > 20_000:
        return S.KernelHerding(n_candidates=10_000)
    return S.resolve_sampler(name)


def m_cap(name: str, n: int) -> int:
    if n > 20_000 and name in ("rpcholesky", "block-rpcholesky", "greedy-cholesky", "dpp-greedy"):
        return 1024
    if n > 20_000 and name in ("rls", "bless"):
        return 512
    return n


def run(n: int, grid: list[int], names: list[str], seeds: int, writer: csv.writer,
        rows: list[dict]) -> dict[str, float]:
    mixture = GaussianMixture(8, 10, random_state=0)
    X = mixture.sample(n, random_state=1)
    t0 = time.perf_counter()
    emp = nk.EmpiricalKME("gaussian", random_state=0).fit(X)
    sigma = float(emp.kernel_.bandwidth)
    err_emp = mixture.embedding_error(X, emp.weights_, sigma)
    print(f"n={n}: sigma={sigma:.4f}, empirical error {err_emp:.4e} "
          f"({time.perf_counter() - t0:.1f} s)", flush=True)
    kernel = nk.Gaussian(sigma)
    for name in names:
        for m in grid:
            if m > m_cap(name, n):
                continue
            for seed in range(1 if name in DETERMINISTIC else seeds):
                policy = policy_for(name, n)
                start = time.perf_counter()
                est = nk.NystromKME(kernel, n_landmarks=m, sampler=policy, random_state=seed).fit(X)
                elapsed = time.perf_counter() - start
                err = mixture.embedding_error(est.landmarks_, est.weights_, sigma)
                row = {"policy": name, "n": n, "m": m, "seed": seed, "m_used": len(est.weights_),
                       "error": err, "time_s": elapsed, "empirical_error": err_emp}
                writer.writerow(row.values())
                rows.append(row)
            print(f"  {name:28s} m={m:5d} err={np.mean([r['error'] for r in rows if r['policy'] == name and r['n'] == n and r['m'] == m]):.3e}"
                  f" t={elapsed:.2f}s", flush=True)
    return {"empirical": err_emp}


def summary(rows: list[dict], n: int, names: list[str], err_emp: float) -> list[str]:
    lines = [f"n = {n}, empirical error {err_emp:.3e}; target: error <= 1.1 x empirical",
             "", "| policy | m needed | fit time at that m (s) | error at that m |",
             "| --- | ---: | ---: | ---: |"]
    for name in names:
        m, m_max = figures.smallest_m_within(rows, "n", n, name, err_emp)
        if m is None:
            lines.append(f"| {name} | > {m_max or '-'} | - | - |")
            continue
        at = [r for r in rows if r["n"] == n and r["policy"] == name and r["m"] == m]
        lines.append(f"| {name} | {m} | {np.mean([r['time_s'] for r in at]):.3f} | "
                     f"{np.mean([r['error'] for r in at]):.3e} |")
    return lines


def plot(rows: list[dict], ns: list[int], names: list[str], path: Path) -> None:
    plt = figures.pyplot()
    fig, axes = plt.subplots(len(ns), 2, figsize=(12, 4.5 * len(ns)), squeeze=False)
    for i, n in enumerate(ns):
        for name in names:
            sub = [r for r in rows if r["n"] == n and r["policy"] == name]
            ms = sorted({r["m"] for r in sub})
            if not ms:
                continue
            err = [np.mean([r["error"] for r in sub if r["m"] == m]) for m in ms]
            tim = [np.mean([r["time_s"] for r in sub if r["m"] == m]) for m in ms]
            axes[i, 0].loglog(ms, err, "o-", label=name, ms=3)
            axes[i, 1].loglog(tim, err, "o-", label=name, ms=3)
        emp = next(r["empirical_error"] for r in rows if r["n"] == n)
        for ax, xl in zip(axes[i], ("landmarks m", "fit time (s)")):
            ax.axhline(emp, color="k", ls="--", lw=1, label="empirical (all n)")
            ax.set_xlabel(xl)
            ax.set_ylabel("exact error ||mu - mu_hat||")
            ax.set_title(f"n = {n}, d = 10 mixture")
            ax.grid(True, which="both", alpha=0.3)
        axes[i, 0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 10^4, short grid, 2 seeds")
    parser.add_argument("--n", type=int, nargs="*", help="sample sizes (default 10^4 10^5)")
    parser.add_argument("--seeds", type=int, help="seeds per random policy (default 3)")
    parser.add_argument("--policies", nargs="*", help="subset of policies")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    ns = args.n or ([10_000] if args.quick else [10_000, 100_000])
    seeds = args.seeds or (2 if args.quick else 3)
    names = args.policies or [p for p in S.SAMPLER_NAMES if p != "bless"]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    tables: list[str] = []
    with open(out / "samplers.csv", "w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["policy", "n", "m", "seed", "m_used", "error", "time_s", "empirical_error"])
        for n in ns:
            grid = ([50, 100, 150, 200, 250, 300, 400] if args.quick else
                    [16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048])
            grid = [m for m in grid if m <= n]
            info = run(n, grid, names, seeds, writer, rows)
            tables += summary(rows, n, names, info["empirical"]) + [""]
    plot(rows, ns, names, out / "samplers.png")
    threads = os.environ.get("OMP_NUM_THREADS", str(os.cpu_count()))
    print(f"\n## Landmark policies (python -m bench.samplers{' --quick' if args.quick else ''}, "
          f"{threads} threads)\n")
    print("\n".join(tables))
    print(f"CSV: {out / 'samplers.csv'}\nPlot: {out / 'samplers.png'}")


if __name__ == "__main__":
    main()
