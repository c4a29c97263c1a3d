"""The conditional independence test: a Nyström KCI (Zhang, Peters, Janzing and Schölkopf
2011) in O(n m^2).

Each of X, Y and Z gets its Nyström features in a few principal directions (as the
independence test's, :mod:`~nystrom_kme.independence._features`: one Gaussian kernel at the
median distance; Z keeps more directions, ``Z_COMPONENTS``). The features of X and of Y are
residualised on Z's by ridge regression (R = A - Z_F (Z_F^T Z_F + n lambda I)^{-1} Z_F^T A),
and the statistic is n ||R_X^T R_Y / n||_F^2, the squared cross-covariance of the
residuals: under H0 (X independent of Y given Z) the products w_i = r_X(i) (x) r_Y(i) have
mean zero. Its null, by ``null``:

* ``"spectral"``: n ||mean w||^2 ~ sum_k lambda_k chi^2_1 with lambda the eigenvalues of the
  covariance of w (KCI's chi-square mixture, from the q_X q_Y eigenvalues), drawn B times;
* ``"wild"``: ||sum_i e_i w_i||^2 / n with Rademacher e (a wild bootstrap), B times;
* ``"cluster"``: Y's residual rows permuted within clusters of Z (each row to the nearest
  of n / CLUSTER_ROWS points of Z drawn uniformly), B times.

None is exact (the residuals are estimated); ``bench/independence.py --conditional``
measures their levels, and the default is the measured best (``DEFAULT_NULL``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from .. import _core, defaults
from .._blas import one_blas_thread
from .._landmark_plan import DefaultLandmarks, plan_landmarks
from .._scaling import check_standardize, fit_scaling
from .._test_outcome import TestOutcome, check_count, check_numbers, is_finite, short
from .._validation import RandomStateLike, check_positive_real, check_random_state, n_threads_arg
from ..kernels import Gaussian, Kernel
from ..persistence import JsonResult, persistable
from ..sources import RowSource, SourceLike, as_source, scaled
from ..two_sample.engine import check_level, check_permutations
from ..two_sample.rules import check_permutation_pvalue, permutation_pvalue
from ._arguments import check_not_constant, resolve, same_rows
from ._features import Features, build_features

NULLS = ("spectral", "wild", "cluster")
#: The null of ``null="auto"`` (bench/independence.py --conditional, bench/RESULTS.md).
DEFAULT_NULL = "wild"
#: The ridge of the regressions on Z, per row (G = Z_F^T Z_F + n ridge I): KCI's 1e-3
#: on the kernel matrix is about 1e-3 / n per row; 1e-3 per row left the Z effect in the
#: residuals (level 1.0 at n = 2000 on bench/independence.py's "sin" problem).
DEFAULT_RIDGE = 1e-6
#: Z's kernel: the Gaussian at this multiple of Z's median distance, its directions all
#: but Z_MISSED of the variance (at most Z_COMPONENTS): the regression needs detail (the
#: median bandwidth with 0.1% missed gave a level of 0.15 and 1.0 where this gives 0.1).
Z_SCALE = 0.5
Z_MISSED = 1e-8
#: Directions of X's and Y's features; of Z's (the regression's basis).
XY_COMPONENTS = 16
Z_COMPONENTS = 64
#: Landmarks per variable (every row up to this many).
LANDMARKS = DefaultLandmarks(500, 500)
#: Rows per cluster of Z for the "cluster" null.
CLUSTER_ROWS = 20
#: Rows per block of the products w_i.
BLOCK_ROWS = 1 << 14


def _coordinates(f: Features) -> np.ndarray:
    """The features in coordinates whose inner products are the kernel's: F G^(1/2)."""
    values, vectors = np.linalg.eigh(f.grams[0])
    root = vectors * np.sqrt(np.maximum(values, 0.0)) @ vectors.T
    out: np.ndarray = f.F @ root
    return out


def residuals(A: np.ndarray, Zf: np.ndarray, ridge: float) -> np.ndarray:
    """A minus its ridge regression on Zf (both centred), (n, q)."""
    n = A.shape[0]
    G = Zf.T @ Zf + n * ridge * np.eye(Zf.shape[1])
    out: np.ndarray = A - Zf @ np.linalg.solve(G, Zf.T @ A)
    return out


def _products(Rx: np.ndarray, Ry: np.ndarray, start: int, stop: int) -> np.ndarray:
    out: np.ndarray = np.einsum("ia,ib->iab", Rx[start:stop], Ry[start:stop]).reshape(stop - start, -1)
    return out


def null_statistics(
    Rx: np.ndarray, Ry: np.ndarray, null: str, B: int, rng: np.random.Generator, Zsrc: np.ndarray | None, nt: int
) -> np.ndarray:
    """B draws of the statistic's null (see the module docstring)."""
    n = Rx.shape[0]
    if null == "spectral":
        C = np.zeros((Rx.shape[1] * Ry.shape[1],) * 2)
        for start in range(0, n, BLOCK_ROWS):
            W = _products(Rx, Ry, start, min(n, start + BLOCK_ROWS))
            C += W.T @ W
        lam = np.clip(np.linalg.eigvalsh(C / n), 0.0, None)
        out: np.ndarray = rng.chisquare(1, size=(B, lam.size)) @ lam
        return out
    if null == "wild":
        S = np.zeros((Rx.shape[1] * Ry.shape[1], B))
        for start in range(0, n, BLOCK_ROWS):
            stop = min(n, start + BLOCK_ROWS)
            E = rng.integers(0, 2, size=(stop - start, B)) * 2.0 - 1.0
            S += _products(Rx, Ry, start, stop).T @ E
        out = np.einsum("kb,kb->b", S, S) / n
        return out
    assert Zsrc is not None
    centres = Zsrc[np.sort(rng.choice(n, size=max(2, n // CLUSTER_ROWS), replace=False))]
    labels = np.empty(n, dtype=np.int64)
    core = Gaussian(1.0).to_core()
    for start in range(0, n, BLOCK_ROWS):  # nearest centre: the largest Gaussian kernel value
        block = np.ascontiguousarray(Zsrc[start : start + BLOCK_ROWS])
        labels[start : start + block.shape[0]] = np.argmax(_core.kernel_matrix(block, centres, core, nt), axis=1)
    order = np.argsort(labels, kind="stable")
    cuts = np.flatnonzero(np.diff(labels[order])) + 1
    groups = np.split(order, cuts)
    out = np.empty(B)
    for b in range(B):
        perm = np.arange(n)
        for g in groups:
            perm[g] = g[rng.permutation(g.size)]
        C = Rx.T @ Ry[perm]
        out[b] = float(np.einsum("ab,ab->", C, C)) / n
    return out


@persistable
@dataclass(frozen=True)
class ConditionalIndependenceResult(TestOutcome, JsonResult):
    """Outcome of :func:`conditional_independence_test`.

    Attributes
    ----------
    statistic : float
        n ||R_X^T R_Y / n||_F^2 of the residualised features.
    pvalue : float
        (1 + #{b : T_b >= T}) / (1 + B) over the null's B draws.
    null_distribution : ndarray (B,)
    null : str
        "spectral", "wild" or "cluster".
    kernel_x, kernel_y, kernel_z : Kernel
    n_rows, n_landmarks (of X, Y, Z), n_components (of X, Y, Z), n_draws : int
    ridge, alpha : float

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> z = rng.normal(size=(2000, 1))
    >>> x = np.sin(2 * z) + 0.3 * rng.normal(size=(2000, 1))
    >>> y = np.cos(2 * z) + 0.3 * rng.normal(size=(2000, 1))
    >>> nk.conditional_independence_test(x, y, z, random_state=0).reject      # X _||_ Y | Z
    False
    >>> nk.independence_test(x, y, n_permutations=99, random_state=0).reject   # but not marginally
    True
    """

    json_name: ClassVar = "conditional independence result"
    json_fields: ClassVar = (
        ("statistic", "number"),
        ("pvalue", "number"),
        ("null_distribution", "numbers"),
        ("null", "str"),
        ("kernel_x", "kernel"),
        ("kernel_y", "kernel"),
        ("kernel_z", "kernel"),
        ("n_rows", "count"),
        ("n_landmarks_x", "count"),
        ("n_landmarks_y", "count"),
        ("n_landmarks_z", "count"),
        ("n_components_x", "count"),
        ("n_components_y", "count"),
        ("n_components_z", "count"),
        ("n_draws", "count"),
        ("ridge", "number"),
    )
    json_optional: ClassVar = (("alpha", "number", 0.05),)
    hypothesis: ClassVar = "X independent of Y given Z"

    statistic: float
    pvalue: float
    null_distribution: np.ndarray
    null: str
    kernel_x: Kernel
    kernel_y: Kernel
    kernel_z: Kernel
    n_rows: int
    n_landmarks_x: int
    n_landmarks_y: int
    n_landmarks_z: int
    n_components_x: int
    n_components_y: int
    n_components_z: int
    n_draws: int
    ridge: float
    alpha: float = 0.05
    effect: Any = None

    def __post_init__(self) -> None:
        if self.null not in NULLS:
            raise ValueError(f"null must be one of {NULLS}, got {short(self.null)}")
        for name in ("kernel_x", "kernel_y", "kernel_z"):
            k = getattr(self, name)
            if not isinstance(k, Kernel) or not k.is_resolved:
                raise ValueError(f"{name} must be a Kernel with a numeric bandwidth, got {short(k)}")
        B = check_count(self.n_draws, "n_draws")
        for name in ("n_rows", "n_landmarks_x", "n_landmarks_y", "n_landmarks_z"):
            check_count(getattr(self, name), name)
        for name in ("n_components_x", "n_components_y", "n_components_z"):
            check_count(getattr(self, name), name)
        if not (is_finite(self.statistic) and self.statistic >= 0):
            raise ValueError(f"statistic must be a finite number >= 0, got {short(self.statistic)}")
        if not (is_finite(self.ridge) and self.ridge > 0):
            raise ValueError(f"ridge must be a positive number, got {short(self.ridge)}")
        object.__setattr__(self, "null_distribution", check_numbers(self.null_distribution, "null_distribution", B))
        self._check_alpha()
        if self.effect is not None:
            raise ValueError("effect must be None (the conditional test has no effect size)")
        check_permutation_pvalue(self.pvalue, self.statistic, self.null_distribution, "T")

    def summary(self) -> dict[str, Any]:
        """What ``nystrom-kme info`` prints."""
        return {
            "statistic": self.statistic,
            "pvalue": self.pvalue,
            "null": self.null,
            "n_rows": self.n_rows,
            "kernels": [repr(self.kernel_x), repr(self.kernel_y), repr(self.kernel_z)],
            "n_components": [self.n_components_x, self.n_components_y, self.n_components_z],
            "ridge": self.ridge,
            "reject": self.reject,
            "alpha": self.alpha,
        }

    def explain(self, alpha: float | None = None) -> str:
        """The decision at ``alpha`` and the test in words."""
        lines = [
            self._decision_line(self.alpha if alpha is None else alpha),
            f"Test: Nystrom KCI, the features of X ({self.n_components_x} directions) and of Y "
            f"({self.n_components_y}) residualised on Z's ({self.n_components_z}, ridge {self.ridge:g}), "
            f"{self.n_rows} rows, null: {self.null} ({self.n_draws} draws).",
        ]
        return "\n".join(lines)


def _features(
    src: RowSource, cap: int, rng: np.random.Generator, nt: int, what: str, scale: float = 1.0, missed: float = 1e-3
) -> Features:
    kernels = [k.with_bandwidth(float(k.bandwidth) * scale) for k in resolve([Gaussian()], src, rng)]
    L = plan_landmarks(src, kernels, None, None, rng, nt, default=LANDMARKS, rows=f"the {{n}} rows of {what}")
    return build_features(src, kernels, L, cap, rng, nt, missed_variance=missed)


def conditional_independence_test(
    X: SourceLike,
    Y: SourceLike,
    Z: SourceLike,
    *,
    null: str = "auto",
    n_draws: int = defaults.N_PERMUTATIONS,
    ridge: float = DEFAULT_RIDGE,
    alpha: float = defaults.ALPHA,
    standardize: bool | str = False,
    random_state: RandomStateLike = None,
    n_threads: int | None = None,
) -> ConditionalIndependenceResult:
    """Test of H0: X and Y are independent given Z (rows i.i.d.), a Nyström KCI.

    The features of X and Y (Gaussian kernels at the median distance, Nyström, up to 16
    principal directions) are residualised on Z's (a Gaussian at half Z's median distance,
    up to 64 directions) by ridge regression; the
    statistic is n ||R_X^T R_Y / n||_F^2; its null is a wild bootstrap of the products of
    the residuals by default (``null``: "wild", "spectral" for KCI's chi-square mixture,
    "cluster" for permutations within clusters of Z; measured in bench/independence.py
    --conditional). O(n m^2) time, nothing n x n. The level is asymptotic (the
    regressions are estimated): a Z that acts on X and Y through fine detail its 64
    directions cannot hold leaves dependence in the residuals.

    Parameters
    ----------
    X, Y, Z : array-like (n, d_X), (n, d_Y), (n, d_Z) or sources, the same n rows
    null : {"auto", "wild", "spectral", "cluster"}
    n_draws : int, default=200
        Draws of the null.
    ridge : float, default=1e-6
        Per row: the regressions solve (Z_F^T Z_F + n ridge I) B = Z_F^T A.
    alpha : float, default=0.05
    standardize : bool or {"standard", "robust"}
    random_state : None, int or Generator
    n_threads : int or None

    Returns
    -------
    ConditionalIndependenceResult

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(1)
    >>> z = rng.normal(size=(3000, 1)); e = rng.normal(size=(3000, 1))
    >>> x, y = np.sin(2 * z) + e, np.cos(2 * z) + e**2      # a shared noise: dependent given Z
    >>> res = nk.conditional_independence_test(x, y, z, random_state=0)
    >>> res.reject, res.null
    (True, 'wild')
    """
    if null != "auto" and null not in NULLS:
        raise ValueError(f"null must be 'auto' or one of {NULLS}, got {null!r}")
    chosen = DEFAULT_NULL if null == "auto" else null
    B = check_permutations(n_draws)
    lam = check_positive_real(ridge, "ridge")
    level = check_level(alpha)
    nt = n_threads_arg(n_threads)
    kind = check_standardize(standardize)
    srcs = [as_source(v, name) for v, name in ((X, "X"), (Y, "Y"), (Z, "Z"))]
    n = same_rows(srcs[0], srcs[1])
    same_rows(srcs[0], srcs[2], ("X", "Z"))
    for src, name in zip(srcs, ("X", "Y", "Z")):
        check_not_constant(src, name)
    if kind is not None:
        srcs = [scaled(s, fit_scaling([s], kind)) for s in srcs]
    rng = check_random_state(random_state)
    with one_blas_thread():
        fx = _features(srcs[0], XY_COMPONENTS, rng, nt, "X")
        fy = _features(srcs[1], XY_COMPONENTS, rng, nt, "Y")
        fz = _features(srcs[2], Z_COMPONENTS, rng, nt, "Z", Z_SCALE, Z_MISSED)
        Zf = _coordinates(fz)
        Rx = residuals(_coordinates(fx), Zf, lam)
        Ry = residuals(_coordinates(fy), Zf, lam)
        C = Rx.T @ Ry
        T = float(np.einsum("ab,ab->", C, C)) / n
        Zrows = np.ascontiguousarray(srcs[2].take(np.arange(n))) if chosen == "cluster" else None
        null_T = null_statistics(Rx, Ry, chosen, B, rng, Zrows, nt)
    return ConditionalIndependenceResult(
        statistic=T,
        pvalue=permutation_pvalue(np.r_[T, null_T]),
        null_distribution=null_T,
        null=chosen,
        kernel_x=fx.kernels[0],
        kernel_y=fy.kernels[0],
        kernel_z=fz.kernels[0],
        n_rows=n,
        n_landmarks_x=fx.n_landmarks,
        n_landmarks_y=fy.n_landmarks,
        n_landmarks_z=fz.n_landmarks,
        n_components_x=fx.n_components,
        n_components_y=fy.n_components,
        n_components_z=fz.n_components,
        n_draws=B,
        ridge=lam,
        alpha=level,
    )


__all__ = ["DEFAULT_NULL", "NULLS", "ConditionalIndependenceResult", "conditional_independence_test", "residuals"]
