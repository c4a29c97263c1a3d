"""The online drift detector against independent references: the window statistic
against the dense U-statistic and the earlier prefix-sum formula, the simulation's
pieces against brute force, the run length under H0 over repetitions, and every saved
field cross-checked on load."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

import nystrom_kme as nk
from nystrom_kme.drift import _thresholds, _window
from references import dense_kernel


@pytest.fixture(scope="module")
def ref():
    return np.random.default_rng(0).normal(size=(6000, 3))


@pytest.fixture(scope="module")
def online(ref):
    return nk.OnlineDriftDetector(ref, ert=300, window_size=25, n_landmarks=150, n_bootstraps=200_000, random_state=0)


def _dense_statistics(Y, det, name="gaussian"):
    """T after each row from the definition: sum_{i != j} k(y_i, y_j) / (W (W - 1)) -
    2 mean mu_R(y_i) + ||mu_R||^2, mu_R evaluated densely from the landmarks."""
    s, W = det.kernel_.bandwidth, det.window_size
    L, a = det.landmarks_, det.weights_
    mu = dense_kernel(name, Y, L, s) @ a
    norm2 = a @ dense_kernel(name, L, L, s) @ a
    want = np.full(Y.shape[0], np.nan)
    for t in range(W - 1, Y.shape[0]):
        win = Y[t - W + 1 : t + 1]
        K = dense_kernel(name, win, win, s)
        want[t] = (K.sum() - np.trace(K)) / (W * (W - 1)) - 2 * mu[t - W + 1 : t + 1].mean() + norm2
    return want


def _prefix_sum_statistics(K, f, W, norm2):
    """The formula update() used before the ring (2-D prefix sums of the strict upper
    triangle of the whole block's kernel matrix), as an independent reference."""
    n = K.shape[0]
    C = np.zeros((n + 1, n + 1))
    C[1:, 1:] = np.triu(K, 1).cumsum(axis=0).cumsum(axis=1)
    F = np.concatenate([[0.0], np.cumsum(f)])
    out = np.full(n, np.nan)
    e = np.arange(W - 1, n)
    st = e - W + 1
    out[e] = 2.0 * (C[e + 1, e + 1] - C[st, e + 1]) / (W * (W - 1)) - 2.0 * (F[e + 1] - F[st]) / W + norm2
    return out


# --------------------------------------------------------------------------- the window


def test_the_statistic_is_the_dense_window_mmd(online):
    """Blocks of every shape (a 1-d row, fewer rows than W, more) give the dense
    statistic to round-off, and NaN before the window is full."""
    det = online
    det.reset()
    Y = np.random.default_rng(12).normal(size=(160, 3))
    parts, pos = [], 0
    for size in (7, 1, 17, 25, 3, 60, 47):
        block = Y[pos] if size == 1 else Y[pos : pos + size]  # one row as a 1-d array
        parts.append(det.update(block).statistic)
        pos += size
    got = np.concatenate(parts)
    np.testing.assert_allclose(got, _dense_statistics(Y, det), rtol=1e-9, atol=1e-12)
    assert np.isnan(got[: det.window_size - 1]).all() and det.t_ == 160
    det.reset()


@pytest.mark.parametrize("W", [2, 3, 10, 70])
@pytest.mark.parametrize("kernel", [nk.Gaussian(1.3), nk.Laplacian(0.8)])
def test_the_ring_gives_the_prefix_sum_formula(W, kernel):
    """_window.advance over random blocks against the earlier formula on the whole
    stream's kernel matrix (dense numpy), and the ring's forward sums against their
    definition."""
    rng = np.random.default_rng(W)
    Y, f, norm2 = rng.normal(size=(300, 4)), rng.normal(size=300), 0.37
    ring, parts, pos = _window.Ring.empty(4), [], 0
    while pos < 300:
        size = min(300 - pos, int(rng.integers(1, 2 * W + 300)))  # beyond one sub-block (128 rows)
        stats, ring = _window.advance(ring, Y[pos : pos + size], f[pos : pos + size], W, norm2, kernel.to_core())
        parts.append(stats)
        pos += size
    K = dense_kernel(kernel.name, Y, Y, kernel.bandwidth)
    np.testing.assert_allclose(np.concatenate(parts), _prefix_sum_statistics(K, f, W, norm2), rtol=1e-10, atol=1e-12)
    tail = K[300 - (W - 1) :, 300 - (W - 1) :]
    np.testing.assert_allclose(ring.g, np.triu(tail, 1).sum(axis=1), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(ring.rows, Y[300 - (W - 1) :])


def test_a_long_stream_keeps_the_statistic_exact():
    """20 000 rows in blocks of 1 to 500: the last windows' statistics still match the
    dense definition (no running difference outlives a block)."""
    rng = np.random.default_rng(3)
    W, kernel = 40, nk.Gaussian(1.0)
    Y, f = rng.normal(size=(20_000, 2)), rng.normal(size=20_000)
    ring, pos, last = _window.Ring.empty(2), 0, None
    while pos < Y.shape[0]:
        size = min(Y.shape[0] - pos, int(rng.integers(1, 500)))
        last, ring = _window.advance(ring, Y[pos : pos + size], f[pos : pos + size], W, 0.2, kernel.to_core())
        pos += size
    tail = slice(pos - last.size - W + 1, pos)
    K = dense_kernel("gaussian", Y[tail], Y[tail], 1.0)
    np.testing.assert_allclose(last, _prefix_sum_statistics(K, f[tail], W, 0.2)[W - 1 :], rtol=1e-10, atol=1e-12)


def test_preprocess_gets_a_2d_block(ref):
    """A scaler that refuses 1-d input (as scikit-learn's do) works row by row."""

    def scale(x):
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2:
            raise ValueError("Expected 2D array")
        return x / 2.0

    det = nk.OnlineDriftDetector(
        ref * 2.0, ert=100, window_size=5, preprocess=scale, n_landmarks=50, n_bootstraps=50_000, random_state=0
    )
    row = np.ones(3)
    assert det.update(row).time.tolist() == [1]
    assert det.update(row[None, :]).time.tolist() == [2]


# --------------------------------------------------------------------------- the simulation


def test_alarms_are_the_greedy_chain():
    """The alarms counted per cluster against a plain loop over the exceedances."""
    rng = np.random.default_rng(5)
    for W in (1, 3, 10):
        for _ in range(50):
            exceed = np.flatnonzero(rng.random(int(rng.integers(1, 400))) < rng.choice([0.05, 0.3, 0.9]))
            count, allowed = 0, -1
            for e in exceed:  # the detector: an alarm, then W rows to fill the window again
                if e >= allowed:
                    count, allowed = count + 1, e + W
            assert _thresholds.alarms(exceed, W) == count


def test_the_simulated_windows_are_the_statistic_of_their_rows():
    """simulate() against the statistic of the drawn rows computed densely (the rows
    are the Generator's draws: W - 1, then one per window)."""
    rng = np.random.default_rng(7)
    H = rng.normal(size=(40, 2))
    K = dense_kernel("gaussian", H, H, 1.0)
    p = _thresholds.pool(K, rng.normal(size=40) * 0.01 + K.mean(axis=1), 1000)
    W, n = 6, 500
    got = _thresholds.simulate(p, W, n, np.random.default_rng(9))
    draws = np.random.default_rng(9)
    idx = np.concatenate([draws.integers(0, 40, size=W - 1), draws.integers(0, 40, size=n - W + 1)])
    Kp = p.kernel_values.astype(np.float64)
    want = []
    for s in range(n - W + 1):
        w = idx[s : s + W]
        pairs = Kp[np.ix_(w, w)]
        want.append((pairs.sum() - np.trace(pairs)) / (W * (W - 1)) - 2 * p.f[w].mean() + p.offset)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_the_pool_has_the_expected_mean_and_linear_variance():
    """Under iid draws from the pool the statistic's mean is tr(C) / |R| and its linear
    part's variance (4 / W) sum(lambda^2) / |R| (dense numpy: the centred kernel over
    distinct pairs); a pair of one row with itself has the expected value of a pair."""
    rng = np.random.default_rng(8)
    H = rng.normal(size=(300, 3))
    K = dense_kernel("gaussian", H, H, 1.5)
    f_rest = K.mean(axis=1) + rng.normal(size=300) * 0.003
    n_rest = 5000
    p = _thresholds.pool(K, f_rest, n_rest)
    h = 300
    off = ~np.eye(h, dtype=bool)
    f_loo = (K * off).sum(axis=1) / (h - 1)
    pair = K[off].mean()
    # the values drawn: K off the diagonal, a pair's expected value on it (stored in
    # float16 for kernels in [0, 1]: within its half-unit 2^-11 relative)
    want = K.copy()
    np.fill_diagonal(want, 2 * f_loo - pair)
    assert p.kernel_values.dtype == np.float16
    np.testing.assert_allclose(p.kernel_values, want, rtol=2.0**-11, atol=0)
    # E T under iid draws: the mean of all ordered pairs' values - 2 mean f + offset
    mean = want.mean() - 2 * p.f.mean() + p.offset
    trace = np.diag(K).mean() - pair
    np.testing.assert_allclose(mean, trace / n_rest, rtol=1e-9)
    psi = K - f_loo[:, None] - f_loo[None, :] + pair
    psi2 = (psi[off] ** 2).mean()
    np.testing.assert_allclose(np.var(f_loo - p.f), psi2 / n_rest, rtol=1e-9)
    linear = _thresholds.pool(dense_kernel("linear", H, H, 1.0), f_rest, n_rest)
    assert linear.kernel_values.dtype == np.float32  # unbounded values: float32


def test_the_threshold_inverts_a_known_curve():
    """A run-length curve exactly log ARL = a + b c + q c^2 gives back the level of
    ert (direct); one exactly a + b u + g log u (u standardised), which both tail fits
    contain, the extrapolated one."""
    rows, W = 4_000_000, 10
    levels = np.linspace(0.1, 0.3, 24)
    arl = np.exp(4.0 + 20.0 * levels + 15.0 * levels**2)
    counts = np.round(rows / arl).astype(np.int64)
    for ert in (200.0, 500.0):
        c, extrapolated = _thresholds.threshold(levels, counts, rows, W, ert, 0.0, 0.05)
        want = (-20.0 + np.sqrt(400.0 - 60.0 * (4.0 - np.log(ert)))) / 30.0
        assert not extrapolated and abs(c - want) < 1e-3 * want
    center, scale = 0.01, 0.02
    u = (levels - center) / scale
    counts = np.round(rows / np.exp(1.0 + 0.6 * u + 1.5 * np.log(u))).astype(np.int64)
    top = rows / _thresholds.DIRECT_ALARMS
    c, extrapolated = _thresholds.threshold(levels, counts, rows, W, 50 * top, center, scale)
    z = (c - center) / scale
    # the alarms are integers (about 400 at the top: 0.1%), which 50 times beyond moves by 1%
    assert extrapolated and abs(1.0 + 0.6 * z + 1.5 * np.log(z) - np.log(50 * top)) < 1e-2


def test_an_ert_beyond_the_reach_is_refused_before_any_simulation(ref):
    with pytest.raises(ValueError, match=r"ert=1e\+09 is beyond .* at most 2\.5e\+04 .* 10000 simulated rows"):
        nk.OnlineDriftDetector(ref, ert=10**9, window_size=10, n_bootstraps=10_000, random_state=0)


@pytest.mark.parametrize("ert", [np.int64(100), np.float32(100.0), np.uint16(100), 100.0])
def test_ert_may_be_a_numpy_number(ref, ert):
    det = nk.OnlineDriftDetector(ref, ert=ert, window_size=10, n_landmarks=50, n_bootstraps=50_000, random_state=1)
    base = nk.OnlineDriftDetector(ref, ert=100, window_size=10, n_landmarks=50, n_bootstraps=50_000, random_state=1)
    assert det.ert == 100.0 and det.threshold_ == base.threshold_


def test_thresholds_rise_with_ert_through_the_extrapolation(ref):
    """One simulated stream (the same seed): the threshold grows with ert, read
    directly up to rows / 400 and extrapolated beyond."""
    kw = {"window_size": 10, "n_landmarks": 50, "n_bootstraps": 200_000, "random_state": 2}
    dets = [nk.OnlineDriftDetector(ref, ert=e, **kw) for e in (100, 400, 2000, 50_000)]
    assert [d.threshold_extrapolated_ for d in dets] == [False, False, True, True]
    assert np.all(np.diff([d.threshold_ for d in dets]) > 0)


def test_the_run_length_under_h0_is_ert():
    """2000 null streams from the reference's distribution at ert = 100, W = 10: the
    mean run length (a standard error of about 2%) lies within 4 standard errors of ert.
    One detector's own error comes from its 2000 held-out rows, which stand for the
    distribution: 2% (standard deviation over held-out samples), -3.5% for this one
    (10^7 rows); the thresholds before this change were 8-23% short."""
    rng = np.random.default_rng(14)
    det = nk.OnlineDriftDetector(rng.normal(size=(20_000, 3)), ert=100, window_size=10, random_state=4)
    lengths = []
    for _ in range(2000):
        det.reset()
        t = None
        while t is None:
            t = det.update(rng.normal(size=(100, 3))).drift_time
        lengths.append(t)
    se = np.std(lengths) / np.sqrt(len(lengths))
    assert abs(np.mean(lengths) - 100) <= 4 * se, (np.mean(lengths), se)


# --------------------------------------------------------------------------- detection, state


def test_online_detects_a_shift_and_resets(online):
    online.reset()
    res = online.update(np.random.default_rng(13).normal(size=(200, 3)) + 1.0)
    assert res.is_drift and res.drift_time <= 2 * online.window_size
    assert np.all(res.threshold[online.window_size - 1 :] == online.threshold_)
    online.reset()
    assert online.t_ == 0


def test_online_save_load_keeps_the_stream(tmp_path, online):
    online.reset()
    rng = np.random.default_rng(15)
    online.update(rng.normal(size=(33, 3)))
    online.save(tmp_path / "o.npz")
    back = nk.load(tmp_path / "o.npz")
    assert back.threshold_ == online.threshold_ and back.summary() == online.summary()
    X = rng.normal(size=(20, 3))
    a, b = online.update(X), back.update(X)
    np.testing.assert_array_equal(a.statistic, b.statistic)
    assert back.t_ == online.t_ == 53
    online.reset()


def _forge(tmp_path, path, *, state=None, arrays=None):
    """A consistent forgery: changed fields or members, the manifest's checksums redone."""
    members = dict(np.load(path))
    header = json.loads(bytes(members["header"]))
    header["state"].update(state or {})
    for key, value in (arrays or {}).items():
        value = np.ascontiguousarray(value, dtype=members[key].dtype)
        members[key] = value
        digest = hashlib.sha256(value.view(np.uint8).reshape(-1).data).hexdigest()
        header["arrays"][key] = {"dtype": value.dtype.str, "shape": list(value.shape), "sha256": digest}
    members["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(tmp_path / "bad.npz", **members)
    return tmp_path / "bad.npz"


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda s, a: ({"threshold": s["threshold"] * 1.01}, {}), "threshold does not match"),
        (lambda s, a: ({"threshold": 50.0}, {}), "threshold does not match"),
        (lambda s, a: ({"center": s["center"] + 0.001, "extrapolated": False}, {}), None),
        (lambda s, a: ({}, {"levels": a["levels"][::-1].copy()}), "levels must be"),
        (lambda s, a: ({}, {"alarms": a["alarms"] * 3}), "threshold does not match|alarms must lie"),
        (lambda s, a: ({}, {"alarms": a["alarms"] + 10**6}), "alarms must lie"),
        (lambda s, a: ({"simulated_rows": s["simulated_rows"] + 1}, {}), "simulated_rows=.* is not n_bootstraps"),
        (lambda s, a: ({"extrapolated": True}, {}), "extrapolated=True"),
        (lambda s, a: ({"norm2": s["norm2"] * 1.001}, {}), "norm2 does not match"),
        (lambda s, a: ({}, {"f": a["f"] + 1e-6}), "f does not match"),
        (lambda s, a: ({}, {"g": a["g"] * 1.0001}), "g does not match"),
        (lambda s, a: ({}, {"rows": a["rows"] + 0.01}), "f does not match"),
        (lambda s, a: ({"scale": -1.0}, {}), "scale="),
        (lambda s, a: ({"center": float(a["levels"][-1]) + 1.0}, {}), "center="),
        (lambda s, a: ({"scale": s["scale"] * 1e-4}, {}), "scale="),
        (lambda s, a: ({"t": 3}, {}), "rows must hold"),
    ],
)
def test_a_forged_online_file_is_refused_by_field(tmp_path, online, change, match):
    online.reset()
    online.update(np.random.default_rng(16).normal(size=(40, 3)))
    online.save(tmp_path / "o.npz")
    online.reset()
    members = dict(np.load(tmp_path / "o.npz"))
    state = json.loads(bytes(members["header"]))["state"]
    new_state, new_arrays = change(state, members)
    bad = _forge(tmp_path, tmp_path / "o.npz", state=new_state, arrays=new_arrays)
    if match is None:  # the centre moves the extrapolated curve only: a direct threshold stays valid
        assert nk.load(bad).threshold_ == online.threshold_
        return
    with pytest.raises(nk.FileFormatError, match=match):
        nk.load(bad)


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"ert": 0}, "ert must be a positive number"),
        ({"ert": -5.0}, "ert must be a positive number"),
        ({"ert": True}, "ert must be a positive number"),
        ({"ert": float("inf")}, "ert must be a positive number"),
        ({"ert": "100"}, "ert must be a positive number"),
        ({"ert": 10, "window_size": 20}, "window_size=20 is larger than ert=10"),
        ({"ert": 10, "window_size": 10}, "ert=10 equals window_size=10"),
        ({"window_size": 1}, "window_size must be at least 2"),
        ({"kernel": nk.KernelCollection()}, "one kernel"),
        ({"x_ref": np.zeros((1, 3))}, "x_ref must have at least"),
        ({"n_bootstraps": 100}, "n_bootstraps=100 simulated rows are too few"),
    ],
)
def test_bad_online_arguments_are_refused(ref, kw, match):
    kw = {"x_ref": ref[:500], "ert": 100, "window_size": 10, **kw}
    with pytest.raises(ValueError, match=match):
        nk.OnlineDriftDetector(kw.pop("x_ref"), **kw)


def test_bad_online_rows_change_nothing(online):
    online.reset()
    online.update(np.zeros((5, 3)))
    for bad, match in ((np.full((2, 3), np.nan), "NaN or inf"), (np.zeros((2, 4)), "4 features")):
        with pytest.raises(ValueError, match=match):
            online.update(bad)
    assert online.t_ == 5
    online.reset()


def test_column_names_are_kept_checked_and_saved(tmp_path):
    """Fitted on a DataFrame: a block whose columns come in another order is refused
    (naming them) before the stream moves, a block without names is taken by position,
    and the names survive save and load."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(5)
    frame = pd.DataFrame(rng.normal(size=(2000, 3)), columns=["a", "b", "c"])
    det = nk.OnlineDriftDetector(frame, ert=100, window_size=10, n_bootstraps=100_000, random_state=0)
    assert list(det.feature_names_in_) == ["a", "b", "c"]
    block = pd.DataFrame(rng.normal(size=(5, 3)), columns=["a", "b", "c"])
    det.update(block)
    det.update(block.to_numpy())
    with pytest.raises(ValueError, match="'b'"):
        det.update(block[["b", "a", "c"]])
    assert det.t_ == 10
    det.save(tmp_path / "o.npz")
    back = nk.load(tmp_path / "o.npz")
    assert list(back.feature_names_in_) == ["a", "b", "c"]
    with pytest.raises(ValueError, match="'b'"):
        back.update(block[["b", "a", "c"]])
