"""Shared helpers of the bench scripts: machine description, timing, peak memory."""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from typing import Any, Callable


def machine() -> str:
    """'<lscpu model name>, <n> CPUs' (falls back to platform data)."""
    model = platform.processor() or "unknown CPU"
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except (OSError, subprocess.CalledProcessError):
        pass
    return f"{model}, {os.cpu_count()} CPUs"


def median_time(fn: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Median wall time of `repeats` calls and the last result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_worker(script: str, *args: str) -> dict:
    """Runs `python script --worker args...` in a fresh process (clean peak RSS); JSON out."""
    out = subprocess.run([sys.executable, script, "--worker", *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"worker {args} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])
