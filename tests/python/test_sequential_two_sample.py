"""nk.SequentialTwoSampleTest: the level over many null A/B streams (exact: paired bets),
power, the burn-in's sums against dense ones, rows of one stream waiting for the other,
split updates, and bad input refused without changing the wealth."""

from __future__ import annotations

import numpy as np
import pytest

import nystrom_kme as nk
from references import dense_kernel


def test_level_over_null_stream_pairs():
    """P(false rejection ever) <= 0.05: at most 17 rejections over 200 pairs of null
    streams of 2000 rows (the 0.999 quantile of binomial(200, 0.05) is 20)."""
    rejections = 0
    for rep in range(200):
        rng = np.random.default_rng(rep)
        test = nk.SequentialTwoSampleTest(kernel="gaussian", random_state=rep, n_threads=1)
        rejections += test.update(x=rng.normal(size=(2000, 3)), y=rng.normal(size=(2000, 3))).reject
    assert rejections <= 17


def test_detects_a_difference():
    times = []
    for rep in range(8):
        rng = np.random.default_rng(100 + rep)
        test = nk.SequentialTwoSampleTest(random_state=rep)
        res = test.update(x=rng.normal(size=(3000, 2)), y=rng.standard_t(3, size=(3000, 2)))
        times.append(res.rejection_time)
    assert all(t is not None for t in times) and np.median(times) < 2000


def test_burn_in_fixes_the_kernels_landmarks_and_sums():
    rng = np.random.default_rng(1)
    X, Y = rng.normal(size=(100, 2)), rng.normal(size=(100, 2)) + 1.0
    test = nk.SequentialTwoSampleTest(kernel="gaussian", burn_in=40, n_landmarks=30, random_state=0)
    res = test.update(x=X[:30], y=Y[:50])
    assert res.log_wealth.size == 0 and not res.reject and res.kernel is None and test.kernels_ is None
    assert test.queued_ == (30, 50)
    res = test.update(x=X[30:60])  # 60 rows of x, 50 of y: the burn-in, then 10 pairs
    assert res.time.tolist() == list(range(41, 51)) and test.queued_ == (10, 0) and test.t_ == 50
    k = test.kernels_[0]
    assert k.bandwidth == nk.median_distance(np.concatenate([X[:40], Y[:40]]))
    L = test.landmarks_
    assert L.shape == (30, 2) and all(
        any(np.array_equal(row, z) for z in np.concatenate([X[:40], Y[:40]])) for row in L
    )
    state = test._betting  # the burn-in's sums and the 10 pairs since
    np.testing.assert_allclose(state["sums_x"][0], dense_kernel("gaussian", L, X[:50], k.bandwidth).sum(1), rtol=1e-12)
    np.testing.assert_allclose(state["sums_y"][0], dense_kernel("gaussian", L, Y[:50], k.bandwidth).sum(1), rtol=1e-12)
    assert state["count_x"] == state["count_y"] == 50


def test_split_updates_and_waiting_rows_give_the_same_wealth():
    rng = np.random.default_rng(2)
    X, Y = rng.normal(size=(600, 3)), rng.normal(size=(600, 3)) * 1.2
    a = nk.SequentialTwoSampleTest(random_state=0)
    whole = a.update(x=X, y=Y).log_wealth
    b = nk.SequentialTwoSampleTest(random_state=0)
    parts = [b.update(x=X[:300]).log_wealth, b.update(y=Y[:200]).log_wealth]
    parts += [b.update(x=X[300:301], y=Y[200:201]).log_wealth]
    parts += [b.update(x=X[301:], y=Y[201:]).log_wealth]
    np.testing.assert_allclose(np.concatenate(parts), whole, rtol=0, atol=1e-9)
    assert a.t_ == b.t_ == 600 and b.queued_ == (0, 0)


def test_bad_input_is_refused_by_name_and_changes_nothing():
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(3)
    X = pd.DataFrame(rng.normal(size=(300, 2)), columns=["u", "v"])
    test = nk.SequentialTwoSampleTest(random_state=0)
    test.update(x=X, y=X.to_numpy() + 0.1)
    before = (test.t_, test.log_wealth_, test.queued_)
    bad = X.to_numpy()[:4].copy()
    bad[1, 0] = np.inf
    with pytest.raises(ValueError, match="y contains NaN or inf"):
        test.update(x=X.iloc[:4], y=bad)
    with pytest.raises(ValueError, match="x has 3 features but the streams have 2"):
        test.update(x=np.zeros((2, 3)))
    with pytest.raises(ValueError, match="feature names"):
        test.update(y=X.iloc[:3].rename(columns={"u": "w"}))
    assert (test.t_, test.log_wealth_, test.queued_) == before
    with pytest.raises(ValueError, match="burn_in must be at least 2"):
        nk.SequentialTwoSampleTest(burn_in=1)


def test_save_and_load_before_and_after_the_burn_in(tmp_path):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(4)
    X = pd.DataFrame(rng.normal(size=(900, 2)), columns=["u", "v"])
    Y = rng.normal(size=(900, 2)) * [1.0, 1.3]
    a = nk.SequentialTwoSampleTest(standardize=True, random_state=0)
    a.update(x=X.iloc[:100], y=Y[:60])  # in the burn-in: rows waiting, nothing drawn yet
    a.save(tmp_path / "early.npz")
    b = nk.load(tmp_path / "early.npz")
    assert b.queued_ == (100, 60) and b.kernels_ is None and list(b.feature_names_in_) == ["u", "v"]
    np.testing.assert_array_equal(
        b.update(x=X.iloc[100:500], y=Y[60:400]).log_wealth, a.update(x=X.iloc[100:500], y=Y[60:400]).log_wealth
    )
    a.save(tmp_path / "late.npz")
    c = nk.load(tmp_path / "late.npz")
    assert (c.t_, c.queued_, c.log_wealth_) == (a.t_, a.queued_, a.log_wealth_) and c.kernels_ == a.kernels_
    np.testing.assert_array_equal(
        c.update(x=X.iloc[500:], y=Y[400:]).log_wealth, a.update(x=X.iloc[500:], y=Y[400:]).log_wealth
    )
    c.save(tmp_path / "again.npz")
    a.save(tmp_path / "same.npz")
    assert (tmp_path / "again.npz").read_bytes() == (tmp_path / "same.npz").read_bytes()


def test_a_saved_two_sample_test_whose_fields_disagree_is_refused(tmp_path):
    import json

    rng = np.random.default_rng(5)
    test = nk.SequentialTwoSampleTest(kernel="gaussian", burn_in=20, random_state=0)
    test.update(x=rng.normal(size=(80, 2)), y=rng.normal(size=(70, 2)))
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

    for change, message in [
        (lambda h: h["state"].update(pairs=3), "counts do not agree"),
        (lambda h: h["state"].update(rejection_time=5), "rejection_time=5"),
        (lambda h: h["state"].update(seed=-1), "seed must be"),
        (lambda h: h["params"].update(burn_in=1), "burn_in must be at least 2"),
    ]:
        with pytest.raises((ValueError, nk.FileFormatError), match=message):
            nk.load(rewrite(change))
