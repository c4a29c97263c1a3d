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

Core mode (`python -m bench.solve --core [--before DIR]`): the solve as the Python
package runs it, through the compiled module of a build (the portable wheel's flags:
no -march, so Eigen's own products run at SSE2 and the dispatched ones at the CPU's
best level). For m in {1000, 2000, 4000}, d = 5, m distinct standard normal
landmarks, Gaussian kernel: `_core.nystrom_weights(L, s, kernel, solver)` for solver
"auto" and "cod" at two bandwidths, sigma = median distance / 4 (K_m of full rank:
one pivoted Cholesky) and sigma = 2 x median distance (K_m numerically singular: the
semi-normal equations for "auto", the QR of the factor for "cod"), s = K(L, X) 1 / n
with n = 10 m; and `_core.nystrom_feature_sums(L, S, kernel)` with S (m x 201) standard
normal (the aggregated test's call: one pivoted Cholesky, one triangular solve with
201 columns), sigma = median / 4. Each build runs in its own process, builds
alternating over --rounds rounds; times (wall clock, and the process's CPU time, which
a busy machine disturbs less) are the median over rounds of the median of --repeats
calls after a warm-up call. --before DIR names a folder holding another `nystrom_kme` package
(put first on PYTHONPATH; e.g. an older commit's python/ with its compiled module):
its results are compared with this build's, as embeddings (RKHS norm relative to the
embedding, sqrt(d^T K d / b^T K b)) and as the quadratic forms ||y_b||^2 of the
feature sums (largest relative difference).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from bench import limits
from bench.harness import OUT, ROOT, gaussian_kernel, machine, utc_now

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
        s += gaussian_kernel(L, X[i : i + 4096], sigma).sum(1)
    return K, (s / n)[:, None]


def rkhs_rel(K, a, b) -> float:
    d = (a - b).ravel()
    b = b.ravel()
    return float(np.sqrt(abs(d @ (K @ d)) / abs(b @ (K @ b))))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        m, repeats, out_path = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
        print(json.dumps(core_worker(m, repeats, out_path)))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="m in {500, 1000}: a smoke run")
    ap.add_argument("--sizes", type=int, nargs="*", help="override the landmark counts")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--core", action="store_true", help="time the compiled module (see 'Core mode')")
    ap.add_argument("--before", help="core mode: a folder holding another nystrom_kme package")
    ap.add_argument("--rounds", type=int, default=3, help="core mode: alternating rounds of the builds")
    args = ap.parse_args()
    if args.core:
        core_main(args)
        return
    sizes = args.sizes or ([500, 1000] if args.quick else [1000, 2000, 4000])
    threads = os.environ.get("OMP_NUM_THREADS", str(os.cpu_count()))
    work = tempfile.mkdtemp(prefix="nystrom_solve_bench_")
    try:
        exe = os.path.join(work, "driver")
        src = os.path.join(work, "driver.cpp")
        with open(src, "w") as f:
            f.write(DRIVER)
        cmd = [
            "g++",
            "-O3",
            "-march=native",
            "-fopenmp",
            "-DNYSTROM_KME_WITH_OPENMP",
            "-DEIGEN_DONT_PARALLELIZE",
            "-std=c++17",
            f"-I{ROOT}/cpp/include",
            f"-I{find_eigen()}",
            src,
            "-o",
            exe,
        ]
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
                out = subprocess.run(
                    [
                        exe,
                        os.path.join(work, "K.bin"),
                        os.path.join(work, "s.bin"),
                        str(m),
                        "1",
                        str(args.repeats),
                        os.path.join(work, "w_"),
                    ],
                    env=drv_env,
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                refz = os.path.join(work, "ref.npz")
                pinv_repeats = 1 if m > 2000 else args.repeats
                subprocess.run(
                    [sys.executable, "-c", REFERENCE, kp, sp, str(args.repeats), refz, str(pinv_repeats)],
                    env=ref_env,
                    check=True,
                )
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
                    rows.append(
                        (
                            case,
                            m,
                            f"nystrom_kme {name}",
                            float(t),
                            note,
                            rkhs_rel(K, w, base),
                            rkhs_rel(K, w, cod_w) if cod_w is not None else "",
                        )
                    )
                for name in ["gelsy", "pinv", "cholesky+jitter"]:
                    note = "LAPACK reference" + (" (1 run)" if name == "pinv" and pinv_repeats == 1 else "")
                    rows.append(
                        (
                            case,
                            m,
                            name,
                            float(ref[name + "_t"]),
                            note,
                            rkhs_rel(K, ref[name], base) if name != "pinv" else 0.0,
                            rkhs_rel(K, ref[name], cod_w) if cod_w is not None else "",
                        )
                    )
                for f in glob.glob(os.path.join(work, "w_*.bin")):
                    os.remove(f)
                print(f"# done {case} m={m} (distinct landmarks {n_unique})", file=sys.stderr, flush=True)
        print(
            f"Machine: {machine()}; OMP_NUM_THREADS={threads}; nystrom_kme built with g++ -O3 -march=native, "
            "Eigen single-threaded."
        )
        print(
            "LAPACK references (scipy gelsy, numpy pinv, jittered scipy cho_factor/cho_solve, jitter 1e-10 max K_ii) "
            "run in a subprocess with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (machine-limit references)."
        )
        print(
            "Embedding error: ||sum (a - b) phi(l)|| / ||sum b phi(l)|| against numpy pinv @ s and against "
            "nystrom_kme cod. Times: median of "
            f"{args.repeats} runs, seconds.\n"
        )
        print("| case | m | method | time (s) | emb. error vs pinv | emb. error vs cod | notes |")
        print("|---|---|---|---|---|---|---|")
        for case, m, name, t, note, err, err_cod in rows:
            ts = "-" if t is None else f"{t:.3f}"
            es = "-" if err == "" else f"{err:.1e}"
            ec = "-" if err_cod == "" else f"{err_cod:.1e}"
            print(f"| {case} | {m} | {name} | {ts} | {es} | {ec} | {note} |")
    finally:
        shutil.rmtree(work, ignore_errors=True)


# --------------------------------------------------------------------------- core mode

CORE_SIZES = [1000, 2000, 4000]
CORE_COLUMNS = 201  # right-hand sides of nystrom_feature_sums: B = 200 splits + the pooled sums


def core_problem(m: int) -> dict:
    """The landmarks, right-hand sides and bandwidths of core mode at m (seeded by m)."""
    rng = np.random.default_rng(m)
    d, n = 5, 10 * m
    X = rng.standard_normal((n, d))
    sub = X[:2000]
    dist = np.sqrt(np.maximum((sub * sub).sum(1)[:, None] + (sub * sub).sum(1)[None, :] - 2.0 * sub @ sub.T, 0.0))
    median = float(np.median(dist[np.triu_indices(len(sub), 1)]))
    return {
        "X": X,
        "L": X[rng.choice(n, m, replace=False)],
        "median": median,
        "S": rng.standard_normal((m, CORE_COLUMNS)),
    }


def core_worker(m: int, repeats: int, out_path: str) -> dict:
    """Times this process's nystrom_kme._core on the problem of m; saves the results."""
    from nystrom_kme import _core

    p = core_problem(m)
    L, X = p["L"], p["X"]
    timings: dict = {}
    saved: dict = {}

    def timed(name, fn):
        fn()  # warm-up: first-touch pages, OpenMP team
        walls, cpus = [], []
        for _ in range(repeats):
            w0, c0 = time.perf_counter(), time.process_time()
            r = fn()
            walls.append(time.perf_counter() - w0)
            cpus.append(time.process_time() - c0)
        timings[name] = statistics.median(walls)
        timings[name + " cpu"] = statistics.median(cpus)
        return r

    for label, sigma in (("full rank", p["median"] / 4), ("singular", 2 * p["median"])):
        kernel = _core.Kernel("gaussian", sigma)
        s = (_core.kernel_row_sums(L, X, kernel) / len(X))[:, None]
        for solver in ("auto", "cod"):
            w, used, rank = timed(
                f"weights {solver}, {label}",
                lambda s=s, kernel=kernel, solver=solver: _core.nystrom_weights(L, s, kernel, solver),
            )
            saved[f"weights {solver}, {label}"] = w
            timings[f"weights {solver}, {label} used"] = f"{used}, rank {rank}"
        saved[f"K {label}"] = _core.kernel_matrix(L, L, kernel)
    kernel = _core.Kernel("gaussian", p["median"] / 4)
    Y, rank, _ = timed("feature sums", lambda: _core.nystrom_feature_sums(L, p["S"], kernel))
    saved["feature sums"] = Y
    timings["feature sums used"] = f"rank {rank}"
    np.savez(out_path, **saved)
    return timings


def run_core_worker(pythonpath: str | None, m: int, repeats: int, out_path: str) -> dict:
    env = dict(os.environ)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    command = [sys.executable, "-m", "bench.solve", "--worker", str(m), str(repeats), out_path]
    out = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        sys.exit(f"worker failed: {' '.join(command)}\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def core_agreement(before: str, after: str) -> dict:
    """Largest differences between two builds' results of one m (see the module docstring)."""
    a, b = np.load(after), np.load(before)
    out = {}
    for key in a.files:
        if key.startswith("weights"):
            K = a["K " + key.split(", ", 1)[1]]
            out[key] = rkhs_rel(K, a[key], b[key])
    qa, qb = (a["feature sums"] ** 2).sum(0), (b["feature sums"] ** 2).sum(0)
    out["feature sums"] = float(np.max(np.abs(qa - qb) / np.abs(qb)))
    return out


def core_main(args) -> None:
    sizes = args.sizes or CORE_SIZES
    work = OUT / "solve_core"
    work.mkdir(parents=True, exist_ok=True)
    builds = {"after": None} if args.before is None else {"before": args.before, "after": None}
    print(
        f"# python -m bench.solve --core{' --before ' + args.before if args.before else ''} "
        f"--rounds {args.rounds} --repeats {args.repeats}: {utc_now()}; {machine()}; "
        f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS', 'unset')}\n"
    )
    for m in sizes:
        per_build: dict = {name: [] for name in builds}
        for _ in range(args.rounds):
            for name, path in builds.items():
                per_build[name].append(run_core_worker(path, m, args.repeats, str(work / f"{name}_{m}.npz")))
        cases = [k for k in per_build["after"][0] if not k.endswith(("used", "cpu"))]
        agree = core_agreement(str(work / f"before_{m}.npz"), str(work / f"after_{m}.npz")) if args.before else {}
        print(f"m = {m}, {machine().split('; ')[-1]}\n")
        head = "| call | " + " | ".join(f"{b} wall s | {b} CPU s" for b in builds)
        head += " | before / after, wall | before / after, CPU | difference |" if args.before else " |"
        print(head)
        print("|---" * (head.count("|") - 1) + "|")
        for case in cases:
            wall = {b: statistics.median(r[case] for r in per_build[b]) for b in builds}
            cpu = {b: statistics.median(r[case + " cpu"] for r in per_build[b]) for b in builds}
            used = per_build["after"][0].get(case + " used", "")
            if args.before and per_build["before"][0].get(case + " used", "") != used:
                used += "; before: " + per_build["before"][0].get(case + " used", "")
            row = f"| {case} ({used}) | " + " | ".join(f"{wall[b]:.3f} | {cpu[b]:.3f}" for b in builds)
            if args.before:
                row += (
                    f" | {wall['before'] / wall['after']:.2f} | {cpu['before'] / cpu['after']:.2f}"
                    f" | {agree[case]:.1e} |"
                )
            else:
                row += " |"
            print(row)
        if args.before:
            before = np.load(work / f"before_{m}.npz")
            scale = {
                label: rkhs_rel(before["K " + label], before[f"weights auto, {label}"], before[f"weights cod, {label}"])
                for label in ("full rank", "singular")
            }
            print(
                f"\nFor scale, auto against cod within the before build: {scale['full rank']:.1e} (full rank), "
                f"{scale['singular']:.1e} (singular)."
            )
        print()


if __name__ == "__main__":
    main()
