"""Landmark selection policies: validity, references, leverage-score accuracy and
the Section 6.1 comparison against uniform sampling."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import dense_kernel

import nystrom_kme as nk
from nystrom_kme import sampling as S
from nystrom_kme.datasets import GaussianMixture

DISTINCT = {"uniform-without-replacement", "rpcholesky", "block-rpcholesky", "greedy-cholesky",
            "herding", "cortes-scott", "dpp-greedy"}


def blobs(rng, n=600, d=3):
    centres = rng.normal(scale=3.0, size=(4, d))
    return centres[rng.integers(0, 4, size=n)] + rng.normal(size=(n, d))


# --------------------------------------------------------------------------- #
# every policy returns valid indices
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("name", S.SAMPLER_NAMES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_every_policy_returns_valid_indices(rng, name, dtype):
    X = blobs(rng).astype(dtype)
    policy = S.resolve_sampler(name)
    idx = policy.select_indices(X, nk.Gaussian(1.5), 40, np.random.default_rng(0))
    assert idx.dtype == np.int64 and idx.shape == (40,)
    assert idx.min() >= 0 and idx.max() < len(X)
    if name in DISTINCT:
        assert len(np.unique(idx)) == 40
    # reproducible from the generator's seed
    again = S.resolve_sampler(name).select_indices(X, nk.Gaussian(1.5), 40, np.random.default_rng(0))
    np.testing.assert_array_equal(idx, again)


@pytest.mark.parametrize("name", S.SAMPLER_NAMES)
def test_nystrom_fit_with_every_sampler(rng, name):
    X = blobs(rng, n=400)
    est = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=30, sampler=name, random_state=2).fit(X)
    np.testing.assert_array_equal(est.landmarks_, X[est.landmark_indices_])
    L = est.landmarks_
    s = dense_kernel("gaussian", L, X, 1.0).sum(axis=1) / len(X)
    K = dense_kernel("gaussian", L, L, 1.0)
    assert np.linalg.norm(K @ est.weights_ - s) <= 1e-7 * np.linalg.norm(s)


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


# --------------------------------------------------------------------------- #
# pivoted Cholesky against dense references
# --------------------------------------------------------------------------- #
def dense_residual_trace(K, S_):
    if len(S_) == 0:
        return np.trace(K)
    KS = K[:, S_]
    return np.trace(K) - np.trace(KS @ np.linalg.solve(K[np.ix_(S_, S_)], KS.T))


@pytest.mark.parametrize("cls", [S.GreedyCholeskySampling, S.RPCholeskySampling,
                                 S.BlockRPCholeskySampling, S.DPPGreedySampling])
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


# --------------------------------------------------------------------------- #
# herding and Cortes-Scott against definitions
# --------------------------------------------------------------------------- #
def test_herding_matches_its_definition(rng):
    X = blobs(rng, n=250)
    K = dense_kernel("gaussian", X, X, 1.0)
    mu = K.mean(axis=1)
    idx = S.KernelHerding().select_indices(X, nk.Gaussian(1.0), 20)
    sums = np.zeros(len(X))
    taken = np.zeros(len(X), bool)
    for t, j in enumerate(idx):
        obj = np.where(taken, -np.inf, mu - sums / (t + 1))
        assert j == int(np.argmax(obj))
        taken[j] = True
        sums += K[:, j]
    # candidates subset: indices still rows of X, among the candidates
    pol = S.KernelHerding(n_candidates=100)
    sub = pol.select_indices(X, nk.Gaussian(1.0), 20, 1)
    assert np.isin(sub, pol.candidates_).all() and len(pol.candidates_) == 100
    rep = S.KernelHerding(allow_repeats=True).select_indices(X[:10], nk.Gaussian(1.0), 30)
    assert len(rep) == 30


def test_cortes_scott_is_farthest_point(rng):
    X = blobs(rng, n=250)
    K = dense_kernel("gaussian", X, X, 1.0)
    idx = S.CortesScottSampling().select_indices(X, nk.Gaussian(1.0), 20, 5)
    for t in range(1, 20):
        dist = (2 - 2 * K[:, idx[:t]]).min(axis=1)
        assert dist[idx[t]] >= dist.max() - 1e-12


# --------------------------------------------------------------------------- #
# ridge leverage scores
# --------------------------------------------------------------------------- #
# Default BLESS constants up to d_eff ~ 10% of n; beyond, the dictionary must
# grow (q1, q2 = 8 here) for the same factor: the theory's constants are larger.
@pytest.mark.parametrize(("lam", "q12"), [(1e-2, 4.0), (1e-3, 4.0), (1e-4, 8.0)])
def test_leverage_scores_within_a_constant_factor(rng, lam, q12):
    X = blobs(rng, n=800)
    sigma = 1.5
    n = len(X)
    K = dense_kernel("gaussian", X, X, sigma)
    exact = np.diag(np.linalg.solve(K + n * lam * np.eye(n), K))
    for seed in range(5):
        est = S.ridge_leverage_scores(X, nk.Gaussian(sigma), lam, random_state=seed, q1=q12, q2=q12)
        ratio = est / exact
        assert ratio.min() > 1 / 4 and ratio.max() < 4, (ratio.min(), ratio.max())
        assert est.sum() == pytest.approx(exact.sum(), rel=0.5)  # effective dimension


def test_rls_policy_exposes_scores_and_derives_lambda(rng):
    X = blobs(rng, n=1000)
    policy = S.RidgeLeverageSampling()
    idx = policy.select_indices(X, nk.Gaussian(1.0), 60, 0)
    assert idx.shape == (60,)
    assert policy.scores_.shape == (1000,) and np.all(policy.scores_ >= 0)
    assert policy.lam_ > 0
    # lambda derived from m: effective dimension at least deff_fraction * m (estimates)
    assert policy.effective_dimension_ >= 0.5 * 60 * 0.5
    fixed = S.RidgeLeverageSampling(lam=1e-3, replace=False)
    idx = fixed.select_indices(X, nk.Gaussian(1.0), 60, 0)
    assert fixed.lam_ == 1e-3 and len(np.unique(idx)) == 60
    est = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=60, sampler="rls", random_state=0).fit(X)
    assert est.sampler_.scores_.shape == (1000,)


# --------------------------------------------------------------------------- #
# resolution, user-supplied landmarks, validation
# --------------------------------------------------------------------------- #
def test_resolve_sampler_accepts_names_objects_and_functions():
    assert isinstance(S.resolve_sampler("uniform"), S.UniformSampling)
    assert S.resolve_sampler("uniform-without-replacement").replace is False
    assert isinstance(S.resolve_sampler("bless"), S.RidgeLeverageSampling)
    policy = S.BlockRPCholeskySampling(block_size=4)
    assert S.resolve_sampler(policy) is policy

    class Duck:
        def select_indices(self, X, kernel, n_landmarks, rng):
            return np.arange(n_landmarks)

    duck = Duck()
    assert S.resolve_sampler(duck) is duck
    wrapped = S.resolve_sampler(lambda X, kernel, m, rng: [0, 1, 2])
    np.testing.assert_array_equal(wrapped.select_indices(np.zeros((5, 1)), "gaussian", 3), [0, 1, 2])
    with pytest.raises(ValueError, match="unknown sampler 'leverage'"):
        S.resolve_sampler("leverage")
    with pytest.raises(ValueError, match="sampler must be"):
        S.resolve_sampler(3.5)


def test_nystrom_default_sampling_is_unchanged(rng):
    X = rng.normal(size=(500, 2))
    est = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=25, random_state=7).fit(X)
    ref = np.random.default_rng(7).integers(0, 500, size=25)
    np.testing.assert_array_equal(est.landmark_indices_, ref)
    assert isinstance(est.sampler_, S.UniformSampling) and est.sampler_.replace
    # weighted data: uniform draws become draws proportional to the weights
    w = np.zeros(500)
    w[:10] = 1.0
    est = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=25, random_state=7).fit(X, sample_weight=w)
    assert est.landmark_indices_.max() < 10


def test_user_supplied_landmarks(rng):
    X = rng.normal(size=(300, 2))
    idx = np.array([3, 10, 10, 250])
    est = nk.NystromKME(nk.Gaussian(1.0), sampler=idx).fit(X)
    np.testing.assert_array_equal(est.landmark_indices_, idx)
    np.testing.assert_array_equal(est.landmarks_, X[idx])
    Z = rng.normal(size=(7, 2))
    est = nk.NystromKME(nk.Gaussian(1.0), sampler=Z).fit(X)
    assert est.landmark_indices_ is None and est.sampler_ is None
    np.testing.assert_array_equal(est.landmarks_, Z)
    s = dense_kernel("gaussian", Z, X, 1.0).mean(axis=1)
    np.testing.assert_allclose(dense_kernel("gaussian", Z, Z, 1.0) @ est.weights_, s, atol=1e-10)
    est32 = nk.NystromKME(nk.Gaussian(1.0), sampler=Z.tolist()).fit(X.astype(np.float32))
    assert est32.landmarks_.dtype == np.float32
    with pytest.raises(ValueError, match="n_landmarks=3"):
        nk.NystromKME(nk.Gaussian(1.0), n_landmarks=3, sampler=idx).fit(X)
    with pytest.raises(ValueError, match="must lie in"):
        nk.NystromKME(nk.Gaussian(1.0), sampler=[0, 300]).fit(X)
    with pytest.raises(ValueError, match="integers"):
        nk.NystromKME(nk.Gaussian(1.0), sampler=np.array([0.0, 1.0])).fit(X)
    with pytest.raises(ValueError, match="features"):
        nk.NystromKME(nk.Gaussian(1.0), sampler=np.zeros((3, 5))).fit(X)
    with pytest.raises(ValueError, match="returned by the sampler"):
        nk.NystromKME(nk.Gaussian(1.0), n_landmarks=3, sampler=lambda X, k, m, r: [-1]).fit(X)


def test_input_validation(rng):
    X = rng.normal(size=(50, 2))
    k = nk.Gaussian(1.0)
    with pytest.raises(ValueError, match="n_landmarks"):
        S.RPCholeskySampling().select_indices(X, k, 0)
    with pytest.raises(ValueError, match="n_landmarks=51 exceeds"):
        S.GreedyCholeskySampling().select_indices(X, k, 51)
    with pytest.raises(ValueError, match="n_landmarks=51 exceeds"):
        S.UniformSampling(replace=False).select_indices(X, k, 51)
    assert len(S.UniformSampling().select_indices(X, k, 51, 0)) == 51
    with pytest.raises(ValueError, match="X"):
        S.KernelHerding().select_indices(np.ones(5), k, 2)
    with pytest.raises(ValueError, match="kernel"):
        S.CortesScottSampling().select_indices(X, 3.0, 2)
    with pytest.raises(ValueError, match="block_size"):
        S.BlockRPCholeskySampling(block_size=0)
    with pytest.raises(ValueError, match="tolerance"):
        S.RPCholeskySampling(tolerance=-1.0)
    with pytest.raises(ValueError, match="lam"):
        S.RidgeLeverageSampling(lam=0.0)
    with pytest.raises(ValueError, match="q must"):
        S.RidgeLeverageSampling(q=1.0)
    with pytest.raises(ValueError, match="n_candidates"):
        S.KernelHerding(n_candidates=0)
    with pytest.raises(ValueError, match="n_threads"):
        S.GreedyCholeskySampling(n_threads=0)
    with pytest.raises(ValueError, match="candidates"):
        S.KernelHerding(n_candidates=10).select_indices(X, k, 20, 0)


# --------------------------------------------------------------------------- #
# Section 6.1: fewer landmarks for the same error
# --------------------------------------------------------------------------- #
@pytest.fixture(scope="module")
def mixture_problem():
    mixture = GaussianMixture(8, 10, random_state=0)
    X = mixture.sample(10_000, random_state=1)
    sigma = nk.Gaussian().resolve(X, np.random.default_rng(0)).bandwidth
    return mixture, X, sigma


def mean_error(problem, sampler, m, seeds):
    mixture, X, sigma = problem
    errors = []
    for seed in seeds:
        est = nk.NystromKME(nk.Gaussian(sigma), n_landmarks=m, sampler=sampler,
                            random_state=seed).fit(X)
        errors.append(mixture.embedding_error(est.landmarks_, est.weights_, sigma))
    return float(np.mean(errors))


_WORSE = pytest.mark.xfail(
    reason="measured on this mixture (n = 10^4, median bandwidth): greedy pivoting and "
           "k-centre chase outliers and leverage scores oversample the tails, so these need "
           "MORE landmarks than uniform sampling for the same exact error; see bench/samplers.py",
    strict=True)  # seeded, so deterministic: an XPASS means the claim changed


@pytest.mark.parametrize("name", [
    "rpcholesky", "block-rpcholesky", "herding",
    pytest.param("rls", marks=_WORSE), pytest.param("greedy-cholesky", marks=_WORSE),
    pytest.param("dpp-greedy", marks=_WORSE), pytest.param("cortes-scott", marks=_WORSE),
])
def test_policy_beats_uniform_on_the_gaussian_mixture(mixture_problem, name):
    # Below the uniform error curve at m = 50 and 100 (means over seeds), i.e. the
    # uniform error is reached with fewer landmarks.
    deterministic = name in ("herding", "greedy-cholesky", "dpp-greedy")
    for m in (50, 100):
        uniform = mean_error(mixture_problem, "uniform", m, range(6))
        policy = mean_error(mixture_problem, name, m, range(1 if deterministic else 4))
        assert policy < uniform, (m, policy, uniform)
