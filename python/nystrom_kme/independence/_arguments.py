"""The arguments of the independence tests, checked once, up front, each bad value
refused by name; the data's checks (the same rows, at least 2 of them, neither variable
constant); the default kernels.

The default kernels (``kernel="auto"``): for each variable the Gaussian kernel at
``DEFAULT_SCALES`` times its median distance, and every pair of them (a 3 x 3 grid).
Decided by power (bench/independence.py --grid, bench/RESULTS.md): the narrow end sees
local dependence (the perturbed uniform), the wide end a global one; a wider grid (the
5 x 5 of HSICAgg) paid for its corrected p-values without a gain.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_positive_int, n_threads_arg
from ..kernel_collection import KernelCollection
from ..kernels import Gaussian, Kernel, get_kernel, resolve_kernel
from ..landmark_search import AutoLandmarks
from ..sampling import SamplerLike
from ..sources import RowSource
from ..two_sample.engine import check_landmarks, check_level, check_permutations
from ..two_sample.rules import ONE_KERNEL, RULES, Rule
from .results import AGGREGATIONS

METHODS = ("auto", "nystrom", "exact")
#: Bandwidths of ``kernel="auto"``: these multiples of each variable's median distance.
DEFAULT_SCALES = (0.5, 1.0, 2.0)
#: The aggregation of several pairs of kernels (HSICAgg's: the smallest marginal
#: p-value, calibrated by the same permutations).
DEFAULT_AGGREGATION = "mmdagg"

#: One variable's kernels as given: "auto" (the scales), or kernels and names.
KernelsLike = object


@dataclass(frozen=True)
class Arguments:
    """The checked arguments of :func:`~nystrom_kme.independence_test`."""

    kernels_x: list[Kernel] | None  # None: the default grid
    kernels_y: list[Kernel] | None
    rule: Rule
    method: str
    n_landmarks: int | None
    auto: AutoLandmarks | None
    sampler: SamplerLike | None
    max_components: int | None
    n_permutations: int
    alpha: float
    n_threads: int
    chunk_rows: int | None


def _one_side(value: object, name: str) -> list[Kernel] | None:
    """A variable's kernels: None for "auto", a list of kernels from a kernel, a name, a
    list of them or a KernelCollection's families at its bandwidths (resolved later)."""
    if isinstance(value, str) and value == "auto":
        return None
    if isinstance(value, KernelCollection):
        raise ValueError(f"{name}: give the kernels as a list (a KernelCollection sets its grid for two samples)")
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    if not items:
        raise ValueError(f"{name} must name at least one kernel")
    out = []
    for item in items:
        if not isinstance(item, (Kernel, str)):
            raise ValueError(f"{name} must be 'auto', a Kernel, a kernel name or a list of them, got {item!r}")
        out.append(get_kernel(item))
    return out


def kernels_of(kernel: object) -> tuple[list[Kernel] | None, list[Kernel] | None]:
    """(X's kernels, Y's kernels) from ``kernel``: "auto", one kernel or name (the same
    family for both, each at its own median bandwidth unless given), or a pair (X's, Y's),
    each "auto", a kernel, a name or a list of them."""
    if isinstance(kernel, tuple) and len(kernel) == 2:
        return _one_side(kernel[0], "kernel[0] (X's kernels)"), _one_side(kernel[1], "kernel[1] (Y's kernels)")
    if isinstance(kernel, (str, Kernel)):
        one = _one_side(kernel, "kernel")
        return one, None if one is None else list(one)
    raise ValueError(
        f"kernel must be 'auto', a Kernel, a kernel name or a pair (X's kernels, Y's kernels), got {kernel!r}"
    )


def check_arguments(
    kernel: object,
    method: object,
    n_landmarks: object,
    sampler: object,
    max_components: object,
    n_permutations: object,
    aggregation: object,
    alpha: object,
    n_threads: object,
    chunk_rows: object,
) -> Arguments:
    """Every argument of independence_test but the data and the seed; ValueError naming
    the first bad one."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    kx, ky = kernels_of(kernel)
    pairs = (len(DEFAULT_SCALES) if kx is None else len(kx)) * (len(DEFAULT_SCALES) if ky is None else len(ky))
    if aggregation is not None and aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS} or None, got {aggregation!r}")
    rule: Rule
    if pairs == 1:
        if aggregation is not None:
            raise ValueError(f"aggregation={aggregation!r} combines several pairs of kernels; kernel is one pair")
        rule = ONE_KERNEL
    else:
        rule = RULES[DEFAULT_AGGREGATION if aggregation is None else str(aggregation)]
    n_perm = check_permutations(n_permutations)
    level = check_level(alpha)
    m, auto = check_landmarks(n_landmarks, sampler, str(method), False)
    cap = None if max_components is None else check_positive_int(max_components, "max_components")
    if method == "exact" and cap is not None:
        raise ValueError("max_components applies to method='nystrom' only (the exact test keeps every direction)")
    if chunk_rows is not None:
        chunk_rows = check_positive_int(chunk_rows, "chunk_rows")
    return Arguments(
        kernels_x=kx,
        kernels_y=ky,
        rule=rule,
        method=str(method),
        n_landmarks=m,
        auto=auto,
        sampler=sampler,  # type: ignore[arg-type]  # checked by check_landmarks
        max_components=cap,
        n_permutations=n_perm,
        alpha=level,
        n_threads=n_threads_arg(n_threads),  # type: ignore[arg-type]
        chunk_rows=chunk_rows,
    )


def same_rows(sx: RowSource, sy: RowSource, names: tuple[str, str] = ("X", "Y")) -> int:
    """The common number of rows (at least 2), else ValueError naming both counts."""
    n1, n2 = sx.count_rows(), sy.count_rows()
    if n1 != n2:
        raise ValueError(
            f"{names[0]} and {names[1]} must hold the same rows (pairs): {names[0]} has {n1}, {names[1]} {n2}"
        )
    if n1 < 2:
        raise ValueError(f"{names[0]} and {names[1]} need at least 2 rows, got {n1}")
    return n1


def check_not_constant(src: RowSource, name: str) -> None:
    """ValueError when every row of ``src`` is the same point: no kernel sees any
    variation, so no test could reject (one pass over the rows, min and max per column)."""
    low = high = None
    for _, block in src.chunks():
        b_low, b_high = block.min(axis=0), block.max(axis=0)
        low = b_low if low is None else np.minimum(low, b_low)
        high = b_high if high is None else np.maximum(high, b_high)
        if bool(np.any(high > low)):
            return
    raise ValueError(f"{name} is constant (every row the same point): nothing to test against")


def resolve(kernels: list[Kernel] | None, src: RowSource, rng: np.random.Generator) -> list[Kernel]:
    """Numeric bandwidths: the median heuristic on the variable's own rows (one draw for
    all its kernels), the default grid for None."""
    if kernels is None:
        median = float(resolve_kernel(Gaussian(), [src], rng).bandwidth)
        return [Gaussian(scale * median) for scale in DEFAULT_SCALES]
    if all(k.is_resolved for k in kernels):
        return list(kernels)
    out = []
    medians: dict[str | None, float] = {}
    for k in kernels:
        if k.is_resolved:
            out.append(k)
            continue
        if k.metric not in medians:
            medians[k.metric] = float(resolve_kernel(k, [src], rng).bandwidth)
        out.append(k.with_bandwidth(medians[k.metric]))
    return out


__all__ = [
    "DEFAULT_AGGREGATION",
    "DEFAULT_SCALES",
    "METHODS",
    "Arguments",
    "check_arguments",
    "check_not_constant",
    "kernels_of",
    "resolve",
    "same_rows",
]
