"""What the commands print and write: the exit statuses, the one rule for output files
(``-o``: the suffix names the format), and each result as text or one JSON object."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._files import non_regular_kind

EXIT_OK, EXIT_REJECTED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130

#: What each command writes with -o, by suffix: the suffix names the format.
OUTPUTS = {
    "fit": (".npz",),
    "compress": (".npz",),
    "drift fit": (".npz",),
    "test": (".json",),
    "independence": (".json",),
    "eval": (".npy", ".csv", ".txt"),
}


class BadInput(Exception):
    """A problem with the command's input, reported as one line and exit status 2."""


def check_output(command: str, path: str) -> None:
    """The one rule for -o: the suffix names the format, the folder exists, and an
    existing path is a regular file (it is replaced only when the command succeeds)."""
    suffixes = OUTPUTS[command]
    if os.path.splitext(path)[1].lower() not in suffixes:
        names = " or ".join(f"*{s}" for s in suffixes)
        raise BadInput(f"{path}: the output of '{command}' must be named {names} (the suffix names the format)")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise BadInput(f"{path}: no such folder {folder}")
    kind = non_regular_kind(path) if os.path.exists(path) else None
    if kind is not None:
        raise BadInput(f"{path}: exists and is not a regular file ({kind})")


def emit(args: argparse.Namespace, record: dict[str, Any], lines: Sequence[str]) -> None:
    if args.json:
        print(json.dumps(record, allow_nan=False, default=_json_scalar))
    else:
        print("\n".join(lines))


def _json_scalar(value: object) -> object:
    """numpy scalars (e.g. in a report's parameters) as Python numbers."""
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def _plain(value: object) -> object:
    """A report's value as JSON data: dataclasses as objects, arrays as lists, numpy
    scalars as numbers, NaN and infinities as None (strict JSON has none)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v) for v in (value.tolist() if isinstance(value, np.ndarray) else value)]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def report_record(report: object) -> dict[str, Any]:
    """How m was chosen (``n_landmarks_report_``: a LandmarkSearch or LandmarkSuggestion)
    as JSON: its type, one-line summary, explanation and fields."""
    record = {"type": type(report).__name__, "summary": repr(report)}
    if hasattr(report, "explain"):
        record["explanation"] = str(report.explain())
    fields = _plain(report) if dataclasses.is_dataclass(report) else {}
    if isinstance(fields, dict):  # a dataclass's fields
        record.update(fields)
    return record


def fmt(x: float) -> str:
    return f"{x:.6g}"


__all__ = [
    "EXIT_BAD_INPUT",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_REJECTED",
    "OUTPUTS",
    "BadInput",
    "check_output",
    "emit",
    "fmt",
    "report_record",
]
