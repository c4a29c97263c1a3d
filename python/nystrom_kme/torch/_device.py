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

For the Gaussian kernel the two products and the exp are attention: softmax(Q P^T) V with
the logits shifted by log |w_j| (one more augmented column) and V = [sign w, sign w * p],
times exp(logsumexp). ``"sdpa-bf16"`` and ``"sdpa-f32"`` run them as one fused pass of
torch's attention kernels (flash attention for bfloat16 and head dimensions up to 256, the
memory-efficient kernel otherwise), which never write the B x block logits: bfloat16
accuracy (about 3 digits) for the first, the kernel's float32 arithmetic for the second.
The other kernels then use the blocked products at "bf16" or "highest".
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from typing import Any

import torch

#: Precisions of the float32 products on CUDA (see the module docstring); the "sdpa-"
#: ones run the Gaussian kernel's sums as one fused attention pass.
PRECISIONS = ("highest", "tf32x3", "tf32", "bf16", "sdpa-f32", "sdpa-bf16")
#: The blocked products' precision for the other kernels when an "sdpa-" one is asked for.
_UNFUSED = {"sdpa-f32": "highest", "sdpa-bf16": "bf16"}
#: Kernels whose psi is computed here (the radial kernels of the core).
KERNELS = ("gaussian", "laplacian", "matern32", "matern52", "inverse_multiquadric", "rational_quadratic")

_SQRT3 = math.sqrt(3.0)
_SQRT5 = math.sqrt(5.0)


@contextlib.contextmanager
def tf32(enabled: bool) -> Iterator[None]:
    """CUDA float32 products with TF32 on or off for the block, the previous setting back
    afterwards: through ``allow_tf32``, or through ``fp32_precision`` where the program set
    that one (torch refuses to read the one after the other was set)."""
    matmul: Any = torch.backends.cuda.matmul
    name: str = "allow_tf32"
    value: Any = enabled
    try:
        before = matmul.allow_tf32
    except RuntimeError:  # the new API is in use
        before = matmul.fp32_precision
        name, value = "fp32_precision", "tf32" if enabled else "ieee"
    setattr(matmul, name, value)
    try:
        yield
    finally:
        setattr(matmul, name, before)


def _tf32_parts(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """x = hi + lo with hi exact in TF32 (10 mantissa bits: the low 13 bits cleared) and
    lo = x - hi (exact in float32; TF32 keeps its leading 11 bits)."""
    hi = (x.contiguous().view(torch.int32) & -8192).view(torch.float32)
    return hi, x - hi


def matmul(
    a: torch.Tensor, b: torch.Tensor, precision: str, out: torch.Tensor | None = None, alpha: float = 1.0
) -> torch.Tensor:
    """a @ b, or out += alpha * a @ b, at ``precision`` for CUDA float32 (see the module
    docstring); float64, and any tensor off CUDA, as torch computes it."""
    if a.dtype != torch.float32 or a.device.type != "cuda" or precision == "highest":
        with tf32(False) if a.device.type == "cuda" else contextlib.nullcontext():
            return a @ b if out is None else out.addmm_(a, b, alpha=alpha)
    if precision == "tf32":
        with tf32(True):
            return a @ b if out is None else out.addmm_(a, b, alpha=alpha)
    if precision == "bf16":
        product = (a.bfloat16() @ b.bfloat16()).float()
        return product if out is None else out.add_(product, alpha=alpha)
    a_hi, a_lo = _tf32_parts(a)
    b_hi, b_lo = _tf32_parts(b)
    with tf32(True):
        if out is None:
            out, alpha = a_hi @ b_lo, 1.0
        else:
            out.addmm_(a_hi, b_lo, alpha=alpha)
        out.addmm_(a_lo, b_hi, alpha=alpha)  # the small terms first
        return out.addmm_(a_hi, b_hi, alpha=alpha)


def _psi_from_values(kernel: str, k: torch.Tensor, s: torch.Tensor, shape: float = 1.0) -> torch.Tensor:
    """h^2 psi from the kernel values k and the scaled distances s = r / h, in place of k
    where it can be (the Laplacian's psi at s = 0 is taken as 0, its subgradient); the
    core's formulas (kernel_formulas.inl), which tests/python/test_torch_loss.py holds
    these to at many points. ``shape``: the rational quadratic's alpha."""
    if kernel == "gaussian":
        return k
    if kernel == "laplacian":
        return torch.where(s > 0, k / torch.where(s > 0, s, torch.ones_like(s)), torch.zeros_like(k))
    if kernel == "matern32":
        return k.mul_(3.0).div_(s.mul(_SQRT3).add_(1.0))
    if kernel == "matern52":
        t = s.mul(_SQRT5)
        return k.mul_(5.0 / 3.0).mul_(t + 1.0).div_(t.square().div_(3.0).add_(t).add_(1.0))
    if kernel == "rational_quadratic":  # k / (1 + r^2 / (2 alpha h^2))
        return k.div_(s.square().div_(2.0 * shape).add_(1.0))
    return k.pow_(3)  # inverse multiquadric


def _values(kernel: str, s2: torch.Tensor, shape: float = 1.0) -> torch.Tensor:
    """Kernel values from the scaled squared distances s2 = r^2 / h^2 (overwritten);
    ``shape``: the rational quadratic's alpha."""
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
    if kernel == "rational_quadratic":  # exp(-alpha log1p(r^2 / (2 alpha h^2)))
        return s2.div_(2.0 * shape).log1p_().mul_(-shape).exp_()
    return s2.add_(1.0).rsqrt_()  # inverse multiquadric


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(q k^T) v and logsumexp(q k^T) per row, (L, E) and (L,), by torch's fused
    attention kernels (one head, scale 1): flash attention for 16-bit inputs with E <= 256
    on CUDA, the memory-efficient kernel for the others, the CPU's flash kernel off CUDA."""
    q4, k4, v4 = (t.reshape(1, 1, *t.shape) for t in (q, k, v))
    if q.device.type == "cuda":
        if q.dtype in (torch.float16, torch.bfloat16) and q.shape[1] <= 256:
            res = torch.ops.aten._scaled_dot_product_flash_attention(q4, k4, v4, 0.0, False, False, scale=1.0)
        else:
            res = torch.ops.aten._scaled_dot_product_efficient_attention(q4, k4, v4, None, True, 0.0, False, scale=1.0)
    else:
        res = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q4, k4, v4, 0.0, False, scale=1.0)
    return res[0][0, 0], res[1][0, 0, : q.shape[0]]  # the efficient kernel pads logsumexp to 32


def _fused_gaussian(
    y: torch.Tensor,
    points: torch.Tensor,
    weights: torch.Tensor,
    centre: torch.Tensor,
    bandwidth: float,
    dtype: torch.dtype,
    block: int,
    grad_out: torch.Tensor | None,
    scale: float,
) -> torch.Tensor:
    """value_gradient_sums for the Gaussian kernel by fused attention (see the module
    docstring), blocks of ``block`` points merged by their logsumexp."""
    h2 = bandwidth * bandwidth
    n_batch, d = y.shape
    width = (d + 3 + 7) // 8 * 8  # [., p, ., log|w|] padded: the kernels want multiples of 8
    # Q = [-|y|^2 / (2 h^2), y / h^2, -1 / h^2, 1]: Q . [1, p, |p|^2 / 2, log|w|] = -r^2 / (2 h^2) + log|w|
    q = torch.zeros((n_batch, width), dtype=y.dtype, device=y.device)
    torch.sub(y, centre, out=q[:, 1 : d + 1])
    q[:, 0] = q[:, 1 : d + 1].square().sum(1).mul_(-0.5 / h2)
    q[:, 1 : d + 1].div_(h2)
    q[:, d + 1] = -1.0 / h2
    q[:, d + 2] = 1.0
    qd = q.to(dtype)
    values = torch.zeros(n_batch, dtype=y.dtype, device=y.device)
    for j0 in range(0, points.shape[0], block):
        wb = weights[j0 : j0 + block]
        keys = torch.zeros((wb.shape[0], width), dtype=y.dtype, device=y.device)
        pc = torch.sub(points[j0 : j0 + block], centre, out=keys[:, 1 : d + 1])
        keys[:, 0] = 1.0
        keys[:, d + 1] = pc.square().sum(1).mul_(0.5)
        keys[:, d + 2] = wb.abs().log()  # w = 0: -inf, a zero term
        vals = torch.zeros_like(keys)
        vals[:, 0] = wb.sign()
        if grad_out is not None:
            torch.mul(pc, vals[:, :1], out=vals[:, 1 : d + 1])
        out, lse = _attention(qd, keys.to(dtype), vals.to(dtype))
        z = lse.to(y.dtype).exp_()  # sum_j |w_j| k_j
        part = torch.where(z.unsqueeze(1) > 0, out[:, : d + 1].to(y.dtype) * z.unsqueeze(1), 0.0)
        values.add_(part[:, 0])
        if grad_out is not None:
            grad_out.add_(part[:, 1:], alpha=scale / h2)
    if grad_out is not None:
        grad_out.addcmul_(q[:, 1 : d + 1], values.unsqueeze(1), value=-scale)  # see value_gradient_sums
    return values


def value_gradient_sums(
    y: torch.Tensor,
    points: torch.Tensor,
    weights: torch.Tensor,
    centre: torch.Tensor,
    kernel: str,
    bandwidth: float,
    shape: float = 1.0,
    *,
    precision: str = "highest",
    block: int = 2048,
    gradients: bool = True,
    same: bool = False,
    grad_out: torch.Tensor | None = None,
    scale: float = 1.0,
) -> torch.Tensor:
    """V_i = sum_j w_j k(y_i, p_j), (B,) in y's dtype; with ``grad_out`` (B, d), also
    grad_out += scale * G with G_i = sum_j w_j grad_y k(y_i, p_j).

    Parameters
    ----------
    y : Tensor of shape (B, d)
    points : Tensor of shape (m, d), y's dtype and device
    weights : Tensor of shape (m,), y's dtype and device
    centre : Tensor of shape (d,), subtracted from both (the products lose no digits to an
        offset of the data)
    kernel : one of ``KERNELS``; bandwidth : float > 0; shape : the rational quadratic's alpha
    precision : one of ``PRECISIONS`` (CUDA float32 only)
    block : points per block (the largest matrix formed is B x block)
    gradients : False for V alone (``grad_out`` is then ignored)
    same : points is y (the batch against itself): the diagonal's distances are set to 0
    grad_out : Tensor of shape (B, d), y's dtype, added to (required with ``gradients``)
    scale : the factor of G in ``grad_out``

    Memory besides the outputs: the augmented batch (B, d + 2) and one block: B x block
    (twice for the kernels other than the Gaussian) plus (block, d + 2).
    """
    if precision in _UNFUSED and kernel == "gaussian":
        dtype = torch.bfloat16 if precision == "sdpa-bf16" else y.dtype
        fused_block = max(block, (1 << 22) // (y.shape[1] + 8))  # no B x block matrix here
        return _fused_gaussian(
            y, points, weights, centre, bandwidth, dtype, fused_block, grad_out if gradients else None, scale
        )
    precision = _UNFUSED.get(precision, precision)
    h2 = bandwidth * bandwidth
    n_batch, d = y.shape
    # Q = [-|y|^2 / (2 h^2), y / h^2, -1 / h^2]: Q . [1, p, |p|^2 / 2] = -r^2 / (2 h^2)
    q = torch.empty((n_batch, d + 2), dtype=y.dtype, device=y.device)
    torch.sub(y, centre, out=q[:, 1 : d + 1])
    q[:, 0] = q[:, 1 : d + 1].square().sum(1).mul_(-0.5 / h2)
    q[:, 1 : d + 1].div_(h2)
    q[:, d + 1] = -1.0 / h2
    gradients = gradients and grad_out is not None
    # sum_j w_j h^2 psi_j (Gaussian: the values, h^2 psi = k); the sums
    # sum_j w_j h^2 psi_j (p_j - c) go into grad_out directly, times scale / h^2
    psi_sums = torch.zeros(n_batch, dtype=y.dtype, device=y.device)
    values = psi_sums if kernel == "gaussian" or not gradients else torch.zeros_like(psi_sums)
    for j0 in range(0, points.shape[0], block):
        wb = weights[j0 : j0 + block]
        keys = torch.empty((wb.shape[0], d + 2), dtype=y.dtype, device=y.device)
        pc = torch.sub(points[j0 : j0 + block], centre, out=keys[:, 1 : d + 1])
        keys[:, 0] = 1.0
        keys[:, d + 1] = pc.square().sum(1).mul_(0.5)
        logits = matmul(q, keys.T, precision)  # -r^2 / (2 h^2), (B, block)
        if kernel == "gaussian":
            k = logits.exp_()  # logits <= 0 up to rounding: k <= 1 + rounding
        else:
            # r^2 / h^2; below the expansion's rounding error (scale: the largest squared
            # norms) the points are taken as one (the Laplacian's psi is singular there)
            s2 = logits.mul_(-2.0)
            noise = (keys[:, d + 1].max() / h2 - q[:, 0].min()).mul_(16.0 * math.sqrt(d + 2) * torch.finfo(y.dtype).eps)
            s2 = s2.masked_fill_(s2 <= noise, 0.0)  # a 0-d tensor: no wait for the device
            if same:  # the batch against itself: its diagonal is exactly 0
                s2.diagonal(-j0).fill_(0.0)
            s = s2.sqrt() if gradients else s2
            k = _values(kernel, s2, shape)
            if gradients:
                matmul(k, wb.unsqueeze(1), precision, out=values.unsqueeze(1))
                k = _psi_from_values(kernel, k, s, shape)
        matmul(k, wb.unsqueeze(1), precision, out=psi_sums.unsqueeze(1))
        if gradients:
            assert grad_out is not None
            keys[:, 1 : d + 1].mul_(wb.unsqueeze(1))  # w (p - c)
            matmul(k, keys[:, 1 : d + 1], precision, out=grad_out, alpha=scale / h2)
    if gradients:
        assert grad_out is not None
        # sum_j w_j psi_j (p_j - y) = (sum_j w_j h^2 psi_j (p_j - c) - (y - c) sum_j w_j h^2 psi_j) / h^2,
        # and y - c = h^2 Q[:, 1:d+1]
        grad_out.addcmul_(q[:, 1 : d + 1], psi_sums.unsqueeze(1), value=-scale)
    return values
