"""Data files as row sources: ``.npy``, ``.npz``, ``.csv`` / ``.tsv``, HDF5, zarr and
Parquet, read block by block through :mod:`nystrom_kme.sources` so that a file larger
than memory is never loaded whole.

============================  ====================================================
``.npy``                      memory-mapped (``np.load(mmap_mode="r")``), read in blocks;
                              results bit-identical to the in-memory array
``.npz``                      one member (``key``, or the only one), read in memory
                              (zip members cannot be memory-mapped); no pickle
``.csv``, ``.tsv``, ``.txt``  parsed in blocks of lines; a first line that is not all
                              numbers is a header (its names select columns and are
                              kept; pandas' ``0,1,2,...`` over decimals is taken as a
                              header with a warning; ``header=`` decides), read as the
                              ``csv`` module reads a line (see :func:`split_header`);
                              a line whose first non-blank character is ``#`` is a
                              comment, and so is ``#`` to the end of a data line;
                              delimiter ``,`` (``.csv``), tab (``.tsv``) or whitespace
                              (``.txt``) unless given
``.h5``, ``.hdf5``            a 2-D dataset (``key``, or the only one), read in blocks
                              (needs h5py: ``pip install "nystrom-kme[hdf5]"``)
``.zarr``                     a 2-D array (``key`` inside a group), read in blocks
                              (needs zarr: ``pip install "nystrom-kme[zarr]"``)
``.parquet``                  numeric columns, read by record batches (needs pyarrow:
                              ``pip install "nystrom-kme[parquet]"``)
============================  ====================================================

1-D arrays are one column. ``columns`` selects columns by 0-based index, or by name
for files with names (CSV headers, Parquet). Every problem (missing file, a path that
is not a regular file, unknown suffix, missing optional reader, non-numeric rows, a
row with another number of fields than the first, NaN) raises a
:class:`DataFileError` (a ValueError) whose one-line message names the file; in
messages lines count from 1 (as editors do) and columns from 0 ("column index 2",
as ``columns`` does). Only regular files are read (a FIFO or a device is refused:
it could block or never end), and a ``.npz`` member's declared shape is checked
against its size in the archive before it is decompressed.
"""

from __future__ import annotations

import difflib
import io
import itertools
import os
import zipfile
from collections.abc import Callable, Iterator, Sequence
from types import ModuleType
from typing import IO, Any

import numpy as np

from ._files import NpzArchive, non_regular_kind, open_regular
from ._text_fields import (
    delimiter_hint,
    first_line_is_header,
    is_number,
    line_content,
    split_fields,
    split_header,
    split_line,
)
from ._validation import register_data_file_reader
from .sources import ArrayLikeSource, ArraySource, IterableSource, RowSource
from .sources.chunked import Dataset

#: Lines parsed per block of a text file.
TEXT_BLOCK_LINES = 65_536
#: Rows per record batch read from a Parquet file.
PARQUET_BATCH_ROWS = 65_536
#: The formats read as arrays: suffix -> opener(path, key) of an array-like (n, d).
ARRAY_READERS: dict[str, Callable[[str, str | None], Any]] = {
    ".npy": lambda path, key: _open_npy(path),
    ".npz": lambda path, key: _open_npz(path, key),
    ".h5": lambda path, key: _open_hdf5(path, key),
    ".hdf5": lambda path, key: _open_hdf5(path, key),
    ".zarr": lambda path, key: _open_zarr(path, key),
}
#: Text formats, read line block by line block (the separator from the suffix).
TEXT_SUFFIXES = (".csv", ".tsv", ".txt")
#: Every suffix read_data accepts: the one table of formats (a new format is a row here).
SUFFIXES = (".npy", ".npz", ".csv", ".tsv", ".txt", ".h5", ".hdf5", ".zarr", ".parquet")

#: Called with the number of rows just read (progress bars).
RowsRead = Callable[[int], None]


class DataFileError(ValueError):
    """A data file cannot be read as an (n, d) matrix of numbers; the message names it."""


def read_data(
    path: str | os.PathLike[str],
    *,
    columns: Sequence[str | int] | None = None,
    key: str | None = None,
    delimiter: str | None = None,
    on_rows: RowsRead | None = None,
    header: bool | None = None,
) -> RowSource:
    """The rows of a data file, as a :class:`~nystrom_kme.sources.RowSource` that every
    estimator, MMD and test of the package accepts in place of an array.

    Parameters
    ----------
    path : str or path-like
        A file with one of the suffixes of the module docstring.
    columns : sequence of int or str, optional
        Columns to keep, in this order: 0-based indices, or names (CSV header,
        Parquet). Default: all.
    key : str, optional
        The member (``.npz``) or dataset (HDF5, zarr group) to read; default: the
        only one.
    delimiter : str, optional
        Field separator of a text file (default from the suffix).
    on_rows : callable, optional
        Told the number of rows each time a block is read (progress bars).
    header : bool or None, default=None
        Whether the first line of a text file is a header; None detects it (see
        :func:`first_line_is_header`: a line with a non-numeric field is one, and
        pandas' ``0,1,2,...`` over decimals is taken as one with a UserWarning).

    Returns
    -------
    RowSource
        Of shape (n_rows, n_columns), named after ``path`` in error messages; its
        ``feature_names`` are the selected columns' names (a text header, Parquet's
        schema) or None.

    Raises
    ------
    DataFileError
        For any file that cannot be read as numbers (see the module docstring).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from nystrom_kme.datafiles import read_data
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "x.csv"
    >>> _ = path.write_text("a,b,c\\n1,2,3\\n4,5,6\\n")
    >>> src = read_data(path, columns=["c", "a"])
    >>> src.count_rows(), src.n_features, src.feature_names
    (2, 2, ('c', 'a'))
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise DataFileError(f"{path}: no such file")
    suffix = _suffix(path)
    if suffix not in SUFFIXES:
        raise DataFileError(
            f"{path}: unknown data file type {suffix or '(no suffix)'!r}; expected one of {', '.join(SUFFIXES)}"
        )
    kind = non_regular_kind(path)
    if kind is not None and not (suffix == ".zarr" and kind == "a directory"):
        raise DataFileError(f"{path}: not a regular file ({kind})")
    try:
        if suffix in TEXT_SUFFIXES:
            return _text_source(path, suffix, columns, delimiter, on_rows, header)
        if suffix == ".parquet":
            return _parquet_source(path, columns, on_rows)
        return _array_source(ARRAY_READERS[suffix](path, key), path, columns, on_rows)
    except DataFileError:
        raise
    except (OSError, ValueError, KeyError, TypeError, EOFError, zipfile.BadZipFile) as err:
        raise DataFileError(f"{path}: cannot read it as a data file ({_one_line(err)})") from None


def _suffix(path: str) -> str:
    return os.path.splitext(path.rstrip("/" + os.sep))[1].lower()


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split()) or type(err).__name__


# --------------------------------------------------------------------------- #
# array-like files
# --------------------------------------------------------------------------- #
def _open_npy(path: str) -> np.ndarray:
    with open_regular(path) as f:
        if f.read(6) != b"\x93NUMPY":
            raise DataFileError(f"{path}: not a .npy file (no NumPy header)")
    mapped: np.ndarray = np.load(path, mmap_mode="r", allow_pickle=False)
    return mapped


def _open_npz(path: str, key: str | None) -> np.ndarray:
    """The member in memory: its declared shape checked against its size in the
    archive first, then read into exactly that (no zip bomb)."""
    with open_regular(path) as f:
        if f.read(2) != b"PK":
            raise DataFileError(f"{path}: not a .npz file (not a zip archive)")
        f.seek(0)
        with NpzArchive(f) as npz:
            names = npz.names
            if "header" in names and key is None and "weights" in names:
                raise DataFileError(
                    f"{path}: this is a saved embedding or rule, not data (use 'nystrom-kme info' on it)"
                )
            arr = npz.read(npz.describe(_pick(path, names, key, "member")))
    if not arr.dtype.isnative:
        arr = arr.byteswap(inplace=True).view(arr.dtype.newbyteorder("="))
    return arr


def _open_hdf5(path: str, key: str | None) -> Dataset:
    h5py = _optional("h5py", "hdf5", path)
    f = h5py.File(path, "r")
    if key is None:
        found: list[str] = []
        f.visititems(lambda name, obj: found.append(name) if isinstance(obj, h5py.Dataset) else None)
        key = _pick(path, found, None, "dataset")
    if key not in f or not isinstance(f[key], h5py.Dataset):
        raise DataFileError(f"{path}: no dataset {key!r}")
    dataset: Dataset = f[key]
    return dataset


def _open_zarr(path: str, key: str | None) -> Dataset:
    zarr = _optional("zarr", "zarr", path)
    node = zarr.open(path, mode="r")
    if hasattr(node, "shape"):
        array: Dataset = node
        return array
    names = [name for name, _ in node.arrays()]
    array = node[_pick(path, names, key, "array")]
    return array


def _pick(path: str, names: list[str], key: str | None, what: str) -> str:
    if key is not None:
        if key not in names:
            raise DataFileError(f"{path}: no {what} {key!r}; it has {', '.join(names) or 'none'}")
        return key
    if len(names) != 1:
        raise DataFileError(f"{path}: {len(names)} {what}s ({', '.join(names) or 'none'}); choose one with --key")
    return names[0]


def _optional(module: str, extra: str, path: str) -> ModuleType:
    try:
        return __import__(module)
    except ImportError:
        raise DataFileError(
            f'{path}: reading this file needs {module}, which is not installed (pip install "nystrom-kme[{extra}]")'
        ) from None


class _Rows:
    """A 2-D view of an array-like (1-D as one column) that keeps the selected columns
    and reports the rows it reads; it reads only the rows asked for."""

    def __init__(self, base: Dataset, columns: list[int] | None, on_rows: RowsRead | None) -> None:
        self.base, self.columns, self.on_rows = base, columns, on_rows
        n = int(base.shape[0])
        d = 1 if len(base.shape) == 1 else int(base.shape[1])
        self.shape = (n, d if columns is None else len(columns))
        self.dtype = base.dtype
        storage = getattr(base, "chunks", None)
        if isinstance(storage, tuple):
            self.chunks = storage

    def __getitem__(self, rows: slice) -> np.ndarray:
        block = np.asarray(self.base[rows])
        if block.ndim == 1:
            block = block.reshape(-1, 1)
        if self.columns is not None:
            block = block[:, self.columns]
        if self.on_rows is not None:
            self.on_rows(block.shape[0])
        return block


def _array_source(arr: Dataset, path: str, columns: Sequence[str | int] | None, on_rows: RowsRead | None) -> RowSource:
    shape = tuple(arr.shape)
    if len(shape) not in (1, 2):
        raise DataFileError(f"{path}: expected a 1-D or 2-D array, got shape {shape}")
    dtype = np.dtype(arr.dtype)
    if dtype.kind not in "iuf" and dtype != np.bool_:
        raise DataFileError(f"{path}: expected numbers, got dtype {dtype}")
    if shape[0] < 1:
        raise DataFileError(f"{path}: no rows")
    d = 1 if len(shape) == 1 else shape[1]
    cols = None if columns is None else column_indices(path, columns, None, d)
    if isinstance(arr, np.ndarray) and not isinstance(arr, np.memmap) and cols is None and len(shape) == 2:
        return ArraySource(arr, path)  # already in memory (.npz)
    if isinstance(arr, np.memmap) and cols is None and len(shape) == 2 and on_rows is None:
        return ArrayLikeSource(arr, path)  # numpy's own row gathering
    return ArrayLikeSource(_Rows(arr, cols, on_rows), path)


def column_indices(path: str, columns: Sequence[str | int], names: Sequence[str] | None, d: int) -> list[int]:
    """The 0-based indices of ``columns`` (indices, or names from ``names``) among ``d``
    columns; DataFileError naming ``path`` (the file, or ``"stdin"``) for a name the
    header lacks (with the closest one), an index out of range, or none selected.

    Examples
    --------
    >>> from nystrom_kme.datafiles import column_indices
    >>> column_indices("x.csv", ["c", "0"], ["a", "b", "c"], 3)
    [2, 0]
    """
    out = []
    for c in columns:
        if isinstance(c, str) and not c.lstrip("-").isdigit():
            if names is None:
                raise DataFileError(
                    f"{path}: column {c!r} given by name, but the file has no column names (give 0-based indices)"
                )
            if c not in names:
                raise DataFileError(
                    f"{path}: no column {c!r}{_did_you_mean(c, list(names))}; columns: {', '.join(names)}"
                )
            out.append(list(names).index(c))
        else:
            i = int(c)
            if not 0 <= i < d:
                raise DataFileError(
                    f"{path}: column index {i} out of range: the file has {d} columns, indices 0 to {d - 1}"
                )
            out.append(i)
    if not out:
        raise DataFileError(f"{path}: no columns selected")
    return out


def _did_you_mean(name: str, names: list[str]) -> str:
    """'; did you mean 'x'?' for the closest name (case first, then spelling), or ''."""
    close = [n for n in names if n.casefold() == name.casefold()] or difflib.get_close_matches(
        name, names, n=1, cutoff=0.6
    )
    return f" (did you mean {close[0]!r}?)" if close else ""


# --------------------------------------------------------------------------- #
# text files
# --------------------------------------------------------------------------- #
def _fields(count: int) -> str:
    return f"{count} field" + ("" if count == 1 else "s")


def _open_text(path: str) -> IO[str]:
    return io.TextIOWrapper(open_regular(path), encoding="utf-8-sig")


def _text_source(
    path: str,
    suffix: str,
    columns: Sequence[str | int] | None,
    delimiter: str | None,
    on_rows: RowsRead | None,
    header: bool | None,
) -> RowSource:
    delim = delimiter if delimiter is not None else {".csv": ",", ".tsv": "\t"}.get(suffix)
    found: list[tuple[int, str]] = []  # (line number, line) of the first two lines with fields
    with _open_text(path) as f:
        try:
            for no, line in enumerate(f, 1):
                if line_content(line).strip():  # not blank, not a comment line
                    found.append((no, line))
                    if len(found) == 2:
                        break
        except UnicodeDecodeError:
            raise DataFileError(f"{path}: not UTF-8 text") from None
    if not found:
        raise DataFileError(f"{path}: no rows")
    first_no, first = found[0]
    where = f"{path}: line {first_no}"
    # data when its fields are numbers (a trailing comment removed); a header's names as csv reads them
    fields = split_fields(first, delim)
    has_header, names = first_line_is_header(
        fields, split_fields(found[1][1], delim) if len(found) > 1 else None, header, where
    )
    if has_header and names is not None:
        try:
            fields = names = split_header(first, delim, where)
        except ValueError as err:  # an unclosed quote
            raise DataFileError(str(err)) from None
    cols = list(range(len(fields))) if columns is None else column_indices(path, columns, names, len(fields))
    start_line = first_no if has_header else first_no - 1  # lines before the first data line
    what = f"the header (line {first_no})" if has_header else f"line {first_no}"

    def field_counts(rows: Sequence[str]) -> list[int]:
        return [len(r.split()) for r in rows] if delim is None else [r.count(delim) + 1 for r in rows]

    def parse(numbers: Sequence[int], rows: Sequence[str]) -> np.ndarray | None:
        """The rows (lines ``numbers``, comments removed) as an array (None when all are
        blank), or the first bad line named."""
        counts = field_counts(rows)
        if counts.count(len(fields)) != len(counts):
            kept = [i for i, r in enumerate(rows) if r.strip()]  # blank lines hold no fields
            if not kept:
                return None
            if len(kept) < len(rows):
                numbers, rows = [numbers[i] for i in kept], [rows[i] for i in kept]
                counts = field_counts(rows)
            bad = next((i for i, c in enumerate(counts) if c != len(fields)), None)
            if bad is not None:
                raise DataFileError(
                    f"{path}: line {numbers[bad]} has {_fields(counts[bad])} but {what} has {_fields(len(fields))}"
                )
        try:
            arr = np.loadtxt(rows, delimiter=delim, usecols=cols, ndmin=2, dtype=np.float64, comments=None)
        except ValueError as err:
            for no, row in zip(numbers, rows):
                values = split_line(row, delim)
                for c in cols:
                    if not is_number(values[c]):
                        raise DataFileError(
                            f"{path}: line {no}, column index {c}: {values[c]!r} is not a number"
                            + delimiter_hint(values[c], delim)
                        ) from None
            raise DataFileError(f"{path}: lines {numbers[0]}-{numbers[-1]}: {_one_line(err)}") from None
        finite = np.isfinite(arr)
        if not finite.all():
            i, j = np.argwhere(~finite)[0]
            raise DataFileError(f"{path}: line {numbers[i]}, column index {cols[j]}: NaN or inf in the data")
        return arr

    def chunks() -> Iterator[np.ndarray]:
        line_no = start_line  # lines read so far
        with _open_text(path) as f:
            lines = itertools.islice(f, start_line, None)
            while True:
                try:
                    block = list(itertools.islice(lines, TEXT_BLOCK_LINES))
                except UnicodeDecodeError:
                    raise DataFileError(f"{path}: not UTF-8 text (after line {line_no})") from None
                if not block:
                    return
                numbers: Sequence[int] = range(line_no + 1, line_no + 1 + len(block))
                rows: Sequence[str] = block
                if any("#" in line for line in block):  # comments removed (a slower path)
                    rows = [line_content(line) for line in block]
                line_no += len(block)
                arr = parse(numbers, rows)
                if arr is None:
                    continue
                if on_rows is not None:
                    on_rows(arr.shape[0])
                yield arr

    src = IterableSource(chunks, path)
    src.feature_names = None if names is None else tuple(names[c] for c in cols)
    return src


# --------------------------------------------------------------------------- #
# Parquet
# --------------------------------------------------------------------------- #
def _parquet_source(path: str, columns: Sequence[str | int] | None, on_rows: RowsRead | None) -> RowSource:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataFileError(
            f'{path}: reading .parquet files needs pyarrow, which is not installed (pip install "nystrom-kme[parquet]")'
        ) from None
    names = list(pq.ParquetFile(path).schema_arrow.names)
    cols = list(range(len(names))) if columns is None else column_indices(path, columns, names, len(names))
    selected = [names[i] for i in cols]
    if not all(isinstance(n, str) and n for n in selected):
        selected_names = None
    else:
        selected_names = tuple(selected)

    def chunks() -> Iterator[np.ndarray]:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=PARQUET_BATCH_ROWS, columns=selected):
            try:
                arr = np.column_stack(
                    [
                        np.asarray(batch.column(i).to_numpy(zero_copy_only=False), dtype=np.float64)
                        for i in range(batch.num_columns)
                    ]
                )
            except (TypeError, ValueError) as err:
                raise DataFileError(f"{path}: non-numeric column ({_one_line(err)})") from None
            if on_rows is not None:
                on_rows(arr.shape[0])
            if arr.shape[0]:
                yield arr

    src = IterableSource(chunks, path)
    src.feature_names = selected_names
    return src


# Paths are data files wherever rows are taken (as_source, as_data_matrix), read by this
# module's reader: registered here so that the modules below need not import this one.
register_data_file_reader(read_data)

__all__ = [
    "DataFileError",
    "SUFFIXES",
    "column_indices",
    "first_line_is_header",
    "read_data",
    "split_fields",
    "split_header",
]
