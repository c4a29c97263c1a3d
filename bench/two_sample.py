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

Usage: python -m bench.two_sample [--quick] [--reps R] [--shift S] [--repeats K] [--limit-only]
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="10^5 per sample at the limit, 2000 for the power")
    ap.add_argument("--reps", type=int, default=10, help="repetitions for the power estimates")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs of the large tests")
    ap.add_argument("--shift", type=float, default=0.05)
    ap.add_argument("--landmarks", type=int, default=1000)
    ap.add_argument("--limit-only", action="store_true", help="only section 0 (issue 22)")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(
        f"# Two-sample benchmark\n\n- machine: {machine()}\n"
        f"- {utc_now()}; {nk.show_config('dicts')['simd']['level']}, "
        f"{nk.show_config('dicts')['openmp']['max_threads']} threads; 200 permutations\n",
        flush=True,
    )

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
