"""nk.independence_test (issue 44) against dense numpy references: the HSIC of the full
kernel matrices for every replayed pairing, the engine's rules recomputed by hand, the
level over repetitions, and the bad inputs named."""

from __future__ import annotations

import numpy as np
import pytest

import nystrom_kme as nk
from nystrom_kme.independence import _pairings, pairings
from nystrom_kme.two_sample.rules import marginal_pvalues


def gauss(A, h):
    d2 = ((A[:, None, :] - A[None, :, :]) ** 2).sum(-1)
    return np.exp(-d2 / (2 * h * h))


def dense_hsic(X, Y, hx, hy, P):
    """tr(H K H L_P) / n^2 for every pairing P[b] (row i of X with row P[b, i] of Y)."""
    n = X.shape[0]
    H = np.eye(n) - 1.0 / n
    K = H @ gauss(X, hx) @ H
    L = gauss(Y, hy)
    out = []
    for p in P:
        Lp = L[np.ix_(p, p)]
        out.append(np.sum(K * (H @ Lp @ H)) / n**2)
    return np.array(out)


@pytest.fixture(scope="module")
def dependent():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=(70, 2))
    y = x[:, :1] ** 2 + 0.3 * rng.normal(size=(70, 1))
    return x, y


def test_pairings_are_permutations_in_bins(monkeypatch):
    """Column 0 pairs each row with itself; every other pairing is a permutation that
    moves rows only within their bin, by one cyclic shift per bin."""
    monkeypatch.setattr(_pairings, "BIN_ROWS", 16)
    P = pairings(50, 7, random_state=3)
    assert P.shape == (8, 50) and (P[0] == np.arange(50)).all()
    for p in P:
        assert sorted(p.tolist()) == list(range(50))
    bins, shifts = _pairings.bins_and_shifts(50, 7, np.random.default_rng(3))
    assert sum(b.size for b in bins) == 50 and max(b.size for b in bins) <= 16
    for rows, t in zip(bins, shifts):
        for b in range(8):
            assert set(P[b, rows]) == set(rows)  # within the bin
            assert (P[b, rows] == rows[(np.arange(rows.size) + t[b]) % rows.size]).all()


def test_exact_one_pair_is_the_dense_hsic_of_every_pairing(dependent):
    """method='exact' with one pair of fixed kernels: the statistic and every permuted
    one are tr(HKH HL_PH) / n^2 of the full kernel matrices under the pairings that
    pairings() replays."""
    x, y = dependent
    res = nk.independence_test(
        x, y, kernel=(nk.Gaussian(0.7), nk.Gaussian(0.4)), method="exact", n_permutations=19, random_state=5
    )
    P = pairings(70, 19, random_state=5)
    ref = dense_hsic(x, y, 0.7, 0.4, P)
    assert res.aggregation == "one kernel" and res.method == "exact"
    np.testing.assert_allclose(res.statistic, ref[0], rtol=1e-9)
    np.testing.assert_allclose(res.null_distribution, ref[1:], rtol=1e-8, atol=1e-15)
    assert res.pvalue == (1 + np.sum(ref[1:] >= ref[0])) / 20


def test_exact_aggregated_test_is_the_min_p_rule_on_dense_statistics(dependent):
    """2 x 2 pairs, 'mmdagg': each pair's marginal p-value and the aggregate's p-value as
    recomputed from the dense statistics of the replayed pairings."""
    x, y = dependent
    hx, hy = (0.3, 1.2), (0.2, 0.9)
    kernel = ([nk.Gaussian(h) for h in hx], [nk.Gaussian(h) for h in hy])
    res = nk.independence_test(x, y, kernel=kernel, method="exact", n_permutations=39, random_state=2)
    P = pairings(70, 39, random_state=2)
    T = np.array([dense_hsic(x, y, a, b, P) for a in hx for b in hy])
    U = T - T.mean(axis=1, keepdims=True)
    pv = marginal_pvalues(U)
    F = -pv.min(axis=0)
    np.testing.assert_allclose(res.pair_pvalues, pv[:, 0])
    np.testing.assert_allclose(res.pair_statistics, U[:, 0], rtol=1e-5, atol=1e-12)  # K_m pivots below 1e-10 dropped
    assert res.pvalue == pytest.approx((1 + np.sum(F[1:] >= F[0])) / 40)
    assert res.pairs == [(nk.Gaussian(a), nk.Gaussian(b)) for a in hx for b in hy]


def test_nystrom_features_approach_the_exact_statistic(dependent):
    """Every row a landmark, directions of all but 0.1% of the variance: each pair's
    statistic within a few percent of the exact one."""
    x, y = dependent
    kernel = (nk.Gaussian(0.5), nk.Gaussian(0.5))
    exact = nk.independence_test(x, y, kernel=kernel, method="exact", n_permutations=9, random_state=0)
    approx = nk.independence_test(x, y, kernel=kernel, method="nystrom", n_permutations=9, random_state=0)
    assert approx.n_landmarks_x == 70 and approx.n_components_x <= exact.n_components_x
    assert approx.statistic == pytest.approx(exact.statistic, rel=0.03)


def test_level_under_independence_over_repetitions():
    """300 independent problems (Gaussian X, integer Y with ties), B = 19: the rejections
    at alpha = 0.1 within the binomial band of 99.9% around 30."""
    rejected = 0
    for rep in range(300):
        rng = np.random.default_rng(1000 + rep)
        x = rng.normal(size=(60, 2))
        y = rng.poisson(2.0, size=(60, 1)).astype(float)
        rejected += nk.independence_test(x, y, n_permutations=19, effect=False, random_state=rep).pvalue <= 0.1
    assert 14 <= rejected <= 49, rejected


def test_a_dependence_is_found_and_explained():
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, size=(300, 2))
    y = x[:, :1] ** 2 + 0.1 * rng.normal(size=(300, 1))
    res = nk.independence_test(x, y, n_permutations=99, random_state=0)
    assert res.reject and len(res.pair_pvalues) == 9 and res.aggregation == "mmdagg"
    text = res.explain()
    assert text.startswith("H0 (independence) rejected") and "normalised HSIC" in text
    assert res.effect is not None and res.effect.low <= res.effect.value <= res.effect.high
    assert (res.effect.kernel_x, res.effect.kernel_y) == res.deciding_kernels


def test_linear_kernels_measure_the_squared_correlation():
    """For linear kernels on single columns the normalised HSIC is rho^2 (closed form)."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(4000, 1))
    y = 0.6 * x + 0.8 * rng.normal(size=(4000, 1))  # rho = 0.6
    e = nk.independence_test(x, y, kernel=(nk.Linear(), nk.Linear()), n_permutations=49, random_state=0).effect
    rho2 = np.corrcoef(x[:, 0], y[:, 0])[0, 1] ** 2
    assert e.value == pytest.approx(rho2, abs=0.01) and e.low < 0.36 < e.high


def test_standardize_makes_units_irrelevant(dependent):
    x, y = dependent
    a = nk.independence_test(x, y, n_permutations=49, standardize=True, random_state=1)
    b = nk.independence_test(x * 1000.0 + 5.0, y * 0.001, n_permutations=49, standardize=True, random_state=1)
    assert a.pvalue == b.pvalue
    np.testing.assert_allclose(a.pair_statistics, b.pair_statistics, rtol=1e-6, atol=1e-12)


def test_dataframes_files_and_sources(dependent, tmp_path):
    pd = pytest.importorskip("pandas")
    x, y = dependent
    ref = nk.independence_test(x, y, n_permutations=19, random_state=0)
    frame = nk.independence_test(
        pd.DataFrame(x, columns=["a", "b"]), pd.DataFrame(y, columns=["t"]), n_permutations=19, random_state=0
    )
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    files = nk.independence_test(str(tmp_path / "x.npy"), str(tmp_path / "y.npy"), n_permutations=19, random_state=0)
    chunks = nk.independence_test([x[:30], x[30:]], [y[:30], y[30:]], n_permutations=19, random_state=0)
    assert ref.pvalue == frame.pvalue == files.pvalue == chunks.pvalue
    np.testing.assert_allclose(chunks.pair_statistics, ref.pair_statistics, rtol=1e-9, atol=1e-15)


def test_save_and_load(dependent, tmp_path):
    x, y = dependent
    res = nk.independence_test(x, y, n_permutations=19, random_state=0)
    path = tmp_path / "r.json"
    res.save(path)
    back = nk.load(path)
    assert isinstance(back, nk.IndependenceTestResult)
    assert back.pvalue == res.pvalue and back.explain() == res.explain() and back.effect == res.effect
    back.save(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == path.read_bytes()
    text = path.read_text().replace(f'"pvalue": {res.pvalue!r}', '"pvalue": 0.5')
    (tmp_path / "bad.json").write_text(text)
    with pytest.raises(nk.FileFormatError, match="independence result: pvalue"):
        nk.load(tmp_path / "bad.json")


@pytest.mark.parametrize(
    ("x", "y", "kw", "message"),
    [
        (np.zeros((5, 1)) + np.arange(5)[:, None], np.arange(4.0)[:, None], {}, "same rows"),
        (np.array([[1.0, np.nan], [2.0, 0.0], [3.0, 1.0]]), np.arange(3.0)[:, None], {}, "X contains NaN"),
        (np.ones((1, 2)), np.ones((1, 1)), {}, "at least 2 rows"),
        (np.arange(6.0)[:, None], np.full((6, 2), 3.0), {}, "Y is constant"),
        (np.arange(6.0)[:, None], np.arange(6.0)[:, None], {"kernel": 3}, "kernel must be"),
        (np.arange(6.0)[:, None], np.arange(6.0)[:, None], {"method": "fast"}, "method must be"),
        (np.arange(6.0)[:, None], np.arange(6.0)[:, None], {"aggregation": "fuse"}, "aggregation must be"),
        (
            np.arange(6.0)[:, None],
            np.arange(6.0)[:, None],
            {"kernel": "gaussian", "aggregation": "mmdagg"},
            "one pair",
        ),
        (np.arange(6.0)[:, None], np.arange(6.0)[:, None], {"n_permutations": 0}, "n_permutations"),
        (np.arange(6.0)[:, None], np.arange(6.0)[:, None], {"max_components": 0}, "max_components"),
    ],
)
def test_bad_input_is_named(x, y, kw, message):
    with pytest.raises(ValueError, match=message):
        nk.independence_test(x, y, **kw)


def test_the_decision_is_the_engines(dependent, monkeypatch):
    """The test hands its permuted statistics to the two-sample engine's decide (the
    rows of a 'split' are the n pairs) and reports that decision."""
    import nystrom_kme.independence as ind
    from nystrom_kme.two_sample._decision import decide

    seen = []

    def spy(rule, stats, kernels, mean_sq=None, temperature=1.0):
        seen.append((rule, stats))
        return decide(rule, stats, kernels, mean_sq, temperature)

    monkeypatch.setattr(ind, "decide", spy)
    x, y = dependent
    res = ind.independence_test(x, y, n_permutations=19, random_state=0)
    rule, stats = seen[0]
    assert rule.name == "mmdagg" and stats.n_rows == (70, 70) and stats.T.shape == (9, 20)
    assert res.pvalue == decide(rule, stats, [ind.Pair(nk.Gaussian(1.0), nk.Gaussian(1.0))] * 9).pvalue
