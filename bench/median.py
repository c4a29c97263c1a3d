"""The median heuristic (issue 21): nk.median_distance in the core against the numpy
code it replaced, on digits-like data (n = 1797, d = 64), with the fit it precedes.

    python -m bench.median              # 15 repeats, medians
    python -m bench.median --repeats 5

Data: scikit-learn's bundled digits when scikit-learn is installed (no download), else
random integers 0..16 of the same shape. Both paths draw the same 1000-row subset
(random_state=0) and give the same bits (checked here and in tests/python/test_kernels.py).
Prints a markdown table for bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

import nystrom_kme as nk
from bench.harness import machine, median_time, utc_now


def numpy_median_distance(X: np.ndarray, subset: int = 1000, random_state: int = 0) -> float:
    """The Python implementation before the core took it over (a loop over k - 1 rows)."""
    rng = np.random.default_rng(random_state)
    if X.shape[0] > subset:
        X = X[rng.choice(X.shape[0], size=subset, replace=False)]
    Z = np.asarray(X, dtype=np.float64)
    largest = float(np.abs(Z).max())
    scale = 2.0 ** math.floor(math.log2(largest)) if largest > 0 else 1.0
    Z = Z / scale
    d2 = np.concatenate([((Z[i + 1 :] - Z[i]) ** 2).sum(axis=1) for i in range(Z.shape[0] - 1)])
    return float(np.median(np.sqrt(d2))) * scale


def digits() -> tuple[np.ndarray, str]:
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        rng = np.random.default_rng(0)
        return rng.integers(0, 17, size=(1797, 64)).astype(np.float64), "random integers 0..16"
    return load_digits().data.astype(np.float64), "scikit-learn digits"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    X, source = digits()
    print(f"{utc_now()}; {machine()}")
    print(f"data: {source}, n = {X.shape[0]}, d = {X.shape[1]}; {args.repeats} repeats, medians")
    t_numpy, ref = median_time(lambda: numpy_median_distance(X), args.repeats)
    t_core, got = median_time(lambda: nk.median_distance(X, random_state=0), args.repeats)
    if got != ref:
        raise SystemExit(f"the core's median {got!r} differs from numpy's {ref!r}")
    kernel = nk.Gaussian(got)
    t_fit, _ = median_time(lambda: nk.NystromKME(kernel, random_state=0).fit(X), args.repeats)
    t_fit_median, _ = median_time(lambda: nk.NystromKME(random_state=0).fit(X), args.repeats)
    print("| step | wall s (median) |")
    print("|---|---|")
    print(f"| median distance, numpy (before) | {t_numpy:.4f} |")
    print(f"| median distance, core (`nk.median_distance`) | {t_core:.4f} |")
    print(f"| fit, numeric bandwidth | {t_fit:.4f} |")
    print(f"| fit, bandwidth='median' (core median + fit) | {t_fit_median:.4f} |")
    print(f"ratio numpy / core: {t_numpy / t_core:.1f}x; same value: {got!r}")
    print(f"end: {machine()}")


if __name__ == "__main__":
    main()
