"""Which columns moved (issue 43 item 9): nk.column_report's landmarks, cost and level.

* ``--landmarks``: one column's test (the default test, Nystrom) at m = 50, 100, 200, 400
  and the test's own default m (1024 at 2 10^4 pooled rows), its power on 1-D
  alternatives at n = 10^4 rows per sample: a shift of 0.04 sd, a spread 1.05 times
  wider, a sinusoidal ripple of the density (amplitude 0.12, frequency 12), 0.6% of the
  rows in a tight cluster (sd 0.01 at 0.5); what sets ``COLUMN_LANDMARKS``.
* ``--bins``: the same test with the B = 3999 permutations of a 100-column report, its
  power at alpha = 0.01 with at most 256, 512 and 2048 bins (the test's own default), and
  its time: what sets ``COLUMN_MAX_BINS``.
* ``--cost``: the report's wall and process CPU time at d = 10 and 100 columns, n = 10^4
  and 10^5 rows per sample (N(0, I) against a batch with 10% of the columns shifted by
  0.05 sd), beside one joint ``two_sample_test`` of the same data, with the load.
* ``--level``: the family-wise error (Holm) and the false discovery rate (BH, BY) over
  repetitions: every column unmoved (equicorrelated columns, rho = 0.5: the columns of one
  table are dependent), and 3 of 10 columns shifted by 0.3 sd (the error counted over the
  7 unmoved ones, with the power on the 3).

Each cell appends a JSON line to ``--out`` (default bench/out/columns.jsonl); ``--report``
prints the tables from it.

Usage: ``python -m bench.columns --landmarks --reps 30``, ``--bins --reps 30``, ``--cost``,
``--level --reps 200``, ``--report``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

import nystrom_kme as nk
from bench.harness import OUT, load_average, machine_info
from nystrom_kme.column_report import adjusted_pvalues

FILE = OUT / "columns.jsonl"


def _write(out: Path, record: dict[str, Any]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a") as f:
        f.write(json.dumps(record) + "\n")
    print(json.dumps(record), flush=True)


# --------------------------------------------------------------------------- landmarks


def alternative(kind: str, n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(X, Y), each (n, 1): X standard normal, Y from the alternative ``kind``."""
    X = rng.normal(size=(n, 1))
    if kind == "shift":
        return X, rng.normal(size=(n, 1)) + 0.04
    if kind == "scale":
        return X, rng.normal(size=(n, 1)) * 1.05
    if kind == "cluster":
        Y = rng.normal(size=(n, 1))
        k = int(0.006 * n)
        Y[:k] = 0.5 + 0.01 * rng.normal(size=(k, 1))
        return X, Y
    if kind == "ripple":  # density proportional to phi(z) (1 + 0.12 sin 12 z), by rejection
        Z = rng.normal(size=(4 * n, 1))
        keep = rng.random(4 * n) < (1 + 0.12 * np.sin(12 * Z[:, 0])) / 1.12
        return X, Z[keep][:n]
    raise ValueError(kind)


def landmarks(args: argparse.Namespace) -> None:
    n = args.n
    for kind in ("shift", "scale", "ripple", "cluster"):
        for m in (50, 100, 200, 400, None):
            hits, seconds = 0, 0.0
            for r in range(args.reps):
                X, Y = alternative(kind, n, np.random.default_rng(r))
                t = time.perf_counter()
                res = nk.two_sample_test(X, Y, method="nystrom", n_landmarks=m, random_state=r)
                seconds += time.perf_counter() - t
                hits += res.pvalue <= 0.05
            _write(
                args.out,
                {
                    "mode": "landmarks",
                    "kind": kind,
                    "n": n,
                    "m": res.n_landmarks,
                    "asked": m,
                    "reps": args.reps,
                    "power": hits / args.reps,
                    "seconds": seconds / args.reps,
                    "load": load_average(),
                },
            )


def bins(args: argparse.Namespace) -> None:
    n = args.n
    for kind in ("shift", "scale", "ripple"):
        for max_bins in (256, 512, 2048):
            hits, seconds = 0, 0.0
            for r in range(args.reps):
                X, Y = alternative(kind, n, np.random.default_rng(r))
                t = time.perf_counter()
                res = nk.two_sample_test(
                    X, Y, method="nystrom", n_landmarks=200, n_permutations=3999, max_bins=max_bins, random_state=r
                )
                seconds += time.perf_counter() - t
                hits += res.pvalue <= 0.01
            _write(
                args.out,
                {
                    "mode": "bins",
                    "kind": kind,
                    "n": n,
                    "max_bins": max_bins,
                    "reps": args.reps,
                    "power_at_0.01": hits / args.reps,
                    "seconds": seconds / args.reps,
                    "load": load_average(),
                },
            )


# --------------------------------------------------------------------------- cost


def cost(args: argparse.Namespace) -> None:
    info = machine_info()
    for d in (10, 100):
        for n in (10_000, 100_000):
            rng = np.random.default_rng(d + n)
            X, Y = rng.normal(size=(n, d)), rng.normal(size=(n, d))
            Y[:, : d // 10] += 0.05
            t, c = time.perf_counter(), time.process_time()
            rep = nk.column_report(X, Y, random_state=0)
            wall, cpu = time.perf_counter() - t, time.process_time() - c
            t, c = time.perf_counter(), time.process_time()
            joint = nk.two_sample_test(X, Y, random_state=0)
            jwall, jcpu = time.perf_counter() - t, time.process_time() - c
            _write(
                args.out,
                {
                    "mode": "cost",
                    "d": d,
                    "n": n,
                    "B": rep.n_permutations,
                    "report_s": wall,
                    "report_cpu_s": cpu,
                    "joint_s": jwall,
                    "joint_cpu_s": jcpu,
                    "joint_m": joint.n_landmarks,
                    "moved": len(rep.moved),
                    "shifted": d // 10,
                    "joint_p": joint.pvalue,
                    "model": info["model"],
                    "cpus": info["cpus"],
                    "load": load_average(),
                },
            )


# --------------------------------------------------------------------------- level


def level(args: argparse.Namespace) -> None:
    rho = 0.5
    for d, n, moved, reps in ((10, 500, 0, args.reps), (10, 500, 3, args.reps), (100, 200, 0, args.reps_wide)):
        L = np.linalg.cholesky(np.full((d, d), rho) + (1 - rho) * np.eye(d))
        counts: dict[str, list[float]] = defaultdict(list)
        t = time.perf_counter()
        pvalues = []
        for r in range(reps):
            rng = np.random.default_rng([d, moved, r])
            X, Y = rng.normal(size=(n, d)) @ L.T, rng.normal(size=(n, d)) @ L.T
            Y[:, :moved] += 0.3
            rep = nk.column_report(X, Y, random_state=r)
            pvalues.append(rep.pvalues.tolist())
            for method in ("holm", "bh", "by"):
                named = adjusted_pvalues(rep.pvalues, method) <= 0.05
                false = int(named[moved:].sum())
                counts[f"{method}_fwer"].append(float(false > 0))
                counts[f"{method}_fdp"].append(false / max(int(named.sum()), 1))
                if moved:
                    counts[f"{method}_power"].append(float(named[:moved].mean()))
        raw = np.array(pvalues)[:, moved:]
        _write(
            args.out,
            {
                "mode": "level",
                "d": d,
                "n": n,
                "moved": moved,
                "reps": reps,
                "B": rep.n_permutations,
                **{k: float(np.mean(v)) for k, v in counts.items()},
                "column_level": float((raw <= 0.05).mean()),
                "uncorrected_fwer": float((raw <= 0.05).any(axis=1).mean()),
                "seconds": time.perf_counter() - t,
                "load": load_average(),
            },
        )


# --------------------------------------------------------------------------- report


def report(args: argparse.Namespace) -> None:
    rows = [json.loads(line) for line in args.out.read_text().splitlines() if line.strip()]
    for mode in ("landmarks", "bins", "cost", "level"):
        mine = [r for r in rows if r["mode"] == mode]
        if mine:
            print(f"\n{mode}")
            for r in mine:
                print("  " + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in r.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--landmarks", action="store_true")
    parser.add_argument("--bins", action="store_true")
    parser.add_argument("--cost", action="store_true")
    parser.add_argument("--level", action="store_true")
    parser.add_argument("--report", action="store_true")
    parser.add_argument("--reps", type=int, default=30, help="repetitions (landmarks, level at d = 10)")
    parser.add_argument("--reps-wide", type=int, default=40, help="repetitions of the level at d = 100")
    parser.add_argument("--n", type=int, default=10_000, help="rows per sample (landmarks)")
    parser.add_argument("--out", type=Path, default=FILE)
    args = parser.parse_args()
    if args.landmarks:
        landmarks(args)
    if args.bins:
        bins(args)
    if args.cost:
        cost(args)
    if args.level:
        level(args)
    if args.report or not (args.landmarks or args.bins or args.cost or args.level):
        report(args)


if __name__ == "__main__":
    main()
