"""Saving and loading fitted objects without pickle: one versioned file format.

``obj.save(path)`` writes, :func:`load` reads back an object of the same type whose
evaluations are bit-identical to the saved one's. Loading never executes code:
arrays are read with ``np.load(path, allow_pickle=False)`` and everything else is
JSON. Files are portable: every array has an explicit little-endian dtype and the
JSON is ASCII.

File format, version 1
----------------------
:class:`~nystrom_kme.NystromKME`, :class:`~nystrom_kme.EmpiricalKME` and
:class:`~nystrom_kme.QuadratureRule` are NumPy ``.npz`` archives (an uncompressed
zip of ``.npy`` files). The member ``header`` is a uint8 array holding a UTF-8
(ASCII) JSON object:

* ``format``: ``"nystrom-kme"``; ``format_version``: 1; ``package_version``: the
  writer's version; ``object``: ``"NystromKME"``, ``"EmpiricalKME"`` or
  ``"QuadratureRule"``;
* ``params``: the constructor's arguments. A kernel is ``{"name": "gaussian"}`` (a
  name) or a *kernel spec* ``{"type": "Gaussian", "bandwidth": 0.7 | "median",
  ...parameters}``; a sampler is ``{"name": "rls"}``, ``{"policy": "RPCholeskySampling",
  "params": {...}}``, ``{"array": "sampler_array"}`` (given indices or points),
  ``{"indices": "policy_indices"}`` (a ``FixedLandmarks`` policy), or
  ``{"unsaved": "<repr>"}`` for a function or a foreign object (code is never stored:
  the loaded estimator gets ``sampler=None`` and needs a sampler before refitting);
  ``random_state`` is kept when it is an int or None (a Generator is stored as None);
* ``state``: the fitted scalars, e.g. for NystromKME ``kernel`` (a kernel spec with a
  numeric bandwidth), ``n_samples``, ``n_features_in``, ``solver`` (the solver used),
  ``rank``, ``weight_sum``, ``sampler`` (the policy that chose the landmarks);
* ``arrays``: for each array member, ``{"dtype": "<f8", "shape": [...], "sha256": ...}``.

Not stored: what a sampling policy computed (e.g. ``sampler_.scores_``: the loaded
``sampler_`` is a fresh policy with the same parameters) and ``n_landmarks_report_``
(None after a load).

The array members (dtypes ``<f8``, ``<f4`` for float32 data, ``<i8``):

==================  =================================================================
NystromKME          ``landmarks`` (m, d) data dtype; ``weights`` (m,) <f8;
                    ``s_sum``, ``s_comp`` (m,) <f8, the compensated sufficient
                    statistic (``s_sum_ = s_sum + s_comp``), so that ``partial_fit`` and
                    ``merge`` continue exactly; ``landmark_indices`` (m,) <i8 when known;
                    ``sampler_array`` when the sampler was given as indices or points,
                    ``policy_indices`` (<i8) for a ``FixedLandmarks`` policy
EmpiricalKME        ``support`` (n, d) data dtype; ``weights`` (n,) <f8
QuadratureRule      ``nodes`` (m, d) data dtype; ``weights`` (m,) <f8
==================  =================================================================

Floats in JSON are written with Python's shortest round-trip representation, so
they read back bit for bit. :class:`~nystrom_kme.TwoSampleResult` is a JSON
document (``.json``) with the same ``format``, ``format_version``,
``package_version`` and ``object`` keys, the fields of the result, and the kernel
as a kernel spec.

Compatibility and integrity: a reader accepts every format version up to its
own and refuses newer ones; a file that is truncated, has flipped bytes (zip CRC
and per-array SHA-256), misses a member or a key, or holds unexpected dtypes or
shapes raises :class:`FileFormatError` naming the file and the problem. So does
every field a fit could not have produced (one check per saved type: e.g.
``n_samples`` < 1, a ``weight_sum`` that is not positive and finite, a ``rank``
above m, an unknown solver, landmark indices outside [0, n_samples), a p-value
that is not the one of the saved statistic and null distribution; a
:class:`~nystrom_kme.TwoSampleResult` is checked by its own constructor).

Bounded reads: only regular files are opened (a FIFO or a device is refused, not
read). Sizes come before data: the members' dtypes and shapes are checked against
the saved type's layout, the header's manifest and the zip entries' sizes from
their ``.npy`` headers alone, members must be stored uncompressed, and each array
is read into exactly its declared size, so a load takes the memory of the arrays
the file holds (about its size; reads go through 1 MiB chunks) and a small crafted
archive cannot expand before it is refused.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
import os
from collections.abc import Callable
from typing import IO, Any

import numpy as np

from . import _core
from ._compensated import CompensatedSum
from ._files import Member, NpzArchive, atomic_write, open_regular
from ._validation import check_random_state, n_threads_arg
from .kernels import (
    Gaussian,
    InverseMultiquadric,
    Kernel,
    Laplacian,
    Linear,
    Matern,
    Polynomial,
)
from .sampling import (
    BlockRPCholeskySampling,
    CortesScottSampling,
    DPPGreedySampling,
    FixedLandmarks,
    GreedyCholeskySampling,
    KernelHerding,
    RidgeLeverageSampling,
    RPCholeskySampling,
    UniformSampling,
)

#: The format this version writes (and the newest it reads).
FORMAT_VERSION = 1
FORMAT_NAME = "nystrom-kme"

_KERNELS: dict[str, type[Kernel]] = {cls.__name__: cls for cls in (
    Gaussian, Laplacian, Matern, InverseMultiquadric, Linear, Polynomial)}
_POLICIES: dict[str, type] = {cls.__name__: cls for cls in (
    UniformSampling, RidgeLeverageSampling, RPCholeskySampling, BlockRPCholeskySampling,
    GreedyCholeskySampling, KernelHerding, CortesScottSampling, DPPGreedySampling)}

#: Classes that can be saved, by name; filled by :func:`persistable` as their modules load.
_CLASSES: dict[str, type] = {}

#: The most bytes the JSON header of an archive may declare (a real one takes a few KB).
MAX_HEADER_BYTES = 1 << 20
#: The solvers the core reports having used (``solver_``; "auto" resolves to one of them).
_USED_SOLVERS = ("cholesky", "cod")
#: The weights of a compression (``CompressionResult.method`` is "<sampler>/<weights>").
_COMPRESSION_WEIGHTS = ("simplex", "signed", "uniform")

_FLOATS = (np.dtype("f4"), np.dtype("f8"))
_F8, _I8 = (np.dtype("f8"),), (np.dtype("i8"),)
#: The array members each saved type may hold: allowed dtypes (any byte order; None:
#: any numbers) and shapes in named dimensions, the same name being one size in every
#: member. Checked on the manifest and the members' .npy headers before any data is read.
_LAYOUTS: dict[str, dict[str, tuple[tuple[np.dtype, ...] | None, tuple[tuple[str, ...], ...]]]] = {
    "NystromKME": {"landmarks": (_FLOATS, (("m", "d"),)), "weights": (_F8, (("m",),)),
                   "s_sum": (_F8, (("m",),)), "s_comp": (_F8, (("m",),)),
                   "landmark_indices": (_I8, (("m",),)), "policy_indices": (_I8, (("k",),)),
                   "sampler_array": (None, (("j",), ("j", "e")))},
    "EmpiricalKME": {"support": (_FLOATS, (("n", "d"),)), "weights": (_F8, (("n",),))},
    "QuadratureRule": {"nodes": (_FLOATS, (("m", "d"),)), "weights": (_F8, (("m",),))},
    "CompressionResult": {"points": (_FLOATS, (("m", "d"),)), "weights": (_F8, (("m",),)),
                          "indices": (_I8, (("m",),))},
}


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


def persistable(cls: type) -> type:
    """Class decorator: register ``cls`` (by name) as a type :func:`load` can return.
    The saveable classes register themselves, so this module imports none of them."""
    _CLASSES[cls.__name__] = cls
    return cls


# --------------------------------------------------------------------------- #
# JSON pieces: kernels, samplers, parameters
# --------------------------------------------------------------------------- #
def kernel_spec(kernel: Kernel) -> dict[str, Any]:
    """A kernel as JSON: ``{"type": class name, "bandwidth": float or "median", ...}``."""
    name = type(kernel).__name__
    if _KERNELS.get(name) is not type(kernel):
        raise ValueError(f"cannot save a kernel of type {type(kernel).__qualname__}: only "
                         f"{sorted(_KERNELS)} are stored")
    spec: dict[str, Any] = {"type": name, "bandwidth": kernel.bandwidth}
    if isinstance(kernel, Matern):
        spec["nu"] = kernel.nu
    elif isinstance(kernel, Polynomial):
        spec.update(degree=kernel.degree, offset=kernel.offset)
    return spec


def kernel_from_spec(spec: Any) -> Kernel:
    """The kernel described by :func:`kernel_spec`'s output (validated by its constructor)."""
    if not isinstance(spec, dict) or spec.get("type") not in _KERNELS:
        raise ValueError(f"not a kernel spec: {spec!r}")
    params = {k: v for k, v in spec.items() if k != "type"}
    return _KERNELS[spec["type"]](**params)


def _scalar(value: Any, name: str) -> Any:
    """A JSON scalar (None, bool, int, finite float, str) or ValueError."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real) and math.isfinite(value):
        return float(value)
    raise ValueError(f"cannot save parameter {name}={value!r}: not a number, string or None")


def _encode_kernel_param(kernel: Any) -> dict[str, Any]:
    if isinstance(kernel, str):
        return {"name": kernel}
    return kernel_spec(kernel)


def _decode_kernel_param(value: Any) -> Any:
    if isinstance(value, dict) and set(value) == {"name"} and isinstance(value["name"], str):
        return value["name"]
    return kernel_from_spec(value)


def _encode_policy(policy: Any, arrays: dict[str, np.ndarray]) -> dict[str, Any] | None:
    """A sampling policy of the package as {"policy", "params"}, given indices as
    {"indices": member}, anything else as {"unsaved": repr}."""
    if policy is None:
        return None
    if type(policy) is FixedLandmarks:
        arrays["policy_indices"] = np.asarray(policy.indices, dtype=np.int64)
        return {"indices": "policy_indices"}
    name = type(policy).__name__
    if _POLICIES.get(name) is type(policy):
        try:
            params = {k: _scalar(v, k) for k, v in policy.get_params(deep=False).items()}
            return {"policy": name, "params": params}
        except ValueError:
            pass
    return {"unsaved": repr(policy)[:200]}


def _decode_policy(value: Any, arrays: dict[str, np.ndarray]) -> Any:
    if value is None or "unsaved" in value:
        return None
    if "indices" in value:
        return FixedLandmarks(_indices(arrays, value["indices"]))
    if value.get("policy") not in _POLICIES or not isinstance(value.get("params"), dict):
        raise ValueError(f"not a sampling policy: {value!r}")
    return _POLICIES[value["policy"]](**value["params"])


def _encode_params(obj: Any, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in obj.get_params(deep=False).items():
        if name == "kernel":
            out[name] = _encode_kernel_param(value)
        elif name == "random_state":
            out[name] = int(value) if isinstance(value, numbers.Integral) and not isinstance(
                value, (bool, np.bool_)) else None
        elif name == "sampler":
            if isinstance(value, str):
                out[name] = {"name": value}
            elif isinstance(value, (np.ndarray, list, tuple)) and np.asarray(value).dtype.kind in "iuf":
                arrays["sampler_array"] = np.asarray(value)
                out[name] = {"array": "sampler_array"}
            else:
                out[name] = _encode_policy(value, arrays)
        else:
            out[name] = _scalar(value, name)
    return out


def _decode_params(params: dict[str, Any], arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    out = dict(params)
    if "kernel" in out:
        out["kernel"] = _decode_kernel_param(out["kernel"])
    sampler = out.get("sampler")
    if isinstance(sampler, dict):
        if "name" in sampler:
            out["sampler"] = sampler["name"]
        elif "array" in sampler:
            out["sampler"] = _sampler_array(arrays)
        else:
            out["sampler"] = _decode_policy(sampler, arrays)
    return out


# --------------------------------------------------------------------------- #
# the codecs, one per saved type: (header fields, arrays) <-> object
# --------------------------------------------------------------------------- #
def _fitted_state(est: Any) -> dict[str, Any]:
    """The estimator's attributes, copied at once: a fit changes them all in one
    ``__dict__.update``, so the copy is one fit's state even while another thread refits.
    The decoders restore them the same way and publish the embedding with ``_publish``,
    as the estimators' own fits do (this module owns the file format, the estimators
    their attributes: the names read and written here are those their fits set)."""
    est.fitted()  # raises NotFittedError
    return dict(vars(est))


def _encode_nystrom(est: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    st = _fitted_state(est)
    arrays: dict[str, np.ndarray] = {
        "landmarks": st["landmarks_"], "weights": st["weights_"],
        "s_sum": st["_sums"].sum, "s_comp": st["_sums"].comp}
    if st.get("landmark_indices_") is not None:
        arrays["landmark_indices"] = np.asarray(st["landmark_indices_"], dtype=np.int64)
    params = _encode_params(est, arrays)
    state = {"kernel": kernel_spec(st["kernel_"]), "n_samples": int(st["n_samples_"]),
             "n_features_in": int(st["n_features_in_"]), "solver": str(st["solver_"]),
             "rank": int(st["rank_"]), "weight_sum": float(st["weight_sum_"]),
             "sampler": _encode_policy(st.get("sampler_"), arrays)}
    return {"params": params, "state": state}, arrays


def _decode_nystrom(cls: type, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> Any:
    """The estimator, every field checked against what a fit can produce."""
    state = header["state"]
    est = _estimator(cls, header["params"], arrays)
    # the estimator's own check of its parameters (solver, rcond, passes, chunk_rows, n_threads)
    est._check_params()
    if not (est.n_landmarks is None or est.n_landmarks in ("auto", "bound")
            or (isinstance(est.n_landmarks, int) and not isinstance(est.n_landmarks, bool)
                and est.n_landmarks >= 1)):
        raise ValueError(f"n_landmarks must be a positive integer, 'auto', 'bound' or None, "
                         f"got {est.n_landmarks!r}")
    L, m = _matrix(arrays, "landmarks"), arrays["landmarks"].shape[0]
    w = _vector(arrays, "weights", np.float64, m)
    acc = CompensatedSum((m,))
    acc.sum = _vector(arrays, "s_sum", np.float64, m)
    acc.comp = _vector(arrays, "s_comp", np.float64, m)
    with np.errstate(over="ignore"):
        s_sum = acc.value()
    if not np.isfinite(s_sum).all():
        raise FileFormatError("s_sum + s_comp overflows")
    n = _count(state, "n_samples")
    indices = arrays.get("landmark_indices")
    if indices is not None:
        indices = _indices(arrays, "landmark_indices", m, n, "n_samples")
    solver = _get(state, "solver", str)
    if solver not in _USED_SOLVERS:
        raise FileFormatError(f"solver={solver!r}: the core's solvers are {', '.join(_USED_SOLVERS)}")
    rank = _get(state, "rank", int)
    if not 0 <= rank <= m:
        raise FileFormatError(f"rank={rank} is not in [0, m] with m = {m} landmarks")
    est.__dict__.update(
        kernel_=_resolved_kernel(state), landmark_indices_=indices,
        sampler_=_decode_policy(_get(state, "sampler", (dict, type(None))), arrays),
        landmarks_=L, support_=L, weights_=w, n_samples_=n, n_features_in_=_features(state, L),
        solver_=solver, rank_=rank, _sums=acc, s_sum_=s_sum,
        weight_sum_=_positive(state, "weight_sum"), n_landmarks_report_=None)
    est._publish()
    return est


def _estimator(cls: type, params: dict[str, Any], arrays: dict[str, np.ndarray]) -> Any:
    """``cls(**params)`` with the parameters every saved estimator shares checked."""
    est = cls(**_decode_params(params, arrays))
    check_random_state(est.random_state)
    n_threads_arg(est.n_threads)
    return est


def _encode_empirical(est: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    st = _fitted_state(est)
    arrays = {"support": st["support_"], "weights": st["weights_"]}
    state = {"kernel": kernel_spec(st["kernel_"]), "n_samples": int(st["n_samples_"]),
             "n_features_in": int(st["n_features_in_"])}
    return {"params": _encode_params(est, arrays), "state": state}, arrays


def _decode_empirical(cls: type, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> Any:
    """The estimator, every field checked against what a fit can produce."""
    state = header["state"]
    est = _estimator(cls, header["params"], arrays)
    Z = _matrix(arrays, "support")
    n = _count(state, "n_samples")
    if n != Z.shape[0]:
        raise FileFormatError(f"n_samples={n} but the support has {Z.shape[0]} rows")
    w = _probabilities(arrays, "weights", n)
    est.__dict__.update(kernel_=_resolved_kernel(state), support_=Z, weights_=w, n_samples_=n,
                        n_features_in_=_features(state, Z))
    est._publish()
    return est


def _encode_rule(rule: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    state = {"kernel": None if rule.kernel is None else kernel_spec(rule.kernel)}
    return {"params": {}, "state": state}, {"nodes": rule.nodes, "weights": rule.weights}


def _decode_rule(cls: type, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> Any:
    spec = _get(header["state"], "kernel", (dict, type(None)))
    nodes, w = _matrix(arrays, "nodes"), _vector(arrays, "weights", np.float64)
    _check_len(w, nodes.shape[0], "weights")
    return cls(nodes, w, None if spec is None else kernel_from_spec(spec))


def _encode_compression(res: Any) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    state = {"kernel": kernel_spec(res.kernel), "mmd": None if res.mmd is None else float(res.mmd),
             "method": str(res.method), "ridge": float(res.ridge)}
    return {"params": {}, "state": state}, {"points": res.points, "weights": res.weights,
                                            "indices": np.asarray(res.indices, dtype=np.int64)}


def _decode_compression(cls: type, header: dict[str, Any], arrays: dict[str, np.ndarray]) -> Any:
    """The result, every field checked against what :func:`~nystrom_kme.compress` returns."""
    state = header["state"]
    points = _matrix(arrays, "points")
    m = points.shape[0]
    method = _get(state, "method", str)
    sampler, _, weights = method.rpartition("/")
    if not sampler or weights not in _COMPRESSION_WEIGHTS:
        raise FileFormatError(f"method={method!r} is not '<sampler>/<weights>' with weights one of "
                              f"{', '.join(_COMPRESSION_WEIGHTS)}")
    w = (_vector(arrays, "weights", np.float64, m) if weights == "signed"
         else _probabilities(arrays, "weights", m))
    mmd = _get(state, "mmd", (int, float, type(None)))
    if mmd is not None and not (math.isfinite(mmd) and mmd >= 0):
        raise FileFormatError(f"mmd={mmd!r} is not a non-negative number")
    ridge = _get(state, "ridge", (int, float))
    if not (math.isfinite(ridge) and ridge >= 0) or (ridge and weights != "signed"):
        raise FileFormatError(f"ridge={ridge!r}: a non-negative number, 0 unless the weights are signed")
    kernel = _resolved_kernel(state)
    return cls(points=points, weights=w, indices=_indices(arrays, "indices", m), mmd=mmd,
               kernel=kernel, method=method, ridge=float(ridge))


_CODECS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "NystromKME": (_encode_nystrom, _decode_nystrom),
    "EmpiricalKME": (_encode_empirical, _decode_empirical),
    "QuadratureRule": (_encode_rule, _decode_rule),
    "CompressionResult": (_encode_compression, _decode_compression),
}

_RESULT_FIELDS = ("statistic", "pvalue", "null_distribution", "method", "kernel", "n_landmarks",
                  "n_permutations")


def _registered_name(obj: Any) -> str:
    for name, cls in _CLASSES.items():
        if isinstance(obj, cls):
            return name
    raise ValueError(f"cannot save a {type(obj).__name__}: only {sorted(_CLASSES)} are saved")


def _preamble(name: str) -> dict[str, Any]:
    return {"format": FORMAT_NAME, "format_version": FORMAT_VERSION,
            "package_version": _core.__version__, "object": name}


# --------------------------------------------------------------------------- #
# two-sample results: JSON
# --------------------------------------------------------------------------- #
_JSON_RESULTS = ("TwoSampleResult", "AggregatedTestResult")
_AGGREGATED_FIELDS = ("statistic", "pvalue", "null_distribution", "method", "aggregation", "kernels",
                      "kernel_statistics", "kernel_scores", "kernel_pvalues", "n_landmarks",
                      "n_permutations", "bin_size", "temperature")


def _floats(values: Any) -> list[float]:
    return [float(v) for v in np.asarray(values, dtype=np.float64)]


def _aggregated_to_dict(result: Any) -> dict[str, Any]:
    out = _preamble("AggregatedTestResult")
    out.update(statistic=float(result.statistic), pvalue=float(result.pvalue),
               null_distribution=_floats(result.null_distribution), method=str(result.method),
               aggregation=str(result.aggregation), kernels=[kernel_spec(k) for k in result.kernels],
               kernel_statistics=_floats(result.kernel_statistics),
               kernel_scores=_floats(result.kernel_scores), kernel_pvalues=_floats(result.kernel_pvalues),
               n_landmarks=None if result.n_landmarks is None else int(result.n_landmarks),
               n_permutations=int(result.n_permutations), bin_size=int(result.bin_size),
               temperature=float(result.temperature))
    return out


def _float_list(data: dict[str, Any], key: str) -> np.ndarray:
    values = np.array(_get(data, key, list), dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"{key} must be a list of numbers")
    return values


def _aggregated_from_dict(data: dict[str, Any]) -> Any:
    from .kernel_collection import KernelCollection

    missing = [f for f in _AGGREGATED_FIELDS if f not in data]
    if missing:
        raise ValueError(f"missing key(s) {missing}")
    kernels = KernelCollection([kernel_from_spec(k) for k in _get(data, "kernels", list)])
    return _CLASSES["AggregatedTestResult"](
        statistic=float(_get(data, "statistic", (int, float))), pvalue=float(_get(data, "pvalue", (int, float))),
        null_distribution=_float_list(data, "null_distribution"), method=_get(data, "method", str),
        aggregation=_get(data, "aggregation", str), kernels=kernels,
        kernel_statistics=_float_list(data, "kernel_statistics"),
        kernel_scores=_float_list(data, "kernel_scores"), kernel_pvalues=_float_list(data, "kernel_pvalues"),
        n_landmarks=_get(data, "n_landmarks", (int, type(None))), n_permutations=_get(data, "n_permutations", int),
        bin_size=_get(data, "bin_size", int), temperature=float(_get(data, "temperature", (int, float))))


def result_to_dict(result: Any) -> dict[str, Any]:
    """A :class:`~nystrom_kme.TwoSampleResult` or :class:`~nystrom_kme.AggregatedTestResult`
    as a JSON-ready dict (with the preamble)."""
    if _registered_name(result) == "AggregatedTestResult":
        return _aggregated_to_dict(result)
    out = _preamble("TwoSampleResult")
    out.update(statistic=float(result.statistic), pvalue=float(result.pvalue),
               null_distribution=[float(v) for v in np.asarray(result.null_distribution)],
               method=str(result.method), kernel=kernel_spec(result.kernel),
               n_landmarks=None if result.n_landmarks is None else int(result.n_landmarks),
               n_permutations=int(result.n_permutations))
    return out


def result_from_dict(data: Any) -> Any:
    """The two-sample result of :func:`result_to_dict`'s output."""
    try:
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        if data.get("object") == "AggregatedTestResult":
            _check_preamble(data, "AggregatedTestResult")
            return _aggregated_from_dict(data)
        _check_preamble(data, "TwoSampleResult")
        missing = [f for f in _RESULT_FIELDS if f not in data]
        if missing:
            raise ValueError(f"missing key(s) {missing}")
        null = np.array(data["null_distribution"], dtype=np.float64)
        if null.ndim != 1:
            raise ValueError("null_distribution must be a list of numbers")
        return _CLASSES["TwoSampleResult"](
            statistic=float(_get(data, "statistic", (int, float))),
            pvalue=float(_get(data, "pvalue", (int, float))), null_distribution=null,
            method=_get(data, "method", str), kernel=kernel_from_spec(data["kernel"]),
            n_landmarks=_get(data, "n_landmarks", (int, type(None))),
            n_permutations=_get(data, "n_permutations", int))
    except FileFormatError:
        raise
    except (ValueError, TypeError) as err:
        raise FileFormatError(f"not a valid two-sample result: {err}") from None


def result_to_json(result: Any, *, indent: int | None = None) -> str:
    """The JSON text of a two-sample result (floats exact)."""
    return json.dumps(result_to_dict(result), indent=indent, allow_nan=False)


def result_from_json(text: str | bytes) -> Any:
    """Parse :func:`result_to_json`'s output."""
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as err:
        raise FileFormatError(f"not valid JSON ({err})") from None
    return result_from_dict(data)


# --------------------------------------------------------------------------- #
# save / load
# --------------------------------------------------------------------------- #
def _little_endian(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype.kind not in "iuf":
        raise ValueError(f"cannot save an array of dtype {a.dtype}")
    return np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))


def _digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).view(np.uint8).reshape(-1)).hexdigest()


def save(obj: Any, path: str | os.PathLike[str]) -> None:
    """Write ``obj`` to ``path`` in the format of this module (no pickle).

    Parameters
    ----------
    obj : NystromKME, EmpiricalKME (fitted), QuadratureRule, CompressionResult, TwoSampleResult or
        AggregatedTestResult
    path : str or path-like
        Written as given (no suffix is added); ``.npz`` is the usual suffix of the
        estimators and rules, ``.json`` of a two-sample result.

    Raises
    ------
    NotFittedError
        For an unfitted estimator.
    ValueError
        For an object or a parameter that cannot be stored (a custom kernel class,
        a parameter that is neither a number, a string nor None).

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> kme = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=20, random_state=0)
    >>> kme = kme.fit(np.random.default_rng(0).normal(size=(500, 2)))
    >>> import tempfile, os; path = os.path.join(tempfile.mkdtemp(), "kme.npz")
    >>> kme.save(path)
    >>> bool((nk.load(path)(kme.landmarks_) == kme(kme.landmarks_)).all())
    True
    """
    path = os.fspath(path)
    name = _registered_name(obj)
    if name in _JSON_RESULTS:
        text = result_to_json(obj, indent=1).encode("ascii")
        atomic_write(path, lambda f: f.write(text))
        return
    fields, arrays = _CODECS[name][0](obj)
    arrays = {k: _little_endian(v) for k, v in arrays.items()}
    header = _preamble(name)
    header.update(fields)
    header["arrays"] = {k: {"dtype": v.dtype.str, "shape": list(v.shape), "sha256": _digest(v)}
                        for k, v in arrays.items()}
    blob = json.dumps(header, allow_nan=False, sort_keys=True).encode("ascii")
    members = {"header": np.frombuffer(blob, dtype=np.uint8), **arrays}
    atomic_write(path, lambda f: np.savez(f, **members))


def load(path: str | os.PathLike[str]) -> Any:
    """Read an object written by ``save`` (any format version up to this one's).

    Parameters
    ----------
    path : str or path-like

    Returns
    -------
    NystromKME, EmpiricalKME, QuadratureRule, CompressionResult, TwoSampleResult or AggregatedTestResult
        The saved object's type, with the same parameters and fitted state;
        evaluations are bit-identical, and a loaded NystromKME continues with
        ``partial_fit`` and ``merge`` exactly as the saved one would.

    Raises
    ------
    FileNotFoundError
        When ``path`` does not exist.
    FileFormatError
        (a ValueError) When the file is not a nystrom-kme file, is truncated or
        corrupted, misses a member or a key, or comes from a newer format version.

    Examples
    --------
    >>> import nystrom_kme as nk
    >>> kme = nk.load("embedding.npz")  # doctest: +SKIP
    """
    return _dispatch(path, _load_npz, result_from_json)


def read_header(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The JSON header of a saved file (format and package versions, object type,
    parameters, fitted scalars; for a two-sample result, the whole document), checked
    as :func:`load` checks it.

    Examples
    --------
    >>> from nystrom_kme.persistence import read_header
    >>> read_header("embedding.npz")["object"]  # doctest: +SKIP
    'NystromKME'
    """
    def from_json(text: bytes) -> dict[str, Any]:
        result_from_json(text)  # validates
        return json.loads(text)

    return _dispatch(path, lambda f: _guarded(_read_npz, f)[0], from_json)


def _dispatch(path: str | os.PathLike[str], npz: Callable[[IO[bytes]], Any],
              text: Callable[[bytes], Any]) -> Any:
    """npz(file) for a zip archive, text(bytes) for a JSON document; FileFormatErrors
    get the path in front. Only regular files are opened (a FIFO would block)."""
    path = os.fspath(path)
    try:
        f = open_regular(path)
    except ValueError as err:
        raise FileFormatError(f"{path}: {err}") from None
    with f:
        try:
            data = f.read(4)
            if data.startswith(b"PK"):
                f.seek(0)
                return npz(f)
            if data.lstrip()[:1] == b"{":
                return text(data + f.read())
            raise FileFormatError("the file is empty" if not data else
                                  "not a nystrom-kme file (neither a .npz archive nor a JSON document)")
        except FileFormatError as err:
            raise FileFormatError(f"{path}: {err}") from None


def _guarded(read: Callable[[IO[bytes]], Any], f: IO[bytes]) -> Any:
    """read(f), any failure but a FileFormatError (or running out of memory, or Ctrl-C)
    reported as corruption."""
    try:
        return read(f)
    except (FileFormatError, MemoryError):
        raise
    except Exception as err:  # any failure while parsing the archive's bytes is corruption
        raise FileFormatError(f"truncated or corrupted file ({type(err).__name__}: {' '.join(str(err).split())})") from None


def _load_npz(f: IO[bytes]) -> Any:
    """The object in the archive ``f``; FileFormatError messages without the path."""
    header, arrays = _guarded(_read_npz, f)
    name = header["object"]
    try:
        for part in ("params", "state"):
            _get(header, part, dict)
        return _CODECS[name][1](_CLASSES[name], header, arrays)
    except (ValueError, TypeError, KeyError) as err:  # FileFormatError included
        raise FileFormatError(f"inconsistent {name} file: {err}") from None


def _read_npz(f: IO[bytes]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(header, arrays checked against the header's manifest) of the archive ``f``.

    Sizes first: the manifest and every member's .npy header are checked against the
    saved type's layout (``_LAYOUTS``) and the zip entries before any array is read,
    members must be stored uncompressed, and each array is read into exactly the
    declared size: a load takes the memory of the arrays the file holds."""
    with NpzArchive(f) as npz:
        if "header" not in npz.names:
            raise FileFormatError("not a nystrom-kme file (no 'header' member)")
        meta = _described(npz, "header")
        if meta.dtype != np.uint8 or len(meta.shape) != 1:
            raise FileFormatError("the 'header' member is not JSON bytes")
        if meta.nbytes > MAX_HEADER_BYTES:
            raise FileFormatError(f"the 'header' member declares {meta.nbytes} bytes, more than "
                                  f"a header may hold ({MAX_HEADER_BYTES})")
        try:
            header = json.loads(_read(npz, meta).tobytes().decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as err:
            raise FileFormatError(f"the header is not valid JSON ({err})") from None
        if not isinstance(header, dict):
            raise FileFormatError("the header is not a JSON object")
        name = _check_preamble(header, None)
        if name not in _CLASSES or name not in _CODECS:
            raise FileFormatError(f"unknown object type {name!r}")
        planned = _plan_members(npz, _get(header, "arrays", dict), name)
        arrays = {}
        for key, (member, digest) in planned.items():
            arr = _read(npz, member)
            if _digest(arr) != digest:
                raise FileFormatError(f"the member {key!r} is corrupted (checksum mismatch)")
            if not arr.dtype.isnative:  # in place: this machine's byte order, no copy
                arr = arr.byteswap(inplace=True).view(arr.dtype.newbyteorder("="))
            arrays[key] = arr
    return header, arrays


def _plan_members(npz: NpzArchive, manifest: dict[str, Any], name: str) -> dict[str, tuple[Member, Any]]:
    """{key: (member, sha256)} for each member of the manifest, after checking its
    dtype, shape and size against the layout of ``name``, the manifest and the zip."""
    layout, sizes, planned = _LAYOUTS[name], {}, {}
    for key, meta in manifest.items():
        if key not in layout:
            raise FileFormatError(f"unexpected member {key!r} in a {name} file")
        if key not in npz.names:
            raise FileFormatError(f"the member {key!r} is missing")
        dtype, shape = _get(meta, "dtype", str), _get(meta, "shape", list)
        member = _described(npz, key)
        if member.dtype.str != dtype or list(member.shape) != shape:
            raise FileFormatError(f"the member {key!r} has dtype {member.dtype.str} and shape "
                                  f"{member.shape}, the header says {dtype} and {tuple(shape)}")
        dtypes, patterns = layout[key]
        native = member.dtype.newbyteorder("=")
        if (native not in dtypes) if dtypes is not None else (native.kind not in "iuf"):
            raise FileFormatError(f"the member {key!r} has dtype {member.dtype}, expected "
                                  f"{' or '.join(d.name for d in dtypes) if dtypes else 'numbers'}")
        pattern = next((p for p in patterns if len(p) == len(member.shape)), None)
        if pattern is None:
            raise FileFormatError(f"the member {key!r} has shape {member.shape}, expected "
                                  f"{' or '.join(str(p) for p in patterns)}")
        for dim, size in zip(pattern, member.shape):
            if sizes.setdefault(dim, size) != size:
                raise FileFormatError(f"the member {key!r} has shape {member.shape}: {dim} = {size} "
                                      f"where another member has {dim} = {sizes[dim]}")
        if member.compressed:
            raise FileFormatError(f"the member {key!r} is compressed; nystrom-kme files are "
                                  "uncompressed archives (so that a file's size bounds its load's memory)")
        planned[key] = (member, meta.get("sha256"))
    return planned


def _described(npz: NpzArchive, key: str) -> Member:
    try:
        return npz.describe(key)
    except ValueError as err:
        raise FileFormatError(str(err)) from None


def _read(npz: NpzArchive, member: Member) -> np.ndarray:
    try:
        return npz.read(member)
    except ValueError as err:
        raise FileFormatError(str(err)) from None


# --------------------------------------------------------------------------- #
# checks of what was read
# --------------------------------------------------------------------------- #
def _check_preamble(header: dict[str, Any], expected: str | None) -> str:
    if header.get("format") != FORMAT_NAME:
        raise FileFormatError(f"not a nystrom-kme file (format {header.get('format')!r})")
    version = header.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise FileFormatError(f"invalid format_version {version!r}")
    if version > FORMAT_VERSION:
        raise FileFormatError(
            f"written in format version {version} (nystrom-kme "
            f"{header.get('package_version', '?')}); this nystrom-kme {_core.__version__} reads "
            f"versions up to {FORMAT_VERSION}: upgrade nystrom-kme to read it")
    name = header.get("object")
    if not isinstance(name, str) or (expected is not None and name != expected):
        raise FileFormatError(f"holds {name!r}, expected {expected or 'an object type'}")
    return name


def _get(d: Any, key: str, types: Any) -> Any:
    if not isinstance(d, dict) or key not in d:
        raise FileFormatError(f"the key {key!r} is missing")
    value = d[key]
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        raise FileFormatError(f"the key {key!r} has a wrong type ({value!r})")
    if not isinstance(value, types):
        raise FileFormatError(f"the key {key!r} has a wrong type ({value!r})")
    return value


def _matrix(arrays: dict[str, np.ndarray], key: str) -> np.ndarray:
    a = _member(arrays, key)
    if a.ndim != 2 or a.dtype not in (np.float32, np.float64) or not np.isfinite(a).all():
        raise FileFormatError(f"the member {key!r} must be a finite float32/float64 matrix")
    if 0 in a.shape:
        raise FileFormatError(f"the member {key!r} has shape {a.shape}: no rows or no columns")
    return a


def _vector(arrays: dict[str, np.ndarray], key: str, dtype: Any, length: int | None = None) -> np.ndarray:
    a = _member(arrays, key)
    if a.ndim != 1 or a.dtype != dtype or (a.dtype.kind == "f" and not np.isfinite(a).all()):
        raise FileFormatError(f"the member {key!r} must be a finite 1-D {np.dtype(dtype).name} array")
    if length is not None:
        _check_len(a, length, key)
    return a


def _member(arrays: dict[str, np.ndarray], key: str) -> np.ndarray:
    if key not in arrays:
        raise FileFormatError(f"the member {key!r} is missing")
    return arrays[key]


def _check_len(a: np.ndarray, n: int, key: str) -> None:
    if a.shape != (n,):
        raise FileFormatError(f"the member {key!r} has shape {a.shape}, expected ({n},)")


def _count(state: dict[str, Any], key: str) -> int:
    value = _get(state, key, int)
    if value < 1:
        raise FileFormatError(f"{key}={value}: expected a positive integer")
    return value


def _positive(state: dict[str, Any], key: str) -> float:
    value = float(_get(state, key, (int, float)))
    if not (math.isfinite(value) and value > 0):
        raise FileFormatError(f"{key}={value!r}: expected a positive finite number")
    return value


def _indices(arrays: dict[str, np.ndarray], key: str, length: int | None = None,
             bound: int | None = None, bound_name: str = "") -> np.ndarray:
    """Row indices: int64, >= 0 and (``bound``) below ``bound``."""
    a = _vector(arrays, key, np.int64, length)
    if a.size and (a.min() < 0 or (bound is not None and a.max() >= bound)):
        where = f"[0, {bound_name}={bound})" if bound is not None else "[0, inf)"
        raise FileFormatError(f"the member {key!r} holds indices outside {where}: "
                              f"{int(a.min())} to {int(a.max())}")
    return a


def _probabilities(arrays: dict[str, np.ndarray], key: str, length: int) -> np.ndarray:
    """Non-negative weights summing to 1 (to round-off)."""
    w = _vector(arrays, key, np.float64, length)
    total = float(w.sum())
    if (w < 0).any() or abs(total - 1.0) > 1e-6:
        raise FileFormatError(f"the member {key!r} is not a probability vector (min {w.min():g}, "
                              f"sum {total!r})")
    return w


def _sampler_array(arrays: dict[str, np.ndarray]) -> np.ndarray:
    """Given landmark indices (1-D, non-negative integers) or points (2-D, finite)."""
    a = _member(arrays, "sampler_array")
    if a.ndim == 1 and a.dtype.kind in "iu" and (a.size == 0 or a.min() >= 0):
        return a
    if a.ndim == 2 and a.dtype.kind == "f" and np.isfinite(a).all():
        return a
    raise FileFormatError("the member 'sampler_array' is neither non-negative indices nor finite points")


def _resolved_kernel(state: dict[str, Any]) -> Kernel:
    kernel = kernel_from_spec(_get(state, "kernel", dict))
    if not kernel.is_resolved:
        raise FileFormatError("the fitted kernel has no numeric bandwidth")
    return kernel


def _features(state: dict[str, Any], support: np.ndarray) -> int:
    d = _get(state, "n_features_in", int)
    if d != support.shape[1]:
        raise FileFormatError(f"n_features_in={d} but the support has {support.shape[1]} columns")
    return d


__all__ = ["FORMAT_VERSION", "FileFormatError", "kernel_from_spec", "kernel_spec", "load",
           "persistable", "read_header", "result_from_dict", "result_from_json", "result_to_dict",
           "result_to_json", "save"]
