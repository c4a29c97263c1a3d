"""One table of defaults (nystrom_kme.defaults): every Python parameter and command-line
option that share a default take it from the table, so that a command and the call it
makes agree (drift fit once held out 2000 rows where DriftDetector holds out 20,000)."""

from __future__ import annotations

import importlib
import inspect

import pytest

from nystrom_kme import defaults
from nystrom_kme.cli.parser import build_parser

#: The least each command needs to parse (its positional arguments).
ARGV = {
    "test": ["test", "a.csv", "b.csv"],
    "drift fit": ["drift", "fit", "ref.csv", "-o", "det.npz"],
    "fit": ["fit", "data.csv", "-o", "emb.npz"],
    "compress": ["compress", "data.csv", "-m", "8", "-o", "small.npz"],
    "suggest-m": ["suggest-m", "data.csv"],
}


def _python_default(function: str, parameter: str) -> object:
    module, name = function.split(":")
    return inspect.signature(getattr(importlib.import_module(module), name)).parameters[parameter].default


@pytest.mark.parametrize("shared", defaults.SHARED, ids=lambda s: f"{s.command}:{s.option}")
def test_python_and_the_command_line_default_alike(shared):
    assert _python_default(shared.function, shared.parameter) == shared.value
    args = build_parser().parse_args(ARGV[shared.command])
    assert getattr(args, shared.option) == shared.value


def test_the_table_covers_what_drifted_and_the_help_shows_it(capsys):
    pairs = {(s.command, s.option) for s in defaults.SHARED}
    assert {("drift fit", "holdout"), ("drift fit", "permutations"), ("test", "alpha")} <= pairs
    assert defaults.DRIFT_N_HOLDOUT == 100_000  # issue 35: batches up to 1/30 of it are calibrated
    with pytest.raises(SystemExit):
        build_parser().parse_args(["drift", "fit", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"(default: {defaults.DRIFT_N_HOLDOUT})" in text
    # the default m follows the detectors' caps, from the same table (no stale "20000" for the batch one),
    # in the words of the library's one rule (DefaultLandmarks.describe)
    assert f"at most 302 (the paper's m for {defaults.DRIFT_MAX_DEFAULT_ROWS} rows)" in text
    assert f"--online: at most 701 (the paper's m for {defaults.ONLINE_MAX_DEFAULT_ROWS} rows)" in text
