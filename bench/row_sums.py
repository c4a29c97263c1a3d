"""Benchmark ``_core.kernel_row_sums`` against blocked numpy and against machine limits.

One run measures, on this machine:

* the core's ``kernel_row_sums`` (Gaussian kernel, bandwidth sqrt(d)), median of 5 runs
  after a warm-up, plus the peak RSS growth during a call (VmRSS sampled every 5 ms);
* a blocked numpy implementation (||l||^2 + ||x||^2 - 2 L X^T over 8192-row blocks of X,
  np.exp, sum), median of 3, skipped when one run is estimated to take more than 60 s;
* accuracy: max relative error of core and numpy vs a float64 reference on a subset of
  landmarks, and (n=10^6, m=1000, d=10, float64) vs a long double / math.fsum reference
  on 20 landmarks;
* the machine limits: peak numpy GEMM flop/s (4096^2, in a subprocess with
  OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE removed) and glibc libmvec exp values/s on 2
  threads (bench/exp_limit.cpp, compiled at bench time; bench/limits.py);

and prints a Markdown table with limit = max(2 n m d / GEMM rate, n m / exp rate).

Usage: python -m bench.row_sums [--quick] [--out FILE]
"""

from __future__ import annotations

import argparse
import datetime
import functools
import math
import platform
import sys
from pathlib import Path

import numpy as np

from bench import limits
from bench.harness import NUMPY_BLOCK, RssPeak, machine, numpy_row_sums, time_calls
from nystrom_kme import _core

NUMPY_SKIP_S = 60.0
TARGET_RATIO = {"float64": 1.5, "float32": 2.0}
TARGET_SPEEDUP = 6.0
TARGET_LD_ERR = 1e-12


# --------------------------------------------------------------------------- references


def ref_float64_subset(Lsub, X, bandwidth):
    """float64 reference for a few landmarks, on the exact (upcast) input values."""
    X64 = X.astype(np.float64, copy=False) if X.dtype == np.float64 else None
    inv = 1.0 / (2.0 * bandwidth * bandwidth)
    Lsub = Lsub.astype(np.float64)
    acc = [[] for _ in range(Lsub.shape[0])]
    step = 1 << 16
    for s in range(0, X.shape[0], step):
        Xb = X[s : s + step] if X64 is not None else X[s : s + step].astype(np.float64)
        for i, row in enumerate(Lsub):
            D = Xb - row  # direct differences: no ||l||^2 + ||x||^2 - 2 l.x cancellation
            e = np.exp(-np.einsum("ij,ij->i", D, D) * inv)
            acc[i].append(e.sum())
    return np.array([math.fsum(a) for a in acc])


def ref_longdouble_subset(Lsub, X, bandwidth):
    """np.longdouble direct-difference reference, block sums combined exactly with fsum."""
    ld = np.longdouble
    inv = ld(1) / (ld(2) * ld(bandwidth) * ld(bandwidth))
    Lld = Lsub.astype(ld)
    parts = [[] for _ in range(Lsub.shape[0])]
    step = 1 << 15
    for s in range(0, X.shape[0], step):
        Xb = X[s : s + step].astype(ld)
        for i, row in enumerate(Lld):
            D = Xb - row
            p = np.exp(-(D * D).sum(axis=1) * inv).sum()  # pairwise, in long double
            hi = float(p)
            lo = float(p - ld(hi))
            parts[i] += [hi, lo]
    return np.array([math.fsum(p) for p in parts]), np.finfo(ld).eps


def rel_err(a, ref):
    return float(np.max(np.abs(np.asarray(a, dtype=np.float64) - ref) / np.abs(ref)))


# --------------------------------------------------------------------------- driver


def fmt_s(x):
    if x is None:
        return "—"
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="n=10^5 and 2 repeats (smoke run)")
    ap.add_argument("--out", help="also write the Markdown report to this file")
    ap.add_argument("--threads", type=int, default=0, help="core n_threads (0: all)")
    args = ap.parse_args(argv)

    quick = args.quick
    n_big = 10**5 if quick else 10**6
    core_reps = 2 if quick else 5
    np_reps = 2 if quick else 3
    sizes = [(n_big, 1000, 10), (n_big, 1000, 100), (n_big, 4096, 3)]
    dtypes = ["float64", "float32"]
    n_sub = 32  # landmarks in the float64-reference accuracy check
    lines = []

    def log(msg=""):
        print(msg, file=sys.stderr, flush=True)

    mach = machine()
    date = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")

    # ---- machine limits
    log("measuring GEMM limit (OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset) ...")
    gemm_n = 2048 if quick else 4096
    gemm = limits.gemm_rates(gemm_n, 2 if quick else 3, unset_openblas_env=True)
    log("measuring GEMM with the machine's OPENBLAS_* settings (for reference) ...")
    gemm_env = limits.gemm_rates(gemm_n, 1 if quick else 2, unset_openblas_env=False)
    log("measuring libmvec exp limit ...")
    expr = limits.exp_rates(2, 20000 if quick else 100000)

    results = []
    for n, m, d in sizes:
        rng = np.random.default_rng(12345 + d)
        X64 = rng.standard_normal((n, d))
        idx = rng.choice(n, size=m, replace=False)
        bw = math.sqrt(d)
        k = _core.Kernel("gaussian", bw)
        sub = np.sort(rng.choice(m, size=n_sub, replace=False))
        for dt in dtypes:
            X = X64 if dt == "float64" else X64.astype(np.float32)
            L = np.ascontiguousarray(X[idx])
            tag = f"n={n:.0e} m={m} d={d} {dt}"
            log(f"[{tag}] core ...")
            with RssPeak() as rss:
                s_core = _core.kernel_row_sums(L, X, k, args.threads)  # warm-up
            s_core = np.asarray(s_core).reshape(-1)
            times, _ = time_calls(functools.partial(_core.kernel_row_sums, L, X, k, args.threads), core_reps)
            t_core = float(np.median(times))
            with RssPeak() as rss2:
                _core.kernel_row_sums(L, X, k, args.threads)
            rss_mb = max(rss.growth_mb, rss2.growth_mb)

            log(f"[{tag}] numpy ...")
            s_np, t1, complete = numpy_row_sums(L, X, bw, deadline_s=NUMPY_SKIP_S)
            np_note = ""
            if not complete:
                t_np = None
                np_note = f"skipped: one run est. {t1:.0f} s > {NUMPY_SKIP_S:.0f} s"
                s_np = None
            else:
                nts = [t1]
                for _ in range(np_reps - 1):
                    nts.append(numpy_row_sums(L, X, bw).seconds)
                t_np = float(np.median(nts))

            log(f"[{tag}] float64 reference on {n_sub} landmarks ...")
            ref = ref_float64_subset(L[sub], X, bw)
            err_core = rel_err(s_core[sub], ref)
            err_np = rel_err(s_np[sub], ref) if s_np is not None else None

            ld_err = None
            if (
                (n, m, d) == (10**6, 1000, 10)
                and dt == "float64"
                or (quick and (m, d) == (1000, 10) and dt == "float64")
            ):
                log(f"[{tag}] long double reference on 20 landmarks ...")
                sub20 = np.sort(rng.choice(m, size=20, replace=False))
                ref_ld, eps_ld = ref_longdouble_subset(L[sub20], X, bw)
                ld_err = {
                    "n": n,
                    "core": rel_err(s_core[sub20], ref_ld),
                    "numpy": rel_err(s_np[sub20], ref_ld) if s_np is not None else None,
                    "eps_ld": float(eps_ld),
                }

            gr = gemm[dt]
            er = expr[dt]
            t_gemm = 2.0 * n * m * d / gr
            t_exp = n * m / er
            limit = max(t_gemm, t_exp)
            results.append(
                {
                    "n": n,
                    "m": m,
                    "d": d,
                    "dtype": dt,
                    "t_core": t_core,
                    "t_np": t_np,
                    "np_note": np_note,
                    "limit": limit,
                    "bound": "GEMM" if t_gemm > t_exp else "exp",
                    "t_gemm": t_gemm,
                    "t_exp": t_exp,
                    "rss_mb": rss_mb,
                    "err_core": err_core,
                    "err_np": err_np,
                    "ld_err": ld_err,
                    "core_times": times,
                }
            )
            log(f"[{tag}] core {t_core:.3f} s, numpy {fmt_s(t_np)} s, limit {limit:.3f} s")
            del X, L
        del X64

    # ---- report
    P = lines.append
    P(f"# kernel_row_sums benchmark{' (--quick)' if quick else ''}")
    P("")
    P(f"- Machine: {mach}; date: {date}")
    P(
        f"- Python {platform.python_version()}, numpy {np.__version__}; core n_threads="
        f"{args.threads} (0 = all); Gaussian kernel, bandwidth = sqrt(d); X ~ N(0, I), "
        f"L = X[random rows]"
    )
    P(
        f"- Core: median of {core_reps} after 1 warm-up. numpy (blocked, {NUMPY_BLOCK}-row blocks of X, "
        f"in the input dtype): median of {np_reps}; skipped when one run is projected > "
        f"{NUMPY_SKIP_S:.0f} s; it runs with this process's OPENBLAS_* environment as set."
    )
    blas = gemm.get("blas") or [{}]
    blas_env = gemm_env.get("blas") or [{}]
    P(
        f"- GEMM limit ({gemm_n}^2 numpy matmul, OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset): "
        f"float64 {gemm['float64'] / 1e9:.1f} GFLOP/s, float32 {gemm['float32'] / 1e9:.1f} "
        f"GFLOP/s; OpenBLAS {blas[0].get('version')} kernel '{blas[0].get('architecture')}', "
        f"{blas[0].get('num_threads')} threads."
    )
    P(
        f"  (With this machine's OPENBLAS_* settings [{limits.openblas_overrides()}]: float64 "
        f"{gemm_env['float64'] / 1e9:.1f}, float32 {gemm_env['float32'] / 1e9:.1f} GFLOP/s, "
        f"kernel '{blas_env[0].get('architecture')}'; not used for the limit.)"
    )
    P(
        f"- exp limit (glibc libmvec via bench/exp_limit.cpp, `{expr['cmd']}`, "
        f"{expr['threads']} threads, 4096 values/thread cache-resident): float64 "
        f"{expr['float64'] / 1e9:.2f} Gexp/s, float32 {expr['float32'] / 1e9:.2f} Gexp/s; "
        f"libmvec symbols in binary: {', '.join(expr['zgv']) if expr['zgv'] else 'NONE (scalar exp!)'}."
    )
    P("  The core uses its own polynomial exp (not libmvec); its exp throughput cannot be isolated from Python.")
    P(
        "- limit = max(2 n m d / GEMM rate, n m / exp rate). Targets: core/limit <= "
        f"{TARGET_RATIO['float64']} (float64), <= {TARGET_RATIO['float32']} (float32); "
        f"numpy/core >= {TARGET_SPEEDUP:g} at (10^6, 1000, 10)."
    )
    P("")
    P(
        "| n, m, d | dtype | core s | numpy s | limit s (bound) | core/limit (target) "
        "| numpy/core | core RSS growth MB | rel. err core / numpy vs f64 ref |"
    )
    P("|---|---|---|---|---|---|---|---|---|")
    for r in results:
        ratio = r["t_core"] / r["limit"]
        tgt = TARGET_RATIO[r["dtype"]]
        ok = "ok" if ratio <= tgt else "MISS"
        if r["t_np"] is not None:
            sp = r["t_np"] / r["t_core"]
            sp_s = f"{sp:.1f}x"
            if (r["m"], r["d"]) == (1000, 10):
                sp_s += f" (>= {TARGET_SPEEDUP:g}: {'ok' if sp >= TARGET_SPEEDUP else 'MISS'})"
        else:
            sp_s = "—"
        np_s = fmt_s(r["t_np"]) if r["t_np"] is not None else r["np_note"]
        en = f"{r['err_np']:.1e}" if r["err_np"] is not None else "—"
        P(
            f"| {r['n']:.0e}, {r['m']}, {r['d']} | {r['dtype']} | {r['t_core']:.3g} | {np_s} "
            f"| {r['limit']:.3g} ({r['bound']}) | {ratio:.2f} (<= {tgt}: {ok}) | {sp_s} "
            f"| {r['rss_mb']:.1f} | {r['err_core']:.1e} / {en} |"
        )
    P("")
    P(
        "Limit components (s): "
        + "; ".join(
            f"{r['n']:.0e},{r['m']},{r['d']} {r['dtype']}: GEMM {r['t_gemm']:.3g}, exp {r['t_exp']:.3g}"
            for r in results
        )
    )
    P("")
    P(
        "Core run times (s): "
        + "; ".join(
            f"{r['m']},{r['d']} {r['dtype']}: " + ", ".join(f"{t:.3f}" for t in r["core_times"]) for r in results
        )
    )
    for r in results:
        if r["ld_err"]:
            e = r["ld_err"]
            nps = f"{e['numpy']:.2e}" if e["numpy"] is not None else "—"
            P("")
            P(
                f"Long double check (n={e['n']:.0e}, m={r['m']}, d={r['d']}, float64, 20 landmarks; "
                f"np.longdouble eps {e['eps_ld']:.1e}, direct differences, block sums + math.fsum): "
                f"max rel. error core {e['core']:.2e} (target <= {TARGET_LD_ERR:g}: "
                f"{'ok' if e['core'] <= TARGET_LD_ERR else 'MISS'}), numpy path {nps}."
            )
    P("")
    P(
        f"float64 reference for the error column: direct-difference float64 on {n_sub} landmarks, "
        "on the same (for float32: upcast) inputs, block sums combined with math.fsum."
    )
    report = "\n".join(lines)
    print(report)
    if args.out:
        Path(args.out).write_text(report + "\n")


if __name__ == "__main__":
    main()
