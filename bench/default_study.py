"""Issue 42: the default two-sample test as one aggregation, decided on the widened suite.

Every repetition (problem, n, rep) of ``bench.problems_wide.SUITE42`` (n = 500 and 2500 per
sample) replays what ``two_sample_test(X, Y, random_state=rep, n_threads=1)`` draws (the
samples' canonical order, the split seed, the bandwidths' subset of rows, the normalisers'
subset) and stores, for a superset of kernels, every permuted unbiased MMD^2 computed
exactly (every pooled row, the arithmetic of ``two_sample._statistics.exact``: the same
numbers), the exact off-diagonal Frobenius norms ||K_0||_F and the library's estimate of
them (the mean of k^2 over 500 pooled rows). The superset: Gaussian, Euclidean Laplacian
and l1 Laplacian kernels at the 10 bandwidths of MMD-FUSE's grid (each from its own
metric's distances), the median Gaussian, MMD-FUSE's own l1 Laplace kernels
exp(-sqrt(2) ||x - y||_1 / s) on the l1 grid, and the median l1 Laplacian.

Any rule over any subset of those kernels is then a replay of the stored matrices through
the library's own ``decide`` (``--report``): the fixed choices (the median Gaussian, the
library's MMD-FUSE and MMDAgg over its 20 kernels, issue 27's default, MMD-FUSE exact over
its published 20 kernels: Gaussian and l1 Laplace, exact normalisers) and the candidates
for the default, paired on the same data and the same splits.

    python -m bench.default_study --cells copula-d20-500 --reps 100 --jobs 1   # resumable
    python -m bench.default_study --report                                   # the tables
    python -m bench.default_study --check 3       # the replay against two_sample_test itself
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from bench.harness import OUT, machine, utc_now
from bench.problems_wide import SUITE42, SUITE42_N

STUDY = OUT / "study42"
B = 200
ALPHA = 0.05
N_GRID = 10
#: the kernels of a repetition by name: G0..G9, L2_0..L2_9 (Gaussian and Euclidean
#: Laplacian on MMD-FUSE's grid), L1p0..L1p9 (MMD-FUSE's l1 Laplace kernel on its grid:
#: the library's l1 family), medG and medL1 (the median Gaussian and l1 Laplacian), L1_0
#: (the l1 Laplacian at the grid's lower end itself, sqrt(2) x L1p0)
NAMES = (
    [f"G{i}" for i in range(N_GRID)]
    + [f"L2_{i}" for i in range(N_GRID)]
    + [f"L1p{i}" for i in range(N_GRID)]
    + ["medG", "medL1", "L1_0"]
)
#: the first layout (the 500-row cells, before the library's l1 family took MMD-FUSE's
#: sqrt(2)): the l1 Laplacians at the grid's s (L1_i), medG, then L1p, then medL1
FIRST_NAMES = (
    [f"G{i}" for i in range(N_GRID)]
    + [f"L2_{i}" for i in range(N_GRID)]
    + [f"L1_{i}" for i in range(N_GRID)]
    + ["medG"]
    + [f"L1p{i}" for i in range(N_GRID)]
    + ["medL1"]
)


def _data(problem: str, n: int, rep: int, h1: bool = True) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng([list(SUITE42).index(problem), n, rep, int(h1), 42])
    return SUITE42[problem][0 if h1 else 1](n, rng)


def names_of(record: dict) -> tuple[str, ...]:
    """The names of a stored repetition's kernels, in order (either layout; then the
    EXTRA_NAMES where ``--extra`` added them)."""
    names = tuple(FIRST_NAMES) if len(record["kernels"]) == len(FIRST_NAMES) else tuple(NAMES)
    return names + (EXTRA_NAMES if record.get("extra") else ())


def grid(family: str) -> list[str]:
    return [f"{family}{i}" for i in range(N_GRID)]


def ends(family: str) -> list[str]:
    """The two ends of a family's grid."""
    return [f"{family}0", f"{family}{N_GRID - 1}"]


def superset(Z: np.ndarray, rng: np.random.Generator) -> list:
    """The kernels of NAMES, with the draw of the library's collection (one subset of
    rows): the G, L2 and l1 grids and the median Gaussian as ``KernelCollection(..).resolve(Z,
    rng, with_median=True)`` gives them, then the median l1 Laplacian of the same rows and
    the l1 Laplacian at the grid's lower end."""
    import nystrom_kme as nk
    from nystrom_kme.kernel_collection import GRID_SUBSET, L1_FACTOR
    from nystrom_kme.kernels import pairwise_distances

    before = copy.deepcopy(rng)
    kc = nk.KernelCollection(("gaussian", "laplacian", "laplacian_l1"), n_bandwidths=N_GRID)
    kernels = list(kc.resolve(Z, rng, with_median=True))
    N = Z.shape[0]
    rows = np.sort(before.choice(N, size=GRID_SUBSET, replace=False)) if N > GRID_SUBSET else np.arange(N)
    kernels.append(nk.LaplacianL1(float(np.median(pairwise_distances(Z[rows], "l1")))))
    kernels.append(nk.LaplacianL1(kernels[2 * N_GRID].bandwidth * L1_FACTOR))
    return kernels


def exact_statistics(Z: np.ndarray, kernels: list, W: np.ndarray, n1: int, n2: int) -> dict[str, np.ndarray]:
    """U (K, B + 1) as two_sample._statistics.exact computes it (blocks of rows, the core's
    kernel matrix and fixed-order product, one thread), T of every kernel, and each
    kernel's off-diagonal sum of k^2."""
    from nystrom_kme import _core
    from nystrom_kme.two_sample._statistics import EXACT_BLOCK_BYTES
    from nystrom_kme.two_sample.rules import unbiased_mmd2

    N = Z.shape[0]
    rows = max(1, EXACT_BLOCK_BYTES // (8 * N))
    K = len(kernels)
    T = np.zeros((K, W.shape[1]))
    cross = np.zeros((K, W.shape[1]))
    total = np.zeros(K)
    squares = np.zeros(K)
    for j, kernel in enumerate(kernels):
        core = kernel.to_core()
        parts_t, parts_c, parts_tot, parts_sq = [], [], [], []
        for start in range(0, N, rows):
            block = _core.kernel_matrix(Z[start : start + rows], Z, core, 1)
            Wb = W[start : start + block.shape[0]]
            KW = _core.matrix_product(block, W, 1)
            parts_t.append(np.einsum("ib,ib->b", Wb, KW))
            t = np.sum(block, axis=1)
            parts_c.append(Wb.T @ t)
            parts_tot.append(float(np.sum(t)))
            parts_sq.append(float(np.sum(block * block)))
        T[j] = np.sum(parts_t, axis=0)
        cross[j] = np.sum(parts_c, axis=0)
        total[j] = math.fsum(parts_tot)
        squares[j] = math.fsum(parts_sq) - N  # the diagonal: k(z, z)^2 = 1
    U = unbiased_mmd2(T, n1, n2, cross=cross, total=total, trace=np.full(K, float(N)))
    return {"T": T, "U": U, "squares": squares}


def run_rep(task: tuple[str, int, int]) -> dict:
    """One repetition: the library's draws for random_state=rep, the superset's exact
    statistics, saved as bench/out/study42/<problem>-<n>/<rep>.npz and .json."""
    from nystrom_kme._validation import SPLIT_SEED_BOUND, draw_seed
    from nystrom_kme.permutation import SplitSpec
    from nystrom_kme.sources import ArraySource
    from nystrom_kme.two_sample import swaps
    from nystrom_kme.two_sample._statistics import subset_mean_squares

    problem, n, rep = task
    start = time.perf_counter()
    X, Y = _data(problem, n, rep)
    if swaps(X, Y):
        X, Y = Y, X
    Z = np.ascontiguousarray(np.concatenate([X, Y]), dtype=np.float64)
    n1, n2 = X.shape[0], Y.shape[0]
    rng = np.random.default_rng(rep)
    seed = draw_seed(rng, SPLIT_SEED_BOUND)
    kernels = superset(Z, rng)
    W = SplitSpec(n1, n2, B, seed).new().next_weights(n1 + n2)
    stats = exact_statistics(Z, kernels, W, n1, n2)
    mean_sq = subset_mean_squares(ArraySource(Z), kernels, rng, 1)  # the library's draw, after the grid's
    cell = STUDY / f"{problem}-{n}"
    cell.mkdir(parents=True, exist_ok=True)
    np.savez(cell / f"{rep:04d}.npz", U=stats["U"], T=stats["T"], squares=stats["squares"], mean_sq=mean_sq)
    record = {
        "problem": problem,
        "n": n,
        "rep": rep,
        "n_rows": [n1, n2],
        "kernels": [[k.name, float(k.bandwidth)] for k in kernels],
        "seconds": time.perf_counter() - start,
    }
    (cell / f"{rep:04d}.json").write_text(json.dumps(record))
    return record


#: kernels added to stored repetitions (``--extra``, <rep>.extra.npz): the Gaussians at the
#: geometric middle of the grid's lower end and the median (Gm) and of the grid's ends
#: (Ggeo); the l1 Laplace kernel at the median l1 distance (MMD-FUSE's form: / sqrt(2)) and
#: at the geometric middle of the l1 grid's lower end and that (L1pm)
EXTRA_NAMES = ("Gm", "Ggeo", "L1pmed", "L1pm")


def extra_kernels(record: dict) -> list:
    import nystrom_kme as nk
    from nystrom_kme.kernel_collection import L1_FACTOR

    bw = dict(zip(names_of(record)[: len(record["kernels"])], (b for _, b in record["kernels"])))
    l1_median = bw["medL1"] / L1_FACTOR
    return [
        nk.Gaussian(math.sqrt(bw["G0"] * bw["medG"])),
        nk.Gaussian(math.sqrt(bw["G0"] * bw["G9"])),
        nk.LaplacianL1(l1_median),
        nk.LaplacianL1(math.sqrt(bw["L1p0"] * l1_median)),
    ]


def run_extra(task: tuple[str, int, int]) -> dict:
    """The EXTRA_NAMES kernels of a stored repetition, on its data and splits (the same
    draws as run_rep), saved beside it as <rep>.extra.npz."""
    from nystrom_kme._validation import SPLIT_SEED_BOUND, draw_seed
    from nystrom_kme.permutation import SplitSpec
    from nystrom_kme.sources import ArraySource
    from nystrom_kme.two_sample import swaps
    from nystrom_kme.two_sample._statistics import subset_mean_squares

    problem, n, rep = task
    start = time.perf_counter()
    cell = STUDY / f"{problem}-{n}"
    record = json.loads((cell / f"{rep:04d}.json").read_text())
    X, Y = _data(problem, n, rep)
    if swaps(X, Y):
        X, Y = Y, X
    Z = np.ascontiguousarray(np.concatenate([X, Y]), dtype=np.float64)
    n1, n2 = X.shape[0], Y.shape[0]
    rng = np.random.default_rng(rep)
    seed = draw_seed(rng, SPLIT_SEED_BOUND)
    superset(Z, rng)  # the grid's draw, so that the normalisers' rows are the library's
    kernels = extra_kernels(record)
    W = SplitSpec(n1, n2, B, seed).new().next_weights(n1 + n2)
    stats = exact_statistics(Z, kernels, W, n1, n2)
    mean_sq = subset_mean_squares(ArraySource(Z), kernels, rng, 1)
    np.savez(cell / f"{rep:04d}.extra.npz", U=stats["U"], T=stats["T"], squares=stats["squares"], mean_sq=mean_sq)
    return {"problem": problem, "n": n, "rep": rep, "seconds": time.perf_counter() - start}


def run_extras(cells: list[tuple[str, int]], jobs: int) -> None:
    todo = []
    for p, n in cells:
        for path in sorted((STUDY / f"{p}-{n}").glob("*.json")):
            if not path.with_suffix(".extra.npz").exists():
                todo.append((p, n, int(path.stem)))
    print(f"{len(todo)} repetitions to extend on {jobs} process(es) ({utc_now()}; {machine()})", flush=True)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for i, _ in enumerate(pool.map(run_extra, todo, chunksize=1)):
            if (i + 1) % 100 == 0:
                print(f"  {i + 1}/{len(todo)} ({utc_now()})", flush=True)


def tasks(reps: int, cells: list[tuple[str, int]]) -> list[tuple[str, int, int]]:
    return [(p, n, r) for p, n in cells for r in range(reps) if not (STUDY / f"{p}-{n}" / f"{r:04d}.json").exists()]


def run(reps: int, cells: list[tuple[str, int]], jobs: int) -> None:
    todo = tasks(reps, cells)
    todo.sort(key=lambda t: (t[1], t[2], t[0]))  # the small cells first, every cell at the same pace
    print(f"{len(todo)} repetitions to run on {jobs} process(es) ({utc_now()}; {machine()})", flush=True)
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        for i, rec in enumerate(pool.map(run_rep, todo, chunksize=1)):
            if (i + 1) % 50 == 0:
                print(
                    f"  {i + 1}/{len(todo)} {rec['problem']}-{rec['n']} {rec['seconds']:.1f}s ({utc_now()})", flush=True
                )


# --------------------------------------------------------------------------- replay


def load_cell(problem: str, n: int) -> tuple[list[dict], dict[str, np.ndarray]]:
    """The records of a cell and its stacked arrays {"U", "T": (R, K, B + 1), "squares",
    "mean_sq": (R, K)}, the EXTRA_NAMES kernels appended when every repetition has them
    (each record's "extra" then True)."""
    cell = STUDY / f"{problem}-{n}"
    paths = sorted(cell.glob("*.json"))
    extra = bool(paths) and all(p.with_suffix(".extra.npz").exists() for p in paths)
    records, stacks = [], {}
    for path in paths:
        record = json.loads(path.read_text())
        record["extra"] = extra
        records.append(record)
        with np.load(path.with_suffix(".npz")) as f:
            parts = {key: f[key] for key in f.files}
        if extra:
            with np.load(path.with_suffix(".extra.npz")) as f:
                parts = {key: np.concatenate([parts[key], f[key]]) for key in parts}
        for key, value in parts.items():
            stacks.setdefault(key, []).append(value)
    return records, {k: np.stack(v) for k, v in stacks.items()}


#: the fixed choices the default is held against: name -> (rule, kernels, normaliser)
REFERENCES = {
    "median": ("one kernel", ["medG"], "subset"),
    "fuse20": ("fuse", grid("G") + grid("L2_"), "subset"),
    "mmdagg20": ("mmdagg", grid("G") + grid("L2_"), "subset"),
    "old-default": ("fuse+median", ends("G") + ends("L2_") + ["medG"], "subset"),
    "fuse-published": ("fuse", grid("G") + grid("L1p"), "exact"),
}
#: the kernels of the default test (DEFAULT_COLLECTION: Gaussian and l1 Laplacian at three
#: bandwidths geometrically from the grid's lower end to the median)
DEFAULT_KERNELS = ["G0", "Gm", "medG", "L1p0", "L1pm", "L1pmed"]
#: the candidate collections (the median Gaussian last, for "fuse+median")
COLLECTIONS = {
    "narrow grid, G+L1 (6: the default's)": ["G0", "Gm", "L1p0", "L1pm", "L1pmed", "medG"],
    "narrow grid, G (3) + L1 lower end": ["G0", "Gm", "L1p0", "medG"],
    "G0, G1, L1 lower end, median G": ["G0", "G1", "L1p0", "medG"],
    "lower ends, median G": ["G0", "L1p0", "medG"],
    "G+L1 ends, median G": ends("G") + ends("L1p") + ["medG"],
    "G+L2+L1 ends, median G": ends("G") + ends("L2_") + ends("L1p") + ["medG"],
    "G10+L1 10, median G": grid("G") + grid("L1p") + ["medG"],
}
CANDIDATE_RULES = ("maxz", "mmdagg", "fuse", "fuse+median")
#: the default's own halves and kernels (issue 42: no problem where the default is below
#: its own best half or kernel subset by more than 0.05), each with the default's rule
SUBSETS = {
    "Gaussians (3)": ["G0", "Gm", "medG"],
    "l1 Laplacians (3)": ["L1p0", "L1pm", "L1pmed"],
    "lower ends (2)": ["G0", "L1p0"],
    **{f"{k} alone": [k] for k in DEFAULT_KERNELS},
}


def _rule(name: str):  # noqa: ANN202
    from nystrom_kme.two_sample.rules import ONE_KERNEL, RULES

    return ONE_KERNEL if name == "one kernel" else RULES[name]


def replay(
    rule_name: str, kernels: list[str], normaliser: str, arrays: dict[str, np.ndarray], r: int, record: dict
) -> float:
    """The p-value of ``rule_name`` over the named kernels on repetition r, through the
    library's decide (its round-off floor, its normalisers: the subsample's estimate or
    the exact ||K_0||_F)."""
    import nystrom_kme as nk
    from nystrom_kme.two_sample._decision import decide
    from nystrom_kme.two_sample._statistics import PermutedStatistics

    names = names_of(record)
    if not all(k in names for k in kernels):
        return math.nan
    idx = [names.index(k) for k in kernels]
    n1, n2 = record["n_rows"]
    N = n1 + n2
    stats = PermutedStatistics(arrays["T"][r, idx], arrays["U"][r, idx], (n1, n2), n_pooled=N)
    if normaliser == "exact":
        mean_sq = arrays["squares"][r, idx] / (N * (N - 1))
    else:
        mean_sq = arrays["mean_sq"][r, idx]
    # decide reads the kernels only for radial-ness (the round-off floor): any radial kernel
    return decide(_rule(rule_name), stats, [nk.Gaussian(1.0)] * len(idx), mean_sq).pvalue


def methods() -> dict[str, tuple[str, list[str], str]]:
    out = dict(REFERENCES)
    for cname, kernels in COLLECTIONS.items():
        for rule in CANDIDATE_RULES:
            out[f"{rule}: {cname}"] = (rule, kernels, "subset")
    return out


def cell_powers(problem: str, n: int, chosen: dict[str, tuple[str, list[str], str]]) -> tuple[int, dict[str, float]]:
    records, arrays = load_cell(problem, n)
    out = {}
    for name, (rule, kernels, norm) in chosen.items():
        p = np.asarray([replay(rule, kernels, norm, arrays, r, rec) for r, rec in enumerate(records)])
        out[name] = math.nan if np.isnan(p).any() else float(np.mean(p <= ALPHA))
    return len(records), out


def report(min_reps: int, sizes: tuple[int, ...]) -> None:
    """Per cell: the references, the best of them, each candidate's margin; then each
    candidate's worst and mean margin over the cells."""
    every = methods()
    cands = [m for m in every if m not in REFERENCES]
    margins: dict[str, list[float]] = {m: [] for m in cands}
    rows = []
    for problem, ns in SUITE42_N.items():
        for n in ns:
            if n not in sizes or not (STUDY / f"{problem}-{n}").exists():
                continue
            reps, power = cell_powers(problem, n, every)
            if reps < min_reps:
                continue
            best = max(REFERENCES, key=lambda m: power[m])
            for m in cands:
                if not math.isnan(power[m]):
                    margins[m].append(power[m] - power[best])
            rows.append((problem, n, reps, power, best))
    print(f"\n## Issue 42 study: fixed choices per cell ({utc_now()})\n")
    print("| problem | n | reps | " + " | ".join(REFERENCES) + " | best |")
    print("|---|---|---|" + "---|" * (len(REFERENCES) + 1))
    for problem, n, reps, power, best in rows:
        print(f"| {problem} | {n} | {reps} | " + " | ".join(f"{power[m]:.2f}" for m in REFERENCES) + f" | {best} |")
    print("\n## Candidates: margin to the best fixed choice (worst, mean over the cells; cell of the worst)\n")
    print("| candidate | worst | mean | cells below -0.05 | worst cell |")
    print("|---|---|---|---|---|")
    order = sorted(cands, key=lambda m: -min(margins[m]) if margins[m] else 0)
    labels = [f"{p}-{n}" for p, n, *_ in rows]
    for m in order:
        if not margins[m]:
            continue
        v = np.asarray(margins[m])
        print(f"| {m} | {v.min():+.3f} | {v.mean():+.3f} | {int((v < -0.05).sum())} | {labels[int(v.argmin())]} |")
    subset_report(rows, sizes)
    for ref in REFERENCES:  # the fixed choices' own margins to the best of the others
        v = [power[ref] - max(power[m] for m in REFERENCES if m != ref) for *_, power, _ in rows]
        if v:
            print(f"| (fixed) {ref} vs the best other | {min(v):+.3f} | {np.mean(v):+.3f} | | |")


def subset_report(rows: list, sizes: tuple[int, ...]) -> None:
    """The default against its own halves and kernels (the same rule over each subset),
    and each cell's margin to the best fixed choice."""
    print("\n## The default (maxz over its 6 kernels) against its halves and kernels, and the best fixed choice\n")
    print("| problem | n | default | best fixed | margin | best subset | default - best subset |")
    print("|---|---|---|---|---|---|---|")
    for problem, n, _, power, best in rows:
        records, arrays = load_cell(problem, n)
        if not all(k in names_of(records[0]) for k in DEFAULT_KERNELS):
            continue
        mine = {
            name: float(
                np.mean(
                    [
                        replay("maxz" if len(ks) > 1 else "one kernel", ks, "subset", arrays, r, rec) <= ALPHA
                        for r, rec in enumerate(records)
                    ]
                )
            )
            for name, ks in {"default": DEFAULT_KERNELS, **SUBSETS}.items()
        }
        top = max(SUBSETS, key=lambda k: mine[k])
        print(
            f"| {problem} | {n} | {mine['default']:.2f} | {power[best]:.2f} ({best}) | "
            f"{mine['default'] - power[best]:+.2f} | {top} {mine[top]:.2f} | {mine['default'] - mine[top]:+.2f} |"
        )


def rst(min_reps: int, sizes: tuple[int, ...]) -> None:
    """The per-problem table of the user guide: the default, each fixed choice, the margin."""
    cols = ["median", "fuse20", "mmdagg20", "fuse-published", "old-default"]
    head = [
        "problem, n",
        "reps",
        "default",
        "median Gaussian",
        "FUSE (20)",
        "MMDAgg (20)",
        "FUSE, published 20",
        "previous default",
        "default - best",
    ]
    print(".. list-table:: Power at alpha = 0.05 (B = 200, every method on the same data and splits)")
    print("   :header-rows: 1\n")
    print("\n".join(["   * - " + head[0]] + [f"     - {h}" for h in head[1:]]))
    chosen = {**REFERENCES, "default": ("maxz", DEFAULT_KERNELS, "subset")}
    for n in sizes:
        for problem in SUITE42_N:
            if not (STUDY / f"{problem}-{n}").exists():
                continue
            reps, power = cell_powers(problem, n, chosen)
            if reps < min_reps or math.isnan(power["default"]):
                continue
            best = max(power[c] for c in cols)
            cells = [f"{problem}, {n}", str(reps), f"{power['default']:.2f}"]
            cells += [f"{power[c]:.2f}" for c in cols] + [f"{power['default'] - best:+.2f}"]
            print("\n".join(["   * - " + cells[0]] + [f"     - {c}" for c in cells[1:]]))


def check(reps: int) -> None:
    """The replay against two_sample_test itself on the first ``reps`` repetitions of a few
    cells: the same p-values (the library's rules and collections, random_state=rep)."""
    import nystrom_kme as nk

    for cell in sorted(STUDY.glob("*-*")):
        problem, n = cell.name.rsplit("-", 1)
        records, arrays = load_cell(problem, int(n))
        if not records or names_of(records[0]) != tuple(NAMES):
            continue
        for r, rec in enumerate(records[:reps]):
            X, Y = _data(problem, int(n), rec["rep"])
            kw = {"random_state": rec["rep"], "n_threads": 1, "effect": False, "method": "exact"}
            g_l1 = nk.KernelCollection(("gaussian", "laplacian_l1"), n_bandwidths=2)
            pairs = {
                "fuse20": (
                    nk.two_sample_test(X, Y, kernel=nk.KernelCollection(), **kw).pvalue,
                    replay(*REFERENCES["fuse20"], arrays, r, rec),
                ),
                "mmdagg20": (
                    nk.two_sample_test(X, Y, kernel=nk.KernelCollection(), aggregation="mmdagg", **kw).pvalue,
                    replay(*REFERENCES["mmdagg20"], arrays, r, rec),
                ),
                "G+L1 ends, mmdagg": (
                    nk.two_sample_test(X, Y, kernel=g_l1, aggregation="mmdagg", **kw).pvalue,
                    replay("mmdagg", ends("G") + ends("L1p"), "subset", arrays, r, rec),
                ),
            }
            for key, (lib, mine) in pairs.items():
                status = "same" if lib == mine else "DIFFERENT"
                print(f"{problem}-{n} rep {rec['rep']} {key}: replay {mine:.4f} library {lib:.4f} {status}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.default_study", description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--cells", nargs="*", default=None, help="problem-n, e.g. blobs-500")
    ap.add_argument("--sizes", type=int, nargs="*", default=[500, 2500])
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--rst", action="store_true", help="the user guide's table")
    ap.add_argument("--report-min", type=int, default=20)
    ap.add_argument("--check", type=int, default=0, help="compare the replay with two_sample_test on N reps")
    ap.add_argument("--extra", action="store_true", help="add the EXTRA_NAMES kernels to the stored repetitions")
    args = ap.parse_args(argv)
    if args.report:
        report(args.report_min, tuple(args.sizes))
        return 0
    if args.rst:
        rst(args.report_min, tuple(args.sizes))
        return 0
    if args.check:
        check(args.check)
        return 0
    cells = [(p, n) for p, ns in SUITE42_N.items() for n in ns if n in args.sizes]
    if args.cells:
        cells = [c for c in cells if f"{c[0]}-{c[1]}" in args.cells]
    if args.extra:
        run_extras(cells, args.jobs)
        return 0
    run(args.reps, cells, args.jobs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
