"""The arguments of the ``nystrom-kme`` commands: one parser, usage errors as one line
and exit status 2, help texts that end with the exit statuses and file formats."""

from __future__ import annotations

import argparse
import difflib
import math
import re
import textwrap
from typing import Any, NoReturn

from ..compression import EXACT_MMD_MAX_ROWS, WEIGHTS
from ..datafiles import SUFFIXES
from ..defaults import ALPHA, BOUNDS_DELTA, COMPRESS_SAMPLER, COMPRESS_WEIGHTS, FIT_SAMPLER, N_PERMUTATIONS, TEST_METHOD
from ..kernel_collection import FAMILIES, GRIDS, N_BANDWIDTHS
from ..kernels import KERNEL_ALIASES
from ..sampling import SAMPLER_NAMES
from ..two_sample import (
    AGGREGATIONS,
    COLLECTION_RULE,
    DEFAULT_COLLECTION,
    DEFAULT_LANDMARKS,
    DEFAULT_MAX_BINS,
    DEFAULT_RULE,
    EXACT_FEATURES,
    EXACT_ROWS,
    METHODS,
    PREVIOUS_DEFAULT,
)
from ..two_sample.rules import RULES
from .about import cmd_demo, cmd_info
from .compare import cmd_mmd, cmd_test
from .drift import add_drift_commands
from .embeddings import cmd_compress, cmd_eval, cmd_fit, cmd_suggest_m
from .independence import add_independence_command
from .inputs import KERNEL_NAMES, PRIMARY_KERNEL_NAMES, STANDARDIZE_CHOICES
from .output import EXIT_BAD_INPUT

EPILOG = f"""\
exit status:
  0    success (for 'test': H0 not rejected; 'drift test' / 'watch': no drift)
  1    'test' rejected H0 at level --alpha (the samples differ), or 'drift
       test' / 'drift watch' found drift; nothing else
  2    any failure: usage error, bad input (missing or unreadable file, NaN in
       the data, mismatched columns, invalid option), out of memory: one line
       on stderr
  130  interrupted (Ctrl-C)

data files: {", ".join(SUFFIXES)}
  (.npy memory-mapped; .h5 needs h5py, .zarr zarr, .parquet pyarrow);
  regular files only. --columns picks columns by 0-based index or header
  name; messages count lines from 1 and columns from 0 ("column index 2").
  Column names (a header, Parquet) are saved with what is fitted, and a
  later file with other names or another order is refused.
output files (-o): the suffix names the format (fit, compress, drift fit:
  .npz; test: .json; eval: .npy, .csv or .txt); a file appears only when complete.
Output is human-readable; --json prints one JSON object for scripts."""


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line on stderr and exit status 2; an unknown option gets the
    closest known one ("did you mean"), so the Python spelling finds the CLI's."""

    #: Every parser built (the commands' too): their help lists the known options.
    built: list[argparse.ArgumentParser] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _Parser.built.append(self)

    def error(self, message: str) -> NoReturn:
        hint = ""
        if message.startswith("unrecognized arguments:"):
            known = sorted({o for p in _Parser.built for o in re.findall(r"--[a-z][a-z0-9-]*", p.format_help())})
            for word in message.split(":", 1)[1].split():
                close = difflib.get_close_matches(word.split("=", 1)[0].replace("_", "-"), known, n=1, cutoff=0.6)
                if word.startswith("-") and close:
                    hint = f"; did you mean {close[0]}?"
                    break
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}{hint} (see {self.prog} --help)\n")


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


def _auto_or_count(text: str) -> int | str:
    """m or 'auto' (where 'bound' does not apply: the tests' and detectors' landmarks)."""
    if text == "auto":
        return text
    try:
        return _positive_int(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected a positive integer or 'auto', got {text!r}") from None


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
    g.add_argument(
        "--header",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="whether the first line of a text file is a header (default: detected: a line with a field that "
        "is not a number; pandas' 0,1,2,... over decimals is taken as one, with a warning)",
    )
    out = _Parser(add_help=False)
    out.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    threads = _Parser(add_help=False)
    threads.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bars on stderr (default: when stderr is a terminal)",
    )
    threads.add_argument(
        "--n-threads",
        "--threads",
        dest="threads",
        type=_positive_int,
        default=None,
        help="threads of the C++ core (default: all available); results do not depend on it",
    )

    permutation = _Parser(add_help=False)  # the permutation tests' (test, independence): same defaults
    permutation.add_argument(
        "--n-permutations",
        "--permutations",
        dest="permutations",
        type=_positive_int,
        default=N_PERMUTATIONS,
        help=f"default: {N_PERMUTATIONS}",
    )
    permutation.add_argument("--alpha", type=_probability, default=ALPHA, help=f"level of the test (default: {ALPHA})")

    def kernel_options(default: str | None, help_: str) -> _Parser:
        """--kernel, --bandwidth and --seed (each command its own actions: argparse shares a
        parent's actions between the commands, defaults included)."""
        parent = _Parser(add_help=False)
        k = parent.add_argument_group("kernel")
        k.add_argument(
            "--kernel",
            choices=KERNEL_NAMES,
            metavar="{" + ",".join(PRIMARY_KERNEL_NAMES) + "}",
            default=default,
            help=f"{help_}; aliases: " + ", ".join(f"{a} = {n}" for a, n in KERNEL_ALIASES.items()),
        )
        k.add_argument(
            "--bandwidth",
            type=_bandwidth,
            default=None,
            help="a positive number or 'median' (default: median for radial kernels, 1 otherwise; "
            "'mmd' and 'test' take the median over rows of both samples drawn from --seed, "
            "so both give the same bandwidth on the same files)",
        )
        k.add_argument(
            "--random-state", "--seed", dest="seed", type=int, default=0, help="seed of every random draw (default: 0)"
        )
        return parent

    kern = kernel_options("gaussian", "default: gaussian")
    one_or_many = kernel_options(None, "test this one kernel (default: a collection of kernels, see --kernels)")

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
        help="m; 'auto' (the certified search: landmarks join in blocks until the returned weights are "
        "certified within tol x the statistical error; streamed: one read per 64 landmarks plus the "
        "certificate's; its report is printed, and included in --json); 'bound' "
        "(from the spectrum; reads the data into memory; its explanation is printed); "
        "default: ceil(sqrt(n) log sqrt(n))",
    )
    p.add_argument(
        "--sampler",
        choices=SAMPLER_NAMES,
        default=FIT_SAMPLER,
        help=f"landmark policy (default: {FIT_SAMPLER}, with replacement, streamed; the others read the data "
        "into memory)",
    )
    p.add_argument(
        "--standardize",
        choices=STANDARDIZE_CHOICES,
        default="none",
        help="centre and scale every column with the data's statistics, saved with the embedding and applied "
        "by 'eval': 'standard' (mean, standard deviation) or 'robust' (median, IQR / 1.349); default: none",
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
        "compress a data file to m weighted points close in MMD, with the MMD (streamed: O(m^2) memory at any n)",
        [files, kern, threads, out],
    )
    p.add_argument("data", help="data file (n rows, d columns)")
    p.add_argument("-m", "--n-points", type=_positive_int, required=True, help="m, the number of points")
    p.add_argument("-o", "--output", required=True, help="where to save points, weights, indices (.npz)")
    p.add_argument(
        "--sampler",
        choices=(*SAMPLER_NAMES, "kernel-thinning"),
        default=COMPRESS_SAMPLER,
        help=f"how the points are chosen (default: {COMPRESS_SAMPLER}; kernel-thinning needs goodpoints)",
    )
    p.add_argument(
        "--weights",
        choices=WEIGHTS,
        default=COMPRESS_WEIGHTS,
        help="simplex: MMD-optimal probability weights (default); signed: Nystrom projection; uniform: 1/m",
    )
    p.add_argument("--ridge", type=float, default=0.0, help="Tikhonov lambda for --weights signed (default 0)")
    p.add_argument(
        "--no-mmd",
        action="store_true",
        help=f"skip the MMD to the data (exact up to {EXACT_MMD_MAX_ROWS} rows, O(n^2); estimated above, with "
        "a 95%% interval)",
    )
    p.add_argument(
        "--standardize",
        choices=STANDARDIZE_CHOICES,
        default="none",
        help="centre and scale every column first, so that columns in other units count alike (one more pass); "
        "the points are the data's rows, the kernel and MMD in the scaled units, the scaling saved with them: "
        "'standard' or 'robust', as for 'fit'; default: none",
    )
    p.set_defaults(run=cmd_compress)

    p = add("mmd", "maximum mean discrepancy between two data files (Nystrom by default)", [files, kern, threads, out])
    p.add_argument("a", help="first sample (data file)")
    p.add_argument("b", help="second sample (data file, same columns)")
    p.add_argument("--exact", action="store_true", help="exact MMD^2, O(n^2) (default: Nystrom)")
    p.add_argument("--unbiased", action="store_true", help="with --exact: the U-statistic")
    p.add_argument(
        "--n-landmarks",
        type=_n_landmarks,
        default=None,
        help="m per sample (Nystrom; default ceil(sqrt(n) log sqrt(n))); 'auto': the landmark search per sample",
    )
    p.set_defaults(run=cmd_mmd)

    p = add(
        "test",
        "permutation two-sample test: do two data files come from one distribution?",
        [files, one_or_many, permutation, threads, out],
    )
    p.add_argument("a", help="first sample (data file)")
    p.add_argument("b", help="second sample (data file, same columns)")
    p.add_argument(
        "--method",
        choices=METHODS,
        default=TEST_METHOD,
        help=f"the statistic: exact up to {EXACT_ROWS} pooled rows (fewer above {EXACT_FEATURES} columns), "
        f"else Nystrom (default: {TEST_METHOD})",
    )
    p.add_argument("--exact", dest="method", action="store_const", const="exact", help="--method exact, O(n^2)")
    p.add_argument(
        "--standardize",
        choices=STANDARDIZE_CHOICES,
        default="none",
        help="centre and scale every column with the pooled samples' statistics (label-blind: the level "
        "is kept): 'standard' (mean, standard deviation) or 'robust' (median, IQR / 1.349); default: none",
    )
    p.add_argument(
        "--n-landmarks",
        type=_auto_or_count,
        default=None,
        help=f"m (Nystrom; default {DEFAULT_LANDMARKS.describe('the N pooled rows')}); "
        "'auto': the certified landmark search on the pooled sample, for the narrowest kernel",
    )
    p.add_argument(
        "--aggregation",
        "--aggregate",
        dest="aggregate",
        choices=AGGREGATIONS,
        default=None,
        help="how the kernels of a collection combine: "
        + "; ".join(f"'{name}': {rule.description}" for name, rule in RULES.items())
        + f" (default: '{DEFAULT_RULE}', the library's default test over "
        f"{DEFAULT_COLLECTION.n_kernels + RULES[DEFAULT_RULE].adds_median} "
        f"kernels; '{COLLECTION_RULE}' with --kernels); alone, "
        + " and ".join(f"'{a}'" for a in AGGREGATIONS if a not in (DEFAULT_RULE, PREVIOUS_DEFAULT[0]))
        + f" take MMD-FUSE's grid of {len(FAMILIES) * N_BANDWIDTHS} kernels and '{PREVIOUS_DEFAULT[0]}' runs "
        f"the previous default over {PREVIOUS_DEFAULT[1].n_kernels + RULES[PREVIOUS_DEFAULT[0]].adds_median} kernels",
    )
    p.add_argument(
        "--kernels",
        default=None,
        help="a collection of radial kernels, comma-separated (e.g. gaussian,laplacian), on the "
        "bandwidth grid; without it and without --kernel, the library's default test",
    )
    p.add_argument(
        "--n-bandwidths",
        "--bandwidths",
        dest="bandwidths",
        type=_positive_int,
        default=None,
        help=f"bandwidths per kernel of the collection (default: {N_BANDWIDTHS}, as MMD-FUSE)",
    )
    p.add_argument(
        "--grid",
        choices=GRIDS,
        default=None,
        help=f"the collection's bandwidths: even ('{GRIDS[0]}', the default) or geometric spacing",
    )
    p.add_argument(
        "--max-bins",
        type=_positive_int,
        default=None,
        help=f"a collection: beyond this many pooled rows the Nystrom permutations move random bins "
        f"of rows (default: {DEFAULT_MAX_BINS})",
    )
    p.add_argument("-o", "--output", default=None, help="also save the full result (.json)")
    p.set_defaults(run=cmd_test)

    p = add(
        "suggest-m",
        "suggest the number of landmarks: the smallest m certified on the data (n_landmarks='auto', about one "
        "fit), beside the worst-case m of the spectrum's bound (Corollary 4.1) (reads the data into memory)",
        [files, kern, threads, out],
    )
    p.add_argument("data", help="data file")
    p.add_argument(
        "--delta",
        type=_probability,
        default=BOUNDS_DELTA,
        help=f"failure probability of the bounds (default {BOUNDS_DELTA})",
    )
    p.add_argument("--target-error", type=float, default=None, help="aim the Theorem 4.1 bound at this error")
    p.add_argument("--max-landmarks", type=_positive_int, default=None, help="cap on the suggestion")
    p.add_argument(
        "--bound-only",
        action="store_true",
        help="skip the measurement on the data: only the theorems' m, a worst-case size (often far larger)",
    )
    p.add_argument("--certify", action="store_true", help=argparse.SUPPRESS)  # the default since issue 43
    p.set_defaults(run=cmd_suggest_m)

    add_drift_commands(add, files, threads, out, _positive_int, _probability, _columns, _auto_or_count)
    add_independence_command(add, files, permutation, threads, out, _positive_int, _columns, _auto_or_count)

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
    p.add_argument("--random-state", "--seed", dest="seed", type=int, default=0, help="default: 0")
    p.set_defaults(run=cmd_demo, parser=p)
    return parser


def docs_parser() -> argparse.ArgumentParser:
    """The parser as the documentation renders it (``docs/cli.rst``, sphinx-argparse):
    :data:`EPILOG`, the same for every command and laid out for a terminal, once, as a
    preformatted block (reStructuredText would read its aligned columns as broken
    lists), and not again under each command."""
    first = len(_Parser.built)
    parser = build_parser()
    for p in _Parser.built[first:]:
        if p.epilog == EPILOG:
            p.epilog = None
    parser.epilog = "Exit statuses, data files and output files, as ``--help`` prints them::\n\n" + textwrap.indent(
        EPILOG, "    "
    )
    return parser


__all__ = ["EPILOG", "build_parser", "docs_parser"]
