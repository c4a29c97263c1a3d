"""nystrom_kme.bounds: Lemma C.1, Theorem 4.1 / 5.1 / D.1, Corollary 4.1, spectrum estimates.

The statistical check (Theorem 4.1 covers the exact error in >= 95% of 100 trials)
uses the Section 6.1 Gaussian mixture, whose exact RKHS error is known in closed
form (Appendix G), at n = 2000 and the m that Theorem 4.1 requires.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest

import nystrom_kme as nk
from nystrom_kme import bounds as B
from nystrom_kme.datasets import GaussianMixture


def raw_condition(m: int, op_norm: float, delta: float, K: float) -> bool:
    """The Theorem 4.1 subsample condition, written out independently."""
    return m >= max(67.0, 12.0 * K * K / op_norm) * math.log(m / delta)


def sq_dists(A: np.ndarray, Bm: np.ndarray) -> np.ndarray:
    d2 = (A * A).sum(1)[:, None] + (Bm * Bm).sum(1)[None, :] - 2.0 * A @ Bm.T
    return np.maximum(d2, 0.0)


def poly_eff_dim(alpha: float, size: int = 4000):
    sig = np.arange(1, size + 1, dtype=float) ** (-alpha)
    sig /= sig.sum()
    return lambda lam: float(np.sum(sig / (sig + lam)))


# --------------------------------------------------------------------------- #
# Lambert W subsample condition
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("K", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("op_norm", [1e-3, 0.05, 0.5, 1.0, 4.0])
@pytest.mark.parametrize("delta", [1e-6, 1e-3, 0.05, 0.3, 0.9])
def test_min_landmarks_is_the_smallest_integer_meeting_the_condition(K, op_norm, delta):
    m = B.theorem41_min_landmarks(op_norm, delta, K)
    assert isinstance(m, int)
    assert raw_condition(m, op_norm, delta, K)
    assert not raw_condition(m - 1, op_norm, delta, K)
    assert B.theorem41_condition(m, op_norm, delta, K)
    assert not B.theorem41_condition(m - 1, op_norm, delta, K)
    if m < 2_000_000:  # brute force: no smaller integer >= 2 satisfies it (delta < 0.985)
        c = max(67.0, 12.0 * K * K / op_norm)
        k = np.arange(2, m, dtype=float)
        assert not np.any(k >= c * np.log(k / delta))


def test_min_landmarks_matches_lambert_closed_form_and_fallback(monkeypatch):
    # m* = -c W_{-1}(-delta/c); for c = 67 and delta = 0.05 it is about 633.
    from scipy.special import lambertw

    m = B.theorem41_min_landmarks(0.5, 0.05)
    m_star = float(-67.0 * lambertw(-0.05 / 67.0, k=-1).real)
    assert m == math.ceil(m_star) and 600 < m < 700
    # Without scipy, the built-in Halley iteration for W_{-1} gives the same integers.
    cases = [(0.5, 0.05, 1.0), (1e-3, 1e-6, 3.0), (4.0, 0.9, 0.5), (0.02, 0.3, 1.0)]
    with_scipy = [B.theorem41_min_landmarks(*c) for c in cases]
    monkeypatch.setitem(sys.modules, "scipy.special", None)
    with pytest.raises(ImportError):
        from scipy.special import lambertw as _  # noqa: F401
    assert [B.theorem41_min_landmarks(*c) for c in cases] == with_scipy


def test_min_landmarks_monotone():
    deltas = [1e-4, 1e-3, 0.01, 0.05, 0.2, 0.5]
    ms = [B.theorem41_min_landmarks(0.1, d) for d in deltas]
    assert ms == sorted(ms, reverse=True)          # larger delta, smaller m
    norms = [1e-3, 1e-2, 0.1, 0.5, 1.0]
    ms = [B.theorem41_min_landmarks(o, 0.05) for o in norms]
    assert ms == sorted(ms, reverse=True)          # larger ||C||, smaller m
    assert ms[-1] == ms[-2]                        # both at c = 67
    Ks = [0.1, 1.0, 2.0, 5.0]
    ms = [B.theorem41_min_landmarks(0.1, 0.05, K) for K in Ks]
    assert ms == sorted(ms)                        # larger K, larger m


# --------------------------------------------------------------------------- #
# constants and the formulas
# --------------------------------------------------------------------------- #
def test_theorem41_constants_are_the_proofs():
    K, delta = 1.7, 0.05
    c1, c2, c3 = B.theorem41_constants(K, delta)
    assert c1 == pytest.approx(2 * K * math.sqrt(2 * math.log(6 / delta)))
    assert c2 == pytest.approx(4 * math.sqrt(3) * K * math.log(12 / delta))
    assert c3 == pytest.approx(12 * math.sqrt(3) * K * math.sqrt(math.log(12 / delta)))
    # Theorem 5.1's printed c3 = 6 K sqrt(log(12/delta)) is 2 sqrt(3) times smaller.
    assert c3 / (6 * K * math.sqrt(math.log(12 / delta))) == pytest.approx(2 * math.sqrt(3))


@pytest.mark.parametrize("m,n,delta,K,N", [(700, 2000, 0.05, 1.0, 2.4), (50, 50, 0.3, 2.0, 11.0),
                                           (4, 10, 1e-4, 0.5, 0.7)])
def test_theorem41_is_lemma_c1_at_its_lambda_with_ninf_bounded(m, n, delta, K, N):
    thm = B.theorem41_bound(n, m, delta, N, K)
    lam = 12 * K * K * math.log(m / delta) / m
    assert thm.lam == pytest.approx(lam)
    lem = B.lemma_c1_bound(lam, N, K * K / lam, K, n, m, delta)
    assert thm.value == pytest.approx(lem.value, rel=1e-12)
    for a, b in zip(thm.terms, lem.terms):
        assert a == pytest.approx(b, rel=1e-12)
    c1, c2, c3 = B.theorem41_constants(K, delta)
    direct = c1 / math.sqrt(n) + c2 / m + c3 * math.sqrt(math.log(m / delta)) * math.sqrt(N) / m
    assert float(thm) == pytest.approx(direct, rel=1e-12)


def test_theorem41_accepts_callable_and_reports_condition():
    N = poly_eff_dim(2.0)
    b = B.theorem41_bound(5000, 700, 0.05, N, op_norm=0.5)
    assert b.eff_dim == pytest.approx(N(b.lam))
    assert b.m_min == B.theorem41_min_landmarks(0.5, 0.05)
    assert b.m_condition is True and b.holds is True
    small = B.theorem41_bound(5000, 100, 0.05, N, op_norm=0.5)
    assert small.m_condition is False
    assert B.theorem41_bound(5000, 700, 0.05, 1.0).holds is None


# --------------------------------------------------------------------------- #
# monotonicity
# --------------------------------------------------------------------------- #
def decreasing(values) -> bool:
    return all(a > b for a, b in zip(values, values[1:]))


@pytest.mark.parametrize("alpha", [1.5, 3.0])
def test_theorem41_monotone_in_n_m_delta(alpha):
    N = poly_eff_dim(alpha)
    ns = [1000, 2000, 5000, 10**5]
    assert decreasing([B.theorem41_bound(n, 500, 0.05, N).value for n in ns])
    ms = [10, 50, 100, 500, 1000, 5000]
    assert decreasing([B.theorem41_bound(10**4, m, 0.05, N).value for m in ms])
    ds = [1e-4, 1e-3, 0.01, 0.05, 0.2, 0.6]
    assert decreasing([B.theorem41_bound(10**4, 500, d, N).value for d in ds])
    # each term separately, as the formula says
    b1, b2 = B.theorem41_bound(10**4, 300, 0.05, N), B.theorem41_bound(10**4, 900, 0.05, N)
    assert b1.terms[0] == b2.terms[0]
    assert b1.terms[1] > b2.terms[1] and b1.terms[2] > b2.terms[2]


def test_lemma_c1_monotone_in_n_m_delta():
    args = dict(lam=0.05, eff_dim=6.0, eff_dim_inf=15.0, K=1.0)
    assert decreasing([B.lemma_c1_bound(n=n, m=500, delta=0.05, **args).value
                       for n in [600, 1000, 10**4, 10**6]])
    assert decreasing([B.lemma_c1_bound(n=10**4, m=m, delta=0.05, **args).value
                       for m in [10, 100, 1000, 5000]])
    assert decreasing([B.lemma_c1_bound(n=10**4, m=500, delta=d, **args).value
                       for d in [1e-4, 1e-2, 0.05, 0.5]])
    # conditions: once true, they stay true as m (resp. n) grows
    conds_m = [B.lemma_c1_bound(n=10**5, m=m, delta=0.05, **args).m_condition
               for m in range(400, 800, 10)]
    assert conds_m == sorted(conds_m) and conds_m[0] is False and conds_m[-1] is True
    conds_n = [B.lemma_c1_bound(n=n, m=500, delta=0.05, **args).n_condition
               for n in range(500, 2000, 50)]
    assert conds_n == sorted(conds_n) and conds_n[0] is False and conds_n[-1] is True


def test_mmd_bounds_are_sums_and_monotone():
    N1, N2 = poly_eff_dim(2.0), poly_eff_dim(4.0)
    b = B.theorem51_bound((5000, 8000), (600, 700), 0.05, (N1, N2), op_norm=(0.5, 0.5))
    p1 = B.theorem41_bound(5000, 600, 0.05, N1, op_norm=0.5)
    p2 = B.theorem41_bound(8000, 700, 0.05, N2, op_norm=0.5)
    assert b.value == pytest.approx(p1.value + p2.value)
    assert b.confidence == pytest.approx(0.9)
    assert b.holds is False            # m = 600 < 633 for the first distribution
    assert decreasing([B.theorem51_bound((n, n), (500, 500), 0.05, (N1, N2)).value
                       for n in [1000, 4000, 10**5]])
    assert decreasing([B.theorem51_bound((10**4,) * 2, (m, m), 0.05, (N1, N2)).value
                       for m in [100, 500, 2000]])
    assert decreasing([B.theorem51_bound((10**4,) * 2, (500, 500), d, (N1, N2)).value
                       for d in [1e-3, 0.05, 0.3]])
    d1 = B.theorem_d1_bound((0.1, 0.05), (3.0, 6.0), (5.0, 15.0), 1.0, (2000, 3000), (600, 700),
                            0.05)
    l1 = B.lemma_c1_bound(0.1, 3.0, 5.0, 1.0, 2000, 600, 0.05)
    l2 = B.lemma_c1_bound(0.05, 6.0, 15.0, 1.0, 3000, 700, 0.05)
    assert d1.value == pytest.approx(l1.value + l2.value)
    assert d1.holds == (l1.holds and l2.holds)


def test_corollary41_sizes():
    n, delta = 10**4, 0.05
    # logarithmic case: sqrt(n) log(sqrt(n) max(1/delta, c/(6K^2)))
    assert B.corollary41_n_landmarks(n, delta, "logarithmic", c=1.0) == \
        math.ceil(100 * math.log(100 * 20))
    assert B.corollary41_n_landmarks(n, delta, "logarithmic", c=600.0) == \
        math.ceil(100 * math.log(100 * 100))
    # polynomial case: n^(1/(2-gamma)) log(n/delta), capped at n
    assert B.corollary41_n_landmarks(n, delta, "polynomial", gamma=0.2) == \
        math.ceil(n ** (1 / 1.8) * math.log(n / delta))
    assert B.corollary41_n_landmarks(n, delta, "polynomial", gamma=1.0) == n
    assert B.corollary41_n_landmarks(n, delta, "polynomial", gamma=1.0, cap=False) == \
        math.ceil(n * math.log(n / delta))
    for decay, kw in [("polynomial", {"gamma": 0.3}), ("logarithmic", {"c": 1.0})]:
        ms = [B.corollary41_n_landmarks(k, delta, decay, cap=False, **kw) for k in [10**3, 10**4, 10**6]]
        assert ms == sorted(ms)
        ms = [B.corollary41_n_landmarks(n, d, decay, cap=False, **kw) for d in [1e-4, 1e-2, 0.3]]
        assert ms == sorted(ms, reverse=True)
    gs = [B.corollary41_n_landmarks(10**6, delta, "polynomial", gamma=g) for g in [0.1, 0.4, 0.8]]
    assert gs == sorted(gs)


# --------------------------------------------------------------------------- #
# Lemma C.1 conditions on hand-made inputs
# --------------------------------------------------------------------------- #
def test_lemma_c1_conditions_hand_made():
    lam, K, delta = 0.1, 1.0, 0.05
    # m_required = max(67, 5 N_inf) log(12 K^2 / (lam delta)) = 67 log(2400) = 521.46...
    r = B.lemma_c1_bound(lam, 4.0, 10.0, K, 10**4, 522, delta)
    assert r.m_required == pytest.approx(67 * math.log(2400))
    assert r.m_condition is True
    assert B.lemma_c1_bound(lam, 4.0, 10.0, K, 10**4, 521, delta).m_condition is False
    # 5 N_inf = 100 > 67: m_required = 100 log(2400) = 778.3
    assert B.lemma_c1_bound(lam, 4.0, 20.0, K, 10**4, 779, delta).m_condition is True
    assert B.lemma_c1_bound(lam, 4.0, 20.0, K, 10**4, 778, delta).m_condition is False
    # lam n >= 12 K^2 log(4/delta) = 52.58: n >= 525.8
    assert B.lemma_c1_bound(lam, 4.0, 10.0, K, 526, 500, delta).n_condition is True
    r = B.lemma_c1_bound(lam, 4.0, 10.0, K, 525, 500, delta)
    assert r.n_condition is False and r.m_condition is False and r.holds is False
    assert r.lambda_n_required == pytest.approx(12 * math.log(80))
    # corrected: 12 K^2 log(12/delta) = 65.77: n >= 657.7
    assert B.lemma_c1_bound(lam, 4.0, 10.0, K, 657, 500, delta, corrected=True).n_condition is False
    assert B.lemma_c1_bound(lam, 4.0, 10.0, K, 658, 500, delta, corrected=True).n_condition is True
    # K = 2 scales both: 12 K^2 log(4/delta) = 210.34 (n >= 2103.4) and
    # m_required = 67 log(12 * 4 / (lam delta)) = 67 log(9600) = 614.4
    r = B.lemma_c1_bound(lam, 4.0, 10.0, 2.0, 2104, 615, delta)
    assert r.lambda_n_required == pytest.approx(48 * math.log(80))
    assert r.m_required == pytest.approx(67 * math.log(9600))
    assert r.n_condition is True and r.m_condition is True
    r = B.lemma_c1_bound(lam, 4.0, 10.0, 2.0, 2103, 614, delta)
    assert r.n_condition is False and r.m_condition is False
    # lambda range
    ok = B.lemma_c1_bound(lam, 4.0, 10.0, K, 10**4, 600, delta, op_norm=0.5)
    assert ok.lambda_condition is True and ok.holds is True
    bad = B.lemma_c1_bound(lam, 4.0, 10.0, K, 10**4, 600, delta, op_norm=0.05)
    assert bad.lambda_condition is False and bad.holds is False
    unknown = B.lemma_c1_bound(lam, 4.0, 10.0, K, 10**4, 600, delta)
    assert unknown.lambda_condition is None and unknown.holds is None
    assert unknown.conditions == {"m": True, "n": True, "lambda": None}
    # value by hand
    l12 = math.log(12 / delta)
    expect = (2 * math.sqrt(2 * math.log(6 / delta)) / 100
              + math.sqrt(lam) * (4 * math.sqrt(30) * l12 / 600 + 6 * math.sqrt(4 * l12 / 600)))
    assert unknown.value == pytest.approx(expect, rel=1e-12)


# --------------------------------------------------------------------------- #
# estimators against the exact spectrum of K_n / n
# --------------------------------------------------------------------------- #
@pytest.fixture(scope="module")
def mixture_problem():
    gm = GaussianMixture(8, 10, random_state=2022)
    pilot = gm.sample(1000, random_state=7)
    kernel = nk.Gaussian("median").resolve(pilot, np.random.default_rng(0))
    return gm, kernel


def test_effective_dimension_within_10_percent_of_exact(mixture_problem):
    gm, kernel = mixture_problem
    n = 2000
    X = gm.sample(n, random_state=11)
    sigma = float(kernel.bandwidth)
    Kn = np.exp(-sq_dists(X, X) / (2 * sigma**2))
    w, U = np.linalg.eigh(Kn / n)                      # exact spectrum of C_n
    w = np.maximum(w, 0.0)
    m = B.theorem41_min_landmarks(float(w[-1]), 0.05)
    lams = [B.theorem41_lambda(m, 0.05), 0.1, 1e-2, 1e-3]
    for method in ("subsample", "nystrom"):
        sp = B.estimate_spectrum(X, kernel, max_samples=500, method=method, random_state=3,
                                 n_threads=1)
        assert sp.n_used == 500 and sp.eigenvalues.size <= 500
        assert sp.op_norm == pytest.approx(w[-1], rel=0.1)
        for lam in lams:
            exact = float(np.sum(w / (w + lam)))
            est = sp.effective_dimension(lam)
            assert abs(est - exact) <= 0.1 * exact, (method, lam, est, exact)
        # N_inf: exact sup over the sample of <phi(x), (C_n + lam)^{-1} phi(x)> = n max_i lev_i
        for lam in (0.1, 1e-2):
            lev = n * ((U * U) @ (w / (w + lam)))
            est = sp.max_leverage(lam)
            assert 0.75 * lev.max() <= est <= min(1.25 * lev.max(), 1.0 / lam)


def test_spectrum_is_exact_when_max_samples_covers_the_data(mixture_problem):
    gm, kernel = mixture_problem
    n = 300
    X = gm.sample(n, random_state=12)
    sigma = float(kernel.bandwidth)
    w, U = np.linalg.eigh(np.exp(-sq_dists(X, X) / (2 * sigma**2)) / n)
    w = np.maximum(w, 0.0)
    full = B.estimate_spectrum(X, kernel, max_samples=n, random_state=0)
    assert full.n_used == n and full.reliable_lambda == 0.0
    np.testing.assert_allclose(np.sort(full.eigenvalues), w, atol=1e-12)
    assert full.trace == pytest.approx(1.0)                 # E k(x, x) = 1
    assert full.effective_dimension(1e-3) == pytest.approx(float(np.sum(w / (w + 1e-3))), rel=1e-10)
    lev = n * ((U * U) @ (w / (w + 1e-2)))                  # N_x with C_n, at the sample points
    np.testing.assert_allclose(full.leverage(X, 1e-2), lev, rtol=1e-6)
    assert full.max_leverage(1e-2) == pytest.approx(lev.max(), rel=1e-6)
    # the shortcuts
    assert B.covariance_norm(X, kernel, max_samples=n) == pytest.approx(w[-1], rel=1e-10)
    assert B.effective_dimension(X, kernel, 0.1, max_samples=n) == \
        pytest.approx(float(np.sum(w / (w + 0.1))), rel=1e-10)
    np.testing.assert_allclose(B.effective_dimension(X, kernel, np.array([0.1, 0.01]), max_samples=n),
                               [np.sum(w / (w + 0.1)), np.sum(w / (w + 0.01))], rtol=1e-10)
    assert B.max_leverage(X, kernel, 1e-2, max_samples=n) == pytest.approx(lev.max(), rel=1e-6)


def test_unbounded_kernel_uses_plugin_K(rng):
    X = rng.normal(size=(200, 3))
    sp = B.estimate_spectrum(X, nk.Polynomial(2.0, degree=2), max_samples=100, random_state=0)
    diag = (np.einsum("ij,ij->i", X, X) / 4.0 + 1.0) ** 2
    assert sp.K_is_plugin and sp.K == pytest.approx(math.sqrt(diag.max()))
    rep = B.suggest_n_landmarks(X, nk.Linear(), random_state=0)
    assert "plug-in" in rep.reason and 1 <= rep.n_landmarks <= 200


# --------------------------------------------------------------------------- #
# Theorem 4.1 covers the exact error (Section 6.1 mixture)
# --------------------------------------------------------------------------- #
def test_theorem41_bound_covers_exact_error_in_95_percent_of_trials(mixture_problem):
    """lambda = lambda_m = 12 K^2 log(m/delta)/m (Theorem 4.1's own choice); N(lambda_m)
    and N_inf(lambda_m) are estimated on each trial's data (subsample of 200 points)."""
    gm, kernel = mixture_problem
    sigma = float(kernel.bandwidth)
    n, delta, trials = 2000, 0.05, 100
    pilot = B.estimate_spectrum(gm.sample(n, random_state=99), kernel, max_samples=1000,
                                random_state=0)
    m = B.theorem41_min_landmarks(pilot.op_norm, delta, 1.0)
    assert 4 <= m <= n
    lam = B.theorem41_lambda(m, delta)
    covered = covered_lemma = 0
    ratios = []
    for t in range(trials):
        rng = np.random.default_rng(1000 + t)
        X = gm.sample(n, random_state=rng)
        # one OpenMP thread: on a 2-core machine the core's and BLAS's threads otherwise contend
        est = nk.NystromKME(kernel, n_landmarks=m, random_state=rng, n_threads=1).fit(X)
        L, w = est.landmarks_, est.weights_
        quad = float(w @ kernel(L, L, n_threads=1) @ w)
        err = gm.embedding_error(L, w, sigma, gram_quadratic=quad)     # exact (Appendix G)
        sp = B.estimate_spectrum(X, kernel, max_samples=200, random_state=rng, n_threads=1)
        thm = B.theorem41_bound(n, m, delta, sp, op_norm=sp.op_norm)
        assert thm.holds
        lem = B.lemma_c1_bound(lam, sp.effective_dimension(lam), sp.max_leverage(lam), 1.0, n, m,
                               delta, op_norm=sp.op_norm)
        assert lem.holds
        covered += err <= thm.value
        covered_lemma += err <= lem.value
        ratios.append(err / thm.value)
    assert covered >= 0.95 * trials
    assert covered_lemma >= 0.95 * trials
    # The bound is conservative but not absurd here (measured: ratio ~ 0.03 - 0.05).
    assert 0.0 < max(ratios) < 1.0


# --------------------------------------------------------------------------- #
# decay fit and suggest_n_landmarks
# --------------------------------------------------------------------------- #
def test_fit_spectral_decay_on_synthetic_spectra():
    i = np.arange(1, 1001, dtype=float)
    poly = B.fit_spectral_decay(i ** -2.0 / np.sum(i ** -2.0))
    assert poly.model == "polynomial" and poly.reliable
    assert poly.params["gamma"] == pytest.approx(0.5, rel=0.02)
    # the fitted c makes the model bound N on the reliable range
    ev = i ** -2.0 / np.sum(i ** -2.0)
    for lam in np.geomspace(*poly.lambda_range, 7):
        assert poly.effective_dimension(lam) >= np.sum(ev / (ev + lam)) * (1 - 1e-9)
    ev = 0.5 * np.exp(-0.3 * i)
    expo = B.fit_spectral_decay(ev)
    assert expo.model == "logarithmic" and expo.reliable
    assert expo.params["beta"] == pytest.approx(0.3, rel=0.02)
    for lam in np.geomspace(*expo.lambda_range, 7):
        assert expo.effective_dimension(lam) >= np.sum(ev / (ev + lam)) * (1 - 1e-9)
    flat = B.fit_spectral_decay(np.ones(50))
    assert not flat.reliable
    assert B.fit_spectral_decay(np.array([1.0, 0.5])).model is None


def test_suggest_n_landmarks_exponential_case(rng):
    X = rng.uniform(-1, 1, size=(4000, 1))
    rep = B.suggest_n_landmarks(X, nk.Gaussian(0.5), random_state=0)
    assert rep.decay == "logarithmic"
    c = rep.params["c"]
    assert rep.n_landmarks == B.corollary41_n_landmarks(4000, 0.05, "logarithmic", c=c)
    assert rep.n_landmarks == math.ceil(math.sqrt(4000) * math.log(math.sqrt(4000) * 20))
    text = rep.explain()
    assert "Corollary 4.1" in text and str(rep.n_landmarks) in text and "Theorem 4.1" in text
    assert rep.bound > 0 and rep.eff_dim > 0 and rep.K == 1.0


def test_suggest_n_landmarks_polynomial_case(rng):
    X = rng.uniform(-1, 1, size=(3000, 1))
    rep = B.suggest_n_landmarks(X, nk.Laplacian(0.5), max_samples=800, random_state=1)
    assert rep.decay == "polynomial"
    assert 0.35 <= rep.params["gamma"] <= 0.65         # Laplacian in 1-D: sigma_i ~ i^-2
    assert rep.n_landmarks == B.corollary41_n_landmarks(3000, 0.05, "polynomial",
                                                        gamma=rep.params["gamma"])
    capped = B.suggest_n_landmarks(X, nk.Laplacian(0.5), max_samples=800, max_landmarks=100,
                                   random_state=1)
    assert capped.n_landmarks == 100 and "capped" in capped.reason


def test_suggest_n_landmarks_fallback_and_maintainer_call(mixture_problem):
    X = np.random.default_rng(0).normal(size=(5, 2))
    rep = B.suggest_n_landmarks(X, nk.Gaussian(1.0), random_state=0)
    assert rep.decay == "fallback"
    assert rep.n_landmarks == nk.default_n_landmarks(5)
    assert "unreliable" in rep.explain()
    # The call NystromKME(n_landmarks="auto") will make.
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
    assert B.theorem41_bound(20000, rep.n_landmarks, 0.05, sp).value == pytest.approx(rep.bound)
    if rep.n_landmarks > rep.min_landmarks:   # then one landmark fewer misses the target
        assert B.theorem41_bound(20000, rep.n_landmarks - 1, 0.05, sp).value > 0.25
    out_of_reach = B.suggest_n_landmarks(X, kernel, target_error=0.01, max_samples=300,
                                         random_state=0)
    assert out_of_reach.n_landmarks == 20000 and "out of reach" in out_of_reach.reason


# --------------------------------------------------------------------------- #
# argument validation: ValueError naming the argument
# --------------------------------------------------------------------------- #
GOOD_C1 = dict(lam=0.1, eff_dim=3.0, eff_dim_inf=5.0, K=1.0, n=1000, m=600, delta=0.05)


@pytest.mark.parametrize("name,bad", [
    ("lam", 0.0), ("lam", -1.0), ("lam", float("nan")), ("lam", "x"),
    ("eff_dim", -1.0), ("eff_dim", float("inf")), ("eff_dim_inf", -0.5),
    ("K", 0.0), ("K", float("inf")), ("n", 0), ("n", 2.5), ("n", True),
    ("m", 0), ("m", 1001), ("delta", 0.0), ("delta", 1.0), ("delta", 1.5), ("op_norm", -1.0),
    ("corrected", "yes"),
])
def test_lemma_c1_rejects_bad_arguments(name, bad):
    kwargs = dict(GOOD_C1)
    kwargs[name] = bad
    with pytest.raises(ValueError, match=name):
        B.lemma_c1_bound(**kwargs)


@pytest.mark.parametrize("call,name", [
    (lambda: B.theorem41_bound(0, 1, 0.05, 1.0), "n"),
    (lambda: B.theorem41_bound(10, 11, 0.05, 1.0), "m"),
    (lambda: B.theorem41_bound(10, 5, 2.0, 1.0), "delta"),
    (lambda: B.theorem41_bound(10, 5, 0.05, -1.0), "eff_dim"),
    (lambda: B.theorem41_bound(10, 5, 0.05, lambda lam: float("nan")), "eff_dim"),
    (lambda: B.theorem41_bound(10, 5, 0.05, 1.0, K=-1.0), "K"),
    (lambda: B.theorem41_bound(10, 5, 0.05, 1.0, op_norm=0.0), "op_norm"),
    (lambda: B.theorem41_constants(0.0, 0.05), "K"),
    (lambda: B.theorem41_constants(1.0, 0.0), "delta"),
    (lambda: B.theorem41_lambda(0, 0.05), "m"),
    (lambda: B.theorem41_condition(10, -1.0, 0.05), "op_norm"),
    (lambda: B.theorem41_min_landmarks(0.0, 0.05), "op_norm"),
    (lambda: B.theorem41_min_landmarks(0.5, 1.0), "delta"),
    (lambda: B.theorem41_min_landmarks(0.5, 0.05, K=float("nan")), "K"),
    (lambda: B.theorem51_bound(100, (10, 10), 0.05, (1.0, 1.0)), "n"),
    (lambda: B.theorem51_bound((100, 100), (10, 200), 0.05, (1.0, 1.0)), r"m\[1\]"),
    (lambda: B.theorem51_bound((100, 100), (10, 10), 0.05, (1.0, -1.0)), r"eff_dim\[1\]"),
    (lambda: B.theorem51_bound((100, 100), (10, 10), 0.05, (1.0, 1.0), op_norm=(1, 0)),
     r"op_norm\[1\]"),
    (lambda: B.theorem_d1_bound((0.1, -0.1), (1, 1), (1, 1), 1.0, (100, 100), (10, 10), 0.05),
     r"lam\[1\]"),
    (lambda: B.theorem_d1_bound((0.1, 0.1), (1, 1), (1, -1), 1.0, (100, 100), (10, 10), 0.05),
     r"eff_dim_inf\[1\]"),
    (lambda: B.corollary41_n_landmarks(0, 0.05, "polynomial", gamma=0.5), "n"),
    (lambda: B.corollary41_n_landmarks(100, 0.05, "cubic"), "decay"),
    (lambda: B.corollary41_n_landmarks(100, 0.05, "polynomial"), "gamma"),
    (lambda: B.corollary41_n_landmarks(100, 0.05, "polynomial", gamma=1.5), "gamma"),
    (lambda: B.corollary41_n_landmarks(100, 0.05, "logarithmic"), "c"),
    (lambda: B.corollary41_n_landmarks(100, 0.05, "logarithmic", c=-1.0), "c"),
    (lambda: B.corollary41_n_landmarks(100, 0.05, "logarithmic", c=1.0, K=0), "K"),
    (lambda: B.estimate_spectrum(np.ones(5), nk.Gaussian(1.0)), "X"),
    (lambda: B.estimate_spectrum(np.ones((5, 2)), nk.Gaussian(1.0), max_samples=0), "max_samples"),
    (lambda: B.estimate_spectrum(np.ones((5, 2)), nk.Gaussian(1.0), method="exact"), "method"),
    (lambda: B.estimate_spectrum(np.ones((5, 2)), "nope"), "kernel"),
    (lambda: B.estimate_spectrum(np.ones((5, 2)), nk.Gaussian(1.0), random_state="a"),
     "random_state"),
    (lambda: B.estimate_spectrum(np.eye(5), nk.Gaussian(1.0)).effective_dimension(0.0), "lam"),
    (lambda: B.estimate_spectrum(np.eye(5), nk.Gaussian(1.0)).max_leverage(-1.0), "lam"),
    (lambda: B.estimate_spectrum(np.eye(5), nk.Gaussian(1.0)).leverage(np.ones((2, 3)), 0.1), "Y"),
    (lambda: B.estimate_spectrum(np.eye(5), nk.Gaussian(1.0), n_threads=0), "n_threads"),
    (lambda: B.fit_spectral_decay([]), "eigenvalues"),
    (lambda: B.fit_spectral_decay([1.0, float("nan")]), "eigenvalues"),
    (lambda: B.fit_spectral_decay([1.0, 0.5], n_used=0), "n_used"),
    (lambda: B.suggest_n_landmarks(np.eye(5), nk.Gaussian(1.0), delta=0), "delta"),
    (lambda: B.suggest_n_landmarks(np.eye(5), nk.Gaussian(1.0), target_error=0), "target_error"),
    (lambda: B.suggest_n_landmarks(np.eye(5), nk.Gaussian(1.0), max_landmarks=0), "max_landmarks"),
    (lambda: B.suggest_n_landmarks([[np.nan]], nk.Gaussian(1.0)), "X"),
])
def test_bad_arguments_raise_value_error_naming_them(call, name):
    with pytest.raises(ValueError, match=name):
        call()
