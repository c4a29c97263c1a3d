"""Argument checks shared by the sampling modules (not public API).

Each check validates a constructor argument and returns nothing: policies store
their arguments unmodified (the scikit-learn convention) and convert where they
use them. An argument of the wrong type raises ValueError, as everywhere in the
package (hence the ``noqa: TRY004``).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from numpy.typing import ArrayLike

from .._validation import (
    as_data_matrix,
    check_positive_int,
    check_random_state,
    n_threads_arg,
)
from ..kernels import Kernel, get_kernel


def prepare_input(
    X: ArrayLike, kernel: Kernel | str, n_landmarks: int, rng: np.random.Generator | int | None, *, distinct: bool
) -> tuple[np.ndarray, Kernel, int, np.random.Generator]:
    """Validated (X, kernel resolved on X, m, Generator); distinct: m must not exceed n."""
    X = as_data_matrix(X, "X")
    m = check_positive_int(n_landmarks, "n_landmarks")
    if distinct and m > X.shape[0]:
        raise ValueError(f"n_landmarks={m} exceeds n_samples={X.shape[0]}; this policy selects distinct rows")
    rng = check_random_state(rng)
    return X, get_kernel(kernel).resolve(X, rng), m, rng


def check_bool(value: object, name: str) -> None:
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be a bool, got {value!r}")  # noqa: TRY004


def check_n_threads(n_threads: int | None) -> None:
    """None or a positive int."""
    n_threads_arg(n_threads)


def check_optional_positive_int(value: object, name: str) -> None:
    """None or a positive int."""
    if value is not None:
        check_positive_int(value, name)


def check_tolerance(tolerance: object) -> None:
    """A real number in [0, 1)."""
    if isinstance(tolerance, bool) or not isinstance(tolerance, numbers.Real):
        raise ValueError(  # noqa: TRY004
            f"tolerance must be a real number in [0, 1), got {tolerance!r}"
        )
    if not (math.isfinite(tolerance) and not tolerance < 0.0 and tolerance < 1.0):
        raise ValueError(f"tolerance must be in [0, 1), got {tolerance!r}")


def check_positive_real(value: object, name: str, *, above: float = 0.0) -> None:
    """A finite real number > ``above`` (also as a float: a huge int or Fraction that
    overflows float64 is refused)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number > {above}, got {value!r}")  # noqa: TRY004
    try:
        as_float = float(value)
    except (OverflowError, ValueError, TypeError):
        as_float = math.nan
    if not (math.isfinite(as_float) and as_float > above):
        raise ValueError(f"{name} must be a finite number > {above}, got {value!r}")
