"""The results of :func:`~nystrom_kme.two_sample_test`: one interface for one kernel and
for a collection (``statistic``, ``pvalue``, ``null_distribution``, ``alpha``, ``reject``,
``effect``, ``explain()``), each field checked when a result is built, so that one read
from a file is exactly as trustworthy as one just computed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from .._test_outcome import TestOutcome, check_count, check_interval, check_numbers, check_pvalues, is_finite, short
from ..kernel_collection import KernelCollection
from ..kernels import Kernel
from ..persistence import JsonResult, persistable
from .rules import RULES, check_permutation_pvalue


def _label(kernel: Kernel) -> str:
    """'Gaussian, bandwidth 0.4968': a kernel in a sentence."""
    return f"{kernel.family}, bandwidth {float(kernel.bandwidth):.4g}"


@dataclass(frozen=True)
class Effect:
    """How different the samples are, in the units of one kernel's MMD: the estimate and a
    two-sided confidence interval at ``level``.

    ``mmd`` is sqrt(max(MMD^2, 0)) of the unbiased MMD^2 estimate; the interval comes from
    MMD^2 +- z (level) x SE with SE^2 the first-order (witness function) variance plus the
    permutation variance of the statistic (the part the first order misses near H0), each
    end clipped at 0 before the square root. For a collection the kernel is the one the
    test selected (:attr:`AggregatedTestResult.dominant`): the interval ignores the
    selection, so it is optimistic.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.normal(size=(2000, 2)), rng.normal(size=(2000, 2)) + 0.5
    >>> e = nk.two_sample_test(X, Y, kernel="gaussian", n_permutations=99, random_state=0).effect
    >>> bool(e.low <= e.mmd <= e.high), e.level
    (True, 0.95)
    """

    kernel: Kernel
    mmd: float
    low: float
    high: float
    level: float = 0.95

    #: How a saved result writes it (:mod:`nystrom_kme.persistence.results`).
    json_fields: ClassVar = (
        ("kernel", "kernel"),
        ("mmd", "number"),
        ("low", "number"),
        ("high", "number"),
        ("level", "number"),
    )

    def __post_init__(self) -> None:
        if not isinstance(self.kernel, Kernel) or not self.kernel.is_resolved:
            raise ValueError(f"effect kernel must be a Kernel with a numeric bandwidth, got {short(self.kernel)}")
        check_interval(self, "mmd")

    def sentence(self) -> str:
        return (
            f"MMD = {self.mmd:.4g} ({self.level:.0%} interval {self.low:.4g} to {self.high:.4g}) "
            f"with the {_label(self.kernel)} kernel"
        )


class _Decision(TestOutcome):
    """``reject`` and the first line of ``explain()`` (:class:`~nystrom_kme._test_outcome.TestOutcome`),
    and the checks of ``alpha`` and ``effect`` the two-sample results share."""

    effect: Effect | None

    def _check_common(self) -> None:
        self._check_alpha()
        if isinstance(self.effect, dict):  # as read from a file: the fields of an Effect
            names = ("kernel", "mmd", "low", "high", "level")
            if set(self.effect) != set(names):
                raise ValueError(f"effect must have the fields {names}, got {short(sorted(self.effect))}")
            object.__setattr__(self, "effect", Effect(**self.effect))
        if self.effect is not None and not isinstance(self.effect, Effect):
            raise ValueError(f"effect must be an Effect or None, got {short(self.effect)}")


@persistable
@dataclass(frozen=True)
class TwoSampleResult(_Decision, JsonResult):
    """Outcome of a permutation two-sample test with one kernel (in the spirit of scipy.stats
    results).

    ``save(path)`` / :func:`nystrom_kme.load` and ``to_json()`` / ``from_json(text)``
    store a result as JSON (floats exactly; see :mod:`nystrom_kme.persistence`).

    Attributes
    ----------
    statistic : float
        The observed statistic T: the squared MMD estimate between X and Y (biased
        V-statistic for ``method="exact"``, s^T K_m^+ s for ``"nystrom"``).
    pvalue : float
        (1 + #{b : T_b >= T}) / (1 + B), counting the observed statistic: in
        [1 / (1 + B), 1].
    null_distribution : ndarray of shape (n_permutations,), float64
        The permuted statistics T_b, b = 1..B, in the order of the random splits
        (:func:`nystrom_kme.random_splits` replays them).
    method : str
        "nystrom" or "exact".
    kernel : Kernel
        The kernel used, with its numeric bandwidth (the median heuristic resolved on
        the pooled sample when it was asked for).
    n_landmarks : int or None
        The landmarks the Nyström test used (distinct rows: fewer than asked when the
        data repeat rows), None for the exact test.
    n_permutations : int
        B, the number of random splits.
    alpha : float
        The level of ``reject`` and ``explain()``.
    effect : Effect or None
        The MMD and its confidence interval (None where it was not computed).

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.normal(size=(500, 2)), rng.normal(size=(500, 2))
    >>> res = nk.two_sample_test(X, Y, kernel="gaussian", n_permutations=49, random_state=0)
    >>> res.method, res.n_permutations, res.null_distribution.shape, res.reject   # exact: 1000 rows
    ('exact', 49, (49,), False)
    """

    #: The saved document (:mod:`nystrom_kme.persistence.results`): the fields in the
    #: order written, then those written only when they differ from a file without them.
    json_name: ClassVar = "two-sample result"
    json_fields: ClassVar = (
        ("statistic", "number"),
        ("pvalue", "number"),
        ("null_distribution", "numbers"),
        ("method", "str"),
        ("kernel", "kernel"),
        ("n_landmarks", "optional_count"),
        ("n_permutations", "count"),
    )
    json_optional: ClassVar = (("alpha", "number", 0.05), ("effect", "effect", None))
    effect_type: ClassVar = Effect

    statistic: float
    pvalue: float
    null_distribution: np.ndarray = field(repr=False)
    method: str
    kernel: Kernel
    n_landmarks: int | None
    n_permutations: int
    alpha: float = 0.05
    effect: Effect | None = None

    def __post_init__(self) -> None:
        """Every field checked against what :func:`two_sample_test` returns (a result
        read from a file is built here too); ``null_distribution`` becomes float64."""
        if self.method not in ("nystrom", "exact"):
            raise ValueError(f"method must be 'nystrom' or 'exact', got {short(self.method)}")
        B = check_count(self.n_permutations, "n_permutations")
        if self.method == "exact" and self.n_landmarks is not None:
            raise ValueError(f"n_landmarks must be None for method='exact', got {short(self.n_landmarks)}")
        if self.method == "nystrom":
            check_count(self.n_landmarks, "n_landmarks")
        if not isinstance(self.kernel, Kernel) or not self.kernel.is_resolved:
            raise ValueError(f"kernel must be a Kernel with a numeric bandwidth, got {short(self.kernel)}")
        if not is_finite(self.statistic):
            raise ValueError(f"statistic must be a finite number, got {short(self.statistic)}")
        null = check_numbers(self.null_distribution, "null_distribution", B)
        object.__setattr__(self, "null_distribution", null)
        self._check_common()
        if self.effect is not None and self.effect.kernel != self.kernel:
            raise ValueError(
                f"effect must be measured with the test's kernel {self.kernel!r}, got {short(self.effect.kernel)}"
            )
        check_permutation_pvalue(self.pvalue, self.statistic, null, "T")

    def summary(self) -> dict[str, Any]:
        """What ``nystrom-kme info`` prints: the result's fields as JSON data."""
        return {
            "statistic": self.statistic,
            "pvalue": self.pvalue,
            "method": self.method,
            "n_landmarks": self.n_landmarks,
            "n_permutations": self.n_permutations,
            "kernel": repr(self.kernel),
            "reject": self.reject,
            "alpha": self.alpha,
        }

    def explain(self, alpha: float | None = None) -> str:
        """The result in words: the decision at level ``alpha`` (default: the result's),
        the test, and the effect size.

        Examples
        --------
        >>> import numpy as np, nystrom_kme as nk
        >>> rng = np.random.default_rng(1)
        >>> X, Y = rng.normal(size=(500, 1)), rng.normal(size=(500, 1)) + 0.5
        >>> res = nk.two_sample_test(X, Y, kernel="gaussian", n_permutations=99, random_state=0)
        >>> print(res.explain().splitlines()[0])
        H0 (same distribution) rejected at level 0.05: p-value 0.01 <= 0.05.
        """
        where = f"Nystrom, m = {self.n_landmarks} landmarks" if self.method == "nystrom" else "exact"
        lines = [
            self._decision_line(self.alpha if alpha is None else alpha),
            f"Test: the MMD with one kernel ({_label(self.kernel)}), {where}, {self.n_permutations} permutations.",
        ]
        return "\n".join(lines + self._effect_line())


@persistable
@dataclass(frozen=True)
class AggregatedTestResult(_Decision, JsonResult):
    """Outcome of a permutation two-sample test with a collection of kernels.

    Attributes
    ----------
    statistic : float
        The observed aggregate of the rule ``aggregation``, larger being more extreme:
        the largest standardised MMD^2 ("maxz", the default), minus the smaller of two
        marginal p-values, MMD-FUSE's and the median Gaussian's ("fuse+median"), minus the
        smallest marginal p-value ("mmdagg") or the FUSE soft maximum ("fuse"). For the two
        rules of p-values it is negative (-0.005 is a marginal p-value of 1/201), and the
        test's ``pvalue`` compares it with the same minimum over the random splits: that
        comparison, not the minimum itself, is calibrated.
    pvalue : float
        (1 + #{b : F_b >= F_0}) / (1 + B) for the aggregates F_b of the B random splits:
        exact level, whatever the number of kernels.
    null_distribution : ndarray of shape (n_permutations,)
        The aggregates F_b of the random splits, b = 1..B.
    method : str
        "nystrom" or "exact".
    aggregation : str
        "maxz", "fuse" or "mmdagg".
    kernels : KernelCollection
        The kernels tested, with their numeric bandwidths.
    kernel_statistics : ndarray of shape (n_kernels,)
        Each kernel's unbiased MMD^2 estimate between X and Y.
    kernel_scores : ndarray of shape (n_kernels,)
        Each kernel's term of the aggregate: its standardised MMD^2 (maxz), normalised
        statistic (fuse) or minus its marginal p-value (mmdagg).
    kernel_pvalues : ndarray of shape (n_kernels,)
        Each kernel's marginal permutation p-value (1 + #{b : U_b >= U_0}) / (1 + B): what
        a test of that kernel alone would report, not corrected for the collection.
    n_landmarks : int or None
        The landmarks used (distinct rows), None for the exact method; the default test
        above the exact limit gives its narrowest kernels more landmarks than the others
        (``two_sample._plan.landmarks_by_kernel``): the largest count.
    n_permutations : int
        B.
    bin_size : int
        Rows per bin that the permutations move (1: single rows; see ``max_bins``).
    temperature : float
        The multiplier of FUSE's lambda = sqrt(n (n - 1)) (the "fuse" rule only).
    alpha : float
        The level of ``reject`` and ``explain()``.
    effect : Effect or None
        The MMD of the dominant kernel and its (optimistic) confidence interval.
    kernel : Kernel
        The kernel whose p-value decided (:attr:`dominant_kernel`), the name a one-kernel
        result and a drift result give it.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.normal(size=(400, 1)), rng.laplace(scale=2 ** -0.5, size=(400, 1))
    >>> res = nk.two_sample_test(X, Y, kernel=nk.KernelCollection(n_bandwidths=4),
    ...                          n_permutations=99, random_state=0)
    >>> len(res.kernels), res.kernel_pvalues.shape, res.aggregation
    (8, (8,), 'fuse')
    """

    #: The saved document (:mod:`nystrom_kme.persistence.results`): the fields in the
    #: order written, then those written only when they differ from a file without them.
    json_name: ClassVar = "two-sample result"
    json_fields: ClassVar = (
        ("statistic", "number"),
        ("pvalue", "number"),
        ("null_distribution", "numbers"),
        ("method", "str"),
        ("aggregation", "str"),
        ("kernels", "collection"),
        ("kernel_statistics", "numbers"),
        ("kernel_scores", "numbers"),
        ("kernel_pvalues", "numbers"),
        ("n_landmarks", "optional_count"),
        ("n_permutations", "count"),
        ("bin_size", "count"),
        ("temperature", "number"),
    )
    json_optional: ClassVar = (("alpha", "number", 0.05), ("effect", "effect", None))
    effect_type: ClassVar = Effect

    statistic: float
    pvalue: float
    null_distribution: np.ndarray = field(repr=False)
    method: str
    aggregation: str
    kernels: KernelCollection
    kernel_statistics: np.ndarray = field(repr=False)
    kernel_scores: np.ndarray = field(repr=False)
    kernel_pvalues: np.ndarray = field(repr=False)
    n_landmarks: int | None
    n_permutations: int
    bin_size: int = 1
    temperature: float = 1.0
    alpha: float = 0.05
    effect: Effect | None = None

    def __post_init__(self) -> None:
        """Every field checked against what the test returns, and against each other (a
        result read from a file is built here too); the arrays become float64."""
        if self.method not in ("nystrom", "exact"):
            raise ValueError(f"method must be 'nystrom' or 'exact', got {short(self.method)}")
        if self.aggregation not in RULES:
            raise ValueError(f"aggregation must be one of {tuple(RULES)}, got {short(self.aggregation)}")
        if not isinstance(self.kernels, KernelCollection) or not self.kernels.is_resolved:
            raise ValueError(f"kernels must be a resolved KernelCollection, got {short(self.kernels)}")
        B, K = check_count(self.n_permutations, "n_permutations"), len(self.kernels)
        check_count(self.bin_size, "bin_size")
        if self.method == "exact" and self.n_landmarks is not None:
            raise ValueError(f"n_landmarks must be None for method='exact', got {short(self.n_landmarks)}")
        if self.method == "nystrom":
            check_count(self.n_landmarks, "n_landmarks")
        if not (is_finite(self.temperature) and self.temperature > 0):
            raise ValueError(f"temperature must be a positive number, got {short(self.temperature)}")
        if not is_finite(self.statistic):
            raise ValueError(f"statistic must be a finite number, got {short(self.statistic)}")
        for name, size in (
            ("null_distribution", B),
            ("kernel_statistics", K),
            ("kernel_scores", K),
            ("kernel_pvalues", K),
        ):
            object.__setattr__(self, name, check_numbers(getattr(self, name), name, size))
        self._check_common()
        check_pvalues(self.kernel_pvalues, B, "kernel_pvalues")
        rule = RULES[self.aggregation]
        if K < rule.min_kernels:
            raise ValueError(f"aggregation {self.aggregation!r} needs at least {rule.min_kernels} kernels, got {K}")
        rule.check(self.statistic, self.null_distribution, self.kernel_scores, self.kernel_pvalues)
        if self.effect is not None and self.effect.kernel != self.kernels[self.dominant]:
            raise ValueError(
                f"effect must be measured with the kernel that decided, {self.kernels[self.dominant]!r}, "
                f"got {short(self.effect.kernel)}"
            )
        check_permutation_pvalue(self.pvalue, self.statistic, self.null_distribution, "F")

    @property
    def dominant(self) -> int:
        """Index of the kernel whose p-value decided the test (the rule's
        ``Rule.deciding``: for "fuse+median" the median Gaussian when its p-value was the
        smaller, else FUSE's kernel with the smallest marginal p-value; otherwise the
        smallest marginal p-value, ties broken by the larger score, then MMD^2, then order)."""
        rule = RULES[self.aggregation]
        return rule.deciding(self.statistic, self.kernel_pvalues, self.kernel_scores, self.kernel_statistics)

    @property
    def dominant_kernel(self) -> Kernel:
        """The kernel whose p-value decided (see :attr:`dominant`)."""
        return self.kernels[self.dominant]

    @property
    def kernel(self) -> Kernel:
        """The kernel whose p-value decided (:attr:`dominant_kernel`): ``result.kernel``
        as for one kernel's result and a drift result."""
        return self.kernels[self.dominant]

    def row(self) -> dict[str, object]:
        """The result as one row of a table (its scalar fields, the effect as ``effect``,
        ``effect_low``, ``effect_high``, ``effect_level``), with the number of kernels and
        the kernel that decided; ``to_frame()`` gives it as a pandas DataFrame."""
        return {**super().row(), "n_kernels": len(self.kernels), "kernel": repr(self.kernel)}

    def tied(self) -> np.ndarray:
        """The kernels tied with the deciding one: the same marginal p-value. Often all of
        them on a plain difference, where every kernel's statistic beats every split's."""
        out: np.ndarray = np.flatnonzero(self.kernel_pvalues == self.kernel_pvalues[self.dominant])
        return out

    def summary(self) -> dict[str, Any]:
        """What ``nystrom-kme info`` prints: the result's fields as JSON data."""
        return {
            "statistic": self.statistic,
            "pvalue": self.pvalue,
            "method": self.method,
            "aggregation": self.aggregation,
            "n_landmarks": self.n_landmarks,
            "n_permutations": self.n_permutations,
            "bin_size": self.bin_size,
            "kernels": [repr(k) for k in self.kernels],
            "kernel_statistics": self.kernel_statistics.tolist(),
            "kernel_pvalues": self.kernel_pvalues.tolist(),
            "dominant": self.dominant,
            "reject": self.reject,
            "alpha": self.alpha,
        }

    def explain(self, alpha: float | None = None) -> str:
        """The result in words: the decision at level ``alpha`` (default: the result's),
        the test, which kernels carry the evidence (all of them, when they tie), and the
        effect size. Marginal p-values are each kernel's own, uncorrected.

        Examples
        --------
        >>> import numpy as np, nystrom_kme as nk
        >>> rng = np.random.default_rng(1)
        >>> X, Y = rng.normal(size=(500, 1)), rng.normal(size=(500, 1)) + 0.5
        >>> res = nk.two_sample_test(X, Y, n_permutations=99, random_state=0)
        >>> print(res.explain().splitlines()[0])
        H0 (same distribution) rejected at level 0.05: p-value 0.01 <= 0.05.
        """
        level = self.alpha if alpha is None else alpha
        rule = RULES[self.aggregation]
        where = f"Nystrom, m = {self.n_landmarks} landmarks" if self.method == "nystrom" else "exact"
        bins = f", the permutations moving bins of {self.bin_size} rows" if self.bin_size > 1 else ""
        lines = [
            self._decision_line(level),
            f"Test: {rule.description}, over {len(self.kernels)} kernels ({self.kernels.summary()}), {where}, "
            f"{self.n_permutations} permutations{bins}.",
            f"Statistic: {self.statistic:.4g}, {rule.statistic_text} (larger is more extreme: the p-value is the "
            f"share of values at least as large among it and the {self.n_permutations} random splits').",
        ]
        lead = "Decided by" if self.pvalue <= level else "Closest to a difference"
        tied = self.tied()
        if tied.size == len(self.kernels) and tied.size > 1:
            lines.append(
                f"{lead}: all {tied.size} kernels alike "
                f"(marginal p-value {self.kernel_pvalues[self.dominant]:.3g} each)."
            )
        elif tied.size > 1:
            names = "; ".join(_label(self.kernels[i]) for i in tied[:4]) + ("; ..." if tied.size > 4 else "")
            lines.append(
                f"{lead}: {tied.size} kernels alike ({names}), marginal p-value "
                f"{self.kernel_pvalues[self.dominant]:.3g} each."
            )
        else:
            i = self.dominant
            lines.append(
                f"{lead}: {_label(self.kernels[i])} (score {self.kernel_scores[i]:.4g}, marginal p-value "
                f"{self.kernel_pvalues[i]:.3g}, MMD^2 {self.kernel_statistics[i]:.4g})."
            )
        smaller = np.flatnonzero(self.kernel_pvalues < self.kernel_pvalues[self.dominant])
        if smaller.size:  # a rule of parts ("fuse+median"): the part that decided was not the kernel of smallest p
            least = smaller[self.kernel_pvalues[smaller] == self.kernel_pvalues[smaller].min()]
            names = "; ".join(_label(self.kernels[j]) for j in least[:4]) + ("; ..." if least.size > 4 else "")
            lines.append(
                f"Smallest marginal p-value: {names} ({self.kernel_pvalues[least[0]]:.3g}), in the part of the "
                f"rule whose p-value was the larger."
            )
        alone = int(np.count_nonzero(self.kernel_pvalues <= level))
        lines.append(
            f"Each kernel alone (marginal p-values, not corrected for the {len(self.kernels)} kernels): "
            f"{alone} of {len(self.kernels)} at or below {level:g}."
        )
        return "\n".join(lines + self._effect_line())


__all__ = ["AggregatedTestResult", "Effect", "TwoSampleResult"]
