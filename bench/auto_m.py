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

  m auto         the chosen m (the larger set of the last doubling step)
  sqrt(n)log     the paper's ceil(sqrt(n) log sqrt(n))
  approx/stat    the search's measured ratio ||mu_2m - mu_m|| / sigma_hat
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
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import numpy as np
import nystrom_kme as nk
from nystrom_kme.datasets import GaussianMixture

from bench.harness import machine, utc_now


def datasets() -> dict[str, GaussianMixture]:
    return {
        "mixture (d=10)": GaussianMixture(8, 10, random_state=0),
        "mix64 (d=64, synthetic)": GaussianMixture(
            16, 64, center_variance=2.0, component_variance=np.linspace(0.25, 2.0, 16), random_state=1),
    }


def run_one(mix: GaussianMixture, n: int, seed: int, plain_fit: bool = True) -> dict:
    X = mix.sample(n, random_state=10_000 + seed)
    t = time.perf_counter()
    est = nk.NystromKME(n_landmarks="auto", random_state=seed).fit(X)
    search_s = time.perf_counter() - t
    rep = est.n_landmarks_report_
    bw = est.kernel_.bandwidth
    sigma = math.sqrt((1.0 - mix.embedding_norm2(bw)) / n)
    err = mix.embedding_error(est.landmarks_, est.weights_, bw)
    emp = mix.embedding_error(X, np.full(n, 1.0 / n), bw) if n <= 10_000 else math.nan
    t = time.perf_counter()
    if plain_fit:
        nk.NystromKME(kernel=est.kernel_, n_landmarks=rep.n_landmarks, random_state=seed).fit(X)
    fit_s = time.perf_counter() - t
    return {"m": rep.n_landmarks, "ratio": rep.ratio, "sig": rep.statistical_error.value / sigma,
            "err_emp": err / emp, "err_sigma": err / sigma, "search_s": search_s, "fit_s": fit_s,
            "converged": rep.converged, "path": rep.path}


def validate(ns: list[int], trials: int) -> None:
    mix = datasets()["mixture (d=10)"]
    print(f"# bench.auto_m --validate {trials}, {utc_now()}; {machine()}\n")
    print("| n | trials within 10% | max err/emp | median err/emp | m: min / median / max |")
    print("|---|---|---|---|---|")
    for n in ns:
        rows = [run_one(mix, n, 1000 + seed, plain_fit=False) for seed in range(trials)]
        r = [row["err_emp"] for row in rows]
        ms = [row["m"] for row in rows]
        print(f"| {n} | {sum(x <= 1.1 for x in r)}/{trials} | {max(r):.4f} | {statistics.median(r):.5f} "
              f"| {min(ms)} / {int(statistics.median(ms))} / {max(ms)} |", flush=True)


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
        print(f"d={d} shift={shift} n1=n2={n}: power default {rej[None]}/{reps} (m={ms[None][0]}, "
              f"{ts[None]:.1f}s), auto {rej['auto']}/{reps} (m median {int(np.median(ms['auto']))}, "
              f"range {min(ms['auto'])}-{max(ms['auto'])}, {ts['auto']:.1f}s)", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="*", default=[1000, 10_000, 100_000])
    p.add_argument("--trials", type=int, default=3)
    p.add_argument("--validate", type=int, default=0,
                   help="instead: this many trials on the mixture at each n, counting those whose "
                        "exact error is within 10%% of the empirical embedding's (the slow test)")
    p.add_argument("--power", type=int, default=0,
                   help="instead: this many repetitions of two_sample_test under a mean shift, "
                        "n_landmarks=None vs 'auto' (power, m, time)")
    args = p.parse_args()
    if args.power:
        power(args.power)
        return
    if args.validate:
        validate(args.n, args.validate)
        return
    print(f"# bench.auto_m, {utc_now()}; {machine()}; nystrom_kme {nk.__version__}, "
          f"SIMD {nk.simd_level()}, {args.trials} trials per n\n")
    print("| data | n | m auto (median [min, max]) | sqrt(n)log | approx/stat | sigma_hat/sigma "
          "| err/emp (max) | err/sigma (max) | search s | fit s @m | converged |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, mix in datasets().items():
        for n in args.n:
            rows = [run_one(mix, n, seed) for seed in range(args.trials)]
            ms = [r["m"] for r in rows]
            med = statistics.median
            emp = max(r["err_emp"] for r in rows)
            print(f"| {name} | {n} | {int(med(ms))} [{min(ms)}, {max(ms)}] | {nk.default_n_landmarks(n)} "
                  f"| {med(r['ratio'] for r in rows):.3f} | {med(r['sig'] for r in rows):.3f} "
                  f"| {'n/a' if math.isnan(emp) else f'{emp:.4f}'} "
                  f"| {max(r['err_sigma'] for r in rows):.3f} "
                  f"| {med(r['search_s'] for r in rows):.2f} | {med(r['fit_s'] for r in rows):.2f} "
                  f"| {sum(r['converged'] for r in rows)}/{len(rows)} |", flush=True)
    print(f"\npaths (last trial): see LandmarkSearch.path; finished {utc_now()}; {machine()}")


if __name__ == "__main__":
    main()
