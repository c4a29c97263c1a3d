"""A source's rows with each column standardised (``standardize=``,
:mod:`nystrom_kme._scaling`): block by block as they are read, so a streamed source
stays streamed; an in-memory array is scaled once (a copy)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

import numpy as np
from numpy.typing import ArrayLike

from .base import DerivedSource, RowSource
from .memory import ArraySource


class Scaling(Protocol):
    """What a scaling does to rows (``nystrom_kme._scaling.Scaling``)."""

    def apply(self, X: np.ndarray) -> np.ndarray: ...


class ScaledSource(DerivedSource):
    """The rows of ``inner`` mapped by ``scaling`` as they are read.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme._scaling import Scaling
    >>> from nystrom_kme.sources import as_source, scaled
    >>> scaling = Scaling(np.array([1.0, 2000.0]), np.array([1.0, 1000.0]), "standard")
    >>> src = scaled(as_source([np.array([[0.0, 1000.0], [2.0, 3000.0]])]), scaling)
    >>> [b.tolist() for _, b in src.chunks()]
    [[[-1.0, -1.0], [1.0, 1.0]]]
    """

    def __init__(self, inner: RowSource, scaling: Scaling) -> None:
        super().__init__(inner)
        self.scaling = scaling

    @property
    def n_rows(self) -> int | None:
        return self.inner.n_rows

    def count_rows(self) -> int:
        return self.inner.count_rows()

    def chunks(self) -> Iterator[tuple[int, np.ndarray]]:
        for start, block in self.inner.chunks():
            yield start, self.scaling.apply(block)

    def take(self, indices: ArrayLike) -> np.ndarray:
        return self.scaling.apply(self.inner.take(indices))


def scaled(src: RowSource, scaling: Scaling | None) -> RowSource:
    """``src`` with ``scaling`` applied (an array: one scaled copy), or ``src`` for None.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme._scaling import Scaling
    >>> from nystrom_kme.sources import as_source, scaled
    >>> src = scaled(as_source(np.array([[1.0, 10.0]])), Scaling(np.zeros(2), np.array([1.0, 10.0]), "standard"))
    >>> type(src).__name__, src.take([0]).tolist()
    ('ArraySource', [[1.0, 1.0]])
    """
    if scaling is None:
        return src
    array = src.to_array()
    if array is not None:
        out = ArraySource(scaling.apply(array), src.name)
        out.feature_names = src.feature_names
        return out
    return ScaledSource(src, scaling)


__all__ = ["ScaledSource", "scaled"]
