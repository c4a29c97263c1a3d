#!/usr/bin/env python3
"""Two-sample tests: time and power of the Nyström permutation test vs the exact one
at n = 10^4 per sample, and the Nyström test alone at 10^6 per sample.

H1: X ~ N(0, I_5), Y ~ N(0, I_5) shifted by `--shift` on the first axis.
Usage: python bench/two_sample.py [--quick] [--reps R] [--shift S]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import machine, peak_rss_mb  # noqa: E402

import nystrom_kme as nk  # noqa: E402


def draw(rng, n, shift):
    X = rng.normal(size=(n, 5))
    Y = rng.normal(size=(n, 5))
    Y[:, 0] += shift
    return X, Y


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--shift", type=float, default=0.05)
    ap.add_argument("--large-landmarks", type=int, default=1000)
    args = ap.parse_args()
    n = 2000 if args.quick else 10_000
    reps = 3 if args.quick else args.reps
    rng = np.random.default_rng(0)
    kernel = nk.Gaussian(np.sqrt(2 * 5))  # median distance of N(0, I_5) pairs ~ sqrt(2 d)
    print(f"# Two-sample benchmark\n\n- machine: {machine()}\n- {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
          f"; d = 5, shift {args.shift} on one axis, Gaussian sigma = sqrt(10), 200 permutations\n")
    print("| n per sample | method | m | median time s | power (reps) |")
    print("|---|---|---|---|---|")
    for method in ("nystrom", "exact"):
        times, rejections = [], 0
        for r in range(reps):
            X, Y = draw(rng, n, args.shift)
            start = time.perf_counter()
            res = nk.two_sample_test(X, Y, kernel=kernel, method=method, random_state=r, progress=False)
            times.append(time.perf_counter() - start)
            rejections += res.pvalue <= 0.05
        print(f"| {n} | {method} | {res.n_landmarks or '-'} | {np.median(times):.2f} | "
              f"{rejections / reps:.2f} ({reps}) |", flush=True)
    big = 10**5 if args.quick else 10**6
    X, Y = draw(rng, big, args.shift)
    base = peak_rss_mb()
    start = time.perf_counter()
    res = nk.two_sample_test(X, Y, kernel=kernel, n_landmarks=args.large_landmarks, random_state=0,
                             progress=False)
    elapsed = time.perf_counter() - start
    print(f"| {big} | nystrom | {res.n_landmarks} | {elapsed:.2f} (1 run; peak RSS growth "
          f"{peak_rss_mb() - base:.0f} MB) | p = {res.pvalue:.3f} |")


if __name__ == "__main__":
    main()
