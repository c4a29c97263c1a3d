"""Benchmark of the Nystrom weight solve alpha = K_m^+ s (nystrom_kme::solve_psd).

Run as `python -m bench.solve [--quick]`. Standalone apart from the bench package: needs
python3 with numpy and scipy, g++ with OpenMP, and Eigen headers
(found via $EIGEN_INCLUDE, the cmeel-eigen wheel, or /usr/include/eigen3). It does not
import nystrom_kme: a small C++ driver is compiled from the string below against the
headers in cpp/include.

Cases, for m in {1000, 2000, 4000} (--quick: {500, 1000}), d = 10, n = 10 m standard
normal points X, s = K(L, X) 1 / n:
  (a) well-conditioned: m distinct landmarks (without replacement), Gaussian kernel
      with a small bandwidth (sigma = median distance / 4);
  (b) rank-deficient: m landmarks drawn WITH replacement (duplicates), sigma = median
      pairwise distance (median heuristic); plain Cholesky fails here.
Timings are medians of 3 runs. Every solver's embedding is compared with the
numpy.linalg.pinv(K) @ s reference in the RKHS norm:
  ||sum_j (a_j - b_j) phi(l_j)|| / ||sum_j b_j phi(l_j)|| = sqrt(d^T K d / b^T K b).
The LAPACK references (scipy gelsy, numpy pinv, jittered cho_factor) run in a
subprocess with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset: they then use
OpenBLAS's best kernel for this CPU (the machine limit).
"""
from __future__ import annotations

import argparse
import glob
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from bench import limits
from bench.harness import ROOT, gaussian_kernel, machine

DRIVER = r"""
#include <algorithm>
#include <chrono>
#include <string>
#include <cstdio>
#include <fstream>
#include <vector>
#include <nystrom_kme/solve.hpp>
using namespace nystrom_kme;
static Eigen::MatrixXd load(const char* path, long rows, long cols) {
  Eigen::MatrixXd M(rows, cols);  // file: C order (rows, cols) -> read transposed
  std::ifstream f(path, std::ios::binary);
  Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> R(rows, cols);
  f.read(reinterpret_cast<char*>(R.data()), sizeof(double) * rows * cols);
  if (!f) { std::fprintf(stderr, "cannot read %s\n", path); std::exit(2); }
  M = R;
  return M;
}
int main(int argc, char** argv) {
  // driver K.bin s.bin m k repeats out_prefix
  const long m = std::atol(argv[3]), k = std::atol(argv[4]);
  const int repeats = std::atoi(argv[5]);
  const Eigen::MatrixXd K = load(argv[1], m, m), s = load(argv[2], m, k);
  const char* names[] = {"cholesky", "auto", "cod"};
  const Solver solvers[] = {Solver::cholesky, Solver::automatic, Solver::cod};
  for (int v = 0; v < 3; ++v) {
    SolveOptions o;
    o.solver = solvers[v];
    std::vector<double> times;
    SolveResult r;
    std::string error;
    for (int i = 0; i < repeats; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      try {
        r = solve_psd(K, s, o);
      } catch (const std::exception& e) {
        error = e.what();
        break;
      }
      times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    if (!error.empty()) {
      std::printf("%s FAILED 0 0 0\n", names[v]);
      continue;
    }
    std::sort(times.begin(), times.end());
    std::string path = std::string(argv[6]) + names[v] + ".bin";
    std::ofstream out(path, std::ios::binary);
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> w = r.weights;
    out.write(reinterpret_cast<const char*>(w.data()), sizeof(double) * w.size());
    std::printf("%s %.6f %s %ld %.3e\n", names[v], times[times.size() / 2],
                r.used == Solver::cholesky ? "cholesky" : "cod", long(r.rank), r.error_estimate);
  }
}
"""

# LAPACK references, run in a subprocess with the OpenBLAS overrides unset.
REFERENCE = r"""
import sys, time, numpy as np, scipy.linalg as sl
K = np.load(sys.argv[1]); s = np.load(sys.argv[2]); repeats = int(sys.argv[3]); out = sys.argv[4]
pinv_repeats = int(sys.argv[5])
def timed(f, n):
    ts, r = [], None
    for _ in range(n):
        t = time.perf_counter(); r = f(); ts.append(time.perf_counter() - t)
    return float(np.median(ts)), r
res = {}
t, a = timed(lambda: sl.lstsq(K, s, lapack_driver='gelsy')[0], repeats); res['gelsy'] = (t, a)
t, a = timed(lambda: np.linalg.pinv(K) @ s, pinv_repeats); res['pinv'] = (t, a)
jitter = 1e-10 * float(np.max(np.diag(K)))
def cho():
    c = sl.cho_factor(K + jitter * np.eye(K.shape[0]), lower=True, check_finite=False)
    return sl.cho_solve(c, s, check_finite=False)
t, a = timed(cho, repeats); res['cholesky+jitter'] = (t, a)
np.savez(out, **{k: v[1] for k, v in res.items()}, **{k + '_t': v[0] for k, v in res.items()})
"""


def find_eigen() -> str:
    cands = [os.environ.get("EIGEN_INCLUDE", "")]
    for base in [sys.prefix, "/tmp/t/ev", "/tmp/solvevenv"]:
        cands += glob.glob(os.path.join(base, "lib/python3*/site-packages/cmeel.prefix/include/eigen3"))
    cands += ["/usr/include/eigen3", "/usr/local/include/eigen3"]
    for c in cands:
        if c and os.path.isfile(os.path.join(c, "Eigen", "Core")):
            return c
    sys.exit("Eigen headers not found: set EIGEN_INCLUDE")


def make_case(case: str, m: int, rng) -> tuple[np.ndarray, np.ndarray]:
    d, n = 10, 10 * m
    X = rng.standard_normal((n, d))
    sub = X[rng.choice(n, 2000, replace=False)]
    sq = (sub * sub).sum(1)
    dist = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2.0 * sub @ sub.T, 0.0))
    median = float(np.median(dist[np.triu_indices(len(sub), 1)]))
    if case == "well-conditioned":
        L, sigma = X[rng.choice(n, m, replace=False)], median / 4
    else:
        L, sigma = X[rng.integers(0, n, m)], median
    K = gaussian_kernel(L, L, sigma)
    K = 0.5 * (K + K.T)
    np.fill_diagonal(K, 1.0)
    s = np.zeros(m)
    for i in range(0, n, 4096):
        s += gaussian_kernel(L, X[i:i + 4096], sigma).sum(1)
    return K, (s / n)[:, None]


def rkhs_rel(K, a, b) -> float:
    d = (a - b).ravel()
    b = b.ravel()
    return float(np.sqrt(abs(d @ (K @ d)) / abs(b @ (K @ b))))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="m in {500, 1000}: a smoke run")
    ap.add_argument("--sizes", type=int, nargs="*", help="override the landmark counts")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    sizes = args.sizes or ([500, 1000] if args.quick else [1000, 2000, 4000])
    threads = os.environ.get("OMP_NUM_THREADS", str(os.cpu_count()))
    work = tempfile.mkdtemp(prefix="nystrom_solve_bench_")
    try:
        exe = os.path.join(work, "driver")
        src = os.path.join(work, "driver.cpp")
        with open(src, "w") as f:
            f.write(DRIVER)
        cmd = ["g++", "-O3", "-march=native", "-fopenmp", "-DNYSTROM_KME_WITH_OPENMP",
               "-DEIGEN_DONT_PARALLELIZE", "-std=c++17", f"-I{ROOT}/cpp/include",
               f"-I{find_eigen()}", src, "-o", exe]
        subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
        ref_env = limits.limit_env(OMP_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=threads)
        drv_env = dict(os.environ, OMP_NUM_THREADS=threads)
        rng = np.random.default_rng(0)
        rows = []
        for case in ["well-conditioned", "rank-deficient"]:
            for m in sizes:
                K, s = make_case(case, m, rng)
                kp, sp = os.path.join(work, "K.npy"), os.path.join(work, "s.npy")
                np.save(kp, K)
                np.save(sp, s)
                K.tofile(os.path.join(work, "K.bin"))
                s.tofile(os.path.join(work, "s.bin"))
                out = subprocess.run([exe, os.path.join(work, "K.bin"), os.path.join(work, "s.bin"),
                                      str(m), "1", str(args.repeats), os.path.join(work, "w_")],
                                     env=drv_env, capture_output=True, text=True, check=True).stdout
                refz = os.path.join(work, "ref.npz")
                pinv_repeats = 1 if m > 2000 else args.repeats
                subprocess.run([sys.executable, "-c", REFERENCE, kp, sp, str(args.repeats), refz,
                                str(pinv_repeats)], env=ref_env, check=True)
                ref = np.load(refz)
                base = ref["pinv"]
                cod_w = None
                if os.path.exists(os.path.join(work, "w_cod.bin")):
                    cod_w = np.fromfile(os.path.join(work, "w_cod.bin")).reshape(m, 1)
                n_unique = len(np.unique(K, axis=0)) if case == "rank-deficient" else m
                for line in out.splitlines():
                    name, t, used, rank, _est = line.split()
                    if t == "FAILED":
                        rows.append((case, m, f"nystrom_kme {name}", None, "failed (singular)", "", ""))
                        continue
                    w = np.fromfile(os.path.join(work, f"w_{name}.bin")).reshape(m, 1)
                    note = f"used {used}, rank {rank}"
                    rows.append((case, m, f"nystrom_kme {name}", float(t), note, rkhs_rel(K, w, base),
                                 rkhs_rel(K, w, cod_w) if cod_w is not None else ""))
                for name in ["gelsy", "pinv", "cholesky+jitter"]:
                    note = "LAPACK reference" + (" (1 run)" if name == "pinv" and pinv_repeats == 1 else "")
                    rows.append((case, m, name, float(ref[name + "_t"]), note,
                                 rkhs_rel(K, ref[name], base) if name != "pinv" else 0.0,
                                 rkhs_rel(K, ref[name], cod_w) if cod_w is not None else ""))
                for f in glob.glob(os.path.join(work, "w_*.bin")):
                    os.remove(f)
                print(f"# done {case} m={m} (distinct landmarks {n_unique})", file=sys.stderr, flush=True)
        print(f"Machine: {machine()}; OMP_NUM_THREADS={threads}; nystrom_kme built with g++ -O3 -march=native, Eigen single-threaded.")
        print("LAPACK references (scipy gelsy, numpy pinv, jittered scipy cho_factor/cho_solve, jitter 1e-10 max K_ii) "
              "run in a subprocess with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (machine-limit references).")
        print("Embedding error: ||sum (a - b) phi(l)|| / ||sum b phi(l)|| against numpy pinv @ s and against nystrom_kme cod. Times: median of "
              f"{args.repeats} runs, seconds.\n")
        print("| case | m | method | time (s) | emb. error vs pinv | emb. error vs cod | notes |")
        print("|---|---|---|---|---|---|---|")
        for case, m, name, t, note, err, err_cod in rows:
            ts = "-" if t is None else f"{t:.3f}"
            es = "-" if err == "" else f"{err:.1e}"
            ec = "-" if err_cod == "" else f"{err_cod:.1e}"
            print(f"| {case} | {m} | {name} | {ts} | {es} | {ec} | {note} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
