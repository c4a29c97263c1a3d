"""The m chosen by ``NystromKME(n_landmarks="auto")`` next to the paper's sqrt(n) log sqrt(n).

Two data sets with closed-form embeddings (``nystrom_kme.datasets.GaussianMixture``,
so every error below is exact, not estimated):

  mixture   the paper's Section 6.1 mixture: 8 components N(c_i, I), c_i ~ N(0, 5 I), d = 10
  mix64     a synthetic high-dimensional one (no real d >= 50 data set ships with the
            package or its test extras): 16 components in d = 64, c_i ~ N(0, 2 I),
            component variances spread over [0.25, 2]

For each n (10^3, 10^4, 10^5) and trial, X ~ rho^n is drawn afresh and fitted with
the defaults (Gaussian kernel, median bandwidth, uniform landmarks with replacement,
tol = 0.1). Reported per n (median over trials, [min, max] for m):

  m auto         the chosen m (the first m of the landmark stream certified)
  sqrt(n)log     the paper's ceil(sqrt(n) log sqrt(n))
  approx/stat    the search's certified ratio: its upper bound on ||mu_hat_n - mu_m|| over
                 its lower bound on sigma (``LandmarkSearch.ratio``)
  sigma_hat/sigma  the estimated statistical error over its closed form ((1 - ||mu||^2)/n)^(1/2)
  err/emp        exact ||mu_auto - mu|| / exact ||mu_hat_n - mu|| on the same data (n <= 10^4:
                 the empirical error needs an n x n kernel sum)
  err/sigma      exact ||mu_auto - mu|| / sigma (the RMS empirical error; every n)
  search s       wall time of the search (sums, solves, sigma_hat), and
  fit s @m       a plain fit with n_landmarks = the chosen m, for comparison.

    python -m bench.auto_m                 # 3 trials per n (~2 minutes on 2 cores)
    python -m bench.auto_m --trials 10 --n 1000 10000
    python -m bench.auto_m --validate 50 --n 1000 10000   # the slow test's check, counted
    python -m bench.auto_m --power 100                      # two-sample power: default m vs "auto"
    python -m bench.auto_m --real 50 --n 1000 10000         # the same check on real data (below)
    python -m bench.auto_m --m-vs-n 5                       # chosen m vs n, every data set, + figure

Real data (``--real``, ``--m-vs-n``): the three data sets of bench/figure2.py (geonames
d = 2, emg d = 8, GloVe d = 50; install ``.[bench]``), with rho the uniform distribution
on the same N = 10^5 points and the same bandwidth as there. Errors are exact: the
constant (1/N^2) 1^T K_NN 1 comes from figure2's cache, the cross terms from one n x N
kernel sum per trial, so ||mu_hat_n - mu|| and ||mu_auto - mu|| are both exact.
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import time
from pathlib import Path

import numpy as np

import nystrom_kme as nk
from bench import figure2, figures
from bench.harness import OUT, machine, utc_now
from nystrom_kme import _core
from nystrom_kme.datasets import GaussianMixture


def datasets() -> dict[str, GaussianMixture]:
    return {
        "mixture (d=10)": GaussianMixture(8, 10, random_state=0),
        "mix64 (d=64, synthetic)": GaussianMixture(
            16, 64, center_variance=2.0, component_variance=np.linspace(0.25, 2.0, 16), random_state=1
        ),
    }


def run_one(mix: GaussianMixture, n: int, seed: int, plain_fit: bool = True, empirical_up_to: int = 10_000) -> dict:
    X = mix.sample(n, random_state=10_000 + seed)
    t = time.perf_counter()
    est = nk.NystromKME(n_landmarks="auto", random_state=seed).fit(X)
    search_s = time.perf_counter() - t
    rep = est.n_landmarks_report_
    bw = est.kernel_.bandwidth
    sigma = math.sqrt((1.0 - mix.embedding_norm2(bw)) / n)
    err = mix.embedding_error(est.landmarks_, est.weights_, bw)
    # the empirical embedding's exact error needs an n x n kernel sum
    emp = mix.embedding_error(X, np.full(n, 1.0 / n), bw) if n <= empirical_up_to else math.nan
    t = time.perf_counter()
    if plain_fit:
        nk.NystromKME(kernel=est.kernel_, n_landmarks=rep.n_landmarks, random_state=seed).fit(X)
    fit_s = time.perf_counter() - t
    return {
        "m": rep.n_landmarks,
        "ratio": rep.ratio,
        "sig": rep.statistical_error.value / sigma,
        "err_emp": err / emp,
        "err_sigma": err / sigma,
        "search_s": search_s,
        "fit_s": fit_s,
        "converged": rep.converged,
        "path": rep.path,
    }


def validate(ns: list[int], trials: int) -> None:
    mix = datasets()["mixture (d=10)"]
    print(f"# bench.auto_m --validate {trials}, {utc_now()}; {machine()}\n")
    print("| n | trials within 10% | max err/emp | median err/emp | m: min / median / max |")
    print("|---|---|---|---|---|")
    for n in ns:
        rows = [run_one(mix, n, 1000 + seed, plain_fit=False, empirical_up_to=n) for seed in range(trials)]
        r = [row["err_emp"] for row in rows]
        ms = [row["m"] for row in rows]
        print(
            f"| {n} | {sum(x <= 1.1 for x in r)}/{trials} | {max(r):.4f} | {statistics.median(r):.5f} "
            f"| {min(ms)} / {int(statistics.median(ms))} / {max(ms)} |",
            flush=True,
        )


class RealData:
    """rho = uniform over a real data set's N-point support (bench/figure2.py): draws and
    exact embedding errors against rho."""

    def __init__(self, name: str, data: np.ndarray, pool: int = 100_000):
        self.name = name
        self.Z, self.sigma = figure2.support(data, pool)
        self.N, self.d = self.Z.shape
        self.kern = _core.Kernel("gaussian", self.sigma)
        total = figure2.total_sum(name, self.Z, self.sigma, OUT / "figure2_cache.json")
        self.mean_k = total / float(self.N) ** 2  # E k(x, x') = ||mu||^2 under rho

    def sample(self, n: int, seed: int) -> np.ndarray:
        return np.ascontiguousarray(self.Z[np.random.default_rng(seed).integers(0, self.N, size=n)])

    def sigma_stat(self, n: int) -> float:
        """((E k(x,x) - E k(x,x'))/n)^(1/2), the RMS error of the empirical embedding."""
        return math.sqrt((1.0 - self.mean_k) / n)

    def errors(self, X: np.ndarray, est: nk.NystromKME) -> tuple[float, float]:
        """Exact ||mu_hat_n - mu|| and ||mu_est - mu|| (landmarks are rows of X)."""
        c = figure2.pool_sums(X, self.Z, self.kern)
        return (
            figure2.empirical_error(self.mean_k, X, c, self.kern),
            figure2.estimator_error(self.mean_k, est, c, self.Z, self.kern),
        )


def real_datasets() -> list[RealData]:
    out = []
    for name, loader in figure2.LOADERS.items():
        try:
            out.append(RealData(name, loader()))
        except (ImportError, FileNotFoundError) as err:
            print(f"{name}: skipped ({err}); install {figure2.SOURCES[name]}", flush=True)
    return out


def grid_m(name: str, n: int) -> str:
    """The smallest m of bench/figure2.py's grid within 10% of the empirical error, from
    its CSV (same data, rho, bandwidth and n), or '-' if that run is not there."""
    path = OUT / "figure2.csv"
    if not path.exists():
        return "-"
    with open(path) as fh:
        rows = [dict(r, m=int(r["m"]), n=int(r["n"]), error=float(r["error"])) for r in csv.DictReader(fh)]
    rows = [r for r in rows if r["dataset"] == name and r["n"] == n]
    emp = [r["error"] for r in rows if r["policy"] == "empirical"]
    if not emp:
        return "-"
    return figures.smallest_m_cells(rows, "dataset", name, "uniform", float(np.mean(emp)))[0]


def validate_real(ns: list[int], trials: int) -> None:
    """The slow test's check on real data: in how many trials is the exact error of
    n_landmarks="auto" within 10% of the empirical embedding's exact error."""
    print(f"# bench.auto_m --real {trials}, {utc_now()}; {machine()}\n")
    print(
        "| data (d) | n | trials within 10% | max err/emp | median err/emp | m: min / median / max "
        "| √n log √n | figure2 grid m | σ̂/σ (median) | converged | search s (median) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for data in real_datasets():
        for n in ns:
            r, ms, sig, conv, secs = [], [], [], 0, []
            for t in range(trials):
                X = data.sample(n, 2000 + t)
                t0 = time.perf_counter()
                est = nk.NystromKME(nk.Gaussian(data.sigma), n_landmarks="auto", random_state=t).fit(X)
                secs.append(time.perf_counter() - t0)
                emp, err = data.errors(X, est)
                rep = est.n_landmarks_report_
                r.append(err / emp)
                ms.append(rep.n_landmarks)
                sig.append(rep.statistical_error.value / data.sigma_stat(n))
                conv += rep.converged
            print(
                f"| {data.name} ({data.d}) | {n} | {sum(x <= 1.1 for x in r)}/{trials} | {max(r):.4f} "
                f"| {statistics.median(r):.5f} | {min(ms)} / {int(statistics.median(ms))} / {max(ms)} "
                f"| {nk.default_n_landmarks(n)} | {grid_m(data.name, n)} | {statistics.median(sig):.3f} "
                f"| {conv}/{trials} | {statistics.median(secs):.2f} |",
                flush=True,
            )


def m_vs_n(trials: int, ns: list[int]) -> None:
    """The m chosen by n_landmarks="auto" against n for every data set (median and range
    over trials), next to sqrt(n) log sqrt(n); a table and bench/out/auto_m.png."""
    print(f"# bench.auto_m --m-vs-n {trials}, {utc_now()}; {machine()}\n")
    print("m: median [min, max]; 'cap': no trial converged (m = n or max_landmarks)\n")
    print("| data (d) | " + " | ".join(f"n = {n}" for n in ns) + " |")
    print("|---|" + "---|" * len(ns))
    draws: dict[str, tuple] = {}
    mix = datasets()["mixture (d=10)"]  # mix64 stops at the cap: the GloVe row shows that case
    draws["mixture (d=10)"] = (lambda n, seed: mix.sample(n, random_state=10_000 + seed), None)
    for data in real_datasets():
        draws[f"{data.name} (d={data.d})"] = (data.sample, nk.Gaussian(data.sigma))
    curves: dict[str, list[list[int]]] = {}
    capped: dict[str, list[bool]] = {}  # no trial converged: m is the cap, not certified
    for name, (draw, kernel) in draws.items():
        curves[name], capped[name] = [], []
        for n in ns:
            reps = [
                nk.NystromKME(kernel if kernel is not None else "gaussian", n_landmarks="auto", random_state=t)
                .fit(draw(n, t))
                .n_landmarks_report_
                for t in range(trials)
            ]
            curves[name].append([r.n_landmarks for r in reps])
            capped[name].append(not any(r.converged for r in reps))
        print(
            f"| {name} | "
            + " | ".join(
                f"{int(statistics.median(ms))} [{min(ms)}, {max(ms)}]{' cap' * c}"
                for ms, c in zip(curves[name], capped[name])
            )
            + " |",
            flush=True,
        )
    plt = figures.pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    for name, rows in curves.items():
        med = [statistics.median(ms) for ms in rows]
        lo = [med[i] - min(ms) for i, ms in enumerate(rows)]
        hi = [max(ms) - med[i] for i, ms in enumerate(rows)]
        line = ax.errorbar(ns, med, yerr=[lo, hi], marker="o", ms=4, capsize=3, label=name)
        at_cap = [(n, v) for n, v, c in zip(ns, med, capped[name]) if c]
        if at_cap:
            ax.plot(*zip(*at_cap), "o", ms=9, mfc="none", color=line[0].get_color())
    ax.plot([], [], "o", ms=9, mfc="none", color="0.3", label="not converged (m = n or the cap)")
    ax.plot(ns, [nk.default_n_landmarks(n) for n in ns], "k:", label=r"$\sqrt{n}\,\log\sqrt{n}$")
    ax.plot(ns, ns, color="0.6", lw=0.8, label="m = n")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel('m chosen by n_landmarks="auto" (tol = 0.1)')
    ax.set_title(f"Chosen m vs n: median and range over {trials} trials", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    png, copy = figures.save_figure(fig, "auto_m.png", Path(OUT))
    print(f"\nFigure: {png} (copy: {copy})")


def power(reps: int) -> None:
    """Power of the Nyström permutation test (99 permutations, level 0.05) with the
    default m and with n_landmarks="auto", on N(0, I) vs N(shift e_1, I)."""
    print(f"# bench.auto_m --power {reps}, {utc_now()}; {machine()}\n")
    for d, shift, n in ((2, 0.12, 1000), (10, 0.1, 2000)):
        rng = np.random.default_rng(d)
        rej = {None: 0, "auto": 0}
        ms: dict = {None: [], "auto": []}
        ts = {None: 0.0, "auto": 0.0}
        for rep in range(reps):
            X, Y = rng.normal(size=(n, d)), rng.normal(size=(n, d))
            Y[:, 0] += shift
            for nl in (None, "auto"):
                t = time.perf_counter()
                r = nk.two_sample_test(X, Y, n_landmarks=nl, n_permutations=99, random_state=rep)
                ts[nl] += time.perf_counter() - t
                rej[nl] += r.pvalue <= 0.05
                ms[nl].append(r.n_landmarks)
        print(
            f"d={d} shift={shift} n1=n2={n}: power default {rej[None]}/{reps} (m={ms[None][0]}, "
            f"{ts[None]:.1f}s), auto {rej['auto']}/{reps} (m median {int(np.median(ms['auto']))}, "
            f"range {min(ms['auto'])}-{max(ms['auto'])}, {ts['auto']:.1f}s)",
            flush=True,
        )


# --------------------------------------------------------------------------- issue 31


class MixtureTarget:
    """rho a Gaussian mixture: mu and ||mu||^2 in closed form."""

    def __init__(self, name: str, mix: GaussianMixture):
        self.name, self.mix, self.d = name, mix, mix.dim

    def sample(self, n: int, seed: int) -> np.ndarray:
        return self.mix.sample(n, random_state=10_000 + seed)

    def mu_at(self, Y: np.ndarray, bw: float) -> np.ndarray:
        return self.mix.mean_embedding(Y, bw)

    def mu_norm2(self, bw: float) -> float:
        return self.mix.embedding_norm2(bw)


class PoolTarget:
    """rho uniform over a pool of N points (a real data set): mu and ||mu||^2 exact from
    the pool's kernel sums."""

    def __init__(self, name: str, Z: np.ndarray):
        self.name, self.Z, self.d = name, np.ascontiguousarray(Z, dtype=np.float64), Z.shape[1]

    def sample(self, n: int, seed: int) -> np.ndarray:
        return np.ascontiguousarray(self.Z[np.random.default_rng(20_000 + seed).integers(0, len(self.Z), size=n)])

    def mu_at(self, Y: np.ndarray, bw: float) -> np.ndarray:
        return _core.kernel_row_sums(np.ascontiguousarray(Y), self.Z, _core.Kernel("gaussian", bw)) / len(self.Z)

    def mu_norm2(self, bw: float) -> float:
        return _core.kernel_total_sum(self.Z, self.Z, _core.Kernel("gaussian", bw)) / float(len(self.Z)) ** 2


def certificate_targets() -> dict[str, MixtureTarget | PoolTarget]:
    from sklearn.datasets import load_digits  # the test extra

    return {
        "mixture (d=10)": MixtureTarget("mixture (d=10)", GaussianMixture(8, 10, random_state=0)),
        "digits (d=64)": PoolTarget("digits (d=64)", load_digits().data),
        "synthetic (d=50)": MixtureTarget(
            "synthetic (d=50)",
            GaussianMixture(16, 50, center_variance=2.0, component_variance=np.linspace(0.25, 2.0, 16), random_state=1),
        ),
    }


def prefix_errors(X: np.ndarray, seq: np.ndarray, muX: np.ndarray, mu2: float, core: _core.Kernel) -> tuple:
    """Exact ||P_m mu_hat_n - mu||^2 and e(m)^2 = ||mu_hat_n - P_m mu_hat_n||^2 for every
    prefix m of the landmark sequence seq (two in-order factorizations: the coordinates
    of mu_hat_n and of mu on the same pivots), and N^2 = ||mu_hat_n||^2 (O(n^2))."""
    from nystrom_kme.landmark_search._nested_projection import NestedProjection

    n = len(X)
    means = _core.kernel_row_sums(np.ascontiguousarray(X[seq]), X, core) / n
    emp_path, mu_path = NestedProjection(core, 0), NestedProjection(core, 0)
    for a in range(0, len(seq), 256):
        pts = np.ascontiguousarray(X[seq[a : a + 256]])
        emp_path.extend(pts, means[a : a + 256])
        mu_path.extend(pts, muX[seq[a : a + 256]])
    assert np.array_equal(emp_path.is_pivot, mu_path.is_pivot)
    rank = np.cumsum(emp_path.is_pivot)
    cross = np.concatenate([[0.0], np.cumsum(emp_path.coordinates * mu_path.coordinates)])[rank]
    N2 = _core.kernel_total_sum(X, X, core) / float(n) ** 2
    return mu2 - 2.0 * cross + emp_path.t, N2 - emp_path.t, N2


def _first_for_good(ok: np.ndarray) -> int | None:
    """The smallest m (1-based) from which ok holds at every larger m of the path."""
    bad = np.flatnonzero(~ok)
    if bad.size == ok.size:
        return None
    return int(bad[-1]) + 2 if bad.size else 1


def certificate_trial(target, n: int, seed: int, within: float = 0.1, spec: object = "auto", repeats: int = 2) -> dict:
    """One data set drawn afresh: the search, a plain fit with the same defaults at its m
    (both timed, interleaved, the best of ``repeats``: the machine is shared), and exact errors."""
    X = target.sample(n, seed)
    search_t, fit_t = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        est = nk.NystromKME(n_landmarks=spec, random_state=seed).fit(X)
        search_t.append(time.perf_counter() - t0)
        m = est.n_landmarks_report_.n_landmarks
        t0 = time.perf_counter()
        nk.NystromKME(n_landmarks=m, random_state=seed).fit(X)  # the median bandwidth included, as in the search
        fit_t.append(time.perf_counter() - t0)
    search_s, fit_s = min(search_t), min(fit_t)
    rep = est.n_landmarks_report_
    bw = est.kernel_.bandwidth
    core = _core.Kernel("gaussian", bw)
    mu2 = target.mu_norm2(bw)
    muX = target.mu_at(X, bw)
    sig2 = (1.0 - mu2) / n  # E k(x,x) = 1: the closed-form statistical error
    # the search's landmarks, then fresh uniform draws (the same law) past its m
    extra = max(2 * m, 256) - m if m < n else 0
    seq = np.concatenate([est.landmark_indices_, np.random.default_rng(99_000 + seed).integers(0, n, size=extra)])
    err2, e2, N2 = prefix_errors(X, seq, muX, mu2, core)
    emp2 = mu2 - 2.0 * muX.mean() + N2
    # the fitted weights' exact error, independently of the path
    L = est.landmarks_
    w = est.weights_
    fitted2 = mu2 - 2.0 * w @ target.mu_at(L, bw) + w @ _core.kernel_matrix(L, L, core) @ w
    factor = (1.0 + within) ** 2
    excess_ok = err2 - emp2 <= (factor - 1.0) * sig2
    ratio_ok = err2 <= factor * emp2
    return {
        "m": m,
        "m_excess": _first_for_good(excess_ok),
        "m_ratio": _first_for_good(ratio_ok),
        "excess": (fitted2 - emp2) / sig2,  # target: <= 0.21
        "ratio": math.sqrt(max(fitted2, 0.0) / emp2),  # per-trial realized: <= 1.1
        "path_check": abs(fitted2 - err2[m - 1]) / sig2,
        "cert_ok": e2[m - 1] <= rep.tol**2 * rep.statistical_error.squared,  # the certificate's own claim
        "e_over_sigma": math.sqrt(max(e2[m - 1], 0.0) / sig2),
        "sig_hat": rep.statistical_error.value / math.sqrt(sig2),
        "emp_over_sigma": math.sqrt(emp2 / sig2),
        "certified": rep.certified,
        "stop": rep.stop,
        "search_s": search_s,
        "fit_s": fit_s,
    }


def certificate(trials: int, cases: list[tuple[str, int]]) -> None:
    """Issue 31's "Done when": per data set and n, over trials, the chosen m against the
    smallest m of the path from which the target holds (every m, exact errors), the
    coverage, and the search's time against one plain fit at the chosen m."""
    targets = certificate_targets()
    print(f"# bench.auto_m --certificate {trials}, {utc_now()}; {machine()}; nystrom_kme {nk.__version__}\n")
    print(
        "| data | n | m chosen: median [min, max] | m/m* excess: median [max] | m/m* ratio: median [max] "
        "| excess <= 0.21σ² | ratio <= 1.1 | certificate true | certified | e/σ at m (max) | σ̂/σ | emp/σ [min] "
        "| search/fit: median [max] | search s | fit s | √n log √n | √N (test) |"
    )
    print("|---|" * 1 + "---|" * 16)
    med = statistics.median
    for name, n in cases:
        target = targets[name]
        rows = [certificate_trial(target, n, seed) for seed in range(trials)]
        ms = [r["m"] for r in rows]
        rx = [r["m"] / r["m_excess"] for r in rows if r["m_excess"]]
        rr = [r["m"] / r["m_ratio"] for r in rows if r["m_ratio"]]
        cost = [r["search_s"] / r["fit_s"] for r in rows]
        print(
            f"| {name} | {n} | {int(med(ms))} [{min(ms)}, {max(ms)}] "
            f"| {med(rx):.2f} [{max(rx):.2f}] | {med(rr):.2f} [{max(rr):.2f}] "
            f"| {sum(r['excess'] <= 0.21 for r in rows)}/{trials} | {sum(r['ratio'] <= 1.1 for r in rows)}/{trials} "
            f"| {sum(r['cert_ok'] for r in rows)}/{trials} | {sum(r['certified'] for r in rows)}/{trials} "
            f"| {max(r['e_over_sigma'] for r in rows):.3f} | {med(r['sig_hat'] for r in rows):.4f} "
            f"| {med(r['emp_over_sigma'] for r in rows):.2f} [{min(r['emp_over_sigma'] for r in rows):.2f}] "
            f"| {med(cost):.2f} [{max(cost):.2f}] | {med(r['search_s'] for r in rows):.3f} "
            f"| {med(r['fit_s'] for r in rows):.3f} | {nk.default_n_landmarks(n)} | {math.ceil(math.sqrt(n))} |",
            flush=True,
        )
        print(
            "    per trial (m, m*excess, m*ratio, excess/σ², ratio, path check): "
            + "; ".join(
                f"{r['m']},{r['m_excess']},{r['m_ratio']},{r['excess']:.3f},{r['ratio']:.3f},{r['path_check']:.1e}"
                for r in rows
            ),
            flush=True,
        )
    print(f"\nfinished {utc_now()}; {machine()}")


class BlobTarget:
    """A 3-d Gaussian (scales 2, 1, 0.5) with a local kernel (bandwidth 1, a third of the
    median distance): the residual of mu_hat is carried by few rows, the hard case of a
    bound from samples. Fixed data; only the landmarks vary."""

    def __init__(self, n: int = 2000):
        rng = np.random.default_rng(3)
        self.X = rng.normal(size=(n, 3)) * np.array([2.0, 1.0, 0.5])


def coverage(trials: int) -> None:
    """How often the bound at the returned m holds, e(m) <= tol sigma_hat, with e exact
    (dense kernel sums), for the actual search (not a model of it): the mixture
    (n = 5000, fresh data per trial), digits (n = 1797 drawn from the 1797 rows) and the
    3-d blob with a local kernel (fixed data)."""
    print(f"# bench.auto_m --coverage {trials}, {utc_now()}; {machine()}\n")
    print("| data | n | bound holds | m: median [min, max] | e/(tol σ̂) at m: median [max] |")
    print("|---|---|---|---|---|")
    targets = certificate_targets()
    cases = [("mixture (d=10)", 5000), ("digits (d=64)", 1797), ("blob (d=3, bandwidth 1)", 2000)]
    for name, n in cases:
        held, ms, rel = 0, [], []
        blob = BlobTarget(n) if name.startswith("blob") else None
        for seed in range(trials):
            X = blob.X if blob is not None else targets[name].sample(n, 50_000 + seed)
            kernel = nk.Gaussian(1.0) if blob is not None else "gaussian"
            est = nk.NystromKME(kernel, n_landmarks="auto", random_state=seed).fit(X)
            rep = est.n_landmarks_report_
            core = _core.Kernel("gaussian", est.kernel_.bandwidth)
            L, w = est.landmarks_, est.weights_
            N2 = _core.kernel_total_sum(X, X, core) / float(n) ** 2
            e2 = N2 - 2.0 * w @ (_core.kernel_row_sums(L, X, core) / n) + w @ _core.kernel_matrix(L, L, core) @ w
            r = math.sqrt(max(e2, 0.0)) / (rep.tol * rep.statistical_error.value)
            held += r <= 1.0
            ms.append(rep.n_landmarks)
            rel.append(r)
        print(
            f"| {name} | {n} | {held}/{trials} | {int(statistics.median(ms))} [{min(ms)}, {max(ms)}] "
            f"| {statistics.median(rel):.2f} [{max(rel):.2f}] |",
            flush=True,
        )
    print(f"\nfinished {utc_now()}; {machine()}")


def large(n: int, repeats: int) -> None:
    """The search at large n (d = 10 mixture): its time against a plain fit at its m, and
    the certificate's own share (the search minus the plain fit)."""
    print(f"# bench.auto_m --large {n}, {utc_now()}; {machine()}\n")
    mix = GaussianMixture(8, 10, random_state=0)
    X = mix.sample(n, random_state=7)
    for r in range(repeats):
        t0 = time.perf_counter()
        est = nk.NystromKME(n_landmarks="auto", random_state=r).fit(X)
        search_s = time.perf_counter() - t0
        rep = est.n_landmarks_report_
        t0 = time.perf_counter()
        nk.NystromKME(n_landmarks=rep.n_landmarks, random_state=r).fit(X)
        fit_s = time.perf_counter() - t0
        print(
            f"n = {n}: m = {rep.n_landmarks} (√n log √n = {nk.default_n_landmarks(n)}), certified {rep.certified}, "
            f"ratio {rep.ratio:.3f}; search {search_s:.2f} s, plain fit at m {fit_s:.2f} s, "
            f"search/fit {search_s / fit_s:.2f}, certificate's share {(search_s - fit_s) / fit_s:+.1%}",
            flush=True,
        )
    print(f"\nfinished {utc_now()}; {machine()}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="*", default=[1000, 10_000, 100_000])
    p.add_argument("--trials", type=int, default=3)
    p.add_argument(
        "--validate",
        type=int,
        default=0,
        help="instead: this many trials on the mixture at each n, counting those whose "
        "exact error is within 10%% of the empirical embedding's (the slow test)",
    )
    p.add_argument(
        "--power",
        type=int,
        default=0,
        help="instead: this many repetitions of two_sample_test under a mean shift, "
        "n_landmarks=None vs 'auto' (power, m, time)",
    )
    p.add_argument(
        "--real", type=int, default=0, help="instead: --validate's count on the real data sets of bench/figure2.py"
    )
    p.add_argument(
        "--m-vs-n",
        type=int,
        default=0,
        help="instead: this many trials of the chosen m at n = 10^3 ... 10^5 for every "
        "data set, a table and bench/out/auto_m.png",
    )
    p.add_argument(
        "--certificate",
        type=int,
        default=0,
        help="instead: issue 31's check with this many trials per case (chosen m vs the smallest "
        "sufficient m of the path, coverage, cost); --case NAME:N selects cases",
    )
    p.add_argument("--case", action="append", default=None, help="NAME:N for --certificate, e.g. 'digits (d=64):1797'")
    p.add_argument("--coverage", type=int, default=0, help="instead: the bound's coverage over this many searches")
    p.add_argument("--large", type=int, default=0, help="instead: one search at this n (d = 10), timed")
    p.add_argument(
        "--adversarial",
        type=int,
        default=0,
        help="instead: issue 34's suite, this many fits per distribution and n (--n; default 10^4 and 4 10^4), "
        "false certificates, coverage and m/m* against exact errors (bench/certificate_suite.py)",
    )
    p.add_argument("--check", default="auto", help="AutoLandmarks(check=...) for --adversarial")
    p.add_argument("--only", default=None, help="--adversarial: the distributions whose name contains this")
    p.add_argument(
        "--old", action="store_true", help="--adversarial with a search that has no check= (before issue 34)"
    )
    args = p.parse_args()
    if args.adversarial:
        from bench import certificate_suite

        ns = args.n if args.n != [1000, 10_000, 100_000] else [10_000, 40_000]
        certificate_suite.run(args.adversarial, ns, args.check, args.old, args.only)
        return
    if args.coverage:
        coverage(args.coverage)
        return
    if args.large:
        large(args.large, args.trials)
        return
    if args.certificate:
        cases = (
            [(c.rsplit(":", 1)[0], int(c.rsplit(":", 1)[1])) for c in args.case]
            if args.case
            else [
                ("mixture (d=10)", 10_000),
                ("mixture (d=10)", 100_000),
                ("digits (d=64)", 1797),
                ("synthetic (d=50)", 10_000),
            ]
        )
        certificate(args.certificate, cases)
        return
    if args.m_vs_n:
        m_vs_n(args.m_vs_n, [1000, 3000, 10_000, 30_000, 100_000])
        return
    if args.real:
        validate_real(args.n, args.real)
        return
    if args.power:
        power(args.power)
        return
    if args.validate:
        validate(args.n, args.validate)
        return
    print(
        f"# bench.auto_m, {utc_now()}; {machine()}; nystrom_kme {nk.__version__}, "
        f"SIMD {nk.simd_level()}, {args.trials} trials per n\n"
    )
    print(
        "| data | n | m auto (median [min, max]) | sqrt(n)log | approx/stat | sigma_hat/sigma "
        "| err/emp (max) | err/sigma (max) | search s | fit s @m | converged |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, mix in datasets().items():
        for n in args.n:
            rows = [run_one(mix, n, seed) for seed in range(args.trials)]
            ms = [r["m"] for r in rows]
            med = statistics.median
            emp = max(r["err_emp"] for r in rows)
            print(
                f"| {name} | {n} | {int(med(ms))} [{min(ms)}, {max(ms)}] | {nk.default_n_landmarks(n)} "
                f"| {med(r['ratio'] for r in rows):.3f} | {med(r['sig'] for r in rows):.3f} "
                f"| {'n/a' if math.isnan(emp) else f'{emp:.4f}'} "
                f"| {max(r['err_sigma'] for r in rows):.3f} "
                f"| {med(r['search_s'] for r in rows):.2f} | {med(r['fit_s'] for r in rows):.2f} "
                f"| {sum(r['converged'] for r in rows)}/{len(rows)} |",
                flush=True,
            )
    print(f"\npaths (last trial): see LandmarkSearch.path; finished {utc_now()}; {machine()}")


if __name__ == "__main__":
    main()
