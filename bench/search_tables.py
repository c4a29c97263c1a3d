"""Tables that look like the ones issue 43 tried ``n_landmarks="auto"`` on, generated here
(nothing is downloaded): a 2-D table of coordinates like zip codes, a diamonds-like table,
and a near-constant kernel on rows that repeat. Each generator takes ``(n, rng)`` and
returns float64 rows; ``TABLES`` names them with the bandwidth factor (times the median
heuristic) they are fitted with.

* ``zip_codes``: points in the plane clustered like towns (a few hundred centres with
  Zipf-like populations, each point a small jitter of its centre) and three far groups of
  1% of the rows together (like Alaska, Hawaii and Puerto Rico beside the lower 48),
  coordinates rounded to 3 decimals (about 100 m): many rows are near-duplicates or
  duplicates. Fitted at the median bandwidth and at a tenth of it (local structure).
* ``diamonds``: 7 numeric columns with the shape of the classic table: carat
  (log-normal, rounded to 0.01), depth and table (narrow, rounded to 0.1 and 1), price
  (log-linear in carat, with noise), x, y, z (proportional to carat^(1/3), rounded to
  0.01), standardized column by column as a user would (``standardize=True``).
* ``near_constant``: n rows of which about n / 2 are distinct (each drawn twice), with
  a Gaussian kernel 10^3 times the median distance: every kernel value is 1 - O(1e-7).
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np


def zip_codes(n: int, rng: np.random.Generator) -> np.ndarray:
    """Zip-code-like coordinates (degrees): clustered, with many near-duplicates."""
    towns = 400
    centres = np.column_stack([rng.uniform(-120.0, -70.0, towns), rng.uniform(26.0, 48.0, towns)])
    weight = 1.0 / np.arange(1, towns + 1) ** 0.9
    town = rng.choice(towns, size=n, p=weight / weight.sum())
    spread = 0.02 + 0.3 * rng.random(towns)  # town radii, degrees
    X = centres[town] + spread[town, None] * rng.standard_normal((n, 2))
    far = rng.random(n) < 0.01
    groups = np.array([[-150.0, 61.0], [-157.5, 20.5], [-66.3, 18.2]])
    X[far] = groups[rng.integers(0, 3, far.sum())] + 0.5 * rng.standard_normal((far.sum(), 2))
    return np.round(X, 3)


def diamonds(n: int, rng: np.random.Generator) -> np.ndarray:
    """A diamonds-like table of 7 numeric columns, standardized."""
    carat = np.round(np.exp(rng.normal(-0.4, 0.55, n)).clip(0.2, 5.0), 2)
    depth = np.round(rng.normal(61.7, 1.4, n), 1)
    table = np.round(rng.normal(57.4, 2.2, n))
    price = np.round(np.exp(8.4 + 1.7 * np.log(carat) + rng.normal(0.0, 0.25, n)))
    size = carat ** (1.0 / 3.0)
    x = np.round(6.5 * size + rng.normal(0.0, 0.05, n), 2)
    y = np.round(x + rng.normal(0.0, 0.05, n), 2)
    z = np.round(0.617 * x + rng.normal(0.0, 0.03, n), 2)
    X = np.column_stack([carat, depth, table, price, x, y, z])
    return (X - X.mean(axis=0)) / X.std(axis=0, ddof=1)


def near_constant(n: int, rng: np.random.Generator) -> np.ndarray:
    """n rows (n even), each of n / 2 distinct normal rows in 3-D drawn twice, shuffled."""
    half = rng.standard_normal((n // 2, 3))
    return np.ascontiguousarray(np.repeat(half, 2, axis=0)[rng.permutation(2 * (n // 2))])


class Table(NamedTuple):
    name: str
    sample: Callable[[int, np.random.Generator], np.ndarray]
    bandwidth_factor: float


TABLES = (
    Table("zip codes (d=2)", zip_codes, 1.0),
    Table("zip codes (d=2), 0.1 x median", zip_codes, 0.1),
    Table("diamonds-like (d=7)", diamonds, 1.0),
    Table("near-constant kernel (d=3)", near_constant, 1000.0),
)

__all__ = ["TABLES", "Table", "diamonds", "near_constant", "zip_codes"]
