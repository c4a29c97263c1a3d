"""Build configuration (nystrom_kme.config): every instruction-set level the CPU runs against dense numpy, the
documented agreement between levels, and the configuration a bug report needs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import nystrom_kme as nk

LEVELS = nk.show_config(mode="dicts")["simd"]["available"]


def dense_gaussian(A, B, sigma):
    d2 = ((A[:, None, :].astype(np.float64) - B[None, :, :]) ** 2).sum(-1)
    return np.exp(-d2 / (2 * sigma**2))


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("dtype, tol", [(np.float64, 1e-13), (np.float32, 2e-6)])
def test_every_level_matches_dense_numpy(level, dtype, tol):
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
    reference = (
        (Kxx.sum() - np.trace(Kxx)) / (n * (n - 1)) + (Kyy.sum() - np.trace(Kyy)) / (m * (m - 1)) - 2 * Kxy.mean()
    )
    assert exact == pytest.approx(reference, rel=1e-8 if dtype == np.float64 else 1e-4, abs=1e-12)


@pytest.mark.skipif(len(LEVELS) < 2, reason="this CPU runs one level only")
def test_levels_agree_to_documented_bound():
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
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env={**os.environ, **env}, timeout=120
    )


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
    # the best level, unless NYSTROM_KME_SIMD chose one for this run (CI runs every level)
    chosen = os.environ.get("NYSTROM_KME_SIMD") or cfg["simd"]["available"][-1]
    assert cfg["simd"]["level"] == nk.simd_level() == chosen
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


# --------------------------------------------------------------------------- threads


def openmp() -> dict:
    return nk.show_config(mode="dicts")["openmp"]


def test_show_config_reports_the_thread_counts(capsys):
    omp = openmp()
    assert 1 <= omp["default_threads"] <= omp["available_cpus"]
    if omp["enabled"]:
        assert omp["default_threads"] <= omp["max_threads"]
    if omp["cpu_quota"] is not None:
        assert omp["default_threads"] <= omp["cpu_quota"]
    nk.show_config()
    if omp["enabled"]:
        assert f"{omp['default_threads']} thread" in capsys.readouterr().out


def test_thread_counts_far_above_the_cpus_are_capped():
    # libgomp cannot start ~1200 threads and exits the process; the core caps explicit
    # counts at the CPUs available, and results do not depend on the count.
    rng = np.random.default_rng(5)
    X, Y = rng.normal(size=(3000, 4)), rng.normal(size=(500, 4)) + 0.2
    k = nk.Gaussian(1.2)
    one = nk.NystromKME(k, n_landmarks=60, random_state=0, n_threads=1).fit(X)
    many = nk.NystromKME(k, n_landmarks=60, random_state=0, n_threads=10**6).fit(X)
    np.testing.assert_array_equal(many.weights_, one.weights_)
    np.testing.assert_array_equal(many(Y), one(Y))
    assert nk.mmd2_exact(X, Y, kernel=k, n_threads=10**6) == nk.mmd2_exact(X, Y, kernel=k, n_threads=1)
    np.testing.assert_array_equal(k(Y[:50], X[:70], n_threads=2**31 - 1), k(Y[:50], X[:70], n_threads=1))


@pytest.mark.parametrize("bad", [2**31, 2**40])
def test_thread_counts_beyond_an_int_are_a_clear_error(bad):
    X = np.random.default_rng(6).normal(size=(200, 3))
    with pytest.raises(ValueError, match="n_threads must be at most 2147483647"):
        nk.NystromKME(nk.Gaussian(1.0), n_landmarks=10, n_threads=bad).fit(X)
    with pytest.raises(ValueError, match="n_threads"):
        nk.mmd2_exact(X, X, kernel=nk.Gaussian(1.0), n_threads=bad)


def test_threadpoolctl_limits_the_core_threads():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    omp = openmp()
    if not omp["enabled"]:
        pytest.skip("built without OpenMP")
    libs = threadpoolctl.threadpool_info()
    assert any(lib["user_api"] == "openmp" for lib in libs), libs
    before = omp["default_threads"]
    for kwargs in ({"limits": 1}, {"limits": 1, "user_api": "openmp"}):
        with threadpoolctl.threadpool_limits(**kwargs):
            # what a call with n_threads=None runs with, read from the core
            assert openmp()["default_threads"] == 1
            assert openmp()["max_threads"] == 1
            X = np.random.default_rng(7).normal(size=(2000, 3))
            nk.NystromKME(nk.Gaussian(1.0), n_landmarks=20, random_state=0).fit(X)
        assert openmp()["default_threads"] == before


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity on this platform")
def test_default_threads_follow_the_cpu_affinity():
    cpu = min(os.sched_getaffinity(0))
    code = (
        "import os, json, nystrom_kme as nk\n"
        "before = nk.show_config('dicts')['openmp']\n"
        f"os.sched_setaffinity(0, {{{cpu}}})\n"
        "after = nk.show_config('dicts')['openmp']\n"
        "print(json.dumps([before, after]))"
    )
    out = run_python(code)
    assert out.returncode == 0, out.stderr
    before, after = json.loads(out.stdout)
    assert before["available_cpus"] == len(os.sched_getaffinity(0))
    assert after["available_cpus"] == 1
    assert after["default_threads"] == 1
    # started on one CPU (as `taskset -c 0` does): OpenMP's own default is one thread too
    out = run_python(
        "import os, json\n"
        f"os.sched_setaffinity(0, {{{cpu}}})\n"
        "import nystrom_kme as nk\n"
        "print(json.dumps(nk.show_config('dicts')['openmp']))"
    )
    assert out.returncode == 0, out.stderr
    omp = json.loads(out.stdout)
    assert omp["default_threads"] == 1
    if "OMP_NUM_THREADS" not in os.environ:
        assert omp["max_threads"] == 1


WAIT_CODE = """
import json, os
import numpy
maps = "/proc/self/maps"
# an OpenMP runtime that numpy's BLAS loaded first would be shared with the package's
loaded_before = os.path.exists(maps) and "libgomp" in open(maps).read()
import nystrom_kme as nk
print(json.dumps([loaded_before, os.environ.get("OMP_WAIT_POLICY"), nk.show_config("dicts")["openmp"]]))
"""


def libgomp_spin_count(stderr: str) -> str | None:
    """GOMP_SPINCOUNT as libgomp's OMP_DISPLAY_ENV=VERBOSE printed it (0: passive)."""
    for line in stderr.splitlines():
        if line.strip().startswith("GOMP_SPINCOUNT"):
            return line.split("=", 1)[1].strip().strip("'")
    return None


def test_openmp_waits_passively_by_default():
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    out = subprocess.run(
        [sys.executable, "-c", WAIT_CODE],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "OMP_DISPLAY_ENV": "VERBOSE"},
    )
    assert out.returncode == 0, out.stderr
    loaded_before, seen, omp = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen is None  # the user's environment is left as it was (child processes, other libraries)
    assert omp["wait_policy"] == "PASSIVE"
    if omp["runtime"].startswith("libgomp") and not loaded_before:
        # the package's libgomp, the only one loaded, printed its settings: it waits passively
        assert libgomp_spin_count(out.stderr) == "0", out.stderr


def test_a_users_wait_policy_is_kept():
    out = run_python(WAIT_CODE, OMP_WAIT_POLICY="active", OMP_DISPLAY_ENV="VERBOSE")
    assert out.returncode == 0, out.stderr
    _, seen, omp = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen == "active"
    assert omp["wait_policy"] == "active"
    if omp["runtime"].startswith("libgomp"):
        assert "OMP_WAIT_POLICY = 'ACTIVE'" in out.stderr
        assert libgomp_spin_count(out.stderr) != "0"
