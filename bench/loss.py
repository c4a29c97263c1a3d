"""nystrom_kme.torch.MMDLoss (issue 38): correctness, speed and memory of the loss's
forward + backward against the core's row sums and a dense torch implementation of the
same loss, on the CPU (default) or a CUDA GPU (``--gpu``).

The loss: ||mu_B - mu_ref||^2 for a batch Y (B, d) and a frozen embedding of m points
(an EmpiricalKME of m rows: weights 1/m, no solve, so any m is quick to set up),
Gaussian kernel at the median-heuristic scale sqrt(2 d), within-batch term exact.
"Pairs" counts the kernel evaluations of one forward + backward: B m + B^2 (ours
computes each once; the dense torch loss computes them in the forward pass and reads
them again in the backward).

CPU (default), threads as ``--threads`` for the core and torch alike:
1. ``correct``: every kernel, float64 and float32, loss and gradient against the dense
   torch loss in float64 at (B, m, d) = (300, 500, 5) and (64, 200, 768).
2. ``speed``: at (B, m, d) of CPU_CASES, median of ``--repeats`` after a warm-up:
   the core's Gaussian row sums K(Y, L) 1 (B m pairs), our forward + backward, the
   dense torch forward + backward (``torch.cdist``-free: the expansion and one matmul per
   term, as the usual MMDLoss modules do); pairs per second and the ratios.
3. ``weights``: float32 against float64 at the same float32 point with a Nyström
   reference whose weights cancel (2000 weighted rows, m = 300, h = 1.3, d = 3, B = 257:
   a Gaussian's sum |w| is 10^2-10^3, a Matérn 5/2's about 1.5), through the core and
   through the blocked products on CPU tensors, both ``within_batch`` modes, 3 seeds.
4. ``memory``: peak resident-memory growth during one forward + backward at (4096,
   16384, 768) float32 (after a first step; large blocks returned to the system when
   freed, so the resident size follows what is live), in a fresh worker process per
   implementation, against the bytes of the inputs plus the reference (Y, L, weights).

GPU (``--gpu``; PyTorch with CUDA, ~1 minute): the same loss with CUDA tensors.
1. ``correct``: every kernel, float64 and float32 at every precision (the "sdpa-" ones
   fuse the Gaussian only), against the dense loss in float64 on the device.
2. ``speed``: (4096, 16384, 768) float32, ours at each precision (and larger blocks)
   against the dense loss with TF32 off and on; and the d <= 64 rates (GPU_RATE_CASES).
3. ``memory``: torch.cuda.max_memory_allocated above the inputs during forward + backward.
4. ``sdpa``: for scale, the time of one fused attention pass of the attraction's shape
   (torch's scaled_dot_product_attention, bfloat16, head dim d + 2 padded) where its
   kernels take it: what a fused tensor-core route could reach (not the loss).

Prints Markdown tables; with $OUT set, also writes $OUT/loss_cpu.json or loss_gpu.json.
Nothing else is written. Without torch, or without a CUDA device for ``--gpu``, it says
so on stderr and exits with status 2.

Usage: python -m bench.loss [--gpu] [--repeats 5] [--threads N] [--only SECTION ...]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
import traceback
from typing import Any, Callable

import numpy as np

from bench.harness import RssPeak, machine, run_worker, utc_now

KERNELS = ["gaussian", "laplacian", "matern32", "matern52", "inverse_multiquadric"]
#: (B, m, d) of the CPU timings; the issue's shape last.
CPU_CASES = [(4096, 16384, 3), (4096, 16384, 16), (4096, 16384, 64), (4096, 16384, 768)]
MEMORY_CASE = (4096, 16384, 768)
GPU_CASE = (4096, 16384, 768)
GPU_RATE_CASES = [(4096, 16384, 16), (4096, 16384, 64), (16384, 65536, 64)]
PRECISIONS = ("highest", "tf32x3", "tf32", "bf16", "sdpa-f32", "sdpa-bf16")
CPU_SECTIONS = ("correct", "speed", "weights", "memory")
GPU_SECTIONS = ("correct", "speed", "memory", "sdpa")
RESULTS: dict[str, Any] = {}


def _fail(message: str) -> int:
    print(f"bench.loss: {message}", file=sys.stderr)
    return 2


def table(header: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _kernel(torch: Any, name: str, d2: Any, h: float) -> Any:
    """k from squared distances d2 (clamped at 0), for the dense reference."""
    if name == "gaussian":
        return torch.exp(d2 / (-2.0 * h * h))
    r = d2.clamp_min(1e-300).sqrt() / h
    if name == "laplacian":
        return torch.exp(-r)
    if name == "matern32":
        return (1 + math.sqrt(3) * r) * torch.exp(-math.sqrt(3) * r)
    if name == "matern52":
        return (1 + math.sqrt(5) * r + 5 * r * r / 3) * torch.exp(-math.sqrt(5) * r)
    return torch.rsqrt(1 + r * r)


def _sqdist(A: Any, B: Any) -> Any:
    return ((A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * (A @ B.T)).clamp_min(0.0)


def dense_loss(torch: Any, y: Any, L: Any, a: Any, name: str, h: float, ref_norm2: float, direct: bool = False) -> Any:
    """The same loss, dense: B x B and B x m kernel matrices kept for autograd. ``direct``:
    distances from coordinate differences (exact near 0; for the correctness checks)."""
    if direct:
        dyy = ((y[:, None, :] - y[None, :, :]) ** 2).sum(-1)
        dyl = ((y[:, None, :] - L[None, :, :]) ** 2).sum(-1)
    else:
        dyy, dyl = _sqdist(y, y), _sqdist(y, L)
    Kyy = _kernel(torch, name, dyy, h)
    Kyl = _kernel(torch, name, dyl, h)
    return Kyy.mean() - 2.0 * (Kyl @ a.to(Kyl.dtype)).mean() + ref_norm2


def reference(nk: Any, L: np.ndarray, name: str, h: float) -> Any:
    """An EmpiricalKME of the m rows L: the frozen embedding (weights 1/m)."""
    return nk.EmpiricalKME(nk.get_kernel(name).with_bandwidth(h)).fit(L)


def _data(rng: np.random.Generator, B: int, m: int, d: int, dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    L = rng.normal(size=(m, d)).astype(dtype)
    Y = (rng.normal(size=(B, d)) * 1.1 + 0.2).astype(dtype)
    return Y, L


# --------------------------------------------------------------------------- CPU


def cpu_correct(args: argparse.Namespace) -> str:
    import torch

    import nystrom_kme as nk
    from nystrom_kme.torch import MMDLoss

    rng = np.random.default_rng(0)
    rows = []
    for B, m, d in ((300, 500, 5), (64, 200, 768)):
        for name in KERNELS:
            h = math.sqrt(2 * d)
            for dtype, tol in ((np.float64, 1e-12), (np.float32, 1e-5)):
                Y, L = _data(rng, B, m, d, dtype)
                Y[:3] = L[:3]  # rows on landmarks
                ref = reference(nk, L, name, h)
                loss = MMDLoss(ref, n_threads=args.threads)
                y = torch.from_numpy(Y).requires_grad_()
                (g,) = torch.autograd.grad(out := loss(y), y)
                y64 = torch.from_numpy(Y.astype(np.float64)).requires_grad_()
                want = dense_loss(
                    torch, y64, torch.from_numpy(L.astype(np.float64)), torch.full((m,), 1.0 / m, dtype=torch.float64),
                    name, h, loss.reference_norms2_[0], direct=True,
                )  # fmt: skip
                (g64,) = torch.autograd.grad(want, y64)
                e_loss = abs(out.item() - want.item()) / max(abs(want.item()), 1e-300)
                e_grad = float((g.double() - g64).abs().max() / g64.abs().max())
                ok = e_loss <= tol * 100 and e_grad <= tol
                rows.append([f"({B}, {m}, {d})", name, np.dtype(dtype).name, f"{e_loss:.1e}", f"{e_grad:.1e}", ok])
    RESULTS["correct"] = rows
    return "### Correctness (largest relative error against the dense float64 loss)\n\n" + table(
        ["(B, m, d)", "kernel", "dtype", "loss", "gradient", "ok"], rows
    )


def timed(fn: Callable[[], Any], repeats: int, sync: Callable[[], Any] = lambda: None) -> float:
    fn()
    sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _cpu_case(args: argparse.Namespace, B: int, m: int, d: int) -> list[str]:
    import torch

    import nystrom_kme as nk
    from nystrom_kme import _core
    from nystrom_kme.torch import MMDLoss

    Y, L = _data(np.random.default_rng(1), B, m, d, np.float32)
    h = math.sqrt(2 * d)
    loss = MMDLoss(reference(nk, L, "gaussian", h), n_threads=args.threads)
    core_kernel = _core.Kernel("gaussian", h)
    t_rows = timed(lambda: _core.kernel_row_sums(Y, L, core_kernel, args.threads), args.repeats)

    def ours() -> None:
        y = torch.from_numpy(Y).requires_grad_()
        loss(y).backward()

    t_ours = timed(ours, args.repeats)
    La, a = torch.from_numpy(L), torch.full((m,), 1.0 / m, dtype=torch.float32)

    def dense() -> None:
        y = torch.from_numpy(Y).requires_grad_()
        dense_loss(torch, y, La, a, "gaussian", h, loss.reference_norms2_[0]).backward()

    t_dense = timed(dense, max(1, args.repeats // 2))
    pairs = B * m + B * B
    rate_rows, rate_ours = B * m / t_rows, pairs / t_ours
    RESULTS.setdefault("speed", []).append(
        {"case": [B, m, d], "row_sums_s": t_rows, "ours_s": t_ours, "dense_s": t_dense, "pairs": pairs}
    )
    return [
        f"({B}, {m}, {d})", f"{t_rows:.3f}", f"{rate_rows:.2e}", f"{t_ours:.3f}", f"{rate_ours:.2e}",
        f"{rate_ours / rate_rows:.0%}", f"{t_dense:.3f}", f"{t_dense / t_ours:.1f}×",
    ]  # fmt: skip


def cpu_speed(args: argparse.Namespace) -> str:
    import torch

    torch.set_num_threads(args.threads)
    rows = [_cpu_case(args, B, m, d) for B, m, d in CPU_CASES]
    header = [
        "(B, m, d) f32", "core row sums K(Y, L)1 s", "pairs/s", "ours fwd+bwd s", "pairs/s (B m + B²)",
        "ours / row-sum rate", "dense torch fwd+bwd s", "dense / ours",
    ]  # fmt: skip
    return f"### Speed, {args.threads} threads (median of {args.repeats})\n\n" + table(header, rows)


def cpu_cancelling_weights(args: argparse.Namespace) -> str:
    import torch

    import nystrom_kme as nk
    from nystrom_kme.torch import MMDLoss, _ops

    rows = []
    for name in ("gaussian", "matern52"):
        for seed in range(3):
            rng = np.random.default_rng(seed)
            X = rng.normal(size=(2000, 3)) + 1.0
            kernel = nk.get_kernel(name).with_bandwidth(1.3)
            ref = nk.NystromKME(kernel, n_landmarks=300, random_state=0).fit(
                X, sample_weight=rng.uniform(0.2, 3.0, 2000)
            )
            weights = ref.fitted()[1]
            y32 = torch.from_numpy(rng.normal(size=(257, 3)) + 0.5).float()
            errors = []
            for within in ("exact", "nystrom"):
                loss = MMDLoss(ref, within_batch=within, n_threads=args.threads)
                grads = []
                for y, core_columns in (
                    (y32.double(), _ops.CORE_MAX_FEATURES),
                    (y32, _ops.CORE_MAX_FEATURES),
                    (y32, 0),
                ):
                    saved, _ops.CORE_MAX_FEATURES = _ops.CORE_MAX_FEATURES, core_columns
                    try:
                        y = y.clone().requires_grad_()
                        grads.append(torch.autograd.grad(loss(y), y)[0].double())
                    finally:
                        _ops.CORE_MAX_FEATURES = saved
                scale = float(grads[0].abs().max())
                errors += [f"{float((g - grads[0]).abs().max()) / scale:.1e}" for g in grads[1:]]
            rows.append([name, seed, f"{np.abs(weights).sum():.0f}", *errors])
    RESULTS["weights"] = rows
    return "### float32 gradients with cancelling weights (relative to the largest float64 gradient)\n\n" + table(
        ["kernel", "seed", "Σ abs(w)", "exact: core", "exact: blocked", "nystrom: core", "nystrom: blocked"], rows
    )


def memory_worker(which: str, threads: int) -> dict[str, Any]:
    import torch

    import nystrom_kme as nk
    from nystrom_kme.torch import MMDLoss

    torch.set_num_threads(threads)
    B, m, d = MEMORY_CASE
    Y, L = _data(np.random.default_rng(2), B, m, d, np.float32)
    h = math.sqrt(2 * d)
    alpha = np.full(m, 1.0 / m)
    if which == "ours":
        loss: Any = MMDLoss(reference(nk, L, "gaussian", h), n_threads=threads)
        run: Callable[[Any], Any] = loss
    else:
        La, a = torch.from_numpy(L), torch.from_numpy(alpha).float()

        def run(y: Any) -> Any:
            return dense_loss(torch, y, La, a, "gaussian", h, 0.5)

    run(torch.from_numpy(Y).requires_grad_()).backward()  # a first step: libraries, BLAS buffers
    y = torch.from_numpy(Y).requires_grad_()
    with RssPeak(interval=0.002) as peak:  # a training step's peak above the inputs
        run(y).backward()
    inputs = Y.nbytes + L.nbytes + alpha.nbytes
    return {"which": which, "growth_MB": peak.growth_mb, "inputs_reference_MB": inputs / 2**20}


def cpu_memory(args: argparse.Namespace) -> str:
    rows = []
    # glibc returns blocks above the threshold to the system when they are freed, so the
    # resident size follows what is live (by default it keeps them after the first step)
    saved = {k: os.environ.get(k) for k in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")}
    os.environ.update(MALLOC_MMAP_THRESHOLD_=str(1 << 17), MALLOC_TRIM_THRESHOLD_=str(1 << 17))
    for which in ("ours", "dense"):
        try:
            res = run_worker("loss", which, str(args.threads))
        except Exception as err:  # a worker out of memory, say
            rows.append([which, "failed", str(err).splitlines()[-1][:80], ""])
            continue
        RESULTS.setdefault("memory", []).append(res)
        rows.append([
            which, f"{res['growth_MB']:.0f}", f"{res['inputs_reference_MB']:.0f}",
            f"{(res['growth_MB'] + res['inputs_reference_MB']) / res['inputs_reference_MB']:.2f}×",
        ])  # fmt: skip
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    B, m, d = MEMORY_CASE
    return f"### Memory at (B, m, d) = ({B}, {m}, {d}) float32, one forward + backward\n\n" + table(
        ["loss", "resident growth MB", "inputs + reference MB", "peak / (inputs + reference)"], rows
    )


# --------------------------------------------------------------------------- GPU


def gpu_env(torch: Any) -> str:
    props = torch.cuda.get_device_properties(0)
    RESULTS["env"] = {"gpu": props.name, "torch": torch.__version__, "sms": props.multi_processor_count}
    return f"GPU: {props.name} ({props.multi_processor_count} SMs), torch {torch.__version__}"


def _tf32(torch: Any, on: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = on


def _scaled(args: argparse.Namespace, B: int, m: int, d: int) -> tuple[int, int, int]:
    """The case, divided by 16 in B and m for ``--quick``."""
    return (max(8, B // 16), max(8, m // 16), d) if args.quick else (B, m, d)


def _sync(torch: Any, args: argparse.Namespace) -> Callable[[], Any]:
    return torch.cuda.synchronize if args.device == "cuda" else lambda: None


def gpu_correct(args: argparse.Namespace) -> str:
    import torch

    import nystrom_kme as nk
    from nystrom_kme.torch import MMDLoss

    dev = args.device
    _tf32(torch, False)
    rng = np.random.default_rng(0)
    rows = []
    for B, m, d in (_scaled(args, 512, 2048, 16), _scaled(args, 256, 1024, 768)):
        h = math.sqrt(2 * d)
        Y, L = _data(rng, B, m, d, np.float64)
        Y[:3] = L[:3]
        for name in KERNELS:
            ref = reference(nk, L, name, h)
            y64 = torch.from_numpy(Y).to(dev).requires_grad_()
            want = dense_loss(
                torch, y64, torch.from_numpy(L).to(dev), torch.full((m,), 1.0 / m, device=dev, dtype=torch.float64),
                name, h, MMDLoss(ref).reference_norms2_[0], direct=True,
            )  # fmt: skip
            (g64,) = torch.autograd.grad(want, y64)
            for dtype, precisions in ((torch.float64, ("highest",)), (torch.float32, PRECISIONS)):
                for precision in precisions:
                    loss = MMDLoss(ref, precision=precision).to(dev, dtype)
                    y = y64.detach().to(dtype).requires_grad_()
                    try:
                        (g,) = torch.autograd.grad(out := loss(y), y)
                    except Exception as err:
                        rows.append([f"({B}, {m}, {d})", name, str(dtype)[6:], precision, "failed", str(err)[:60]])
                        continue
                    e_loss = abs(out.item() - want.item()) / max(abs(want.item()), 1e-300)
                    e_grad = float((g.double() - g64).abs().max() / g64.abs().max())
                    rows.append([f"({B}, {m}, {d})", name, str(dtype)[6:], precision, f"{e_loss:.1e}", f"{e_grad:.1e}"])
    RESULTS["gpu_correct"] = rows
    return (
        "### Correctness on the GPU (largest relative error against the dense float64 loss; "
        "targets 1e-12 float64, 1e-5 float32 'highest'/'tf32x3')\n\n"
        + table(["(B, m, d)", "kernel", "dtype", "precision", "loss", "gradient"], rows)
    )


def _gpu_case(torch: Any, nk: Any, dev: str, B: int, m: int, d: int) -> tuple[Any, Any, Any, float]:
    Y, L = _data(np.random.default_rng(3), B, m, d, np.float32)
    h = math.sqrt(2 * d)
    ref = reference(nk, L, "gaussian", h)  # MMDLoss computes ||mu_ref||^2 on the CPU core, once
    return torch.from_numpy(Y).to(dev), torch.from_numpy(L).to(dev), ref, h


def _gpu_timings(args: argparse.Namespace, B: int, m: int, d: int) -> list[list[str]]:
    import torch

    import nystrom_kme as nk
    from nystrom_kme.torch import MMDLoss

    dev, sync = args.device, _sync(torch, args)
    y0, L, ref, h = _gpu_case(torch, nk, dev, B, m, d)
    a = torch.full((m,), 1.0 / m, device=dev)
    pairs = B * m + B * B
    rows = []
    loss = MMDLoss(ref).to(dev, torch.float32)  # ||mu_ref||^2 once, on the CPU core
    default_block = max(256, (1 << 22) // B)  # MMDLoss's default
    bigger = [("tf32", 4 * default_block), ("tf32", 16 * default_block), ("bf16", 16 * default_block)]
    for precision, block in [(p, default_block) for p in PRECISIONS] + bigger:
        loss.precision_, loss.block_size = precision, block

        def ours() -> None:
            y = y0.detach().requires_grad_()
            loss(y).backward()

        label = f"ours, {precision}" + ("" if precision.startswith("sdpa") else f", block {block}")
        try:
            t = timed(ours, args.repeats, sync)
        except Exception as err:  # a kernel that refuses the shape: say so, go on
            rows.append([f"({B}, {m}, {d})", label, f"failed: {type(err).__name__}: {str(err)[:80]}", ""])
            continue
        rows.append([f"({B}, {m}, {d})", label, f"{t * 1e3:.3f}", f"{pairs / t:.2e}"])
        RESULTS.setdefault("gpu_speed", []).append({"case": [B, m, d], "impl": label, "s": t})

    def dense() -> None:
        y = y0.detach().requires_grad_()
        dense_loss(torch, y, L, a, "gaussian", h, 0.5).backward()

    for tf32 in (False, True):
        _tf32(torch, tf32)
        label = f"dense torch, TF32 {'on' if tf32 else 'off'}"
        try:
            t = timed(dense, args.repeats, sync)
        except torch.OutOfMemoryError:
            rows.append([f"({B}, {m}, {d})", label, "out of memory", ""])
            continue
        rows.append([f"({B}, {m}, {d})", label, f"{t * 1e3:.3f}", f"{pairs / t:.2e}"])
        RESULTS.setdefault("gpu_speed", []).append({"case": [B, m, d], "impl": label, "s": t})
    _tf32(torch, False)
    if args.device == "cuda":
        torch.cuda.empty_cache()
    return rows


def gpu_speed(args: argparse.Namespace) -> str:
    cases = [_scaled(args, *case) for case in [GPU_CASE, *GPU_RATE_CASES]]
    rows = [row for B, m, d in cases for row in _gpu_timings(args, B, m, d)]
    return f"### GPU forward + backward, float32, median of {args.repeats}\n\n" + table(
        ["(B, m, d)", "implementation", "ms", "pairs/s (B m + B²)"], rows
    )


def gpu_memory(args: argparse.Namespace) -> str:
    import torch

    import nystrom_kme as nk
    from nystrom_kme.torch import MMDLoss

    if args.device != "cuda":
        return "### GPU memory: not measured off CUDA"
    B, m, d = _scaled(args, *GPU_CASE)
    y0, L, ref, h = _gpu_case(torch, nk, "cuda", B, m, d)
    a = torch.full((m,), 1.0 / m, device="cuda")
    loss = MMDLoss(ref).to("cuda", torch.float32)
    inputs = (y0.numel() + L.numel() + m) * 4

    def ours(precision: str) -> Callable[[Any], Any]:
        def run(y: Any) -> Any:
            loss.precision_ = precision
            return loss(y)

        return run

    rows = []
    for name, fn in (
        *((f"ours ({p})", ours(p)) for p in ("tf32", "tf32x3", "sdpa-f32", "sdpa-bf16")),
        ("dense torch", lambda y: dense_loss(torch, y, L, a, "gaussian", h, 0.5)),
    ):
        try:
            y = y0.detach().requires_grad_()
            fn(y).backward()  # warm-up
            del y
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
            base = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            y = y0.detach().requires_grad_()
            fn(y).backward()
            torch.cuda.synchronize()
            growth = torch.cuda.max_memory_allocated() - base
            del y
        except Exception as err:
            rows.append([name, f"failed: {type(err).__name__}", "", ""])
            continue
        rows.append([name, f"{growth / 2**20:.0f}", f"{inputs / 2**20:.0f}", f"{(growth + inputs) / inputs:.2f}×"])
        RESULTS.setdefault("gpu_memory", []).append({"impl": name, "growth_bytes": growth, "inputs_bytes": inputs})
    return f"### GPU memory at ({B}, {m}, {d}) float32 (allocator peak above what was allocated before)\n\n" + table(
        ["loss", "growth MB", "inputs + reference MB", "peak / (inputs + reference)"], rows
    )


def gpu_sdpa(args: argparse.Namespace) -> str:
    import torch
    import torch.nn.functional as F

    rows = []
    for B, m, d in [_scaled(args, *case) for case in [GPU_CASE, *GPU_RATE_CASES]]:
        hd = (d + 2 + 7) // 8 * 8
        q = torch.randn(1, 1, B, hd, device=args.device, dtype=torch.bfloat16)
        k = torch.randn(1, 1, m, hd, device=args.device, dtype=torch.bfloat16)
        v = torch.randn(1, 1, m, hd, device=args.device, dtype=torch.bfloat16)
        try:
            t = timed(lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q, k, v), args.repeats, _sync(torch, args))
            rows.append([f"({B}, {m}, {d})", hd, f"{t * 1e3:.3f}", f"{B * m / t:.2e}"])
        except Exception as err:
            rows.append([f"({B}, {m}, {d})", hd, f"not run: {type(err).__name__}", ""])
    RESULTS["sdpa"] = rows
    return (
        "### For scale: one fused attention pass of the attraction's shape "
        "(bfloat16 SDPA, forward only; not the loss)\n\n"
        + table(["(B, m, d)", "head dim", "ms", "pairs/s (B m)"], rows)
    )


def _route_cpu_tensors_through_the_device_path() -> None:
    """For ``--device cpu``: the operator's CPU implementation replaced by the device path
    (its blocks and products on CPU tensors), so that a dry run exercises the code the GPU
    runs."""
    from nystrom_kme.torch import _ops

    def via_device(y: Any, L: Any, w: Any, P: Any, n2: float, kernel: str, bw: float, within: str, unb: bool, nt: int):
        return _ops._on_device(y, L, w, L.mean(0), P, n2, kernel, bw, within, unb, "highest", 64)

    _ops._cpu = via_device


# --------------------------------------------------------------------------- main


def _run(sections: list[tuple[str, Callable[[argparse.Namespace], str]]], args: argparse.Namespace) -> None:
    for name, fn in sections:
        if args.only and name not in args.only:
            continue
        t0 = time.perf_counter()
        try:
            print(fn(args), flush=True)
        except Exception:
            print(f"### {name}: FAILED\n\n```\n{traceback.format_exc()[-2000:]}```", flush=True)
        print(f"\n({name}: {time.perf_counter() - t0:.1f} s)\n", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.loss", description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpu", action="store_true", help="the CUDA sections instead of the CPU ones")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--only", nargs="*", default=None, help=f"CPU: {CPU_SECTIONS}; GPU: {GPU_SECTIONS}")
    parser.add_argument("--quick", action="store_true", help="B and m / 16 (a smoke run)")
    # a dry run of the GPU sections on CPU tensors through the device path (the script's own check)
    parser.add_argument("--device", default="cuda", help=argparse.SUPPRESS)
    parser.add_argument("--worker", nargs=2, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(memory_worker(args.worker[0], int(args.worker[1]))))
        return 0
    try:
        import torch
    except ImportError:
        return _fail("PyTorch is not installed: pip install 'nystrom-kme[torch]'")
    print(f"# bench.loss, {utc_now()}\n\nCPU: {machine()}; torch {torch.__version__}\n", flush=True)
    if args.gpu:
        if args.device == "cuda" and not torch.cuda.is_available():
            return _fail("no CUDA device: torch.cuda.is_available() is False")
        if args.device == "cuda":
            print(gpu_env(torch) + "\n", flush=True)
        else:
            _route_cpu_tensors_through_the_device_path()
        _run([("correct", gpu_correct), ("speed", gpu_speed), ("memory", gpu_memory), ("sdpa", gpu_sdpa)], args)
    else:
        _run(
            [
                ("correct", cpu_correct),
                ("speed", cpu_speed),
                ("weights", cpu_cancelling_weights),
                ("memory", cpu_memory),
            ],
            args,
        )
    print(f"load at the end: {machine()}")
    out = os.environ.get("OUT")
    if out:
        path = os.path.join(out, "loss_gpu.json" if args.gpu else "loss_cpu.json")
        with open(path, "w") as fh:
            json.dump(RESULTS, fh, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
