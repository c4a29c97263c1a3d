"""The design study behind two_sample_test's default statistic (issue 27).

On every cell of the suite (bench/problems.SUITE, SUITE_N), each repetition computes,
with the splits two_sample_test would use (B = 200):

* the permuted unbiased MMD^2 matrix U (kernels x (B + 1) splits) of a superset of
  kernels, exactly (all pooled rows, for N <= EXACT_MAX pooled rows) and by Nystrom
  features (m = default_n_landmarks(N), landmarks by block RPCholesky for the narrowest
  Gaussian among a pool of pooled rows, or uniform), for:
  Gaussian and Euclidean-Laplacian kernels on a geometric grid reaching 8x the 95%
  distance quantile (wide, mean-sensitive kernels), l1-Laplacians on a geometric grid of
  l1 distances (exact only: the core has no l1 distance yet), MMD-FUSE's linear grids
  (our Euclidean version and FUSE's own exp(-sqrt(2)||x - y||_1 / s), the latter exact
  only), and the median-bandwidth Gaussian;
* the exact off-diagonal Frobenius norms (MMD-FUSE's normaliser) of the linear grids;
* the p-values of the library's current tests: the single median kernel, the aggregated
  test with MMD-FUSE's and with MMDAgg's aggregation (Nystrom, library defaults).

Candidate statistics are then evaluated offline from the stored matrices
(``--report``): any subset of kernels, any aggregation rule, paired on the same data.

    python -m bench.statistic_study --reps 200 --jobs 2      # resumable, bench/out/study/
    python -m bench.statistic_study --report
"""

from __future__ import annotations

import argparse
import json
import math
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

from bench.harness import OUT, utc_now
from bench.problems import SUITE, SUITE_N

STUDY = OUT / "study"
B = 200
ALPHA = 0.05
EXACT_MAX = 2000  # pooled rows up to which the exact matrices are computed
GEO = 12  # bandwidths per family on the geometric grids


def _data(problem: str, n: int, rep: int, h1: bool = True) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng([list(SUITE).index(problem), n, rep, int(h1), 27])
    return SUITE[problem][0 if h1 else 1](n, rng)


def _quantiles(d: np.ndarray) -> tuple[float, float, float]:
    d = np.sort(d[d > 0]) if (d > 0).any() else np.sort(d)
    at = lambda q: float(d[int(math.floor(d.size * q))])  # noqa: E731 - FUSE's order statistics
    return at(0.05), float(np.median(d)), at(0.95)


def superset(Z: np.ndarray, rng: np.random.Generator) -> list[dict]:
    """The kernels of the study, set from the distances of 1000 pooled rows (label-blind)."""
    from scipy.spatial.distance import pdist

    rows = Z[np.sort(rng.choice(Z.shape[0], size=min(1000, Z.shape[0]), replace=False))]
    q2, q1 = _quantiles(pdist(rows)), _quantiles(pdist(rows, "cityblock"))
    out = []
    for s in np.geomspace(q2[0] / 2, 8 * q2[2], GEO):
        out.append({"family": "gauss", "grid": "geo", "s": float(s)})
    for s in np.geomspace(q2[0] / 2, 8 * q2[2], GEO):
        out.append({"family": "lap2", "grid": "geo", "s": float(s)})
    for s in np.geomspace(q1[0] / 2, 8 * q1[2], GEO):
        out.append({"family": "lap1", "grid": "geo", "s": float(s)})
    for s in np.linspace(q2[0] / 2, 2 * q2[2], 10):
        out.append({"family": "gauss", "grid": "fuse", "s": float(s)})
    for s in np.linspace(q2[0] / 2, 2 * q2[2], 10):
        out.append({"family": "lap2", "grid": "fuse", "s": float(s)})
    for s in np.linspace(q1[0] / 2, 2 * q1[2], 10):  # FUSE's own Laplacian: exp(-sqrt(2) ||x - y||_1 / s)
        out.append({"family": "lap1", "grid": "fuse", "s": float(s) / math.sqrt(2)})
    out.append({"family": "gauss", "grid": "median", "s": q2[1]})
    return out


def _kernel(spec: dict, dist: dict[str, np.ndarray]) -> np.ndarray:
    """The kernel matrix, float32 (the study ranks statistics; float32 keeps it fast)."""
    if spec["family"] == "gauss":
        return np.exp(dist["sq"] * np.float32(-1 / (2 * spec["s"] ** 2)))
    return np.exp(dist["l2" if spec["family"] == "lap2" else "l1"] * np.float32(-1 / spec["s"]))


def _core_kernel(spec: dict):  # type: ignore[no-untyped-def]
    import nystrom_kme as nk

    return (nk.Gaussian if spec["family"] == "gauss" else nk.Laplacian)(spec["s"])


def run_rep(task: tuple[str, int, int]) -> dict:
    problem, n, rep = task
    import nystrom_kme as nk
    from nystrom_kme import _core
    from nystrom_kme.bounds import default_n_landmarks
    from nystrom_kme.permutation import SplitSpec, nystrom_quadratic_forms
    from nystrom_kme.sampling import BlockRPCholeskySampling
    from nystrom_kme.two_sample.rules import unbiased_mmd2

    t0 = time.perf_counter()
    X, Y = _data(problem, n, rep)
    Z = np.ascontiguousarray(np.concatenate([X, Y]))
    N = Z.shape[0]
    rng = np.random.default_rng([rep, 270])
    kernels = superset(Z, rng)
    W = SplitSpec(n, n, B, int(rng.integers(2**31))).new().next_weights(N)  # (N, B + 1)
    record: dict = {"problem": problem, "n": n, "rep": rep, "kernels": kernels}
    arrays: dict[str, np.ndarray] = {}
    if N <= EXACT_MAX:
        from scipy.spatial.distance import cdist

        sq = cdist(Z, Z, "sqeuclidean").astype(np.float32)
        dist = {"sq": sq, "l2": np.sqrt(sq), "l1": cdist(Z, Z, "cityblock").astype(np.float32)}
        W32 = (W * n).astype(np.float32)  # +-1 labels: exact in float32; T is rescaled below
        U, frob = [], []
        for spec in kernels:
            K = _kernel(spec, dist)
            T = np.einsum("ib,ib->b", W32, K @ W32, dtype=np.float64) / (n * n)
            total = float(K.sum(dtype=np.float64))
            U.append(unbiased_mmd2(T[None], n, n, total=np.array([total]), trace=np.array([float(N)]))[0])
            frob.append(math.sqrt(max(float((K * K).sum(dtype=np.float64)) - N, 0.0)))
        arrays["exact"] = np.asarray(U, dtype=np.float32)
        arrays["frob"] = np.asarray(frob)
    m = min(N, default_n_landmarks(N))
    euclid = [i for i, s in enumerate(kernels) if s["family"] != "lap1"]
    narrow = min((kernels[i] for i in euclid if kernels[i]["family"] == "gauss"), key=lambda s: s["s"])
    pool = np.sort(rng.choice(N, size=min(N, 20 * m), replace=False))
    chosen = BlockRPCholeskySampling(n_threads=1).select_indices(Z[pool], _core_kernel(narrow), m, rng)
    landmark_sets = {"rpch": Z[pool[np.sort(chosen)]], "unif": Z[np.sort(rng.choice(N, size=m, replace=False))]}
    ones = np.ones((N, 1))
    for name, L in landmark_sets.items():
        L = np.ascontiguousarray(L)
        U = np.full((len(kernels), B + 1), np.nan, dtype=np.float32)
        for i in euclid:
            k = _core_kernel(kernels[i])
            S = _core.kernel_sums(L, Z, np.hstack([W, ones]), k.to_core(), 1)
            T, _, total, _ = nystrom_quadratic_forms(L, np.ascontiguousarray(S[:, :-1]), k, 1, t=S[:, -1].copy())
            U[i] = unbiased_mmd2(T[None], n, n, total=np.array([total]))[0]
        arrays[name] = U
    record["m"] = m
    seed = int(rng.integers(2**31))
    kw = {"random_state": seed, "n_threads": 1}
    record["p_median"] = nk.two_sample_test(X, Y, kernel="gaussian", **kw).pvalue
    record["p_fuse"] = nk.two_sample_test(X, Y, kernel=nk.KernelCollection(), **kw).pvalue
    record["p_mmdagg"] = nk.two_sample_test(X, Y, kernel=nk.KernelCollection(), aggregation="mmdagg", **kw).pvalue
    record["seconds"] = time.perf_counter() - t0
    cell = STUDY / f"{problem}-{n}"
    cell.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(cell / f"{rep:04d}.npz", **arrays)
    (cell / f"{rep:04d}.json").write_text(json.dumps(record))
    return record


def tasks(reps: int, cells: list[tuple[str, int]]) -> list[tuple[str, int, int]]:
    return [(p, n, r) for p, n in cells for r in range(reps) if not (STUDY / f"{p}-{n}" / f"{r:04d}.json").exists()]


# --------------------------------------------------------------------------- offline rules


def load_cell(problem: str, n: int) -> tuple[list[dict], dict[str, np.ndarray]]:
    """The records of a cell and its stacked matrices {"exact", "rpch", "unif": (R, K, B + 1)}."""
    cell = STUDY / f"{problem}-{n}"
    records, stacks = [], {}
    for path in sorted(cell.glob("*.json")):
        records.append(json.loads(path.read_text()))
        with np.load(path.with_suffix(".npz")) as f:
            for key in f.files:
                stacks.setdefault(key, []).append(f[key])
    return records, {k: np.stack(v) for k, v in stacks.items()}


def pvalues(F: np.ndarray) -> np.ndarray:
    """(1 + #{b >= 1: F_b >= F_0}) / (B + 1) for each repetition of F (R, B + 1)."""
    return (1 + (F[:, 1:] >= F[:, :1]).sum(axis=1)) / F.shape[1]


def standardise(U: np.ndarray) -> np.ndarray:
    """z-scores of each kernel's statistics over its B + 1 splits (a symmetric function of
    the splits: the permutation test keeps its level)."""
    mean = U.mean(axis=-1, keepdims=True)
    sd = U.std(axis=-1, keepdims=True)
    return (U - mean) / np.where(sd > 0, sd, 1.0)


def rule(U: np.ndarray, select: np.ndarray, how: str, frob: np.ndarray | None = None, n: int = 0) -> np.ndarray:
    """The aggregate F (R, B + 1) of the kernels ``select`` of U (R, K, B + 1)."""
    V = U[:, select].astype(np.float64)
    if how == "maxz":
        return standardise(V).max(axis=1)
    if how == "lsez":  # log-mean-exp of the z-scores
        Z = standardise(V)
        top = Z.max(axis=1, keepdims=True)
        return (top + np.log(np.exp(Z - top).mean(axis=1, keepdims=True)))[:, 0]
    if how == "fuse":
        scale = n * (n - 1) * math.sqrt(n * (n - 1))
        S = scale * V / frob[:, select, None]
        top = S.max(axis=1, keepdims=True)
        return (top + np.log(np.exp(S - top).mean(axis=1, keepdims=True)))[:, 0]
    if how == "minp":
        ranks = (V[..., None, :] >= V[..., :, None]).sum(axis=-1) / V.shape[-1]  # (R, K, B + 1)
        return -ranks.min(axis=1)
    raise ValueError(how)


def report(reps_min: int) -> None:
    cells = [(p, n) for p, ns in SUITE_N.items() for n in ns]
    print("| cell | reps | m | median | fuse | mmdagg | candidates ... |")
    for problem, n in cells:
        if not (STUDY / f"{problem}-{n}").exists():
            continue
        records, st = load_cell(problem, n)
        if len(records) < reps_min:
            continue
        ks = records[0]["kernels"]
        fam = np.array([k["family"] for k in ks])
        grid = np.array([k["grid"] for k in ks])
        out = {
            "median": np.mean([r["p_median"] <= ALPHA for r in records]),
            "fuse": np.mean([r["p_fuse"] <= ALPHA for r in records]),
            "mmdagg": np.mean([r["p_mmdagg"] <= ALPHA for r in records]),
        }
        sel = {
            "G+L2 geo": (grid == "geo") & (fam != "lap1"),
            "G+L1 geo": (grid == "geo") & (fam != "lap2"),
            "G geo": (grid == "geo") & (fam == "gauss"),
            "fuse grid": (grid == "fuse") & (fam != "lap1"),
            "fuse grid + median": ((grid == "fuse") & (fam != "lap1")) | (grid == "median"),
            "fuse l1 grid": (grid == "fuse") & (fam != "lap2"),
        }
        for source in ("exact", "rpch", "unif"):
            if source not in st:
                continue
            for name, s in sel.items():
                if source != "exact" and "L1" in name or (source != "exact" and "l1" in name):
                    continue
                for how in ("maxz", "lsez"):
                    out[f"{source}:{name}:{how}"] = np.mean(pvalues(rule(st[source], s, how)) <= ALPHA)
            if source == "exact" and "frob" in st:
                out["exact:fuse(ours)"] = np.mean(
                    pvalues(rule(st["exact"], sel["fuse grid"], "fuse", st["frob"], n)) <= ALPHA
                )
                out["exact:fuse(l1, FUSE's)"] = np.mean(
                    pvalues(rule(st["exact"], sel["fuse l1 grid"], "fuse", st["frob"], n)) <= ALPHA
                )
        print(f"\n### {problem}, n = {n}: {len(records)} reps, m = {records[0]['m']}")
        for key, value in out.items():
            print(f"  {key:40s} {value:.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.statistic_study", description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--cells", nargs="*", default=None, help="problem-n, e.g. blobs-500")
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--hybrid", action="store_true", help="report the rules combining FUSE and wide kernels")
    parser.add_argument("--candidates", action="store_true", help="report the candidates for the default")
    parser.add_argument("--report-min", type=int, default=20)
    args = parser.parse_args(argv)
    if args.report:
        report(args.report_min)
        return 0
    if args.hybrid:
        hybrid_report(args.report_min)
        return 0
    if args.candidates:
        candidates_report(args.report_min)
        return 0
    cells = [(p, n) for p, ns in SUITE_N.items() for n in ns]
    if args.cells:
        cells = [c for c in cells if f"{c[0]}-{c[1]}" in args.cells]
    todo = tasks(args.reps, cells)
    # interleave cells, so that every cell fills up at the same pace
    todo.sort(key=lambda t: (t[2], t[1]))
    print(f"{len(todo)} repetitions to run on {args.jobs} process(es) ({utc_now()})", flush=True)
    STUDY.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        for i, rec in enumerate(pool.map(run_rep, todo, chunksize=1)):
            if (i + 1) % 20 == 0:
                print(
                    f"  {i + 1}/{len(todo)} {rec['problem']}-{rec['n']} {rec['seconds']:.1f}s ({utc_now()})", flush=True
                )
    return 0


# --------------------------------------------------------------------------- hybrid rules


def _frobenius_subsample(problem: str, n: int, rep: int, kernels: list[dict], select: np.ndarray) -> np.ndarray:
    """MMD-FUSE's ||K_0||_F of the selected kernels, estimated as the library does (a
    uniform subsample of 1000 pooled rows), on the repetition's data regenerated."""
    from scipy.spatial.distance import pdist

    X, Y = _data(problem, n, rep)
    Z = np.concatenate([X, Y])
    N = Z.shape[0]
    rows = np.random.default_rng([rep, 271]).choice(N, size=min(N, 1000), replace=False)
    sub = Z[np.sort(rows)]
    sq = pdist(sub, "sqeuclidean")
    out = []
    for spec in (kernels[i] for i in np.flatnonzero(select)):
        if spec["family"] == "gauss":
            k = np.exp(-sq / (2 * spec["s"] ** 2))
        elif spec["family"] == "lap2":
            k = np.exp(-np.sqrt(sq) / spec["s"])
        else:
            k = np.exp(-pdist(sub, "cityblock") / spec["s"])
        out.append(math.sqrt(float(np.mean(k * k)) * N * (N - 1)))
    return np.array(out)


def _zscore(F: np.ndarray) -> np.ndarray:
    """Each repetition's aggregate standardised over its B + 1 splits."""
    sd = F.std(axis=-1, keepdims=True)
    return (F - F.mean(axis=-1, keepdims=True)) / np.where(sd > 0, sd, 1.0)


def hybrid_report(reps_min: int, sources: tuple[str, ...] = ("rpch", "unif")) -> None:
    """Rules that combine MMD-FUSE with mean-sensitive kernels, from the stored matrices."""
    cells = [(p, n) for p, ns in SUITE_N.items() for n in ns]
    rows = []
    for problem, n in cells:
        if not (STUDY / f"{problem}-{n}").exists():
            continue
        records, st = load_cell(problem, n)
        if len(records) < reps_min:
            continue
        ks = records[0]["kernels"]
        fam = np.array([k["family"] for k in ks])
        grid = np.array([k["grid"] for k in ks])
        fuse_sel = (grid == "fuse") & (fam != "lap1")
        med = int(np.flatnonzero(grid == "median")[0])
        geo_g = np.flatnonzero((grid == "geo") & (fam == "gauss"))
        wide = int(geo_g[np.searchsorted([ks[i]["s"] for i in geo_g], 2.0 * ks[med]["s"])])  # ~2x the median
        frob = np.stack([_frobenius_subsample(problem, n, r["rep"], r["kernels"], fuse_sel) for r in records])
        base = {
            "median(lib)": np.mean([r["p_median"] <= ALPHA for r in records]),
            "fuse(lib)": np.mean([r["p_fuse"] <= ALPHA for r in records]),
            "mmdagg(lib)": np.mean([r["p_mmdagg"] <= ALPHA for r in records]),
        }
        for source in (*sources, "exact"):
            if source not in st:
                continue
            U = st[source].astype(np.float64)
            scale = n * (n - 1) * math.sqrt(n * (n - 1))
            S = scale * U[:, fuse_sel] / frob[:, :, None]
            top = S.max(axis=1, keepdims=True)
            F_fuse = (top + np.log(np.exp(S - top).mean(axis=1, keepdims=True)))[:, 0]
            z_med = standardise(U[:, med])
            z_wide = standardise(U[:, wide])
            Zf = standardise(U[:, fuse_sel])
            pos = np.maximum(Zf, 0.0)

            def lme(M: np.ndarray) -> np.ndarray:
                top = M.max(axis=1, keepdims=True)
                return (top + np.log(np.exp(M - top).mean(axis=1, keepdims=True)))[:, 0]

            cand = {
                "z med": z_med,
                "z wide": z_wide,
                "lme(2z)": lme(2 * Zf),
                "lme(4z)": lme(4 * Zf),
                "sumsq(z+)": (pos * pos).sum(axis=1),
                "fuse(sub-frob)": F_fuse,
                "max(z fuse, z med)": np.maximum(_zscore(F_fuse), z_med),
                "max(z fuse, z wide)": np.maximum(_zscore(F_fuse), z_wide),
                "max(z fuse, z med, z wide)": np.maximum(np.maximum(_zscore(F_fuse), z_med), z_wide),
                "maxz fuse grid": rule(U, fuse_sel, "maxz"),
            }
            for name, F in cand.items():
                base[f"{source}:{name}"] = np.mean(pvalues(F) <= ALPHA)
        rows.append((f"{problem}-{n}", len(records), base))
    keys = list(dict.fromkeys(k for _, _, b in rows for k in b))
    print("| cell | reps | " + " | ".join(keys) + " |")
    print("|" + "---|" * (len(keys) + 2))
    for cell, reps, b in rows:
        print(f"| {cell} | {reps} | " + " | ".join(f"{b[k]:.3f}" if k in b else "" for k in keys) + " |")


# --------------------------------------------------------------------------- the candidates


def _lme_rows(S: np.ndarray) -> np.ndarray:
    """log-mean-exp over the kernels (axis 1) of (R, K, B + 1)."""
    top = S.max(axis=1, keepdims=True)
    return (top + np.log(np.exp(S - top).mean(axis=1, keepdims=True)))[:, 0]


def _ranks(F: np.ndarray) -> np.ndarray:
    """Each split's marginal p-value among the B + 1 of its repetition, (R, B + 1)."""
    return (F[:, None, :] >= F[:, :, None]).sum(-1) / F.shape[1]


def candidates_report(reps_min: int) -> None:
    """The candidates for the default, replayed on the stored statistics (Nyström,
    uniform landmarks): each one's power minus the best of the median kernel, FUSE,
    MMDAgg (the library's, this run) and exact FUSE (where stored), per cell, then the
    worst and mean of that margin (docs/user_guide/mmd.rst, "Which test")."""
    cells = [(p, n) for p, ns in SUITE_N.items() for n in ns]
    four = np.r_[0, 9, 10, 19]  # the ends of the FUSE grid, Gaussian then Laplacian
    names = ["FUSE 20", "FUSE 4", "maxz 20", "lme(4z) 20", "minp(FUSE 4, median)", "minp 0.7/0.3"]
    margins: dict[str, list[float]] = {k: [] for k in names}
    print("| cell | reps | best fixed | " + " | ".join(names) + " |")
    print("|---|---|---|" + "---|" * len(names))
    for problem, n in cells:
        if not (STUDY / f"{problem}-{n}").exists():
            continue
        records, st = load_cell(problem, n)
        if len(records) < reps_min:
            continue
        ks = records[0]["kernels"]
        fam, grid = np.array([k["family"] for k in ks]), np.array([k["grid"] for k in ks])
        idx = np.flatnonzero((grid == "fuse") & (fam != "lap1"))
        med = int(np.flatnonzero(grid == "median")[0])
        frob = np.stack(
            [
                _frobenius_subsample(problem, n, r["rep"], r["kernels"], (grid == "fuse") & (fam != "lap1"))
                for r in records
            ]
        )
        scale = n * (n - 1) * math.sqrt(n * (n - 1))
        best = max(np.mean([r[key] <= ALPHA for r in records]) for key in ("p_median", "p_fuse", "p_mmdagg"))
        if "exact" in st:
            best = max(best, np.mean(pvalues(_lme_rows(scale * st["exact"][:, idx] / frob[:, :, None])) <= ALPHA))
        U = st["unif"].astype(np.float64)
        F20 = _lme_rows(scale * U[:, idx] / frob[:, :, None])
        F4 = _lme_rows(scale * U[:, idx[four]] / frob[:, four, None])
        Z = standardise(U[:, idx])
        pf, pm = _ranks(F4), _ranks(U[:, med])
        stats = {
            "FUSE 20": F20,
            "FUSE 4": F4,
            "maxz 20": Z.max(axis=1),
            "lme(4z) 20": _lme_rows(4 * Z),
            "minp(FUSE 4, median)": -np.minimum(pf, pm),
            "minp 0.7/0.3": -np.minimum(pf / 0.7, pm / 0.3),
        }
        row = []
        for name in names:
            margin = float(np.mean(pvalues(stats[name]) <= ALPHA) - best)
            margins[name].append(margin)
            row.append(f"{margin:+.2f}")
        print(f"| {problem}-{n} | {len(records)} | {best:.2f} | " + " | ".join(row) + " |")
    print("| worst | | | " + " | ".join(f"{min(margins[k]):+.2f}" for k in names) + " |")
    print("| mean | | | " + " | ".join(f"{np.mean(margins[k]):+.3f}" for k in names) + " |")


if __name__ == "__main__":
    raise SystemExit(main())
