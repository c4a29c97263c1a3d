"""Build configuration (nystrom_kme.config): every instruction-set level the CPU runs against dense numpy, the
documented agreement between levels, and the configuration a bug report needs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import nystrom_kme as nk
import pytest

LEVELS = nk.show_config(mode="dicts")["simd"]["available"]


@pytest.fixture
def restore_level():
    yield
    nk.set_simd_level("auto")


def dense_gaussian(A, B, sigma):
    d2 = ((A[:, None, :].astype(np.float64) - B[None, :, :]) ** 2).sum(-1)
    return np.exp(-d2 / (2 * sigma**2))


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-13), (np.float32, 2e-6)])
def test_every_level_matches_dense_numpy(level, dtype, tol, restore_level):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(1500, 7)).astype(dtype)
    Y = rng.normal(size=(700, 7)).astype(dtype) + 0.3
    nk.set_simd_level(level)
    assert nk.simd_level() == level
    kme = nk.NystromKME(nk.Gaussian(1.5), n_landmarks=40, random_state=0).fit(X)
    L = kme.landmarks_
    # mu_hat(y) = sum_j alpha_j k(l_j, y), against the dense kernel matrix in float64
    expected = dense_gaussian(Y, L, 1.5) @ kme.weights_
    np.testing.assert_allclose(kme(Y), expected, rtol=tol * 10, atol=tol * np.abs(expected).max())
    exact = nk.mmd2_exact(X[:400], Y[:300], kernel=nk.Gaussian(1.5), unbiased=True)
    Kxx, Kyy, Kxy = (dense_gaussian(a, b, 1.5) for a, b in ((X[:400], X[:400]), (Y[:300], Y[:300]), (X[:400], Y[:300])))
    n, m = 400, 300
    reference = ((Kxx.sum() - np.trace(Kxx)) / (n * (n - 1)) + (Kyy.sum() - np.trace(Kyy)) / (m * (m - 1))
                 - 2 * Kxy.mean())
    assert exact == pytest.approx(reference, rel=1e-8 if dtype == np.float64 else 1e-4, abs=1e-12)


@pytest.mark.skipif(len(LEVELS) < 2, reason="this CPU runs one level only")
def test_levels_agree_to_documented_bound(restore_level):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(20_000, 12)) * 2.0 + 5.0
    results = {}
    for level in LEVELS:
        nk.set_simd_level(level)
        kme = nk.NystromKME(nk.Laplacian(3.0), n_landmarks=200, random_state=1).fit(X)
        results[level] = (kme.weights_, kme(X[:500]))
    base_w, base_eval = results[LEVELS[0]]
    for level in LEVELS[1:]:
        w, ev = results[level]
        # evaluations are sums of non-negative terms: 1e-13 relative (ARCHITECTURE.md)
        np.testing.assert_allclose(ev, base_eval, rtol=1e-12)
        np.testing.assert_allclose(w, base_w, rtol=1e-8, atol=1e-10 * np.abs(base_w).max())


def test_set_simd_level_rejects_bad_levels():
    with pytest.raises(ValueError, match="unknown SIMD level 'sse9'"):
        nk.set_simd_level("sse9")
    missing = {"neon"} if LEVELS[0] == "baseline" else {"avx512"}
    for name in missing:
        with pytest.raises(ValueError, match="not compiled|cannot run"):
            nk.set_simd_level(name)
    with pytest.raises(TypeError, match="level must be a string"):
        nk.set_simd_level(2)


def run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=120)


@pytest.mark.parametrize("level", LEVELS)
def test_environment_variable_forces_a_level(level):
    out = run_python("import nystrom_kme as nk; print(nk.simd_level())", NYSTROM_KME_SIMD=level)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == level


def test_environment_variable_with_a_bad_level_fails_at_import():
    out = run_python("import nystrom_kme", NYSTROM_KME_SIMD="sse9")
    assert out.returncode != 0
    assert "NYSTROM_KME_SIMD=sse9" in out.stderr and "unknown SIMD level" in out.stderr
    other = "neon" if LEVELS[0] == "baseline" else "avx512"
    out = run_python("import nystrom_kme", NYSTROM_KME_SIMD=other)
    assert out.returncode != 0
    assert f"NYSTROM_KME_SIMD={other}" in out.stderr


def test_show_config_reports_level_openmp_and_version(capsys):
    cfg = nk.show_config(mode="dicts")
    assert cfg["version"] == nk.__version__
    assert cfg["simd"]["level"] == nk.simd_level() == cfg["simd"]["available"][-1]
    assert set(cfg["simd"]["available"]) <= set(cfg["simd"]["compiled"])
    assert cfg["openmp"]["max_threads"] >= 1
    json.dumps(cfg)  # plain data, ready for a bug report
    assert nk.show_config() is None
    out = capsys.readouterr().out
    assert f"nystrom-kme {nk.__version__}" in out
    assert f"SIMD level      {nk.simd_level()}" in out
    assert "OpenMP" in out
    with pytest.raises(ValueError, match="mode must be"):
        nk.show_config(mode="json")
