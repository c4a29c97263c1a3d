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


def test_headers_are_found_installed_or_in_the_source_tree() -> None:
    paths = program.header_paths()
    root = paths[0].parents[1]  # the include folder: <root>/nystrom_kme/kernel_kinds.hpp
    assert [p.relative_to(root) for p in paths] == [*program.SOURCES, program.FORMULAS]
    installed = Path(nk.get_include())
    for path in paths:
        assert path.is_relative_to(installed) or path.is_relative_to(ROOT / "cpp" / "include")


@pytest.mark.skipif(not (ROOT / "cpp").is_dir(), reason="needs the source tree")
def test_header_ships_with_the_headers() -> None:
    cmake = (ROOT / "cpp/CMakeLists.txt").read_text()
    # installed with every header (no file pattern that would drop .cuh)
    assert "install(DIRECTORY include/nystrom_kme DESTINATION" in cmake and "FILES_MATCHING" not in cmake
    on_disk = sorted(p.name for p in (ROOT / "cpp/include/nystrom_kme/cuda").glob("*.cuh"))
    assert on_disk == sorted(s.name for s in program.SOURCES if s.suffix == ".cuh")  # every CUDA header is compiled


def test_headers_include_nothing_under_nvrtc_and_come_in_dependency_order() -> None:
    seen: list[str] = []
    for path in program.header_paths():
        text = path.read_text()
        guarded = "".join(re.findall(r"#ifndef __CUDACC_RTC__\n(.*?)#endif", text, re.DOTALL))
        # the formulas' include is the one NVRTC sees: source() puts their text in its place
        includes = [inc for inc in re.findall(r"#include\s*<[^>]+>", text) if inc != program.FORMULAS_INCLUDE]
        assert all(inc in guarded for inc in includes), path.name
        for own in re.findall(r"#include\s*<nystrom_kme/(?:cuda/)?([^>]+)>", text):
            assert own in seen or own == program.FORMULAS.name, f"{path.name} includes {own}, which SOURCES lists later"
        seen.append(path.name)
    source = program.source()
    assert program.FORMULAS_INCLUDE not in source and "struct Formula<KernelKind::gaussian>" in source


def _header(name: str) -> str:
    """A core header's text where the GPU path reads it: the checkout's, or the installed
    package's (the wheel's tests run without the source tree)."""
    return next(p for p in program.header_paths() if p.name == name).read_text()


def test_every_radial_kernel_has_a_code_and_the_others_are_refused() -> None:
    assert sorted({k.name for k in RADIAL}) == sorted(program.KERNEL_CODES)
    assert program.kernel_code(nk.Matern(1.0, nu=0.5).name) == program.KERNEL_CODES["laplacian"]
    # the codes are KernelKind's numbers, as kernel_kinds.hpp declares them
    enum = _header("kernel_kinds.hpp")
    declared = {name: int(code) for name, code in re.findall(r"^\s+(\w+) = (\d+),", enum, flags=re.M)}
    for name, code in program.KERNEL_CODES.items():
        assert declared[name] == code
    for k in (nk.Linear(), nk.Polynomial(), nk.LaplacianL1(1.0), nk.RationalQuadratic(1.0, alpha=2.0)):
        with pytest.raises(ValueError, match=f"not {k.name!r}"):
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
    assert f"constexpr int kSmallThreads = {program.SMALL_THREADS};" in text
    assert f"constexpr int kSmallLandmarks = {program.SMALL_LANDMARKS};" in text
    assert f"constexpr int kSmallMaxDim = {program.SMALL_MAX_DIM};" in text
    assert f"constexpr int kTcThreads = {program.TC_THREADS};" in text
    assert f"constexpr int kTcTile = {program.TC_TILE};" in text
    assert "long long chunks = (4096 + landmark_blocks - 1) / landmark_blocks;" in text
    assert "(n + 1023) / 1024" in text
    assert f"constexpr int kBinKernels = {program.BIN_KERNELS};" in text
    assert f"constexpr int kBinThreads = {program.BIN_THREADS};" in text
    assert f"(long long)blockIdx.x * {program.NORM_ROWS} + (threadIdx.x >> 5)" in text


def test_fast_map_factors_are_the_closed_forms() -> None:
    log2e = 1 / np.log(2)  # 2^(-c v) is each kernel's exp(-t) at v = 1 (t = v / 2 or a sqrt(v))
    expected = {0: log2e / 2, 1: log2e**2, 2: 3 * log2e**2, 3: 5 * log2e**2, 4: 1.0}
    assert program.FAST_MAP_FACTORS == pytest.approx(expected, rel=1e-15)
    assert 2 ** -program.FAST_MAP_FACTORS[0] == pytest.approx(np.exp(-0.5), rel=1e-15)


@pytest.mark.parametrize(("m", "n"), [(1, 1), (1000, 10**6), (4096, 10**6), (10**6, 1000), (300, 70_000)])
@pytest.mark.parametrize("path", ["small", "tc"])
def test_row_plan_covers_every_row_and_landmark(path, m, n) -> None:
    p = program.RowPlan.of(path, m, n)
    per_block = program.SMALL_THREADS * program.SMALL_LANDMARKS if path == "small" else program.TC_TILE
    assert p.grid[0] * per_block >= m > (p.grid[0] - 1) * per_block
    assert p.n_chunks * p.chunk_rows >= n > (p.n_chunks - 1) * p.chunk_rows
    assert p.workspace_entries * 8 <= max(64 << 20, m * 8) and p.reduce_grid[0] * program.REDUCE_THREADS >= m


def test_row_sums_path() -> None:
    f32, f64 = np.dtype(np.float32), np.dtype(np.float64)
    assert program.row_sums_path(f32, 10**6, 1, 1) == program.row_sums_path(f64, 4096, 16, 1) == "small"
    assert program.row_sums_path(f32, 1000, 17, 1) == "tc" and program.row_sums_path(f64, 1000, 17, 1) == "partial"
    assert program.row_sums_path(f32, 1000, 160, 1) == program.row_sums_path(f64, 1000, 90, 1) == "gemm"
    assert program.row_sums_path(f32, 4096, 40, 1) == "gemm" and program.row_sums_path(f32, 4096, 39, 1) == "tc"
    assert program.row_sums_path(f32, 10, 3, 2) == "partial" and program.row_sums_path(f64, 10, 3, 9) == "matrix"
    with pytest.raises(ValueError, match="1 <= d <= 16"):
        program.small_name(0, f32, 17)
    with pytest.raises(ValueError, match="no module"):
        program.module_names(("nope",))


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
    assert program.matrix_name(2, np.float64) in names
    for kc in program.COLUMN_GROUPS:
        assert program.partial_name(2, np.float64, kc) in names
    assert program.module_names(("reduce",)) == (program.REDUCE_NAME, program.SUM_NAME)
    assert program.module_names(("tc", 3)) == (program.tc_name(3), program.norms_name(np.float32))


# -- NVRTC compilation of the header (no device needed) -------------------------

NVRTC = find_nvrtc()


def _all_modules(dtype) -> list[tuple]:
    dt = np.dtype(dtype).name
    modules: list[tuple] = [("reduce",), ("labels",), ("bins", dt)]
    for code in sorted(program.KERNEL_CODES.values()):
        modules.append(("main", code, dt))
        modules += [("small", code, dt, d) for d in range(1, program.SMALL_MAX_DIM + 1)]
        modules.append(("gemm", code, dt))
        if dt == "float32":
            modules.append(("tc", code))
    return modules


@pytest.mark.skipif(NVRTC is None, reason="no libnvrtc (pip install nvidia-cuda-nvrtc-cu12)")
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_nvrtc_compiles_every_instantiation(dtype) -> None:
    names = sorted({name for module in _all_modules(dtype) for name in program.module_names(module)})
    options = [*program.COMPILE_OPTIONS, "--gpu-architecture=compute_80"]  # mma.sync tf32: sm_80 and later
    ptx, lowered = compile_to_ptx(NVRTC, program.source(), options, names)
    assert set(lowered) == set(names)
    for name in names:
        assert f".entry {lowered[name]}(" in ptx
    assert not re.search(r"^\s*(atom|red)\.", ptx, re.MULTILINE)  # no atomics: deterministic sums
    assert "local.u32" not in ptx and ".local" not in ptx  # no register array spilled to local memory


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


def _data(rng, n: int, d: int, dtype) -> np.ndarray:
    """Rows at unit-order distances whatever d (kernel values not all ~0), off 0."""
    return (rng.normal(size=(n, d)) * np.sqrt(2.0 / d) + 3.0).astype(dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kernel", RADIAL, ids=lambda k: k.name)
@pytest.mark.parametrize("k", [1, 3, 9, 40])
def test_weighted_sums_match_the_core(dtype, kernel, k, rng) -> None:
    from nystrom_kme import _core
    from nystrom_kme.cuda import sums

    cp = _cp()
    X, L = _data(rng, 5003, 3, dtype), _data(rng, 131, 3, dtype)
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
@pytest.mark.parametrize("d", [1, 3, 16, 17, 64, 256])
def test_row_sums_of_every_path_match_the_core(dtype, kernel, d, rng) -> None:
    """One weight column: row_sums_small (d <= 16), row_sums_tc (float32 beyond) or
    weighted_sums_partial (float64 beyond), with and without weights, and K(L, L)."""
    from nystrom_kme import _core
    from nystrom_kme.cuda import sums

    cp = _cp()
    X, L = _data(rng, 9001, d, dtype), _data(rng, 300, d, dtype)
    w = rng.random(9001)
    core = kernel.to_core()
    got = sums.weighted_kernel_sums(cp.asarray(L), cp.asarray(X), cp.asarray(w[:, None]), kernel)
    assert _rel(cp.asnumpy(got)[:, 0], _core.kernel_sums(L, X, w[:, None], core, 0)[:, 0]) <= TOL[dtype]
    ones = sums.row_sums(cp.asarray(L), cp.asarray(X), kernel)
    assert _rel(cp.asnumpy(ones), _core.kernel_row_sums(L, X, core, 0)) <= TOL[dtype]
    assert bool((sums.row_sums(cp.asarray(L), cp.asarray(X), kernel) == ones).all())  # deterministic
    K = cp.asnumpy(sums.kernel_matrix(cp.asarray(L), cp.asarray(L), kernel))
    assert _rel(K, _core.kernel_sums(L, L, np.eye(300), core, 0)) <= TOL[dtype]
    assert np.all(np.diag(K) == 1.0)
    want = _core.kernel_sums(L, X, w[:, None], core, 0)[:, 0]
    others = ("gemm", "tc") if dtype == np.float32 else ("gemm",)
    for path in others:  # every path of the program, whichever the routing picks
        got = sums.weighted_kernel_sums(cp.asarray(L), cp.asarray(X), cp.asarray(w[:, None]), kernel, path=path)
        assert _rel(cp.asnumpy(got)[:, 0], want) <= TOL[dtype], path


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("kernel", [nk.Laplacian(1.0), nk.Matern(1.0, nu=1.5)], ids=lambda k: k.name)
def test_expansion_paths_recompute_what_cancels(dtype, kernel, rng) -> None:
    """Near-duplicate points (every landmark is also a row): the expansion paths (tensor
    cores, cuBLAS) recompute those distances from coordinate differences, as the CPU
    core does; the square root of the Laplacian would otherwise magnify the lost digits."""
    from nystrom_kme import _core
    from nystrom_kme.cuda import sums

    cp = _cp()
    L = _data(rng, 200, 64, dtype)
    X = np.concatenate([_data(rng, 3000, 64, dtype), L, L + dtype(1e-4)])
    want = _core.kernel_row_sums(L, X, kernel.to_core(), 0)
    for path in ("tc", "gemm") if dtype == np.float32 else ("gemm",):
        got = sums.weighted_kernel_sums(cp.asarray(L), cp.asarray(X), None, kernel, path=path)
        assert _rel(cp.asnumpy(got)[:, 0], want) <= TOL[dtype], path
    total = float(sums.total_kernel_sum(cp.asarray(X), kernel))
    assert _rel(total, _core.kernel_row_sums(X, X, kernel.to_core(), 0).sum()) <= TOL[dtype]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_total_kernel_sum_matches_the_core(dtype, rng) -> None:
    from nystrom_kme import _core
    from nystrom_kme.cuda import sums

    cp = _cp()
    X = _data(rng, 3001, 3, dtype)
    for kernel in RADIAL:
        total = float(sums.total_kernel_sum(cp.asarray(X), kernel))
        assert _rel(total, _core.kernel_row_sums(X, X, kernel.to_core(), 0).sum()) <= TOL[dtype]


@pytest.mark.gpu
def test_device_splits_are_the_cores_bit_for_bit() -> None:
    from nystrom_kme.cuda import sums
    from nystrom_kme.permutation import SplitSpec

    cp = _cp()
    spec = SplitSpec(70_001, 55_555, 300, 987654321)  # 301 columns: two blocks of threads
    cpu, gpu = spec.new(), sums.DeviceSplits(spec.n1, spec.n2, spec.n_permutations, spec.seed)
    for rows in (1, 60_000, 0, 65_536, 19):
        np.testing.assert_array_equal(cp.asnumpy(gpu.next_weights(rows)), cpu.next_weights(rows))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bin_sums_match_the_host_source(dtype, rng) -> None:
    cp = _cp()
    X = _data(rng, 20_000, 6, dtype)
    L = X[:300].copy()
    kernels = list(nk.KernelCollection().resolve(sources.as_source(X), rng))  # 20 kernels: three launches
    bins = rng.integers(-1, 700, size=20_000)  # -1: dropped rows
    want = sources.as_source(X).bin_sums(L, kernels, bins, 700)
    got = sources.as_source(cp.asarray(X)).bin_sums(L, kernels, bins, 700)
    assert _rel(got, want) <= TOL[dtype]


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
    agg = dict(kernel=nk.KernelCollection(), n_landmarks=150, n_permutations=60, max_bins=512, random_state=3)
    c = nk.two_sample_test(cp.asarray(X), cp.asarray(Y), **agg)
    d = nk.two_sample_test(X, Y, **agg)
    assert c.bin_size == d.bin_size > 1 and c.pvalue == d.pvalue
    assert _rel(c.kernel_statistics, d.kernel_statistics) <= 1e-9
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        t = nk.NystromKME(**kw).fit(torch.as_tensor(X, device="cuda"))
        assert _rel(t.weights_, host.weights_) <= 1e-9


def test_every_cuda_kernel_switch_refuses_an_unknown_code():
    """The one switch over kernel kinds (visit_kind, kernel_formulas.inl) names every kind
    of kernel_kinds.hpp, and each run-time visit in the CUDA headers gives NaN or throws
    for a code it does not compute: an unknown code never computes another kernel's values
    (issue 35; the host also checks codes and sums)."""
    import re

    from nystrom_kme.cuda import program

    enum = _header("kernel_kinds.hpp")
    kinds = re.findall(r"^\s+(\w+) = \d+,", enum, flags=re.M)
    assert set(program.KERNEL_CODES) <= set(kinds)
    formulas = _header("kernel_formulas.inl")
    switch = formulas[formulas.index("switch (kind) {") :]
    switch = switch[: switch.index("\n  }")]
    assert sorted(re.findall(r"case KernelKind::(\w+):", switch)) == sorted(kinds)
    assert "default:" not in switch  # exhaustive: -Werror=switch refuses a missing kind
    texts = {p.name: p.read_text() for p in program.header_paths() if p.suffix == ".cuh"}
    everything = "\n".join(texts.values())
    found = 0
    for name, text in texts.items():
        for call in re.findall(r"visit_(?:gpu_)?kind\(([^;]*)\);", text):
            found += 1
            none = call.rsplit(",", 1)[1].strip().rstrip(")").strip()
            if none == "none":  # visit_gpu_kind passes its caller's on
                continue
            body = everything[everything.index(f"struct {none.removesuffix('{}').split('::')[-1]} {{") :]
            body = body[: body.index("};")]
            assert "0x7fc00000" in body or "0x7ff8" in body or "throw" in body, (name, call, body)
    assert found >= 3
