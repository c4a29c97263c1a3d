"""ARCHITECTURE.md's folder table against the tree: one row per folder of the checkout
(issue 41: one cell of 10,665 characters described them all, and some had none)."""

from __future__ import annotations

import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
#: A row may name several folders (comma-separated) when they hold the same kind of thing.
MAX_CELL = 2000


def _rows() -> dict[str, str]:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    table = text.split("| folder | what lives there |", 1)[1].split("\n\n", 1)[0]
    rows: dict[str, str] = {}
    for line in table.strip().splitlines()[1:]:  # past the rule
        folders, what = (cell.strip() for cell in line.strip().strip("|").split("|", 1))
        for folder in folders.split(","):
            rows[folder.strip().strip("`").rstrip("/") or "."] = what.strip(" |")
    return rows


def _folders() -> set[str]:
    """The folders holding files under version control (the tree a clone has)."""
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return {str(pathlib.PurePosixPath(path).parent) for path in out.splitlines()}


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs the checkout")
def test_every_folder_has_one_row_and_every_row_a_folder():
    rows, folders = _rows(), _folders()
    assert sorted(folders - set(rows)) == [], "folders without a row in ARCHITECTURE.md"
    assert sorted(set(rows) - folders) == [], "rows of ARCHITECTURE.md without a folder"
    long = {folder: len(what) for folder, what in rows.items() if len(what) > MAX_CELL}
    assert long == {}, "rows longer than MAX_CELL characters: one job per row"


@pytest.mark.skipif(not (ROOT / ".git").exists(), reason="needs the checkout")
def test_the_rows_name_files_that_exist():
    """A file a row names in backquotes (a name with a suffix) exists in that folder."""
    missing = []
    for folder, what in _rows().items():
        for name in [w.strip("`") for w in what.split() if w.startswith("`") and w.rstrip(",;:)").endswith("`")]:
            name = name.rstrip("`,;:)")
            if "." in name and "/" not in name and not name.startswith(("-", "_core", "nk.")) and " " not in name:
                suffix = name.rsplit(".", 1)[1]
                known = suffix in {"py", "hpp", "inl", "cuh", "cpp", "sh", "md", "rst", "txt", "toml"}
                if known and not (ROOT / folder / name).exists():
                    missing.append(f"{folder}/{name}")
    assert missing == []
