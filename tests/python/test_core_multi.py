"""The compiled multi-column sums: ``_core.split_kernel_sums`` at the edge shapes of its
register blocks against dense numpy, at every SIMD level the CPU runs."""

from __future__ import annotations

import numpy as np
import nystrom_kme as nk
import pytest
from nystrom_kme import _core
from references import dense_kernel

LEVELS = nk.show_config(mode="dicts")["simd"]["available"]


@pytest.fixture
def restore_level():
    yield
    nk.set_simd_level("auto")


def labels(n1, n2, B, seed):
    return _core.RandomSplits(n1, n2, B, seed).next_weights(n1 + n2)


def rel_err(got, expected):
    return float(np.abs(got - expected).max() / np.abs(expected).max())


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("k", [2, 17, 201])
@pytest.mark.parametrize("m", [1, 7, 16, 29])
def test_split_sums_edge_shapes_match_dense(level, k, m, restore_level):
    # k weight columns: one partial panel, two panels and a column, 201 (B = 200);
    # m below, at and past one 16-row tile, not a multiple of the register blocks;
    # q = 1100 is no multiple of a 256-row chunk.
    rng = np.random.default_rng(k * 100 + m)
    n1, n2, d = 560, 540, 4
    Z = rng.normal(size=(n1 + n2, d))
    L = rng.normal(size=(m, d))
    nk.set_simd_level(level)
    kernel = nk.Laplacian(1.8).to_core()
    expected = dense_kernel("laplacian", L, Z, 1.8) @ labels(n1, n2, k - 1, 3)
    splits = _core.RandomSplits(n1, n2, k - 1, 3)
    S = _core.split_kernel_sums(L, Z[:300], splits, kernel, 1) + _core.split_kernel_sums(L, Z[300:], splits, kernel, 1)
    assert S.shape == (m, k)
    assert rel_err(S, expected) < 1e-12
    again = _core.split_kernel_sums(L, Z[:300], _core.RandomSplits(n1, n2, k - 1, 3), kernel, 2)
    first = _core.split_kernel_sums(L, Z[:300], _core.RandomSplits(n1, n2, k - 1, 3), kernel, 1)
    assert np.array_equal(again, first)  # bit-identical for any thread count
