"""The CUDA program of the GPU path, as data: where the header is, the kernel codes,
the template instantiations to compile, and the launch plan of each sum. Pure
Python (no GPU library), so that all of it is tested on any machine.

The source is the C++ header ``nystrom_kme/cuda/kernel_sums.cuh``, the same file
native applications compile with nvcc: the wheel installs it with the other
headers under ``nystrom_kme/include``; a source checkout reads it from
``cpp/include``. NVRTC compiles it at run time (``cupy.RawModule``), so neither
the wheel nor a CPU-only install needs a CUDA toolkit.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

HEADER = Path("nystrom_kme") / "cuda" / "kernel_sums.cuh"
_PACKAGE = Path(__file__).resolve().parent.parent

#: Kernel names (``Kernel.name``) -> the header's KernelCode.
KERNEL_CODES = {"gaussian": 0, "laplacian": 1, "matern32": 2, "matern52": 3, "inverse_multiquadric": 4}

#: Mirrors kThreads and the launch shapes of the header.
THREADS = 128
MATRIX_TILE = 16
REDUCE_THREADS = 256
#: Instantiated columns per thread (the header's KC values).
COLUMN_GROUPS = (1, 8, 32)

_CTYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}


def header_path() -> Path:
    """The header file: the installed copy, else the source tree's.

    Examples
    --------
    >>> from nystrom_kme.cuda.program import header_path
    >>> header_path().name
    'kernel_sums.cuh'
    """
    for root in (_PACKAGE / "include", _PACKAGE.parent.parent / "cpp" / "include"):
        path = root / HEADER
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"{HEADER} is neither in the installed package ({_PACKAGE / 'include'}) nor "
        "in a source checkout; reinstall nystrom-kme"
    )


@functools.cache
def source() -> str:
    """The CUDA source NVRTC compiles: the header's text (it includes nothing under
    NVRTC)."""
    return header_path().read_text(encoding="utf-8")


def kernel_code(name: str) -> int:
    """The header's code for a kernel name; ValueError for the dot-product kernels.

    Examples
    --------
    >>> from nystrom_kme.cuda.program import kernel_code
    >>> kernel_code("matern52")
    3
    """
    try:
        return KERNEL_CODES[name]
    except KeyError:
        raise ValueError(
            f"the GPU path computes the radial kernels {sorted(KERNEL_CODES)}, "
            f"not {name!r}; pass host (numpy) arrays for it"
        ) from None


def ctype(dtype: np.dtype) -> str:
    try:
        return _CTYPES[np.dtype(dtype)]
    except KeyError:
        raise ValueError(f"the GPU path computes in float32 or float64, not {dtype}") from None


def columns_per_thread(k: int) -> int:
    """Mirrors columns_per_thread() of the header."""
    return 1 if k <= 1 else (8 if k <= 8 else 32)


def n_row_chunks(n: int, m: int, k: int) -> int:
    """Mirrors n_row_chunks() of the header: row chunks of pass 1 (sizes only)."""
    chunks = 256
    budget = (64 << 20) // 8
    per_chunk = m * k
    if per_chunk > 0 and chunks * per_chunk > budget:
        chunks = budget // per_chunk
    chunks = min(chunks, (n + 2047) // 2048)
    return max(chunks, 1)


def partial_name(code: int, dtype: np.dtype, kc: int) -> str:
    return f"nystrom_kme::cuda::weighted_sums_partial<{code}, {ctype(dtype)}, {kc}>"


def matrix_name(code: int, dtype: np.dtype) -> str:
    return f"nystrom_kme::cuda::kernel_matrix<{code}, {ctype(dtype)}>"


REDUCE_NAME = "nystrom_kme::cuda::reduce_partials<double>"
SUM_NAME = "nystrom_kme::cuda::sum_fixed_order<double>"


def name_expressions(code: int, dtype: np.dtype) -> tuple[str, ...]:
    """The template instantiations one compiled module holds: one kernel and one
    dtype (a module per pair keeps each NVRTC compilation small).

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.cuda.program import name_expressions
    >>> name_expressions(0, np.float32)[0]
    'nystrom_kme::cuda::weighted_sums_partial<0, float, 1>'
    """
    return (*(partial_name(code, dtype, kc) for kc in COLUMN_GROUPS), matrix_name(code, dtype), REDUCE_NAME, SUM_NAME)


#: NVRTC options: C++17, no fast-math (exp and sqrt as accurate as the CPU core's).
COMPILE_OPTIONS = ("--std=c++17",)


@dataclass(frozen=True)
class SumsPlan:
    """The launches of K(A, B) W for A (m, d), B (n, d), W (n, k).

    Examples
    --------
    >>> from nystrom_kme.cuda.program import SumsPlan
    >>> p = SumsPlan.of(m=1000, n=10**6, k=201)
    >>> p.columns_per_thread, p.grid, p.workspace_entries == p.n_chunks * 1000 * 201
    (32, (8, 41, 7), True)
    """

    m: int
    n: int
    k: int
    n_chunks: int
    chunk_rows: int
    columns_per_thread: int

    @classmethod
    def of(cls, m: int, n: int, k: int) -> SumsPlan:
        if m < 1 or n < 1 or k < 1:
            raise ValueError(f"empty sums: m={m}, n={n}, k={k}")
        chunks = n_row_chunks(n, m, k)
        return cls(m, n, k, chunks, math.ceil(n / chunks), columns_per_thread(k))

    @property
    def grid(self) -> tuple[int, int, int]:
        return (math.ceil(self.m / THREADS), self.n_chunks, math.ceil(self.k / self.columns_per_thread))

    @property
    def workspace_entries(self) -> int:
        return self.n_chunks * self.m * self.k

    @property
    def reduce_grid(self) -> tuple[int]:
        return (math.ceil(self.m * self.k / REDUCE_THREADS),)


__all__ = [
    "COLUMN_GROUPS",
    "COMPILE_OPTIONS",
    "HEADER",
    "KERNEL_CODES",
    "REDUCE_NAME",
    "SUM_NAME",
    "SumsPlan",
    "columns_per_thread",
    "ctype",
    "header_path",
    "kernel_code",
    "matrix_name",
    "n_row_chunks",
    "name_expressions",
    "partial_name",
    "source",
]
