#!/usr/bin/env bash
# aarch64 check: cross-compile the C++ tests and run them under qemu-user, so the
# NEON level of the SIMD dispatch is compiled and exercised without an arm host.
# Needs Eigen from an active venv with cmeel-eigen (.ci/run installs it with the
# test extras) or EIGEN_INCLUDE_DIR pointing at the directory holding Eigen/.
set -euo pipefail
cd "$(dirname "$0")/.."

# Fast tests only: qemu runs roughly 5-10x slower than native.
TESTS=(test_kernel_sums test_solve test_sampling test_simd test_random_splits test_gradient_sums test_bin_sums)
OUT=build/aarch64
CXX=aarch64-linux-gnu-g++
CXXFLAGS=(-O2 -std=gnu++17 -fopenmp -DNYSTROM_KME_WITH_OPENMP=1 -DEIGEN_DONT_PARALLELIZE)

# A fresh CI container (Debian bookworm, root) has no cross tools.
if ! command -v "$CXX" >/dev/null || ! command -v qemu-aarch64 >/dev/null; then
  echo "== installing g++-aarch64-linux-gnu and qemu-user"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    g++-aarch64-linux-gnu qemu-user >/dev/null
fi

# Eigen is header-only: the cmeel-eigen wheel's headers serve any target.
if [ -z "${EIGEN_INCLUDE_DIR:-}" ]; then
  EIGEN_INCLUDE_DIR="$(python -m cmeel cmake 2>/dev/null)/include/eigen3" || {
    echo "error: 'python -m cmeel cmake' failed: activate the venv with cmeel-eigen" >&2
    exit 1
  }
fi
[ -f "$EIGEN_INCLUDE_DIR/Eigen/Core" ] || { echo "error: no Eigen/Core in $EIGEN_INCLUDE_DIR" >&2; exit 1; }

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1fs", b - a }'; }

echo "== cross-compiling (${CXX}, $("$CXX" -dumpversion))"
mkdir -p "$OUT"
# In parallel: test_solve alone takes ~25 s to compile (Eigen). neon is the only
# level compiled for aarch64, so the runs below all exercise it.
start=$(now)
pids=()
for t in "${TESTS[@]}"; do
  "$CXX" "${CXXFLAGS[@]}" -I cpp/include -I "$EIGEN_INCLUDE_DIR" "tests/cpp/$t.cpp" -o "$OUT/$t" &
  pids+=($!)
done
failed=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { echo "error: ${TESTS[$i]} failed to compile" >&2; failed=1; }
done
[ "$failed" -eq 0 ] || exit 1
echo "compiled ${#TESTS[@]} tests in $(since "$start")"

# qemu-user finds the aarch64 loader, libstdc++ and libgomp under this prefix.
export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu

echo "== running under qemu-aarch64"
for t in "${TESTS[@]}"; do
  start=$(now)
  qemu-aarch64 "$OUT/$t"
  echo "$t: ok under qemu in $(since "$start")"
done

echo "== NYSTROM_KME_SIMD=avx2 (not compiled for aarch64) must fail with a clear message"
# The uncaught exception aborts the process; keep qemu from writing a core file.
set +e
msg=$(ulimit -c 0; NYSTROM_KME_SIMD=avx2 qemu-aarch64 "$OUT/test_kernel_sums" 2>&1)
rc=$?
set -e
printf '%s\n' "$msg"
echo "exit status: $rc"
if [ "$rc" -eq 0 ]; then
  echo "error: NYSTROM_KME_SIMD=avx2 did not fail on aarch64" >&2
  exit 1
fi
if ! grep -q "NYSTROM_KME_SIMD=avx2: level 'avx2' is not compiled into this build" <<<"$msg"; then
  echo "error: NYSTROM_KME_SIMD=avx2 failed without the expected message" >&2
  exit 1
fi

echo "== aarch64: all tests passed"
