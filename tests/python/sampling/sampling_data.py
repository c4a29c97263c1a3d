"""Data shared by the sampling tests (imported by name: this folder is on sys.path)."""

from __future__ import annotations

import numpy as np


def blobs(rng: np.random.Generator, n: int = 600, d: int = 3) -> np.ndarray:
    """Four well separated Gaussian blobs in R^d."""
    centres = rng.normal(scale=3.0, size=(4, d))
    return centres[rng.integers(0, 4, size=n)] + rng.normal(size=(n, d))
