"""Compensated (Neumaier) sums of float64 arrays: the core's own scheme, so that
sums assembled from several core calls match one call over all rows; and the dot
product every result path uses instead of BLAS."""

from __future__ import annotations

import math

import numpy as np


def fsum_dot(a: np.ndarray, b: np.ndarray) -> float:
    """sum_i a_i b_i, the correctly rounded sum (math.fsum) of the rounded products.

    numpy's ``a @ b`` on 1-D float64 arrays calls BLAS, whose threads split the sum
    and change its last bits with the thread count; this does not call BLAS, so a
    result is the same for any thread count of any library (and more accurate).
    O(n), about 0.1 us per element.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme._compensated import fsum_dot
    >>> fsum_dot(np.array([1e16, 1.0, -1e16]), np.ones(3))
    1.0
    """
    return math.fsum(np.multiply(a, b, dtype=np.float64))


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

    def scaled(self, factor: float) -> CompensatedSum:
        """This sum times ``factor`` (exact for a power of two unless it leaves float64's
        range; an overflow gives inf, for the caller to report)."""
        out = CompensatedSum(self.sum.shape)
        with np.errstate(over="ignore"):
            out.sum, out.comp = self.sum * factor, self.comp * factor
        return out

    @classmethod
    def of(cls, total: np.ndarray) -> CompensatedSum:
        """A running sum that starts at `total`."""
        out = cls(np.shape(total))
        out.sum = np.array(total, dtype=np.float64)
        return out


__all__ = ["CompensatedSum", "fsum_dot"]
