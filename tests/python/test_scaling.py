"""Columns in different units (nystrom_kme._scaling, issue 37): standardize= gives the
decisions of the standardised table, and without it a warning names the column that
drowns the rest; against scikit-learn's bundled tables and numpy's own statistics."""

from __future__ import annotations

import hashlib
import json
import warnings

import numpy as np
import pytest

import nystrom_kme as nk
from nystrom_kme._scaling import Scaling, check_standardize, fit_scaling, warn_bandwidths
from nystrom_kme.sources import as_source

datasets = pytest.importorskip("sklearn.datasets")  # the test extra


def _table(name):
    X = getattr(datasets, f"load_{name}")().data.astype(np.float64)
    return X, (X - X.mean(0)) / X.std(0, ddof=1)


def test_fit_scaling_is_numpy_mean_std_and_robust_quantiles():
    X, _ = _table("wine")
    parts = [as_source(X[:100]), as_source(X[100:])]
    s = fit_scaling(parts, "standard", np.random.default_rng(0))
    np.testing.assert_allclose(s.center, X.mean(0), rtol=1e-12)
    np.testing.assert_allclose(s.scale, X.std(0, ddof=1), rtol=1e-12)
    r = fit_scaling(parts, "robust", np.random.default_rng(0))  # every row: n < ROBUST_ROWS
    q1, q3 = np.percentile(X, [25, 75], axis=0)
    np.testing.assert_allclose(r.center, np.median(X, 0))
    np.testing.assert_allclose(r.scale, (q3 - q1) / 1.349)
    const = fit_scaling([as_source(np.ones((5, 2)))], "standard", np.random.default_rng(0))
    assert const.scale.tolist() == [1.0, 1.0]  # a constant column keeps scale 1
    for bad in ("minmax", 1, "yes"):
        with pytest.raises(ValueError, match="standardize must be"):
            check_standardize(bad)
    with pytest.raises(ValueError, match="positive finite scales"):
        Scaling(np.zeros(2), np.array([1.0, 0.0]), "standard").check(2)


@pytest.mark.parametrize("name", ["breast_cancer", "wine", "diabetes"])
def test_a_column_in_thousands_warns_and_standardize_restores_the_decision(name):
    """One column x 1000: the default test warns naming it; with standardize=True its
    decisions (a shift of 0.6 sd in another column, and no shift) are those of the table
    standardised beforehand."""
    X, Z = _table(name)
    rng = np.random.default_rng(1)
    idx = rng.permutation(len(X))
    A, B = idx[: len(X) // 2], idx[len(X) // 2 :]
    X = X.copy()
    X[:, 3] *= 1000
    shift = np.zeros(X.shape[1])
    shift[0] = 0.6 * X[:, 0].std()
    with pytest.warns(UserWarning, match="column 3 carries"):
        nk.two_sample_test(X[A], X[B] + shift, n_permutations=99, random_state=0)
    for moved in (shift, 0 * shift):  # the same decision (the shifted one a rejection)
        ours = nk.two_sample_test(X[A], X[B] + moved, standardize=True, n_permutations=99, random_state=0)
        theirs = nk.two_sample_test(Z[A], Z[B] + moved / X.std(0, ddof=1), n_permutations=99, random_state=0)
        assert ours.reject == theirs.reject and (ours.reject or not moved.any())


def test_the_drift_detector_keeps_the_references_scaling_through_save_and_load(tmp_path):
    X, Z = _table("breast_cancer")
    X = np.tile(X, (8, 1)) + np.random.default_rng(2).normal(scale=0.01, size=(8 * len(X), X.shape[1])) * X.std(0)
    X[:, 3] *= 1000
    with pytest.warns(UserWarning, match="column 3 carries"):
        nk.DriftDetector(X, n_holdout=2000, n_permutations=49, random_state=0)
    det = nk.DriftDetector(X, standardize=True, n_holdout=2000, n_permutations=49, random_state=0)
    np.testing.assert_allclose(det.scaling_.center, X.mean(0), rtol=1e-10)
    batch = X[:60].copy()
    batch[:, 0] += 1.5 * X[:, 0].std()
    res = det.predict(batch)
    assert res.is_drift
    det.save(tmp_path / "d.npz")
    back = nk.load(tmp_path / "d.npz")
    assert back.standardize is True and back.scaling_.kind == "standard"
    np.testing.assert_array_equal(back.scaling_.scale, det.scaling_.scale)
    det._calls = back._calls = 5
    assert back.predict(batch).pvalue == det.predict(batch).pvalue


def test_a_bandwidth_far_from_the_data_warns():
    X = np.random.default_rng(3).normal(size=(300, 2))
    for kernel, match in ((nk.Gaussian(1e-6), "nearest-neighbour"), (nk.Gaussian(1e6), "largest distance")):
        with pytest.warns(UserWarning, match=match):
            warn_bandwidths(X, [kernel], "here")
        with pytest.warns(UserWarning, match=match):
            nk.two_sample_test(X[:150], X[150:], kernel=kernel, n_permutations=19, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the median bandwidth: no warning
        warn_bandwidths(X, [nk.Gaussian(nk.median_distance(X))], "here")


# --------------------------------------------------------------------------- #
# NystromKME(standardize=...)
# --------------------------------------------------------------------------- #
def _changed(name):
    """A bundled table with column 3 in other units (x 1000), and that table standardised
    by hand (numpy's mean and ddof=1 standard deviation, as fit_scaling)."""
    X, _ = _table(name)
    X[:, 3] *= 1000
    return X, (X - X.mean(0)) / X.std(0, ddof=1)


def _close(a, b, rtol=1e-10):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * np.abs(b).max())


def _chunks(A):
    return [A[i : i + 97] for i in range(0, len(A), 97)]


@pytest.mark.parametrize("name", ["breast_cancer", "wine", "diabetes"])
@pytest.mark.parametrize("how", ["plain", "auto", "chunks", "passes=1"])
def test_standardize_fits_the_table_standardised_by_hand(name, how):
    """Landmarks, weights, bandwidth and evaluations of standardize=True on the changed table
    are a plain fit's on the standardised one (same seed), on every fit path; later inputs
    (evaluation, score, partial_fit) go through the fit's scaling."""
    X, Z = _changed(name)
    params = {"n_landmarks": "auto" if how == "auto" else 40, "random_state": 0}
    if how == "passes=1":
        params["passes"] = 1
    data = (_chunks(X), _chunks(Z)) if how in ("chunks", "passes=1") else (X, Z)
    ours = nk.NystromKME(standardize=True, **params).fit(data[0])
    theirs = nk.NystromKME(**params).fit(data[1])
    assert ours.get_params()["standardize"] is True and theirs.scaling_ is None
    sd = X.std(0, ddof=1)  # centres to round-off in units of the scale (diabetes' means are ~1e-17)
    assert (np.abs(ours.scaling_.center - X.mean(0)) <= 1e-12 * sd).all()
    _close(ours.scaling_.scale, sd)
    assert ours.kernel_.bandwidth == pytest.approx(theirs.kernel_.bandwidth, rel=1e-10)
    _close(ours.landmarks_, theirs.landmarks_)
    _close(ours.weights_, theirs.weights_)
    _close(ours(X), theirs(Z))
    assert ours.score(X[::3]) == pytest.approx(theirs.score(Z[::3]), rel=1e-10)
    if how == "plain":  # and continued with new rows (here: the table again), in its units
        ours.partial_fit(X[:50])
        theirs.partial_fit(Z[:50])
        assert ours.n_samples_ == theirs.n_samples_ == len(X) + 50
        _close(ours.weights_, theirs.weights_)
        _close(ours(X[:50]), theirs(Z[:50]))


def test_partial_fit_fits_the_scaling_on_the_first_chunk():
    X, _ = _changed("wine")
    first, rest = X[:90], X[90:]
    Z = (X - first.mean(0)) / first.std(0, ddof=1)
    ours = nk.NystromKME(n_landmarks=20, random_state=0, standardize=True).partial_fit(first).partial_fit(rest)
    theirs = nk.NystromKME(n_landmarks=20, random_state=0).partial_fit(Z[:90]).partial_fit(Z[90:])
    _close(ours.scaling_.center, first.mean(0))
    _close(ours.landmarks_, theirs.landmarks_)
    _close(ours(X), theirs(Z))


def test_robust_scaling_and_given_landmark_points():
    """ "robust" centres at the median and divides by IQR / 1.349; landmark points given as
    ``sampler`` are in X's units, so they meet the scaling too."""
    X, _ = _changed("breast_cancer")
    robust = nk.NystromKME(n_landmarks=30, random_state=0, standardize="robust").fit(X)
    q1, q3 = np.percentile(X, [25, 75], axis=0)
    np.testing.assert_allclose(robust.scaling_.center, np.median(X, 0))
    np.testing.assert_allclose(robust.scaling_.scale, (q3 - q1) / 1.349)
    assert robust.scaling_.kind == "robust"
    points = X[[3, 50, 400]]
    given = nk.NystromKME(nk.Gaussian(2.0), sampler=points, standardize=True).fit(X)
    s = given.scaling_
    _close(given.landmarks_, (points - s.center) / s.scale)
    by_hand = nk.NystromKME(nk.Gaussian(2.0), sampler=given.landmarks_).fit(s.apply(X))
    _close(given(X), by_hand(s.apply(X)))


def test_standardize_is_checked_by_name_and_a_refit_without_it_clears_the_scaling():
    X, _ = _changed("wine")
    for bad in ("minmax", 1, "yes", 0.5):
        with pytest.raises(ValueError, match="standardize must be"):
            nk.NystromKME(standardize=bad).fit(X)
    est = nk.NystromKME(n_landmarks=20, random_state=0, standardize=True).fit(X)
    assert est.scaling_ is not None and "standardize=True" in repr(est)
    est.set_params(standardize=False).fit(X)
    assert est.scaling_ is None
    plain = nk.NystromKME(n_landmarks=20, random_state=0).fit(X)
    np.testing.assert_array_equal(est(X), plain(X))
    with pytest.raises(ValueError, match="standardize must be"):  # a failed fit keeps the last one
        est.set_params(standardize="minmax").fit(X)
    assert est.scaling_ is None


def test_standardize_needs_a_stream_it_can_read_twice():
    X, _ = _changed("wine")
    for fit in (
        lambda est: est.set_params(passes=1).fit(c for c in _chunks(X)),
        lambda est: est.partial_fit(c for c in _chunks(X)),
    ):
        with pytest.raises(ValueError, match="standardize=True reads the rows once"):
            fit(nk.NystromKME(n_landmarks=20, random_state=0, standardize=True))
    # without standardize the generator is read once, as before
    assert nk.NystromKME(n_landmarks=20, random_state=0, passes=1).fit(c for c in _chunks(X)).n_samples_ == len(X)


def test_a_cuda_array_is_refused_by_a_standardised_embedding(monkeypatch):
    import nystrom_kme.embedding as embedding

    X, _ = _changed("wine")
    est = nk.NystromKME(n_landmarks=20, random_state=0, standardize=True).fit(X)
    monkeypatch.setattr(embedding, "is_cuda_array", lambda Y: True)
    with pytest.raises(ValueError, match="CUDA array cannot be evaluated .* standardize="):
        est(X)


def test_embeddings_with_other_scalings_are_not_merged_or_compared():
    X, _ = _changed("breast_cancer")
    a = nk.NystromKME(nk.Gaussian(3.0), n_landmarks=30, random_state=0, standardize=True).fit(X[:300])
    b = nk.NystromKME(nk.Gaussian(3.0), n_landmarks=30, random_state=1, standardize=True).fit(X[300:])
    plain = nk.NystromKME(nk.Gaussian(3.0), n_landmarks=30, random_state=0).fit(a.scaling_.apply(X[300:]))
    for other, how in ((b, "centres or scales differ"), (plain, "the other none")):
        with pytest.raises(ValueError, match=f"differently standardised columns .*{how}"):
            a.merge(other)
        for compare in (nk.rkhs_distance, nk.squared_distance, nk.inner_product, nk.mmd2):
            with pytest.raises(ValueError, match="differently standardised"):
                compare(a, other)
    # the same scaling: merged (the result keeps it) and compared
    c = nk.NystromKME(nk.Gaussian(3.0), n_landmarks=30, random_state=1, standardize=True).partial_fit(X[:300])
    c.partial_fit(X[300:])
    assert c.scaling_ is not None
    same = nk.NystromKME(nk.Gaussian(3.0), n_landmarks=30, random_state=0, standardize=True).partial_fit(X[:300])
    merged = same.merge(a)
    assert merged.scaling_ is same.scaling_ and nk.rkhs_distance(a, same) == 0.0


def test_save_and_load_keep_the_scaling(tmp_path):
    """The scaling travels in the file (scaling_kind in the header, d centres and scales as
    members), the evaluations are bit for bit; a file without a scaling has none of it."""
    X, _ = _changed("diabetes")
    est = nk.NystromKME(n_landmarks=30, random_state=0, standardize="robust").fit(X)
    est.save(tmp_path / "k.npz")
    back = nk.load(tmp_path / "k.npz")
    assert back.standardize == "robust" and back.scaling_.kind == "robust"
    np.testing.assert_array_equal(back.scaling_.center, est.scaling_.center)
    np.testing.assert_array_equal(back.scaling_.scale, est.scaling_.scale)
    np.testing.assert_array_equal(back(X), est(X))
    assert back.score(X[:40]) == est.score(X[:40])
    np.testing.assert_array_equal(back.partial_fit(X[:40])(X), est.partial_fit(X[:40])(X))
    header, members = _read(tmp_path / "k.npz")
    assert header["state"]["scaling_kind"] == "robust" and header["params"]["standardize"] == "robust"
    assert members["scaling_scale"].shape == (X.shape[1],)
    nk.NystromKME(n_landmarks=30, random_state=0).fit(X).save(tmp_path / "plain.npz")
    header, members = _read(tmp_path / "plain.npz")
    assert "scaling_kind" not in header["state"] and "standardize" not in header["params"]
    assert not {"scaling_center", "scaling_scale"} & set(members)
    assert nk.load(tmp_path / "plain.npz").scaling_ is None


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda h, m: m.update(scaling_scale=np.r_[0.0, m["scaling_scale"][1:]]), "positive finite scales"),
        (
            lambda h, m: m.update(scaling_center=np.r_[np.nan, m["scaling_center"][1:]]),
            "'scaling_center' must be a finite",
        ),
        (lambda h, m: m.update(scaling_scale=m["scaling_scale"][1:]), "scaling_scale"),
        (lambda h, m: h["state"].update(scaling_kind="minmax"), "scaling kind"),
        (lambda h, m: h["state"].pop("scaling_kind"), "without a scaling_kind"),
        (lambda h, m: h["params"].update(standardize="minmax"), "standardize must be"),
    ],
)
def test_a_bad_saved_scaling_is_refused(tmp_path, change, message):
    X, _ = _changed("wine")
    nk.NystromKME(n_landmarks=20, random_state=0, standardize=True).fit(X).save(tmp_path / "k.npz")
    header, members = _read(tmp_path / "k.npz")
    change(header, members)
    _write(tmp_path / "bad.npz", header, members)
    with pytest.raises(nk.FileFormatError, match=message):
        nk.load(tmp_path / "bad.npz")


def _read(path):
    with np.load(path, allow_pickle=False) as npz:
        members = {k: npz[k] for k in npz.files}
    return json.loads(members.pop("header").tobytes()), members


def _write(path, header, members):
    for k, v in members.items():  # the manifest's shapes and hashes follow the changed members
        digest = hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()
        header["arrays"][k].update(dtype=v.dtype.str, shape=list(v.shape), sha256=digest)
    np.savez(path, header=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8), **members)


def test_consumers_of_the_support_refuse_a_standardised_embedding():
    """A quadrature rule (f at the nodes) and the torch loss (batches against the landmarks)
    would meet the standardised support with unscaled rows: refused."""
    X, _ = _changed("wine")
    est = nk.NystromKME(n_landmarks=20, random_state=0, standardize=True).fit(X)
    with pytest.raises(ValueError, match="standardize="):
        nk.QuadratureRule.from_embedding(est)
    pytest.importorskip("torch")  # the optional extra; nystrom_kme.torch raises ImportError without it
    from nystrom_kme import torch as torch_loss

    with pytest.raises(ValueError, match="reference 0: .*standardize="):
        torch_loss.MMDLoss(est)


@pytest.mark.parametrize("kind", ["standard", "robust"])
def test_columns_near_the_float64_limit_keep_their_scale(kind, rng):
    """A column of values >= 1e154 (whose squares overflow) is scaled to unit spread, not
    by inf to a column of zeros (issue 43); its neighbours are unchanged."""
    from nystrom_kme._scaling import fit_scaling
    from nystrom_kme.sources import as_source

    X = rng.normal(size=(2000, 3))
    X[:, 1] *= 1e200
    X[:, 2] = X[:, 2] * 1e300 + 1e307
    s = fit_scaling([as_source(X)], kind)
    Z = s.apply(X)
    assert np.isfinite(Z).all()
    units = np.array([1.0, 1e200, 1e300])
    want = fit_scaling([as_source(X / units)], kind)  # the same columns in ordinary units
    # column 2's offset 1e307 leaves its spread 1e300 about 1e-8 of relative rounding
    np.testing.assert_allclose(s.scale[:2] / units[:2], want.scale[:2], rtol=1e-12)
    np.testing.assert_allclose(s.scale[2] / units[2], want.scale[2], rtol=1e-7)
    np.testing.assert_allclose(Z[:, :2], want.apply(X / units)[:, :2], rtol=1e-10, atol=1e-12)
    assert 0.5 < Z[:, 2].std() < 2.0  # the column near the limit is kept, not zeroed


def test_an_l1_kernels_bandwidth_is_compared_with_l1_distances(rng):
    """The l1 Laplacian's bandwidth warnings read l1 distances (sqrt(d) times larger than
    Euclidean ones in d = 50): one at a tenth of the Euclidean nearest-neighbour distance is
    far below every l1 distance and warned of; one at the median l1 distance is not."""
    import warnings

    from nystrom_kme._scaling import warn_bandwidths
    from nystrom_kme.kernels import pairwise_distances

    X = rng.normal(size=(300, 50))
    d2 = pairwise_distances(X)
    nearest = float(np.median(np.sort(d2)[:300]))  # below the typical nearest Euclidean distance
    with pytest.warns(UserWarning, match="nearest-neighbour"):
        warn_bandwidths(X, [nk.LaplacianL1(0.1 * nearest)], "here")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warn_bandwidths(X, [nk.LaplacianL1(nk.median_distance(X, metric="l1"))], "here")
