"""NystromKME / EmpiricalKME against dense numpy: weights, evaluation, inner products."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import dense_kernel

import nystrom_kme as nk


def rkhs_norm(K: np.ndarray, v: np.ndarray) -> float:
    return math.sqrt(max(float(v @ K @ v), 0.0))


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


# Two backward-stable solutions (residual ~1e-15) differ in RKHS norm by about
# sqrt(r^T K^+ r), which grows with cond(K_m): sigma = 3 has cond ~1e13 (measured
# 2e-10 apart), sigma = 300 is numerically rank ~16 of 200 (measured 1.2e-8).
@pytest.mark.parametrize(("sigma", "rtol"), [(0.3, 1e-10), (3.0, 1e-9), (300.0, 1e-7)])
def test_all_solvers_give_the_same_embedding(rng, sigma, rtol):
    X = rng.normal(size=(3000, 4))
    ests = {s: nk.NystromKME(nk.Gaussian(sigma), n_landmarks=200, solver=s, random_state=5).fit(X)
            for s in ("auto", "cod")}
    L = ests["cod"].landmarks_
    K = dense_kernel("gaussian", L, L, sigma)
    ref = ests["cod"].weights_
    diff = rkhs_norm(K, ests["auto"].weights_ - ref)
    assert diff <= rtol * rkhs_norm(K, ref)
    # the projection property: K_m alpha = K_mn 1 / n
    s = dense_kernel("gaussian", L, X, sigma).sum(axis=1) / len(X)
    assert np.linalg.norm(K @ ref - s) <= 1e-8 * np.linalg.norm(s)


def test_evaluation_and_inner_products_match_dense(rng):
    X = rng.normal(size=(1500, 3))
    Y = rng.normal(size=(900, 3)) + 0.5
    k = nk.Matern(1.3, nu=2.5)
    nys = nk.NystromKME(k, n_landmarks=80, random_state=2).fit(X)
    emp_x = nk.EmpiricalKME(k).fit(X)
    emp_y = nk.EmpiricalKME(k).fit(Y)
    L, a = nys.landmarks_, nys.weights_
    Z = rng.normal(size=(77, 3))
    np.testing.assert_allclose(nys(Z), dense_kernel("matern52", Z, L, 1.3) @ a, rtol=1e-12)
    np.testing.assert_allclose(emp_x(Z), dense_kernel("matern52", Z, X, 1.3).mean(axis=1), rtol=1e-12)
    Kxy = dense_kernel("matern52", X, Y, 1.3)
    assert emp_x.inner(emp_y) == pytest.approx(Kxy.mean(), rel=1e-12)
    assert nys.inner(emp_y) == pytest.approx(a @ dense_kernel("matern52", L, Y, 1.3).mean(axis=1), rel=1e-12)
    mmd2 = (dense_kernel("matern52", X, X, 1.3).mean() + dense_kernel("matern52", Y, Y, 1.3).mean()
            - 2 * Kxy.mean())
    assert emp_x.distance(emp_y) == pytest.approx(math.sqrt(mmd2), rel=1e-9)
    assert nk.rkhs_distance(nys, nys) == pytest.approx(0.0, abs=1e-6)
    assert nys.norm() == pytest.approx(rkhs_norm(dense_kernel("matern52", L, L, 1.3), a), rel=1e-12)
    # the Nystrom embedding is the projection of the empirical one: Pythagoras
    assert nys.norm() <= emp_x.norm()
    d2 = emp_x.distance(nys) ** 2
    assert d2 == pytest.approx(emp_x.norm() ** 2 - nys.norm() ** 2, rel=1e-6, abs=1e-12)


def test_sample_weight_matches_dense(rng):
    X = rng.normal(size=(800, 2))
    w = rng.uniform(0.0, 2.0, size=800)
    est = nk.NystromKME(nk.Gaussian(0.7), n_landmarks=40, solver="cod", random_state=0).fit(X, w)
    L = X[est.landmark_indices_]
    s = dense_kernel("gaussian", L, X, 0.7) @ (w / w.sum())
    alpha = np.linalg.pinv(dense_kernel("gaussian", L, L, 0.7), rcond=1e-12) @ s
    np.testing.assert_allclose(est.weights_, alpha, rtol=1e-7, atol=1e-9)
    emp = nk.EmpiricalKME(nk.Gaussian(0.7)).fit(X, w)
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
        outs.append(subprocess.run([sys.executable, "-c", _THREAD_SCRIPT], env=env, check=True,
                                   capture_output=True, text=True).stdout)
    assert outs[0] == outs[1]


@pytest.mark.parametrize(
    ("X", "match"),
    [
        (np.array([[0.0, np.nan]]), "NaN"),
        (np.array([[np.inf, 0.0]]), "NaN or inf"),
        (np.ones(5), "2-D"),
        (np.ones((2, 2, 2)), "2-D"),
        (np.ones((0, 3)), "at least 1 row"),
        (np.ones((3, 0)), "feature"),
        ([["a", "b"]], "numeric"),
    ],
)
def test_bad_X_is_named(X, match):
    for est in (nk.NystromKME(nk.Gaussian(1.0), n_landmarks=1), nk.EmpiricalKME(nk.Gaussian(1.0))):
        with pytest.raises(ValueError, match=match):
            est.fit(X)


def test_bad_parameters_are_named(rng):
    X = rng.normal(size=(20, 2))
    cases = [
        (dict(n_landmarks=21), "n_landmarks=21 exceeds n_samples=20"),
        (dict(n_landmarks=0), "n_landmarks"),
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
        nk.NystromKME().fit(X, np.ones(3))
    with pytest.raises(ValueError, match="sample_weight"):
        nk.NystromKME().fit(X, -np.ones(20))
    with pytest.raises(ValueError, match="median pairwise distance is 0"):
        nk.NystromKME().fit(np.ones((10, 2)))


def test_unfitted_and_mismatched_use(rng):
    with pytest.raises(RuntimeError, match="not fitted"):
        nk.NystromKME()(np.ones((1, 2)))
    a = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=5).fit(rng.normal(size=(50, 2)))
    b = nk.NystromKME(nk.Gaussian(2.0), n_landmarks=5).fit(rng.normal(size=(50, 2)))
    c = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=5).fit(rng.normal(size=(50, 3)))
    with pytest.raises(ValueError, match="different kernels"):
        a.inner(b)
    with pytest.raises(ValueError, match="R\\^2 and R\\^3"):
        a.inner(c)
    with pytest.raises(ValueError, match="features"):
        a(np.ones((4, 3)))
    with pytest.raises(ValueError, match="fitted embedding"):
        nk.inner_product(a, np.ones(3))  # type: ignore[arg-type]


def test_auto_landmark_count_follows_the_bounds_module(rng):
    from nystrom_kme.bounds import suggest_n_landmarks

    X = rng.normal(size=(3000, 3))
    est = nk.NystromKME(nk.Gaussian(1.0), n_landmarks="auto", random_state=0).fit(X)
    report = est.n_landmarks_report_
    cap = 4 * nk.default_n_landmarks(3000)
    assert est.weights_.shape == (min(report.n_landmarks, cap),)
    ref = suggest_n_landmarks(X, nk.Gaussian(1.0), random_state=np.random.default_rng(0), max_landmarks=cap)
    assert ref.n_landmarks == report.n_landmarks
    assert isinstance(report.explain(), str) and report.explain()
    with pytest.raises(ValueError, match="n_landmarks"):
        nk.NystromKME(n_landmarks="many").fit(X)
