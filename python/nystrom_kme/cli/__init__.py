"""The command line, ``nystrom-kme`` (or ``python -m nystrom_kme``): argument parsing
(:mod:`.parser`), the commands (:mod:`.commands`: read the inputs, call the library)
and their output (:mod:`.output`). Data files are read by :mod:`nystrom_kme.datafiles`,
embeddings saved and loaded by :mod:`nystrom_kme.persistence`.

Commands: ``fit``, ``eval``, ``compress``, ``mmd``, ``test``, ``drift`` (:mod:`.drift`:
``fit``, ``test``, ``watch``), ``suggest-m``, ``info``, ``demo``; ``--version``. Options
are the Python parameters' names (``--n-permutations``, ``--random-state``), older
spellings kept as aliases; library messages and warnings come back in those words, one
line each. Output is human-readable unless ``--json``. Exit status: 0 success (for
``test``: H0 not rejected), 1 ``test`` rejected H0 or ``drift`` found drift, 2 any failure
(usage error, bad input, out of memory, an unexpected error: one line on stderr, no
traceback), 130 interrupted. Output files are named by their format's suffix
(:data:`.output.OUTPUTS`), written to a temporary file beside them and renamed when complete, so
a failed command leaves no partial file.
"""

from __future__ import annotations

import re
import signal
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from ..config import show_config
from ..datafiles import DataFileError
from ..persistence import FileFormatError
from .output import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, BadInput, check_output
from .parser import build_parser

#: The library's parameter names in its messages, as the command line spells them.
_OPTIONS = {
    "n_landmarks": "--n-landmarks",
    "n_permutations": "--n-permutations",
    "random_state": "--random-state",
    "n_threads": "--n-threads",
    "aggregation": "--aggregation",
    "max_bins": "--max-bins",
    "n_bandwidths": "--n-bandwidths",
    "window_size": "--window-size",
    "n_holdout": "--n-holdout",
    "max_landmarks": "--max-landmarks",
    "target_error": "--target-error",
    "n_samples": "--n-samples",
}
_PARAMETER = re.compile(r"\b(" + "|".join(_OPTIONS) + r")\b(=)?")


def _cli_words(message: str) -> str:
    """A library message in the command line's words: ``n_landmarks='auto'`` becomes
    ``--n-landmarks 'auto'``, ``standardize=True`` ``--standardize standard``."""
    message = message.replace("standardize=True", "--standardize standard")
    return _PARAMETER.sub(lambda m: _OPTIONS[m.group(1)] + (" " if m.group(2) else ""), message)


def _warn_in_one_line(prog: str) -> None:
    """Warnings as one line on stderr in the CLI's words (no file path, no source line)."""

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: Any = None,
        line: str | None = None,
    ) -> None:
        print(f"{prog}: warning: {_cli_words(_one_line(Exception(str(message))))}", file=sys.stderr)

    warnings.showwarning = show


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the exit status (EPILOG): 1 only for 'test' rejecting H0 and
    'drift test' / 'drift watch' finding drift, 2 for every failure, reported as one line
    on stderr."""
    parser = build_parser()
    args = parser.parse_args(argv)  # usage errors: exit status 2 (_Parser.error)
    command = args.command if getattr(args, "action", None) is None else f"{args.command} {args.action}"
    prog = "nystrom-kme" if command is None else f"nystrom-kme {command}"
    _warn_in_one_line(prog)
    if hasattr(signal, "SIGPIPE"):  # 'nystrom-kme info f.npz | head -1': end quietly, as Unix tools do
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        if args.version:
            show_config()
            return EXIT_OK
        if args.command is None:
            parser.error(
                "a command is required (fit, eval, compress, mmd, test, drift, suggest-m, info, demo), or --version"
            )
        if getattr(args, "output", None) is not None:
            check_output(command, args.output)
        status: int = args.run(args)
        return status
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except MemoryError as err:
        detail = f" ({_one_line(err)})" if str(err) else ""
        print(
            f"{prog}: error: out of memory{detail}; use a smaller input or smaller options "
            "(e.g. --permutations, --n-landmarks, --n-samples)",
            file=sys.stderr,
        )
    except OSError as err:
        where = f"{err.filename}: " if getattr(err, "filename", None) else ""
        print(f"{prog}: error: {where}{_one_line(err) if not err.strerror else err.strerror}", file=sys.stderr)
    except (BadInput, DataFileError, FileFormatError, ValueError) as err:
        print(f"{prog}: error: {_cli_words(_one_line(err))}", file=sys.stderr)
    except Exception as err:  # exit status 1 would read as "H0 rejected": every failure is 2
        print(f"{prog}: error: unexpected {type(err).__name__}: {_one_line(err)} (please report it)", file=sys.stderr)
    return EXIT_BAD_INPUT


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


__all__ = ["build_parser", "main"]
