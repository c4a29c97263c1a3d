"""From every kernel's permuted statistics to one test: the aggregation rules. Pure array
functions, no data access.

Each rule maps the (K kernels) x (B + 1 splits) matrix of per-kernel statistics, column 0
the observed split, to one statistic per split, treating all B + 1 columns alike
(anything it estimates from the columns is a symmetric function of them). Under H0 the
B + 1 splits are exchangeable, so the p-value (1 + #{b >= 1: F_b >= F_0}) / (B + 1) of the
aggregate has exact level whatever the data and the number of kernels (Hemerik and
Goeman 2018; Biggs, Schrab and Gretton 2023, Sec. 3).

The rules (``RULES``, one object each, carrying all of a rule's semantics: the scores,
the aggregate, the kernel that decided, the check of a saved result):

* ``"maxz"`` (the default of :func:`~nystrom_kme.two_sample_test`, issue 42): the
  largest standardised statistic, z_k = (U_k - mean U_k) / sd U_k over the B + 1 splits
  of each kernel.
* ``"fuse"``: MMD-FUSE's soft maximum (log-mean-exp) of lambda U_k / ||K_0||_F, the
  kernel matrices' off-diagonal Frobenius norms as scales.
* ``"mmdagg"``: minus the smallest marginal permutation p-value (MMDAgg's correction,
  uniform weights).
* ``"fuse+median"`` (the previous default, issue 27): the smaller marginal p-value of
  MMD-FUSE over the grid's kernels and of the median Gaussian.

A test with one kernel is the same pipeline with the rule ``ONE_KERNEL`` (its own biased
MMD^2). The drift detectors take the same rules.
"""

from __future__ import annotations

import math

import numpy as np

from .._test_outcome import short


def unbiased_mmd2(
    T: np.ndarray,
    n1: int,
    n2: int,
    *,
    cross: np.ndarray | None = None,
    total: np.ndarray | None = None,
    trace: np.ndarray | None = None,
) -> np.ndarray:
    """The unbiased MMD^2 of each split from the biased one, (K, B + 1).

    For labels w (+1/n1 on the first sample, -1/n2 on the second) and a positive
    semi-definite matrix G on the pooled rows (the kernel matrix, or its Nyström
    approximation Phi Phi^T), the inputs are the quadratic forms

    * ``T[k, b]`` = w_b^T G_k w_b, the biased (V-statistic) MMD^2;
    * ``cross[k, b]`` = w_b^T G_k 1 and ``total[k]`` = 1^T G_k 1;
    * ``trace[k]`` = tr G_k (N for a radial kernel's exact matrix).

    From them the within- and between-sample sums follow (a = the first sample's
    indicator = (w + 1/n2) n1 n2 / N), and
    U = (XX - D_X) / (n1 (n1 - 1)) + (YY - D_Y) / (n2 (n2 - 1)) - 2 XY / (n1 n2), with the
    diagonal D_X = (n1 / N) trace (exact when the diagonal is constant). ``cross`` and
    ``total`` may be None when n1 == n2 (their terms cancel). With ``trace`` None it is
    set so that the statistics average to 0 over the B + 1 splits, the value an
    unbiased statistic has under permutation (a symmetric function of the splits, so
    the level stays exact).

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.two_sample.rules import unbiased_mmd2
    >>> rng = np.random.default_rng(0)
    >>> Z = rng.normal(size=(7, 2)); G = np.exp(-((Z[:, None] - Z[None]) ** 2).sum(-1) / 2)
    >>> w = np.r_[np.full(3, 1 / 3), np.full(4, -1 / 4)]
    >>> T = np.array([[w @ G @ w]]); c = np.array([[w @ G.sum(1)]])
    >>> U = unbiased_mmd2(T, 3, 4, cross=c, total=np.array([G.sum()]), trace=np.array([7.0]))
    >>> X, Y = G[:3, :3], G[3:, 3:]
    >>> direct = ((X.sum() - 3) / 6 + (Y.sum() - 4) / 12 - 2 * G[:3, 3:].mean())
    >>> bool(np.isclose(U[0, 0], direct))
    True
    """
    T = np.atleast_2d(np.asarray(T, dtype=np.float64))
    N = n1 + n2
    if n1 < 2 or n2 < 2:
        raise ValueError("the unbiased MMD needs at least 2 points per sample")
    if n1 == n2:
        # a = (n w + 1) / 2, c = (1 - n w) / 2 elementwise: the cross terms cancel and
        # XX + YY = (n^2 T + 1^T G 1) / 2, XY = (1^T G 1 - n^2 T) / 4.
        n = n1
        tot = np.zeros(T.shape[0]) if total is None else np.asarray(total, dtype=np.float64)
        within = (n * n * T + tot[:, None]) / 2
        between = (tot[:, None] - n * n * T) / 4
        U = within / (n * (n - 1)) - 2 * between / (n * n)
        diag_coefficient = 1.0 / (n * (n - 1))  # (D_X + D_Y) / (n (n - 1)), D_X + D_Y = trace
    else:
        if cross is None or total is None:
            raise ValueError("unequal sample sizes need the cross and total terms")
        c = n1 * n2 / N
        tot = np.asarray(total, dtype=np.float64)[:, None]
        cross = np.atleast_2d(np.asarray(cross, dtype=np.float64))
        XX = c * c * (T + 2 * cross / n2 + tot / (n2 * n2))
        at = c * (cross + tot / n2)  # a^T G 1
        YY = tot - 2 * at + XX
        XY = at - XX
        U = XX / (n1 * (n1 - 1)) + YY / (n2 * (n2 - 1)) - 2 * XY / (n1 * n2)
        diag_coefficient = (1.0 / (n1 - 1) + 1.0 / (n2 - 1)) / N
    centred: np.ndarray
    if trace is None:
        centred = U - U.mean(axis=1, keepdims=True)
    else:
        centred = U - diag_coefficient * np.asarray(trace, dtype=np.float64)[:, None]
    return centred


def standardised(U: np.ndarray) -> np.ndarray:
    """z_k = (U_k - mean U_k) / sd U_k over each kernel's B + 1 splits, (K, B + 1); a kernel
    whose statistics do not vary (constant data) gets z = 0.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.two_sample.rules import standardised
    >>> standardised(np.array([[3.0, 1.0, 2.0], [5.0, 5.0, 5.0]])).round(3).tolist()
    [[1.225, -1.225, 0.0], [0.0, 0.0, 0.0]]
    """
    U = np.atleast_2d(np.asarray(U, dtype=np.float64))
    centred = U - U.mean(axis=1, keepdims=True)
    sd = np.sqrt((centred * centred).mean(axis=1, keepdims=True))
    # a spread below the rounding of the values is no spread (constant data, ties)
    floor = 64 * np.finfo(np.float64).eps * np.abs(U).max(axis=1, keepdims=True)
    out: np.ndarray = np.where(sd > floor, centred / np.where(sd > floor, sd, 1.0), 0.0)
    return out


def fuse_scores(U: np.ndarray, frobenius: np.ndarray, n1: int, n2: int, temperature: float = 1.0) -> np.ndarray:
    """The normalised statistics of MMD-FUSE, (K, B + 1): temperature x
    n (n - 1) sqrt(n (n - 1)) U / ||K_0||_F with n = min(n1, n2) and ||K_0||_F the
    Frobenius norm of each kernel matrix without its diagonal (a permutation-invariant
    scale), i.e. lambda MMD^2 / sqrt(N_hat) with lambda = sqrt(n (n - 1)) as in the
    paper's code. A kernel whose off-diagonal vanishes (far narrower than every distance)
    has no statistic to normalise: its scores are 0.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.two_sample.rules import fuse_scores
    >>> fuse_scores(np.array([[0.01, -0.02]]), np.array([10.0]), 11, 11).round(3).tolist()
    [[1.154, -2.307]]
    """
    n = min(n1, n2)
    scale = n * (n - 1) * math.sqrt(n * (n - 1)) * float(temperature)
    frob = np.asarray(frobenius, dtype=np.float64)
    if not np.isfinite(frob).all() or (frob < 0).any():
        raise ValueError("the off-diagonal Frobenius norms must be finite and non-negative")
    U = np.atleast_2d(U)
    positive = frob > 0
    out: np.ndarray = np.where(positive[:, None], scale * U / np.where(positive, frob, 1.0)[:, None], 0.0)
    return out


def log_mean_exp(M: np.ndarray) -> np.ndarray:
    """log((1/K) sum_k exp(M[k, b])) for each column b, computed stably.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.two_sample.rules import log_mean_exp
    >>> log_mean_exp(np.array([[0.0, 1000.0], [0.0, 1000.0]])).tolist()
    [0.0, 1000.0]
    """
    M = np.atleast_2d(np.asarray(M, dtype=np.float64))
    top = M.max(axis=0)
    out: np.ndarray = top + np.log(np.exp(M - top).mean(axis=0))
    return out


def marginal_pvalues(U: np.ndarray) -> np.ndarray:
    """For each kernel and split, #{b': U[k, b'] >= U[k, b]} / (B + 1), (K, B + 1): the
    permutation p-value of that split's statistic among all B + 1 (column 0: the
    observed split's marginal p-value).

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.two_sample.rules import marginal_pvalues
    >>> marginal_pvalues(np.array([[3.0, 1.0, 2.0, 2.0]])).tolist()
    [[0.25, 1.0, 0.75, 0.75]]
    """
    U = np.atleast_2d(np.asarray(U, dtype=np.float64))
    columns = U.shape[1]
    order = np.sort(U, axis=1)
    # entries >= U[k, b] = columns - (entries < U[k, b])
    below = np.stack([np.searchsorted(order[k], U[k], side="left") for k in range(U.shape[0])])
    out: np.ndarray = (columns - below) / columns
    return out


def permutation_pvalue(F: np.ndarray) -> float:
    """(1 + #{b >= 1: F_b >= F_0}) / (B + 1) for the aggregate F of B + 1 splits
    (column 0 observed): larger F is more extreme.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.two_sample.rules import permutation_pvalue
    >>> permutation_pvalue(np.array([5.0, 1.0, 6.0, 2.0]))
    0.5
    """
    F = np.asarray(F, dtype=np.float64)
    return float((1 + np.count_nonzero(F[1:] >= F[0])) / F.size)


def check_permutation_pvalue(pvalue: object, statistic: float, null: np.ndarray, symbol: str = "T") -> None:
    """A saved result's p-value against its statistic and null distribution (a forged or
    altered file is refused): ValueError unless ``pvalue == permutation_pvalue``."""
    expected = permutation_pvalue(np.r_[statistic, null])
    if pvalue != expected:
        raise ValueError(
            f"pvalue must be (1 + #{{b: {symbol}_b >= {symbol}}}) / (1 + B) = {expected!r} for this "
            f"statistic and null distribution, got {short(pvalue)}"
        )


class Rule:
    """One way of turning every kernel's permuted statistics into one test, with all its
    semantics: the per-kernel scores (K, B + 1), their aggregate (B + 1,), which kernel
    decided a result, and what a saved result of the rule can hold. A rule is one row of
    ``RULES``; nothing outside this module tests a rule's name.

    Attributes
    ----------
    name, description : str
    needs_frobenius : bool
        The scores need MMD-FUSE's normalisers ||K_0||_F.
    adds_median : bool
        The collection gets the median-bandwidth Gaussian as its last kernel.
    min_kernels : int
    statistic : str
        "biased" (the V-statistic T, one kernel) or "unbiased" (U, collections): which
        matrix of :class:`~nystrom_kme.two_sample._statistics.PermutedStatistics` it reads.
    statistic_text : str
        What the aggregate is, in words (a result's ``explain()`` says it: for the rules
        whose aggregate is minus a p-value, why the statistic is negative).
    """

    name: str = ""
    description: str = ""
    statistic_text: str = ""
    needs_frobenius = False
    adds_median = False
    min_kernels = 1
    statistic = "unbiased"

    def scores(self, U: np.ndarray, frob: np.ndarray | None, n1: int, n2: int, temperature: float) -> np.ndarray:
        """Each kernel's score for every split, (K, B + 1)."""
        raise NotImplementedError

    def aggregate(self, scores: np.ndarray) -> np.ndarray:
        """The test's statistic for every split, (B + 1,): larger is more extreme."""
        return _max(scores)

    def deciding(self, statistic: float, pvalues: np.ndarray, scores: np.ndarray, U0: np.ndarray) -> int:
        """The kernel whose p-value decided the test: by default the smallest marginal
        p-value, ties broken by the larger score, then the larger MMD^2, then the order.

        Parameters
        ----------
        statistic : float
            The observed aggregate F_0.
        pvalues, scores, U0 : ndarray of shape (K,)
            Each kernel's marginal p-value, score and statistic on the observed split.
        """
        return int(np.lexsort((np.arange(pvalues.size), -U0, -scores, pvalues))[0])

    def check(self, statistic: float, null: np.ndarray, scores: np.ndarray, pvalues: np.ndarray) -> None:
        """ValueError unless a (saved) result of this rule is one it can give: its
        statistic the aggregate of its scores, every aggregate where the rule puts it."""
        expected = float(self.aggregate(scores[:, None])[0])
        if not math.isclose(statistic, expected, rel_tol=1e-9, abs_tol=1e-12):
            raise ValueError(
                f"statistic must be the {self.name!r} aggregate of the kernel scores, {expected!r}, got {statistic!r}"
            )

    def __repr__(self) -> str:
        return f"Rule({self.name!r})"


def _pvalue_aggregates(null: np.ndarray, statistic: float, B: int) -> bool:
    """Aggregates that are minus a p-value of B + 1 splits lie in [-1, -1 / (B + 1)]."""
    values = np.r_[statistic, null]
    return bool(((values <= -1 / (B + 1) + 1e-12) & (values >= -1.0)).all())


class OneKernel(Rule):
    """One kernel: its own (biased) MMD^2, the test of Chatalic et al. (2025)."""

    name = "one kernel"
    description = "the MMD with one kernel"
    statistic_text = "the kernel's own statistic"
    statistic = "biased"

    def scores(self, U: np.ndarray, frob: np.ndarray | None, n1: int, n2: int, temperature: float) -> np.ndarray:
        return np.atleast_2d(U)

    def deciding(self, statistic: float, pvalues: np.ndarray, scores: np.ndarray, U0: np.ndarray) -> int:
        return 0


class MaxZ(Rule):
    """The largest standardised MMD^2: each kernel in units of its own permutation spread."""

    name = "maxz"
    description = "the largest standardised MMD^2 (each kernel in units of its permutation spread)"
    statistic_text = "the largest of the kernels' standardised statistics"

    def scores(self, U: np.ndarray, frob: np.ndarray | None, n1: int, n2: int, temperature: float) -> np.ndarray:
        return standardised(U)

    def check(self, statistic: float, null: np.ndarray, scores: np.ndarray, pvalues: np.ndarray) -> None:
        bound = math.sqrt(null.size) + 1e-9  # |z| <= sqrt(B) for B + 1 standardised values
        if not ((np.abs(null) <= bound).all() and (np.abs(scores) <= bound).all()):
            raise ValueError(f"null_distribution or kernel_scores lie outside what {self.name!r} can give")
        super().check(statistic, null, scores, pvalues)


class Fuse(Rule):
    """MMD-FUSE's soft maximum of the normalised statistics."""

    name = "fuse"
    description = "MMD-FUSE (soft maximum of the normalised MMDs)"
    statistic_text = "MMD-FUSE's soft maximum (log-mean-exp) of the kernels' normalised MMD^2"
    needs_frobenius = True

    def scores(self, U: np.ndarray, frob: np.ndarray | None, n1: int, n2: int, temperature: float) -> np.ndarray:
        assert frob is not None
        return fuse_scores(U, frob, n1, n2, temperature)

    def aggregate(self, scores: np.ndarray) -> np.ndarray:
        return log_mean_exp(scores)


class FuseAndMedian(Fuse):
    """The smaller marginal p-value of MMD-FUSE over the grid's kernels and of the
    median-bandwidth Gaussian (the last kernel)."""

    name = "fuse+median"
    description = (
        "the smaller marginal p-value of MMD-FUSE over the grid's kernels and of the median-bandwidth Gaussian"
    )
    statistic_text = (
        "minus the smaller of two marginal p-values, MMD-FUSE's over the grid's kernels and the "
        "median-bandwidth Gaussian's"
    )
    adds_median = True
    min_kernels = 2

    def aggregate(self, scores: np.ndarray) -> np.ndarray:
        return fuse_and_median(scores)

    def deciding(self, statistic: float, pvalues: np.ndarray, scores: np.ndarray, U0: np.ndarray) -> int:
        """The median kernel when its p-value is the smaller one (F_0 = -p of the median),
        else FUSE's kernel with the smallest marginal p-value."""
        if pvalues[-1] <= -statistic + 1e-12:
            return int(pvalues.size - 1)
        return super().deciding(statistic, pvalues[:-1], scores[:-1], U0[:-1])

    def check(self, statistic: float, null: np.ndarray, scores: np.ndarray, pvalues: np.ndarray) -> None:
        B = null.size
        if not _pvalue_aggregates(null, statistic, B):
            raise ValueError(f"null_distribution or statistic lie outside what {self.name!r} can give")
        if not statistic >= -float(pvalues[-1]) - 1e-12:
            raise ValueError(
                f"statistic must be at least minus the median kernel's marginal p-value, "
                f"{-float(pvalues[-1])!r}, got {statistic!r}"
            )


class MMDAgg(Rule):
    """MMDAgg's smallest marginal p-value (uniform weights)."""

    name = "mmdagg"
    description = "MMDAgg (minimum marginal p-value)"
    statistic_text = "minus the smallest marginal p-value"

    def scores(self, U: np.ndarray, frob: np.ndarray | None, n1: int, n2: int, temperature: float) -> np.ndarray:
        return -marginal_pvalues(U)

    def check(self, statistic: float, null: np.ndarray, scores: np.ndarray, pvalues: np.ndarray) -> None:
        if not _pvalue_aggregates(null, statistic, null.size):
            raise ValueError(f"null_distribution or statistic lie outside what {self.name!r} can give")
        if not math.isclose(statistic, -float(pvalues.min()), rel_tol=1e-9, abs_tol=1e-12):
            raise ValueError(
                f"statistic must be minus the smallest marginal p-value, {-float(pvalues.min())!r}, got {statistic!r}"
            )


def _max(scores: np.ndarray) -> np.ndarray:
    out: np.ndarray = np.atleast_2d(scores).max(axis=0)
    return out


def fuse_and_median(scores: np.ndarray) -> np.ndarray:
    """The aggregate of "fuse+median", (B + 1,): minus the smaller of two marginal p-values
    of each split, that of MMD-FUSE's statistic over every kernel but the last and that of
    the last kernel (the median-bandwidth Gaussian) alone. FUSE weighs the narrow kernels
    most (local differences: perturbations, mixtures); the median kernel is the one that
    sees a plain mean shift; the smaller p-value of the two is calibrated by the same
    permutations, so the level stays exact.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme.two_sample.rules import fuse_and_median
    >>> fuse_and_median(np.array([[5.0, 1.0, 2.0, 0.0], [0.0, 3.0, 1.0, 2.0]])).tolist()
    [-0.25, -0.25, -0.5, -0.5]
    """
    S = np.atleast_2d(scores)
    if S.shape[0] < 2:
        raise ValueError("fuse+median needs the collection's kernels and the median kernel (at least 2)")
    both = np.stack([log_mean_exp(S[:-1]), S[-1]])
    out: np.ndarray = -marginal_pvalues(both).min(axis=0)
    return out


#: The aggregation rules of a collection of kernels, by name (the extension point:
#: EXTENDING.md, "Aggregation rules").
RULES: dict[str, Rule] = {rule.name: rule for rule in (MaxZ(), Fuse(), MMDAgg(), FuseAndMedian())}
#: The aggregation rules' names.
AGGREGATIONS = tuple(RULES)
#: The rule of a test with one kernel.
ONE_KERNEL = OneKernel()


__all__ = [
    "AGGREGATIONS",
    "ONE_KERNEL",
    "RULES",
    "Rule",
    "check_permutation_pvalue",
    "fuse_and_median",
    "fuse_scores",
    "log_mean_exp",
    "marginal_pvalues",
    "permutation_pvalue",
    "standardised",
    "unbiased_mmd2",
]
