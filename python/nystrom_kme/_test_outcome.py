"""What every permutation test's result shares, one floor below the tests: ``reject`` at
``alpha``, the first line of ``explain()`` (the test's null hypothesis in words), the
effect line, and the checks of the fields a result is built from (a result read from a
file is built through them too, so it is exactly as trustworthy as one just computed).

:mod:`nystrom_kme.two_sample.results` (same distribution) and
:mod:`nystrom_kme.independence.results` (independence) build on it.
"""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import numpy as np

from . import _plots
from ._frames import Tabular, row_of

if TYPE_CHECKING:  # typing.TypeGuard is Python 3.10+; annotations only
    from typing import TypeGuard

#: Bounds on the counts a result holds (a file claiming more is not a result).
MAX_COUNT = 2**53


def is_integer(value: object) -> TypeGuard[int]:
    """An integer (Python or numpy), not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def is_finite(value: object) -> bool:
    """A finite real number (Python or numpy), not a bool."""
    if not isinstance(value, numbers.Real) or isinstance(value, (bool, np.bool_)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer beyond every float
        return False


def short(value: object, limit: int = 80) -> str:
    """repr(value), cut to ``limit`` characters: errors never echo a huge field whole."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def check_count(value: object, name: str, low: int = 1) -> int:
    """An integer in [low, 2^53], else ValueError naming ``name``."""
    if not is_integer(value) or not low <= value <= MAX_COUNT:
        raise ValueError(f"{name} must be an integer in [{low}, 2^53], got {short(value)}")
    return int(value)


def check_numbers(value: object, name: str, size: int) -> np.ndarray:
    """A float64 vector of ``size`` finite real numbers (no strings, no booleans)."""
    items = value.tolist() if isinstance(value, np.ndarray) else value
    if not isinstance(items, (list, tuple)) or len(items) != size:
        raise ValueError(f"{name} must hold {size} numbers, got {short(value)}")
    if not all(is_finite(v) for v in items):
        raise ValueError(f"{name} must hold finite real numbers, got {short(value)}")
    return np.asarray(items, dtype=np.float64)


def check_pvalues(pvalues: np.ndarray, n_permutations: int, name: str) -> None:
    """Marginal permutation p-values: multiples of 1 / (1 + B) in (0, 1]."""
    B = n_permutations
    counts = pvalues * (B + 1)
    if (np.abs(counts - np.round(counts)) > 1e-9 * (B + 1)).any() or (pvalues <= 0).any() or (pvalues > 1).any():
        raise ValueError(f"{name} must be multiples of 1 / (1 + B) in (0, 1], got {short(pvalues)}")


def check_interval(effect: object, value: str) -> None:
    """An effect size's interval fields, in place on a frozen dataclass: ``value``, ``low``,
    ``high`` and ``level`` finite numbers >= 0 (as floats), low <= value <= high and
    0 < level < 1; else ValueError naming the field."""
    for name in (value, "low", "high", "level"):
        v = getattr(effect, name)
        if not is_finite(v) or v < 0:
            raise ValueError(f"effect {name} must be a finite number >= 0, got {short(v)}")
        object.__setattr__(effect, name, float(v))
    low, mid, high, level = (getattr(effect, n) for n in ("low", value, "high", "level"))
    if not (low <= mid <= high) or not 0 < level < 1:
        raise ValueError(f"effect needs low <= {value} <= high and 0 < level < 1, got {effect!r}")


class EffectLike(Protocol):
    """An effect size: it says itself in a sentence."""

    def sentence(self) -> str: ...


class TestOutcome(Tabular):
    """``reject`` and the first lines of ``explain()``, shared by every test's result, and
    the result as a table's row (``row()``, ``to_frame()``: :mod:`nystrom_kme._frames`) and
    as a picture (``plot()``: the permutation null). ``hypothesis`` is the null hypothesis
    in words ("same distribution", "independence")."""

    __test__ = False  # not a pytest test class
    hypothesis: ClassVar[str] = "same distribution"
    statistic: float
    pvalue: float
    alpha: float
    effect: Any
    null_distribution: np.ndarray

    @property
    def reject(self) -> bool:
        """Whether H0 is rejected at level ``alpha``: pvalue <= alpha."""
        return self.pvalue <= self.alpha

    def row(self) -> dict[str, object]:
        """The result as one row of a table (a dict of plain values: the p-value, the
        decision, the level, the statistic, the other scalar fields, the kernels as their
        repr, the effect as ``effect``, ``effect_low``, ``effect_high``, ``effect_level``);
        ``to_frame()`` is the same row as a pandas DataFrame."""
        return row_of(self, {"H0": self.hypothesis, "reject": self.reject})

    def plot(self, ax: Any = None, *, alpha: float | None = None, bins: int | str = "auto") -> Any:
        """The permuted statistics' histogram, the observed statistic, and the threshold
        of the level ``alpha`` (default: the result's): H0 is rejected when the observed
        statistic lies right of it. matplotlib is imported here (an ImportError names it
        when it is missing).

        Parameters
        ----------
        ax : matplotlib Axes or None
            Where to draw (None: a new figure's axes).
        alpha : float or None
        bins : int or str, default="auto"
            The histogram's bins (numpy's rules).

        Returns
        -------
        matplotlib Axes
        """
        level = self.alpha if alpha is None else alpha
        self._decision_line(level)  # checks the level
        title = f"H0 ({self.hypothesis}): p-value {self.pvalue:.3g}, {self.null_distribution.size} permutations"
        return _plots.plot_null(self.null_distribution, self.statistic, level, title=title, ax=ax, bins=bins)

    def _decision_line(self, alpha: float) -> str:
        if not is_finite(alpha) or not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {short(alpha)}")
        rejected = self.pvalue <= alpha
        return (
            f"H0 ({self.hypothesis}) {'rejected' if rejected else 'not rejected'} at level {alpha:g}: "
            f"p-value {self.pvalue:.4g} {'<=' if rejected else '>'} {alpha:g}."
        )

    def _effect_line(self) -> list[str]:
        return [] if self.effect is None else [f"Effect size: {self.effect.sentence()}."]

    def _check_alpha(self) -> None:
        if not (is_finite(self.alpha) and 0 < self.alpha < 1):
            raise ValueError(f"alpha must be in (0, 1), got {short(self.alpha)}")


__all__ = [
    "MAX_COUNT",
    "EffectLike",
    "TestOutcome",
    "check_count",
    "check_numbers",
    "check_pvalues",
    "is_finite",
    "is_integer",
    "short",
]
