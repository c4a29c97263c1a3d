"""Anytime-valid drift monitoring: :class:`SequentialDriftTest`, a sequential kernel test
by betting against a compressed reference, whose false-alarm probability over the whole
stream, looked at after every row, is at most alpha.

**The test.** The null H0: the stream's rows x_1, x_2, ... are i.i.d. from P, the
distribution the reference rows were drawn from. Before each row, every bettor (one per
kernel, bet kind and fraction rule; :mod:`._betting`) fixes from the past alone a witness
f_t (coefficients on the reference's landmarks, RKHS norm <= 1) and a fraction lambda_t
in [0, 1/2]; the row pays g_t in [-1, 1] and the bettor's wealth is multiplied by
1 + lambda_t g_t. If E[g_t | past] <= 0 under H0, each wealth, and their average (the
test's wealth W_t), is a nonnegative supermartingale with W_0 = 1, and Ville's inequality
gives P(sup_t W_t >= 1/a) <= a: the test rejects the first time W_t >= 1/a, and its
false alarm probability over an infinite stream, whenever one looks, is at most a.

**The null with a finite reference.** The reference is a sample, not P: a payoff
f(x_t) - mean_R f is not fair, since E_P f - mean_R f = <f, mu_P - mu_R> is of order
||f|| / sqrt(n_R), and the witness learnt from the stream points at mu_P - mu_R itself: a
good bettor collects that bias, a wealth growing like exp(t / n_R) under H0 (measured:
bench/RESULTS.md, about a false alarm in three over 2 10^4 rows of a reference of 10^4
rows). Two fair bets instead:

* **paired bets**: before any row is seen, n_holdout reference rows H (apart from
  everything else: not in the landmarks, the bandwidths or R) are put in a random order;
  row x_t is paired with h_t, used once, and pays (f_t(x_t) - f_t(h_t)) / 2. Under H0,
  x_t and h_t are i.i.d. from P and independent of f_t (a function of the past and of R),
  so E[g_t | past] = 0 exactly, whatever the size of the reference. Their horizon is the
  pool: after n_holdout rows they stop.
* **margin bets**: row x_t pays (f_t(x_t) - mean_R f_t - eps) / (1 + |mean_R f_t| + eps)
  with mean_R f_t = c' K(L, R) 1 / n_R exact (the reference's kernel sums; no Nyström
  error) and eps >= ||mu_P - mu_R||: then E[g_t | past] = <f_t, mu_P - mu_R> - eps
  ... <= ||f_t|| ||mu_P - mu_R|| - eps <= 0. For a kernel with k(x, x) <= 1 chosen
  without R (the bandwidths come from their own rows S), ||mu_P - mu_R|| <=
  (1 + sqrt(2 log(1 / delta))) / sqrt(n_R) with probability >= 1 - delta over R
  (E ||mu_P - mu_R|| <= sqrt(1 / n_R), McDiarmid with differences 2 / n_R); for K
  kernels, delta / K each. On that event every margin wealth is a supermartingale, for
  any f_t in the RKHS: the witness may depend on R (landmarks, sums) and on the stream.
  So P(a false alarm ever) <= P(W reaches 1 / (alpha - delta) on the event) + delta
  <= alpha. No horizon; the price is eps, a drift must move mu by more than eps (about
  4.8 / sqrt(n_R) for the default's six kernels: 0.06 for 10^4 reference rows, 0.005 for
  10^6) before margin bets win.

The test places both (the default; ``n_holdout=0``: margin bets only, ``delta=0``: paired
bets only, within the pool), its wealth the average of both kinds' bettors: a fixed
mixture of supermartingales, so P(false alarm ever) <= alpha (alpha - delta for Ville,
delta for the reference's error). Paired bets are exact and need no large reference;
margin bets are twice as efficient per row (one noisy term, not two) where eps is small,
and run forever. Measured on references of 10^4 and 10^6 rows: bench/RESULTS.md.

**Cost.** A row costs O(K m d) (its K kernel values with the m landmarks, in the compiled
core) and the witnesses O(K m^2) every ``refresh`` rows at most; memory O(K m^2 + n_holdout
d), the same at t = 10^7 as at t = 1.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._columns import check_feature_names, fitted_feature_names, keep_feature_names
from .._scaling import (
    Scaling,
    check_scaling,
    check_standardize,
    fit_scaling,
    scaling_from_state,
    scaling_state,
    scaling_summary,
    warn_scales,
)
from .._validation import (
    RandomStateLike,
    as_data_matrix,
    check_positive_int,
    check_probability,
    check_random_state,
    n_threads_arg,
)
from ..defaults import ALPHA
from ..kernel_collection import KernelCollection, as_collection
from ..kernels import Kernel, get_kernel
from ..persistence import persistable, save
from ..sources import SourceLike, as_rows, as_source, scaled
from ..two_sample import DEFAULT_COLLECTION, DEFAULT_RULE
from ..two_sample.rules import RULES
from ._betting import REFRESH, Model, check_state, kernel_log_wealth, mixture_weights, reference_margin
from ._reference import POOL, BettingReference, read_reference
from .results import SequentialResult, betting_outcome, saved_rejection

#: The share of alpha spent on the reference's error by default (delta = alpha / DELTA_SHARE).
DELTA_SHARE = 10


def kernel_choice(kernel: object) -> tuple[Kernel | KernelCollection, bool]:
    """(one kernel or a collection, whether the median Gaussian is added) for ``kernel``:
    "auto" the default two-sample test's kernels (its collection, and the median Gaussian
    when its rule adds one), a Kernel or name, a KernelCollection or list; radial kernels
    only."""
    if isinstance(kernel, str) and kernel == "auto":
        return DEFAULT_COLLECTION, RULES[DEFAULT_RULE].adds_median
    collection = as_collection(kernel)
    if collection is not None:
        return collection, False
    if not isinstance(kernel, (Kernel, str)):
        raise ValueError(f"kernel must be 'auto', a Kernel, a name, a KernelCollection or a list, got {kernel!r}")
    k = get_kernel(kernel)
    if not k.radial:
        raise ValueError(f"kernel must be radial (bounded: k(x, x) = 1), got {k!r}")
    return k, False


@persistable
class SequentialDriftTest:
    """Anytime-valid drift monitoring: a sequential kernel test by betting against a
    frozen, compressed reference; P(a false alarm ever) <= alpha, however long the stream
    and however often it is looked at.

    Parameters
    ----------
    reference : array-like (n_ref, d) or row source
        Rows of the distribution P the stream should follow, read once (any size:
        memmaps, data files, chunks, dask). At least 2 + n_holdout + 2 rows.
    alpha : float, default=0.05
        The false-alarm probability over the whole stream.
    kernel : "auto", Kernel, str, KernelCollection or list, default="auto"
        "auto": the default two-sample test's kernels (``two_sample.DEFAULT_COLLECTION``,
        and the median Gaussian when the default rule adds it), one bettor each, their
        wealths averaged (no bandwidth to choose); a kernel or collection: those. Radial
        kernels.
        Bandwidths from their own reference rows (at most 1000).
    n_landmarks : int or None
        m, drawn uniformly from the reference; None: ceil(sqrt(N) log sqrt(N)) for its N
        rows, at most 256. A row costs O(K m d).
    n_holdout : int or None
        Reference rows held out for paired bets (each paired once with a row of the
        stream: exact bets for the first n_holdout rows); None: a quarter of the
        reference, at most 10 000; 0: margin bets only.
    delta : float or None
        The part of alpha spent on the reference's own error (the margin bets' eps holds
        with probability 1 - delta); the wealth must reach 1 / (alpha - delta). None:
        alpha / 10; 0: paired bets only (no margin: the test stops after n_holdout rows).
    betting : {"mixture", "ons", "agrapa"}, default="mixture"
        The betting fraction: online Newton step, aGRAPA, or both with their wealths
        averaged.
    refresh : int, default=256
        The witness is refreshed after every row at first, then every t / 16 rows, at
        most every ``refresh`` rows.
    standardize : bool or {"standard", "robust"}, default=False
        Centre and scale every column with the reference's statistics (saved with the
        test, applied to every row), as the other detectors.
    random_state, n_threads, chunk_rows, progress : as :class:`DriftDetector`

    Attributes
    ----------
    kernels_ : list of Kernel
    landmarks_ : ndarray (m, d)
    threshold_ : float
        1 / (alpha - delta).
    margin_ : ndarray (K,)
        eps of each kernel's margin bets (inf without them).
    t_ : int
        Rows seen since the test (re)started.
    log_wealth_ : float
        The log of the wealth now.
    rejection_time_ : int or None
        The first t at which the wealth reached ``threshold_``.
    rejecting_kernel_ : Kernel or None
        The kernel holding the most wealth at the end of the update that rejected.
    witness_ : ndarray (K, m)
        Each kernel's current witness, f_j(x) = sum_i witness_[j, i] k_j(landmarks_[i], x).
    n_paired_left_ : int
        Held-out rows not yet paired.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(1)
    >>> test = nk.SequentialDriftTest(rng.normal(size=(20_000, 3)), random_state=0)
    >>> res = test.update(rng.normal(size=(2000, 3)))          # no drift: wealth stays low
    >>> res.is_drift, bool(res.wealth.max() < test.threshold_)
    (False, True)
    >>> res = test.update(rng.normal(size=(2000, 3)) * 1.3)    # the scale changes
    >>> res.is_drift, res.drift_time > 2000
    (True, True)
    """

    def __init__(
        self,
        reference: SourceLike,
        *,
        alpha: float = ALPHA,
        kernel: Kernel | str | KernelCollection | list[Any] = "auto",
        n_landmarks: int | None = None,
        n_holdout: int | None = None,
        delta: float | None = None,
        betting: str = "mixture",
        refresh: int = REFRESH,
        standardize: bool | str = False,
        random_state: RandomStateLike = None,
        n_threads: int | None = None,
        chunk_rows: int | None = None,
        progress: bool | None = None,
    ) -> None:
        self.alpha = check_probability(alpha, "alpha")
        self.kernel, self.betting, self.standardize = kernel, betting, standardize
        self.n_landmarks = None if n_landmarks is None else check_positive_int(n_landmarks, "n_landmarks")
        if n_holdout is not None and not (isinstance(n_holdout, (int, np.integer)) and n_holdout >= 0):
            raise ValueError(f"n_holdout must be an integer >= 0 or None, got {n_holdout!r}")
        self.n_holdout = None if n_holdout is None else int(n_holdout)
        self.delta = None if delta is None else float(delta)
        self.refresh = check_positive_int(refresh, "refresh")
        self.n_threads = n_threads
        nt = n_threads_arg(n_threads)
        spent = self._delta()
        if self.n_holdout == 0 and spent == 0:
            raise ValueError("n_holdout=0 and delta=0 leave no bet: margin bets need delta > 0, paired bets rows")
        mixture_weights(1, betting, True, True)  # betting checked before the reference is read
        chosen, with_median = kernel_choice(kernel)
        kind = check_standardize(standardize)
        src = as_source(reference, "reference", chunk_rows=chunk_rows)
        names = src.feature_names
        rng = check_random_state(random_state)
        scaling = None if kind is None else fit_scaling([src], kind)
        if scaling is None:
            warn_scales([src], [chosen] if isinstance(chosen, Kernel) else list(chosen.families), "the reference")
        ref = read_reference(
            scaled(src, scaling), chosen, with_median, self.n_landmarks, self.n_holdout, rng, nt, progress
        )
        assert src.n_features is not None  # known once the rows are counted
        keep_feature_names(self, names)
        self._build(ref, int(src.n_features), src.count_rows(), scaling)
        self.reset()

    # ---------------------------------------------------------------- setup

    def _delta(self) -> float:
        delta = self.alpha / DELTA_SHARE if self.delta is None else self.delta
        if not (0.0 <= delta < self.alpha) or not math.isfinite(delta):
            raise ValueError(f"delta must lie in [0, alpha = {self.alpha:g}), got {delta!r}")
        return delta

    def _build(self, ref: BettingReference, n_features: int, n_reference: int, scaling: Scaling | None) -> None:
        """The fitted attributes and the core's model, for a new test and a loaded one
        (every field checked against the others: ValueError naming it)."""
        check_scaling(scaling, self.standardize, n_features)
        K, m = len(ref.kernels), ref.landmarks.shape[0]
        if ref.landmarks.ndim != 2 or ref.landmarks.shape[1] != n_features or m < 1:
            raise ValueError(f"landmarks must hold rows of n_features_in = {n_features} columns")
        if ref.sums.shape != (K, m) or not np.isfinite(ref.sums).all():
            raise ValueError(f"sums must be a finite array of shape {(K, m)}")
        if ref.pool.ndim != 2 or ref.pool.shape[1] != n_features or not np.isfinite(ref.pool).all():
            raise ValueError(f"the paired pool must hold finite rows of {n_features} columns")
        if not (isinstance(ref.n_rest, (int, np.integer)) and 1 <= ref.n_rest <= n_reference - ref.pool.shape[0]):
            raise ValueError(f"n_rest must be in [1, n_reference - n_holdout], got {ref.n_rest!r}")
        if not all(k.is_resolved and k.radial for k in ref.kernels) or K < 1:
            raise ValueError("kernels must be radial kernels with numeric bandwidths")
        if ((ref.sums < -1e-9 * ref.n_rest) | (ref.sums > ref.n_rest * (1 + 1e-9))).any():
            raise ValueError(f"sums must lie in [0, n_rest = {ref.n_rest}] for kernels bounded by 1")
        delta = self._delta()
        margin_bets, paired = delta > 0, ref.pool.shape[0] > 0
        if not (margin_bets or paired):
            raise ValueError("no bet: margin bets need delta > 0, paired bets held-out rows")
        eps = np.array(
            [reference_margin(ref.n_rest, K, delta, k.sup_norm) if margin_bets else 0.0 for k in ref.kernels]
        )
        self._model = Model.build(
            ref.kernels,
            ref.landmarks,
            eps,
            mixture_weights(K, self.betting, margin_bets, paired),
            margin_bets=margin_bets,
            pairs_join=False,
            refresh=self.refresh,
            n_threads=n_threads_arg(self.n_threads),
        )
        self.scaling_ = scaling
        self.reference_ = ref
        self.kernels_, self.landmarks_ = ref.kernels, ref.landmarks
        self.n_features_in_, self.n_reference_ = n_features, n_reference
        self.margin_ = eps if margin_bets else np.full(K, math.inf)
        self.threshold_ = 1.0 / (self.alpha - delta)

    def reset(self) -> None:
        """Start a new test on a new stream: wealth 1, t = 0, no rejection. The paired
        pool goes on with its unused rows (a row paired in an earlier test is never
        paired again: its outcome may have decided the restart)."""
        ref = self.reference_
        self._betting = self._model.initial_state(ref.sums, float(ref.n_rest))
        self._log_wealth = 0.0
        self.rejection_time_: int | None = None
        self._rejecting: int | None = None
        if not hasattr(self, "_paired"):
            self._paired = 0

    # ---------------------------------------------------------------- updates

    def update(self, x: Any) -> SequentialResult:
        """Bet on one row or a block of rows, oldest first.

        Parameters
        ----------
        x : array-like (d,) or (r, d), or a DataFrame
            A row or rows (named columns must be the reference's, in its order). NaN,
            inf, a wrong width or other names are refused (ValueError naming them)
            before anything changes.

        Returns
        -------
        SequentialResult
            The log wealth after each row, and whether (and when) the test rejected.

        Notes
        -----
        Each row places one bet per bettor (its kernel values with the landmarks, in the
        compiled core); a block of rows in one call costs less per row than one call
        per row. The wealth does not depend on how the rows are split into calls (to
        round-off: a call's kernel values come from the tile engine or row by row).
        """
        X = self._rows(x)
        r = X.shape[0]
        pool = self.reference_.pool
        q = min(r, pool.shape[0] - self._paired)
        if q < r and not self._model.margin_bets:
            raise ValueError(
                f"the paired pool is used up ({pool.shape[0]} held-out rows, {pool.shape[0] - self._paired} left) "
                f"and this test places no margin bets (delta=0): it cannot bet on {r} more rows"
            )
        nt = n_threads_arg(self.n_threads)
        log_wealth, state = self._model.bet(self._betting, X, pool[self._paired : self._paired + q], nt)
        t0 = int(self._betting["t"])
        self._betting, self._paired = state, self._paired + q
        times = t0 + 1 + np.arange(r)
        if r:
            self._log_wealth = float(log_wealth[-1])
        per_kernel = kernel_log_wealth(self._model, state)
        result, (self.rejection_time_, self._rejecting) = betting_outcome(
            log_wealth, times, self.threshold_, (self.rejection_time_, self._rejecting), per_kernel, self.kernels_
        )
        return result

    def _rows(self, x: Any) -> np.ndarray:
        rows, names = as_rows(x, "x")
        check_feature_names(fitted_feature_names(self), names, owner="SequentialDriftTest", what="x")
        X = np.asarray(rows) if not isinstance(rows, np.ndarray) else rows
        if X.ndim == 1:
            X = X[None, :]
        X = as_data_matrix(X, "x")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"x has {X.shape[1]} features but the reference has {self.n_features_in_}")
        if self.scaling_ is not None:
            X = self.scaling_.apply(X)
        return np.ascontiguousarray(X, dtype=np.float64)

    # ---------------------------------------------------------------- what it holds

    @property
    def t_(self) -> int:
        return int(self._betting["t"])

    @property
    def log_wealth_(self) -> float:
        return self._log_wealth

    @property
    def rejecting_kernel_(self) -> Kernel | None:
        return None if self._rejecting is None else self.kernels_[self._rejecting]

    @property
    def witness_(self) -> np.ndarray:
        out: np.ndarray = self._betting["witness"].copy()
        return out

    @property
    def n_paired_left_(self) -> int:
        return int(self.reference_.pool.shape[0] - self._paired)

    # ---------------------------------------------------------------- persistence

    def _state(self) -> dict[str, Any]:
        ref = self.reference_
        return {
            "kernels": ref.kernels,
            "landmarks": ref.landmarks,
            "sums": ref.sums,
            "n_rest": ref.n_rest,
            "pool": ref.pool,
            "paired": self._paired,
            "betting": self._betting,
            "log_wealth": self._log_wealth,
            "rejection_time": self.rejection_time_,
            "rejecting": self._rejecting,
            "n_features_in": self.n_features_in_,
            "n_reference": self.n_reference_,
            "feature_names": fitted_feature_names(self),
            **scaling_state(self.scaling_),
        }

    @classmethod
    def _from_state(cls, params: dict[str, Any], state: dict[str, Any]) -> SequentialDriftTest:
        """A test from saved parameters and state (nk.load), every field checked against
        the others as a new test's are (``_build``), the bettors' state against the
        model's shapes (the core checks its ranges at the next update)."""
        test = cls.__new__(cls)
        test.alpha = check_probability(params["alpha"], "alpha")
        test.kernel, test.betting, test.standardize = params["kernel"], params["betting"], params["standardize"]
        m, h = params["n_landmarks"], params["n_holdout"]
        test.n_landmarks = None if m is None else check_positive_int(m, "n_landmarks")
        if h is not None and not (isinstance(h, (int, np.integer)) and h >= 0):
            raise ValueError(f"n_holdout must be an integer >= 0 or None, got {h!r}")
        test.n_holdout = None if h is None else int(h)
        test.delta = None if params["delta"] is None else float(params["delta"])
        test.refresh = check_positive_int(params["refresh"], "refresh")
        test.n_threads = params["n_threads"]
        kernel_choice(test.kernel)
        ref = BettingReference(
            list(state["kernels"]), state["landmarks"], state["sums"], state["n_rest"], state["pool"]
        )
        keep_feature_names(test, state.get("feature_names"))
        test._build(ref, state["n_features_in"], state["n_reference"], scaling_from_state(state))
        betting = dict(state["betting"])
        check_state(betting, len(ref.kernels), ref.landmarks.shape[0])
        paired, t = state["paired"], betting["t"]
        if not (isinstance(paired, (int, np.integer)) and 0 <= paired <= ref.pool.shape[0]):
            raise ValueError(f"paired must be in [0, {ref.pool.shape[0]}] (the held-out rows), got {paired!r}")
        if betting["count_y"] != ref.n_rest or not np.array_equal(betting["sums_y"], ref.sums):
            raise ValueError("the bettors' reference sums are not the reference's")
        if betting["count_x"] != t or not 0 <= t < betting["next_refresh"]:
            raise ValueError(f"count_x and next_refresh do not agree with t = {t}")
        test.rejection_time_, test._rejecting = saved_rejection(state, 1, t, len(ref.kernels))
        test._betting, test._paired, test._log_wealth = betting, int(paired), float(state["log_wealth"])
        return test

    def get_params(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "kernel": self.kernel,
            "n_landmarks": self.n_landmarks,
            "n_holdout": self.n_holdout,
            "delta": self.delta,
            "betting": self.betting,
            "refresh": self.refresh,
            "standardize": self.standardize,
            "n_threads": self.n_threads,
        }

    def save(self, path: Any) -> None:
        """Write the test and its stream's state (wealth, witnesses, the pool's position)
        to ``path`` (.npz); nk.load reads it back and the test goes on where it was."""
        save(self, path)

    def summary(self) -> dict[str, Any]:
        """What ``nystrom-kme info`` prints: the test's fields as JSON data."""
        return {
            "kernels": [repr(k) for k in self.kernels_],
            "alpha": self.alpha,
            "threshold": self.threshold_,
            "margin": [float(e) for e in self.margin_],
            "n_reference": self.n_reference_,
            "n_features": self.n_features_in_,
            "n_landmarks": int(self.landmarks_.shape[0]),
            "n_holdout": int(self.reference_.pool.shape[0]),
            "paired_left": self.n_paired_left_,
            "t": self.t_,
            "log_wealth": self._log_wealth,
            "rejection_time": self.rejection_time_,
            **scaling_summary(self.scaling_),
        }

    def __repr__(self) -> str:
        return (
            f"SequentialDriftTest(alpha={self.alpha:g}, kernels={len(self.kernels_)}, m={self.landmarks_.shape[0]}, "
            f"t={self.t_}, log_wealth={self._log_wealth:.4g}, rejection_time={self.rejection_time_})"
        )


__all__ = ["DELTA_SHARE", "POOL", "SequentialDriftTest", "kernel_choice"]
