"""Argument checks shared by the modules of :mod:`nystrom_kme.bounds` (private).

Every failure is a ``ValueError`` that names the argument. The names carry no
leading underscore so that the sibling modules import public names of this
private module; nothing outside the package should import it.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

#: The subsample estimate of N(lambda) is trusted while N_hat(lambda) <= s * this
#: (``s`` the subsample size); shared by the spectrum estimate and the decay fit.
RELIABLE_FRACTION = 0.1


def lambda_at_dimension(ev: np.ndarray, target: float, lo: float, hi: float, rtol: float) -> float:
    """The lambda in [lo, hi] where sum(ev / (ev + lambda)) falls to ``target``, by
    bisection in log scale (the sum decreases in lambda) until hi / lo < 1 + rtol;
    returns the upper end. Shared by the spectrum estimate and the decay fit."""
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        if np.sum(ev / (ev + mid)) > target:
            lo = mid
        else:
            hi = mid
        if hi / lo < 1.0 + rtol:
            break
    return hi


def real(value: object, name: str) -> float:
    """``value`` as a float; a ValueError for bools, non-numbers and nan."""
    if (isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "fiu") or (
        isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))
    ):
        out = float(value)
    else:
        raise ValueError(f"{name} must be a real number, got {value!r}")
    if math.isnan(out):
        raise ValueError(f"{name} must be a real number, got nan")
    return out


def positive(value: object, name: str, *, finite: bool = True) -> float:
    """A real number > 0 (and finite unless ``finite=False``)."""
    out = real(value, name)
    if not out > 0.0 or (finite and not math.isfinite(out)):
        raise ValueError(f"{name} must be a {'finite ' if finite else ''}number > 0, got {value!r}")
    return out


def nonnegative(value: object, name: str) -> float:
    """A finite real number >= 0."""
    out = real(value, name)
    if not (out >= 0.0 and math.isfinite(out)):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return out


def probability(value: object, name: str = "delta") -> float:
    """A real number in the open interval (0, 1)."""
    out = real(value, name)
    if not 0.0 < out < 1.0:
        raise ValueError(f"{name} must lie in the open interval (0, 1), got {value!r}")
    return out


def count(value: object, name: str) -> int:
    """A positive integer; integral floats (``5.0``) are accepted, bools are not."""
    number = None
    if isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_)):
        number = int(value)
    elif (
        isinstance(value, numbers.Real)
        and not isinstance(value, (bool, np.bool_))
        and math.isfinite(float(value))
        and float(value).is_integer()
    ):
        number = int(float(value))
    if number is None or number < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return number


def boolean(value: object, name: str) -> bool:
    """A Python or numpy bool (not a number or a string)."""
    if not isinstance(value, (bool, np.bool_)):
        # a ValueError like every other argument error here, not the TypeError TRY004 asks
        raise ValueError(f"{name} must be a bool, got {value!r}")  # noqa: TRY004
    return bool(value)


def pair(value: object, name: str) -> tuple[Any, Any]:
    """``(value[0], value[1])`` for a sequence or array of length 2 (one per distribution)."""
    if isinstance(value, np.ndarray) and value.shape == (2,):
        return (value[0], value[1])
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)) and len(value) == 2:
        return (value[0], value[1])
    raise ValueError(f"{name} must be a pair (one value per distribution), got {value!r}")


def check_m_le_n(m: int, n: int, m_name: str = "m", n_name: str = "n") -> None:
    """A ValueError unless ``m <= n`` (sub-samples are drawn from the data)."""
    if m > n:
        raise ValueError(f"{m_name}={m} must be <= {n_name}={n} (sub-samples are drawn from the data)")


def eff_dim_at(eff_dim: float | Callable[[float], float], lam: float, name: str = "eff_dim") -> float:
    """N(lam) from a number or a callable of lambda (a CovarianceSpectrum is one), >= 0."""
    value = eff_dim(lam) if callable(eff_dim) else eff_dim
    return nonnegative(value, name)


def all_hold(*conds: bool | None) -> bool | None:
    """False if a condition fails, else None if one is unknown (None), else True."""
    if any(c is False for c in conds):
        return False
    if any(c is None for c in conds):
        return None
    return True
