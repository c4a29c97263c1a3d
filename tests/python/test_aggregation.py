"""The aggregation functions against dense references written from the papers'
definitions: the unbiased MMD^2 from explicit index sets, MMD-FUSE's normalised
statistic in the form of its public code (V10/V01/V11 label vectors), brute-force ranks."""

import numpy as np
import pytest

from nystrom_kme.two_sample.rules import (
    fuse_scores,
    log_mean_exp,
    marginal_pvalues,
    permutation_pvalue,
    standardised,
    unbiased_mmd2,
)


def gram(Z, sigma):
    d2 = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    return np.exp(-d2 / (2 * sigma**2))


def random_labels(rng, n1, n2, B):
    """(N, B + 1) booleans, column 0 the observed split (first n1 rows)."""
    cols = [np.r_[np.ones(n1, bool), np.zeros(n2, bool)]]
    for _ in range(B):
        cols.append(rng.permutation(cols[0]))
    return np.stack(cols, axis=1)


def direct_unbiased(G, first):
    """sum_{i != j in X} / (n1 (n1 - 1)) + same for Y - 2 mean over X x Y."""
    X, Y = np.flatnonzero(first), np.flatnonzero(~first)
    n1, n2 = X.size, Y.size
    GXX, GYY = G[np.ix_(X, X)], G[np.ix_(Y, Y)]
    return (
        (GXX.sum() - np.trace(GXX)) / (n1 * (n1 - 1))
        + (GYY.sum() - np.trace(GYY)) / (n2 * (n2 - 1))
        - 2 * G[np.ix_(X, Y)].mean()
    )


def forms(G, labels, n1, n2):
    W = np.where(labels, 1.0 / n1, -1.0 / n2)
    T = np.einsum("ib,ij,jb->b", W, G, W)[None]
    cross = (W.T @ G.sum(1))[None]
    return T, cross, np.array([G.sum()]), np.array([np.trace(G)])


@pytest.mark.parametrize("n1,n2", [(7, 7), (5, 9), (12, 4)])
def test_unbiased_mmd2_equals_the_u_statistic_of_each_split(n1, n2):
    rng = np.random.default_rng(n1 * 100 + n2)
    Z = rng.normal(size=(n1 + n2, 3))
    G = gram(Z, 1.3)
    labels = random_labels(rng, n1, n2, 6)
    T, cross, total, trace = forms(G, labels, n1, n2)
    U = unbiased_mmd2(T, n1, n2, cross=cross, total=total, trace=trace)
    ref = [direct_unbiased(G, labels[:, b]) for b in range(labels.shape[1])]
    np.testing.assert_allclose(U[0], ref, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("n1,n2", [(8, 8), (6, 10)])
def test_centred_statistics_differ_from_the_exact_ones_by_a_constant(n1, n2):
    """Without the trace, the statistics are centred over the splits: the same up to one
    constant (the diagonal term) as with the exact trace."""
    rng = np.random.default_rng(3)
    Z = rng.normal(size=(n1 + n2, 2))
    G = gram(Z, 0.7)
    labels = random_labels(rng, n1, n2, 30)
    T, cross, total, trace = forms(G, labels, n1, n2)
    exact = unbiased_mmd2(T, n1, n2, cross=cross, total=total, trace=trace)[0]
    centred = unbiased_mmd2(T, n1, n2, cross=cross, total=total)[0]
    assert abs(centred.mean()) < 1e-14
    shift = exact - centred
    np.testing.assert_allclose(shift, shift[0], rtol=1e-9, atol=1e-14)


def test_equal_sizes_need_no_cross_terms():
    rng = np.random.default_rng(4)
    Z = rng.normal(size=(20, 2))
    G = gram(Z, 1.0)
    labels = random_labels(rng, 10, 10, 9)
    T, cross, total, trace = forms(G, labels, 10, 10)
    with_cross = unbiased_mmd2(T, 10, 10, cross=cross, total=total, trace=trace)
    without = unbiased_mmd2(T, 10, 10, total=total, trace=trace)
    np.testing.assert_allclose(with_cross, without, rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="cross"):
        unbiased_mmd2(T, 10, 11)
    with pytest.raises(ValueError, match="at least 2"):
        unbiased_mmd2(T, 1, 11, cross=cross, total=total)


def fuse_code_statistic(K, labels, m, n):
    """MMD-FUSE's public code, for X of m >= n rows first: the diagonal zeroed, its
    V10 / V01 / V11 weighting of the permuted kernel sums, divided by ||K_0||_F and
    multiplied by sqrt(n (n - 1))."""
    K0 = K - np.diag(np.diag(K))
    V11 = np.where(labels, 1.0, -1.0)
    V10 = labels.astype(float)
    V01 = -(~labels).astype(float)
    M = (
        np.sum(V10 * (K0 @ V10), 0) * (n - m + 1) * (n - 1) / (m * (m - 1))
        + np.sum(V01 * (K0 @ V01), 0) * (m - n + 1) / m
        + np.sum(V11 * (K0 @ V11), 0) * (n - 1) / m
    )
    return M / np.sqrt(np.sum(K0**2)) * np.sqrt(n * (n - 1))


def test_fuse_scores_equal_the_public_code_for_equal_sample_sizes():
    rng = np.random.default_rng(5)
    n = 15
    Z = rng.normal(size=(2 * n, 2))
    labels = random_labels(rng, n, n, 12)
    for sigma in (0.3, 1.0, 4.0):
        K = gram(Z, sigma)
        T, cross, total, trace = forms(K, labels, n, n)
        U = unbiased_mmd2(T, n, n, cross=cross, total=total, trace=trace)
        frob = np.sqrt(np.sum(K**2) - np.trace(K**2))
        ours = fuse_scores(U, np.array([frob]), n, n)[0]
        np.testing.assert_allclose(ours, fuse_code_statistic(K, labels, n, n), rtol=1e-10)


def test_fuse_scores_scale_with_the_temperature_and_reject_bad_norms():
    U = np.array([[0.5, -1.0], [2.0, 0.0]])
    frob = np.array([2.0, 4.0])
    np.testing.assert_allclose(fuse_scores(U, frob, 5, 6, 3.0), 3.0 * fuse_scores(U, frob, 5, 6))
    # a kernel whose off-diagonal vanishes has nothing to normalise: score 0, not an error
    assert fuse_scores(U, np.array([1.0, 0.0]), 5, 5)[1].tolist() == [0.0, 0.0]
    for bad in (np.array([1.0, -1.0]), np.array([1.0, np.inf]), np.array([np.nan, 1.0])):
        with pytest.raises(ValueError, match="Frobenius"):
            fuse_scores(U, bad, 5, 5)


def test_standardised_statistics_against_their_definition():
    rng = np.random.default_rng(8)
    U = rng.normal(size=(4, 31)) * np.array([[1e-9], [1.0], [1e6], [0.0]])
    Z = standardised(U)
    for k in range(3):
        np.testing.assert_allclose(Z[k], (U[k] - U[k].mean()) / U[k].std(), rtol=1e-12)
    assert (Z[3] == 0).all()  # no spread: no evidence, not a NaN
    assert np.abs(Z).max() <= np.sqrt(30) + 1e-12  # |z| <= sqrt(B) for B + 1 values


def test_log_mean_exp_against_a_direct_formula_and_at_large_values():
    rng = np.random.default_rng(6)
    M = rng.normal(size=(5, 7)) * 3
    np.testing.assert_allclose(log_mean_exp(M), np.log(np.exp(M).mean(axis=0)), rtol=1e-13)
    big = np.array([[1e4, -1e4], [1e4 + np.log(3.0), -1e4]])
    np.testing.assert_allclose(log_mean_exp(big), [1e4 + np.log(2.0), -1e4], rtol=1e-15)


def test_marginal_pvalues_and_the_aggregate_pvalue_by_brute_force():
    rng = np.random.default_rng(7)
    U = rng.integers(0, 5, size=(4, 30)).astype(float)  # many ties
    P = marginal_pvalues(U)
    brute = np.array([[np.mean(U[k] >= U[k, b]) for b in range(U.shape[1])] for k in range(4)])
    np.testing.assert_array_equal(P, brute)
    F = rng.normal(size=40)
    assert permutation_pvalue(F) == np.count_nonzero(F >= F[0]) / F.size
