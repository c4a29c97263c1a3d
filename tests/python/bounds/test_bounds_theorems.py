"""nystrom_kme.bounds.theorems: Lemma C.1 and Theorem 4.1 (one mean embedding).

The MMD bounds (Theorem 5.1 / D.1) are tested in test_bounds_mmd.py, Corollary 4.1
in test_bounds_suggest.py.

The statistical check (Theorem 4.1 covers the exact error in >= 95% of 100 trials)
uses the Section 6.1 Gaussian mixture, whose exact RKHS error is known in closed
form (Appendix G), at n = 2000 and the m that Theorem 4.1 requires.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from bounds_data import decreasing, poly_eff_dim, section_6_1_mixture

import nystrom_kme as nk
from nystrom_kme import bounds as B


@pytest.fixture(scope="module")
def mixture_problem():
    return section_6_1_mixture()


def raw_condition(m: int, op_norm: float, delta: float, K: float) -> bool:
    """The Theorem 4.1 subsample condition, written out independently."""
    return m >= max(67.0, 12.0 * K * K / op_norm) * math.log(m / delta)


# --------------------------------------------------------------------------- #
# Lambert W subsample condition
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("K", [0.5, 1.0, 3.0])
@pytest.mark.parametrize("op_norm", [1e-3, 0.05, 0.5, 1.0, 4.0])
@pytest.mark.parametrize("delta", [1e-6, 1e-3, 0.05, 0.3, 0.9])
def test_min_landmarks_is_the_smallest_integer_meeting_the_condition(K, op_norm, delta):
    m = B.theorem_4_1_min_landmarks(op_norm, delta, K)
    assert isinstance(m, int)
    assert raw_condition(m, op_norm, delta, K)
    assert not raw_condition(m - 1, op_norm, delta, K)
    assert B.theorem_4_1_condition(m, op_norm, delta, K)
    assert not B.theorem_4_1_condition(m - 1, op_norm, delta, K)
    if m < 2_000_000:  # brute force: no smaller integer >= 2 satisfies it (delta < 0.985)
        c = max(67.0, 12.0 * K * K / op_norm)
        k = np.arange(2, m, dtype=float)
        assert not np.any(k >= c * np.log(k / delta))


def test_min_landmarks_matches_lambert_closed_form_and_fallback(monkeypatch):
    # m* = -c W_{-1}(-delta/c); for c = 67 and delta = 0.05 it is about 633.
    from scipy.special import lambertw

    m = B.theorem_4_1_min_landmarks(0.5, 0.05)
    m_star = float(-67.0 * lambertw(-0.05 / 67.0, k=-1).real)
    assert m == math.ceil(m_star) and 600 < m < 700
    # Without scipy, the built-in Halley iteration for W_{-1} gives the same integers.
    cases = [(0.5, 0.05, 1.0), (1e-3, 1e-6, 3.0), (4.0, 0.9, 0.5), (0.02, 0.3, 1.0)]
    with_scipy = [B.theorem_4_1_min_landmarks(*c) for c in cases]
    monkeypatch.setitem(sys.modules, "scipy.special", None)
    with pytest.raises(ImportError):
        from scipy.special import lambertw as _  # noqa: F401
    assert [B.theorem_4_1_min_landmarks(*c) for c in cases] == with_scipy


def test_min_landmarks_monotone():
    deltas = [1e-4, 1e-3, 0.01, 0.05, 0.2, 0.5]
    ms = [B.theorem_4_1_min_landmarks(0.1, d) for d in deltas]
    assert ms == sorted(ms, reverse=True)  # larger delta, smaller m
    norms = [1e-3, 1e-2, 0.1, 0.5, 1.0]
    ms = [B.theorem_4_1_min_landmarks(o, 0.05) for o in norms]
    assert ms == sorted(ms, reverse=True)  # larger ||C||, smaller m
    assert ms[-1] == ms[-2]  # both at c = 67
    Ks = [0.1, 1.0, 2.0, 5.0]
    ms = [B.theorem_4_1_min_landmarks(0.1, 0.05, K) for K in Ks]
    assert ms == sorted(ms)  # larger K, larger m


# --------------------------------------------------------------------------- #
# constants and the formulas
# --------------------------------------------------------------------------- #
def test_theorem_4_1_constants_are_the_proofs():
    K, delta = 1.7, 0.05
    c1, c2, c3 = B.theorem_4_1_constants(K, delta)
    assert c1 == pytest.approx(2 * K * math.sqrt(2 * math.log(6 / delta)))
    assert c2 == pytest.approx(4 * math.sqrt(3) * K * math.log(12 / delta))
    assert c3 == pytest.approx(12 * math.sqrt(3) * K * math.sqrt(math.log(12 / delta)))
    # Theorem 5.1's printed c3 = 6 K sqrt(log(12/delta)) is 2 sqrt(3) times smaller.
    assert c3 / (6 * K * math.sqrt(math.log(12 / delta))) == pytest.approx(2 * math.sqrt(3))


@pytest.mark.parametrize(
    "m,n,delta,K,N", [(700, 2000, 0.05, 1.0, 2.4), (50, 50, 0.3, 2.0, 11.0), (4, 10, 1e-4, 0.5, 0.7)]
)
def test_theorem_4_1_is_lemma_c1_at_its_lambda_with_ninf_bounded(m, n, delta, K, N):
    thm = B.theorem_4_1_bound(n, m, delta, N, K)
    lam = 12 * K * K * math.log(m / delta) / m
    assert thm.lam == pytest.approx(lam)
    lem = B.lemma_c1_bound(lam, N, K * K / lam, K, n, m, delta)
    assert thm.value == pytest.approx(lem.value, rel=1e-12)
    for a, b in zip(thm.terms, lem.terms):
        assert a == pytest.approx(b, rel=1e-12)
    c1, c2, c3 = B.theorem_4_1_constants(K, delta)
    direct = c1 / math.sqrt(n) + c2 / m + c3 * math.sqrt(math.log(m / delta)) * math.sqrt(N) / m
    assert float(thm) == pytest.approx(direct, rel=1e-12)


def test_theorem_4_1_accepts_callable_and_reports_condition():
    N = poly_eff_dim(2.0)
    b = B.theorem_4_1_bound(5000, 700, 0.05, N, op_norm=0.5)
    assert b.eff_dim == pytest.approx(N(b.lam))
    assert b.m_min == B.theorem_4_1_min_landmarks(0.5, 0.05)
    assert b.m_condition is True and b.holds is True
    small = B.theorem_4_1_bound(5000, 100, 0.05, N, op_norm=0.5)
    assert small.m_condition is False
    assert B.theorem_4_1_bound(5000, 700, 0.05, 1.0).holds is None


# --------------------------------------------------------------------------- #
# monotonicity
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize("alpha", [1.5, 3.0])
def test_theorem_4_1_monotone_in_n_m_delta(alpha):
    N = poly_eff_dim(alpha)
    ns = [1000, 2000, 5000, 10**5]
    assert decreasing([B.theorem_4_1_bound(n, 500, 0.05, N).value for n in ns])
    ms = [10, 50, 100, 500, 1000, 5000]
    assert decreasing([B.theorem_4_1_bound(10**4, m, 0.05, N).value for m in ms])
    ds = [1e-4, 1e-3, 0.01, 0.05, 0.2, 0.6]
    assert decreasing([B.theorem_4_1_bound(10**4, 500, d, N).value for d in ds])
    # each term separately, as the formula says
    b1, b2 = B.theorem_4_1_bound(10**4, 300, 0.05, N), B.theorem_4_1_bound(10**4, 900, 0.05, N)
    assert b1.terms[0] == b2.terms[0]
    assert b1.terms[1] > b2.terms[1] and b1.terms[2] > b2.terms[2]


def test_lemma_c1_monotone_in_n_m_delta():
    args = {"lam": 0.05, "eff_dim": 6.0, "eff_dim_inf": 15.0, "K": 1.0}
    assert decreasing([B.lemma_c1_bound(n=n, m=500, delta=0.05, **args).value for n in [600, 1000, 10**4, 10**6]])
    assert decreasing([B.lemma_c1_bound(n=10**4, m=m, delta=0.05, **args).value for m in [10, 100, 1000, 5000]])
    assert decreasing([B.lemma_c1_bound(n=10**4, m=500, delta=d, **args).value for d in [1e-4, 1e-2, 0.05, 0.5]])
    # conditions: once true, they stay true as m (resp. n) grows
    conds_m = [B.lemma_c1_bound(n=10**5, m=m, delta=0.05, **args).m_condition for m in range(400, 800, 10)]
    assert conds_m == sorted(conds_m) and conds_m[0] is False and conds_m[-1] is True
    conds_n = [B.lemma_c1_bound(n=n, m=500, delta=0.05, **args).n_condition for n in range(500, 2000, 50)]
    assert conds_n == sorted(conds_n) and conds_n[0] is False and conds_n[-1] is True


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
    expect = 2 * math.sqrt(2 * math.log(6 / delta)) / 100 + math.sqrt(lam) * (
        4 * math.sqrt(30) * l12 / 600 + 6 * math.sqrt(4 * l12 / 600)
    )
    assert unknown.value == pytest.approx(expect, rel=1e-12)


# --------------------------------------------------------------------------- #
# Theorem 4.1 covers the exact error (Section 6.1 mixture)
# --------------------------------------------------------------------------- #
def test_theorem_4_1_bound_covers_exact_error_in_95_percent_of_trials(mixture_problem):
    """lambda = lambda_m = 12 K^2 log(m/delta)/m (Theorem 4.1's own choice); N(lambda_m)
    and N_inf(lambda_m) are estimated on each trial's data (subsample of 200 points)."""
    gm, kernel = mixture_problem
    sigma = float(kernel.bandwidth)
    n, delta, trials = 2000, 0.05, 100
    pilot = B.estimate_spectrum(gm.sample(n, random_state=99), kernel, max_samples=1000, random_state=0)
    m = B.theorem_4_1_min_landmarks(pilot.op_norm, delta, 1.0)
    assert 4 <= m <= n
    lam = B.theorem_4_1_lambda(m, delta)
    covered = covered_lemma = 0
    ratios = []
    for t in range(trials):
        rng = np.random.default_rng(1000 + t)
        X = gm.sample(n, random_state=rng)
        # one OpenMP thread: on a 2-core machine the core's and BLAS's threads otherwise contend
        est = nk.NystromKME(kernel, n_landmarks=m, random_state=rng, n_threads=1).fit(X)
        L, w = est.landmarks_, est.weights_
        quad = float(w @ kernel(L, L, n_threads=1) @ w)
        err = gm.embedding_error(L, w, sigma, gram_quadratic=quad)  # exact (Appendix G)
        sp = B.estimate_spectrum(X, kernel, max_samples=200, random_state=rng, n_threads=1)
        thm = B.theorem_4_1_bound(n, m, delta, sp, op_norm=sp.op_norm)
        assert thm.holds
        lem = B.lemma_c1_bound(
            lam, sp.effective_dimension(lam), sp.max_leverage(lam), 1.0, n, m, delta, op_norm=sp.op_norm
        )
        assert lem.holds
        covered += err <= thm.value
        covered_lemma += err <= lem.value
        ratios.append(err / thm.value)
    assert covered >= 0.95 * trials
    assert covered_lemma >= 0.95 * trials
    # The bound is conservative but not absurd here (measured: ratio ~ 0.03 - 0.05).
    assert 0.0 < max(ratios) < 1.0


# --------------------------------------------------------------------------- #
# argument validation: ValueError naming the argument
# --------------------------------------------------------------------------- #
GOOD_C1 = {"lam": 0.1, "eff_dim": 3.0, "eff_dim_inf": 5.0, "K": 1.0, "n": 1000, "m": 600, "delta": 0.05}


@pytest.mark.parametrize(
    "name,bad",
    [
        ("lam", 0.0),
        ("lam", -1.0),
        ("lam", float("nan")),
        ("lam", "x"),
        ("eff_dim", -1.0),
        ("eff_dim", float("inf")),
        ("eff_dim_inf", -0.5),
        ("K", 0.0),
        ("K", float("inf")),
        ("n", 0),
        ("n", 2.5),
        ("n", True),
        ("m", 0),
        ("m", 1001),
        ("delta", 0.0),
        ("delta", 1.0),
        ("delta", 1.5),
        ("op_norm", -1.0),
        ("corrected", "yes"),
    ],
)
def test_lemma_c1_rejects_bad_arguments(name, bad):
    kwargs = dict(GOOD_C1)
    kwargs[name] = bad
    with pytest.raises(ValueError, match=name):
        B.lemma_c1_bound(**kwargs)


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: B.theorem_4_1_bound(0, 1, 0.05, 1.0), "n"),
        (lambda: B.theorem_4_1_bound(10, 11, 0.05, 1.0), "m"),
        (lambda: B.theorem_4_1_bound(10, 5, 2.0, 1.0), "delta"),
        (lambda: B.theorem_4_1_bound(10, 5, 0.05, -1.0), "eff_dim"),
        (lambda: B.theorem_4_1_bound(10, 5, 0.05, lambda lam: float("nan")), "eff_dim"),
        (lambda: B.theorem_4_1_bound(10, 5, 0.05, 1.0, K=-1.0), "K"),
        (lambda: B.theorem_4_1_bound(10, 5, 0.05, 1.0, op_norm=0.0), "op_norm"),
        (lambda: B.theorem_4_1_constants(0.0, 0.05), "K"),
        (lambda: B.theorem_4_1_constants(1.0, 0.0), "delta"),
        (lambda: B.theorem_4_1_lambda(0, 0.05), "m"),
        (lambda: B.theorem_4_1_condition(10, -1.0, 0.05), "op_norm"),
        (lambda: B.theorem_4_1_min_landmarks(0.0, 0.05), "op_norm"),
        (lambda: B.theorem_4_1_min_landmarks(0.5, 1.0), "delta"),
        (lambda: B.theorem_4_1_min_landmarks(0.5, 0.05, K=float("nan")), "K"),
    ],
)
def test_bad_arguments_raise_value_error_naming_them(call, name):
    with pytest.raises(ValueError, match=name):
        call()
