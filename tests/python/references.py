"""Dense numpy references, written from the kernel definitions (not from the core).
Imported by the tests as ``from references import dense_kernel`` (tests/python is on
pytest's pythonpath)."""

from __future__ import annotations

import numpy as np


def dense_kernel(
    name: str, X: np.ndarray, Y: np.ndarray, sigma: float, *, degree: int = 2, offset: float = 1.0
) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    diff = X[:, None, :] - Y[None, :, :]
    d2 = (diff * diff).sum(axis=-1)
    r = np.sqrt(d2)
    dot = X @ Y.T
    if name == "gaussian":
        return np.exp(-d2 / (2 * sigma**2))
    if name in ("laplacian", "matern12"):
        return np.exp(-r / sigma)
    if name == "matern32":
        a = np.sqrt(3.0) * r / sigma
        return (1 + a) * np.exp(-a)
    if name == "matern52":
        a = np.sqrt(5.0) * r / sigma
        return (1 + a + a * a / 3) * np.exp(-a)
    if name == "inverse_multiquadric":
        return 1 / np.sqrt(1 + d2 / sigma**2)
    if name == "linear":
        return dot / sigma**2
    if name == "polynomial":
        return (dot / sigma**2 + offset) ** degree
    raise ValueError(name)


def eval_close(a, b, Y: np.ndarray) -> float:
    """max |mu_a(y) - mu_b(y)| / max |mu_b(y)| over the rows y of Y: two embeddings
    compared as functions, by evaluating them (a, b: anything callable on Y)."""
    fa, fb = np.asarray(a(Y)), np.asarray(b(Y))
    return float(np.abs(fa - fb).max() / np.abs(fb).max())
