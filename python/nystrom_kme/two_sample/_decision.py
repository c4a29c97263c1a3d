"""From every kernel's permuted statistics to the test's decision: the aggregate of a
rule for every split, the permutation p-value, each kernel's marginal p-value and the
kernel that decided. The one owner of these for :func:`~nystrom_kme.two_sample_test` and
the drift detectors (which compute their permuted statistics their own way).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .rules import Rule, marginal_pvalues, permutation_pvalue


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
        Each kernel's standard deviation of its statistic over the B + 1 splits (the
        permutation spread the effect interval uses).
    """

    statistic: float
    null: np.ndarray
    pvalue: float
    kernel_statistics: np.ndarray
    kernel_scores: np.ndarray
    kernel_pvalues: np.ndarray
    deciding: int
    spreads: np.ndarray


def decide(rule: Rule, U: np.ndarray, frob: np.ndarray | None, n1: int, n2: int, temperature: float = 1.0) -> Decision:
    """The decision of ``rule`` from the statistics U (K, B + 1), column 0 the observed
    split (the matrix the rule reads: ``rule.statistic``), for samples of n1 and n2 units
    of rows.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.two_sample._decision import decide
    >>> from nystrom_kme.two_sample.rules import RULES
    >>> U = np.array([[3.0, 1.0, 2.0, 0.0], [0.5, 0.1, 0.9, 0.2]])
    >>> d = decide(RULES["mmdagg"], U, None, 10, 10)
    >>> d.pvalue, d.kernel_pvalues.tolist(), d.deciding
    (0.5, [0.25, 0.5], 0)
    """
    U = np.atleast_2d(np.asarray(U, dtype=np.float64))
    scores = rule.scores(U, frob, n1, n2, temperature)
    F = rule.aggregate(scores)
    pvalues = marginal_pvalues(U)[:, 0]
    statistic = float(F[0])
    return Decision(
        statistic=statistic,
        null=F[1:].copy(),
        pvalue=permutation_pvalue(F),
        kernel_statistics=U[:, 0].copy(),
        kernel_scores=scores[:, 0].copy(),
        kernel_pvalues=pvalues,
        deciding=rule.deciding(statistic, pvalues, scores[:, 0], U[:, 0]),
        spreads=U.std(axis=1),
    )


__all__ = ["Decision", "decide"]
