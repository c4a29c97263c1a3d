"""Level, power and cost of ``two_sample_test``'s default against the fixed choices
(issue 27: one test to call), on the suite of bench/problems.py.

Sections (run any subset; each repetition is appended to bench/out/power_suite.jsonl, so a
long run can be stopped and resumed, and --report reprints the tables):

* ``--suite``: rejection rates at alpha = 0.05 over ``--reps`` repetitions (>= 200) of
  every cell of ``SUITE_N`` (the three MMD-FUSE problems at n = 500 ... 3000 per sample;
  mean shift in d = 10 and 50; a scale change in d = 10; Blobs; HDGM; heavy tails; a
  digits class mix), for: the default (``kernel="auto"``), the same test exact (paired,
  up to EXACT_MAX pooled rows), the median-bandwidth Gaussian alone, MMD-FUSE and MMDAgg
  over 20 kernels (Nyström) and MMD-FUSE exact (up to EXACT_MAX pooled rows). Every method
  sees the same data; the table gives the default's margin to the best fixed choice.
* ``--level``: type-I error of the default (and the same test exact where affordable)
  over ``--level-reps`` repetitions (>= 1000) on H0 problems: four at 300-1500 rows per
  sample (the default is exact there since issue 36), one of them (HDGM, n = 1500) beyond
  2048 pooled rows, where every collection test moves bins of rows; and three at 6000 per
  sample, beyond the exact test's 10^4 pooled rows: the default's Nyström branch (1024
  landmarks). ``--cells`` selects among them too.
* ``--sweep``: time and peak memory of the default against the single-kernel test at
  n = 10^3 ... 10^6 per sample (d = 10, B = 200, default m), each call in its own process
  (the peak resident memory of a fresh process, minus that after loading the data), the
  two alternated; ``--sweep-against previous``: against the previous default's landmark
  rule (Nyström, m = max(256, sqrt(N) log sqrt(N))) run by this engine instead.
* ``--wide`` (issue 36): the same methods, plus the default forced to Nyström
  (``method="nystrom"``) and the previous default (issue 27's: Nyström with
  max(256, sqrt(N) log sqrt(N)) landmarks), on the widened suite of
  bench/problems_wide.py (dependence with equal marginals, a ring, periodic densities, a
  sparse shift in d = 50, mixture weights, a local cluster), n = 500 and 2500 per sample.
* ``--scale`` (issue 36): the default against the previous default and against
  m = max(1024, 2 sqrt(N)) (the rule measured and rejected) on the weak-effect cells of
  bench/problems_wide.py at 2 10^4 and 10^5 rows per sample (paired).
* ``--exact-cost``: the exact default's time at the limits of ``method="auto"``
  (two_sample/_plan.py exact_rows: 10^4 pooled rows up to d = 20, fewer beyond), N(0, I)
  rows, all threads, best of two calls after a warm-up.
* ``--figure``: docs/figures/power.png, the suite's power per problem.

Usage: python -m bench.power [--suite] [--wide] [--scale] [--level] [--sweep] [--figure] [--report]
       [--reps R] [--level-reps R] [--cells problem-n ...] [--jobs J]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from bench.harness import OUT, machine, utc_now
from bench.problems import SUITE, SUITE_N
from bench.problems_wide import LARGE, LARGE_N, SUITE42, WIDE, WIDE_N

RESULTS = OUT / "power_suite.jsonl"
ALPHA = 0.05
#: Pooled rows up to which the exact tests run (O(N^2 (d + B)) per kernel).
EXACT_MAX = 2000
#: pooled rows up to which --wide runs the default's own rule exact (issue 36: n <= 5000
#: per sample; about a second at 5000 pooled rows on one thread)
DEFAULT_EXACT_MAX = 10_000
#: method -> what the tables call it
METHODS = {
    "default": "default (kernel='auto')",
    "default-exact": "default, exact",
    "median": "median Gaussian",
    "fuse": "MMD-FUSE (20 kernels, Nystrom)",
    "mmdagg": "MMDAgg (20 kernels, Nystrom)",
    "fuse-exact": "MMD-FUSE exact",
    "nystrom": "default, Nystrom forced",
    "previous": "previous default (m = max(256, paper's))",
    "sqrt": "Nystrom, m = max(1024, 2 sqrt(N))",
    "fuse-median": "the default's rule over 20 kernels",
    "previous-default": "issue 27's default (aggregation='fuse+median')",
}
#: The problems of each section, and their cells (problem -> n per sample).
PROBLEMS = {"suite": SUITE, "level": SUITE, "wide": WIDE, "scale": LARGE, "level42": SUITE42}
CELLS = {"suite": SUITE_N, "wide": WIDE_N, "scale": LARGE_N}
#: The fixed choices the default is held against.
REFERENCES = ("median", "fuse", "mmdagg", "fuse-exact")
#: H0 problems of --level: (problem, n per sample)
LEVEL_CELLS = (
    ("perturbed-d1", 500),
    ("mixture", 500),
    ("digits-mix", 300),
    ("hdgm", 1500),
    ("perturbed-d1", 6000),
    ("mixture", 6000),
    ("hdgm", 6000),
)


#: H0 problems of --level42 (issue 42's default): (problem, n per sample); at 500 the exact
#: test (with ties: Poisson counts; duplicates: digits; d = 100), beyond 10^4 pooled rows
#: the Nystrom branch with its landmarks by kernel
LEVEL42_CELLS = (
    ("perturbed-d1", 500),
    ("poisson-d3", 500),
    ("sparse-variance-d100", 500),
    ("digits-mix", 500),
    ("copula-d20", 6000),
    ("poisson-d3", 6000),
    ("copula-d20", 20_000),
)


def previous_landmarks(n_pooled: int) -> int:
    """The previous default's landmarks (issue 27): max(256, sqrt(N) log sqrt(N))."""
    import nystrom_kme as nk

    return max(256, nk.default_n_landmarks(n_pooled))


def _data(section: str, problem: str, n: int, rep: int, h1: bool) -> tuple[np.ndarray, np.ndarray]:
    problems = PROBLEMS[section]
    rng = np.random.default_rng([list(problems).index(problem), n, rep, int(h1), 2027])
    return problems[problem][0 if h1 else 1](n, rng)


def _pvalue(method: str, X: np.ndarray, Y: np.ndarray, seed: int) -> float:
    import nystrom_kme as nk

    kw = {"random_state": seed, "n_threads": 1, "effect": False}
    if method == "default":
        return nk.two_sample_test(X, Y, **kw).pvalue
    if method == "previous-default":  # issue 27's, a keyword away since issue 42
        return nk.two_sample_test(X, Y, aggregation="fuse+median", **kw).pvalue
    if method == "default-exact":
        return nk.two_sample_test(X, Y, method="exact", **kw).pvalue
    if method == "median":
        return nk.two_sample_test(X, Y, kernel="gaussian", **kw).pvalue
    if method == "fuse":
        return nk.two_sample_test(X, Y, kernel=nk.KernelCollection(), **kw).pvalue
    if method == "fuse-median":  # a combination rule measured for the cells the default misses
        return nk.two_sample_test(X, Y, kernel=nk.KernelCollection(), aggregation="fuse+median", **kw).pvalue
    if method == "mmdagg":
        return nk.two_sample_test(X, Y, kernel=nk.KernelCollection(), aggregation="mmdagg", **kw).pvalue
    if method == "fuse-exact":
        return nk.two_sample_test(X, Y, kernel=nk.KernelCollection(), method="exact", **kw).pvalue
    if method == "nystrom":
        return nk.two_sample_test(X, Y, method="nystrom", **kw).pvalue
    if method == "sqrt":  # the rule issue 36 measured and rejected
        m = max(1024, math.ceil(2 * math.sqrt(len(X) + len(Y))))
        return nk.two_sample_test(X, Y, method="nystrom", n_landmarks=m, **kw).pvalue
    if method == "previous":
        m = previous_landmarks(len(X) + len(Y))
        return nk.two_sample_test(X, Y, method="nystrom", n_landmarks=m, **kw).pvalue
    raise ValueError(method)


def run_rep(task: tuple) -> dict:
    """One repetition: every requested method on the same data; p-values and seconds."""
    section, problem, n, rep, methods = task
    X, Y = _data(section, problem, n, rep, h1=section not in ("level", "level42"))
    out = {"section": section, "problem": problem, "n": n, "rep": rep}
    for method in methods:
        start = time.perf_counter()
        out[method] = _pvalue(method, X, Y, seed=rep)
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
    """Runs the methods of each task that are not recorded yet (resumable), repetition by
    repetition across the cells, so that every cell fills at the same pace."""
    done = {(r["section"], r["problem"], r["n"], r["rep"]): set(r) for r in _records()}
    todo = []
    for section, problem, n, rep, methods in tasks:
        missing = tuple(m for m in methods if m not in done.get((section, problem, n, rep), set()))
        if missing:
            todo.append((section, problem, n, rep, missing))
    todo.sort(key=lambda t: (t[3], t[2], t[1]))
    print(
        f"{len(tasks) - len(todo)} of {len(tasks)} repetitions recorded; running {len(todo)} on {jobs} process(es)",
        flush=True,
    )
    OUT.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(max_workers=jobs) as pool, RESULTS.open("a") as f:
        for i, rec in enumerate(pool.map(run_rep, todo, chunksize=1)):
            f.write(json.dumps(rec) + "\n")
            f.flush()
            if (i + 1) % 100 == 0:
                print(f"  {i + 1}/{len(todo)} ({utc_now()})", flush=True)


def _affordable(method: str, n: int) -> bool:
    """--wide: whether ``method`` runs at n per sample (the exact tests up to their limit)."""
    if method == "default-exact":
        return 2 * n <= DEFAULT_EXACT_MAX
    return not (method.endswith("exact") and 2 * n > EXACT_MAX)


def suite_tasks(reps: int, cells: list[tuple[str, int]]) -> list[tuple]:
    tasks = []
    for problem, n in cells:
        methods = [m for m in METHODS if not (m.endswith("exact") and 2 * n > EXACT_MAX)]
        tasks += [("suite", problem, n, r, tuple(methods)) for r in range(reps)]
    return tasks


# --------------------------------------------------------------------------- reports


def _binomial_band(reps: int, p: float = ALPHA) -> tuple[float, float]:
    """The central 95% range of the rejection rate of a level-p test over reps repetitions."""
    from scipy.stats import binom

    return binom.ppf(0.025, reps, p) / reps, binom.ppf(0.975, reps, p) / reps


def _rate(rows: list[dict], method: str) -> float:
    have = [r[method] <= ALPHA for r in rows if method in r]
    return float(np.mean(have)) if have else math.nan


def suite_table(records: list[dict], section: str = "suite") -> list[dict]:
    """One row per cell: every method's power, the best reference, the default's margin."""
    out = []
    for problem, ns in CELLS[section].items():
        for n in ns:
            sub = [r for r in records if r["section"] == section and r["problem"] == problem and r["n"] == n]
            if not sub:
                continue
            rates = {m: _rate(sub, m) for m in METHODS}
            refs = {m: rates[m] for m in REFERENCES if not math.isnan(rates[m])}
            best = max(refs, key=lambda m: refs[m]) if refs else "default"
            paired, paired_previous = _paired(sub, "default-exact"), _paired(sub, "previous")
            paired_sqrt = _paired(sub, "sqrt")
            secs = {m: statistics.median([r[m + "_s"] for r in sub if m + "_s" in r] or [math.nan]) for m in METHODS}
            out.append(
                {
                    "problem": problem,
                    "n": n,
                    "reps": len(sub),
                    "rates": rates,
                    "best": best,
                    "margin": rates["default"] - refs[best] if refs else math.nan,
                    "paired_exact": paired,
                    "paired_previous": paired_previous,
                    "paired_sqrt": paired_sqrt,
                    "seconds": secs,
                }
            )
    return out


def _paired(rows: list[dict], other: str) -> float:
    """The default's rejection rate minus ``other``'s on the repetitions that ran both."""
    both = [r for r in rows if "default" in r and other in r]
    return float(np.mean([(r["default"] <= ALPHA) - (r[other] <= ALPHA) for r in both])) if both else math.nan


def report_suite(records: list[dict], section: str = "suite") -> None:
    rows = suite_table(records, section)
    if not rows:
        return
    shown = [m for m in METHODS if any(not math.isnan(r["rates"][m]) for r in rows)]
    print(f"\n## Power of the default against the fixed choices (alpha = 0.05), {section}\n")
    print(
        "| problem | n | reps | "
        + " | ".join(METHODS[m] for m in shown)
        + " | best fixed | default - best | default - exact (paired) | default - previous (paired) "
        "| default - 2 sqrt(N) rule (paired) | default s | previous s |"
    )
    print("|---|---|---|" + "---|" * (len(shown) + 7))

    def fmt(v: float, sign: str = "") -> str:
        return "" if math.isnan(v) else f"{v:{sign}.3f}"

    for row in rows:
        rates = " | ".join(fmt(row["rates"][m]) for m in shown)
        print(
            f"| {row['problem']} | {row['n']} | {row['reps']} | {rates} | {row['best']} | {fmt(row['margin'], '+')} | "
            f"{fmt(row['paired_exact'], '+')} | {fmt(row['paired_previous'], '+')} | {fmt(row['paired_sqrt'], '+')} | "
            f"{fmt(row['seconds']['default'])} | {fmt(row['seconds']['previous'])} |"
        )
    rows = [r for r in rows if not math.isnan(r["margin"])]
    if not rows:
        return
    worst = min(rows, key=lambda r: r["margin"])
    short = [r for r in rows if r["margin"] < -0.05]
    print(
        f"\nworst margin {worst['margin']:+.3f} ({worst['problem']}, n = {worst['n']}); "
        f"{len(short)} of {len(rows)} cells below -0.05"
    )


def report_level(records: list[dict], section: str = "level") -> None:
    rows = [r for r in records if r["section"] == section]
    if not rows:
        return
    print(f"\n## Level of the default (alpha = 0.05, H0), {section}\n")
    print("| problem | n per sample | reps | default | default, exact | 95% binomial band |")
    print("|---|---|---|---|---|---|")
    for problem, n in LEVEL_CELLS if section == "level" else LEVEL42_CELLS:
        sub = [r for r in rows if r["problem"] == problem and r["n"] == n]
        if not sub:
            continue
        lo, hi = _binomial_band(len(sub))
        exact = _rate(sub, "default-exact")
        print(
            f"| {problem} | {n} | {len(sub)} | {_rate(sub, 'default'):.3f} | "
            f"{'' if math.isnan(exact) else f'{exact:.3f}'} | {lo:.3f}-{hi:.3f} |"
        )


def rst(records: list[dict]) -> None:
    """The suite's table as reStructuredText (for docs/user_guide/mmd.rst)."""
    rows = suite_table(records)
    cols = ["default", "median", "fuse", "mmdagg", "fuse-exact"]
    print(".. list-table:: Power at alpha = 0.05 (repetitions per cell in the second column)")
    print("   :header-rows: 1\n")
    head = [
        "problem, n",
        "reps",
        "default",
        "median Gaussian",
        "FUSE",
        "MMDAgg",
        "FUSE exact",
        "default - best",
        "default - its exact",
    ]
    print("\n".join(["   * - " + head[0]] + [f"     - {h}" for h in head[1:]]))
    for r in rows:
        cells = [f"{r['problem']}, {r['n']}", str(r["reps"])]
        cells += ["" if math.isnan(r["rates"][c]) else f"{r['rates'][c]:.2f}" for c in cols]
        cells += [f"{r['margin']:+.2f}", "" if math.isnan(r["paired_exact"]) else f"{r['paired_exact']:+.2f}"]
        print("\n".join(["   * - " + cells[0]] + [f"     - {c}" if c else "     -" for c in cells[1:]]))


def figure(records: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = suite_table(records)
    shown = ("default", "median", "fuse", "mmdagg", "fuse-exact")
    labels = [f"{r['problem']}\nn={r['n']}" for r in rows]
    fig, ax = plt.subplots(figsize=(max(8.0, 0.7 * len(rows)), 4.2))
    width = 0.8 / len(shown)
    for i, method in enumerate(shown):
        ys = [r["rates"][method] for r in rows]
        ax.bar(np.arange(len(rows)) + (i - (len(shown) - 1) / 2) * width, ys, width, label=METHODS[method])
    ax.set_xticks(np.arange(len(rows)))
    ax.set_xticklabels(labels, fontsize=7, rotation=60, ha="right")
    ax.set_ylabel("power at alpha = 0.05")
    ax.set_ylim(0, 1.02)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, ncol=len(shown), loc="upper center", bbox_to_anchor=(0.5, 1.12), frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"\nwrote {path}")


# --------------------------------------------------------------------------- cost sweep

_SWEEP_CHILD = r"""
import json, resource, sys, time
import numpy as np
import nystrom_kme as nk
n, which = int(sys.argv[1]), sys.argv[2]
rng = np.random.default_rng(0)
X, Y = rng.normal(size=(n, 10)), rng.normal(size=(n, 10)) + 0.01
single = {"kernel": "gaussian"} if which == "single" else {}
kw = single
if which == "previous":
    from bench.power import previous_landmarks
    kw = {"method": "nystrom", "n_landmarks": previous_landmarks(2 * n)}
if which == "old-default":  # issue 27's default as it ran before issue 42: one m for its five kernels
    kw = {"kernel": nk.KernelCollection(("gaussian", "laplacian"), n_bandwidths=2), "aggregation": "fuse+median"}
if which == "default-uniform":  # the default with one m for every kernel (no narrow landmarks)
    from nystrom_kme.two_sample import _plan
    _plan.NARROW_LANDMARKS = 0
nk.two_sample_test(X[:200], Y[:200], random_state=0, **single)  # warm-up
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start, cpu = time.perf_counter(), time.process_time()
res = nk.two_sample_test(X, Y, random_state=0, **kw)
seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": seconds, "cpu": cpu, "peak_mb": peak / 1024, "growth_mb": (peak - base) / 1024,
                  "m": res.n_landmarks}))
"""


def sweep(ns: list[int], runs: int, against: str = "single") -> None:
    print(f"\n## Cost of the default against the {against} test ({utc_now()}; {machine()})\n")
    print(
        f"| n per sample | m ({against} / default) | {against} s | default s | ratio | "
        f"{against} peak MB | default peak MB | ratio | {against} CPU s | default CPU s |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n in ns:
        got: dict[str, list[dict]] = {against: [], "default": []}
        for _ in range(runs if n < 10**6 else 1):
            for which in (against, "default"):  # alternated: the same load for both
                out = subprocess.run(
                    [sys.executable, "-c", _SWEEP_CHILD, str(n), which], capture_output=True, text=True, check=True
                )
                got[which].append(json.loads(out.stdout))
        t = {k: statistics.median(r["seconds"] for r in v) for k, v in got.items()}
        mem = {k: statistics.median(r["peak_mb"] for r in v) for k, v in got.items()}
        cpu = {k: statistics.median(r.get("cpu", math.nan) for r in v) for k, v in got.items()}
        print(
            f"| {n} | {got[against][0]['m']} / {got['default'][0]['m']} | {t[against]:.3f} | {t['default']:.3f} | "
            f"{t['default'] / t[against]:.2f} | {mem[against]:.0f} | {mem['default']:.0f} | "
            f"{mem['default'] / mem[against]:.2f} | {cpu[against]:.2f} | {cpu['default']:.2f} |",
            flush=True,
        )


def exact_cost() -> None:
    import nystrom_kme as nk
    from nystrom_kme.two_sample._plan import exact_rows

    print(f"\n## The exact default at the limits of method='auto' ({utc_now()}; {machine()})\n")
    print("| d | pooled rows | s (best of 2) |")
    print("|---|---|---|")
    for d in (2, 20, 100, 784):
        N = exact_rows(d)
        rng = np.random.default_rng(d)
        X, Y = rng.normal(size=(N // 2, d)), rng.normal(size=(N - N // 2, d))
        nk.two_sample_test(X[:50], Y[:50], random_state=0)
        times = []
        for _ in range(2):
            start = time.perf_counter()
            res = nk.two_sample_test(X, Y, random_state=0)
            times.append(time.perf_counter() - start)
        assert res.method == "exact", res.method
        print(f"| {d} | {N} | {min(times):.2f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", action="store_true")
    ap.add_argument("--wide", action="store_true")
    ap.add_argument("--scale", action="store_true")
    ap.add_argument("--level", action="store_true")
    ap.add_argument("--level42", action="store_true", help="issue 42's default under H0 (LEVEL42_CELLS)")
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--figure", action="store_true")
    ap.add_argument("--exact-cost", action="store_true")
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--rst", action="store_true", help="print the suite's table for the user guide")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--level-reps", type=int, default=1000)
    ap.add_argument("--cells", nargs="*", default=None, help="problem-n, e.g. blobs-500")
    ap.add_argument("--methods", nargs="*", default=None, help=f"--wide: a subset of {list(METHODS)}")
    ap.add_argument("--sweep-n", type=int, nargs="+", default=[10**3, 10**4, 10**5, 10**6])
    ap.add_argument("--sweep-runs", type=int, default=3)
    ap.add_argument(
        "--sweep-against", choices=("single", "previous", "old-default", "default-uniform"), default="single"
    )
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    print(f"# two_sample_test's default\n\n- {utc_now()}; {machine()}", flush=True)
    cells = [(p, n) for p, ns in SUITE_N.items() for n in ns]
    if args.cells:
        cells = [c for c in cells if f"{c[0]}-{c[1]}" in args.cells]
    if args.exact_cost:
        exact_cost()
    if args.level:
        tasks = [
            ("level", p, n, r, ("default",) + (("default-exact",) if 2 * n <= EXACT_MAX else ()))
            for p, n in LEVEL_CELLS
            if not args.cells or f"{p}-{n}" in args.cells
            for r in range(args.level_reps)
        ]
        run_tasks(tasks, args.jobs)
    if args.level42:
        tasks = [
            ("level42", p, n, r, ("default",))
            for p, n in LEVEL42_CELLS
            if not args.cells or f"{p}-{n}" in args.cells
            for r in range(args.level_reps)
        ]
        run_tasks(tasks, args.jobs)
    if args.suite:
        run_tasks(suite_tasks(args.reps, cells), args.jobs)
    if args.wide:
        wide = (
            "default",
            "nystrom",
            "previous",
            "median",
            "fuse",
            "mmdagg",
            "default-exact",
            "fuse-exact",
            "fuse-median",
        )
        run_tasks(
            [
                (
                    "wide",
                    p,
                    n,
                    r,
                    tuple(m for m in wide if _affordable(m, n) and (not args.methods or m in args.methods)),
                )
                for r in range(args.reps)
                for p, ns in WIDE_N.items()
                for n in ns
                if not args.cells or f"{p}-{n}" in args.cells
            ],
            args.jobs,
        )
    if args.scale:
        run_tasks(
            [
                ("scale", p, n, r, ("default", "previous", "sqrt"))
                for r in range(args.reps)
                for p, ns in LARGE_N.items()
                for n in ns
                if not args.cells or f"{p}-{n}" in args.cells
            ],
            args.jobs,
        )
    records = _records()
    if args.level or args.level42 or args.suite or args.wide or args.scale or args.report:
        report_level(records)
        report_level(records, "level42")
        for section in ("suite", "wide", "scale"):
            report_suite(records, section)
    if args.rst:
        rst(records)
    if args.figure:
        figure(records, Path(__file__).resolve().parent.parent / "docs" / "figures" / "power.png")
    if args.sweep:
        sweep(args.sweep_n, args.sweep_runs, args.sweep_against)


if __name__ == "__main__":
    main()
