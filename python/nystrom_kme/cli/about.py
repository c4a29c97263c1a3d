"""The commands about saved files and the package: ``info`` and ``demo``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from ..demo import run_demo
from ..persistence import load, read_header
from .output import EXIT_OK, emit, fmt


def cmd_info(args: argparse.Namespace) -> int:
    """The file's header, then the object's own summary(); a test result's explain()."""
    header = read_header(args.file)
    obj = load(args.file)
    version = (
        f"{header['object']} (file format {header['format_version']}, written by nystrom-kme "
        f"{header.get('package_version', '?')})"
    )
    fields = obj.summary()
    record: dict[str, Any] = {
        "file": args.file,
        "object": header["object"],
        "format_version": header["format_version"],
        "package_version": header.get("package_version"),
        **fields,
    }
    width = max(len(k) for k in fields)
    lines = [f"{args.file}: {version}"] + [
        f"  {k.replace('_', ' '):<{width}}  {fmt_value(v)}" for k, v in fields.items()
    ]
    explain = getattr(obj, "explain", None)
    if callable(explain):
        lines += [""] + explain().splitlines()
    emit(args, record, lines)
    return EXIT_OK


def fmt_value(value: object) -> str:
    """A summary value as text: numbers as fmt() writes them, lists on one line."""
    if isinstance(value, float):
        return fmt(value)
    if isinstance(value, list):
        return ", ".join(fmt_value(v) for v in value)
    return str(value)


def cmd_demo(args: argparse.Namespace) -> int:
    if args.n_samples < 2:
        args.parser.error("--n-samples must be >= 2")
    bad = [m for m in args.n_landmarks or [] if not 1 <= m <= args.n_samples]
    if bad:
        args.parser.error(f"--n-landmarks must lie in [1, {args.n_samples}] (--n-samples), got {bad}")
    record = run_demo(args.n_samples, args.n_landmarks, args.seed, say=None if args.json else print)
    if args.json:
        print(json.dumps(record, allow_nan=False))
    return EXIT_OK


__all__ = ["cmd_demo", "cmd_info"]
