"""Random splits of permutation tests against closed-form probabilities, and their
independence from chunking, threads and SIMD levels."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import nystrom_kme as nk
from nystrom_kme.permutation import SplitSpec


def test_random_splits_are_uniform_over_subsets():
    """n = 5, n1 = 2: each of the C(5, 2) = 10 subsets has probability 1/10. Chi-square
    goodness of fit over 20000 splits, at level 0.001 (scipy's chi2 quantile)."""
    B = 20_000
    S = nk.random_splits(2, 3, n_permutations=B, random_state=11)
    assert S.shape == (5, B + 1) and (S.sum(axis=0) == 2).all()
    codes = (S[:, 1:] * (1 << np.arange(5))[:, None]).sum(axis=0)
    _, counts = np.unique(codes, return_counts=True)
    assert len(counts) == 10
    chi2 = ((counts - B / 10) ** 2 / (B / 10)).sum()
    assert chi2 < stats.chi2.ppf(0.999, df=9)


def test_random_splits_inclusion_rate_and_pairs():
    """n = 300, n1 = 100, 3000 splits: each row joins the first sample with probability
    1/3 (binomial counts; Bonferroni over the 300 rows at family level 0.001, and the
    spread of the counts against the binomial variance with chi-square bounds at 0.001)
    and a given pair with probability 100 * 99 / (300 * 299) (binomial, level 0.001)."""
    B = 3000
    S = nk.random_splits(100, 200, n_permutations=B, random_state=5)[:, 1:]
    assert (S.sum(axis=0) == 100).all()
    p_row = 1 / 3
    rate = S.sum(axis=1)
    lo, hi = stats.binom.interval(1 - 0.001 / 300, B, p_row)
    assert lo <= rate.min() and rate.max() <= hi
    scaled = (300 - 1) * rate.var(ddof=1) / (B * p_row * (1 - p_row))
    assert stats.chi2.ppf(0.0005, 299) < scaled < stats.chi2.ppf(0.9995, 299)
    p_pair = 100 * 99 / (300 * 299)
    lo2, hi2 = stats.binom.interval(0.999, B, p_pair)
    assert lo2 <= (S[0] & S[1]).sum() <= hi2
    assert len({col.tobytes() for col in S.T}) == B


def test_spec_labels_packed_and_weights_agree():
    spec = SplitSpec(300, 500, 20, seed=42)
    labels = spec.labels()
    assert labels.shape == (800, 21) and (labels.sum(axis=0) == 300).all()
    assert labels[:300, 0].all() and not labels[300:, 0].any()
    np.testing.assert_array_equal(np.unpackbits(spec.packed_labels(), axis=1, count=21).astype(bool), labels)
    W = spec.weights_from_packed(spec.packed_labels()[100:200])
    np.testing.assert_allclose(W, np.where(labels[100:200], 1 / 300, -1 / 500), rtol=1e-15)
    # the generator gives the same labels however the rows are requested
    splits = spec.new()
    parts = [splits.next_weights(r) for r in (1, 299, 400, 100)]
    np.testing.assert_array_equal(np.concatenate(parts) > 0, labels)
    assert (nk.random_splits(300, 500, 20, random_state=7) == nk.random_splits(300, 500, 20, random_state=7)).all()
    with pytest.raises(ValueError, match="n1"):
        nk.random_splits(0, 3)
    with pytest.raises(ValueError, match="n_permutations"):
        nk.random_splits(3, 3, n_permutations=0)


def test_labels_do_not_depend_on_the_simd_level():
    spec = SplitSpec(50, 70, 40, seed=3)
    ref = spec.labels()
    for level in nk.show_config(mode="dicts")["simd"]["available"]:  # conftest restores the level
        nk.set_simd_level(level)
        np.testing.assert_array_equal(spec.labels(), ref)


def test_negative_row_counts_are_refused_before_any_allocation():
    from nystrom_kme import _core

    splits = _core.RandomSplits(5, 5, 10, 0)
    with pytest.raises(ValueError, match="-1 rows requested"):
        splits.next_weights(-1)
    assert splits.next_weights(10).shape == (10, 11)  # nothing was consumed
