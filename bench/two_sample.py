"""Two-sample tests: the Nyström permutation test against its machine limit, the
README example, and time and power against the exact test.

1. At 10^6 points per sample (d = 5, m = 1000, B = 200 permutations), the test's
   work is one multi-column kernel sum K(L, Z) W: 2 m n (B + 1) flops and n m
   kernel evaluations (n = 2 * 10^6 pooled). limit = 2 m n (B + 1) / GEMM rate +
   n m / exp rate, with both rates measured in this run (bench/limits.py).
   Target: median time <= 1.5 x limit.
2. The README example: 10^5 points per sample, d = 10, default m, 200
   permutations. Target: under 5 s.
3. At 10^4 per sample: time and power of the Nyström and exact tests
   (H1: a shift of `--shift` on the first axis of N(0, I_5)).
0. (issue 22, run first; alone with --limit-only) At 2 * 10^5 per sample (d = 5,
   m = 1000, B = 200), on 1 and 2 threads: two_sample_test against
   limit = row pass + 2 m n (B + 1) / DGEMM rate, the row pass being
   _core.kernel_row_sums(L, Z) on the same threads and the DGEMM rate numpy's OpenBLAS
   (AVX-512 kernel: OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset) on the same threads,
   the higher of its rates at 2048^2 and at the reduction's shape. Best wall time of
   --repeats runs each. Target: test / limit <= 1.2 on both.

F. (issue 46; alone with --float32-default) At 10^6 rows per sample (--float32-n), d = 10,
   float32 input (N(0, I) against a 0.01 shift): the default test, the single
   median-Gaussian test and one NystromKME fit of the pooled rows with m = 3000 landmarks,
   interleaved call by call, median of --repeats. Targets: default <= 7 s on 2 AVX-512
   cores and <= 2.8x the fit.

A. (issue 46; alone with --float32-accuracy) The default test on float32 data against the
   same values in float64, seven problems (shift, scale, null, Student t, mixture, d = 50,
   rows at an offset of 1e3; --float32-n rows per sample, --reps seeds): every kernel's
   statistics, the aggregated null and the p-values.

Usage: python -m bench.two_sample [--quick] [--reps R] [--shift S] [--repeats K] [--limit-only]
       python -m bench.two_sample --float32-default [--float32-n N] [--repeats K]
       python -m bench.two_sample --float32-accuracy [--float32-n N] [--reps R]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

import nystrom_kme as nk
from bench import limits
from bench.harness import machine, peak_rss_mb, time_calls, utc_now
from bench.multi_column import dgemm_rates

TARGET_LIMIT_RATIO = 1.5
TARGET_README_S = 5.0
TARGET_PRODUCT_LIMIT_RATIO = 1.2


def draw(rng, n, d, shift):
    X = rng.normal(size=(n, d))
    Y = rng.normal(size=(n, d))
    Y[:, 0] += shift
    return X, Y


def product_limit(rng, per: int, m: int, B: int, repeats: int) -> None:
    """Section 0: the test at 2 * per pooled rows against row pass + product at DGEMM speed."""
    from nystrom_kme import _core

    X, Y = draw(rng, per, 5, 0.0)
    n = 2 * per
    kernel = nk.Gaussian(np.sqrt(2 * 5))
    Z = np.concatenate([X, Y])
    L = np.ascontiguousarray(Z[np.sort(np.random.default_rng(1).choice(n, size=m, replace=False))])
    print(
        f"## Single-kernel test against row pass + product at DGEMM speed (issue 22)\n\n"
        f"n = {n:.0e} pooled, m = {m}, B = {B}, d = 5, best wall time of {repeats} runs\n"
    )
    print(
        "| threads | OpenBLAS | DGEMM 2048² GFLOP/s | DGEMM shape GFLOP/s | row pass s | limit s | "
        "two_sample_test s | test / limit |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for nt in (1, 2):
        rates = dgemm_rates(nt, m, n, B + 1)
        gemm = max(rates["square"], rates["shape"])
        row = min(time_calls(lambda nt=nt: _core.kernel_row_sums(L, Z, kernel.to_core(), nt), repeats)[0])
        limit = row + 2.0 * m * n * (B + 1) / gemm
        times, _ = time_calls(
            lambda nt=nt: nk.two_sample_test(
                X, Y, kernel=kernel, n_landmarks=m, n_permutations=B, random_state=0, progress=False, n_threads=nt
            ),
            repeats,
        )
        t = min(times)
        print(
            f"| {nt} | {', '.join(map(str, rates['blas']))} | {rates['square'] / 1e9:.1f} | "
            f"{rates['shape'] / 1e9:.1f} | {row:.2f} | {limit:.2f} | {t:.2f} | **{t / limit:.2f}** "
            f"({'ok' if t / limit <= TARGET_PRODUCT_LIMIT_RATIO else 'MISS'}) |",
            flush=True,
        )
    print(f"\nTarget test / limit <= {TARGET_PRODUCT_LIMIT_RATIO}; end: {machine()}\n", flush=True)


TARGET_FLOAT32_DEFAULT_S = 7.0
TARGET_FLOAT32_FIT_RATIO = 2.8


def float32_default(per: int, repeats: int) -> None:
    """Section F: the default test on float32 data against the single test and one fit."""
    rng = np.random.default_rng(46)
    X = rng.normal(size=(per, 10)).astype(np.float32)
    Y = rng.normal(size=(per, 10)).astype(np.float32)
    Y[:, 0] += 0.01
    Z = np.concatenate([X, Y])
    calls = {
        "default test": lambda: nk.two_sample_test(X, Y, random_state=0),
        "single median-Gaussian test": lambda: nk.two_sample_test(X, Y, kernel="gaussian", random_state=0),
        "NystromKME(n_landmarks=3000).fit(pooled)": lambda: nk.NystromKME(n_landmarks=3000, random_state=0).fit(Z),
    }
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeats):  # interleaved: a load change hits every call alike
        for name, call in calls.items():
            start = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - start)
    med = {name: statistics.median(t) for name, t in times.items()}
    fit = med["NystromKME(n_landmarks=3000).fit(pooled)"]
    print(f"## The default test on float32 data (issue 46): {per:.0e} rows per sample, d = 10\n")
    print("| call | median s [min, max] | / fit |\n|---|---|---|")
    for name, t in times.items():
        print(f"| {name} | {med[name]:.2f} [{min(t):.2f}, {max(t):.2f}] | {med[name] / fit:.2f} |")
    d = med["default test"]
    print(
        f"\nTargets: default <= {TARGET_FLOAT32_DEFAULT_S} s ({'ok' if d <= TARGET_FLOAT32_DEFAULT_S else 'MISS'}), "
        f"<= {TARGET_FLOAT32_FIT_RATIO}x the fit ({'ok' if d / fit <= TARGET_FLOAT32_FIT_RATIO else 'MISS'}); "
        f"peak RSS {peak_rss_mb():.0f} MB; end: {machine()}\n",
        flush=True,
    )


def accuracy_problems(rng: np.random.Generator, n: int):
    """Section A's problems: (name, X, Y) in float64."""
    yield "shift d10", rng.normal(size=(n, 10)), rng.normal(size=(n, 10)) + np.r_[0.03, np.zeros(9)]
    yield "scale d5", rng.normal(size=(n, 5)), rng.normal(size=(n, 5)) * 1.03
    yield "null d3", rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    yield "student-t d4", rng.standard_t(3, size=(n, 4)), rng.standard_t(3, size=(n, 4)) * 1.02
    mixture = np.r_[rng.normal(size=(n // 2, 2)) - 3, rng.normal(size=(n - n // 2, 2)) + 3]
    yield "mixture d2", mixture, rng.normal(size=(n, 2)) * 3.2
    yield "d50", rng.normal(size=(n, 50)), rng.normal(size=(n, 50)) + 0.01
    yield "offset 1e3", rng.normal(size=(n, 4)) + 1e3, rng.normal(size=(n, 4)) + 1e3 + np.r_[0.03, 0, 0, 0]


def float32_accuracy(per: int, seeds: int) -> None:
    """Section A: float32 data against their values in float64, the default test."""
    worst: dict[str, list[float]] = {}
    for seed in range(seeds):
        for name, X, Y in accuracy_problems(np.random.default_rng(seed), per):
            X32, Y32 = X.astype(np.float32), Y.astype(np.float32)
            low = nk.two_sample_test(X32, Y32, random_state=seed)
            ref = nk.two_sample_test(X32.astype(np.float64), Y32.astype(np.float64), random_state=seed)
            stats = np.asarray(low.kernel_statistics) - ref.kernel_statistics
            null = np.asarray(low.null_distribution) - ref.null_distribution
            w = worst.setdefault(name, [0.0, 0.0, 0.0, 0.0])
            w[0] = max(w[0], float(np.max(np.abs(stats)) / np.max(np.abs(ref.kernel_statistics))))
            w[1] = max(w[1], float(np.max(np.abs(null)) / np.max(np.abs(ref.null_distribution))))
            w[2] = max(w[2], abs(low.pvalue - ref.pvalue))
            w[3] += low.pvalue == ref.pvalue
    print(f"## The default test on float32 data against float64 (issue 46): {per} rows per sample, {seeds} seeds\n")
    print(
        "| problem | kernels' statistics, max rel. | null, max rel. | max abs(p32 - p64) | equal p |\n"
        "|---|---|---|---|---|"
    )
    for name, (s_rel, n_rel, dp, same) in worst.items():
        print(f"| {name} | {s_rel:.1e} | {n_rel:.1e} | {dp:.4f} | {int(same)}/{seeds} |")
    print(f"\nend: {machine()}\n", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10^5 per sample at the limit, 2000 for the power")
    ap.add_argument("--reps", type=int, default=10, help="repetitions for the power estimates")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs of the large tests")
    ap.add_argument("--shift", type=float, default=0.05)
    ap.add_argument("--landmarks", type=int, default=1000)
    ap.add_argument("--limit-only", action="store_true", help="only section 0 (issue 22)")
    ap.add_argument("--float32-default", action="store_true", help="only section F (issue 46)")
    ap.add_argument("--float32-accuracy", action="store_true", help="only section A (issue 46)")
    ap.add_argument("--float32-n", type=int, default=None, help="rows per sample of F (10^6) or A (20000)")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(
        f"# Two-sample benchmark\n\n- machine: {machine()}\n"
        f"- {utc_now()}; {nk.show_config('dicts')['simd']['level']}, "
        f"{nk.show_config('dicts')['openmp']['max_threads']} threads; 200 permutations\n",
        flush=True,
    )

    if args.float32_default:
        float32_default(args.float32_n or 10**6, args.repeats)
        return
    if args.float32_accuracy:
        float32_accuracy(args.float32_n or 20000, args.reps)
        return

    # 0. the single-kernel test against row pass + product at DGEMM speed
    product_limit(np.random.default_rng(22), 2 * 10**4 if args.quick else 2 * 10**5, args.landmarks, 200, args.repeats)
    if args.limit_only:
        return

    # 1. the large test against its limit
    gemm = limits.gemm_rates(4096 if not args.quick else 1024, 3, unset_openblas_env=True)["float64"]
    exp = limits.exp_rates(os.cpu_count() or 1, 100_000)["float64"]
    per = 10**5 if args.quick else 10**6
    n, m, B = 2 * per, args.landmarks, 200
    limit = 2.0 * m * n * (B + 1) / gemm + n * m / exp
    X, Y = draw(rng, per, 5, args.shift)
    kernel = nk.Gaussian(np.sqrt(2 * 5))  # median distance of N(0, I_5) pairs ~ sqrt(2 d)
    base = peak_rss_mb()
    times, res = time_calls(
        lambda: nk.two_sample_test(
            X, Y, kernel=kernel, n_landmarks=m, n_permutations=B, random_state=0, progress=False
        ),
        args.repeats,
    )
    t = statistics.median(times)
    print("## Nyström test at its limit\n")
    print(
        f"- GEMM {gemm / 1e9:.1f} GFLOP/s (numpy 4096², f64), libmvec exp {exp / 1e9:.2f}·10⁹/s (f64): "
        f"limit = 2mn(B+1)/GEMM + nm/exp = {limit:.2f} s for n = {n:.0e} pooled, m = {m}, d = 5"
    )
    print(
        f"- two_sample_test: median {t:.2f} s (min {min(times):.2f}, max {max(times):.2f}, {args.repeats} runs), "
        f"peak RSS growth {peak_rss_mb() - base:.0f} MB, p = {res.pvalue:.3f}"
    )
    print(
        f"- time / limit = **{t / limit:.2f}** (target <= {TARGET_LIMIT_RATIO}: "
        f"{'ok' if t / limit <= TARGET_LIMIT_RATIO else 'MISS'})\n",
        flush=True,
    )
    del X, Y

    # 2. the README example
    X = np.random.default_rng(0).normal(size=(10**5, 10))
    Y = np.random.default_rng(1).normal(size=(10**5, 10)) + 0.1
    times, res = time_calls(
        lambda: nk.two_sample_test(X, Y, n_permutations=200, random_state=0, progress=False), args.repeats
    )
    t = statistics.median(times)
    print(
        "## README example: `nk.two_sample_test(X, Y, n_permutations=200, random_state=0)`, 10^5 per sample, d = 10\n"
    )
    print(
        f"- m = {res.n_landmarks} (default), median {t:.2f} s (min {min(times):.2f}, max {max(times):.2f}); "
        f"target < {TARGET_README_S} s: {'ok' if t < TARGET_README_S else 'MISS'}; p = {res.pvalue:.4f}\n",
        flush=True,
    )

    # 3. time and power against the exact test
    n_small = 2000 if args.quick else 10_000
    reps = 3 if args.quick else args.reps
    print("| n per sample | method | m | median time s | power (reps) |")
    print("|---|---|---|---|---|")
    for method in ("nystrom", "exact"):
        times, rejections = [], 0
        for r in range(reps):
            Xs, Ys = draw(rng, n_small, 5, args.shift)
            start = time.perf_counter()
            res = nk.two_sample_test(Xs, Ys, kernel=kernel, method=method, random_state=r, progress=False)
            times.append(time.perf_counter() - start)
            rejections += res.pvalue <= 0.05
        print(
            f"| {n_small} | {method} | {res.n_landmarks or '-'} | {np.median(times):.2f} | "
            f"{rejections / reps:.2f} ({reps}) |",
            flush=True,
        )


if __name__ == "__main__":
    main()
