"""Machine limits the benchmarks compare against, measured in the same run: peak
numpy GEMM flop/s and the glibc libmvec vector exp rate (bench/exp_limit.cpp).

The GEMM limit and the LAPACK references are measured with OPENBLAS_CORETYPE and
OPENBLAS_L2_SIZE unset (limit_env), so that OpenBLAS picks its best kernel for this CPU."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.harness import BENCH_DIR

OPENBLAS_OVERRIDES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def limit_env(**extra: str) -> dict:
    """This process's environment without the OPENBLAS_OVERRIDES, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in OPENBLAS_OVERRIDES}
    env.update(extra)
    return env


def openblas_overrides() -> str:
    """'OPENBLAS_CORETYPE=..., OPENBLAS_L2_SIZE=...' as set in this process ('unset' if not)."""
    return ", ".join(f"{k}={os.environ.get(k, 'unset')}" for k in OPENBLAS_OVERRIDES)


# --------------------------------------------------------------------------- GEMM limit

_GEMM_CODE = r"""
import json, sys, time
import numpy as np
from threadpoolctl import threadpool_info
N = int(sys.argv[1]); reps = int(sys.argv[2])
rng = np.random.default_rng(0)
res = {}
for name in ("float64", "float32"):
    a = rng.standard_normal((N, N)).astype(name)
    b = rng.standard_normal((N, N)).astype(name)
    c = np.empty((N, N), dtype=name)
    np.matmul(a, b, out=c)  # warm-up
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter(); np.matmul(a, b, out=c); best = min(best, time.perf_counter() - t0)
    res[name] = 2.0 * N**3 / best
res["blas"] = [
    {k: d.get(k) for k in ("internal_api", "architecture", "num_threads", "version", "filepath")}
    for d in threadpool_info() if d.get("user_api") == "blas"
]
print(json.dumps(res))
"""


def gemm_rates(n: int, reps: int, unset_openblas_env: bool) -> dict:
    """Best-of-`reps` n x n numpy matmul flop/s ('float64', 'float32') and the BLAS in use
    ('blas'), in a subprocess; with unset_openblas_env, without the OPENBLAS_OVERRIDES."""
    env = limit_env() if unset_openblas_env else dict(os.environ)
    out = subprocess.run(
        [sys.executable, "-c", _GEMM_CODE, str(n), str(reps)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


# --------------------------------------------------------------------------- exp limit


def exp_rates(n_threads: int, reps: int) -> dict:
    """libmvec exp values/s on n_threads threads ('float64', 'float32'), the _ZGV vector
    symbols in the binary ('zgv') and the compile command ('cmd')."""
    src = BENCH_DIR / "exp_limit.cpp"
    with tempfile.TemporaryDirectory(prefix="exp_limit_") as tmp:
        exe = Path(tmp) / "exp_limit"
        cmd = ["g++", "-O3", "-march=native", "-ffast-math", "-fopenmp", str(src), "-o", str(exe)]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        zgv = []
        if shutil.which("objdump"):
            dis = subprocess.run(["objdump", "-d", str(exe)], capture_output=True, text=True, check=False).stdout
            zgv = sorted(set(re.findall(r"_ZGV\w+", dis)))
        env = dict(os.environ, OMP_NUM_THREADS=str(n_threads))
        out = subprocess.run(
            [str(exe), str(n_threads), str(reps), "5"], env=env, capture_output=True, text=True, check=True
        ).stdout
    vals = dict(line.split() for line in out.strip().splitlines())
    return {
        "float64": float(vals["double"]),
        "float32": float(vals["float"]),
        "threads": int(vals["threads"]),
        "zgv": zgv,
        "cmd": " ".join(cmd[:-2]),
    }
