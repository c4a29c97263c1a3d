"""What the commands share: reading their inputs (data files as row sources, saved
embeddings), the kernel of the options, and the progress callbacks."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from .._progress import RowsBar
from ..datafiles import read_data
from ..defaults import STANDARDIZE_KINDS
from ..embedding import KernelMeanEmbedding
from ..kernels import KERNEL_ALIASES, Kernel, get_kernel, resolve_kernel
from ..kernels import KERNEL_NAMES as ALL_KERNEL_NAMES
from ..persistence import load
from ..sources import RowSource
from .output import BadInput

#: The kernel names the commands accept: the package's table, aliases included; help and
#: messages show the names without the aliases.
KERNEL_NAMES = ALL_KERNEL_NAMES
PRIMARY_KERNEL_NAMES = tuple(n for n in ALL_KERNEL_NAMES if n not in KERNEL_ALIASES)


# --------------------------------------------------------------------------- #
# inputs
# --------------------------------------------------------------------------- #
def kernel_of(name: str, bandwidth: float | str | None) -> Kernel:
    k = get_kernel(name)
    return k if bandwidth is None else k.with_bandwidth(bandwidth)


def progress_callbacks(
    desc: str, enabled: bool | None = None
) -> tuple[Callable[[int], None] | None, Callable[[], None]]:
    """(callback told the rows read, close) of a bar on stderr counting rows: shown when
    ``enabled`` (--progress), or by default when stderr is a terminal; (None, no-op)
    otherwise (--no-progress, a pipe or a file)."""
    show = sys.stderr.isatty() if enabled is None else enabled
    if not show:
        return None, lambda: None
    bar = RowsBar(desc, True)
    return bar.update, bar.close


def read_counted(args: argparse.Namespace, path: str) -> tuple[RowSource, RowsBar]:
    """The data file at ``path`` and a bar counting its rows in rows (--progress): the
    first pass counts them (no total yet, but no silence either), every later pass of
    the library over the file shows "pass k" out of those rows. Close the bar when done."""
    bar = RowsBar(f"reading {path}", getattr(args, "progress", None))
    try:
        src = data_source(args, path, bar.update)
        bar.set_rows(src.count_rows())
    except BaseException:
        bar.close()
        raise
    return src, bar


def data_source(args: argparse.Namespace, path: str, on_rows: Callable[[int], None] | None = None) -> RowSource:
    return read_data(
        path,
        columns=args.columns,
        key=args.key,
        delimiter=args.delimiter,
        on_rows=on_rows,
        header=getattr(args, "header", None),
    )


def all_rows(src: RowSource) -> np.ndarray:
    """All rows of a source as one array (for what needs the data in memory)."""
    arr = src.to_array()
    if arr is not None:
        return arr
    return np.concatenate([block for _, block in src.chunks()])


def check_widths(a: RowSource, a_name: str, b: RowSource, b_name: str) -> None:
    """Both sources read their first block if needed, then compare their widths."""
    for s in (a, b):
        if s.n_features is None:
            s.count_rows()
    if a.n_features != b.n_features:
        raise BadInput(f"{a_name} has {a.n_features} columns but {b_name} has {b.n_features}")


def load_embedding(path: str) -> KernelMeanEmbedding:
    obj = load(path)
    if not isinstance(obj, KernelMeanEmbedding):
        raise BadInput(f"{path}: holds a {type(obj).__name__}, not an embedding")
    return obj


def two_sources(args: argparse.Namespace, on_rows: Callable[[int], None] | None = None) -> tuple[RowSource, RowSource]:
    a, b = data_source(args, args.a, on_rows), data_source(args, args.b, on_rows)
    check_widths(a, args.a, b, args.b)
    return a, b


def pooled_kernel(args: argparse.Namespace, a: RowSource, b: RowSource, rng: np.random.Generator) -> Kernel:
    """The kernel of 'test': the bandwidth given, or the median heuristic on rows of both
    samples (resolve_kernel) drawn first from a generator seeded with --seed, the rule
    of the MMDs (mmd2, mmd2_exact with random_state=--seed), so that 'mmd' and 'test'
    get the same bandwidth on the same files."""
    return resolve_kernel(kernel_of(args.kernel, args.bandwidth), [a, b], rng)


#: --standardize's values: "none", then the library's kinds (``standardize=``).
STANDARDIZE_CHOICES = ("none", *STANDARDIZE_KINDS)


def standardize_arg(choice: str) -> bool | str:
    """``standardize=`` from --standardize: "none" is False, the kinds pass through."""
    return False if choice == "none" else choice


def test_options(args: argparse.Namespace) -> dict[str, Any]:
    """The options every permutation test of the command line passes the library as given
    (``test``, ``independence``): permutations, scaling, seed, progress, threads."""
    return {
        "n_permutations": args.permutations,
        "standardize": standardize_arg(args.standardize),
        "random_state": args.seed,
        "progress": args.progress,
        "n_threads": args.threads,
    }


__all__ = [
    "STANDARDIZE_CHOICES",
    "test_options",
    "standardize_arg",
    "KERNEL_NAMES",
    "PRIMARY_KERNEL_NAMES",
    "check_widths",
    "data_source",
    "all_rows",
    "kernel_of",
    "load_embedding",
    "pooled_kernel",
    "progress_callbacks",
    "read_counted",
    "two_sources",
]
