"""Online drift detection: :class:`OnlineDriftDetector` updates, after every new row, the
MMD between a sliding window of the last W rows and the reference's Nyström embedding,
and raises an alarm when it crosses a threshold set so that, without drift, the expected
run time (updates until the first false alarm, counted from the first update) is ``ert``.

The statistic of the window y_1..y_W is the squared MMD between its empirical
distribution (U-statistic) and the reference's Nyström embedding mu_R:

    T = sum_{i != j} k(y_i, y_j) / (W (W - 1)) - 2 mean_i mu_R(y_i) + ||mu_R||^2.

A new row costs one evaluation of mu_R (m kernel values: the core's row sums) and its
kernel values with the window (W of them): O((m + W) d), independent of the reference.

Thresholds (as alibi-detect's online detectors, with two differences): streams of 2W rows
are drawn from held-out reference rows H (not used for mu_R, the landmarks or the
bandwidth), each window compared with H's own embedding (leave-one-out, so that the
simulated T has mean 0 as the live one nearly has), and for each of the W + 1 windows
after the first full one the threshold is
the (1 - p) quantile of the statistic among the simulated streams without an earlier
alarm (later windows use the last threshold). alibi-detect sets p = 1 / ert; here
p = 1 / (ert - W + 1), because no alarm is possible during the first W - 1 updates: the
expected run time counted from the first update is then ert, as its documentation says
it should be (alibi-detect's is about ert + W - 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _core
from .._validation import (
    SPLIT_SEED_BOUND,
    RandomStateLike,
    as_data_matrix,
    check_positive_int,
    check_random_state,
    draw_seed,
    n_threads_arg,
)
from ..bounds import default_n_landmarks
from ..kernels import Kernel, get_kernel, median_distance
from ..persistence import persistable
from ..sources import SourceLike
from ._reference import SUBSET, as_float64, draw_holdout, reference_source, rest_rows, rest_sums, save_detector

#: Landmarks by default: the paper's m for min(n_ref, MAX_DEFAULT_ROWS) rows.
MAX_DEFAULT_ROWS = 20_000
#: Simulated streams per unit of ert (alibi-detect advises at least 10).
BOOTSTRAPS_PER_ERT = 20
#: Memory for the 2W x 2W kernel blocks of the streams simulated together.
STREAM_BYTES = 64 << 20


@dataclass(frozen=True)
class OnlineDriftResult:
    """The detector after an :meth:`OnlineDriftDetector.update` of one or more rows.

    Attributes
    ----------
    statistic : ndarray (rows,)
        The window's squared MMD to the reference after each row (NaN while the window
        is not yet full: the first W - 1 updates after a reset).
    threshold : ndarray (rows,)
        The threshold each statistic was compared with (NaN while not full).
    is_drift : bool
        Whether any of the rows raised an alarm (statistic > threshold).
    time : ndarray (rows,) of int
        The update count t after each row (1 for the first row after a reset).
    drift_time : int or None
        The first t of these rows that raised an alarm.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> det = nk.OnlineDriftDetector(rng.normal(size=(4000, 2)), ert=100, window_size=10, random_state=0)
    >>> res = det.update(rng.normal(size=(5, 2)))
    >>> res.time.tolist(), bool(np.isnan(res.statistic).all()), res.is_drift   # the window is not full yet
    ([1, 2, 3, 4, 5], True, False)
    """

    statistic: np.ndarray
    threshold: np.ndarray
    is_drift: bool
    time: np.ndarray
    drift_time: int | None

    def __repr__(self) -> str:
        last = self.statistic[-1] if self.statistic.size else math.nan
        return (
            f"OnlineDriftResult(is_drift={self.is_drift}, drift_time={self.drift_time}, t={int(self.time[-1])}, "
            f"statistic={last:.4g}, threshold={self.threshold[-1]:.4g})"
        )


@persistable
class OnlineDriftDetector:
    """Online drift detection: a sliding window's MMD to a frozen Nyström reference, with
    thresholds for an expected run time ``ert`` without drift.

    Parameters
    ----------
    x_ref : array-like (n_ref, d) or row source
        The reference, read once (at least 4 W rows: 2 W held out for the simulation).
    ert : float
        The expected run time without drift: the mean number of updates, counted from the
        first one after a reset, until the first (false) alarm. At least ``window_size``.
    window_size : int
        W, the rows in the sliding window (>= 2): small windows react fast to large
        changes, large ones see small changes.
    kernel : Kernel or str, default="gaussian"
        One kernel; a name gets the median bandwidth of the reference.
    n_landmarks : int or None
        m; None: ceil(sqrt(n) log sqrt(n)) for n = min(rows used for mu_R, 20000).
    n_bootstraps : int or None
        Simulated streams that set the thresholds; None: 20 ert (at least 1000).
    n_holdout : int or None
        Held-out reference rows the streams are drawn from; None: min(n_ref / 2,
        max(2000, 4 W)).
    preprocess : callable or None
        Applied to x_ref and to every update's rows; a detector with one cannot be saved.
    random_state, n_threads, chunk_rows : as :class:`DriftDetector`

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> det = nk.OnlineDriftDetector(rng.normal(size=(5000, 2)), ert=200, window_size=20, random_state=0)
    >>> res = det.update(rng.normal(size=(100, 2)) + 1.5)   # a shifted stream
    >>> res.is_drift, res.drift_time <= 40
    (True, True)
    """

    def __init__(
        self,
        x_ref: SourceLike,
        *,
        ert: float,
        window_size: int,
        kernel: Kernel | str = "gaussian",
        n_landmarks: int | None = None,
        n_bootstraps: int | None = None,
        n_holdout: int | None = None,
        preprocess: Callable[[Any], Any] | None = None,
        random_state: RandomStateLike = None,
        n_threads: int | None = None,
        chunk_rows: int | None = None,
    ) -> None:
        W = check_positive_int(window_size, "window_size")
        if W < 2:
            raise ValueError(f"window_size must be at least 2, got {W}")
        if isinstance(ert, bool) or not isinstance(ert, (int, float)) or not math.isfinite(ert) or ert <= 0:
            raise ValueError(f"ert must be a positive number, got {ert!r}")
        if ert < W:
            raise ValueError(f"window_size={W} is larger than ert={ert}: no alarm can come before the window fills")
        if not isinstance(kernel, (Kernel, str)):
            raise ValueError(f"kernel must be one Kernel or a kernel name (online: one kernel), got {kernel!r}")
        self.ert, self.window_size = float(ert), W
        self.kernel, self.n_landmarks = kernel, n_landmarks
        self.n_bootstraps = None if n_bootstraps is None else check_positive_int(n_bootstraps, "n_bootstraps")
        self.n_holdout = None if n_holdout is None else check_positive_int(n_holdout, "n_holdout")
        self.preprocess, self.n_threads = preprocess, n_threads
        nt = n_threads_arg(n_threads)
        src = reference_source(x_ref, preprocess, chunk_rows)
        n = src.count_rows()
        if n < 4 * W:
            raise ValueError(f"x_ref must have at least 4 window_size = {4 * W} rows, got {n}")
        rng = check_random_state(random_state)
        seed = draw_seed(rng, SPLIT_SEED_BOUND)
        h = min(n // 2, self.n_holdout if self.n_holdout is not None else max(2000, 4 * W))
        if h < 2 * W:
            raise ValueError(f"n_holdout={h} must be at least 2 window_size = {2 * W}")
        held = draw_holdout(n, h, rng)
        k = get_kernel(kernel)
        if not k.is_resolved:
            sample = as_float64(src.take(rest_rows(n, held, min(SUBSET, n - h), rng)))
            k = k.with_bandwidth(median_distance(sample, random_state=rng))
        m = (
            default_n_landmarks(min(n - h, MAX_DEFAULT_ROWS))
            if n_landmarks is None
            else check_positive_int(n_landmarks, "n_landmarks")
        )
        if m > n - h:
            raise ValueError(f"n_landmarks={m} exceeds the {n - h} reference rows outside the held-out ones")
        L = np.unique(as_float64(src.take(rest_rows(n, held, m, rng))), axis=0)
        holdout = as_float64(src.take(held))
        sums = rest_sums(src, holdout, L, [k], nt)[0] / (n - h)
        alpha, _, _ = _core.nystrom_weights(L, np.ascontiguousarray(sums[:, None]), k.to_core(), "auto", 0.0, 1e-12, nt)
        alpha = np.ascontiguousarray(alpha, dtype=np.float64)[:, 0]
        B = self.n_bootstraps if self.n_bootstraps is not None else max(1000, int(BOOTSTRAPS_PER_ERT * ert))
        assert src.n_features is not None  # known once the rows are counted
        self.kernel_, self.n_features_in_, self.n_reference_ = k, int(src.n_features), n
        self.landmarks_, self.weights_ = L, alpha
        self.norm2_ = float(alpha @ _core.kernel_matrix(L, L, k.to_core(), nt) @ alpha)
        self.thresholds_ = self._configure(holdout, B, np.random.default_rng([seed, 1]), nt)
        self.reset()

    # ---------------------------------------------------------------- thresholds

    def _embedding(self, X: np.ndarray, nt: int) -> np.ndarray:
        """mu_R(x) for each row of X: sum_j alpha_j k(l_j, x)."""
        return _core.kernel_sums(X, self.landmarks_, self.weights_[:, None], self.kernel_.to_core(), nt)[:, 0]

    def _configure(self, holdout: np.ndarray, n_streams: int, rng: np.random.Generator, nt: int) -> np.ndarray:
        """The thresholds of the W + 1 windows after the first full one: streams of 2W
        held-out rows, each window's statistic, the conditional (1 - p) quantile."""
        W = self.window_size
        p = 1.0 / (self.ert - W + 1)
        core = self.kernel_.to_core()
        # The simulated windows are drawn from H, so they are compared with H's own
        # embedding (leave-one-out: E T = 0 exactly), not with mu_R: H's deviation from the
        # distribution, ~ |H|^(-1/2), would shift the simulated null by ~ sqrt(W / |H|) of a
        # window's noise, which moves a tail quantile far (run lengths 14-17% short at
        # |H| = 2000, W = 20 and 50); R is the larger sample, so mu_R is the better proxy
        # for the distribution in the live statistic.
        h = holdout.shape[0]
        row_sums = _core.kernel_row_sums(holdout, holdout, core, nt)
        diagonal = _core.kernel_diagonal(holdout, core, nt)
        f = (row_sums - diagonal) / (h - 1)
        norm2 = float(np.sum(row_sums - diagonal)) / (h * (h - 1))
        stats = np.empty((n_streams, W + 1))
        block = max(1, STREAM_BYTES // (8 * 4 * W * W))
        for start in range(0, n_streams, block):
            count = min(block, n_streams - start)
            idx = np.stack([rng.permutation(holdout.shape[0])[: 2 * W] for _ in range(count)])
            K = np.stack([_core.kernel_matrix(holdout[i], holdout[i], core, 1) for i in idx])
            stats[start : start + count] = _window_statistics(K, f[idx], W, norm2)
        alive = np.ones(n_streams, dtype=bool)
        out = np.empty(W + 1)
        for w in range(W + 1):
            values = stats[alive, w]
            out[w] = np.quantile(values, 1.0 - p) if values.size else out[w - 1]
            alive &= stats[:, w] <= out[w]
        return out

    # ---------------------------------------------------------------- updates

    def reset(self) -> None:
        """Start a new stream: an empty window, t = 0."""
        self.t_ = 0
        self._rows = np.empty((0, self.n_features_in_))  # the last W - 1 rows (the next window's head)
        self._f = np.empty(0)  # their mu_R values

    def update(self, x: Any) -> OnlineDriftResult:
        """Add one row (d,) or several (r, d), oldest first; the statistic after each.

        NaN, inf or a wrong width are refused before anything changes."""
        X = np.asarray(x) if self.preprocess is None else np.asarray(self.preprocess(x))
        if X.ndim == 1:
            X = X[None, :]
        X = as_float64(as_data_matrix(X, "x"))
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"x has {X.shape[1]} features but the reference has {self.n_features_in_}")
        nt = n_threads_arg(self.n_threads)
        W = self.window_size
        f = self._embedding(X, nt)
        seq = np.vstack([self._rows, X])
        fseq = np.concatenate([self._f, f])
        head = self._rows.shape[0]
        stats = np.full(X.shape[0], np.nan)
        core = self.kernel_.to_core()
        # rows in chunks of W: each chunk's windows need it and the W - 1 rows before it
        for c0 in range(0, X.shape[0], W):
            c1 = min(X.shape[0], c0 + W)
            lo = max(0, head + c0 - (W - 1))
            seg = seq[lo : head + c1]
            # (2W - 1)^2 values: below ~256 rows threads cost more than they save
            K = _core.kernel_matrix(seg, seg, core, nt if seg.shape[0] > 256 else 1)
            ends = np.arange(head + c0, head + c1) - lo  # window ends, in seg
            stats[c0:c1] = _sliding(K, fseq[lo : head + c1], ends, W, self.norm2_)
        times = self.t_ + 1 + np.arange(X.shape[0])
        since_full = times - W  # 0 at the first full window
        thresholds = np.where(since_full >= 0, self.thresholds_[np.clip(since_full, 0, W)], np.nan)
        alarms = np.flatnonzero(stats > thresholds)  # NaN compares False: no alarm before W
        self.t_ += X.shape[0]
        self._rows = seq[-(W - 1) :].copy()
        self._f = fseq[-(W - 1) :].copy()
        return OnlineDriftResult(
            statistic=stats,
            threshold=thresholds,
            is_drift=bool(alarms.size),
            time=times,
            drift_time=int(times[alarms[0]]) if alarms.size else None,
        )

    # ---------------------------------------------------------------- state

    def _state(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel_,
            "landmarks": self.landmarks_,
            "weights": self.weights_,
            "norm2": self.norm2_,
            "thresholds": self.thresholds_,
            "t": self.t_,
            "rows": self._rows,
            "f": self._f,
            "n_features_in": self.n_features_in_,
            "n_reference": self.n_reference_,
        }

    @classmethod
    def _from_state(cls, params: dict[str, Any], state: dict[str, Any]) -> OnlineDriftDetector:
        det = cls.__new__(cls)
        det.ert, det.window_size = float(params["ert"]), int(params["window_size"])
        det.kernel, det.n_landmarks = params["kernel"], params["n_landmarks"]
        det.n_bootstraps, det.n_holdout = params["n_bootstraps"], params["n_holdout"]
        det.preprocess, det.n_threads = None, params["n_threads"]
        det.kernel_, det.n_features_in_, det.n_reference_ = (
            state["kernel"],
            state["n_features_in"],
            state["n_reference"],
        )
        det.landmarks_, det.weights_, det.norm2_ = state["landmarks"], state["weights"], state["norm2"]
        det.thresholds_, det.t_, det._rows, det._f = state["thresholds"], state["t"], state["rows"], state["f"]
        return det

    def get_params(self) -> dict[str, Any]:
        return {
            "ert": self.ert,
            "window_size": self.window_size,
            "kernel": self.kernel,
            "n_landmarks": self.n_landmarks,
            "n_bootstraps": self.n_bootstraps,
            "n_holdout": self.n_holdout,
            "n_threads": self.n_threads,
        }

    def save(self, path: Any) -> None:
        """Write the detector and its stream's state (the window, t) to ``path`` (.npz)."""
        save_detector(self, path)

    def summary(self) -> dict[str, Any]:
        """What ``nystrom-kme info`` prints: the detector's fields as JSON data."""
        return {
            "kernel": repr(self.kernel_),
            "ert": self.ert,
            "window_size": self.window_size,
            "n_reference": self.n_reference_,
            "n_features": self.n_features_in_,
            "n_landmarks": int(self.landmarks_.shape[0]),
            "first_threshold": float(self.thresholds_[0]),
            "last_threshold": float(self.thresholds_[-1]),
            "t": self.t_,
        }

    def __repr__(self) -> str:
        return (
            f"OnlineDriftDetector(ert={self.ert:g}, window_size={self.window_size}, kernel={self.kernel_!r}, "
            f"m={self.landmarks_.shape[0]}, t={self.t_})"
        )


def _window_statistics(K: np.ndarray, f: np.ndarray, W: int, norm2: float) -> np.ndarray:
    """T of the W + 1 windows [w, w + W) of streams of 2W rows: K (S, 2W, 2W) their
    kernel values, f (S, 2W) their mu_R values; (S, W + 1). Each window's pair sum from
    the previous one: minus the leaving row's pairs, plus the entering row's."""
    pairs = np.empty((K.shape[0], W + 1))
    first = K[:, :W, :W]
    pairs[:, 0] = (first.sum(axis=(1, 2)) - np.einsum("sii->s", first)) / 2
    for w in range(W):
        leaving = K[:, w, w + 1 : w + W].sum(axis=1)
        entering = K[:, w + W, w + 1 : w + W].sum(axis=1)
        pairs[:, w + 1] = pairs[:, w] - leaving + entering
    F = np.zeros((f.shape[0], f.shape[1] + 1))
    F[:, 1:] = np.cumsum(f, axis=1)
    s = np.arange(W + 1)
    return 2.0 * pairs / (W * (W - 1)) - 2.0 * (F[:, s + W] - F[:, s]) / W + norm2


def _sliding(K: np.ndarray, f: np.ndarray, ends: np.ndarray, W: int, norm2: float) -> np.ndarray:
    """T of the windows ending at ``ends`` (indices into the rows of K (n, n) and f (n,));
    NaN where fewer than W rows precede. The pair sums from 2-D prefix sums of the strict
    upper triangle."""
    n = K.shape[0]
    upper = np.triu(K, 1)
    C = np.zeros((n + 1, n + 1))
    C[1:, 1:] = upper.cumsum(axis=0).cumsum(axis=1)  # C[a, b] = sum_{i < a, j < b} upper
    F = np.concatenate([[0.0], np.cumsum(f)])
    out = np.full(ends.size, np.nan)
    full = ends - W + 1 >= 0
    e, st = ends[full], ends[full] - W + 1
    # pairs st <= i < j <= e: all of [0, e] minus those with i < st
    pairs = C[e + 1, e + 1] - C[st, e + 1]
    out[full] = 2.0 * pairs / (W * (W - 1)) - 2.0 * (F[e + 1] - F[st]) / W + norm2
    return out


__all__ = ["OnlineDriftDetector", "OnlineDriftResult"]
