"""Input checks shared by the public API: one conversion, clear messages."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np


def as_data_matrix(X: Any, name: str = "X", *, min_rows: int = 1) -> np.ndarray:
    """Return ``X`` as a C-contiguous 2-D float32 or float64 array, or raise.

    float32 and float64 input keep their dtype (no copy when already C-contiguous);
    anything else (ints, bools, lists, Fortran order, views) is converted once.
    """
    if isinstance(X, np.ndarray) and X.dtype in (np.float32, np.float64):
        arr = np.ascontiguousarray(X)
    else:
        try:
            arr = np.ascontiguousarray(np.asarray(X, dtype=np.float64))
        except (TypeError, ValueError) as err:
            raise ValueError(f"{name} must be a numeric array: {err}") from None
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be 2-D of shape (n_samples, n_features), got shape {arr.shape}"
        )
    if arr.shape[0] < min_rows:
        raise ValueError(f"{name} must have at least {min_rows} row(s), got shape {arr.shape}")
    if arr.shape[1] < 1:
        raise ValueError(f"{name} must have at least one feature, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf")
    return arr


def check_sample_weight(sample_weight: Any, n: int, *, normalisable: bool = True,
                        name: str = "sample_weight") -> Any:
    """Validated per-row weights, or None. In-memory weights (anything but a dask array)
    are checked at once: shape (n,), finite, non-negative, and (``normalisable``) a
    positive sum; they come back as float64. Dask weights are checked block by block
    where they are read."""
    if sample_weight is None:
        return None
    if type(sample_weight).__module__.split(".")[0] == "dask":
        if tuple(sample_weight.shape) != (n,):
            raise ValueError(f"{name} must have shape ({n},), got {tuple(sample_weight.shape)}")
        return sample_weight
    w = np.asarray(sample_weight, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {w.shape}")
    if not np.isfinite(w).all():
        raise ValueError(f"{name} contains NaN or inf")
    if (w < 0).any():
        raise ValueError(f"{name} must be non-negative")
    if normalisable and not w.sum() > 0:
        raise ValueError(f"{name} must have a positive sum")
    return w


def check_positive_int(value: Any, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def check_random_state(random_state: Any, name: str = "random_state") -> np.random.Generator:
    """The one seed rule of the package: None (fresh entropy), a non-negative int, a
    numpy SeedSequence, a numpy Generator (used as is, so draws continue from it), or
    a legacy numpy RandomState (a seed is drawn from it, as scikit-learn users pass)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, np.random.SeedSequence):
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(int(random_state.randint(0, 2**31 - 1)))
    if isinstance(random_state, (bool, np.bool_)) or not isinstance(random_state, numbers.Integral):
        raise ValueError(f"{name} must be None, a non-negative int, a numpy SeedSequence or "
                         f"Generator, got {random_state!r}")
    if random_state < 0:
        raise ValueError(f"{name} must be a non-negative int seed, got {random_state!r}")
    return np.random.default_rng(int(random_state))


class NotFittedError(ValueError, AttributeError):
    """An estimator was used before ``fit``: a ValueError and an AttributeError, as
    scikit-learn's ``NotFittedError`` (so ``hasattr`` checks and sklearn tools work)."""


def check_is_fitted(estimator: Any, attribute: str = "weights_") -> None:
    """Raise :class:`NotFittedError` unless ``estimator`` has the fitted ``attribute``."""
    if not hasattr(estimator, attribute):
        raise NotFittedError(f"this {type(estimator).__name__} is not fitted yet; call fit(X) first")


def n_threads_arg(n_threads: Any) -> int:
    """None -> 0 (all OpenMP threads), else a positive int."""
    if n_threads is None:
        return 0
    return check_positive_int(n_threads, "n_threads")


def common_dtype(*arrays: np.ndarray) -> list[np.ndarray]:
    """Cast to float64 unless every array is float32 (the core needs one dtype)."""
    if all(a.dtype == np.float32 for a in arrays):
        return list(arrays)
    return [np.ascontiguousarray(a, dtype=np.float64) for a in arrays]
