"""Collections of kernels for aggregated two-sample tests: radial kernels at a grid of
bandwidths set from the pooled sample's inter-point distances.

The default follows MMD-FUSE (Biggs, Schrab and Gretton, NeurIPS 2023, and its public
code): Gaussian and Laplacian kernels at 10 bandwidths each, evenly spaced from half the
5% quantile to twice the 95% quantile of the pairwise distances of the pooled sample.
``grid="geometric"`` spaces the same range geometrically, as MMDAgg does (Schrab et al.,
JMLR 2023; without its absolute floors of 0.1 and 0.3, which assume unit-scale data).
``grid="narrow"`` spaces bandwidths geometrically from the same lower end up to the median
distance (the median heuristic's): the default test's kernels (issue 42).
Each family's grid comes from the distances its kernel is a function of
(``Kernel.metric``): Euclidean for the Gaussian and the (Euclidean) Laplacian, l1 for
:class:`~nystrom_kme.LaplacianL1`, all from the same subset of rows. An l1 family is
MMD-FUSE's Laplace kernel exp(-sqrt(2) ||x - y||_1 / s) at the grid's s (as its code and
MMDAgg's), i.e. ``LaplacianL1(s / sqrt(2))``. One difference from those papers,
label-blind so the tests keep their level: the distances are those of a random subset of
at most ``subset`` pooled rows (all pairs of n = 10^6 rows are out of reach).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from ._validation import RandomStateLike, check_positive_int, check_random_state
from .kernels import KERNEL_CLASSES, MEDIAN_SUBSET, METRICS, Gaussian, Kernel, get_kernel, pairwise_distances
from .sources import SourceLike, as_source

#: Rows of the pooled sample whose pairwise distances set the grid (about 5·10^5 pairs): as
#: many as the median heuristic looks at.
GRID_SUBSET = MEDIAN_SUBSET
#: The kernel families and the bandwidths per family of a collection by default (MMD-FUSE's).
FAMILIES = ("gaussian", "laplacian")
N_BANDWIDTHS = 10
#: The quantiles of the pairwise distances the grid spans (then widened by 2 each way).
GRID_QUANTILES = (0.05, 0.95)
GRIDS = ("fuse", "geometric", "narrow")
#: MMD-FUSE's Laplace kernel is exp(-sqrt(2) ||x - y||_1 / s) at the grid's s (its code, as
#: MMDAgg's): an l1 family's kernels are LaplacianL1(s / L1_FACTOR).
L1_FACTOR = math.sqrt(2.0)


def distance_statistics(distances: np.ndarray) -> tuple[float, float, float]:
    """The median, 5% and 95% order statistics ``sorted[floor(q len)]`` (MMD-FUSE's
    quantiles) of pairwise distances, zero distances (duplicate rows) counted as the
    median. When most distances are 0 they come from the non-zero ones; when all are,
    every one is 1 (one point: every bandwidth gives the same kernel values). One
    partition of the distances in the common case (no zero).

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.kernel_collection import distance_statistics
    >>> distance_statistics(np.arange(1.0, 101.0)), distance_statistics(np.zeros(3))
    ((50.5, 6.0, 96.0), (1.0, 1.0, 1.0))
    """
    d = np.asarray(distances, dtype=np.float64)
    if d.size == 0 or not np.isfinite(d).all():
        raise ValueError("the bandwidth grid needs finite pairwise distances of at least 2 rows")
    zeros = int(np.count_nonzero(d == 0))
    if zeros == d.size:
        return 1.0, 1.0, 1.0
    if zeros > d.size // 2:  # a zero median: most rows repeat
        d = d[d > 0]
        zeros = 0
    size = d.size
    at = [int(math.floor(size * q)) for q in GRID_QUANTILES]
    mid = [size // 2] if size % 2 else [size // 2 - 1, size // 2]
    if zeros:
        median = float(np.median(d))
        d = np.partition(np.where(d == 0, median, d), at)
    else:
        d = np.partition(d, sorted({*at, *mid}))
        median = float(np.mean(d[mid]))  # numpy's median: the mean of the middle pair
    return median, float(d[at[0]]), float(d[at[1]])


def bandwidth_grid(distances: np.ndarray, n_bandwidths: int, grid: str = "fuse") -> np.ndarray:
    """Bandwidths from half the 5% quantile to twice the 95% quantile of ``distances``
    (see :func:`distance_statistics`), evenly (``"fuse"``, as MMD-FUSE's code) or
    geometrically (``"geometric"``) spaced; ``"narrow"``: geometrically from half the 5%
    quantile to the median (one bandwidth: the lower end).

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.kernel_collection import bandwidth_grid
    >>> bandwidth_grid(np.arange(1.0, 101.0), 3).tolist()      # 6 / 2 ... 96 * 2
    [3.0, 97.5, 192.0]
    >>> bandwidth_grid(np.arange(1.0, 101.0), 3, "narrow").round(3).tolist()   # 3 ... the median 50.5
    [3.0, 12.309, 50.5]
    """
    return _grid_between(distance_statistics(distances), n_bandwidths, grid)


def _grid_between(statistics: tuple[float, float, float], n_bandwidths: int, grid: str) -> np.ndarray:
    """The grid of n_bandwidths from (median, 5%, 95%) distance quantiles; one bandwidth:
    the geometric middle of the range ("fuse", "geometric") or its lower end ("narrow")."""
    median, q_low, q_high = statistics
    low, high = q_low / 2, (median if grid == "narrow" else q_high * 2)
    if n_bandwidths == 1:
        return np.array([low if grid == "narrow" else math.sqrt(low * high)])
    if grid == "fuse":
        return np.linspace(low, high, n_bandwidths)
    return np.geomspace(low, high, n_bandwidths)


class KernelCollection:
    """A collection of radial kernels for an aggregated test.

    Either kernel families at a grid of bandwidths set from the data
    (``KernelCollection(("gaussian", "laplacian"), n_bandwidths=10)``, the MMD-FUSE
    default), or a fixed list of kernels with numeric bandwidths
    (``KernelCollection([nk.Gaussian(0.5), nk.Laplacian(2.0)])``).

    Parameters
    ----------
    kernels : sequence of str or Kernel, default=("gaussian", "laplacian")
        Radial kernels: names or Kernel instances. Those whose bandwidth is "median"
        (every name) get the grid, from the distances of their metric (l1 for
        ``"laplacian_l1"``, Euclidean otherwise; an l1 family at s / sqrt(2) for each s of
        the grid, MMD-FUSE's Laplace kernel); those with a numeric bandwidth are used as
        given.
    n_bandwidths : int, default=10
        Bandwidths per kernel family on the grid (>= 1; 1 puts it at the grid's
        geometric middle, or for ``"narrow"`` at its lower end).
    grid : {"fuse", "geometric", "narrow"}, default="fuse"
        Even spacing from half the 5% to twice the 95% distance quantile (MMD-FUSE),
        geometric spacing of the same range (as MMDAgg), or geometric spacing from half
        the 5% quantile to the median distance (the default test's: the median-bandwidth
        kernel is the grid's upper end).
    subset : int, default=1000
        Pooled rows (drawn at random, without replacement, label-blind) whose pairwise
        distances set the grid.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> Z = np.random.default_rng(0).normal(size=(500, 2))
    >>> kc = nk.KernelCollection(n_bandwidths=3).resolve(Z, random_state=0)
    >>> len(kc), kc.is_resolved
    (6, True)
    >>> [type(k).__name__ for k in kc]
    ['Gaussian', 'Gaussian', 'Gaussian', 'Laplacian', 'Laplacian', 'Laplacian']
    >>> nk.KernelCollection([nk.Gaussian(0.5), nk.Laplacian(2.0)])
    KernelCollection([Gaussian(bandwidth=0.5), Laplacian(bandwidth=2.0)])
    """

    def __init__(
        self,
        kernels: Sequence[Kernel | str] = FAMILIES,
        *,
        n_bandwidths: int = N_BANDWIDTHS,
        grid: str = GRIDS[0],
        subset: int = GRID_SUBSET,
    ) -> None:
        if isinstance(kernels, (str, Kernel)):
            kernels = (kernels,)
        try:
            resolved = [get_kernel(k) for k in kernels]
        except TypeError:
            raise ValueError(f"kernels must be a sequence of kernels or names, got {kernels!r}") from None
        if not resolved:
            raise ValueError("kernels must name at least one kernel")
        for k in resolved:
            if not k.radial:
                radial = ", ".join(c.__name__ for c in KERNEL_CLASSES if c.radial)
                raise ValueError(f"kernels must be radial ({radial}); {k!r} is not")
        if grid not in GRIDS:
            raise ValueError(f"grid must be one of {GRIDS}, got {grid!r}")
        self.families = tuple(resolved)
        self.n_bandwidths = check_positive_int(n_bandwidths, "n_bandwidths")
        self.grid = grid
        self.subset = check_positive_int(subset, "subset")
        if subset < 2:
            raise ValueError(f"subset must be at least 2, got {subset!r}")

    @property
    def is_resolved(self) -> bool:
        """True when every kernel has a numeric bandwidth (nothing left to set from data)."""
        return all(k.is_resolved for k in self.families)

    @property
    def n_kernels(self) -> int:
        """How many kernels the collection holds once resolved (``n_bandwidths`` per family
        that takes the grid, one per kernel with a numeric bandwidth).

        Examples
        --------
        >>> import nystrom_kme as nk
        >>> nk.KernelCollection(("gaussian", nk.Laplacian(1.0)), n_bandwidths=3).n_kernels
        4
        """
        return sum(1 if k.is_resolved else self.n_bandwidths for k in self.families)

    @property
    def kernels(self) -> tuple[Kernel, ...]:
        """The kernels, in order (families with a grid expand once resolved)."""
        if not self.is_resolved:
            raise ValueError("the collection's bandwidths are set from data: call resolve(X) first")
        return self.families

    def __len__(self) -> int:
        return len(self.kernels)

    def __iter__(self) -> Iterator[Kernel]:
        return iter(self.kernels)

    def __getitem__(self, index: int) -> Kernel:
        return self.kernels[index]

    @property
    def metrics(self) -> tuple[str, ...]:
        """The distances the grid reads: the metric of each family that takes a grid
        ("euclidean", "l1"), in the order of ``METRICS``; () when every kernel has a
        bandwidth.

        Examples
        --------
        >>> import nystrom_kme as nk
        >>> nk.KernelCollection(("gaussian", "laplacian_l1")).metrics
        ('euclidean', 'l1')
        """
        wanted = {k.metric for k in self.families if not k.is_resolved}
        return tuple(m for m in METRICS if m in wanted)

    def resolve(
        self, X: SourceLike, random_state: RandomStateLike = None, *, with_median: bool = False
    ) -> KernelCollection:
        """This collection with every grid set from the rows of X (an array or any row
        source, (n, d)): the pairwise distances of up to ``subset`` rows drawn at random
        without replacement (only those rows are read), in each family's metric (one
        distance pass per metric, over the same rows). A resolved collection is returned
        as is, and nothing is drawn. ``with_median``: and the median-bandwidth Gaussian
        of the same rows' Euclidean distances appended as the last kernel (the default
        test's; the distances are then drawn even for a resolved collection)."""
        if not with_median and self.is_resolved:
            return self
        metrics = self.metrics
        if with_median and "euclidean" not in metrics:
            metrics = ("euclidean", *metrics)
        distances = self._distances(X, random_state, metrics)
        resolved = self.with_distances(distances)
        if not with_median:
            return resolved
        median, _, _ = distance_statistics(distances["euclidean"])
        if Gaussian(median) in resolved.kernels:  # the "narrow" grid's upper end: no second copy
            return resolved
        return KernelCollection([*resolved, Gaussian(median)])

    def distances(self, X: SourceLike, random_state: RandomStateLike = None, metric: str = "euclidean") -> np.ndarray:
        """The pairwise distances that set the grid of the families of ``metric``: those
        of up to ``subset`` rows of X drawn at random without replacement (only those
        rows are read)."""
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
        return self._distances(X, random_state, (metric,))[metric]

    def _distances(self, X: SourceLike, random_state: RandomStateLike, metrics: Sequence[str]) -> dict[str, np.ndarray]:
        """{metric: the distances of one draw of rows}: the rows read once."""
        src = as_source(X, "X")
        n = src.count_rows()
        if n < 2:
            raise ValueError("the bandwidth grid needs at least 2 rows")
        rng = check_random_state(random_state)
        rows = np.sort(rng.choice(n, size=self.subset, replace=False)) if n > self.subset else np.arange(n)
        sample = src.take(rows)
        return {metric: pairwise_distances(sample, metric) for metric in metrics}

    def with_distances(self, distances: np.ndarray | Mapping[str, np.ndarray]) -> KernelCollection:
        """This collection with every grid set from the given pairwise distances: an
        array (Euclidean distances), or a mapping from each metric of :attr:`metrics` to
        its distances (l1 families need their l1 distances).

        Examples
        --------
        >>> import numpy as np, nystrom_kme as nk
        >>> kc = nk.KernelCollection(("gaussian", "laplacian_l1"), n_bandwidths=2)
        >>> d = {"euclidean": np.arange(1.0, 101.0), "l1": 2 * np.arange(1.0, 101.0)}
        >>> [round(k.bandwidth, 3) for k in kc.with_distances(d)]   # l1: s / sqrt(2)
        [3.0, 192.0, 4.243, 271.529]
        """
        if not isinstance(distances, Mapping):
            distances = {"euclidean": np.asarray(distances)}
        missing = [m for m in self.metrics if m not in distances]
        if missing:
            raise ValueError(
                f"distances must give the {', '.join(missing)} distances of the families "
                f"{[k.name for k in self.families if k.metric in missing and not k.is_resolved]}: "
                f"a mapping {{metric: distances}} for the metrics {self.metrics}"
            )
        quantiles = {metric: distance_statistics(distances[metric]) for metric in self.metrics}
        return self._with_quantiles(quantiles)

    def _with_quantiles(self, quantiles: Mapping[str, tuple[float, float, float]]) -> KernelCollection:
        """Every grid set from its metric's median, 5% and 95% distance quantiles
        (bandwidth_grid)."""
        kernels: list[Kernel] = []
        for k in self.families:
            if k.is_resolved:
                kernels.append(k)
                continue
            bandwidths = _grid_between(quantiles[str(k.metric)], self.n_bandwidths, self.grid)
            scale = 1.0 / L1_FACTOR if k.metric == "l1" else 1.0
            kernels.extend(k.with_bandwidth(float(b) * scale) for b in bandwidths)
        return KernelCollection(kernels)

    def summary(self) -> str:
        """One line per kernel family: its name and bandwidth range."""
        if not self.is_resolved:
            names = ", ".join(type(k).__name__ for k in self.families)
            return f"{names}: {self.n_bandwidths} bandwidths each on the {self.grid!r} grid (set from the data)"
        groups: dict[str, list[float]] = {}
        for k in self.kernels:
            groups.setdefault(k.family, []).append(float(k.bandwidth))
        return "; ".join(
            f"{family} x {len(bw)}, bandwidth " + (f"{min(bw):.4g} to {max(bw):.4g}" if len(bw) > 1 else f"{bw[0]:.4g}")
            for family, bw in groups.items()
        )

    def __repr__(self) -> str:
        if self.is_resolved:
            return f"KernelCollection([{', '.join(repr(k) for k in self.families)}])"
        names = tuple(repr(k) if k.is_resolved else k.name for k in self.families)
        return f"KernelCollection({names!r}, n_bandwidths={self.n_bandwidths}, grid={self.grid!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, KernelCollection)
            and self.families == other.families
            and (
                self.is_resolved
                or (self.n_bandwidths, self.grid, self.subset) == (other.n_bandwidths, other.grid, other.subset)
            )
        )

    def __hash__(self) -> int:
        # as __eq__: a resolved collection is its kernels, whatever grid built them
        return hash(self.families if self.is_resolved else (self.families, self.n_bandwidths, self.grid, self.subset))


def as_collection(kernels: object) -> KernelCollection | None:
    """A KernelCollection for what a test's ``kernel`` argument holds when it names
    several kernels (a collection, or a list/tuple of kernels or names); None for a
    single kernel."""
    if isinstance(kernels, KernelCollection):
        return kernels
    if isinstance(kernels, (list, tuple)):
        return KernelCollection(kernels)
    return None


__all__ = [
    "FAMILIES",
    "GRIDS",
    "GRID_SUBSET",
    "L1_FACTOR",
    "N_BANDWIDTHS",
    "KernelCollection",
    "as_collection",
    "bandwidth_grid",
    "distance_statistics",
    "pairwise_distances",
]
