"""MMD between two samples: Nyström (m = sqrt(n) log sqrt(n) per sample) vs the exact
biased MMD by streaming sums in C++ vs blocked numpy; time, peak RSS, |difference|.

X ~ Gaussian mixture (paper Sec. 6.1, d = 10); Y = same mixture shifted by 0.1 on
every axis. Each measurement runs in a fresh process so peak RSS is its own.
Exact methods are skipped where they would take longer than --budget seconds
(estimated from the n = 10^4 run, O(n^2)).

Usage: python -m bench.mmd [--quick] [--budget SECONDS]
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from bench.harness import gaussian_kernel, machine, peak_rss_mb, run_worker, utc_now

SIGMA = 10.0  # close to the median heuristic for this mixture; fixed so all methods agree


def samples(n: int) -> tuple[np.ndarray, np.ndarray]:
    from nystrom_kme.datasets import GaussianMixture

    mix = GaussianMixture(8, 10, random_state=0)
    return mix.sample(n, random_state=1), mix.sample(n, random_state=2) + 0.1


def numpy_mmd2(X: np.ndarray, Y: np.ndarray, block: int = 4096) -> float:
    def mean_k(A, B):
        total = sum(gaussian_kernel(A[i : i + block], B, SIGMA).sum() for i in range(0, len(A), block))
        return total / (len(A) * len(B))

    return mean_k(X, X) + mean_k(Y, Y) - 2 * mean_k(X, Y)


def worker(method: str, n: int) -> None:
    import nystrom_kme as nk

    X, Y = samples(n)
    k = nk.Gaussian(SIGMA)
    base = peak_rss_mb()
    start = time.perf_counter()
    if method == "nystrom":
        value = nk.mmd2(X, Y, kernel=k, random_state=0)
    elif method == "exact_cpp":
        value = nk.mmd2_exact(X, Y, kernel=k)
    else:
        value = numpy_mmd2(X, Y)
    elapsed = time.perf_counter() - start
    print(json.dumps({"time": elapsed, "mmd": math.sqrt(max(value, 0.0)), "rss_mb": peak_rss_mb() - base}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", nargs=2, metavar=("METHOD", "N"), help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="n = 10^3, 10^4 (a smoke run)")
    ap.add_argument("--budget", type=float, default=300.0, help="skip exact methods estimated to take longer (seconds)")
    args = ap.parse_args()
    if args.worker:
        worker(args.worker[0], int(args.worker[1]))
        return
    sizes = [10**3, 10**4] if args.quick else [10**4, 10**5, 10**6]
    print(
        f"# MMD benchmark\n\n- machine: {machine()}\n- {utc_now()}"
        f"; d = 10 mixture, Y shifted by 0.1, Gaussian sigma = {SIGMA}; n1 = n2 = n\n"
    )
    print("| n | method | time s | peak RSS growth MB | MMD | abs diff vs exact C++ |")
    print("|---|---|---|---|---|---|")
    unit = {}
    for n in sizes:
        exact = None
        for method in ("exact_cpp", "numpy", "nystrom"):
            if method != "nystrom" and method in unit and unit[method] * (n / unit[method + "_n"]) ** 2 > args.budget:
                est = unit[method] * (n / unit[method + "_n"]) ** 2
                print(f"| {n:.0e} | {method} | skipped (est. {est:.0f} s) | | | |")
                continue
            r = run_worker("mmd", method, str(n))
            unit[method], unit[method + "_n"] = r["time"], n
            if method == "exact_cpp":
                exact = r["mmd"]
            diff = "" if exact is None or method == "exact_cpp" else f"{abs(r['mmd'] - exact):.2e}"
            print(f"| {n:.0e} | {method} | {r['time']:.3f} | {r['rss_mb']:.1f} | {r['mmd']:.6f} | {diff} |", flush=True)


if __name__ == "__main__":
    main()
