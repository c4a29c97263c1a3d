"""Each variable's kernels as a few centred feature columns: the input of every
permuted statistic of the independence tests.

For one variable (the rows of X, or of Y) and its kernels k_1..k_K (the bandwidth grid),
the Nyström features of kernel k on landmarks L are phi_k(x) = P_k k(L, x), P_k from the
pivoted Cholesky factor of K_m (``_core.nystrom_feature_sums``; phi_k(x)^T phi_k(x') is the
Nyström approximation of k(x, x'); with every row a landmark, the kernel itself). The
kernels' centred features are stacked, each scaled to unit total variance, and their
principal directions V are estimated from a uniform subsample of the rows: the basis
F = sum_k phi_k(X) V_k (n, Q) holds every kernel's features up to the variance the Q
directions miss (Phi_k ~ F V_k^T), so that for kernels k of X and l of Y

    ||Phi_k^T P Psi_l||_F^2 = tr(D G^Y_l D^T G^X_k),   D = F_X^T P F_Y (Q_X, Q_Y),

with G_k = V_k^T V_k (Q, Q): one small cross product D per permutation P serves every
pair of kernels. F is computed row block by row block as sum_k K_k(X, L) W_k
(``_core.kernel_sums``: no n x m matrix is formed) and centred by its column means.

Everything here reads one variable alone, with random draws independent of the data
(the landmarks, the subsample): a function of the variable's rows as a multiset, so
permuting the pairing of X and Y leaves it unchanged and the permutation test keeps its
exact level.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import _core
from ..kernels import Kernel
from ..sources import RowSource

#: Rows of the uniform subsample that estimates the principal directions (every row
#: when there are fewer).
PCA_ROWS = 2000
#: A direction is kept while the directions before it miss more than this fraction of
#: the stacked features' variance (each kernel weighing as much as the others).
MISSED_VARIANCE = 1e-3
#: Stacked features up to this wide get an exact eigensolver; wider ones the randomised
#: range finder with OVERSAMPLE extra directions and POWER_STEPS power steps.
EXACT_WIDTH = 400
OVERSAMPLE = 10
POWER_STEPS = 2
#: Rows per call of the core when the basis coordinates of every row are computed.
BLOCK_ROWS = 1 << 16
#: Landmark features of a kernel below this relative pivot are dropped (the numerical
#: rank of K_m).
RCOND = 1e-10


@dataclass(frozen=True)
class Features:
    """One variable's kernels in a common basis.

    Attributes
    ----------
    F : ndarray (n, Q)
        The basis coordinates of every row, centred (each column sums to 0).
    grams : ndarray (K, Q, Q)
        G_k = V_k^T V_k per kernel: ||Phi_k^T A||_F^2 = tr(A^T F ... ) through them.
    kernels : list of Kernel
    n_landmarks : int
    missed : float
        The fraction of the stacked, unit-variance features' variance outside the basis
        (on the subsample).
    second_moment : ndarray (Q, Q)
        F^T F / n.
    """

    F: np.ndarray
    grams: np.ndarray
    kernels: list[Kernel]
    n_landmarks: int
    missed: float
    second_moment: np.ndarray

    @property
    def n_components(self) -> int:
        return int(self.F.shape[1])

    def self_norms(self) -> np.ndarray:
        """||Phi_k^T Phi_k / n||_F per kernel (K,): HSIC(X, X)^(1/2), the normaliser of the
        dependence measure."""
        S = self.second_moment
        out = np.empty(len(self.kernels))
        for k, G in enumerate(self.grams):
            M = S @ G
            out[k] = np.sqrt(max(float(np.einsum("ij,ji->", M, M)), 0.0))
        return out


def landmark_features(L: np.ndarray, kernel: Kernel, nt: int) -> np.ndarray:
    """P (r, m): phi(x) = P k(L, x), r the numerical rank of K_m."""
    m = L.shape[0]
    P, rank, _ = _core.nystrom_feature_sums(L, np.eye(m), kernel.to_core(), RCOND, nt)
    return np.ascontiguousarray(P[: int(rank)])


def _top_directions(Psi: np.ndarray, cap: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The top eigenvalues (descending) and eigenvectors of Psi^T Psi / rows, at most
    ``cap``: exactly (a symmetric eigensolver) for a narrow Psi or a cap near its width,
    else by a randomised range finder (Halko, Martinsson and Tropp 2011: ``cap`` + 10
    directions, ``POWER_STEPS`` power steps), O(rows width cap)."""
    rows, width = Psi.shape
    if width <= EXACT_WIDTH or 2 * (cap + OVERSAMPLE) >= min(rows, width):
        if width <= rows:
            values, vectors = np.linalg.eigh(Psi.T @ Psi / rows)
        else:  # through the rows' Gram matrix (smaller)
            values, U = np.linalg.eigh(Psi @ Psi.T / rows)
            keep = values > max(values[-1], 0.0) * 1e-14
            values, U = values[keep], U[:, keep]
            vectors = Psi.T @ U / np.sqrt(values * rows)
        order = np.argsort(values)[::-1][:cap]
        return np.maximum(values[order], 0.0), vectors[:, order]
    Omega = rng.standard_normal((width, cap + OVERSAMPLE))
    Qm, _ = np.linalg.qr(Psi @ Omega)
    for _ in range(POWER_STEPS):
        Z, _ = np.linalg.qr(Psi.T @ Qm)
        Qm, _ = np.linalg.qr(Psi @ Z)
    Bm = Qm.T @ Psi  # (cap + OVERSAMPLE, width): Psi ~ Qm Bm
    _, sv, Vt = np.linalg.svd(Bm, full_matrices=False)
    return (sv[:cap] ** 2) / rows, Vt[:cap].T


def build_features(
    src: RowSource,
    kernels: list[Kernel],
    L: np.ndarray,
    max_components: int | None,
    rng: np.random.Generator,
    nt: int,
    missed_variance: float = MISSED_VARIANCE,
    pca_rows: int = PCA_ROWS,
) -> Features:
    """The basis of ``kernels`` on the rows of ``src`` with landmarks ``L``: the fewest
    directions that miss at most ``missed_variance`` of the variance (0: every direction
    of positive variance, the exact features), at most ``max_components`` (None: no cap)."""
    n = src.count_rows()
    rows = np.arange(n) if n <= pca_rows else np.sort(rng.choice(n, pca_rows, replace=False))
    S = np.ascontiguousarray(src.take(rows))
    L = np.ascontiguousarray(L, dtype=S.dtype)
    Ps = [landmark_features(L, kernel, nt) for kernel in kernels]
    Psi = np.empty((S.shape[0], sum(P.shape[0] for P in Ps)))
    maps = []
    start = 0
    for kernel, P in zip(kernels, Ps):
        Phi = Psi[:, start : start + P.shape[0]]
        start += P.shape[0]
        Phi[:] = _core.kernel_sums(S, L, np.ascontiguousarray(P.T), kernel.to_core(), nt)  # K(S, L) P^T
        Phi -= Phi.mean(axis=0)
        total = float(np.einsum("ij,ij->", Phi, Phi)) / S.shape[0]
        weight = 1.0 / np.sqrt(total) if total > 0 else 0.0
        Phi *= weight
        maps.append((P, weight))
    cap = Psi.shape[1] if max_components is None else max(1, min(max_components, Psi.shape[1]))
    values, V = _top_directions(Psi, cap, rng)
    total = float(np.einsum("ij,ij->", Psi, Psi)) / S.shape[0]
    if total <= 0:  # constant variable: no direction carries any variance
        values, V = values[:1] * 0.0, V[:, :1]
    else:
        missed = 1.0 - np.cumsum(values) / total
        if missed_variance > 0:
            Q = int(np.searchsorted(-missed, -missed_variance) + 1)
        else:  # every direction above round-off
            Q = int(np.count_nonzero(values > values[0] * 1e-12))
        values, V = values[: min(Q, values.size)], V[:, : min(Q, values.size)]
    Q = V.shape[1]
    grams = np.empty((len(kernels), Q, Q))
    weights = []
    start = 0
    for j, (P, weight) in enumerate(maps):
        Vk = V[start : start + P.shape[0]]
        start += P.shape[0]
        # Phi_k ~ F Vk^T / weight: G_k = Vk^T Vk / weight^2
        grams[j] = Vk.T @ Vk / weight**2 if weight > 0 else 0.0
        weights.append(np.ascontiguousarray(P.T @ Vk * weight))  # (m, Q): F = sum_k K_k(X, L) W_k
    F = np.zeros((n, Q))
    for start_row, chunk in src.chunks():
        for first in range(0, chunk.shape[0], BLOCK_ROWS):  # temporaries of BLOCK_ROWS x Q
            block = np.ascontiguousarray(chunk[first : first + BLOCK_ROWS], dtype=L.dtype)
            out = F[start_row + first : start_row + first + block.shape[0]]
            for kernel, W in zip(kernels, weights):
                out += _core.kernel_sums(block, L, W, kernel.to_core(), nt)
    F -= F.mean(axis=0)
    missed_fraction = 0.0 if total <= 0 else max(0.0, 1.0 - float(values.sum()) / total)
    return Features(F, grams, list(kernels), int(L.shape[0]), missed_fraction, F.T @ F / n)


__all__ = ["MISSED_VARIANCE", "PCA_ROWS", "RCOND", "Features", "build_features", "landmark_features"]
