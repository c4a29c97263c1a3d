"""From every kernel's permuted statistics to the test's decision, with all the wiring
between them in one place: the round-off floor of bounded kernels, the matrix the rule
reads (biased or unbiased, centred when only the biased one is known), MMD-FUSE's
normalisers from the mean of k^2 and the pooled rows, then the aggregate of the rule for
every split, the permutation p-value, each kernel's marginal p-value and the kernel that
decided. The one owner of these for :func:`~nystrom_kme.two_sample_test` and the drift
detectors: a caller brings its :class:`~nystrom_kme.two_sample._statistics.PermutedStatistics`
(the detectors compute theirs their own way) and, for a rule with normalisers, the mean
of k^2 over pairs of pooled rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ._statistics import PermutedStatistics
from .rules import Rule, marginal_pvalues, permutation_pvalue

#: For kernels bounded by 1 the statistics carry rounding errors up to ~eps |w|^T K |w| =
#: 4 eps: smaller ones are no evidence (constant data, bandwidths far beyond every
#: distance) and count as 0, so that such splits tie instead of ordering by round-off.
NOISE = 2.0**-44


class Bounded(Protocol):
    """What ``decide`` reads of a statistic's kernel: whether it is bounded by 1 (a
    :class:`~nystrom_kme.Kernel`; for the independence test, a pair of kernels)."""

    @property
    def radial(self) -> bool: ...


@dataclass(frozen=True)
class Decision:
    """A test decided.

    Attributes
    ----------
    statistic : float
        The rule's aggregate F_0 on the observed split.
    null : ndarray of shape (B,)
        F_1..F_B.
    pvalue : float
        (1 + #{b: F_b >= F_0}) / (B + 1).
    kernel_statistics, kernel_scores, kernel_pvalues : ndarray of shape (K,)
        Each kernel's statistic, score and marginal p-value on the observed split.
    deciding : int
        The kernel whose p-value decided (``Rule.deciding``).
    spreads : ndarray of shape (K,)
        Each kernel's standard deviation of the matrix the rule read over the B + 1 splits.
    unbiased : ndarray of shape (K, B + 1)
        Each kernel's unbiased statistic for every split, floored as the rule read it (the
        effect interval's estimate and permutation spread).
    """

    statistic: float
    null: np.ndarray
    pvalue: float
    kernel_statistics: np.ndarray
    kernel_scores: np.ndarray
    kernel_pvalues: np.ndarray
    deciding: int
    spreads: np.ndarray
    unbiased: np.ndarray


def without_noise(M: np.ndarray) -> np.ndarray:
    """M with the entries below NOISE in magnitude set to 0 (a copy)."""
    out = np.array(M, dtype=np.float64)
    out[np.abs(out) < NOISE] = 0.0
    return out


def centred(T: np.ndarray) -> np.ndarray:
    """Each kernel's statistics minus their mean over the B + 1 splits: the unbiased
    statistic up to a term that every split shares (which no rule reads: the marginal
    p-values, the standardised scores and the ranks of the aggregates ignore it)."""
    T = np.atleast_2d(np.asarray(T, dtype=np.float64))
    out: np.ndarray = T - T.mean(axis=1, keepdims=True)
    return out


def fuse_normalisers(mean_sq: np.ndarray, n_rows: int) -> np.ndarray:
    """MMD-FUSE's scales ||K_0||_F = sqrt(sum_{i != j} k(z_i, z_j)^2) over ``n_rows``
    pooled rows from the mean of k^2 over pairs: sqrt(mean N (N - 1)), unbiased in the square."""
    out: np.ndarray = np.sqrt(np.maximum(np.asarray(mean_sq, dtype=np.float64), 0.0) * n_rows * (n_rows - 1))
    return out


def decide(
    rule: Rule,
    stats: PermutedStatistics,
    kernels: Sequence[Bounded],
    mean_sq: np.ndarray | Callable[[], np.ndarray] | None = None,
    temperature: float = 1.0,
) -> Decision:
    """The decision of ``rule`` from every kernel's permuted statistics ``stats`` (column 0
    the observed split) for ``kernels`` (anything with ``radial``: a test of pairs of
    kernels brings its pairs): statistics of bounded kernels below NOISE set to
    0, U the centred T when ``stats`` has none, the matrix the rule reads
    (``rule.statistic``), and, for a rule with normalisers, ||K_0||_F from ``mean_sq`` (an
    array (K,) or a function giving it, called only then) over ``stats.pooled_rows``.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme.two_sample._decision import decide
    >>> from nystrom_kme.two_sample._statistics import PermutedStatistics
    >>> from nystrom_kme.two_sample.rules import RULES
    >>> U = np.array([[3.0, 1.0, 2.0, 0.0], [0.5, 0.1, 0.9, 0.2]])
    >>> stats = PermutedStatistics(U, U, (10, 10))
    >>> d = decide(RULES["mmdagg"], stats, [nk.Gaussian(1.0), nk.Gaussian(2.0)])
    >>> d.pvalue, d.kernel_pvalues.tolist(), d.deciding
    (0.5, [0.25, 0.5], 0)
    """
    T = np.atleast_2d(np.asarray(stats.T, dtype=np.float64))
    U = centred(T) if stats.U is None else np.atleast_2d(np.asarray(stats.U, dtype=np.float64))
    if all(k.radial for k in kernels):  # bounded by 1: below NOISE is round-off
        T, U = without_noise(T), without_noise(U)
    read = T if rule.statistic == "biased" else U
    frob = None
    if rule.needs_frobenius:
        if mean_sq is None:
            raise ValueError(f"the rule {rule.name!r} needs the mean of k^2 over pairs of pooled rows (mean_sq)")
        found = mean_sq() if callable(mean_sq) else mean_sq
        frob = fuse_normalisers(found, stats.pooled_rows)
    n1, n2 = stats.n_rows
    scores = rule.scores(read, frob, n1, n2, temperature)
    F = rule.aggregate(scores)
    pvalues = marginal_pvalues(read)[:, 0]
    statistic = float(F[0])
    return Decision(
        statistic=statistic,
        null=F[1:].copy(),
        pvalue=permutation_pvalue(F),
        kernel_statistics=read[:, 0].copy(),
        kernel_scores=scores[:, 0].copy(),
        kernel_pvalues=pvalues,
        deciding=rule.deciding(statistic, pvalues, scores[:, 0], read[:, 0]),
        spreads=read.std(axis=1),
        unbiased=U,
    )


__all__ = ["NOISE", "Bounded", "Decision", "centred", "decide", "fuse_normalisers", "without_noise"]
