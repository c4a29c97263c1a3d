"""The test results saved as JSON documents: :class:`~nystrom_kme.TwoSampleResult` and
:class:`~nystrom_kme.AggregatedTestResult`, each field written exactly (round-trip
floats) and read back through the result's own constructor, which checks it."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .container import check_preamble, preamble
from .fields import FileFormatError, get_field
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


def _float_list(data: dict[str, Any], key: str) -> np.ndarray:
    values = np.array(get_field(data, key, list), dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"{key} must be a list of numbers")
    return values


def _missing(data: dict[str, Any], fields: tuple[str, ...]) -> None:
    missing = [f for f in fields if f not in data]
    if missing:
        raise ValueError(f"missing key(s) {missing}")


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
    )
    return out


def _aggregated_from_dict(data: dict[str, Any]) -> Any:
    from ..kernel_collection import KernelCollection

    _missing(data, _AGGREGATED_FIELDS)
    kernels = KernelCollection([kernel_from_spec(k) for k in get_field(data, "kernels", list)])
    return registered_class("AggregatedTestResult")(
        statistic=float(get_field(data, "statistic", (int, float))),
        pvalue=float(get_field(data, "pvalue", (int, float))),
        null_distribution=_float_list(data, "null_distribution"),
        method=get_field(data, "method", str),
        aggregation=get_field(data, "aggregation", str),
        kernels=kernels,
        kernel_statistics=_float_list(data, "kernel_statistics"),
        kernel_scores=_float_list(data, "kernel_scores"),
        kernel_pvalues=_float_list(data, "kernel_pvalues"),
        n_landmarks=get_field(data, "n_landmarks", (int, type(None))),
        n_permutations=get_field(data, "n_permutations", int),
        bin_size=get_field(data, "bin_size", int),
        temperature=float(get_field(data, "temperature", (int, float))),
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
        null = np.array(data["null_distribution"], dtype=np.float64)
        if null.ndim != 1:
            raise ValueError("null_distribution must be a list of numbers")
        return registered_class("TwoSampleResult")(
            statistic=float(get_field(data, "statistic", (int, float))),
            pvalue=float(get_field(data, "pvalue", (int, float))),
            null_distribution=null,
            method=get_field(data, "method", str),
            kernel=kernel_from_spec(data["kernel"]),
            n_landmarks=get_field(data, "n_landmarks", (int, type(None))),
            n_permutations=get_field(data, "n_permutations", int),
        )
    except FileFormatError:
        raise
    except (ValueError, TypeError) as err:
        raise FileFormatError(f"not a valid two-sample result: {err}") from None


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
    except (ValueError, UnicodeDecodeError) as err:
        raise FileFormatError(f"not valid JSON ({err})") from None
    return result_from_dict(data)


__all__ = ["JSON_RESULTS", "result_from_dict", "result_from_json", "result_to_dict", "result_to_json"]
