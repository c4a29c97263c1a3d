"""The kernel sums on the GPU: NVRTC compilation of the CUDA headers through
``cupy.RawModule`` (small modules, each compiled on first use and cached by CuPy on
disk) and the launches. Inputs are validated cupy arrays
(:func:`~nystrom_kme.cuda.arrays.as_device_matrix`); results stay on the device.

Deterministic: the headers reduce in a fixed order without atomics, and the plans
depend on the sizes only (:mod:`~nystrom_kme.cuda.program`).
"""

from __future__ import annotations

import functools
import math
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
def _module(cp: ModuleType, key: tuple[object, ...], device_id: int) -> CupyRawModule:
    """One compiled module per (CuPy module, module key, device): program.module_names."""
    names = program.module_names(key)
    return cp.RawModule(code=program.source(), options=program.COMPILE_OPTIONS, name_expressions=names)


def _function(key: tuple[object, ...], expression: str) -> CupyRawKernel:
    cp = require_cupy()
    return _module(cp, key, cp.cuda.Device().id).get_function(expression)


def _main(kernel: Kernel, dtype: DTypeLike, expression: str) -> CupyRawKernel:
    return _function(("main", program.kernel_code(kernel.name), np.dtype(dtype).name), expression)


def _scalar(dtype: DTypeLike, value: float) -> np.floating:
    """``value`` as a scalar of the inputs' dtype (float32 or float64)."""
    return np.float32(value) if np.dtype(dtype) == np.float32 else np.float64(value)


def _bandwidth(kernel: Kernel) -> float:
    if not kernel.is_resolved:
        raise ValueError("bandwidth='median' must be resolved on data first (kernel.resolve(X))")
    return float(kernel.bandwidth)


def _check_pair(A: CupyArray, B: CupyArray) -> None:
    if A.dtype != B.dtype:
        raise ValueError(f"A and B must have the same dtype, got {A.dtype} and {B.dtype}")
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"A has {A.shape[1]} features but B has {B.shape[1]}")


def weighted_kernel_sums(
    A: CupyArray, B: CupyArray, W: CupyArray | None, kernel: Kernel, *, path: str | None = None
) -> CupyArray:
    """K(A, B) W as a (m, k) float64 cupy array; W None: K(A, B) 1, (m, 1).

    A (m, d), B (n, d): C-contiguous cupy arrays of one dtype (float32/float64);
    W (n, k): C-contiguous float64 cupy array. One column runs the fused row sums
    (``program.row_sums_path``; ``path`` forces one, for tests and measurements:
    "small", "tc", "gemm", "partial" or "matrix").
    """
    cp = require_cupy()
    _check_pair(A, B)
    m, n, d = A.shape[0], B.shape[0], A.shape[1]
    k = 1 if W is None else W.shape[1]
    if W is not None and (W.shape[0] != n or W.dtype != cp.float64 or not W.flags.c_contiguous):
        raise ValueError(f"W must be C-contiguous float64 of shape ({n}, k), got {W.shape} {W.dtype}")
    program.kernel_code(kernel.name)  # radial kernels only
    bandwidth = _bandwidth(kernel)
    if m == 0 or n == 0:
        return cp.zeros((m, k), dtype=cp.float64)
    chosen = path or program.row_sums_path(A.dtype, m, d, k)
    if chosen == "matrix":
        return _matrix_sums(A, B, W if W is not None else cp.ones((n, 1)), kernel)
    if chosen != "partial":
        if k != 1:
            raise ValueError(f"the fused row sums take one weight column, got {k}")
        w = None if W is None else cp.ascontiguousarray(W[:, 0])
        if chosen == "gemm":
            step = program.GEMM_MAX_LANDMARKS  # landmarks by blocks: G stays within its budget
            parts = [_gemm_row_sums(A[a : a + step], B, w, kernel, bandwidth) for a in range(0, m, step)]
            return (parts[0] if len(parts) == 1 else cp.concatenate(parts)).reshape(m, 1)
        return _row_sums(A, B, w, kernel, chosen, bandwidth).reshape(m, 1)
    plan = program.SumsPlan.of(m, n, k)
    partial = cp.empty(plan.workspace_entries, dtype=cp.float64)
    out = cp.empty((m, k), dtype=cp.float64)
    code = program.kernel_code(kernel.name)
    fn = _main(kernel, A.dtype, program.partial_name(code, A.dtype, plan.columns_per_thread))
    w_arg = np.uint64(0) if W is None else W  # nullptr: weights 1
    args = (A, B, w_arg, partial, np.int64(m), np.int64(n), np.int32(d), np.int32(k), np.int64(plan.chunk_rows))
    fn(plan.grid, (program.THREADS,), (*args, _scalar(A.dtype, 1.0 / bandwidth)))
    reduce = _function(("reduce",), program.REDUCE_NAME)
    reduce(plan.reduce_grid, (program.REDUCE_THREADS,), (partial, out, np.int64(m * k), np.int32(plan.n_chunks)))
    return out


def _row_sums(
    A: CupyArray, B: CupyArray, w: CupyArray | None, kernel: Kernel, path: str, bandwidth: float
) -> CupyArray:
    """K(A, B) w, (m,) float64, by row_sums_small ("small") or row_sums_tc ("tc")."""
    cp = require_cupy()
    m, n, d = A.shape[0], B.shape[0], A.shape[1]
    code = program.kernel_code(kernel.name)
    factor = program.FAST_MAP_FACTORS[code]
    plan = program.RowPlan.of("small" if path == "small" else "tc", m, n)
    partial = cp.empty(plan.workspace_entries, dtype=cp.float64)
    w_arg = np.uint64(0) if w is None else w  # nullptr: weights 1
    args: tuple[object, ...]
    if path == "small":
        dtype = np.dtype(A.dtype.name)
        scale = (math.sqrt(factor) if dtype == np.float32 else 1.0) / bandwidth
        fn = _function(("small", code, dtype.name, d), program.small_name(code, dtype, d))
        args = (A, B, w_arg, partial, np.int64(m), np.int64(n), np.int64(plan.chunk_rows), _scalar(dtype, scale))
    elif path == "tc":
        if A.dtype != cp.float32:
            raise ValueError(f"the tensor-core row sums are float32 only, got {A.dtype}")
        centre = A.astype(cp.float64).mean(axis=0).astype(cp.float32)  # the landmarks' mean
        norms = _function(("tc", code), program.norms_name(np.dtype(np.float32)))
        a_norm, b_norm = cp.empty(m, dtype=cp.float32), cp.empty(n, dtype=cp.float32)
        for X, out in ((A, a_norm), (B, b_norm)):
            rows = X.shape[0]
            norms((-(-rows // program.NORM_ROWS),), (256,), (X, centre, out, np.int64(rows), np.int32(d)))
        fn = _function(("tc", code), program.tc_name(code))
        sizes = (np.int64(m), np.int64(n), np.int32(d), np.int64(plan.chunk_rows))
        args = (A, B, centre, a_norm, b_norm, w_arg, partial, *sizes, np.float32(factor / bandwidth**2))
    else:
        raise ValueError(f"no row-sum path {path!r}")
    fn(plan.grid, (plan.threads,), args)
    out = cp.empty(m, dtype=cp.float64)
    reduce = _function(("reduce",), program.REDUCE_NAME)
    reduce(plan.reduce_grid, (program.REDUCE_THREADS,), (partial, out, np.int64(m), np.int32(plan.n_chunks)))
    return out


#: cuBLAS constants (cublas_api.h, library_types.h).
_OP_N, _OP_T = 0, 1
_R_32F, _R_64F = 0, 1
_COMPUTE = {"tf32": 77, "fp64": 70}  # CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_COMPUTE_64F


def _gemm_nt(A: CupyArray, B: CupyArray, out: CupyArray, compute: str) -> None:
    """out (m, r) = A (m, K) B (r, K)^T, row-major, by cublasGemmEx with ``compute``
    ("tf32" or "fp64"): in cuBLAS's column-major terms out^T = B A^T."""
    cp = require_cupy()
    from cupy_backends.cuda.libs import cublas

    m, K = A.shape
    r = B.shape[0]
    real = _R_32F if A.dtype == cp.float32 else _R_64F
    one, zero = (np.ones(1, A.dtype.name), np.zeros(1, A.dtype.name))
    handle = cp.cuda.device.get_cublas_handle()
    mode = cublas.getPointerMode(handle)
    cublas.setPointerMode(handle, cublas.CUBLAS_POINTER_MODE_HOST)
    try:
        cublas.gemmEx(
            handle,
            _OP_T,
            _OP_N,
            r,
            m,
            K,
            one.ctypes.data,
            B.data.ptr,
            real,
            K,
            A.data.ptr,
            real,
            K,
            zero.ctypes.data,
            out.data.ptr,
            real,
            r,
            _COMPUTE[compute],
            -1,
        )
    finally:
        cublas.setPointerMode(handle, mode)


def _gemm_row_sums(A: CupyArray, B: CupyArray, w: CupyArray | None, kernel: Kernel, bandwidth: float) -> CupyArray:
    """K(A, B) w, (m,) float64, through cuBLAS: both sides centred on the landmarks'
    mean, G = A_c B_c^T by blocks of rows (float32: one TF32 GEMM of depth 3d on split
    operands, float32 accuracy; float64: DGEMM), then the squared distances, the map and
    the sums of each block (gemm_row_sums) and the blocks' partials added in order."""
    cp = require_cupy()
    m, n, d = A.shape[0], B.shape[0], A.shape[1]
    dtype = np.dtype(A.dtype.name)
    code = program.kernel_code(kernel.name)
    f32 = dtype == np.float32
    parts, compute = (3, "tf32") if f32 else (1, "fp64")
    key = ("gemm", code, dtype.name)
    split = _function(key, program.split_name(dtype, parts))
    norms = _function(key, program.norms_name(dtype))
    epilogue = _function(key, program.epilogue_name(code, dtype))
    centre = A.astype(cp.float64).mean(axis=0).astype(dtype)  # the landmarks' mean

    def operand(X: CupyArray, second: int) -> tuple[CupyArray, CupyArray]:
        rows = X.shape[0]
        out, sq = cp.empty((rows, parts * d), dtype=dtype), cp.empty(rows, dtype=dtype)
        grid = (-(-rows * d // program.GEMM_THREADS),)
        split(grid, (program.GEMM_THREADS,), (X, centre, out, np.int64(rows), np.int32(d), np.int32(second)))
        norms((-(-rows // program.NORM_ROWS),), (256,), (X, centre, sq, np.int64(rows), np.int32(d)))
        return out, sq

    Ac, an = operand(A, 0)
    block = program.gemm_block_rows(m, n, dtype.itemsize)
    starts = range(0, n, block)
    partial = cp.empty((len(starts), m), dtype=cp.float64)
    factor = program.FAST_MAP_FACTORS[code] if f32 else 1.0
    u_scale = _scalar(dtype, factor / bandwidth**2)
    G = cp.empty((m, block), dtype=dtype)
    for c, start in enumerate(starts):
        Bb = B[start : start + block]
        rows = Bb.shape[0]
        Bc, bn = operand(Bb, 1)
        Gb = G[:, :rows] if rows == block else cp.empty((m, rows), dtype=dtype)
        _gemm_nt(Ac, Bc, Gb, compute)
        w_arg = np.uint64(0) if w is None else w[start : start + rows]
        args = (Gb, an, bn, A, Bb, w_arg, partial[c], np.int64(m), np.int64(rows), np.int32(d), u_scale)
        epilogue((-(-m // program.EPILOGUE_ROWS),), (program.GEMM_THREADS,), args)
    out = cp.empty(m, dtype=cp.float64)
    reduce = _function(("reduce",), program.REDUCE_NAME)
    reduce(
        (-(-m // program.REDUCE_THREADS),),
        (program.REDUCE_THREADS,),
        (partial, out, np.int64(m), np.int32(len(starts))),
    )
    return out


def row_sums(A: CupyArray, B: CupyArray, kernel: Kernel) -> CupyArray:
    """K(A, B) 1, (m,) float64 cupy array."""
    return weighted_kernel_sums(A, B, None, kernel)[:, 0]


def total_kernel_sum(X: CupyArray, kernel: Kernel) -> CupyArray:
    """1^T K(X, X) 1 as a 0-d float64 cupy array (the row sums, then one fixed-order sum)."""
    cp = require_cupy()
    sums = row_sums(X, X, kernel)
    out = cp.empty((1,), dtype=cp.float64)
    fn = _function(("reduce",), program.SUM_NAME)
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
    fn = _main(kernel, A.dtype, program.matrix_name(program.kernel_code(kernel.name), A.dtype))
    fn(
        ((n + t - 1) // t, (m + t - 1) // t),
        (t, t),
        (A, B, out, np.int64(m), np.int64(n), np.int32(d), _scalar(A.dtype, 1.0 / _bandwidth(kernel))),
    )
    return out


def _matrix_sums(A: CupyArray, B: CupyArray, W: CupyArray, kernel: Kernel) -> CupyArray:
    """K(A, B) W (m, k) float64 as float64 blocks K(A, B_block) (kernel_matrix) times
    W_block by cuBLAS (DGEMM), added in block order: for many columns, where a GEMM
    beats weighted_sums_partial, which recomputes the kernel values per group of 32."""
    cp = require_cupy()
    out = cp.zeros((A.shape[0], W.shape[1]), dtype=cp.float64)
    block = program.matrix_block_rows(A.shape[0], B.shape[0])
    for start in range(0, B.shape[0], block):
        out += kernel_matrix(A, B[start : start + block], kernel) @ W[start : start + block]
    return out


class DeviceSplits:
    """The label weights of :class:`~nystrom_kme.permutation.SplitSpec`'s splits,
    generated on the current GPU block after block (split_labels.cuh): bit for bit
    those of ``spec.new().next_weights(rows)`` on the CPU."""

    def __init__(self, n1: int, n2: int, n_permutations: int, seed: int) -> None:
        cp = require_cupy()
        self.n1, self.n2, self.columns = n1, n2, n_permutations + 1
        self.position = 0
        self.state = cp.empty(self.columns, dtype=cp.uint64)
        self.needed = cp.empty(self.columns, dtype=cp.float64)
        start = _function(("labels",), program.LABELS_START_NAME)
        start(
            self._grid(),
            (program.LABEL_THREADS,),
            (np.uint64(seed), self.state, self.needed, np.int64(self.columns), np.int64(n1)),
        )

    def _grid(self) -> tuple[int]:
        return (-(-self.columns // program.LABEL_THREADS),)

    def next_weights(self, rows: int) -> CupyArray:
        """(rows, B + 1) float64 on the device: the weights of the next ``rows`` rows."""
        cp = require_cupy()
        if rows < 0 or rows > self.n1 + self.n2 - self.position:
            raise ValueError(f"{rows} rows requested but {self.n1 + self.n2 - self.position} remain")
        W = cp.empty((rows, self.columns), dtype=cp.float64)
        fn = _function(("labels",), program.LABELS_NEXT_NAME)
        args = (self.state, self.needed, W, np.int64(self.columns), np.int64(self.n1), np.int64(self.n2))
        fn(self._grid(), (program.LABEL_THREADS,), (*args, np.int64(self.position), np.int64(rows)))
        self.position += rows
        return W


def bin_sums(A: CupyArray, B: CupyArray, offsets: CupyArray, kernels: list[Kernel]) -> CupyArray:
    """E (K, m, n_bins) float64: E[j, i, g] = sum of k_j(a_i, b) over the rows b of bin g,
    B's rows sorted by bin (bin g: rows offsets[g] to offsets[g + 1]), for radial kernels
    (bin_sums.cuh, BIN_KERNELS per launch)."""
    cp = require_cupy()
    _check_pair(A, B)
    m, d, n_bins = A.shape[0], A.shape[1], offsets.shape[0] - 1
    dtype = np.dtype(A.dtype.name)
    E = cp.empty((len(kernels), m, n_bins), dtype=cp.float64)
    if m == 0 or n_bins == 0:
        return E
    fn = _function(("bins", dtype.name), program.bins_name(dtype))
    for g0 in range(0, len(kernels), program.BIN_KERNELS):
        group = kernels[g0 : g0 + program.BIN_KERNELS]
        codes = [program.kernel_code(k.name) for k in group]
        widths = [_bandwidth(k) for k in group]
        smallest = min(widths)
        factors = [
            (smallest / s) ** 2 * (program.FAST_MAP_FACTORS[c] if dtype == np.float32 else 1.0)
            for c, s in zip(codes, widths)
        ]
        kinds = cp.asarray(np.asarray(codes, dtype=np.int32))
        f = cp.asarray(np.asarray(factors, dtype=dtype))
        out = E[g0 : g0 + len(group)]
        for bin0 in range(0, n_bins, program.MAX_GRID_Y):
            grid = (-(-m // program.BIN_THREADS), min(program.MAX_GRID_Y, n_bins - bin0))
            args = (A, B, offsets, kinds, f, out, np.int64(m), np.int32(d), np.int32(n_bins), np.int32(bin0))
            fn(grid, (program.BIN_THREADS,), (*args, np.int32(len(group)), _scalar(dtype, 1.0 / smallest)))
    if not bool(cp.isfinite(E).all()):  # bin_sums.cuh maps a kernel code it does not know to NaN
        raise RuntimeError(f"the GPU bin sums of {[k.name for k in kernels]} are not finite")
    return E


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


__all__ = [
    "DeviceSplits",
    "bin_sums",
    "evaluate",
    "kernel_matrix",
    "row_sums",
    "total_kernel_sum",
    "weighted_kernel_sums",
]
