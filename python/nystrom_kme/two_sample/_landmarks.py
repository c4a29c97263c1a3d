"""The landmarks of the Nyström tests: m rows of the pooled sample chosen by a sampling
policy (the same names and objects as ``NystromKME(sampler=...)``), never looking at the
labels, so that the permutation test keeps its level.

A policy that reads the rows (the pivoted-Cholesky family, leverage scores, herding)
chooses among a pool of at most ``POOL`` x m pooled rows drawn uniformly: its cost and
memory (a pool x m factor) stay bounded whatever n, and the pool is label-blind too.
For a collection the policy looks at its narrowest kernel, the one that needs the
landmarks spread most finely.
"""

from __future__ import annotations

import numpy as np

from ..kernels import Kernel
from ..sampling import SamplerLike, UniformSampling, as_policy, resolve_sampler
from ..sources import ArraySource, RowSource

#: A reading policy chooses among at most POOL x m pooled rows (and at most
#: POOL_BYTES of their pool x m factor).
POOL = 20
POOL_BYTES = 512 << 20

#: The policy of the tests when ``sampler`` is None, for one kernel or several: uniform
#: without replacement (the Nyström test of Chatalic et al. 2025). Block randomly pivoted
#: Cholesky for the narrowest kernel gained nothing measurable in the statistic study of
#: issue 27 (bench/RESULTS.md) and costs a pool of POOL x m rows and its factor.
DEFAULT_SAMPLER = "uniform-without-replacement"


def choose_landmarks(
    Z: RowSource,
    kernels: list[Kernel],
    m: int,
    sampler: SamplerLike | None,
    rng: np.random.Generator,
    n_threads: int,
) -> np.ndarray:
    """m rows of the pooled source Z (sorted by row, C-contiguous), chosen without the
    labels by ``sampler`` (None: DEFAULT_SAMPLER), repeated points kept once. Every
    pooled row when m >= n."""
    n = Z.count_rows()
    if m >= n:
        return _distinct(np.ascontiguousarray(Z.take(np.arange(n))))
    name = sampler if sampler is not None else DEFAULT_SAMPLER
    policy = as_policy(resolve_sampler(name))
    if isinstance(name, str) and n_threads and "n_threads" in policy.get_params():
        policy.set_params(n_threads=n_threads)  # a fresh policy from a name: never the caller's object
    narrowest = min(kernels, key=lambda k: float(k.bandwidth))
    if not policy.needs_data_in_memory:
        rows = policy.draw(Z, narrowest, m, rng)
        return _distinct(np.ascontiguousarray(Z.take(np.unique(rows))))
    pool_size = min(n, POOL * m, max(m, POOL_BYTES // (8 * m)))
    pool = np.sort(UniformSampling(replace=False).draw(Z, None, pool_size, rng))
    rows = np.ascontiguousarray(Z.take(pool))
    chosen = policy.draw(ArraySource(rows), narrowest, m, rng)
    return _distinct(np.ascontiguousarray(rows[np.unique(chosen)]))


def _distinct(L: np.ndarray) -> np.ndarray:
    """The landmarks without repeated points (data with few distinct rows): a repeat adds
    nothing to the Nyström space, and ``n_landmarks`` reports the points used."""
    _, first = np.unique(L, axis=0, return_index=True)
    if first.size == L.shape[0]:
        return L
    return np.ascontiguousarray(L[np.sort(first)])


__all__ = ["DEFAULT_SAMPLER", "POOL", "choose_landmarks"]
