"""Permutation labels of two-sample tests and the Nyström test statistics.

The random splits are generated in the compiled core (``random_splits.hpp``:
selection sampling from one SplitMix64 stream per split), row by row, so that a
test over n rows and B permutations never stores the n x (B + 1) label matrix.
A :class:`SplitSpec` names them: the same spec gives the same labels on every
machine, thread count and SIMD level.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from . import _core
from ._solve import default_rcond
from ._validation import SPLIT_SEED_BOUND, RandomStateLike, check_positive_int, check_random_state, draw_seed
from .kernels import Kernel

#: Rows per call when labels are materialised (packed bits, replay).
LABEL_BLOCK_ROWS = 1 << 18


@dataclass(frozen=True)
class SplitSpec:
    """Random splits of ``n1 + n2`` pooled rows: column 0 the observed split (the
    first ``n1`` rows form the first sample), columns 1..B independent uniformly
    random splits into ``n1`` and ``n2`` rows, drawn from ``seed``."""

    n1: int
    n2: int
    n_permutations: int
    seed: int

    @property
    def n_rows(self) -> int:
        return self.n1 + self.n2

    @property
    def n_columns(self) -> int:
        return self.n_permutations + 1

    def new(self) -> _core.RandomSplits:
        """A fresh generator of the label weights (+1/n1, -1/n2), at row 0."""
        return _core.RandomSplits(self.n1, self.n2, self.n_permutations, self.seed)

    def labels(self) -> np.ndarray:
        """All labels as booleans (True: first sample), (n1 + n2, B + 1)."""
        splits = self.new()
        out = np.empty((self.n_rows, self.n_columns), dtype=bool)
        for start in range(0, self.n_rows, LABEL_BLOCK_ROWS):
            stop = min(self.n_rows, start + LABEL_BLOCK_ROWS)
            out[start:stop] = splits.next_weights(stop - start) > 0
        return out

    def packed_labels(self) -> np.ndarray:
        """All labels packed one bit per row and split as ``np.packbits(axis=1)``
        does: (n1 + n2, ceil((B + 1) / 8)) uint8, O(LABEL_BLOCK_ROWS (B + 1)) scratch."""
        splits = self.new()
        packed = np.empty((self.n_rows, (self.n_columns + 7) // 8), dtype=np.uint8)
        for start in range(0, self.n_rows, LABEL_BLOCK_ROWS):
            stop = min(self.n_rows, start + LABEL_BLOCK_ROWS)
            packed[start:stop] = np.packbits(splits.next_weights(stop - start) > 0, axis=1)
        return packed

    def weights_from_packed(self, packed: np.ndarray) -> np.ndarray:
        """Label weights (rows, B + 1), +1/n1 or -1/n2, of a block of packed labels."""
        labels = np.unpackbits(packed, axis=1, count=self.n_columns)
        return labels * (1.0 / self.n1 + 1.0 / self.n2) - 1.0 / self.n2


def random_splits(n1: int, n2: int, n_permutations: int = 200, random_state: RandomStateLike = None) -> np.ndarray:
    """The splits a permutation test with these arguments uses, as booleans.

    Column 0 is the observed split (the first ``n1`` of the ``n1 + n2`` pooled rows
    belong to the first sample); column b >= 1 is an independent, uniformly random
    split into ``n1`` and ``n2`` rows, drawn in the C++ core by selection sampling.
    :func:`nystrom_kme.two_sample_test` with the same ``random_state`` (an int, or a
    fresh Generator in the same state) uses exactly these splits, whatever the data,
    so its null distribution can be replayed.

    Parameters
    ----------
    n1, n2 : int
        Sizes of the two samples (>= 1 each).
    n_permutations : int, default=200
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    ndarray of bool, shape (n1 + n2, n_permutations + 1)
        True where the row belongs to the first sample.

    Examples
    --------
    >>> import nystrom_kme as nk
    >>> S = nk.random_splits(3, 2, n_permutations=4, random_state=0)
    >>> S.shape, S.sum(axis=0).tolist()
    ((5, 5), [3, 3, 3, 3, 3])
    """
    n1 = check_positive_int(n1, "n1")
    n2 = check_positive_int(n2, "n2")
    B = check_positive_int(n_permutations, "n_permutations")
    return SplitSpec(n1, n2, B, draw_seed(check_random_state(random_state), SPLIT_SEED_BOUND)).labels()


class QuadraticForms(NamedTuple):
    """The forms of :func:`nystrom_quadratic_forms` for S (m, B + 1)."""

    T: np.ndarray  #: (B + 1,) w_b^T G w_b
    cross: np.ndarray | None  #: (B + 1,) w_b^T G 1, or None without t
    total: float | None  #: 1^T G 1, or None without t
    witness: np.ndarray  #: (m,) alpha whose k(., L) alpha is column 0's function (its norm^2 is T[0])


def nystrom_quadratic_forms(
    L: np.ndarray, S: np.ndarray, kernel: Kernel, n_threads: int = 0, *, t: np.ndarray | None = None
) -> QuadraticForms:
    """The quadratic forms of the Nyström features that the aggregated test needs, from
    S = K(L, Z) W (m, B + 1) and, optionally, t = K(L, Z) 1 (m,): T_b = w_b^T G w_b
    (B + 1,), w_b^T G 1 (B + 1,) or None, and 1^T G 1 or None, for G = Phi Phi^T the
    Nyström approximation of the kernel matrix on the pivot landmarks of K_m
    (``_core.nystrom_feature_sums``: one pivoted Cholesky factorisation, one triangular
    solve; s_b^T K_m^{-1} s_b when K_m has full numerical rank). Float32 landmarks mean
    sums computed in float32: the pivots stop at ``_solve.FLOAT32_RCOND`` (float32's
    epsilon) times max k(l, l), below which the directions hold the sums' rounding only.
    ``witness``: the landmark weights of column 0's function from the same factor (on the
    pivots; the minimum-norm solve of K_m alpha = s_0 gives the same function up to the
    pivots' cut, and factorises K_m again).

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> from nystrom_kme.permutation import nystrom_quadratic_forms
    >>> Z = np.random.default_rng(0).normal(size=(6, 2)); k = nk.Gaussian(1.0)
    >>> W = np.random.default_rng(1).normal(size=(6, 3))
    >>> T, c, tot, alpha = nystrom_quadratic_forms(Z, k(Z) @ W, k, t=k(Z).sum(1))  # L = Z: exact forms
    >>> bool(np.allclose(T, np.einsum("ib,ij,jb->b", W, k(Z), W)) and np.isclose(tot, k(Z).sum()))
    True
    >>> bool(np.allclose(alpha, W[:, 0]))  # K_m invertible: alpha = K_m^{-1} s_0
    True
    """
    rhs = S if t is None else np.column_stack([S, t])
    Y, _, alpha = _core.nystrom_feature_sums(
        L, np.ascontiguousarray(rhs), kernel.to_core(), default_rcond(L), n_threads, 1
    )
    columns = S.shape[1]
    T = np.einsum("ib,ib->b", Y[:, :columns], Y[:, :columns])
    if t is None:
        return QuadraticForms(T, None, None, alpha[:, 0])
    yt = Y[:, columns]
    return QuadraticForms(T, np.einsum("ib,i->b", Y[:, :columns], yt), float(np.einsum("i,i->", yt, yt)), alpha[:, 0])


__all__ = ["QuadraticForms", "SplitSpec", "nystrom_quadratic_forms", "random_splits"]
