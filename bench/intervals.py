"""Coverage of the intervals the tests and detectors print (issue 35): the effect size of
``two_sample_test`` and ``DriftResult.distance``, against the population MMD in closed
form.

For X ~ N(0, I_d) and Y ~ N(delta 1, I_d), x - y ~ N(-delta 1, 2 I), so ||x - y||^2 = 2 Q
with Q a non-central chi-square of d degrees of freedom and non-centrality d delta^2 / 2
(central for two draws of X). For any radial kernel k(r):

    MMD^2 = 2 E k((2 Q_0)^(1/2)) - 2 E k((2 Q_delta)^(1/2)),

each expectation a one-dimensional integral (scipy's quad over the chi-square density),
exact to ~1e-10: the truth for whichever kernel a result names.

    python -m bench.intervals --effect 200       # two_sample_test, one kernel and the default (n = 500, 2000, 5000)
    python -m bench.intervals --distance 300     # DriftDetector.predict's distance (n_ref = 2 10^4 and 2000)
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
from scipy import integrate, stats

import nystrom_kme as nk
from bench.harness import machine, utc_now

D = 10


def _profile(kernel: nk.Kernel):  # noqa: ANN202  (k as a function of the distance)
    h = float(kernel.bandwidth)
    name = kernel.name
    if name == "gaussian":
        return lambda r: math.exp(-r * r / (2 * h * h))
    if name == "laplacian":
        return lambda r: math.exp(-r / h)
    raise ValueError(f"no profile for {name}")


def shift_mmd(kernel: nk.Kernel, d: int, delta: float) -> float:
    """The population MMD between N(0, I_d) and N(delta 1, I_d) for a radial kernel."""
    k = _profile(kernel)

    def mean(lam: float) -> float:
        dist = stats.chi2(d) if lam == 0 else stats.ncx2(d, lam)
        val, _ = integrate.quad(lambda q: k(math.sqrt(2 * q)) * dist.pdf(q), 0, np.inf, limit=200)
        return float(val)

    return math.sqrt(max(2 * mean(0.0) - 2 * mean(d * delta * delta / 2), 0.0))


def effect(reps: int, ns: tuple[int, ...] = (500, 2000, 5000), delta: float = 0.07) -> None:
    print(f"\n## Effect interval coverage (two_sample_test), {utc_now()}; {machine()}\n")
    print("| test | n per sample | shift | reps | covers the MMD | interval excludes 0 | s per test |")
    print("|---|---|---|---|---|---|---|")
    for label, kw in (("kernel='gaussian'", {"kernel": "gaussian"}), ("default", {})):
        for n in ns:
            for shift in (0.0, delta):
                covered = excl = 0
                t = time.perf_counter()
                for rep in range(reps):
                    rng = np.random.default_rng([n, rep, int(shift * 1000)])
                    X, Y = rng.normal(size=(n, D)), rng.normal(size=(n, D)) + shift
                    res = nk.two_sample_test(X, Y, random_state=rep, n_permutations=200, **kw)  # exact up to 4000 rows
                    e = res.effect
                    assert e is not None
                    truth = shift_mmd(e.kernel, D, shift)
                    covered += e.low <= truth <= e.high
                    excl += e.low > 0
                s = (time.perf_counter() - t) / reps
                print(
                    f"| {label} | {n} | {shift} | {reps} | {covered / reps:.3f} | {excl / reps:.3f} | {s:.2f} |",
                    flush=True,
                )


def distance(reps: int, delta: float = 0.15) -> None:
    print(f"\n## Drift distance interval coverage, {utc_now()}; {machine()}\n")
    print("| kernel | n_ref | batch | shift | detectors x batches | covers the MMD | excludes 0 | s per predict |")
    print("|---|---|---|---|---|---|---|---|")
    # a large reference, and a small one whose own noise is a large part of the interval
    cells = [
        (label, kw, n_ref, b)
        for n_ref, b in ((20_000, 200), (2_000, 500))
        for label, kw in (("one Gaussian", {"kernel": "gaussian"}), ("default", {}))
    ]
    for label, kw, n_ref, b in cells:
        for shift in (0.0, delta):
            covered = excl = total = 0
            t = time.perf_counter()
            for det_seed in range(10):
                rng = np.random.default_rng([det_seed, 7])
                det = nk.DriftDetector(rng.normal(size=(n_ref, D)), n_holdout=n_ref // 2, random_state=det_seed, **kw)
                for _ in range(reps // 10):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")  # the p-value's calibration is not what is measured
                        res = det.predict(rng.normal(size=(b, D)) + shift)
                    e = res.distance
                    truth = shift_mmd(e.kernel, D, shift)
                    covered += e.low <= truth <= e.high
                    excl += e.low > 0
                    total += 1
            s = (time.perf_counter() - t) / total
            print(
                f"| {label} | {n_ref} | {b} | {shift} | {total} "
                f"| {covered / total:.3f} | {excl / total:.3f} | {s:.3f} |",
                flush=True,
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--effect", type=int, default=0, help="repetitions per cell of two_sample_test's effect")
    ap.add_argument("--distance", type=int, default=0, help="batches per cell of the drift distance")
    args = ap.parse_args()
    if args.effect:
        effect(args.effect)
    if args.distance:
        distance(args.distance)


if __name__ == "__main__":
    main()
