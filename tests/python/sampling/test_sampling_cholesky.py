"""The pivoted-Cholesky family against dense references."""

from __future__ import annotations

import numpy as np
import pytest
from sampling_data import blobs

import nystrom_kme as nk
from nystrom_kme import sampling as S
from references import dense_kernel


def test_pivoted_policies_stop_at_the_numerical_rank(rng):
    X = rng.normal(size=(200, 3))
    for name in ("greedy-cholesky", "rpcholesky", "block-rpcholesky", "dpp-greedy"):
        idx = S.resolve_sampler(name).select_indices(X, nk.Linear(1.0), 10, 0)
        assert len(idx) == 3 and len(np.unique(idx)) == 3
    est = nk.NystromKME(nk.Linear(1.0), n_landmarks=10, sampler="rpcholesky", random_state=0).fit(X)
    assert est.landmarks_.shape == (3, 3)


def test_thread_count_does_not_change_the_pivots(rng):
    X = blobs(rng, n=5000)  # several row chunks
    for cls in (S.RPCholeskySampling, S.BlockRPCholeskySampling, S.GreedyCholeskySampling):
        a = cls(n_threads=1).select_indices(X, nk.Gaussian(1.0), 50, 3)
        b = cls(n_threads=2).select_indices(X, nk.Gaussian(1.0), 50, 3)
        np.testing.assert_array_equal(a, b)


def dense_residual_trace(K, S_):
    if len(S_) == 0:
        return np.trace(K)
    KS = K[:, S_]
    return np.trace(K) - np.trace(KS @ np.linalg.solve(K[np.ix_(S_, S_)], KS.T))


@pytest.mark.parametrize(
    "cls", [S.GreedyCholeskySampling, S.RPCholeskySampling, S.BlockRPCholeskySampling, S.DPPGreedySampling]
)
def test_residual_trace_is_non_increasing_and_exact(rng, cls):
    X = blobs(rng, n=300)
    K = dense_kernel("gaussian", X, X, 1.2)
    policy = cls() if cls is not S.BlockRPCholeskySampling else cls(block_size=7)
    idx = policy.select_indices(X, nk.Gaussian(1.2), 35, 4)
    trace = policy.residual_trace_
    assert trace.shape == (36,)
    assert np.all(np.diff(trace) <= 0)
    assert trace[0] == pytest.approx(300.0)
    for j in (1, 5, 17, 35):
        assert trace[j] == pytest.approx(dense_residual_trace(K, idx[:j]), abs=1e-8 * 300)
    assert np.all(policy.pivot_values_ > 0)


def test_greedy_cholesky_takes_the_largest_residual(rng):
    X = blobs(rng, n=200)
    K = dense_kernel("gaussian", X, X, 1.0)
    policy = S.GreedyCholeskySampling()
    idx = policy.select_indices(X, nk.Gaussian(1.0), 15)
    for j in range(1, 15):
        Sj = idx[:j]
        R = K - K[:, Sj] @ np.linalg.solve(K[np.ix_(Sj, Sj)], K[Sj, :])
        assert np.diag(R)[idx[j]] >= np.diag(R).max() - 1e-10
    # the DPP greedy MAP is the same algorithm
    np.testing.assert_array_equal(S.DPPGreedySampling().select_indices(X, nk.Gaussian(1.0), 15), idx)


def test_rpcholesky_first_pivot_follows_the_diagonal(rng):
    # with k(x, x) = ||x||^2 (linear kernel) the first pivot is drawn prop. to ||x||^2
    X = np.array([[1.0, 0.0], [3.0, 0.0]])
    counts = np.zeros(2)
    gen = np.random.default_rng(0)
    for _ in range(2000):
        counts[S.RPCholeskySampling().select_indices(X, nk.Linear(1.0), 1, gen)[0]] += 1
    assert counts[1] / counts.sum() == pytest.approx(0.9, abs=0.03)


def test_input_validation(rng):
    X = rng.normal(size=(50, 2))
    k = nk.Gaussian(1.0)
    with pytest.raises(ValueError, match="n_landmarks"):
        S.RPCholeskySampling().select_indices(X, k, 0)
    with pytest.raises(ValueError, match="n_landmarks=51 exceeds"):
        S.GreedyCholeskySampling().select_indices(X, k, 51)
    with pytest.raises(ValueError, match="block_size"):
        S.BlockRPCholeskySampling(block_size=0)
    with pytest.raises(ValueError, match="tolerance"):
        S.RPCholeskySampling(tolerance=-1.0)
    with pytest.raises(ValueError, match="n_threads"):
        S.GreedyCholeskySampling(n_threads=0)


@pytest.mark.parametrize("name", ["greedy-cholesky", "rpcholesky", "block-rpcholesky", "dpp-greedy"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_zero_kernel_matrix_says_why_no_landmark_is_chosen(name, dtype):
    """All-zero data under the linear kernel: every k(x_i, x_i) is 0, so there is no
    pivot; the error says so (not 'indices ... must be non-empty')."""
    X = np.zeros((20, 3), dtype=dtype)
    why = r"kernel matrix of X is zero .*numerical rank 0.*use another kernel or bandwidth"
    with pytest.raises(ValueError, match=why):
        S.resolve_sampler(name).select_indices(X, nk.Linear(1.0), 5, 0)
    with pytest.raises(ValueError, match=why):
        nk.NystromKME(nk.Linear(1.0), n_landmarks=5, sampler=name, random_state=0).fit(X)
    # one non-zero row is enough for one pivot
    X[3, 1] = 1.0
    idx = S.resolve_sampler(name).select_indices(X, nk.Linear(1.0), 5, 0)
    np.testing.assert_array_equal(idx, [3])


def dense_greedy(K, m):
    """Greedy pivoted Cholesky on the dense matrix, one pivot at a time (smallest index
    on ties): the reference for the core's blocked (panel) greedy."""
    K = K.copy()
    piv = []
    for _ in range(m):
        s = int(np.argmax(np.diag(K)))
        piv.append(s)
        col = K[:, s] / np.sqrt(K[s, s])
        K -= np.outer(col, col)
        K[s, s] = 0.0
    return np.array(piv)


@pytest.mark.parametrize("n_threads", [1, 2, 3])
def test_blocked_greedy_matches_the_dense_reference(rng, n_threads):
    # m = 200 takes several panels of 128 candidates; the pivots must be the dense ones
    X = blobs(rng, n=1500)
    K = dense_kernel("gaussian", X, X, 1.0)
    idx = S.GreedyCholeskySampling(n_threads=n_threads).select_indices(X, nk.Gaussian(1.0), 200)
    np.testing.assert_array_equal(idx, dense_greedy(K, 200))


def test_rpcholesky_pivot_pairs_follow_the_sequential_law():
    # rpcholesky runs the block (rejection) form; its first two pivots must have the law
    # of sequential RPCholesky: P(a, b) = d_a / sum d * R_bb / sum R (R: Schur complement)
    X = np.array([[0.0, 0.0], [1.0, 0.2], [0.3, 1.5], [2.0, 2.0]])
    K = dense_kernel("gaussian", X, X, 1.0)
    d = np.diag(K)
    p = np.zeros((4, 4))
    for a in range(4):
        R = K - np.outer(K[:, a], K[:, a]) / K[a, a]
        r = np.clip(np.diag(R), 0, None)
        p[a] = d[a] / d.sum() * r / r.sum()
    gen = np.random.default_rng(5)
    counts = np.zeros((4, 4))
    draws = 4000
    for _ in range(draws):
        a, b = S.RPCholeskySampling().select_indices(X, nk.Gaussian(1.0), 2, gen)
        counts[a, b] += 1
    mask = p > 0
    chi2 = float((((counts - draws * p) ** 2)[mask] / (draws * p[mask])).sum())
    assert counts[~mask].sum() == 0
    assert chi2 < 40.0  # 11 degrees of freedom: P(chi2 > 40) < 5e-5


def test_leverage_scores_do_not_depend_on_the_thread_count(rng):
    X = blobs(rng, n=3000)
    scores = [S.ridge_leverage_scores(X, nk.Gaussian(1.0), 1e-3, random_state=2, n_threads=nt) for nt in (1, 2, 3)]
    np.testing.assert_array_equal(scores[0], scores[1])
    np.testing.assert_array_equal(scores[0], scores[2])
