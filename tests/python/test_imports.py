"""Import discipline of the whole package, read from the source with ``ast`` (every
import statement, those inside functions included):

* no module imports a private name (``_x``) of another module;
* a private module (``pkg._m``, the compiled ``_core`` included) is imported only from
  inside its own package (``nystrom_kme._validation`` by all of ``nystrom_kme``,
  ``nystrom_kme.sampling._common`` by ``nystrom_kme.sampling`` only);
* no import circle between the modules (importing a package counts as importing its
  ``__init__``).

The checker itself is tested on a small package written for the purpose, so that a
clean result on nystrom_kme means something.
"""

from __future__ import annotations

import ast
import pathlib
from dataclasses import dataclass

import nystrom_kme

ROOT = pathlib.Path(nystrom_kme.__file__).parent
#: Compiled modules: no source to parse, but imported by name.
COMPILED = {"nystrom_kme._core"}


@dataclass(frozen=True)
class Imports:
    """The package's modules and who imports what."""

    modules: set[str]
    edges: dict[str, set[str]]
    private_names: list[tuple[str, str]]  # (importer, "module.name")
    private_modules: list[tuple[str, str]]  # (importer, private module outside its package)


def _private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def read_imports(root: pathlib.Path, compiled: set[str] = frozenset()) -> Imports:
    """Parse every ``.py`` file under ``root`` (a package directory)."""
    files = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        files[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    modules = set(files) | set(compiled)
    edges: dict[str, set[str]] = {name: set() for name in files}
    private_names, private_modules = [], []
    for name, (path, is_package) in files.items():
        here = name.split(".") if is_package else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [(a.name, None) for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = here[: len(here) - (node.level - 1)]
                    base = ".".join(parent + ([node.module] if node.module else []))
                targets = [(base, a.name) for a in node.names]
            else:
                continue
            for module, imported in targets:
                if module.split(".")[0] != root.name:
                    continue
                if imported is not None and f"{module}.{imported}" in modules:
                    module, imported = f"{module}.{imported}", None  # a module, not a name
                edges[name].add(module)
                if imported is not None and _private(imported):
                    private_names.append((name, f"{module}.{imported}"))
                parts = module.split(".")
                for i, part in enumerate(parts):
                    package = ".".join(parts[:i])
                    if _private(part) and not (name == package or name.startswith(package + ".")):
                        private_modules.append((name, module))
                        break
    return Imports(modules, edges, private_names, private_modules)


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan), and
    modules that import themselves."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1 or v in edges.get(v, ()):
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_a_private_name_of_another():
    assert read_imports(ROOT, COMPILED).private_names == []


def test_private_modules_are_imported_only_inside_their_package():
    imports = read_imports(ROOT, COMPILED)
    assert imports.private_modules == []
    # the rule is not vacuous: the package's own private modules are used across it
    users = {name for name, targets in imports.edges.items() if "nystrom_kme.sampling._common" in targets}
    assert users and all(name.startswith("nystrom_kme.sampling.") for name in users)
    assert any(
        "nystrom_kme._core" in targets
        for name, targets in imports.edges.items()
        if name.startswith("nystrom_kme.sources.")
    )


def test_no_import_circle():
    imports = read_imports(ROOT, COMPILED)
    assert len(imports.edges) > 50  # every module was read
    assert circles(imports.edges) == []


def test_the_checker_finds_what_it_must(tmp_path):
    """A package with each fault once: the checks above would see them."""
    pkg = tmp_path / "demo"
    (pkg / "sub").mkdir(parents=True)
    sources = {
        "__init__.py": "from . import a\n",
        "a.py": "from .b import helper\nfrom .sub._hidden import thing\n",
        "b.py": "from .a import _secret\n\ndef helper():\n    from . import c\n",
        "c.py": "import demo.b\n",
        "_shared.py": "",
        "sub/__init__.py": "from .. import _shared\nfrom ._hidden import thing\n",
        "sub/_hidden.py": "thing = 1\n",
    }
    for name, text in sources.items():
        (pkg / name).write_text(text)
    imports = read_imports(pkg)
    assert imports.private_names == [("demo.b", "demo.a._secret")]
    assert imports.private_modules == [("demo.a", "demo.sub._hidden")]  # demo.sub may, so may demo.sub's
    assert circles(imports.edges) == [["demo.a", "demo.b", "demo.c"]]  # c's import is inside a function
    assert imports.edges["demo.sub"] == {"demo._shared", "demo.sub._hidden"}


def test_the_package_and_its_demo_need_only_its_dependencies():
    """`pip install .` brings numpy, cmeel-eigen, threadpoolctl and tqdm: importing the
    package and running the main job need nothing else (scipy, pandas, matplotlib,
    scikit-learn and torch are extras; a module-level `import scipy.fft` once crept in)."""
    import subprocess
    import sys

    blocked = ("scipy", "pandas", "matplotlib", "sklearn", "torch", "dask", "h5py", "zarr", "pyarrow")
    code = (
        "import sys\n"
        f"for name in {blocked!r}: sys.modules[name] = None\n"
        "import numpy as np, nystrom_kme as nk\n"
        "rng = np.random.default_rng(0)\n"
        "x = rng.normal(size=(300, 2)); y = x + rng.normal(size=(300, 2))\n"
        "assert nk.independence_test(x[:, :1], y[:, :1], random_state=0).pvalue < 0.05\n"
        "assert nk.two_sample_test(x, y + 1.0, random_state=0).pvalue < 0.05\n"
        "from nystrom_kme.demo import run_demo\n"
        "run_demo(200, [10], 0, say=None)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
