"""The ``Examples`` sections of the public docstrings, run as doctests.

Every module of the installed package is searched (``doctest.DocTestFinder``), so an
example that drifts from the code fails the default suite. Examples print rounded
numbers, booleans and shapes only, never anything that depends on the thread count.
Examples that need an optional dependency (dask, pandas, matplotlib) are skipped when it is
missing.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil

import pytest

import nystrom_kme

OPTIONFLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE

# Examples that import an optional dependency: (test name prefix, module they need).
_OPTIONAL = {
    "nystrom_kme.sources.dask.": "dask",
    "nystrom_kme._frames.require_pandas": "pandas",
    "nystrom_kme._frames.results_frame": "pandas",
    "nystrom_kme._plots.require_pyplot": "matplotlib",
}
# Subpackages that import an optional dependency when imported: skipped without it.
_OPTIONAL_PACKAGES = {"nystrom_kme.torch": "torch"}


def _importable(name: str) -> bool:
    return not any(
        (name == package or name.startswith(package + ".")) and importlib.util.find_spec(needs) is None
        for package, needs in _OPTIONAL_PACKAGES.items()
    )


def _module_names() -> list[str]:
    names = ["nystrom_kme"]
    for info in pkgutil.walk_packages(nystrom_kme.__path__, prefix="nystrom_kme."):
        leaf = info.name.rsplit(".", 1)[-1]
        # _core: compiled; __main__: importing it runs the command line
        if not leaf.startswith("_core") and leaf != "__main__" and _importable(info.name):
            names.append(info.name)
    return sorted(names)


def _tests(module_name: str) -> list[doctest.DocTest]:
    module = importlib.import_module(module_name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    # Only what the module defines itself (re-exports are found in their own module).
    return [t for t in finder.find(module, module_name) if t.examples]


# Only modules with examples: a module without any is not a test that passed.
MODULES = [name for name in _module_names() if _tests(name)]


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples(module_name: str) -> None:
    tests = _tests(module_name)
    runner = doctest.DocTestRunner(optionflags=OPTIONFLAGS)
    for test in tests:
        need = next((mod for prefix, mod in _OPTIONAL.items() if test.name.startswith(prefix)), None)
        if need is not None and importlib.util.find_spec(need) is None:
            continue
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {module_name} (see stdout)"


def test_every_public_name_has_examples() -> None:
    """Each class and function exported by the package and its subpackages documents an example."""
    import inspect

    missing = []
    for mod_name in (
        "nystrom_kme",
        "nystrom_kme.bounds",
        "nystrom_kme.sampling",
        "nystrom_kme.sources",
        "nystrom_kme.datasets",
    ):
        module = importlib.import_module(mod_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue
            if "Examples\n" not in (obj.__doc__ or ""):
                missing.append(f"{mod_name}.{name}")
    assert not missing, f"no Examples section: {missing}"
