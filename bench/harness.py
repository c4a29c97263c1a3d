"""The harness every bench script shares: where things are, the machine, timing, memory,
worker processes, and the numpy baselines the core is compared with.

It imports numpy but not nystrom_kme, so scripts that test the C++ headers alone
(bench/solve.py) can use it too.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, NamedTuple

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
ROOT = BENCH_DIR.parent  # the repository root: workers run from here
OUT = BENCH_DIR / "out"  # results, builds and figures of the scripts (ignored by git)

__all__ = [
    "BENCH_DIR",
    "NUMPY_BLOCK",
    "OUT",
    "ROOT",
    "RowSums",
    "RssPeak",
    "WorkerError",
    "gaussian_kernel",
    "load_average",
    "machine",
    "machine_info",
    "median_time",
    "mem_available_gb",
    "numpy_row_sums",
    "peak_rss_mb",
    "rss_mb",
    "run_worker",
    "time_calls",
    "utc_now",
]


# --------------------------------------------------------------------------- machine


def machine_info() -> dict:
    """{'model': lscpu model name, 'cpus': os.cpu_count(), 'load': 1, 5, 15 min load averages}."""
    model = platform.processor() or "unknown CPU"
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return {"model": model, "cpus": os.cpu_count(), "load": os.getloadavg()}


def _load_text(load: tuple[float, ...]) -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in load)


def load_average() -> str:
    """'load average 1.02, 0.85, 0.60' (1, 5 and 15 minutes), read now."""
    return _load_text(os.getloadavg())


def machine() -> str:
    """'<lscpu model name>, <n> CPUs; load average a, b, c' (model falls back to platform data)."""
    info = machine_info()
    return f"{info['model']}, {info['cpus']} CPUs; {_load_text(info['load'])}"


def utc_now() -> str:
    """The current time as 'YYYY-MM-DD HH:MM UTC'."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())


# --------------------------------------------------------------------------- timing


def time_calls(fn: Callable[[], Any], repeats: int) -> tuple[list[float], Any]:
    """Wall times of `repeats` calls of fn and the last result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return times, result


def median_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Median wall time of `repeats` calls and the last result."""
    times, result = time_calls(fn, repeats)
    return statistics.median(times), result


# --------------------------------------------------------------------------- memory


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (ru_maxrss), in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _proc_kb(path: str, field: str) -> int:
    """The kB value of `field:` in a /proc file such as /proc/self/status."""
    with open(path) as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {field} in {path}")


def rss_mb(field: str = "VmRSS") -> float:
    """This process's memory now, in MB: VmRSS (all resident pages) or RssAnon (private
    anonymous memory only: file-backed pages, e.g. of a memmap, are left out)."""
    return _proc_kb("/proc/self/status", field) / 1024.0


def mem_available_gb() -> float:
    """MemAvailable of /proc/meminfo, in GB (GiB)."""
    return _proc_kb("/proc/meminfo", "MemAvailable") / 1024.0**2


class RssPeak:
    """Samples `field` of /proc/self/status (VmRSS or RssAnon) every `interval` s in a
    background thread while the `with` block runs.

    start_mb: the value on entry; peak_mb: the largest value seen (sampled, so a peak
    shorter than the interval can be missed); growth_mb = peak_mb - start_mb.
    """

    def __init__(self, interval: float = 0.005, field: str = "VmRSS"):
        self.interval = interval
        self.field = field
        self._stop = threading.Event()

    def __enter__(self):
        self.start_mb = rss_mb(self.field)
        self.peak_mb = self.start_mb
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak_mb = max(self.peak_mb, rss_mb(self.field))
            self._stop.wait(self.interval)

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.peak_mb = max(self.peak_mb, rss_mb(self.field))

    @property
    def growth_mb(self) -> float:
        return self.peak_mb - self.start_mb


# --------------------------------------------------------------------------- worker processes


class WorkerError(RuntimeError):
    """A worker process exited with an error; `stderr` is what it wrote there."""

    def __init__(self, command: list[str], stderr: str):
        super().__init__(f"worker {' '.join(command[1:])} failed:\n{stderr}")
        self.stderr = stderr

    @property
    def tail(self) -> str:
        """The last line of the worker's stderr ('?' when it wrote none)."""
        return (self.stderr.strip().splitlines() or ["?"])[-1]


def run_worker(script: str, *args: str) -> dict:
    """Runs `python -m bench.<script> --worker args...` from the repository root in a fresh
    process (its own peak RSS, nothing imported yet) and returns the JSON object it
    printed last on stdout. Raises WorkerError when the process fails."""
    command = [sys.executable, "-m", f"bench.{script}", "--worker", *args]
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise WorkerError(command, out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------- numpy baselines

NUMPY_BLOCK = 8192  # rows of X per block of the blocked numpy row sums


def gaussian_kernel(A: np.ndarray, B: np.ndarray, sigma: float) -> np.ndarray:
    """Dense Gaussian kernel matrix exp(-|a - b|^2 / (2 sigma^2)), by numpy
    (||a||^2 + ||b||^2 - 2 a.b, clipped at 0)."""
    d2 = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    return np.exp(-np.maximum(d2, 0.0) / (2.0 * sigma * sigma))


class RowSums(NamedTuple):
    sums: np.ndarray  # K(L, X) 1, float64
    seconds: float  # elapsed (projected total when not complete)
    complete: bool  # False: stopped early at the deadline


def numpy_row_sums(L: np.ndarray, X: np.ndarray, bandwidth: float, deadline_s: float | None = None) -> RowSums:
    """Blocked numpy K(L, X) 1 for the Gaussian kernel, in the dtype of L and X (sums
    accumulated in float64): ||l||^2 + ||x||^2 - 2 L X_b^T over NUMPY_BLOCK-row blocks X_b
    of X, exp, sum.

    With deadline_s, stops early once the run is projected (from the blocks done so far,
    at least 1/32 of X) to exceed deadline_s, and returns the projected total time with
    complete=False.
    """
    t0 = time.perf_counter()
    n = X.shape[0]
    dt = X.dtype
    scale = dt.type(-1.0 / (2.0 * bandwidth * bandwidth))
    ln2 = np.einsum("ij,ij->i", L, L)[:, None]
    out = np.zeros(L.shape[0], dtype=np.float64)
    G = np.empty((L.shape[0], NUMPY_BLOCK), dtype=dt)
    for start in range(0, n, NUMPY_BLOCK):
        Xb = X[start : start + NUMPY_BLOCK]
        b = Xb.shape[0]
        g = G[:, :b]
        np.matmul(L, Xb.T, out=g)
        g *= dt.type(-2.0)
        g += ln2
        g += np.einsum("ij,ij->i", Xb, Xb)[None, :]
        np.maximum(g, 0, out=g)
        g *= scale
        np.exp(g, out=g)
        out += g.sum(axis=1, dtype=np.float64)
        if deadline_s is not None and start + b < n:
            el = time.perf_counter() - t0
            done = start + b
            if done >= n // 32 and el * n / done > deadline_s:
                return RowSums(out, el * n / done, False)
    return RowSums(out, time.perf_counter() - t0, True)
