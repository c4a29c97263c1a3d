"""The test results saved as JSON documents (:class:`~nystrom_kme.TwoSampleResult`,
:class:`~nystrom_kme.AggregatedTestResult`, :class:`~nystrom_kme.IndependenceTestResult`),
each field written exactly (round-trip floats) and read back through the result's own
constructor, which checks it.

One writer and one reader for every result: a result class names its fields and their
kinds itself (``json_fields``: ``(name, kind)`` in the order they are written;
``json_optional``: the fields later versions added, written only when they differ from
what a file without them means, so that a result saved before them saves again to the
same bytes; ``json_name``: the result in words, for errors; ``effect_type``: the class
of its effect size, whose own ``json_fields`` say how it is written). The kinds:

=================  ==========================================================
``number``         a float (read: an int or a float)
``numbers``        a list of floats (the constructor checks each item)
``str``            a string
``count``          an int
``optional_count`` an int or null
``kernel``         a kernel spec (:mod:`~nystrom_kme.persistence.specs`)
``kernel_list``    a list of kernel specs (read: a list of Kernels)
``collection``     a list of kernel specs (read: a KernelCollection)
``effect``         null or an object of the effect's fields
=================  ==========================================================
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from .container import check_preamble, preamble
from .fields import FileFormatError, get_field, short_repr
from .registry import is_registered, registered_class, registered_name
from .specs import kernel_from_spec, kernel_spec

#: The types saved as JSON documents.
JSON_RESULTS = ("TwoSampleResult", "AggregatedTestResult", "IndependenceTestResult", "ConditionalIndependenceResult")
#: The result a document without a known ``object`` is checked as (files of format 1).
_FIRST = "TwoSampleResult"


def _encode(kind: str, value: Any) -> Any:
    if kind == "number":
        return float(value)
    if kind == "numbers":
        return [float(v) for v in np.asarray(value, dtype=np.float64)]
    if kind == "str":
        return str(value)
    if kind == "count":
        return int(value)
    if kind == "optional_count":
        return None if value is None else int(value)
    if kind == "kernel":
        return kernel_spec(value)
    if kind in ("kernel_list", "collection"):
        return [kernel_spec(k) for k in value]
    if kind == "effect":
        if value is None:
            return None
        return {name: _encode(k, getattr(value, name)) for name, k in type(value).json_fields}
    raise ValueError(f"no JSON kind {kind!r}")  # pragma: no cover - a class's own table


def _decode(kind: str, data: dict[str, Any], key: str) -> Any:
    if kind == "number":
        return get_field(data, key, (int, float))
    if kind == "numbers":
        # the raw list: the constructor checks every item is a finite real number (numpy
        # would turn "1.0" and true into numbers)
        return get_field(data, key, list)
    if kind == "str":
        return get_field(data, key, str)
    if kind == "count":
        return get_field(data, key, int)
    if kind == "optional_count":
        return get_field(data, key, (int, type(None)))
    if kind == "kernel":
        return kernel_from_spec(data[key] if key in data else get_field(data, key, dict))
    if kind == "kernel_list":
        return [kernel_from_spec(k) for k in get_field(data, key, list)]
    if kind == "collection":
        from ..kernel_collection import KernelCollection

        return KernelCollection([kernel_from_spec(k) for k in get_field(data, key, list)])
    raise ValueError(f"no JSON kind {kind!r}")  # pragma: no cover


def _effect_from_dict(effect_type: Any, data: dict[str, Any]) -> dict[str, Any] | None:
    """The effect size of a result as the fields of its class (which the result builds and
    checks); None in files written before it existed."""
    value = data.get("effect")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError("effect must be a JSON object or null")
    out = {}
    for name, kind in effect_type.json_fields:
        if kind in ("kernel", "kernel_list", "collection"):
            out[name] = _decode(kind, {name: value.get(name)}, name)
        else:
            out[name] = get_field(value, name, (int, float))
    return out


def result_to_dict(result: object) -> dict[str, Any]:
    """A saved test result as a JSON-ready dict (with the preamble)."""
    name = registered_name(result)
    cls: Any = type(result)  # a registered result class, which this package does not import
    out = preamble(name)
    for field, kind in cls.json_fields:
        out[field] = _encode(kind, getattr(result, field))
    for field, kind, absent in cls.json_optional:
        value = getattr(result, field)
        if (value is not None) if absent is None else (float(value) != absent):
            out[field] = _encode(kind, value)
    return out


def result_from_dict(data: object) -> Any:
    """The result of :func:`result_to_dict`'s output."""
    description = "two-sample result"
    try:
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        name = data.get("object")
        name = name if isinstance(name, str) and name in JSON_RESULTS and is_registered(name) else _FIRST
        cls: Any = registered_class(name)
        description = cls.json_name
        check_preamble(data, name)
        missing = [field for field, _ in cls.json_fields if field not in data]
        if missing:
            raise ValueError(f"missing key(s) {missing}")
        fields = {field: _decode(kind, data, field) for field, kind in cls.json_fields}
        for field, kind, absent in cls.json_optional:
            if kind == "effect":
                fields[field] = _effect_from_dict(cls.effect_type, data)
            elif field in data:
                fields[field] = _decode(kind, data, field)
            else:
                fields[field] = absent
        return cls(**fields)
    except FileFormatError:
        raise
    except (ValueError, TypeError, OverflowError, RecursionError) as err:
        # huge integers (OverflowError as floats) and deep nesting are not results either
        raise FileFormatError(f"not a valid {description}: {short_repr(str(err), 300)}") from None


def result_to_json(result: object, *, indent: int | None = None) -> str:
    """The JSON text of a test result (floats exact).

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme.persistence import result_from_json, result_to_json
    >>> rng = np.random.default_rng(0)
    >>> res = nk.two_sample_test(rng.normal(size=(200, 2)), rng.normal(size=(200, 2)) + 1,
    ...                          n_permutations=19, random_state=0)
    >>> result_from_json(result_to_json(res)).pvalue == res.pvalue
    True
    """
    return json.dumps(result_to_dict(result), indent=indent, allow_nan=False)


def result_from_json(text: str | bytes) -> Any:
    """Parse :func:`result_to_json`'s output."""
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise FileFormatError(f"not valid JSON ({short_repr(str(err), 300)})") from None
    return result_from_dict(data)


__all__ = ["JSON_RESULTS", "result_from_dict", "result_from_json", "result_to_dict", "result_to_json"]
