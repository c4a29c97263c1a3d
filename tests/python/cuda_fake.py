"""A stand-in for CuPy (and the cuBLAS GEMM it reaches) that runs the CUDA kernels'
arithmetic in numpy, so the GPU path's Python side (dispatch, sources, launch
arguments, launch plans, reductions, the cuBLAS call's layout) is tested on machines
without a GPU.

``DevArray`` plays a device array (it has ``__cuda_array_interface__`` and a
``device``); ``RawModule`` checks that every name expression is one the program
declares, and its functions check each launch argument against the kernel's C++
signature (pointer, ``long long`` = np.int64, ``int`` = np.int32, ``T`` = the
template's float type) before emulating the kernel block by block over the grid
it is given: pass 1 writes one partial sum per (row chunk, landmark, column), pass 2
adds the chunks, so a grid that misses rows, landmarks or columns gives wrong sums.
The CUDA code itself is not exercised here (the ``gpu`` tests do that).
"""

from __future__ import annotations

import ctypes
import re
import types
from typing import Any

import numpy as np

from nystrom_kme.cuda import program


class _Device:
    def __init__(self, id: int = 0) -> None:  # noqa: A002 - CuPy's name
        self.id = id

    def __enter__(self) -> _Device:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def synchronize(self) -> None:
        return None


class DevArray(np.ndarray):
    """A numpy array that says it lives on CUDA device 0."""

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (0, False), "version": 3}

    @property
    def device(self) -> _Device:  # type: ignore[override]
        return _Device(0)

    @property
    def data(self) -> Any:  # type: ignore[override]
        """CuPy's ``a.data.ptr``: the address of the first element."""
        return types.SimpleNamespace(ptr=self.ctypes.data)


def dev(x: Any, dtype: Any = None) -> DevArray:
    return np.array(x, dtype=dtype).view(DevArray)


def _host(x: Any) -> np.ndarray:
    return np.array(np.asarray(x)).view(np.ndarray)


T_OF = {"float": np.float32, "double": np.float64}


def _kernel_map(code: int, v: np.ndarray) -> np.ndarray:
    t = v.dtype.type
    far = t(1e36 if v.dtype == np.float32 else 1e300)
    if code == 0:
        return np.exp(v * t(-0.5))
    if code == 1:
        return np.exp(-np.sqrt(v))
    if code == 2:
        r = np.sqrt(np.minimum(v, far)) * t(1.7320508075688772)
        return (r + t(1)) * np.exp(-r)
    if code == 3:
        r = np.sqrt(np.minimum(v, far)) * t(2.23606797749979)
        return (r * r * t(1.0 / 3.0) + r + t(1)) * np.exp(-r)
    return t(1) / np.sqrt(v + t(1))


def _fast_map(code: int, u: np.ndarray) -> np.ndarray:
    """fast_map<Kind> of kernel_map.cuh in float32: u = c v (c = FAST_MAP_FACTORS[code])."""
    u = u.astype(np.float32)
    if code == 0:
        return np.exp2(-u)
    if code == 4:
        return np.float32(1) / np.sqrt(u + np.float32(1))
    q = np.sqrt(np.minimum(u, np.float32(1e36)))
    if code == 1:
        return np.exp2(-q)
    r = q * np.float32(np.log(2.0))
    if code == 2:
        return (r + np.float32(1)) * np.exp2(-q)
    return (r * r * np.float32(1.0 / 3.0) + r + np.float32(1)) * np.exp2(-q)


def _row_map(code: int, T: type, v: np.ndarray) -> np.ndarray:
    """The map of the fused row sums: float32 fast_map, float64 kernel_map."""
    return _fast_map(code, v) if T is np.float32 else _kernel_map(code, v)


_MASK = (1 << 64) - 1


def _tf32(x: np.ndarray) -> np.ndarray:
    """cvt.rna.tf32.f32: the nearest float with a 10-bit mantissa (ties away from 0)."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def _splitmix_output(z: np.ndarray) -> np.ndarray:
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _dist2(A: np.ndarray, B: np.ndarray, inv: Any) -> np.ndarray:
    diff = A[:, None, :] * inv - B[None, :, :] * inv
    return (diff * diff).sum(axis=2, dtype=A.dtype)


def _ptr(x: Any, dtype: Any, what: str) -> np.ndarray:
    assert isinstance(x, DevArray), f"{what}: a device array expected, got {type(x).__name__}"
    assert x.dtype == dtype and x.flags.c_contiguous, f"{what}: {x.dtype}, contiguous={x.flags.c_contiguous}"
    return x.reshape(-1)


def _exact(x: Any, kind: type, what: str) -> Any:
    assert type(x) is kind, f"{what}: {kind.__name__} expected (the C++ parameter type), got {type(x).__name__}"
    return x


class _Kernel:
    def __init__(self, name: str) -> None:
        self.name = name
        self.launches = 0

    def __call__(self, grid: tuple, block: tuple, args: tuple) -> None:
        self.launches += 1
        grid = tuple(grid) + (1,) * (3 - len(grid))
        if m := re.fullmatch(r"nystrom_kme::cuda::weighted_sums_partial<(\d), (float|double), (\d+)>", self.name):
            self._partial(int(m[1]), T_OF[m[2]], int(m[3]), grid, block, args)
        elif m := re.fullmatch(r"nystrom_kme::cuda::kernel_matrix<(\d), (float|double)>", self.name):
            self._matrix(int(m[1]), T_OF[m[2]], grid, block, args)
        elif m := re.fullmatch(r"nystrom_kme::cuda::row_sums_small<(\d), (float|double), (\d+)>", self.name):
            self._small(int(m[1]), T_OF[m[2]], int(m[3]), grid, block, args)
        elif m := re.fullmatch(r"nystrom_kme::cuda::row_sums_tc<(\d)>", self.name):
            self._tc(int(m[1]), grid, block, args)
        elif m := re.fullmatch(r"nystrom_kme::cuda::centred_sq_norms<(float|double)>", self.name):
            self._norms(T_OF[m[1]], grid, block, args)
        elif m := re.fullmatch(r"nystrom_kme::cuda::centre_split<(float|double), ([13])>", self.name):
            self._split(T_OF[m[1]], int(m[2]), grid, block, args)
        elif m := re.fullmatch(r"nystrom_kme::cuda::gemm_row_sums<(\d), (float|double)>", self.name):
            self._epilogue(int(m[1]), T_OF[m[2]], grid, block, args)
        elif m := re.fullmatch(r"nystrom_kme::cuda::bin_sums_multi<(float|double)>", self.name):
            self._bins(T_OF[m[1]], grid, block, args)
        elif self.name == program.LABELS_START_NAME:
            self._labels_start(grid, block, args)
        elif self.name == program.LABELS_NEXT_NAME:
            self._labels_next(grid, block, args)
        elif self.name == program.REDUCE_NAME:
            self._reduce(grid, block, args)
        elif self.name == program.SUM_NAME:
            self._sum(grid, block, args)
        else:
            raise AssertionError(f"no such kernel {self.name}")

    def _partial(self, code: int, T: type, kc: int, grid: tuple, block: tuple, args: tuple) -> None:
        assert len(args) == 10 and tuple(block) == (program.THREADS,)
        A, B, W, partial = args[:4]
        m, n = _exact(args[4], np.int64, "m"), _exact(args[5], np.int64, "n")
        d, k = _exact(args[6], np.int32, "d"), _exact(args[7], np.int32, "k")
        chunk_rows, inv = _exact(args[8], np.int64, "chunk_rows"), _exact(args[9], T, "inv_bandwidth")
        A = _ptr(A, T, "A").reshape(m, d)
        B = _ptr(B, T, "B").reshape(n, d)
        if isinstance(W, np.uint64):
            assert W == 0 and k == 1, "a null W means one column of ones"
            W = np.ones((n, 1))
        else:
            W = _ptr(W, np.float64, "W").reshape(n, k)
        out = _ptr(partial, np.float64, "partial")
        for y in range(grid[1]):  # row chunks
            r0, r1 = y * chunk_rows, min(n, (y + 1) * chunk_rows)
            K = _kernel_map(code, _dist2(A, B[r0:r1], inv)).astype(np.float64)
            for x in range(grid[0]):  # landmark blocks
                i0, i1 = x * program.THREADS, min(m, (x + 1) * program.THREADS)
                for z in range(grid[2]):  # column groups
                    c0, c1 = z * kc, min(k, (z + 1) * kc)
                    if i0 >= i1 or c0 >= c1:
                        continue
                    vals = K[i0:i1] @ W[r0:r1, c0:c1]
                    view = out[y * m * k : (y + 1) * m * k].reshape(m, k)
                    view[i0:i1, c0:c1] = vals

    @staticmethod
    def _weights(w: Any, n: int) -> np.ndarray:
        if isinstance(w, np.uint64):
            assert w == 0, "a null w means weights 1"
            return np.ones(n)
        return _ptr(w, np.float64, "w")[:n]

    def _rows(self, grid: tuple, per_block: int, m: int, n: int, chunk_rows: int) -> None:
        assert grid[0] * per_block >= m and grid[1] * chunk_rows >= n, "the grid misses landmarks or rows"

    def _small(self, code: int, T: type, D: int, grid: tuple, block: tuple, args: tuple) -> None:
        assert len(args) == 8 and tuple(block) == (program.SMALL_THREADS,)
        m, n = _exact(args[4], np.int64, "m"), _exact(args[5], np.int64, "n")
        chunk_rows, scale = _exact(args[6], np.int64, "chunk_rows"), _exact(args[7], T, "scale")
        A, B = _ptr(args[0], T, "A").reshape(m, D), _ptr(args[1], T, "B").reshape(n, D)
        w, out = self._weights(args[2], n), _ptr(args[3], np.float64, "partial")
        self._rows(grid, program.SMALL_THREADS * program.SMALL_LANDMARKS, m, n, chunk_rows)
        for y in range(grid[1]):
            r0, r1 = y * chunk_rows, min(n, (y + 1) * chunk_rows)
            K = _row_map(code, T, _dist2(A, B[r0:r1], scale)).astype(np.float64)
            out[y * m : (y + 1) * m] = K @ w[r0:r1]

    def _norms(self, T: type, grid: tuple, block: tuple, args: tuple) -> None:
        n, d = _exact(args[3], np.int64, "n"), _exact(args[4], np.int32, "d")
        assert tuple(block) == (256,) and grid[0] * program.NORM_ROWS >= n
        X, centre = _ptr(args[0], T, "X").reshape(n, d), _ptr(args[1], T, "centre")[:d]
        diff = (X - centre).astype(np.float64)
        _ptr(args[2], T, "norms")[:n] = (diff * diff).sum(axis=1).astype(T)

    def _tc(self, code: int, grid: tuple, block: tuple, args: tuple) -> None:
        assert len(args) == 12 and tuple(block) == (program.TC_THREADS,)
        m, n, d = _exact(args[7], np.int64, "m"), _exact(args[8], np.int64, "n"), _exact(args[9], np.int32, "d")
        chunk_rows, u_scale = _exact(args[10], np.int64, "chunk_rows"), _exact(args[11], np.float32, "u_scale")
        A, B = _ptr(args[0], np.float32, "A").reshape(m, d), _ptr(args[1], np.float32, "B").reshape(n, d)
        centre = _ptr(args[2], np.float32, "centre")[:d]
        an, bn = _ptr(args[3], np.float32, "a_norm")[:m], _ptr(args[4], np.float32, "b_norm")[:n]
        w, out = self._weights(args[5], n), _ptr(args[6], np.float64, "partial")
        self._rows(grid, program.TC_TILE, m, n, chunk_rows)
        Ac, Bc = (A - centre).astype(np.float64), (B - centre).astype(np.float64)
        for y in range(grid[1]):
            r0, r1 = y * chunk_rows, min(n, (y + 1) * chunk_rows)
            v = an[:, None].astype(np.float64) + bn[None, r0:r1] - 2.0 * (Ac @ Bc[r0:r1].T)
            K = _fast_map(code, (u_scale * np.maximum(v, 0.0)).astype(np.float32)).astype(np.float64)
            out[y * m : (y + 1) * m] = K @ w[r0:r1]

    def _split(self, T: type, parts: int, grid: tuple, block: tuple, args: tuple) -> None:
        rows, d, second = (
            _exact(args[3], np.int64, "rows"),
            _exact(args[4], np.int32, "d"),
            _exact(args[5], np.int32, "second"),
        )
        assert grid[0] * block[0] >= rows * d
        X, centre = _ptr(args[0], T, "X").reshape(rows, d), _ptr(args[1], T, "centre")[:d]
        out = _ptr(args[2], T, "out").reshape(rows, parts * d)
        x = (X - centre).astype(T)
        if parts == 1:
            out[:] = x
            return
        hi = _tf32(x)
        lo = _tf32(x - hi)
        out[:] = np.hstack([hi, lo, hi] if second else [hi, hi, lo])

    def _epilogue(self, code: int, T: type, grid: tuple, block: tuple, args: tuple) -> None:
        m, cols, d = _exact(args[7], np.int64, "m"), _exact(args[8], np.int64, "cols"), _exact(args[9], np.int32, "d")
        u_scale = _exact(args[10], T, "u_scale")
        assert tuple(block) == (program.GEMM_THREADS,) and grid[0] * program.EPILOGUE_ROWS >= m
        G = _ptr(args[0], T, "G").reshape(m, cols)
        an, bn = _ptr(args[1], T, "a_norm")[:m], _ptr(args[2], T, "b_norm")[:cols]
        A, B = _ptr(args[3], T, "A").reshape(m, d), _ptr(args[4], T, "B")[: cols * d].reshape(cols, d)
        w = self._weights(args[5], cols)
        total = an[:, None] + bn[None, :]
        v = total - T(2) * G
        lost = v < total * T(1e-6)  # expanded_sq_distance: recomputed where it cancels
        v = np.where(lost, _dist2(A, B, T(1)), v)
        K = (
            _fast_map(code, np.maximum(v, T(0)) * u_scale)
            if T is np.float32
            else _kernel_map(code, np.maximum(v, T(0)) * u_scale)
        )
        _ptr(args[6], np.float64, "partial")[:m] = K.astype(np.float64) @ w

    def _labels_start(self, grid: tuple, block: tuple, args: tuple) -> None:
        seed = _exact(args[0], np.uint64, "seed")
        columns, n1 = _exact(args[3], np.int64, "columns"), _exact(args[4], np.int64, "n1")
        assert grid[0] * block[0] >= columns
        b = np.arange(1, columns + 1, dtype=np.uint64)
        s = (seed ^ (np.uint64(0xD1B54A32D192ED03) * b)) + np.uint64(0x9E3779B97F4A7C15)
        _ptr(args[1], np.uint64, "state")[:columns] = _splitmix_output(s)
        _ptr(args[2], np.float64, "needed")[:columns] = float(n1)

    def _labels_next(self, grid: tuple, block: tuple, args: tuple) -> None:
        columns, n1, n2 = (_exact(args[i], np.int64, name) for i, name in ((3, "columns"), (4, "n1"), (5, "n2")))
        position, rows = _exact(args[6], np.int64, "position"), _exact(args[7], np.int64, "rows")
        assert grid[0] * block[0] >= columns
        state, needed = _ptr(args[0], np.uint64, "state"), _ptr(args[1], np.float64, "needed")
        W = _ptr(args[2], np.float64, "W").reshape(rows, columns)
        plus, minus = 1.0 / float(n1), -1.0 / float(n2)
        s, need = state[1:columns].copy(), needed[1:columns].copy()
        one = np.uint64(0x3FF0000000000000)
        for i in range(rows):
            s = s + np.uint64(0x9E3779B97F4A7C15)
            u = ((_splitmix_output(s) >> np.uint64(12)) | one).view(np.float64) - 1.0
            first = u * float(n1 + n2 - position - i) < need
            need -= first
            W[i, 1:] = np.where(first, plus, minus)
            W[i, 0] = plus if position + i < n1 else minus
        state[1:columns], needed[1:columns] = s, need

    def _bins(self, T: type, grid: tuple, block: tuple, args: tuple) -> None:
        m, d = _exact(args[6], np.int64, "m"), _exact(args[7], np.int32, "d")
        n_bins, bin0 = _exact(args[8], np.int32, "n_bins"), _exact(args[9], np.int32, "bin0")
        K, scale = _exact(args[10], np.int32, "n_kernels"), _exact(args[11], T, "scale")
        assert tuple(block) == (program.BIN_THREADS,) and grid[0] * block[0] >= m and grid[1] <= program.MAX_GRID_Y
        assert 1 <= K <= program.BIN_KERNELS
        offsets = _ptr(args[2], np.int64, "offsets")[: n_bins + 1]
        rows = int(offsets[-1])
        A, B = _ptr(args[0], T, "A").reshape(m, d), _ptr(args[1], T, "B")[: rows * d].reshape(rows, d)
        kinds, factors = _ptr(args[3], np.int32, "kinds")[:K], _ptr(args[4], T, "factors")[:K]
        E = _ptr(args[5], np.float64, "E")[: K * m * n_bins].reshape(K, m, n_bins)
        v = _dist2(A, B, scale)
        for j in range(K):
            u = v * factors[j]
            vals = (_fast_map(int(kinds[j]), u) if T is np.float32 else _kernel_map(int(kinds[j]), u)).astype(
                np.float64
            )
            for g in range(bin0, bin0 + grid[1]):
                E[j, :, g] = vals[:, offsets[g] : offsets[g + 1]].sum(axis=1)

    def _reduce(self, grid: tuple, block: tuple, args: tuple) -> None:
        partial, out = _ptr(args[0], np.float64, "partial"), _ptr(args[1], np.float64, "out")
        size, chunks = _exact(args[2], np.int64, "size"), _exact(args[3], np.int32, "n_chunks")
        assert grid[0] * block[0] >= size
        out[:size] = partial[: chunks * size].reshape(chunks, size).sum(axis=0)

    def _sum(self, grid: tuple, block: tuple, args: tuple) -> None:
        assert tuple(grid)[:1] == (1,) and tuple(block) == (program.REDUCE_THREADS,)
        x, out = _ptr(args[0], np.float64, "x"), _ptr(args[1], np.float64, "out")
        out[0] = x[: _exact(args[2], np.int64, "size")].sum()

    def _matrix(self, code: int, T: type, grid: tuple, block: tuple, args: tuple) -> None:
        m, n, d = _exact(args[3], np.int64, "m"), _exact(args[4], np.int64, "n"), _exact(args[5], np.int32, "d")
        inv = _exact(args[6], T, "inv_bandwidth")
        assert grid[0] * block[0] >= n and grid[1] * block[1] >= m
        A, B = _ptr(args[0], T, "A").reshape(m, d), _ptr(args[1], T, "B").reshape(n, d)
        _ptr(args[2], np.float64, "out").reshape(m, n)[:] = _kernel_map(code, _dist2(A, B, inv))


class RawModule:
    compiled: list[tuple[str, ...]] = []

    def __init__(self, code: str, options: tuple = (), name_expressions: tuple = ()) -> None:
        assert code == program.source()
        self.names = tuple(name_expressions)
        RawModule.compiled.append(self.names)

    def get_function(self, name: str) -> _Kernel:
        assert name in self.names, f"{name} was not among the name expressions"
        return _Kernel(name)


def _gemm_ex(
    handle: int,
    transa: int,
    transb: int,
    m: int,
    n: int,
    k: int,
    alpha: int,
    A: int,
    a_type: int,
    lda: int,
    B: int,
    b_type: int,
    ldb: int,
    beta: int,
    C: int,
    c_type: int,
    ldc: int,
    compute: int,
    algo: int,
) -> None:
    """cublasGemmEx on raw addresses, column-major: C = alpha op(A) op(B) + beta C (C not
    read when beta is 0). The compute type is recorded, not emulated."""
    assert a_type == b_type == c_type and a_type in (0, 1) and algo == -1
    assert compute == (77 if a_type == 0 else 70), f"compute type {compute} for data type {a_type}"
    ct = ctypes.c_float if a_type == 0 else ctypes.c_double

    def mat(ptr: int, ld: int, rows: int, cols: int) -> np.ndarray:
        assert ld >= rows
        buf = np.ctypeslib.as_array((ct * (ld * (cols - 1) + rows)).from_address(ptr))
        return np.lib.stride_tricks.as_strided(buf, shape=(rows, cols), strides=(buf.itemsize, ld * buf.itemsize))

    opA = mat(A, lda, k, m).T if transa == 1 else mat(A, lda, m, k)
    opB = mat(B, ldb, n, k).T if transb == 1 else mat(B, ldb, k, n)
    out = mat(C, ldc, m, n)
    a, b = (np.ctypeslib.as_array((ct * 1).from_address(p))[0] for p in (alpha, beta))
    out[...] = a * (opA @ opB) if b == 0 else a * (opA @ opB) + b * out
    _CUBLAS_CALLS.append(compute)


_CUBLAS_CALLS: list[int] = []


def make_cublas_modules() -> dict[str, types.ModuleType]:
    """``cupy_backends.cuda.libs.cublas`` with gemmEx and the pointer mode, as sys.modules entries."""
    cublas = types.ModuleType("cupy_backends.cuda.libs.cublas")
    cublas.CUBLAS_POINTER_MODE_HOST, cublas.CUBLAS_POINTER_MODE_DEVICE = 0, 1
    cublas.getPointerMode = lambda handle: 0
    cublas.setPointerMode = lambda handle, mode: None
    cublas.gemmEx = _gemm_ex
    libs = types.ModuleType("cupy_backends.cuda.libs")
    libs.cublas = cublas
    cuda = types.ModuleType("cupy_backends.cuda")
    cuda.libs = libs
    root = types.ModuleType("cupy_backends")
    root.cuda = cuda
    return {
        "cupy_backends": root,
        "cupy_backends.cuda": cuda,
        "cupy_backends.cuda.libs": libs,
        "cupy_backends.cuda.libs.cublas": cublas,
    }


def make_module() -> types.ModuleType:
    cp = types.ModuleType("cupy")
    cp.ndarray = DevArray
    cp.float32, cp.float64, cp.int64, cp.uint64 = np.float32, np.float64, np.int64, np.uint64
    cp.argsort = lambda x: np.argsort(x, kind="stable").view(DevArray)
    cp.bincount = lambda x, minlength=0: np.bincount(x, minlength=minlength).view(DevArray)
    cp.cumsum = lambda x: np.cumsum(x).view(DevArray)
    cp.asarray = lambda x, dtype=None: np.asarray(x, dtype=dtype).view(DevArray)
    cp.ascontiguousarray = lambda x, dtype=None: np.ascontiguousarray(x, dtype=dtype).view(DevArray)
    cp.asnumpy = _host
    cp.empty = lambda shape, dtype=np.float64: np.full(  # poisoned: a missed write shows
        shape, np.nan if np.dtype(dtype).kind == "f" else 0xDEAD, dtype=dtype
    ).view(DevArray)
    cp.zeros = lambda shape, dtype=np.float64: np.zeros(shape, dtype=dtype).view(DevArray)
    cp.isfinite = np.isfinite
    cp.concatenate = lambda arrays: np.concatenate(arrays).view(DevArray)
    cp.from_dlpack = lambda x: np.from_dlpack(x).view(DevArray)
    cp.RawModule = RawModule
    cp.cuda = types.SimpleNamespace(
        Device=_Device,
        runtime=types.SimpleNamespace(getDeviceCount=lambda: 0),
        device=types.SimpleNamespace(get_cublas_handle=lambda: 0),
    )
    return cp
