"""The type stub ``_core.pyi`` against the compiled module it describes.

pybind11 functions carry no ``inspect`` signature, so ``mypy.stubtest`` (run by
.ci/run) checks their names but not their arguments. Their docstrings do hold every
overload's signature (``name(a: T, b: U = default) -> R``): here each function and
method of the stub is compared with them, argument by argument (names, order, which
have defaults, the dtypes of the arrays), and the names of the stub with the module's.

The comparison is tested on a stub with one fault of each kind, so that a clean
result on the real stub means something.
"""

from __future__ import annotations

import ast
import pathlib
import re
from dataclasses import dataclass

import pytest

import nystrom_kme
from nystrom_kme import _core

STUB = pathlib.Path(nystrom_kme.__file__).parent / "_core.pyi"
#: Array dtypes named in annotations; the stub's type variable _F stands for both floats.
DTYPES = ("float32", "float64", "int64")


@dataclass(frozen=True)
class Param:
    name: str
    has_default: bool
    annotation: str


@dataclass(frozen=True)
class Signature:
    params: tuple[Param, ...]
    returns: str


def split_top_level(text: str) -> list[str]:
    """``text`` split at the commas outside brackets and quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    if text[start:].strip():
        parts.append(text[start:].strip())
    return parts


def parse_docstring_signature(line: str, name: str) -> Signature | None:
    """One pybind11 signature line, without ``self``; None for the catch-all overload
    ``name(*args, **kwargs)``."""
    match = re.match(rf"^(?:\d+\. )?{re.escape(name)}\((.*)\) -> (.+)$", line.strip())
    assert match, f"not a signature of {name}: {line!r}"
    params = []
    for part in split_top_level(match.group(1)):
        if part.startswith("*"):
            return None
        head, _, default = part.partition(" = ")
        pname, _, annotation = head.partition(": ")
        if pname != "self":
            params.append(Param(pname, bool(default), annotation))
    return Signature(tuple(params), match.group(2).strip())


def runtime_signatures(obj: object, name: str) -> list[Signature]:
    """Every overload of a pybind11 function or method, from its docstring."""
    lines = (obj.__doc__ or "").splitlines()
    if lines and lines[0].startswith(f"{name}(*args, **kwargs)"):
        candidates = [line for line in lines if re.match(rf"^\d+\. {re.escape(name)}\(", line)]
    else:
        candidates = lines[:1]
    found = [parse_docstring_signature(line, name) for line in candidates]
    return [s for s in found if s is not None]


def stub_signature(fn: ast.FunctionDef) -> Signature:
    args = fn.args
    positional = args.posonlyargs + args.args
    defaults = [False] * (len(positional) - len(args.defaults)) + [True] * len(args.defaults)
    params = [
        Param(a.arg, d, ast.unparse(a.annotation) if a.annotation else "")
        for a, d in zip(positional, defaults)
        if a.arg != "self"
    ]
    params += [
        Param(a.arg, d is not None, ast.unparse(a.annotation) if a.annotation else "")
        for a, d in zip(args.kwonlyargs, args.kw_defaults)
    ]
    return Signature(tuple(params), ast.unparse(fn.returns) if fn.returns else "")


@dataclass
class Stub:
    functions: dict[str, ast.FunctionDef]
    classes: dict[str, dict[str, ast.FunctionDef]]
    properties: dict[str, set[str]]
    names: set[str]


def read_stub(text: str) -> Stub:
    functions, classes, properties, names = {}, {}, {}, set()
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef):
            functions[node.name] = node
        elif isinstance(node, ast.ClassDef):
            methods, props = {}, set()
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    is_property = any(isinstance(d, ast.Name) and d.id == "property" for d in item.decorator_list)
                    (props.add(item.name) if is_property else methods.__setitem__(item.name, item))
            classes[node.name], properties[node.name] = methods, props
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    names |= set(functions) | set(classes)
    return Stub(functions, classes, properties, {n for n in names if not n.startswith("_") or n == "__version__"})


def dtypes(annotation: str) -> set[str]:
    found = {d for d in DTYPES if d in annotation}
    return found | ({"float32", "float64"} if re.search(r"\b_F\b", annotation) else set())


def compare(stub_fn: ast.FunctionDef, runtime: object, name: str) -> list[str]:
    """The differences between a stub function and every runtime overload of it."""
    want = stub_signature(stub_fn)
    overloads = runtime_signatures(runtime, name)
    if not overloads:
        return [f"{name}: no signature in the docstring"]
    problems = []
    for got in overloads:
        got_shape = [(p.name, p.has_default) for p in got.params]
        want_shape = [(p.name, p.has_default) for p in want.params]
        if got_shape != want_shape:
            problems.append(
                f"{name}: arguments (name, has default) {got_shape} in the module, {want_shape} in the stub"
            )
        if (got.returns == "None") != (want.returns == "None"):
            problems.append(f"{name}: returns {got.returns} in the module, {want.returns} in the stub")
    if not problems:
        for i, param in enumerate(want.params):
            if "NDArray" not in param.annotation or any(o.params[i].annotation == "object" for o in overloads):
                continue  # not an array, or one the binding takes as any object and checks itself
            seen = set().union(*(dtypes(o.params[i].annotation) for o in overloads))
            if seen != dtypes(param.annotation):
                problems.append(
                    f"{name}({param.name}): dtypes {sorted(seen)} in the module, "
                    f"{sorted(dtypes(param.annotation))} in the stub"
                )
    return problems


def differences(stub: Stub, module: object) -> list[str]:
    """Everything in which ``stub`` and the compiled ``module`` disagree."""
    names = {n for n in dir(module) if not n.startswith("_")} | {"__version__"} & set(dir(module))
    problems = []
    if names != stub.names:
        problems.append(
            f"names only in the module: {sorted(names - stub.names)}, only in the stub: {sorted(stub.names - names)}"
        )
    for name, fn in stub.functions.items():
        if hasattr(module, name):
            problems += compare(fn, getattr(module, name), name)
    for cls_name, methods in stub.classes.items():
        cls = getattr(module, cls_name, None)
        if cls is None:
            continue
        runtime_props = {n for n, v in vars(cls).items() if isinstance(v, property)}
        runtime_methods = {
            n
            for n, v in vars(cls).items()
            if callable(v) and not isinstance(v, property) and (n == "__init__" or not n.startswith("_"))
        }
        if runtime_props != stub.properties[cls_name]:
            problems.append(
                f"{cls_name}: properties {sorted(runtime_props)} in the module, "
                f"{sorted(stub.properties[cls_name])} in the stub"
            )
        if runtime_methods != set(methods):
            problems.append(
                f"{cls_name}: methods {sorted(runtime_methods)} in the module, {sorted(methods)} in the stub"
            )
        for name, fn in methods.items():
            if name in runtime_methods:
                problems += compare(fn, getattr(cls, name), name)
    return problems


def test_the_stub_matches_the_compiled_module():
    stub = read_stub(STUB.read_text(encoding="utf-8"))
    assert len(stub.functions) > 20 and set(stub.classes) == {"Kernel", "RandomSplits", "BettingModel"}  # all was read
    assert differences(stub, _core) == []


def test_every_function_has_overloads_to_compare():
    """The docstrings are read: each function of the stub has at least one runtime
    signature, and the array functions one per dtype."""
    stub = read_stub(STUB.read_text(encoding="utf-8"))
    for name in stub.functions:
        assert runtime_signatures(getattr(_core, name), name), name
    assert len(runtime_signatures(_core.kernel_sums, "kernel_sums")) == 2  # float64, float32


def _function(tree: ast.Module, name: str, cls: str | None = None) -> ast.FunctionDef:
    scope = tree.body
    if cls is not None:
        scope = next(n for n in scope if isinstance(n, ast.ClassDef) and n.name == cls).body
    return next(n for n in scope if isinstance(n, ast.FunctionDef) and n.name == name)


def _rename_last_argument(tree: ast.Module) -> None:
    _function(tree, "kernel_sums").args.args[-1].arg = "threads"


def _give_a_default(tree: ast.Module) -> None:
    fn = _function(tree, "paired_kernel")
    fn.args.defaults = [*fn.args.defaults, ast.Constant(Ellipsis)]


def _change_a_dtype(tree: ast.Module) -> None:
    _function(tree, "matrix_product").args.args[0].annotation = ast.parse("NDArray[_F]", mode="eval").body


def _return_none(tree: ast.Module) -> None:
    _function(tree, "simd_level").returns = ast.Constant(None)


def _drop_a_function(tree: ast.Module) -> None:
    tree.body.remove(_function(tree, "set_simd_level"))


def _rename_a_property(tree: ast.Module) -> None:
    _function(tree, "position", cls="RandomSplits").name = "cursor"


@pytest.mark.parametrize(
    "fault, expected",
    [
        (_rename_last_argument, "kernel_sums: arguments"),
        (_give_a_default, "paired_kernel: arguments"),
        (_change_a_dtype, "matrix_product(A): dtypes"),
        (_return_none, "simd_level: returns"),
        (_drop_a_function, "names only in the module: ['set_simd_level']"),
        (_rename_a_property, "RandomSplits: properties"),
    ],
)
def test_the_comparison_finds_each_fault(fault, expected):
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    assert differences(read_stub(ast.unparse(tree)), _core) == []  # the stub as read back is clean
    fault(tree)
    problems = differences(read_stub(ast.unparse(tree)), _core)
    assert any(p.startswith(expected) for p in problems), problems
