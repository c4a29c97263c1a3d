"""The kernel sums on the GPU: NVRTC compilation of the CUDA header through
``cupy.RawModule`` (one module per kernel and dtype, compiled on first use and
cached by CuPy on disk) and the launches. Inputs are validated cupy arrays
(:func:`~nystrom_kme.cuda.arrays.as_device_matrix`); results stay on the device.

Deterministic: the header reduces in a fixed order without atomics, and the plan
depends on the sizes only (:class:`~nystrom_kme.cuda.program.SumsPlan`).
"""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Any

import numpy as np
from numpy.typing import DTypeLike

from ..kernels import Kernel
from . import program
from .arrays import CupyArray, require_cupy

#: CuPy's compiled module and kernel (CuPy is untyped here: Any).
CupyRawModule = Any
CupyRawKernel = Any


@functools.cache
def _module(cp: ModuleType, code: int, dtype_name: str, device_id: int) -> CupyRawModule:
    """One compiled module per (CuPy module, kernel, dtype, device)."""
    names = program.name_expressions(code, np.dtype(dtype_name))
    return cp.RawModule(code=program.source(), options=program.COMPILE_OPTIONS, name_expressions=names)


def _function(kernel_name: str, dtype: DTypeLike, expression: str) -> CupyRawKernel:
    cp = require_cupy()
    code = program.kernel_code(kernel_name)
    mod = _module(cp, code, np.dtype(dtype).name, cp.cuda.Device().id)
    return mod.get_function(expression)


def _scalar(dtype: DTypeLike, value: float) -> np.floating:
    """``value`` as a scalar of the inputs' dtype (float32 or float64)."""
    return np.float32(value) if np.dtype(dtype) == np.float32 else np.float64(value)


def _inverse_bandwidth(kernel: Kernel, dtype: DTypeLike) -> np.floating:
    if not kernel.is_resolved:
        raise ValueError("bandwidth='median' must be resolved on data first (kernel.resolve(X))")
    return _scalar(dtype, 1.0 / float(kernel.bandwidth))


def _check_pair(A: CupyArray, B: CupyArray) -> None:
    if A.dtype != B.dtype:
        raise ValueError(f"A and B must have the same dtype, got {A.dtype} and {B.dtype}")
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"A has {A.shape[1]} features but B has {B.shape[1]}")


def weighted_kernel_sums(A: CupyArray, B: CupyArray, W: CupyArray | None, kernel: Kernel) -> CupyArray:
    """K(A, B) W as a (m, k) float64 cupy array; W None: K(A, B) 1, (m, 1).

    A (m, d), B (n, d): C-contiguous cupy arrays of one dtype (float32/float64);
    W (n, k): C-contiguous float64 cupy array.
    """
    cp = require_cupy()
    _check_pair(A, B)
    m, n, d = A.shape[0], B.shape[0], A.shape[1]
    k = 1 if W is None else W.shape[1]
    if W is not None and (W.shape[0] != n or W.dtype != cp.float64 or not W.flags.c_contiguous):
        raise ValueError(f"W must be C-contiguous float64 of shape ({n}, k), got {W.shape} {W.dtype}")
    if m == 0 or n == 0:
        return cp.zeros((m, k), dtype=cp.float64)
    plan = program.SumsPlan.of(m, n, k)
    partial = cp.empty(plan.workspace_entries, dtype=cp.float64)
    out = cp.empty((m, k), dtype=cp.float64)
    fn = _function(
        kernel.name, A.dtype, program.partial_name(program.kernel_code(kernel.name), A.dtype, plan.columns_per_thread)
    )
    w_arg = np.uint64(0) if W is None else W  # nullptr: weights 1
    fn(
        plan.grid,
        (program.THREADS,),
        (
            A,
            B,
            w_arg,
            partial,
            np.int64(m),
            np.int64(n),
            np.int32(d),
            np.int32(k),
            np.int64(plan.chunk_rows),
            _inverse_bandwidth(kernel, A.dtype),
        ),
    )
    reduce = _function(kernel.name, A.dtype, program.REDUCE_NAME)
    reduce(plan.reduce_grid, (program.REDUCE_THREADS,), (partial, out, np.int64(m * k), np.int32(plan.n_chunks)))
    return out


def row_sums(A: CupyArray, B: CupyArray, kernel: Kernel) -> CupyArray:
    """K(A, B) 1, (m,) float64 cupy array."""
    return weighted_kernel_sums(A, B, None, kernel)[:, 0]


def total_kernel_sum(X: CupyArray, kernel: Kernel) -> CupyArray:
    """1^T K(X, X) 1 as a 0-d float64 cupy array (the row sums, then one fixed-order sum)."""
    cp = require_cupy()
    sums = row_sums(X, X, kernel)
    out = cp.empty((1,), dtype=cp.float64)
    fn = _function(kernel.name, X.dtype, program.SUM_NAME)
    fn((1,), (program.REDUCE_THREADS,), (sums, out, np.int64(sums.shape[0])))
    return out[0]


def kernel_matrix(A: CupyArray, B: CupyArray, kernel: Kernel) -> CupyArray:
    """K(A, B), (m, n) float64 cupy array (the landmarks' K_m with A = B)."""
    cp = require_cupy()
    _check_pair(A, B)
    m, n, d = A.shape[0], B.shape[0], A.shape[1]
    out = cp.empty((m, n), dtype=cp.float64)
    if m == 0 or n == 0:
        return out
    t = program.MATRIX_TILE
    fn = _function(kernel.name, A.dtype, program.matrix_name(program.kernel_code(kernel.name), A.dtype))
    fn(
        ((n + t - 1) // t, (m + t - 1) // t),
        (t, t),
        (A, B, out, np.int64(m), np.int64(n), np.int32(d), _inverse_bandwidth(kernel, A.dtype)),
    )
    return out


def evaluate(Y: object, support: np.ndarray, weights: np.ndarray, kernel: Kernel) -> CupyArray:
    """mu(y) = sum_j w_j k(z_j, y) for the rows of the CUDA array Y: (n,) float64 on
    Y's device (the support and weights are uploaded)."""
    from .arrays import as_device_matrix

    cp = require_cupy()
    rows = as_device_matrix(Y, "Y")
    if rows.shape[1] != support.shape[1]:
        raise ValueError(f"Y has {rows.shape[1]} features but the embedding has {support.shape[1]}")
    with cp.cuda.Device(rows.device.id):
        dtype = np.result_type(rows.dtype.name, support.dtype)
        S = cp.ascontiguousarray(cp.asarray(support), dtype=dtype)
        w = cp.ascontiguousarray(cp.asarray(weights, dtype=cp.float64).reshape(-1, 1))
        return weighted_kernel_sums(cp.ascontiguousarray(rows, dtype=dtype), S, w, kernel)[:, 0]


__all__ = ["evaluate", "kernel_matrix", "row_sums", "total_kernel_sum", "weighted_kernel_sums"]
