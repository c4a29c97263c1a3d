"""Issue 42, item 5: the default test's power across the exact test's limit.

Above ``exact_rows(d)`` pooled rows (10^4 up to d = 20) ``method="auto"`` runs the Nyström
branch. Each repetition of a problem of ``bench.problems_wide.SUITE42`` at 6000 or 2 10^4
rows per sample stores, for the kernels of the candidate defaults (Gaussian and l1
Laplacian at the two ends of MMD-FUSE's grid, the median Gaussian; the library's draws for
random_state=rep), every permuted unbiased MMD^2:

* ``exact``: every pooled row, single rows permuted (``two_sample._statistics.exact``);
* ``rows-<m>``: Nyström on m uniform landmarks, single rows permuted (the labels streamed);
* ``bins-<m>``: Nyström on m uniform landmarks, bins of rows permuted as the default does
  above 2048 bins (``make_binning`` with the default's max_bins for K kernels);
* ``bins-<m>/<m_wide>``: the narrow kernels (the grid's lower ends) on m landmarks, the
  others on m_wide, bins as above.

The landmark sets are nested (the first m of one uniform permutation of the pooled
rows). Any rule over any subset of the kernels is then replayed through the library's
``decide`` (``--report``): each variant's power against the same rule run exact, paired.

    python -m bench.across_limit --cells copula-d20-6000 --reps 100 --jobs 1   # resumable
    python -m bench.across_limit --report
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from bench.harness import OUT, machine, utc_now
from bench.problems_wide import ACROSS_N, SUITE42

STUDY = OUT / "across42"
B = 200
ALPHA = 0.05
#: the kernels: the default test's (DEFAULT_COLLECTION: Gaussian and l1 Laplacian at three
#: bandwidths from the grid's lower end to the median). Earlier layouts, read by name: the
#: first pilot (30 repetitions of copula-d20 at 6000: the G and l1 grid ends at the l1
#: grid's s itself, FIRST_NAMES) and the second (copula-d20 at 2 10^4: SECOND_NAMES).
NAMES = ("G0", "Gm", "medG", "L1p0", "L1pm", "L1pmed")
FIRST_NAMES = ("G0", "G9", "L1_0", "L1_9", "medG")
SECOND_NAMES = ("G0", "G1", "G9", "L1p0", "L1p9", "medG")
#: the narrowest kernel of each family: the ones landmarks_by_kernel gives more landmarks
NARROW = ("G0", "L1p0")
#: Nyström variants: (name, m of the narrow kernels, m of the others, binned); "m-<m>": every
#: kernel on the default m; "narrow-<m>": the narrow kernels on m (the default's rule at 4096)
VARIANTS = {
    6000: (
        ("m-1024", 1024, 1024, True),
        ("narrow-2048", 2048, 1024, True),
        ("narrow-4096", 4096, 1024, True),
    ),
    20_000: (("m-1060", 1060, 1060, True), ("narrow-4096", 4096, 1060, True), ("narrow-8192", 8192, 1060, True)),
}
#: the default's kernels, for its max_bins (max(256, 2 N / K) bins, at most 2048)
DEFAULT_K = 6


def _data(problem: str, n: int, rep: int, h1: bool = True) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng([list(SUITE42).index(problem), n, rep, int(h1), 4242])
    return SUITE42[problem][0 if h1 else 1](n, rng)


def kernels_of(Z: np.ndarray, rng: np.random.Generator) -> list:
    """The default test's kernels (NAMES), with the library's draw."""
    from nystrom_kme.two_sample import DEFAULT_COLLECTION

    kernels = list(DEFAULT_COLLECTION.resolve(Z, rng))
    assert len(kernels) == len(NAMES)
    return kernels


def run_rep(task: tuple[str, int, int]) -> dict:
    """One repetition: the exact statistics and every Nyström variant of the cell's size,
    saved as bench/out/across42/<problem>-<n>/<rep>.npz and .json."""
    from nystrom_kme._landmark_plan import distinct_rows
    from nystrom_kme._validation import SPLIT_SEED_BOUND, draw_seed
    from nystrom_kme.permutation import SplitSpec
    from nystrom_kme.sources import ArraySource
    from nystrom_kme.two_sample import swaps
    from nystrom_kme.two_sample._plan import DEFAULT_MIN_BINS
    from nystrom_kme.two_sample._statistics import (
        DEFAULT_MAX_BINS,
        exact,
        make_binning,
        nystrom_collection,
        subset_mean_squares,
    )

    problem, n, rep = task
    start = time.perf_counter()
    X, Y = _data(problem, n, rep)
    if swaps(X, Y):
        X, Y = Y, X
    Z = np.ascontiguousarray(np.concatenate([X, Y]), dtype=np.float64)
    n1, n2 = X.shape[0], Y.shape[0]
    N = n1 + n2
    src = ArraySource(Z)
    rng = np.random.default_rng(rep)
    seed = draw_seed(rng, SPLIT_SEED_BOUND)
    kernels = kernels_of(Z, rng)
    binning = make_binning(n1, n2, min(DEFAULT_MAX_BINS, max(DEFAULT_MIN_BINS, 2 * N // DEFAULT_K)), rng)
    order = rng.permutation(N)  # nested uniform landmarks: the first m rows of one permutation
    arrays: dict[str, np.ndarray] = {}
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    arrays["exact"] = exact(src, kernels, SplitSpec(n1, n2, B, seed), 1, None).U
    seconds["exact"] = time.perf_counter() - t0
    narrow = [j for j, name in enumerate(NAMES) if name in NARROW]
    wide = [j for j, name in enumerate(NAMES) if name not in NARROW]
    for name, m_narrow, m_wide, binned in VARIANTS[n]:
        t0 = time.perf_counter()
        use = binning if binned else None
        spec = SplitSpec(use.n1, use.n2, B, seed) if use is not None else SplitSpec(n1, n2, B, seed)
        U = np.empty((len(kernels), B + 1))
        parts = [(list(range(len(kernels))), m_narrow)] if m_narrow == m_wide else [(narrow, m_narrow), (wide, m_wide)]
        for idx, m in parts:
            L = distinct_rows(np.ascontiguousarray(Z[np.sort(order[:m])]))
            stats = nystrom_collection(src, L, [kernels[j] for j in idx], spec, use, 1, None)
            U[idx] = stats.U
        arrays[name] = U
        arrays[name + ":rows"] = np.array(stats.n_rows)
        seconds[name] = time.perf_counter() - t0
    arrays["mean_sq"] = subset_mean_squares(src, kernels, rng, 1)
    cell = STUDY / f"{problem}-{n}"
    cell.mkdir(parents=True, exist_ok=True)
    np.savez(cell / f"{rep:04d}.npz", **arrays)
    record = {
        "problem": problem,
        "n": n,
        "rep": rep,
        "n_rows": [n1, n2],
        "kernels": [[k.name, float(k.bandwidth)] for k in kernels],
        "names": list(NAMES),
        "seconds": seconds,
        "total": time.perf_counter() - start,
    }
    (cell / f"{rep:04d}.json").write_text(json.dumps(record))
    return record


def run(reps: int, cells: list[tuple[str, int]], jobs: int) -> None:
    todo = [(p, n, r) for p, n in cells for r in range(reps) if not (STUDY / f"{p}-{n}" / f"{r:04d}.json").exists()]
    todo.sort(key=lambda t: (t[1], t[2], t[0]))
    print(f"{len(todo)} repetitions to run on {jobs} process(es) ({utc_now()}; {machine()})", flush=True)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for i, rec in enumerate(pool.map(run_rep, todo, chunksize=1)):
            if (i + 1) % 10 == 0:
                print(
                    f"  {i + 1}/{len(todo)} {rec['problem']}-{rec['n']} {rec['total']:.1f}s ({utc_now()})", flush=True
                )


# --------------------------------------------------------------------------- replay


def load_cell(problem: str, n: int) -> tuple[list[dict], dict[str, np.ndarray]]:
    cell = STUDY / f"{problem}-{n}"
    records, stacks = [], {}
    for path in sorted(cell.glob("*.json")):
        records.append(json.loads(path.read_text()))
        with np.load(path.with_suffix(".npz")) as f:
            for key in f.files:
                stacks.setdefault(key, []).append(f[key])
    return records, {k: np.stack(v) for k, v in stacks.items()}


def pvalue(rule_name: str, idx: list[int], variant: str, arrays: dict[str, np.ndarray], r: int, n_rows) -> float:
    """The p-value of a rule over the kernels ``idx`` from one variant's statistics (the
    rule "one kernel": that kernel's marginal test)."""
    import nystrom_kme as nk
    from nystrom_kme.two_sample._decision import decide
    from nystrom_kme.two_sample._statistics import PermutedStatistics
    from nystrom_kme.two_sample.rules import RULES

    U = arrays[variant][r, idx]
    if rule_name == "one kernel":
        return float(np.mean(U[0] >= U[0, 0]))
    rows = tuple(int(v) for v in (n_rows if variant == "exact" else arrays[variant + ":rows"][r]))
    stats = PermutedStatistics(U, U, rows, n_pooled=int(sum(n_rows)))  # type: ignore[arg-type]
    return decide(RULES[rule_name], stats, [nk.Gaussian(1.0)] * len(idx), arrays["mean_sq"][r, idx]).pvalue


#: the rules replayed: name -> (rule, kernels by name; the first pilot's names in brackets)
RULE_SETS = {
    "G0 alone": ("one kernel", ["G0"]),
    "l1 narrow alone": ("one kernel", ["L1p0|L1_0"]),
    "default (maxz, 6 kernels)": ("maxz", list(NAMES)),
    "maxz, G0 L1 narrow, med": ("maxz", ["G0", "L1p0|L1_0", "medG"]),
    "mmdagg, G+L1 ends, med": ("mmdagg", ["G0", "G9", "L1p0|L1_0", "L1p9|L1_9", "medG"]),
}


def _indices(kernels: list[str], names: list[str]) -> list[int] | None:
    """The positions of the named kernels ("a|b": either name), None if one is missing."""
    out = []
    for k in kernels:
        found = [names.index(a) for a in k.split("|") if a in names]
        if not found:
            return None
        out.append(found[0])
    return out


def report(min_reps: int) -> None:
    print(f"\n## Across the exact limit: each variant's power minus the same rule exact, paired ({utc_now()})\n")
    for cell in sorted(STUDY.glob("*-*")):
        problem, n = cell.name.rsplit("-", 1)
        records, arrays = load_cell(problem, int(n))
        if len(records) < min_reps:
            continue
        variants = [v for v in arrays if v not in ("exact", "mean_sq") and not v.endswith(":rows")]
        secs = {v: np.median([r["seconds"][v] for r in records]) for v in ["exact", *variants]}
        print(
            f"### {problem}, n = {n} per sample, {len(records)} repetitions (median s, one thread: "
            + ", ".join(f"{v} {secs[v]:.1f}" for v in secs)
            + ")\n"
        )
        print("| rule | exact | " + " | ".join(variants) + " |")
        print("|---|---|" + "---|" * len(variants))
        names = records[0].get("names", list(FIRST_NAMES))  # the first pilot wrote none
        for label, (rule, kernels) in RULE_SETS.items():
            idx = _indices(kernels, names)
            if idx is None:
                continue
            p = {
                v: np.array([pvalue(rule, idx, v, arrays, r, rec["n_rows"]) for r, rec in enumerate(records)])
                for v in ["exact", *variants]
            }
            power = {v: float(np.mean(p[v] <= ALPHA)) for v in p}
            diffs = []
            for v in variants:
                d = (p[v] <= ALPHA).astype(float) - (p["exact"] <= ALPHA)
                se = d.std(ddof=1) / np.sqrt(d.size) if d.size > 1 else float("nan")
                diffs.append(f"{power[v]:.2f} ({d.mean():+.2f} +- {se:.2f})")
            print(f"| {label} | {power['exact']:.2f} | " + " | ".join(diffs) + " |")
        print()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.across_limit", description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--cells", nargs="*", default=None, help="problem-n, e.g. copula-d20-6000")
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--report-min", type=int, default=10)
    ap.add_argument("--cost", type=int, nargs="*", default=None, help="n per sample: the cost table")
    ap.add_argument("--narrow", type=int, nargs="*", default=[1024, 2048, 4096, 8192])
    ap.add_argument("--cost-runs", type=int, default=1)
    ap.add_argument("--d", type=int, default=20)
    args = ap.parse_args(argv)
    if args.cost is not None:
        cost(args.cost or [6000, 20_000], args.d, args.narrow, args.cost_runs)
        return 0
    if args.report:
        report(args.report_min)
        return 0
    cells = [(p, n) for p in SUITE42 for n in ACROSS_N]
    if args.cells:
        cells = [c for c in cells if f"{c[0]}-{c[1]}" in args.cells]
    run(args.reps, cells, args.jobs)
    return 0


# --------------------------------------------------------------------------- cost

_COST_CHILD = r"""
import json, resource, sys, time
import numpy as np
import nystrom_kme as nk
from nystrom_kme.two_sample import _plan
n, d, which, narrow = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
_plan.NARROW_LANDMARKS = narrow
rng = np.random.default_rng(0)
X, Y = rng.uniform(size=(n, d)), rng.uniform(size=(n, d))
kw = {"random_state": 0, "n_threads": 1, "effect": False}
if which == "single":
    kw["kernel"] = "gaussian"
elif which == "exact":
    kw["method"] = "exact"
nk.two_sample_test(X[:300], Y[:300], **kw)  # warm-up
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
cpu, wall = time.process_time(), time.perf_counter()
res = nk.two_sample_test(X, Y, **kw)
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"cpu": cpu, "wall": wall, "peak_mb": peak / 1024, "growth_mb": (peak - base) / 1024,
                  "m": res.n_landmarks, "method": res.method}))
"""


def cost(ns: list[int], d: int, narrows: list[int], runs: int) -> None:
    """CPU seconds (one thread, so that a shared machine's load moves wall time, not these)
    and peak memory of the single-kernel test, the default with its narrow kernels on each
    of ``narrows`` landmarks, and the default run exact, each call in a fresh process."""
    import statistics
    import subprocess
    import sys

    print(f"\n## Cost across the exact limit, d = {d}, B = 200, one thread ({utc_now()}; {machine()})\n")
    print("| n per sample | test | narrow m | m reported | CPU s | ratio to single | peak MB |")
    print("|---|---|---|---|---|---|---|")
    for n in ns:
        rows = [("single", 0)] + [("default", m) for m in narrows] + ([("exact", 0)] if 2 * n <= 40_000 else [])
        got: dict[tuple[str, int], list[dict]] = {r: [] for r in rows}
        for _ in range(runs):
            for which, m in rows:  # alternated: the same load for all
                out = subprocess.run(
                    [sys.executable, "-c", _COST_CHILD, str(n), str(d), which, str(m)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                got[(which, m)].append(json.loads(out.stdout))
        single = statistics.median(r["cpu"] for r in got[("single", 0)])
        for (which, m), runs_ in got.items():
            cpu = statistics.median(r["cpu"] for r in runs_)
            print(
                f"| {n} | {which} | {m or ''} | {runs_[0]['m']} | {cpu:.2f} | {cpu / single:.2f} | "
                f"{statistics.median(r['peak_mb'] for r in runs_):.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    raise SystemExit(main())
