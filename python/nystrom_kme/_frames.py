"""Results as tables, one floor below the results: :class:`Tabular` gives a result
``row()`` (its fields as plain values), ``rows()`` and ``to_frame()`` (a pandas
DataFrame), and :func:`results_frame` makes one table of many results (a list has no
methods: the drift results of a day's batches, the tests of several tables).

A row holds a result's scalar fields in their own names (the p-value, the statistic, the
level and the decision first), its kernels as their ``repr`` (a table's cell is text,
not an object), and its effect size spread over columns: ``effect`` (the MMD, or the
normalised HSIC), ``effect_low``, ``effect_high``, ``effect_level`` (a drift result's
``distance`` likewise). Arrays (the null distribution, each kernel's p-value) stay on the
result: a row is one line.

pandas is optional: it is imported when a frame is asked for, and an ImportError naming
the ``pandas`` package says how to install it when it is missing; ``row()`` and
``rows()`` need nothing.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .kernels import Kernel

if TYPE_CHECKING:  # pandas is optional: annotations only
    import pandas

#: The columns a row leads with, when the result has them: what a reader looks for first.
LEAD = ("H0", "pvalue", "reject", "is_drift", "alpha", "threshold", "statistic")


def require_pandas() -> Any:
    """The pandas module, or an ImportError naming the package to install.

    Examples
    --------
    >>> from nystrom_kme._frames import require_pandas
    >>> require_pandas().__name__
    'pandas'
    """
    try:
        import pandas
    except ImportError as err:
        raise ImportError(
            "to_frame() and results_frame() need the pandas package: pip install pandas "
            "(the results' rows, row(), need nothing)"
        ) from err
    return pandas


def plain(value: object) -> object:
    """One cell of a row: numbers and text as Python scalars, a kernel as its repr, None kept.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme._frames import plain
    >>> plain(np.float64(0.5)), plain(nk.Gaussian(2.0)), plain(None)
    (0.5, 'Gaussian(bandwidth=2.0)', None)
    """
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Kernel):
        return repr(value)
    return value


def _is_effect(value: object) -> bool:
    """An effect size (``Effect``, ``Dependence``): a dataclass that says itself in a sentence."""
    return dataclasses.is_dataclass(value) and not isinstance(value, type) and hasattr(value, "sentence")


def effect_cells(name: str, effect: object) -> dict[str, object]:
    """An effect's numbers as cells: its estimate under ``name`` (the first numeric field:
    an Effect's ``mmd``, a Dependence's ``value``), the others as ``name_field``. Its kernels
    are left out (the result's row names the kernel that decided, the effect's by construction).

    Examples
    --------
    >>> import nystrom_kme as nk
    >>> from nystrom_kme._frames import effect_cells
    >>> effect_cells("effect", nk.Effect(nk.Gaussian(1.0), 0.2, 0.1, 0.3))
    {'effect': 0.2, 'effect_low': 0.1, 'effect_high': 0.3, 'effect_level': 0.95}
    """
    cells: dict[str, object] = {}
    for f in dataclasses.fields(effect):  # type: ignore[arg-type]  # _is_effect: a dataclass instance
        value = getattr(effect, f.name)
        if isinstance(value, Kernel):
            continue
        cells[name if not cells else f"{name}_{f.name}"] = plain(value)
    return cells


def row_of(result: object, extra: Mapping[str, object] | None = None) -> dict[str, object]:
    """A dataclass result as one row: its scalar fields (kernels as their repr, an effect
    spread by :func:`effect_cells`), then ``extra``; the columns of ``LEAD`` first.
    Arrays, lists and collections are left out."""
    cells: dict[str, object] = {}
    for f in dataclasses.fields(result):  # type: ignore[arg-type]  # the results are dataclasses
        value = getattr(result, f.name)
        if _is_effect(value):
            cells.update(effect_cells(f.name, value))
        elif value is None or isinstance(value, (bool, int, float, str, np.generic, Kernel)):
            cells[f.name] = plain(value)
    cells.update(extra or {})
    lead = {name: cells.pop(name) for name in LEAD if name in cells}
    return {**lead, **cells}


def frame(rows: list[dict[str, object]], index: list[Any] | None = None) -> pandas.DataFrame:
    """A DataFrame of rows (the union of their columns, in order of appearance; a cell a
    row lacks is missing)."""
    pandas = require_pandas()
    columns: dict[str, None] = {}
    for row in rows:
        columns.update(dict.fromkeys(row))
    return pandas.DataFrame(rows, columns=list(columns), index=index)


class Tabular:
    """``row()``, ``rows()`` and ``to_frame()`` for a dataclass result (see the module)."""

    def row(self) -> dict[str, object]:
        """The result as one row of a table: a dict of plain values (no pandas needed)."""
        return row_of(self)

    def rows(self) -> list[dict[str, object]]:
        """The result's rows (one, for a test's or a batch's result)."""
        return [self.row()]

    def to_frame(self) -> pandas.DataFrame:
        """The result as a pandas DataFrame, one row per ``rows()`` (pandas is imported
        here: an ImportError names it when it is missing)."""
        return frame(self.rows())


def results_frame(results: Iterable[Tabular] | Mapping[Any, Tabular]) -> pandas.DataFrame:
    """One table of many results: the rows of each (``result.rows()``), one after the other.

    Parameters
    ----------
    results : iterable of results, or a mapping from labels to results
        Any results of the package with ``to_frame()``: the drift results of several
        batches, test results, the independence results, online drift results (one row
        per update), column reports (one row per column), or a mixture (the union of
        their columns; a ``result`` column names each row's kind when they differ). A
        mapping's labels (e.g. the batches' file names) become the index.

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> det = nk.DriftDetector(rng.normal(size=(20_000, 2)), n_holdout=6000, n_permutations=99, random_state=0)
    >>> batches = {"monday": rng.normal(size=(200, 2)), "tuesday": rng.normal(size=(200, 2)) + 0.5}
    >>> df = nk.results_frame({day: det.predict(b) for day, b in batches.items()})
    >>> df[["pvalue", "is_drift"]]
             pvalue  is_drift
    monday     0.47     False
    tuesday    0.01      True
    """
    labelled = isinstance(results, Mapping)
    items = list(results.items()) if isinstance(results, Mapping) else [(None, r) for r in results]
    for label, result in items:
        if not callable(getattr(result, "rows", None)):
            where = f"results[{label!r}]" if labelled else "results"
            raise TypeError(f"{where} must hold results with to_frame() (test, drift, ...), got {result!r:.80}")
    mixed = len({type(r) for _, r in items}) > 1
    rows: list[dict[str, object]] = []
    index: list[Any] = []
    for label, result in items:
        for row in result.rows():
            rows.append({"result": type(result).__name__, **row} if mixed else row)
            index.append(label)
    return frame(rows, index if labelled else None)


def missing(value: object) -> bool:
    """A cell with no value (None or NaN)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


__all__ = ["LEAD", "Tabular", "effect_cells", "frame", "missing", "plain", "require_pandas", "results_frame", "row_of"]
