"""The speed each kind of build gets: runtime SIMD dispatch against -march=native.

Builds, from this tree (and optionally an older commit), into bench/out/dispatch/:

* ``reference``: ``--reference-commit`` (default 287ebe3, the last build whose speed
  depended on -march=native), built with -march=native as it was then;
* ``native``:   this tree with NYSTROM_KME_NATIVE_ARCH=ON (-march=native);
* ``portable``: this tree as wheels are built (no -march; levels chosen at run time),
  also run with NYSTROM_KME_SIMD forced to each lower level the CPU supports;
* the C++ example ``cpp/examples/fit_example`` compiled by a consumer against the
  portable install with default flags plus -DCMAKE_BUILD_TYPE=Release, and the same
  with -march=native added.

Then times ``NystromKME(Gaussian(sqrt d), n_landmarks=m).fit(X)`` (uniform landmarks:
kernel row sums plus the solve) for each variant in fresh processes, interleaved over
``--rounds`` rounds (each process: a warm-up fit, then ``--fits`` timed fits), and the
example's row sums + solve the same way. Ratios are medians of per-round ratios, so
slow phases of a shared machine hit both sides of a ratio.

Usage: python -m bench.dispatch [--rounds 3] [--fits 2] [--quick] [--no-build]
       [--reference-commit REV | --no-reference] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from bench import harness
from bench.harness import ROOT, load_average, machine, utc_now

OUT = harness.OUT / "dispatch"

SIZES = [(10**6, 1000, 10), (10**6, 1000, 100)]
QUICK_SIZES = [(10**5, 300, 10), (10**5, 300, 100)]
TARGET_PORTABLE = 1.10
TARGET_CONSUMER = 1.15

# Run with PYTHONPATH = the build to time (variant_env), from "/" so nothing else shadows it.
WORKER = r"""
import json, sys, time
import numpy as np
import nystrom_kme as nk
n, m, d, dtype, fits = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
X = np.random.default_rng(0).standard_normal((n, d), dtype=np.dtype(dtype))
kme = nk.NystromKME(nk.Gaussian(float(np.sqrt(d))), n_landmarks=m, random_state=0)
kme.fit(X)  # warm-up: page in X, start the OpenMP threads
times = []
for _ in range(fits):
    t = time.perf_counter(); kme.fit(X); times.append(time.perf_counter() - t)
level = nk.simd_level() if hasattr(nk, "simd_level") else "march=native"
print(json.dumps({"times": times, "level": level, "path": nk.__file__}))
"""


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


def pip_build(src: Path, target: Path, native: bool) -> None:
    """`pip install --target` of src (no build isolation: the bench venv has the build deps)."""
    if target.exists():
        shutil.rmtree(target)
    env = {**os.environ, "NYSTROM_KME_NATIVE_ARCH": "ON" if native else "OFF"}
    build_dir = OUT / "build" / target.name
    print(f"building {target.name} from {src} (-march=native: {native}) ...", flush=True)
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(target),
            str(src),
            f"-Cbuild-dir={build_dir}",
        ],
        env=env,
    )


def cmake_example(build: Path, cmake_dir: Path, extra_flags: str) -> Path:
    if build.exists():
        shutil.rmtree(build)
    args = [
        "cmake",
        "-S",
        str(ROOT / "cpp" / "examples"),
        "-B",
        str(build),
        "-G",
        "Ninja",
        "-DCMAKE_BUILD_TYPE=Release",
        f"-Dnystrom_kme_DIR={cmake_dir}",
    ]
    if extra_flags:
        args.append(f"-DCMAKE_CXX_FLAGS={extra_flags}")
    print(f"building the example in {build.name} (CXXFLAGS: {extra_flags or 'none'}) ...", flush=True)
    run(args)
    run(["cmake", "--build", str(build)])
    return build / "fit_example"


def build_all(reference_commit: str | None) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    if reference_commit:
        worktree = OUT / "reference-src"
        if worktree.exists():
            run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)])
        run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(worktree), reference_commit])
        try:
            pip_build(worktree, OUT / "reference", native=True)
        finally:
            run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(worktree)])
    pip_build(ROOT, OUT / "native", native=True)
    pip_build(ROOT, OUT / "portable", native=False)
    cmake_dir = OUT / "portable" / "nystrom_kme" / "share" / "cmake" / "nystrom_kme"
    cmake_example(OUT / "example-consumer", cmake_dir, "")
    cmake_example(OUT / "example-native", cmake_dir, "-march=native")


def variant_env(variant: str, level: str | None = None) -> dict:
    """This environment with PYTHONPATH = the build `variant` (so that its nystrom_kme is
    imported) and NYSTROM_KME_SIMD = level (unset when None)."""
    env = {k: v for k, v in os.environ.items() if k != "NYSTROM_KME_SIMD"}
    env["PYTHONPATH"] = str(OUT / variant)
    if level:
        env["NYSTROM_KME_SIMD"] = level
    return env


def time_python(variant: str, level: str | None, size: tuple[int, int, int], dtype: str, fits: int) -> dict:
    n, m, d = size
    out = run(
        [sys.executable, "-c", WORKER, str(n), str(m), str(d), dtype, str(fits)],
        env=variant_env(variant, level),
        cwd="/",
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if str(OUT / variant) not in result["path"]:
        raise RuntimeError(f"{variant} imported {result['path']}")
    return result


def time_example(exe: Path, size: tuple[int, int, int], fits: int) -> dict:
    n, m, d = size
    times = []
    level = "?"
    for _ in range(fits + 1):  # the first run is a warm-up
        out = run([str(exe), str(n), str(m), str(d)]).stdout
        rows, solve = re.search(r"row sums ([\d.]+) s, solve ([\d.]+) s", out).groups()
        level = re.search(r"SIMD level (\w+)", out).group(1)
        times.append(float(rows) + float(solve))
    return {"times": times[1:], "level": level}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--fits", type=int, default=2, help="timed fits per process (after a warm-up)")
    ap.add_argument("--quick", action="store_true", help="n = 10^5, m = 300 (a smoke run)")
    ap.add_argument("--no-build", action="store_true", help="reuse the builds in bench/out/dispatch")
    ap.add_argument("--reference-commit", default="287ebe3")
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument("--out", type=Path, default=OUT / "results.json")
    args = ap.parse_args()
    reference = None if args.no_reference else args.reference_commit
    if not args.no_build:
        build_all(reference)
    sizes = QUICK_SIZES if args.quick else SIZES

    probe = json.loads(
        run(
            [sys.executable, "-c", ("import json, nystrom_kme as nk; print(json.dumps(nk.show_config(mode='dicts')))")],
            env=variant_env("portable"),
            cwd="/",
        ).stdout
    )
    lower = [lvl for lvl in probe["simd"]["available"][:-1]]
    variants = ([("reference", None)] if reference else []) + [("native", None), ("portable", None)]
    variants += [("portable", lvl) for lvl in reversed(lower)]

    print(f"# Build variants (bench/dispatch.py)\n\n- machine: {machine()} at start")
    print(
        f"- {utc_now()}; rounds {args.rounds} x {args.fits} "
        f"fits per process; portable build's best level: {probe['simd']['level']}\n"
    )
    results: dict = {"machine": machine(), "sizes": {}}
    for size in sizes:
        for dtype in ("float64", "float32"):
            key = f"{size} {dtype}"
            per_round: dict[str, list[list[float]]] = {}
            for _ in range(args.rounds):
                for variant, level in variants:
                    name = variant + (f"@{level}" if level else "")
                    res = time_python(variant, level, size, dtype, args.fits)
                    per_round.setdefault(name, []).append(res["times"])
                if dtype == "float64":
                    for name, exe in (
                        ("example-consumer", OUT / "example-consumer" / "fit_example"),
                        ("example-native", OUT / "example-native" / "fit_example"),
                    ):
                        per_round.setdefault(name, []).append(time_example(exe, size, args.fits)["times"])
            results["sizes"][key] = per_round
            report(size, dtype, per_round)
    print(f"\n- {load_average()} at the end")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1))


def ratio(per_round: dict, a: str, b: str) -> float:
    """Median over rounds of median(a) / median(b) in that round."""
    return statistics.median(statistics.median(x) / statistics.median(y) for x, y in zip(per_round[a], per_round[b]))


def report(size: tuple[int, int, int], dtype: str, per_round: dict) -> None:
    n, m, d = size
    print(f"\n## fit at (n, m, d) = ({n:.0e}, {m}, {d}), {dtype}\n")
    print("| variant | median s | min s | max s | vs native |")
    print("|---|---|---|---|---|")
    for name, rounds in per_round.items():
        flat = [t for r in rounds for t in r]
        base = "example-native" if name.startswith("example") else "native"
        print(
            f"| {name} | {statistics.median(flat):.3f} | {min(flat):.3f} | {max(flat):.3f} | "
            f"{ratio(per_round, name, base):.3f} |"
        )
    checks = [("portable", "native", TARGET_PORTABLE)]
    if "reference" in per_round:
        checks.append(("portable", "reference", TARGET_PORTABLE))
    if "example-consumer" in per_round:
        checks.append(("example-consumer", "example-native", TARGET_CONSUMER))
    for a, b, target in checks:
        r = ratio(per_round, a, b)
        print(f"- {a} / {b}: **{r:.3f}** (target <= {target}: {'ok' if r <= target else 'MISS'})")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
