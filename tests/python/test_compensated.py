"""Compensated sums: exact where naive float64 sums lose every digit."""

from __future__ import annotations

import math

import numpy as np

from nystrom_kme._compensated import CompensatedSum


def test_neumaier_sum_recovers_cancelled_terms():
    terms = [np.array([1e16, 1.0]), np.array([1.0, -1e16]), np.array([-1e16, 1e16])]
    acc = CompensatedSum((2,))
    for t in terms:
        acc.add(t)
    np.testing.assert_array_equal(acc.value(), [1.0, 1.0])  # naive float64 gives [0, 0]
    assert np.sum(terms, axis=0).tolist() == [0.0, 0.0]


def test_error_stays_at_one_rounding_for_many_terms():
    rng = np.random.default_rng(0)
    terms = [rng.normal(size=3) * 10.0 ** rng.integers(-8, 9) for _ in range(10_000)]
    acc = CompensatedSum((3,))
    for t in terms:
        acc.add(t)
    exact = np.array([math.fsum(t[i] for t in terms) for i in range(3)])
    scale = np.abs(np.array(terms)).sum(axis=0)
    # Neumaier: error <= ~2 eps |sum| + O(n eps^2) sum |terms|, far below naive n eps sum |terms|
    assert (np.abs(acc.value() - exact) <= 2.3e-16 * np.abs(exact) + 1e-28 * 10_000 * scale).all()


def test_merge_copy_and_of():
    a, b = CompensatedSum.of(np.array([1e16])), CompensatedSum((1,))
    b.add(np.array([1.0]))
    b.add(np.array([1.0]))
    c = a.copy()
    c.merge(b)
    assert c.value()[0] == 1e16 + 2.0 and a.value()[0] == 1e16  # copy is independent
