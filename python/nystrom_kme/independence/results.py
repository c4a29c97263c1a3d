"""The result of :func:`~nystrom_kme.independence_test`: the interface of the two-sample
results (``statistic``, ``pvalue``, ``null_distribution``, ``alpha``, ``reject``,
``effect``, ``explain()``, ``save``), every field checked when a result is built, so
that one read from a file is exactly as trustworthy as one just computed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from .._test_outcome import TestOutcome, check_count, check_interval, check_numbers, check_pvalues, is_finite, short
from ..kernels import Kernel
from ..persistence import JsonResult, persistable
from ..two_sample.rules import ONE_KERNEL, RULES, Rule, check_permutation_pvalue

#: The rules an independence test aggregates its pairs of kernels with (MMD-FUSE's needs
#: the two-sample normalisers; the median rule a two-sample kernel).
AGGREGATIONS = ("mmdagg", "maxz")


def rule_named(name: str) -> Rule:
    """The rule of a result: one of AGGREGATIONS, or ONE_KERNEL's name for one pair."""
    if name == ONE_KERNEL.name:
        return ONE_KERNEL
    if name not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS} or {ONE_KERNEL.name!r}, got {short(name)}")
    return RULES[name]


def _label(kernel: Kernel) -> str:
    return f"{kernel.family}, bandwidth {float(kernel.bandwidth):.4g}"


@dataclass(frozen=True)
class Dependence:
    """How dependent X and Y are, for one pair of kernels: the normalised HSIC
    HSIC(X, Y) / sqrt(HSIC(X, X) HSIC(Y, Y)) (centred kernel alignment: 0 under
    independence, 1 when one variable's centred kernel matrix is a multiple of the
    other's; for linear kernels on two single columns it is their squared correlation),
    with a two-sided interval at ``level``: the unbiased HSIC +- z SE (first-order and
    permutation variance), divided by the normaliser, clipped at 0. For an aggregated test
    the pair is the one that decided: the interval ignores that selection.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(2000, 1)); y = x + rng.normal(size=(2000, 1))
    >>> e = nk.independence_test(x, y, kernel=(nk.Linear(), nk.Linear()), n_permutations=99,
    ...                          random_state=0).effect
    >>> round(e.value, 1), bool(e.low <= e.value <= e.high)    # rho^2 = 1/2
    (0.5, True)
    """

    json_fields: ClassVar = (
        ("kernel_x", "kernel"),
        ("kernel_y", "kernel"),
        ("value", "number"),
        ("low", "number"),
        ("high", "number"),
        ("level", "number"),
    )

    kernel_x: Kernel
    kernel_y: Kernel
    value: float
    low: float
    high: float
    level: float = 0.95

    def __post_init__(self) -> None:
        for name in ("kernel_x", "kernel_y"):
            k = getattr(self, name)
            if not isinstance(k, Kernel) or not k.is_resolved:
                raise ValueError(f"effect {name} must be a Kernel with a numeric bandwidth, got {short(k)}")
        check_interval(self, "value")

    def sentence(self) -> str:
        return (
            f"normalised HSIC = {self.value:.4g} ({self.level:.0%} interval {self.low:.4g} to {self.high:.4g}) "
            f"with the kernels {_label(self.kernel_x)} (X) and {_label(self.kernel_y)} (Y)"
        )


@persistable
@dataclass(frozen=True)
class IndependenceTestResult(TestOutcome, JsonResult):
    """Outcome of :func:`~nystrom_kme.independence_test`.

    Attributes
    ----------
    statistic : float
        The observed aggregate of the rule over every pair of kernels ("mmdagg": minus the
        smallest marginal p-value; "maxz": the largest standardised HSIC; one pair: its
        HSIC, the squared Frobenius norm of the centred cross-covariance of the features).
    pvalue : float
        (1 + #{b : F_b >= F_0}) / (1 + B) over the B permuted pairings: exact level.
    null_distribution : ndarray of shape (n_permutations,)
    method : str
        "nystrom" (landmark features) or "exact" (every row a landmark, no direction
        dropped: the HSIC of the kernel matrices).
    aggregation : str
        "mmdagg", "maxz" or "one kernel".
    kernels_x, kernels_y : list of Kernel
        Each variable's kernels (numeric bandwidths); the pairs are (k, l) for k in
        kernels_x and l in kernels_y, l varying fastest.
    pair_statistics : ndarray of shape (n_pairs,)
        Each pair's HSIC (the unbiased estimate: the biased one minus its mean over the
        permutations; for one pair the biased one).
    pair_scores, pair_pvalues : ndarray of shape (n_pairs,)
        Each pair's term of the aggregate and its own (uncorrected) permutation p-value.
    n_rows : int
    n_landmarks_x, n_landmarks_y : int
        The landmarks of each variable (distinct rows).
    n_components_x, n_components_y : int
        The feature directions each variable kept.
    n_permutations : int
    alpha : float
    effect : Dependence or None

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(-1, 1, size=(500, 1)); y = x**2 + 0.1 * rng.normal(size=(500, 1))
    >>> res = nk.independence_test(x, y, n_permutations=99, random_state=0)
    >>> res.reject, len(res.pair_pvalues), res.aggregation
    (True, 9, 'mmdagg')
    """

    json_name: ClassVar = "independence result"
    json_fields: ClassVar = (
        ("statistic", "number"),
        ("pvalue", "number"),
        ("null_distribution", "numbers"),
        ("method", "str"),
        ("aggregation", "str"),
        ("kernels_x", "kernel_list"),
        ("kernels_y", "kernel_list"),
        ("pair_statistics", "numbers"),
        ("pair_scores", "numbers"),
        ("pair_pvalues", "numbers"),
        ("n_rows", "count"),
        ("n_landmarks_x", "count"),
        ("n_landmarks_y", "count"),
        ("n_components_x", "count"),
        ("n_components_y", "count"),
        ("n_permutations", "count"),
    )
    json_optional: ClassVar = (("alpha", "number", 0.05), ("effect", "effect", None))
    effect_type: ClassVar = Dependence
    hypothesis: ClassVar = "independence"

    statistic: float
    pvalue: float
    null_distribution: np.ndarray = field(repr=False)
    method: str
    aggregation: str
    kernels_x: list[Kernel]
    kernels_y: list[Kernel]
    pair_statistics: np.ndarray = field(repr=False)
    pair_scores: np.ndarray = field(repr=False)
    pair_pvalues: np.ndarray = field(repr=False)
    n_rows: int
    n_landmarks_x: int
    n_landmarks_y: int
    n_components_x: int
    n_components_y: int
    n_permutations: int
    alpha: float = 0.05
    effect: Dependence | None = None

    def __post_init__(self) -> None:
        """Every field checked against what the test returns and against each other."""
        if self.method not in ("nystrom", "exact"):
            raise ValueError(f"method must be 'nystrom' or 'exact', got {short(self.method)}")
        rule = rule_named(self.aggregation)
        for name in ("kernels_x", "kernels_y"):
            ks = getattr(self, name)
            if (
                not isinstance(ks, (list, tuple))
                or not ks
                or not all(isinstance(k, Kernel) and k.is_resolved for k in ks)
            ):
                raise ValueError(f"{name} must be a non-empty list of Kernels with numeric bandwidths, got {short(ks)}")
            object.__setattr__(self, name, list(ks))
        B = check_count(self.n_permutations, "n_permutations")
        n = check_count(self.n_rows, "n_rows", 2)
        for name in ("n_landmarks_x", "n_landmarks_y"):
            if check_count(getattr(self, name), name) > n:
                raise ValueError(f"{name} must be at most n_rows = {n}, got {short(getattr(self, name))}")
        for name in ("n_components_x", "n_components_y"):
            check_count(getattr(self, name), name)
        K = len(self.kernels_x) * len(self.kernels_y)
        if (K == 1) != (rule is ONE_KERNEL):
            raise ValueError(f"aggregation {self.aggregation!r} does not fit {K} pairs of kernels")
        if not is_finite(self.statistic):
            raise ValueError(f"statistic must be a finite number, got {short(self.statistic)}")
        for name, size in (("null_distribution", B), ("pair_statistics", K), ("pair_scores", K), ("pair_pvalues", K)):
            object.__setattr__(self, name, check_numbers(getattr(self, name), name, size))
        self._check_alpha()
        check_pvalues(self.pair_pvalues, B, "pair_pvalues")
        rule.check(self.statistic, self.null_distribution, self.pair_scores, self.pair_pvalues)
        if isinstance(self.effect, dict):  # as read from a file
            object.__setattr__(self, "effect", Dependence(**self.effect))
        if self.effect is not None:
            if not isinstance(self.effect, Dependence):
                raise ValueError(f"effect must be a Dependence or None, got {short(self.effect)}")
            kx, ky = self.deciding_kernels
            if (self.effect.kernel_x, self.effect.kernel_y) != (kx, ky):
                raise ValueError(f"effect must be measured with the pair that decided, ({kx!r}, {ky!r})")
        check_permutation_pvalue(self.pvalue, self.statistic, self.null_distribution, "F")

    @property
    def n_pairs(self) -> int:
        return len(self.kernels_x) * len(self.kernels_y)

    @property
    def pairs(self) -> list[tuple[Kernel, Kernel]]:
        """The pairs of kernels, in the order of the pair arrays."""
        return [(kx, ky) for kx in self.kernels_x for ky in self.kernels_y]

    @property
    def deciding(self) -> int:
        """Index of the pair whose p-value decided (the rule's ``deciding``)."""
        rule = rule_named(self.aggregation)
        return rule.deciding(self.statistic, self.pair_pvalues, self.pair_scores, self.pair_statistics)

    @property
    def deciding_kernels(self) -> tuple[Kernel, Kernel]:
        """The pair of kernels (X's, Y's) whose p-value decided."""
        return self.pairs[self.deciding]

    def row(self) -> dict[str, object]:
        """The result as one row of a table (its scalar fields, the effect as ``effect``,
        ``effect_low``, ``effect_high``, ``effect_level``), with the pair of kernels that
        decided; ``to_frame()`` gives it as a pandas DataFrame."""
        kx, ky = self.deciding_kernels
        return {**super().row(), "n_pairs": self.n_pairs, "kernel_x": repr(kx), "kernel_y": repr(ky)}

    def summary(self) -> dict[str, Any]:
        """What ``nystrom-kme info`` prints."""
        kx, ky = self.deciding_kernels
        return {
            "statistic": self.statistic,
            "pvalue": self.pvalue,
            "method": self.method,
            "aggregation": self.aggregation,
            "n_rows": self.n_rows,
            "n_landmarks": [self.n_landmarks_x, self.n_landmarks_y],
            "n_components": [self.n_components_x, self.n_components_y],
            "n_permutations": self.n_permutations,
            "kernels_x": [repr(k) for k in self.kernels_x],
            "kernels_y": [repr(k) for k in self.kernels_y],
            "pair_pvalues": self.pair_pvalues.tolist(),
            "deciding": [repr(kx), repr(ky)],
            "reject": self.reject,
            "alpha": self.alpha,
        }

    def explain(self, alpha: float | None = None) -> str:
        """The result in words: the decision at level ``alpha`` (default: the result's),
        the test, the pair of kernels that decided, and the effect size.

        Examples
        --------
        >>> import numpy as np, nystrom_kme as nk
        >>> rng = np.random.default_rng(1)
        >>> x = rng.normal(size=(400, 2)); y = rng.normal(size=(400, 1))
        >>> print(nk.independence_test(x, y, n_permutations=99, random_state=0).explain().splitlines()[0])
        H0 (independence) not rejected at level 0.05: p-value 0.58 > 0.05.
        """
        level = self.alpha if alpha is None else alpha
        rule = rule_named(self.aggregation)
        where = (
            "exact (every row a landmark)"
            if self.method == "exact"
            else f"Nystrom, m = {self.n_landmarks_x} (X) and {self.n_landmarks_y} (Y) landmarks"
        )
        test = "HSIC with one pair of kernels" if rule is ONE_KERNEL else f"HSIC, {rule.description}"
        lines = [
            self._decision_line(level),
            f"Test: {test}, over {self.n_pairs} pair(s) of kernels ({len(self.kernels_x)} for X, "
            f"{len(self.kernels_y)} for Y), {where}, {self.n_components_x} and {self.n_components_y} feature "
            f"directions, {self.n_rows} rows, {self.n_permutations} permutations of the pairing.",
        ]
        i = self.deciding
        kx, ky = self.pairs[i]
        lead = "Decided by" if self.pvalue <= level else "Closest to a dependence"
        lines.append(
            f"{lead}: {_label(kx)} (X) with {_label(ky)} (Y) (marginal p-value {self.pair_pvalues[i]:.3g}, "
            f"HSIC {self.pair_statistics[i]:.4g})."
        )
        if self.n_pairs > 1:
            alone = int(np.count_nonzero(self.pair_pvalues <= level))
            lines.append(
                f"Each pair alone (marginal p-values, not corrected for the {self.n_pairs} pairs): "
                f"{alone} of {self.n_pairs} at or below {level:g}."
            )
        return "\n".join(lines + self._effect_line())


__all__ = ["AGGREGATIONS", "Dependence", "IndependenceTestResult", "rule_named"]
