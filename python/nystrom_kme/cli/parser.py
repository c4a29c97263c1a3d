"""The arguments of the ``nystrom-kme`` commands: one parser, usage errors as one line
and exit status 2, help texts that end with the exit statuses and file formats."""

from __future__ import annotations

import argparse
import math
from typing import NoReturn

from ..aggregated import DEFAULT_MAX_BINS
from ..aggregation import AGGREGATIONS
from ..compression import EXACT_MMD_MAX_ROWS, WEIGHTS
from ..datafiles import SUFFIXES
from ..kernel_collection import GRIDS
from ..sampling import SAMPLER_NAMES
from .commands import (
    KERNEL_NAMES,
    cmd_compress,
    cmd_demo,
    cmd_eval,
    cmd_fit,
    cmd_info,
    cmd_mmd,
    cmd_suggest_m,
    cmd_test,
)
from .output import EXIT_BAD_INPUT

EPILOG = f"""\
exit status:
  0    success (for 'test': H0 not rejected)
  1    'test' rejected H0 at level --alpha (the samples differ); nothing else
  2    any failure: usage error, bad input (missing or unreadable file, NaN in
       the data, mismatched columns, invalid option), out of memory: one line
       on stderr
  130  interrupted (Ctrl-C)

data files: {", ".join(SUFFIXES)}
  (.npy memory-mapped; .h5 needs h5py, .zarr zarr, .parquet pyarrow);
  regular files only. --columns picks columns by 0-based index or header
  name; messages count lines from 1 and columns from 0 ("column index 2").
output files (-o): the suffix names the format (fit, compress: .npz; test:
  .json; eval: .npy, .csv or .txt); a file appears only when complete.
Output is human-readable; --json prints one JSON object for scripts."""


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line on stderr and exit status 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _bandwidth(text: str) -> float | str:
    if text == "median":
        return text
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number or 'median', got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number or 'median', got {text!r}")
    return value


def _n_landmarks(text: str) -> int | str:
    if text in ("auto", "bound"):
        return text
    try:
        return _positive_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, 'auto' or 'bound', got {text!r}") from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}")
    return value


def _columns(text: str) -> list[str]:
    cols = [c.strip() for c in text.split(",") if c.strip()]
    if not cols:
        raise argparse.ArgumentTypeError("expected comma-separated column names or indices")
    return cols


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="nystrom-kme",
        description="Nystrom kernel mean embeddings of your data: fit, evaluate, compare (MMD), test, choose m.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", action="store_true", help="print the version and build configuration (SIMD level, OpenMP) and exit"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    files = _Parser(add_help=False)
    g = files.add_argument_group("data files")
    g.add_argument(
        "--columns",
        type=_columns,
        default=None,
        help="comma-separated columns to use: indices counted from 0 (as in error "
        "messages, which count lines from 1), or names from a CSV header or Parquet "
        "schema (default: all)",
    )
    g.add_argument(
        "--key",
        default=None,
        help="member of a .npz, dataset of an HDF5 file, array of a zarr group (default: the only one)",
    )
    g.add_argument(
        "--delimiter",
        default=None,
        help="field separator of text files (default: ',' for .csv, tab for .tsv, whitespace for .txt)",
    )
    out = _Parser(add_help=False)
    out.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    threads = _Parser(add_help=False)
    threads.add_argument(
        "--threads",
        type=_positive_int,
        default=None,
        help="threads of the C++ core (default: all available); results do not depend on it",
    )
    kern = _Parser(add_help=False)
    k = kern.add_argument_group("kernel")
    k.add_argument("--kernel", choices=KERNEL_NAMES, default="gaussian", help="default: gaussian")
    k.add_argument(
        "--bandwidth",
        type=_bandwidth,
        default=None,
        help="a positive number or 'median' (default: median for radial kernels, 1 otherwise; "
        "'mmd' and 'test' take the median over rows of both samples drawn from --seed, "
        "so both give the same bandwidth on the same files)",
    )
    k.add_argument("--seed", type=int, default=0, help="seed of every random draw (default: 0)")

    def add(name: str, help_: str, parents: list[_Parser]) -> argparse.ArgumentParser:
        return sub.add_parser(
            name,
            help=help_,
            description=help_,
            parents=parents,
            epilog=EPILOG,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )

    p = add("fit", "fit a Nystrom KME on a data file and save it (.npz)", [files, kern, threads, out])
    p.add_argument("data", help="data file (n rows, d columns)")
    p.add_argument("-o", "--output", required=True, help="where to save the embedding (.npz)")
    p.add_argument(
        "--n-landmarks",
        type=_n_landmarks,
        default=None,
        help="m; 'auto' (the doubling search with its certificate, streamed: one "
        "read per doubling; its report is printed, and included in --json); 'bound' "
        "(from the spectrum; reads the data into memory; its explanation is printed); "
        "default: ceil(sqrt(n) log sqrt(n))",
    )
    p.add_argument(
        "--sampler",
        choices=SAMPLER_NAMES,
        default="uniform",
        help="landmark policy (default: uniform with replacement, streamed; the others read the data into memory)",
    )
    p.set_defaults(run=cmd_fit)

    p = add("eval", "evaluate a saved embedding mu(y) at the rows of a data file", [files, threads, out])
    p.add_argument("embedding", help="a saved embedding (.npz from 'fit')")
    p.add_argument("points", help="data file of points y (same columns as the embedding's data)")
    p.add_argument(
        "-o", "--output", default=None, help="write the values to .npy, .csv or .txt (default: one per line on stdout)"
    )
    p.set_defaults(run=cmd_eval)

    p = add(
        "compress",
        "compress a data file to m weighted points close in MMD (reads the data into memory)",
        [files, kern, threads, out],
    )
    p.add_argument("data", help="data file (n rows, d columns)")
    p.add_argument("-m", "--n-points", type=_positive_int, required=True, help="m, the number of points")
    p.add_argument("-o", "--output", required=True, help="where to save points, weights, indices (.npz)")
    p.add_argument(
        "--sampler",
        choices=(*SAMPLER_NAMES, "kernel-thinning"),
        default="rpcholesky",
        help="how the points are chosen (default: rpcholesky; kernel-thinning needs goodpoints)",
    )
    p.add_argument(
        "--weights",
        choices=WEIGHTS,
        default="simplex",
        help="simplex: MMD-optimal probability weights (default); signed: Nystrom projection; uniform: 1/m",
    )
    p.add_argument("--ridge", type=float, default=0.0, help="Tikhonov lambda for --weights signed (default 0)")
    p.add_argument(
        "--no-mmd",
        action="store_true",
        help=f"skip the exact MMD to the data (O(n^2); computed by default only up to {EXACT_MMD_MAX_ROWS} rows)",
    )
    p.set_defaults(run=cmd_compress)

    p = add("mmd", "maximum mean discrepancy between two data files (Nystrom by default)", [files, kern, threads, out])
    p.add_argument("a", help="first sample (data file)")
    p.add_argument("b", help="second sample (data file, same columns)")
    p.add_argument("--exact", action="store_true", help="exact MMD^2, O(n^2) (default: Nystrom)")
    p.add_argument("--unbiased", action="store_true", help="with --exact: the U-statistic")
    p.add_argument(
        "--n-landmarks",
        type=_positive_int,
        default=None,
        help="m per sample (Nystrom; default ceil(sqrt(n) log sqrt(n)))",
    )
    p.set_defaults(run=cmd_mmd)

    p = add(
        "test",
        "permutation two-sample test: do two data files come from one distribution?",
        [files, kern, threads, out],
    )
    p.add_argument("a", help="first sample (data file)")
    p.add_argument("b", help="second sample (data file, same columns)")
    p.add_argument("--permutations", type=_positive_int, default=200, help="default: 200")
    p.add_argument("--alpha", type=_probability, default=0.05, help="level of the test (default: 0.05)")
    p.add_argument("--exact", action="store_true", help="exact MMD statistic, O(n^2) (default: Nystrom)")
    p.add_argument(
        "--n-landmarks",
        type=_positive_int,
        default=None,
        help="m (Nystrom; default ceil(sqrt(n) log sqrt(n)) of the pooled sample)",
    )
    p.add_argument(
        "--aggregate",
        choices=AGGREGATIONS,
        default=None,
        help="test a collection of kernels at once (--kernels at --bandwidths bandwidths each, "
        "set from the data) with one permutation test: 'fuse' (MMD-FUSE's soft maximum) or "
        "'mmdagg' (the smallest marginal p-value); default: one kernel (--kernel)",
    )
    p.add_argument(
        "--kernels",
        default="gaussian,laplacian",
        help="with --aggregate: comma-separated radial kernels (default: gaussian,laplacian)",
    )
    p.add_argument(
        "--bandwidths", type=_positive_int, default=None, help="with --aggregate: bandwidths per kernel (default: 10)"
    )
    p.add_argument(
        "--grid",
        choices=GRIDS,
        default=None,
        help="with --aggregate: even ('fuse', the default) or geometric spacing of the bandwidths",
    )
    p.add_argument(
        "--max-bins",
        type=_positive_int,
        default=None,
        help=f"with --aggregate: beyond this many pooled rows the permutations move random bins "
        f"of rows (default: {DEFAULT_MAX_BINS})",
    )
    p.add_argument("-o", "--output", default=None, help="also save the full result (.json)")
    p.set_defaults(run=cmd_test)

    p = add(
        "suggest-m",
        "suggest the number of landmarks from the spectrum (Corollary 4.1), with "
        "its explanation (reads the data into memory)",
        [files, kern, threads, out],
    )
    p.add_argument("data", help="data file")
    p.add_argument("--delta", type=_probability, default=0.05, help="failure probability of the bounds (default 0.05)")
    p.add_argument("--target-error", type=float, default=None, help="aim the Theorem 4.1 bound at this error")
    p.add_argument("--max-landmarks", type=_positive_int, default=None, help="cap on the suggestion")
    p.set_defaults(run=cmd_suggest_m)

    p = add("info", "describe a saved embedding, rule or test result", [out])
    p.add_argument("file", help="a file written by 'fit', 'test -o' or the Python save() methods")
    p.set_defaults(run=cmd_info)

    p = add("demo", "exact errors of the empirical and Nystrom estimators (paper, Sec. 6.1)", [out])
    p.add_argument("--n-samples", type=int, default=10_000)
    p.add_argument(
        "--n-landmarks",
        type=int,
        nargs="*",
        default=None,
        help="landmark counts to try, each in [1, n-samples] (default: around the paper's m)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=cmd_demo, parser=p)
    return parser


__all__ = ["EPILOG", "build_parser"]
