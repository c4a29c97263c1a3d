"""The test results saved as JSON documents: :class:`~nystrom_kme.TwoSampleResult` and
:class:`~nystrom_kme.AggregatedTestResult`, each field written exactly (round-trip
floats) and read back through the result's own constructor, which checks it."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .container import check_preamble, preamble
from .fields import FileFormatError, get_field, short_repr
from .registry import registered_class, registered_name
from .specs import kernel_from_spec, kernel_spec

#: The types saved as JSON documents.
JSON_RESULTS = ("TwoSampleResult", "AggregatedTestResult")
_RESULT_FIELDS = ("statistic", "pvalue", "null_distribution", "method", "kernel", "n_landmarks", "n_permutations")
_AGGREGATED_FIELDS = (
    "statistic",
    "pvalue",
    "null_distribution",
    "method",
    "aggregation",
    "kernels",
    "kernel_statistics",
    "kernel_scores",
    "kernel_pvalues",
    "n_landmarks",
    "n_permutations",
    "bin_size",
    "temperature",
)


def _floats(values: ArrayLike) -> list[float]:
    return [float(v) for v in np.asarray(values, dtype=np.float64)]


def _list(data: dict[str, Any], key: str) -> list[Any]:
    """The raw list: the result's constructor checks every item is a finite real number
    (numpy would turn "1.0" and true into numbers)."""
    return get_field(data, key, list)


def _missing(data: dict[str, Any], fields: tuple[str, ...]) -> None:
    missing = [f for f in fields if f not in data]
    if missing:
        raise ValueError(f"missing key(s) {missing}")


def _effect_to_dict(effect: Any) -> dict[str, Any] | None:
    if effect is None:
        return None
    return {
        "kernel": kernel_spec(effect.kernel),
        "mmd": float(effect.mmd),
        "low": float(effect.low),
        "high": float(effect.high),
        "level": float(effect.level),
    }


def _effect_from_dict(data: dict[str, Any]) -> dict[str, Any] | None:
    """The effect size of a result as the fields of an Effect (which the result builds and
    checks); None in files written before it existed."""
    value = data.get("effect")
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError("effect must be a JSON object or null")
    return {
        "kernel": kernel_from_spec(value.get("kernel")),
        **{name: get_field(value, name, (int, float)) for name in ("mmd", "low", "high", "level")},
    }


def _optional(result: Any) -> dict[str, Any]:
    """The fields later versions added, written only when they differ from what a file
    without them means (so a result saved before them saves again to the same bytes)."""
    out: dict[str, Any] = {}
    if float(result.alpha) != 0.05:
        out["alpha"] = float(result.alpha)
    if result.effect is not None:
        out["effect"] = _effect_to_dict(result.effect)
    return out


def _common(data: dict[str, Any]) -> dict[str, Any]:
    """The fields both results have since format 1 added them (defaults for older files)."""
    return {
        "alpha": get_field(data, "alpha", (int, float)) if "alpha" in data else 0.05,
        "effect": _effect_from_dict(data),
    }


def _aggregated_to_dict(result: Any) -> dict[str, Any]:
    out = preamble("AggregatedTestResult")
    out.update(
        statistic=float(result.statistic),
        pvalue=float(result.pvalue),
        null_distribution=_floats(result.null_distribution),
        method=str(result.method),
        aggregation=str(result.aggregation),
        kernels=[kernel_spec(k) for k in result.kernels],
        kernel_statistics=_floats(result.kernel_statistics),
        kernel_scores=_floats(result.kernel_scores),
        kernel_pvalues=_floats(result.kernel_pvalues),
        n_landmarks=None if result.n_landmarks is None else int(result.n_landmarks),
        n_permutations=int(result.n_permutations),
        bin_size=int(result.bin_size),
        temperature=float(result.temperature),
        **_optional(result),
    )
    return out


def _aggregated_from_dict(data: dict[str, Any]) -> Any:
    from ..kernel_collection import KernelCollection

    _missing(data, _AGGREGATED_FIELDS)
    kernels = KernelCollection([kernel_from_spec(k) for k in get_field(data, "kernels", list)])
    return registered_class("AggregatedTestResult")(
        statistic=get_field(data, "statistic", (int, float)),
        pvalue=get_field(data, "pvalue", (int, float)),
        null_distribution=_list(data, "null_distribution"),
        method=get_field(data, "method", str),
        aggregation=get_field(data, "aggregation", str),
        kernels=kernels,
        kernel_statistics=_list(data, "kernel_statistics"),
        kernel_scores=_list(data, "kernel_scores"),
        kernel_pvalues=_list(data, "kernel_pvalues"),
        n_landmarks=get_field(data, "n_landmarks", (int, type(None))),
        n_permutations=get_field(data, "n_permutations", int),
        bin_size=get_field(data, "bin_size", int),
        temperature=get_field(data, "temperature", (int, float)),
        **_common(data),
    )


def result_to_dict(result: object) -> dict[str, Any]:
    """A :class:`~nystrom_kme.TwoSampleResult` or :class:`~nystrom_kme.AggregatedTestResult`
    as a JSON-ready dict (with the preamble)."""
    name = registered_name(result)
    fields: Any = result  # a registered result class, which this package does not import
    if name == "AggregatedTestResult":
        return _aggregated_to_dict(fields)
    out = preamble("TwoSampleResult")
    out.update(
        statistic=float(fields.statistic),
        pvalue=float(fields.pvalue),
        null_distribution=[float(v) for v in np.asarray(fields.null_distribution)],
        method=str(fields.method),
        kernel=kernel_spec(fields.kernel),
        n_landmarks=None if fields.n_landmarks is None else int(fields.n_landmarks),
        n_permutations=int(fields.n_permutations),
        **_optional(fields),
    )
    return out


def result_from_dict(data: object) -> Any:
    """The two-sample result of :func:`result_to_dict`'s output."""
    try:
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        if data.get("object") == "AggregatedTestResult":
            check_preamble(data, "AggregatedTestResult")
            return _aggregated_from_dict(data)
        check_preamble(data, "TwoSampleResult")
        _missing(data, _RESULT_FIELDS)
        return registered_class("TwoSampleResult")(
            statistic=get_field(data, "statistic", (int, float)),
            pvalue=get_field(data, "pvalue", (int, float)),
            null_distribution=_list(data, "null_distribution"),
            method=get_field(data, "method", str),
            kernel=kernel_from_spec(data["kernel"]),
            n_landmarks=get_field(data, "n_landmarks", (int, type(None))),
            n_permutations=get_field(data, "n_permutations", int),
            **_common(data),
        )
    except FileFormatError:
        raise
    except (ValueError, TypeError, OverflowError, RecursionError) as err:
        # huge integers (OverflowError as floats) and deep nesting are not results either
        raise FileFormatError(f"not a valid two-sample result: {short_repr(str(err), 300)}") from None


def result_to_json(result: object, *, indent: int | None = None) -> str:
    """The JSON text of a two-sample result (floats exact).

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
