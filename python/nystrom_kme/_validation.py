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


def as_weights(w: Any, n: int, name: str = "sample_weight") -> np.ndarray:
    """Non-negative finite weights of shape (n,), normalised to sum to one."""
    arr = np.asarray(w, dtype=np.float64)
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},), got {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} contains NaN or inf")
    if (arr < 0).any():
        raise ValueError(f"{name} must be non-negative")
    total = arr.sum()
    if not total > 0:
        raise ValueError(f"{name} must have a positive sum")
    return np.ascontiguousarray(arr / total)


def check_positive_int(value: Any, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def check_random_state(random_state: Any) -> np.random.Generator:
    """None, an int seed or a numpy Generator -> a Generator."""
    if random_state is None or isinstance(random_state, (numbers.Integral, np.random.SeedSequence)):
        return np.random.default_rng(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state
    raise ValueError(f"random_state must be None, an int or a numpy Generator, got {random_state!r}")


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
