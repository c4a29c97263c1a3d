"""The ``independence`` command: are two variables dependent? Two data files with the same
rows (X, Y), or one table and the columns of each (``--x-columns``, ``--y-columns``);
``--given`` columns (or a third file with ``--given-file``) make it the conditional test."""

from __future__ import annotations

import argparse
import time
from typing import Any

from ..datafiles import read_data
from ..independence import AGGREGATIONS, DEFAULT_AGGREGATION, DEFAULT_SCALES, METHODS, independence_test
from ..persistence import kernel_spec
from ..sources import RowSource
from .inputs import KERNEL_NAMES, STANDARDIZE_CHOICES, test_options
from .output import EXIT_OK, EXIT_REJECTED, BadInput, emit


def _source(args: argparse.Namespace, path: str, columns: list[str] | None) -> RowSource:
    return read_data(path, columns=columns, key=args.key, delimiter=args.delimiter, header=args.header)


def sources(args: argparse.Namespace) -> tuple[RowSource, RowSource]:
    """X and Y from the files and column options: one table with --x-columns and
    --y-columns, or two files (each option then selects that file's columns)."""
    if args.columns is not None:
        raise BadInput("'independence' selects columns with --x-columns and --y-columns")
    if args.y is None:
        if args.x_columns is None or args.y_columns is None:
            raise BadInput("one table needs --x-columns and --y-columns (or give Y as a second file)")
        overlap = sorted(set(args.x_columns) & set(args.y_columns))
        if overlap:
            raise BadInput(f"--x-columns and --y-columns share {overlap}: a variable is trivially dependent on itself")
        return _source(args, args.x, args.x_columns), _source(args, args.x, args.y_columns)
    return _source(args, args.x, args.x_columns), _source(args, args.y, args.y_columns)


def cmd_independence(args: argparse.Namespace) -> int:
    sx, sy = sources(args)
    kernel: Any = "auto" if args.kernel is None else args.kernel
    start = time.perf_counter()
    res = independence_test(
        sx,
        sy,
        kernel=kernel,
        method=args.method,
        n_landmarks=args.n_landmarks,
        aggregation=args.aggregate,
        max_components=args.max_components,
        alpha=args.alpha,
        **test_options(args),
    )
    seconds = time.perf_counter() - start
    if args.output:
        res.save(args.output)
    kx, ky = res.deciding_kernels
    record = {
        "statistic": res.statistic,
        "pvalue": res.pvalue,
        "alpha": res.alpha,
        "reject": res.reject,
        "method": res.method,
        "aggregation": res.aggregation,
        "n_rows": res.n_rows,
        "n_landmarks": [res.n_landmarks_x, res.n_landmarks_y],
        "n_components": [res.n_components_x, res.n_components_y],
        "n_permutations": res.n_permutations,
        "deciding": [kernel_spec(kx), kernel_spec(ky)],
        "effect": None if res.effect is None else res.effect.value,
        "seconds": seconds,
    }
    lines = (
        res.explain().splitlines() + [f"time: {seconds:.3f} s"] + ([f"saved to {args.output}"] if args.output else [])
    )
    emit(args, record, lines)
    return EXIT_REJECTED if res.reject else EXIT_OK


def add_independence_command(
    add: Any,
    files: argparse.ArgumentParser,
    permutation: argparse.ArgumentParser,
    threads: argparse.ArgumentParser,
    out: argparse.ArgumentParser,
    positive_int: Any,
    column_list: Any,
    landmarks: Any,
) -> None:
    """The 'independence' command, on the main parser's ``add``."""
    p = add(
        "independence",
        "permutation test of independence (HSIC): do the columns of X and of Y depend on each other?",
        [files, permutation, threads, out],
    )
    p.add_argument("x", help="data file of X (or the one table, with --x-columns and --y-columns)")
    p.add_argument("y", nargs="?", default=None, help="data file of Y, the same rows as X (optional)")
    p.add_argument("--x-columns", type=column_list, default=None, help="X's columns (indices from 0 or names)")
    p.add_argument("--y-columns", type=column_list, default=None, help="Y's columns (indices from 0 or names)")
    p.add_argument(
        "--kernel",
        choices=KERNEL_NAMES,
        default=None,
        help="one kernel family for both, at each variable's median distance (default: Gaussian kernels at "
        f"{', '.join(f'{s:g}' for s in DEFAULT_SCALES)} times each variable's median distance, every pair)",
    )
    p.add_argument(
        "--method",
        choices=METHODS,
        default="auto",
        help="'exact': every row a landmark, every feature direction (small n); default: auto (Nystrom features)",
    )
    p.add_argument(
        "--n-landmarks", type=landmarks, default=None, help="m per variable, or 'auto' (default: min(n, 500))"
    )
    p.add_argument(
        "--aggregation",
        "--aggregate",
        dest="aggregate",
        choices=AGGREGATIONS,
        default=None,
        help=f"how the pairs of kernels combine (default: {DEFAULT_AGGREGATION})",
    )
    p.add_argument("--max-components", type=positive_int, default=None, help="feature directions per variable")
    p.add_argument(
        "--standardize",
        choices=STANDARDIZE_CHOICES,
        default="none",
        help="centre and scale each variable's columns with its own statistics; default: none",
    )
    p.add_argument(
        "--random-state", "--seed", dest="seed", type=int, default=0, help="seed of every random draw (default: 0)"
    )
    p.add_argument("-o", "--output", default=None, help="also save the full result (.json)")
    p.set_defaults(run=cmd_independence)


__all__ = ["add_independence_command", "cmd_independence", "sources"]
