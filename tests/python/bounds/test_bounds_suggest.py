"""nystrom_kme.bounds.suggest: the paper's default m, Corollary 4.1 and suggest_n_landmarks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from bounds_data import section_6_1_mixture

import nystrom_kme as nk
from nystrom_kme import bounds as B


@pytest.fixture(scope="module")
def mixture_problem():
    return section_6_1_mixture()


# --------------------------------------------------------------------------- #
# the paper's default m = ceil(sqrt(n) log sqrt(n))
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("n,expected", [(1, 1), (2, 1), (100, 24), (10**6, 6908)])
def test_default_n_landmarks_is_the_closed_form(n, expected):
    # ceil(sqrt(n) log sqrt(n)), clipped to [1, n]: sqrt(1) log 1 = 0 -> 1;
    # sqrt(2) log sqrt(2) = 0.49 -> 1; 10 log 10 = 23.03 -> 24; 1000 log 1000 = 6907.76 -> 6908
    closed_form = min(n, max(1, math.ceil(math.sqrt(n) * 0.5 * math.log(n))))
    assert closed_form == expected
    m = B.default_n_landmarks(n)
    assert isinstance(m, int)
    assert m == expected


# --------------------------------------------------------------------------- #
# Corollary 4.1
# --------------------------------------------------------------------------- #
def test_corollary_4_1_sizes():
    n, delta = 10**4, 0.05
    # logarithmic case: sqrt(n) log(sqrt(n) max(1/delta, c/(6K^2)))
    assert B.corollary_4_1_n_landmarks(n, delta, "logarithmic", c=1.0) == math.ceil(100 * math.log(100 * 20))
    assert B.corollary_4_1_n_landmarks(n, delta, "logarithmic", c=600.0) == math.ceil(100 * math.log(100 * 100))
    # polynomial case: n^(1/(2-gamma)) log(n/delta), capped at n
    assert B.corollary_4_1_n_landmarks(n, delta, "polynomial", gamma=0.2) == math.ceil(
        n ** (1 / 1.8) * math.log(n / delta)
    )
    assert B.corollary_4_1_n_landmarks(n, delta, "polynomial", gamma=1.0) == n
    assert B.corollary_4_1_n_landmarks(n, delta, "polynomial", gamma=1.0, cap=False) == math.ceil(
        n * math.log(n / delta)
    )
    for decay, kw in [("polynomial", {"gamma": 0.3}), ("logarithmic", {"c": 1.0})]:
        ms = [B.corollary_4_1_n_landmarks(k, delta, decay, cap=False, **kw) for k in [10**3, 10**4, 10**6]]
        assert ms == sorted(ms)
        ms = [B.corollary_4_1_n_landmarks(n, d, decay, cap=False, **kw) for d in [1e-4, 1e-2, 0.3]]
        assert ms == sorted(ms, reverse=True)
    gs = [B.corollary_4_1_n_landmarks(10**6, delta, "polynomial", gamma=g) for g in [0.1, 0.4, 0.8]]
    assert gs == sorted(gs)


# --------------------------------------------------------------------------- #
# suggest_n_landmarks
# --------------------------------------------------------------------------- #
def test_suggest_n_landmarks_exponential_case(rng):
    X = rng.uniform(-1, 1, size=(4000, 1))
    rep = B.suggest_n_landmarks(X, nk.Gaussian(0.5), random_state=0)
    assert rep.decay == "logarithmic"
    c = rep.params["c"]
    assert rep.n_landmarks == B.corollary_4_1_n_landmarks(4000, 0.05, "logarithmic", c=c)
    assert rep.n_landmarks == math.ceil(math.sqrt(4000) * math.log(math.sqrt(4000) * 20))
    text = rep.explain()
    assert "Corollary 4.1" in text and str(rep.n_landmarks) in text and "Theorem 4.1" in text
    assert rep.bound > 0 and rep.eff_dim > 0 and rep.K == 1.0


def test_suggest_n_landmarks_polynomial_case(rng):
    X = rng.uniform(-1, 1, size=(3000, 1))
    rep = B.suggest_n_landmarks(X, nk.Laplacian(0.5), max_samples=800, random_state=1)
    assert rep.decay == "polynomial"
    assert 0.35 <= rep.params["gamma"] <= 0.65  # Laplacian in 1-D: sigma_i ~ i^-2
    assert rep.n_landmarks == B.corollary_4_1_n_landmarks(3000, 0.05, "polynomial", gamma=rep.params["gamma"])
    capped = B.suggest_n_landmarks(X, nk.Laplacian(0.5), max_samples=800, max_landmarks=100, random_state=1)
    assert capped.n_landmarks == 100 and "capped" in capped.reason


def test_suggest_n_landmarks_fallback_and_maintainer_call(mixture_problem):
    X = np.random.default_rng(0).normal(size=(5, 2))
    rep = B.suggest_n_landmarks(X, nk.Gaussian(1.0), random_state=0)
    assert rep.decay == "fallback"
    assert rep.n_landmarks == nk.default_n_landmarks(5)
    assert "unreliable" in rep.explain()
    # The call NystromKME(n_landmarks="bound") will make.
    gm, kernel = mixture_problem
    X = gm.sample(3000, random_state=5)
    m = B.suggest_n_landmarks(X, kernel, random_state=np.random.default_rng(3)).n_landmarks
    assert isinstance(m, int) and 1 <= m <= 3000
    # median bandwidth resolved inside
    rep = B.suggest_n_landmarks(X, "gaussian", max_samples=300, random_state=0)
    assert rep.decay in ("polynomial", "logarithmic", "fallback")


def test_suggest_n_landmarks_target_error(mixture_problem):
    gm, kernel = mixture_problem
    X = gm.sample(20000, random_state=8)
    rep = B.suggest_n_landmarks(X, kernel, target_error=0.25, max_samples=500, random_state=0)
    assert rep.bound <= 0.25 + 1e-12 and rep.bound_valid
    assert rep.n_landmarks >= rep.min_landmarks
    sp = B.estimate_spectrum(X, kernel, max_samples=500, random_state=0)  # the same spectrum
    assert B.theorem_4_1_bound(20000, rep.n_landmarks, 0.05, sp).value == pytest.approx(rep.bound)
    if rep.n_landmarks > rep.min_landmarks:  # then one landmark fewer misses the target
        assert B.theorem_4_1_bound(20000, rep.n_landmarks - 1, 0.05, sp).value > 0.25
    out_of_reach = B.suggest_n_landmarks(X, kernel, target_error=0.01, max_samples=300, random_state=0)
    assert out_of_reach.n_landmarks == 20000 and "out of reach" in out_of_reach.reason


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: B.suggest_n_landmarks(np.eye(5), nk.Gaussian(1.0), delta=0), "delta"),
        (lambda: B.suggest_n_landmarks(np.eye(5), nk.Gaussian(1.0), target_error=0), "target_error"),
        (lambda: B.suggest_n_landmarks(np.eye(5), nk.Gaussian(1.0), max_landmarks=0), "max_landmarks"),
        (lambda: B.suggest_n_landmarks([[np.nan]], nk.Gaussian(1.0)), "X"),
        (lambda: B.corollary_4_1_n_landmarks(0, 0.05, "polynomial", gamma=0.5), "n"),
        (lambda: B.corollary_4_1_n_landmarks(100, 0.05, "cubic"), "decay"),
        (lambda: B.corollary_4_1_n_landmarks(100, 0.05, "polynomial"), "gamma"),
        (lambda: B.corollary_4_1_n_landmarks(100, 0.05, "polynomial", gamma=1.5), "gamma"),
        (lambda: B.corollary_4_1_n_landmarks(100, 0.05, "logarithmic"), "c"),
        (lambda: B.corollary_4_1_n_landmarks(100, 0.05, "logarithmic", c=-1.0), "c"),
        (lambda: B.corollary_4_1_n_landmarks(100, 0.05, "logarithmic", c=1.0, K=0), "K"),
    ],
)
def test_bad_arguments_raise_value_error_naming_them(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_explain_reads_as_lines_and_repr_is_one_line(rng):
    X = rng.uniform(-1, 1, size=(2000, 1))
    rep = B.suggest_n_landmarks(X, nk.Gaussian(0.5), max_samples=300, random_state=0)
    text = rep.explain()
    assert isinstance(text, str) and isinstance(text, B.Explanation)
    assert repr(text) == str(text) == str(rep) and text.count("\n") >= 2  # no quoted "\n"
    assert "\n" not in repr(rep) and repr(rep).startswith("LandmarkSuggestion(n_landmarks=")
    assert f"n_landmarks={rep.n_landmarks}" in repr(rep)


# --------------------------------------------------------------------------- #
# numpy's BLAS on one thread inside the bounds (issue 21: thrashing on a busy machine)
# --------------------------------------------------------------------------- #
def test_linear_algebra_of_the_bounds_runs_on_one_blas_thread(monkeypatch, mixture_problem):
    """Whatever the caller's BLAS setting (2 threads here), every numpy factorisation
    and product of suggest_n_landmarks / estimate_spectrum / leverage runs with one
    BLAS thread, and the results are the same bits as under a 1-thread setting."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    seen = []

    def spy(name, real):
        def wrapped(*args, **kwargs):
            seen.append(
                (name, max(i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"))
            )
            return real(*args, **kwargs)

        return wrapped

    monkeypatch.setattr(np.linalg, "eigh", spy("eigh", np.linalg.eigh))
    monkeypatch.setattr(np.linalg, "lstsq", spy("lstsq", np.linalg.lstsq))
    gm, k = mixture_problem
    X = gm.sample(3000, random_state=1)
    with threadpoolctl.threadpool_limits(2, user_api="blas"):
        if max(i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas") != 2:
            pytest.skip("numpy's BLAS cannot run 2 threads here (one CPU?): nothing to limit")
        two = B.suggest_n_landmarks(X, k, max_samples=300, random_state=0)
        spec_two = B.estimate_spectrum(X, k, max_samples=300, method="nystrom", random_state=0)
        lev_two = spec_two.leverage(X[:500], 1e-3)
    assert {name for name, _ in seen} == {"eigh", "lstsq"}
    assert all(threads == 1 for _, threads in seen), seen
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        one = B.suggest_n_landmarks(X, k, max_samples=300, random_state=0)
        spec_one = B.estimate_spectrum(X, k, max_samples=300, method="nystrom", random_state=0)
        lev_one = spec_one.leverage(X[:500], 1e-3)
    assert (one.n_landmarks, one.bound, one.eff_dim) == (two.n_landmarks, two.bound, two.eff_dim)
    np.testing.assert_array_equal(spec_one.eigenvalues, spec_two.eigenvalues)
    np.testing.assert_array_equal(lev_one, lev_two)


def test_a_capped_suggestion_says_what_the_corollary_asked_and_why_it_was_capped(mixture_problem):
    """The reason names the uncapped m and the cap's cause (issue 29: "capped at 412" with
    no reason, where suggest-m said 901 for the same file)."""
    gm, kernel = mixture_problem
    X = gm.sample(2000, random_state=0)
    free = B.suggest_n_landmarks(X, kernel, max_samples=300, random_state=0)
    cap = max(1, free.n_landmarks // 2)
    s = B.suggest_n_landmarks(X, kernel, max_samples=300, random_state=0, max_landmarks=cap)
    assert s.n_landmarks == cap
    assert f"that is {free.n_landmarks}, capped at {cap} (max_landmarks)" in s.reason
