"""Compensated (Neumaier) sums of float64 arrays: the core's own scheme, so that
sums assembled from several core calls match one call over all rows."""

from __future__ import annotations

import numpy as np


class CompensatedSum:
    """Running Neumaier sum of float64 arrays of one shape.

    Examples
    --------
    >>> acc = CompensatedSum((2,))
    >>> for x in ([1e16, 1.0], [1.0, 1.0], [-1e16, 1.0]):
    ...     acc.add(np.array(x))
    >>> acc.value().tolist()
    [1.0, 3.0]
    """

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.sum = np.zeros(shape)
        self.comp = np.zeros(shape)

    def add(self, x: np.ndarray) -> None:
        s = self.sum
        t = s + x
        self.comp += np.where(np.abs(s) >= np.abs(x), (s - t) + x, (x - t) + s)
        self.sum = t

    def merge(self, other: CompensatedSum) -> None:
        """Add another running sum (its sum and its compensation)."""
        self.add(other.sum)
        self.add(other.comp)

    def value(self) -> np.ndarray:
        return self.sum + self.comp

    def copy(self) -> CompensatedSum:
        out = CompensatedSum(self.sum.shape)
        out.sum, out.comp = self.sum.copy(), self.comp.copy()
        return out

    @classmethod
    def of(cls, total: np.ndarray) -> CompensatedSum:
        """A running sum that starts at `total`."""
        out = cls(np.shape(total))
        out.sum = np.array(total, dtype=np.float64)
        return out


__all__ = ["CompensatedSum"]
