"""Public calls on a busy machine: the default thread count against n_threads=1.

The script starts the load itself: for each setting of ``--busy`` (number of busy
processes: 0 = quiet, then e.g. 1 and one per CPU), it starts that many Python busy
loops (same priority as the benchmark; each ends by itself when the script is gone), lets them spin up, and
runs a worker process that times each public call with ``n_threads=None`` (the
default) and ``n_threads=1``, alternated call by call (default first in even rounds,
1 first in odd ones), median of ``--repeats`` runs after one warm-up of each (calls
shorter than ~50 ms are timed in batches, and the time per call is reported). The
busy processes are killed when the setting is done (and on any exit of the script).

Calls (float64, d = 10, Gaussian kernel of bandwidth sqrt(d), fixed landmarks count):
  rowsums    EmpiricalKME(X)(L): the kernel row sums K(L, X) 1 / n, n = 20,000, m = 100
             (rowsums-XS: n = 2,000, m = 32, a region of ~0.1 ms, where waking threads costs most)
  fit-S/M/L  NystromKME(n_landmarks=m).fit(X) (uniform landmarks) at three sizes
  rpcholesky NystromKME(sampler="rpcholesky").fit(X)
  mmd2_exact the unbiased exact MMD^2 of two samples
  two_sample two_sample_test (Nyström statistic, 200 permutations)
  suggest    bounds.suggest_n_landmarks(X) at n = 100,000 (issue 21): numpy's eigh of the
             1000 x 1000 subsample kernel matrix is most of it. Its "n_threads=1" column
             also limits numpy's BLAS to one thread (threadpoolctl), the single-BLAS-thread
             time; the default column is what a user gets (the package limits BLAS itself)
  eigh       numpy.linalg.eigh of that 1000 x 1000 matrix alone, numpy's default BLAS
             threads against one: what suggest_n_landmarks did before it limited BLAS

Each worker is a fresh process, so the OpenMP wait policy it loads can differ:
  package    the package's default (OMP_WAIT_POLICY unset: it loads PASSIVE)
  spin       libgomp's own default, spin ~300,000 times before sleeping, as before the
             package set PASSIVE (GOMP_SPINCOUNT=300000; libgomp builds only)
  active     OMP_WAIT_POLICY=ACTIVE (spin without end)

Target (issue "Reliability"): with the package's defaults, no call more than 1.5x
slower with the default threads than with n_threads=1 under contention. Issue 21 adds
for suggest: with both cores busy, within 1.5x of the single-BLAS-thread time (the
summary also divides it by the single-BLAS-thread time on the quiet machine, the
0-busy setting, when both ran).

Usage: python -m bench.contention [--quick] [--repeats R] [--busy 0,1,N] [--policies package,spin]
                                  [--calls rowsums,fit-S,...]
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import statistics
import subprocess
import sys
import time

from bench.harness import load_average, machine, run_worker, utc_now

TARGET_RATIO = 1.5
D = 10

FULL = {
    "rowsums-XS": dict(n=2_000, m=32),
    "rowsums": dict(n=20_000, m=100),
    "fit-S": dict(n=20_000, m=100),
    "fit-M": dict(n=200_000, m=500),
    "fit-L": dict(n=500_000, m=1000),
    "rpcholesky": dict(n=20_000, m=200),
    "mmd2_exact": dict(n=4_000, m=0),
    "two_sample": dict(n=20_000, m=200),
    "suggest": dict(n=100_000, m=0),
    "eigh": dict(n=1_000, m=0),
}
QUICK = {
    "rowsums-XS": dict(n=2_000, m=32),
    "rowsums": dict(n=20_000, m=100),
    "fit-S": dict(n=20_000, m=100),
    "fit-M": dict(n=100_000, m=300),
    "fit-L": dict(n=200_000, m=1000),
    "rpcholesky": dict(n=10_000, m=100),
    "mmd2_exact": dict(n=2_000, m=0),
    "two_sample": dict(n=5_000, m=100),
    "suggest": dict(n=100_000, m=0),
    "eigh": dict(n=1_000, m=0),
}
POLICY_ENV = {
    "package": {},
    "spin": {"GOMP_SPINCOUNT": "300000"},
    "active": {"OMP_WAIT_POLICY": "ACTIVE"},
}


# --------------------------------------------------------------------------- worker


def _one_blas_thread_if(nt):
    """threadpoolctl's one-BLAS-thread limit when nt == 1 (the single-thread column), else nothing."""
    import contextlib

    from threadpoolctl import threadpool_limits

    return threadpool_limits(1, user_api="blas") if nt == 1 else contextlib.nullcontext()


def _calls(sizes: dict, names: list[str]):
    """name -> (function of n_threads, description)."""
    import numpy as np

    import nystrom_kme as nk
    from nystrom_kme import bounds

    rng = np.random.default_rng(0)
    kernel = nk.Gaussian(float(np.sqrt(D)))
    out = {}
    for name in names:
        n, m = sizes[name]["n"], sizes[name]["m"]
        X = rng.normal(size=(n, D))
        if name.startswith("rowsums"):
            L = X[rng.choice(n, m, replace=False)]
            emp = nk.EmpiricalKME(kernel).fit(X)

            def f(nt, emp=emp, L=L):
                emp.set_params(n_threads=nt)
                return emp(L)

            out[name] = (f, f"EmpiricalKME(X)(L), n={n}, m={m}")
        elif name.startswith("fit-"):

            def f(nt, X=X, m=m):
                return nk.NystromKME(kernel, n_landmarks=m, random_state=0, n_threads=nt).fit(X)

            out[name] = (f, f"NystromKME.fit, n={n}, m={m}")
        elif name == "rpcholesky":

            def f(nt, X=X, m=m):
                return nk.NystromKME(kernel, n_landmarks=m, sampler="rpcholesky", random_state=0, n_threads=nt).fit(X)

            out[name] = (f, f"NystromKME(sampler='rpcholesky').fit, n={n}, m={m}")
        elif name == "mmd2_exact":
            Y = rng.normal(size=(n, D)) + 0.1

            def f(nt, X=X, Y=Y):
                return nk.mmd2_exact(X, Y, kernel=kernel, unbiased=True, n_threads=nt)

            out[name] = (f, f"mmd2_exact(unbiased), n={n} + {n}")
        elif name == "two_sample":
            Y = rng.normal(size=(n, D)) + 0.05

            def f(nt, X=X, Y=Y, m=m):
                return nk.two_sample_test(
                    X, Y, kernel=kernel, n_landmarks=m, n_permutations=200, random_state=0, n_threads=nt
                )

            out[name] = (f, f"two_sample_test, n={n} + {n}, m={m}, 200 permutations")
        elif name == "suggest":

            def f(nt, X=X):
                with _one_blas_thread_if(nt):
                    return bounds.suggest_n_landmarks(X, kernel, random_state=0, n_threads=nt)

            out[name] = (f, f"bounds.suggest_n_landmarks, n={n} (n_threads=1 column: BLAS on 1 thread too)")
        elif name == "eigh":
            K = kernel(X, n_threads=1)
            K = 0.5 * (K + K.T)

            def f(nt, K=K):
                with _one_blas_thread_if(nt):
                    return np.linalg.eigh(K)

            out[name] = (f, f"numpy.linalg.eigh of a {n} x {n} kernel matrix (BLAS default vs 1 thread)")
        else:
            raise SystemExit(f"unknown call {name!r}")
    return out


def worker(args: argparse.Namespace) -> None:
    import nystrom_kme as nk

    sizes = QUICK if args.quick else FULL
    names = args.calls.split(",")
    results = {}
    for name, (fn, desc) in _calls(sizes, names).items():
        fn(1)  # warm-up of each (thread pool, pages, caches)
        t0 = time.perf_counter()
        fn(None)
        # Short calls are timed in batches of `inner` calls of >= ~50 ms in all.
        inner = max(1, min(1000, int(0.05 / max(time.perf_counter() - t0, 1e-6))))
        times = {"default": [], "one": []}
        for r in range(args.repeats):
            order = (("default", None), ("one", 1)) if r % 2 == 0 else (("one", 1), ("default", None))
            for key, nt in order:
                t0 = time.perf_counter()
                for _ in range(inner):
                    fn(nt)
                times[key].append((time.perf_counter() - t0) / inner)
        results[name] = {"desc": desc + (f"; batches of {inner}" if inner > 1 else ""), "times": times}
    omp = nk.show_config("dicts")["openmp"]
    print(json.dumps({"results": results, "openmp": omp}))


# --------------------------------------------------------------------------- load


# Spins; exits by itself within ~0.1 s once its parent (this script) is gone.
BUSY_LOOP = "import os\np = os.getppid()\nwhile os.getppid() == p:\n    for _ in range(1_000_000):\n        pass\n"


class BusyLoops:
    """`count` Python busy loops, started on entry and killed on exit (and at exit)."""

    def __init__(self, count: int):
        self.count = count
        self.procs: list[subprocess.Popen] = []

    def __enter__(self):
        for _ in range(self.count):
            self.procs.append(subprocess.Popen([sys.executable, "-c", BUSY_LOOP], stdin=subprocess.DEVNULL))
        atexit.register(self.stop)
        time.sleep(1.0 if self.count else 0.0)
        return self

    def stop(self) -> None:
        for p in self.procs:
            if p.poll() is None:
                p.kill()
        for p in self.procs:
            p.wait()
        self.procs = []

    def __exit__(self, *exc) -> None:
        self.stop()


# --------------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--quick", action="store_true", help="smaller sizes")
    ap.add_argument("--repeats", type=int, default=5)
    ncpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    ap.add_argument(
        "--busy",
        default=f"0,1,{ncpu}" if ncpu > 1 else "0,1",
        help="busy processes per setting, comma-separated (0: quiet)",
    )
    ap.add_argument("--policies", default="package,spin", help=f"of {','.join(POLICY_ENV)}")
    ap.add_argument("--calls", default=",".join(FULL))
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return

    busy_counts = [int(b) for b in args.busy.split(",")]
    policies = args.policies.split(",")
    print(
        f"# Contention benchmark\n\n- machine: {machine()}\n- {utc_now()}; {ncpu} CPUs for this "
        f"process; median of {args.repeats} runs after one warm-up, default threads and "
        f"n_threads=1 alternated; busy loops = Python processes spinning in `for _ in range(10**6): pass`\n"
        f"- command: python -m bench.contention {' '.join(sys.argv[1:])}\n",
        flush=True,
    )
    rows = []
    for busy in busy_counts:
        with BusyLoops(busy):
            for policy in policies:
                load_before = load_average()
                env_before = {k: os.environ.get(k) for k in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
                for k in env_before:
                    os.environ.pop(k, None)
                os.environ.update(POLICY_ENV[policy])
                try:
                    extra = ["--quick"] if args.quick else []
                    res = run_worker("contention", "--repeats", str(args.repeats), "--calls", args.calls, *extra)
                finally:
                    for k, v in env_before.items():
                        os.environ.pop(k, None)
                        if v is not None:
                            os.environ[k] = v
                omp = res["openmp"]
                setting = " ".join(f"{k}={v}" for k, v in POLICY_ENV[policy].items()) or "nothing set"
                print(
                    f"## {busy} busy process(es), policy {policy} ({setting}; the package loaded "
                    f"OMP_WAIT_POLICY={omp['wait_policy']}): default threads {omp['default_threads']}; "
                    f"{load_before} before\n",
                    flush=True,
                )
                print("| call | default s | n_threads=1 s | default / 1 |\n|---|---|---|---|")
                for name, r in res["results"].items():
                    md = statistics.median(r["times"]["default"])
                    m1 = statistics.median(r["times"]["one"])
                    ratio = md / m1
                    flag = "" if busy == 0 or ratio <= TARGET_RATIO else " MISS"
                    print(f"| {name}: {r['desc']} | {md:.4g} | {m1:.4g} | {ratio:.2f}{flag} |", flush=True)
                    rows.append((busy, policy, name, md, m1, ratio, r["times"]))
                print(flush=True)
    print("Run times (s), default | n_threads=1:")
    for busy, policy, name, _, _, _, t in rows:
        print(
            f"- busy {busy}, {policy}, {name}: "
            + ", ".join(f"{x:.4g}" for x in t["default"])
            + " | "
            + ", ".join(f"{x:.4g}" for x in t["one"])
        )
    quiet_one = {(r[1], r[2]): r[4] for r in rows if r[0] == 0}
    for busy, policy, name, md, _, ratio, _ in rows:
        if name == "suggest" and busy > 0 and policy == "package":
            base = quiet_one.get((policy, name))
            quiet = f"; / the quiet single-BLAS-thread time {base:.4g} s = {md / base:.2f}" if base else ""
            print(
                f"suggest_n_landmarks with {busy} busy: {md:.4g} s, {ratio:.2f} x its single-BLAS-thread "
                f"time under the same load (target <= {TARGET_RATIO}: "
                f"{'ok' if ratio <= TARGET_RATIO else 'MISS'}){quiet}"
            )
    worst = [(r[5], r) for r in rows if r[0] > 0 and r[1] == "package" and r[2] != "eigh"]
    if worst:
        ratio, r = max(worst)
        verdict = "ok" if ratio <= TARGET_RATIO else "MISS"
        print(
            f"\nWorst default/1 ratio under load with the package's defaults: {ratio:.2f} "
            f"({r[2]}, {r[0]} busy; target <= {TARGET_RATIO}: {verdict})"
        )
    print(f"- {load_average()} at the end")


if __name__ == "__main__":
    main()
