"""CUDA arrays: detection without importing any GPU library, and conversion to CuPy
without copies.

An array is a CUDA array when it has ``__cuda_array_interface__`` (CuPy, PyTorch,
Numba, JAX ...) or when its ``__dlpack_device__()`` names a CUDA device (DLPack
device types 2, ``kDLCUDA``, and 13, ``kDLCUDAManaged``; 3, ``kDLCUDAHost``, is
pinned host memory and is not one).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

#: A cupy.ndarray: CuPy is an optional extra that the type checker does not follow (Any).
CupyArray = Any

#: DLPack device types of memory a CUDA kernel reads: kDLCUDA, kDLCUDAManaged.
DLPACK_CUDA_DEVICES = (2, 13)

GPU_EXTRA_HINT = (
    "the GPU path needs CuPy: pip install 'nystrom-kme[gpu]' (or cupy-cuda12x / cupy-cuda13x matching your CUDA driver)"
)


def is_cuda_array(x: object) -> bool:
    """Whether ``x`` lives in CUDA device memory (no GPU library is imported).

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.cuda import is_cuda_array
    >>> is_cuda_array(np.ones((3, 2)))
    False
    >>> class FakeDeviceArray:                       # what a CuPy array looks like
    ...     __cuda_array_interface__ = {"shape": (3, 2), "typestr": "<f8", "data": (0, False), "version": 3}
    >>> is_cuda_array(FakeDeviceArray())
    True
    """
    if isinstance(x, type):
        return False
    if _has_interface(x):
        return True
    device = getattr(x, "__dlpack_device__", None)
    if device is None or not callable(device):
        return False
    try:
        kind = device()[0]
    except Exception:
        return False
    return int(kind) in DLPACK_CUDA_DEVICES


def _has_interface(x: object) -> bool:
    """hasattr(x, "__cuda_array_interface__"), where reading it may raise more than
    AttributeError (torch raises RuntimeError for tensors that require grad: those
    go through DLPack, whose error says to detach them)."""
    try:
        return hasattr(x, "__cuda_array_interface__")
    except Exception:  # noqa: BLE001 - any failure means: not usable through the interface
        return False


def cupy_available() -> bool:
    """Whether CuPy can be imported (it is imported only by this call and GPU work).

    Examples
    --------
    >>> from nystrom_kme.cuda import cupy_available
    >>> isinstance(cupy_available(), bool)
    True
    """
    try:
        importlib.import_module("cupy")
    except ImportError:
        return False
    return True


def require_cupy() -> ModuleType:
    """The cupy module, or an ImportError that says how to get it."""
    try:
        return importlib.import_module("cupy")
    except ImportError as err:
        raise ImportError(f"CUDA array given but {GPU_EXTRA_HINT} ({err})") from None


def as_cupy(x: object) -> CupyArray:
    """``x`` as a cupy.ndarray on its device, without a copy: CuPy arrays as they are,
    ``__cuda_array_interface__`` through ``cupy.asarray``, the rest through
    ``cupy.from_dlpack``."""
    cp = require_cupy()
    if isinstance(x, cp.ndarray):
        return x
    if _has_interface(x):
        return cp.asarray(x)
    return cp.from_dlpack(x)


def as_device_matrix(x: object, name: str = "X") -> CupyArray:
    """``x`` as a validated C-contiguous (n, d) float32/float64 cupy array: the
    dtype is kept when it is float32/float64, anything else becomes float64; a copy
    only when the layout or the dtype requires one. Raises ValueError as
    ``as_data_matrix`` does for host arrays."""
    cp = require_cupy()
    arr = as_cupy(x)
    if arr.dtype.kind == "c":
        raise ValueError(f"{name} must be real-valued, got complex values")
    if arr.dtype not in (cp.float32, cp.float64):
        arr = arr.astype(cp.float64)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be 2-D of shape (n_samples, n_features), got shape {arr.shape}")
    if arr.shape[0] < 1:
        raise ValueError(f"{name} must have at least 1 row(s), got shape {arr.shape}")
    if arr.shape[1] < 1:
        raise ValueError(f"{name} must have at least one feature, got shape {arr.shape}")
    arr = cp.ascontiguousarray(arr)
    if not bool(cp.isfinite(arr).all()):
        raise ValueError(f"{name} contains NaN or inf")
    return arr


__all__ = [
    "CupyArray",
    "DLPACK_CUDA_DEVICES",
    "GPU_EXTRA_HINT",
    "as_cupy",
    "as_device_matrix",
    "cupy_available",
    "is_cuda_array",
    "require_cupy",
]
