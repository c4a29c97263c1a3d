"""EmpiricalKME and RKHS inner products, norms and distances against dense numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest

import nystrom_kme as nk
from references import dense_kernel


def rkhs_norm(K: np.ndarray, v: np.ndarray) -> float:
    return math.sqrt(max(float(v @ K @ v), 0.0))


def test_evaluation_and_inner_products_match_dense(rng):
    X = rng.normal(size=(1500, 3))
    Y = rng.normal(size=(900, 3)) + 0.5
    k = nk.Matern(1.3, nu=2.5)
    nys = nk.NystromKME(k, n_landmarks=80, random_state=2).fit(X)
    emp_x = nk.EmpiricalKME(k).fit(X)
    emp_y = nk.EmpiricalKME(k).fit(Y)
    L, a = nys.landmarks_, nys.weights_
    Z = rng.normal(size=(77, 3))
    np.testing.assert_allclose(nys(Z), dense_kernel("matern52", Z, L, 1.3) @ a, rtol=1e-12)
    np.testing.assert_allclose(emp_x(Z), dense_kernel("matern52", Z, X, 1.3).mean(axis=1), rtol=1e-12)
    Kxy = dense_kernel("matern52", X, Y, 1.3)
    assert emp_x.inner(emp_y) == pytest.approx(Kxy.mean(), rel=1e-12)
    assert nys.inner(emp_y) == pytest.approx(a @ dense_kernel("matern52", L, Y, 1.3).mean(axis=1), rel=1e-12)
    mmd2 = dense_kernel("matern52", X, X, 1.3).mean() + dense_kernel("matern52", Y, Y, 1.3).mean() - 2 * Kxy.mean()
    assert emp_x.distance(emp_y) == pytest.approx(math.sqrt(mmd2), rel=1e-9)
    assert nk.rkhs_distance(nys, nys) == pytest.approx(0.0, abs=1e-6)
    assert nys.norm() == pytest.approx(rkhs_norm(dense_kernel("matern52", L, L, 1.3), a), rel=1e-12)
    # the Nystrom embedding is the projection of the empirical one: Pythagoras
    assert nys.norm() <= emp_x.norm()
    d2 = emp_x.distance(nys) ** 2
    assert d2 == pytest.approx(emp_x.norm() ** 2 - nys.norm() ** 2, rel=1e-6, abs=1e-12)


@pytest.mark.parametrize(
    ("X", "match"),
    [
        (np.array([[0.0, np.nan]]), "NaN"),
        (np.array([[np.inf, 0.0]]), "NaN or inf"),
        (np.ones(5), "2-D"),
        (np.ones((2, 2, 2)), "2-D"),
        (np.ones((0, 3)), "at least 1 row"),
        (np.ones((3, 0)), "feature"),
        ([["a", "b"]], "numeric"),
    ],
)
def test_bad_X_is_named(X, match):
    for est in (nk.NystromKME(nk.Gaussian(1.0), n_landmarks=1), nk.EmpiricalKME(nk.Gaussian(1.0))):
        with pytest.raises(ValueError, match=match):
            est.fit(X)


def test_unfitted_and_mismatched_use(rng):
    for est in (nk.NystromKME(), nk.EmpiricalKME()):
        with pytest.raises(nk.NotFittedError, match="not fitted"):
            est(np.ones((1, 2)))
    # like scikit-learn's NotFittedError: both a ValueError and an AttributeError
    assert issubclass(nk.NotFittedError, ValueError) and issubclass(nk.NotFittedError, AttributeError)
    a = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=5).fit(rng.normal(size=(50, 2)))
    b = nk.NystromKME(nk.Gaussian(2.0), n_landmarks=5).fit(rng.normal(size=(50, 2)))
    c = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=5).fit(rng.normal(size=(50, 3)))
    with pytest.raises(ValueError, match="different kernels"):
        a.inner(b)
    with pytest.raises(ValueError, match="R\\^2 and R\\^3"):
        a.inner(c)
    with pytest.raises(ValueError, match="features"):
        a(np.ones((4, 3)))
    with pytest.raises(ValueError, match="fitted embedding"):
        nk.inner_product(a, np.ones(3))  # type: ignore[arg-type]


def test_huge_and_tiny_weights_give_the_same_embedding(rng):
    X = rng.normal(size=(300, 2))
    w = rng.uniform(0.1, 1.0, 300)
    ref = nk.EmpiricalKME(nk.Gaussian(1.0)).fit(X, sample_weight=w)
    for scale in (1e307, 1e-300):  # the sum of 1e307-weights overflows float64
        got = nk.EmpiricalKME(nk.Gaussian(1.0)).fit(X, sample_weight=w * scale)
        np.testing.assert_allclose(got.weights_, ref.weights_, rtol=1e-14)
        assert got.norm() == pytest.approx(ref.norm(), rel=1e-13)


def test_refitting_while_other_threads_evaluate_is_safe(rng):
    """Each evaluation sees the old or the new embedding, never a mix (the fitted
    support, weights and kernel are published as one object at the end of fit)."""
    import threading
    import time

    A, B = rng.normal(size=(3000, 3)), rng.normal(size=(2000, 3)) * 2.0 + 1.0
    Y = rng.normal(size=(50, 3))
    est = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=40, random_state=0)
    refs = [est.fit(B)(Y), est.fit(A)(Y)]
    stop, bad, seen = threading.Event(), [], set()

    def reader():
        while not stop.is_set():
            got = est(Y)
            match = [i for i, r in enumerate(refs) if np.array_equal(got, r)]
            if not match:
                bad.append(got)
            seen.update(match)

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    # at least 40 refits, and on until the readers have seen both fits: on a loaded
    # machine they can miss one for 40 refits (CI saw only {1} once)
    i, deadline = 0, time.monotonic() + 60.0
    while (i < 40 or seen != {0, 1}) and time.monotonic() < deadline:
        est.fit(A if i % 2 else B)
        est.set_params(n_landmarks=40)
        i += 1
    stop.set()
    for t in threads:
        t.join()
    assert not bad and seen == {0, 1}


def test_empirical_embedding_with_subnormal_weights(rng):
    X = rng.normal(size=(400, 2))
    k = nk.Gaussian(1.0)
    tiny = nk.EmpiricalKME(k).fit(X, sample_weight=np.full(400, 5e-324))
    np.testing.assert_array_equal(tiny.weights_, np.full(400, 1 / 400))
    mixed = np.where(np.arange(400) % 2 == 0, 5e-324, 1.5e-323)  # ratio 1 : 3, subnormal
    got = nk.EmpiricalKME(k).fit(X, sample_weight=mixed)
    np.testing.assert_allclose(got.weights_, np.where(np.arange(400) % 2 == 0, 1.0, 3.0) / 800, rtol=1e-15)


# --------------------------------------------------------------------------- #
# evaluation over row sources, block by block
# --------------------------------------------------------------------------- #
def _contiguous(blocks, n):
    """The (start, values) pairs cover rows 0..n-1 in order."""
    starts = [start for start, _ in blocks]
    ends = [start + len(values) for start, values in blocks]
    return starts[0] == 0 and starts[1:] == ends[:-1] and ends[-1] == n


def test_evaluation_over_every_source_matches_its_blocks_and_dense(tmp_path, rng):
    X, Y = rng.normal(size=(800, 3)), rng.normal(size=(1000, 3))
    kme = nk.NystromKME(nk.Gaussian(0.9), n_landmarks=50, random_state=0).fit(X)
    ref = dense_kernel("gaussian", Y, kme.landmarks_, 0.9) @ kme.weights_
    blocks = [Y[i : i + 300] for i in range(0, 1000, 300)]
    for name, source in {"list": blocks, "generator": iter(blocks), "callable": lambda: iter(blocks)}.items():
        got = list(kme.evaluate_chunks(source))
        assert [start for start, _ in got] == [0, 300, 600, 900], name
        for start, values in got:  # each block is the in-memory evaluation of its rows
            assert values.dtype == np.float64
            np.testing.assert_array_equal(values, kme(Y[start : start + 300]), err_msg=name)
        np.testing.assert_allclose(np.concatenate([v for _, v in got]), ref, rtol=1e-12, err_msg=name)
    # a memmap is read in blocks of chunk_rows (rounded to the core's superblock: 16384 rows here)
    big = rng.normal(size=(40_000, 3))
    np.save(tmp_path / "big.npy", big)
    memmap = np.load(tmp_path / "big.npy", mmap_mode="r")
    got = list(kme.evaluate_chunks(memmap, chunk_rows=10_000))
    assert [start for start, _ in got] == [0, 16384, 32768]
    for start, values in got:
        np.testing.assert_array_equal(values, kme(big[start : start + len(values)]))
    whole = kme(memmap)  # __call__ streams a source too: here one default block (~16 MiB)
    np.testing.assert_array_equal(whole, kme(big))
    np.testing.assert_allclose(whole, dense_kernel("gaussian", big, kme.landmarks_, 0.9) @ kme.weights_, rtol=1e-12)
    # an in-memory array is one block: the same bits as __call__
    ((start, values),) = kme.evaluate_chunks(Y)
    assert start == 0 and np.array_equal(values, kme(Y))


def test_evaluation_over_dask_and_hdf5(tmp_path, rng):
    da = pytest.importorskip("dask.array")
    h5py = pytest.importorskip("h5py")
    X, Y = rng.normal(size=(500, 2)), rng.normal(size=(700, 2))
    emp = nk.EmpiricalKME(nk.Laplacian(1.2)).fit(X)
    ref = dense_kernel("laplacian", Y, X, 1.2).mean(axis=1)
    np.testing.assert_allclose(emp(da.from_array(Y, chunks=(200, 2))), ref, rtol=1e-12)
    with h5py.File(tmp_path / "y.h5", "w") as f:
        f["Y"] = Y
    with h5py.File(tmp_path / "y.h5", "r") as f:
        got = list(emp.evaluate_chunks(f["Y"]))
    assert _contiguous(got, 700)
    np.testing.assert_allclose(np.concatenate([v for _, v in got]), ref, rtol=1e-12)


def test_streamed_evaluation_takes_the_memory_of_a_block(rng):
    """400 blocks of 2000 rows (19 MB of data, 6.4 MB of values) evaluated one at a time:
    the peak is a few blocks, whatever the number of rows."""
    import tracemalloc

    kme = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=20, random_state=0).fit(rng.normal(size=(300, 3)))

    def chunks():
        gen = np.random.default_rng(1)
        for _ in range(400):
            yield gen.normal(size=(2000, 3))

    tracemalloc.start()
    try:
        total, n = 0.0, 0
        for _, values in kme.evaluate_chunks(chunks()):
            total += float(values.sum())
            n += values.size
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert n == 800_000 and math.isfinite(total)
    assert peak < 1 << 20, peak  # one block is 48 KB of data and 16 KB of values


def test_evaluation_checks_each_block_and_reads_the_embedding_once(tmp_path, rng):
    X = rng.normal(size=(400, 3))
    kme = nk.NystromKME(nk.Gaussian(1.0), n_landmarks=20, random_state=0).fit(X)
    np.save(tmp_path / "wide.npy", rng.normal(size=(10, 4)))
    with pytest.raises(ValueError, match="Y has 4 features but the embedding has 3"):
        kme.evaluate_chunks(np.load(tmp_path / "wide.npy", mmap_mode="r"))  # at the call
    blocks = kme.evaluate_chunks([np.ones((5, 4)), X[:5]])
    with pytest.raises(ValueError, match="Y has 4 features but the embedding has 3"):
        next(blocks)  # an iterable's width, when its first block is read
    blocks = kme.evaluate_chunks([X[:5], np.ones((5, 4))])
    assert len(next(blocks)[1]) == 5
    with pytest.raises(ValueError, match="a chunk of Y has 4 features, earlier ones 3"):
        next(blocks)  # a later block of another width
    with pytest.raises(ValueError, match="NaN"):
        list(kme.evaluate_chunks([X[:5], np.full((2, 3), np.nan)]))
    with pytest.raises(nk.NotFittedError):
        nk.EmpiricalKME().evaluate_chunks(X)
    # a refit while blocks are being evaluated does not change the remaining values
    before = kme(X[200:])
    blocks = kme.evaluate_chunks([X[:200], X[200:]])
    next(blocks)
    kme.fit(X + 5.0)
    np.testing.assert_array_equal(next(blocks)[1], before)
