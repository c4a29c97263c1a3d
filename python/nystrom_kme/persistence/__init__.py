"""Saving and loading fitted objects without pickle: one versioned file format.

``obj.save(path)`` writes, :func:`load` reads back an object of the same type whose
evaluations are bit-identical to the saved one's. Loading never executes code:
arrays are read from their ``.npy`` headers and bytes (never unpickled) and everything
else is JSON. Files are portable: every array has an explicit little-endian dtype and the
JSON is ASCII.

File format, version 1
----------------------
:class:`~nystrom_kme.NystromKME`, :class:`~nystrom_kme.EmpiricalKME`,
:class:`~nystrom_kme.QuadratureRule` and :class:`~nystrom_kme.CompressionResult` are
NumPy ``.npz`` archives (an uncompressed
zip of ``.npy`` files). The member ``header`` is a uint8 array holding a UTF-8
(ASCII) JSON object:

* ``format``: ``"nystrom-kme"``; ``format_version``: 1; ``package_version``: the
  writer's version; ``object``: ``"NystromKME"``, ``"EmpiricalKME"``,
  ``"QuadratureRule"`` or ``"CompressionResult"``;
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
  ``feature_names_in`` (a list of d distinct strings) only for an object fitted on
  data with column names (files without it, older ones included, have none);
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
CompressionResult   ``points`` (m, d) data dtype; ``weights`` (m,) <f8; ``indices`` (m,) <i8
                    (state: ``mmd``, and ``mmd_interval`` [low, high] for an estimated one)
==================  =================================================================

Floats in JSON are written with Python's shortest round-trip representation, so
they read back bit for bit. :class:`~nystrom_kme.TwoSampleResult` and
:class:`~nystrom_kme.AggregatedTestResult` are JSON documents (``.json``) with the same
``format``, ``format_version``, ``package_version`` and ``object`` keys, the fields of
the result, and the kernels as kernel specs.

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

Where each part lives
---------------------
``container`` (the ``.npz`` + JSON container: preamble, manifest, layouts, sizes
before data), ``fields`` (the checks of the fields read, :class:`FileFormatError`),
``specs`` (kernels, sampling policies and parameters as JSON), ``codecs`` (one codec per
type saved as an archive), ``results`` (the test results as JSON), ``registry`` (the
saveable classes register with :func:`persistable`, so this package imports none of
them). The codecs build fitted estimators with their ``_from_state`` hook and read them
with ``_state()``: no module of this package sets another's private attributes.
"""

from __future__ import annotations

import json
import os
from typing import IO, Any, TypeVar

import numpy as np

from .codecs import CODECS
from .container import FORMAT_VERSION, guarded, open_saved, read_archive, write_archive, write_text
from .fields import FileFormatError, get_field
from .registry import is_registered, persistable, registered_class, registered_name
from .results import JSON_RESULTS, result_from_dict, result_from_json, result_to_dict, result_to_json
from .specs import kernel_from_spec, kernel_spec


def save(obj: object, path: str | os.PathLike[str]) -> None:
    """Write ``obj`` to ``path`` in the format of this module (no pickle).

    Parameters
    ----------
    obj : NystromKME, EmpiricalKME (fitted), QuadratureRule, CompressionResult, DriftDetector,
        OnlineDriftDetector, TwoSampleResult or AggregatedTestResult (EXTENDING.md lists them)
    path : str or path-like
        Written as given; the suffix names the format, as on the command line: ``.npz``
        for the estimators, rules, compressions and drift detectors, ``.json`` for the
        two-sample results (another suffix is a ValueError, before anything is written).

    Raises
    ------
    NotFittedError
        For an unfitted estimator.
    ValueError
        For a path whose suffix is not the object's format, or an object or a parameter
        that cannot be stored (a custom kernel class, a parameter that is neither a
        number, a string nor None).

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
    name = registered_name(obj)
    suffix = ".json" if name in JSON_RESULTS else ".npz"
    if os.path.splitext(path)[1].lower() != suffix:
        raise ValueError(f"{path}: a {name} is saved as a {suffix} file (the suffix names the format)")
    if name in JSON_RESULTS:
        write_text(path, result_to_json(obj, indent=1))
        return
    fields, arrays = CODECS[name].encode(obj)
    write_archive(path, name, fields, arrays)


_Result = TypeVar("_Result", bound="JsonResult")


class JsonResult:
    """What a result saved as JSON offers (the two-sample results): ``to_json``,
    ``from_json`` and ``save``; the class must be :func:`persistable`."""

    def to_json(self, *, indent: int | None = None) -> str:
        """The result as JSON text, floats written exactly (round-trip repr)."""
        return result_to_json(self, indent=indent)

    @classmethod
    def from_json(cls: type[_Result], text: str | bytes) -> _Result:
        """The result :meth:`to_json` wrote (FileFormatError if the text is not one)."""
        result: _Result = result_from_json(text)  # the class the text names
        return result

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the result to ``path`` as JSON; :func:`nystrom_kme.load` reads it back."""
        save(self, path)


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
    return open_saved(path, _load_npz, result_from_json)


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
        header: dict[str, Any] = json.loads(text)
        return header

    return open_saved(path, lambda f: guarded(_read_npz, f)[0], from_json)


def _read_npz(f: IO[bytes]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(header, arrays) of an archive of a registered type that has a codec."""
    return read_archive(f, {name: codec.layout for name, codec in CODECS.items() if is_registered(name)})


def _load_npz(f: IO[bytes]) -> Any:
    """The object in the archive ``f``; FileFormatError messages without the path."""
    header, arrays = guarded(_read_npz, f)
    name = header["object"]
    try:
        for part in ("params", "state"):
            get_field(header, part, dict)
        return CODECS[name].decode(registered_class(name), header, arrays)
    except (ValueError, TypeError, KeyError) as err:  # FileFormatError included
        raise FileFormatError(f"inconsistent {name} file: {err}") from None


__all__ = [
    "FORMAT_VERSION",
    "FileFormatError",
    "JsonResult",
    "kernel_from_spec",
    "kernel_spec",
    "load",
    "persistable",
    "read_header",
    "result_from_dict",
    "result_from_json",
    "result_to_dict",
    "result_to_json",
    "save",
]
