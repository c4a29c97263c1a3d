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


__all__ = ["progress_bar"]
