"""Two streams against each other, A/B-style: :class:`SequentialTwoSampleTest`, a sequential
kernel two-sample test by betting (Shekhar & Ramdas, IEEE Trans. IT 2023) on a compressed
embedding; P(rejecting ever when both streams come from one distribution) <= alpha.

The null H0: the rows of both streams are i.i.d. from one distribution. The first
``burn_in`` rows of each stream fix what the test is made of, and are never bet on: the
bandwidths (and the scaling of ``standardize``) from their pooled rows, the landmarks
drawn from them, the starting sums. After them, the i-th row of one stream is paired with
the i-th row of the other, in arrival order (a pairing that does not look at the values),
and each pair (x_t, y_t) pays (f_t(x_t) - f_t(y_t)) / 2 with f_t the witness of the past
(mu_X - mu_Y projected on the landmarks, RKHS norm <= 1). Under H0, x_t and y_t are
exchangeable given the past, so every payoff has mean 0 exactly and every bettor's wealth
is a martingale: Ville's inequality bounds the false-alarm probability by alpha at any
stopping time. No reference, so no margin: every bet is a paired bet (``_betting.py``).

Rows of one stream that arrive before their partner wait in a queue (memory: the
imbalance between the streams); a row costs O(K m d), the memory is O(K m^2) besides.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core
from .._columns import check_feature_names, keep_feature_names
from .._landmark_plan import distinct_rows
from .._scaling import Scaling, check_scaling, check_standardize, fit_scaling, scaling_from_state, scaling_state
from .._validation import (
    SPLIT_SEED_BOUND,
    RandomStateLike,
    as_data_matrix,
    check_positive_int,
    check_probability,
    check_random_state,
    draw_seed,
    n_threads_arg,
)
from ..defaults import ALPHA
from ..kernel_collection import KernelCollection
from ..kernels import Kernel, resolve_kernel
from ..persistence import persistable, save
from ..sources import ArraySource, as_rows
from ._betting import REFRESH, Model, check_state, kernel_log_wealth, mixture_weights
from ._reference import DEFAULT_LANDMARKS
from .drift import kernel_choice
from .results import SequentialResult, betting_outcome, saved_rejection

#: Rows of each stream that fix the kernels and landmarks before any bet, by default.
BURN_IN = 128


@persistable
class SequentialTwoSampleTest:
    """A/B testing by betting: two streams, one row at a time from each (in any order and
    batch sizes), tested for one distribution; P(a false rejection ever) <= alpha.

    Parameters
    ----------
    alpha : float, default=0.05
    kernel : "auto", Kernel, str, KernelCollection or list, default="auto"
        As :class:`SequentialDriftTest`'s: by default the default two-sample test's
        kernels, their bettors' wealths averaged. Bandwidths from the burn-in rows.
    n_landmarks : int or None
        m, drawn from the 2 ``burn_in`` pooled burn-in rows; None: the paper's m for them,
        at most 256.
    burn_in : int, default=128
        Rows of each stream that fix the kernels, landmarks and scaling; no bet on them.
    betting : {"mixture", "ons", "agrapa"}, default="mixture"
    refresh : int, default=256
        The witness is refreshed at most every ``refresh`` pairs (every t / 16 before).
    standardize : bool or {"standard", "robust"}, default=False
        Centre and scale every column with the pooled burn-in rows' statistics.
    random_state : None, int or numpy Generator
        The bandwidth subsample and the landmarks.
    n_threads : int or None

    Attributes
    ----------
    kernels_, landmarks_ : list of Kernel, ndarray (m, d)
        Set once both streams have ``burn_in`` rows (None before).
    threshold_ : float
        1 / alpha.
    t_ : int
        Pairs seen, burn-in included.
    log_wealth_ : float
    rejection_time_ : int or None
        The pair count t at which the wealth first reached ``threshold_``.
    queued_ : tuple of int
        Rows of each stream waiting for a partner.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> test = nk.SequentialTwoSampleTest(kernel="gaussian", random_state=0)
    >>> res = test.update(x=rng.normal(size=(1000, 2)), y=rng.normal(size=(1000, 2)) + [0.5, 0])
    >>> res.reject, res.rejection_time < 1000
    (True, True)
    """

    def __init__(
        self,
        *,
        alpha: float = ALPHA,
        kernel: Kernel | str | KernelCollection | list[Any] = "auto",
        n_landmarks: int | None = None,
        burn_in: int = BURN_IN,
        betting: str = "mixture",
        refresh: int = REFRESH,
        standardize: bool | str = False,
        random_state: RandomStateLike = None,
        n_threads: int | None = None,
    ) -> None:
        self.alpha = check_probability(alpha, "alpha")
        self.kernel, self.betting, self.standardize = kernel, betting, standardize
        self.n_landmarks = None if n_landmarks is None else check_positive_int(n_landmarks, "n_landmarks")
        self.burn_in = check_positive_int(burn_in, "burn_in")
        if self.burn_in < 2:
            raise ValueError(f"burn_in must be at least 2 (rows of each stream for the bandwidths), got {burn_in!r}")
        self.refresh = check_positive_int(refresh, "refresh")
        self.n_threads = n_threads
        n_threads_arg(n_threads)
        mixture_weights(1, betting, False, True)
        self._chosen, self._with_median = kernel_choice(kernel)
        self._kind = check_standardize(standardize)
        self._seed = draw_seed(check_random_state(random_state), SPLIT_SEED_BOUND)  # the burn-in's draws
        self.threshold_ = 1.0 / self.alpha
        self.kernels_: list[Kernel] | None = None
        self.landmarks_: np.ndarray | None = None
        self.scaling_: Scaling | None = None
        self.n_features_in_: int | None = None
        self._model: Model | None = None
        self._betting: dict[str, Any] | None = None
        self._queues: list[np.ndarray] = [np.empty((0, 0)), np.empty((0, 0))]
        self._names: tuple[str, ...] | None = None
        self._pairs = 0
        self._log_wealth = 0.0
        self.rejection_time_: int | None = None
        self._rejecting: int | None = None

    # ---------------------------------------------------------------- updates

    def update(self, x: Any = None, y: Any = None) -> SequentialResult:
        """Add rows of either stream or both, oldest first, and bet on every new pair.

        Parameters
        ----------
        x, y : array-like (d,) or (r, d), DataFrames, or None
            New rows of the first and second stream (either may be None or hold another
            number of rows: unpaired rows wait for their partner). Refused by name, before
            anything changes: NaN or inf, a width other than the first rows', names other
            than the first named rows'.

        Returns
        -------
        SequentialResult
            One log wealth per pair bet on in this call (none during the burn-in).
        """
        first: tuple[tuple[str, ...] | None, int | None] = (self._names, self.n_features_in_)
        new_x, names_x = self._rows(x, "x", first)
        if first[1] is None and new_x.size:  # x's rows are the first: y's must match them
            first = (names_x, new_x.shape[1])
        new_y, names_y = self._rows(y, "y", first)
        if self.n_features_in_ is None:  # every row checked: the first ones fix names and width
            for rows, names in ((new_x, names_x), (new_y, names_y)):
                if rows.size:
                    self.n_features_in_, self._names = rows.shape[1], names
                    keep_feature_names(self, names)
                    break
        new = [new_x, new_y]
        queues = [
            np.concatenate([q, b]) if q.size and b.size else (b if b.size else q) for q, b in zip(self._queues, new)
        ]
        if self._model is None and min(q.shape[0] for q in queues) >= self.burn_in:
            self._start(queues[0][: self.burn_in], queues[1][: self.burn_in])
            queues = [q[self.burn_in :] for q in queues]
        if self._model is None or self._betting is None:
            self._queues = queues
            return self._result(np.empty(0), np.empty(0, dtype=np.int64))
        pairs = min(q.shape[0] for q in queues)
        X, Y = (self._scaled(q[:pairs]) for q in queues)
        log_wealth, state = self._model.bet(self._betting, X, Y, n_threads_arg(self.n_threads))
        self._betting, self._queues = state, [q[pairs:] for q in queues]
        times = self.burn_in + self._pairs + 1 + np.arange(pairs)
        self._pairs += pairs
        if pairs:
            self._log_wealth = float(log_wealth[-1])
        return self._result(log_wealth, times)

    def _result(self, log_wealth: np.ndarray, times: np.ndarray) -> SequentialResult:
        if self._model is None or self._betting is None or self.kernels_ is None:  # the burn-in
            return SequentialResult(log_wealth, self.threshold_, times, False, None, None, np.empty(0))
        per_kernel = kernel_log_wealth(self._model, self._betting)
        result, (self.rejection_time_, self._rejecting) = betting_outcome(
            log_wealth, times, self.threshold_, (self.rejection_time_, self._rejecting), per_kernel, self.kernels_
        )
        return result

    def _rows(
        self, z: Any, name: str, first: tuple[tuple[str, ...] | None, int | None]
    ) -> tuple[np.ndarray, tuple[str, ...] | None]:
        """The rows of one stream's update, checked against the names and width ``first``
        (the first rows seen: these rows' own when they are the first)."""
        if z is None:
            return np.empty((0, 0)), None
        rows, names = as_rows(z, name)
        check_feature_names(
            first[0] if first[1] is not None else names, names, owner="SequentialTwoSampleTest", what=name
        )
        Z = np.asarray(rows) if not isinstance(rows, np.ndarray) else rows
        if Z.ndim == 1:
            Z = Z[None, :]
        Z = np.ascontiguousarray(as_data_matrix(Z, name), dtype=np.float64)
        if first[1] is not None and Z.shape[1] != first[1]:
            raise ValueError(f"{name} has {Z.shape[1]} features but the streams have {first[1]}")
        return Z, names

    def _scaled(self, Z: np.ndarray) -> np.ndarray:
        if self.scaling_ is None or not Z.size:
            return Z
        return np.ascontiguousarray(self.scaling_.apply(Z), dtype=np.float64)

    def _start(self, X: np.ndarray, Y: np.ndarray) -> None:
        """The kernels, scaling and landmarks from the burn-in rows, and the sums of each
        stream's burn-in rows (the witness's start)."""
        rng, nt = np.random.default_rng(self._seed), n_threads_arg(self.n_threads)
        pooled = np.concatenate([X, Y])
        if self._kind is not None:
            self.scaling_ = fit_scaling([ArraySource(pooled)], self._kind)
            X, Y, pooled = self._scaled(X), self._scaled(Y), self._scaled(pooled)
        chosen = self._chosen
        if isinstance(chosen, Kernel):
            kernels = [resolve_kernel(chosen, [ArraySource(pooled)], rng)]
        else:
            kernels = list(chosen.resolve(pooled, rng, with_median=self._with_median))
        m = DEFAULT_LANDMARKS(pooled.shape[0]) if self.n_landmarks is None else min(self.n_landmarks, pooled.shape[0])
        L = distinct_rows(np.ascontiguousarray(pooled[np.sort(rng.choice(pooled.shape[0], m, replace=False))]))
        self._model = self._paired_model(kernels, L, nt)
        sums = [np.vstack([_core_row_sums(L, Z, k, nt) for k in kernels]) for Z in (X, Y)]
        state = self._model.initial_state(sums[1], float(Y.shape[0]))
        state["sums_x"], state["count_x"] = sums[0], float(X.shape[0])
        self._betting = state
        self.kernels_, self.landmarks_ = kernels, L

    # ---------------------------------------------------------------- what it holds

    @property
    def t_(self) -> int:
        return (self.burn_in + self._pairs) if self._model is not None else min(q.shape[0] for q in self._queues)

    @property
    def log_wealth_(self) -> float:
        return self._log_wealth

    @property
    def queued_(self) -> tuple[int, int]:
        a, b = (q.shape[0] for q in self._queues)
        return a, b

    # ---------------------------------------------------------------- persistence

    def _state(self) -> dict[str, Any]:
        """The saved fields: the seed of the burn-in's draws, the first rows' names and
        width, the rows waiting for a partner, and once the burn-in is over the kernels,
        landmarks, scaling and the bettors' state."""
        state: dict[str, Any] = {
            "seed": self._seed,
            "n_features_in": self.n_features_in_,
            "feature_names": self._names,
            "queue_x": self._queues[0],
            "queue_y": self._queues[1],
            "started": self._model is not None,
            "pairs": self._pairs,
            "log_wealth": self._log_wealth,
            "rejection_time": self.rejection_time_,
            "rejecting": self._rejecting,
        }
        if self._model is not None:
            state.update(kernels=self.kernels_, landmarks=self.landmarks_, betting=self._betting)
            state.update(scaling_state(self.scaling_))
        return state

    @classmethod
    def _from_state(cls, params: dict[str, Any], state: dict[str, Any]) -> SequentialTwoSampleTest:
        """A test from saved parameters and state (nk.load), its fields checked against
        each other (ValueError naming the field)."""
        test = cls(**params)
        seed = state["seed"]
        if not (isinstance(seed, (int, np.integer)) and 0 <= seed < SPLIT_SEED_BOUND):
            raise ValueError(f"seed must be an integer in [0, {SPLIT_SEED_BOUND}), got {seed!r}")
        test._seed, d = int(seed), state["n_features_in"]
        queues = [np.ascontiguousarray(state[k], dtype=np.float64) for k in ("queue_x", "queue_y")]
        if d is None:
            if any(q.size for q in queues) or state["started"] or state["feature_names"] is not None:
                raise ValueError("n_features_in is null but the test holds rows, names or a model")
        elif any(q.ndim != 2 or (q.size and q.shape[1] != d) or not np.isfinite(q).all() for q in queues):
            raise ValueError(f"the queued rows must be finite rows of n_features_in = {d} columns")
        test.n_features_in_, test._names = d, state["feature_names"]
        if test._names is not None:
            keep_feature_names(test, test._names)
        test._queues = [q if q.size else np.empty((0, 0)) for q in queues]
        pairs, started = state["pairs"], state["started"]
        if not (isinstance(pairs, (int, np.integer)) and pairs >= 0) or (pairs and not started):
            raise ValueError(f"pairs={pairs!r}: expected an integer >= 0, and 0 before the burn-in ends")
        if started:
            if d is None or min(q.shape[0] for q in test._queues) > 0:
                raise ValueError("a started test has a width and never a pair left waiting in both queues")
            kernels, L = list(state["kernels"]), np.ascontiguousarray(state["landmarks"], dtype=np.float64)
            if not kernels or not all(k.is_resolved and k.radial for k in kernels) or L.ndim != 2 or L.shape[1] != d:
                raise ValueError(f"kernels and landmarks must be radial kernels and rows of {d} columns")
            test.scaling_ = scaling_from_state(state)
            check_scaling(test.scaling_, test.standardize, d)
            test._model = test._paired_model(kernels, L, n_threads_arg(test.n_threads))
            betting = dict(state["betting"])
            check_state(betting, len(kernels), L.shape[0])
            if (
                betting["t"] != pairs
                or betting["count_x"] != betting["count_y"]
                or betting["count_x"] != test.burn_in + pairs
            ):
                raise ValueError(f"the bettors' counts do not agree with burn_in + pairs = {test.burn_in + pairs}")
            test._betting, test.kernels_, test.landmarks_ = betting, kernels, L
        elif state["rejection_time"] is not None or state["log_wealth"] != 0:
            raise ValueError("a test before its burn-in ends has no wealth and no rejection")
        t = test.burn_in + pairs
        test.rejection_time_, test._rejecting = saved_rejection(state, test.burn_in + 1, t, len(test.kernels_ or []))
        test._pairs, test._log_wealth = int(pairs), float(state["log_wealth"])
        return test

    def _paired_model(self, kernels: list[Kernel], L: np.ndarray, n_threads: int) -> Model:
        """The bettors of a two-sample test: paired bets only (both sides are streams: no
        reference margin), each pair's rows joining the sums, over ``kernels`` on ``L``."""
        K = len(kernels)
        return Model.build(
            kernels,
            L,
            np.zeros(K),
            mixture_weights(K, self.betting, False, True),
            margin_bets=False,
            pairs_join=True,
            refresh=self.refresh,
            n_threads=n_threads,
        )

    def get_params(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "kernel": self.kernel,
            "n_landmarks": self.n_landmarks,
            "burn_in": self.burn_in,
            "betting": self.betting,
            "refresh": self.refresh,
            "standardize": self.standardize,
            "n_threads": self.n_threads,
        }

    def save(self, path: Any) -> None:
        """Write the test with both streams' state (the rows waiting, the wealth) to
        ``path`` (.npz); nk.load reads it back and the test goes on where it was."""
        save(self, path)

    def summary(self) -> dict[str, Any]:
        """What ``nystrom-kme info`` prints: the test's fields as JSON data."""
        return {
            "kernels": None if self.kernels_ is None else [repr(k) for k in self.kernels_],
            "alpha": self.alpha,
            "burn_in": self.burn_in,
            "n_features": self.n_features_in_,
            "n_landmarks": None if self.landmarks_ is None else int(self.landmarks_.shape[0]),
            "t": self.t_,
            "queued": list(self.queued_),
            "log_wealth": self._log_wealth,
            "rejection_time": self.rejection_time_,
        }

    def __repr__(self) -> str:
        return (
            f"SequentialTwoSampleTest(alpha={self.alpha:g}, t={self.t_}, log_wealth={self._log_wealth:.4g}, "
            f"rejection_time={self.rejection_time_})"
        )


def _core_row_sums(L: np.ndarray, Z: np.ndarray, kernel: Kernel, n_threads: int) -> np.ndarray:
    """K(L, Z) 1 (m,)."""
    out: np.ndarray = _core.kernel_row_sums(L, Z, kernel.to_core(), n_threads)
    return out


__all__ = ["BURN_IN", "SequentialTwoSampleTest"]
