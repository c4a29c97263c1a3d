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


@pytest.fixture(autouse=True)
def _keep_the_simd_level():
    """Every test ends at the level it started at: the one NYSTROM_KME_SIMD chose for the
    run. A test that sets another (or "auto", the best) would otherwise run every later
    test at that level, and the CI's runs at the other levels would not test them there."""
    import nystrom_kme as nk

    level = nk.simd_level()
    yield
    if nk.simd_level() != level:
        nk.set_simd_level(level)


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
