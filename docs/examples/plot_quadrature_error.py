"""
Quadrature error against the number of landmarks
================================================

The weights of a Nyström embedding form a quadrature rule
:math:`\\sum_j \\alpha_j f(\\tilde x_j) \\approx \\mathbb E f(x)`, whose error on any
:math:`f` of the RKHS is at most :math:`\\|f\\|_{\\mathcal H}` times the *worst-case
error* :math:`\\|\\mu - \\sum_j \\alpha_j \\phi(\\tilde x_j)\\|_{\\mathcal H}`. For a
Gaussian mixture the worst-case error is exact
(:meth:`~nystrom_kme.QuadratureRule.worst_case_error`). We compare, against the number
of nodes ``m``:

* Monte Carlo: ``m`` sample points with equal weights ``1/m``;
* Nyström weights on ``m`` uniform landmarks (the paper's estimator);
* Nyström weights on ``m`` landmarks chosen by randomly pivoted Cholesky.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

import nystrom_kme as nk
from nystrom_kme.datasets import GaussianMixture

mixture = GaussianMixture(n_components=4, dim=2, random_state=0)
X = mixture.sample(5000, random_state=1)
kernel = nk.Gaussian(nk.median_distance(X, random_state=0))
grid = [4, 8, 16, 32, 64, 128, 256]
n_trials = 3

errors = {"Monte Carlo": [], "Nyström, uniform": [], "Nyström, RP-Cholesky": []}
for m in grid:
    trial_errors = {name: [] for name in errors}
    for trial in range(n_trials):
        rng = np.random.default_rng(trial)
        mc = nk.QuadratureRule(X[rng.choice(len(X), m, replace=False)], np.full(m, 1.0 / m), kernel)
        trial_errors["Monte Carlo"].append(mc.worst_case_error(mixture))
        for name, sampler in [("Nyström, uniform", "uniform"), ("Nyström, RP-Cholesky", "rpcholesky")]:
            kme = nk.NystromKME(kernel, n_landmarks=m, sampler=sampler, random_state=trial).fit(X)
            rule = nk.QuadratureRule.from_embedding(kme)
            trial_errors[name].append(rule.worst_case_error(mixture))
    for name in errors:
        errors[name].append(np.mean(trial_errors[name]))

# The error floor: the empirical embedding of all 5000 points.
floor = mixture.embedding_error(X, np.full(len(X), 1.0 / len(X)), kernel.bandwidth)

# %%
# Integrating a function
# ----------------------
# One concrete integrand: :math:`f(x) = \cos(x_1)`, integrated with 64 nodes.
f = lambda P: np.cos(P[:, 0])  # noqa: E731
reference = f(mixture.sample(400_000, random_state=2)).mean()
kme = nk.NystromKME(kernel, n_landmarks=64, random_state=0).fit(X)
print(
    f"E cos(x_1) ~ {reference:.4f} (Monte Carlo, 4e5 points); "
    f"Nyström rule with 64 nodes: {nk.QuadratureRule.from_embedding(kme).integrate(f):.4f}"
)

# %%
# The worst-case error
# --------------------
fig, ax = plt.subplots(figsize=(6.4, 4.2))
for (name, values), marker in zip(errors.items(), "osD"):
    ax.loglog(grid, values, marker + "-", label=name)
ax.axhline(floor, color="k", ls="--", label="empirical embedding, n = 5000")
ax.loglog(grid, 0.5 / np.sqrt(grid), color="0.6", ls=":", label=r"$\propto m^{-1/2}$")
ax.set_xlabel("number of nodes m")
ax.set_ylabel("worst-case error (exact)")
ax.set_title("Quadrature on a 2-D Gaussian mixture")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
