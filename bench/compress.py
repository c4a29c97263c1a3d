"""Distribution compression (issue 15): MMD to P_n and time of nk.compress vs Compress++.

For each data set, a Gaussian kernel with the median bandwidth (fixed per data set, so
every method is scored with the same kernel) and m ~ sqrt(n) points, each method
compresses X to m weighted points; the score is the exact MMD between the weighted
points and the empirical measure P_n (the constant (1/n^2) 1^T K 1 streamed by the core
once per data set). Times: the compression call alone (median-free: the bandwidth is
given), median over seeds; MMD: median over seeds.

    python -m bench.compress               # mixture n = 16384 and 65536, real data, m sweep
    python -m bench.compress --quick       # mixture n = 16384 only, 2 seeds

Real data: emg (d = 8) and geonames (d = 2), the offline data sets of bench/figure2.py
(a fixed random subset of n rows; install ``.[bench]``), and scikit-learn's digits.

Methods: "iid" (uniform subsample, weights 1/m); NystromKME samplers uniform,
rpcholesky, block-rpcholesky, herding (exact target, and a Nyström target on 4m uniform
landmarks) with signed (Nyström projection) and simplex (MMD-optimal
probability) weights; Compress++ (goodpoints, g = 4, its own uniform weights, and the
same points re-weighted signed / simplex) when goodpoints is installed; a ridge sweep
for signed rpcholesky weights. Writes bench/out/compress.json.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time

import numpy as np

import nystrom_kme as nk
from bench import figure2
from bench.harness import OUT, machine, utc_now
from nystrom_kme import _core
from nystrom_kme.datasets import GaussianMixture

try:
    import goodpoints  # noqa: F401

    HAVE_GOODPOINTS = True
except ImportError:
    HAVE_GOODPOINTS = False

METHODS = [  # (label, sampler, weights)
    ("iid", "uniform-without-replacement", "uniform"),
    ("uniform / signed", "uniform", "signed"),
    ("uniform / simplex", "uniform", "simplex"),
    ("rpcholesky / signed", "rpcholesky", "signed"),
    ("rpcholesky / simplex", "rpcholesky", "simplex"),
    ("block-rpcholesky / signed", "block-rpcholesky", "signed"),
    ("block-rpcholesky / simplex", "block-rpcholesky", "simplex"),
    ("herding, exact target / signed", "herding-exact", "signed"),
    ("herding, exact target / simplex", "herding-exact", "simplex"),
    ("herding, Nystrom target p = 4m / simplex", "herding-nystrom", "simplex"),
]
KT_METHODS = [
    ("Compress++ g=4 (uniform w)", "kernel-thinning", "uniform"),
    ("Compress++ g=4 / signed", "kernel-thinning", "signed"),
    ("Compress++ g=4 / simplex", "kernel-thinning", "simplex"),
]


def score(X: np.ndarray, res: nk.CompressionResult, self_term: float) -> float:
    """Exact MMD(sum w_j delta_{p_j}, P_n) with the precomputed (1/n^2) 1^T K 1."""
    core = res.kernel.to_core()
    Km = _core.kernel_matrix(res.points, res.points, core, 0)
    s = _core.kernel_row_sums(res.points, X, core, 0) / X.shape[0]
    w = res.weights
    return math.sqrt(max(math.fsum([float(w @ Km @ w), -2.0 * float(w @ s), self_term]), 0.0))


def run_method(X, m, kernel, sampler, weights, seed, self_term, ridge=0.0):
    if sampler == "herding-nystrom":  # herding towards a Nyström target on 4m uniform landmarks
        sampler = nk.KernelHerding(target_landmarks=4 * m)
    elif sampler == "herding-exact":  # towards the exact mean embedding, O(n^2 d)
        sampler = nk.KernelHerding(target_landmarks=None)
    t0 = time.perf_counter()
    res = nk.compress(
        X, m, kernel=kernel, sampler=sampler, weights=weights, ridge=ridge, random_state=seed, compute_mmd=False
    )
    elapsed = time.perf_counter() - t0
    w = res.weights
    return {
        "mmd": score(X, res, self_term),
        "time": elapsed,
        "max_abs_w": float(np.abs(w).max()),
        "neg_frac": float(np.mean(w < 0)),
        "sum_w": float(w.sum()),
        "m_out": int(len(w)),
    }


def summarise(runs):
    med = lambda key: statistics.median(r[key] for r in runs)  # noqa: E731
    return {k: med(k) for k in ("mmd", "time", "max_abs_w", "neg_frac", "sum_w", "m_out")}


def dataset_table(name, X, m, seeds, methods, out, ridges=()):
    sigma = nk.median_distance(X, random_state=0)
    kernel = nk.Gaussian(sigma)
    t0 = time.perf_counter()
    self_term = float(_core.kernel_total_sum(X, X, kernel.to_core(), 0)) / X.shape[0] ** 2
    print(
        f"\n### {name}: n = {X.shape[0]}, d = {X.shape[1]}, m = {m}, sigma = {sigma:.4g} "
        f"(median), {len(seeds)} seeds (1^T K 1 streamed in {time.perf_counter() - t0:.2f} s)\n"
    )
    print("| method | MMD to P_n (median) | time s (median) | max abs w | negative w | sum w |")
    print("|---|---|---|---|---|---|")
    rows = {}
    for label, sampler, weights in methods:
        if sampler == "kernel-thinning" and (m & (m - 1) or m * m > X.shape[0]):
            continue
        if sampler == "kernel-thinning":  # warm goodpoints' compiled code outside the timing
            nk.compress(
                X[: 4 * 16], 4, kernel=kernel, sampler=sampler, weights="uniform", random_state=0, compute_mmd=False
            )
        r = summarise([run_method(X, m, kernel, sampler, weights, seed, self_term) for seed in seeds])
        rows[label] = r
        print(
            f"| {label} | {r['mmd']:.3e} | {r['time']:.3f} | {r['max_abs_w']:.3g} | "
            f"{100 * r['neg_frac']:.0f}% | {r['sum_w']:.4f} |",
            flush=True,
        )
    for lam in ridges:
        label = f"rpcholesky / signed, ridge {lam:g}"
        r = summarise([run_method(X, m, kernel, "rpcholesky", "signed", seed, self_term, ridge=lam) for seed in seeds])
        rows[label] = r
        print(
            f"| {label} | {r['mmd']:.3e} | {r['time']:.3f} | {r['max_abs_w']:.3g} | "
            f"{100 * r['neg_frac']:.0f}% | {r['sum_w']:.4f} |",
            flush=True,
        )
    out[name] = {"n": int(X.shape[0]), "d": int(X.shape[1]), "m": m, "sigma": sigma, "rows": rows}
    kt = rows.get("Compress++ g=4 (uniform w)")
    for label in (
        "rpcholesky / simplex",
        "block-rpcholesky / simplex",
        "herding, exact target / simplex",
        "herding, Nystrom target p = 4m / simplex",
    ):
        best = rows.get(label)
        if kt and best:
            verdict = "MET" if best["mmd"] < kt["mmd"] and kt["time"] >= 20 * best["time"] else "NOT met"
            print(
                f"\nTarget ({label}: MMD below Compress++ at >= 20x less time): {verdict}: "
                f"MMD {best['mmd']:.3e} vs {kt['mmd']:.3e}, time ratio {kt['time'] / best['time']:.1f}x"
            )
    return rows


def m_sweep(X, ms, seeds, out):
    sigma = nk.median_distance(X, random_state=0)
    kernel = nk.Gaussian(sigma)
    self_term = float(_core.kernel_total_sum(X, X, kernel.to_core(), 0)) / X.shape[0] ** 2
    methods = [
        m
        for m in METHODS
        if m[0]
        in (
            "iid",
            "rpcholesky / signed",
            "rpcholesky / simplex",
            "block-rpcholesky / simplex",
            "herding, exact target / simplex",
            "herding, Nystrom target p = 4m / simplex",
        )
    ]
    methods += KT_METHODS[::2] if HAVE_GOODPOINTS else []
    print(f"\n### m sweep: mixture n = {X.shape[0]}, {len(seeds)} seeds: MMD to P_n (time s), medians\n")
    print("| m | " + " | ".join(label for label, _, _ in methods) + " |")
    print("|---" * (len(methods) + 1) + "|")
    sweep = {}
    for m in ms:
        cells = []
        for label, sampler, weights in methods:
            if sampler == "kernel-thinning" and (m & (m - 1) or m * m > X.shape[0]):
                cells.append("n/a")
                continue
            r = summarise([run_method(X, m, kernel, sampler, weights, seed, self_term) for seed in seeds])
            sweep.setdefault(label, {})[m] = r
            cells.append(f"{r['mmd']:.2e} ({r['time']:.3f})")
        print(f"| {m} | " + " | ".join(cells) + " |", flush=True)
    out["m_sweep"] = sweep


def duplicates_table(seeds, out):
    """Data with duplicate rows (4096 distinct rows, each 4 times): uniform landmarks
    with replacement repeat rows, K_m is singular, and the signed weights grow."""
    base = GaussianMixture(8, 10, random_state=0).sample(4096, random_state=2)
    X = np.repeat(base, 4, axis=0)
    methods = [("uniform / signed", "uniform", "signed", 0.0)]
    methods += [(f"uniform / signed, ridge {lam:g}", "uniform", "signed", lam) for lam in (1e-6, 1e-4, 1e-2)]
    methods += [
        ("uniform / simplex", "uniform", "simplex", 0.0),
        ("rpcholesky / signed", "rpcholesky", "signed", 0.0),
        ("rpcholesky / simplex", "rpcholesky", "simplex", 0.0),
    ]
    sigma = nk.median_distance(X, random_state=0)
    kernel = nk.Gaussian(sigma)
    self_term = float(_core.kernel_total_sum(X, X, kernel.to_core(), 0)) / X.shape[0] ** 2
    print(f"\n### duplicate rows: 4096 mixture rows x 4 (n = 16384), m = 128, {len(seeds)} seeds\n")
    print("| method | MMD to P_n (median) | time s (median) | max abs w (max over seeds) | negative w | sum w |")
    print("|---|---|---|---|---|---|")
    rows = {}
    for label, sampler, weights, lam in methods:
        runs = [run_method(X, 128, kernel, sampler, weights, seed, self_term, ridge=lam) for seed in seeds]
        r = summarise(runs)
        r["max_abs_w_max"] = max(x["max_abs_w"] for x in runs)
        rows[label] = r
        print(
            f"| {label} | {r['mmd']:.3e} | {r['time']:.3f} | {r['max_abs_w']:.3g} ({r['max_abs_w_max']:.3g}) | "
            f"{100 * r['neg_frac']:.0f}% | {r['sum_w']:.4f} |",
            flush=True,
        )
    out["duplicates"] = rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="mixture n = 16384 only (2 seeds unless --seeds)")
    ap.add_argument("--seeds", type=int, default=None, help="seeds per method (default 3, --quick 2)")
    ap.add_argument("--duplicates-only", action="store_true", help="only the duplicate-rows table")
    args = ap.parse_args()
    seeds = list(range(args.seeds or (2 if args.quick else 3)))
    print(f"# python -m bench.compress{' --quick' if args.quick else ''}: {utc_now()}; {machine()}")
    if not HAVE_GOODPOINTS:
        print("goodpoints is not installed: Compress++ rows are skipped (pip install goodpoints)")
    methods = METHODS + (KT_METHODS if HAVE_GOODPOINTS else [])
    if args.duplicates_only:
        duplicates_table(seeds, {})
        return
    mixture = GaussianMixture(8, 10, random_state=0)
    out: dict = {"machine": machine(), "date": utc_now()}
    sizes = [(16384, 128)] if args.quick else [(16384, 128), (65536, 256)]
    for n, m in sizes:
        X = mixture.sample(n, random_state=1)
        dataset_table(
            f"mixture (d = 10, 8 components) n = {n}",
            X,
            m,
            seeds,
            methods,
            out,
            ridges=(1e-8, 1e-6, 1e-4, 1e-2) if n == 16384 else (),
        )
    if not args.quick:
        for name, n, m in (("emg", 16384, 128), ("geonames", 16384, 128), ("emg", 65536, 256)):
            try:
                data = figure2.LOADERS[name]()
            except (ImportError, FileNotFoundError) as err:
                print(f"\n{name}: skipped ({err}); install {figure2.SOURCES[name]}")
                continue
            X = figure2.support(data, n)[0]
            dataset_table(f"{name} (real, {figure2.SOURCES[name]}) n = {n}", X, m, seeds, methods, out)
        try:
            from sklearn.datasets import load_digits

            Xd = load_digits().data.astype(np.float64)
            dataset_table("scikit-learn digits (bundled)", Xd, 32, seeds, methods, out)
        except ImportError:
            print("\nscikit-learn is not installed: no real data set (digits) row")
        m_sweep(mixture.sample(16384, random_state=1), [32, 64, 128, 256, 512], seeds, out)
        duplicates_table(seeds, out)
    print(f"\nfinished {utc_now()}; {machine()}")
    OUT.mkdir(exist_ok=True)
    (OUT / "compress.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
