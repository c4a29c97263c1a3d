"""Columns in different units (nystrom_kme._scaling, issue 37): standardize= gives the
decisions of the standardised table, and without it a warning names the column that
drowns the rest; against scikit-learn's bundled tables and numpy's own statistics."""

from __future__ import annotations

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
