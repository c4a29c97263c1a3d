"""The GPU path on one CUDA GPU: its ceilings, correctness against the CPU core, the row
sums against unfused torch, the permutation test's sums, and the end-to-end fit and
tests with the data on the GPU. A few minutes; sections run in order and a failing
section is reported and skipped, so one run gives every number it can.

1. ``env``: the GPU, the CPU, the libraries.
2. ``ceilings``: device-to-device copy bandwidth, the special-function unit's exp2
   rate (the fused row sums' limit at small d), cuBLAS SGEMM (FP32 and TF32).
3. ``correct``: every radial kernel, float32 and float64, every row-sum path (small d,
   tensor cores, the multi-column kernel), K(L, L), the split labels (bit for bit) and
   the binned sums, against the CPU core (``_core``): largest relative difference
   <= 1e-12 (float64) and <= 1e-5 (float32); the one-pass TF32 variant's error is
   reported, not required.
4. ``rowsums``: Gaussian K(L, X) 1 at the sizes of CASES: the library's path, the
   other paths of the same program, and torch's unfused GEMM + exp + sum (in row
   chunks), median of ``--repeats`` after a warm-up, kernel evaluations per second;
   each checked against the CPU core on 16 landmarks over all n rows, and float32
   against the float64 path.
   ``paths``: the fused kernels against the cuBLAS path beyond d = 16 (PATH_CASES),
   where the routing of ``program.row_sums_path`` switches.
5. ``splits``: the permutation test's sums K(L, Z) W over 2·10^6 pooled rows, B + 1 =
   201 columns: the labels drawn on the GPU, the fused multi-column kernel, and
   kernel blocks times W by cuBLAS.
6. ``e2e``: the fit at n = 10^7 (m = 1000, d = 10), the single-kernel test and the
   aggregated test at 10^6 per sample (m = 1000, B = 200), data on the GPU, float32.

Prints Markdown headed by the GPU's name; ``--json PATH`` writes every number. Without
CuPy or a GPU it says so on stderr and exits with status 2 (no traceback).

Usage: python -m bench.gpu [--quick] [--repeats 5] [--only SECTION ...] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import subprocess
import sys
import time
import traceback
from typing import Any, Callable

import numpy as np

#: (n, m, d) of the row-sum timings.
CASES = [
    (10**6, 1000, 10),
    (10**6, 1000, 100),
    (10**6, 4096, 3),
    (10**6, 4096, 16),
    (10**7, 1000, 10),
    (10**6, 4096, 256),
]
TOL = {"float32": 1e-5, "float64": 1e-12}
SECTIONS = ("env", "ceilings", "correct", "rowsums", "paths", "splits", "e2e")
#: (m, d) of the crossover timings of the row-sum paths beyond row_sums_small (n = 10^6).
PATH_CASES = [(m, d) for m in (1000, 4096) for d in (24, 40, 64, 96, 128, 192)]
RESULTS: dict[str, Any] = {}


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


def table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


# -- 1. environment ---------------------------------------------------------------


def env(cp: Any, args: argparse.Namespace) -> str:
    import nystrom_kme as nk

    props = cp.cuda.runtime.getDeviceProperties(0)
    info = {
        "gpu": props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
        "multiprocessors": props["multiProcessorCount"],
        "memory_GiB": round(props["totalGlobalMem"] / 2**30, 1),
        "l2_MiB": round(props["l2CacheSize"] / 2**20, 1),
        "compute_capability": f"{props['major']}.{props['minor']}",
        "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(),
        "cuda_driver": cp.cuda.runtime.driverGetVersion(),
        "cupy": cp.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
        "nystrom_kme_simd": nk.simd_level(),
    }
    try:
        import torch

        info["torch"] = torch.__version__
    except ImportError:
        info["torch"] = None
    for query, key in (("clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu", "nvidia_smi"),):
        try:
            out = subprocess.run(
                ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"], capture_output=True, text=True
            )
            info[key] = out.stdout.strip()
        except OSError:
            pass
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        info["cpu"] = next((ln.split(":", 1)[1].strip() for ln in lscpu.splitlines() if "Model name" in ln), "?")
    except OSError:
        info["cpu"] = platform.processor()
    import os

    info["cpus"] = os.cpu_count()
    info["load"] = os.getloadavg()
    RESULTS["env"] = info
    return table(["what", "value"], [[k, v] for k, v in info.items()])


# -- 2. ceilings ----------------------------------------------------------------------

_EXP2_SOURCE = r"""
extern "C" __global__ void exp2_rate(float* out, int iters) {
  float x[8];
  for (int j = 0; j < 8; ++j) x[j] = (threadIdx.x + j) * 1e-3f;
  for (int i = 0; i < iters; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(x[j]) : "f"(-x[j]));
  float s = 0.f;
  for (int j = 0; j < 8; ++j) s += x[j];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
"""


def ceilings(cp: Any, args: argparse.Namespace) -> str:
    rows = []
    n = (1 << 28) if not args.quick else (1 << 22)  # 1 GiB of float32
    a = cp.random.default_rng(0).standard_normal(n, dtype=cp.float32)
    b = cp.empty_like(a)
    t = timed(cp, lambda a=a, b=b: b.__setitem__(Ellipsis, a), args.repeats)
    copy = 2 * a.nbytes / t
    rows.append(["device-to-device copy (bytes read + written)", f"{copy / 1e12:.2f} TB/s"])
    del a, b
    kernel = cp.RawKernel(_EXP2_SOURCE, "exp2_rate")
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    blocks, threads, iters = sms * 16, 256, 4096
    out = cp.empty(blocks * threads, dtype=cp.float32)
    t = timed(cp, lambda: kernel((blocks,), (threads,), (out, np.int32(iters))), args.repeats)
    exp_rate = blocks * threads * iters * 8 / t
    rows.append(["exp2 (ex2.approx, the special-function unit)", f"{exp_rate:.3e} /s"])
    RESULTS["ceilings"] = {"copy_Bps": copy, "exp2_per_s": exp_rate}
    try:
        import torch

        for tf32 in (False, True):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            for shape in ((8192, 8192, 8192), (4096, 256, 65536)):
                m, k, n2 = shape
                A = torch.randn(m, k, device="cuda")
                B = torch.randn(k, n2, device="cuda")
                t = timed(cp, lambda A=A, B=B: (A @ B, torch.cuda.synchronize()), args.repeats)
                flops = 2 * m * k * n2 / t
                label = f"torch matmul float32{' TF32' if tf32 else ''} ({m}×{k})({k}×{n2})"
                rows.append([label, f"{flops / 1e12:.1f} TFLOP/s"])
                RESULTS["ceilings"][label] = flops
                del A, B
        torch.backends.cuda.matmul.allow_tf32 = False
    except ImportError:
        rows.append(["torch", "not installed"])
    return table(["ceiling", "measured"], rows)


# -- 3. correctness -------------------------------------------------------------------


def _data(rng: np.random.Generator, n: int, d: int, dtype: Any) -> np.ndarray:
    return (rng.normal(size=(n, d)) * np.sqrt(2.0 / d) + 3.0).astype(dtype)


def correct(cp: Any, args: argparse.Namespace) -> str:
    import nystrom_kme as nk
    from nystrom_kme import _core
    from nystrom_kme.cuda import program as program
    from nystrom_kme.cuda import sums

    rng = np.random.default_rng(0)
    kernels = [
        nk.Gaussian(1.0),
        nk.Laplacian(1.3),
        nk.Matern(0.9, nu=1.5),
        nk.Matern(1.1, nu=2.5),
        nk.InverseMultiquadric(0.8),
    ]
    rows, failed = [], []
    n = 50_003 if not args.quick else 5003
    for dtype in (np.float32, np.float64):
        name = np.dtype(dtype).name
        for d in (3, 16, 40, 256):
            X, L = _data(rng, n, d, dtype), _data(rng, 300, d, dtype)
            w = rng.random((n, 1))
            W = rng.random((n, 9))
            Xd, Ld = cp.asarray(X), cp.asarray(L)
            for k in kernels:
                core = k.to_core()
                path = program.row_sums_path(np.dtype(dtype), 300, d, 1)
                e1 = rel(cp.asnumpy(sums.row_sums(Ld, Xd, k)), _core.kernel_row_sums(L, X, core, 0))
                ew = rel(
                    cp.asnumpy(sums.weighted_kernel_sums(Ld, Xd, cp.asarray(w), k)), _core.kernel_sums(L, X, w, core, 0)
                )
                want9 = _core.kernel_sums(L, X, W, core, 0)
                e9 = max(
                    rel(cp.asnumpy(sums.weighted_kernel_sums(Ld, Xd, cp.asarray(W), k, path=p)), want9)
                    for p in ("matrix", "partial")
                )
                em = rel(cp.asnumpy(sums.kernel_matrix(Ld, Ld, k)), _core.kernel_sums(L, L, np.eye(300), core, 0))
                worst = max(e1, ew, e9, em)
                ones = _core.kernel_row_sums(L, X, core, 0)
                e_other = max(
                    rel(cp.asnumpy(sums.weighted_kernel_sums(Ld, Xd, None, k, path=p))[:, 0], ones)
                    for p in (("gemm", "tc") if dtype == np.float32 else ("gemm",))
                )
                worst = max(worst, e_other)
                ok = worst <= TOL[name]
                if not ok:
                    failed.append(f"{k.name} {name} d={d}")
                rows.append(
                    [
                        k.name,
                        name,
                        d,
                        path,
                        f"{e1:.1e}",
                        f"{ew:.1e}",
                        f"{e9:.1e}",
                        f"{em:.1e}",
                        f"{e_other:.1e}",
                        "ok" if ok else "FAIL",
                    ]
                )
    # split labels, bit for bit
    from nystrom_kme.permutation import SplitSpec

    spec = SplitSpec(300_001, 250_000, 200, 12345)
    cpu, gpu = spec.new(), sums.DeviceSplits(spec.n1, spec.n2, spec.n_permutations, spec.seed)
    same = all(
        np.array_equal(cp.asnumpy(gpu.next_weights(r)), cpu.next_weights(r)) for r in (131_072, 1, 262_144, 156_784)
    )
    if not same:
        failed.append("split labels")
    # binned sums of a FUSE collection
    from nystrom_kme import sources

    bins_rows = []
    for dtype in (np.float32, np.float64):
        X = _data(rng, 100_000, 10, dtype)
        L = X[:500].copy()
        coll = list(nk.KernelCollection().resolve(sources.as_source(X), rng))
        bins = rng.integers(-1, 2048, size=X.shape[0])
        e = rel(
            sources.as_source(cp.asarray(X)).bin_sums(L, coll, bins, 2048),
            sources.as_source(X).bin_sums(L, coll, bins, 2048),
        )
        bins_rows.append([np.dtype(dtype).name, f"{e:.1e}", "ok" if e <= TOL[np.dtype(dtype).name] else "FAIL"])
        if e > TOL[np.dtype(dtype).name]:
            failed.append(f"bin sums {np.dtype(dtype).name}")
    RESULTS["correct"] = {"rows": rows, "labels_identical": same, "bins": bins_rows, "failed": failed}
    out = [
        table(
            [
                "kernel",
                "dtype",
                "d",
                "path",
                "K(L,X)1",
                "K(L,X)w",
                "K(L,X)W k=9 (matrix, partial)",
                "K(L,L)",
                "K(L,X)1 other paths",
                "all ≤ tol",
            ],
            rows,
        ),
        f"\nSplit labels on the GPU identical to the CPU core's (5.5·10^5 rows, 201 columns): {same}",
        "\nBinned sums (20 kernels, 10^5 rows, 2048 bins, d = 10) against the CPU core:\n",
        table(["dtype", "rel. difference", "≤ tol"], bins_rows),
    ]
    if failed:
        out.append(f"\nCORRECTNESS FAILED: {', '.join(failed)}")
    return "\n".join(out)


# -- 4. row sums ------------------------------------------------------------------------


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


def rowsums(cp: Any, args: argparse.Namespace) -> str:
    import nystrom_kme as nk
    from nystrom_kme import _core
    from nystrom_kme.cuda import program as program
    from nystrom_kme.cuda import sums

    try:
        import torch

        have_torch = torch.cuda.is_available()
        torch.backends.cuda.matmul.allow_tf32 = False
    except ImportError:
        torch, have_torch = None, False
    rows, record = [], []
    for n, m, d in CASES:
        n = n // 100 if args.quick else n
        f64_ref = None
        for dtype in (cp.float64, cp.float32):
            name = np.dtype(dtype).name
            gen = cp.random.default_rng(1)
            X = gen.standard_normal((n, d), dtype=cp.float64).astype(dtype)
            L = gen.standard_normal((m, d), dtype=cp.float64).astype(dtype)
            k = nk.Gaussian(math.sqrt(d))
            path = program.row_sums_path(np.dtype(name), m, d, 1)
            ours = timed(cp, lambda L=L, X=X, k=k: sums.row_sums(L, X, k), args.repeats)
            result = cp.asnumpy(sums.row_sums(L, X, k))
            if name == "float64":
                f64_ref = result
            sub = cp.asnumpy(L[:16])
            err = rel(
                cp.asnumpy(sums.row_sums(L[:16], X, k)), _core.kernel_row_sums(sub, cp.asnumpy(X), k.to_core(), 0)
            )
            vs64 = rel(result, f64_ref) if name == "float32" and f64_ref is not None else None
            others = {}
            alts = ["small", "tc", "gemm", "partial"] if name == "float32" else ["small", "gemm", "partial"]
            for alt in alts:
                if alt == path or (alt == "small" and d > 16):
                    continue
                t_alt = timed(
                    cp, lambda L=L, X=X, k=k, a=alt: sums.weighted_kernel_sums(L, X, None, k, path=a), args.repeats
                )
                got = cp.asnumpy(sums.weighted_kernel_sums(L, X, None, k, path=alt))[:, 0]
                others[alt] = (t_alt, rel(got, f64_ref) if f64_ref is not None else float("nan"))
            if have_torch:
                tL, tX, width = torch.from_dlpack(L), torch.from_dlpack(X), math.sqrt(d)
                base = timed(
                    cp,
                    lambda tL=tL, tX=tX, s=width: (torch_unfused(torch, tL, tX, s), torch.cuda.synchronize()),
                    max(1, args.repeats // 2),
                )
                del tL, tX
            else:
                base = float("nan")
            evals = n * m / ours
            rec = {
                "n": n,
                "m": m,
                "d": d,
                "dtype": name,
                "path": path,
                "seconds": ours,
                "evals_per_s": evals,
                "torch_seconds": base,
                "err_vs_cpu": err,
                "err_vs_f64": vs64,
                "others": others,
            }
            record.append(rec)
            alt_s = ", ".join(f"{a} {t:.4f} ({e:.0e})" for a, (t, e) in others.items())
            rows.append(
                [
                    f"({n:.0e}, {m}, {d})",
                    name,
                    path,
                    f"{ours:.4f}",
                    f"{evals:.2e}",
                    f"{base:.4f}",
                    f"{base / ours:.1f}×",
                    f"{err:.1e}",
                    "–" if vs64 is None else f"{vs64:.1e}",
                    alt_s or "–",
                ]
            )
            print(f"  rowsums {rows[-1]}", file=sys.stderr, flush=True)
            del X, L
            cp.get_default_memory_pool().free_all_blocks()
    RESULTS["rowsums"] = record
    return table(
        [
            "(n, m, d)",
            "dtype",
            "path",
            "ours (s)",
            "evals/s",
            "torch unfused (s)",
            "speed-up",
            "vs CPU core",
            "f32 vs f64",
            "other paths: s (error vs the float64 path)",
        ],
        rows,
    )


def paths(cp: Any, args: argparse.Namespace) -> str:
    """Where one path overtakes the other beyond d = SMALL_MAX_DIM: float32 row_sums_tc
    against the cuBLAS path, float64 weighted_sums_partial against the cuBLAS path."""
    import nystrom_kme as nk
    from nystrom_kme.cuda import sums

    n = 10**6 // (100 if args.quick else 1)
    rows, record = [], []
    for m, d in PATH_CASES:
        gen = cp.random.default_rng(5)
        for dtype, names in ((cp.float32, ("tc", "gemm")), (cp.float64, ("partial", "gemm"))):
            X = gen.standard_normal((n, d), dtype=cp.float64).astype(dtype)
            L = gen.standard_normal((m, d), dtype=cp.float64).astype(dtype)
            k = nk.Gaussian(math.sqrt(d))
            t = [
                timed(cp, lambda L=L, X=X, k=k, p=p: sums.weighted_kernel_sums(L, X, None, k, path=p), args.repeats)
                for p in names
            ]
            record.append({"m": m, "d": d, "dtype": np.dtype(dtype).name, **dict(zip(names, t))})
            rows.append(
                [m, d, np.dtype(dtype).name, f"{names[0]} {t[0]:.4f}", f"gemm {t[1]:.4f}", f"{t[0] / t[1]:.2f}"]
            )
            del X, L
        cp.get_default_memory_pool().free_all_blocks()
    RESULTS["paths"] = record
    return table(["m", "d", "dtype", "fused (s)", "cuBLAS (s)", "fused / cuBLAS"], rows)


# -- 5. the permutation test's sums -------------------------------------------------------


def splits(cp: Any, args: argparse.Namespace) -> str:
    import nystrom_kme as nk
    from nystrom_kme.cuda import sums

    n = 2 * 10**6 // (100 if args.quick else 1)
    m, B, d = 1000, 200, 10
    gen = cp.random.default_rng(3)
    Z = gen.standard_normal((n, d), dtype=cp.float32)
    L = Z[:m].copy()
    k = nk.Gaussian(math.sqrt(d))
    block = 1 << 17

    def labels_only() -> None:
        s = sums.DeviceSplits(n // 2, n - n // 2, B, 7)
        for start in range(0, n, block):
            s.next_weights(min(block, n - start))

    def fused(gemm: bool) -> Any:
        s = sums.DeviceSplits(n // 2, n - n // 2, B, 7)
        out = cp.zeros((m, B + 1))
        for start in range(0, n, block):
            W = s.next_weights(min(block, n - start))
            Zb = Z[start : start + block]
            out += sums.weighted_kernel_sums(L, Zb, W, k, path="matrix" if gemm else "partial")
        return out

    t_labels = timed(cp, labels_only, args.repeats)
    t_fused = timed(cp, lambda: fused(False), args.repeats)
    t_gemm = timed(cp, lambda: fused(True), args.repeats)  # the "matrix" path
    agree = rel(cp.asnumpy(fused(True)), cp.asnumpy(fused(False)))
    RESULTS["splits"] = {"n": n, "labels_s": t_labels, "fused_s": t_fused, "gemm_s": t_gemm, "agree": agree}
    return table(
        ["K(L, Z) W, 2·10^6 rows, m = 1000, 201 columns, float32", "seconds"],
        [
            ["labels alone (DeviceSplits)", f"{t_labels:.4f}"],
            ["labels + fused weighted_sums_partial", f"{t_fused:.4f}"],
            ["labels + kernel blocks × W (cuBLAS DGEMM)", f"{t_gemm:.4f}"],
            ["the two agree to", f"{agree:.1e}"],
        ],
    )


# -- 6. end to end ------------------------------------------------------------------------


def e2e(cp: Any, args: argparse.Namespace) -> str:
    import nystrom_kme as nk

    scale = 100 if args.quick else 1
    gen = cp.random.default_rng(2)
    rows = []
    n_fit = 10**7 // scale
    Z = gen.standard_normal((n_fit, 10), dtype=cp.float32)
    est = nk.NystromKME(nk.Gaussian(math.sqrt(10)), n_landmarks=1000, random_state=0)
    t_fit = timed(cp, lambda Z=Z: est.fit(Z), args.repeats)
    src = nk.sources.as_source(Z)
    L = src.take(np.arange(1000) * (n_fit // 1000))
    t_sums = timed(cp, lambda: src.kernel_sums(L, est.kernel_), args.repeats)
    rows.append(
        [f"fit, n = {n_fit:.0e}, m = 1000, d = 10, float32 (of which the kernel sums)", f"{t_fit:.4f} ({t_sums:.4f})"]
    )
    del Z
    n = 10**6 // scale
    X = gen.standard_normal((n, 10), dtype=cp.float32)
    Y = gen.standard_normal((n, 10), dtype=cp.float32) + 0.01
    res = {}

    def single() -> None:
        res["single"] = nk.two_sample_test(
            X, Y, kernel=nk.Gaussian(math.sqrt(10)), n_landmarks=1000, n_permutations=200, random_state=0
        )

    def aggregated() -> None:
        res["agg"] = nk.two_sample_test(
            X, Y, kernel=nk.KernelCollection(), n_landmarks=1000, n_permutations=200, random_state=0
        )

    t_single = timed(cp, single, max(1, args.repeats // 2))
    rows.append(
        [
            f"single-kernel test, {n:.0e} per sample, m = 1000, B = 200 (p = {res['single'].pvalue:.3f})",
            f"{t_single:.3f}",
        ]
    )
    t_agg = timed(cp, aggregated, max(1, args.repeats // 2))
    rows.append(
        [
            f"aggregated test (20 kernels), {n:.0e} per sample, m = 1000, B = 200 (p = {res['agg'].pvalue:.3f})",
            f"{t_agg:.3f}",
        ]
    )
    RESULTS["e2e"] = {"fit_s": t_fit, "fit_sums_s": t_sums, "test_s": t_single, "aggregated_s": t_agg}
    return table(["task (data on the GPU)", "seconds, median"], rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gpu", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="sizes / 100 (a smoke run)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--only", nargs="*", choices=SECTIONS, default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    cp, gpu = gpu_or_exit()
    print(f"## GPU path: {gpu}{' (quick)' if args.quick else ''}\n", flush=True)
    status = 0
    for section in args.only or SECTIONS:
        t0 = time.perf_counter()
        try:
            text = globals()[section](cp, args)
        except Exception:  # one section's failure must not cost the others
            text = "FAILED:\n```\n" + traceback.format_exc() + "```"
            status = 1
        if "FAIL" in text:
            status = 1
        print(f"### {section} ({time.perf_counter() - t0:.0f} s)\n\n{text}\n", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(RESULTS, f, indent=1, default=str)
    return status


if __name__ == "__main__":
    sys.exit(main())
