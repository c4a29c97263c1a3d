"""Merging embeddings fitted on different landmarks: the union of the landmark sets
and the sufficient statistic of the combined embedding on it (used by
:meth:`nystrom_kme.NystromKME.merge`)."""

from __future__ import annotations

import numpy as np

from . import _core
from ._compensated import CompensatedSum
from ._validation import common_dtype
from .kernels import Kernel


def union_rows(blocks: list[np.ndarray]) -> np.ndarray:
    """Rows of the blocks in order, exact duplicates dropped; float32 only if all are.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme._union import union_rows
    >>> union_rows([np.array([[0.0], [1.0]]), np.array([[1.0], [2.0]])]).ravel().tolist()
    [0.0, 1.0, 2.0]
    """
    blocks = common_dtype(*blocks)
    seen: set[bytes] = set()
    keep = []
    for row in np.concatenate(blocks):
        key = row.tobytes()
        if key not in seen:
            seen.add(key)
            keep.append(row)
    return np.ascontiguousarray(np.stack(keep))


def union_sums(
    parts: list[tuple[np.ndarray, np.ndarray, float]], kernel: Kernel, n_threads: int
) -> tuple[np.ndarray, CompensatedSum]:
    """(L_u, W s_u) for embeddings (landmarks L_e, weights alpha_e, weight sum W_e): the
    union L_u of the landmark sets and sum_e W_e K(L_u, L_e) alpha_e, the statistic whose
    solve on L_u writes the combined embedding sum_e (W_e / W) mu_e on L_u."""
    union = union_rows([L for L, _, _ in parts])
    core = kernel.to_core()
    acc = CompensatedSum((union.shape[0],))
    for L, alpha, weight_sum in parts:
        U, Le = common_dtype(union, L)
        acc.add(weight_sum * _core.kernel_sums(U, Le, alpha.reshape(-1, 1), core, n_threads)[:, 0])
    return union, acc


__all__ = ["union_rows", "union_sums"]
