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
