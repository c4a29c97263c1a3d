"""Shared fixtures; dense references live in references.py."""

from __future__ import annotations

import os

# Small dense factorizations (eigh of a few hundred points) are 10-25x slower
# with a multi-threaded BLAS on a loaded 2-core machine; the core has its own threads.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


def _gpu_present() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, no device
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``gpu`` need CuPy and a CUDA device: skipped (with the reason) otherwise."""
    if not any(item.get_closest_marker("gpu") for item in items) or _gpu_present():
        return
    skip = pytest.mark.skip(reason="needs CuPy and a CUDA GPU (the gpu extra)")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)
