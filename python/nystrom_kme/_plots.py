"""Results as pictures, one floor below the results: a permutation test's null with its
observed statistic and the level's threshold (:func:`plot_null`), an online detector's
statistic against its threshold over time (:func:`plot_stream`), and a column report's
effects with their intervals (:func:`plot_columns`).

matplotlib is optional: imported when a picture is asked for (an ImportError naming the
``matplotlib`` package when it is missing). Each function draws on ``ax`` when one is
given (a new figure's axes otherwise) and returns the Axes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np


def require_pyplot() -> Any:
    """matplotlib.pyplot, or an ImportError naming the package to install.

    Examples
    --------
    >>> from nystrom_kme._plots import require_pyplot
    >>> require_pyplot().__name__
    'matplotlib.pyplot'
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise ImportError("plot() needs the matplotlib package: pip install matplotlib (or nystrom-kme[plot])") from err
    return plt


def _axes(ax: Any) -> Any:
    if ax is not None:
        return ax
    return require_pyplot().subplots()[1]


def critical_value(null: np.ndarray, alpha: float) -> float | None:
    """The threshold of a permutation test at level ``alpha``: the statistic T is rejected,
    p = (1 + #{b: T_b >= T}) / (1 + B) <= alpha, exactly when T exceeds the (k + 1)-th
    largest T_b with k = floor(alpha (1 + B)) - 1. None when no T can be rejected
    (alpha (1 + B) < 1: too few permutations for the level).

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme._plots import critical_value
    >>> null = np.arange(1.0, 40.0)                   # B = 39: k = 1, the 2nd largest
    >>> critical_value(null, 0.05), critical_value(null[:10], 0.05)
    (38.0, None)
    """
    values = np.sort(np.asarray(null, dtype=np.float64))[::-1]
    k = math.floor(alpha * (values.size + 1) + 1e-9) - 1
    if k < 0:
        return None
    return float(values[k])


def plot_null(
    null: np.ndarray, statistic: float, alpha: float, *, title: str, ax: Any = None, bins: int | str = "auto"
) -> Any:
    """The permuted statistics' histogram, the observed statistic and the threshold at ``alpha``."""
    ax = _axes(ax)
    null = np.asarray(null, dtype=np.float64)
    ax.hist(null, bins=bins, color="0.7", edgecolor="0.45", label=f"{null.size} permuted statistics")
    ax.axvline(statistic, color="C3", linewidth=2, label=f"observed {statistic:.4g}")
    c = critical_value(null, alpha)
    if c is not None:
        ax.axvline(c, color="C0", linestyle="--", label=f"threshold at alpha = {alpha:g} (reject above)")
    else:
        ax.plot([], [], " ", label=f"no threshold: alpha (1 + B) < 1 at alpha = {alpha:g}")
    ax.set_xlabel("statistic (larger is more extreme)")
    ax.set_ylabel("permutations")
    ax.set_title(title)
    ax.legend(loc="best", fontsize="small")
    return ax


def plot_stream(
    time: np.ndarray, statistic: np.ndarray, threshold: np.ndarray, *, ax: Any = None, title: str = ""
) -> Any:
    """The statistic after each update against the threshold it was compared with, the
    alarms (statistic > threshold) marked."""
    ax = _axes(ax)
    ax.plot(time, statistic, color="C0", linewidth=1, label="statistic")
    ax.plot(time, threshold, color="C3", linestyle="--", linewidth=1, label="threshold")
    alarm = np.asarray(statistic > threshold)  # NaN (window not yet full) compares False
    if alarm.any():
        ax.plot(time[alarm], statistic[alarm], "o", color="C3", markersize=4, label="alarm")
    ax.set_xlabel("update t")
    ax.set_ylabel("window MMD^2 to the reference")
    if title:
        ax.set_title(title)
    ax.legend(loc="best", fontsize="small")
    return ax


def plot_columns(
    names: Sequence[str],
    effect: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    moved: np.ndarray,
    *,
    ax: Any = None,
    title: str = "",
) -> Any:
    """Each column's effect with its interval, one bar per column in the order given (the
    first at the top), the columns that moved in colour."""
    ax = _axes(ax)
    y = np.arange(len(names))[::-1]
    colours = np.where(moved, "C3", "0.6")
    ax.barh(y, effect, color=colours)
    ax.errorbar(effect, y, xerr=[effect - low, high - effect], fmt="none", ecolor="0.2", capsize=2)
    ax.set_yticks(y)
    ax.set_yticklabels(list(names))
    ax.set_xlabel("MMD of the column (95% interval)")
    if title:
        ax.set_title(title)
    return ax


__all__ = ["critical_value", "plot_columns", "plot_null", "plot_stream", "require_pyplot"]
