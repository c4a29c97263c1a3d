"""Drift detectors against independent references: dense numpy features and windows,
uniform p-values under H0 over repetitions, and every bad input refused by name."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import nystrom_kme as nk


def _gauss(A, B, s):
    return np.exp(-((A[:, None, :] - B[None, :, :]) ** 2).sum(-1) / (2 * s * s))


@pytest.fixture(scope="module")
def ref():
    return np.random.default_rng(0).normal(size=(6000, 3))


@pytest.fixture(scope="module")
def detector(ref):
    return nk.DriftDetector(ref, n_holdout=500, n_permutations=99, random_state=0)


# --------------------------------------------------------------------------- batch


def test_each_kernels_statistic_is_the_dense_feature_distance(ref):
    """One kernel, every split: ||mean phi(S) - mu_R||^2 with phi from numpy's eigh of
    K(L, L) (an independent factorisation), mu_R from R = the rows not held out."""
    det = nk.DriftDetector(
        ref[:2000], kernel=nk.Gaussian(1.3), n_landmarks=60, n_holdout=900, n_permutations=19, random_state=3
    )
    ref_ = det.reference_
    L, H = ref_.landmarks, ref_.holdout
    held = {r.tobytes() for r in H}
    R = np.array([r for r in ref[:2000] if r.tobytes() not in held])
    assert R.shape[0] == ref_.n_rest == 1100
    w, V = np.linalg.eigh(_gauss(L, L, 1.3))
    keep = w > w.max() * 1e-12
    P = (V[:, keep] / np.sqrt(w[keep])).T  # phi(x) = P k(L, x)
    mu = P @ _gauss(L, R, 1.3).mean(axis=1)
    X = np.random.default_rng(1).normal(size=(40, 3)) + 0.2
    res = det.predict(X)
    phi_X = (P @ _gauss(L, X, 1.3)).T
    T0 = np.sum((phi_X.mean(axis=0) - mu) ** 2)
    # the distance's point estimate: T0 less the batch's own spread / b
    spread = np.sum((phi_X - phi_X.mean(axis=0)) ** 2) / (40 - 1)
    assert res.distance.mmd == pytest.approx(np.sqrt(max(T0 - spread / 40, 0.0)), rel=1e-6)
    # the p-value: the rank of split 0 among the splits of nk.random_splits' generator
    seed_rng = np.random.default_rng([det._seed, 0])
    splits = nk.random_splits(40, 900, 19, random_state=seed_rng)  # 40 x 20 <= 900: rows permuted
    pooled = np.vstack([phi_X, (P @ _gauss(L, H, 1.3)).T])
    T = np.array([np.sum((pooled[s].mean(axis=0) - mu) ** 2) for s in splits.T])
    assert res.statistic == pytest.approx(T[0], rel=1e-8)
    assert res.pvalue == pytest.approx((1 + np.sum(T[1:] >= T[0] * (1 - 1e-12))) / 20)
    # a larger batch (200 x 20 > 900 held-out rows): bins of 10 rows, the batch's drawn
    # after the splits' seed, every held-out row in consecutive bins
    Xb = np.random.default_rng(2).normal(size=(205, 3))
    res = det.predict(Xb)
    replay = np.random.default_rng([det._seed, 1])
    splits = nk.random_splits(20, 90, 19, random_state=replay)
    keep = replay.permutation(205)[:200]
    phi_b = (P @ _gauss(L, Xb, 1.3)).T
    units = np.vstack(
        [phi_b[keep].reshape(20, 10, -1).sum(axis=1), (P @ _gauss(L, H, 1.3)).T.reshape(90, 10, -1).sum(1)]
    )
    T = np.array([np.sum((units[s].sum(axis=0) / 200 - mu) ** 2) for s in splits.T])
    assert res.statistic == pytest.approx(T[0], rel=1e-8)
    assert res.pvalue == pytest.approx((1 + np.sum(T[1:] >= T[0] * (1 - 1e-12))) / 20)


@pytest.mark.parametrize("b", [60, 400])  # rows against 500 held-out rows; 40 bins against 50
def test_gathered_and_multiplied_split_sums_agree(monkeypatch, ref, b):
    """predict sums each split's chosen units by gathering them when the held-out units
    outnumber the batch's (the default pools) and by one matrix product otherwise: both
    give the same statistics, p-value and distance on the same batch and calls."""
    from nystrom_kme.drift import batch

    X = np.random.default_rng(30).normal(size=(b, 3)) + 0.1
    results = []
    for gather in (True, False):
        monkeypatch.setattr(batch, "_gather", lambda units_x, units_h, g=gather: g)
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
    twin = nk.DriftDetector(ref, n_holdout=500, n_permutations=99, random_state=0)
    twin._calls = detector._calls  # the same point in the sequence of calls
    path = tmp_path / "det.npz"
    detector.save(path)
    back = nk.load(path)
    a, b, c = detector.predict(X), back.predict(X), twin.predict(X)
    assert a.pvalue == b.pvalue == c.pvalue and a.statistic == b.statistic == c.statistic
    assert back.kernels_ == detector.kernels_ and back.rule_ == "fuse+median"


def test_float32_and_streamed_references(tmp_path, ref):
    np.save(tmp_path / "ref.npy", ref.astype(np.float32))
    mm = np.load(tmp_path / "ref.npy", mmap_mode="r")
    a = nk.DriftDetector(mm, n_holdout=300, n_permutations=19, random_state=2)
    b = nk.DriftDetector(ref.astype(np.float32), n_holdout=300, n_permutations=19, random_state=2)
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
        ({"x_ref": np.zeros((1, 3))}, "x_ref must have at least 2 rows"),
        ({"alpha": 1.5}, "alpha must be in"),
        ({"n_permutations": 0}, "n_permutations"),
        ({"n_holdout": -1}, "n_holdout"),
        ({"kernel": "gaussian", "aggregation": "fuse"}, "combines several kernels"),
        ({"aggregation": "bogus"}, "aggregation must be one of"),
        ({"preprocess": 3}, "preprocess must be a callable"),
        ({"n_landmarks": 10**6}, "n_landmarks=1000000 exceeds"),
    ],
)
def test_bad_detector_arguments_are_refused(ref, kw, match):
    kw = {"x_ref": ref[:400], **kw}
    with pytest.raises(ValueError, match=match):
        nk.DriftDetector(kw.pop("x_ref"), **kw)


def test_a_detector_with_preprocess_cannot_be_saved(tmp_path, ref):
    det = nk.DriftDetector(ref[:400], preprocess=lambda x: np.asarray(x) * 2, n_holdout=100, random_state=0)
    assert 0 < det.predict(ref[400:450]).pvalue <= 1
    with pytest.raises(ValueError, match="preprocess"):
        det.save(tmp_path / "d.npz")


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
