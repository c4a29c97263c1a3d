"""
Figure 1 of the paper at small scale
====================================

The Nyström embedding reaches the statistical error of the empirical embedding with
far fewer than ``n`` landmarks. We reproduce the experiment of Section 6.1 of the
paper with *exact* RKHS errors: the data come from a mixture of 8 Gaussians in
dimension 10, whose kernel mean embedding has a closed form (Appendix G), so
:math:`\\|\\mu - \\hat\\mu_m\\|_{\\mathcal H}` is computed exactly rather than estimated.

The full figure (up to :math:`n = 10^5`, 100 trials) is ``bench/figure1.py``; here we
use two sample sizes and a few trials so that the script runs in seconds.
"""

# %%
# The distribution and the kernel
# -------------------------------
# The mixture ``(1/8) sum_i N(c_i, I_10)`` with centres ``c_i ~ N(0, 5 I)``, and a
# Gaussian kernel whose bandwidth is the median distance between points (fixed once).
import matplotlib.pyplot as plt
import numpy as np

import nystrom_kme as nk
from nystrom_kme.datasets import GaussianMixture

mixture = GaussianMixture(n_components=8, dim=10, random_state=0)
sigma = nk.median_distance(mixture.sample(1000, random_state=1), random_state=0)
kernel = nk.Gaussian(sigma)
print(f"bandwidth sigma = {sigma:.3f}")

# %%
# Errors against the number of landmarks
# --------------------------------------
# For each ``n`` and trial we draw a fresh sample, record the exact error of the
# empirical embedding (weights ``1/n`` on every point) and of the Nyström embedding
# with ``m`` uniform landmarks, for a grid of ``m``.
ns = [1000, 10_000]
grid = [8, 16, 32, 64, 128, 256, 512, 1024]
n_trials = 3

empirical = {}
nystrom = {}
for n in ns:
    emp, nys = [], []
    for trial in range(n_trials):
        X = mixture.sample(n, random_state=100 * n + trial)
        emp.append(mixture.embedding_error(X, np.full(n, 1.0 / n), sigma))
        errors = []
        for m in grid:
            if m > n:
                errors.append(np.nan)
                continue
            kme = nk.NystromKME(kernel, n_landmarks=m, random_state=trial).fit(X)
            errors.append(mixture.embedding_error(kme.landmarks_, kme.weights_, sigma))
        nys.append(errors)
    empirical[n] = float(np.mean(emp))
    nystrom[n] = np.mean(nys, axis=0)
    m_paper = nk.default_n_landmarks(n)
    print(
        f"n = {n}: empirical error {empirical[n]:.4f}; Nystrom error at m = {max(m for m in grid if m <= m_paper)}: "
        f"{nystrom[n][[m <= m_paper for m in grid]][-1]:.4f}"
    )

# %%
# The figure
# ----------
# Solid lines: Nyström error against ``m``; dashed: the empirical embedding's error
# (which uses all ``n`` points); dotted vertical lines: the paper's choice
# ``m = sqrt(n) log sqrt(n)``. The Nyström curves meet the dashed lines near there.
fig, ax = plt.subplots(figsize=(6.4, 4.2))
for n, color in zip(ns, ["tab:blue", "tab:orange"]):
    ax.loglog(grid, nystrom[n], "o-", color=color, label=f"Nyström, n = {n}")
    ax.axhline(empirical[n], color=color, ls="--", label=f"empirical, n = {n}")
    ax.axvline(nk.default_n_landmarks(n), color=color, ls=":")
ax.set_xlabel("number of landmarks m")
ax.set_ylabel(r"$\|\mu - \hat\mu\|_{\mathcal{H}}$ (exact)")
ax.set_title("Gaussian mixture, d = 10 (paper, Figure 1), 3 trials")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
