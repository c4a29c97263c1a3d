"""NystromKME in memory against dense numpy (weights, solvers, sample weights, layouts),
partial_fit and merge, and its scikit-learn conventions."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest

import nystrom_kme as nk
from references import dense_kernel, eval_close


def rkhs_norm(K: np.ndarray, v: np.ndarray) -> float:
    return math.sqrt(max(float(v @ K @ v), 0.0))


@pytest.fixture
def data(rng: np.random.Generator) -> np.ndarray:
    return rng.normal(size=(30_000, 4))


@pytest.mark.parametrize("solver", ["auto", "cod", "cholesky"])
def test_weights_match_pinv_when_well_conditioned(rng, solver):
    X = rng.normal(size=(2000, 3))
    est = nk.NystromKME(nk.Gaussian(0.4), n_landmarks=60, solver=solver, random_state=1).fit(X)
    L = X[est.landmark_indices_]
    np.testing.assert_array_equal(est.landmarks_, L)
    s = dense_kernel("gaussian", L, X, 0.4).sum(axis=1) / len(X)
    alpha = np.linalg.pinv(dense_kernel("gaussian", L, L, 0.4)) @ s
    np.testing.assert_allclose(est.weights_, alpha, rtol=1e-9, atol=1e-9 * np.abs(alpha).max())


def test_duplicate_landmarks_get_equal_minimum_norm_weights(rng):
    X = rng.normal(size=(15, 2))
    # m = n with replacement: many duplicates, K_m exactly singular
    for solver in ("auto", "cod", "cholesky"):
        est = nk.NystromKME(nk.Gaussian(0.5), n_landmarks=15, solver=solver, random_state=3).fit(X)
        idx = est.landmark_indices_
        assert len(np.unique(idx)) < len(idx)
        L = X[idx]
        K = dense_kernel("gaussian", L, L, 0.5)
        s = dense_kernel("gaussian", L, X, 0.5).sum(axis=1) / len(X)
        alpha = np.linalg.pinv(K, rcond=1e-10) @ s  # the minimum-norm solution
        np.testing.assert_allclose(est.weights_, alpha, rtol=1e-8, atol=1e-10)
        for j in np.unique(idx):
            assert np.ptp(est.weights_[idx == j]) < 1e-12


def test_rank_deficient_cod_is_minimum_norm(rng):
    # linear kernel on d = 2 data: K_m = L L^T has rank 2 for any m
    X = rng.normal(size=(500, 2))
    est = nk.NystromKME(nk.Linear(1.0), n_landmarks=25, solver="cod", random_state=0).fit(X)
    L = X[est.landmark_indices_]
    K = L @ L.T
    s = (L @ X.T).sum(axis=1) / len(X)
    alpha = np.linalg.pinv(K, rcond=1e-10) @ s
    np.testing.assert_allclose(est.weights_, alpha, rtol=1e-8, atol=1e-12)
    assert est.rank_ == 2
    # any other solution has a larger norm
    null = np.linalg.svd(K)[2][2:].T
    other = est.weights_ + null @ rng.normal(size=null.shape[1])
    np.testing.assert_allclose(K @ other, K @ est.weights_, atol=1e-10)
    assert np.linalg.norm(other) > np.linalg.norm(est.weights_)


@pytest.mark.parametrize("solver", ["auto", "cod"])
def test_duplicates_of_a_singular_gram_keep_the_minimum_norm_solution(rng, solver):
    # 8 distinct points in 2-D, drawn 25 times: duplicated landmarks whose distinct
    # Gram matrix (linear kernel, rank 2) is itself singular. Merging the copies must
    # still give pinv(K_m) s for the m x m K_m with the copies.
    X = rng.normal(size=(8, 2))[rng.integers(0, 8, size=500)]
    est = nk.NystromKME(nk.Linear(1.0), n_landmarks=25, solver=solver, random_state=1).fit(X)
    L = X[est.landmark_indices_]
    assert len(np.unique(L, axis=0)) < 25
    K = L @ L.T
    alpha = np.linalg.pinv(K, rcond=1e-10) @ ((L @ X.T).sum(axis=1) / len(X))
    np.testing.assert_allclose(est.weights_, alpha, rtol=1e-8, atol=1e-12)
    assert est.rank_ == 2


# Two backward-stable solutions (residual ~1e-15) differ in RKHS norm by about
# sqrt(r^T K^+ r), which grows with cond(K_m): sigma = 3 has cond ~1e13 (measured
# 2e-10 apart), sigma = 300 is numerically rank ~16 of 200 (measured 1.2e-8).
@pytest.mark.parametrize(("sigma", "rtol"), [(0.3, 1e-10), (3.0, 1e-9), (300.0, 1e-7)])
def test_all_solvers_give_the_same_embedding(rng, sigma, rtol):
    X = rng.normal(size=(3000, 4))
    ests = {
        s: nk.NystromKME(nk.Gaussian(sigma), n_landmarks=200, solver=s, random_state=5).fit(X) for s in ("auto", "cod")
    }
    L = ests["cod"].landmarks_
    K = dense_kernel("gaussian", L, L, sigma)
    ref = ests["cod"].weights_
    diff = rkhs_norm(K, ests["auto"].weights_ - ref)
    assert diff <= rtol * rkhs_norm(K, ref)
    # the projection property: K_m alpha = K_mn 1 / n
    s = dense_kernel("gaussian", L, X, sigma).sum(axis=1) / len(X)
    assert np.linalg.norm(K @ ref - s) <= 1e-8 * np.linalg.norm(s)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_solvers_on_rank_deficient_2d_data_differ_negligibly(seed):
    # Clustered 2-D data, m far above the numerical rank of K_m (the case the docstring
    # quantifies): both solvers take the same rank, and their embeddings differ by less
    # than 1% of the statistical error 1/sqrt(n) (measured: at most 0.4%) and 1e-3 of
    # the embedding's norm (measured: 2e-4), in RKHS norm from the dense Gram matrix.
    rng = np.random.default_rng(seed)
    n, m, sigma = 3000, 600, 1.0
    X = rng.uniform(-5, 5, size=(20, 2))[rng.integers(0, 20, n)] + rng.normal(scale=0.6, size=(n, 2))
    auto, cod = (
        nk.NystromKME(nk.Gaussian(sigma), n_landmarks=m, solver=s, random_state=seed).fit(X) for s in ("auto", "cod")
    )
    assert auto.rank_ == cod.rank_ < 0.95 * m
    L = X[cod.landmark_indices_]
    assert np.array_equal(L, X[auto.landmark_indices_])
    K = dense_kernel("gaussian", L, L, sigma)
    diff = rkhs_norm(K, auto.weights_ - cod.weights_)
    assert diff <= 0.01 / math.sqrt(n)
    assert diff <= 1e-3 * rkhs_norm(K, cod.weights_)


def test_sample_weight_matches_dense(rng):
    X = rng.normal(size=(800, 2))
    w = rng.uniform(0.0, 2.0, size=800)
    est = nk.NystromKME(nk.Gaussian(0.7), n_landmarks=40, solver="cod", random_state=0).fit(X, sample_weight=w)
    L = X[est.landmark_indices_]
    s = dense_kernel("gaussian", L, X, 0.7) @ (w / w.sum())
    alpha = np.linalg.pinv(dense_kernel("gaussian", L, L, 0.7), rcond=1e-12) @ s
    np.testing.assert_allclose(est.weights_, alpha, rtol=1e-7, atol=1e-9)
    emp = nk.EmpiricalKME(nk.Gaussian(0.7)).fit(X, sample_weight=w)
    np.testing.assert_allclose(emp.weights_, w / w.sum())


def test_input_layouts_and_dtypes_agree(rng):
    base = rng.normal(size=(1000, 6))
    k = nk.Gaussian(2.0)
    ref = nk.NystromKME(k, n_landmarks=50, random_state=4).fit(base[:, ::2].copy()).weights_
    for X in (base[:, ::2], np.asfortranarray(base[:, ::2]), base[:, ::2].tolist()):
        got = nk.NystromKME(k, n_landmarks=50, random_state=4).fit(X).weights_
        np.testing.assert_array_equal(got, ref)
    X32 = base[:, ::2].astype(np.float32)
    f32 = nk.NystromKME(k, n_landmarks=50, random_state=4, solver="cod").fit(X32)
    assert f32.landmarks_.dtype == np.float32
    # same (rounded) data in float64: the difference is the float32 arithmetic alone
    ref64 = nk.NystromKME(k, n_landmarks=50, random_state=4, solver="cod").fit(X32.astype(np.float64)).weights_
    L = X32.astype(np.float64)[f32.landmark_indices_]
    K = dense_kernel("gaussian", L, L, 2.0)
    assert rkhs_norm(K, f32.weights_ - ref64) <= 1e-4 * rkhs_norm(K, ref64)
    ints = nk.NystromKME(k, n_landmarks=20, random_state=0).fit(rng.integers(0, 5, size=(300, 2)))
    assert ints.landmarks_.dtype == np.float64


def test_float32_fits_of_low_dimensional_data_keep_float64s_mmd():
    """Float32 data give float32 kernel sums; their solve drops K_m's directions below
    float32's rounding (``_solve.FLOAT32_RCOND``). With float64's threshold those
    directions held that rounding only, amplified: the MMD^2 between two fits of 2-D
    float32 data came out 0.0 and in 3-D 23-37% too large, where float64 gave ~1e-3
    (bench/RESULTS.md, issue 46). Now within 2e-5 of the same values' fits in float64
    (measured: at most 4.8e-6), against a dense MMD^2 of the float64 embeddings."""
    k = nk.Gaussian(1.0)
    for d in (2, 3):
        rng = np.random.default_rng(10 * d)
        X = rng.normal(size=(6000, d)).astype(np.float32)
        Y = (1.05 * rng.normal(size=(6000, d))).astype(np.float32)
        fits = {}
        for dtype in (np.float32, np.float64):
            fits[dtype] = [nk.NystromKME(k, random_state=0).fit(Z.astype(dtype)) for Z in (X, Y)]
        (fx, fy), (gx, gy) = fits[np.float32], fits[np.float64]
        assert fx.landmarks_.dtype == np.float32
        L = np.vstack([gx.landmarks_, gy.landmarks_])
        w = np.r_[gx.weights_, -gy.weights_]
        dense = float(w @ dense_kernel("gaussian", L, L, 1.0) @ w)  # ||mu_X - mu_Y||^2 of the float64 fits
        assert nk.mmd2(gx, gy) == pytest.approx(dense, rel=1e-6)
        assert abs(nk.mmd2(fx, fy) - dense) <= 2e-5


def test_default_landmark_count():
    assert nk.default_n_landmarks(10_000) == 461
    assert nk.default_n_landmarks(1) == 1
    assert nk.default_n_landmarks(3) == 1
    assert nk.default_n_landmarks(10**6) == math.ceil(1000 * math.log(1000))
    X = np.random.default_rng(0).normal(size=(10_000, 2))
    assert nk.NystromKME(random_state=0).fit(X).weights_.shape == (461,)


_THREAD_SCRIPT = """
import hashlib, numpy as np, nystrom_kme as nk
X = np.random.default_rng(0).normal(size=(40000, 10))
e = nk.NystromKME(random_state=0).fit(X)
print(hashlib.sha256(e.weights_.tobytes()).hexdigest(), e(X[:1000]).sum().hex())
"""


def test_weights_bit_identical_for_any_thread_count():
    outs = []
    for threads in ("1", "2"):
        env = {**os.environ, "OMP_NUM_THREADS": threads}
        outs.append(
            subprocess.run(
                [sys.executable, "-c", _THREAD_SCRIPT], env=env, check=True, capture_output=True, text=True
            ).stdout
        )
    assert outs[0] == outs[1]


def test_bad_parameters_are_named(rng):
    X = rng.normal(size=(20, 2))
    cases = [
        (dict(n_landmarks=0), "n_landmarks"),
        (dict(n_landmarks=-1), "n_landmarks"),
        (dict(n_landmarks=2.5), "n_landmarks"),
        (dict(solver="lu"), "solver"),
        (dict(rcond=-1.0), "rcond"),
        (dict(random_state="seed"), "random_state"),
        (dict(n_threads=0), "n_threads"),
        (dict(kernel="cosine"), "kernel"),
    ]
    for params, match in cases:
        with pytest.raises(ValueError, match=match):
            nk.NystromKME(**params).fit(X)
    with pytest.raises(ValueError, match="sample_weight"):
        nk.NystromKME().fit(X, sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="sample_weight"):
        nk.NystromKME().fit(X, sample_weight=-np.ones(20))
    assert nk.NystromKME(n_landmarks=3).fit(np.ones((10, 2))).kernel_.bandwidth == 1.0  # one point: any width


def test_auto_landmark_count_follows_the_bounds_module(rng):
    from nystrom_kme.bounds import suggest_n_landmarks

    X = rng.normal(size=(3000, 3))
    est = nk.NystromKME(nk.Gaussian(1.0), n_landmarks="bound", random_state=0).fit(X)
    report = est.n_landmarks_report_
    cap = 4 * nk.default_n_landmarks(3000)
    assert est.weights_.shape == (min(report.n_landmarks, cap),)
    ref = suggest_n_landmarks(X, nk.Gaussian(1.0), random_state=np.random.default_rng(0), max_landmarks=cap)
    assert ref.n_landmarks == report.n_landmarks
    assert isinstance(report.explain(), str) and report.explain()
    with pytest.raises(ValueError, match="n_landmarks"):
        nk.NystromKME(n_landmarks="many").fit(X)


def test_partial_fit_equals_fit(data):
    k = nk.Gaussian(1.0)
    est = nk.NystromKME(k, n_landmarks=60, random_state=5)
    for i in range(0, len(data), 7000):
        est.partial_fit(data[i : i + 7000])
    # landmarks from the first chunk, then fixed
    assert est.landmark_indices_.max() < 7000 and est.n_samples_ == len(data)
    ref = nk.NystromKME(k, sampler=est.landmarks_).fit(data)
    np.testing.assert_allclose(est.s_sum_, ref.s_sum_, rtol=1e-14)
    np.testing.assert_allclose(est.weights_, ref.weights_, rtol=1e-12, atol=1e-12 * np.abs(ref.weights_).max())
    # weighted chunks: raw weights, not normalised
    w = np.random.default_rng(0).uniform(size=len(data))
    wst = nk.NystromKME(k, sampler=est.landmarks_)
    for i in range(0, len(data), 9000):
        wst.partial_fit(data[i : i + 9000], sample_weight=w[i : i + 9000])
    wref = nk.NystromKME(k, sampler=est.landmarks_).fit(data, sample_weight=w)
    np.testing.assert_allclose(wst.weight_sum_, w.sum(), rtol=1e-13)
    np.testing.assert_allclose(wst.weights_, wref.weights_, rtol=1e-12, atol=1e-12 * np.abs(wref.weights_).max())
    for bad in ("auto", "bound"):  # they need all the rows; the first chunk is all partial_fit sees
        with pytest.raises(ValueError, match="partial_fit chooses the landmarks from the first chunk"):
            nk.NystromKME(k, n_landmarks=bad).partial_fit(data[:100])
    with pytest.raises(ValueError, match="features"):
        est.partial_fit(data[:10, :3])


def test_merge_same_landmarks_equals_union(data):
    k = nk.Gaussian(1.0)
    L = data[np.random.default_rng(1).integers(0, len(data), 60)]
    shards = [data[:11_000], data[11_000:12_345], data[12_345:]]
    fits = [nk.NystromKME(k, sampler=L).fit(s) for s in shards]
    merged = fits[0].merge(*fits[1:])
    ref = nk.NystromKME(k, sampler=L).fit(data)
    assert merged.n_samples_ == len(data) and merged.weight_sum_ == len(data)
    np.testing.assert_allclose(merged.s_sum_, ref.s_sum_, rtol=1e-14)
    np.testing.assert_allclose(merged.weights_, ref.weights_, rtol=1e-12, atol=1e-12 * np.abs(ref.weights_).max())
    assert eval_close(merged, ref, data[:300]) < 1e-12
    # inputs unchanged; merge then partial_fit continues exactly
    np.testing.assert_array_equal(fits[0].weights_, nk.NystromKME(k, sampler=L).fit(shards[0]).weights_)
    more = data[:5000] + 0.5
    cont = merged.partial_fit(more)
    ref2 = nk.NystromKME(k, sampler=L).fit(np.concatenate([data, more]))
    np.testing.assert_allclose(cont.s_sum_, ref2.s_sum_, rtol=1e-14)


def test_merge_different_landmarks_is_projection(data):
    k = nk.Gaussian(1.5)
    a = nk.NystromKME(k, n_landmarks=40, random_state=0).fit(data[:20_000])
    b = nk.NystromKME(k, n_landmarks=30, random_state=1).fit(data[20_000:])
    merged = a.merge(b)
    Lu = np.concatenate([a.landmarks_, b.landmarks_])
    assert merged.landmarks_.shape == (70, 4) and merged.landmark_indices_ is None

    Ku = dense_kernel("gaussian", Lu, Lu, 1.5)
    beta = np.concatenate([a.weights_ * 2 / 3, b.weights_ / 3])  # W_a / W = 2/3
    alpha = np.linalg.pinv(Ku, rcond=1e-13) @ (Ku @ beta)
    Y = data[:400] * 1.2
    combined = (2 * a(Y) + b(Y)) / 3
    assert np.abs(merged(Y) - combined).max() < 1e-9 * np.abs(combined).max()
    assert np.abs(merged(Y) - dense_kernel("gaussian", Y, Lu, 1.5) @ alpha).max() < 1e-9 * np.abs(combined).max()
    # the documented bound: ||merged - P_u mu_hat|| <= sum_e (W_e/W) ||mu_e - P_u mu_hat_e||
    union = nk.NystromKME(k, sampler=Lu).fit(data)
    bound = 2 / 3 * a.distance(nk.NystromKME(k, sampler=Lu).fit(data[:20_000])) + 1 / 3 * b.distance(
        nk.NystromKME(k, sampler=Lu).fit(data[20_000:])
    )
    assert merged.distance(union) <= bound * (1 + 1e-6)
    with pytest.raises(ValueError, match="different kernels"):
        a.merge(nk.NystromKME(nk.Gaussian(1.0), n_landmarks=5).fit(data[:100]))


def test_in_memory_fit_unchanged_and_statistics(data):
    kme = nk.NystromKME(n_landmarks=80, random_state=2).fit(data)
    np.testing.assert_array_equal(kme.weights_, nk.NystromKME(n_landmarks=80, random_state=2).fit(data).weights_)
    assert kme.weight_sum_ == len(data)
    L = kme.landmarks_

    sigma = kme.kernel_.bandwidth
    np.testing.assert_allclose(kme.s_sum_, dense_kernel("gaussian", L, data, sigma).sum(axis=1), rtol=1e-12)


# --------------------------------------------------------------------------- #
# scikit-learn conventions
# --------------------------------------------------------------------------- #
def test_get_set_params_clone_and_repr(rng):
    pytest.importorskip("sklearn")  # a test extra
    from sklearn.base import clone

    policy = nk.RPCholeskySampling(tolerance=1e-10)
    est = nk.NystromKME(nk.Gaussian(1.5), n_landmarks=40, sampler=policy, random_state=3)
    params = est.get_params()
    assert params["n_landmarks"] == 40 and params["sampler"] is policy
    assert params["sampler__tolerance"] == 1e-10  # nested parameters of the policy
    twin = clone(est)
    assert twin is not est and twin.sampler is not policy and repr(twin) == repr(est)
    assert repr(est) == (
        f"NystromKME(kernel=Gaussian(bandwidth=1.5), n_landmarks=40, sampler={policy!r}, random_state=3)"
    )  # only what differs from the defaults
    assert est.set_params(n_landmarks=30, sampler__tolerance=1e-8) is est
    assert est.n_landmarks == 30 and policy.tolerance == 1e-8
    with pytest.raises(ValueError, match="invalid parameter 'bandwith'"):
        est.set_params(bandwith=2.0)
    X = rng.normal(size=(500, 2))
    est.fit(X)
    # a fitted estimator says what it holds
    assert repr(est).startswith("NystromKME(") and "# fitted: 30 landmarks in R^2, n_samples=500" in repr(est)
    assert f"kernel=Gaussian(bandwidth=1.5), sampler='RPCholeskySampling', solver={est.solver_!r}" in repr(est)
    assert "sampler='uniform'" in repr(nk.NystromKME(nk.Gaussian(1.0), n_landmarks=5).fit(X))
    assert "fitted" not in repr(clone(est))  # clone drops the fitted state


def test_sampler_object_is_copied_never_mutated_and_gets_n_threads(rng):
    X = rng.normal(size=(800, 3))
    policy = nk.RidgeLeverageSampling()
    before = repr(policy), sorted(vars(policy))
    est = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=25, sampler=policy, random_state=0, n_threads=1).fit(X)
    assert (repr(policy), sorted(vars(policy))) == before  # nothing computed is stored on the user's object
    assert est.sampler_ is not policy and hasattr(est.sampler_, "scores_")
    assert est.sampler_.n_threads == 1  # the estimator's threads reach the copy
    explicit = nk.NystromKME(
        nk.Gaussian(1.0), n_landmarks=25, random_state=0, n_threads=1, sampler=nk.RidgeLeverageSampling(n_threads=2)
    ).fit(X)
    assert explicit.sampler_.n_threads == 2  # an explicit choice is kept
    # the result does not depend on the thread count
    np.testing.assert_array_equal(explicit.landmark_indices_, est.landmark_indices_)


def test_score_ranks_by_distance_to_the_held_out_embedding(rng):
    """score(X) differences are differences of -||mu - mu_hat_X||^2 (dense reference)."""
    X, X_test = rng.normal(size=(3000, 2)), rng.normal(size=(700, 2))
    k = nk.Gaussian(0.8)
    small = nk.NystromKME(k, n_landmarks=5, random_state=0).fit(X)
    large = nk.NystromKME(k, n_landmarks=200, random_state=0).fit(X)

    def dist2(e: nk.NystromKME) -> float:
        L, a = e.landmarks_, e.weights_
        return float(
            a @ dense_kernel("gaussian", L, L, 0.8) @ a
            - 2 * a @ dense_kernel("gaussian", L, X_test, 0.8).mean(axis=1)
            + dense_kernel("gaussian", X_test, X_test, 0.8).mean()
        )

    diff = large.score(X_test) - small.score(X_test)
    # 200 landmarks at this bandwidth: large cancelling weights, a^T K a good to ~1e-8
    assert diff == pytest.approx(dist2(small) - dist2(large), rel=1e-6)
    assert diff > 0  # more landmarks: closer to the held-out embedding
    with pytest.raises(nk.NotFittedError):
        nk.NystromKME().score(X_test)


def test_grid_search_over_landmarks_and_sampler(rng):
    pytest.importorskip("sklearn")  # a test extra
    from sklearn.model_selection import GridSearchCV, KFold

    X = rng.normal(size=(2000, 2))
    grid = GridSearchCV(
        nk.NystromKME(nk.Gaussian(0.7), random_state=0),
        {"n_landmarks": [2, 50], "sampler": ["uniform", "rpcholesky"]},
        cv=KFold(3, shuffle=True, random_state=0),
    )
    grid.fit(X)
    assert grid.best_params_["n_landmarks"] == 50  # 2 landmarks are far from any fold's embedding
    assert grid.best_estimator_.weights_.shape == (50,)
    assert np.isfinite(grid.cv_results_["mean_test_score"]).all()


def test_clear_errors_at_the_edges(rng):
    """Issue 12: numpy/pybind11 messages that leaked are replaced by ones naming the argument."""
    X = rng.normal(size=(200, 2))
    est = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=10, random_state=0)
    with pytest.raises(ValueError, match="weighted sums overflow float64; divide the weights"):
        est.fit(X, sample_weight=np.full(200, 1e307))
    w = np.zeros(200)
    w[:5] = 1.0
    with pytest.raises(ValueError, match="exceeds the 5 rows with a positive sample_weight"):
        nk.NystromKME(nk.Gaussian(1.0), n_landmarks=10, sampler="uniform-without-replacement").fit(X, sample_weight=w)
    with pytest.raises(ValueError, match="sample_weight contains NaN"):
        est.fit(X, sample_weight=np.full(200, np.nan))
    with pytest.raises(ValueError, match="sample_weight must be an array of numbers"):
        est.fit(X, sample_weight=["a"] * 200)
    with pytest.raises(ValueError, match="rcond must be a number in \\[0, 1\\), got 'x'"):
        nk.NystromKME(rcond="x").fit(X)
    with pytest.raises(ValueError, match="X must be real-valued: Complex data not supported"):
        est.fit(X + 1j)
    with pytest.raises(ValueError, match="random_state must be a non-negative int seed"):
        nk.NystromKME(random_state=-1).fit(X)
    with pytest.raises(ValueError, match="kernel values overflow float64"):
        nk.NystromKME(nk.Polynomial(1e-150, degree=3), n_landmarks=10, random_state=0).fit(X)


# --------------------------------------------------------------------------- #
# weights of any scale (issue 21: subnormal weights underflowed in the sums)
# --------------------------------------------------------------------------- #
TINY = 5e-324  # the smallest subnormal double


@pytest.fixture
def weighted_case(rng):
    X = rng.normal(size=(3000, 2))
    idx = rng.choice(len(X), 40, replace=False)  # K_L well conditioned (~1e3): weights comparable
    return X, idx, nk.Gaussian(0.4)


def test_uniform_subnormal_weights_give_the_unweighted_embedding(weighted_case):
    X, idx, k = weighted_case
    tiny = np.full(len(X), TINY)
    plain = nk.NystromKME(k, sampler=idx).fit(X)
    got = nk.NystromKME(k, sampler=idx).fit(X, sample_weight=tiny)
    np.testing.assert_allclose(got.weights_, plain.weights_, rtol=1e-12, atol=1e-14)
    assert nk.rkhs_distance(got, plain) < 1e-12  # was ~1e0 before the weights were scaled
    assert got.weight_sum_ == len(X) * TINY  # the statistics keep the weights' units
    # any constant gives the same bits: the weights are divided by a power of two
    ones = nk.NystromKME(k, sampler=idx).fit(X, sample_weight=np.ones(len(X)))
    np.testing.assert_array_equal(got.weights_, ones.weights_)
    # weighted uniform draws too (the draws are proportional to the weights)
    a = nk.NystromKME(k, n_landmarks=50, random_state=0).fit(X, sample_weight=tiny)
    b = nk.NystromKME(k, n_landmarks=50, random_state=0).fit(X, sample_weight=np.ones(len(X)))
    np.testing.assert_array_equal(a.landmarks_, b.landmarks_)
    np.testing.assert_array_equal(a.weights_, b.weights_)


def test_subnormal_weights_streamed_fit_and_score(weighted_case, tmp_path):
    X, idx, k = weighted_case
    tiny = np.full(len(X), TINY)
    plain = nk.NystromKME(k, sampler=idx).fit(X)
    chunks = nk.NystromKME(k, sampler=idx).fit([X[:1000], X[1000:2500], X[2500:]], sample_weight=tiny)
    path = tmp_path / "X.npy"
    np.save(path, X)
    mapped = nk.NystromKME(k, sampler=idx, chunk_rows=512).fit(np.load(path, mmap_mode="r"), sample_weight=tiny)
    for e in (chunks, mapped):
        np.testing.assert_allclose(e.weights_, plain.weights_, rtol=1e-12, atol=1e-14)
    Y = X[::3]
    assert plain.score(Y, sample_weight=np.full(len(Y), TINY)) == pytest.approx(plain.score(Y), rel=1e-14)
    assert plain.score(Y, sample_weight=np.full(len(Y), TINY)) == plain.score(Y, sample_weight=np.ones(len(Y)))


def test_mixed_scale_weights_against_dense_numpy(weighted_case):
    """1e-300 and 1 in one vector (and subnormals beside normal numbers): the dense
    reference alpha = K_L^+ K_LX p, p = w / sum(w) in numpy."""
    X, idx, k = weighted_case
    L = X[idx]
    K_LX, K_L = dense_kernel("gaussian", L, X, 0.4), dense_kernel("gaussian", L, L, 0.4)
    rng = np.random.default_rng(7)
    cases = {
        "1e-300 and 1": np.where(rng.random(len(X)) < 0.5, 1e-300, 1.0) * rng.uniform(0.5, 1.5, len(X)),
        "subnormal and 1": np.where(rng.random(len(X)) < 0.5, TINY, 1.0),
        "all subnormal, mixed": rng.integers(1, 8, len(X)) * TINY,
        "1e-300 .. 1e-290": 10.0 ** rng.uniform(-300, -290, len(X)),
    }
    for name, w in cases.items():
        p = w / w.sum()  # exact enough in numpy: the sums of subnormals are exact
        alpha = np.linalg.pinv(K_L, rcond=1e-12) @ (K_LX @ p)
        est = nk.NystromKME(k, sampler=idx, solver="cod").fit(X, sample_weight=w)
        err = rkhs_norm(K_L, est.weights_ - alpha) / rkhs_norm(K_L, alpha)
        assert err < 1e-9, name
        # the score of X under these weights: 2 <mu, mu_p> - ||mu||^2 with mu_p = sum_i p_i phi(x_i)
        ref_score = 2 * est.weights_ @ K_LX @ p - est.weights_ @ K_L @ est.weights_
        assert est.score(X, sample_weight=w) == pytest.approx(ref_score, rel=1e-12), name


def test_partial_fit_with_subnormal_weights(weighted_case):
    X, idx, k = weighted_case
    L = X[idx]  # explicit points: partial_fit's chunks are smaller than X
    plain = nk.NystromKME(k, sampler=L).fit(X[:1500])
    first = nk.NystromKME(k, sampler=L).partial_fit(X[:1500], sample_weight=np.full(1500, TINY))
    np.testing.assert_allclose(first.weights_, plain.weights_, rtol=1e-12, atol=1e-14)
    # the stored statistics are subnormal: adding to them would lose precision
    with pytest.raises(ValueError, match="partial_fit: the sufficient statistics of this embedding are subnormal"):
        first.partial_fit(X[1500:], sample_weight=np.full(1500, TINY))
    with pytest.raises(ValueError, match="merge: the sufficient statistics"):
        plain.merge(first)
    # tiny but normal statistics are kept exactly in the weights' units, across scales
    a = nk.NystromKME(k, sampler=L).partial_fit(X[:1500], sample_weight=np.full(1500, 1e-300))
    a.partial_fit(X[1500:], sample_weight=np.full(1500, 3e-300))
    w = np.concatenate([np.full(1500, 1e-300), np.full(1500, 3e-300)])
    b = nk.NystromKME(k, sampler=L).fit(X, sample_weight=w)
    np.testing.assert_allclose(a.weights_, b.weights_, rtol=1e-12, atol=1e-14)
    assert a.weight_sum_ == pytest.approx(1500 * 4e-300, rel=1e-15)
