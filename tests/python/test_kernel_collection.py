"""Kernel collections: the bandwidth grids against MMD-FUSE's rule computed with scipy,
validation, and the rows read to set the grid."""

import numpy as np
import pytest
from scipy.spatial.distance import pdist

import nystrom_kme as nk
from nystrom_kme.kernel_collection import KernelCollection, bandwidth_grid, pairwise_distances


def fuse_grid(distances, n, geometric=False):
    """MMD-FUSE's compute_bandwidths: zeros replaced by the median, order statistics at
    floor(0.05 len) and floor(0.95 len), halved and doubled."""
    d = np.sort(np.where(distances == 0, np.median(distances), distances))
    lo, hi = d[int(np.floor(len(d) * 0.05))] / 2, d[int(np.floor(len(d) * 0.95))] * 2
    return np.geomspace(lo, hi, n) if geometric else np.linspace(lo, hi, n)


def test_pairwise_distances_match_scipy_also_at_extreme_scales():
    rng = np.random.default_rng(0)
    for scale in (1.0, 1e-200, 1e200):
        X = rng.normal(size=(40, 3)) * scale
        # scipy squares the raw differences (they underflow at 1e-200): compare in units of scale
        np.testing.assert_allclose(pairwise_distances(X) / scale, pdist(X / scale), rtol=1e-14)
    assert pairwise_distances(np.ones((1, 2))).size == 0


@pytest.mark.parametrize("grid", ["fuse", "geometric"])
def test_resolved_bandwidths_follow_the_fuse_rule_on_all_pairs(grid):
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(300, 2))
    Z[5] = Z[6]  # a duplicate: its zero distance counts as the median
    kc = KernelCollection(("gaussian", "laplacian"), n_bandwidths=7, grid=grid).resolve(Z, random_state=0)
    expected = fuse_grid(pdist(Z), 7, geometric=grid == "geometric")
    assert [type(k).__name__ for k in kc] == ["Gaussian"] * 7 + ["Laplacian"] * 7
    np.testing.assert_allclose([k.bandwidth for k in kc], np.r_[expected, expected], rtol=1e-12)


def test_the_grid_is_set_from_a_random_subset_and_only_those_rows_are_read():
    rng = np.random.default_rng(2)
    Z = rng.normal(size=(5000, 2))
    taken = []

    class Recording(nk.sources.ArraySource):
        def take(self, indices):
            taken.append(np.asarray(indices))
            return super().take(indices)

    kc = KernelCollection(n_bandwidths=3, subset=400).resolve(Recording(Z), random_state=3)
    assert len(taken) == 1 and taken[0].size == 400 and np.unique(taken[0]).size == 400
    expected = fuse_grid(pdist(Z[taken[0]]), 3)
    np.testing.assert_allclose([k.bandwidth for k in kc][:3], expected, rtol=1e-12)


def test_l1_families_take_their_grid_from_l1_distances_of_the_same_rows():
    """Issue 42: a LaplacianL1 family's grid is FUSE's rule on the l1 (cityblock) distances,
    its kernel MMD-FUSE's exp(-sqrt(2) ||x - y||_1 / s) (its code's kernel_matrix), the
    Euclidean families' grid on the Euclidean distances, both of the one subset of rows
    read; the median Gaussian from the Euclidean distances."""
    rng = np.random.default_rng(11)
    Z = rng.normal(size=(3000, 4))
    taken = []

    class Recording(nk.sources.ArraySource):
        def take(self, indices):
            taken.append(np.asarray(indices))
            return super().take(indices)

    kc = KernelCollection(("gaussian", "laplacian_l1"), n_bandwidths=3, subset=500)
    assert kc.metrics == ("euclidean", "l1")
    r = kc.resolve(Recording(Z), random_state=5, with_median=True)
    assert len(taken) == 1 and taken[0].size == 500
    rows = Z[taken[0]]
    assert [type(k).__name__ for k in r] == ["Gaussian"] * 3 + ["LaplacianL1"] * 3 + ["Gaussian"]
    np.testing.assert_allclose([k.bandwidth for k in r][:3], fuse_grid(pdist(rows), 3), rtol=1e-12)
    fuse_l1 = fuse_grid(pdist(rows, "cityblock"), 3)
    a, b = rows[:5], rows[5:9]
    l1 = np.abs(a[:, None] - b[None]).sum(-1)
    for k, s in zip(list(r)[3:6], fuse_l1):
        np.testing.assert_allclose(k(a, b), np.exp(-np.sqrt(2) * l1 / s), rtol=1e-12)
    assert r[6].bandwidth == pytest.approx(np.median(pdist(rows)), rel=1e-12)
    only_l1 = KernelCollection(("laplacian_l1",), n_bandwidths=2).resolve(Z[:200], random_state=0)
    np.testing.assert_allclose(
        [k.bandwidth * np.sqrt(2) for k in only_l1], fuse_grid(pdist(Z[:200], "cityblock"), 2), rtol=1e-12
    )


def test_with_distances_needs_each_metric_of_the_grid():
    d = np.arange(1.0, 101.0)
    kc = KernelCollection(("gaussian", "laplacian_l1"), n_bandwidths=2)
    with pytest.raises(ValueError, match="l1 distances of the families \\['laplacian_l1'\\]"):
        kc.with_distances(d)
    r = kc.with_distances({"euclidean": d, "l1": 3 * d})
    np.testing.assert_allclose([k.bandwidth for k in r], [3.0, 192.0, 9.0 / np.sqrt(2), 576.0 / np.sqrt(2)])
    assert KernelCollection(("gaussian",)).with_distances(d) == KernelCollection(("gaussian",)).with_distances(
        {"euclidean": d}
    )
    assert KernelCollection([nk.LaplacianL1(1.0)]).metrics == ()
    assert len(kc.distances(np.eye(5), metric="l1")) == 10
    with pytest.raises(ValueError, match="metric must be one of"):
        kc.distances(np.eye(5), metric="cosine")


def test_given_kernels_are_kept_and_mixed_with_grids():
    Z = np.random.default_rng(4).normal(size=(100, 2))
    kc = KernelCollection([nk.Gaussian(0.5), "laplacian", nk.Matern(nu=2.5)], n_bandwidths=2)
    assert not kc.is_resolved
    with pytest.raises(ValueError, match="resolve"):
        len(kc)
    r = kc.resolve(Z, random_state=0)
    assert r.kernels[0] == nk.Gaussian(0.5)
    assert [k.family for k in r] == ["Gaussian", "Laplacian", "Laplacian", "Matern(nu=2.5)", "Matern(nu=2.5)"]
    assert r.resolve(Z) is r
    assert "Matern(nu=2.5) x 2" in r.summary()


def test_one_bandwidth_sits_at_the_geometric_middle():
    d = np.arange(1.0, 101.0)
    kc = KernelCollection(("gaussian",), n_bandwidths=1).with_distances(d)
    lo, hi = bandwidth_grid(d, 2)
    assert kc[0].bandwidth == pytest.approx(np.sqrt(lo * hi))


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"kernels": ()}, "at least one"),
        ({"kernels": ("linear",)}, "radial"),
        ({"kernels": (nk.Polynomial(),)}, "radial"),
        ({"kernels": ("nope",)}, "kernel must be"),
        ({"grid": "log"}, "grid"),
        ({"n_bandwidths": 0}, "n_bandwidths"),
        ({"subset": 1}, "subset"),
    ],
)
def test_bad_collections_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        KernelCollection(**kwargs)


def test_a_collection_of_repeated_rows_falls_back_to_the_distinct_distances():
    one = KernelCollection(n_bandwidths=3).resolve(np.ones((50, 2)), random_state=0)
    assert [float(k.bandwidth) for k in one] == [0.5, 1.25, 2.0] * 2  # one point: the grid of 1
    Z = np.ones((50, 1))
    Z[:5, 0] = np.arange(5.0)  # 45 equal rows, 5 distinct: most distances are 0
    kc = KernelCollection(n_bandwidths=2).resolve(Z, random_state=0)
    d = pairwise_distances(Z)
    assert [float(k.bandwidth) for k in kc][:2] == bandwidth_grid(d[d > 0], 2).tolist()


def test_equal_collections_hash_alike():
    """A resolved collection is its kernels: equal whatever grid built it, so the same hash."""
    a = KernelCollection([nk.Gaussian(1.0), nk.Laplacian(2.0)])
    b = KernelCollection([nk.Gaussian(1.0), nk.Laplacian(2.0)], n_bandwidths=3)
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    c, d = KernelCollection(n_bandwidths=4), KernelCollection(n_bandwidths=5)
    assert c != d
    assert hash(KernelCollection(n_bandwidths=4)) == hash(c)
