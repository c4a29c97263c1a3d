"""Landmark policies on the paper's Section 6.1 mixture: exact error vs m and vs time.

For each policy and n, fits NystromKME(sampler=policy) over a grid of m and
records the exact RKHS error ||mu - mu_hat_m|| (closed form, Appendix G) and the
wall time of the fit (landmark selection + weights). Writes
``bench/out/samplers.csv`` and ``bench/out/samplers.png`` and prints, as Markdown,
the smallest m on the grid whose mean error is within 10% of the empirical
estimator's error (paper eq. 2, all n points), with the fit time at that m.

    python -m bench.samplers --quick      # n = 10^4, short grid, ~1-2 minutes
    python -m bench.samplers              # n = 10^4 and 10^5

Speed mode (issue 13): the fit time of every sampler at one (n, m, d), each sampler in
a fresh process (its own peak RSS), ratios to the uniform fit of the same build, and
optionally an older build in the same run (``--before``: a folder holding another
``nystrom_kme`` package, put first on PYTHONPATH; ``--after`` likewise for the build
timed, by default the installed one):

    python -m bench.samplers --speed --n 100000 --m 1000 --d 10 \
        --before /work/main/.venv/lib/python3.11/site-packages

Policies that keep an n x m factor (the pivoted Cholesky family) are capped at
m = 1024 for n = 10^5 (0.8 GB); herding uses 10^4 random candidates at n = 10^5
(its target mu_hat costs O(n_c n d)); RLS is capped at m = 512 there (its
dictionary costs O(n m^2)).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

import nystrom_kme as nk
from bench import figures
from bench.harness import OUT, ROOT, RssPeak, load_average, machine, peak_rss_mb, utc_now
from nystrom_kme import sampling as S
from nystrom_kme.datasets import GaussianMixture

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


def run(
    n: int, grid: list[int], names: list[str], seeds: int, writer: csv.writer, rows: list[dict]
) -> dict[str, float]:
    mixture = GaussianMixture(8, 10, random_state=0)
    X = mixture.sample(n, random_state=1)
    t0 = time.perf_counter()
    emp = nk.EmpiricalKME("gaussian", random_state=0).fit(X)
    sigma = float(emp.kernel_.bandwidth)
    err_emp = mixture.embedding_error(X, emp.weights_, sigma)
    print(f"n={n}: sigma={sigma:.4f}, empirical error {err_emp:.4e} ({time.perf_counter() - t0:.1f} s)", flush=True)
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
                row = {
                    "policy": name,
                    "n": n,
                    "m": m,
                    "seed": seed,
                    "m_used": len(est.weights_),
                    "error": err,
                    "time_s": elapsed,
                    "empirical_error": err_emp,
                }
                writer.writerow(row.values())
                rows.append(row)
            errors = [r["error"] for r in rows if r["policy"] == name and r["n"] == n and r["m"] == m]
            print(f"  {name:28s} m={m:5d} err={np.mean(errors):.3e} t={elapsed:.2f}s", flush=True)
    return {"empirical": err_emp}


def summary(rows: list[dict], n: int, names: list[str], err_emp: float) -> list[str]:
    lines = [
        f"n = {n}, empirical error {err_emp:.3e}; target: error <= 1.1 x empirical",
        "",
        "| policy | m needed | fit time at that m (s) | error at that m |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name in names:
        m, m_max = figures.smallest_m_within(rows, "n", n, name, err_emp)
        if m is None:
            lines.append(f"| {name} | > {m_max or '-'} | - | - |")
            continue
        at = [r for r in rows if r["n"] == n and r["policy"] == name and r["m"] == m]
        lines.append(
            f"| {name} | {m} | {np.mean([r['time_s'] for r in at]):.3f} | {np.mean([r['error'] for r in at]):.3e} |"
        )
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


# --------------------------------------------------------------------------- speed mode

#: Policies of the speed mode: every sampler name (bless = rls), herding also with 10^4
#: random candidates (its mu_hat target costs O(n_candidates n d)) and with all rows as
#: candidates but a Nystrom target on 4m uniform landmarks (O(n 4m d)).
SPEED_NAMES = (
    "uniform",
    "rpcholesky",
    "block-rpcholesky",
    "greedy-cholesky",
    "dpp-greedy",
    "rls",
    "cortes-scott",
    "herding-10k",
    "herding-target",
    "herding",
)


def speed_policy(name: str, m: int) -> object:
    if name == "herding-10k":
        return S.KernelHerding(n_candidates=10_000)
    if name == "herding-target":
        return S.KernelHerding(target_landmarks=4 * m)
    return S.resolve_sampler(name)


def speed_worker(name: str, n: int, m: int, d: int, repeats: int) -> None:
    """Times NystromKME(sampler=name).fit in this process; prints one JSON line."""
    X = GaussianMixture(8, d, random_state=0).sample(n, random_state=1)
    # median heuristic on the first 1000 rows, in numpy: the same kernel for every build
    sub = X[:1000]
    sq = ((sub[:, None, :] - sub[None, :, :]) ** 2).sum(-1)
    sigma = float(np.sqrt(0.5 * np.median(sq[np.triu_indices(len(sub), 1)])))
    kernel = nk.Gaussian(sigma)
    nk.NystromKME(kernel, n_landmarks=10, random_state=0).fit(X[:1000])  # warm-up: threads, imports
    times = []
    with RssPeak() as peak:
        for seed in range(repeats):
            start = time.perf_counter()
            est = nk.NystromKME(kernel, n_landmarks=m, sampler=speed_policy(name, m), random_state=seed).fit(X)
            times.append(time.perf_counter() - start)
    print(
        json.dumps(
            {
                "name": name,
                "times": times,
                "median": statistics.median(times),
                "m_used": len(est.weights_),
                "rss_start_mb": peak.start_mb,
                "rss_peak_mb": peak.peak_mb,
                "rss_growth_mb": peak.growth_mb,
                "ru_maxrss_mb": peak_rss_mb(),
                "module": nk._core.__file__,
            }
        )
    )


def run_speed_worker(pythonpath: str, name: str, n: int, m: int, d: int, repeats: int, timeout: float) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = pythonpath
    command = [sys.executable, "-m", "bench.samplers", "--worker", name, str(n), str(m), str(d), str(repeats)]
    try:
        out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"name": name, "error": f"timeout after {timeout:.0f} s"}
    if out.returncode != 0:
        return {"name": name, "error": (out.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def speed(args: argparse.Namespace) -> None:
    n = (args.n or [100_000])[0]
    m, d = args.m, args.d
    names = args.policies or list(SPEED_NAMES)
    # "after": the nystrom_kme this interpreter imports (the installed build), or --after
    builds = [("after", args.after or str(Path(nk.__file__).resolve().parent.parent))]
    if args.before:
        builds.append(("before", args.before))
    print(f"# samplers speed: n={n}, m={m}, d={d}, float64, {utc_now()}\n# {machine()}", flush=True)
    results: dict[tuple[str, str], dict] = {}
    # uniform first and last in each build: the load drift shows in the two values
    order = ["uniform"] + [x for x in names if x != "uniform"] + ["uniform"]
    for name in order:
        for build, path in builds:
            repeats = args.repeats if build == "after" else args.repeats_before
            if build == "before" and name in args.skip_before:
                continue
            r = run_speed_worker(path, name, n, m, d, repeats, args.timeout)
            key = (build, name)
            if name == "uniform" and key in results and "median" in r:
                r["times"] = results[key]["times"] + r["times"]
                r["median"] = statistics.median(r["times"])
            if name == "uniform" and key not in results and "module" in r:
                print(f"# {build}: {r['module']}")
            results[key] = r
            print(
                f"{build:6s} {name:18s} "
                + (
                    f"median {r['median']:.3f} s {[f'{t:.3f}' for t in r['times']]} "
                    f"peak RSS {r['rss_peak_mb']:.0f} MB (+{r['rss_growth_mb']:.0f})"
                    if "median" in r
                    else r["error"]
                )
                + f"  [{load_average()}]",
                flush=True,
            )
    lines = [
        "",
        "| sampler | after s | after / uniform | peak RSS MB (growth) |"
        + (" before s | before / uniform | speed-up |" if args.before else ""),
        "| --- | ---: | ---: | ---: |" + (" ---: | ---: | ---: |" if args.before else ""),
    ]
    u = {b: results.get((b, "uniform"), {}).get("median") for b, _ in builds}
    for name in names:
        a = results.get(("after", name), {})
        row = f"| {name} | "
        row += (
            f"{a['median']:.3f} | {a['median'] / u['after']:.1f}× | "
            f"{a['rss_peak_mb']:.0f} (+{a['rss_growth_mb']:.0f}) |"
            if "median" in a
            else f"{a.get('error', '-')} | - | - |"
        )
        if args.before:
            b = results.get(("before", name), {})
            if "median" in b:
                row += f" {b['median']:.3f} | {b['median'] / u['before']:.1f}× |"
                row += f" {b['median'] / a['median']:.1f}× |" if "median" in a else " - |"
            else:
                row += f" {b.get('error', 'not run')} | - | - |"
        lines.append(row)
    print("\n".join(lines))
    print(f"# finished {utc_now()}, {load_average()}")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        name, n, m, d, repeats = sys.argv[2:7]
        speed_worker(name, int(n), int(m), int(d), int(repeats))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 10^4, short grid, 2 seeds")
    parser.add_argument("--n", type=int, nargs="*", help="sample sizes (default 10^4 10^5)")
    parser.add_argument("--seeds", type=int, help="seeds per random policy (default 3)")
    parser.add_argument("--policies", nargs="*", help="subset of policies")
    parser.add_argument("--out", default=str(OUT))
    parser.add_argument("--speed", action="store_true", help="fit time of every sampler")
    parser.add_argument("--m", type=int, default=1000, help="speed mode: landmarks")
    parser.add_argument("--d", type=int, default=10, help="speed mode: dimension")
    parser.add_argument("--repeats", type=int, default=3, help="speed mode: fits per sampler")
    parser.add_argument(
        "--repeats-before", type=int, default=1, help="speed mode: fits per sampler of the --before build"
    )
    parser.add_argument("--before", help="speed mode: folder holding the older nystrom_kme")
    parser.add_argument(
        "--after", help="speed mode: folder holding the nystrom_kme to time (default: the one this interpreter imports)"
    )
    parser.add_argument(
        "--skip-before", nargs="*", default=[], help="speed mode: samplers not run with the --before build"
    )
    parser.add_argument("--timeout", type=float, default=900, help="speed mode: s per worker")
    args = parser.parse_args()
    if args.speed:
        speed(args)
        return
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
            grid = (
                [50, 100, 150, 200, 250, 300, 400]
                if args.quick
                else [16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048]
            )
            grid = [m for m in grid if m <= n]
            info = run(n, grid, names, seeds, writer, rows)
            tables += summary(rows, n, names, info["empirical"]) + [""]
    plot(rows, ns, names, out / "samplers.png")
    threads = os.environ.get("OMP_NUM_THREADS", str(os.cpu_count()))
    print(f"\n## Landmark policies (python -m bench.samplers{' --quick' if args.quick else ''}, {threads} threads)\n")
    print("\n".join(tables))
    print(f"CSV: {out / 'samplers.csv'}\nPlot: {out / 'samplers.png'}")


if __name__ == "__main__":
    main()
