"""The codecs of the sequential tests (issue 45): :class:`~nystrom_kme.SequentialDriftTest`
(its constructor arguments, the reference's landmarks, sums and paired pool, the bettors'
state) and :class:`~nystrom_kme.SequentialTwoSampleTest` (its arguments, the seed of its
burn-in, the rows waiting for a partner, and after the burn-in its kernels, landmarks,
scaling and bettors). Fields are read here with their types and shapes; how they agree
with each other is the tests' own to check, in ``_from_state``. :mod:`.codecs` registers
them in ``CODECS``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .container import Layout
from .detector_fields import (
    Arrays,
    detector_args,
    detector_params,
    finite_field,
    keep_scaling,
    kernel_from_param,
    kernel_param,
    scaling_members,
    threads_field,
)
from .fields import count_field, get_field, matrix_member, member, names_field, vector_member
from .specs import kernel_from_spec, kernel_spec

_F8 = (np.dtype("f8"),)
#: The bettors' arrays (the core's betting state; sequential/_betting.py) and numbers.
_BETTING_ARRAYS = ("sums_x", "sums_y", "witness", "offset", "bettors")
_BETTING_NUMBERS = {"count_x": float, "count_y": float, "t": int, "next_refresh": int}
#: The members both tests share: the bettors' state and a scaling.
_BETTING_LAYOUT: Layout = {
    "sums_x": (_F8, (("k", "m"),)),
    "sums_y": (_F8, (("k", "m"),)),
    "witness": (_F8, (("k", "m"),)),
    "offset": (_F8, (("k",),)),
    "bettors": (_F8, (("k", "b"),)),
    "scaling_center": (_F8, (("d",),)),
    "scaling_scale": (_F8, (("d",),)),
}
DRIFT_TEST_LAYOUT: Layout = {
    "landmarks": (_F8, (("m", "d"),)),
    "sums": (_F8, (("k", "m"),)),
    "pool": (_F8, (("h", "d"),)),
    **_BETTING_LAYOUT,
}
TWO_SAMPLE_TEST_LAYOUT: Layout = {
    "landmarks": (_F8, (("m", "d"),)),
    "queue_x": (_F8, (("qx", "w"),)),
    "queue_y": (_F8, (("qy", "w"),)),
    **_BETTING_LAYOUT,
}


def _betting_fields(betting: dict[str, Any], arrays: Arrays) -> dict[str, Any]:
    """The bettors' numbers for the header; their arrays go to ``arrays``."""
    arrays.update({name: np.ascontiguousarray(betting[name]) for name in _BETTING_ARRAYS})
    return {key: kind(betting[key]) for key, kind in _BETTING_NUMBERS.items()}


def _betting_state(state: dict[str, Any], arrays: Arrays) -> dict[str, Any]:
    betting: dict[str, Any] = {key: get_field(state, key, kind) for key, kind in _BETTING_NUMBERS.items()}
    betting["offset"] = vector_member(arrays, "offset", np.float64)
    betting.update({name: matrix_member(arrays, name) for name in _BETTING_ARRAYS if name != "offset"})
    return betting


def _decision(state: dict[str, Any]) -> dict[str, Any]:
    return {
        "log_wealth": finite_field(state, "log_wealth"),
        "rejection_time": get_field(state, "rejection_time", (int, type(None))),
        "rejecting": get_field(state, "rejecting", (int, type(None))),
    }


def encode_drift_test(test: Any) -> tuple[dict[str, Any], Arrays]:
    st = test._state()
    arrays = {name: np.ascontiguousarray(st[name]) for name in ("landmarks", "sums", "pool")}
    state = {
        "kernels": [kernel_spec(k) for k in st["kernels"]],
        "n_rest": int(st["n_rest"]),
        "paired": int(st["paired"]),
        "log_wealth": float(st["log_wealth"]),
        "rejection_time": st["rejection_time"],
        "rejecting": st["rejecting"],
        **_betting_fields(st["betting"], arrays),
        "n_features_in": int(st["n_features_in"]),
        "n_reference": int(st["n_reference"]),
    }
    params = detector_params(test, arrays, always_standardize=False)
    keep_scaling(st, state, arrays)
    if st.get("feature_names") is not None:
        state["feature_names_in"] = [str(n) for n in st["feature_names"]]
    return {"params": params, "state": state}, arrays


def decode_drift_test(cls: type[Any], header: dict[str, Any], arrays: Arrays) -> object:
    """The test of the file's fields (``SequentialDriftTest._from_state`` checks them
    against each other)."""
    state, p = header["state"], header["params"]
    args = detector_args(p, arrays)
    params = {
        **{key: args[key] for key in ("kernel", "n_landmarks", "n_threads", "standardize")},
        "alpha": get_field(p, "alpha", float),
        "n_holdout": get_field(p, "n_holdout", (int, type(None))),
        "delta": get_field(p, "delta", (int, float, type(None))),
        "betting": get_field(p, "betting", str),
        "refresh": get_field(p, "refresh", int),
    }
    d = count_field(state, "n_features_in")
    return cls._from_state(
        params,
        {
            "kernels": [kernel_from_spec(k) for k in get_field(state, "kernels", list)],
            "landmarks": np.ascontiguousarray(matrix_member(arrays, "landmarks"), dtype=np.float64),
            "sums": matrix_member(arrays, "sums"),
            "n_rest": count_field(state, "n_rest"),
            "pool": np.ascontiguousarray(member(arrays, "pool"), dtype=np.float64),
            "paired": get_field(state, "paired", int),
            "betting": _betting_state(state, arrays),
            **_decision(state),
            "n_features_in": d,
            "n_reference": count_field(state, "n_reference"),
            "feature_names": names_field(state, d),
            **scaling_members(state, arrays, d),
        },
    )


def encode_two_sample_test(test: Any) -> tuple[dict[str, Any], Arrays]:
    st = test._state()
    params = {**test.get_params(), "kernel": kernel_param(test.kernel)}
    if params["standardize"] is False:
        del params["standardize"]
    arrays: Arrays = {name: np.ascontiguousarray(st[name], dtype=np.float64) for name in ("queue_x", "queue_y")}
    state: dict[str, Any] = {
        "seed": int(st["seed"]),
        "n_features_in": st["n_features_in"],
        "started": bool(st["started"]),
        "pairs": int(st["pairs"]),
        "log_wealth": float(st["log_wealth"]),
        "rejection_time": st["rejection_time"],
        "rejecting": st["rejecting"],
    }
    if st["feature_names"] is not None:
        state["feature_names_in"] = [str(n) for n in st["feature_names"]]
    if st["started"]:
        state["kernels"] = [kernel_spec(k) for k in st["kernels"]]
        arrays["landmarks"] = np.ascontiguousarray(st["landmarks"])
        state.update(_betting_fields(st["betting"], arrays))
        keep_scaling(st, state, arrays)
    return {"params": params, "state": state}, arrays


def decode_two_sample_test(cls: type[Any], header: dict[str, Any], arrays: Arrays) -> object:
    """The test of the file's fields (``SequentialTwoSampleTest._from_state`` checks them
    against each other)."""
    state, p = header["state"], header["params"]
    m = get_field(p, "n_landmarks", (int, type(None)))
    params = {
        "alpha": get_field(p, "alpha", float),
        "kernel": kernel_from_param(get_field(p, "kernel", dict)),
        "n_landmarks": m,
        "burn_in": get_field(p, "burn_in", int),
        "betting": get_field(p, "betting", str),
        "refresh": get_field(p, "refresh", int),
        "standardize": get_field(p, "standardize", (bool, str)) if "standardize" in p else False,
        "n_threads": threads_field(p),
    }
    d = get_field(state, "n_features_in", (int, type(None)))
    started = get_field(state, "started", bool)
    fields: dict[str, Any] = {
        "seed": get_field(state, "seed", int),
        "n_features_in": d,
        "feature_names": None if d is None else names_field(state, d),
        "queue_x": member(arrays, "queue_x"),
        "queue_y": member(arrays, "queue_y"),
        "started": started,
        "pairs": get_field(state, "pairs", int),
        **_decision(state),
    }
    if started and d is not None:
        fields["kernels"] = [kernel_from_spec(k) for k in get_field(state, "kernels", list)]
        fields["landmarks"] = np.ascontiguousarray(matrix_member(arrays, "landmarks"), dtype=np.float64)
        fields["betting"] = _betting_state(state, arrays)
        fields.update(scaling_members(state, arrays, d))
    return cls._from_state(params, fields)


__all__ = [
    "DRIFT_TEST_LAYOUT",
    "TWO_SAMPLE_TEST_LAYOUT",
    "decode_drift_test",
    "decode_two_sample_test",
    "encode_drift_test",
    "encode_two_sample_test",
]
