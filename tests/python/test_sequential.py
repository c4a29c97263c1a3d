"""nk.SequentialDriftTest: the wealth against a dense numpy re-implementation of the
betting test, the reference's sums against dense sums, the margin against the closed-form
distance ||mu_P - mu_R|| of Gaussian samples, the level over many null streams (and the
naive bet, which fails it: the check can fail), power, split updates, bad input refused
without changing the wealth, names and scaling, and the pool's rules."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nystrom_kme as nk
from nystrom_kme.sequential import _betting, _reference
from references import dense_kernel as _dense_kernel

ONS_STEP = 2 / (2 - math.log(3))


def dense_kernel(name: str, X: np.ndarray, Y: np.ndarray, sigma: float) -> np.ndarray:
    """The dense references' kernels, and the l1 Laplacian exp(-||x - y||_1 / sigma)."""
    if name == "laplacian_l1":
        return np.exp(-np.abs(X[:, None, :] - Y[None, :, :]).sum(axis=-1) / sigma)
    return _dense_kernel(name, X, Y, sigma)


def dense_run(test: nk.SequentialDriftTest, X: np.ndarray) -> np.ndarray:
    """The test's log wealth on X, from its landmarks, kernels, sums, pool and margins
    alone, every other step written out in numpy (dense kernels from their definitions;
    the witness (K + ridge I)^-1 u scaled to RKHS norm 1, as the module documents)."""
    ref, model = test.reference_, test._model
    L, K = test.landmarks_, len(test.kernels_)
    m = L.shape[0]
    grams = [dense_kernel(k.name, L, L, k.bandwidth) for k in test.kernels_]
    projs = [np.linalg.inv(G + _betting.RIDGE * np.eye(m)) for G in grams]
    sx = np.zeros((K, m))
    sy, ny = ref.sums.copy(), ref.n_rest
    c, off = np.zeros((K, m)), np.zeros(K)
    lam, A = np.zeros((K, 2)), np.ones((K, 2))
    S, Q = np.zeros((K, 2)), np.zeros((K, 2))
    lw = np.zeros((K, 4))
    w = model.weights
    out, nxt = [], 1
    pool = ref.pool
    for t, x in enumerate(X):
        for j, k in enumerate(test.kernels_):
            kx = dense_kernel(k.name, L, x[None], k.bandwidth)[:, 0]
            fx = c[j] @ kx
            payoffs = [(fx - off[j] - test.margin_[j]) / (1 + abs(off[j]) + test.margin_[j])]
            if t < pool.shape[0]:
                payoffs.append(0.5 * (fx - c[j] @ dense_kernel(k.name, L, pool[t][None], k.bandwidth)[:, 0]))
            for b, g in enumerate(payoffs):
                grapa = min(max(S[j, b] / (1 + Q[j, b]), 0), 0.5)
                lw[j, 2 * b] += math.log1p(lam[j, b] * g)
                lw[j, 2 * b + 1] += math.log1p(grapa * g)
                z = g / (1 + lam[j, b] * g)
                A[j, b] += z * z
                lam[j, b] = min(max(lam[j, b] + ONS_STEP * z / A[j, b], 0), 0.5)
                S[j, b] += g
                Q[j, b] += g * g
            sx[j] += kx
        nx = t + 1
        out.append(math.log(np.sum(w * np.exp(lw))))
        if t + 1 >= nxt:
            for j in range(K):
                cj = projs[j] @ (sx[j] / nx - sy[j] / ny)
                cj /= math.sqrt(cj @ grams[j] @ cj)
                c[j], off[j] = cj, cj @ sy[j] / ny
            nxt = t + 1 + min(max((t + 1) // 16, 1), test.refresh)
    return np.array(out)


def test_wealth_matches_a_dense_reimplementation():
    rng = np.random.default_rng(0)
    test = nk.SequentialDriftTest(rng.normal(size=(3000, 2)), n_landmarks=40, n_holdout=150, refresh=5, random_state=0)
    assert len(test.kernels_) >= 2 and test.reference_.pool.shape == (150, 2)
    X = rng.normal(size=(300, 2)) + [0.3, 0.0]
    got = test.update(X).log_wealth
    want = dense_run(test, X)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-8)
    assert abs(want[-1]) > 0.5  # the stream moved the wealth: the comparison is not vacuous


def test_reference_sums_over_the_rows_outside_the_bandwidth_and_paired_rows():
    rng = np.random.default_rng(1)
    R = rng.normal(size=(2000, 3))
    ref = _reference.read_reference(nk.sources.as_source(R), nk.Gaussian(), False, 30, 100, np.random.default_rng(7), 1)
    s, h = _reference.split_sizes(2000, 100)
    drawn = np.random.default_rng(7).choice(2000, size=s + h + 30, replace=False)  # the same draw
    rest = np.setdiff1d(np.arange(2000), drawn[: s + h])
    np.testing.assert_array_equal(ref.pool, R[drawn[s : s + h]])
    np.testing.assert_array_equal(ref.landmarks, R[drawn[s + h :]])
    assert ref.n_rest == rest.size == 2000 - s - h
    k = ref.kernels[0]
    assert k.bandwidth == nk.median_distance(R[drawn[:s]])  # the bandwidth from S alone
    dense = dense_kernel("gaussian", ref.landmarks, R[rest], k.bandwidth).sum(axis=1)
    np.testing.assert_allclose(ref.sums[0], dense, rtol=1e-12)


def gaussian_mmd(R: np.ndarray, sigma: float) -> float:
    """||mu_P - mu_R|| for P = N(0, I_d) and the Gaussian kernel of bandwidth sigma, in
    closed form: E k(x, x') = (s2 / (s2 + 2))^(d/2), E_x k(x, r) = (s2 / (s2 + 1))^(d/2)
    exp(-|r|^2 / (2 (s2 + 1))), with s2 = sigma^2."""
    n, d = R.shape
    s2 = sigma * sigma
    pp = (s2 / (s2 + 2)) ** (d / 2)
    pr = (s2 / (s2 + 1)) ** (d / 2) * np.exp(-(R * R).sum(axis=1) / (2 * (s2 + 1)))
    rr = dense_kernel("gaussian", R, R, sigma).mean()
    return math.sqrt(max(pp - 2 * pr.mean() + rr, 0.0))


def test_margin_bounds_the_reference_error():
    """eps(n, K=1, delta) bounds ||mu_P - mu_R|| in at least 1 - delta of the draws
    (closed-form distances); the bound is conservative, so at delta = 0.2 over 200 draws
    no draw may exceed it more than a binomial(200, 0.2) would allow by far."""
    rng = np.random.default_rng(2)
    eps = _betting.reference_margin(400, 1, 0.2)
    distances = np.array([gaussian_mmd(rng.normal(size=(400, 2)), 1.0) for _ in range(200)])
    assert (distances > eps).mean() <= 0.2
    assert distances.mean() < eps < 10 * distances.mean()  # a real bound, not a vacuous one
    # and it is the formula of the module's docstring
    assert eps == pytest.approx((1 + math.sqrt(2 * math.log(1 / 0.2))) / 20)


def null_false_alarms(reps: int, naive: bool) -> int:
    """False alarms over ``reps`` null streams of 3000 rows against references of 1000
    rows; ``naive``: margin bets without margin (eps = 0), the bet the docstring refuses."""
    alarms = 0
    for rep in range(reps):
        rng = np.random.default_rng(1000 + rep)
        test = nk.SequentialDriftTest(rng.normal(size=(1000, 2)), kernel="gaussian", random_state=rep, n_threads=1)
        if naive:
            model = test._model
            test._model = _betting.Model.build(
                model.kernels,
                model.landmarks,
                np.zeros(1),
                _betting.mixture_weights(1, "mixture", True, False),
                margin_bets=True,
                pairs_join=False,
                refresh=model.refresh,
                n_threads=1,
            )
            test.reset()
        alarms += test.update(rng.normal(size=(3000, 2))).reject
    return alarms


def test_level_over_null_streams_and_the_naive_bet_fails_it():
    """P(false alarm ever) <= 0.05: over 200 null streams at most 17 alarms (the 0.999
    quantile of binomial(200, 0.05) is 20; the test's own rate is far below alpha). The
    naive bet on the same streams collects the reference's error: far more."""
    assert null_false_alarms(200, naive=False) <= 17
    assert null_false_alarms(60, naive=True) >= 12


def test_detects_a_shift_quickly():
    delays = []
    for rep in range(10):
        rng = np.random.default_rng(50 + rep)
        test = nk.SequentialDriftTest(rng.normal(size=(20_000, 3)), random_state=rep)
        res = test.update(rng.normal(size=(3000, 3)) + [0.5, 0, 0])
        delays.append(res.drift_time)
    assert all(d is not None for d in delays) and np.median(delays) < 500


def test_split_updates_give_the_same_wealth():
    rng = np.random.default_rng(3)
    ref, X = rng.normal(size=(4000, 2)), rng.normal(size=(400, 2)) * 1.2
    a = nk.SequentialDriftTest(ref, n_landmarks=50, random_state=0)
    b = nk.SequentialDriftTest(ref, n_landmarks=50, random_state=0)
    whole = a.update(X).log_wealth
    parts = np.concatenate(
        [b.update(X[0]).log_wealth] + [b.update(X[i : i + 57]).log_wealth for i in range(1, 400, 57)]
    )
    np.testing.assert_allclose(parts, whole, rtol=0, atol=1e-9)
    assert a.t_ == b.t_ == 400 and a.n_paired_left_ == b.n_paired_left_


def test_bad_input_is_refused_by_name_and_changes_nothing():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(4)
    frame = pd.DataFrame(rng.normal(size=(3000, 3)), columns=["a", "b", "c"])
    test = nk.SequentialDriftTest(frame, kernel="gaussian", random_state=0)
    assert list(test.feature_names_in_) == ["a", "b", "c"]
    test.update(frame.iloc[:50])
    before = (test.t_, test.log_wealth_, test.witness_.copy(), test.n_paired_left_)
    bad = frame.iloc[:5].to_numpy().copy()
    bad[2, 1] = np.nan
    with pytest.raises(ValueError, match="x contains NaN"):
        test.update(bad)
    with pytest.raises(ValueError, match="x has 2 features but the reference has 3"):
        test.update(frame.iloc[:5].to_numpy()[:, :2])
    with pytest.raises(ValueError, match="feature names"):
        test.update(frame.iloc[:5].rename(columns={"b": "B"}))
    with pytest.raises(ValueError, match="feature names"):
        test.update(frame.iloc[:5][["b", "a", "c"]])
    after = (test.t_, test.log_wealth_, test.witness_, test.n_paired_left_)
    assert before[0] == after[0] and before[1] == after[1] and before[3] == after[3]
    np.testing.assert_array_equal(before[2], after[2])
    assert test.update(frame.iloc[5:8]).time.tolist() == [51, 52, 53]


def test_standardize_scales_rows_as_the_reference():
    rng = np.random.default_rng(5)
    ref = rng.normal(size=(5000, 2)) * [1.0, 1000.0]
    test = nk.SequentialDriftTest(ref, standardize=True, kernel="gaussian", random_state=0)
    np.testing.assert_allclose(test.scaling_.scale, ref.std(axis=0, ddof=1), rtol=1e-12)
    assert np.abs(test.landmarks_).max() < 10  # landmarks in standard units
    res = test.update(rng.normal(size=(2000, 2)) * [1.0, 1000.0] + [0.0, 400.0])  # 0.4 sd on the wide column
    assert res.is_drift


def test_the_pool_rules():
    rng = np.random.default_rng(6)
    ref = rng.normal(size=(2000, 2))
    exact = nk.SequentialDriftTest(ref, kernel="gaussian", n_holdout=100, delta=0, random_state=0)
    assert exact.threshold_ == pytest.approx(1 / 0.05) and np.isinf(exact.margin_).all()
    exact.update(rng.normal(size=(80, 2)))
    t, wealth = exact.t_, exact.log_wealth_
    with pytest.raises(ValueError, match="paired pool is used up.*20 left"):
        exact.update(rng.normal(size=(21, 2)))
    assert (exact.t_, exact.log_wealth_) == (t, wealth)
    exact.reset()  # a new test: the pool goes on, never reusing a row
    assert exact.t_ == 0 and exact.n_paired_left_ == 20
    margin_only = nk.SequentialDriftTest(ref, kernel="gaussian", n_holdout=0, random_state=0)
    assert margin_only.threshold_ == pytest.approx(1 / 0.045) and margin_only.n_paired_left_ == 0
    assert margin_only.margin_[0] == pytest.approx(_betting.reference_margin(2000 - 200, 1, 0.005))
    with pytest.raises(ValueError, match="leave no bet"):
        nk.SequentialDriftTest(ref, n_holdout=0, delta=0)
    with pytest.raises(ValueError, match="delta must lie in"):
        nk.SequentialDriftTest(ref, delta=0.05)
    with pytest.raises(ValueError, match="too few"):
        nk.SequentialDriftTest(ref, n_holdout=1900)
    with pytest.raises(ValueError, match="radial"):
        nk.SequentialDriftTest(ref, kernel="linear")
    with pytest.raises(ValueError, match="betting must be one of"):
        nk.SequentialDriftTest(ref, betting="kelly")


def test_witness_has_rkhs_norm_one_and_the_result_names_the_kernel():
    rng = np.random.default_rng(8)
    test = nk.SequentialDriftTest(rng.normal(size=(4000, 2)), n_landmarks=60, random_state=0)
    res = test.update(rng.normal(size=(600, 2)) * [1.0, 1.6])
    L = test.landmarks_
    for k, c in zip(test.kernels_, test.witness_):  # at most 1 (its rounding allowance: just below)
        assert 1 - 1e-6 < c @ dense_kernel(k.name, L, L, k.bandwidth) @ c <= 1 + 1e-12
    assert res.reject and res.kernel in test.kernels_ and res.kernel == test.rejecting_kernel_
    K = len(test.kernels_)
    assert res.kernel_log_wealth.shape == (K,) and np.argmax(res.kernel_log_wealth) == test.kernels_.index(res.kernel)
    # the test's wealth is the mean of the kernels' wealths
    assert math.log(np.mean(np.exp(res.kernel_log_wealth))) == pytest.approx(res.log_wealth[-1], rel=1e-12)


def test_save_and_load_continue_the_same_test(tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(9)
    frame = pd.DataFrame(rng.normal(size=(3000, 3)) * [1, 10, 100], columns=["a", "b", "c"])
    test = nk.SequentialDriftTest(frame, standardize="robust", n_landmarks=60, random_state=0)
    test.update(frame.iloc[:700].to_numpy() * [1, 10, 130])
    path = tmp_path / "test.npz"
    test.save(path)
    loaded = nk.load(path)
    assert list(loaded.feature_names_in_) == ["a", "b", "c"] and loaded.t_ == 700
    assert (loaded.n_paired_left_, loaded.rejection_time_, loaded.log_wealth_) == (
        test.n_paired_left_,
        test.rejection_time_,
        test.log_wealth_,
    )
    X = rng.normal(size=(400, 3)) * [1, 10, 130]
    np.testing.assert_array_equal(loaded.update(X).log_wealth, test.update(X).log_wealth)
    loaded.save(tmp_path / "again.npz")
    test.save(tmp_path / "same.npz")
    assert (tmp_path / "again.npz").read_bytes() == (tmp_path / "same.npz").read_bytes()
    assert nk.persistence.read_header(path)["params"]["kernel"] == {"name": "auto"}


def test_a_saved_test_whose_fields_disagree_is_refused(tmp_path):
    import json

    rng = np.random.default_rng(10)
    test = nk.SequentialDriftTest(rng.normal(size=(2000, 2)), kernel="gaussian", n_landmarks=20, random_state=0)
    test.update(rng.normal(size=(50, 2)))
    path = tmp_path / "test.npz"
    test.save(path)

    def rewrite(change):
        with np.load(path, allow_pickle=False) as npz:
            members = {k: npz[k] for k in npz.files}
        header = json.loads(members.pop("header").tobytes())
        change(header)
        bad = tmp_path / "bad.npz"
        np.savez(bad, header=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8), **members)
        return bad

    cases = [
        (lambda h: h["state"].update(paired=10**6), "paired must be in"),
        (lambda h: h["state"].update(t=3), "count_x and next_refresh"),
        (lambda h: h["state"].update(n_rest=5), "n_rest|sums must lie"),
        (lambda h: h["state"].update(rejection_time=7), "rejection_time=7"),
        (lambda h: h["params"].update(delta=0.5), "delta must lie"),
        (lambda h: h["params"].update(betting="all-in"), "betting must be one of"),
    ]
    for change, message in cases:
        with pytest.raises((ValueError, nk.FileFormatError), match=message):
            nk.load(rewrite(change))


def test_the_saved_file_loads_and_goes_on_as_written():
    """tests/data/saved/sequential_drift.npz (tests/data/make_sequential_file.py): its
    state as written, and the same wealth on the same 200 more rows (the writer's bits at
    its SIMD level; to round-off, amplified by the witness's ridge inverse, at another)."""
    import json
    import pathlib

    saved = pathlib.Path(__file__).parents[1] / "data" / "saved"
    record = json.loads((saved / "expected.json").read_text())["sequential_drift.npz"]
    test = nk.load(saved / "sequential_drift.npz")
    assert repr(test) == record["repr"] and [repr(k) for k in test.kernels_] == record["kernels"]
    assert (test.t_, test.log_wealth_, test.rejection_time_) == (
        record["t"],
        record["log_wealth"],
        record["rejection_time"],
    )
    assert test.n_paired_left_ == record["paired_left"] and list(test.feature_names_in_) == ["age", "income", "score"]
    more = np.random.default_rng(47).normal(size=(200, 3)) * [1.0, 10.0, 100.0] + [0.0, 0.0, 100.0]
    same = nk.simd_level() == record["simd_level"]
    np.testing.assert_allclose(
        test.update(more).log_wealth, record["after_200_rows"], rtol=1e-13 if same else 1e-7, atol=0
    )
