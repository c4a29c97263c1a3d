"""The MMD to a frozen embedding and its gradient as one torch custom operator.

``nystrom_kme::mmd_to_embedding(y, landmarks, weights, centre, projector, reference_norm2,
kernel, bandwidth, shape, within, unbiased, precision, block, n_threads) -> (loss, grad)``
computes, for a batch Y = (y_1 .. y_B) and the embedding mu_ref = sum_j a_j k(l_j, .),

    loss = ||mu_B||^2 - 2 <mu_B, mu_ref> + ||mu_ref||^2,   mu_B = (1/B) sum_i k(y_i, .),

and its gradient with respect to Y, in one pass: CPU tensors of at most
``CORE_MAX_FEATURES`` columns through the compiled core (``kernel_value_gradients``, fused
kernel sums with the weight columns [w, w * l]), others (CUDA, and wide CPU batches)
through the blocked products of :mod:`._device`. ``within`` says how ||mu_B||^2 is computed:
``"exact"`` (all B^2 pairs; ``unbiased`` drops the diagonal and divides by B (B - 1)) or
``"nystrom"`` (the batch's embedding projected on the landmarks, s^T K_m^+ s / B^2 with
s = K(L, Y) 1: then loss = ||P mu_B - mu_ref||^2 >= 0; ``projector`` is Phi (r, m) with
Phi^T Phi = K_m^+, so that s^T K_m^+ s = ||Phi s||^2).
The autograd formula multiplies the saved gradient by the incoming one: first
derivatives only (a gradient taken with ``create_graph=True`` refuses, by name, to be
differentiated again). ``block`` 0 sizes the blocked products from the batch inside the
operator, so that ``torch.compile`` sees no argument that changes with the batch size (one
compiled graph for every size, not one per size).

The operator is defined through ``torch.library.Library`` rather than
``torch.library.custom_op``: the latter wraps the kernel in ``torch._disable_dynamo``,
whose first call imports torch's compiler stack (``torch._dynamo``, ``torch._inductor``:
about 800 modules, as long as ``import torch``) into every eager program. Registered this
way the kernel is a plain function; it is opaque to ``torch.compile`` all the same (a fake
implementation gives the shapes), so compiled training loops call it as one node.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from .. import _core
from . import _device

#: CPU tensors with at most this many features go through the core; wider ones through
#: the blocked products of :mod:`._device` (torch's BLAS, float32 products for float32),
#: faster there than the core (bench/RESULTS.md, "Speed at the limit, fourth session": the
#: core 1.17-1.40x faster at 256-768 features, torch's products 1.06x at 1536, 1.5x at 3072).
CORE_MAX_FEATURES = 1024
#: Rows of the batch per call of the core: its per-call buffers (the call's float64 sums,
#: its running sums and packed rows) stay at a few MiB; a step at (4096, 16384, 768) grows
#: the resident set by 41 MB with 4 MiB, 67 MB with 8 MiB.
_BLOCK_BYTES = 4 << 20
#: Batch rows times points per block of the blocked products when ``block`` is 0:
#: 8 MiB of float32 logits on the CPU, 16 MiB on a GPU (fewer launches).
BLOCK_ELEMENTS = {"cpu": 1 << 21, "cuda": 1 << 22}

_SCHEMA = (
    "(Tensor y, Tensor landmarks, Tensor weights, Tensor centre, Tensor projector, float reference_norm2, "
    "str kernel, float bandwidth, float shape, str within, bool unbiased, str precision, int block, int n_threads) "
    "-> (Tensor, Tensor)"
)


#: float32 batches meet the reference's weights in float64 on the CPU when the weights
#: cancel this much (sum |w| / |sum w|): float32 kernel values would leave ~1e-7 times it of
#: relative error in the loss and its gradient (Nystrom references of a Gaussian: 300-900).
CANCELLATION_UPCAST = 64.0


def cancellation(w: np.ndarray) -> float:
    """sum |w| / |sum w| (inf when the weights sum to 0): how much a weighted sum of values
    loses to their rounding, relative to its size.

    >>> import numpy as np
    >>> cancellation(np.full(4, 0.25)), cancellation(np.array([3.0, -2.0]))
    (1.0, 5.0)
    """
    total = abs(math.fsum(w))
    return math.fsum(np.abs(w)) / total if total > 0 else math.inf


def _batch_blocks(n_batch: int, d: int) -> list[tuple[int, int]]:
    rows = max(64, _BLOCK_BYTES // (8 * (d + 1)))
    return [(i, min(n_batch, i + rows)) for i in range(0, n_batch, rows)]


def _within_scale(n_batch: int, unbiased: bool) -> float:
    return 1.0 / (n_batch * (n_batch - 1)) if unbiased else 1.0 / (n_batch * n_batch)


def _cpu(
    y: torch.Tensor,
    landmarks: torch.Tensor,
    weights: torch.Tensor,
    projector: torch.Tensor,
    reference_norm2: float,
    kernel: str,
    bandwidth: float,
    shape: float,
    within: str,
    unbiased: bool,
    n_threads: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    Y = y.detach().contiguous().numpy()
    if not np.isfinite(Y).all():  # here, inside the operator: torch.compile does not trace it
        raise ValueError("y contains NaN or inf")
    L = landmarks.detach().contiguous().numpy()
    alpha = weights.detach().to(torch.float64).contiguous().numpy()
    core = _core.Kernel(kernel, bandwidth, shape=shape)
    n_batch, d = Y.shape
    grad = torch.empty_like(y, memory_format=torch.contiguous_format)
    G = grad.numpy()
    parts: list[float] = [reference_norm2]
    # float32 batches against weights that cancel: the terms with the reference's weights in
    # float64 (the same points: float32 values are float64 ones), since float32 kernel values
    # (~1e-7 relative) carry errors of sum |w| against a sum of |sum w|
    exact = Y.dtype == np.float32 and cancellation(alpha) >= CANCELLATION_UPCAST
    Lw = np.ascontiguousarray(L, dtype=np.float64 if exact else Y.dtype)  # a copy only where the dtypes differ

    def rows(i0: int, i1: int) -> np.ndarray:  # the batch's rows for the weighted terms
        block: np.ndarray = Y[i0:i1].astype(np.float64) if exact else Y[i0:i1]
        return block

    if within == "nystrom":
        s = _core.kernel_row_sums(Lw, rows(0, n_batch), core, n_threads)  # s_j = sum_i k(l_j, y_i)
        Phi = projector.detach().numpy()
        f = Phi @ s  # s^T K_m^+ s = ||Phi s||^2
        beta = Phi.T @ f
        parts += [math.fsum(f * f) / n_batch**2, -2.0 / n_batch * math.fsum(alpha * s)]
        w = (2.0 / n_batch**2) * beta - (2.0 / n_batch) * alpha
        for i0, i1 in _batch_blocks(n_batch, d):
            buf = _core.kernel_value_gradients(rows(i0, i1), Lw, w, core, n_threads)
            G[i0:i1] = buf[:, 1:]
        return torch.tensor(math.fsum(parts), dtype=y.dtype), grad
    scale = _within_scale(n_batch, unbiased)
    ones = np.ones(n_batch)
    within_sum: list[float] = []
    for i0, i1 in _batch_blocks(n_batch, d):
        att = _core.kernel_value_gradients(rows(i0, i1), Lw, alpha, core, n_threads, -2.0 / n_batch)
        wit = _core.kernel_value_gradients(Y[i0:i1], Y, ones, core, n_threads, 2.0 * scale)
        parts.append(math.fsum(att[:, 0]))
        within_sum.append(math.fsum(wit[:, 0]))
        np.add(att[:, 1:], wit[:, 1:], out=att[:, 1:])
        G[i0:i1] = att[:, 1:]
    # the within values carry the gradient's factor 2; k(y, y) = 1 on the diagonal
    within_value = 0.5 * math.fsum(within_sum) - (n_batch * scale if unbiased else 0.0)
    return torch.tensor(math.fsum([*parts, within_value]), dtype=y.dtype), grad


def _on_device(
    y: torch.Tensor,
    landmarks: torch.Tensor,
    weights: torch.Tensor,
    centre: torch.Tensor,
    projector: torch.Tensor,
    reference_norm2: float,
    kernel: str,
    bandwidth: float,
    shape: float,
    within: str,
    unbiased: bool,
    precision: str,
    block: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    n_batch = y.shape[0]
    opts: dict[str, Any] = {"precision": precision, "block": block}
    grad = torch.zeros_like(y, memory_format=torch.contiguous_format)
    alpha = weights.double()
    if within == "nystrom":
        ones = torch.ones(n_batch, dtype=y.dtype, device=y.device)
        s = _device.value_gradient_sums(landmarks, y, ones, centre, kernel, bandwidth, shape, gradients=False, **opts)
        s64 = s.double()
        f = projector @ s64  # s^T K_m^+ s = ||Phi s||^2
        w = (2.0 / n_batch**2) * (projector.T @ f) - (2.0 / n_batch) * alpha
        _device.value_gradient_sums(
            y, landmarks, w.to(y.dtype), centre, kernel, bandwidth, shape, grad_out=grad, **opts
        )
        loss = (f @ f) / n_batch**2 - (2.0 / n_batch) * (alpha @ s64) + reference_norm2
        return loss.to(y.dtype), grad
    scale = _within_scale(n_batch, unbiased)
    att = _device.value_gradient_sums(
        y, landmarks, weights.to(y.dtype), centre, kernel, bandwidth, shape, grad_out=grad, scale=-2.0 / n_batch, **opts
    )
    cross = att.double().sum()
    ones = torch.ones(n_batch, dtype=y.dtype, device=y.device)
    wit = _device.value_gradient_sums(
        y, y, ones, centre, kernel, bandwidth, shape, same=True, grad_out=grad, scale=2.0 * scale, **opts
    )
    within_value = wit.double().sum() * scale - (n_batch * scale if unbiased else 0.0)
    loss = within_value - (2.0 / n_batch) * cross + reference_norm2
    return loss.to(y.dtype), grad


def _mmd_to_embedding(
    y: torch.Tensor,
    landmarks: torch.Tensor,
    weights: torch.Tensor,
    centre: torch.Tensor,
    projector: torch.Tensor,
    reference_norm2: float,
    kernel: str,
    bandwidth: float,
    shape: float,
    within: str,
    unbiased: bool,
    precision: str,
    block: int,
    n_threads: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """(loss, d loss / d y): see the module docstring. Arguments are checked by the caller
    (:class:`nystrom_kme.torch.MMDLoss`); ``block`` 0: sized from the batch here."""
    if block <= 0:
        block = max(256, BLOCK_ELEMENTS.get(y.device.type, 1 << 22) // y.shape[0])
    if y.device.type == "cpu" and y.shape[1] <= CORE_MAX_FEATURES:
        return _cpu(
            y, landmarks, weights, projector, reference_norm2, kernel, bandwidth, shape, within, unbiased, n_threads
        )
    if y.device.type == "cpu" and y.dtype == torch.float32:
        w = weights.detach().to(torch.float64).numpy()
        if cancellation(w) >= CANCELLATION_UPCAST:  # as _cpu: float64 where the weights cancel
            args = (y.double(), landmarks.double(), weights, centre.double(), projector, reference_norm2)
            loss, grad = _on_device(*args, kernel, bandwidth, shape, within, unbiased, precision, block)
            return loss.float(), grad.float()
    return _on_device(
        y,
        landmarks.to(y.dtype),
        weights,
        centre,
        projector,
        reference_norm2,
        kernel,
        bandwidth,
        shape,
        within,
        unbiased,
        precision,
        block,
    )


def _fake(
    y: torch.Tensor,
    landmarks: torch.Tensor,
    weights: torch.Tensor,
    centre: torch.Tensor,
    projector: torch.Tensor,
    reference_norm2: float,
    kernel: str,
    bandwidth: float,
    shape: float,
    within: str,
    unbiased: bool,
    precision: str,
    block: int,
    n_threads: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    return y.new_empty(()), torch.empty_like(y, memory_format=torch.contiguous_format)


#: The message of a second derivative (the name that users search for).
FIRST_DERIVATIVES_ONLY = (
    "MMDLoss supports first derivatives only; double backward (differentiating a gradient taken "
    "with create_graph=True: a gradient penalty, a Hessian, torch.func.hessian) is not implemented "
    "for nystrom_kme::mmd_to_embedding"
)


class _FirstDerivativeOnly(torch.autograd.Function):  # type: ignore[misc]  # torch is not followed by mypy
    """grad * grad_loss, attached to y's graph, whose own derivative raises: what the
    backward returns when it is recorded (``create_graph=True``). Without it the gradient
    would hold no graph, and a second derivative through it would be 0 without a word."""

    @staticmethod
    def forward(ctx: Any, grad: torch.Tensor, grad_loss: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return grad * grad_loss

    @staticmethod
    def backward(ctx: Any, *grad_outputs: torch.Tensor) -> tuple[None, None, None]:
        raise RuntimeError(FIRST_DERIVATIVES_ONLY)


def _setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[torch.Tensor, torch.Tensor]) -> None:
    ctx.mark_non_differentiable(output[1])
    ctx.save_for_backward(output[1])
    ctx.batch = inputs[0]  # an input, not saved (no copy, no version check): for _FirstDerivativeOnly


def _backward(ctx: Any, grad_loss: torch.Tensor, grad_grad: torch.Tensor | None) -> tuple[Any, ...]:
    (grad,) = ctx.saved_tensors
    if torch.is_grad_enabled():  # create_graph=True: the gradient refuses a second derivative
        return (_FirstDerivativeOnly.apply(grad, grad_loss, ctx.batch), *([None] * 13))
    return (grad * grad_loss, *([None] * 13))


_LIBRARY = torch.library.Library("nystrom_kme", "FRAGMENT")
_LIBRARY.define("mmd_to_embedding" + _SCHEMA)
_LIBRARY.impl("mmd_to_embedding", _mmd_to_embedding, "CompositeExplicitAutograd")
torch.library.register_fake("nystrom_kme::mmd_to_embedding", _fake, lib=_LIBRARY)
torch.library.register_autograd("nystrom_kme::mmd_to_embedding", _backward, setup_context=_setup_context, lib=_LIBRARY)
#: The operator (an OpOverload): called as a function, (loss, gradient).
mmd_to_embedding: Any = torch.ops.nystrom_kme.mmd_to_embedding.default
