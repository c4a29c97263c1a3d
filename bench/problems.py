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

The wider suite of issue 27 (``SUITE``) adds, each from its paper's definition:

* ``mean_shift`` / ``scale_change``: N(0, I_d) against a shifted or scaled Gaussian, where
  a wide (mean-sensitive) kernel is best;
* ``blobs``: a 3 x 3 grid of Gaussians with covariance 0.03 I (X) against the same grid
  with correlated blobs, correlations -0.02 - 0.002 i, 0, 0.02 + 0.002 (i - 5) (Liu et
  al., ICML 2020, "Blob"; after Gretton et al. 2012);
* ``hdgm``: two Gaussian modes at 0 and 0.5 (all coordinates) with identity covariance
  (X) against the same modes whose first two coordinates correlate +0.5 and -0.5 (Liu et
  al. 2020, "HDGM", d = 10);
* ``heavy_tails``: N(0, I_d) against a multivariate Student t with nu = 5 scaled to the
  same covariance: a difference in the tails only;
* ``digits_mix``: scikit-learn's bundled digits (1797 images, 64 pixels), X drawn from
  all images, Y from a mixture putting extra weight on three classes: a real-data class
  mix change.
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


def mean_shift(n: int, d: int, shift: float, scale: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """X ~ N(0, I_d), Y ~ N(shift 1, scale^2 I_d)."""
    return rng.normal(size=(n, d)), rng.normal(size=(n, d)) * scale + shift


def blob_covariances(correlated: bool, strength: float = 1.0) -> np.ndarray:
    """The nine 2 x 2 covariances of the Blob problem (Liu et al. 2020): 0.03 I for X; for
    Y the off-diagonal -0.02 - 0.002 i (i < 4), 0 (i = 4), 0.02 + 0.002 (i - 5) (i > 4),
    times ``strength``."""
    cov = np.tile(np.eye(2) * 0.03, (9, 1, 1))
    if correlated:
        for i in range(9):
            rho = -0.02 - 0.002 * i if i < 4 else (0.0 if i == 4 else 0.02 + 0.002 * (i - 5))
            cov[i, 0, 1] = cov[i, 1, 0] = rho * strength
    return cov


def blobs(n: int, rng: np.random.Generator, h1: bool = True, strength: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """(X, Y), each (n, 2): blobs centred on the grid {0, 1, 2}^2, chosen uniformly; Y's
    correlations times ``strength``."""

    def sample(cov: np.ndarray) -> np.ndarray:
        which = rng.integers(0, 9, size=n)
        chol = np.linalg.cholesky(cov)
        z = np.einsum("nij,nj->ni", chol[which], rng.normal(size=(n, 2)))
        return z + np.stack([which // 3, which % 3], axis=1)

    return sample(blob_covariances(False)), sample(blob_covariances(h1, strength))


def hdgm(n: int, d: int, rng: np.random.Generator, h1: bool = True, rho: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """(X, Y), each (n, d): equal mixtures of N(0, I) and N(0.5 1, I); Y's modes have their
    first two coordinates correlated +rho and -rho under H1 (Liu et al. 2020: 0.5)."""

    def sample(rho: tuple[float, float]) -> np.ndarray:
        mode = rng.integers(0, 2, size=n)
        z = rng.normal(size=(n, d))
        out = z.copy()
        for j, r in enumerate(rho):  # Cholesky of [[1, r], [r, 1]] on the first two coordinates
            rows = mode == j
            out[rows, 1] = r * z[rows, 0] + np.sqrt(1 - r * r) * z[rows, 1]
        return out + 0.5 * mode[:, None]

    return sample((0.0, 0.0)), sample((rho, -rho) if h1 else (0.0, 0.0))


def heavy_tails(
    n: int, d: int, nu: float, rng: np.random.Generator, h1: bool = True, frac: float = 1.0
) -> tuple[np.ndarray, np.ndarray]:
    """X ~ N(0, I_d), Y ~ a multivariate t with nu degrees of freedom scaled to covariance
    I_d (same mean and covariance; only the tails differ); with ``frac`` < 1, Y's rows are
    that t with probability ``frac``, else N(0, I_d)."""
    X = rng.normal(size=(n, d))
    if not h1:
        return X, rng.normal(size=(n, d))
    t = rng.normal(size=(n, d)) / np.sqrt(rng.chisquare(nu, size=(n, 1)) / nu)
    Y = t * np.sqrt((nu - 2) / nu)
    if frac < 1.0:
        keep = rng.uniform(size=n) >= frac
        Y[keep] = rng.normal(size=(int(keep.sum()), d))
    return X, Y


_DIGITS: tuple[np.ndarray, np.ndarray] | None = None


def digits_mix(
    n: int, rng: np.random.Generator, h1: bool = True, weight: float = 0.25
) -> tuple[np.ndarray, np.ndarray]:
    """(X, Y), each (n, 64), drawn with replacement from scikit-learn's digits: X from all
    images, Y with probability ``weight`` from classes 3, 5 and 8 only, else from all."""
    global _DIGITS
    if _DIGITS is None:
        from sklearn.datasets import load_digits

        data = load_digits()
        _DIGITS = (data.data.astype(np.float64), data.target)
    Z, labels = _DIGITS
    X = Z[rng.integers(0, Z.shape[0], size=n)]
    rows = rng.integers(0, Z.shape[0], size=n)
    if h1:
        some = np.flatnonzero(np.isin(labels, (3, 5, 8)))
        pick = rng.uniform(size=n) < weight
        rows[pick] = some[rng.integers(0, some.size, size=int(pick.sum()))]
    return X, Z[rows]


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

#: Issue 27's wider suite: name -> (H1 generator, H0 generator), and the sample sizes per
#: sample of its cells (FUSE's three problems at four sizes, the others at one size chosen
#: so that the best method's power is neither 0 nor 1).
SUITE = {
    **PROBLEMS,
    "shift-d10": (lambda n, rng: mean_shift(n, 10, 0.07, 1.0, rng), lambda n, rng: mean_shift(n, 10, 0.0, 1.0, rng)),
    "shift-d50": (lambda n, rng: mean_shift(n, 50, 0.05, 1.0, rng), lambda n, rng: mean_shift(n, 50, 0.0, 1.0, rng)),
    "scale-d10": (lambda n, rng: mean_shift(n, 10, 0.0, 1.09, rng), lambda n, rng: mean_shift(n, 10, 0.0, 1.0, rng)),
    "blobs": (lambda n, rng: blobs(n, rng), lambda n, rng: blobs(n, rng, h1=False)),
    "hdgm": (lambda n, rng: hdgm(n, 10, rng), lambda n, rng: hdgm(n, 10, rng, h1=False)),
    "heavy-tails": (lambda n, rng: heavy_tails(n, 5, 5.0, rng), lambda n, rng: heavy_tails(n, 5, 5.0, rng, h1=False)),
    "digits-mix": (lambda n, rng: digits_mix(n, rng), lambda n, rng: digits_mix(n, rng, h1=False)),
}
SUITE_N = {
    "perturbed-d1": (500, 1000, 2000, 3000),
    "perturbed-d2": (500, 1000, 2000, 3000),
    "mixture": (500, 1000, 2000, 3000),
    "shift-d10": (500,),
    "shift-d50": (500,),
    "scale-d10": (500,),
    "blobs": (500,),
    "hdgm": (1000,),
    "heavy-tails": (1000,),
    "digits-mix": (300,),
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

__all__ = [
    "PROBLEMS",
    "PUBLISHED",
    "PUBLISHED_N",
    "SUITE",
    "SUITE_N",
    "blob_covariances",
    "blobs",
    "digits_mix",
    "gaussian_mixture",
    "hdgm",
    "heavy_tails",
    "mean_shift",
    "perturbed_density",
    "perturbed_uniform",
]
