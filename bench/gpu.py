"""The GPU path against the CPU core (correctness) and the unfused torch baseline
(speed), in one run of a few minutes on one CUDA GPU.

1. Correctness: every radial kernel, float32 and float64, K(L, X) W with k = 1 and
   k = 9 columns and K(L, L), GPU against the CPU core (``_core``): the largest
   relative difference must be <= 1e-12 (float64) and <= 1e-5 (float32).
2. Row sums K(L, X) 1 at (n, m, d) = (10^6, 1000, 10), (10^6, 1000, 100),
   (10^6, 4096, 3), (10^7, 1000, 10), Gaussian, both dtypes: this project's fused
   kernel against torch's unfused GEMM + exp + sum (in row chunks), median of
   ``--repeats`` timed runs after a warm-up; each case also checked against the CPU
   core on 16 of its landmarks over all n rows.
3. End to end with the data on the GPU: the Nyström two-sample test, 10^6 rows per
   sample, m = 1000, 200 permutations; a fit at n = 10^7, m = 1000, d = 10.

Prints a markdown table headed by the GPU's name. Without CuPy or a GPU it says so
on stderr and exits with status 2 (no traceback).

Usage: python -m bench.gpu [--quick] [--repeats 3]
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

CASES = [(10**6, 1000, 10), (10**6, 1000, 100), (10**6, 4096, 3), (10**7, 1000, 10)]
TOL = {"float32": 1e-5, "float64": 1e-12}


def gpu_or_exit() -> tuple[Any, str]:
    """(cupy, the GPU's name), or a message on stderr and exit status 2."""
    try:
        import cupy as cp
    except ImportError as err:
        sys.exit(_fail(f"no CUDA GPU usable: CuPy is not installed ({err}); pip install 'nystrom-kme[gpu]'"))
    try:
        count = cp.cuda.runtime.getDeviceCount()
    except Exception as err:  # no driver, no device
        sys.exit(_fail(f"no CUDA GPU usable: {type(err).__name__}: {err}"))
    if count < 1:
        sys.exit(_fail("no CUDA GPU present"))
    props = cp.cuda.runtime.getDeviceProperties(0)
    name = props["name"]
    return cp, name.decode() if isinstance(name, bytes) else str(name)


def _fail(message: str) -> int:
    print(f"bench.gpu: {message}", file=sys.stderr)
    return 2


def timed(cp: Any, fn: Callable[[], Any], repeats: int) -> float:
    """Median seconds of ``repeats`` runs after one warm-up (device synchronized)."""
    fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        cp.cuda.Device().synchronize()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def rel(a: Any, b: Any) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-300))


def correctness(cp: Any) -> list[str]:
    import nystrom_kme as nk
    from nystrom_kme import _core
    from nystrom_kme.cuda import sums

    rng = np.random.default_rng(0)
    kernels = [
        nk.Gaussian(2.0),
        nk.Laplacian(2.0),
        nk.Matern(2.0, nu=1.5),
        nk.Matern(2.0, nu=2.5),
        nk.InverseMultiquadric(2.0),
    ]
    rows, failed = [], []
    for dtype in (np.float32, np.float64):
        X = rng.normal(size=(50_003, 10)).astype(dtype)
        L = rng.normal(size=(300, 10)).astype(dtype)
        W = rng.random((X.shape[0], 9))
        Xd, Ld, Wd = cp.asarray(X), cp.asarray(L), cp.asarray(W)
        for k in kernels:
            core = k.to_core()
            e1 = rel(cp.asnumpy(sums.row_sums(Ld, Xd, k)), _core.kernel_row_sums(L, X, core, 0))
            e9 = rel(cp.asnumpy(sums.weighted_kernel_sums(Ld, Xd, Wd, k)), _core.kernel_sums(L, X, W, core, 0))
            em = rel(cp.asnumpy(sums.kernel_matrix(Ld, Ld, k)), _core.kernel_sums(L, L, np.eye(300), core, 0))
            worst = max(e1, e9, em)
            ok = worst <= TOL[np.dtype(dtype).name]
            if not ok:
                failed.append(f"{k.name} {np.dtype(dtype).name}")
            rows.append(
                f"| {k.name} | {np.dtype(dtype).name} | {e1:.1e} | {e9:.1e} | {em:.1e} | {'ok' if ok else 'FAIL'} |"
            )
    table = ["| kernel | dtype | K(L,X)1 | K(L,X)W, k=9 | K(L,L) | ≤ tol |", "|---|---|---|---|---|---|", *rows]
    if failed:
        table.append(f"\nCORRECTNESS FAILED: {', '.join(failed)}")
    return table


def torch_unfused(torch: Any, L: Any, X: Any, bandwidth: float) -> Any:
    """sum_j exp(-||l - x_j||^2 / (2 sigma^2)) by GEMM + exp + sum, rows in chunks
    (the m x chunk block <= 1 GiB)."""
    m = L.shape[0]
    chunk = max(1, (1 << 30) // (m * X.element_size()))
    l2 = (L * L).sum(1, keepdim=True)
    out = torch.zeros(m, dtype=torch.float64, device=L.device)
    scale = -0.5 / bandwidth**2
    for start in range(0, X.shape[0], chunk):
        x = X[start : start + chunk]
        d2 = (l2 + (x * x).sum(1)[None, :] - 2.0 * (L @ x.T)).clamp_min_(0)
        out += torch.exp(d2 * scale).sum(1, dtype=torch.float64)
    return out


def row_sum_cases(cp: Any, quick: bool, repeats: int) -> list[str]:
    import nystrom_kme as nk
    from nystrom_kme import _core
    from nystrom_kme.cuda import sums

    try:
        import torch

        have_torch = torch.cuda.is_available()
    except ImportError:
        torch, have_torch = None, False
    rows = []
    for n, m, d in CASES:
        n = n // 100 if quick else n
        for dtype in (cp.float32, cp.float64):
            name = np.dtype(dtype).name
            gen = cp.random.default_rng(1)
            X = gen.standard_normal((n, d), dtype=dtype)
            L = gen.standard_normal((m, d), dtype=dtype)
            k = nk.Gaussian(math.sqrt(d))
            ours = timed(cp, lambda L=L, X=X, k=k: sums.row_sums(L, X, k), repeats)
            sub = cp.asnumpy(L[:16])  # correctness at full n on 16 landmarks
            err = rel(
                cp.asnumpy(sums.row_sums(L[:16], X, k)), _core.kernel_row_sums(sub, cp.asnumpy(X), k.to_core(), 0)
            )
            ok = "ok" if err <= TOL[name] else "FAIL"
            if have_torch:
                tL, tX, scale = torch.from_dlpack(L), torch.from_dlpack(X), math.sqrt(d)
                base = timed(
                    cp,
                    lambda tL=tL, tX=tX, s=scale: (torch_unfused(torch, tL, tX, s), torch.cuda.synchronize()),
                    repeats,
                )
                del tL, tX
                base_s, ratio = f"{base:.4f}", f"{base / ours:.1f}×"
            else:
                base_s, ratio = "n/a (no CUDA torch)", "–"
            rows.append(f"| ({n:.0e}, {m}, {d}) | {name} | {ours:.4f} | {base_s} | {ratio} | {err:.1e} {ok} |")
            del X, L
            cp.get_default_memory_pool().free_all_blocks()
    return [
        "| (n, m, d) | dtype | fused (s) | torch unfused (s) | speed-up | vs CPU core |",
        "|---|---|---|---|---|---|",
        *rows,
    ]


def end_to_end(cp: Any, quick: bool) -> list[str]:
    import nystrom_kme as nk

    scale = 100 if quick else 1
    gen = cp.random.default_rng(2)
    n = 10**6 // scale
    X = gen.standard_normal((n, 10), dtype=cp.float32)
    Y = gen.standard_normal((n, 10), dtype=cp.float32) + 0.01
    t0 = time.perf_counter()
    res = nk.two_sample_test(
        X, Y, kernel=nk.Gaussian(math.sqrt(10)), n_landmarks=1000, n_permutations=200, random_state=0
    )
    t_test = time.perf_counter() - t0
    del X, Y
    n_fit = 10**7 // scale
    Z = gen.standard_normal((n_fit, 10), dtype=cp.float32)
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    nk.NystromKME(nk.Gaussian(math.sqrt(10)), n_landmarks=1000, random_state=0).fit(Z)
    t_fit = time.perf_counter() - t0
    return [
        "| task | seconds |",
        "|---|---|",
        f"| two-sample test, {n:.0e} per sample, m = 1000, 200 permutations, float32 "
        f"(p = {res.pvalue:.3f}) | {t_test:.2f} |",
        f"| fit, n = {n_fit:.0e}, m = 1000, d = 10, float32, data on the GPU | {t_fit:.2f} |",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="sizes / 100 (a smoke run)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    cp, gpu = gpu_or_exit()
    print(f"## GPU path: {gpu}{' (quick)' if args.quick else ''}\n")
    check = correctness(cp)
    print("### Against the CPU core (largest relative difference)\n", *check, sep="\n")
    print(
        "\n### Row sums K(L, X) 1, Gaussian, median seconds\n", *row_sum_cases(cp, args.quick, args.repeats), sep="\n"
    )
    print("\n### End to end (data on the GPU)\n", *end_to_end(cp, args.quick), sep="\n")
    return 1 if any("FAIL" in line for line in check) else 0


if __name__ == "__main__":
    sys.exit(main())
