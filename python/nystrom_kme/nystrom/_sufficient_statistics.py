"""The sufficient statistics of a Nyström embedding (for :class:`nystrom_kme.NystromKME`):
s = sum_i w_i k(L, x_i) (m,) and W = sum_i w_i, summed in the units of the power of two
the weights were divided by (:func:`~nystrom_kme._validation.scale_weights`) and kept in
the weights' own units; the solve alpha = K_m^+ s / W, exact at any scale, with its
overflow checks; and new statistics added to kept ones (``partial_fit``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._compensated import CompensatedSum
from .._solve import solve_weights
from .._validation import power_of_two_scale
from ..kernels import Kernel


class Solved(NamedTuple):
    """alpha (m,) float64, the solver used, the rank of K_m, and the statistics in the
    weights' own units (``sums`` (m,), ``weight_sum``)."""

    weights: np.ndarray
    solver: str
    rank: int
    sums: CompensatedSum
    weight_sum: float


def _overflow(kernel: Kernel) -> ValueError:
    return ValueError(
        f"the kernel values overflow float64 ({kernel!r} on data of this scale); scale the data or raise the bandwidth"
    )


def solve_statistics(
    landmarks: np.ndarray,
    kernel: Kernel,
    acc: CompensatedSum,
    weight_sum: float,
    scale: float,
    *,
    solver: str,
    rcond: float,
    n_threads: int,
    solved: tuple[np.ndarray, str, int] | None = None,
) -> Solved:
    """alpha = K_m^+ (acc / weight_sum) on ``landmarks`` (m, d) by ``solver``; ``acc`` and
    ``weight_sum`` are in units of ``scale``, and the result's statistics are multiplied
    back by it. ``solved``: the core's (alpha (m, 1), solver used, rank) for these inputs
    when already known (the search of ``n_landmarks="auto"`` solved them).

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme._compensated import CompensatedSum
    >>> from nystrom_kme.nystrom._sufficient_statistics import solve_statistics
    >>> L = np.zeros((1, 1))    # s / W = k(0, 0) = 1: alpha = 1
    >>> out = solve_statistics(L, nk.Gaussian(1.0), CompensatedSum.of(np.array([3.0])), 3.0, 4.0,
    ...                        solver="cod", rcond=0.0, n_threads=1)
    >>> out.weights.tolist(), out.sums.value().tolist(), out.weight_sum
    ([1.0], [12.0], 12.0)
    """
    stored, stored_total = (acc, weight_sum) if scale == 1.0 else (acc.scaled(scale), weight_sum * scale)
    if not math.isfinite(stored_total):
        raise ValueError(
            "sample_weight: the weighted sums overflow float64; divide the weights by "
            "a constant (only their ratios matter to the embedding)"
        )
    if not np.isfinite(acc.value()).all():
        raise _overflow(kernel)
    if not weight_sum > 0:
        raise ValueError("the total sample weight must be positive")
    s = acc.value() / weight_sum  # the ratio: exact at any scale
    alpha, used, rank = solved or solve_weights(landmarks, s, kernel, n_threads, solver=solver, rcond=rcond)
    weights = np.ascontiguousarray(alpha[:, 0])
    if not np.isfinite(weights).all():
        raise _overflow(kernel)
    return Solved(weights, used, int(rank), stored, float(stored_total))


def add_statistics(
    sums: CompensatedSum, weight_sum: float, part: CompensatedSum, part_total: float, part_scale: float
) -> tuple[CompensatedSum, float, float]:
    """(s, W, scale): kept statistics (``sums``, ``weight_sum``, in the weights' own units)
    plus new ones (``part``, ``part_total``, in units of ``part_scale``), both in the units
    of the larger scale (exact division for powers of two, the scales of
    :func:`~nystrom_kme._validation.scale_weights`; a constant weight is its own scale).

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme._compensated import CompensatedSum
    >>> from nystrom_kme.nystrom._sufficient_statistics import add_statistics
    >>> acc, total, scale = add_statistics(CompensatedSum.of(np.array([8.0])), 8.0,
    ...                                    CompensatedSum.of(np.array([1.0])), 1.0, 2.0)
    >>> acc.value().tolist(), total, scale             # 10 = 8 + 1 x 2, in units of 8
    ([1.25], 1.25, 8.0)
    """
    scale = max(part_scale, power_of_two_scale(weight_sum))
    acc = CompensatedSum(sums.sum.shape)  # divided, not times 1 / scale: that overflows for tiny scales
    acc.sum, acc.comp = sums.sum / scale, sums.comp / scale
    ratio = part_scale / scale
    acc.add(part.sum * ratio)
    acc.add(part.comp * ratio)
    return acc, weight_sum / scale + part_total * ratio, scale


def check_statistics_normal(weight_sum: float, what: str) -> None:
    """Refuse to add to sufficient statistics that are subnormal (weights so small that
    their sums left float64's normal range): their few significant bits would make the
    result inexact (``what`` names the call). A fit's own embedding is exact at any
    weight scale.

    Examples
    --------
    >>> from nystrom_kme.nystrom._sufficient_statistics import check_statistics_normal
    >>> check_statistics_normal(1e-300, "merge")              # normal: nothing to say
    >>> check_statistics_normal(1e-310, "merge")
    Traceback (most recent call last):
    ...
    ValueError: merge: the sufficient statistics of this embedding are subnormal ...
    """
    if 0.0 < weight_sum < np.finfo(np.float64).tiny:
        raise ValueError(
            f"{what}: the sufficient statistics of this embedding are subnormal "
            f"(weight_sum_={weight_sum:.3g}, sample weights near 1e-308 or below) "
            "and adding to them would lose precision; refit with the sample weights "
            "multiplied by a constant (only their ratios matter)"
        )


__all__ = ["Solved", "add_statistics", "check_statistics_normal", "solve_statistics"]
