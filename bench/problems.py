"""The synthetic two-sample problems of the aggregated-test papers, written from their
definitions (MMD-FUSE, Biggs, Schrab and Gretton 2023, Sec. 5 and its public
experiment code; MMDAgg, Schrab et al. 2023, Sec. 5.4), with numpy generators:

* ``perturbed_uniform(n, d, scale, rng)``: X from the uniform density on [0, 1]^d with
  P = 2 smooth bumps per axis of random signs (the f_theta of MMDAgg eq. 17, with
  perturbation multiplier e^d P^s scale, s = 1, so the amplitude is ``scale``), by
  rejection sampling; Y uniform on [0, 1]^d. FUSE's benchmark: d = 1 at scale 0.2,
  d = 2 at scale 0.4.
* ``gaussian_mixture(n, d, std_2, rng)``: four Gaussians of standard deviation 1 at
  (+-mu, +-mu) (mu = 20) in the first two coordinates, equal weights; Y's fourth
  component has standard deviation ``std_2`` (FUSE's benchmark: 1.3, d = 2).

Each returns (X, Y) of shape (n, d) float64; under ``scale=0`` / ``std_2=1`` both
samples have the same distribution (H0).
"""

from __future__ import annotations

import itertools

import numpy as np

PERTURBATIONS = 2


def _bump(x: np.ndarray) -> np.ndarray:
    """MMDAgg's G: a smooth bump on (-1, -1/2), its negative on (-1/2, 0), 0 elsewhere."""
    out = np.zeros_like(x)
    left = (x > -1) & (x < -0.5)
    right = (x > -0.5) & (x < 0)
    out[left] = np.exp(-1 / (1 - (4 * x[left] + 3) ** 2))
    out[right] = -np.exp(-1 / (1 - (4 * x[right] + 1) ** 2))
    return out


def perturbed_density(x: np.ndarray, signs: np.ndarray, scale: float, p: int = PERTURBATIONS) -> np.ndarray:
    """f_theta(x) for rows x in [0, 1]^d: 1 + scale e^d sum_j theta_j prod_r G(p x_r - j_r)."""
    n, d = x.shape
    total = np.zeros(n)
    for theta, j in zip(signs, itertools.product(range(1, p + 1), repeat=d)):
        term = np.ones(n)
        for r in range(d):
            term *= _bump(x[:, r] * p - j[r])
        total += theta * term
    return 1.0 + scale * np.exp(d) * total


def perturbed_uniform(
    n: int, d: int, scale: float, rng: np.random.Generator, p: int = PERTURBATIONS
) -> tuple[np.ndarray, np.ndarray]:
    """(X perturbed, Y uniform), each (n, d). The bump signs are drawn from ``rng``."""
    Y = rng.uniform(size=(n, d))
    if scale == 0:
        return rng.uniform(size=(n, d)), Y
    signs = rng.choice([-1.0, 1.0], size=p**d)
    top = 1.0 + scale  # the density's maximum
    out: list[np.ndarray] = []
    have = 0
    while have < n:
        x = rng.uniform(size=(2 * (n - have) + 16, d))
        keep = x[rng.uniform(0, top, size=x.shape[0]) <= perturbed_density(x, signs, scale, p)]
        out.append(keep)
        have += keep.shape[0]
    return np.concatenate(out)[:n], Y


def gaussian_mixture(
    n: int, d: int, std_2: float, rng: np.random.Generator, mu: float = 20.0
) -> tuple[np.ndarray, np.ndarray]:
    """(X, Y), each (n, d), d >= 2: equal mixtures of four Gaussians at (+-mu, +-mu, 0...);
    all of X's have standard deviation 1, Y's last one ``std_2``."""
    if d < 2:
        raise ValueError("the mixture needs d >= 2")
    centres = np.array([[mu, mu], [-mu, mu], [mu, -mu], [-mu, -mu]])

    def sample(stds: np.ndarray) -> np.ndarray:
        comp = rng.integers(0, 4, size=n)
        Z = rng.normal(size=(n, d)) * stds[comp][:, None]
        Z[:, :2] += centres[comp]
        return Z

    return sample(np.ones(4)), sample(np.array([1.0, 1.0, 1.0, std_2]))


#: name -> (generator of (X, Y) at size n under H1, the same under H0), FUSE's settings.
PROBLEMS = {
    "perturbed-d1": (
        lambda n, rng: perturbed_uniform(n, 1, 0.2, rng),
        lambda n, rng: perturbed_uniform(n, 1, 0.0, rng),
    ),
    "perturbed-d2": (
        lambda n, rng: perturbed_uniform(n, 2, 0.4, rng),
        lambda n, rng: perturbed_uniform(n, 2, 0.0, rng),
    ),
    "mixture": (lambda n, rng: gaussian_mixture(n, 2, 1.3, rng), lambda n, rng: gaussian_mixture(n, 2, 1.0, rng)),
}

#: MMD-FUSE's published power (Biggs et al. 2023, results/*_vary_n*.npy of its public
#: experiment code: 200 repetitions, alpha = 0.05, 2000 permutations), and ACTT's and the
#: median-bandwidth test's from the same runs, at n = 500, 1000, 1500, 2000, 2500, 3000.
PUBLISHED_N = (500, 1000, 1500, 2000, 2500, 3000)
PUBLISHED = {
    "perturbed-d1": {
        "fuse": (0.215, 0.43, 0.725, 0.79, 0.925, 0.985),
        "median": (0.16, 0.22, 0.415, 0.455, 0.59, 0.70),
        "actt": (0.185, 0.355, 0.615, 0.71, 0.84, 0.945),
    },
    "perturbed-d2": {
        "fuse": (0.165, 0.43, 0.69, 0.805, 0.975, 0.99),
        "median": (0.065, 0.045, 0.055, 0.045, 0.075, 0.03),
        "actt": (0.095, 0.275, 0.46, 0.675, 0.865, 0.93),
    },
    "mixture": {
        "fuse": (0.18, 0.38, 0.635, 0.765, 0.88, 0.97),
        "median": (0.055, 0.065, 0.05, 0.035, 0.05, 0.04),
        "actt": (0.095, 0.23, 0.43, 0.58, 0.715, 0.875),
    },
}

__all__ = ["PROBLEMS", "PUBLISHED", "PUBLISHED_N", "gaussian_mixture", "perturbed_density", "perturbed_uniform"]
