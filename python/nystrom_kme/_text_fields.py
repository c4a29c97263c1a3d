"""The fields of the lines of a text table, for data files (:mod:`nystrom_kme.datafiles`)
and ``drift watch``'s standard input alike: a data line's numbers (``#`` to the end is a
comment), a header's names (as the ``csv`` module reads them: quoted names may hold the
delimiter and ``#``), and whether a first line is a header.
"""

from __future__ import annotations

import csv
import shlex
import warnings
from collections.abc import Sequence


def split_fields(line: str, delimiter: str | None) -> list[str]:
    """The fields of one data line of a text table (``#`` to the end removed: no number
    holds one; quotes and blanks around fields stripped; ``delimiter`` None: whitespace),
    as data files read them. A header line is read by :func:`split_header`.

    Examples
    --------
    >>> from nystrom_kme.datafiles import split_fields
    >>> split_fields("3.5, 1e3  # a comment\\n", ",")
    ['3.5', '1e3']
    """
    return split_line(line_content(line), delimiter)


def split_header(line: str, delimiter: str | None, where: str = "the header") -> list[str]:
    """The column names of a header line, read as the ``csv`` module reads a line: a name
    in double quotes may hold the delimiter, a ``#`` or a doubled quote (``""``); ``#`` is
    a character of names like any other (only a line that begins with ``#`` is a
    comment); blanks around names are dropped. ``delimiter`` None (whitespace): names
    split at blanks, and a name in single or double quotes may hold them (``shlex``, no
    escapes).

    Parameters
    ----------
    line : str
        The header line (its line break is dropped).
    delimiter : str or None
        The field separator; None: runs of whitespace.
    where : str, default="the header"
        How a message names the line (``"x.csv: line 1"``).

    Returns
    -------
    list of str

    Raises
    ------
    ValueError
        For a quote that is never closed (data files raise it as a DataFileError).

    Examples
    --------
    >>> from nystrom_kme.datafiles import split_header
    >>> split_header('"income, net", age#2,"a ""b"" c"\\n', ",")
    ['income, net', 'age#2', 'a "b" c']
    >>> split_header("'net income'  age\\n", None)
    ['net income', 'age']
    """
    text = line.rstrip("\r\n")
    try:
        if delimiter is None:
            lexer = shlex.shlex(text, posix=True)
            lexer.whitespace_split, lexer.commenters, lexer.escape = True, "", ""
            names = list(lexer)
        else:
            names = next(csv.reader([text], delimiter=delimiter, skipinitialspace=True, strict=True), [])
    except (ValueError, csv.Error) as err:
        detail = " ".join(str(err).split())
        raise ValueError(f"{where}: cannot read the column names: a quote is not closed ({detail})") from None
    return [name.strip() for name in names]


def split_line(line: str, delimiter: str | None) -> list[str]:
    """The fields of a line without its comment, quotes and blanks around them stripped."""
    return [f.strip().strip('"').strip("'") for f in line.split(delimiter)]


def line_content(line: str) -> str:
    """A data line without its comment (``#`` to the end) and line break: blank for a
    comment line (one that begins with ``#``) and for a blank one."""
    return (line.split("#", 1)[0] if "#" in line else line).rstrip("\r\n")


def is_number(field: str) -> bool:
    """Whether ``float`` reads the field."""
    try:
        float(field)
    except ValueError:
        return False
    return True


def is_integer(field: str) -> bool:
    """Whether the field is a whole number written without a point (``-3``, ``+12``)."""
    return field.strip().lstrip("+-").isdigit()


def first_line_is_header(
    fields: Sequence[str], next_fields: Sequence[str] | None, header: bool | None, where: str
) -> tuple[bool, list[str] | None]:
    """Whether the first line of a text table is a header, and its column names (None
    when it has none, or when its names are only column numbers).

    ``header`` True or False decides; None detects: a line with a field that is not a
    number is a header. A line of numbers is data, except the header pandas writes for
    columns without names (``0,1,...,d-1``, d >= 2) over a line of decimals: that is
    taken as a header with a UserWarning saying so (``header=False`` reads it as data),
    neither eaten silently nor read as a data row. ``where`` names the line in messages
    (``"today.csv: line 1"``). Shared by data files and ``drift watch``'s standard input.

    Examples
    --------
    >>> from nystrom_kme.datafiles import first_line_is_header
    >>> first_line_is_header(["age", "income"], ["31", "2.5"], None, "x.csv: line 1")
    (True, ['age', 'income'])
    >>> first_line_is_header(["3", "1.5"], ["4", "2.5"], None, "x.csv: line 1")
    (False, None)
    """
    if header is not None:
        return bool(header), (list(fields) if header else None)
    if not all(is_number(x) for x in fields):
        return True, list(fields)
    numbered = len(fields) >= 2 and all(is_integer(x) for x in fields)
    if not numbered or [int(x) for x in fields] != list(range(len(fields))):
        return False, None
    if next_fields is None or len(next_fields) != len(fields) or all(is_integer(x) for x in next_fields):
        return False, None  # integer data (or nothing after it): the line is data
    warnings.warn(
        f"{where} ({','.join(fields)}) is read as a header, not as data: the column numbers "
        f"0 to {len(fields) - 1} over rows of decimals look like the header pandas writes for "
        "columns without names (header=False, or --no-header, reads the line as data)",
        UserWarning,
        stacklevel=3,
    )
    return True, None


def delimiter_hint(field: str, delimiter: str | None) -> str:
    """A hint when a field looks like several fields joined by another separator."""
    for other in (";", "\t", ",", "|", " "):
        if other != delimiter and other in field.strip():
            parts = [p for p in field.strip().split(other) if p.strip()]
            if len(parts) > 1 and all(is_number(p) for p in parts):
                shown = {"\t": "'\\t'", " ": "' '"}.get(other, repr(other))
                return f" (the fields look separated by {shown}: try --delimiter {shown})"
    return ""


__all__ = [
    "delimiter_hint",
    "first_line_is_header",
    "is_integer",
    "is_number",
    "line_content",
    "split_fields",
    "split_header",
    "split_line",
]
