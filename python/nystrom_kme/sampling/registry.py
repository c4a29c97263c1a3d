"""Sampler names, and what NystromKME's ``sampler=`` argument resolves to.

=================================  =============================================
``"uniform"`` (default)            uniform with replacement: the paper's guarantee
``"uniform-without-replacement"``  uniform without replacement
``"rls"`` / ``"bless"``            approximate ridge leverage scores (BLESS)
``"rpcholesky"``                   randomly pivoted Cholesky
``"block-rpcholesky"``             accelerated (block, rejection) RPCholesky
``"greedy-cholesky"``              greedy (deterministic) pivoted Cholesky
``"herding"``                      kernel herding
``"cortes-scott"``                 farthest-point (incoherence) selection
``"dpp-greedy"``                   fast greedy MAP inference of a k-DPP
=================================  =============================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Union, cast

import numpy as np
from numpy.typing import ArrayLike

from .base import (
    CallableSampling,
    FixedLandmarks,
    IndexFunction,
    SamplingPolicy,
    SelectsIndices,
    UniformSampling,
)
from .cholesky import (
    BlockRPCholeskySampling,
    DPPGreedySampling,
    GreedyCholeskySampling,
    RPCholeskySampling,
)
from .greedy import CortesScottSampling, KernelHerding
from .leverage import RidgeLeverageSampling

#: What ``sampler=`` takes (see :func:`resolve_sampler`): a name of SAMPLER_NAMES, a
#: policy, an object with ``select_indices``, a function ``f(X, kernel, n_landmarks, rng)``,
#: landmark row indices (1-D ints) or, where the estimator allows it, points (2-D).
SamplerLike = Union[str, SamplingPolicy, SelectsIndices, IndexFunction, ArrayLike]
#: What :func:`resolve_sampler` returns: a policy, or an object with ``select_indices``.
Policy = Union[SamplingPolicy, SelectsIndices]

_NAMES: dict[str, Callable[[], SamplingPolicy]] = {
    "uniform": UniformSampling,
    "uniform-without-replacement": lambda: UniformSampling(replace=False),
    "rls": RidgeLeverageSampling,
    "bless": RidgeLeverageSampling,
    "rpcholesky": RPCholeskySampling,
    "block-rpcholesky": BlockRPCholeskySampling,
    "greedy-cholesky": GreedyCholeskySampling,
    "herding": KernelHerding,
    "cortes-scott": CortesScottSampling,
    "dpp-greedy": DPPGreedySampling,
}

#: The accepted sampler names.
SAMPLER_NAMES: tuple[str, ...] = tuple(_NAMES)
#: The policy classes of the package (what a saved estimator may name).
POLICY_CLASSES: tuple[type[SamplingPolicy], ...] = (
    UniformSampling,
    RidgeLeverageSampling,
    RPCholeskySampling,
    BlockRPCholeskySampling,
    GreedyCholeskySampling,
    KernelHerding,
    CortesScottSampling,
    DPPGreedySampling,
)


def describe_sampler(sampler: SamplerLike, policy: object) -> str:
    """A short name for how landmarks were chosen from the ``sampler`` argument and the
    policy that ran: the sampler's name, the policy's class, or "given points" /
    "given indices".

    Examples
    --------
    >>> from nystrom_kme.sampling import describe_sampler, FixedLandmarks
    >>> describe_sampler("rpcholesky", None), describe_sampler([0, 3], FixedLandmarks([0, 3]))
    ('rpcholesky', 'given indices')
    """
    if isinstance(sampler, str):
        return sampler
    if policy is None:
        return "given points"
    if isinstance(policy, FixedLandmarks):
        return "given indices"
    return type(policy).__name__


def resolve_sampler(sampler: SamplerLike) -> Policy:
    """A policy object from a name, a policy, an object with ``select_indices``, a
    function ``f(X, kernel, n_landmarks, rng)`` or an integer index array.

    A name gives a new policy with default parameters; a policy or any object
    with ``select_indices`` is returned as it is (copying is the caller's
    choice); index arrays become :class:`FixedLandmarks` of an ndarray.

    Raises
    ------
    ValueError
        For an unknown name or an unusable object.

    Examples
    --------
    >>> import nystrom_kme as nk
    >>> nk.resolve_sampler("rpcholesky")
    RPCholeskySampling(tolerance=1e-12, n_threads=None)
    >>> nk.resolve_sampler("uniform-without-replacement")
    UniformSampling(replace=False)
    """
    if isinstance(sampler, str):
        try:
            return _NAMES[sampler]()
        except KeyError:
            raise ValueError(
                f"unknown sampler {sampler!r}; expected one of {sorted(_NAMES)}, "
                "a SamplingPolicy, or landmark indices / points"
            ) from None
    if isinstance(sampler, SamplingPolicy):
        return sampler
    if callable(getattr(sampler, "select_indices", None)):
        return cast(SelectsIndices, sampler)
    if isinstance(sampler, (np.ndarray, list, tuple)):
        return FixedLandmarks(np.asarray(sampler))
    if callable(sampler):
        return CallableSampling(sampler)
    raise ValueError(
        f"sampler must be a name in {sorted(_NAMES)}, a SamplingPolicy, an object "
        f"with select_indices, a function or landmark indices; got {sampler!r}"
    )
