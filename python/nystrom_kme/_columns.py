"""Column names: read from data frames and data-file headers, kept by fitted objects as
``feature_names_in_`` (scikit-learn's convention) and checked against every later batch.

Names come from a pandas or polars DataFrame (``.columns``), any object with string
``.columns``, an object of the dataframe interchange protocol (``__dataframe__``:
pyarrow tables, ...), and the header of a data file (:mod:`nystrom_kme.datafiles`,
which puts them on its row source). No data-frame library is imported here: pandas and
polars are not dependencies, and the objects are only asked for their names.

As in scikit-learn, only string names are names: the integer labels of a DataFrame
built without names (pandas' ``0, 1, 2, ...``) are positions, not names, and a mix of
string and non-string labels is refused (its meaning is unclear).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

#: Names listed per kind of difference in a message (scikit-learn lists 5).
_SHOWN = 5


def column_names(X: object, name: str = "X") -> tuple[str, ...] | None:
    """The column names of ``X`` when it has string names, else None.

    Parameters
    ----------
    X : object
        A pandas or polars DataFrame, an object with ``.columns``, an object of the
        dataframe interchange protocol (``__dataframe__``), a row source from a data
        file with a header (``feature_names``), or anything else (no names: None).
    name : str, default="X"
        How a message names ``X``.

    Returns
    -------
    tuple of str of length n_features, or None

    Raises
    ------
    ValueError
        When some labels are strings and others are not (pandas' ``[0, "b"]``).

    Examples
    --------
    >>> from nystrom_kme._columns import column_names
    >>> class Frame:                                  # stands for pandas or polars
    ...     columns = ["age", "income"]
    >>> column_names(Frame()), column_names([[1.0, 2.0]])
    (('age', 'income'), None)
    """
    if isinstance(X, np.ndarray):  # arrays, memmaps: positions only (fast path)
        return None
    names = getattr(X, "feature_names", None)  # a row source that knows its names
    if names is not None:
        return tuple(names)
    labels = _labels(X)
    if not labels:
        return None
    kinds = sorted({type(label).__qualname__ for label in labels})
    if all(isinstance(label, str) for label in labels):
        return tuple(labels)
    if any(isinstance(label, str) for label in labels):
        raise ValueError(
            f"{name} has column names of types {kinds}: names are used only when all are strings "
            f"(convert them, e.g. X.columns = X.columns.astype(str), or drop them)"
        )
    return None


def _labels(X: object) -> list[Any] | None:
    """The column labels of a data frame, or None: ``column_names`` (pyarrow tables, whose
    ``columns`` are the data), ``columns`` (pandas, polars), or the interchange protocol."""
    listed = getattr(X, "column_names", None)
    if isinstance(listed, (list, tuple)):
        return list(listed)
    columns = getattr(X, "columns", None)
    if columns is not None and not callable(columns):
        try:
            return list(columns)
        except TypeError:  # not a sequence of labels: no names
            return None
    if hasattr(X, "__dataframe__"):
        try:
            return list(X.__dataframe__().column_names())
        except Exception:  # a broken or partial protocol: no names, as for an array
            return None
    return None


def as_feature_names(names: Sequence[str] | None) -> np.ndarray | None:
    """``names`` as ``feature_names_in_`` holds them: a 1-d object array (scikit-learn's
    type), or None.

    Examples
    --------
    >>> from nystrom_kme._columns import as_feature_names
    >>> as_feature_names(("a", "b"))
    array(['a', 'b'], dtype=object)
    """
    if names is None:
        return None
    out = np.empty(len(names), dtype=object)
    out[:] = list(names)
    return out


def keep_feature_names(obj: object, names: Sequence[str] | np.ndarray | None) -> None:
    """Set ``obj.feature_names_in_`` to ``names`` (an object array), or remove it when the
    data had no names, as scikit-learn does: what every fitted object of the package
    calls where it is fitted (and loaded).

    Examples
    --------
    >>> from nystrom_kme._columns import fitted_feature_names, keep_feature_names
    >>> class Fitted:
    ...     pass
    >>> obj = Fitted()
    >>> keep_feature_names(obj, ["age", "income"])
    >>> obj.feature_names_in_, fitted_feature_names(obj)
    (array(['age', 'income'], dtype=object), ('age', 'income'))
    >>> keep_feature_names(obj, None)
    >>> hasattr(obj, "feature_names_in_"), fitted_feature_names(obj)
    (False, None)
    """
    if names is not None and len(set(names)) != len(names):  # which column would a name mean?
        repeated = sorted({str(n) for n in names if list(names).count(n) > 1})
        raise ValueError(f"X repeats the column names {repeated}: each column needs a name of its own")
    kept = as_feature_names(None if names is None else [str(n) for n in names])
    if kept is None:
        vars(obj).pop("feature_names_in_", None)
    else:
        vars(obj)["feature_names_in_"] = kept


def fitted_feature_names(obj: object) -> tuple[str, ...] | None:
    """``obj.feature_names_in_`` as a tuple of str, or None when it was fitted without names."""
    names = vars(obj).get("feature_names_in_")
    return None if names is None else tuple(str(n) for n in names)


def _listed(names: Sequence[str]) -> str:
    shown = [f"- {n}\n" for n in names[:_SHOWN]]
    return "".join(shown) + ("- ...\n" if len(names) > _SHOWN else "")


def _short(names: Sequence[str], limit: int = 10) -> str:
    inner = ", ".join(repr(n) for n in names[:limit])
    return f"[{inner}{', ...' if len(names) > limit else ''}]"


def check_feature_names(
    fitted: Sequence[str] | np.ndarray | None,
    names: Sequence[str] | None,
    *,
    owner: str,
    what: str = "X",
) -> None:
    """Refuse a batch whose column names are not the fitted ones, in the fitted order.

    A batch is compared by name only when both sides have names; a batch without names
    (a numpy array, a headerless file) is taken by position, as before names were kept
    (its width is checked where it is read). Other names, missing names or the same names
    in another order raise a ValueError naming them.

    Refused rather than reordered by name: a batch in another order is most often a
    batch from another pipeline (a join, an export, a schema change), and reordering it
    silently would hide that from the one who can fix it; it would also make the result
    depend on whether the rows came with names (an array cannot be reordered), and
    streamed files would need every block rearranged. Reordering is one explicit step
    for the caller: ``X[est.feature_names_in_]`` (pandas), ``--columns`` on the command
    line. scikit-learn refuses as well, and the message begins with its words, so that
    its estimator checks accept the estimators of this package.

    Parameters
    ----------
    fitted : sequence of str, ndarray of object or None
        The names the object was fitted with (``feature_names_in_``), or None.
    names : sequence of str or None
        The batch's names (:func:`column_names`), or None.
    owner : str
        What was fitted, for the message (e.g. ``"NystromKME"``).
    what : str, default="X"
        How the message names the batch (a file name, ``"stdin"``).

    Raises
    ------
    ValueError
        Naming the unseen and missing names, or, for the same names in another order,
        the first position that differs.

    Examples
    --------
    >>> from nystrom_kme._columns import check_feature_names
    >>> check_feature_names(["a", "b"], ["a", "b"], owner="NystromKME")
    >>> check_feature_names(["a", "b"], None, owner="NystromKME")        # by position
    >>> check_feature_names(["a", "b"], ["b", "a"], owner="NystromKME")
    Traceback (most recent call last):
    ...
    ValueError: The feature names should match those that were passed during fit.
    Feature names must be in the same order as they were in fit.
    X has columns ['b', 'a'] but NystromKME was fitted with ['a', 'b'] (column index 0 is 'b', not 'a'): ...
    """
    if fitted is None or names is None:
        return
    fitted, names = [str(n) for n in fitted], [str(n) for n in names]
    if fitted == names:
        return
    unseen = sorted(set(names) - set(fitted))
    missing = sorted(set(fitted) - set(names))
    message = "The feature names should match those that were passed during fit.\n"
    if unseen:
        message += "Feature names unseen at fit time:\n" + _listed(unseen)
    if missing:
        message += "Feature names seen at fit time, yet now missing:\n" + _listed(missing)
    if unseen or missing:
        message += f"{what} has columns {_short(names)} but {owner} was fitted with {_short(fitted)}"
        raise ValueError(message)
    # the same names, in another order or repeated another number of times
    i = next((i for i, (a, b) in enumerate(zip(names, fitted)) if a != b), min(len(names), len(fitted)))
    where = (
        f"column index {i} is {names[i]!r}, not {fitted[i]!r}"
        if i < min(len(names), len(fitted))
        else f"{len(names)} columns, not {len(fitted)}"
    )
    raise ValueError(
        message + "Feature names must be in the same order as they were in fit.\n"
        f"{what} has columns {_short(names)} but {owner} was fitted with {_short(fitted)} "
        f"({where}): reorder them (X[est.feature_names_in_] for a DataFrame, --columns on the command line)"
    )


def check_same_columns(
    x_names: Sequence[str] | None, y_names: Sequence[str] | None, x: str = "X", y: str = "Y"
) -> None:
    """Refuse two samples whose column names differ: a test compares them column by column.

    As :func:`check_feature_names`: compared only when both have names (arrays and
    headerless files are taken by position); other names, the same names in another order,
    and names repeated within a sample (which column would a name mean?) raise a
    ValueError naming them. Refused rather than aligned by name, for the reasons given
    there; aligning is one explicit step for the caller: ``Y[X.columns]``.

    Examples
    --------
    >>> from nystrom_kme._columns import check_same_columns
    >>> check_same_columns(["a", "b"], ["a", "b"]); check_same_columns(["a", "b"], None)
    >>> check_same_columns(["a", "b"], ["A", "b"])
    Traceback (most recent call last):
    ...
    ValueError: X and Y must have the same columns in the same order: ... (Y lacks ['a'], and has ['A'] that X lacks)
    """
    for label, names in ((x, x_names), (y, y_names)):
        if names is not None and len(set(names)) != len(names):
            repeated = sorted({n for n in names if list(names).count(n) > 1})
            raise ValueError(f"{label} repeats the column names {repeated}: each column needs a name of its own")
    if x_names is None or y_names is None or list(x_names) == list(y_names):
        return
    xs, ys = [str(n) for n in x_names], [str(n) for n in y_names]
    missing, extra = sorted(set(xs) - set(ys)), sorted(set(ys) - set(xs))
    if missing or extra:
        why = f"{y} lacks {missing}" if missing else ""
        why += (", and has " if why else f"{y} has ") + f"{extra} that {x} lacks" if extra else ""
    else:
        i = next(i for i, (a, b) in enumerate(zip(ys, xs)) if a != b)
        why = (
            f"column index {i} is {ys[i]!r} in {y} but {xs[i]!r} in {x}: reorder {y}'s columns as {x}'s "
            "(Y[X.columns] for DataFrames, --columns on the command line)"
        )
    raise ValueError(
        f"{x} and {y} must have the same columns in the same order: "
        f"{y} has {_short(ys)} but {x} has {_short(xs)} ({why})"
    )


__all__ = [
    "as_feature_names",
    "check_feature_names",
    "check_same_columns",
    "column_names",
    "fitted_feature_names",
    "keep_feature_names",
]
