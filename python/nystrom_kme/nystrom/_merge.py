"""Merging Nyström embeddings (for :meth:`nystrom_kme.NystromKME.merge`): on the same
landmarks their sufficient statistics add up; on different ones, the union of the
landmark sets and the sufficient statistic of the combined embedding on it."""

from __future__ import annotations

import numpy as np

from .. import _core
from .._compensated import CompensatedSum
from .._validation import common_dtype
from ..kernels import Kernel


def union_rows(blocks: list[np.ndarray]) -> np.ndarray:
    """Rows of the blocks in order, exact duplicates dropped; float32 only if all are.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.nystrom._merge import union_rows
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


def merged_sums(
    parts: list[tuple[np.ndarray, np.ndarray, float, CompensatedSum]], kernel: Kernel, n_threads: int
) -> tuple[np.ndarray, CompensatedSum]:
    """(landmarks, W s) of the combined embedding of parts (landmarks L_e, weights
    alpha_e, weight sum W_e, sufficient statistic s_e): the statistics added when every
    L_e equals the first (same shape, dtype and values), else :func:`union_sums`.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme._compensated import CompensatedSum
    >>> from nystrom_kme.nystrom._merge import merged_sums
    >>> L = np.zeros((1, 1))
    >>> part = (L, np.ones(1), 2.0, CompensatedSum.of(np.array([2.0])))
    >>> merged_sums([part, part], nk.Gaussian(1.0), 1)[1].value().tolist()
    [4.0]
    """
    first = parts[0][0]
    if all(L.shape == first.shape and L.dtype == first.dtype and np.array_equal(L, first) for L, _, _, _ in parts):
        acc = parts[0][3].copy()
        for _, _, _, sums in parts[1:]:
            acc.merge(sums)
        return first, acc
    return union_sums([(L, alpha, weight_sum) for L, alpha, weight_sum, _ in parts], kernel, n_threads)


__all__ = ["merged_sums", "union_rows", "union_sums"]
