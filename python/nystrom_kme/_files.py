"""Files as the package reads and writes them: regular files only (reading a FIFO or a
device blocks or never ends), outputs that appear whole or not at all, ``.npz``
members read within the sizes their headers declare (so a small archive cannot expand
into gigabytes before its format is checked), and ``.npy`` vectors written block by
block.

Errors are ValueErrors without the path (the callers put it in front, in their own
error types), except :func:`atomic_write`'s OSErrors, which name the path given.
"""

from __future__ import annotations

import dataclasses
import errno
import io
import math
import os
import stat
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from typing import IO

import numpy as np

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)
#: Bytes copied per read from a zip member (the only memory a read needs beyond its array).
READ_CHUNK = 1 << 20


def file_kind(mode: int) -> str | None:
    """None for a regular file, else what the ``st_mode`` describes ("a FIFO", ...)."""
    if stat.S_ISREG(mode):
        return None
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def non_regular_kind(path: str) -> str | None:
    """None when ``path`` is a regular file (after symbolic links), else its kind;
    FileNotFoundError when it does not exist."""
    return file_kind(os.stat(path).st_mode)


def open_regular(path: str) -> IO[bytes]:
    """``open(path, "rb")`` for a regular file; ValueError for anything else, checked on
    the opened descriptor (no race) and opened without blocking (a FIFO with no writer
    would block ``open`` itself)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        kind = file_kind(os.fstat(fd).st_mode)
        if kind is not None:
            raise ValueError(f"not a regular file ({kind})")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def atomic_write(path: str, write: Callable[[IO[bytes]], object]) -> None:
    """Call ``write`` on a temporary file in the folder of ``path`` and rename it to
    ``path`` only when ``write`` returns: on any error (or Ctrl-C) nothing is left under
    either name and an existing ``path`` is unchanged. An existing ``path`` that is not a
    regular file (a FIFO, a device, a folder) is refused, not replaced. OSErrors name
    ``path``, never the temporary file."""
    try:
        st = os.stat(path)
        kind, mode = file_kind(st.st_mode), stat.S_IMODE(st.st_mode)
    except FileNotFoundError:
        kind, mode = None, 0o666 & ~_umask()
    if kind is not None:
        raise OSError(
            errno.EISDIR if kind == "a directory" else errno.EEXIST, f"exists and is not a regular file ({kind})", path
        )
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".nystrom-kme-", suffix=".tmp", dir=folder)
    except OSError as err:
        raise OSError(err.errno, err.strerror or str(err), path) from None
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
        os.chmod(tmp, mode)  # mkstemp's 0600 would hide the output from the user's group
        os.replace(tmp, path)
    except OSError as err:
        if err.filename not in (None, tmp):  # an input's error, raised inside write
            raise
        raise OSError(err.errno, err.strerror or str(err), path) from None
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def write_npy_vector(f: IO[bytes], blocks: Iterable[np.ndarray]) -> int:
    """Write the values of ``blocks`` one after the other to the seekable file ``f`` as a
    1-D little-endian float64 ``.npy`` array, one block at a time; return their number.

    The header is written for 0 values, then rewritten in place once the length is
    known (numpy's headers keep room for a length of up to 21 digits for that), so the
    bytes are those of ``np.save`` of the concatenated values, in O(block) memory."""
    start = f.tell()
    f.write(_npy_vector_header(0))
    n = 0
    for block in blocks:
        values = np.ascontiguousarray(block, dtype="<f8").reshape(-1)
        f.write(values.data.cast("B"))
        n += values.size
    end = f.tell()
    header = _npy_vector_header(n)
    if len(header) != len(_npy_vector_header(0)):  # pragma: no cover - numpy keeps the room
        raise RuntimeError("numpy's .npy header grew with the length: cannot write it in place")
    f.seek(start)
    f.write(header)
    f.seek(end)
    return n


def _npy_vector_header(n: int) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f8", "fortran_order": False, "shape": (n,)})
    return buf.getvalue()


def _umask() -> int:
    """The process's umask, read without changing it where the system tells it
    (os.umask can only be read by setting it, which races with other threads)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


# --------------------------------------------------------------------------- #
# .npz members
# --------------------------------------------------------------------------- #
@dataclasses.dataclass(frozen=True)
class Member:
    """What a member's ``.npy`` header declares, checked against the zip entry."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    fortran_order: bool
    compressed: bool
    header_bytes: int

    @property
    def nbytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


class NpzArchive:
    """The members of an ``.npz`` archive (a zip of ``.npy`` files) read without pickle,
    each only after its declared shape and dtype have been checked against the zip
    entry's size: :meth:`describe` reads the ``.npy`` header alone, :meth:`read` then
    allocates exactly the declared array and fills it in chunks.

    ``file`` is an open binary file (not closed here) or a path."""

    def __init__(self, file: str | os.PathLike[str] | IO[bytes]) -> None:
        self._zip = zipfile.ZipFile(file)
        self._entries = {(n[:-4] if n.endswith(".npy") else n): n for n in self._zip.namelist()}

    def __enter__(self) -> NpzArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self._zip.close()

    @property
    def names(self) -> list[str]:
        """Member names, without the ``.npy`` suffix (as ``np.load(...).files``)."""
        return list(self._entries)

    def describe(self, name: str) -> Member:
        """The declared shape and dtype of member ``name`` (KeyError if absent),
        consistent with the size of its zip entry, from its header alone."""
        info = self._zip.getinfo(self._entries[name])
        with self._zip.open(info) as f:
            version = np.lib.format.read_magic(f)
            if version == (1, 0):
                shape, fortran_order, dtype = np.lib.format.read_array_header_1_0(f)
            elif version == (2, 0):
                shape, fortran_order, dtype = np.lib.format.read_array_header_2_0(f)
            else:
                raise ValueError(f"member {name!r}: unsupported .npy format version {version}")
            header_bytes = f.tell()
        if dtype.hasobject or dtype.kind not in "biuf" or dtype.fields is not None:
            raise ValueError(f"member {name!r} holds dtype {dtype}, not numbers")
        member = Member(
            name,
            tuple(int(s) for s in shape),
            dtype,
            bool(fortran_order),
            info.compress_type != zipfile.ZIP_STORED,
            header_bytes,
        )
        if header_bytes + member.nbytes != info.file_size:
            raise ValueError(
                f"member {name!r} declares shape {member.shape} of {dtype} "
                f"({member.nbytes} bytes) but holds {info.file_size - header_bytes} bytes"
            )
        return member

    def read(self, member: Member) -> np.ndarray:
        """The array ``member`` (from :meth:`describe`) declares: C order, writeable,
        in the file's byte order. Reads its declared bytes and no more (a zip entry
        that holds more or fails its CRC is an error)."""
        out = np.empty(member.shape[::-1] if member.fortran_order else member.shape, dtype=member.dtype)
        buf = out.reshape(-1).view(np.uint8).data
        with self._zip.open(self._entries[member.name]) as f:
            f.read(member.header_bytes)
            done = 0
            while done < member.nbytes:
                chunk = f.read(min(READ_CHUNK, member.nbytes - done))
                if not chunk:
                    raise ValueError(f"member {member.name!r} is truncated")
                buf[done : done + len(chunk)] = chunk
                done += len(chunk)
            if f.read(1):  # also completes the CRC check
                raise ValueError(f"member {member.name!r} holds more than its declared shape")
        return np.ascontiguousarray(out.T) if member.fortran_order else out


__all__ = ["Member", "NpzArchive", "atomic_write", "file_kind", "non_regular_kind", "open_regular", "write_npy_vector"]
