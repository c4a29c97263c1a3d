"""The README's Python snippets run as written, and every value a comment shows is the
value its line produces.

Every ```python block of README.md runs, in order, in one namespace, in a temporary
working directory (the out-of-core snippet writes its own ``big.npy`` there). The
README's sizes are the test's: n = 10,000 keeps the whole run within ~30 s, so nothing
is substituted and the comments are exactly what a reader gets.

A comment shows a value with ``->``: ``expr  # prose -> VALUE`` on the expression's
last line, or ``# -> VALUE`` on the comment line right after it, continued by comment
lines indented past the ``#`` (``#    more``). VALUE is compared with ``repr`` of the
expression (``str`` for a string): the text between numbers must match (whitespace
ignored) and each number must be the actual one rounded to the digits shown (half a
unit of the last shown digit), except numbers followed by `` s``, which are wall times
and vary. Comments without ``->`` are prose.
"""

from __future__ import annotations

import ast
import math
import re
import warnings
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

README = Path(__file__).resolve().parents[2] / "README.md"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
_SECONDS = re.compile(r"^\s*s\b")


def snippets() -> list[str]:
    return _BLOCK.findall(README.read_text(encoding="utf-8"))


def shown_values(source: str) -> dict[int, str]:
    """{line number (1-based) of a statement's last line: the VALUE its comment shows}."""
    lines = source.splitlines()
    shown: dict[int, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        comment = line.split("#", 1)[1] if "#" in line else ""
        if "->" in comment:
            value = comment.split("->", 1)[1].strip()
            target = i + 1
            if line.lstrip().startswith("#"):  # the value of the statement just above
                target = i
                while target > 0 and lines[target - 1].lstrip().startswith("#"):
                    target -= 1
            while i + 1 < len(lines) and re.match(r"^\s*#\s{3,}\S", lines[i + 1]):
                i += 1
                value += " " + lines[i].split("#", 1)[1].strip()
            shown[target] = value
        i += 1
    return shown


def _digits_unit(text: str) -> float:
    """Half a unit of the last digit shown in a number's text."""
    mantissa, _, exponent = text.lower().partition("e")
    decimals = len(mantissa.split(".", 1)[1]) if "." in mantissa else 0
    return 0.5 * 10.0 ** (int(exponent or 0) - decimals)


def matches(shown: str, actual: str) -> bool:
    """The actual repr rounded as shown: same text between numbers, each number within
    half a unit of its last shown digit (times in seconds are not compared)."""
    s_nums, a_nums = list(_NUMBER.finditer(shown)), list(_NUMBER.finditer(actual))
    if len(s_nums) != len(a_nums):
        return False
    strip = lambda text: re.sub(r"\s+", "", text)  # noqa: E731
    if strip(_NUMBER.sub("#", shown)) != strip(_NUMBER.sub("#", actual)):
        return False
    for s, a in zip(s_nums, a_nums):
        if _SECONDS.match(shown[s.end() :]):
            continue
        want, got = float(s.group()), float(a.group())
        if not math.isclose(got, want, rel_tol=1e-12, abs_tol=_digits_unit(s.group()) * (1 + 1e-9)):
            return False
    return True


def run_block(source: str, namespace: dict) -> list[tuple[int, str, str]]:
    """Runs one block statement by statement; returns (line, shown, actual repr) for
    every statement whose value a comment shows."""
    shown = shown_values(source)
    checked = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.Expr):
            value = eval(compile(ast.Expression(node.value), README.name, "eval"), namespace)
            if node.end_lineno in shown:
                actual = value if isinstance(value, str) else repr(value)
                checked.append((node.end_lineno, shown.pop(node.end_lineno), actual))
        else:
            exec(compile(ast.Module([node], type_ignores=[]), README.name, "exec"), namespace)
    assert not shown, f"a '->' comment is not on an expression's line: {shown}"
    return checked


def test_the_comment_syntax_is_read_as_documented():
    src = "a = 1\na + 1   # prose -> 2\nx = [1,\n     2]\nx\n# -> [1,\n#    2]\n"
    assert shown_values(src) == {2: "2", 5: "[1, 2]"}
    assert matches("0.0525", "0.05253344732464162") and not matches("0.0526", "0.05253344732464162")
    assert matches("(461, 10)", "(461, 10)") and not matches("(460, 10)", "(461, 10)")
    assert matches("path=[1, 2], 2.3 s)", "path=[1, 2], 9.87 s)")
    assert not matches("array([0.5])", "array([0.5, 0.6])")
    assert matches("1.9e-05", "1.94e-05") and not matches("1.9e-05", "1.96e-05")


def test_readme_snippets_print_what_their_comments_show(tmp_path, monkeypatch):
    blocks = snippets()
    assert len(blocks) >= 5, "the README's Python snippets were not found"
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__readme__"}
    checked = []
    # One BLAS thread: numpy's eigh in the spectrum estimate thrashes on a busy machine.
    with threadpool_limits(1), warnings.catch_warnings():
        warnings.simplefilter("error")
        for block in blocks:
            checked += run_block(block, namespace)
    assert len(checked) >= 8, checked
    wrong = [
        f"line {line} of its snippet shows {shown!r} but gives {actual!r}"
        for line, shown, actual in checked
        if not matches(shown, actual)
    ]
    assert not wrong, "\n".join(wrong)
    assert isinstance(namespace["X"], np.ndarray) and namespace["X"].shape[0] == 10_000
