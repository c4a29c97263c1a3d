"""The command line, ``nystrom-kme`` (or ``python -m nystrom_kme``): argument parsing
(:mod:`.parser`), the commands (:mod:`.commands`: read the inputs, call the library)
and their output (:mod:`.output`). Data files are read by :mod:`nystrom_kme.datafiles`,
embeddings saved and loaded by :mod:`nystrom_kme.persistence`.

Commands: ``fit``, ``eval``, ``compress``, ``mmd``, ``test``, ``suggest-m``, ``info``, ``demo``;
``--version``. Output is human-readable unless ``--json``. Exit status: 0 success
(for ``test``: H0 not rejected), 1 ``test`` rejected H0 and nothing else, 2 any failure
(usage error, bad input, out of memory, an unexpected error: one line on stderr, no
traceback), 130 interrupted. Output files are named by their format's suffix
(:data:`.output.OUTPUTS`), written to a temporary file beside them and renamed when complete, so
a failed command leaves no partial file.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ..config import show_config
from ..datafiles import DataFileError
from ..persistence import FileFormatError
from .output import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_OK, BadInput, check_output
from .parser import build_parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; the exit status (EPILOG): 1 only for 'test' rejecting H0, 2 for
    every failure, reported as one line on stderr."""
    parser = build_parser()
    args = parser.parse_args(argv)  # usage errors: exit status 2 (_Parser.error)
    prog = "nystrom-kme" if args.command is None else f"nystrom-kme {args.command}"
    try:
        if args.version:
            show_config()
            return EXIT_OK
        if args.command is None:
            parser.error("a command is required (fit, eval, compress, mmd, test, suggest-m, info, demo), or --version")
        if getattr(args, "output", None) is not None:
            check_output(args.command, args.output)
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
        print(f"{prog}: error: {_one_line(err)}", file=sys.stderr)
    except Exception as err:  # exit status 1 would read as "H0 rejected": every failure is 2
        print(f"{prog}: error: unexpected {type(err).__name__}: {_one_line(err)} (please report it)", file=sys.stderr)
    return EXIT_BAD_INPUT


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


__all__ = ["build_parser", "main"]
