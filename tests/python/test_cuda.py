"""The GPU path (nystrom_kme.cuda, sources.CudaSource): everything that needs no
device runs everywhere (detection, dispatch, launch plans, the CUDA source and its
NVRTC compilation); the comparisons with the CPU core are marked ``gpu``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import nystrom_kme as nk
from cuda_nvrtc import compile_to_ptx, find_nvrtc
from nystrom_kme import sources
from nystrom_kme.cuda import arrays, cupy_available, is_cuda_array, program

ROOT = Path(__file__).resolve().parents[2]
RADIAL = [
    nk.Gaussian(1.3),
    nk.Laplacian(0.9),
    nk.Matern(1.1, nu=1.5),
    nk.Matern(0.8, nu=2.5),
    nk.InverseMultiquadric(1.7),
]


class FakeCAI:
    """Looks like a CuPy array to detection (nothing reads its memory)."""

    def __init__(self, shape=(4, 3)):
        self.shape, self.dtype = shape, np.dtype(np.float64)
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f8", "data": (0, False), "version": 3}


class GradTensorLike:
    """Reading the interface raises (as torch does for tensors that require grad)."""

    @property
    def __cuda_array_interface__(self):
        raise RuntimeError("Can't get __cuda_array_interface__ on Variable that requires grad")

    def __dlpack_device__(self):
        return (2, 0)


class FakeDLPack:
    def __init__(self, device_type: int):
        self.device_type = device_type

    def __dlpack_device__(self):
        return (self.device_type, 0)


# -- detection and dispatch ---------------------------------------------------


def test_importing_the_package_imports_no_gpu_library() -> None:
    code = (
        "import sys, nystrom_kme, nystrom_kme.cuda, nystrom_kme.sources; "
        "print(sorted(m for m in ('cupy', 'torch') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        (np.ones((2, 2)), False),
        ([[1.0]], False),
        (None, False),
        (FakeCAI, False),
        (FakeCAI(), True),
        (FakeDLPack(2), True),
        (FakeDLPack(13), True),
        (FakeDLPack(1), False),
        (FakeDLPack(3), False),
        (GradTensorLike(), True),
    ],
)
def test_is_cuda_array(obj, expected) -> None:
    assert is_cuda_array(obj) is expected


def test_numpy_dlpack_is_host() -> None:
    x = np.ones((2, 2))
    assert hasattr(x, "__dlpack_device__") and not is_cuda_array(x)


def test_torch_cpu_tensor_is_not_cuda() -> None:
    torch = pytest.importorskip("torch")
    assert not is_cuda_array(torch.ones(3, 2))


@pytest.mark.skipif(cupy_available(), reason="checks the message given without CuPy")
def test_cuda_array_without_cupy_says_how_to_install() -> None:
    with pytest.raises(ImportError, match=r"nystrom-kme\[gpu\]"):
        sources.as_source(FakeCAI())
    with pytest.raises(ImportError, match="CuPy"):
        nk.NystromKME(n_landmarks=2).fit(FakeCAI())


def test_cuda_arrays_are_not_streamed_sources() -> None:
    assert not sources.is_streamed(FakeCAI())


def test_host_inputs_keep_their_sources() -> None:
    assert type(sources.as_source(np.ones((3, 2)))).__name__ == "ArraySource"
    assert type(sources.as_source([np.ones((3, 2))])).__name__ == "IterableSource"


# -- the program: header, codes, names, plans ---------------------------------


def test_header_is_found_installed_or_in_the_source_tree() -> None:
    path = program.header_path()
    assert path.name == "kernel_sums.cuh" and path.parent.name == "cuda"
    installed = Path(nk.get_include()) / "nystrom_kme/cuda/kernel_sums.cuh"
    assert path == installed or path.parts[-5:-3] == ("cpp", "include")


@pytest.mark.skipif(not (ROOT / "cpp").is_dir(), reason="needs the source tree")
def test_header_ships_with_the_headers() -> None:
    cmake = (ROOT / "cpp/CMakeLists.txt").read_text()
    # installed with every header (no file pattern that would drop .cuh)
    assert "install(DIRECTORY include/nystrom_kme DESTINATION" in cmake and "FILES_MATCHING" not in cmake


def test_header_includes_nothing_under_nvrtc() -> None:
    text = program.source()
    guarded = re.search(r"#ifndef __CUDACC_RTC__\n(.*?)#endif", text, re.DOTALL).group(1)
    includes = re.findall(r"#include\s*<[^>]+>", text)
    assert includes and all(inc in guarded for inc in includes)


def test_every_radial_kernel_has_a_code_and_the_others_are_refused() -> None:
    assert sorted({k.name for k in RADIAL}) == sorted(program.KERNEL_CODES)
    assert program.kernel_code(nk.Matern(1.0, nu=0.5).name) == program.KERNEL_CODES["laplacian"]
    text = program.source()
    for name, code in program.KERNEL_CODES.items():  # the header's enum agrees
        enum = {
            "gaussian": "kGaussian",
            "laplacian": "kLaplacian",
            "matern32": "kMatern32",
            "matern52": "kMatern52",
            "inverse_multiquadric": "kInverseMultiquadric",
        }[name]
        assert re.search(rf"\b{enum} = {code},", text)
    for k in (nk.Linear(), nk.Polynomial()):
        with pytest.raises(ValueError, match="radial"):
            program.kernel_code(k.name)


def test_dtypes() -> None:
    assert program.ctype(np.float32) == "float" and program.ctype(np.float64) == "double"
    with pytest.raises(ValueError, match="float32 or float64"):
        program.ctype(np.float16)


def test_plan_mirrors_the_header() -> None:
    text = program.source()
    assert f"constexpr int kThreads = {program.THREADS};" in text
    assert "return k <= 1 ? 1 : (k <= 8 ? 8 : 32);" in text
    assert "long long chunks = 256;" in text and "(n + 2047) / 2048" in text


@pytest.mark.parametrize(
    ("m", "n", "k"),
    [
        (1, 1, 1),
        (1000, 10**6, 1),
        (1000, 10**7, 1),
        (4096, 10**6, 1),
        (1000, 2 * 10**6, 201),
        (100_000, 10**5, 1),
        (7, 5000, 9),
    ],
)
def test_plan_covers_every_row_within_its_workspace(m, n, k) -> None:
    p = program.SumsPlan.of(m, n, k)
    assert p.n_chunks * p.chunk_rows >= n > (p.n_chunks - 1) * p.chunk_rows
    assert p.grid[0] * program.THREADS >= m and p.grid[2] * p.columns_per_thread >= k
    assert p.workspace_entries * 8 <= max(64 << 20, m * k * 8)
    assert p.reduce_grid[0] * program.REDUCE_THREADS >= m * k
    assert p.columns_per_thread in program.COLUMN_GROUPS


def test_plan_refuses_empty_sums() -> None:
    with pytest.raises(ValueError, match="empty"):
        program.SumsPlan.of(0, 10, 1)


def test_name_expressions_cover_the_launches() -> None:
    names = program.name_expressions(2, np.float64)
    assert program.REDUCE_NAME in names and program.SUM_NAME in names
    assert program.matrix_name(2, np.float64) in names
    for kc in program.COLUMN_GROUPS:
        assert program.partial_name(2, np.float64, kc) in names


# -- NVRTC compilation of the header (no device needed) -------------------------

NVRTC = find_nvrtc()


@pytest.mark.skipif(NVRTC is None, reason="no libnvrtc (pip install nvidia-cuda-nvrtc-cu12)")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nvrtc_compiles_every_instantiation(dtype) -> None:
    for code in sorted(program.KERNEL_CODES.values()):
        names = list(program.name_expressions(code, dtype))
        options = [*program.COMPILE_OPTIONS, "--gpu-architecture=compute_80"]
        ptx, lowered = compile_to_ptx(NVRTC, program.source(), options, names)
        assert set(lowered) == set(names)
        for name in names:
            assert f".entry {lowered[name]}(" in ptx
        assert not re.search(r"^\s*(atom|red)\.", ptx, re.MULTILINE)  # no atomics: deterministic sums


# -- the benchmark script without a GPU -----------------------------------------


@pytest.mark.skipif(not (ROOT / "bench").is_dir(), reason="needs the source tree")
def test_bench_fails_cleanly_without_a_gpu() -> None:
    if arrays.cupy_available():
        import cupy

        try:
            if cupy.cuda.runtime.getDeviceCount() > 0:
                pytest.skip("a GPU is present")
        except Exception:
            pass
    out = subprocess.run([sys.executable, "-m", "bench.gpu", "--quick"], capture_output=True, text=True, cwd=ROOT)
    assert out.returncode == 2
    assert "no CUDA GPU" in out.stderr and "Traceback" not in out.stderr


# -- on a GPU: against the CPU core ------------------------------------------------


def _cp():
    import cupy

    return cupy


def _rel(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


TOL = {np.float32: 1e-5, np.float64: 1e-12}


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kernel", RADIAL, ids=lambda k: k.name)
@pytest.mark.parametrize("k", [1, 3, 9, 40])
def test_weighted_sums_match_the_core(dtype, kernel, k, rng) -> None:
    from nystrom_kme import _core
    from nystrom_kme.cuda import sums

    cp = _cp()
    X = rng.normal(size=(5003, 7)).astype(dtype)
    L = rng.normal(size=(131, 7)).astype(dtype)
    W = rng.random((5003, k))
    want = _core.kernel_sums(L, X, W, kernel.to_core(), 0)
    got = sums.weighted_kernel_sums(cp.asarray(L), cp.asarray(X), cp.asarray(W), kernel)
    assert isinstance(got, cp.ndarray) and got.shape == (131, k)
    assert _rel(cp.asnumpy(got), want) <= TOL[dtype]
    again = sums.weighted_kernel_sums(cp.asarray(L), cp.asarray(X), cp.asarray(W), kernel)
    assert bool((again == got).all())  # deterministic, bit for bit


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kernel", RADIAL, ids=lambda k: k.name)
def test_row_sums_total_and_matrix_match_the_core(dtype, kernel, rng) -> None:
    from nystrom_kme import _core
    from nystrom_kme.cuda import sums

    cp = _cp()
    X = rng.normal(size=(3001, 40)).astype(dtype)
    L = rng.normal(size=(50, 40)).astype(dtype)
    core = kernel.to_core()
    assert (
        _rel(cp.asnumpy(sums.row_sums(cp.asarray(L), cp.asarray(X), kernel)), _core.kernel_row_sums(L, X, core, 0))
        <= TOL[dtype]
    )
    total = float(sums.total_kernel_sum(cp.asarray(X), kernel))
    assert _rel(total, _core.kernel_row_sums(X, X, core, 0).sum()) <= TOL[dtype]
    K = cp.asnumpy(sums.kernel_matrix(cp.asarray(L), cp.asarray(L), kernel))
    assert _rel(K, _core.kernel_sums(L, L, np.eye(50), core, 0)) <= TOL[dtype]
    assert np.all(np.diag(K) == 1.0)


@pytest.mark.gpu
def test_estimators_take_cupy_and_torch_arrays(rng) -> None:
    cp = _cp()
    X = rng.normal(size=(4000, 5))
    Y = rng.normal(size=(3000, 5)) + 0.3
    kw = dict(kernel=nk.Gaussian(1.0), n_landmarks=200, random_state=0)
    host = nk.NystromKME(**kw).fit(X)
    dev = nk.NystromKME(**kw).fit(cp.asarray(X))
    assert _rel(dev.weights_, host.weights_) <= 1e-9
    values = dev(cp.asarray(Y))  # evaluation: on the device of its input
    assert isinstance(values, cp.ndarray) and _rel(cp.asnumpy(values), host(Y)) <= 1e-9
    assert _rel(dev.score(cp.asarray(Y)), host.score(Y)) <= 1e-9
    assert _rel(nk.mmd2(cp.asarray(X), cp.asarray(Y), **kw), nk.mmd2(X, Y, **kw)) <= 1e-9
    assert (
        _rel(
            nk.mmd2_exact(cp.asarray(X[:800]), cp.asarray(Y[:700]), kernel=nk.Gaussian(1.0)),
            nk.mmd2_exact(X[:800], Y[:700], kernel=nk.Gaussian(1.0)),
        )
        <= 1e-12
    )
    a = nk.two_sample_test(
        cp.asarray(X), cp.asarray(Y), kernel=nk.Gaussian(1.0), n_landmarks=100, n_permutations=50, random_state=1
    )
    b = nk.two_sample_test(X, Y, kernel=nk.Gaussian(1.0), n_landmarks=100, n_permutations=50, random_state=1)
    assert a.pvalue == b.pvalue and _rel(a.null_distribution, b.null_distribution) <= 1e-9
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        t = nk.NystromKME(**kw).fit(torch.as_tensor(X, device="cuda"))
        assert _rel(t.weights_, host.weights_) <= 1e-9
