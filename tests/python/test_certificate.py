"""The certificate's bounds (nystrom_kme.landmark_search._certificate): their formulas against numpy, and
the prequential estimate of e(m)^2 = ||mu_hat_n - P_m mu_hat_n||^2 against the exact
value from dense numpy over repetitions (unbiased, with and without replacement; the
upper bound covers)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from nystrom_kme import _core
from nystrom_kme._blas import one_blas_thread
from nystrom_kme.landmark_search._certificate import WINDOW_MIN, prequential_bound, probe_bound, z_value
from nystrom_kme.landmark_search._nested_projection import PIVOT_TOL, NestedProjection


def _skewness(v):
    d = v - v.mean()
    return float(np.mean(d**3)) / float(v.std(ddof=1)) ** 3


def test_bounds_follow_their_formulas():
    rng = np.random.default_rng(0)
    u = 0.5 + 1e-3 * rng.standard_exponential(300)  # right-skewed, as residuals are
    t_m, z = 0.499, 2.0
    b = prequential_bound(u, t_m, z)
    window = u[-100:]  # the last max(64, m / 3) values
    assert b.n_values == 100
    assert b.estimate == pytest.approx(window.mean() - t_m, rel=1e-12)
    assert b.std_error == pytest.approx(window.std(ddof=1) / 10, rel=1e-12)
    gamma = _skewness(window)
    assert gamma > 1
    z_skew = z + gamma * (2 * z * z + 1) / (6 * 10)  # Cornish-Fisher, k = 100
    assert b.bound == pytest.approx(b.estimate + z_skew * b.std_error, rel=1e-9)
    assert b.norm2 == pytest.approx(window.mean(), rel=1e-12)
    # a left-skewed sample gets no correction
    flipped = prequential_bound(1.0 - u, 0.499, z)
    assert flipped.bound == pytest.approx(max(flipped.estimate, 0.0) + z * flipped.std_error, rel=1e-12)
    # a negative estimate certifies nothing by itself
    low = prequential_bound(u, 0.6, z)
    assert low.estimate < 0 and low.bound > 0
    # too few values: no bound (the first landmark's value is left out)
    assert prequential_bound(u[:WINDOW_MIN], t_m, z).bound == math.inf
    assert prequential_bound(u[: WINDOW_MIN + 1], t_m, z).n_values == WINDOW_MIN
    g = 1e-4 * rng.standard_normal(256) + 2e-4
    p = probe_bound(g, 0.3, 1.5)
    assert p.estimate == pytest.approx(g.mean(), rel=1e-9) and p.n_values == 256
    assert p.std_error == pytest.approx(g.std(ddof=1) / 16, rel=1e-9)
    assert z_value(0.99) == pytest.approx(2.3263478740, rel=1e-9)


@pytest.fixture(scope="module")
def blob():
    """2000 points of a 3-d Gaussian and a local kernel (bandwidth 1 against scales 2, 1,
    0.5): the residual of mu_hat is carried by few rows, the hard case for a sample."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(2000, 3)) * np.array([2.0, 1.0, 0.5])
    k = _core.Kernel("gaussian", 1.0)
    K = _core.kernel_matrix(X, X, k)
    return X, k, K.mean(axis=1)


@pytest.mark.parametrize("replace", [True, False])
def test_prequential_estimate_is_unbiased_and_its_bound_covers(blob, replace):
    """300 landmark streams, m = 160: the mean of the estimates of e(m)^2 is within 4
    standard errors of the mean exact value (dense numpy), and the bound at one-sided 99%
    covers the exact value in >= 96% of streams (measured 98%: the residuals' heavy tail
    costs a little; Binomial(300, 0.02): P(> 12) < 1%)."""
    X, k, mu = blob
    n, m = X.shape[0], 160
    norm2 = mu.mean()
    errors, misses = [], 0
    with one_blas_thread():  # as the search: small LAPACK calls thrash on a busy machine
        for seed in range(300):
            r = np.random.default_rng(1000 + seed)
            idx = r.integers(0, n, size=m) if replace else r.permutation(n)[:m]
            mass = np.ones(m) if replace else 1.0 - np.arange(m) / n
            path = NestedProjection(k, 1)
            path.extend(X[idx], mu[idx])
            u = mass * path.residuals + np.concatenate([[0.0], path.t[:-1]])
            b = prequential_bound(u, float(path.t[-1]), z_value(0.99))
            exact = norm2 - path.t[-1]
            errors.append(b.estimate - exact)
            misses += exact > b.bound
    errors = np.array(errors)
    assert abs(errors.mean()) <= 4 * errors.std(ddof=1) / math.sqrt(errors.size), errors.mean()
    assert misses <= 12, misses


def test_a_draw_without_replacement_sees_the_residual_scaled_by_the_mass_left(blob):
    """The identity behind the mass factor, exactly: g vanishes on the landmarks, so the
    mean of g_S over the rows not in S (where the next draw without replacement falls)
    is e(S)^2 / (1 - |S| / n) (dense numpy, no randomness)."""
    X, k, mu = blob
    n = X.shape[0]
    S = np.random.default_rng(7).permutation(n)[:300]
    with one_blas_thread():
        path = NestedProjection(k, 1)
        path.extend(X[S], mu[S])
    beta = path.weights(S.size)
    g = mu - _core.kernel_matrix(X, X[S], k) @ beta  # the residual at every row
    e2 = mu.mean() - path.t[-1]
    rest = np.setdiff1d(np.arange(n), S)
    assert g.mean() == pytest.approx(e2, rel=1e-6)
    # zero at the pivots; a landmark left out lies within sqrt(PIVOT_TOL) of their span in
    # the RKHS, so its residual is at most sqrt(PIVOT_TOL) e (Cauchy-Schwarz)
    np.testing.assert_allclose(g[S][path.is_pivot], 0.0, atol=1e-9)
    assert np.all(np.abs(g[S]) <= math.sqrt(PIVOT_TOL) * math.sqrt(e2) + 1e-9)
    on_landmarks = g[S].sum() / n  # the skipped landmarks' residuals, tiny
    assert abs(on_landmarks) <= S.size / n * math.sqrt(PIVOT_TOL * e2)
    assert g[rest].mean() == pytest.approx((e2 - on_landmarks) / (1 - S.size / n), rel=1e-6)


# --------------------------------------------------------------------------- #
# the distribution-free bounds (issue 34): formulas and coverage over repetitions
# --------------------------------------------------------------------------- #
def test_u_statistic_and_empirical_bernstein_follow_their_formulas():
    from nystrom_kme.landmark_search._certificate import mean_upper, u_statistic_lower

    # Hoeffding (1963, Sec. 5): t = R sqrt(ln(1/delta) / (2 floor(n/2)))
    assert u_statistic_lower(0.5, 1001, 2.0, 0.05) == pytest.approx(0.5 - 2.0 * math.sqrt(math.log(20) / 1000))
    v = np.random.default_rng(1).uniform(0.0, 0.3, 400)
    L = math.log(2 / 0.01)
    expected = v.mean() + math.sqrt(2 * v.var(ddof=1) * L / 400) + 7 * 0.3 * L / (3 * 399)
    assert mean_upper(v, 0.3, 0.01) == pytest.approx(expected, rel=1e-12)
    assert mean_upper(v[:1], 0.3, 0.01) == math.inf


def test_mean_upper_covers_a_rare_mass():
    """Values in [0, 1] with mass 0.003 at 1: the empirical Bernstein bound at 0.95 covers
    the mean in >= 95% of 600 samples of 500 values (the binomial band: >= 555 expected
    under 0.95; measured: every one, the bound being conservative)."""
    from nystrom_kme.landmark_search._certificate import mean_upper

    rng = np.random.default_rng(2)
    covered = sum(mean_upper((rng.random(500) < 0.003).astype(float), 1.0, 0.05) >= 0.003 for _ in range(600))
    assert covered >= 555


@pytest.mark.parametrize("q", [0.002, 0.02])
def test_betting_bound_covers_the_residual_of_an_unseen_mass(q):
    """The adversary of issue 34: a mass q of rows no landmark reaches, where the residual
    is of order e (here y = e w.p. q, else 0: mean e^2 with e = q, the range the bound
    allows). At confidence 0.9 the certified e* >= e in >= 90% of 300 repetitions (>= 260
    is 3 sd below 0.9); and it is not vacuous: with 4 ln(10) / e rows it is below 3 e."""
    from nystrom_kme.landmark_search._certificate import certified_distance

    e = q
    rows = math.ceil(4 * math.log(10) / e)
    rng = np.random.default_rng(3)
    bounds = [
        certified_distance(np.where(rng.random(rows) < q, e, 0.0), 1.0, 0.0, 0.0, 0.25 * e, 0.1, rows)
        for _ in range(300)
    ]
    assert sum(b >= e for b in bounds) >= 260
    assert float(np.median(bounds)) < 3 * e


def test_betting_bound_tightens_with_rows_and_respects_the_grid():
    """Values exactly e^2 (no spread): the bound approaches e from above as rows are added,
    never below e, and is a point of the grid sqrt(kappa) / 1.02^k."""
    from nystrom_kme.landmark_search._certificate import GRID_RATIO, certified_distance

    e = 0.01
    previous = math.inf
    for rows in (1000, 4000, 16000):
        b = certified_distance(np.full(rows, e * e), 1.0, 0.0, 0.0, 0.1 * e, 0.01, rows)
        assert e <= b < previous
        k = math.log(1.0 / b) / math.log(GRID_RATIO)
        assert abs(k - round(k)) < 1e-9
        previous = b
    assert previous < 1.2 * e


def test_the_kernel_range_of_an_l1_kernel_reads_l1_distances():
    """value_low bounds every kernel value on the data from below: for the l1 Laplacian
    that takes the l1 diameter (sqrt(d) times the Euclidean one here), or the bound is
    above values the data have and the certificate's range is wrong."""
    import numpy as np

    import nystrom_kme as nk
    from nystrom_kme.landmark_search._kernel_range import kernel_range

    X = np.vstack([np.zeros(16), np.ones(16)])  # Euclidean distance 4, l1 distance 16
    k = nk.LaplacianL1(4.0)
    r = kernel_range(nk.sources.as_source(X), k, None, 1)
    smallest = float(k(X).min())  # exp(-4)
    assert r.value_low <= smallest and r.gap_high >= 1.0 - smallest
