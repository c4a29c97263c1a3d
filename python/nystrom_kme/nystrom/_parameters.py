"""The parameters of :class:`~nystrom_kme.NystromKME` read as a fit uses them: the
checks of ``solver``, ``rcond``, ``passes``, ``chunk_rows``, ``standardize`` and
``n_threads``; landmark points given as ``sampler`` seen through the columns' scaling;
and the scaling of ``standardize=`` fitted on a source."""

from __future__ import annotations

import math

import numpy as np

from .._scaling import Scaling, check_standardize, fit_scaling
from .._validation import check_positive_int, n_threads_arg
from ..sampling import SamplerLike
from ..sources import RowSource

SOLVERS = ("auto", "cod", "cholesky")


def check_params(
    solver: str,
    rcond: float | None,
    passes: int,
    chunk_rows: int | None,
    standardize: bool | str,
    n_threads: int | None,
) -> tuple[float, int]:
    """Validated (rcond, n_threads); also checks solver, passes, chunk_rows and standardize.

    Examples
    --------
    >>> from nystrom_kme.nystrom._parameters import check_params
    >>> check_params("auto", None, 2, None, False, 1)
    (0.0, 1)
    """
    if solver not in SOLVERS:
        raise ValueError(f"solver must be one of {SOLVERS}, got {solver!r}")
    try:
        value = 0.0 if rcond is None else float(rcond)
    except (TypeError, ValueError):
        raise ValueError(f"rcond must be a number in [0, 1), got {rcond!r}") from None
    if not (math.isfinite(value) and 0.0 <= value < 1.0):
        raise ValueError(f"rcond must be in [0, 1), got {rcond!r}")
    if passes not in (1, 2) or isinstance(passes, bool):
        raise ValueError(f"passes must be 1 or 2, got {passes!r}")
    if chunk_rows is not None:
        check_positive_int(chunk_rows, "chunk_rows")
    check_standardize(standardize)
    return value, n_threads_arg(n_threads)


def scaled_sampler(sampler: SamplerLike, scaling: Scaling | None) -> SamplerLike:
    """``sampler`` as the fit reads it: landmark points given in X's units meet
    ``scaling`` as X does; anything else is returned as it is."""
    if scaling is not None and isinstance(sampler, (np.ndarray, list, tuple)):
        points = np.asarray(sampler)
        if points.ndim == 2 and points.dtype.kind in "biuf":
            return scaling.apply(points)
    return sampler


def scaling_for(standardize: bool | str, src: RowSource, rng: np.random.Generator, what: str) -> Scaling | None:
    """The scaling of ``standardize=`` fitted on ``src`` (None when off): a pass of its
    own, refused for a stream that can be read only once (``what`` names the read after it)."""
    kind = check_standardize(standardize)
    if kind is None:
        return None
    if not src.reiterable:
        raise ValueError(
            f"standardize={standardize!r} reads the rows once for the columns' statistics "
            f"before {what} reads them, and a generator or iterator can be read only once: pass a "
            "list of chunks, a callable returning a fresh iterator, or an array; or standardise "
            "the rows beforehand"
        )
    return fit_scaling([src], kind, rng)


__all__ = ["SOLVERS", "check_params", "scaled_sampler", "scaling_for"]
