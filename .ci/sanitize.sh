#!/usr/bin/env bash
# Sanitizer job: the C++ tests (ctest, every SIMD level) and a quick Python smoke subset,
# both against a build with AddressSanitizer + UndefinedBehaviorSanitizer (GCC).
# Run by .ci/run with its venv active; alone it needs a venv with the test extras
# (numpy, scipy, pytest): `. .venv/bin/activate && bash .ci/sanitize.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS

# Build tools: no-ops when .ci/run has installed them already.
python -c 'import pybind11' 2>/dev/null || python -m pip install -q "pybind11>=2.12"
{ command -v cmake && command -v ninja; } >/dev/null || python -m pip install -q cmake ninja

# GCC, because the Python step preloads GCC's libasan (the interpreter is not instrumented).
build=build/asan
# -O1 -g1: what ASan's documentation recommends (usable speed, readable stacks) and
# cheaper to compile than -O2 -g (the whole job took 8.7 CPU-minutes here).
sanitizers="-O1 -g1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=g++ -DCMAKE_BUILD_TYPE=None \
  -DNYSTROM_KME_BUILD_TESTING=ON -DNYSTROM_KME_BUILD_PYTHON=ON \
  -Dpybind11_DIR="$(python -m pybind11 --cmakedir)" \
  -DCMAKE_CXX_FLAGS="$sanitizers"
cmake --build "$build"

# detect_leaks=0: the OpenMP runtime keeps its thread pool and thread-local state
# allocated until exit by design, which LeakSanitizer would report as leaks.
export ASAN_OPTIONS=detect_leaks=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

echo "== sanitize: C++ tests under ASan/UBSan"
ctest --test-dir "$build" --output-on-failure

echo "== sanitize: Python smoke tests against the ASan-built module"
# The package sources plus the instrumented _core in a temporary directory, first on
# PYTHONPATH (ahead of any installed nystrom_kme).
pkg=$(mktemp -d)
trap 'rm -rf "$pkg"' EXIT
cp -r python/nystrom_kme "$pkg/"
find "$pkg" -name __pycache__ -prune -exec rm -rf {} +
core=$(find "$build/python" -maxdepth 1 -name '_core*.so' | head -n 1)
[ -n "$core" ] || { echo "error: no _core*.so in $build/python" >&2; exit 1; }
cp "$core" "$pkg/nystrom_kme/"
# libasan must be loaded first; libstdc++ with it, or ASan's __cxa_throw interceptor
# finds no real __cxa_throw (python does not link libstdc++) and aborts at the first
# C++ exception. PYTHONMALLOC=malloc: Python's own allocations go through ASan too.
preload="$(g++ -print-file-name=libasan.so):$(g++ -print-file-name=libstdc++.so)"
run_asan() {
  LD_PRELOAD="$preload" PYTHONMALLOC=malloc PYTHONPATH="$pkg" "$@"
}
run_asan python -c 'import nystrom_kme, sys; p = nystrom_kme.__file__; print(p); sys.exit(not p.startswith(sys.argv[1]))' "$pkg"
# A subset that takes about a minute here under ASan: kernels, embeddings, fits (the
# solve), MMD, permutation tests, the bindings' argument checks, row sources and every
# sampler.
# --capture=sys: a sanitizer report (written to fd 2) must not vanish with pytest's
# captured output when the process aborts. Not here: test_cmake (it needs an installed
# wheel). The Dask tests are here because their workers unpickle blocks at misaligned
# addresses: the Python layer realigns them (_validation.core_array) and the bindings
# refuse misaligned arrays, so UBSan sees no misaligned load.
run_asan python -m pytest -q -p no:cacheprovider --capture=sys \
  tests/python/test_kernels.py tests/python/test_embedding.py tests/python/test_mmd_estimators.py \
  tests/python/test_nystrom.py tests/python/test_permutation.py tests/python/test_two_sample.py \
  tests/python/test_core_bindings.py tests/python/sources/test_sources_interface.py \
  tests/python/sources/test_sources_dask.py tests/python/sampling

echo "== sanitize: passed in $((SECONDS - start)) s"
