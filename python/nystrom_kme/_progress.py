"""Progress bars for long calls (tqdm, a dependency): by default only when stderr is a
terminal; ``progress=True`` or ``False`` forces them on or off."""

from __future__ import annotations

import sys
from typing import Any


def progress_bar(total: int, enabled: bool | None, desc: str) -> Any:  # pragma: no cover - cosmetic
    """A tqdm bar of ``total`` steps when stderr is a terminal (or when ``enabled`` is
    True); None otherwise (``enabled`` False, or tqdm missing from a broken install)."""
    show = sys.stderr.isatty() if enabled is None else enabled
    if not show:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, leave=False)


class RowsBar:
    """A progress bar that counts rows in rows, over one or more passes over the same
    ``n_rows`` rows: "drift reference, pass 2/5: 45% 450k/1.00M rows".

    ``update(k)`` is told the rows of each block read (a source's ``progress`` or a data
    file's ``on_rows``). While ``n_rows`` is unknown (the first pass over a text file
    counts them) the bar counts rows without a total; :meth:`set_rows` gives it, and each
    further ``n_rows`` rows start the next pass, so a call that reads a file several
    times shows each pass in rows, never values (rows x columns) or rows x passes.
    Shown when stderr is a terminal, or when ``enabled`` is True; silent otherwise (and
    when tqdm is missing from a broken install).

    Parameters
    ----------
    desc : str
        What is read ("reading ref.csv", "drift reference").
    enabled : bool or None
        True or False force it on or off; None: when stderr is a terminal.
    n_rows : int or None, default=None
        The rows of one pass, when known.
    passes : int or None, default=None
        How many passes there will be, when known (shown as "pass 2/5").

    Examples
    --------
    >>> from nystrom_kme._progress import RowsBar
    >>> bar = RowsBar("reading", enabled=False, n_rows=1000, passes=2)
    >>> for _ in range(3):
    ...     bar.update(500)
    >>> bar.pass_number, bar.rows_in_pass
    (2, 500)
    >>> bar.close()
    """

    def __init__(self, desc: str, enabled: bool | None, n_rows: int | None = None, passes: int | None = None) -> None:
        self.desc, self.n_rows, self.passes = desc, n_rows, passes
        self.pass_number, self.rows_in_pass = 1, 0
        show = sys.stderr.isatty() if enabled is None else enabled
        self._bar: Any = None
        if show:
            try:
                from tqdm.auto import tqdm
            except ImportError:  # pragma: no cover - tqdm is a dependency
                return
            self._bar = tqdm(
                total=n_rows, desc=self._label(), unit=" rows", unit_scale=True, leave=False, file=sys.stderr
            )

    def _label(self) -> str:
        if self.passes == 1 or (self.passes is None and self.pass_number == 1):
            return self.desc
        of = "" if self.passes is None else f"/{self.passes}"
        return f"{self.desc}, pass {self.pass_number}{of}"

    def set_rows(self, n_rows: int) -> None:
        """The rows of one pass, once known (after the first pass has counted them)."""
        self.n_rows = int(n_rows)
        if self._bar is not None and self.rows_in_pass < self.n_rows:
            self._bar.total = self.n_rows
            self._bar.refresh()

    def update(self, rows: int) -> None:
        """``rows`` more rows read; a full pass done, the next one starts."""
        if self.n_rows is not None and self.rows_in_pass >= self.n_rows and rows > 0:
            self.pass_number += 1
            self.rows_in_pass = 0
            if self._bar is not None:
                self._bar.reset(total=self.n_rows)
                self._bar.set_description(self._label())
        self.rows_in_pass += rows
        if self._bar is not None:
            self._bar.update(rows)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


__all__ = ["RowsBar", "progress_bar"]
