"""The CUDA program of the GPU path, as data: where the headers are, the kernel codes,
the template instantiations each compiled module holds, and the launch plan of each
sum. Pure Python (no GPU library), so that all of it is tested on any machine.

The source is the C++ headers ``nystrom_kme/cuda/*.cuh`` with the kernel kinds
(``nystrom_kme/kernel_kinds.hpp``) and formulas (``nystrom_kme/kernel_formulas.inl``),
the same files native applications compile with nvcc: the wheel installs them with the
other headers under ``nystrom_kme/include``; a source checkout reads them from
``cpp/include``. NVRTC compiles their concatenation at run time (``cupy.RawModule``;
under NVRTC the headers include nothing, and the formulas' text stands where
kernel_map.cuh includes it), so neither the wheel nor a CPU-only install needs a CUDA
toolkit. The kernel codes and the fast map's factors come from the compiled core
(``_core.kernel_kinds()``), which instantiates the same formulas on the host.

Which kernel sums what (:func:`row_sums_path`): one weight column (fits, evaluations,
1^T K 1) at d <= SMALL_MAX_DIM runs ``row_sums_small`` (one instantiation per d);
beyond, float32 runs ``row_sums_tc`` on the tensor cores and float64
``weighted_sums_partial``, until m d is large enough for the cuBLAS path (centred
operands, a TF32 GEMM of split operands in float32, DGEMM in float64, then
``gemm_row_sums``) to win; a few weight columns run ``weighted_sums_partial``, many
(the permutation tests) blocks of ``kernel_matrix`` times W by cuBLAS.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import _core

#: The GPU path's headers in dependency order: their concatenation is the program.
SOURCES = (Path("nystrom_kme") / "kernel_kinds.hpp",) + tuple(
    Path("nystrom_kme") / "cuda" / name
    for name in ("kernel_map.cuh", "row_sums.cuh", "split_labels.cuh", "bin_sums.cuh", "kernel_sums.cuh")
)
#: The kernel formulas, which kernel_map.cuh includes inside its namespace: under NVRTC
#: their text replaces that include line (FORMULAS_INCLUDE).
FORMULAS = Path("nystrom_kme") / "kernel_formulas.inl"
FORMULAS_INCLUDE = "#include <nystrom_kme/kernel_formulas.inl>"
_PACKAGE = Path(__file__).resolve().parent.parent

_KINDS = [kind for kind in _core.kernel_kinds() if kind["gpu"]]
#: Kernel names (``Kernel.name``) -> the headers' kernel codes (KernelKind's numbers), for
#: the kinds the GPU path computes (``on_gpu`` of kernel_formulas.inl).
KERNEL_CODES: dict[str, int] = {kind["name"]: kind["code"] for kind in _KINDS}
#: fast_map_factor<Kind>() of kernel_map.cuh: float32 row sums scale coordinates by
#: sqrt(factor) / sigma, so that the map is one exp2 (2^-(factor v) = exp(-v / 2)).
FAST_MAP_FACTORS: dict[int, float] = {kind["code"]: kind["fast_map_factor"] for kind in _KINDS}

#: Mirrors the headers' launch shapes.
THREADS = 128  # weighted_sums_partial, kernel_matrix 16 x 16
MATRIX_TILE = 16
REDUCE_THREADS = 256
#: Instantiated columns per thread of weighted_sums_partial (the header's KC values).
COLUMN_GROUPS = (1, 8, 32)
#: row_sums_small: threads, landmarks per thread, largest d.
SMALL_THREADS = 128
SMALL_LANDMARKS = 2
SMALL_MAX_DIM = 16
#: row_sums_tc: threads, landmarks per block.
TC_THREADS = 128
TC_TILE = 64
#: centred_sq_norms: rows per block of 256 threads (one warp per row).
NORM_ROWS = 8
#: The GEMM path: its kernels' threads per block, rows of a G block (m x rows) at most
#: GEMM_BLOCK_BYTES, at least GEMM_MIN_ROWS; gemm_row_sums takes 8 landmarks a block.
GEMM_THREADS = 256
GEMM_BLOCK_BYTES = 256 << 20
GEMM_MIN_ROWS = 1024
EPILOGUE_ROWS = 8
#: split_labels_*: threads per block (one per column).
LABEL_THREADS = 256
#: bin_sums_multi: kernels per launch, threads (landmarks) per block.
BIN_KERNELS = 8
BIN_THREADS = 128
#: CUDA's limit on gridDim.y (launches over more bins are split).
MAX_GRID_Y = 65535

_CTYPES = {np.dtype(np.float32): "float", np.dtype(np.float64): "double"}


def header_paths() -> tuple[Path, ...]:
    """The header files (SOURCES, then FORMULAS): the installed copies, else the source tree's.

    Examples
    --------
    >>> from nystrom_kme.cuda.program import header_paths
    >>> [p.name for p in header_paths()][-2:]
    ['kernel_sums.cuh', 'kernel_formulas.inl']
    """
    for root in (_PACKAGE / "include", _PACKAGE.parent.parent / "cpp" / "include"):
        paths = tuple(root / s for s in (*SOURCES, FORMULAS))
        if all(p.is_file() for p in paths):
            return paths
    raise FileNotFoundError(
        f"the CUDA headers {[str(s) for s in SOURCES]} are neither in the installed package "
        f"({_PACKAGE / 'include'}) nor in a source checkout; reinstall nystrom-kme"
    )


@functools.cache
def source() -> str:
    """The CUDA source NVRTC compiles: the headers' texts in SOURCES order (under
    NVRTC they include nothing), the formulas' text in place of their include."""
    *headers, formulas = header_paths()
    text = "\n".join(p.read_text(encoding="utf-8") for p in headers)
    if text.count(FORMULAS_INCLUDE) != 1:
        raise RuntimeError(f"the CUDA headers must include {FORMULAS} once (kernel_map.cuh)")
    return text.replace(FORMULAS_INCLUDE, formulas.read_text(encoding="utf-8"))


def kernel_code(name: str) -> int:
    """The header's code for a kernel name; ValueError for a kind the GPU path does not
    compute (the dot-product kernels, and those with a parameter beside the bandwidth or
    another distance: the rational quadratic, the l1 Laplacian).

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
    """Mirrors columns_per_thread() of kernel_sums.cuh."""
    return 1 if k <= 1 else (8 if k <= 8 else 32)


def n_row_chunks(n: int, m: int, k: int) -> int:
    """Mirrors n_row_chunks() of kernel_sums.cuh: row chunks of weighted_sums_partial."""
    chunks = 256
    budget = (64 << 20) // 8
    per_chunk = m * k
    if per_chunk > 0 and chunks * per_chunk > budget:
        chunks = budget // per_chunk
    chunks = min(chunks, (n + 2047) // 2048)
    return max(chunks, 1)


def row_sum_chunks(n: int, m: int, landmark_blocks: int) -> int:
    """Mirrors row_sum_chunks() of row_sums.cuh: ~4096 blocks, >= 1024 rows a chunk."""
    chunks = -(-4096 // landmark_blocks)
    budget = (64 << 20) // 8
    if m > 0 and chunks * m > budget:
        chunks = budget // m
    chunks = min(chunks, (n + 1023) // 1024)
    return max(chunks, 1)


# -- template names ---------------------------------------------------------------


def partial_name(code: int, dtype: np.dtype, kc: int) -> str:
    return f"nystrom_kme::cuda::weighted_sums_partial<{code}, {ctype(dtype)}, {kc}>"


def matrix_name(code: int, dtype: np.dtype) -> str:
    return f"nystrom_kme::cuda::kernel_matrix<{code}, {ctype(dtype)}>"


def small_name(code: int, dtype: np.dtype, d: int) -> str:
    if not 1 <= d <= SMALL_MAX_DIM:
        raise ValueError(f"row_sums_small is instantiated for 1 <= d <= {SMALL_MAX_DIM}, not {d}")
    return f"nystrom_kme::cuda::row_sums_small<{code}, {ctype(dtype)}, {d}>"


def tc_name(code: int) -> str:
    return f"nystrom_kme::cuda::row_sums_tc<{code}>"


def norms_name(dtype: np.dtype) -> str:
    return f"nystrom_kme::cuda::centred_sq_norms<{ctype(dtype)}>"


def split_name(dtype: np.dtype, parts: int) -> str:
    if parts not in (1, 3) or (parts == 3 and np.dtype(dtype) != np.float32):
        raise ValueError(f"centre_split makes 1 part, or 3 TF32 parts of float32, not {parts} of {dtype}")
    return f"nystrom_kme::cuda::centre_split<{ctype(dtype)}, {parts}>"


def epilogue_name(code: int, dtype: np.dtype) -> str:
    return f"nystrom_kme::cuda::gemm_row_sums<{code}, {ctype(dtype)}>"


def bins_name(dtype: np.dtype) -> str:
    return f"nystrom_kme::cuda::bin_sums_multi<{ctype(dtype)}>"


REDUCE_NAME = "nystrom_kme::cuda::reduce_partials<double>"
SUM_NAME = "nystrom_kme::cuda::sum_fixed_order<double>"
LABELS_START_NAME = "nystrom_kme::cuda::split_labels_start<double>"
LABELS_NEXT_NAME = "nystrom_kme::cuda::split_labels_next<double>"


def name_expressions(code: int, dtype: np.dtype) -> tuple[str, ...]:
    """The instantiations of one kernel and dtype's main module: the multi-column sums
    and the kernel matrix (small modules keep each NVRTC compilation short;
    :func:`module_names` lists every module's).

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.cuda.program import name_expressions
    >>> name_expressions(0, np.float32)[0]
    'nystrom_kme::cuda::weighted_sums_partial<0, float, 1>'
    """
    return (*(partial_name(code, dtype, kc) for kc in COLUMN_GROUPS), matrix_name(code, dtype))


def module_names(module: tuple[object, ...]) -> tuple[str, ...]:
    """The instantiations of a compiled module, named by its key: ("main", code, dtype),
    ("small", code, dtype, d), ("tc", code), ("gemm", code, dtype), ("reduce",), ("labels",)
    or ("bins", dtype).

    Examples
    --------
    >>> from nystrom_kme.cuda.program import module_names
    >>> module_names(("small", 0, "float32", 3))
    ('nystrom_kme::cuda::row_sums_small<0, float, 3>',)
    """
    kind, *args = module
    if kind == "main":
        return name_expressions(int(args[0]), np.dtype(str(args[1])))  # type: ignore[call-overload]
    if kind == "small":
        return (small_name(int(args[0]), np.dtype(str(args[1])), int(args[2])),)  # type: ignore[call-overload]
    if kind == "tc":
        code = int(args[0])  # type: ignore[call-overload]
        return (tc_name(code), norms_name(np.dtype(np.float32)))
    if kind == "gemm":
        code, dtype = int(args[0]), np.dtype(str(args[1]))  # type: ignore[call-overload]
        splits = (split_name(dtype, 1), split_name(dtype, 3)) if dtype == np.float32 else (split_name(dtype, 1),)
        return (epilogue_name(code, dtype), *splits, norms_name(dtype))
    if kind == "reduce":
        return (REDUCE_NAME, SUM_NAME)
    if kind == "labels":
        return (LABELS_START_NAME, LABELS_NEXT_NAME)
    if kind == "bins":
        return (bins_name(np.dtype(str(args[0]))),)
    raise ValueError(f"no module {module!r}")


#: NVRTC options: C++17, no fast-math (the accurate maps are as accurate as the CPU
#: core's; the fast float32 map asks for the special-function unit explicitly).
COMPILE_OPTIONS = ("--std=c++17",)


# -- launch plans -------------------------------------------------------------------


@dataclass(frozen=True)
class SumsPlan:
    """The launches of K(A, B) W (weighted_sums_partial) for A (m, d), B (n, d), W (n, k).

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


@dataclass(frozen=True)
class RowPlan:
    """The launches of the fused row sums K(A, B) w (row_sums_small or row_sums_tc) for
    A (m, d), B (n, d): ``landmarks_per_block`` landmarks per block along x, row chunks
    along y, one float64 partial per (chunk, landmark).

    Examples
    --------
    >>> from nystrom_kme.cuda.program import RowPlan
    >>> p = RowPlan.of("small", m=4096, n=10**6)
    >>> p.grid, p.chunk_rows
    ((16, 256), 3907)
    """

    path: str
    m: int
    n: int
    n_chunks: int
    chunk_rows: int

    @classmethod
    def of(cls, path: str, m: int, n: int) -> RowPlan:
        if m < 1 or n < 1:
            raise ValueError(f"empty sums: m={m}, n={n}")
        if path not in ("small", "tc"):
            raise ValueError(f"no row-sum path {path!r}")
        per_block = SMALL_THREADS * SMALL_LANDMARKS if path == "small" else TC_TILE
        chunks = row_sum_chunks(n, m, math.ceil(m / per_block))
        return cls(path, m, n, chunks, math.ceil(n / chunks))

    @property
    def threads(self) -> int:
        return SMALL_THREADS if self.path == "small" else TC_THREADS

    @property
    def grid(self) -> tuple[int, int]:
        per_block = SMALL_THREADS * SMALL_LANDMARKS if self.path == "small" else TC_TILE
        return (math.ceil(self.m / per_block), self.n_chunks)

    @property
    def workspace_entries(self) -> int:
        return self.n_chunks * self.m

    @property
    def reduce_grid(self) -> tuple[int]:
        return (math.ceil(self.m / REDUCE_THREADS),)


def matrix_block_rows(m: int, n: int) -> int:
    """Rows of B per float64 block K(A, B_block) of the "matrix" path: within GEMM_BLOCK_BYTES."""
    return min(n, max(GEMM_MIN_ROWS, GEMM_BLOCK_BYTES // (8 * max(m, 1))))


def gemm_block_rows(m: int, n: int, itemsize: int) -> int:
    """Rows of B per GEMM of the GEMM path: G (m, rows) within GEMM_BLOCK_BYTES (sizes only)."""
    return min(n, max(GEMM_MIN_ROWS, GEMM_BLOCK_BYTES // (itemsize * max(m, 1))))


#: Beyond SMALL_MAX_DIM, one weight column runs the cuBLAS path from m d = this on
#: (float32: against row_sums_tc; float64: against weighted_sums_partial), where it was
#: faster on an H200 at n = 10^6 (bench.gpu's ``paths``: the crossover was at d = 185
#: for m = 1000 and d = 39 for m = 4096 in float32, d = 80 and d = 28 in float64).
GEMM_FROM = {"float32": 160_000, "float64": 90_000}
#: The cuBLAS path takes the landmarks in blocks of at most this many rows (the G
#: blocks stay within GEMM_BLOCK_BYTES when A has many rows, as in an evaluation).
GEMM_MAX_LANDMARKS = 16_384


def row_sums_path(dtype: np.dtype, m: int, d: int, k: int) -> str:
    """Which kernel sums K(A, B) W for A (m, d) and k weight columns: "small"
    (row_sums_small), "tc" (row_sums_tc, float32), "gemm" (cuBLAS: large m d),
    "partial" (weighted_sums_partial: a few columns, or float64 at moderate m d) or
    "matrix" (blocks of K(A, B) by kernel_matrix times W by cuBLAS: many columns, the
    permutation tests). Measured choices: see GEMM_FROM and bench/RESULTS.md.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.cuda.program import row_sums_path
    >>> [row_sums_path(np.float32, 1000, d, 1) for d in (10, 100, 256)]
    ['small', 'tc', 'gemm']
    >>> row_sums_path(np.float64, 1000, 100, 1), row_sums_path(np.float64, 1000, 10, 201)
    ('gemm', 'matrix')
    """
    if k > COLUMN_GROUPS[1]:
        return "matrix"
    if k != 1:
        return "partial"
    if d <= SMALL_MAX_DIM:
        return "small"
    name = np.dtype(dtype).name
    if m * d >= GEMM_FROM[name]:
        return "gemm"
    return "tc" if name == "float32" else "partial"


__all__ = [
    "BIN_KERNELS",
    "COLUMN_GROUPS",
    "COMPILE_OPTIONS",
    "FAST_MAP_FACTORS",
    "GEMM_FROM",
    "GEMM_MAX_LANDMARKS",
    "KERNEL_CODES",
    "LABELS_NEXT_NAME",
    "LABELS_START_NAME",
    "REDUCE_NAME",
    "SMALL_MAX_DIM",
    "SOURCES",
    "SUM_NAME",
    "RowPlan",
    "SumsPlan",
    "bins_name",
    "epilogue_name",
    "gemm_block_rows",
    "matrix_block_rows",
    "split_name",
    "columns_per_thread",
    "ctype",
    "header_paths",
    "kernel_code",
    "matrix_name",
    "module_names",
    "n_row_chunks",
    "name_expressions",
    "norms_name",
    "partial_name",
    "row_sum_chunks",
    "row_sums_path",
    "small_name",
    "source",
    "tc_name",
]
