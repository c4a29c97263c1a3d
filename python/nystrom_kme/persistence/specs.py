"""The JSON specs of what a constructor takes: kernels, sampling policies and estimator
parameters, to JSON (with the arrays they need as members) and back."""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

from .._estimator import ParamsMixin
from ..kernels import KERNEL_CLASSES, Kernel
from ..sampling import POLICY_CLASSES, FixedLandmarks, SamplingPolicy
from .fields import FileFormatError, get_field, indices_member, member

_KERNELS: dict[str, type[Kernel]] = {cls.__name__: cls for cls in KERNEL_CLASSES}
_POLICIES: dict[str, type[SamplingPolicy]] = {cls.__name__: cls for cls in POLICY_CLASSES}


# --------------------------------------------------------------------------- #
# kernels
# --------------------------------------------------------------------------- #
def kernel_spec(kernel: Kernel) -> dict[str, Any]:
    """A kernel as JSON: ``{"type": class name, "bandwidth": float or "median", ...}``.

    Examples
    --------
    >>> import nystrom_kme as nk
    >>> from nystrom_kme.persistence import kernel_from_spec, kernel_spec
    >>> kernel_spec(nk.Matern(0.5, nu=1.5))
    {'type': 'Matern', 'bandwidth': 0.5, 'nu': 1.5}
    >>> kernel_from_spec(kernel_spec(nk.Matern(0.5, nu=1.5)))
    Matern(bandwidth=0.5, nu=1.5)
    """
    name = type(kernel).__name__
    if _KERNELS.get(name) is not type(kernel):
        raise ValueError(
            f"cannot save a kernel of type {type(kernel).__qualname__}: only {sorted(_KERNELS)} are stored"
        )
    return {"type": name, "bandwidth": kernel.bandwidth, **kernel.params}


def kernel_from_spec(spec: object) -> Kernel:
    """The kernel described by :func:`kernel_spec`'s output (validated by its constructor)."""
    if not isinstance(spec, dict) or spec.get("type") not in _KERNELS:
        raise ValueError(f"not a kernel spec: {spec!r}")
    params = {k: v for k, v in spec.items() if k != "type"}
    return _KERNELS[spec["type"]](**params)


def resolved_kernel(state: dict[str, Any]) -> Kernel:
    """The fitted kernel of ``state["kernel"]``: a kernel spec with a numeric bandwidth."""
    kernel = kernel_from_spec(get_field(state, "kernel", dict))
    if not kernel.is_resolved:
        raise FileFormatError("the fitted kernel has no numeric bandwidth")
    return kernel


# --------------------------------------------------------------------------- #
# sampling policies
# --------------------------------------------------------------------------- #
def policy_spec(policy: object, arrays: dict[str, np.ndarray]) -> dict[str, Any] | None:
    """A sampling policy of the package as {"policy", "params"}, given indices as
    {"indices": member} (written into ``arrays``), anything else as {"unsaved": repr}."""
    if policy is None:
        return None
    if type(policy) is FixedLandmarks:
        arrays["policy_indices"] = np.asarray(policy.indices, dtype=np.int64)
        return {"indices": "policy_indices"}
    name = type(policy).__name__
    if isinstance(policy, SamplingPolicy) and _POLICIES.get(name) is type(policy):
        try:
            params = {k: _scalar(v, k) for k, v in policy.get_params(deep=False).items()}
            return {"policy": name, "params": params}
        except ValueError:
            pass
    return {"unsaved": repr(policy)[:200]}


def policy_from_spec(value: dict[str, Any] | None, arrays: dict[str, np.ndarray]) -> SamplingPolicy | None:
    """The policy of :func:`policy_spec`'s output; None for none or an unsaved one."""
    if value is None or "unsaved" in value:
        return None
    if "indices" in value:
        return FixedLandmarks(indices_member(arrays, value["indices"]))
    if value.get("policy") not in _POLICIES or not isinstance(value.get("params"), dict):
        raise ValueError(f"not a sampling policy: {value!r}")
    return _POLICIES[value["policy"]](**value["params"])


def _sampler_array(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """Given landmark indices (1-D, non-negative integers) or points (2-D, finite)."""
    a = member(arrays, "sampler_array")
    if a.ndim == 1 and a.dtype.kind in "iu" and (a.size == 0 or a.min() >= 0):
        return a
    if a.ndim == 2 and a.dtype.kind == "f" and np.isfinite(a).all():
        return a
    raise FileFormatError("the member 'sampler_array' is neither non-negative indices nor finite points")


# --------------------------------------------------------------------------- #
# estimator parameters
# --------------------------------------------------------------------------- #
def _scalar(value: Any, name: str) -> Any:
    """A JSON scalar (None, bool, int, finite float, str) or ValueError."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(value):
        return float(value)
    raise ValueError(f"cannot save parameter {name}={value!r}: not a number, string or None")


def params_spec(obj: ParamsMixin, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """An estimator's constructor arguments (``get_params``) as JSON: a kernel by name or
    spec, a Generator seed as None, a sampler by name, as an array member
    (``sampler_array``), as a policy spec; every other parameter a JSON scalar."""
    out: dict[str, Any] = {}
    for name, value in obj.get_params(deep=False).items():
        if name == "kernel":
            out[name] = {"name": value} if isinstance(value, str) else kernel_spec(value)
        elif name == "random_state":
            out[name] = (
                int(value) if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)) else None
            )
        elif name == "sampler":
            if isinstance(value, str):
                out[name] = {"name": value}
            elif isinstance(value, (np.ndarray, list, tuple)) and np.asarray(value).dtype.kind in "iuf":
                arrays["sampler_array"] = np.asarray(value)
                out[name] = {"array": "sampler_array"}
            else:
                out[name] = policy_spec(value, arrays)
        else:
            out[name] = _scalar(value, name)
    return out


def params_from_spec(params: dict[str, Any], arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    """The constructor arguments of :func:`params_spec`'s output."""
    out = dict(params)
    if "kernel" in out:
        kernel = out["kernel"]
        named = isinstance(kernel, dict) and set(kernel) == {"name"} and isinstance(kernel["name"], str)
        out["kernel"] = kernel["name"] if named else kernel_from_spec(kernel)
    sampler = out.get("sampler")
    if isinstance(sampler, dict):
        if "name" in sampler:
            out["sampler"] = sampler["name"]
        elif "array" in sampler:
            out["sampler"] = _sampler_array(arrays)
        else:
            out["sampler"] = policy_from_spec(sampler, arrays)
    return out


__all__ = [
    "kernel_from_spec",
    "kernel_spec",
    "params_from_spec",
    "params_spec",
    "policy_from_spec",
    "policy_spec",
    "resolved_kernel",
]
