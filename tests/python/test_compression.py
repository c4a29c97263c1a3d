"""Distribution compression (nk.compress) against dense numpy / scipy references."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import nystrom_kme as nk
from references import dense_kernel

scipy_optimize = pytest.importorskip("scipy.optimize")


def mixture(n, seed=0, d=2):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(4, d))
    return centres[rng.integers(0, 4, size=n)] + rng.normal(size=(n, d))


def dense_mmd(X, P, w, sigma, a=None):
    a = np.full(len(X), 1 / len(X)) if a is None else a / a.sum()
    v = (
        w @ dense_kernel("gaussian", P, P, sigma) @ w
        - 2 * w @ dense_kernel("gaussian", P, X, sigma) @ a
        + a @ dense_kernel("gaussian", X, X, sigma) @ a
    )
    return np.sqrt(max(v, 0.0))


def qp_reference(K, s):
    """min w^T K w - 2 w^T s on the simplex by SLSQP (dense, independent of the core)."""
    m = len(s)
    res = scipy_optimize.minimize(
        lambda w: w @ K @ w - 2 * w @ s,
        np.full(m, 1 / m),
        jac=lambda w: 2 * (K @ w - s),
        method="SLSQP",
        bounds=[(0, None)] * m,
        constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1, "jac": lambda w: np.ones(m)}],
        options={"ftol": 1e-15, "maxiter": 1000},
    )
    return res.x, res.fun


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("sampler", ["uniform", "rpcholesky", "herding"])
def test_simplex_weights_feasible_kkt_and_optimal(seed, sampler):
    X = mixture(300, seed)
    res = nk.compress(X, 25, sampler=sampler, weights="simplex", random_state=seed)
    w, P, sigma = res.weights, res.points, res.kernel.bandwidth
    assert w.min() >= 0.0
    assert w.sum() == pytest.approx(1.0, abs=1e-14)
    K = dense_kernel("gaussian", P, P, sigma)
    s = dense_kernel("gaussian", P, X, sigma).mean(axis=1)
    g = K @ w - s
    nu = w @ g
    assert g.min() >= nu - 1e-8  # no direction improves (dual feasibility)
    assert np.abs(g[w > 0] - nu).max() < 1e-8  # complementary slackness
    w_ref, f_ref = qp_reference(K, s)
    f = w @ K @ w - 2 * w @ s
    assert f <= f_ref + 1e-10  # at least as good as SLSQP
    assert f == pytest.approx(f_ref, abs=1e-7)


def test_core_simplex_weights_on_duplicates_and_projection():
    K = np.eye(3)
    out = nk._core.simplex_weights(K, np.array([0.9, 0.5, -1.0]))
    np.testing.assert_allclose(out["weights"], [0.7, 0.3, 0.0], atol=1e-14)
    assert out["converged"] and out["support_size"] == 2
    X = mixture(200, 3)
    X[:50] = X[0]  # many duplicate rows
    res = nk.compress(X, 30, sampler="uniform", weights="simplex", random_state=0)
    assert res.weights.min() >= 0 and res.weights.sum() == pytest.approx(1.0)
    signed = nk.compress(X, 30, sampler="uniform", weights="signed", random_state=0)
    assert res.mmd >= signed.mmd - 1e-12  # the constrained optimum is worse or equal


@pytest.mark.parametrize("weights", ["signed", "simplex", "uniform"])
def test_reported_mmd_matches_dense(weights):
    X = mixture(400, 5)
    res = nk.compress(X, 20, weights=weights, random_state=1)
    ref = dense_mmd(X, res.points, res.weights, res.kernel.bandwidth)
    assert res.mmd == pytest.approx(ref, rel=1e-9, abs=1e-12)
    assert nk.compression_mmd(X, res.points, res.weights, kernel=res.kernel) == pytest.approx(ref, rel=1e-9)
    assert (X[res.indices] == res.points).all()


def test_sample_weight_and_signed_equals_nystrom():
    X = mixture(300, 6)
    a = np.random.default_rng(0).uniform(0, 2, size=300)
    a[:20] = 0.0
    res = nk.compress(X, 20, weights="simplex", sample_weight=a, random_state=0)
    ref = dense_mmd(X, res.points, res.weights, res.kernel.bandwidth, a)
    assert res.mmd == pytest.approx(ref, rel=1e-9)
    signed = nk.compress(X, 20, weights="signed", sampler="rpcholesky", random_state=0)
    kme = nk.NystromKME(n_landmarks=20, sampler="rpcholesky", random_state=0).fit(X)
    np.testing.assert_array_equal(signed.weights, kme.weights_)


def test_ridge_shrinks_weights():
    X = mixture(500, 7)
    plain = nk.compress(X, 40, weights="signed", random_state=0)
    ridged = nk.compress(X, 40, weights="signed", ridge=1e-3, random_state=0)
    K = dense_kernel("gaussian", ridged.points, ridged.points, ridged.kernel.bandwidth)
    s = dense_kernel("gaussian", ridged.points, X, ridged.kernel.bandwidth).mean(axis=1)
    np.testing.assert_allclose(ridged.weights, np.linalg.solve(K + 1e-3 * np.eye(40), s), rtol=1e-8)
    assert np.abs(ridged.weights).max() <= np.abs(plain.weights).max()
    assert ridged.mmd >= plain.mmd - 1e-12


@pytest.mark.parametrize("weights", ["signed", "simplex", "uniform"])
def test_bit_identical_across_thread_counts(weights):
    X = mixture(3000, 8)
    runs = [nk.compress(X, 40, weights=weights, random_state=3, n_threads=t) for t in (1, 2, 3)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r.weights, runs[0].weights)
        np.testing.assert_array_equal(r.indices, runs[0].indices)
        assert r.mmd == runs[0].mmd


def test_repr_and_save(tmp_path):
    X = mixture(200, 9)
    res = nk.compress(X, 10, random_state=0)
    text = repr(res)
    assert "rpcholesky/simplex" in text and "n_points=10" in text
    res.save(tmp_path / "c.npz")
    with np.load(tmp_path / "c.npz") as f:
        np.testing.assert_array_equal(f["points"], res.points)
    back = nk.load(tmp_path / "c.npz")
    assert isinstance(back, nk.CompressionResult) and back.mmd == res.mmd and back.method == res.method
    np.testing.assert_array_equal(back.weights, res.weights)
    np.testing.assert_array_equal(back.indices, res.indices)
    assert back.kernel == res.kernel
    assert nk.compress(X, 10, random_state=0, compute_mmd=False).mmd is None


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"n_points": 0}, "n_points"),
        ({"n_points": 1000}, "n_points"),
        ({"weights": "positive"}, "weights"),
        ({"ridge": -1.0}, "ridge"),
        ({"ridge": float("nan")}, "ridge"),
        ({"ridge": 0.1, "weights": "simplex"}, "ridge"),
        ({"n_threads": 0}, "n_threads"),
        ({"sample_weight": np.ones(5)}, "sample_weight"),
        ({"sampler": "nope"}, "sampler"),
        ({"compute_mmd": "yes"}, "compute_mmd"),
    ],
)
def test_errors_name_the_argument(kwargs, name):
    X = mixture(100, 0)
    args = {"n_points": 10, **kwargs}
    with pytest.raises(ValueError, match=name):
        nk.compress(X, **args)


def test_core_errors():
    with pytest.raises(ValueError, match="symmetric"):
        nk._core.simplex_weights(np.array([[1.0, 0.5], [0.0, 1.0]]), np.zeros(2))
    with pytest.raises(ValueError, match="tolerance"):
        nk._core.simplex_weights(np.eye(2), np.zeros(2), tolerance=0.0)
    with pytest.raises(TypeError, match="simplex_weights"):
        nk._core.simplex_weights("K", np.zeros(2))


def test_kernel_thinning_sampler():
    pytest.importorskip("goodpoints")
    X = mixture(1100, 10)
    res = nk.compress(X, 32, sampler="kernel-thinning", weights="simplex", random_state=0)
    assert res.n_points == 32 and (X[res.indices] == res.points).all()  # Compress++ may repeat a row
    assert res.weights.min() >= 0 and res.weights.sum() == pytest.approx(1.0)
    again = nk.compress(X, 32, sampler="kernel-thinning", weights="simplex", random_state=0)
    np.testing.assert_array_equal(again.indices, res.indices)
    with pytest.raises(ValueError, match="power of two"):
        nk.compress(X, 24, sampler="kernel-thinning")
    with pytest.raises(ValueError, match="power of two"):
        nk.compress(X, 64, sampler="kernel-thinning")  # 64^2 > n
    with pytest.raises(ValueError, match="Gaussian"):
        nk.compress(X, 32, sampler="kernel-thinning", kernel=nk.Laplacian(1.0))


def test_kernel_thinning_without_goodpoints_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "goodpoints", None)
    with pytest.raises(ImportError, match=r"nystrom-kme\[thinning\]"):
        nk.compress(mixture(300, 0), 16, sampler="kernel-thinning")


def test_subnormal_weights_compress_like_no_weights():
    """Uniform weights 5e-324 are no weights: same points, weights and MMD (the sums
    used to underflow: MMD 0.27 instead of 0.038 on this kind of sample)."""
    X = mixture(3000, 11)
    plain = nk.compress(X, 20, random_state=0)  # rpcholesky ignores weights
    tiny = nk.compress(X, 20, random_state=0, sample_weight=np.full(len(X), 5e-324))
    np.testing.assert_array_equal(tiny.indices, plain.indices)
    np.testing.assert_allclose(tiny.weights, plain.weights, rtol=1e-10, atol=1e-13)
    assert tiny.mmd == pytest.approx(plain.mmd, rel=1e-10)
    # mixed scales against the dense reference
    rng = np.random.default_rng(3)
    w = np.where(rng.random(len(X)) < 0.5, 1e-300, 1.0)
    res = nk.compress(X[:1500], 15, random_state=0, sample_weight=w[:1500])
    ref = dense_mmd(X[:1500], res.points, res.weights, res.kernel.bandwidth, a=w[:1500])
    assert res.mmd == pytest.approx(ref, rel=1e-9)


def test_exact_mmd_only_where_it_costs_about_the_compression(monkeypatch):
    """compute_mmd='auto' (the default): the O(n^2) self term only up to
    EXACT_MMD_MAX_ROWS rows of positive weight, an estimate above; the calls are recorded."""
    from nystrom_kme import compression

    assert compression.EXACT_MMD_MAX_ROWS == 20_000
    calls = []
    real = compression._self_term

    def recording(X, a, core, n_threads):
        calls.append(X.shape[0] if a is None else int(np.count_nonzero(a)))  # rows it sums over
        return real(X, a, core, n_threads)

    monkeypatch.setattr(compression, "_self_term", recording)
    monkeypatch.setattr(compression, "EXACT_MMD_MAX_ROWS", 300)
    X = mixture(400, 12)
    big = nk.compress(X, 10, random_state=0)
    assert big.mmd_kind == "estimate" and calls == []  # never the O(n^2) term above the threshold
    low, high = big.mmd_interval
    assert 0 <= low <= big.mmd <= high and "(estimate, 95% interval [" in repr(big)
    small = nk.compress(X[:300], 10, random_state=0)
    assert small.mmd_kind == "exact" and calls == [300]
    assert small.mmd == pytest.approx(dense_mmd(X[:300], small.points, small.weights, small.kernel.bandwidth), rel=1e-9)
    forced = nk.compress(X, 10, random_state=0, compute_mmd=True)
    assert forced.mmd_kind == "exact" and calls == [300, 400]
    assert forced.mmd == pytest.approx(dense_mmd(X, forced.points, forced.weights, forced.kernel.bandwidth), rel=1e-9)
    assert nk.compress(X[:50], 10, random_state=0, compute_mmd=False).mmd_kind is None and len(calls) == 2
    # rows of zero weight cost nothing: 250 positive weights among 400 rows count as 250
    w = np.zeros(400)
    w[:250] = 1.0
    weighted = nk.compress(X, 10, random_state=0, sample_weight=w)
    assert weighted.mmd_kind == "exact" and calls[-1] == 250
    # whether the MMD is computed changes nothing else
    np.testing.assert_array_equal(big.weights, forced.weights)


def test_estimated_mmd_covers_the_exact_one_at_its_level():
    """Above EXACT_MMD_MAX_ROWS the MMD is estimated from MMD_ESTIMATE_ROWS rows drawn
    from P_n, through the residual of the projection onto the points (module docstring).
    Against the exact MMD (dense reference) over 20 seeds of the draw: its 95% interval
    covers it at least 16 times (Binomial(20, 0.95) gives <= 15 with probability 0.003),
    and the estimate is within 10% of it every time (measured: 1-4%, the interval 5-6%
    wide). Weighted samples draw rows in proportion to their weights."""
    X = mixture(3000, 5, d=3)
    w = np.random.default_rng(1).uniform(0.2, 1.0, size=3000)
    for a in (None, w):
        first = nk.compress(X, 32, random_state=0, sample_weight=a, compute_mmd=True)
        exact = dense_mmd(X, first.points, first.weights, first.kernel.bandwidth, a)
        assert first.mmd == pytest.approx(exact, rel=1e-9)
        covered = 0
        for seed in range(20):  # the same points (given), another draw of the estimate's rows
            kw = dict(kernel=first.kernel, sampler=first.indices, sample_weight=a, compute_mmd="estimate")
            res = nk.compress(X, 32, random_state=seed, **kw)
            assert res.mmd_kind == "estimate" and abs(res.mmd - exact) < 0.1 * exact, (seed, res.mmd, exact)
            low, high = res.mmd_interval
            covered += low <= exact <= high
        assert covered >= 16, (a is None, covered)


def test_samplers_that_read_rows_choose_among_a_subsample_and_weigh_every_row(monkeypatch, tmp_path):
    """Beyond SAMPLER_MAX_BYTES of an n x m factor the sampler sees a uniform subsample of
    sampler_rows(n, m) rows; the weights are still the ones of all n rows: the same points
    given as indices give them again, and the reported MMD is theirs to every row."""
    from nystrom_kme import compression

    X = mixture(5000, 7)
    monkeypatch.setattr(compression, "SAMPLER_MAX_BYTES", 8 * 40 * 1000)  # 1000 rows at m = 40
    assert compression.sampler_rows(5000, 40) == 1000
    res = nk.compress(X, 40, random_state=0, compute_mmd=True)
    assert len(set(res.indices.tolist())) == 40 and res.indices.max() < 5000
    np.testing.assert_array_equal(res.points, X[res.indices])
    again = nk.compress(X, 40, kernel=res.kernel, sampler=res.indices, random_state=0, compute_mmd=True)
    np.testing.assert_allclose(again.weights, res.weights, rtol=1e-12, atol=1e-15)
    assert res.mmd == pytest.approx(dense_mmd(X, res.points, res.weights, res.kernel.bandwidth), rel=1e-9)
    # a streamed source is read, never held: the same compression from a memmap and from chunks
    np.save(tmp_path / "x.npy", X)
    mapped = nk.compress(np.load(tmp_path / "x.npy", mmap_mode="r"), 40, random_state=0, compute_mmd=True)
    np.testing.assert_array_equal(mapped.indices, res.indices)
    assert mapped.mmd == pytest.approx(res.mmd, rel=1e-12)


def test_estimates_round_trip_and_exact_results_save_as_before(tmp_path):
    X = mixture(600, 3)
    est = nk.compress(X, 12, random_state=0, compute_mmd="estimate")
    est.save(tmp_path / "est.npz")
    back = nk.load(tmp_path / "est.npz")
    assert back.mmd == est.mmd and back.mmd_interval == est.mmd_interval and back.mmd_kind == "estimate"
    exact = nk.compress(X, 12, random_state=0)
    exact.save(tmp_path / "exact.npz")
    assert b"mmd_interval" not in (tmp_path / "exact.npz").read_bytes()
    assert nk.load(tmp_path / "exact.npz").mmd_kind == "exact"
    with pytest.raises(ValueError, match="compute_mmd must be 'auto', 'estimate', True or False"):
        nk.compress(X, 12, compute_mmd="sometimes")


# The peak from VmHWM (this process image's high-water mark): ru_maxrss keeps the forked
# parent's (pytest's) across exec.
_PEAK = """
import re, sys, numpy as np, nystrom_kme as nk
from nystrom_kme import compression
compression.SAMPLER_MAX_BYTES = int(sys.argv[2])
res = nk.compress(np.load(sys.argv[1], mmap_mode="r"), 128, random_state=0)
with open("/proc/self/status") as f:
    print(res.mmd_kind, int(re.search(r"VmHWM:\\s+(\\d+) kB", f.read()).group(1)) // 1024)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="VmHWM in /proc/self/status is Linux's")
def test_compress_holds_the_factor_budget_not_n_x_m(tmp_path):
    """3e5 rows of a memmap to 128 points: with a 16 MiB budget for the sampler's factor
    the process peaks near its import (~50 MiB here; measured 71 MiB in all), where the
    whole n x m factor alone is 293 MiB (362 MiB peak measured without the budget)."""
    np.save(tmp_path / "x.npy", mixture(300_000, 11))
    out = subprocess.run(
        [sys.executable, "-c", _PEAK, str(tmp_path / "x.npy"), str(16 << 20)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout.split()
    assert out[0] == "estimate" and int(out[1]) < 150, out


def test_standardize_counts_columns_alike_and_names_a_dominant_column(tmp_path, rng):
    """compress(standardize=...) fits in the scaled units and returns the data's own rows,
    the scaling saved with them; without it a column in other units gets a warning naming
    it (issue 43 item 8: compress had neither)."""
    X = rng.normal(size=(2000, 3))
    X[:, 2] *= 1000.0
    with pytest.warns(UserWarning, match="column 2 carries"):
        nk.compress(X, 16, random_state=0)
    res = nk.compress(X, 16, random_state=0, standardize=True)
    np.testing.assert_array_equal(res.points, X[res.indices])
    Z = (X - X.mean(0)) / X.std(0, ddof=1)  # the same compression of the columns scaled by hand
    ref = nk.compress(Z, 16, random_state=0)
    np.testing.assert_array_equal(res.indices, ref.indices)
    np.testing.assert_allclose(res.weights, ref.weights, rtol=1e-9, atol=1e-12)
    assert res.mmd == pytest.approx(ref.mmd, rel=1e-9)
    path = tmp_path / "c.npz"
    res.save(path)
    back = nk.load(path)
    np.testing.assert_array_equal(back.scaling.scale, res.scaling.scale)
    assert back.summary()["standardize"] == "standard"
    with pytest.raises(ValueError, match="standardize"):
        nk.compress(X, 16, standardize="yes")
