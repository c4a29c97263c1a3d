"""The fitted state of a :class:`~nystrom_kme.NystromKME` as data: the attributes a fit
sets (every one in one step), the state :mod:`nystrom_kme.persistence` saves, the
attributes rebuilt from a loaded state, and the fitted embedding's summary and repr."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .._compensated import CompensatedSum
from .._scaling import Scaling, scaling_from_state, scaling_state, scaling_summary
from ..kernels import Kernel
from ..sampling import Policy, SamplerLike, describe_sampler


def fitted_attributes(
    *,
    kernel: Kernel,
    indices: np.ndarray | None,
    policy: Policy | None,
    landmarks: np.ndarray,
    weights: np.ndarray,
    n_samples: int,
    solver: str,
    rank: int,
    sums: CompensatedSum,
    weight_sum: float,
    report: object,
    scaling: Scaling | None,
) -> dict[str, Any]:
    """The fitted attributes (names as the estimator's) of an embedding with these
    landmarks (m, d), weights (m,) and sufficient statistics."""
    return {
        "kernel_": kernel,
        "landmark_indices_": indices,
        "sampler_": policy,
        "landmarks_": landmarks,
        "support_": landmarks,
        "weights_": weights,
        "n_samples_": n_samples,
        "n_features_in_": landmarks.shape[1],
        "solver_": solver,
        "rank_": rank,
        "_sums": sums,
        "s_sum_": sums.value(),
        "weight_sum_": weight_sum,
        "n_landmarks_report_": report,
        "scaling_": scaling,
    }


def state_of(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """The fitted state as data from the attributes (``vars`` of a fitted estimator, read
    at once): ``kernel``, ``landmarks`` (m, d), ``weights``, ``s_sum``, ``s_comp`` (m,)
    (the compensated statistic, kept apart so that ``partial_fit`` and ``merge`` continue
    exactly), ``weight_sum``, ``n_samples``, ``solver``, ``rank``, ``landmark_indices``,
    ``sampler`` (the policy used), ``feature_names`` (``feature_names_in_``, or None
    without names), and with ``standardize=`` ``scaling_kind``, ``scaling_center`` and
    ``scaling_scale`` (d,) (:func:`~nystrom_kme._scaling.scaling_state`)."""
    st = attributes
    return {
        "kernel": st["kernel_"],
        "landmarks": st["landmarks_"],
        "weights": st["weights_"],
        "s_sum": st["_sums"].sum,
        "s_comp": st["_sums"].comp,
        "weight_sum": st["weight_sum_"],
        "n_samples": st["n_samples_"],
        "solver": st["solver_"],
        "rank": st["rank_"],
        "landmark_indices": st.get("landmark_indices_"),
        "sampler": st.get("sampler_"),
        "feature_names": st.get("feature_names_in_"),
        **scaling_state(st.get("scaling_")),
    }


def attributes_of_state(state: dict[str, Any]) -> dict[str, Any]:
    """The fitted attributes of the state :func:`state_of` returns (its inverse, but for
    ``feature_names``, which the estimator keeps by its own rule; no report); the scaling
    is checked against the landmarks' width."""
    sums = CompensatedSum(state["s_sum"].shape)
    sums.sum, sums.comp = state["s_sum"], state["s_comp"]
    landmarks = state["landmarks"]
    scaling = scaling_from_state(state)
    if scaling is not None:
        scaling.check(landmarks.shape[1])
    return fitted_attributes(
        kernel=state["kernel"],
        indices=state["landmark_indices"],
        policy=state["sampler"],
        landmarks=landmarks,
        weights=state["weights"],
        n_samples=state["n_samples"],
        solver=state["solver"],
        rank=state["rank"],
        sums=sums,
        weight_sum=state["weight_sum"],
        report=None,
        scaling=scaling,
    )


def summary_of(attributes: Mapping[str, Any], sampler: SamplerLike, norm: float) -> dict[str, Any]:
    """What ``nystrom-kme info`` prints of a fitted embedding (its attributes, its
    ``sampler`` parameter and its RKHS norm) as JSON data."""
    st = attributes
    landmarks, scaling = st["landmarks_"], st.get("scaling_")
    return {
        "kernel": repr(st["kernel_"]),
        "n_landmarks": int(landmarks.shape[0]),
        "n_features": int(landmarks.shape[1]),
        "dtype": landmarks.dtype.name,
        "n_samples": int(st["n_samples_"]),
        "weight_sum": float(st["weight_sum_"]),
        "sampler": describe_sampler(sampler, st.get("sampler_")),
        "solver": st["solver_"],
        "rank": int(st["rank_"]),
        "norm": norm,
        **scaling_summary(scaling),
    }


def describe(attributes: Mapping[str, Any], sampler: SamplerLike) -> str:
    """The fitted part of the estimator's repr."""
    st = attributes
    return (
        f"{st['landmarks_'].shape[0]} landmarks in R^{st['n_features_in_']}, "
        f"n_samples={st['n_samples_']}, kernel={st['kernel_']!r}, "
        f"sampler={describe_sampler(sampler, st.get('sampler_'))!r}, solver={st['solver_']!r}, "
        f"rank={st['rank_']}"
    )


__all__ = ["attributes_of_state", "describe", "fitted_attributes", "state_of", "summary_of"]
