"""The Nyström embeddings of every prefix of a landmark sequence, from one in-order
pivoted Cholesky factorization: the engine of the certificate of ``n_landmarks="auto"``
(:mod:`nystrom_kme.landmark_search`).

Landmarks x_1, x_2, ... join in their order. Landmark i becomes a pivot when its
residual d_i = k(x_i, x_i) - ||f(x_i)||^2 against the pivots before it exceeds
``PIVOT_TOL`` k(x_i, x_i); otherwise it lies in their span to that tolerance and is
skipped (repeated rows, and the numerical rank deficiency of K_m for smooth kernels on
low-dimensional data). The rows of the pivots' factor L give orthonormal functions
psi = L^{-1} phi(pivots), nested: the first r(m) of them span the pivots among the
first m landmarks. In these coordinates, with f(x) = L^{-1} k(pivots, x) and
c = L^{-1} mu_hat(pivots),

    P_m mu_hat = sum_{j <= r(m)} c_j psi_j,    t(m) = ||P_m mu_hat||^2 = sum_{j <= r(m)} c_j^2,

and the residual of the empirical embedding at any x against the first m landmarks is
g_m(x) = mu_hat(x) - sum_{j <= r(m)} f_j(x) c_j. Both come for every m at once. Skipping
only shrinks the span, so the residual measured is never below that of the projection
on all m landmarks: a bound computed here holds for the latter too.

The factor is kept as one panel per block of landmarks (the block's pivots' rows:
their coordinates against the earlier pivots, and the inverse of their own triangle),
so a new block costs one blocked forward substitution; past MAX_PANELS panels they are
merged into one. Large products go through the core's ``matrix_product`` (bits
independent of the thread count), small ones and the small triangles through numpy:
call it under ``_blas.one_blas_thread``, as the search does, so that numpy's
bits do not depend on its threads either (and small LAPACK calls on several threads do
not thrash on a busy machine). Time: O(m^2 d) kernel values,
O(m^3 / 6) flops; memory 8 r^2 bytes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .. import _core

#: A landmark whose residual is at most PIVOT_TOL k(x, x) is not a pivot. Taken in
#: order (not largest first), pivots barely above the threshold amplify rounding along
#: the factor: on Cauchy rows in the plane (n = 10^4, 1500 landmarks in blocks as the
#: search takes them, rank ~200) t(m) drifted from a dense solve on the same pivots by
#: 4.5e-3 at 1e-8, 3e-5 at 1e-7, 1.3e-8 at 1e-6 and 1e-12 at 1e-5 (issue 34), and can then
#: exceed ||mu_hat_n||^2. The path only proposes (the certificate is for the solver's
#: weights on every landmark), so the directions left out cost nothing but resolution.
PIVOT_TOL = 1e-6
#: Panels kept before they are merged into one (the inverse of the whole factor): the
#: forward substitution costs one product per panel, so a long path of small blocks
#: would spend its time in calls; merging costs O(r^3 / 2), geometric along the path.
MAX_PANELS = 8
#: Products of fewer multiply-adds go through numpy (one BLAS thread under the search):
#: the core's threaded product costs ~0.1 ms a call on small blocks.
LARGE_PRODUCT = 1 << 21


@dataclass(frozen=True)
class _Panel:
    """The pivots of one block: rows start .. start + size - 1 of L."""

    start: int
    left: np.ndarray  # (size, start): their coordinates against the earlier pivots
    inverse: np.ndarray  # (size, size): the inverse of their lower triangle


class NestedProjection:
    """P_m mu_hat for every prefix m of a growing landmark sequence (see the module).

    Parameters
    ----------
    kernel : _core.Kernel
    n_threads : int
    probes : (points (q, d), means (q,)) or None
        Rows at which :meth:`probe_residuals` returns g_m: their points and mu_hat at them.

    Attributes
    ----------
    t : ndarray of shape (m,)
        ||P_i mu_hat||^2 after the first i + 1 landmarks.
    residuals : ndarray of shape (m,)
        g_{i-1}(x_i), the residual at each landmark against the landmarks before it.
    is_pivot : ndarray of shape (m,), bool
    max_diagonal : float
        The largest k(x, x) of a landmark or probe, the scale of the round-off.

    Examples
    --------
    >>> import numpy as np
    >>> from nystrom_kme import _core
    >>> from nystrom_kme.landmark_search._nested_projection import NestedProjection
    >>> X = np.random.default_rng(0).normal(size=(50, 2))
    >>> k = _core.Kernel("gaussian", 1.0)
    >>> means = _core.kernel_row_sums(X, X, k) / 50
    >>> path = NestedProjection(k, 1)
    >>> path.extend(X[:10], means[:10])
    >>> path.extend(X[10:], means[10:])
    >>> alpha = np.linalg.lstsq(_core.kernel_matrix(X, X, k), means, rcond=None)[0]
    >>> bool(abs(path.t[-1] - alpha @ means) < 1e-9)   # every row a landmark: ||mu_hat||^2
    True
    """

    def __init__(
        self, kernel: _core.Kernel, n_threads: int, probes: tuple[np.ndarray, np.ndarray] | None = None
    ) -> None:
        self._kernel, self._n_threads = kernel, n_threads
        self._pivot_points: np.ndarray | None = None
        self._panels: list[_Panel] = []
        self._c = np.zeros(0)
        self._pivot_rows: list[np.ndarray] = []  # landmark positions of the pivots, by block
        self.t = np.zeros(0)
        self.residuals = np.zeros(0)
        self.is_pivot = np.zeros(0, dtype=bool)
        self.max_diagonal = 0.0
        self._probes: tuple[np.ndarray, np.ndarray] | None = None
        self._probe_f = np.zeros((0, 0))
        self._probe_diag = np.zeros(0)
        if probes is not None:
            self.add_probes(*probes)

    @property
    def size(self) -> int:
        return int(self.t.size)

    @property
    def rank(self) -> int:
        return int(self._c.size)

    @property
    def coordinates(self) -> np.ndarray:
        """c (r,): P_m mu_hat = sum_{j <= r(m)} c_j psi_j."""
        return self._c

    def _product(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        if A.shape[0] * A.shape[1] * B.shape[1] < LARGE_PRODUCT:  # the core's threads cost more
            return np.asarray(A @ B)
        return np.asarray(
            _core.matrix_product(
                np.ascontiguousarray(A, dtype=np.float64), np.ascontiguousarray(B, dtype=np.float64), self._n_threads
            )
        )

    def _solve_lower(self, K: np.ndarray) -> np.ndarray:
        """L^{-1} K for K of shape (r, b): the blocked forward substitution."""
        X = np.empty_like(K)
        for panel in self._panels:
            s, a = panel.start, panel.inverse.shape[0]
            rhs = K[s : s + a] if s == 0 else K[s : s + a] - self._product(panel.left, X[:s])
            X[s : s + a] = self._product(panel.inverse, rhs)
        return X

    def extend(self, points: np.ndarray, means: np.ndarray) -> None:
        """Add landmarks in their order.

        Parameters
        ----------
        points : ndarray of shape (b, d)
        means : ndarray of shape (b,)
            mu_hat at the points (their kernel sums over the data, divided by the weight).
        """
        core, nt = self._kernel, self._n_threads
        B = np.ascontiguousarray(points)
        b, r_old = B.shape[0], self.rank
        # k(pivots and block, block) in one call
        both = B if self._pivot_points is None else np.concatenate([self._pivot_points, B])
        K_both = np.asarray(_core.kernel_matrix(both, B, core, nt))
        K_BB = K_both[r_old:]
        diag = np.diag(K_BB).copy()
        self.max_diagonal = max(self.max_diagonal, float(np.max(diag, initial=0.0)))
        if r_old:
            F = self._solve_lower(K_both[:r_old]).T  # (b, r)
            residual_block = K_BB - self._product(F, F.T)
            h = means - self._product(F, self._c[:, None])[:, 0]
        else:
            F, residual_block, h = np.zeros((b, 0)), K_BB, np.asarray(means, dtype=np.float64).copy()
        Lb, pivot = _in_order_cholesky(0.5 * (residual_block + residual_block.T), diag)
        own = Lb[pivot]  # (a, a), lower triangular with a positive diagonal
        inverse = np.linalg.inv(own) if own.size else own
        c_new = inverse @ h[pivot]
        g = h - Lb @ c_new  # against every pivot before each row, own excluded below
        g[pivot] = np.diag(own) * c_new
        increments = np.zeros(b)
        increments[pivot] = c_new * c_new
        t_before = self.t[-1] if self.t.size else 0.0
        self.t = np.concatenate([self.t, t_before + np.cumsum(increments)])
        self.residuals = np.concatenate([self.residuals, g])
        self.is_pivot = np.concatenate([self.is_pivot, pivot])
        if not c_new.size:
            return
        left = np.ascontiguousarray(F[pivot])
        if self._probes is not None and self._probe_f.shape[0]:  # the probes' coordinates on the new pivots
            K_VB = np.asarray(_core.kernel_matrix(np.ascontiguousarray(self._probes[0]), B[pivot], core, nt))
            rhs = K_VB - self._product(self._probe_f, left.T) if r_old else K_VB
            self._probe_f = np.concatenate([self._probe_f, self._product(rhs, inverse.T)], axis=1)
        self._panels.append(_Panel(start=r_old, left=left, inverse=inverse))
        if len(self._panels) > MAX_PANELS:  # one panel: the whole inverse, one product per block
            whole = self._solve_lower(np.eye(self.rank + c_new.size))
            self._panels = [_Panel(start=0, left=np.zeros((whole.shape[0], 0)), inverse=whole)]
        self._pivot_rows.append(self.size - b + np.flatnonzero(pivot))
        new_points = B[pivot]
        self._pivot_points = (
            new_points if self._pivot_points is None else np.concatenate([self._pivot_points, new_points])
        )
        self._c = np.concatenate([self._c, c_new])

    def add_probes(self, points: np.ndarray, means: np.ndarray) -> None:
        """More rows at which :meth:`probe_residuals` returns g_m: their coordinates on the
        pivots so far (O(q r (d + r))), kept up to date as landmarks join.

        Parameters
        ----------
        points : ndarray of shape (q, d)
        means : ndarray of shape (q,)
            mu_hat at the points.
        """
        P = np.ascontiguousarray(points)
        core, nt = self._kernel, self._n_threads
        diag = np.asarray(_core.kernel_diagonal(P, core, nt), dtype=np.float64)
        self.max_diagonal = max(self.max_diagonal, float(np.max(diag, initial=0.0)))
        if self.rank:
            assert self._pivot_points is not None
            K = np.asarray(_core.kernel_matrix(self._pivot_points, P, core, nt))  # (r, q)
            f = self._solve_lower(K).T
        else:
            f = np.zeros((P.shape[0], 0))
        m = np.asarray(means, dtype=np.float64)
        if self._probes is None:
            self._probes, self._probe_f, self._probe_diag = (P, m), f, diag
        else:
            self._probes = (np.concatenate([self._probes[0], P]), np.concatenate([self._probes[1], m]))
            self._probe_f = np.concatenate([self._probe_f, f])
            self._probe_diag = np.concatenate([self._probe_diag, diag])

    @property
    def n_probes(self) -> int:
        return 0 if self._probes is None else int(self._probes[1].size)

    def probe_points(self) -> np.ndarray:
        """The probe rows, shape (q, d)."""
        if self._probes is None:
            raise ValueError("no probes were given")
        return self._probes[0]

    def probe_means(self) -> np.ndarray:
        """mu_hat at the probe rows, shape (q,)."""
        if self._probes is None:
            raise ValueError("no probes were given")
        return self._probes[1]

    def probe_residuals(self) -> np.ndarray:
        """g_m at the probes for the current m, shape (q,)."""
        if self._probes is None:
            raise ValueError("no probes were given")
        explained = self._product(self._probe_f, self._c[:, None])[:, 0] if self.rank else 0.0
        return np.asarray(self._probes[1] - explained)

    def probe_residual_diagonal(self) -> np.ndarray:
        """d_m(x) = k(x, x) - ||f(x)||^2 at the probes, shape (q,): their squared distance
        to the pivots' span in the RKHS (0 to round-off for a probe in it)."""
        return np.asarray(self._probe_diag - np.einsum("ij,ij->i", self._probe_f, self._probe_f))

    def residual_diagonal(self, points: np.ndarray) -> np.ndarray:
        """d_m(x) = k(x, x) - ||f(x)||^2 at any rows (q, d) against all the pivots so far,
        shape (q,), without keeping them: O(q r (d + r))."""
        P = np.ascontiguousarray(points)
        diag = np.asarray(_core.kernel_diagonal(P, self._kernel, self._n_threads), dtype=np.float64)
        if not self.rank:
            return diag
        assert self._pivot_points is not None
        f = self._solve_lower(np.asarray(_core.kernel_matrix(self._pivot_points, P, self._kernel, self._n_threads)))
        return np.asarray(diag - np.einsum("ij,ij->j", f, f))

    def weights(self, m: int) -> np.ndarray:
        """beta of shape (m,) with P_m mu_hat = sum_i beta_i phi(x_i) (0 off the pivots,
        whose span it uses): the blocked backward substitution of L^T beta = c."""
        r = int(np.count_nonzero(self.is_pivot[:m]))
        beta_pivots = np.zeros(r)
        pending = np.zeros(r)  # sum over later panels of left^T beta
        for panel in reversed(self._panels):
            if panel.start >= r:
                continue
            a = min(panel.inverse.shape[0], r - panel.start)
            s = panel.start
            part = panel.inverse[:a, :a].T @ (self._c[s : s + a] - pending[s : s + a])
            beta_pivots[s : s + a] = part
            if s:
                pending[:s] += panel.left[:a].T @ part
        out = np.zeros(m)
        rows = np.concatenate(self._pivot_rows) if self._pivot_rows else np.zeros(0, dtype=np.int64)
        out[rows[:r]] = beta_pivots
        return out


def _in_order_cholesky(R: np.ndarray, diag: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(L (b, a), pivot (b,) bool): the Cholesky factor of the PSD block R taken in row
    order, a row a pivot when its residual exceeds PIVOT_TOL diag; L's columns are the
    pivots', zero above each pivot's row."""
    try:  # no skipped row: one LAPACK call
        L = np.linalg.cholesky(R)
        if np.all(np.diag(L) ** 2 > PIVOT_TOL * diag):
            return L, np.ones(R.shape[0], dtype=bool)
    except np.linalg.LinAlgError:
        pass
    b = R.shape[0]
    L = np.zeros((b, b))
    pivot = np.zeros(b, dtype=bool)
    a = 0
    for i in range(b):
        row = L[i, :a]
        d = R[i, i] - row @ row
        if d > PIVOT_TOL * diag[i]:
            L[i:, a] = (R[i:, i] - L[i:, :a] @ row) / math.sqrt(d)
            pivot[i] = True
            a += 1
    return L[:, :a], pivot


__all__ = ["LARGE_PRODUCT", "MAX_PANELS", "PIVOT_TOL", "NestedProjection"]
