"""Concatenated sources (sources/concat.py and sources.concatenate): the pooled sample
of a two-sample test, without copying its parts."""

from __future__ import annotations

import numpy as np
import pytest

import nystrom_kme as nk
from nystrom_kme.sources import ConcatSource, as_source, concatenate
from references import dense_kernel

KERNEL = nk.Gaussian(1.3)


@pytest.fixture
def data(rng: np.random.Generator) -> np.ndarray:
    return rng.normal(size=(9_001, 3))


def test_concatenated_sources(data):
    top, bottom = data[:4000], data[4000:]
    chunks = [data[i : i + 2500] for i in range(0, len(data), 2500)]
    Z = concatenate([as_source(top), as_source(chunks)])
    assert isinstance(Z, ConcatSource)
    both = np.concatenate([top, data])
    idx = np.array([0, 3999, 4000, 4000 + 9000, 17])
    np.testing.assert_array_equal(Z.take(idx), both[idx])
    np.testing.assert_array_equal(np.concatenate([b for _, b in Z.chunks()]), both)
    assert [s for s, _ in Z.chunks()][:3] == [0, 4000, 6500]
    w = np.linspace(0.0, 1.0, len(both))
    acc, total = Z.kernel_sums(data[:5], KERNEL, weights=w)
    np.testing.assert_allclose(acc.value(), dense_kernel("gaussian", data[:5], both, 1.3) @ w, rtol=1e-13)
    # in-memory parts are not copied: the pooled rows are read from the caller's arrays
    pooled = concatenate([as_source(top), as_source(bottom.astype(np.float32))])
    assert isinstance(pooled, ConcatSource) and pooled.dtype == np.float64
    assert np.shares_memory(next(pooled.chunks())[1], top)
    np.testing.assert_array_equal(
        np.concatenate([b for _, b in pooled.chunks()]), np.concatenate([top, bottom.astype(np.float32)])
    )
