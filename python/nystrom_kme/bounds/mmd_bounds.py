r"""The MMD bounds of "Nyström Kernel Mean Embeddings": Theorem 5.1 (Section 5) and D.1 (App. D).

Section 5 ("Application: efficient estimation of the maximum mean discrepancy")
estimates :math:`\mathrm{MMD}(\rho_1, \rho_2)` by the distance
:math:`\|\hat\mu_{m_1}^{(\rho_1)} - \hat\mu_{m_2}^{(\rho_2)}\|` between two
Nyström mean embeddings, and bounds its error in Theorem 5.1; Appendix D
("Maximum Mean Discrepancy") states the generic version, Theorem D.1, and proves it
by a reverse triangle inequality, one single-distribution bound per distribution
and a union bound.

* :func:`theorem_5_1_bound` -- Theorem 5.1 (Section 5): :func:`theorem_4_1_bound`
  for each distribution;
* :func:`theorem_d1_bound` -- Theorem D.1 (Appendix D): :func:`lemma_c1_bound`
  for each distribution, at any ``lambda_k``;
* :class:`MMDBound` -- the result of both: the sum of the two parts, each with
  its conditions.

The single-distribution bounds they sum are in :mod:`nystrom_kme.bounds.theorems`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ._checks import (
    all_hold,
    check_m_le_n,
    count,
    eff_dim_at,
    nonnegative,
    pair,
    positive,
)
from .theorems import EffDim, LemmaC1Bound, Theorem41Bound, lemma_c1_bound, theorem_4_1_bound, theorem_4_1_lambda

__all__ = ["MMDBound", "theorem_5_1_bound", "theorem_d1_bound"]


@dataclass(frozen=True)
class MMDBound:
    """Bound on ``|MMD(rho_1, rho_2) - MMD_hat|``: the sum of one bound per distribution.

    Attributes
    ----------
    value : float
        Sum of the two parts' values.
    parts : tuple
        The two :class:`Theorem41Bound` (Theorem 5.1) or :class:`LemmaC1Bound`
        (Theorem D.1), one per distribution.
    confidence : float
        ``1 - 2 delta``.

    Examples
    --------
    >>> from nystrom_kme import bounds
    >>> b = bounds.theorem_5_1_bound(n=[10_000, 5_000], m=[1000, 500], delta=0.05, eff_dim=[5.0, 5.0])
    >>> bool(abs(b.value - sum(p.value for p in b.parts)) < 1e-12), b.confidence
    (True, 0.9)
    """

    value: float
    parts: tuple[LemmaC1Bound | Theorem41Bound, ...]
    confidence: float

    @property
    def holds(self) -> bool | None:
        """Whether both parts' conditions hold (None if one is unknown)."""
        return all_hold(*(p.holds for p in self.parts))

    def __float__(self) -> float:
        return float(self.value)


def theorem_5_1_bound(
    n: Sequence[int],
    m: Sequence[int],
    delta: float,
    eff_dim: Sequence[EffDim],
    K: float = 1.0,
    *,
    op_norm: Sequence[float] | None = None,
) -> MMDBound:
    r"""MMD error bound of Theorem 5.1 (Nyström MMD estimator, Section 5).

    With probability at least :math:`1-2\delta`,
    :math:`|\mathrm{MMD}(\rho_1,\rho_2) - \widehat{\mathrm{MMD}}| \le \sum_{k=1,2}
    \big(c_1/\sqrt{n_k} + c_2/m_k + c_3\sqrt{\log(m_k/\delta)}\,
    \sqrt{\mathcal N^{(\rho_k)}(\lambda_{m_k})}/m_k\big)`, i.e. the sum of
    :func:`theorem_4_1_bound` for each distribution (proof of Theorem D.1: reverse
    triangle inequality, then Theorem 4.1 twice and a union bound), provided
    each :math:`m_k` meets the condition of Theorem 4.1 for :math:`C_k`.

    The statement of Theorem 5.1 prints :math:`c_3 = 6K\sqrt{\log(12/\delta)}` and
    omits :math:`c_3` from the third term; both are typos with respect to the proof
    of Theorem 4.1, whose :math:`c_3 = 12\sqrt3K\sqrt{\log(12/\delta)}` is used.

    Parameters
    ----------
    n, m : pair of int
        Sample and subsample sizes ``(n_1, n_2)``, ``(m_1, m_2)``, with ``m_k <= n_k``.
    delta : float in (0, 1)
        Failure probability of each distribution's part: the bound holds with
        probability at least ``1 - 2 delta``.
    eff_dim : pair
        The effective dimension :math:`\mathcal N^{(\rho_k)}` of each distribution's
        covariance: numbers (values at :math:`\lambda_{m_k}`), callables of
        :math:`\lambda` or spectra.
    K : float > 0, default=1
        The kernel's bound, :math:`\sup_x\|\phi(x)\| = \sup_x\sqrt{k(x, x)}`
        (Assumption 4.1; 1 for the radial kernels).
    op_norm : pair of float, optional
        The operator norms :math:`(\|C_1\|, \|C_2\|)` of the two covariances; when
        given, the conditions are checked.

    Returns
    -------
    MMDBound

    Examples
    --------
    >>> from nystrom_kme import bounds
    >>> b = bounds.theorem_5_1_bound(n=[10_000, 10_000], m=[1000, 1000], delta=0.05, eff_dim=[5.0, 5.0])
    >>> round(b.value, 3), len(b.parts), b.confidence
    (0.885, 2, 0.9)
    """
    n, m, eff_dim = pair(n, "n"), pair(m, "m"), pair(eff_dim, "eff_dim")
    ops = (None, None) if op_norm is None else pair(op_norm, "op_norm")
    parts = []
    for k in range(2):
        nk = count(n[k], f"n[{k}]")
        mk = count(m[k], f"m[{k}]")
        check_m_le_n(mk, nk, f"m[{k}]", f"n[{k}]")
        lam = theorem_4_1_lambda(mk, delta, K)
        Nk = eff_dim_at(eff_dim[k], lam, f"eff_dim[{k}]")
        opk = None if ops[k] is None else positive(ops[k], f"op_norm[{k}]")
        parts.append(theorem_4_1_bound(nk, mk, delta, Nk, K, op_norm=opk))
    return MMDBound(value=parts[0].value + parts[1].value, parts=tuple(parts), confidence=1.0 - 2.0 * parts[0].delta)


def theorem_d1_bound(
    lam: Sequence[float],
    eff_dim: Sequence[float],
    eff_dim_inf: Sequence[float],
    K: float,
    n: Sequence[int],
    m: Sequence[int],
    delta: float,
    *,
    op_norm: Sequence[float] | None = None,
    corrected: bool = False,
) -> MMDBound:
    r"""Generic MMD error bound of Theorem D.1 (Appendix D): Lemma C.1 for each distribution.

    With probability at least :math:`1-2\delta`, :math:`|\mathrm{MMD}(\rho_1,\rho_2)
    - \widehat{\mathrm{MMD}}|` is at most the sum over :math:`k` of the bound of
    :func:`lemma_c1_bound` at :math:`(\lambda_k, \mathcal N^{(\rho_k)}(\lambda_k),
    \mathcal N^{(\rho_k)}_\infty(\lambda_k), n_k, m_k)`, provided both sets of
    conditions hold. (The statement writes :math:`\mathcal N^{(\rho_k)}(\lambda)`
    in the last term; it is :math:`\lambda_k`, as the proof applies Lemma C.1 to
    each distribution.)

    Parameters
    ----------
    lam, eff_dim, eff_dim_inf : pair of float
        For each distribution: the regularisation :math:`\lambda_k`, the effective
        dimension :math:`\mathcal N^{(\rho_k)}(\lambda_k)` and the maximal effective
        dimension :math:`\mathcal N^{(\rho_k)}_\infty(\lambda_k)` (see
        :func:`lemma_c1_bound`).
    K : float > 0
        The kernel's bound, :math:`\sup_x\|\phi(x)\| = \sup_x\sqrt{k(x, x)}`
        (Assumption 4.1; 1 for the radial kernels).
    n, m : pair of int
        Sample and subsample sizes, ``m_k <= n_k``.
    delta : float in (0, 1)
        Failure probability of each distribution's part: the bound holds with
        probability at least ``1 - 2 delta``.
    op_norm : pair of float, optional
        The operator norms :math:`(\|C_1\|, \|C_2\|)` of the two covariances, to check
        :math:`\lambda_k \le \|C_k\|`.
    corrected : bool, default=False
        See :func:`lemma_c1_bound`.

    Returns
    -------
    MMDBound

    Examples
    --------
    >>> from nystrom_kme import bounds
    >>> b = bounds.theorem_d1_bound(lam=[0.01, 0.01], eff_dim=[5.0, 5.0], eff_dim_inf=[20.0, 20.0], K=1.0,
    ...                             n=[10_000, 10_000], m=[2000, 2000], delta=0.05)
    >>> round(b.value, 3), len(b.parts)
    (0.281, 2)
    """
    lam, eff_dim, eff_dim_inf = pair(lam, "lam"), pair(eff_dim, "eff_dim"), pair(eff_dim_inf, "eff_dim_inf")
    n, m = pair(n, "n"), pair(m, "m")
    ops = (None, None) if op_norm is None else pair(op_norm, "op_norm")
    parts = []
    for k in range(2):
        lam_k = positive(lam[k], f"lam[{k}]")
        eff_dim_k = nonnegative(eff_dim[k], f"eff_dim[{k}]")
        eff_dim_inf_k = nonnegative(eff_dim_inf[k], f"eff_dim_inf[{k}]")
        n_k, m_k = count(n[k], f"n[{k}]"), count(m[k], f"m[{k}]")
        check_m_le_n(m_k, n_k, f"m[{k}]", f"n[{k}]")
        opk = None if ops[k] is None else positive(ops[k], f"op_norm[{k}]")
        parts.append(
            lemma_c1_bound(
                K=K,
                delta=delta,
                op_norm=opk,
                corrected=corrected,
                lam=lam_k,
                eff_dim=eff_dim_k,
                eff_dim_inf=eff_dim_inf_k,
                n=n_k,
                m=m_k,
            )
        )
    return MMDBound(value=parts[0].value + parts[1].value, parts=tuple(parts), confidence=1.0 - 2.0 * parts[0].delta)
