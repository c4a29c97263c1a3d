"""The bettors of the sequential tests, over the compiled loop
(``cpp/include/nystrom_kme/sequential_betting.hpp``): the fixed model of a test (its
landmarks, kernels, the projection and Gram matrices, the margins, the mixture), its
state (a dict of arrays: what a saved test holds), and one block of rows bet on.

The witness of kernel j is f_j = sum_i c_ji k_j(l_i, .), the projection onto the span of
the landmarks of the stream's mean embedding minus the other side's, with RKHS norm 1:
c_j = P_j u / ||.||, P_j = (K_j(L, L) + RIDGE I)^-1. Any P gives a valid test (the bets are
fair whatever the witness, as long as it is computed from the past): P only sets the
power, and the ridge keeps the coefficients moderate, so that the witness's norm
c' K c is computed to round-off (K_m^+ itself, for a Gaussian kernel and a few hundred
landmarks, has entries near 10^12, and the norm's rounding bound would swamp the
witness). The ridge changed no detection delay measurably between 10^-2 and 10^-8
(bench/RESULTS.md). The payoffs, the bettors (ONS and aGRAPA) and the mixture are the
header's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _core
from ..kernels import Kernel

#: The bettors of each kernel, in the core's column order.
BETTORS = ("margin-ons", "margin-agrapa", "paired-ons", "paired-agrapa")
#: How the betting fraction is chosen: ONS, aGRAPA, or both (their wealths averaged).
BETTING = ("mixture", "ons", "agrapa")
#: The largest betting fraction (of a payoff in [-1, 1]): ONS's usual truncation.
LIMIT = 0.5
#: The projection's ridge (the kernels' diagonal is 1).
RIDGE = 1e-6
#: The witness is refreshed every row at first, then every t / 16 rows, at most every REFRESH.
REFRESH = 256
#: The state's fields (the core's ``betting_state``), arrays first.
STATE_ARRAYS = ("sums_x", "sums_y", "witness", "offset", "bettors")
STATE_NUMBERS = ("count_x", "count_y", "t", "next_refresh")


def reference_margin(n_rows: int, n_kernels: int, delta: float, sup_norm: float = 1.0) -> float:
    """eps such that ||mu_P - mu_R|| <= eps for all ``n_kernels`` kernels at once with
    probability >= 1 - delta over an i.i.d. sample R of n_rows rows, for kernels with
    sup_x k(x, x) <= sup_norm^2 chosen without R: (1 + sqrt(2 log(K / delta))) K_sup /
    sqrt(n) (E ||mu_P - mu_R|| <= sqrt(E k(x, x) / n), McDiarmid's inequality with
    differences 2 K_sup / n, a union bound over the K kernels).

    >>> round(reference_margin(10_000, 1, 0.005), 5)
    0.04255
    """
    return (1.0 + math.sqrt(2.0 * math.log(n_kernels / delta))) * sup_norm / math.sqrt(n_rows)


def mixture_weights(n_kernels: int, betting: str, margin: bool, paired: bool) -> np.ndarray:
    """The mixture's weights (K, 4) over the bettors: equal over the kernels, over the
    bets placed (margin, paired) and over the fractions ``betting`` names."""
    if betting not in BETTING:
        raise ValueError(f"betting must be one of {BETTING}, got {betting!r}")
    fractions = {"mixture": (0.5, 0.5), "ons": (1.0, 0.0), "agrapa": (0.0, 1.0)}[betting]
    kinds = [kind for kind, on in ((0, margin), (1, paired)) if on]
    if not kinds:
        raise ValueError("a test places margin bets, paired bets or both")
    w = np.zeros((n_kernels, 4))
    for kind in kinds:
        w[:, 2 * kind : 2 * kind + 2] = np.array(fractions) / (len(kinds) * n_kernels)
    return w


def ridge_inverse(G: np.ndarray) -> np.ndarray:
    """(G + RIDGE I)^-1 of a symmetric positive semi-definite G, symmetric.

    >>> G = np.array([[1.0, 1.0], [1.0, 1.0]])             # singular
    >>> bool(np.abs(ridge_inverse(G) @ (G + RIDGE * np.eye(2)) - np.eye(2)).max() < 1e-9)
    True
    """
    w, Q = np.linalg.eigh(G)
    out: np.ndarray = (Q / (np.maximum(w, 0.0) + RIDGE)) @ Q.T
    return np.ascontiguousarray((out + out.T) / 2)


@dataclass(frozen=True)
class Model:
    """A test's fixed part: the core's model and what it was built from."""

    kernels: list[Kernel]
    landmarks: np.ndarray
    margin: np.ndarray
    weights: np.ndarray
    margin_bets: bool
    pairs_join: bool
    refresh: int
    core: _core.BettingModel
    #: log of the mixture's weights (K, 4), -inf for a bettor outside the mixture
    log_weights: np.ndarray

    @classmethod
    def build(
        cls,
        kernels: list[Kernel],
        landmarks: np.ndarray,
        margin: np.ndarray,
        weights: np.ndarray,
        *,
        margin_bets: bool,
        pairs_join: bool,
        refresh: int,
        n_threads: int,
    ) -> Model:
        """The Gram matrices and projections P_j = (K_j(L, L) + RIDGE I)^-1 (symmetric, from
        the Gram matrix's eigendecomposition), then the core's model (which checks every
        field: ValueError naming it)."""
        L = np.ascontiguousarray(landmarks, dtype=np.float64)
        grams = [_core.kernel_matrix(L, L, k.to_core(), n_threads) for k in kernels]
        inverse = np.vstack([ridge_inverse(G) for G in grams])
        gram = np.vstack(grams)
        core = _core.BettingModel(
            L,
            [k.to_core() for k in kernels],
            np.ascontiguousarray(inverse),
            np.ascontiguousarray(gram),
            np.ascontiguousarray(margin, dtype=np.float64),
            np.ascontiguousarray(weights, dtype=np.float64),
            margin_bets,
            pairs_join,
            refresh,
            LIMIT,
        )
        with np.errstate(divide="ignore"):
            log_weights = np.log(weights)
        margin = np.asarray(margin, dtype=np.float64)
        return cls(list(kernels), L, margin, weights, margin_bets, pairs_join, refresh, core, log_weights)

    def initial_state(self, sums_y: np.ndarray, count_y: float) -> dict[str, Any]:
        """The state before the first row: every wealth 1, S_y the other side's sums."""
        return dict(_core.betting_state(self.core, np.ascontiguousarray(sums_y, dtype=np.float64), float(count_y)))

    def bet(
        self, state: dict[str, Any], X: np.ndarray, Y: np.ndarray, n_threads: int
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """(log wealth after each row of X, the new state); ``state`` is not changed."""
        log_wealth, new = _core.bet_rows(self.core, X, Y, state, n_threads)
        return log_wealth, dict(new)


def kernel_log_wealth(model: Model, state: dict[str, Any]) -> np.ndarray:
    """Each kernel's share of the mixture, as the log of its own wealth (K,): the mean
    over the kernels' wealths is the test's, and the kernel whose bettors grew the wealth
    has the largest."""
    a = state["bettors"][:, : len(BETTORS)] + model.log_weights  # -inf where a weight is 0
    top = a.max(axis=1)
    out: np.ndarray = top + np.log(np.exp(a - top[:, None]).sum(axis=1)) + math.log(a.shape[0])
    return out


def check_state(state: dict[str, Any], n_kernels: int, n_landmarks: int) -> None:
    """ValueError unless a (saved) state has the fields and shapes of the core's."""
    shapes = {
        "sums_x": (n_kernels, n_landmarks),
        "sums_y": (n_kernels, n_landmarks),
        "witness": (n_kernels, n_landmarks),
        "offset": (n_kernels,),
        "bettors": (n_kernels, 3 * len(BETTORS)),
    }
    for name, shape in shapes.items():
        a = state.get(name)
        if not isinstance(a, np.ndarray) or a.shape != shape or not np.isfinite(a).all():
            raise ValueError(f"{name} must be a finite array of shape {shape}")
    for name in STATE_NUMBERS:
        if not isinstance(state.get(name), (int, float, np.integer, np.floating)):
            raise ValueError(f"{name} must be a number")


__all__ = [
    "BETTING",
    "BETTORS",
    "LIMIT",
    "REFRESH",
    "RIDGE",
    "STATE_ARRAYS",
    "STATE_NUMBERS",
    "Model",
    "check_state",
    "kernel_log_wealth",
    "mixture_weights",
    "reference_margin",
    "ridge_inverse",
]
