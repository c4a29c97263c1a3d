"""The fields the saved detectors and tests share (their constructor arguments, the
scaling of ``standardize=``): written and read here, one floor below :mod:`.codecs`, so
that every codec takes them from one place."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from .._validation import n_threads_arg
from .fields import FileFormatError, get_field, vector_member
from .specs import kernel_from_spec, kernel_spec, params_from_spec, policy_spec

#: (header fields, array members) of an object.
Arrays = dict[str, np.ndarray]


def kernel_param(value: Any) -> Any:
    """A detector's ``kernel`` argument as JSON: a name, a kernel spec, or a list of them
    (a list: the grid a collection of it has by default)."""
    from ..kernel_collection import GRIDS, N_BANDWIDTHS

    if isinstance(value, str):
        return {"name": value}
    if isinstance(value, (list, tuple)) or hasattr(value, "families"):
        items = value.families if hasattr(value, "families") else value
        return {
            "collection": [{"name": k} if isinstance(k, str) else kernel_spec(k) for k in items],
            "n_bandwidths": int(getattr(value, "n_bandwidths", N_BANDWIDTHS)),
            "grid": str(getattr(value, "grid", GRIDS[0])),
        }
    return kernel_spec(value)


def kernel_from_param(spec: object) -> Any:
    from ..kernel_collection import KernelCollection

    if isinstance(spec, dict) and set(spec) == {"name"} and isinstance(spec["name"], str):
        return spec["name"]
    if isinstance(spec, dict) and "collection" in spec:
        items = [
            k["name"] if isinstance(k, dict) and set(k) == {"name"} else kernel_from_spec(k)
            for k in get_field(spec, "collection", list)
        ]
        return KernelCollection(
            items, n_bandwidths=get_field(spec, "n_bandwidths", int), grid=get_field(spec, "grid", str)
        )
    return kernel_from_spec(spec)


def detector_params(det: Any, arrays: Arrays, *, always_standardize: bool) -> dict[str, Any]:
    """A detector's constructor arguments as JSON: the kernel as :func:`kernel_param`,
    ``n_landmarks`` an integer, "auto", the fields of an AutoLandmarks or null, the sampler
    as a name or policy spec; the sampler only when set, and ``standardize`` only when set
    unless ``always_standardize`` (the batch detector's files have always held it), so
    that files of detectors without them are written as before they existed."""
    params = {**det.get_params(), "kernel": kernel_param(det.kernel)}
    m = params["n_landmarks"]
    if dataclasses.is_dataclass(m) and not isinstance(m, type):  # an AutoLandmarks
        params["n_landmarks"] = {"auto": dataclasses.asdict(m)}
    sampler = params.pop("sampler", None)
    if sampler is not None:
        params["sampler"] = {"name": sampler} if isinstance(sampler, str) else policy_spec(sampler, arrays)
    if not always_standardize and params.get("standardize") is False:
        del params["standardize"]
    return params


def detector_args(p: dict[str, Any], arrays: Arrays) -> dict[str, Any]:
    """The shared arguments of :func:`detector_params`' output, with their types."""
    from ..landmark_search import AutoLandmarks

    m = get_field(p, "n_landmarks", (int, str, dict, type(None)))
    sampler = p.get("sampler")
    return {
        "kernel": kernel_from_param(get_field(p, "kernel", dict)),
        "n_landmarks": AutoLandmarks(**get_field(m, "auto", dict)) if isinstance(m, dict) else m,
        "sampler": None if sampler is None else params_from_spec({"sampler": sampler}, arrays)["sampler"],
        "n_threads": threads_field(p),
        "standardize": get_field(p, "standardize", (bool, str)) if "standardize" in p else False,
    }


def threads_field(params: dict[str, Any]) -> int | None:
    value = get_field(params, "n_threads", (int, type(None)))
    n_threads_arg(value)  # checked: None or a positive int
    return value


def optional_count(params: dict[str, Any], key: str) -> int | None:
    value = get_field(params, key, (int, type(None)))
    if value is not None and value < 1:
        raise FileFormatError(f"{key}={value}: expected a positive integer or null")
    return value


def keep_scaling(st: dict[str, Any], state: dict[str, Any], arrays: Arrays) -> None:
    """A model's scaling of ``standardize=`` (``scaling_state``'s fields of its ``_state()``):
    ``scaling_kind`` in the header, ``scaling_center`` and ``scaling_scale`` (d,) members;
    nothing without one, so files without a scaling are written as before it existed."""
    if st.get("scaling_kind") is not None:
        state["scaling_kind"] = str(st["scaling_kind"])
        arrays.update(scaling_center=st["scaling_center"], scaling_scale=st["scaling_scale"])


def scaling_members(state: dict[str, Any], arrays: Arrays, d: int) -> dict[str, Any]:
    """A model's saved scaling (standardize=): its kind, and d centres and scales (their
    values checked by the model's ``_from_state``: ``Scaling.check``)."""
    if "scaling_kind" not in state:
        if {"scaling_center", "scaling_scale"} & set(arrays):  # not dropped without a word
            raise FileFormatError("scaling_center and scaling_scale without a scaling_kind")
        return {}
    return {
        "scaling_kind": get_field(state, "scaling_kind", str),
        "scaling_center": vector_member(arrays, "scaling_center", np.float64, d),
        "scaling_scale": vector_member(arrays, "scaling_scale", np.float64, d),
    }


def finite_field(state: dict[str, Any], key: str) -> float:
    value = float(get_field(state, key, (int, float)))
    if not math.isfinite(value):
        raise FileFormatError(f"{key}={value!r}: expected a finite number")
    return value


__all__ = [
    "Arrays",
    "detector_args",
    "detector_params",
    "finite_field",
    "keep_scaling",
    "kernel_from_param",
    "kernel_param",
    "optional_count",
    "scaling_members",
    "threads_field",
]
