"""n_landmarks="auto" (nystrom_kme.landmark_search): the statistical-error estimate
against the closed form of the Section 6.1 mixture, the nested doubling path, the
exact change of the embedding, samplers, streamed sources and weights, and the
accuracy of the chosen m (exact errors from the mixture's closed forms)."""

from __future__ import annotations

import math
import warnings

import dask.array as da
import numpy as np
import nystrom_kme as nk
import pytest
from nystrom_kme.datasets import GaussianMixture

MIX = GaussianMixture(8, 10, random_state=0)


def _same_function(a: nk.NystromKME, b: nk.NystromKME, rtol: float = 1e-9) -> None:
    """The embeddings agree as functions (weights of a near-singular K_m need not)."""
    Y = MIX.sample(300, random_state=123)
    fa, fb = a(Y), b(Y)
    assert np.abs(fa - fb).max() <= rtol * np.abs(fb).max()


def _closed_form_sigma2(bw: float) -> float:
    """E||mu_hat_1 - mu||^2 = E k(x,x) - E k(x,x') = 1 - ||mu||^2 (Gaussian kernel)."""
    return 1.0 - MIX.embedding_norm2(bw)


# --------------------------------------------------------------------------- #
# the statistical error
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_statistical_error_matches_the_closed_form(seed):
    n, bw = 10_000, 4.0
    X = MIX.sample(n, random_state=seed)
    est = nk.estimate_statistical_error(X, nk.Gaussian(bw), random_state=seed)
    exact = math.sqrt(_closed_form_sigma2(bw) / n)
    assert est.n_effective == n and est.n_used == 2000
    assert abs(est.value - exact) <= 4 * est.std_error
    assert abs(est.value / exact - 1) < 0.05
    assert "StatisticalError(" in repr(est)


def test_weighted_statistical_error_uses_the_effective_sample_size():
    n, bw = 5000, 4.0
    rng = np.random.default_rng(7)
    X = MIX.sample(n, random_state=3)
    w = rng.uniform(0.2, 3.0, size=n)  # independent of X: the target stays mu
    est = nk.estimate_statistical_error(X, nk.Gaussian(bw), sample_weight=w, random_state=1)
    p = w / w.sum()
    assert est.n_effective == pytest.approx(1 / np.sum(p**2), rel=1e-12)
    exact = math.sqrt(_closed_form_sigma2(bw) * np.sum(p**2))
    assert abs(est.value - exact) <= 4 * est.std_error and abs(est.value / exact - 1) < 0.05
    with pytest.raises(ValueError, match="max_samples"):
        nk.estimate_statistical_error(X, nk.Gaussian(bw), max_samples=1)
    with pytest.raises(ValueError, match="sample_weight"):
        nk.estimate_statistical_error(X, nk.Gaussian(bw), sample_weight=np.ones(n - 1))


# --------------------------------------------------------------------------- #
# the doubling path
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("sampler", ["uniform", "uniform-without-replacement"])
@pytest.mark.parametrize("weighted", [False, True])
def test_path_doubles_and_sets_nest(sampler, weighted):
    n = 4000
    X = MIX.sample(n, random_state=1)
    w = np.random.default_rng(2).uniform(0.5, 2.0, n) if weighted else None

    def fit(max_m):
        spec = nk.AutoLandmarks(tol=1e-9, initial=25, max_landmarks=max_m)
        with pytest.warns(RuntimeWarning, match="max_landmarks"):
            return nk.NystromKME(nk.Gaussian(4.0), n_landmarks=spec, sampler=sampler,
                                 random_state=5).fit(X, sample_weight=w)

    small, large = fit(200), fit(300)
    assert small.n_landmarks_report_.path == (25, 50, 100, 200)
    assert large.n_landmarks_report_.path == (25, 50, 100, 200, 300)  # the last one capped
    assert small.n_landmarks_report_.nested and large.n_landmarks_report_.nested
    assert not large.n_landmarks_report_.converged
    # one stream of draws: the smaller search's set is a prefix of the larger one's
    np.testing.assert_array_equal(large.landmark_indices_[:200], small.landmark_indices_)
    if sampler == "uniform-without-replacement":
        assert np.unique(large.landmark_indices_).size == 300


def test_reported_change_is_the_exact_rkhs_distance():
    X = MIX.sample(3000, random_state=4)
    k = nk.Gaussian(4.0)
    spec = nk.AutoLandmarks(tol=1e-9, initial=40, max_landmarks=80)
    with pytest.warns(RuntimeWarning):
        est = nk.NystromKME(k, n_landmarks=spec, random_state=0).fit(X)
    idx = est.landmark_indices_
    a = nk.NystromKME(k, sampler=idx[:40]).fit(X)
    b = nk.NystromKME(k, sampler=idx).fit(X)
    _same_function(b, est)
    exact = nk.rkhs_distance(a, b)
    assert est.n_landmarks_report_.changes[0] == pytest.approx(exact, rel=1e-6)


# --------------------------------------------------------------------------- #
# accuracy of the chosen m (quick version; the 50-trial check is marked slow)
# --------------------------------------------------------------------------- #
def _ratio_and_report(n, seed):
    """(exact ||mu_auto - mu|| / exact ||mu_hat_n - mu||, report, chosen m)."""
    X = MIX.sample(n, random_state=1000 + seed)
    est = nk.NystromKME(random_state=seed, n_landmarks="auto").fit(X)
    bw = est.kernel_.bandwidth
    emp = MIX.embedding_error(X, np.full(n, 1.0 / n), bw)
    return MIX.embedding_error(est.landmarks_, est.weights_, bw) / emp, est.n_landmarks_report_


def test_auto_error_within_ten_percent_quick():
    """Level stated for 5 trials at n = 1000: at least 4 within 10%."""
    results = [_ratio_and_report(1000, seed) for seed in range(5)]
    ok = sum(r <= 1.1 for r, _ in results)
    assert ok >= 4, [r for r, _ in results]
    for _, rep in results:
        assert rep.converged and rep.ratio <= 0.1
        assert all(b == 2 * a for a, b in zip(rep.path, rep.path[1:-1]))
    assert "x statistical error" in repr(results[0][1])
    assert "m = " in results[0][1].explain()


@pytest.mark.slow
@pytest.mark.parametrize("n", [1000, 10_000])
def test_auto_error_within_ten_percent_in_95_percent_of_trials(n):
    """50 trials: the exact error of the automatic choice is within 10% of the exact
    error of the empirical embedding on the same data in >= 95% (>= 48) of them."""
    ratios = [_ratio_and_report(n, seed)[0] for seed in range(50)]
    assert sum(r <= 1.1 for r in ratios) >= 48, sorted(ratios)[-5:]


# --------------------------------------------------------------------------- #
# samplers, sources, weights
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("sampler,nested", [
    ("rpcholesky", True), ("greedy-cholesky", True), ("cortes-scott", True),
    (nk.KernelHerding(n_candidates=500), True), ("block-rpcholesky", None), ("rls", None)])
@pytest.mark.filterwarnings("ignore:n_landmarks='auto' stopped")
def test_other_samplers(sampler, nested):
    X = MIX.sample(1500, random_state=2)
    est = nk.NystromKME(nk.Gaussian(4.0), n_landmarks=nk.AutoLandmarks(initial=16, max_landmarks=500),
                        sampler=sampler, random_state=0).fit(X)
    rep = est.n_landmarks_report_
    assert rep.n_landmarks == est.landmarks_.shape[0] == rep.path[-1]
    if nested is not None:
        assert rep.nested
    if rep.converged:
        assert rep.ratio <= rep.tol or rep.approximation_error == 0.0


def test_memmap_and_dask_sources_match_memory(tmp_path):
    X = MIX.sample(6000, random_state=9)
    w = np.random.default_rng(1).uniform(0.5, 1.5, len(X))
    path = tmp_path / "x.npy"
    np.save(path, X)
    mm = np.load(path, mmap_mode="r")
    for weights in (None, w):
        ref = nk.NystromKME(n_landmarks="auto", random_state=3).fit(X, sample_weight=weights)
        on_disk = nk.NystromKME(n_landmarks="auto", random_state=3, chunk_rows=1024).fit(
            mm, sample_weight=weights)
        np.testing.assert_array_equal(on_disk.landmark_indices_, ref.landmark_indices_)
        np.testing.assert_array_equal(on_disk.weights_, ref.weights_)  # bit-identical sums
        dk = nk.NystromKME(n_landmarks="auto", random_state=3).fit(
            da.from_array(X, chunks=(1500, 10)),
            sample_weight=None if weights is None else da.from_array(weights, chunks=1500))
        np.testing.assert_array_equal(dk.landmark_indices_, ref.landmark_indices_)
        _same_function(dk, ref)
        assert ref.n_landmarks_report_.converged
    assert ref.n_landmarks_report_.statistical_error.n_effective < len(X)


def test_auto_can_continue_with_partial_fit():
    X = MIX.sample(3000, random_state=6)
    est = nk.NystromKME(n_landmarks="auto", random_state=0).fit(X[:2000])
    ref = nk.NystromKME(kernel=est.kernel_, sampler=est.landmarks_).fit(X)
    est.partial_fit(X[2000:])
    _same_function(est, ref)


def test_errors_name_the_argument(tmp_path):
    X = MIX.sample(500, random_state=0)
    for kwargs, name in [({"tol": 0}, "tol"), ({"tol": "x"}, "tol"), ({"initial": 0}, "initial"),
                         ({"max_landmarks": 1.5}, "max_landmarks"), ({"stat_samples": 1}, "stat_samples")]:
        with pytest.raises(ValueError, match=name):
            nk.AutoLandmarks(**kwargs)
    with pytest.raises(ValueError, match="max_landmarks"):
        nk.NystromKME(n_landmarks=nk.AutoLandmarks(max_landmarks=501)).fit(X)
    with pytest.raises(ValueError, match="initial"):
        nk.NystromKME(n_landmarks=nk.AutoLandmarks(initial=100, max_landmarks=50)).fit(X)
    with pytest.raises(ValueError, match="n_landmarks='auto'"):
        nk.NystromKME(n_landmarks="auto", sampler=np.arange(10)).fit(X)
    with pytest.raises(ValueError, match="n_landmarks"):
        nk.NystromKME(n_landmarks="auto").partial_fit(X)
    path = tmp_path / "x.npy"
    np.save(path, X)
    with pytest.raises(ValueError, match="auto"):
        nk.NystromKME(n_landmarks="auto", passes=1).fit(np.load(path, mmap_mode="r"))
    with pytest.raises(ValueError, match="needs all of X"):
        nk.NystromKME(n_landmarks="auto", sampler="rpcholesky").fit(np.load(path, mmap_mode="r"))


def test_every_row_a_landmark_is_exact_and_cap_warns():
    X = MIX.sample(200, random_state=0)
    est = nk.NystromKME(nk.Gaussian(4.0), n_landmarks=nk.AutoLandmarks(tol=1e-12, max_landmarks=200),
                        sampler="uniform-without-replacement", random_state=0).fit(X)
    rep = est.n_landmarks_report_
    assert rep.converged and rep.n_landmarks == 200 and rep.approximation_error == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="max_landmarks=40"):
            nk.NystromKME(nk.Gaussian(4.0), n_landmarks=nk.AutoLandmarks(tol=1e-12, max_landmarks=40),
                          random_state=0).fit(X)


def test_clone_and_params_keep_the_settings():
    spec = nk.AutoLandmarks(tol=0.05)
    est = nk.NystromKME(n_landmarks=spec)
    assert est.get_params()["n_landmarks"] == spec
    assert "tol=0.05" in repr(est)
