"""One codec per type saved as a ``.npz`` archive: the header fields and array members of an
object, and the object of a file's, every field checked against what the type can hold.

The codecs read objects through public attributes, and the estimators' fitted state
through their ``_state()``; they build objects with public constructors, and fitted
estimators with their documented ``_from_state`` hook: each class owns its attributes,
this module the file's fields.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._scaling import scaling_from_state, scaling_state
from .._validation import check_random_state, n_threads_arg
from .container import Layout
from .detector_fields import (
    detector_args,
    detector_params,
    finite_field,
    keep_scaling,
    optional_count,
    scaling_members,
)
from .fields import (
    FileFormatError,
    check_length,
    count_field,
    get_field,
    indices_member,
    matrix_member,
    member,
    names_field,
    positive_field,
    probabilities_member,
    vector_member,
)
from .sequential_codecs import (
    DRIFT_TEST_LAYOUT,
    TWO_SAMPLE_TEST_LAYOUT,
    decode_drift_test,
    decode_two_sample_test,
    encode_drift_test,
    encode_two_sample_test,
)
from .specs import (
    kernel_from_spec,
    kernel_spec,
    params_from_spec,
    params_spec,
    policy_from_spec,
    policy_spec,
    resolved_kernel,
)

#: (header fields, array members) of an object: what ``encode`` returns, ``decode`` takes.
Arrays = dict[str, np.ndarray]

#: The solvers the core reports having used (``solver_``; "auto" resolves to one of them).
_USED_SOLVERS = ("cholesky", "cod")
#: The weights of a compression (``CompressionResult.method`` is "<sampler>/<weights>").
_COMPRESSION_WEIGHTS = ("simplex", "signed", "uniform")
_FLOATS = (np.dtype("f4"), np.dtype("f8"))
_F8, _I8 = (np.dtype("f8"),), (np.dtype("i8"),)


@dataclasses.dataclass(frozen=True)
class Codec:
    """How one type is saved: ``encode(obj) -> (fields, arrays)``,
    ``decode(cls, header, arrays) -> obj`` and the layout of its array members."""

    # Any: the objects are of the registered classes, which this package does not import
    encode: Callable[[Any], tuple[dict[str, Any], Arrays]]
    decode: Callable[[type[Any], dict[str, Any], Arrays], object]
    layout: Layout


def _shared_params(params: dict[str, Any], arrays: Arrays) -> dict[str, Any]:
    """The constructor arguments of a saved estimator, with the ones every estimator
    shares (random_state, n_threads) checked."""
    params = params_from_spec(params, arrays)
    check_random_state(params.get("random_state"))
    n_threads_arg(params.get("n_threads"))
    return params


def keep_names(state: dict[str, Any], names: Any) -> dict[str, Any]:
    """``state`` with the fitted column names (``feature_names_in``: a list of str) when
    there are any; without the key otherwise, so that a file of an object fitted without
    names is written byte for byte as before names were kept."""
    if names is not None:
        state["feature_names_in"] = [str(n) for n in names]
    return state


def _features(state: dict[str, Any], support: np.ndarray) -> int:
    d = get_field(state, "n_features_in", int)
    if d != support.shape[1]:
        raise FileFormatError(f"n_features_in={d} but the support has {support.shape[1]} columns")
    return d


# --------------------------------------------------------------------------- #
# NystromKME
# --------------------------------------------------------------------------- #
def _encode_nystrom(est: Any) -> tuple[dict[str, Any], Arrays]:
    st = est._state()  # one fit's state, read at once (NotFittedError before a fit)
    arrays: Arrays = {
        "landmarks": st["landmarks"],
        "weights": st["weights"],
        "s_sum": st["s_sum"],
        "s_comp": st["s_comp"],
    }
    if st["landmark_indices"] is not None:
        arrays["landmark_indices"] = np.asarray(st["landmark_indices"], dtype=np.int64)
    params = params_spec(est, arrays)
    if params.get("standardize") is False:  # the default: files are written as before it existed
        del params["standardize"]
    state = {
        "kernel": kernel_spec(st["kernel"]),
        "n_samples": int(st["n_samples"]),
        "n_features_in": int(st["landmarks"].shape[1]),
        "solver": str(st["solver"]),
        "rank": int(st["rank"]),
        "weight_sum": float(st["weight_sum"]),
        "sampler": policy_spec(st["sampler"], arrays),
    }
    keep_scaling(st, state, arrays)
    return {"params": params, "state": keep_names(state, st.get("feature_names"))}, arrays


def _decode_nystrom(cls: type[Any], header: dict[str, Any], arrays: Arrays) -> object:
    """The estimator, every field checked against what a fit can produce."""
    state = header["state"]
    params = _shared_params(header["params"], arrays)
    n_landmarks = params.get("n_landmarks")
    if not (
        n_landmarks is None
        or n_landmarks in ("auto", "bound")
        or (isinstance(n_landmarks, int) and not isinstance(n_landmarks, bool) and n_landmarks >= 1)
    ):
        raise ValueError(f"n_landmarks must be a positive integer, 'auto', 'bound' or None, got {n_landmarks!r}")
    L = matrix_member(arrays, "landmarks")
    m = L.shape[0]
    weights = vector_member(arrays, "weights", np.float64, m)
    s_sum = vector_member(arrays, "s_sum", np.float64, m)
    s_comp = vector_member(arrays, "s_comp", np.float64, m)
    with np.errstate(over="ignore"):
        if not np.isfinite(s_sum + s_comp).all():  # the estimator's s_sum_
            raise FileFormatError("s_sum + s_comp overflows")
    n = count_field(state, "n_samples")
    indices = arrays.get("landmark_indices")
    if indices is not None:
        indices = indices_member(arrays, "landmark_indices", m, n, "n_samples")
    solver = get_field(state, "solver", str)
    if solver not in _USED_SOLVERS:
        raise FileFormatError(f"solver={solver!r}: the core's solvers are {', '.join(_USED_SOLVERS)}")
    rank = get_field(state, "rank", int)
    if not 0 <= rank <= m:
        raise FileFormatError(f"rank={rank} is not in [0, m] with m = {m} landmarks")
    kernel = resolved_kernel(state)
    sampler = policy_from_spec(get_field(state, "sampler", (dict, type(None))), arrays)
    d = _features(state, L)
    return cls._from_state(
        params,
        {
            "kernel": kernel,
            "landmark_indices": indices,
            "sampler": sampler,
            "landmarks": L,
            "weights": weights,
            "n_samples": n,
            "solver": solver,
            "rank": rank,
            "s_sum": s_sum,
            "s_comp": s_comp,
            "weight_sum": positive_field(state, "weight_sum"),
            "feature_names": names_field(state, L.shape[1]),
            **scaling_members(state, arrays, d),
        },
    )


# --------------------------------------------------------------------------- #
# EmpiricalKME
# --------------------------------------------------------------------------- #
def _encode_empirical(est: Any) -> tuple[dict[str, Any], Arrays]:
    st = est._state()
    arrays: Arrays = {"support": st["support"], "weights": st["weights"]}
    state = {
        "kernel": kernel_spec(st["kernel"]),
        "n_samples": int(st["n_samples"]),
        "n_features_in": int(st["support"].shape[1]),
    }
    return {"params": params_spec(est, arrays), "state": keep_names(state, st.get("feature_names"))}, arrays


def _decode_empirical(cls: type[Any], header: dict[str, Any], arrays: Arrays) -> object:
    """The estimator, every field checked against what a fit can produce."""
    state = header["state"]
    params = _shared_params(header["params"], arrays)
    Z = matrix_member(arrays, "support")
    n = count_field(state, "n_samples")
    if n != Z.shape[0]:
        raise FileFormatError(f"n_samples={n} but the support has {Z.shape[0]} rows")
    w = probabilities_member(arrays, "weights", n)
    kernel = resolved_kernel(state)
    _features(state, Z)
    names = names_field(state, Z.shape[1])
    return cls._from_state(
        params, {"kernel": kernel, "support": Z, "weights": w, "n_samples": n, "feature_names": names}
    )


# --------------------------------------------------------------------------- #
# QuadratureRule, CompressionResult: public constructors
# --------------------------------------------------------------------------- #
def _encode_rule(rule: Any) -> tuple[dict[str, Any], Arrays]:
    state = {"kernel": None if rule.kernel is None else kernel_spec(rule.kernel)}
    return {"params": {}, "state": state}, {"nodes": rule.nodes, "weights": rule.weights}


def _decode_rule(cls: type[Any], header: dict[str, Any], arrays: Arrays) -> object:
    spec = get_field(header["state"], "kernel", (dict, type(None)))
    nodes, w = matrix_member(arrays, "nodes"), vector_member(arrays, "weights", np.float64)
    check_length(w, nodes.shape[0], "weights")
    return cls(nodes, w, None if spec is None else kernel_from_spec(spec))


def _encode_compression(res: Any) -> tuple[dict[str, Any], Arrays]:
    state: dict[str, Any] = {
        "kernel": kernel_spec(res.kernel),
        "mmd": None if res.mmd is None else float(res.mmd),
        "method": str(res.method),
        "ridge": float(res.ridge),
    }
    if res.mmd_interval is not None:  # an estimated MMD (absent for exact ones: files as before)
        state["mmd_interval"] = [float(v) for v in res.mmd_interval]
    arrays = {"points": res.points, "weights": res.weights, "indices": np.asarray(res.indices, dtype=np.int64)}
    keep_scaling(scaling_state(res.scaling), state, arrays)
    return {"params": {}, "state": state}, arrays


def _decode_compression(cls: type[Any], header: dict[str, Any], arrays: Arrays) -> object:
    """The result, every field checked against what :func:`~nystrom_kme.compress` returns."""
    state = header["state"]
    points = matrix_member(arrays, "points")
    m = points.shape[0]
    method = get_field(state, "method", str)
    sampler, _, weights = method.rpartition("/")
    if not sampler or weights not in _COMPRESSION_WEIGHTS:
        raise FileFormatError(
            f"method={method!r} is not '<sampler>/<weights>' with weights one of {', '.join(_COMPRESSION_WEIGHTS)}"
        )
    w = (
        vector_member(arrays, "weights", np.float64, m)
        if weights == "signed"
        else probabilities_member(arrays, "weights", m)
    )
    mmd = get_field(state, "mmd", (int, float, type(None)))
    if mmd is not None and not (math.isfinite(mmd) and mmd >= 0):
        raise FileFormatError(f"mmd={mmd!r} is not a non-negative number")
    ridge = get_field(state, "ridge", (int, float))
    if not (math.isfinite(ridge) and ridge >= 0) or (ridge and weights != "signed"):
        raise FileFormatError(f"ridge={ridge!r}: a non-negative number, 0 unless the weights are signed")
    kernel = resolved_kernel(state)
    interval: tuple[float, float] | None = None
    if "mmd_interval" in state:
        pair = get_field(state, "mmd_interval", list)
        if not (
            mmd is not None
            and len(pair) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in pair)
            and 0 <= pair[0] <= mmd <= pair[1]
        ):
            raise FileFormatError(f"mmd_interval={pair!r}: expected [low, high] with 0 <= low <= mmd <= high")
        interval = (float(pair[0]), float(pair[1]))
    scaling = scaling_from_state(scaling_members(state, arrays, points.shape[1]))
    if scaling is not None:
        try:
            scaling.check(points.shape[1])
        except ValueError as err:
            raise FileFormatError(str(err)) from None
    return cls(
        points=points,
        weights=w,
        indices=indices_member(arrays, "indices", m),
        mmd=mmd,
        kernel=kernel,
        method=method,
        ridge=float(ridge),
        mmd_interval=interval,
        scaling=scaling,
    )


# --------------------------------------------------------------------------- #
# DriftDetector, OnlineDriftDetector: constructor arguments, then _from_state
# --------------------------------------------------------------------------- #
# This module reads and writes the detectors' fields with their types and array shapes;
# how the fields must agree with each other (the rule with the kernels, the sizes, the
# reference's sums, the scaling with ``standardize``, the threshold with its curve) is
# the detectors' own to check, once, in ``_from_state`` (drift/batch.py, drift/online.py).
def _encode_drift(det: Any) -> tuple[dict[str, Any], Arrays]:
    st = det._state()
    state = {
        "kernels": [kernel_spec(k) for k in st["kernels"]],
        "rule": st["rule"],
        "seed": int(st["seed"]),
        "calls": int(st["calls"]),
        "n_rest": int(st["n_rest"]),
        "n_features_in": int(st["n_features_in"]),
        "n_reference": int(st["n_reference"]),
    }
    arrays = {name: st[name] for name in ("holdout", "landmarks", "sums", "mean_sq")}
    params = detector_params(det, arrays, always_standardize=True)
    keep_scaling(st, state, arrays)  # the reference's
    return {"params": params, "state": keep_names(state, st.get("feature_names"))}, arrays


def _decode_drift(cls: type[Any], header: dict[str, Any], arrays: Arrays) -> object:
    """The detector of the file's fields, read with their types here and checked against
    each other by the detector (``DriftDetector._from_state``)."""
    state, p = header["state"], header["params"]
    params = {
        **detector_args(p, arrays),
        "aggregation": get_field(p, "aggregation", (str, type(None))),
        "n_permutations": get_field(p, "n_permutations", int),
        "n_holdout": get_field(p, "n_holdout", int),
        "alpha": get_field(p, "alpha", float),
        "statistic": get_field(p, "statistic", str) if "statistic" in p else "nystrom-mmd",
    }
    d = get_field(state, "n_features_in", int)
    return cls._from_state(
        params,
        {
            "kernels": [kernel_from_spec(k) for k in get_field(state, "kernels", list)],
            "rule": get_field(state, "rule", (str, type(None))),
            "holdout": np.ascontiguousarray(matrix_member(arrays, "holdout"), dtype=np.float64),
            "landmarks": np.ascontiguousarray(matrix_member(arrays, "landmarks"), dtype=np.float64),
            "sums": matrix_member(arrays, "sums"),
            "n_rest": get_field(state, "n_rest", int),
            "mean_sq": vector_member(arrays, "mean_sq", np.float64),
            "seed": get_field(state, "seed", int),
            "calls": get_field(state, "calls", int),
            "n_features_in": d,
            "n_reference": get_field(state, "n_reference", int),
            "feature_names": names_field(state, d),
            **scaling_members(state, arrays, d),
        },
    )


def _encode_online(det: Any) -> tuple[dict[str, Any], Arrays]:
    st = det._state()
    state = {
        "kernel": kernel_spec(st["kernel"]),
        "norm2": float(st["norm2"]),
        "threshold": float(st["threshold"]),
        "simulated_rows": int(st["simulated_rows"]),
        "center": float(st["center"]),
        "scale": float(st["scale"]),
        "extrapolated": bool(st["extrapolated"]),
        "t": int(st["t"]),
        "n_features_in": int(st["n_features_in"]),
        "n_reference": int(st["n_reference"]),
    }
    members = ("landmarks", "weights", "levels", "alarms", "rows", "f", "g")
    arrays = {name: np.ascontiguousarray(st[name]) for name in members}
    params = detector_params(det, arrays, always_standardize=False)
    keep_scaling(st, state, arrays)
    return {"params": params, "state": keep_names(state, st.get("feature_names"))}, arrays


def _decode_online(cls: type[Any], header: dict[str, Any], arrays: Arrays) -> object:
    """The detector of the file's fields, read with their types here and checked against
    each other by the detector (``OnlineDriftDetector._from_state``: the ring against the
    landmarks and t, the run-length curve and the threshold against ert)."""
    state, p = header["state"], header["params"]
    params = {
        **detector_args(p, arrays),
        "ert": positive_field(p, "ert"),
        "window_size": count_field(p, "window_size"),
        "n_bootstraps": optional_count(p, "n_bootstraps"),
        "n_holdout": optional_count(p, "n_holdout"),
    }
    d = count_field(state, "n_features_in")
    return cls._from_state(
        params,
        {
            "kernel": resolved_kernel(state),
            "landmarks": np.ascontiguousarray(matrix_member(arrays, "landmarks"), dtype=np.float64),
            "weights": vector_member(arrays, "weights", np.float64),
            "norm2": finite_field(state, "norm2"),
            "threshold": finite_field(state, "threshold"),
            "levels": vector_member(arrays, "levels", np.float64),
            "alarms": vector_member(arrays, "alarms", np.int64),
            "simulated_rows": count_field(state, "simulated_rows"),
            "center": finite_field(state, "center"),
            "scale": finite_field(state, "scale"),
            "extrapolated": get_field(state, "extrapolated", bool),
            "t": get_field(state, "t", int),
            "rows": np.ascontiguousarray(member(arrays, "rows"), dtype=np.float64),
            "f": vector_member(arrays, "f", np.float64),
            "g": vector_member(arrays, "g", np.float64),
            "n_features_in": d,
            "n_reference": count_field(state, "n_reference"),
            "feature_names": names_field(state, d),
            **scaling_members(state, arrays, d),
        },
    )


#: The codec of each type saved as an archive, by class name.
CODECS: dict[str, Codec] = {
    "NystromKME": Codec(
        _encode_nystrom,
        _decode_nystrom,
        {
            "landmarks": (_FLOATS, (("m", "d"),)),
            "weights": (_F8, (("m",),)),
            "s_sum": (_F8, (("m",),)),
            "s_comp": (_F8, (("m",),)),
            "landmark_indices": (_I8, (("m",),)),
            "policy_indices": (_I8, (("k",),)),
            "sampler_array": (None, (("j",), ("j", "e"))),
            "scaling_center": (_F8, (("d",),)),
            "scaling_scale": (_F8, (("d",),)),
        },
    ),
    "EmpiricalKME": Codec(
        _encode_empirical, _decode_empirical, {"support": (_FLOATS, (("n", "d"),)), "weights": (_F8, (("n",),))}
    ),
    "QuadratureRule": Codec(
        _encode_rule, _decode_rule, {"nodes": (_FLOATS, (("m", "d"),)), "weights": (_F8, (("m",),))}
    ),
    "CompressionResult": Codec(
        _encode_compression,
        _decode_compression,
        {
            "points": (_FLOATS, (("m", "d"),)),
            "weights": (_F8, (("m",),)),
            "indices": (_I8, (("m",),)),
            "scaling_center": (_F8, (("d",),)),
            "scaling_scale": (_F8, (("d",),)),
        },
    ),
    "DriftDetector": Codec(
        _encode_drift,
        _decode_drift,
        {
            "holdout": (_F8, (("h", "d"),)),
            "landmarks": (_F8, (("m", "d"),)),
            "sums": (_F8, (("k", "m"),)),
            "mean_sq": (_F8, (("k",),)),
            "scaling_center": (_F8, (("d",),)),
            "scaling_scale": (_F8, (("d",),)),
            "policy_indices": (_I8, (("j",),)),
        },
    ),
    "OnlineDriftDetector": Codec(
        _encode_online,
        _decode_online,
        {
            "landmarks": (_F8, (("m", "d"),)),
            "weights": (_F8, (("m",),)),
            "levels": (_F8, (("v",),)),
            "alarms": (_I8, (("v",),)),
            "rows": (_F8, (("r", "d"),)),
            "f": (_F8, (("r",),)),
            "g": (_F8, (("r",),)),
            "scaling_center": (_F8, (("d",),)),
            "scaling_scale": (_F8, (("d",),)),
            "policy_indices": (_I8, (("j",),)),
        },
    ),
    "SequentialDriftTest": Codec(encode_drift_test, decode_drift_test, DRIFT_TEST_LAYOUT),
    "SequentialTwoSampleTest": Codec(encode_two_sample_test, decode_two_sample_test, TWO_SAMPLE_TEST_LAYOUT),
}

__all__ = ["CODECS", "Codec"]
