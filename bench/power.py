"""Level, power and speed of the aggregated two-sample test (issue: MMD-FUSE power at
Nyström cost), on the aggregated-test papers' problems (bench/problems.py).

Sections (run any subset; results are appended to bench/out/power.jsonl, one line per
repetition, so a long run can be stopped and resumed, and --report reprints the tables):

* ``--level``: type-I error at alpha = 0.05 over ``--level-reps`` repetitions (>= 1000)
  of the Nyström and exact aggregated tests on the three problems under H0 (n = 500 per
  sample) and on scikit-learn's digits split at random into two halves.
* ``--power``: rejection rates over ``--reps`` repetitions (>= 200) at n = 500, 1000,
  2000, 3000 per sample: ours (Nyström, the default "rpcholesky" landmarks), ours exact
  (the reference; the same repetitions, paired), ours with uniform landmarks, ours with
  the geometric grid, ours with MMDAgg's aggregation, ours single-kernel median test and
  ACTT (goodpoints, Domingo-Enrich et al., as the MMD-FUSE experiments call it), next to
  MMD-FUSE's published power (``--methods`` picks a subset).
* ``--median-cases``: where the median-bandwidth test has power (mean shifts and a scale
  change of Gaussians in d = 10 and 50, and perturbed-d1), its rejection rate against the
  aggregated test's, to decide the default of ``two_sample_test``.
* ``--speed``: the aggregated test (Nyström; the exact one once, for scale) and the
  single-kernel default at n = 4000 per sample, d = 10; the aggregated and the
  single-kernel tests at 10^6 per sample, d = 10, B = 200 in the same run, with the
  peak memory each adds.
* ``--figure``: docs/figures/power.png, power against n from the recorded results.

Usage: python -m bench.power [--level] [--power] [--speed] [--figure] [--report]
       [--reps R] [--level-reps R] [--n 500 1000 ...] [--problems ...] [--jobs J]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from bench.harness import OUT, RssPeak, machine, utc_now
from bench.problems import PROBLEMS, PUBLISHED, PUBLISHED_N

RESULTS = OUT / "power.jsonl"
ALPHA = 0.05
POWER_N = (500, 1000, 2000, 3000)
LEVEL_N = 500
METHODS = ("nystrom", "exact", "median", "actt", "nystrom-geometric", "nystrom-uniform", "nystrom-mmdagg")


# --------------------------------------------------------------------------- one repetition


#: Problems where the median bandwidth is a good choice: name -> (d, mean shift per
#: coordinate of Y, standard deviation of Y), X ~ N(0, I_d).
MEDIAN_CASES = {"shift-d10": (10, 0.07, 1.0), "shift-d50": (50, 0.05, 1.0), "scale-d10": (10, 0.0, 1.09)}
MEDIAN_CASES_N = 500


def _data(problem: str, n: int, rep: int, h1: bool) -> tuple[np.ndarray, np.ndarray]:
    names = list(PROBLEMS) + list(MEDIAN_CASES) + ["digits"]
    rng = np.random.default_rng([names.index(problem), n, rep, int(h1)])
    if problem in MEDIAN_CASES:
        d, shift, scale = MEDIAN_CASES[problem]
        return rng.normal(size=(n, d)), rng.normal(size=(n, d)) * scale + shift
    if problem == "digits":
        from sklearn.datasets import load_digits

        Z = load_digits().data.astype(np.float64)
        order = rng.permutation(Z.shape[0])
        half = Z.shape[0] // 2
        return Z[order[:half]], Z[order[half:]]
    return PROBLEMS[problem][0 if h1 else 1](n, rng)


def _actt(X: np.ndarray, Y: np.ndarray, seed: int) -> float:
    """ACTT as the MMD-FUSE experiments run it: g = 4, the 10 Gaussian bandwidths of the
    FUSE grid, uniform weights (goodpoints' Gaussian is exp(-||x - y||^2 / lam^2))."""
    import contextlib
    import io

    from goodpoints.ctt import actt

    import nystrom_kme as nk

    lam = np.array(
        [k.bandwidth for k in nk.KernelCollection(("gaussian",)).resolve(np.concatenate([X, Y]), random_state=seed)]
    )
    with contextlib.redirect_stdout(io.StringIO()):
        res = actt(
            np.ascontiguousarray(X, dtype=np.float64),
            np.ascontiguousarray(Y, dtype=np.float64),
            g=4,
            lam=lam,
            weights=np.full(lam.size, 1.0 / lam.size),
            null_seed=seed,
            statistic_seed=seed,
        )
    return 0.0 if res.rejects else 1.0  # a decision at alpha = 0.05, recorded as a p-value bound


def run_rep(task: tuple) -> dict:
    """One repetition: every requested method on the same data; p-values and seconds."""
    section, problem, n, rep, methods = task
    import nystrom_kme as nk

    X, Y = _data(problem, n, rep, h1=section != "level")
    out = {"section": section, "problem": problem, "n": n, "rep": rep}
    for method in methods:
        start = time.perf_counter()
        if method == "actt":
            p = _actt(X, Y, seed=rep)
        elif method == "median":
            p = nk.two_sample_test(X, Y, kernel="gaussian", random_state=rep, n_threads=1).pvalue
        elif method == "nystrom-mmdagg":
            p = nk.two_sample_test(
                X, Y, kernel=nk.KernelCollection(), aggregation="mmdagg", random_state=rep, n_threads=1
            ).pvalue
        elif method == "nystrom-uniform":
            p = nk.two_sample_test(
                X, Y, kernel=nk.KernelCollection(), landmarks="uniform", random_state=rep, n_threads=1
            ).pvalue
        elif method == "nystrom-geometric":
            p = nk.two_sample_test(
                X, Y, kernel=nk.KernelCollection(grid="geometric"), random_state=rep, n_threads=1
            ).pvalue
        else:
            p = nk.two_sample_test(
                X, Y, kernel=nk.KernelCollection(), method=method, random_state=rep, n_threads=1
            ).pvalue
        out[method] = p
        out[method + "_s"] = time.perf_counter() - start
    return out


def _records() -> list[dict]:
    """The recorded repetitions, one per (section, problem, n, rep), the lines for one
    repetition merged in file order (a later line adds methods or replaces a value)."""
    if not RESULTS.exists():
        return []
    merged: dict[tuple, dict] = {}
    for line in RESULTS.read_text().splitlines():
        r = json.loads(line)
        merged.setdefault((r["section"], r["problem"], r["n"], r["rep"]), {}).update(r)
    return list(merged.values())


def run_tasks(tasks: list[tuple], jobs: int) -> None:
    """Runs the methods of each task that are not recorded yet (resumable; a new method
    adds to the recorded repetitions)."""
    done = {(r["section"], r["problem"], r["n"], r["rep"]): set(r) for r in _records()}
    todo = []
    for section, problem, n, rep, methods in tasks:
        missing = tuple(m for m in methods if m not in done.get((section, problem, n, rep), set()))
        if missing:
            todo.append((section, problem, n, rep, missing))
    print(
        f"{len(tasks) - len(todo)} of {len(tasks)} repetitions already recorded; running {len(todo)} "
        f"on {jobs} process(es)",
        flush=True,
    )
    OUT.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(max_workers=jobs) as pool, RESULTS.open("a") as f:
        for i, rec in enumerate(pool.map(run_rep, todo, chunksize=1)):
            f.write(json.dumps(rec) + "\n")
            f.flush()
            if (i + 1) % 50 == 0:
                print(f"  {i + 1}/{len(todo)} ({utc_now()})", flush=True)


# --------------------------------------------------------------------------- reports


def _binomial_band(reps: int, p: float = ALPHA) -> tuple[float, float]:
    """The central 95% range of the rejection rate of a level-p test over reps repetitions."""
    from scipy.stats import binom

    return binom.ppf(0.025, reps, p) / reps, binom.ppf(0.975, reps, p) / reps


def report_level(records: list[dict]) -> None:
    rows = [r for r in records if r["section"] == "level"]
    if not rows:
        return
    print("\n## Level (alpha = 0.05, H0)\n")
    print("| problem | n per sample | reps | Nystrom | exact | Nystrom, uniform landmarks | 95% binomial band |")
    print("|---|---|---|---|---|---|---|")
    for problem in sorted({r["problem"] for r in rows}):
        sub = [r for r in rows if r["problem"] == problem]
        lo, hi = _binomial_band(len(sub))
        rates = {
            m: (np.mean([r[m] <= ALPHA for r in sub if m in r]) if any(m in r for r in sub) else math.nan)
            for m in ("nystrom", "exact", "nystrom-uniform")
        }
        print(
            f"| {problem} | {sub[0]['n']} | {len(sub)} | {rates['nystrom']:.3f} | {rates['exact']:.3f} | "
            f"{rates['nystrom-uniform']:.3f} | {lo:.3f}-{hi:.3f} |"
        )


def report_median_cases(records: list[dict]) -> None:
    rows = [r for r in records if r["section"] == "median-cases"]
    if not rows:
        return
    print("\n## Where the median bandwidth has power (alpha = 0.05)\n")
    print(
        "| problem | n per sample | reps | median test | aggregated, Nystrom | aggregated - median (paired) | "
        "aggregated, uniform landmarks | aggregated, MMDAgg |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for problem in MEDIAN_CASES:
        sub = [r for r in rows if r["problem"] == problem and "nystrom" in r and "median" in r]
        if not sub:
            continue

        def rate(method: str, sub: list[dict] = sub) -> float:
            have = [r[method] <= ALPHA for r in sub if method in r]
            return float(np.mean(have)) if have else math.nan

        diff = np.mean([(r["nystrom"] <= ALPHA) - (r["median"] <= ALPHA) for r in sub])
        print(
            f"| {problem} | {sub[0]['n']} | {len(sub)} | {rate('median'):.3f} | {rate('nystrom'):.3f} | "
            f"{diff:+.3f} | {rate('nystrom-uniform'):.3f} | {rate('nystrom-mmdagg'):.3f} |"
        )


def report_power(records: list[dict]) -> None:
    rows = [r for r in records if r["section"] == "power"]
    if not rows:
        return
    print("\n## Power (alpha = 0.05)\n")
    print(
        "| problem | n | reps | Nystrom | exact | Nystrom - exact (paired) | Nystrom, uniform landmarks | "
        "median | ACTT | Nystrom, geometric grid | FUSE published | ACTT published | Nystrom s | exact s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for problem in PROBLEMS:
        for n in sorted({r["n"] for r in rows if r["problem"] == problem}):
            sub = [r for r in rows if r["problem"] == problem and r["n"] == n]
            rate = {
                m: (np.mean([r[m] <= ALPHA for r in sub if m in r]) if any(m in r for r in sub) else math.nan)
                for m in METHODS
            }
            both = [r for r in sub if "nystrom" in r and "exact" in r]
            paired = np.mean([(r["nystrom"] <= ALPHA) - (r["exact"] <= ALPHA) for r in both]) if both else math.nan
            pub = PUBLISHED[problem]
            fuse = pub["fuse"][PUBLISHED_N.index(n)] if n in PUBLISHED_N else math.nan
            actt = pub["actt"][PUBLISHED_N.index(n)] if n in PUBLISHED_N else math.nan
            secs = {
                m: statistics.median([r[m + "_s"] for r in sub if m + "_s" in r] or [math.nan])
                for m in ("nystrom", "exact")
            }
            print(
                f"| {problem} | {n} | {len(sub)} | {rate['nystrom']:.3f} | {rate['exact']:.3f} | "
                f"{paired:+.3f} | {rate['nystrom-uniform']:.3f} | {rate['median']:.3f} | {rate['actt']:.3f} | "
                f"{rate['nystrom-geometric']:.3f} | "
                f"{fuse:.3f} | {actt:.3f} | "
                f"{secs['nystrom']:.2f} | {secs['exact']:.2f} |"
            )


def figure(records: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in records if r["section"] == "power"]
    fig, axes = plt.subplots(1, len(PROBLEMS), figsize=(4.2 * len(PROBLEMS), 3.8), sharey=True)
    labels = {
        "nystrom": "ours: aggregated, Nystrom",
        "exact": "ours: aggregated, exact (FUSE)",
        "median": "ours: median bandwidth",
        "actt": "ACTT (goodpoints)",
    }
    shown = tuple(labels)
    for ax, problem in zip(axes, PROBLEMS):
        ns = sorted({r["n"] for r in rows if r["problem"] == problem})
        for method, style in zip(shown, ("o-", "s--", "^:", "d-.")):
            ys = [
                np.mean([r[method] <= ALPHA for r in rows if r["problem"] == problem and r["n"] == n and method in r])
                for n in ns
            ]
            ax.plot(ns, ys, style, label=labels[method])
        ax.plot(PUBLISHED_N, PUBLISHED[problem]["fuse"], "k:", alpha=0.6, label="MMD-FUSE, published")
        ax.set_title(problem)
        ax.set_xlabel("n per sample")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("power at alpha = 0.05")
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="lower center", ncol=len(names), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"\nwrote {path}")


# --------------------------------------------------------------------------- speed


def speed(repeats: int, large: int) -> None:
    """S1: the aggregated test (and the single-kernel default, and the quadratic exact
    FUSE once, for scale) at n = 4000 per sample, d = 10; S2: the aggregated against the
    single-kernel test at ``large`` per sample, d = 10, m = 1000, B = 200, with the peak
    memory each call adds."""
    import nystrom_kme as nk

    print(f"\n## Speed ({utc_now()}; {machine()})\n")
    rng = np.random.default_rng(0)
    X, Y = rng.normal(size=(4000, 10)), rng.normal(size=(4000, 10))
    for label, kwargs, runs in (
        ("aggregated (FUSE, 20 kernels, Nystrom)", {"kernel": nk.KernelCollection()}, repeats),
        ("single kernel (the default)", {}, repeats),
        ("aggregated (FUSE, 20 kernels, exact)", {"kernel": nk.KernelCollection(), "method": "exact"}, 1),
    ):
        nk.two_sample_test(X, Y, random_state=0, **kwargs)  # warm-up
        times = []
        for r in range(runs):
            start = time.perf_counter()
            res = nk.two_sample_test(X, Y, random_state=r, **kwargs)
            times.append(time.perf_counter() - start)
        print(
            f"- {label}, m = {res.n_landmarks}, B = {res.n_permutations}, at n = 4000 per sample, d = 10: "
            f"median {statistics.median(times):.3f} s over {runs} (min {min(times):.3f}, max {max(times):.3f})",
            flush=True,
        )
    X, Y = rng.normal(size=(large, 10)), rng.normal(size=(large, 10))
    elapsed = {}
    for label, kernel in (
        ("single kernel (median Gaussian)", "gaussian"),
        ("aggregated (FUSE, 20 kernels)", nk.KernelCollection()),
    ):
        with RssPeak() as rss:
            start = time.perf_counter()
            res = nk.two_sample_test(X, Y, kernel=kernel, n_landmarks=1000, random_state=0)
            elapsed[label] = time.perf_counter() - start
        print(
            f"- {label} at {large} per sample, d = 10, m = 1000, B = 200: {elapsed[label]:.2f} s, "
            f"peak RSS growth {rss.growth_mb:.0f} MB",
            flush=True,
        )
    ratio = elapsed["aggregated (FUSE, 20 kernels)"] / elapsed["single kernel (median Gaussian)"]
    print(f"- aggregated / single kernel: {ratio:.2f} (target <= 5)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--level", action="store_true")
    ap.add_argument("--power", action="store_true")
    ap.add_argument("--median-cases", action="store_true")
    ap.add_argument("--speed", action="store_true")
    ap.add_argument("--figure", action="store_true")
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--level-reps", type=int, default=1000)
    ap.add_argument("--n", type=int, nargs="+", default=list(POWER_N))
    ap.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    ap.add_argument("--methods", nargs="+", default=list(METHODS))
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--large", type=int, default=10**6, help="per-sample size of the speed comparison")
    args = ap.parse_args()
    print(f"# Aggregated test benchmark\n\n- {utc_now()}; {machine()}", flush=True)
    if args.level:
        tasks = [("level", p, LEVEL_N, r, ("nystrom", "exact")) for p in args.problems for r in range(args.level_reps)]
        tasks += [("level", "digits", 898, r, ("nystrom", "exact")) for r in range(args.level_reps)]
        run_tasks(tasks, args.jobs)
    if args.power:
        tasks = [
            ("power", p, n, r, tuple(args.methods)) for n in args.n for p in args.problems for r in range(args.reps)
        ]
        run_tasks(tasks, args.jobs)
    if args.median_cases:
        tasks = [
            ("median-cases", p, MEDIAN_CASES_N, r, ("nystrom", "median", "nystrom-uniform", "nystrom-mmdagg"))
            for p in MEDIAN_CASES
            for r in range(args.reps)
        ]
        run_tasks(tasks, args.jobs)
    records = _records()
    if args.level or args.power or args.median_cases or args.report:
        report_level(records)
        report_power(records)
        report_median_cases(records)
    if args.figure:
        figure(records, Path(__file__).resolve().parent.parent / "docs" / "figures" / "power.png")
    if args.speed:
        speed(5, args.large)


if __name__ == "__main__":
    main()
