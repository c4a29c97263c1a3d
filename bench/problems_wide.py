"""The widened suite of issue 36: kinds of difference outside the aggregated-test papers'
problems (bench/problems.py), written here from their definitions, with numpy generators.

Small samples (``WIDE``, n = 500 and 2500 per sample; the effects below are those at
n = 500, scaled as n^(-1/2) beyond):

* ``copula(n, d, rho)``: X uniform on [0, 1]^d; Y's first two coordinates joined by a
  Gaussian copula of correlation rho, every marginal still uniform: a change of
  dependence alone, in low (d = 2) and high (d = 20) dimension;
* ``ring(n, d, noise_y)``: points on the unit circle with N(0, 0.1^2) noise (X) or
  N(0, noise_y^2) (Y), in the plane or embedded in d = 10 by a fixed orthonormal frame:
  data on a manifold, the difference across it;
* ``periodic(n, d, amp, freq)``: Y uniform on [0, 1]^d; X with density
  1 + amp sin(2 pi freq x_1): a periodic perturbation;
* ``sparse_shift(n, d, k, shift)``: N(0, I_d) against a shift of k coordinates (d = 50);
* ``mixture_weights(n, d, w)``: N(-2 e_1, I) and N(2 e_1, I) with weights 1/2 (X) or
  w, 1 - w (Y);
* ``local_cluster(n, d, frac)``: N(0, I_d) against the same with a fraction ``frac`` of
  its rows in a tight cluster N((1.5, 1.5, 0, ...), 0.1^2 I).

Large samples (``LARGE``, 2 10^4 and 10^5 per sample): weak versions of a shift, a
variance change, a local difference and the mixture weights, their effect scaled as
n^(-1/2) so that the power stays between 0 and 1.

Issue 42's kinds (``SUITE42``, with every earlier problem, at n = 500 and 2500 per sample;
``ACROSS``: the same problems at 6000 and 2 10^4 per sample, across the exact test's limit):

* ``sparse_variance(n, d, k, scale)``: N(0, I_d) against the same with k coordinates
  scaled by ``scale`` (2 of 100): a change in a few coordinates of many;
* ``correlation_flip(n, d, rho)``: N(0, I_d) whose first two coordinates correlate +rho
  (X) or -rho (Y), d = 50: a dependence change, every marginal the same;
* ``poisson_counts(n, d, rate, spread)``: independent Poisson(rate) counts (X) against
  rows whose rate is rate - spread or rate + spread with probability 1/2 each (Y: the
  same mean, overdispersed and dependent), d = 3: integer data, many ties.

Each generator returns (X, Y) of shape (n, d) float64; the H0 version draws both samples
from X's distribution.
"""

from __future__ import annotations

import math

import numpy as np


def copula(n: int, d: int, rho: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """X ~ U[0, 1]^d; Y the same but coordinates 0 and 1 joined by a Gaussian copula."""
    X = rng.uniform(size=(n, d))
    Y = rng.uniform(size=(n, d))
    z0 = rng.normal(size=n)
    z1 = rho * z0 + math.sqrt(1 - rho * rho) * rng.normal(size=n)
    from scipy.special import ndtr  # the normal CDF, vectorised

    Y[:, 0], Y[:, 1] = ndtr(z0), ndtr(z1)
    return X, Y


def _frame(d: int) -> np.ndarray:
    """A fixed orthonormal 2-frame of R^d (2, d)."""
    q, _ = np.linalg.qr(np.random.default_rng(36).normal(size=(d, 2)))
    return q.T


def ring(
    n: int, d: int, noise_y: float, rng: np.random.Generator, noise_x: float = 0.1
) -> tuple[np.ndarray, np.ndarray]:
    """Noisy unit circles (X noise ``noise_x``, Y ``noise_y``) in the plane, embedded in R^d."""

    def sample(noise: float) -> np.ndarray:
        t = rng.uniform(0, 2 * math.pi, size=n)
        pts = np.stack([np.cos(t), np.sin(t)], axis=1) + noise * rng.normal(size=(n, 2))
        return pts if d == 2 else pts @ _frame(d)

    return sample(noise_x), sample(noise_y)


def periodic(n: int, d: int, amp: float, freq: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """X with density 1 + amp sin(2 pi freq x_1) on [0, 1]^d (rejection), Y uniform."""
    out: list[np.ndarray] = []
    have = 0
    while have < n:
        x = rng.uniform(size=(2 * (n - have) + 16, d))
        keep = x[rng.uniform(0, 1 + amp, size=x.shape[0]) <= 1 + amp * np.sin(2 * math.pi * freq * x[:, 0])]
        out.append(keep)
        have += keep.shape[0]
    return np.concatenate(out)[:n], rng.uniform(size=(n, d))


def sparse_shift(n: int, d: int, k: int, shift: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """N(0, I_d) against N(shift on the first k coordinates, I_d)."""
    Y = rng.normal(size=(n, d))
    Y[:, :k] += shift
    return rng.normal(size=(n, d)), Y


def mixture_weights(n: int, d: int, w: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Two unit Gaussians at -2 e_1 and 2 e_1: weights (1/2, 1/2) for X, (w, 1 - w) for Y."""

    def sample(weight: float) -> np.ndarray:
        Z = rng.normal(size=(n, d))
        Z[:, 0] += np.where(rng.uniform(size=n) < weight, -2.0, 2.0)
        return Z

    return sample(0.5), sample(w)


def local_cluster(n: int, d: int, frac: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """N(0, I_d) against the same with a fraction ``frac`` of rows in N((1.5, 1.5, 0..), 0.1^2 I)."""
    Y = rng.normal(size=(n, d))
    moved = rng.uniform(size=n) < frac
    centre = np.zeros(d)
    centre[:2] = 1.5
    Y[moved] = centre + 0.1 * rng.normal(size=(int(moved.sum()), d))
    return rng.normal(size=(n, d)), Y


def sparse_variance(n: int, d: int, k: int, scale: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """N(0, I_d) against N(0, I_d) with its first k coordinates times ``scale``."""
    Y = rng.normal(size=(n, d))
    Y[:, :k] *= scale
    return rng.normal(size=(n, d)), Y


def correlation_flip(n: int, d: int, rho: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """N(0, I_d) with corr(x_0, x_1) = rho (X) against the same with -rho (Y)."""

    def sample(r: float) -> np.ndarray:
        Z = rng.normal(size=(n, d))
        Z[:, 1] = r * Z[:, 0] + math.sqrt(1 - r * r) * Z[:, 1]
        return Z

    return sample(rho), sample(-rho)


def poisson_counts(
    n: int, d: int, rate: float, spread: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Poisson(rate)^d counts (X) against rows of Poisson(rate +- spread)^d, the sign drawn
    once per row (Y), as float64."""
    X = rng.poisson(rate, size=(n, d)).astype(np.float64)
    rates = rate + spread * rng.choice([-1.0, 1.0], size=(n, 1))
    return X, rng.poisson(np.broadcast_to(rates, (n, d))).astype(np.float64)


def _h0(gen):  # noqa: ANN001, ANN202  (a generator's H0: both samples from X's law)
    def draw(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        X, _ = gen(2 * n, rng)
        return X[:n], X[n:]

    return draw


def _pair(gen):  # noqa: ANN001, ANN202
    return (gen, _h0(gen))


def _weak(n: int) -> float:
    """The effect's scale at n per sample: 1 at n = 500, falling as n^(-1/2)."""
    return math.sqrt(500.0 / n)


#: issue 36's small-sample kinds: name -> (H1 generator, H0 generator); each effect as
#: given at n = 500 per sample, scaled by _weak(n) beyond (at full strength every
#: method had power 1 at 2500)
WIDE = {
    "copula-d2": _pair(lambda n, rng: copula(n, 2, 0.3 * _weak(n), rng)),
    "copula-d20": _pair(lambda n, rng: copula(n, 20, 0.7 * _weak(n), rng)),
    "ring-d2": _pair(lambda n, rng: ring(n, 2, 0.1 + 0.03 * _weak(n), rng)),
    "ring-d10": _pair(lambda n, rng: ring(n, 10, 0.1 + 0.03 * _weak(n), rng)),
    "periodic-d1": _pair(lambda n, rng: periodic(n, 1, 0.3 * _weak(n), 4.0, rng)),
    "periodic-d3": _pair(lambda n, rng: periodic(n, 3, 0.5 * _weak(n), 2.0, rng)),
    "sparse-shift-d50": _pair(lambda n, rng: sparse_shift(n, 50, 1, 0.25 * _weak(n), rng)),
    "mixture-weights": _pair(lambda n, rng: mixture_weights(n, 2, 0.5 - 0.1 * _weak(n), rng)),
    "local-cluster-d5": _pair(lambda n, rng: local_cluster(n, 5, 0.03 * _weak(n), rng)),
}
WIDE_N = {name: (500, 2500) for name in WIDE}


#: issue 36's large-sample cells: weak effects, name -> (H1 generator, H0 generator)
LARGE = {
    "weak-shift-d10": _pair(lambda n, rng: sparse_shift(n, 10, 10, 0.07 * _weak(n), rng)),
    "weak-scale-d10": _pair(
        lambda n, rng: (rng.normal(size=(n, 10)), rng.normal(size=(n, 10)) * (1 + 0.09 * _weak(n)))
    ),
    "weak-cluster-d5": _pair(lambda n, rng: local_cluster(n, 5, 0.03 * _weak(n), rng)),
    "weak-mixture": _pair(lambda n, rng: mixture_weights(n, 2, 0.5 - 0.1 * _weak(n), rng)),
}
LARGE_N = {name: (20_000, 100_000) for name in LARGE}


def _weak_from(n: int, n0: int) -> float:
    """The effect's scale at n per sample for a problem defined at n0: sqrt(n0 / n)."""
    return math.sqrt(n0 / n)


#: issue 42's kinds: name -> (H1 generator, H0 generator), each effect as given at n = 500
#: per sample, scaled by _weak(n) beyond
NEW42 = {
    "sparse-variance-d100": _pair(lambda n, rng: sparse_variance(n, 100, 2, 1.0 + 0.5 * _weak(n), rng)),
    "correlation-flip-d50": _pair(lambda n, rng: correlation_flip(n, 50, 0.6 * _weak(n), rng)),
    "poisson-d3": _pair(lambda n, rng: poisson_counts(n, 3, 3.0, 0.7 * math.sqrt(_weak(n)), rng)),
}


def _earlier() -> dict:
    """Issue 27's suite as issue 42 runs it at n = 500 and 2500 per sample: MMD-FUSE's three
    problems at their published settings (as in its paper, at every n); the others with
    their effect at the size issue 27 ran them (n0) scaled by sqrt(n0 / n), so that the
    power stays between 0 and 1."""
    from bench import problems as p

    return {
        **p.PROBLEMS,
        "shift-d10": _pair(lambda n, rng: p.mean_shift(n, 10, 0.07 * _weak(n), 1.0, rng)),
        "shift-d50": _pair(lambda n, rng: p.mean_shift(n, 50, 0.05 * _weak(n), 1.0, rng)),
        "scale-d10": _pair(lambda n, rng: p.mean_shift(n, 10, 0.0, 1.0 + 0.09 * _weak(n), rng)),
        "blobs": _pair(lambda n, rng: p.blobs(n, rng, strength=_weak(n))),
        "hdgm": _pair(lambda n, rng: p.hdgm(n, 10, rng, rho=min(0.9, 0.5 * _weak_from(n, 1000)))),
        "heavy-tails": _pair(lambda n, rng: p.heavy_tails(n, 5, 5.0, rng, frac=min(1.0, _weak_from(n, 1000)))),
        "digits-mix": _pair(lambda n, rng: p.digits_mix(n, rng, weight=min(1.0, 0.25 * _weak_from(n, 300)))),
    }


#: issue 42's widened suite: the earlier problems (issue 27's, issue 36's) and the new kinds
SUITE42 = {**_earlier(), **WIDE, **NEW42}
SUITE42_N = {name: (500, 2500) for name in SUITE42}
#: across the exact test's limit (10^4 pooled rows up to d = 20): 6000 and 2 10^4 per sample
ACROSS_N = (6000, 20_000)

__all__ = [
    "ACROSS_N",
    "LARGE",
    "LARGE_N",
    "NEW42",
    "SUITE42",
    "SUITE42_N",
    "WIDE",
    "WIDE_N",
    "copula",
    "correlation_flip",
    "poisson_counts",
    "sparse_variance",
    "local_cluster",
    "mixture_weights",
    "periodic",
    "ring",
    "sparse_shift",
]
