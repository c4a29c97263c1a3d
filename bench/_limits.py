"""Machine limits the benchmarks compare against, measured in the same run: peak
numpy GEMM flop/s and the glibc libmvec vector exp rate (bench/exp_limit.cpp)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


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
    env = dict(os.environ)
    if unset_openblas_env:
        env.pop("OPENBLAS_CORETYPE", None)
        env.pop("OPENBLAS_L2_SIZE", None)
    out = subprocess.run(
        [sys.executable, "-c", _GEMM_CODE, str(n), str(reps)],
        env=env, capture_output=True, text=True, check=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


# --------------------------------------------------------------------------- exp limit


def exp_rates(n_threads: int, reps: int) -> dict:
    src = HERE / "exp_limit.cpp"
    with tempfile.TemporaryDirectory(prefix="exp_limit_") as tmp:
        exe = Path(tmp) / "exp_limit"
        cmd = ["g++", "-O3", "-march=native", "-ffast-math", "-fopenmp", str(src), "-o", str(exe)]
        subprocess.run(cmd, check=True, capture_output=True, text=True)
        zgv = []
        if shutil.which("objdump"):
            dis = subprocess.run(["objdump", "-d", str(exe)], capture_output=True, text=True).stdout
            zgv = sorted(set(re.findall(r"_ZGV\w+", dis)))
        env = dict(os.environ, OMP_NUM_THREADS=str(n_threads))
        out = subprocess.run([str(exe), str(n_threads), str(reps), "5"], env=env,
                             capture_output=True, text=True, check=True).stdout
    vals = dict(line.split() for line in out.strip().splitlines())
    return {"float64": float(vals["double"]), "float32": float(vals["float"]),
            "threads": int(vals["threads"]), "zgv": zgv, "cmd": " ".join(cmd[:-2])}
