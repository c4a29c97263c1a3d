"""Data and helpers shared by the tests of nystrom_kme.bounds (imported as ``from bounds_data import``).

Not a conftest.py: the other test modules import helpers with ``from conftest import``,
which a second conftest module on sys.path would shadow.
"""

from __future__ import annotations

import numpy as np

import nystrom_kme as nk
from nystrom_kme.datasets import GaussianMixture


def section_6_1_mixture():
    """The Section 6.1 Gaussian mixture (d = 10, p = 8) and its median-bandwidth Gaussian kernel."""
    gm = GaussianMixture(8, 10, random_state=2022)
    pilot = gm.sample(1000, random_state=7)
    kernel = nk.Gaussian("median").resolve(pilot, np.random.default_rng(0))
    return gm, kernel


def poly_eff_dim(alpha: float, size: int = 4000):
    """N(lambda) of a normalised spectrum sigma_i ~ i^(-alpha), as a function of lambda."""
    sig = np.arange(1, size + 1, dtype=float) ** (-alpha)
    sig /= sig.sum()
    return lambda lam: float(np.sum(sig / (sig + lam)))


def decreasing(values) -> bool:
    """Whether the sequence is strictly decreasing."""
    return all(values[i] > values[i + 1] for i in range(len(values) - 1))
