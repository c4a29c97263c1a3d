"""The arguments of the permutation tests, checked once, up front, for every path (one
kernel or several, Nyström or exact) and every entry point (:func:`~nystrom_kme.two_sample_test`
and the drift detectors), each bad value refused by name (as
scipy.stats.permutation_test checks its own: ``_permutation_test_iv``).

The one owner of: the default rule and the kernels it implies, the mapping from
``kernel`` and ``aggregation`` to a collection and a :class:`~nystrom_kme.two_sample.rules.Rule`,
the level's check, and the rules of ``n_landmarks`` and ``sampler``.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._validation import (
    check_n_permutations,
    check_positive_int,
    check_positive_real,
    check_probability,
    n_threads_arg,
)
from ..kernel_collection import KernelCollection, as_collection
from ..kernels import Kernel, get_kernel
from ..landmark_search import AutoLandmarks, as_auto_spec
from ..sampling import SamplerLike, resolve_sampler
from ._statistics import DEFAULT_MAX_BINS, MIN_BINS_PER_SAMPLE
from .rules import AGGREGATIONS, ONE_KERNEL, RULES, Rule

METHODS = ("auto", "nystrom", "exact")
#: The aggregation of ``kernel="auto"``: the largest standardised MMD^2 (issue 42: one rule
#: over one collection, chosen by power on the widened suite, docs/user_guide/mmd.rst).
DEFAULT_RULE = "maxz"
#: The aggregation of a collection given by the caller.
COLLECTION_RULE = "fuse"
#: The collection of ``kernel="auto"``: Gaussian and l1 Laplacian (MMD-FUSE's Laplace)
#: kernels at three bandwidths each, geometrically from the lower end of MMD-FUSE's grid
#: (half the 5% distance quantile) to the median distance: the narrow kernels see local
#: differences, the median Gaussian a shift, the l1 ones a change in a few coordinates.
DEFAULT_COLLECTION = KernelCollection(("gaussian", "laplacian_l1"), n_bandwidths=3, grid="narrow")
#: The previous default (issue 27; results saved with it load as before): "fuse+median"
#: over Gaussian and Laplacian kernels at the two ends of MMD-FUSE's grid.
PREVIOUS_DEFAULT = ("fuse+median", KernelCollection(("gaussian", "laplacian"), n_bandwidths=2, grid="fuse"))


@dataclass(frozen=True)
class Arguments:
    """The checked arguments: ``kernel`` (one, ``rule`` is ``ONE_KERNEL``) or ``collection``."""

    kernel: Kernel | None
    collection: KernelCollection | None
    rule: Rule
    default: bool  # kernel="auto": the library's default test
    method: str
    n_landmarks: int | None
    auto: AutoLandmarks | None
    sampler: SamplerLike | None
    n_permutations: int
    max_bins: int | None
    temperature: float
    alpha: float
    n_threads: int
    chunk_rows: int | None


def check_level(value: object, name: str = "alpha") -> float:
    """A level in (0, 1) (Python or numpy numbers), else ValueError naming ``name``.

    >>> import numpy as np
    >>> check_level(np.float32(0.05))
    0.05000000074505806
    """
    return check_probability(value, name)


def kernels_and_rule(kernel: object, aggregation: object) -> tuple[Kernel | None, KernelCollection | None, Rule, bool]:
    """(one kernel or None, a collection or None, the rule, whether it is the default test)
    from ``kernel`` and ``aggregation``; ValueError naming the bad one.

    ``kernel="auto"`` is the default test (``DEFAULT_COLLECTION``, "maxz"); with
    another aggregation named, that method's own collection (the 20 kernels of MMD-FUSE's
    grid). A collection (or list) takes "fuse" by default; one kernel takes no aggregation.

    >>> single, coll, rule, default = kernels_and_rule("auto", None)
    >>> single, coll.n_kernels, rule, default
    (None, 6, Rule('maxz'), True)
    """
    if aggregation is not None and aggregation not in AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {AGGREGATIONS} or None, got {aggregation!r}")
    if isinstance(kernel, str) and kernel == "auto":
        name = DEFAULT_RULE if aggregation is None else str(aggregation)
        if name == DEFAULT_RULE:
            return None, DEFAULT_COLLECTION, RULES[name], True
        return None, PREVIOUS_DEFAULT[1] if name == PREVIOUS_DEFAULT[0] else KernelCollection(), RULES[name], True
    collection = as_collection(kernel)
    if collection is not None:
        return None, collection, RULES[COLLECTION_RULE if aggregation is None else str(aggregation)], False
    if not isinstance(kernel, (Kernel, str)):
        raise ValueError(
            f"kernel must be 'auto', a Kernel, a kernel name, a KernelCollection or a list of kernels, got {kernel!r}"
        )
    single = get_kernel(kernel)
    if aggregation is not None:
        raise ValueError(f"aggregation={aggregation!r} combines several kernels; kernel is one ({single!r})")
    return single, None, ONE_KERNEL, False


def given_kernels(single: Kernel | None, collection: KernelCollection | None) -> list[Kernel]:
    """The kernels as given (before any bandwidth is set from data): the one kernel, or
    the collection's families (the unit and bandwidth warnings look at those with a
    numeric bandwidth)."""
    if single is not None:
        return [single]
    return [] if collection is None else list(collection.families)


def check_landmarks(
    n_landmarks: object, sampler: object, method: str, collection: bool
) -> tuple[int | None, AutoLandmarks | None]:
    """The one rule of ``n_landmarks`` and ``sampler`` for every method: an integer >= 1
    (>= 2 for several kernels; capped at the rows with a warning where they are drawn),
    None, "auto" or an :class:`~nystrom_kme.AutoLandmarks`; a sampler name or object
    checked by :func:`~nystrom_kme.resolve_sampler`; both for ``method="nystrom"`` only."""
    if sampler is not None:
        resolve_sampler(sampler)  # type: ignore[arg-type]  # refuses an unknown name or object by name
    if method == "exact":  # ("auto" decides on the rows: landmarks or a sampler asked for mean Nyström)
        if n_landmarks is not None:
            raise ValueError("n_landmarks applies to method='nystrom' only")
        if sampler is not None:
            raise ValueError("sampler applies to method='nystrom' only")
        return None, None
    auto = as_auto_spec(n_landmarks)
    if auto is not None or n_landmarks is None:
        return None, auto
    m = check_positive_int(n_landmarks, "n_landmarks")
    if collection and m < 2:
        raise ValueError(f"a collection of kernels needs n_landmarks >= 2, got {m}")
    return m, None


def check_permutations(n_permutations: object) -> int:
    """B >= 1 whose B + 1 permuted statistics fit in memory, else ValueError naming it."""
    return check_n_permutations(n_permutations)


def check_arguments(
    kernel: object,
    method: object,
    n_landmarks: object,
    n_permutations: object,
    aggregation: object,
    max_bins: object,
    sampler: object,
    temperature: object,
    alpha: object,
    n_threads: object,
    chunk_rows: object,
) -> Arguments:
    """Every argument of two_sample_test but the data and the seed; ValueError naming the
    first bad one."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    single, collection, rule, default = kernels_and_rule(kernel, aggregation)
    n_perm = check_permutations(n_permutations)
    if max_bins is not None:
        max_bins = check_positive_int(max_bins, "max_bins")
        if max_bins < 2 * MIN_BINS_PER_SAMPLE:
            raise ValueError(f"max_bins must be at least {2 * MIN_BINS_PER_SAMPLE}, got {max_bins}")
    temp = check_positive_real(temperature, "temperature")
    if temp != 1.0 and not rule.needs_frobenius:
        raise ValueError(
            f"temperature applies to aggregation='fuse' or 'fuse+median' only, got temperature={temperature!r}"
        )
    level = check_level(alpha)
    if chunk_rows is not None:
        chunk_rows = check_positive_int(chunk_rows, "chunk_rows")
    m, auto = check_landmarks(n_landmarks, sampler, str(method), collection is not None)
    return Arguments(
        kernel=single,
        collection=collection,
        rule=rule,
        default=default,
        method=str(method),
        n_landmarks=m,
        auto=auto,
        sampler=sampler,  # type: ignore[arg-type]  # checked above
        n_permutations=n_perm,
        max_bins=max_bins,
        temperature=temp,
        alpha=level,
        n_threads=n_threads_arg(n_threads),  # type: ignore[arg-type]
        chunk_rows=chunk_rows,
    )


__all__ = [
    "COLLECTION_RULE",
    "DEFAULT_COLLECTION",
    "DEFAULT_MAX_BINS",
    "DEFAULT_RULE",
    "METHODS",
    "PREVIOUS_DEFAULT",
    "Arguments",
    "check_arguments",
    "check_landmarks",
    "check_level",
    "check_permutations",
    "given_kernels",
    "kernels_and_rule",
]
