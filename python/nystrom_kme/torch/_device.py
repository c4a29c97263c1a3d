"""The loss's sums in plain torch operations, for CUDA tensors (any device runs them).

For a radial kernel k(x, y) = k(r), r = ||x - y||, and weighted points p_j, the forward
and backward passes need, for each batch row y_i,

    V_i = sum_j w_j k(y_i, p_j)    and    G_i = sum_j w_j grad_y k(y_i, p_j),

with grad_y k = psi(r) (p - y), psi(r) = -k'(r) / r. Both are two matrix products per
block of points, as attention is: the scores Q P^T of augmented rows give the logits
-r^2 / (2 h^2) directly (Q = [-|y|^2 / (2 h^2), y / h^2, -1 / h^2], P = [1, p, |p|^2 / 2],
all centred), an elementwise map turns them into kernel values (Gaussian: exp) or
h^2 psi, and the product with [w, w * p] gives V and sum_j w_j h^2 psi_j p_j at once. No
matrix larger than the batch times one block of points is formed; the block is chosen
by the caller (``block`` points).

The float32 products run at the precision asked for (``precision``): ``"highest"``
(IEEE float32 products), ``"tf32x3"`` (each operand split into two TF32 parts, three
TF32 products: float32 accuracy on tensor cores), ``"tf32"`` (one TF32 product: about
10 bits of the logits and of the sums) or ``"bf16"`` (one bfloat16 product: about 8
bits). float64 always runs in float64.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

import torch

#: Precisions of the float32 products on CUDA (see the module docstring).
PRECISIONS = ("highest", "tf32x3", "tf32", "bf16")
#: Kernels whose psi is computed here (the radial kernels of the core).
KERNELS = ("gaussian", "laplacian", "matern32", "matern52", "inverse_multiquadric")

_SQRT3 = math.sqrt(3.0)
_SQRT5 = math.sqrt(5.0)


@contextlib.contextmanager
def tf32(enabled: bool) -> Iterator[None]:
    """CUDA float32 products with TF32 on or off for the block, the previous setting back
    afterwards (the new ``fp32_precision`` setting where torch has it, else ``allow_tf32``)."""
    matmul: Any = torch.backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):
        try:
            before = matmul.fp32_precision
            matmul.fp32_precision = "tf32" if enabled else "ieee"
        except (RuntimeError, AttributeError, ValueError):
            pass
        else:
            try:
                yield
            finally:
                matmul.fp32_precision = before
            return
    before_flag = matmul.allow_tf32
    matmul.allow_tf32 = enabled
    try:
        yield
    finally:
        matmul.allow_tf32 = before_flag


def _tf32_parts(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x = hi + lo with hi exact in TF32 (10 mantissa bits: the low 13 bits cleared) and
    lo = x - hi (exact in float32; TF32 keeps its leading 11 bits)."""
    hi = (x.contiguous().view(torch.int32) & -8192).view(torch.float32)
    return hi, x - hi


def matmul(a: torch.Tensor, b: torch.Tensor, precision: str) -> torch.Tensor:
    """a @ b at ``precision`` for CUDA float32 (see the module docstring); float64, and
    any tensor off CUDA, as torch computes it."""
    if a.dtype != torch.float32 or a.device.type != "cuda":
        return a @ b
    if precision == "highest":
        with tf32(False):
            return a @ b
    if precision == "tf32":
        with tf32(True):
            return a @ b
    if precision == "bf16":
        return (a.bfloat16() @ b.bfloat16()).float()
    a_hi, a_lo = _tf32_parts(a)
    b_hi, b_lo = _tf32_parts(b)
    with tf32(True):
        out = a_hi @ b_lo
        out.addmm_(a_lo, b_hi)
        out.addmm_(a_hi, b_hi)
    return out


def _psi_from_values(kernel: str, k: torch.Tensor, s: torch.Tensor) -> torch.Tensor:
    """h^2 psi from the kernel values k and the scaled distances s = r / h, in place of k
    where it can be (the Laplacian's psi at s = 0 is taken as 0, its subgradient)."""
    if kernel == "gaussian":
        return k
    if kernel == "laplacian":
        return torch.where(s > 0, k / torch.where(s > 0, s, torch.ones_like(s)), torch.zeros_like(k))
    if kernel == "matern32":
        return k.mul_(3.0).div_(s.mul(_SQRT3).add_(1.0))
    if kernel == "matern52":
        t = s.mul(_SQRT5)
        return k.mul_(5.0 / 3.0).mul_(t + 1.0).div_(t.square().div_(3.0).add_(t).add_(1.0))
    return k.pow_(3)  # inverse multiquadric


def _values(kernel: str, s2: torch.Tensor) -> torch.Tensor:
    """Kernel values from the scaled squared distances s2 = r^2 / h^2 (overwritten)."""
    if kernel == "gaussian":
        return s2.mul_(-0.5).exp_()
    if kernel == "laplacian":
        return s2.sqrt_().neg_().exp_()
    if kernel == "matern32":
        t = s2.sqrt_().mul_(_SQRT3)
        return (t + 1.0).mul_(t.neg().exp_())
    if kernel == "matern52":
        t = s2.sqrt_().mul_(_SQRT5)
        return (t.square() / 3.0).add_(t).add_(1.0).mul_(t.neg().exp_())
    return s2.add_(1.0).rsqrt_()  # inverse multiquadric


def value_gradient_sums(
    y: torch.Tensor,
    points: torch.Tensor,
    weights: torch.Tensor,
    centre: torch.Tensor,
    kernel: str,
    bandwidth: float,
    *,
    precision: str = "highest",
    block: int = 2048,
    gradients: bool = True,
) -> torch.Tensor:
    """[V, G] of shape (B, d + 1) in y's dtype: V_i = sum_j w_j k(y_i, p_j) and
    G_i = sum_j w_j grad_y k(y_i, p_j) (only V, shape (B, 1), when ``gradients`` is False).

    Parameters
    ----------
    y : Tensor of shape (B, d)
    points : Tensor of shape (m, d), y's dtype and device
    weights : Tensor of shape (m,), y's dtype and device
    centre : Tensor of shape (d,), subtracted from both (the products lose no digits to an
        offset of the data)
    kernel : one of ``KERNELS``; bandwidth : float > 0
    precision : one of ``PRECISIONS`` (CUDA float32 only)
    block : points per block (the largest matrix formed is B x block)
    """
    h2 = bandwidth * bandwidth
    n_batch, d = y.shape
    yc = y - centre
    # Q = [-|y|^2 / (2 h^2), y / h^2, -1 / h^2]: Q . [1, p, |p|^2 / 2] = -r^2 / (2 h^2)
    q = torch.empty((n_batch, d + 2), dtype=y.dtype, device=y.device)
    q[:, 0] = yc.square().sum(1).mul_(-0.5 / h2)
    q[:, 1 : d + 1] = yc / h2
    q[:, d + 1] = -1.0 / h2
    cols = d + 1 if gradients else 1
    out = torch.zeros((n_batch, cols), dtype=y.dtype, device=y.device)
    values = out[:, 0] if kernel == "gaussian" or not gradients else torch.zeros_like(out[:, 0])
    for j0 in range(0, points.shape[0], block):
        pc = points[j0 : j0 + block] - centre
        wb = weights[j0 : j0 + block]
        keys = torch.empty((pc.shape[0], d + 2), dtype=y.dtype, device=y.device)
        keys[:, 0] = 1.0
        keys[:, 1 : d + 1] = pc
        keys[:, d + 1] = pc.square().sum(1).mul_(0.5)
        logits = matmul(q, keys.T, precision)  # -r^2 / (2 h^2), (B, block)
        if kernel == "gaussian":
            k = logits.clamp_(max=0.0).exp_()
        else:
            # r^2 / h^2; below the expansion's rounding error (scale: the largest squared
            # norms) the points are taken as one (the Laplacian's psi is singular there)
            s2 = logits.mul_(-2.0)
            noise = (keys[:, d + 1].max() / h2 - q[:, 0].min()).mul_(32.0 * torch.finfo(y.dtype).eps)  # no sync
            s2 = s2.masked_fill_(s2 <= noise, 0.0)
            s = s2.sqrt() if gradients else s2
            k = _values(kernel, s2)
            if gradients:
                values.add_(matmul(k, wb.unsqueeze(1), precision)[:, 0])
                k = _psi_from_values(kernel, k, s)
        if gradients:
            v = torch.empty((pc.shape[0], d + 1), dtype=y.dtype, device=y.device)
            v[:, 0] = wb
            v[:, 1:] = pc * wb.unsqueeze(1)
        else:
            v = wb.unsqueeze(1)
        out.add_(matmul(k, v, precision))
    if not gradients:
        return out
    # sum_j w_j psi_j (p_j - y) = (sum_j w_j h^2 psi_j p_j - y sum_j w_j h^2 psi_j) / h^2
    grads = (out[:, 1:] - yc * out[:, :1]).div_(h2)
    return torch.cat([values.unsqueeze(1), grads], 1)
