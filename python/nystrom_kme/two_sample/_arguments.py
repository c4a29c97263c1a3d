"""The arguments of :func:`~nystrom_kme.two_sample_test`, checked once, up front, for every
path (one kernel or several, Nyström or exact), each bad value refused by name (as
scipy.stats.permutation_test checks its own: ``_permutation_test_iv``)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from .._validation import check_positive_int, n_threads_arg
from ..kernel_collection import KernelCollection, as_collection
from ..kernels import Kernel, get_kernel
from ..landmark_search import AutoLandmarks, as_auto_spec
from ._statistics import DEFAULT_MAX_BINS, MIN_BINS_PER_SAMPLE
from .rules import AGGREGATIONS

METHODS = ("nystrom", "exact")
#: The aggregation of ``kernel="auto"`` (a collection given by the caller: "fuse").
DEFAULT_RULE = "fuse+median"


@dataclass(frozen=True)
class Arguments:
    """The checked arguments; ``kernel`` a Kernel (one) or ``collection`` a collection."""

    kernel: Kernel | None
    collection: KernelCollection | None
    default: bool  # kernel="auto": the library's default test
    method: str
    n_landmarks: int | None
    auto: AutoLandmarks | None
    n_permutations: int
    aggregation: str | None
    max_bins: int | None
    temperature: float
    alpha: float
    n_threads: int
    chunk_rows: int | None


def _real(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def check_arguments(
    kernel: object,
    method: object,
    n_landmarks: object,
    n_permutations: object,
    aggregation: object,
    max_bins: object,
    temperature: object,
    alpha: object,
    n_threads: object,
    chunk_rows: object,
    default_collection: KernelCollection,
) -> Arguments:
    """Every argument of two_sample_test but the data, the sampler and the seed; ValueError
    naming the first bad one. ``kernel="auto"`` is ``default_collection``."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if isinstance(kernel, str) and kernel == "auto":
        # the default test; another aggregation named: that method's own collection (the
        # 20 kernels of MMD-FUSE's grid)
        collection: KernelCollection | None = (
            default_collection if aggregation in (None, DEFAULT_RULE) else KernelCollection()
        )
    else:
        collection = as_collection(kernel)
    single: Kernel | None = None
    if collection is None:
        if not isinstance(kernel, (Kernel, str)):
            raise ValueError(
                f"kernel must be 'auto', a Kernel, a kernel name, a KernelCollection or a list of kernels, "
                f"got {kernel!r}"
            )
        single = get_kernel(kernel)
    n_perm = check_positive_int(n_permutations, "n_permutations")
    if aggregation is not None and aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS} or None, got {aggregation!r}")
    if single is not None and aggregation is not None:
        raise ValueError(f"aggregation={aggregation!r} combines several kernels; kernel is one ({single!r})")
    if max_bins is not None:
        max_bins = check_positive_int(max_bins, "max_bins")
        if max_bins < 2 * MIN_BINS_PER_SAMPLE:
            raise ValueError(f"max_bins must be at least {2 * MIN_BINS_PER_SAMPLE}, got {max_bins}")
    temp = _real(temperature, "temperature")
    if not temp > 0:
        raise ValueError(f"temperature must be a positive number, got {temperature!r}")
    rule = aggregation
    if rule is None and collection is not None:
        rule = DEFAULT_RULE if isinstance(kernel, str) and kernel == "auto" else "fuse"
    if temp != 1.0 and rule not in ("fuse", "fuse+median"):
        raise ValueError(
            f"temperature applies to aggregation='fuse' or 'fuse+median' only, got temperature={temperature!r}"
        )
    level = _real(alpha, "alpha")
    if not 0 < level < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if chunk_rows is not None:
        chunk_rows = check_positive_int(chunk_rows, "chunk_rows")
    auto = as_auto_spec(n_landmarks)
    m: int | None = None
    if auto is not None:
        if collection is not None:
            raise ValueError(
                "n_landmarks='auto' is for a single kernel; give a collection an integer n_landmarks or None"
            )
        if method == "exact":
            raise ValueError("n_landmarks applies to method='nystrom' only")
    elif n_landmarks is not None:
        if method == "exact":
            raise ValueError("n_landmarks applies to method='nystrom' only")
        m = check_positive_int(n_landmarks, "n_landmarks")
        if collection is not None and m < 2:
            raise ValueError(f"a collection of kernels needs n_landmarks >= 2, got {m}")
    return Arguments(
        kernel=single,
        collection=collection,
        default=isinstance(kernel, str) and kernel == "auto",
        method=str(method),
        n_landmarks=m,
        auto=auto,
        n_permutations=n_perm,
        aggregation=rule,
        max_bins=max_bins,
        temperature=temp,
        alpha=level,
        n_threads=n_threads_arg(n_threads),  # type: ignore[arg-type]
        chunk_rows=chunk_rows,
    )


__all__ = ["DEFAULT_MAX_BINS", "DEFAULT_RULE", "METHODS", "Arguments", "check_arguments"]
