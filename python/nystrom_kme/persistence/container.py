"""The file container: a ``.npz`` archive whose ``header`` member is the JSON header, or a
JSON document; written whole or not at all, read with sizes checked before data.

This module knows bytes, not objects: the preamble every file starts with, the
manifest of the array members (dtype, shape, SHA-256), the layouts a type's members
must follow, and which reader a file needs. What the header's fields mean is the
codecs' business (:mod:`nystrom_kme.persistence.codecs`, ``.results``).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from typing import IO, Any, TypeVar

import numpy as np

from .. import _core
from .._files import Member, NpzArchive, atomic_write, open_regular
from .fields import FileFormatError, get_field

#: What a reader of a saved file returns.
_Read = TypeVar("_Read")

#: The format this version writes (and the newest it reads).
FORMAT_VERSION = 1
FORMAT_NAME = "nystrom-kme"
#: The most bytes the JSON header of an archive may declare (a real one takes a few KB).
MAX_HEADER_BYTES = 1 << 20

#: The array members a saved type may hold: {member: (allowed dtypes (any byte order;
#: None: any numbers), shapes in named dimensions)}, the same name being one size in
#: every member. Checked on the manifest and the members' .npy headers before any data.
Layout = Mapping[str, tuple[tuple[np.dtype, ...] | None, tuple[tuple[str, ...], ...]]]


def preamble(name: str) -> dict[str, Any]:
    """The keys every file starts with: format, format version, writer's version, object type."""
    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "package_version": _core.__version__,
        "object": name,
    }


def check_preamble(header: dict[str, Any], expected: str | None) -> str:
    """The object type the preamble names (``expected`` when given); FileFormatError for
    another format, a newer version or a missing type."""
    if header.get("format") != FORMAT_NAME:
        raise FileFormatError(f"not a nystrom-kme file (format {header.get('format')!r})")
    version = header.get("format_version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise FileFormatError(f"invalid format_version {version!r}")
    if version > FORMAT_VERSION:
        raise FileFormatError(
            f"written in format version {version} (nystrom-kme "
            f"{header.get('package_version', '?')}); this nystrom-kme {_core.__version__} reads "
            f"versions up to {FORMAT_VERSION}: upgrade nystrom-kme to read it"
        )
    name = header.get("object")
    if not isinstance(name, str) or (expected is not None and name != expected):
        raise FileFormatError(f"holds {name!r}, expected {expected or 'an object type'}")
    return name


# --------------------------------------------------------------------------- #
# writing
# --------------------------------------------------------------------------- #
def _little_endian(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    if a.dtype.kind not in "iuf":
        raise ValueError(f"cannot save an array of dtype {a.dtype}")
    return np.ascontiguousarray(a, dtype=a.dtype.newbyteorder("<"))


def _digest(a: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(a).view(np.uint8).reshape(-1).data).hexdigest()


def write_archive(path: str, name: str, fields: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    """Write the archive of an object of type ``name``: the preamble, ``fields`` and the
    manifest of ``arrays`` as the ``header`` member, then the arrays (little-endian,
    uncompressed, in the order given)."""
    arrays = {k: _little_endian(v) for k, v in arrays.items()}
    header = preamble(name)
    header.update(fields)
    header["arrays"] = {
        k: {"dtype": v.dtype.str, "shape": list(v.shape), "sha256": _digest(v)} for k, v in arrays.items()
    }
    blob = json.dumps(header, allow_nan=False, sort_keys=True).encode("ascii")
    members = {"header": np.frombuffer(blob, dtype=np.uint8), **arrays}
    atomic_write(path, lambda f: np.savez(f, **members))  # type: ignore[arg-type]  # no member is "allow_pickle"


def write_text(path: str, text: str) -> None:
    """Write a JSON document (ASCII) whole or not at all."""
    data = text.encode("ascii")
    atomic_write(path, lambda f: f.write(data))


# --------------------------------------------------------------------------- #
# reading
# --------------------------------------------------------------------------- #
def open_saved(
    path: str | os.PathLike[str], npz: Callable[[IO[bytes]], _Read], text: Callable[[bytes], _Read]
) -> _Read:
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
            raise FileFormatError(
                "the file is empty"
                if not data
                else "not a nystrom-kme file (neither a .npz archive nor a JSON document)"
            )
        except FileFormatError as err:
            raise FileFormatError(f"{path}: {err}") from None


def guarded(read: Callable[[IO[bytes]], _Read], f: IO[bytes]) -> _Read:
    """read(f), any failure but a FileFormatError (or running out of memory, or Ctrl-C)
    reported as corruption."""
    try:
        return read(f)
    except (FileFormatError, MemoryError):
        raise
    except Exception as err:  # any failure while parsing the archive's bytes is corruption
        detail = " ".join(str(err).split())
        raise FileFormatError(f"truncated or corrupted file ({type(err).__name__}: {detail})") from None


def read_archive(f: IO[bytes], layouts: Mapping[str, Layout]) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(header, arrays checked against the header's manifest) of the archive ``f``, whose
    object type must be one of ``layouts``.

    Sizes first: the manifest and every member's .npy header are checked against the
    type's layout and the zip entries before any array is read, members must be stored
    uncompressed, and each array is read into exactly the declared size: a load takes
    the memory of the arrays the file holds."""
    with NpzArchive(f) as npz:
        if "header" not in npz.names:
            raise FileFormatError("not a nystrom-kme file (no 'header' member)")
        meta = _described(npz, "header")
        if meta.dtype != np.uint8 or len(meta.shape) != 1:
            raise FileFormatError("the 'header' member is not JSON bytes")
        if meta.nbytes > MAX_HEADER_BYTES:
            raise FileFormatError(
                f"the 'header' member declares {meta.nbytes} bytes, more than a header may hold ({MAX_HEADER_BYTES})"
            )
        try:
            header = json.loads(_read(npz, meta).tobytes().decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as err:
            raise FileFormatError(f"the header is not valid JSON ({err})") from None
        if not isinstance(header, dict):
            raise FileFormatError("the header is not a JSON object")
        name = check_preamble(header, None)
        if name not in layouts:
            raise FileFormatError(f"unknown object type {name!r}")
        planned = _plan_members(npz, get_field(header, "arrays", dict), name, layouts[name])
        arrays = {}
        for key, (member, digest) in planned.items():
            arr = _read(npz, member)
            if _digest(arr) != digest:
                raise FileFormatError(f"the member {key!r} is corrupted (checksum mismatch)")
            if not arr.dtype.isnative:  # in place: this machine's byte order, no copy
                arr = arr.byteswap(inplace=True).view(arr.dtype.newbyteorder("="))
            arrays[key] = arr
    return header, arrays


def _plan_members(
    npz: NpzArchive, manifest: dict[str, Any], name: str, layout: Layout
) -> dict[str, tuple[Member, Any]]:
    """{key: (member, sha256)} for each member of the manifest, after checking its
    dtype, shape and size against the layout of ``name``, the manifest and the zip."""
    sizes: dict[str, int] = {}
    planned = {}
    for key, meta in manifest.items():
        if key not in layout:
            raise FileFormatError(f"unexpected member {key!r} in a {name} file")
        if key not in npz.names:
            raise FileFormatError(f"the member {key!r} is missing")
        dtype, shape = get_field(meta, "dtype", str), get_field(meta, "shape", list)
        member = _described(npz, key)
        if member.dtype.str != dtype or list(member.shape) != shape:
            raise FileFormatError(
                f"the member {key!r} has dtype {member.dtype.str} and shape "
                f"{member.shape}, the header says {dtype} and {tuple(shape)}"
            )
        dtypes, patterns = layout[key]
        native = member.dtype.newbyteorder("=")
        if (native not in dtypes) if dtypes is not None else (native.kind not in "iuf"):
            raise FileFormatError(
                f"the member {key!r} has dtype {member.dtype}, expected "
                f"{' or '.join(d.name for d in dtypes) if dtypes else 'numbers'}"
            )
        pattern = next((p for p in patterns if len(p) == len(member.shape)), None)
        if pattern is None:
            raise FileFormatError(
                f"the member {key!r} has shape {member.shape}, expected {' or '.join(str(p) for p in patterns)}"
            )
        for dim, size in zip(pattern, member.shape):
            if sizes.setdefault(dim, size) != size:
                raise FileFormatError(
                    f"the member {key!r} has shape {member.shape}: {dim} = {size} "
                    f"where another member has {dim} = {sizes[dim]}"
                )
        if member.compressed:
            raise FileFormatError(
                f"the member {key!r} is compressed; nystrom-kme files are "
                "uncompressed archives (so that a file's size bounds its load's memory)"
            )
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


__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "MAX_HEADER_BYTES",
    "Layout",
    "check_preamble",
    "guarded",
    "open_saved",
    "preamble",
    "read_archive",
    "write_archive",
    "write_text",
]
