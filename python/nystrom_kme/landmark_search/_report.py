"""What the search of ``n_landmarks="auto"`` returns: the user's report
(:class:`LandmarkSearch`, ``n_landmarks_report_``, with its :meth:`~LandmarkSearch.explain`)
and the caller's result (:class:`SearchResult`: the landmarks, their sums and solve)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._compensated import CompensatedSum
from ._statistical_error import StatisticalError


@dataclass(frozen=True, repr=False)
class LandmarkSearch:
    """What ``NystromKME(n_landmarks="auto")`` found (its ``n_landmarks_report_``).

    Attributes
    ----------
    n_landmarks : int
        m of the returned embedding.
    approximation_error : float
        The upper bound, at ``confidence``, on e = ||mu_hat_n - mu_m|| (RKHS norm) of the
        returned embedding (0 when every row is a landmark; inf when nothing bounds it).
    estimate : float
        The point estimate of e (its square clamped at 0).
    statistical_error : StatisticalError
        sigma, the RMS error of the empirical embedding, with its standard error and its
        lower confidence bound ``lower``.
    ratio : float
        approximation_error / statistical_error.lower, the quantity certified against
        ``tol`` (when sigma's bound is 0: 0 for an error zero to round-off, else inf).
    tol : float
        The bound to certify on ``ratio`` (0.458: RMS error within 10%).
    confidence : float
    converged : bool
        The search stopped on its own: the bound was met ("tolerance"), or nothing more
        could be gained ("plateau", "exhausted", "every row"); False when
        ``max_landmarks`` stopped it.
    certified : bool
        ratio <= tol (or both errors zero to round-off) with fewer landmarks than rows;
        then ``stop`` is "tolerance".
    round_off : float
        The round-off level of the squared error (see the module documentation).
    stop : str
        "tolerance" (certified), "plateau" (no row can join the landmarks' span: more
        landmarks change nothing), "exhausted" (a pivoted-Cholesky sampler found no
        further landmark), "every row" (sampling without replacement took all n rows:
        exact), or "max_landmarks".
    path : tuple of int
        m at the end of each block of landmarks.
    path_ratios : tuple of float
        The screen's estimate of e / sigma at each m of ``path`` (a point estimate that
        only decides when the certificate is tried; inf before enough values).
    attempts : tuple of (int, float)
        Each m where the certificate was evaluated, with its bound on e / sigma's lower bound.
    validation : str
        "exact" (||mu_hat_n||^2 computed over every pair of rows) or "validation"
        (validation rows drawn independently of the landmarks).
    screening : str
        What the screen read: "landmarks" (each landmark validates the ones before it)
        or "probes" (256 independent rows).
    n_validation : int
        The rows behind the last bound (n for "exact").
    nested : bool
        Whether every draw of the sampler extended the previous one.
    seconds : float
        Wall time of the search.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> X = np.random.default_rng(0).normal(size=(5000, 2))
    >>> kme = nk.NystromKME(nk.Gaussian(1.0), n_landmarks="auto", random_state=0).fit(X)
    >>> rep = kme.n_landmarks_report_
    >>> rep.certified, rep.n_landmarks == kme.landmarks_.shape[0], rep.ratio <= rep.tol
    (True, True, True)
    """

    n_landmarks: int
    approximation_error: float
    estimate: float
    statistical_error: StatisticalError
    ratio: float
    tol: float
    confidence: float
    converged: bool
    certified: bool
    round_off: float
    stop: str
    path: tuple[int, ...]
    path_ratios: tuple[float, ...]
    attempts: tuple[tuple[int, float], ...]
    validation: str
    screening: str
    n_validation: int
    nested: bool
    seconds: float

    def __repr__(self) -> str:
        state = (
            ""
            if self.certified
            else ", NOT certified below m = n (every row a landmark)"
            if self.stop == "every row"
            else ", NOT certified"
            if self.converged
            else ", NOT converged (max_landmarks reached)"
        )
        return (
            f"LandmarkSearch(m={self.n_landmarks}, approximation <= {self.approximation_error:.3g} "
            f"= {self.ratio:.3g} x statistical error {self.statistical_error.value:.3g} "
            f"(>= {self.statistical_error.lower:.3g}), tol={self.tol:.3g} at {self.confidence:g}, "
            f"{self.validation}, {self.seconds:.3g} s{state})"
        )

    def explain(self) -> str:
        """A paragraph a user can quote (also ``str(report)``; the CLI prints it).

        Examples
        --------
        >>> import numpy as np, nystrom_kme as nk
        >>> X = np.ones((400, 2))                      # constant rows: sigma = 0
        >>> rep = nk.NystromKME(nk.Gaussian(1.0), n_landmarks="auto").fit(X).n_landmarks_report_
        >>> rep.n_landmarks, rep.certified, rep.stop, "zero to round-off" in rep.explain()
        (1, True, 'tolerance', True)
        """
        st = self.statistical_error
        how = (
            f"||mu_hat_n||^2 computed over every pair of the {self.n_validation} rows"
            if self.validation == "exact"
            else f"{self.n_validation} validation rows drawn independently of the landmarks"
        )
        head = (
            f"m = {self.n_landmarks}: the Nyström embedding is within {self.approximation_error:.3g} "
            f"(RKHS norm, upper bound at confidence {self.confidence:g} for any data; estimate "
            f"{self.estimate:.3g}) of the empirical embedding, {self.ratio:.3g} x a lower bound "
            f"{st.lower:.3g} on its statistical error (estimate {st.value:.3g}, n_eff = {st.n_effective:.6g}); "
            f"target {self.tol:.3g}, i.e. an RMS error within {math.sqrt(1 + self.tol**2) - 1:.1%} of the "
            f"empirical one's. Checked by {how}."
        )
        if not self.converged:
            return head + (
                " The search stopped at max_landmarks before meeting the target: "
                "nothing is certified; raise max_landmarks or tol."
            )
        if self.stop == "every row":
            return head + (
                " Every row is a landmark: the embedding is exact, but NOT certified below m = n: no "
                f"landmark set smaller than the {self.n_landmarks} rows met the target, so it is no cheaper "
                "than the empirical one (EmpiricalKME); a larger tol would allow fewer landmarks."
            )
        if self.certified and st.lower <= self.round_off:
            return head + (
                f" The error is zero to round-off (at most {self.round_off:.2g}) and so is the statistical "
                "error: the kernel is constant on the data."
            )
        if self.certified:
            return head + " The target is met."
        if self.stop == "plateau":
            body = (
                " The landmarks' span stopped growing (every row lies in it to 1e-6 of k(x, x)): more landmarks change "
                "nothing float64 can see."
            )
        elif self.stop == "exhausted":
            body = " The sampler found no further landmark (the kernel matrix is exhausted to its tolerance)."
        else:
            body = ""
        return head + body + " NOT certified: the bound is above the target."

    def __str__(self) -> str:
        return self.explain()


@dataclass(frozen=True)
class SearchResult:
    """What :func:`search_landmarks` found: the final landmark set, its sums and solve.

    Attributes
    ----------
    indices : ndarray of shape (m,), int64
        Rows of the source.
    landmarks : ndarray of shape (m, n_features)
    sums : CompensatedSum of shape (m,)
        sum_i w_i k(l_j, x_i).
    weight_sum : float
        sum_i w_i.
    solution : tuple
        The core's (alpha (m, 1), solver used, rank) for these landmarks and sums.
    report : LandmarkSearch
    """

    indices: np.ndarray
    landmarks: np.ndarray
    sums: CompensatedSum
    weight_sum: float
    solution: tuple[np.ndarray, str, int]
    report: LandmarkSearch


__all__ = ["LandmarkSearch", "SearchResult"]
