"""Landmark selection policies for Nyström kernel mean embeddings.

A policy chooses which rows of ``X`` become the landmarks of
:class:`~nystrom_kme.NystromKME` through one method,
``select_indices(X, kernel, n_landmarks, rng) -> ndarray[int64]``, and has
scikit-learn style parameters (``get_params``/``set_params``). String names
resolve in :mod:`.registry`. Heavy loops run in the compiled core; no policy
forms the n x n kernel matrix, and each docstring states its cost.
"""

from .base import (
    CallableSampling,
    FixedLandmarks,
    SamplingPolicy,
    UniformSampling,
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
from .registry import SAMPLER_NAMES, resolve_sampler

__all__ = [
    "SAMPLER_NAMES", "BlockRPCholeskySampling", "CallableSampling", "CortesScottSampling",
    "DPPGreedySampling", "FixedLandmarks", "GreedyCholeskySampling", "KernelHerding",
    "RPCholeskySampling", "RidgeLeverageSampling", "SamplingPolicy", "UniformSampling",
    "landmark_points", "resolve_sampler", "ridge_leverage_scores", "validate_indices",
]
