"""EXTENDING.md's tables against the code's: a row missing on either side fails."""

from __future__ import annotations

import pathlib
import re

import pytest

import nystrom_kme as nk

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _header(name: str) -> str:
    """A core header's text: the checkout's, else the installed package's (the wheel's
    tests run from a copy of tests/ beside EXTENDING.md, without cpp/)."""
    path = ROOT / "cpp/include/nystrom_kme" / name
    if not path.is_file():
        path = pathlib.Path(nk.get_include()) / "nystrom_kme" / name
    return path.read_text()


def _table(section: str, text: str | None = None) -> list[list[str]]:
    """The rows of the first table under ``## section`` of EXTENDING.md (or ``text``),
    every cell non-empty."""
    text = (ROOT / "EXTENDING.md").read_text(encoding="utf-8") if text is None else text
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in body.splitlines() if line.startswith("|")][2:]  # past the header and rule
    cells = [[c.strip() for c in row.strip("|").split("|")] for row in rows]
    assert cells and all(all(cells_) for cells_ in cells), f"an empty cell in {section}"
    return cells


def test_kernels():
    from nystrom_kme import kernels
    from nystrom_kme.cuda.program import KERNEL_CODES
    from nystrom_kme.persistence import kernel_from_spec, kernel_spec

    rows = _table("Kernels", _kernel_tables()[1])
    names = [r[0] for r in rows]
    assert sorted(names) == sorted(n for n in kernels.KERNEL_NAMES if n not in kernels.KERNEL_ALIASES)
    enum = re.findall(
        r"^\s+(\w+) = \d+,",
        _header("kernel_kinds.hpp").split("enum class KernelKind : int {", 1)[1].split("};", 1)[0],
        flags=re.M,
    )
    assert sorted(enum) == sorted(kernels.KINDS)  # the core's table is the enum
    for name, cls, kind, code in rows:
        k = nk.get_kernel(name)
        assert type(k).__name__ == cls and kind in enum, name
        assert kernel_from_spec(kernel_spec(k.with_bandwidth(1.0) if k.radial else k)) is not None
        assert (str(KERNEL_CODES[name]) if name in KERNEL_CODES else "-") == code, name
    assert {r[1] for r in rows} == {c.__name__ for c in kernels.KERNEL_CLASSES}


def _kernel_tables() -> tuple[str, str]:
    """The Kernels section's two tables: the files a new kernel touches, and the kernels."""
    body = (ROOT / "EXTENDING.md").read_text(encoding="utf-8").split("## Kernels\n", 1)[1].split("\n## ", 1)[0]
    first, rest = body.split("| file |", 1)
    files, kernels_part = rest.split("\n\n", 1)
    return "## Kernels\n| file |" + files + "\n", "## Kernels\n" + kernels_part


@pytest.mark.skipif(not (ROOT / "cpp").is_dir(), reason="needs the source tree")
def test_a_kernel_is_dispatched_on_only_in_the_files_extending_lists():
    """Every production file that dispatches on a kernel (compares a name with it, maps it
    in a table, tests its class, names its C++ kind) is in EXTENDING.md's list of the files
    a new kernel touches: a new switch over kernels elsewhere fails here. The kernels
    checked are the last ones added (rational quadratic, l1 Laplacian): code that merely
    uses one (a default collection holding the l1 Laplacian) is not a place to add one."""
    listed = {r[0].strip("`") for r in _table("Kernels", _kernel_tables()[0])}
    assert all((ROOT / f).is_file() for f in listed), listed
    names = r"(rational_quadratic|laplacian_l1)"
    classes = r"(RationalQuadratic|LaplacianL1)"
    patterns = [
        rf"KernelKind::{names}\b",  # C++: a case, a comparison, a kind built by name
        rf'==\s*"{names}"',  # Python: a comparison with the name
        rf'"{names}"\s*:',  # a table keyed by the name
        rf'in\s*[(\[{{][^)\]}}]*"{names}"',  # membership in a literal list of names
        rf"isinstance\([^)]*{classes}",  # a test of the class
    ]
    dispatching: set[str] = set()
    for folder, suffixes in (("cpp/include", {".hpp", ".inl", ".cuh"}), ("python", {".py", ".cpp", ".hpp"})):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix not in suffixes or "_core.pyi" in path.name:
                continue
            lines = path.read_text(encoding="utf-8").splitlines()
            code = "\n".join(line.split("//")[0].split("#")[0] for line in lines)
            code = re.sub(r'""".*?"""', "", code, flags=re.S)  # docstrings are prose
            if any(re.search(p, code) for p in patterns):
                dispatching.add(path.relative_to(ROOT).as_posix())
    assert dispatching <= listed, sorted(dispatching - listed)
    # the patterns find the dispatch that is there (else the check above could not fail)
    assert {
        "cpp/include/nystrom_kme/kernel_formulas.inl",
        "python/nystrom_kme/kernels.py",
        "python/nystrom_kme/torch/_device.py",
    } <= dispatching


def test_a_kind_the_core_does_not_know_is_refused_by_name(monkeypatch):
    """A kernel class added in Python alone (no formula in the core) is refused naming it,
    not computed as another kernel; a kind outside the enum is refused by the core."""
    from nystrom_kme import _core, kernels

    class Fake(kernels.Kernel):
        name = "fake_kernel"

    with pytest.raises(ValueError, match="fake_kernel"):
        Fake(1.0).to_core()
    with pytest.raises(ValueError, match="fake_kernel"):
        _core.Kernel("fake_kernel", 1.0)


def test_aggregation_rules():
    from nystrom_kme.two_sample.rules import AGGREGATIONS, RULES

    rows = _table("Aggregation rules")
    assert [r[0] for r in rows] == list(AGGREGATIONS) == list(RULES)
    doc = nk.two_sample_test.__doc__ or ""
    rng = __import__("numpy").random.default_rng(0)
    X, Y = rng.normal(size=(40, 2)), rng.normal(size=(40, 2)) + 1
    for name in AGGREGATIONS:
        assert f'"{name}"' in doc, name
        res = nk.two_sample_test(
            X, Y, kernel=nk.KernelCollection(n_bandwidths=2), aggregation=name, n_permutations=19, random_state=0
        )
        assert nk.AggregatedTestResult.from_json(res.to_json()).statistic == res.statistic


def test_drift_statistics():
    from nystrom_kme.drift._statistic import STATISTICS

    rows = _table("Drift statistics")
    assert [r[0] for r in rows] == list(STATISTICS)
    rng = __import__("numpy").random.default_rng(0)
    for name in STATISTICS:
        det = nk.DriftDetector(
            rng.normal(size=(600, 2)), statistic=name, n_holdout=300, n_permutations=19, random_state=0
        )
        assert 0 < det.predict(rng.normal(size=(10, 2))).pvalue <= 1 and det.get_params()["statistic"] == name


def test_data_formats():
    from nystrom_kme import datafiles

    rows = _table("Data formats")
    assert [r[0] for r in rows] == list(datafiles.SUFFIXES)
    for suffix, how in rows:
        expected = (
            "array" if suffix in datafiles.ARRAY_READERS else "text" if suffix in datafiles.TEXT_SUFFIXES else "Parquet"
        )
        assert how.startswith(expected), suffix


def test_saved_classes():
    from nystrom_kme.persistence import registry
    from nystrom_kme.persistence.codecs import CODECS
    from nystrom_kme.persistence.results import JSON_RESULTS

    rows = _table("Saved classes")
    names = {r[0] for r in rows}
    assert names == set(CODECS) | set(JSON_RESULTS)
    assert all(registry.is_registered(n) for n in names)
    for name, fmt in rows:
        cls = registry.registered_class(name)
        assert fmt == (".json" if name in JSON_RESULTS else ".npz"), name
        assert callable(getattr(cls, "summary", None)) and callable(getattr(cls, "save", None)), name


def test_simd_levels():
    text = _header("simd_level.hpp")
    enum = re.search(r"enum class SimdLevel \{([^}]*)\}", text).group(1)
    levels = [x.strip() for x in enum.split(",") if x.strip()]
    assert [r[0] for r in _table("SIMD levels")] == levels
    from nystrom_kme import _core

    assert set(_core.compiled_simd_levels()) <= set(levels)


@pytest.mark.parametrize("section", ["Kernels", "Aggregation rules", "Data formats", "Saved classes", "SIMD levels"])
def test_an_incomplete_row_fails(section):
    """The checker sees a row whose second cell was emptied."""
    text = (ROOT / "EXTENDING.md").read_text(encoding="utf-8")
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    row = [line for line in body.splitlines() if line.startswith("|")][2]
    cells = row.strip("|").split("|")
    broken = text.replace(row, "|" + "|".join([cells[0], " "] + cells[2:]) + "|", 1)
    _table(section, text)
    with pytest.raises(AssertionError, match="an empty cell"):
        _table(section, broken)
