"""Distribution compression: a few weighted points whose kernel mean is close to the data's.

:func:`compress` picks ``n_points`` landmarks among the rows of X with any landmark
sampler of :class:`~nystrom_kme.NystromKME` and weights them one of three ways:

* ``"signed"``: the Nyström projection w = (K_m + ridge I)^+ s of the paper's eq. 5
  (``ridge = 0``: exactly ``NystromKME.weights_``), the best weights in MMD without
  constraints; they may be negative and need not sum to one.
* ``"simplex"``: the best *probability* weights, argmin over w >= 0, sum w = 1 of
  w^T K_m w - 2 w^T s, solved exactly (active set, in the C++ core,
  ``simplex_weights.hpp``); the result is a probability measure.
* ``"uniform"``: 1/m each (a plain subsample).

Here K_m = K(L, L) and s = sum_i a_i k(L, x_i) with a the normalised sample weights
(1/n). The result reports the MMD to the weighted empirical measure P_n,
MMD^2 = w^T K_m w - 2 w^T s + a^T K a. Up to ``EXACT_MMD_MAX_ROWS`` = 20,000 rows (of
positive weight) it is exact, the last term streamed by the core in O(n^2 d) time and
O(1) memory, at about the cost of the compression. Above, it is estimated with a 95%
interval (``mmd_interval``) at O(n r d) cost, r = ``MMD_ESTIMATE_ROWS``: with alpha the
Nystrom weights on the same points (the projection of mu_n onto their span) and
rho = mu_n - mu_alpha the projection's residual function,

    MMD^2 = w^T K_m w - 2 w^T s + alpha^T s + E_{x ~ P_n} rho(x)

exactly (a^T K a = E mu_n(x) and alpha^T s = E mu_alpha(x)), and the mean of rho over r
rows drawn from P_n estimates the last term without bias. Since rho is the residual of
the best approximation on the points, |rho(x)| <= ||mu_n - P mu_n|| <= MMD, so its
spread, hence the interval, is of the order of MMD / sqrt(r), not of the data's spread
(a plain subsample estimate of a^T K a would be off by the order of 1/sqrt(r), far
larger than the MMD^2 of a good compression).

Memory: the data are read from any row source (a path, a memmap, chunks) and never held
whole: the points' weights need s (one streamed pass), the estimate r rows and one pass.
The samplers that read rows (all but uniform draws and given indices) choose among at
most :func:`sampler_rows` rows: all of them while their n x m float64 factor fits in
``SAMPLER_MAX_BYTES`` (256 MiB: n up to 131,072 at m = 256), else a uniform subsample of
that size (at least 16 m rows; m^2 for kernel thinning); the weights and the MMD are
still those of all n rows. So a compression holds O(m^2 + chunk) memory whatever n.
"""

from __future__ import annotations

import math
import numbers
import os
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from . import _core
from ._compensated import fsum_dot
from ._scaling import Scaling, check_standardize, fit_scaling, scaling_summary, warn_scales
from ._validation import (
    SPLIT_SEED_BOUND,
    RandomStateLike,
    as_data_matrix,
    check_not_sparse,
    check_positive_int,
    check_random_state,
    check_sample_weight,
    draw_seed,
    n_threads_arg,
    normalised_weights,
    scale_weights,
)
from .defaults import COMPRESS_SAMPLER, COMPRESS_WEIGHTS
from .kernels import Kernel, get_kernel
from .nystrom import NystromKME
from .persistence import persistable, save
from .sampling import SamplerLike, as_policy, resolve_sampler
from .sources import RowSource, SourceLike, as_source, scaled

__all__ = [
    "EXACT_MMD_MAX_ROWS",
    "MMD_ESTIMATE_ROWS",
    "SAMPLER_MAX_BYTES",
    "CompressionResult",
    "compress",
    "compression_mmd",
    "sampled_estimator",
    "sampler_rows",
]

WEIGHTS = ("simplex", "signed", "uniform")
#: compute_mmd="auto" computes the exact O(n^2 d) MMD up to this many rows of positive
#: weight, and estimates it above.
EXACT_MMD_MAX_ROWS = 20_000
#: Rows drawn from P_n for an estimated MMD (its interval narrows as 1 / sqrt of them).
MMD_ESTIMATE_ROWS = 2_000
#: Level of the estimated MMD's interval.
MMD_LEVEL = 0.95
#: The n x m float64 factor a row-reading sampler may build (beyond: a subsample).
SAMPLER_MAX_BYTES = 256 << 20
_COMPUTE_MMD = ("auto", "estimate")


def sampler_rows(n: int, m: int, *, thinning: bool = False) -> int:
    """The rows a sampler that reads rows chooses ``m`` points among, out of ``n``: all of
    them while its n x m float64 factor fits in :data:`SAMPLER_MAX_BYTES`, else a uniform
    subsample of SAMPLER_MAX_BYTES / (8 m) rows, at least 16 m (and m^2 for kernel
    thinning, which thins m^2 rows).

    Examples
    --------
    >>> from nystrom_kme.compression import sampler_rows
    >>> sampler_rows(10**6, 256), sampler_rows(50_000, 256), sampler_rows(10**6, 4096)
    (131072, 50000, 65536)
    """
    cap = max(SAMPLER_MAX_BYTES // (8 * m), 16 * m, m * m if thinning else 0)
    return min(n, cap)


@persistable
@dataclass(frozen=True)
class CompressionResult:
    """Weighted points summarising a sample, as returned by :func:`compress`.

    Attributes
    ----------
    points : ndarray of shape (m, d)
        The selected rows of X (same dtype as X).
    weights : ndarray of shape (m,), float64
        Their weights: a probability vector for ``"simplex"`` and ``"uniform"``.
    indices : ndarray of shape (m,), int64
        Row indices of the points in X.
    mmd : float or None
        The MMD between sum_j w_j delta_{points_j} and the (weighted) empirical measure
        of X: exact, or estimated (see :attr:`mmd_kind`); None when not computed.
    kernel : Kernel
        The kernel, with its numeric bandwidth.
    method : str
        ``"<sampler>/<weights>"``, e.g. ``"rpcholesky/simplex"``.
    ridge : float
        The Tikhonov parameter used for signed weights (0 otherwise).
    mmd_interval : tuple of float or None
        For an estimated MMD, its 95% confidence interval (low, high); None for an exact
        one or none.
    scaling : Scaling or None
        The columns' scaling of ``standardize=`` (``center`` and ``scale``, (d,)): the
        kernel, its bandwidth and the MMD are in its units, ``points`` in X's own
        (``scaling.apply(points)`` are the points the kernel sees); None without it.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> X = np.random.default_rng(0).normal(size=(400, 2))
    >>> res = nk.compress(X, 20, random_state=0)
    >>> res.points.shape, res.weights.shape, bool(res.weights.min() >= 0)
    ((20, 2), (20,), True)
    """

    points: np.ndarray = field(repr=False)
    weights: np.ndarray = field(repr=False)
    indices: np.ndarray = field(repr=False)
    mmd: float | None
    kernel: Kernel
    method: str
    ridge: float = 0.0
    mmd_interval: tuple[float, float] | None = None
    scaling: Scaling | None = None

    @property
    def n_points(self) -> int:
        """m, the number of points."""
        return int(self.points.shape[0])

    @property
    def mmd_kind(self) -> str | None:
        """What ``mmd`` is: ``"exact"`` (from every pair of rows), ``"estimate"`` (from
        ``MMD_ESTIMATE_ROWS`` rows, with ``mmd_interval``) or None (not computed)."""
        if self.mmd is None:
            return None
        return "exact" if self.mmd_interval is None else "estimate"

    def summary(self) -> dict[str, Any]:
        """What ``nystrom-kme info`` prints: the result's fields as JSON data."""
        return {
            "kernel": repr(self.kernel),
            "n_points": self.n_points,
            "n_features": int(self.points.shape[1]),
            "method": self.method,
            "weights": self.method.rpartition("/")[2],
            "ridge": self.ridge,
            "mmd": self.mmd,
            "mmd_kind": self.mmd_kind,
            **({} if self.mmd_interval is None else {"mmd_interval": list(self.mmd_interval)}),
            "weight_sum": float(self.weights.sum()),
            **scaling_summary(self.scaling),
        }

    def __repr__(self) -> str:
        w = self.weights
        if self.mmd is None:
            mmd = "not computed"
        elif self.mmd_interval is None:
            mmd = f"{self.mmd:.4g} (exact)"
        else:
            mmd = f"{self.mmd:.4g} (estimate, 95% interval [{self.mmd_interval[0]:.4g}, {self.mmd_interval[1]:.4g}])"
        ridge = f", ridge={self.ridge:g}" if self.ridge else ""
        scaled = "" if self.scaling is None else f", standardize={self.scaling.kind!r}"
        return (
            f"CompressionResult(method={self.method!r}, n_points={self.n_points}, mmd={mmd}, "
            f"weights in [{w.min():.3g}, {w.max():.3g}] summing to {w.sum():.6g}, "
            f"{int(np.count_nonzero(w < 0))} negative, {int(np.count_nonzero(w))} nonzero, "
            f"kernel={self.kernel!r}{ridge}{scaled})"
        )

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the result to ``path`` (``.npz``, no pickle; :func:`nystrom_kme.load`
        reads it back, and ``numpy.load(path)`` shows the members ``points``,
        ``weights`` and ``indices``; kernel, method, MMD and ridge are in its JSON
        header, see :mod:`nystrom_kme.persistence`).

        Examples
        --------
        >>> import numpy as np, nystrom_kme as nk, os, tempfile
        >>> X = np.random.default_rng(0).normal(size=(300, 2))
        >>> res = nk.compress(X, 10, random_state=0)
        >>> path = os.path.join(tempfile.mkdtemp(), "c.npz")
        >>> res.save(path)
        >>> back = nk.load(path)
        >>> bool((back.weights == res.weights).all()), back.mmd == res.mmd
        (True, True)
        """
        save(self, path)


def _check_ridge(ridge: object) -> float:
    if isinstance(ridge, (bool, np.bool_)) or not isinstance(ridge, numbers.Real):
        raise ValueError(f"ridge must be a finite number >= 0, got {ridge!r}")
    value = float(ridge)
    if not (math.isfinite(value) and value >= 0.0):
        raise ValueError(f"ridge must be a finite number >= 0, got {value!r}")
    return value


def _self_term(X: np.ndarray, a: np.ndarray | None, core: _core.Kernel, n_threads: int) -> float:
    """a^T K(X, X) a (a = 1/n when None), streamed by the core, O(n^2 d) time."""
    n = X.shape[0]
    if a is None:
        return float(_core.kernel_total_sum(X, X, core, n_threads)) / int(n) / int(n)
    keep = np.flatnonzero(a)  # rows of zero weight do not contribute
    Xa, aa = np.ascontiguousarray(X[keep]), np.ascontiguousarray(a[keep])
    Ka = _core.kernel_sums(Xa, Xa, aa.reshape(-1, 1), core, n_threads)[:, 0]
    return math.fsum(aa * Ka)


def compression_mmd(
    X: ArrayLike,
    points: ArrayLike,
    weights: ArrayLike,
    *,
    kernel: Kernel,
    sample_weight: ArrayLike | None = None,
    n_threads: int | None = None,
) -> float:
    """Exact MMD between sum_j w_j delta_{p_j} and the (weighted) empirical measure of X.

    MMD^2 = w^T K(P, P) w - 2 w^T K(P, X) a + a^T K(X, X) a with a the normalised
    sample weights (1/n), streamed by the core: O(n (n + m) d) time, O(m^2) memory.
    Any weights are accepted (signed, not summing to one).

    Parameters
    ----------
    X : array-like of shape (n, d)
    points : array-like of shape (m, d)
    weights : array-like of shape (m,)
    kernel : Kernel
        A kernel with a numeric bandwidth (e.g. ``CompressionResult.kernel``).
    sample_weight : array-like of shape (n,) or None
    n_threads : int or None

    Returns
    -------
    float, >= 0 (clamped against round-off).

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> X = np.random.default_rng(0).normal(size=(300, 2))
    >>> res = nk.compress(X, 15, random_state=0)
    >>> d = nk.compression_mmd(X, res.points, res.weights, kernel=res.kernel)
    >>> bool(np.isclose(d, res.mmd, rtol=1e-9))
    True
    """
    X = as_data_matrix(X)
    P = as_data_matrix(points, "points")
    if P.shape[1] != X.shape[1]:
        raise ValueError(f"points have {P.shape[1]} features, X has {X.shape[1]}")
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (P.shape[0],) or not np.isfinite(w).all():
        raise ValueError(f"weights must be finite with shape ({P.shape[0]},), got shape {w.shape}")
    if not isinstance(kernel, Kernel) or not isinstance(kernel.bandwidth, numbers.Real):
        raise ValueError(f"kernel must be a Kernel with a numeric bandwidth, got {kernel!r}")
    nt = n_threads_arg(n_threads)
    a = check_sample_weight(sample_weight, X.shape[0])
    a = None if a is None else normalised_weights(a)
    X, P = (X, P) if X.dtype == P.dtype else (X.astype(np.float64), P.astype(np.float64))
    core = kernel.to_core()
    Km = _core.kernel_matrix(P, P, core, nt)
    if a is None:
        s = _core.kernel_row_sums(P, X, core, nt) / X.shape[0]
    else:
        s = _core.kernel_sums(P, X, a.reshape(-1, 1), core, nt)[:, 0]
    return _mmd(w, Km, s, _self_term(X, a, core, nt))


def _mmd(w: np.ndarray, Km: np.ndarray, s: np.ndarray, self_term: float) -> float:
    """sqrt(w^T K_m w - 2 w^T s + self_term) without BLAS (whose threads change the
    last bits): row sums of K_m * w (numpy's pairwise sums) and fsum dots."""
    Kw = (Km * w).sum(axis=1)
    mmd2 = math.fsum([fsum_dot(w, Kw), -2.0 * fsum_dot(w, s), self_term])
    return math.sqrt(max(mmd2, 0.0))


def compress(
    X: SourceLike,
    n_points: int,
    *,
    kernel: Kernel | str = "gaussian",
    sampler: SamplerLike = COMPRESS_SAMPLER,
    weights: str = COMPRESS_WEIGHTS,
    ridge: float = 0.0,
    random_state: RandomStateLike = None,
    n_threads: int | None = None,
    sample_weight: ArrayLike | None = None,
    compute_mmd: bool | str = "auto",
    standardize: bool | str = False,
) -> CompressionResult:
    """Compress a sample to ``n_points`` weighted rows whose kernel mean is close to its own.

    Parameters
    ----------
    X : array-like of shape (n, d), a row source or the path of a data file
        The sample, read block by block (never held whole: see the module docstring;
        the samplers other than uniform draws read at most :func:`sampler_rows` rows).
    n_points : int
        m, 1 <= m <= n (m ~ sqrt(n) keeps the MMD at the statistical rate n^{-1/2}
        for kernels with fast spectral decay, Chatalic et al. 2022).
    kernel : Kernel or str, default="gaussian"
        A string or a kernel with ``bandwidth="median"`` resolves the median heuristic
        on X, as :class:`~nystrom_kme.NystromKME` does.
    sampler : str, SamplingPolicy, or array of indices, default="rpcholesky"
        Any sampler :class:`~nystrom_kme.NystromKME` accepts ("uniform",
        "rpcholesky", "herding", "greedy-cholesky", "rls", ...), or
        ``"kernel-thinning"`` (Compress++ from the optional ``goodpoints`` package:
        ``pip install nystrom-kme[thinning]``; m must be a power of two with m^2 <= n,
        and the points are chosen from a random subset of m^2 rows, ignoring
        ``sample_weight``). The pivoted-Cholesky samplers may return fewer than m
        points when the kernel matrix is exhausted to round-off.
    weights : {"simplex", "signed", "uniform"}, default="simplex"
        See the module docstring. Only "simplex" and "uniform" give a probability
        measure.
    ridge : float, default=0.0
        Tikhonov parameter lambda >= 0 for ``weights="signed"``: w = (K_m + lambda I)^{-1} s,
        the minimiser of MMD^2(w) + lambda ``||w||^2`` (K_m's diagonal is k(x, x), 1 for
        the Gaussian kernel, so lambda is relative to it). Larger lambda bounds the
        weights (``||w||_2 <= ||s||_2 / lambda``) at some cost in MMD. Must be 0 for
        other weights.
    random_state : None, int or numpy Generator
    n_threads : int or None
        The result does not depend on it (bit for bit).
    sample_weight : array-like of shape (n,) or None
        Non-negative row weights: the target is sum_i a_i delta_{x_i}, a = w / sum w.
    compute_mmd : {"auto", True, "estimate", False}, default="auto"
        "auto": the exact MMD to the empirical measure when at most
        ``EXACT_MMD_MAX_ROWS`` (20,000) rows have positive weight (O(n^2 d), about the
        compression's cost), else an estimate with a 95% interval from
        ``MMD_ESTIMATE_ROWS`` rows (O(n r d), see the module docstring). True: exact at
        any n (O(n^2 d) time; the rows in memory); "estimate": the estimate at any n;
        False: ``mmd`` None, and the call costs the sampler's time plus O(n m d + m^3).
        ``CompressionResult.mmd_kind`` says which happened.
    standardize : bool or {"standard", "robust"}, default=False
        Centre and scale every column first (one more pass over the rows; see
        :class:`~nystrom_kme.NystromKME`): columns in different units then count alike.
        The points are X's rows in X's units; the kernel and the MMD are in the scaled
        units, and the result keeps the scaling. Without it, a column whose variance
        dwarfs the others' gets a warning naming it.

    Returns
    -------
    CompressionResult

    Raises
    ------
    ValueError
        For an invalid argument (the message names it).
    ImportError
        For ``sampler="kernel-thinning"`` without the ``goodpoints`` package.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> X = np.random.default_rng(0).normal(size=(1000, 2))
    >>> res = nk.compress(X, 32, weights="simplex", random_state=0)
    >>> bool(np.isclose(res.weights.sum(), 1.0)), bool(res.weights.min() >= 0)
    (True, True)
    >>> iid = nk.compress(X, 32, sampler="uniform", weights="uniform", random_state=0)
    >>> bool(res.mmd < iid.mmd)
    True
    """
    if not isinstance(weights, str) or weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {WEIGHTS}, got {weights!r}")
    ridge = _check_ridge(ridge)
    if ridge and weights != "signed":
        raise ValueError(f"ridge applies to weights='signed' only, got ridge={ridge!r} with weights={weights!r}")
    mode: str | bool
    if isinstance(compute_mmd, (bool, np.bool_)):
        mode = bool(compute_mmd)
    elif isinstance(compute_mmd, str) and compute_mmd in _COMPUTE_MMD:
        mode = compute_mmd
    else:
        raise ValueError(f"compute_mmd must be 'auto', 'estimate', True or False, got {compute_mmd!r}")
    kind = check_standardize(standardize)
    check_not_sparse(X, "X")
    raw = as_source(X, "X")
    scaling = None if kind is None else fit_scaling([raw], kind)
    src = raw if scaling is None else scaled(raw, scaling)
    n = src.count_rows()
    m = check_positive_int(n_points, "n_points")
    if m > n:
        raise ValueError(f"n_points={m} exceeds the {n} rows of X")
    nt = n_threads_arg(n_threads)
    a = check_sample_weight(sample_weight, n)
    sampler_name = sampler if isinstance(sampler, str) else type(sampler).__name__
    thinning = isinstance(sampler, str) and sampler == "kernel-thinning"
    if thinning:
        from .sampling.thinning import KernelThinning

        sampler = KernelThinning()
    if scaling is None:
        warn_scales([src], [get_kernel(kernel)], "compress")
    # Weights of a safe scale (only their ratios matter): s_sum_ / weight_sum_ is then exact.
    a = scale_weights(a)[0]
    rng = check_random_state(random_state)
    est, data = sampled_estimator(src, kernel, m, sampler, random_state, n_threads, rng=rng, thinning=thinning)
    est.fit(data, sample_weight=a)
    L, kern = est.landmarks_, est.kernel_
    indices = est.landmark_indices_
    core = kern.to_core()
    s = est.s_sum_ / est.weight_sum_
    Km = _core.kernel_matrix(L, L, core, nt)
    if weights == "signed":
        if ridge == 0.0:
            w = est.weights_
        else:
            w = _core.ridge_weights(Km, s, ridge)
    elif weights == "uniform":
        w = np.full(L.shape[0], 1.0 / L.shape[0])
    else:
        w = _core.simplex_weights(Km, s)["weights"]
    w = np.ascontiguousarray(w, dtype=np.float64)
    mmd, interval = None, None
    positive = n if a is None else int(np.count_nonzero(a))
    if mode is True or (mode == "auto" and positive <= EXACT_MMD_MAX_ROWS):
        an = None if a is None else normalised_weights(a)
        mmd = _mmd(w, Km, s, _self_term(_all_rows(src), an, core, nt))
    elif mode in _COMPUTE_MMD:
        # rows for the estimate drawn independently of the points (rows that are points have
        # rho ~ 0 and would bias it low): a generator of its own from the seed
        mmd_rng = np.random.default_rng([draw_seed(rng, SPLIT_SEED_BOUND), 1])
        mmd, low, high = _estimated_mmd(src, a, w, est.weights_, Km, s, L, kern, mmd_rng, nt)
        interval = (low, high)
    return CompressionResult(
        points=L if scaling is None else np.asarray(raw.take(np.asarray(indices, dtype=np.int64))),
        weights=w,
        indices=np.asarray(indices, dtype=np.int64),
        mmd=mmd,
        kernel=kern,
        method=f"{sampler_name}/{weights}",
        ridge=ridge,
        mmd_interval=interval,
        scaling=scaling,
    )


def sampled_estimator(
    src: RowSource,
    kernel: Kernel | str,
    m: int,
    sampler: SamplerLike,
    random_state: RandomStateLike,
    n_threads: int | None,
    *,
    rng: np.random.Generator | None = None,
    thinning: bool = False,
) -> tuple[NystromKME, SourceLike]:
    """An unfitted NystromKME whose landmarks ``sampler`` picks among at most
    :func:`sampler_rows` rows of ``src``, and what to fit it on (``src``, or its rows in
    memory). A sampler that reads rows and would need more runs on a uniform subsample
    drawn from ``rng`` (default: from ``random_state``), fitted here: the estimator then
    takes its picks as given indices, all of them, since a pivoted Cholesky may stop
    short of m. Otherwise the estimator draws at fit time from ``random_state``."""
    n = src.count_rows()
    reads_rows = not isinstance(sampler, np.ndarray) and as_policy(resolve_sampler(sampler)).needs_data_in_memory
    rows = sampler_rows(n, m, thinning=thinning)
    if reads_rows and rows < n:
        rng = check_random_state(random_state) if rng is None else rng
        chosen = np.sort(rng.choice(n, size=rows, replace=False))
        picker = NystromKME(kernel, n_landmarks=m, sampler=sampler, random_state=rng, n_threads=n_threads)
        picker.fit(src.take(chosen))
        return NystromKME(picker.kernel_, sampler=chosen[picker.landmark_indices_], n_threads=n_threads), src
    # at most sampler_rows for a sampler that reads rows: its factor fits
    data = _all_rows(src) if reads_rows else src
    return NystromKME(kernel, n_landmarks=m, sampler=sampler, random_state=random_state, n_threads=n_threads), data


def _all_rows(src: RowSource) -> np.ndarray:
    """The rows of ``src`` in one array (a few: the sampler's, or the exact MMD's)."""
    arr = src.to_array()
    return arr if arr is not None else np.concatenate([block for _, block in src.chunks()])


def _estimated_mmd(
    src: RowSource,
    a: np.ndarray | None,
    w: np.ndarray,
    alpha: np.ndarray,
    Km: np.ndarray,
    s: np.ndarray,
    L: np.ndarray,
    kernel: Kernel,
    rng: np.random.Generator,
    n_threads: int,
) -> tuple[float, float, float]:
    """(MMD, low, high): the estimate of the module docstring from MMD_ESTIMATE_ROWS rows
    drawn i.i.d. from P_n (proportional to the sample weights ``a``), one pass over the
    rows for mu_n at them; a normal interval at MMD_LEVEL on MMD^2, clamped at 0."""
    n = src.count_rows()
    p = None if a is None else normalised_weights(a)
    S = np.ascontiguousarray(src.take(rng.choice(n, size=MMD_ESTIMATE_ROWS, replace=True, p=p)), dtype=np.float64)
    acc, total = src.kernel_sums(S, kernel, weights=a, n_threads=n_threads)
    mu_n = acc.value() / total  # mu_n at the drawn rows
    core = kernel.to_core()
    mu_alpha = _core.kernel_sums(S, np.ascontiguousarray(L, dtype=np.float64), alpha.reshape(-1, 1), core, n_threads)
    rho = mu_n - mu_alpha[:, 0]
    Kw = (Km * w).sum(axis=1)
    base = math.fsum([fsum_dot(w, Kw), -2.0 * fsum_dot(w, s), fsum_dot(alpha, s)])
    mmd2 = base + math.fsum(rho) / rho.size
    se = float(np.std(rho, ddof=1)) / math.sqrt(rho.size)
    z = NormalDist().inv_cdf(0.5 + MMD_LEVEL / 2)
    point = math.sqrt(max(mmd2, 0.0))
    return point, math.sqrt(max(mmd2 - z * se, 0.0)), max(point, math.sqrt(max(mmd2 + z * se, 0.0)))
