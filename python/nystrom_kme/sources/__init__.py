"""Row sources: where the data lives, behind one interface (:class:`RowSource`).

:func:`as_source` turns what a user passes into a source:

* a ``numpy.ndarray`` (or anything array-like that is not one of the below):
  :class:`ArraySource`, converted once to C-contiguous float32/float64;
* a ``numpy.memmap``, an h5py or zarr dataset, or any object with a 2-D ``shape``,
  a ``dtype`` and row slicing: :class:`ArrayLikeSource`, read in blocks of
  ``chunk_rows`` rows (default ~16 MiB);
* a list or tuple of 2-D numpy arrays, a callable returning a fresh iterator of
  chunks, or a one-shot iterator / generator: :class:`IterableSource`;
* a dask array chunked by rows: :class:`DaskSource`, summed on the workers;
* a CUDA array (CuPy, PyTorch, ``__cuda_array_interface__`` or a CUDA DLPack
  device): :class:`CudaSource`, summed on its GPU (needs CuPy, the ``gpu`` extra);
* a path (``str`` or path-like): the data file's rows,
  :func:`nystrom_kme.datafiles.read_data` with its defaults (every format the command
  line reads; a CSV header's names kept).

A DataFrame (pandas, polars, the interchange protocol) is an in-memory array whose
column names the source keeps (``feature_names``), as a data file's header does.

Estimators, MMDs and tests are written once over sources, so every kind works
everywhere; results agree with the in-memory ones bit for bit (array-likes) or to
~1e-16 relative (iterables, dask: the sums are grouped differently).
"""

from __future__ import annotations

import collections.abc
import os
from typing import Union, cast

import numpy as np
from numpy.typing import ArrayLike

from .._columns import check_same_columns, column_names
from .._validation import check_not_sparse, is_path, open_data_file
from ..cuda.arrays import is_cuda_array
from .base import RowSource, core_block_rows
from .chunked import ArrayLikeSource, Chunks, Dataset, IterableSource, is_array_like
from .concat import ConcatSource
from .dask import DaskSource, is_dask_array
from .dask import concatenate as _concatenate_dask
from .device import CudaSource
from .memory import ArraySource

#: What the estimators, MMDs and tests take as a sample, each becoming a source by
#: :func:`as_source`: a source; an array-like (numpy arrays and lists, memmaps, dask
#: and CUDA arrays, DataFrames); a sliceable 2-D dataset (h5py, zarr); chunks of rows;
#: the path of a data file.
SourceLike = Union[RowSource, ArrayLike, Dataset, Chunks, str, "os.PathLike[str]"]


def _kind(X: object) -> str:
    """Which source ``X`` becomes: "cuda", "dask", "array-like", "chunks" or "memory"
    (the one place that asks; the order of the questions matters)."""
    if is_cuda_array(X):  # first: device arrays may subclass numpy's or look array-like
        return "cuda"
    if is_dask_array(X):
        return "dask"
    if isinstance(X, np.memmap):
        return "array-like"
    if isinstance(X, np.ndarray):
        return "memory"
    if isinstance(X, (list, tuple)):
        chunks = len(X) > 0 and all(isinstance(c, np.ndarray) and c.ndim == 2 for c in X)
        return "chunks" if chunks else "memory"
    if is_array_like(X):
        return "array-like"
    if isinstance(X, collections.abc.Iterator) or callable(X):
        return "chunks"
    return "memory"


def is_streamed(X: object) -> bool:
    """True when ``X`` is read block by block rather than converted in memory: a
    memmap, a non-numpy array-like (h5py, zarr, ...), an iterator, a callable, a
    non-empty list/tuple of 2-D numpy arrays, or a dask array.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme import sources
    >>> sources.is_streamed(np.ones((3, 2))), sources.is_streamed([np.ones((3, 2)), np.ones((2, 2))])
    (False, True)
    """
    return _kind(X) in ("dask", "array-like", "chunks")


def as_source(X: SourceLike, name: str = "X", *, chunk_rows: int | None = None) -> RowSource:
    """The row source for ``X`` (a source is returned as is). See the module docstring.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme import sources
    >>> X = np.ones((10, 3))
    >>> src = sources.as_source(X)
    >>> type(src).__name__, src.n_rows, src.n_features
    ('ArraySource', 10, 3)
    >>> type(sources.as_source([X[:4], X[4:]])).__name__           # chunks
    'IterableSource'
    """
    if isinstance(X, RowSource):
        return X
    if is_path(X):
        src: RowSource = open_data_file(X)  # type: ignore[arg-type]  # is_path: str or PathLike
        return src
    check_not_sparse(X, name)
    kind = _kind(X)
    if kind == "cuda":
        return CudaSource(X, name)
    shape = getattr(X, "shape", None)
    if (
        shape is not None
        and (isinstance(X, np.memmap) or (getattr(X, "dtype", None) is not None and not isinstance(X, np.ndarray)))
        and len(shape) != 2
    ):
        raise ValueError(f"{name} must be 2-D of shape (n_samples, n_features), got shape {tuple(shape)}")
    if kind == "dask":
        return DaskSource(X, name)
    # _kind has told which of the alias's members X is
    if kind == "array-like":
        return ArrayLikeSource(cast(Dataset, X), name, chunk_rows)
    if kind == "chunks":
        return IterableSource(cast(Chunks, X), name)
    names = column_names(X, name)  # a DataFrame's, before it becomes an array
    src = ArraySource(cast(ArrayLike, X), name)
    src.feature_names = names
    return src


def as_rows(X: SourceLike, name: str = "X") -> tuple[ArrayLike, tuple[str, ...] | None]:
    """(rows, column names) for the functions that need all rows in memory (``compress``,
    ``suggest_n_landmarks``, ``EmpiricalKME.fit``, a detector's batch): a path becomes
    the data file's rows in one array and its header's names
    (:func:`nystrom_kme.datafiles.read_data`), a row source its rows and names, a
    DataFrame itself (converted by the caller) and its names; anything else passes
    through without names.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from nystrom_kme import sources
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "x.csv"
    >>> _ = path.write_text("age,income\\n30,1.5\\n40,2.5\\n")
    >>> rows, names = sources.as_rows(path)
    >>> rows.tolist(), names
    ([[30.0, 1.5], [40.0, 2.5]], ('age', 'income'))
    """
    if is_path(X) or isinstance(X, RowSource):
        src = as_source(X, name)
        arr = src.to_array()
        if arr is None:
            blocks = [block for _, block in src.chunks()]
            arr = np.concatenate(blocks) if blocks else np.empty((0, src.n_features or 0))
        return arr, src.feature_names
    return cast(ArrayLike, X), column_names(X, name)  # the caller converts (or refuses) the rest


def as_source_pair(X: SourceLike, Y: SourceLike, *, chunk_rows: int | None = None) -> tuple[RowSource, RowSource]:
    """Sources for two samples of the same width.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme import sources
    >>> sx, sy = sources.as_source_pair(np.ones((5, 2)), np.zeros((7, 2)))
    >>> sx.n_rows, sy.n_rows
    (5, 7)
    """
    sx, sy = as_source(X, "X", chunk_rows=chunk_rows), as_source(Y, "Y", chunk_rows=chunk_rows)
    # names first: Y's columns in another order have X's width
    check_same_columns(sx.feature_names, sy.feature_names, sx.name or "X", sy.name or "Y")
    if sx.n_features is not None and sy.n_features is not None and sx.n_features != sy.n_features:
        raise ValueError(f"X has {sx.n_features} features but Y has {sy.n_features}")
    return sx, sy


def _to_cluster(part: DaskSource | ArraySource) -> DaskSource:
    return part if isinstance(part, DaskSource) else DaskSource.from_array(part.array, part.name)


def concatenate(parts: list[RowSource], name: str = "Z") -> RowSource:
    """The rows of ``parts`` one after the other (the pooled sample of a test).

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme import sources
    >>> Z = sources.concatenate([sources.as_source(np.ones((5, 2))), sources.as_source([np.zeros((3, 2))])])
    >>> type(Z).__name__, Z.count_rows()
    ('ConcatSource', 8)
    """
    on_cluster = [p for p in parts if isinstance(p, DaskSource)]
    if len(on_cluster) == len(parts):
        return _concatenate_dask(on_cluster, name)
    if on_cluster and all(isinstance(p, (DaskSource, ArraySource)) for p in parts):
        # an in-memory sample beside a dask one joins it on the cluster
        return _concatenate_dask([_to_cluster(p) for p in parts if isinstance(p, (DaskSource, ArraySource))], name)
    on_device = [p for p in parts if isinstance(p, CudaSource)]
    if len(on_device) == len(parts):
        return CudaSource.concatenate(on_device, name)
    # In-memory samples are not copied either: at 10^6 float32 rows of d = 10 per sample the
    # copy took 0.16-0.24 s (its first touch) and 80 MB of the test's peak.
    return ConcatSource(parts, name)


from .scaled import ScaledSource, scaled  # noqa: E402  (it imports ArraySource from above)

__all__ = [
    "ArrayLikeSource",
    "ArraySource",
    "ConcatSource",
    "CudaSource",
    "DaskSource",
    "IterableSource",
    "RowSource",
    "ScaledSource",
    "SourceLike",
    "as_rows",
    "as_source",
    "as_source_pair",
    "concatenate",
    "scaled",
    "core_block_rows",
    "is_dask_array",
    "is_streamed",
]
