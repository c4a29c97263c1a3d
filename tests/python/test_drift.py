"""Drift detectors against independent references: dense numpy features and windows,
uniform p-values under H0 over repetitions, and every bad input refused by name."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import nystrom_kme as nk


def _gauss(A, B, s):
    return np.exp(-((A[:, None, :] - B[None, :, :]) ** 2).sum(-1) / (2 * s * s))


def _f32(K):
    """Kernel values as the detector stores its units: rounded to float32."""
    return K.astype(np.float32).astype(np.float64)


@pytest.fixture(scope="module")
def ref():
    return np.random.default_rng(0).normal(size=(6000, 3))


@pytest.fixture(scope="module")
def detector(ref):
    """Batches of up to 100 rows are calibrated (3000 held-out rows, 30 per batch row)."""
    return nk.DriftDetector(ref, n_holdout=3000, n_permutations=99, random_state=0)


# --------------------------------------------------------------------------- batch


def test_each_kernels_statistic_is_the_dense_feature_distance(ref):
    """One kernel, every split: ||mean phi(S) - mu_R||^2 with phi from numpy's eigh of
    K(L, L) (an independent factorisation), mu_R from R = the rows not held out."""
    det = nk.DriftDetector(
        ref[:2400], kernel=nk.Gaussian(1.3), n_landmarks=60, n_holdout=1200, n_permutations=19, random_state=3
    )
    ref_ = det.reference_
    L, H = ref_.landmarks, ref_.holdout
    held = {r.tobytes() for r in H}
    R = np.array([r for r in ref[:2400] if r.tobytes() not in held])
    assert R.shape[0] == ref_.n_rest == 1200
    w, V = np.linalg.eigh(_gauss(L, L, 1.3))
    keep = w > w.max() * 1e-12
    P = (V[:, keep] / np.sqrt(w[keep])).T  # phi(x) = P k(L, x)
    mu = P @ _gauss(L, R, 1.3).mean(axis=1)
    X = np.random.default_rng(1).normal(size=(40, 3)) + 0.2
    res = det.predict(X)
    phi_X = (P @ _gauss(L, X, 1.3)).T
    T0 = np.sum((phi_X.mean(axis=0) - mu) ** 2)
    # the distance's point estimate (unbiased): T0 less the batch's own spread / b and the
    # reference's, tr(Sigma) / |R| with Sigma the held-out rows' feature covariance
    spread = np.sum((phi_X - phi_X.mean(axis=0)) ** 2) / (40 - 1)
    phi_H = (P @ _gauss(L, H, 1.3)).T
    ref_spread = np.sum((phi_H - phi_H.mean(axis=0)) ** 2) / (len(H) - 1)
    assert res.distance.kernel == nk.Gaussian(1.3)
    assert res.distance.mmd == pytest.approx(np.sqrt(max(T0 - spread / 40 - ref_spread / 1200, 0.0)), rel=1e-6)
    # the p-value: the rank of split 0 among the splits of nk.random_splits' generator; every
    # unit's kernel values (the batch's and the pool's alike) rounded to float32, as stored
    seed_rng = np.random.default_rng([det._seed, 0])
    splits = nk.random_splits(40, 1200, 19, random_state=seed_rng)  # 40 x 30 <= 1200: rows permuted
    pooled = np.vstack([(P @ _f32(_gauss(L, X, 1.3))).T, (P @ _f32(_gauss(L, H, 1.3))).T])
    T = np.array([np.sum((pooled[s].mean(axis=0) - mu) ** 2) for s in splits.T])
    assert res.statistic == pytest.approx(T[0], rel=1e-8)
    assert res.pvalue == pytest.approx((1 + np.sum(T[1:] >= T[0] * (1 - 1e-12))) / 20)
    # a larger batch than a (patched: 500-row) row pool holds 30 times: bins of 10 rows, the
    # batch's drawn after the splits' seed, every held-out row in consecutive bins
    from nystrom_kme.drift import _statistic

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_statistic, "ROW_POOL", 500)
        det = nk.DriftDetector(
            ref[:2000], kernel=nk.Gaussian(1.3), n_landmarks=60, n_holdout=900, n_permutations=19, random_state=3
        )
    det._calls = 1
    L, H = det.reference_.landmarks, det.reference_.holdout
    held = {r.tobytes() for r in H}
    R = np.array([r for r in ref[:2000] if r.tobytes() not in held])
    w, V = np.linalg.eigh(_gauss(L, L, 1.3))
    keep = w > w.max() * 1e-12
    P = (V[:, keep] / np.sqrt(w[keep])).T
    mu = P @ _gauss(L, R, 1.3).mean(axis=1)
    Xb = np.random.default_rng(2).normal(size=(205, 3))
    with pytest.warns(UserWarning, match="at most 30 rows"):  # 900 held-out rows calibrate 30
        res = det.predict(Xb)
    replay = np.random.default_rng([det._seed, 1])
    splits = nk.random_splits(20, 90, 19, random_state=replay)
    keep = replay.permutation(205)[:200]
    bins = np.vstack(  # each unit's kernel sums over its 10 rows, rounded to float32 as stored
        [_gauss(L, Xb[keep], 1.3).T.reshape(20, 10, -1).sum(axis=1), _gauss(L, H, 1.3).T.reshape(90, 10, -1).sum(1)]
    )
    units = (P @ _f32(bins).T).T
    T = np.array([np.sum((units[s].sum(axis=0) / 200 - mu) ** 2) for s in splits.T])
    assert res.statistic == pytest.approx(T[0], rel=1e-8)
    assert res.pvalue == pytest.approx((1 + np.sum(T[1:] >= T[0] * (1 - 1e-12))) / 20)


def test_float32_pools_give_the_statistics_of_float64_pools(monkeypatch):
    """The pools keep kernel values in float32, and the features stop K_m's pivots at
    float32's rounding: on 2- and 3-dimensional data (an ill-conditioned K_m) the
    permuted statistics are those of float64 pools within 2e-3 (without the cut 33-85%
    apart, bench/RESULTS.md, issue 46), the p-values within one rank."""
    from nystrom_kme.drift import _statistic

    for d in (2, 3):
        rng = np.random.default_rng(d)
        X = rng.normal(size=(20000, d))
        batches = [rng.normal(size=(300, d)), 1.1 * rng.normal(size=(300, d))]
        results = {}
        for dtype in (np.float32, np.float64):
            monkeypatch.setattr(_statistic, "POOL_DTYPE", dtype)
            det = nk.DriftDetector(X, n_permutations=99, random_state=0)
            results[dtype] = [det.predict(b) for b in batches]
        for low, ref_ in zip(results[np.float32], results[np.float64]):
            a, b = np.asarray(low.null_distribution), np.asarray(ref_.null_distribution)
            assert np.max(np.abs(a - b)) <= 2e-3 * np.max(np.abs(b))
            assert abs(low.pvalue - ref_.pvalue) <= 1 / 100 + 1e-12


def test_the_observed_split_is_computed_as_every_permuted_one(ref):
    """Exchangeability needs the batch's units computed exactly as the pool's: a batch made
    of the first held-out rows gives, on the observed split, the statistic of those pool
    rows to round-off (with the batch in float64 beside a float32 pool, a wide kernel's
    ill-conditioned features made every split with held-out rows look farther: the
    widest Gaussian's p-values piled up near 1)."""
    det = nk.DriftDetector(ref[:4000], kernel=nk.Gaussian(20.0), n_holdout=2000, n_permutations=9, random_state=0)
    stat = det._statistic
    X = det.reference_.holdout[:50]
    found = stat.permuted(X, 9, np.random.default_rng(0), 1)
    mean = stat.row_pool[0][:50].astype(np.float64).mean(axis=0)  # the same rows, as the pool holds them
    D = mean @ stat.features[0].T - stat.means[0]
    assert found.V[0, 0] == pytest.approx(float(D @ D), rel=1e-6)  # features up to ~1e6: sums reordered


@pytest.mark.parametrize("b", [60, 400])  # rows against 500 held-out rows; 40 bins against 50
@pytest.mark.filterwarnings("ignore:a batch of")  # two computations of one statistic, not its calibration
def test_gathered_and_multiplied_split_sums_agree(monkeypatch, ref, b):
    """predict sums each split's chosen units by gathering them when the held-out units
    outnumber the batch's (the default pools) and by one matrix product otherwise: both
    give the same statistics, p-value and distance on the same batch and calls."""
    from nystrom_kme.drift import _statistic

    X = np.random.default_rng(30).normal(size=(b, 3)) + 0.1
    results = []
    for gather in (True, False):
        monkeypatch.setattr(_statistic, "_gather", lambda units_x, units_h, g=gather: g)
        monkeypatch.setattr(_statistic, "ROW_POOL", 100)  # b = 400: bins
        det = nk.DriftDetector(ref, n_holdout=500, n_permutations=99, random_state=3)
        results.append(det.predict(X))
    a, c = results
    np.testing.assert_allclose(a.statistic, c.statistic, rtol=1e-10)
    np.testing.assert_allclose(a.kernel_pvalues, c.kernel_pvalues)
    assert a.pvalue == c.pvalue and a.distance.mmd == pytest.approx(c.distance.mmd, rel=1e-10)


def test_pvalues_are_uniform_under_h0(ref, detector):
    """200 batches from the reference's distribution: KS against U(0, 1) at level 0.001,
    the permutation p-value's discreteness (1/100) taken into account by a continuity
    jitter, and the rejection rate at 0.05 within the central 99.9% binomial range."""
    rng = np.random.default_rng(7)
    p = np.array([detector.predict(rng.normal(size=(60, 3))).pvalue for _ in range(200)])
    jittered = p - rng.uniform(0, 1 / 100, size=p.size)
    assert stats.kstest(jittered, "uniform").pvalue > 0.001
    lo, hi = stats.binom.ppf([0.0005, 0.9995], 200, 0.05)
    assert lo <= np.sum(p <= 0.05) <= hi


@pytest.mark.filterwarnings("ignore:a batch of")  # power, not the calibration of 200-row batches
def test_power_on_a_shift_a_scale_change_and_a_local_difference(ref, detector):
    rng = np.random.default_rng(8)
    shifted = [detector.predict(rng.normal(size=(200, 3)) + 0.3).is_drift for _ in range(10)]
    scaled = [detector.predict(rng.normal(size=(200, 3)) * 1.3).is_drift for _ in range(10)]
    local = []
    for _ in range(10):  # 20% of the rows moved into a tight cluster
        X = rng.normal(size=(200, 3))
        X[:40] = rng.normal(size=(40, 3)) * 0.1 + 1.0
        local.append(detector.predict(X).is_drift)
    assert sum(shifted) >= 9 and sum(scaled) >= 9 and sum(local) >= 9


@pytest.mark.filterwarnings("ignore:a batch of")  # the interval, not the p-value's calibration
def test_the_distance_interval_covers_the_population_mmd(ref):
    """The Gaussian kernel's MMD between N(0, I) and N(0.25, I) in closed form; 30 batches;
    the 95% interval covers it at least 24 times."""
    s = 2.0
    det = nk.DriftDetector(ref, kernel=nk.Gaussian(s), n_holdout=500, n_permutations=49, random_state=1)
    d, shift = 3, 0.25
    # E k(x, x') for x ~ N(a, I), x' ~ N(b, I): (s^2 / (s^2 + 2))^(d/2) exp(-|a-b|^2 / (2 (s^2 + 2)))
    c = (s * s / (s * s + 2)) ** (d / 2)
    truth = np.sqrt(2 * c - 2 * c * np.exp(-d * shift**2 / (2 * (s * s + 2))))
    rng = np.random.default_rng(9)
    covered = sum(
        (e := det.predict(rng.normal(size=(400, 3)) + shift).distance).low <= truth <= e.high for _ in range(30)
    )
    assert covered >= 24


def test_reproducible_saved_and_loaded(tmp_path, ref, detector):
    X = np.random.default_rng(10).normal(size=(50, 3))
    twin = nk.DriftDetector(ref, n_holdout=3000, n_permutations=99, random_state=0)
    twin._calls = detector._calls  # the same point in the sequence of calls
    path = tmp_path / "det.npz"
    detector.save(path)
    back = nk.load(path)
    a, b, c = detector.predict(X), back.predict(X), twin.predict(X)
    assert a.pvalue == b.pvalue == c.pvalue and a.statistic == b.statistic == c.statistic
    assert back.kernels_ == detector.kernels_ and back.rule_ == nk.two_sample.DEFAULT_RULE


def test_float32_and_streamed_references(tmp_path, ref):
    np.save(tmp_path / "ref.npy", ref.astype(np.float32))
    mm = np.load(tmp_path / "ref.npy", mmap_mode="r")
    a = nk.DriftDetector(mm, n_holdout=1000, n_permutations=19, random_state=2)
    b = nk.DriftDetector(ref.astype(np.float32), n_holdout=1000, n_permutations=19, random_state=2)
    X = np.random.default_rng(11).normal(size=(30, 3)).astype(np.float32)
    assert a.predict(X).pvalue == b.predict(X).pvalue


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda d: d.predict(np.zeros((10, 4))), "x has 4 features but the reference has 3"),
        (lambda d: d.predict(np.full((10, 3), np.nan)), "x contains NaN or inf"),
        (lambda d: d.predict(np.zeros((0, 3))), "x must have at least 2 row"),
        (lambda d: d.predict(np.zeros((1, 3))), "x must have at least 2 row"),
    ],
)
def test_bad_batches_are_refused(detector, make, match):
    calls = detector._calls
    with pytest.raises(ValueError, match=match):
        make(detector)
    assert detector._calls == calls  # nothing consumed


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"x_ref": np.zeros((3, 3))}, "x_ref must have at least 4 rows"),
        ({"n_holdout": 1}, "n_holdout must be at least 2"),
        ({"alpha": np.float32(1.5)}, "alpha must be in"),
        ({"statistic": "energy"}, "statistic must be one of"),
        ({"alpha": 1.5}, "alpha must be in"),
        ({"n_permutations": 0}, "n_permutations"),
        ({"n_holdout": -1}, "n_holdout"),
        ({"kernel": "gaussian", "aggregation": "fuse"}, "combines several kernels"),
        ({"aggregation": "bogus"}, "aggregation must be one of"),
        ({"preprocess": 3}, "preprocess must be a callable"),
    ],
)
def test_bad_detector_arguments_are_refused(ref, kw, match):
    kw = {"x_ref": ref[:400], **kw}
    with pytest.raises(ValueError, match=match):
        nk.DriftDetector(kw.pop("x_ref"), **kw)


def test_a_detector_with_preprocess_cannot_be_saved(tmp_path, ref):
    det = nk.DriftDetector(ref[:3000], preprocess=lambda x: np.asarray(x) * 2, n_holdout=1500, random_state=0)
    assert 0 < det.predict(ref[3000:3050]).pvalue <= 1
    with pytest.raises(ValueError, match="preprocess"):
        det.save(tmp_path / "d.npz")


def test_column_names_are_kept_checked_and_saved(tmp_path, ref):
    """A detector fitted on a DataFrame refuses a batch whose columns come in another
    order (naming them), takes a batch without names by position, and keeps the names
    through save and load; with ``preprocess`` the names checked are the raw batch's."""
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(ref[:3000], columns=["age", "income", "height"])
    det = nk.DriftDetector(frame, n_holdout=1500, n_permutations=19, random_state=0)
    assert list(det.feature_names_in_) == ["age", "income", "height"]
    batch = pd.DataFrame(ref[3000:3050], columns=["age", "income", "height"])
    assert 0 < det.predict(batch).pvalue <= 1
    assert 0 < det.predict(ref[3000:3050]).pvalue <= 1  # no names: by position
    calls = det._calls
    with pytest.raises(ValueError, match="income"):
        det.predict(batch[["income", "age", "height"]])
    assert det._calls == calls  # refused before any draw
    det.save(tmp_path / "d.npz")
    back = nk.load(tmp_path / "d.npz")
    assert list(back.feature_names_in_) == ["age", "income", "height"]
    with pytest.raises(ValueError, match="income"):
        back.predict(batch[["income", "age", "height"]])
    doubled = nk.DriftDetector(frame, preprocess=lambda x: np.asarray(x) * 2, n_holdout=1500, random_state=0)
    with pytest.raises(ValueError, match="income"):
        doubled.predict(batch[["income", "age", "height"]])


def test_a_data_file_is_a_reference_and_a_batch(tmp_path, ref):
    """Paths read as data files, the header's names kept (also through preprocess)."""
    for name, rows in (("ref.csv", ref[:2000]), ("x.csv", ref[2000:2030])):
        np.savetxt(tmp_path / name, rows, fmt="%.17g", delimiter=",", header="a,b,c", comments="")
    direct = nk.DriftDetector(ref[:2000], n_holdout=1000, n_permutations=19, random_state=3)
    for preprocess in (None, lambda x: np.asarray(x)):
        det = nk.DriftDetector(
            tmp_path / "ref.csv", n_holdout=1000, n_permutations=19, random_state=3, preprocess=preprocess
        )
        assert list(det.feature_names_in_) == ["a", "b", "c"]
        direct._calls = det._calls = 0
        assert det.predict(tmp_path / "x.csv").pvalue == direct.predict(ref[2000:2030]).pvalue


def test_a_contradictory_file_is_refused(tmp_path, detector):
    import json

    path = tmp_path / "d.npz"
    detector.save(path)
    members = dict(np.load(path))
    header = json.loads(bytes(members["header"]))
    header["state"]["n_rest"] += 1  # no longer n_reference - held-out rows
    members["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(tmp_path / "bad.npz", **members)
    with pytest.raises(nk.FileFormatError, match="n_rest"):
        nk.load(tmp_path / "bad.npz")


@pytest.mark.parametrize(
    "field, change, match",
    [
        ("sums", lambda v: -v, "sums must lie in"),
        ("sums", lambda v: v * 1e6, "sums must lie in"),
        ("mean_sq", lambda v: v * 0, "mean_sq .* disagrees"),
        ("mean_sq", lambda v: v * 0 - 1, "mean_sq must lie in"),
        ("mean_sq", lambda v: v * 0 + 5, "mean_sq must lie in"),
        ("landmarks", lambda v: v[:, :2], "landmarks|columns|features"),
    ],
)
def test_forged_detector_files_are_refused(tmp_path, detector, field, change, match):
    """The red team's forged files (issue 35): every saved field is checked against the
    others on load, and a contradiction is refused naming it."""
    import hashlib
    import json

    path = tmp_path / "d.npz"
    detector.save(path)
    members = dict(np.load(path))
    header = json.loads(bytes(members["header"]))
    forged = np.ascontiguousarray(change(members[field]))
    members[field] = forged  # and its manifest entry, as a forger would
    header["arrays"][field].update(
        shape=list(forged.shape), sha256=hashlib.sha256(forged.view(np.uint8).reshape(-1).data).hexdigest()
    )
    members["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(tmp_path / "bad.npz", **members)
    with pytest.raises(nk.FileFormatError, match=match):
        nk.load(tmp_path / "bad.npz")


def test_predict_from_several_threads_draws_distinct_splits(ref):
    """Two threads, 12 predicts each: 24 distinct call indices (the red team saw 41 of 50),
    so no split draw is reused; each result is the one its call index gives alone."""
    import threading

    det = nk.DriftDetector(ref, n_holdout=1500, n_landmarks=60, n_permutations=49, random_state=4)
    X = np.random.default_rng(15).normal(size=(40, 3))
    results: list = []

    def work():
        for _ in range(12):
            res = det.predict(X)
            results.append((res.pvalue, *res.kernel_pvalues.tolist()))  # what the split draw decides

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert det._calls == 24 and len(results) == 24
    twin = nk.DriftDetector(ref, n_holdout=1500, n_landmarks=60, n_permutations=49, random_state=4)
    replay = []
    for _ in range(24):
        res = twin.predict(X)
        replay.append((res.pvalue, *res.kernel_pvalues.tolist()))
    assert sorted(results) == sorted(replay)  # each call index used once
    assert len(set(replay)) > 18  # and the draws tell the calls apart


def test_a_small_references_warning_points_to_the_two_sample_test():
    """Issue 43 item 8: a 400-row reference holds out at most 200 rows; a batch of 50 is
    beyond what they calibrate, and holding out more is impossible: the warning says so
    and names the test that uses every reference row (the detector's power at such sizes:
    bench/RESULTS.md)."""
    rng = np.random.default_rng(0)
    det = nk.DriftDetector(rng.normal(size=(400, 5)), n_permutations=19, random_state=0)
    with pytest.warns(UserWarning, match=r"allow no more than 200 held out.*two_sample_test"):
        det.predict(rng.normal(size=(50, 5)))
    big = nk.DriftDetector(rng.normal(size=(6000, 2)), n_holdout=600, n_permutations=19, random_state=0)
    with pytest.warns(UserWarning, match=r"hold out more reference rows"):
        big.predict(rng.normal(size=(50, 2)))
