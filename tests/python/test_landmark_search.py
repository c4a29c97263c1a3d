"""n_landmarks="auto" (nystrom_kme.landmark_search): the statistical-error estimate
against the closed form of the Section 6.1 mixture, the nested doubling path, the
exact change of the embedding, samplers, streamed sources and weights, and the
accuracy of the chosen m (exact errors from the mixture's closed forms)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import nystrom_kme as nk
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
            return nk.NystromKME(nk.Gaussian(4.0), n_landmarks=spec, sampler=sampler, random_state=5).fit(
                X, sample_weight=w
            )

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
        assert rep.converged and rep.certified and rep.ratio <= 0.1 and rep.n_landmarks < 1000
        assert rep.round_off < 1e-3 * rep.tol * rep.statistical_error.value  # round-off never decided
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
@pytest.mark.parametrize(
    "sampler,nested",
    [
        ("rpcholesky", True),
        ("greedy-cholesky", True),
        ("cortes-scott", True),
        (nk.KernelHerding(n_candidates=500), True),
        ("block-rpcholesky", None),
        ("rls", None),
    ],
)
@pytest.mark.filterwarnings("ignore:n_landmarks='auto' stopped")
def test_other_samplers(sampler, nested):
    X = MIX.sample(1500, random_state=2)
    est = nk.NystromKME(
        nk.Gaussian(4.0), n_landmarks=nk.AutoLandmarks(initial=16, max_landmarks=500), sampler=sampler, random_state=0
    ).fit(X)
    rep = est.n_landmarks_report_
    assert rep.n_landmarks == est.landmarks_.shape[0] == rep.path[-1]
    if nested is not None:
        assert rep.nested
    if rep.converged:
        assert rep.ratio <= rep.tol or rep.approximation_error == 0.0


def test_memmap_and_dask_sources_match_memory(tmp_path):
    da = pytest.importorskip("dask.array")  # the dask extra
    X = MIX.sample(6000, random_state=9)
    w = np.random.default_rng(1).uniform(0.5, 1.5, len(X))
    path = tmp_path / "x.npy"
    np.save(path, X)
    mm = np.load(path, mmap_mode="r")
    for weights in (None, w):
        ref = nk.NystromKME(n_landmarks="auto", random_state=3).fit(X, sample_weight=weights)
        on_disk = nk.NystromKME(n_landmarks="auto", random_state=3, chunk_rows=1024).fit(mm, sample_weight=weights)
        np.testing.assert_array_equal(on_disk.landmark_indices_, ref.landmark_indices_)
        np.testing.assert_array_equal(on_disk.weights_, ref.weights_)  # bit-identical sums
        dk = nk.NystromKME(n_landmarks="auto", random_state=3).fit(
            da.from_array(X, chunks=(1500, 10)),
            sample_weight=None if weights is None else da.from_array(weights, chunks=1500),
        )
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
    for kwargs, name in [
        ({"tol": 0}, "tol"),
        ({"tol": "x"}, "tol"),
        ({"initial": 0}, "initial"),
        ({"max_landmarks": 1.5}, "max_landmarks"),
        ({"stat_samples": 1}, "stat_samples"),
    ]:
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
    est = nk.NystromKME(
        nk.Gaussian(4.0),
        n_landmarks=nk.AutoLandmarks(tol=1e-12, max_landmarks=200),
        sampler="uniform-without-replacement",
        random_state=0,
    ).fit(X)
    rep = est.n_landmarks_report_
    assert rep.converged and rep.n_landmarks == 200 and rep.approximation_error == 0.0
    assert not rep.certified and "NOT certified below m = n" in str(rep)  # every row: nothing smaller
    assert rep.stop == "every row" and "exact: every row is a landmark" in str(rep)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(RuntimeWarning, match="max_landmarks=40"):
            nk.NystromKME(
                nk.Gaussian(4.0), n_landmarks=nk.AutoLandmarks(tol=1e-12, max_landmarks=40), random_state=0
            ).fit(X)


def test_clone_and_params_keep_the_settings():
    spec = nk.AutoLandmarks(tol=0.05)
    est = nk.NystromKME(n_landmarks=spec)
    assert est.get_params()["n_landmarks"] == spec
    assert "tol=0.05" in repr(est)


# --------------------------------------------------------------------------- #
# the edges: sigma = 0, m = n, subnormal weights (issue 21)
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("sampler", ["uniform", "uniform-without-replacement", "rpcholesky"])
def test_constant_data_stops_at_the_first_step(sampler):
    """sigma = 0 and every embedding is exactly phi(x_0): the first change is zero to
    round-off and the search stops (it used to run to the cap, e.g. 8192 at n = 10^5)."""
    n = 20_000
    X = np.full((n, 3), 0.25)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "stopped at max_landmarks" warning
        est = nk.NystromKME(nk.Gaussian(1.0), n_landmarks="auto", sampler=sampler, random_state=0).fit(X)
    rep = est.n_landmarks_report_
    assert rep.statistical_error.value == 0.0
    assert rep.converged and rep.certified and len(rep.path) <= 2
    assert rep.n_landmarks <= 2 * math.ceil(math.sqrt(n)) and rep.ratio == 0.0
    if sampler == "rpcholesky":  # one pivot exhausts the kernel matrix: m = 1, no change to measure
        assert rep.n_landmarks == 1 and rep.approximation_error == 0.0 and rep.stop == "exhausted"
        assert "exact to the sampler's tolerance" in str(rep)
    else:
        assert rep.approximation_error <= rep.round_off < 1e-6 and rep.stop == "round-off"
        assert "zero to round-off" in str(rep)
    assert "NOT" not in repr(rep) + str(rep)
    # the embedding is phi(x_0): mu(y) = k(x_0, y) (closed form)
    Y = np.array([[0.25, 0.25, 0.25], [1.0, 0.0, -1.0]])
    expected = np.exp(-((Y - 0.25) ** 2).sum(axis=1) / 2)
    np.testing.assert_allclose(est(Y), expected, rtol=1e-12)


def test_digits_meet_the_tolerance_only_at_m_equal_n_and_say_so():
    """On sklearn's digits (n = 1797) the search reaches m = n: the report must say that
    nothing smaller was certified (converged, but certified=False), in repr and text."""
    pytest.importorskip("sklearn")  # a test extra
    from sklearn.datasets import load_digits

    X = load_digits().data
    est = nk.NystromKME(n_landmarks="auto", random_state=0).fit(X)
    rep = est.n_landmarks_report_
    assert rep.n_landmarks == len(X) == est.landmarks_.shape[0]
    assert not rep.certified and rep.stop == "tolerance" and rep.converged
    assert "NOT certified below m = n" in repr(rep)
    assert "no landmark set smaller than the 1797 rows met the tolerance" in rep.explain()
    assert str(rep) == rep.explain()
    # a looser tolerance certifies a smaller m on the same data
    loose = nk.NystromKME(n_landmarks=nk.AutoLandmarks(tol=0.5), random_state=0).fit(X).n_landmarks_report_
    assert loose.certified and loose.n_landmarks < len(X) and "NOT" not in str(loose)


def test_subnormal_weights_give_the_unit_weight_search():
    """n_landmarks='auto' with weights 5e-324: the same search, bit for bit, as with
    weights 1 (the weights are divided by a power of two before any sum)."""
    X = MIX.sample(2000, random_state=5)
    ref = nk.NystromKME(n_landmarks="auto", random_state=0).fit(X, sample_weight=np.ones(len(X)))
    got = nk.NystromKME(n_landmarks="auto", random_state=0).fit(X, sample_weight=np.full(len(X), 5e-324))
    assert got.n_landmarks_report_.path == ref.n_landmarks_report_.path
    assert got.n_landmarks_report_.statistical_error == ref.n_landmarks_report_.statistical_error
    assert got.n_landmarks_report_.statistical_error.n_effective == pytest.approx(len(X), rel=1e-12)
    np.testing.assert_array_equal(got.weights_, ref.weights_)
    np.testing.assert_array_equal(got.landmarks_, ref.landmarks_)
    assert got.n_landmarks_report_.certified
    # and it is as good as the unweighted search: its exact error (closed form of the
    # mixture) is within 10% of the empirical embedding's, as test_auto_error_* asks
    bw = got.kernel_.bandwidth
    emp = MIX.embedding_error(X, np.full(len(X), 1.0 / len(X)), bw)
    assert MIX.embedding_error(got.landmarks_, got.weights_, bw) <= 1.1 * emp


def test_search_returns_named_fields_that_the_fit_keeps():
    """search_landmarks' result by name: the fit's landmarks, sums and report."""
    from nystrom_kme.landmark_search import SearchResult, search_landmarks
    from nystrom_kme.sources import as_source

    X = np.random.default_rng(4).normal(size=(3000, 2))
    k = nk.Gaussian(1.0)
    est = nk.NystromKME(k, n_landmarks="auto", random_state=6).fit(X)
    assert est.n_landmarks_report_.converged
    found = search_landmarks(
        as_source(X),
        k,
        nk.UniformSampling(),
        np.random.default_rng(6),
        spec=nk.AutoLandmarks(),
        sample_weight=None,
        solver="auto",
        rcond=0.0,
        n_threads=0,
    )
    assert isinstance(found, SearchResult)
    np.testing.assert_array_equal(found.indices, est.landmark_indices_)
    np.testing.assert_array_equal(found.landmarks, X[est.landmark_indices_])
    np.testing.assert_array_equal(found.sums.value(), est.s_sum_)
    assert found.weight_sum == est.weight_sum_ == 3000.0
    alpha, solver, rank = found.solution
    np.testing.assert_array_equal(alpha[:, 0], est.weights_)
    assert (solver, rank) == (est.solver_, est.rank_)
    assert found.report.path == est.n_landmarks_report_.path
    with pytest.raises(AttributeError):
        found.indices = None  # frozen
