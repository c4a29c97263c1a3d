"""nystrom_kme against peer libraries: the Nyström fit and the row sums K(L, X) 1.

One run, same inputs: X ~ N(0, I_d) (n = 10^6, seed 0), Gaussian kernel with
sigma = sqrt(d), m = 1000 landmarks L = X[idx] (idx drawn once without replacement,
seed 1) for every method that takes landmarks. Two tasks:

  rowsums  s = K(L, X) 1                                   (the O(nmd) part)
  fit      s / n, then alpha = K_m^+ s / n                 (the whole Nyström fit)

Methods:

  nystrom_kme     NystromKME(Gaussian(sigma), n_landmarks=m, sampler=idx).fit(X);
                  rowsums: _core.kernel_row_sums(L, X, kernel)
  numpy           blocked ||l||^2 + ||x||^2 - 2 L X_b^T, exp, sum (8192-row blocks;
                  bench.harness.numpy_row_sums, as in bench/row_sums.py);
                  fit: + np.linalg.lstsq(K_m, s/n) (minimum-norm, like the core's COD)
  sklearn-rbf     sklearn.metrics.pairwise.rbf_kernel(L, X_b).sum(1) in 8192-row
                  blocks; fit: + np.linalg.lstsq
  sklearn-nystroem  fit only: Nystroem(rbf, gamma, n_components=m).fit(X).transform(X).mean(0)
                  (its own random components; the same embedding K_m^{-1/2} K_mn 1/n in
                  feature coordinates). Materialises the n x m features: ~8 GB each for
                  the kernel block and the output; run once, skipped when the estimated
                  peak exceeds --max-gb.
  pykeops         LazyTensor exp(-|l - x|^2 / (2 sigma^2)).sum(1) on the CPU (if installed);
                  first call (code generation + compile + run) reported apart as
                  compile_s; fit: + np.linalg.lstsq

Each (method, task, d) runs in a fresh subprocess: time = median of --repeats
(1 when the warm-up took over 20 s) after one warm-up (one run, no warm-up, for sklearn-nystroem); peak RSS =
ru_maxrss of that process, and growth = peak minus the RSS once X was built.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python -m bench.peers   # d = 10, 100 (~10 min)
    python -m bench.peers --d 10 --repeats 1
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from bench import limits
from bench.harness import (
    NUMPY_BLOCK,
    OUT,
    WorkerError,
    gaussian_kernel,
    load_average,
    machine,
    median_time,
    mem_available_gb,
    numpy_row_sums,
    peak_rss_mb,
    rss_mb,
    run_worker,
)

METHODS = ["nystrom_kme", "numpy", "sklearn-rbf", "pykeops", "sklearn-nystroem"]


def make_data(n: int, d: int, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    X = np.random.default_rng(0).standard_normal((n, d))
    idx = np.sort(np.random.default_rng(1).choice(n, size=m, replace=False))
    return X, np.ascontiguousarray(X[idx]), idx, float(np.sqrt(d))


def numpy_rs(L: np.ndarray, X: np.ndarray, sigma: float) -> np.ndarray:
    return numpy_row_sums(L, X, sigma).sums


def sklearn_row_sums(L: np.ndarray, X: np.ndarray, sigma: float) -> np.ndarray:
    from sklearn.metrics.pairwise import rbf_kernel

    s = np.zeros(L.shape[0])
    for start in range(0, X.shape[0], NUMPY_BLOCK):
        s += rbf_kernel(L, X[start : start + NUMPY_BLOCK], gamma=0.5 / sigma**2).sum(1)
    return s


def lstsq_fit(row_sums, L, X, sigma):
    s = row_sums(L, X, sigma) / X.shape[0]
    return np.linalg.lstsq(gaussian_kernel(L, L, sigma), s, rcond=None)[0]


def worker(method: str, task: str, n: int, d: int, m: int, repeats: int) -> dict:
    X, L, idx, sigma = make_data(n, d, m)
    base = rss_mb()
    res: dict = {"method": method, "task": task, "n": n, "d": d, "m": m}
    if method == "nystrom_kme":
        import nystrom_kme as nk
        from nystrom_kme import _core

        kern = _core.Kernel("gaussian", sigma)
        if task == "rowsums":

            def fn():
                return np.asarray(_core.kernel_row_sums(L, X, kern, 0))
        else:

            def fn():
                return nk.NystromKME(nk.Gaussian(sigma), n_landmarks=m, sampler=idx).fit(X).weights_
    elif method in ("numpy", "sklearn-rbf"):
        rs = numpy_rs if method == "numpy" else sklearn_row_sums
        if method == "sklearn-rbf":
            import sklearn.metrics.pairwise  # noqa: F401  (import time not counted)
        fn = (lambda: rs(L, X, sigma)) if task == "rowsums" else (lambda: lstsq_fit(rs, L, X, sigma))
    elif method == "pykeops":
        import pykeops
        from pykeops.numpy import LazyTensor

        pykeops.clean_pykeops()  # so that the warm-up includes the compile

        def keops_rs(L, X, sigma):
            Li, Xj = LazyTensor(L[:, None, :]), LazyTensor(X[None, :, :])
            return (-((Li - Xj) ** 2).sum(-1) / (2 * sigma**2)).exp().sum(1)[:, 0]

        fn = (lambda: keops_rs(L, X, sigma)) if task == "rowsums" else (lambda: lstsq_fit(keops_rs, L, X, sigma))
    elif method == "sklearn-nystroem":
        from sklearn.kernel_approximation import Nystroem

        t0 = time.perf_counter()
        Nystroem(kernel="rbf", gamma=0.5 / sigma**2, n_components=m, random_state=0).fit(X).transform(X).mean(0)
        res.update(time_s=time.perf_counter() - t0, peak_rss_mb=peak_rss_mb(), base_rss_mb=base)
        return res
    else:
        raise ValueError(method)
    t0 = time.perf_counter()
    first = fn()  # warm-up (pykeops: code generation + compile)
    first_s = time.perf_counter() - t0
    if first_s > 20.0:  # slow peers: one timed run is enough
        repeats = 1
    time_s, last = median_time(fn, repeats)
    res.update(
        time_s=time_s,
        first_s=first_s,
        peak_rss_mb=peak_rss_mb(),
        base_rss_mb=base,
        checksum=float(np.sum(last)),
        checksum_first=float(np.sum(first)),
    )
    if method == "pykeops":
        res["compile_s"] = max(first_s - res["time_s"], 0.0)
    return res


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--worker", nargs=6, metavar=("METHOD", "TASK", "N", "D", "M", "REPEATS"))
    p.add_argument("--d", type=int, nargs="*", default=[10, 100])
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--m", type=int, default=1000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--methods", nargs="*", default=METHODS)
    p.add_argument(
        "--max-gb", type=float, default=20.0, help="skip sklearn-nystroem when its estimated peak exceeds this"
    )
    p.add_argument("--out", default=str(OUT))
    a = p.parse_args()
    if a.worker:
        method, task, n, d, m, r = a.worker
        print(json.dumps(worker(method, task, int(n), int(d), int(m), int(r))))
        return

    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    print(
        f"# peers — {machine()}; n = {a.n}, m = {a.m}; median of {a.repeats} after a warm-up; "
        f"{limits.openblas_overrides()}",
        flush=True,
    )
    results: list[dict] = []
    for d in a.d:
        for task in ("fit", "rowsums"):
            for method in a.methods:
                if method == "sklearn-nystroem" and task == "rowsums":
                    continue
                if method == "sklearn-nystroem":
                    est_gb = (2 * a.n * a.m * 8 + 2 * a.n * d * 8) / 1e9 + 0.3
                    avail_gb = mem_available_gb() - 2.0
                    if est_gb > min(a.max_gb, avail_gb):
                        print(
                            f"d={d} {method}: skipped (estimated peak {est_gb:.1f} GB > "
                            f"min({a.max_gb}, available - 2 = {avail_gb:.1f}) GB)"
                        )
                        results.append(
                            {"method": method, "task": task, "d": d, "skipped": f"estimated peak {est_gb:.1f} GB"}
                        )
                        continue
                reps = "1" if method == "sklearn-nystroem" else str(a.repeats)
                try:
                    r = run_worker("peers", method, task, str(a.n), str(d), str(a.m), reps)
                except WorkerError as err:
                    print(f"d={d} {task} {method}: FAILED ({err.tail})", flush=True)
                    results.append({"method": method, "task": task, "d": d, "failed": err.tail})
                    continue
                results.append(r)
                print(
                    f"d={d} {task:7s} {method:16s} {r['time_s']:8.3f} s  peak RSS "
                    f"{r['peak_rss_mb']:8.0f} MB (growth {r['peak_rss_mb'] - r['base_rss_mb']:.0f})"
                    + (f"  compile {r['compile_s']:.1f} s" if "compile_s" in r else ""),
                    flush=True,
                )
    (out / "peers.json").write_text(json.dumps(results, indent=1))

    lines = [
        "",
        f"{load_average()} after",
        "",
        "| d | task | method | time s | ratio vs nystrom_kme | peak RSS MB | RSS growth MB | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for d in a.d:
        for task in ("fit", "rowsums"):
            ref = next(
                (
                    r
                    for r in results
                    if r["d"] == d and r["task"] == task and r["method"] == "nystrom_kme" and "time_s" in r
                ),
                None,
            )
            for r in results:
                if r["d"] != d or r["task"] != task:
                    continue
                if "time_s" not in r:
                    lines.append(
                        f"| {d} | {task} | {r['method']} | – | – | – | – | "
                        f"{r.get('skipped') or 'failed: ' + r.get('failed', '')} |"
                    )
                    continue
                ratio = f"{r['time_s'] / ref['time_s']:.1f}×" if ref else "–"
                note = f"compile {r['compile_s']:.1f} s apart" if "compile_s" in r else ""
                if r["method"] == "sklearn-nystroem":
                    note = "1 run; own random components"
                lines.append(
                    f"| {d} | {task} | {r['method']} | {r['time_s']:.3g} | {ratio} | "
                    f"{r['peak_rss_mb']:.0f} | {r['peak_rss_mb'] - r['base_rss_mb']:.0f} | {note} |"
                )
    text = "\n".join(lines)
    print(text)
    (out / "peers.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
