"""The landmarks of the permutation tests and the drift detectors, one plan for both:
how many (``n_landmarks``: an integer capped at the rows, None for the default rule,
"auto" for the certified search) and which rows (a sampling policy, never looking at
the labels, repeated points kept once).

* **The default m** (:class:`DefaultLandmarks`): the paper's ceil(sqrt(N) log sqrt(N))
  for N rows, kept between a floor and a ceiling, at most N. One rule; each caller names
  its range (the tests: 1024 to 3000, decided by power in issue 36; the batch detector:
  at most the paper's m for 5000 rows; the online detector: for 20 000 rows).
* **The draw** (:func:`draw_landmarks`): a sampling policy by name or object (the names
  of ``NystromKME(sampler=...)``; None: uniform without replacement). A policy that
  reads the rows (the pivoted-Cholesky family, leverage scores, herding) chooses among a
  pool of at most ``POOL`` x m rows drawn uniformly: its cost and memory (a pool x m
  factor) stay bounded whatever N, and the pool is label-blind too. For several kernels
  the policy looks at the narrowest, the one that needs the landmarks spread most finely.
* **Repeated points** (:func:`distinct_rows`): kept once, in row order (data with few
  distinct rows: a repeat adds nothing to the Nyström space, and the reported m counts
  the points used).
* **The search** (``n_landmarks="auto"``): :func:`~nystrom_kme.landmark_search.search_landmarks`
  on the rows, for the narrowest kernel.

The rows are any :class:`~nystrom_kme.sources.RowSource`: the pooled sample of a test
(label-blind, so the permutation test keeps its level), the reference rows of a drift
detector outside its held-out ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._landmark_count import cap_landmarks
from .bounds import default_n_landmarks
from .kernels import Kernel
from .landmark_search import AutoLandmarks, search_landmarks
from .sampling import SamplerLike, UniformSampling, as_policy, resolve_sampler
from .sources import ArraySource, RowSource

#: A reading policy chooses among at most POOL x m rows (and at most POOL_BYTES of their
#: pool x m factor).
POOL = 20
POOL_BYTES = 512 << 20
#: The policy when ``sampler`` is None, for one kernel or several: uniform without
#: replacement (the Nyström test of Chatalic et al. 2025). Block randomly pivoted Cholesky
#: for the narrowest kernel gained nothing measurable in the statistic study of issue 27
#: (bench/RESULTS.md) and costs a pool of POOL x m rows and its factor.
DEFAULT_SAMPLER = "uniform-without-replacement"


@dataclass(frozen=True)
class DefaultLandmarks:
    """The default m for N rows: the paper's ceil(sqrt(N) log sqrt(N))
    (:func:`~nystrom_kme.default_n_landmarks`) kept between ``low`` and ``high`` (None: no
    ceiling), at most N. ``max_rows``: ``high`` is the paper's m for that many rows
    (:meth:`up_to`), the same as taking the paper's m for min(N, max_rows) rows.

    Examples
    --------
    >>> rule = DefaultLandmarks(1024, 3000)
    >>> rule(2 * 10**6), rule(2 * 10**5), rule(40_000), rule(500)
    (3000, 2730, 1060, 500)
    >>> rule.describe("the N pooled rows")
    'ceil(sqrt(N) log sqrt(N)) of the N pooled rows, kept between 1024 and 3000'
    >>> capped = DefaultLandmarks.up_to(5000)
    >>> capped(10**6), capped(1000), capped.describe()
    (302, 110, "ceil(sqrt(N) log sqrt(N)) of the N rows, at most 302 (the paper's m for 5000 rows)")
    """

    low: int = 1
    high: int | None = None
    max_rows: int | None = None

    @classmethod
    def up_to(cls, max_rows: int) -> DefaultLandmarks:
        """The paper's m for min(N, ``max_rows``) rows."""
        return cls(high=default_n_landmarks(max_rows), max_rows=max_rows)

    def __call__(self, n_rows: int) -> int:
        paper = default_n_landmarks(n_rows)
        return min(n_rows, max(self.low, paper if self.high is None else min(self.high, paper)))

    def describe(self, rows: str = "the N rows") -> str:
        """The rule in words (help texts and docstrings read it here)."""
        bounds = self.bounds()
        return f"ceil(sqrt(N) log sqrt(N)) of {rows}" + (f", {bounds}" if bounds else "")

    def bounds(self) -> str:
        """The range in words ("" without one)."""
        if self.low > 1 and self.high is not None:
            return f"kept between {self.low} and {self.high}"
        if self.low > 1:
            return f"at least {self.low}"
        if self.high is not None:
            why = "" if self.max_rows is None else f" (the paper's m for {self.max_rows} rows)"
            return f"at most {self.high}{why}"
        return ""


def narrowest(kernels: list[Kernel]) -> Kernel:
    """The kernel of smallest bandwidth: the one whose landmarks must be spread most finely."""
    return min(kernels, key=lambda k: float(k.bandwidth))


def plan_landmarks(
    Z: RowSource,
    kernels: list[Kernel],
    n_landmarks: int | AutoLandmarks | None,
    sampler: SamplerLike | None,
    rng: np.random.Generator,
    n_threads: int,
    *,
    default: DefaultLandmarks,
    rows: str,
    stacklevel: int = 3,
) -> np.ndarray:
    """The landmarks (m, d) of rows ``Z`` for ``kernels`` (numeric bandwidths): the search
    of ``n_landmarks`` an :class:`~nystrom_kme.AutoLandmarks` for the narrowest kernel, else
    m rows drawn by ``sampler`` (:func:`draw_landmarks`), m = ``n_landmarks`` or, for None,
    ``default(N)``; an m above the N rows is capped with a UserWarning naming them
    (``rows``, e.g. "the {n} pooled rows"), as every entry point does, at ``stacklevel``
    counted from the caller (as ``warnings.warn``'s: 2 is the caller's caller). Several kernels
    take at least 2 landmarks. ``n_landmarks`` and ``sampler`` are checked by the caller
    (:func:`nystrom_kme.two_sample.engine.check_landmarks`)."""
    if isinstance(n_landmarks, AutoLandmarks):
        policy = as_policy(resolve_sampler(sampler)) if sampler is not None else UniformSampling(replace=False)
        found = search_landmarks(
            Z,
            narrowest(kernels),
            policy,
            rng,
            spec=n_landmarks,
            sample_weight=None,
            solver="auto",
            rcond=0.0,
            n_threads=n_threads,
        )
        return found.landmarks
    N = Z.count_rows()
    m = default(N) if n_landmarks is None else n_landmarks
    m = cap_landmarks(m, N, rows, stacklevel=stacklevel + 2)
    return draw_landmarks(Z, kernels, max(m, 2) if len(kernels) > 1 else m, sampler, rng, n_threads)


def draw_landmarks(
    Z: RowSource,
    kernels: list[Kernel],
    m: int,
    sampler: SamplerLike | None,
    rng: np.random.Generator,
    n_threads: int,
) -> np.ndarray:
    """m rows of Z (in row order, C-contiguous), chosen by ``sampler`` (None:
    DEFAULT_SAMPLER) without the labels, repeated points kept once; every row when
    m >= N."""
    n = Z.count_rows()
    if m >= n:
        return distinct_rows(np.ascontiguousarray(Z.take(np.arange(n))))
    name = sampler if sampler is not None else DEFAULT_SAMPLER
    policy = as_policy(resolve_sampler(name))
    if isinstance(name, str) and n_threads and "n_threads" in policy.get_params():
        policy.set_params(n_threads=n_threads)  # a fresh policy from a name: never the caller's object
    kernel = narrowest(kernels)
    if not policy.needs_data_in_memory:
        picked = policy.draw(Z, kernel, m, rng)
        return distinct_rows(np.ascontiguousarray(Z.take(np.unique(picked))))
    pool_size = min(n, POOL * m, max(m, POOL_BYTES // (8 * m)))
    pool = np.sort(UniformSampling(replace=False).draw(Z, None, pool_size, rng))
    pooled = np.ascontiguousarray(Z.take(pool))
    chosen = policy.draw(ArraySource(pooled), kernel, m, rng)
    return distinct_rows(np.ascontiguousarray(pooled[np.unique(chosen)]))


def distinct_rows(L: np.ndarray) -> np.ndarray:
    """The rows of L without repeated points, the first of each kept, in L's order.

    >>> distinct_rows(np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 0.0]])).tolist()
    [[1.0, 0.0], [0.0, 0.0]]
    """
    _, first = np.unique(L, axis=0, return_index=True)
    if first.size == L.shape[0]:
        return L
    return np.ascontiguousarray(L[np.sort(first)])


__all__ = [
    "DEFAULT_SAMPLER",
    "POOL",
    "POOL_BYTES",
    "DefaultLandmarks",
    "distinct_rows",
    "draw_landmarks",
    "narrowest",
    "plan_landmarks",
]
