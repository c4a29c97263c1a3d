"""CPU thread scaling of the fit, the permutation tests and the landmark samplers: each
workload at 1, 2, 4, ... threads, each run in a fresh process (``OMP_NUM_THREADS`` and
``n_threads`` both set), median of ``--repeats`` runs of the call itself (data made
before the clock starts). Prints a Markdown table with the speed-up over one thread.

    python -m bench.threads                       # 1, 2, 4, 8, 16 threads (capped at the CPUs)
    python -m bench.threads --threads 1 2 --quick # sizes / 10

The machines this project runs on have 2 cores; the GPU machine of issue 30 has 16.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

#: name -> (what it runs, its size at full scale)
WORKLOADS = {
    "fit f64 (10^6, 1000, 10)": ("fit", {"n": 10**6, "m": 1000, "d": 10, "dtype": "float64"}),
    "fit f32 (10^6, 1000, 10)": ("fit", {"n": 10**6, "m": 1000, "d": 10, "dtype": "float32"}),
    "test, 10^5 per sample, m = 1000, B = 200": ("test", {"n": 10**5, "m": 1000, "d": 10}),
    "aggregated test, 10^5 per sample, m = 1000, B = 200": ("aggregated", {"n": 10**5, "m": 1000, "d": 10}),
    "block-rpcholesky (5·10^4, 1000, 10)": ("sampler", {"name": "block-rpcholesky", "n": 50_000, "m": 1000}),
    "rpcholesky (5·10^4, 1000, 10)": ("sampler", {"name": "rpcholesky", "n": 50_000, "m": 1000}),
    "rls (2·10^4, 500, 10)": ("sampler", {"name": "rls", "n": 20_000, "m": 500}),
}


def run_one(kind: str, size: dict, threads: int, scale: int) -> float:
    """Seconds of one call in this process."""
    import numpy as np

    import nystrom_kme as nk

    rng = np.random.default_rng(0)
    if kind == "fit":
        X = rng.normal(size=(size["n"] // scale, size["d"])).astype(size["dtype"])
        est = nk.NystromKME(nk.Gaussian(np.sqrt(size["d"])), n_landmarks=size["m"], random_state=0, n_threads=threads)
        t0 = time.perf_counter()
        est.fit(X)
        return time.perf_counter() - t0
    if kind in ("test", "aggregated"):
        n = size["n"] // scale
        X = rng.normal(size=(n, size["d"]))
        Y = rng.normal(size=(n, size["d"])) + 0.01
        kernel = nk.Gaussian(np.sqrt(size["d"])) if kind == "test" else nk.KernelCollection()
        t0 = time.perf_counter()
        nk.two_sample_test(
            X, Y, kernel=kernel, n_landmarks=size["m"], n_permutations=200, random_state=0, n_threads=threads
        )
        return time.perf_counter() - t0
    from nystrom_kme import sampling

    X = rng.normal(size=(size["n"] // scale, 10))
    policy = {
        "block-rpcholesky": sampling.BlockRPCholeskySampling,
        "rpcholesky": sampling.RPCholeskySampling,
        "rls": sampling.RidgeLeverageSampling,
    }[size["name"]](n_threads=threads)
    kernel = nk.Gaussian(np.sqrt(10.0))
    t0 = time.perf_counter()
    policy.select_indices(X, kernel, size["m"] // (1 if scale == 1 else 4), np.random.default_rng(1))
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.threads", description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="sizes / 10 (a smoke run)")
    parser.add_argument("--only", nargs="*", default=None, help="workload names containing these words")
    parser.add_argument("--json", default=None, help="also write the medians here")
    parser.add_argument("--worker", nargs=3, metavar=("KIND", "SIZE", "THREADS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    if args.worker:
        kind, size, threads = args.worker
        print(json.dumps(run_one(kind, json.loads(size), int(threads), scale)))
        return 0
    cpus = os.cpu_count() or 1
    threads = [t for t in args.threads if t <= cpus]
    chosen = {k: v for k, v in WORKLOADS.items() if not args.only or any(w in k for w in args.only)}
    print(f"CPU threads: {threads} of {cpus} CPUs; median of {args.repeats} runs, seconds\n")
    print("| workload | " + " | ".join(str(t) for t in threads) + f" | {threads[-1]} vs 1 |")
    print("|---|" + "---|" * (len(threads) + 1))
    results: dict[str, dict[int, float]] = {}
    for name, (kind, size) in chosen.items():
        row = {}
        for t in threads:
            env = {**os.environ, "OMP_NUM_THREADS": str(t), "OPENBLAS_NUM_THREADS": "1"}
            cmd = [sys.executable, "-m", "bench.threads", "--worker", kind, json.dumps(size), str(t)]
            if args.quick:
                cmd.append("--quick")
            times = []
            for _ in range(args.repeats):
                out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
                times.append(float(out.stdout.strip().splitlines()[-1]))
            row[t] = statistics.median(times)
        results[name] = row
        cells = " | ".join(f"{row[t]:.3f}" for t in threads)
        print(f"| {name} | {cells} | {row[threads[0]] / row[threads[-1]]:.1f}× |", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"threads": threads, "cpus": cpus, "seconds": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
