"""Landmark selection policies for Nyström kernel mean embeddings.

A policy chooses which rows of ``X`` become the landmarks of
:class:`~nystrom_kme.NystromKME` through one method,
``select_indices(X, kernel, n_landmarks, rng) -> ndarray[int64]``, and has
scikit-learn style parameters (``get_params``/``set_params``). It is also the one
owner of landmark draws from a row source: the estimator, the landmark search and
the two-sample tests call ``policy.draw(source, ...)`` (and ``nested_draws`` for
``n_landmarks="auto"``), after checking ``policy.needs_data_in_memory`` against a
streamed source; :func:`as_policy` makes a policy of any object with
``select_indices``. String names resolve in :mod:`.registry`. Heavy loops run in
the compiled core; no policy forms the n x n kernel matrix, and each docstring
states its cost.
"""

from .base import (
    CallableSampling,
    FixedLandmarks,
    NestedDraws,
    SamplingPolicy,
    UniformSampling,
    as_policy,
    landmark_points,
    validate_indices,
)
from .cholesky import (
    BlockRPCholeskySampling,
    DPPGreedySampling,
    GreedyCholeskySampling,
    RPCholeskySampling,
)
from .greedy import CortesScottSampling, KernelHerding
from .leverage import RidgeLeverageSampling, ridge_leverage_scores
from .registry import POLICY_CLASSES, SAMPLER_NAMES, Policy, SamplerLike, describe_sampler, resolve_sampler

__all__ = [
    "POLICY_CLASSES",
    "SAMPLER_NAMES",
    "Policy",
    "SamplerLike",
    "describe_sampler",
    "BlockRPCholeskySampling",
    "CallableSampling",
    "CortesScottSampling",
    "DPPGreedySampling",
    "FixedLandmarks",
    "GreedyCholeskySampling",
    "KernelHerding",
    "NestedDraws",
    "RPCholeskySampling",
    "RidgeLeverageSampling",
    "SamplingPolicy",
    "UniformSampling",
    "as_policy",
    "landmark_points",
    "resolve_sampler",
    "ridge_leverage_scores",
    "validate_indices",
]
