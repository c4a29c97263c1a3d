"""The permuted sums K(L, Z) W at BLAS speed, and every kernel of a collection in one
pass (issue 22).

1. The product part of ``_core.split_kernel_sums`` on one thread, per SIMD level:
   n pooled rows, m = 1000 landmarks, B = 200 permutations, d = 5, Gaussian kernel.
   product time = split_kernel_sums - kernel_row_sums (the same kernel values, one
   weight column: the row pass), for 2 m n (B + 1) flops; against numpy's OpenBLAS
   DGEMM on one thread in the same process, at the reduction's shape
   (m x n')(n' x (B + 1)), n' = min(n, 50000), and at 2048^2. Target: product rate
   >= 0.85 x the higher DGEMM rate.
   avx512: OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (OpenBLAS picks its AVX-512
   kernel); avx2: NYSTROM_KME_SIMD=avx2 against OPENBLAS_CORETYPE=Haswell. Each level
   runs in its own process; threadpoolctl reports the kernel OpenBLAS ran.
2. K kernels in one pass: K = 20 (Gaussian and Laplacian at 10 bandwidths each,
   0.1 to 10 times sqrt(2 d)), m = 400, n = 8000 pooled, d = 10, B = 200, one thread:
   split_kernel_sums_multi against K separate split_kernel_sums calls, against K
   product parts + one distance pass (the separate calls less K - 1 distance passes,
   kernel_row_sums of one kernel) and against the limit 2 K m n (B + 1) / DGEMM rate +
   one distance pass.

Every time is the best of --repeats interleaved runs, as CPU time of the process and
as wall time: on a loaded machine a one-thread call's CPU time is the time it ran,
its wall time also the time it waited (the machine line gives the load average).

Usage: python -m bench.multi_column [--quick] [--repeats R] [--levels avx512,avx2]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

from bench.harness import ROOT, machine, utc_now

TARGET_FRACTION = 0.85
GEMM_DEPTH = 50_000  # inner dimension of the DGEMM at the reduction's shape (memory)
OPENBLAS_OVERRIDES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def best_times(calls: dict, repeats: int) -> dict:
    """{name: (best CPU s, best wall s)} over `repeats` rounds, the calls interleaved."""
    best = {name: [float("inf"), float("inf")] for name in calls}
    for _ in range(repeats):
        for name, fn in calls.items():
            c0, w0 = time.process_time(), time.perf_counter()
            fn()
            c1, w1 = time.process_time(), time.perf_counter()
            best[name][0] = min(best[name][0], c1 - c0)
            best[name][1] = min(best[name][1], w1 - w0)
    return {name: tuple(v) for name, v in best.items()}


def worker(level: str, n: int, repeats: int, multi: bool) -> dict:
    from threadpoolctl import threadpool_info, threadpool_limits

    from nystrom_kme import _core

    _core.set_simd_level(level)
    rng = np.random.default_rng(0)
    out: dict = {"level": _core.simd_level()}
    with threadpool_limits(1):
        out["blas"] = [d.get("architecture") for d in threadpool_info() if d.get("user_api") == "blas"]
        m, B, d = 1000, 200, 5
        Z = rng.normal(size=(n, d))
        L = Z[:m].copy()
        kernel = _core.Kernel("gaussian", np.sqrt(2 * d))
        n_gemm = min(n, GEMM_DEPTH)
        A, Wd, C = rng.normal(size=(m, n_gemm)), rng.normal(size=(n_gemm, B + 1)), np.empty((m, B + 1))
        S1, S2, S3 = (np.empty((2048, 2048)) for _ in range(3))
        S1[...] = rng.normal(size=S1.shape)
        S2[...] = rng.normal(size=S2.shape)
        calls = {
            "row pass": lambda: _core.kernel_row_sums(L, Z, kernel, 1),
            "split": lambda: _core.split_kernel_sums(L, Z, _core.RandomSplits(n // 2, n - n // 2, B, 1), kernel, 1),
            "dgemm shape": lambda: np.matmul(A, Wd, out=C),
            "dgemm square": lambda: np.matmul(S1, S2, out=S3),
        }
        out["n"], out["m"], out["B"], out["n_gemm"] = n, m, B, n_gemm
        out["product"] = best_times(calls, repeats)
        del A, Wd, C, Z
        if multi:
            K, m, n, d = 20, 400, 8000, 10
            Z = rng.normal(size=(n, d))
            L = Z[:m].copy()
            grid = np.sqrt(2 * d) * np.geomspace(0.1, 10, 10)
            kernels = [_core.Kernel(name, h) for name in ("gaussian", "laplacian") for h in grid]
            A, Wd, C = rng.normal(size=(m, n)), rng.normal(size=(n, B + 1)), np.empty((m, B + 1))

            def splits():
                return _core.RandomSplits(n // 2, n - n // 2, B, 1)

            def separate():
                return [_core.split_kernel_sums(L, Z, splits(), k, 1) for k in kernels]

            one = _core.split_kernel_sums_multi(L, Z, splits(), kernels, 1)
            sep = separate()
            out["multi_agreement"] = max(float(np.abs(one[j] - sep[j]).max() / np.abs(sep[j]).max()) for j in range(K))
            calls = {
                "multi": lambda: _core.split_kernel_sums_multi(L, Z, splits(), kernels, 1),
                "separate": separate,
                "distance pass": lambda: _core.kernel_row_sums(L, Z, kernels[0], 1),
                "dgemm shape": lambda: np.matmul(A, Wd, out=C),
                "dgemm square": lambda: np.matmul(S1, S2, out=S3),
            }
            out["multi_shape"] = {"K": K, "m": m, "n": n, "d": d, "B": B}
            out["multi"] = best_times(calls, max(3, repeats))
    return out


_DGEMM_CODE = r"""
import json, sys, time
import numpy as np
from threadpoolctl import threadpool_info, threadpool_limits
threads, m, n, k, reps = map(int, sys.argv[1:6])
rng = np.random.default_rng(0)
res = {}
with threadpool_limits(threads):
    res["blas"] = [d.get("architecture") for d in threadpool_info() if d.get("user_api") == "blas"]
    for name, (a, b, c) in {"shape": (m, n, k), "square": (2048, 2048, 2048)}.items():
        A, B, C = rng.normal(size=(a, b)), rng.normal(size=(b, c)), np.empty((a, c))
        best = float("inf")
        for _ in range(reps + 1):
            t0 = time.perf_counter(); np.matmul(A, B, out=C); best = min(best, time.perf_counter() - t0)
        res[name] = 2.0 * a * b * c / best
print(json.dumps(res))
"""


def dgemm_rates(threads: int, m: int, n: int, k: int, repeats: int = 5) -> dict:
    """numpy's OpenBLAS DGEMM flop/s on `threads` threads (best wall time of `repeats`), with
    OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset, in a subprocess: 'shape' for (m x n')(n' x k),
    n' = min(n, GEMM_DEPTH), 'square' for 2048^2; 'blas': the OpenBLAS kernel that ran."""
    env = {key: v for key, v in os.environ.items() if key not in OPENBLAS_OVERRIDES}
    args = [str(threads), str(m), str(min(n, GEMM_DEPTH)), str(k), str(repeats)]
    res = subprocess.run(
        [sys.executable, "-c", _DGEMM_CODE, *args], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(res.stdout.strip().splitlines()[-1])


def run_level(level: str, n: int, repeats: int, multi: bool) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in OPENBLAS_OVERRIDES}
    if level == "avx2":
        env["OPENBLAS_CORETYPE"] = "Haswell"
    env["OMP_NUM_THREADS"] = "1"
    command = [sys.executable, "-m", "bench.multi_column", "--worker", level, str(n), str(repeats), str(int(multi))]
    res = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"worker {level} failed:\n{res.stderr}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def report(r: dict) -> None:
    n, m, B = r["n"], r["m"], r["B"]
    flops = 2.0 * m * n * (B + 1)
    t = r["product"]
    print(
        f"### {r['level']} (OpenBLAS kernel: {', '.join(map(str, r['blas']))}), n = {n:.0e} pooled, "
        f"m = {m}, B = {B}, d = 5, one thread\n"
    )
    print(
        "| clock | row pass s | split_kernel_sums s | product s | product GFLOP/s | DGEMM shape GFLOP/s "
        "| DGEMM 2048² GFLOP/s | product / DGEMM shape | product / DGEMM 2048² |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    shape_flops = 2.0 * m * r["n_gemm"] * (B + 1)
    for i, clock in enumerate(("CPU", "wall")):
        prod = t["split"][i] - t["row pass"][i]
        rate = flops / prod / 1e9
        shape = shape_flops / t["dgemm shape"][i] / 1e9
        square = 2.0 * 2048**3 / t["dgemm square"][i] / 1e9
        print(
            f"| {clock} | {t['row pass'][i]:.3f} | {t['split'][i]:.3f} | {prod:.3f} | {rate:.1f} | {shape:.1f} "
            f"| {square:.1f} | {rate / shape:.2f} | {rate / square:.2f} |"
        )
    cpu_prod = flops / (t["split"][0] - t["row pass"][0])
    worst = min(cpu_prod / (shape_flops / t["dgemm shape"][0]), cpu_prod / (2.0 * 2048**3 / t["dgemm square"][0]))
    print(
        f"\nTarget product >= {TARGET_FRACTION} x DGEMM (CPU clock, against the higher DGEMM rate): "
        f"{worst:.2f} {'ok' if worst >= TARGET_FRACTION else 'MISS'}\n",
        flush=True,
    )
    if "multi" not in r:
        return
    s = r["multi_shape"]
    t = r["multi"]
    flops = 2.0 * s["K"] * s["m"] * s["n"] * (s["B"] + 1)
    print(
        f"### {r['level']}: K = {s['K']} kernels in one pass, m = {s['m']}, n = {s['n']} pooled, "
        f"d = {s['d']}, B = {s['B']}, one thread\n"
    )
    print(
        "| clock | split_kernel_sums_multi s | K separate calls s | distance pass s | K products + one "
        "distance pass s | limit s (2KmnB'/DGEMM 2048² + distance pass) | multi / (K products + pass) "
        "| multi / limit | separate / multi |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for i, clock in enumerate(("CPU", "wall")):
        square = 2.0 * 2048**3 / t["dgemm square"][i]
        limit = flops / square + t["distance pass"][i]
        # a separate call = its distance pass + its product part
        products = t["separate"][i] - (s["K"] - 1) * t["distance pass"][i]
        print(
            f"| {clock} | {t['multi'][i]:.3f} | {t['separate'][i]:.3f} | {t['distance pass'][i]:.4f} "
            f"| {products:.3f} | {limit:.3f} | {t['multi'][i] / products:.2f} | {t['multi'][i] / limit:.2f} "
            f"| {t['separate'][i] / t['multi'][i]:.2f} |"
        )
    print(
        f"\nmax |S_multi - S_separate| / max |S_separate| over the {s['K']} kernels: {r['multi_agreement']:.1e}\n",
        flush=True,
    )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        level, n, repeats, multi = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), bool(int(sys.argv[5]))
        print(json.dumps(worker(level, n, repeats, multi)))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n = 4e4 pooled rows instead of 4e5")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--levels", default="avx512,avx2")
    args = ap.parse_args()
    from nystrom_kme import _core

    n = 40_000 if args.quick else 400_000
    levels = [lv for lv in args.levels.split(",") if lv in _core.available_simd_levels()]
    print(f"# Multi-column reduction (issue 22)\n\n- machine: {machine()}\n- {utc_now()}\n", flush=True)
    for level in levels:
        report(run_level(level, n, args.repeats, multi=True))
    print(f"- end: {machine()}")


if __name__ == "__main__":
    main()
