"""Which columns moved: each column's own two-sample test, the p-values corrected for
the number of columns, the columns ranked (:func:`column_report`, :class:`ColumnReport`).

A joint test (:func:`~nystrom_kme.two_sample_test` on every column, a
:class:`~nystrom_kme.DriftDetector`'s ``predict``) says whether the distribution moved and
which kernel saw it, never which feature. The report tests each column alone: the
column's sample from X against its sample from Y, with :func:`two_sample_test` itself (by
default its default test, Nyström with few landmarks: a single column needs few, 200 by
default, measured against the default m in bench/RESULTS.md), each column's p-value exact
for H0 "this column's distribution did not change". The p-values are then adjusted for
the number of columns:

* ``"holm"`` (the default): Holm's step-down, which keeps the **family-wise error** (the
  probability that any column whose distribution did not change is named) at most
  alpha **whatever the dependence between the columns**. The columns of one table share
  their rows and are dependent in ways nobody knows, and each named column is a claim a
  user acts on (a pipeline to inspect): the error that matters is naming one wrongly.
* ``"bh"``: Benjamini-Hochberg, which keeps the **false discovery rate** (the expected
  share of named columns that did not move) at most alpha for independent or positively
  dependent p-values (PRDS): more columns named where many moved, for screening wide
  tables.
* ``"by"``: Benjamini-Yekutieli, the false discovery rate at most alpha under any
  dependence (BH's adjusted p-values times 1 + 1/2 + ... + 1/k).

A permutation p-value is at least 1 / (B + 1), so k columns need B + 1 >= k / alpha for
any column to be named; the default B is max(200, 2 k / alpha - 1).

What the report cannot see: a change in the dependence between columns whose marginal
distributions stay put (the joint test sees it, no column moves).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

import numpy as np

from . import _plots, defaults
from ._columns import check_same_columns
from ._frames import Tabular, effect_cells, frame
from ._progress import progress_bar
from ._validation import SPLIT_SEED_BOUND, RandomStateLike, as_data_matrix, check_random_state, draw_seed
from .kernel_collection import KernelCollection
from .kernels import Kernel
from .sources import SourceLike, as_rows
from .two_sample import AggregatedTestResult, TwoSampleResult, two_sample_test
from .two_sample.engine import check_level, check_permutations

if TYPE_CHECKING:  # pandas is optional: annotations only
    import pandas

#: Landmarks per column: one column needs few (bench/RESULTS.md, "Which columns moved":
#: the power of m = 100 to 1024 alike on 1-D alternatives, m = 50 a little below).
COLUMN_LANDMARKS = 200
#: The bins a column's permutations move beyond this many pooled rows (the test's own
#: default is 2048): the 1-D alternatives' power alike at 256, 512 and 2048 bins with the
#: B = 3999 of a 100-column report, at a third of the time (bench/RESULTS.md).
COLUMN_MAX_BINS = 512
#: The corrections for the number of columns, by name.
CORRECTIONS = {
    "holm": "Holm's step-down (family-wise error: the chance that any column whose distribution "
    "did not change is named, whatever the dependence between the columns)",
    "bh": "Benjamini-Hochberg (false discovery rate: the expected share of named columns that did not "
    "move, for independent or positively dependent columns)",
    "by": "Benjamini-Yekutieli (false discovery rate, whatever the dependence between the columns)",
}

ColumnResult = Union[TwoSampleResult, AggregatedTestResult]


def adjusted_pvalues(pvalues: Any, correction: str = "holm") -> np.ndarray:
    """p-values adjusted for their number k: column j is named at level alpha when its
    adjusted p-value is at most alpha.

    ``"holm"``: max over i <= rank(j) of (k - i + 1) p_(i) (step-down); ``"bh"``: min
    over i >= rank(j) of k p_(i) / i (step-up); ``"by"``: BH's times sum_{i <= k} 1 / i;
    each at most 1.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.column_report import adjusted_pvalues
    >>> p = np.array([0.01, 0.04, 0.03, 0.5])
    >>> adjusted_pvalues(p, "holm").round(3).tolist(), adjusted_pvalues(p, "bh").round(3).tolist()
    ([0.04, 0.09, 0.09, 0.5], [0.04, 0.053, 0.053, 0.5])
    """
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {tuple(CORRECTIONS)}, got {correction!r}")
    p = np.asarray(pvalues, dtype=np.float64)
    if p.ndim != 1 or not np.isfinite(p).all() or (p < 0).any() or (p > 1).any():
        raise ValueError(f"pvalues must be a vector of numbers in [0, 1], got {p!r:.80}")
    k = p.size
    order = np.argsort(p, kind="stable")
    ranked = p[order]
    i = np.arange(1, k + 1)
    if correction == "holm":
        adjusted = np.maximum.accumulate((k - i + 1) * ranked)
    else:
        scale = k * (np.sum(1.0 / i) if correction == "by" else 1.0)
        adjusted = np.minimum.accumulate((scale * ranked / i)[::-1])[::-1]
    out = np.empty(k)
    out[order] = np.minimum(adjusted, 1.0)
    return out


def default_permutations(n_columns: int, alpha: float) -> int:
    """B for k columns at level alpha: max(200, ceil(2 k / alpha) - 1), so that B + 1 is at
    least twice the k / alpha below which no column can be named.

    Examples
    --------
    >>> from nystrom_kme.column_report import default_permutations
    >>> default_permutations(5, 0.05), default_permutations(100, 0.05)
    (200, 3999)
    """
    return max(defaults.N_PERMUTATIONS, math.ceil(2 * n_columns / alpha - 1e-9) - 1)


@dataclass(frozen=True)
class ColumnReport(Tabular):
    """Which columns moved: each column's test, its adjusted p-value and effect, ranked
    (:func:`column_report`).

    Attributes
    ----------
    columns : tuple of str
        The columns tested, in the data's order (names from a DataFrame or a file
        header, ``names=``, or "x0", "x1", ...).
    pvalues : ndarray (k,)
        Each column's own permutation p-value.
    adjusted_pvalues : ndarray (k,)
        The p-values adjusted for the k columns by ``correction``.
    correction : str
        "holm", "bh" or "by" (:data:`CORRECTIONS`).
    alpha : float
        The level: a column is named (``reject``) when its adjusted p-value is at most alpha.
    n_permutations : int
    results : tuple of TwoSampleResult or AggregatedTestResult
        Each column's test (``results[j].explain()``, ``.plot()``, ``.effect``).
    reject : ndarray of bool (k,)
        Whether each column is named.
    rank : ndarray of int (k,)
        1 for the column that moved most: by adjusted p-value, then the p-value, then the
        larger MMD (the kernels' MMDs lie in [0, sqrt 2] whatever the columns' units).
    moved : tuple of str
        The named columns, by rank.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.normal(size=(1000, 4)), rng.normal(size=(1000, 4))
    >>> Y[:, 2] += 0.5
    >>> rep = nk.column_report(X, Y, names=["a", "b", "c", "d"], random_state=0)
    >>> rep.moved, rep.rank.tolist()
    (('c',), [2, 4, 1, 3])
    """

    columns: tuple[str, ...]
    pvalues: np.ndarray = field(repr=False)
    adjusted_pvalues: np.ndarray = field(repr=False)
    correction: str
    alpha: float
    n_permutations: int
    results: tuple[ColumnResult, ...] = field(repr=False)

    def __post_init__(self) -> None:
        k = len(self.columns)
        if not (len(self.pvalues) == len(self.adjusted_pvalues) == len(self.results) == k):
            raise ValueError("columns, pvalues, adjusted_pvalues and results must have one entry per column")
        if self.correction not in CORRECTIONS:
            raise ValueError(f"correction must be one of {tuple(CORRECTIONS)}, got {self.correction!r}")

    @property
    def reject(self) -> np.ndarray:
        out: np.ndarray = self.adjusted_pvalues <= self.alpha
        return out

    @property
    def order(self) -> np.ndarray:
        """The columns' indices, the one that moved most first (see ``rank``)."""
        mmd = np.array([0.0 if r.effect is None else r.effect.mmd for r in self.results])
        out: np.ndarray = np.lexsort((np.arange(len(self.columns)), -mmd, self.pvalues, self.adjusted_pvalues))
        return out

    @property
    def rank(self) -> np.ndarray:
        out = np.empty(len(self.columns), dtype=np.int64)
        out[self.order] = np.arange(1, len(self.columns) + 1)
        return out

    @property
    def moved(self) -> tuple[str, ...]:
        return tuple(self.columns[j] for j in self.order if self.reject[j])

    def rows(self) -> list[dict[str, object]]:
        """One row per column, the one that moved most first: the column, its rank, p-value,
        adjusted p-value, whether it is named, its effect (MMD with the interval) and the
        kernel that decided its test."""
        out = []
        for j in self.order:
            res = self.results[j]
            row: dict[str, object] = {
                "column": self.columns[j],
                "rank": int(self.rank[j]),
                "pvalue": float(self.pvalues[j]),
                "adjusted_pvalue": float(self.adjusted_pvalues[j]),
                "reject": bool(self.reject[j]),
            }
            row.update(effect_cells("effect", res.effect) if res.effect is not None else {"effect": None})
            row["kernel"] = repr(res.kernel)
            out.append(row)
        return out

    def to_frame(self) -> pandas.DataFrame:
        """The report as a pandas DataFrame, one row per column (indexed by the column's
        name), the one that moved most first; pandas is imported here."""
        return frame(self.rows()).set_index("column")

    def explain(self, top: int = 10) -> str:
        """The report in words: the columns named, how, and the ``top`` columns by rank."""
        k, named = len(self.columns), len(self.moved)
        lines = [
            f"{named} of {k} columns moved at level {self.alpha:g}, by {CORRECTIONS[self.correction]}.",
            f"Each column: its own two-sample test ({_how(self.results[0])}, {self.n_permutations} permutations).",
        ]
        for j in self.order[:top]:
            res = self.results[j]
            effect = "" if res.effect is None else f", {res.effect.sentence()}"
            mark = "moved" if self.reject[j] else "not named"
            lines.append(
                f"  {self.rank[j]}. {self.columns[j]}: {mark}, adjusted p-value {self.adjusted_pvalues[j]:.3g} "
                f"(p-value {self.pvalues[j]:.3g}){effect}"
            )
        if k > top:
            lines.append(f"  ... {k - top} more columns (to_frame() lists all).")
        lines.append(
            "A change in the dependence between columns whose own distributions stay put names no column "
            "here: the joint test (nk.two_sample_test on all columns) sees it."
        )
        return "\n".join(lines)

    def plot(self, ax: Any = None, *, top: int = 20) -> Any:
        """Each column's MMD with its interval, the ``top`` columns by rank (the first at
        the top), the named ones in colour; matplotlib is imported here. Returns the Axes."""
        chosen = self.order[:top]
        cells = [effect_cells("effect", self.results[j].effect) for j in chosen if self.results[j].effect is not None]
        if len(cells) != len(chosen):
            raise ValueError("plot() needs every column's effect (the tests ran with effect=False)")
        values = {name: np.array([c[name] for c in cells], dtype=np.float64) for name in cells[0]} if cells else {}
        empty = np.empty(0)
        return _plots.plot_columns(
            [self.columns[j] for j in chosen],
            values.get("effect", empty),
            values.get("effect_low", empty),
            values.get("effect_high", empty),
            self.reject[chosen],
            ax=ax,
            title=f"{len(self.moved)} of {len(self.columns)} columns moved ({self.correction}, alpha = {self.alpha:g})",
        )

    def __repr__(self) -> str:
        shown = ", ".join(repr(c) for c in self.moved[:5]) + (", ..." if len(self.moved) > 5 else "")
        return (
            f"ColumnReport({len(self.moved)} of {len(self.columns)} columns moved at alpha={self.alpha:g} "
            f"({self.correction}): [{shown}])"
        )


def _how(res: ColumnResult) -> str:
    where = f"Nystrom, m = {res.n_landmarks}" if res.method == "nystrom" else "exact"
    if isinstance(res, AggregatedTestResult):
        return f"{res.aggregation} over {len(res.kernels)} kernels, {where}"
    return f"{res.kernel.family} kernel, {where}"


def _names(
    given: Sequence[str] | None, x_names: tuple[str, ...] | None, y_names: tuple[str, ...] | None, d: int
) -> tuple[str, ...]:
    """The columns' names: the data's (X's and Y's checked alike), else ``names``, else x0, x1, ..."""
    check_same_columns(x_names, y_names)
    found = x_names if x_names is not None else y_names
    if given is not None:
        if isinstance(given, str) or len(given) != d or not all(isinstance(n, str) for n in given):
            raise ValueError(f"names must be {d} strings, one per column, got {given!r:.80}")
        if len(set(given)) != d:
            raise ValueError(f"names must differ from each other, got {list(given)!r:.80}")
        if found is not None and tuple(given) != tuple(found):
            raise ValueError(f"names {list(given)!r:.80} differ from the data's column names {list(found)!r:.80}")
        return tuple(given)
    return found if found is not None else tuple(f"x{j}" for j in range(d))


def _selected(columns: Sequence[str | int] | None, names: tuple[str, ...]) -> list[int]:
    """The indices of ``columns`` (names or positions); all when None."""
    if columns is None:
        return list(range(len(names)))
    if isinstance(columns, (str, int)) or not len(columns):
        raise ValueError(f"columns must be a non-empty list of column names or positions, got {columns!r:.80}")
    out = []
    for c in columns:
        if isinstance(c, str):
            if c not in names:
                raise ValueError(f"columns: no column named {c!r} (the columns are {list(names)!r:.120})")
            out.append(names.index(c))
        elif isinstance(c, (int, np.integer)) and not isinstance(c, bool) and -len(names) <= c < len(names):
            out.append(int(c) % len(names))
        else:
            raise ValueError(f"columns: {c!r} is neither a column name nor a position below {len(names)}")
    if len(set(out)) != len(out):
        raise ValueError(f"columns names a column twice: {list(columns)!r:.80}")
    return out


def column_report(
    X: SourceLike,
    Y: SourceLike,
    *,
    columns: Sequence[str | int] | None = None,
    names: Sequence[str] | None = None,
    kernel: Kernel | str | KernelCollection | list[Any] = "auto",
    n_landmarks: int = COLUMN_LANDMARKS,
    n_permutations: int | None = None,
    max_bins: int | None = COLUMN_MAX_BINS,
    correction: str = "holm",
    alpha: float = defaults.ALPHA,
    random_state: RandomStateLike = None,
    progress: bool | None = None,
    n_threads: int | None = None,
) -> ColumnReport:
    """Which columns moved between X and Y: each column's own two-sample test, the
    p-values adjusted for the number of columns, the columns ranked.

    Parameters
    ----------
    X : array-like (n1, d), DataFrame or data file;  Y : array-like (n2, d), ...
        Both in memory (a path or a row source is read whole). Column names come from a
        DataFrame or a file's header, checked alike in X and Y.
    columns : list of names or positions, or None
        The columns to test (None: all); the correction counts only these.
    names : list of str or None
        Names for data without any (the data's own must agree).
    kernel : as :func:`two_sample_test`, default="auto"
        Each column's test: by default the default test (MMD-FUSE over four kernels or the
        median Gaussian, the smaller p-value), its bandwidths from that column alone.
    n_landmarks : int, default=200
        Landmarks per column's Nyström test (at most the column's pooled rows: with all of
        them the test is the exact one).
    n_permutations : int or None
        B per column; None: max(200, 2 k / alpha - 1) for k columns (fewer than k / alpha
        - 1 can name no column).
    max_bins : int or None, default=512
        Beyond this many pooled rows a column's permutations move random bins of rows
        (:func:`two_sample_test`'s ``max_bins``; the level stays exact).
    correction : {"holm", "bh", "by"}, default="holm"
        "holm": the family-wise error at most alpha whatever the dependence between the
        columns; "bh": the false discovery rate, for independent or positively dependent
        columns; "by": the false discovery rate under any dependence.
    alpha : float, default=0.05
    random_state : None, int or numpy Generator
        Column j's splits and landmarks come from (a seed drawn from it, j): a column's
        test does not depend on which other columns are tested.
    progress : bool or None
        A progress bar over the columns; None: when stderr is a terminal.
    n_threads : int or None

    Returns
    -------
    ColumnReport
        ``moved`` (the named columns by rank), ``to_frame()``, ``explain()``, ``plot()``.

    Notes
    -----
    Cost: one Nyström test per column, O(n m K + B bins m K) with m = 200 landmarks, at
    most 512 bins and the K = 5 kernels of the default test: bench/RESULTS.md ("Which
    columns moved") measures d = 10 and 100 columns at 10^4 and 10^5 rows.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(1)
    >>> X, Y = rng.normal(size=(2000, 3)), rng.normal(size=(2000, 3))
    >>> Y[:, 0] *= 1.3                                       # one column's spread changes
    >>> rep = nk.column_report(X, Y, names=["age", "income", "height"], random_state=0)
    >>> rep.moved, rep.reject.tolist()
    (('age',), [True, False, False])
    """
    if correction not in CORRECTIONS:
        raise ValueError(f"correction must be one of {tuple(CORRECTIONS)}, got {correction!r}")
    level = check_level(alpha)
    if isinstance(n_landmarks, bool) or not isinstance(n_landmarks, (int, np.integer)) or n_landmarks < 1:
        raise ValueError(f"n_landmarks must be a positive integer, got {n_landmarks!r}")
    rows_x, x_names = as_rows(X, "X")
    rows_y, y_names = as_rows(Y, "Y")
    A, B_ = as_data_matrix(rows_x, "X", min_rows=2), as_data_matrix(rows_y, "Y", min_rows=2)
    if A.shape[1] != B_.shape[1]:
        raise ValueError(f"X has {A.shape[1]} features but Y has {B_.shape[1]}")
    all_names = _names(names, x_names, y_names, A.shape[1])
    chosen = _selected(columns, all_names)
    B = default_permutations(len(chosen), level) if n_permutations is None else check_permutations(n_permutations)
    m = int(min(n_landmarks, A.shape[0] + B_.shape[0]))
    seed = draw_seed(check_random_state(random_state), SPLIT_SEED_BOUND)
    bar = progress_bar(len(chosen), progress, "columns")
    results: list[ColumnResult] = []
    for j in chosen:
        results.append(
            two_sample_test(
                A[:, [j]],
                B_[:, [j]],
                kernel=kernel,
                method="nystrom",
                n_landmarks=m,
                n_permutations=B,
                max_bins=max_bins,
                alpha=level,
                random_state=np.random.default_rng([seed, j]),
                progress=False,
                n_threads=n_threads,
            )
        )
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    pvalues = np.array([r.pvalue for r in results])
    return ColumnReport(
        columns=tuple(all_names[j] for j in chosen),
        pvalues=pvalues,
        adjusted_pvalues=adjusted_pvalues(pvalues, correction),
        correction=correction,
        alpha=level,
        n_permutations=B,
        results=tuple(results),
    )


__all__ = [
    "COLUMN_LANDMARKS",
    "COLUMN_MAX_BINS",
    "CORRECTIONS",
    "ColumnReport",
    "adjusted_pvalues",
    "column_report",
    "default_permutations",
]
