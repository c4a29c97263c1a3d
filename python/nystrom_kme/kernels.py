"""Kernel objects: a name, a bandwidth (a number or ``"median"``) and parameters.

Every kernel here is evaluated by the compiled core; these classes only validate
parameters, resolve the median heuristic and hand a description to the core.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol, TypedDict, Union

import numpy as np
from numpy.typing import ArrayLike

from . import _core
from ._validation import (
    RandomStateLike,
    as_data_matrix,
    check_positive_int,
    check_random_state,
    common_dtype,
    n_threads_arg,
)

Bandwidth = Union[float, str]


class CoreParams(TypedDict, total=False):
    """The compiled kernel's parameters beside its name and bandwidth."""

    offset: float
    degree: int
    shape: float


#: Every kind of the core by name, from its formulas (``kernel_formulas.inl``): code,
#: distance ("squared_euclidean", "l1" or "inner_product"), has_shape, gpu.
KINDS: dict[str, dict[str, object]] = {kind["name"]: kind for kind in _core.kernel_kinds()}
#: The distances between rows that the median heuristic and the bandwidth grids measure.
METRICS = ("euclidean", "l1")


class RowSample(Protocol):
    """What the median heuristic reads from a sample (:func:`resolve_kernel`): its row
    count and some of its rows, e.g. a :class:`nystrom_kme.sources.RowSource`."""

    def count_rows(self) -> int: ...

    def take(self, indices: np.ndarray) -> np.ndarray: ...


#: Number of points the median heuristic looks at, as in the paper's experiments.
MEDIAN_SUBSET = 1000
#: The smallest bandwidth: the core works on x / bandwidth, so 1 / bandwidth must be finite.
MIN_BANDWIDTH = float(np.finfo(np.float64).tiny)


def pairwise_distances(X: np.ndarray, metric: str = "euclidean") -> np.ndarray:
    """The k (k - 1) / 2 distances between distinct rows of X (k, d), float64, in scipy's
    ``pdist`` order, from direct differences (no cancellation), in units of X: Euclidean
    (computed in the core, ``median.hpp``, the arithmetic of the median heuristic) or l1
    (``metric="l1"``, sums of absolute differences, row by row).

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.kernels import pairwise_distances
    >>> X = np.array([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]])
    >>> pairwise_distances(X).tolist(), pairwise_distances(X, "l1").tolist()
    ([5.0, 1.0, 4.242640687119285], [7.0, 1.0, 6.0])
    """
    Z = np.ascontiguousarray(X, dtype=np.float64)
    if Z.shape[0] < 2:
        return np.empty(0)
    if metric == "euclidean":
        return _core.pairwise_distances(Z)
    if metric != "l1":
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    return np.concatenate([np.abs(Z[i + 1 :] - Z[i]).sum(axis=1) for i in range(Z.shape[0] - 1)])


def median_distance(
    X: ArrayLike, *, subset: int = MEDIAN_SUBSET, random_state: RandomStateLike = None, metric: str = "euclidean"
) -> float:
    """Median distance between distinct pairs of a random subset of rows.

    The ``k (k - 1) / 2`` distances of the ``k = min(n_samples, subset)`` rows are
    computed in the compiled core (``median.hpp``), in parallel: O(k^2 d) time and
    ``k (k - 1) / 2`` float64 of memory (4 MB at the default subset); the result is
    exactly numpy's median of them. ``metric="l1"`` (the l1 kernels' bandwidth) sums
    absolute differences with numpy instead.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    subset : int, default=1000
        Rows drawn (without replacement) when ``n_samples`` is larger.
    random_state : None, int or numpy.random.Generator
    metric : {"euclidean", "l1"}, default="euclidean"

    Returns
    -------
    float
        The median of the ``k (k - 1) / 2`` pairwise distances, in the units of X. When
        that is 0 (most rows repeat), the median of the non-zero distances; 1.0 when the
        rows are all one point.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> X = np.random.default_rng(0).normal(size=(500, 2))
    >>> d = nk.median_distance(X, random_state=0)
    >>> bool(1.5 < d < 2.0)             # about sqrt(2 * 2 * ln 2) for two N(0, I_2) points
    True
    """
    X = as_data_matrix(X, "X", min_rows=2)
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    rows = _median_rows(X.shape[0], check_positive_int(subset, "subset"), check_random_state(random_state))
    if rows.size < X.shape[0]:
        X = X[rows]
    if metric == "euclidean":
        # In the core (median.hpp): direct differences of the rows divided by a power of
        # two near their largest magnitude (exact: no overflow or underflow of the squares),
        # summed and averaged exactly as numpy's sum and median would.
        median = _core.median_pairwise_distance(np.ascontiguousarray(X))
    else:
        median = float(np.median(pairwise_distances(np.asarray(X), metric)))
    if median > 0.0:
        return median
    # Most rows repeat: the median of the distances between distinct rows, and 1 when all
    # rows are one point (where every bandwidth gives the same kernel values).
    d = pairwise_distances(np.asarray(X), metric)
    d = d[d > 0]
    return float(np.median(d)) if d.size else 1.0


def _median_rows(n: int, subset: int, rng: np.random.Generator) -> np.ndarray:
    """The rows of n that the median heuristic of one sample reads: ``subset`` of them
    drawn without replacement when n is larger (one draw from ``rng``), else all (none)."""
    return rng.choice(n, size=subset, replace=False) if n > subset else np.arange(n)


class Kernel:
    """Base class of kernels k(x, y) on R^d.

    Parameters
    ----------
    bandwidth : float > 0 or "median", default="median"
        Length scale sigma, in the units of the data. ``"median"`` is resolved at
        fit time to the median pairwise distance of up to 1000 random data points.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> k = nk.Gaussian(bandwidth=2.0)
    >>> k.is_resolved, k.radial, k.sup_norm
    (True, True, 1.0)
    >>> X = np.array([[0.0, 0.0], [1.0, 1.0]])
    >>> np.round(k(X), 4)
    array([[1.    , 0.7788],
           [0.7788, 1.    ]])
    >>> nk.Gaussian().resolve(X)                        # the median heuristic
    Gaussian(bandwidth=1.4142135623730951)
    """

    name = ""
    radial = True
    #: The distance between rows the kernel is a function of (its median bandwidth is
    #: the median of these): "euclidean", or "l1" for the l1 kernels; None for the
    #: dot-product kernels.
    metric: str | None = "euclidean"

    def __init__(self, bandwidth: Bandwidth = "median") -> None:
        if isinstance(bandwidth, str):
            if bandwidth != "median":
                raise ValueError(f"bandwidth must be a positive number or 'median', got {bandwidth!r}")
        elif isinstance(bandwidth, bool) or not isinstance(bandwidth, (int, float, np.floating, np.integer)):
            raise ValueError(f"bandwidth must be a positive number or 'median', got {bandwidth!r}")
        elif not (math.isfinite(bandwidth) and bandwidth >= MIN_BANDWIDTH):
            raise ValueError(
                f"bandwidth must be a finite number >= {MIN_BANDWIDTH!r} (the smallest "
                f"normal float64: the core divides the data by it), got {bandwidth!r}"
            )
        self.bandwidth: Bandwidth = bandwidth if isinstance(bandwidth, str) else float(bandwidth)

    # Extra constructor arguments, for repr, equality and copies.
    def _params(self) -> dict[str, float]:
        return {}

    @property
    def params(self) -> dict[str, float]:
        """The constructor's arguments beside the bandwidth (what saved files store).

        Examples
        --------
        >>> import nystrom_kme as nk
        >>> nk.Matern(nu=2.5).params, nk.RationalQuadratic(alpha=3.0).params, nk.Gaussian().params
        ({'nu': 2.5}, {'alpha': 3.0}, {})
        """
        return dict(self._params())

    def with_bandwidth(self, bandwidth: Bandwidth) -> Kernel:
        """This kernel (same type and parameters) with another bandwidth.

        Examples
        --------
        >>> import nystrom_kme as nk
        >>> nk.Matern(1.0, nu=2.5).with_bandwidth(3.0)
        Matern(bandwidth=3.0, nu=2.5)
        """
        return type(self)(bandwidth=bandwidth, **self._params())

    @property
    def family(self) -> str:
        """The kernel without its bandwidth: its class, with any other parameters.

        Examples
        --------
        >>> import nystrom_kme as nk
        >>> nk.Gaussian(2.0).family, nk.Matern(nu=0.5).family
        ('Gaussian', 'Matern(nu=0.5)')
        """
        params = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{type(self).__name__}({params})" if params else type(self).__name__

    @property
    def is_resolved(self) -> bool:
        """True once the bandwidth is a number."""
        return not isinstance(self.bandwidth, str)

    def resolve(self, X: ArrayLike, random_state: RandomStateLike = None) -> Kernel:
        """This kernel with a numeric bandwidth (the median heuristic applied to X)."""
        if self.is_resolved:
            return self
        return self.with_bandwidth(median_distance(X, random_state=random_state, metric=self.metric or "euclidean"))

    def to_core(self) -> _core.Kernel:
        """The compiled core's description of this kernel."""
        if not self.is_resolved:
            raise ValueError("bandwidth='median' must be resolved on data first (kernel.resolve(X))")
        return _core.Kernel(self.name, float(self.bandwidth), **self._core_params())

    def _core_params(self) -> CoreParams:
        return {}

    @property
    def sup_norm(self) -> float:
        """K = sup_x sqrt(k(x, x)): 1 for the radial kernels, inf (unbounded) otherwise."""
        return 1.0 if self.radial else math.inf

    def __call__(self, X: ArrayLike, Y: ArrayLike | None = None, *, n_threads: int | None = None) -> np.ndarray:
        """Dense kernel matrix K(X, Y) of shape (n_x, n_y), float64. For small inputs only."""
        X = as_data_matrix(X, "X")
        Y = X if Y is None else as_data_matrix(Y, "Y")
        if X.shape[1] != Y.shape[1]:
            raise ValueError(f"X has {X.shape[1]} features but Y has {Y.shape[1]}")
        X, Y = common_dtype(X, Y)
        return _core.kernel_matrix(X, Y, self.to_core(), n_threads_arg(n_threads))

    def __repr__(self) -> str:
        params = {"bandwidth": self.bandwidth, **self._params()}
        inner = ", ".join(f"{k}={v!r}" for k, v in params.items())
        return f"{type(self).__name__}({inner})"

    def __eq__(self, other: object) -> bool:
        return (
            type(self) is type(other)
            and isinstance(other, Kernel)
            and self.bandwidth == other.bandwidth
            and self._params() == other._params()
        )

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.bandwidth, tuple(sorted(self._params().items()))))


class Gaussian(Kernel):
    """Gaussian kernel exp(-||x - y||^2 / (2 sigma^2)).

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> k = nk.Gaussian(1.0)
    >>> round(float(k([[0.0]], [[1.0]])[0, 0]), 6)     # exp(-1/2)
    0.606531
    """

    name = "gaussian"


class Laplacian(Kernel):
    """Laplacian kernel exp(-||x - y||_2 / sigma) (Matern with nu = 1/2): the Euclidean
    distance, the exponential kernel. Not scikit-learn's ``laplacian_kernel`` nor
    MMD-FUSE's, which use the l1 distance ||x - y||_1 (:class:`LaplacianL1`); in d = 1
    they coincide.

    Examples
    --------
    >>> import nystrom_kme as nk
    >>> round(float(nk.Laplacian(2.0)([[0.0]], [[1.0]])[0, 0]), 6)   # exp(-1/2)
    0.606531
    """

    name = "laplacian"


class Matern(Kernel):
    """Matern kernel with smoothness nu in {0.5, 1.5, 2.5}, with r = ||x - y||.

    nu = 0.5: exp(-r / sigma); nu = 1.5: (1 + sqrt(3) r / sigma) exp(-sqrt(3) r / sigma);
    nu = 2.5: (1 + sqrt(5) r / sigma + 5 r^2 / (3 sigma^2)) exp(-sqrt(5) r / sigma).

    Examples
    --------
    >>> import nystrom_kme as nk
    >>> k = nk.Matern(1.0, nu=2.5)
    >>> k, k.name
    (Matern(bandwidth=1.0, nu=2.5), 'matern52')
    >>> round(float(k([[0.0]], [[0.5]])[0, 0]), 4)
    0.8286
    """

    _names = {0.5: "laplacian", 1.5: "matern32", 2.5: "matern52"}

    def __init__(self, bandwidth: Bandwidth = "median", nu: float = 1.5) -> None:
        super().__init__(bandwidth)
        if nu not in self._names:
            raise ValueError(f"nu must be one of 0.5, 1.5, 2.5, got {nu!r}")
        self.nu = float(nu)
        self.name = self._names[self.nu]

    def _params(self) -> dict[str, float]:
        return {"nu": self.nu}


class InverseMultiquadric(Kernel):
    """Inverse multiquadric kernel (1 + ||x - y||^2 / sigma^2)^(-1/2).

    Examples
    --------
    >>> import nystrom_kme as nk
    >>> round(float(nk.InverseMultiquadric(1.0)([[0.0]], [[1.0]])[0, 0]), 6)   # 1/sqrt(2)
    0.707107
    """

    name = "inverse_multiquadric"


class RationalQuadratic(Kernel):
    """Rational quadratic kernel (1 + ||x - y||^2 / (2 alpha sigma^2))^(-alpha), alpha > 0:
    a scale mixture of Gaussians, heavier-tailed than any of them; alpha -> inf gives the
    Gaussian, alpha = 1/2 the inverse multiquadric at bandwidth sigma. The same values as
    scikit-learn's ``RationalQuadratic(length_scale=sigma, alpha=alpha)``.

    Examples
    --------
    >>> import nystrom_kme as nk
    >>> k = nk.RationalQuadratic(1.0, alpha=2.0)
    >>> k, round(float(k([[0.0]], [[2.0]])[0, 0]), 6)   # (1 + 4 / 4)^-2
    (RationalQuadratic(bandwidth=1.0, alpha=2.0), 0.25)
    """

    name = "rational_quadratic"

    def __init__(self, bandwidth: Bandwidth = "median", alpha: float = 1.0) -> None:
        super().__init__(bandwidth)
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating, np.integer)):
            raise ValueError(f"alpha must be a finite number > 0, got {alpha!r}")
        if not (math.isfinite(alpha) and alpha > 0):
            raise ValueError(f"alpha must be a finite number > 0, got {alpha!r}")
        self.alpha = float(alpha)

    def _params(self) -> dict[str, float]:
        return {"alpha": self.alpha}

    def _core_params(self) -> CoreParams:
        return {"shape": self.alpha}


class LaplacianL1(Kernel):
    """Laplacian kernel in the l1 distance, exp(-||x - y||_1 / sigma): scikit-learn's
    ``laplacian_kernel`` with ``gamma = 1 / sigma`` and MMD-FUSE's Laplace kernel. Its
    median bandwidth is the median l1 distance. A product of one-dimensional kernels, it
    sees a change in a few coordinates of many more sharply than the Euclidean
    :class:`Laplacian` (issue 42's measurements: docs, "Level, power and the default").
    The CPU core computes it (every SIMD level); the GPU path and the torch loss, which
    need a Euclidean radial kernel, refuse it by name.

    Examples
    --------
    >>> import nystrom_kme as nk
    >>> round(float(nk.LaplacianL1(2.0)([[0.0, 0.0]], [[1.0, 1.0]])[0, 0]), 6)   # exp(-2 / 2)
    0.367879
    """

    name = "laplacian_l1"
    metric = "l1"


class Linear(Kernel):
    """Linear kernel <x, y> / sigma^2 (not bounded: the paper's bounds do not apply).

    Examples
    --------
    >>> import nystrom_kme as nk
    >>> float(nk.Linear()([[1.0, 2.0]], [[3.0, 4.0]])[0, 0])
    11.0
    >>> nk.Linear().sup_norm                                  # unbounded
    inf
    """

    name = "linear"
    radial = False
    metric = None

    def __init__(self, bandwidth: Bandwidth = 1.0) -> None:
        super().__init__(bandwidth)


class Polynomial(Kernel):
    """Polynomial kernel (<x, y> / sigma^2 + offset)^degree, degree >= 1, offset >= 0.

    Examples
    --------
    >>> import nystrom_kme as nk
    >>> k = nk.Polynomial(degree=2, offset=1.0)
    >>> float(k([[1.0, 2.0]], [[3.0, 4.0]])[0, 0])           # (11 + 1)^2
    144.0
    """

    name = "polynomial"
    radial = False
    metric = None

    def __init__(self, bandwidth: Bandwidth = 1.0, degree: int = 2, offset: float = 1.0) -> None:
        super().__init__(bandwidth)
        self.degree = check_positive_int(degree, "degree")
        if not (isinstance(offset, (int, float, np.floating, np.integer)) and math.isfinite(offset) and offset >= 0):
            raise ValueError(f"offset must be a finite number >= 0, got {offset!r}")
        self.offset = float(offset)

    def _params(self) -> dict[str, float]:
        return {"degree": self.degree, "offset": self.offset}

    def _core_params(self) -> CoreParams:
        return {"offset": self.offset, "degree": self.degree}


#: Every kernel class of the package: the one list that saved files (by class name),
#: the package's exports and the command line are checked against.
KERNEL_CLASSES: tuple[type[Kernel], ...] = (
    Gaussian,
    Laplacian,
    Matern,
    InverseMultiquadric,
    RationalQuadratic,
    LaplacianL1,
    Linear,
    Polynomial,
)

_BY_NAME: dict[str, Callable[[], Kernel]] = {
    "gaussian": Gaussian,
    "rbf": Gaussian,
    "laplacian": Laplacian,
    "matern12": lambda: Matern(nu=0.5),
    "matern32": lambda: Matern(nu=1.5),
    "matern52": lambda: Matern(nu=2.5),
    "inverse_multiquadric": InverseMultiquadric,
    "imq": InverseMultiquadric,
    "rational_quadratic": RationalQuadratic,
    "laplacian_l1": LaplacianL1,
    "linear": Linear,
    "polynomial": Polynomial,
}

#: The names :func:`get_kernel` accepts, aliases included ("rbf" is "gaussian", "imq" is
#: "inverse_multiquadric").
KERNEL_NAMES: tuple[str, ...] = tuple(_BY_NAME)
#: The short names that are aliases of another (the command line shows the others).
KERNEL_ALIASES: dict[str, str] = {"rbf": "gaussian", "imq": "inverse_multiquadric"}


def get_kernel(kernel: Kernel | str) -> Kernel:
    """A Kernel instance from an instance or a name (radial kernels default to 'median').

    Examples
    --------
    >>> import nystrom_kme as nk
    >>> nk.get_kernel("gaussian")
    Gaussian(bandwidth='median')
    >>> nk.get_kernel(nk.Laplacian(0.5))
    Laplacian(bandwidth=0.5)
    """
    if isinstance(kernel, Kernel):
        return kernel
    if isinstance(kernel, str) and kernel in _BY_NAME:
        return _BY_NAME[kernel]()
    raise ValueError(f"kernel must be a Kernel or one of {sorted(KERNEL_NAMES)}, got {kernel!r}")


def resolve_kernel(kernel: Kernel | str, sources: Sequence[RowSample], rng: np.random.Generator) -> Kernel:
    """``kernel`` with a numeric bandwidth: a given one as is, else the median heuristic
    on rows of ``sources`` (objects with ``count_rows()`` and ``take(indices)``, e.g.
    :class:`nystrom_kme.sources.RowSource`), only those rows being read.

    One source: the rows :func:`median_distance` would use (``MEDIAN_SUBSET`` drawn
    without replacement when there are more), so an in-memory array and a streamed
    copy of it get the same bandwidth. Several (the samples of an MMD or a test):
    pooled, up to ``MEDIAN_SUBSET`` rows drawn from each, so that all share one
    bandwidth.
    """
    k = get_kernel(kernel)
    if k.is_resolved:
        return k
    counts = [int(s.count_rows()) for s in sources]
    if len(sources) == 1:
        return k.resolve(sources[0].take(_median_rows(counts[0], MEDIAN_SUBSET, rng)), rng)
    if sum(counts) <= 2 * MEDIAN_SUBSET:
        picks = [np.arange(n) for n in counts]
    else:
        picks = [rng.choice(n, size=min(n, MEDIAN_SUBSET), replace=False) for n in counts]
    pooled = np.concatenate([np.asarray(s.take(rows), dtype=np.float64) for s, rows in zip(sources, picks)])
    return k.resolve(pooled, rng)
