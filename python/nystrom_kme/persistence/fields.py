"""Checks of what a file holds, shared by the codecs: keys of the JSON header and array
members, each refused with a :class:`FileFormatError` that names the field."""

from __future__ import annotations

import math
from typing import Any, TypeVar, overload

import numpy as np
from numpy.typing import DTypeLike


class FileFormatError(ValueError):
    """A file is not a readable nystrom-kme file: truncated, corrupted, from a newer
    format version, or missing a part. The message names the file and the problem.

    Examples
    --------
    >>> import os, tempfile, nystrom_kme as nk
    >>> path = os.path.join(tempfile.mkdtemp(), "not_an_embedding.npz")
    >>> with open(path, "wb") as f:
    ...     _ = f.write(b"hello")
    >>> try:
    ...     nk.load(path)
    ... except nk.FileFormatError as err:
    ...     print(type(err).__name__, isinstance(err, ValueError))
    FileFormatError True
    """


_Value = TypeVar("_Value")


def short_repr(value: object, limit: int = 80) -> str:
    """repr(value) (str as is) cut to ``limit`` characters: an error never echoes a huge
    field whole."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@overload
def get_field(d: object, key: str, types: type[_Value]) -> _Value: ...
@overload
def get_field(d: object, key: str, types: tuple[type[_Value], ...]) -> _Value: ...


def get_field(d: object, key: str, types: type[_Value] | tuple[type[_Value], ...]) -> _Value:
    """``d[key]``, which must be an instance of ``types`` (a bool only where bool is named)."""
    if not isinstance(d, dict) or key not in d:
        raise FileFormatError(f"the key {key!r} is missing")
    value = d[key]
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise FileFormatError(f"the key {key!r} has a wrong type ({short_repr(value)})")
    if not isinstance(value, types):
        raise FileFormatError(f"the key {key!r} has a wrong type ({short_repr(value)})")
    allowed = types if isinstance(types, tuple) else (types,)
    if isinstance(value, int) and float not in allowed and not -(2**63) <= value < 2**63:
        # JSON integers are unbounded; every count and seed of the package is an int64
        raise FileFormatError(f"the key {key!r} holds an integer beyond 64 bits ({short_repr(value)})")
    return value


def names_field(state: dict[str, Any], d: int, key: str = "feature_names_in") -> list[str] | None:
    """The column names a fitted object kept (``feature_names_in_``), or None when the file
    has none (files written before names were kept, and objects fitted without names):
    ``d`` distinct non-empty strings."""
    if key not in state:
        return None
    names = get_field(state, key, list)
    if len(names) != d or not all(isinstance(n, str) and n for n in names) or len(set(names)) != d:
        raise FileFormatError(f"{key} must be {d} distinct non-empty column names, got {short_repr(names)}")
    return names


def count_field(state: dict[str, Any], key: str) -> int:
    """A positive integer."""
    value = get_field(state, key, int)
    if value < 1:
        raise FileFormatError(f"{key}={value}: expected a positive integer")
    return value


def positive_field(state: dict[str, Any], key: str) -> float:
    """A positive finite number, as a float."""
    value = float(get_field(state, key, (int, float)))
    if not (math.isfinite(value) and value > 0):
        raise FileFormatError(f"{key}={value!r}: expected a positive finite number")
    return value


def member(arrays: dict[str, np.ndarray], key: str) -> np.ndarray:
    if key not in arrays:
        raise FileFormatError(f"the member {key!r} is missing")
    return arrays[key]


def matrix_member(arrays: dict[str, np.ndarray], key: str) -> np.ndarray:
    """A finite float32/float64 matrix with rows and columns."""
    a = member(arrays, key)
    if a.ndim != 2 or a.dtype not in (np.float32, np.float64) or not np.isfinite(a).all():
        raise FileFormatError(f"the member {key!r} must be a finite float32/float64 matrix")
    if 0 in a.shape:
        raise FileFormatError(f"the member {key!r} has shape {a.shape}: no rows or no columns")
    return a


def vector_member(arrays: dict[str, np.ndarray], key: str, dtype: DTypeLike, length: int | None = None) -> np.ndarray:
    """A 1-D array of ``dtype`` (finite when floating), of ``length`` entries when given."""
    a = member(arrays, key)
    if a.ndim != 1 or a.dtype != dtype or (a.dtype.kind == "f" and not np.isfinite(a).all()):
        raise FileFormatError(f"the member {key!r} must be a finite 1-D {np.dtype(dtype).name} array")
    if length is not None:
        check_length(a, length, key)
    return a


def check_length(a: np.ndarray, n: int, key: str) -> None:
    if a.shape != (n,):
        raise FileFormatError(f"the member {key!r} has shape {a.shape}, expected ({n},)")


def indices_member(
    arrays: dict[str, np.ndarray], key: str, length: int | None = None, bound: int | None = None, bound_name: str = ""
) -> np.ndarray:
    """Row indices: int64, >= 0 and (``bound``) below ``bound``."""
    a = vector_member(arrays, key, np.int64, length)
    if a.size and (a.min() < 0 or (bound is not None and a.max() >= bound)):
        where = f"[0, {bound_name}={bound})" if bound is not None else "[0, inf)"
        raise FileFormatError(f"the member {key!r} holds indices outside {where}: {int(a.min())} to {int(a.max())}")
    return a


def probabilities_member(arrays: dict[str, np.ndarray], key: str, length: int) -> np.ndarray:
    """Non-negative weights summing to 1 (to round-off)."""
    w = vector_member(arrays, key, np.float64, length)
    total = float(w.sum())
    if (w < 0).any() or abs(total - 1.0) > 1e-6:
        raise FileFormatError(f"the member {key!r} is not a probability vector (min {w.min():g}, sum {total!r})")
    return w


__all__ = [
    "FileFormatError",
    "check_length",
    "count_field",
    "get_field",
    "indices_member",
    "matrix_member",
    "member",
    "positive_field",
    "probabilities_member",
    "short_repr",
    "vector_member",
]
