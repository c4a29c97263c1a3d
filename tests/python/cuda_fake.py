"""A stand-in for CuPy that runs the CUDA kernels' arithmetic in numpy, so the GPU
path's Python side (dispatch, sources, launch arguments, launch plans, reductions)
is tested on machines without a GPU.

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


def make_module() -> types.ModuleType:
    cp = types.ModuleType("cupy")
    cp.ndarray = DevArray
    cp.float32, cp.float64 = np.float32, np.float64
    cp.asarray = lambda x, dtype=None: np.asarray(x, dtype=dtype).view(DevArray)
    cp.ascontiguousarray = lambda x, dtype=None: np.ascontiguousarray(x, dtype=dtype).view(DevArray)
    cp.asnumpy = _host
    cp.empty = lambda shape, dtype=np.float64: np.full(shape, np.nan, dtype=dtype).view(DevArray)
    cp.zeros = lambda shape, dtype=np.float64: np.zeros(shape, dtype=dtype).view(DevArray)
    cp.isfinite = np.isfinite
    cp.concatenate = lambda arrays: np.concatenate(arrays).view(DevArray)
    cp.from_dlpack = lambda x: np.from_dlpack(x).view(DevArray)
    cp.RawModule = RawModule
    cp.cuda = types.SimpleNamespace(Device=_Device, runtime=types.SimpleNamespace(getDeviceCount=lambda: 0))
    return cp
