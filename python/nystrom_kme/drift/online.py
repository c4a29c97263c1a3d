"""Online drift detection: :class:`OnlineDriftDetector` updates, after every new row, the
MMD between a sliding window of the last W rows and the reference's Nyström embedding,
and raises an alarm when it crosses a threshold set so that, without drift, the expected
run time (updates until the first false alarm, counted from the first update) is ``ert``.

The statistic of the window y_1..y_W is the squared MMD between its empirical
distribution (U-statistic) and the reference's Nyström embedding mu_R:

    T = sum_{i != j} k(y_i, y_j) / (W (W - 1)) - 2 mean_i mu_R(y_i) + ||mu_R||^2.

A new row costs one evaluation of mu_R (m kernel values: the core's row sums) and its
kernel values with the previous W - 1 rows: O((m + W) d), independent of the reference.

The threshold (``_thresholds.py``): one level for every full window, such that the mean
run length without drift (updates from a reset to the first alarm) is ``ert``. It is read
from the run lengths of a long stream simulated from held-out reference rows H (not used
for mu_R, the landmarks or the bandwidth): rows drawn with replacement, the windows
centred on H's own embedding plus the expected effect of mu_R's error, and the run
lengths of every level counted along the stream as the detector would (reset after each
alarm). The simulation costs the same for every ert (about 4 10^8 kernel values); beyond
the run lengths it reads directly (those with 400 alarms: about 10^4 at W = 100) the
curve is extrapolated, and more than 1000 times beyond them is refused. The window's
arithmetic (a ring of the last W - 1 rows and their forward kernel sums) is in
``_window.py``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _core, _plots, defaults
from .._columns import check_feature_names, fitted_feature_names, keep_feature_names
from .._frames import Tabular
from .._landmark_plan import DefaultLandmarks
from .._scaling import (
    check_scaling,
    check_standardize,
    fit_scaling,
    scaling_from_state,
    scaling_state,
    scaling_summary,
    warn_scales,
)
from .._validation import (
    SPLIT_SEED_BOUND,
    RandomStateLike,
    as_data_matrix,
    check_positive_int,
    check_positive_real,
    check_random_state,
    draw_seed,
    n_threads_arg,
)
from ..kernels import Kernel, get_kernel
from ..landmark_search import AutoLandmarks
from ..persistence import FileFormatError, persistable
from ..sampling import SamplerLike
from ..sources import SourceLike, as_rows, scaled
from ..two_sample.engine import check_landmarks
from . import _thresholds
from ._reference import as_float64, build_reference, reference_source, save_detector
from ._window import Ring, advance, forward_sums

#: Landmarks by default: the paper's m for min(n_ref - n_holdout, MAX_DEFAULT_ROWS) rows.
MAX_DEFAULT_ROWS = defaults.ONLINE_MAX_DEFAULT_ROWS
#: The default m (the rule of every Nyström test and detector, capped at the paper's m
#: for MAX_DEFAULT_ROWS rows).
DEFAULT_LANDMARKS = DefaultLandmarks.up_to(MAX_DEFAULT_ROWS)

#: The most rows a detector counts (t_): every count below it is exact in float64, and
#: the next update's row numbers fit an int64 (a saved t beyond it is refused).
MAX_ROWS_SEEN = 2**53


@dataclass(frozen=True)
class OnlineDriftResult(Tabular):
    """The detector after an :meth:`OnlineDriftDetector.update` of one or more rows
    (``to_frame()``: one row per update; ``plot()``: the statistic against its threshold;
    :meth:`concatenate` joins the results of successive updates into one stream).

    Attributes
    ----------
    statistic : ndarray (rows,)
        The window's squared MMD to the reference after each row (NaN while the window
        is not yet full: the first W - 1 updates after a reset).
    threshold : ndarray (rows,)
        The threshold each statistic was compared with (the detector's ``threshold_``;
        NaN while the window is not full).
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

    @classmethod
    def concatenate(cls, results: Sequence[OnlineDriftResult]) -> OnlineDriftResult:
        """One result for successive updates (in order): their rows one after the other,
        the first alarm among them."""
        if not results or not all(isinstance(r, OnlineDriftResult) for r in results):
            raise ValueError("results must be a non-empty list of OnlineDriftResult")
        first = next((r.drift_time for r in results if r.drift_time is not None), None)
        return cls(
            statistic=np.concatenate([r.statistic for r in results]),
            threshold=np.concatenate([r.threshold for r in results]),
            is_drift=first is not None,
            time=np.concatenate([r.time for r in results]),
            drift_time=first,
        )

    def rows(self) -> list[dict[str, object]]:
        """One row per update: t, the statistic, the threshold (NaN while the window is not
        full) and whether it raised an alarm."""
        return [
            {"time": int(t), "statistic": float(s), "threshold": float(c), "alarm": bool(s > c)}
            for t, s, c in zip(self.time, self.statistic, self.threshold)
        ]

    def plot(self, ax: Any = None) -> Any:
        """The statistic after each update against its threshold, the alarms marked
        (matplotlib is imported here: an ImportError names it when it is missing). Returns the Axes."""
        title = f"first alarm at t = {self.drift_time}" if self.drift_time is not None else "no alarm"
        return _plots.plot_stream(self.time, self.statistic, self.threshold, ax=ax, title=title)

    def __repr__(self) -> str:
        last = self.statistic[-1] if self.statistic.size else math.nan
        return (
            f"OnlineDriftResult(is_drift={self.is_drift}, drift_time={self.drift_time}, t={int(self.time[-1])}, "
            f"statistic={last:.4g}, threshold={self.threshold[-1]:.4g})"
        )


@persistable
class OnlineDriftDetector:
    """Online drift detection: a sliding window's MMD to a frozen Nyström reference, with
    a threshold for an expected run time ``ert`` without drift.

    Parameters
    ----------
    x_ref : array-like (n_ref, d) or row source
        The reference, read once (at least 4 W rows: 2 W held out for the simulation).
    ert : float
        The expected run time without drift: the mean number of updates, counted from the
        first one after a reset, until the first (false) alarm. Larger than
        ``window_size``; an int or float of Python or numpy. At most 1000 times the
        longest run length the simulation reads directly (``n_bootstraps`` / 400): an
        error names the limit.
    window_size : int
        W, the rows in the sliding window (>= 2): small windows react fast to large
        changes, large ones see small changes.
    kernel : Kernel or str, default="gaussian"
        One kernel; a name gets the median bandwidth of the reference.
    n_landmarks : int, None, "auto" or AutoLandmarks
        m, drawn from the rows used for mu_R (the reference outside the held-out rows);
        None: ceil(sqrt(n) log sqrt(n)) for those n rows, at most the paper's m for 20 000
        rows; "auto": the certified search on those rows. The landmark plan of
        :class:`DriftDetector`.
    sampler : sampling policy name or object, or None
        How the landmarks are chosen (as :class:`DriftDetector`'s); None: uniform without
        replacement.
    n_bootstraps : int or None
        Rows of the simulated stream that sets the threshold, each drawn with replacement
        from the held-out rows; None: 4 10^8 / (W - 1) (the same cost for every ert), at
        most 2^23 and 10 000 ert, at least 64 W. Run lengths up to ``n_bootstraps`` / 400
        are read from the stream, longer ones extrapolated.
    n_holdout : int or None
        Held-out reference rows the stream is drawn from (at most 3000 of them);
        None: min(n_ref / 2, max(2000, 4 W)).
    standardize : bool or {"standard", "robust"}, default=False
        Centre and scale every column with the reference's statistics (saved with the
        detector, applied to every update's rows), as :class:`DriftDetector`'s. Without it,
        a UserWarning names the columns whose variance dwarfs the others'.
    preprocess : callable or None
        Applied to x_ref and to every update's rows, always a 2-d block (one row as
        (1, ...)); a detector with one cannot be saved.
    random_state, n_threads, chunk_rows : as :class:`DriftDetector`

    Attributes
    ----------
    threshold_ : float
        The level a full window's statistic must exceed to raise an alarm.
    threshold_extrapolated_ : bool
        Whether ``ert`` lies beyond the run lengths read directly from the simulated
        stream (the threshold then comes from an extrapolated run-length curve).
    landmarks_, weights_, norm2_ : ndarray, ndarray, float
        The reference's Nyström embedding mu_R and ||mu_R||^2.
    t_ : int
        Updates since the last reset.
    scaling_ : Scaling or None
        The columns' scaling of ``standardize``.

    Notes
    -----
    One statistic: the window's MMD to mu_R. The batch detector's ``statistic=`` names a
    permutation statistic of ``drift._statistic.STATISTICS``, which this detector cannot
    take: its threshold is not set by permutations but by simulating this very statistic
    along a stream (:mod:`nystrom_kme.drift._thresholds`), so another statistic would need
    its own simulation.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> det = nk.OnlineDriftDetector(rng.normal(size=(5000, 2)), ert=200, window_size=20, random_state=0)
    >>> res = det.update(rng.normal(size=(100, 2)) + 1.5)   # a shifted stream
    >>> res.is_drift, res.drift_time <= 40
    (True, True)
    """

    threshold_: float
    threshold_extrapolated_: bool
    t_: int
    _calibration: _thresholds.Calibration
    _ring: Ring

    def __init__(
        self,
        x_ref: SourceLike,
        *,
        ert: float,
        window_size: int,
        kernel: Kernel | str = "gaussian",
        n_landmarks: int | str | AutoLandmarks | None = None,
        sampler: SamplerLike | None = None,
        n_bootstraps: int | None = None,
        n_holdout: int | None = None,
        standardize: bool | str = False,
        preprocess: Callable[[Any], Any] | None = None,
        random_state: RandomStateLike = None,
        n_threads: int | None = None,
        chunk_rows: int | None = None,
    ) -> None:
        W = check_positive_int(window_size, "window_size")
        if W < 2:
            raise ValueError(f"window_size must be at least 2, got {W}")
        ert = check_positive_real(ert, "ert")  # any real type: np.int64(100) is 100
        if ert < W:
            raise ValueError(f"window_size={W} is larger than ert={ert:g}: no alarm can come before the window fills")
        if ert == W:
            raise ValueError(f"ert={ert:g} equals window_size={W}: every run would end at its first full window")
        if not isinstance(kernel, (Kernel, str)):
            raise ValueError(f"kernel must be one Kernel or a kernel name (online: one kernel), got {kernel!r}")
        self.ert, self.window_size = float(ert), W
        self.kernel, self.n_landmarks, self.sampler = kernel, n_landmarks, sampler
        m, auto = check_landmarks(n_landmarks, sampler, "nystrom", False)
        self.n_bootstraps = None if n_bootstraps is None else check_positive_int(n_bootstraps, "n_bootstraps")
        self.n_holdout = None if n_holdout is None else check_positive_int(n_holdout, "n_holdout")
        self.standardize = standardize
        kind = check_standardize(standardize)
        self.preprocess, self.n_threads = preprocess, n_threads
        nt = n_threads_arg(n_threads)
        src, names = reference_source(x_ref, preprocess, chunk_rows)
        n = src.count_rows()
        if n < 4 * W:
            raise ValueError(f"x_ref must have at least 4 window_size = {4 * W} rows, got {n}")
        rng = check_random_state(random_state)
        seed = draw_seed(rng, SPLIT_SEED_BOUND)
        h = min(n // 2, self.n_holdout if self.n_holdout is not None else max(defaults.ONLINE_MIN_HOLDOUT, 4 * W))
        if h < 2 * W:
            raise ValueError(f"n_holdout={h} must be at least 2 window_size = {2 * W}")
        self.scaling_ = None if kind is None else fit_scaling([src], kind)
        if self.scaling_ is None:
            warn_scales([src], [get_kernel(kernel)], "the drift reference")
        # the reference, read once as the batch detector reads it (drift/_reference.py)
        ref = build_reference(
            scaled(src, self.scaling_),
            get_kernel(kernel),
            False,
            auto if auto is not None else m,
            sampler,
            h,
            DEFAULT_LANDMARKS,
            rng,
            nt,
        )
        k, L, holdout = ref.kernels[0], ref.landmarks, ref.holdout
        alpha = ref.embedding(0, nt)
        assert src.n_features is not None  # known once the rows are counted
        self.kernel_, self.n_features_in_, self.n_reference_ = k, int(src.n_features), n
        keep_feature_names(self, names)
        self.landmarks_, self.weights_ = L, alpha
        self.norm2_ = float(alpha @ _core.kernel_matrix(L, L, k.to_core(), nt) @ alpha)
        self._configure(holdout, np.random.default_rng([seed, 1]), nt)
        self.reset()

    # ---------------------------------------------------------------- thresholds

    def _embedding(self, X: np.ndarray, nt: int) -> np.ndarray:
        """mu_R(x) for each row of X: sum_j alpha_j k(l_j, x)."""
        return _core.kernel_sums(X, self.landmarks_, self.weights_[:, None], self.kernel_.to_core(), nt)[:, 0]

    def _configure(self, holdout: np.ndarray, rng: np.random.Generator, nt: int) -> None:
        """The threshold for ert: the run lengths of one stream drawn from the held-out
        rows (at most POOL_ROWS of them), as ``_thresholds.calibrate`` reads them."""
        n_rest = self.n_reference_ - holdout.shape[0]  # the rows behind mu_R
        if holdout.shape[0] > _thresholds.POOL_ROWS:
            holdout = holdout[np.sort(rng.choice(holdout.shape[0], _thresholds.POOL_ROWS, replace=False))]
        K = _core.kernel_matrix(holdout, holdout, self.kernel_.to_core(), nt)
        threads = nt or int(_core.build_info()["default_threads"])  # type: ignore[call-overload]  # an int
        self._calibration = _thresholds.calibrate(
            K, self._embedding(holdout, nt), n_rest, self.window_size, self.ert, rng, self.n_bootstraps, threads
        )
        self.threshold_ = self._calibration.threshold
        self.threshold_extrapolated_ = self._calibration.extrapolated

    # ---------------------------------------------------------------- updates

    def reset(self) -> None:
        """Start a new stream: an empty window, t = 0."""
        self.t_ = 0
        self._ring = Ring.empty(self.n_features_in_)  # the last W - 1 rows, their mu_R and forward sums

    def update(self, x: Any) -> OnlineDriftResult:
        """Add one row or a block of rows, oldest first: the window's statistic after each.

        Parameters
        ----------
        x : array-like (d,) or (r, d)
            One row or r rows (with ``preprocess``: anything it takes; a 1-d ``x`` is
            handed to it as a (1, ...) block). NaN, inf or a wrong width are refused
            before anything changes.

        Returns
        -------
        OnlineDriftResult
            The statistics, the threshold, and the first alarm among these rows.

        Notes
        -----
        Each row costs its m kernel values with the landmarks (the core's row sums) and
        its W - 1 with the previous rows: O((m + W) d), the same for every reference
        size and every position in the stream.

        Examples
        --------
        >>> import numpy as np, nystrom_kme as nk
        >>> rng = np.random.default_rng(1)
        >>> det = nk.OnlineDriftDetector(rng.normal(size=(3000, 2)), ert=100, window_size=10,
        ...                              n_bootstraps=100_000, random_state=0)
        >>> res = det.update(rng.normal(size=(9, 2)))      # 9 rows: the window is not full yet
        >>> bool(np.isnan(res.statistic).all()), det.t_
        (True, 9)
        >>> res = det.update(rng.normal(size=2))            # one row: the first full window
        >>> res.time.tolist(), bool(res.statistic[0] < det.threshold_)
        ([10], True)
        """
        rows, names = as_rows(x, "x")  # a path read here; names checked before preprocess
        check_feature_names(fitted_feature_names(self), names, owner="OnlineDriftDetector", what="x")
        if self.preprocess is not None:
            X = np.asarray(self.preprocess(np.asarray(rows)[None, ...] if np.ndim(rows) == 1 else rows))
        else:
            X = np.asarray(rows)
        if X.ndim == 1:
            X = X[None, :]
        X = as_float64(as_data_matrix(X, "x"))
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"x has {X.shape[1]} features but the reference has {self.n_features_in_}")
        if self.scaling_ is not None:
            X = self.scaling_.apply(X)
        nt = n_threads_arg(self.n_threads)
        W = self.window_size
        stats, ring = advance(self._ring, X, self._embedding(X, nt), W, self.norm2_, self.kernel_.to_core())
        times = self.t_ + 1 + np.arange(X.shape[0])
        thresholds = np.where(times >= W, self.threshold_, np.nan)
        alarms = np.flatnonzero(stats > self.threshold_)  # NaN compares False: no alarm before W
        self.t_ += X.shape[0]
        self._ring = ring
        return OnlineDriftResult(
            statistic=stats,
            threshold=thresholds,
            is_drift=bool(alarms.size),
            time=times,
            drift_time=int(times[alarms[0]]) if alarms.size else None,
        )

    # ---------------------------------------------------------------- state

    def _state(self) -> dict[str, Any]:
        cal = self._calibration
        return {
            "kernel": self.kernel_,
            "landmarks": self.landmarks_,
            "weights": self.weights_,
            "norm2": self.norm2_,
            "threshold": cal.threshold,
            "levels": cal.levels,
            "alarms": cal.alarms,
            "simulated_rows": cal.rows,
            "center": cal.center,
            "scale": cal.scale,
            "extrapolated": cal.extrapolated,
            "t": self.t_,
            "rows": self._ring.rows,
            "f": self._ring.f,
            "g": self._ring.g,
            "n_features_in": self.n_features_in_,
            "n_reference": self.n_reference_,
            "feature_names": fitted_feature_names(self),
            **scaling_state(self.scaling_),
        }

    @classmethod
    def _from_state(cls, params: dict[str, Any], state: dict[str, Any]) -> OnlineDriftDetector:
        """The detector of a saved state, its fields checked against each other: the
        threshold is the one its run-length curve gives for ert and lies in the
        statistic's range, ||mu_R||^2 and the ring's mu_R values and forward sums are
        those of the landmarks, weights and rows (FileFormatError names the field)."""
        det = cls.__new__(cls)
        det.ert, det.window_size = float(params["ert"]), int(params["window_size"])
        if det.window_size < 2 or det.ert <= det.window_size:
            raise FileFormatError(f"window_size={det.window_size}, ert={det.ert}: expected 2 <= window_size < ert")
        det.kernel, det.n_landmarks = params["kernel"], params["n_landmarks"]
        det.sampler = params.get("sampler")
        det.n_bootstraps, det.n_holdout = params["n_bootstraps"], params["n_holdout"]
        det.standardize = params.get("standardize", False)
        det.preprocess, det.n_threads = None, params["n_threads"]
        check_landmarks(det.n_landmarks, det.sampler, "nystrom", False)
        det.kernel_, det.n_features_in_, det.n_reference_ = (
            state["kernel"],
            state["n_features_in"],
            state["n_reference"],
        )
        keep_feature_names(det, state.get("feature_names"))
        det.scaling_ = scaling_from_state(state)
        L, W, t, rows = state["landmarks"], det.window_size, state["t"], state["rows"]
        held = min(t, W - 1)
        try:
            check_scaling(det.scaling_, det.standardize, det.n_features_in_)
            if L.shape[1] != det.n_features_in_ or state["weights"].shape != (L.shape[0],):
                raise ValueError(f"landmarks must have n_features_in={det.n_features_in_} columns, one weight each")
            if not 0 <= t < MAX_ROWS_SEEN:
                raise ValueError(f"t={t!r}: the rows seen must be a count in [0, 2^53)")
            if rows.ndim != 2 or rows.shape != (held, det.n_features_in_) or not np.isfinite(rows).all():
                raise ValueError(f"rows must hold the last min(t, window_size - 1) = {held} rows of the stream")
            if state["f"].shape != (held,) or state["g"].shape != (held,):
                raise ValueError(f"f and g must hold one value per row of the ring, {held}")
            if not state["norm2"] >= 0:
                raise ValueError(f"norm2={state['norm2']!r}: expected a finite number >= 0")
            _thresholds.check_curve(
                state["levels"], state["alarms"], state["simulated_rows"], W, state["center"], state["scale"]
            )
        except ValueError as err:
            raise FileFormatError(str(err)) from None
        det.landmarks_, det.weights_, det.norm2_ = state["landmarks"], state["weights"], state["norm2"]
        core, nt = det.kernel_.to_core(), n_threads_arg(det.n_threads)

        def check(name: str, saved: np.ndarray | float, wanted: np.ndarray | float, scale: float) -> None:
            gap = float(np.max(np.abs(np.asarray(saved) - np.asarray(wanted)), initial=0.0))
            if not gap <= 1e-9 * (1.0 + scale):
                raise FileFormatError(f"{name} does not match the detector's other fields (off by {gap:.3g})")

        alpha = det.weights_
        check(
            "norm2", det.norm2_, float(alpha @ _core.kernel_matrix(det.landmarks_, det.landmarks_, core, nt) @ alpha), 1
        )
        rows, W = state["rows"], det.window_size
        check("f", state["f"], det._embedding(rows, nt) if rows.shape[0] else np.empty(0), float(np.abs(alpha).sum()))
        check("g", state["g"], forward_sums(rows, core), float(W))
        if det.n_bootstraps is not None and state["simulated_rows"] != det.n_bootstraps:
            raise FileFormatError(f"simulated_rows={state['simulated_rows']} is not n_bootstraps={det.n_bootstraps}")
        try:
            c, extrapolated = _thresholds.threshold(
                state["levels"], state["alarms"], state["simulated_rows"], W, det.ert, state["center"], state["scale"]
            )
        except ValueError as err:
            raise FileFormatError(
                f"threshold: the saved run-length curve gives none for ert={det.ert:g} ({err})"
            ) from None
        check("threshold", state["threshold"], c, abs(c))
        if extrapolated != state["extrapolated"]:
            raise FileFormatError(f"extrapolated={state['extrapolated']} but the run-length curve says {extrapolated}")
        if det.kernel_.radial:  # 0 <= k <= 1: the statistic lies in [norm2 - 2 max mu_R, 1 + norm2 - 2 min mu_R]
            low = det.norm2_ - 2.0 * float(np.clip(alpha, 0, None).sum())
            high = 1.0 + det.norm2_ - 2.0 * float(np.clip(alpha, None, 0).sum())
            if not low <= state["threshold"] <= high:
                raise FileFormatError(
                    f"threshold={state['threshold']!r} lies outside the statistic's range [{low:.4g}, {high:.4g}]"
                )
        det._calibration = _thresholds.Calibration(
            state["threshold"],
            state["levels"],
            state["alarms"],
            state["simulated_rows"],
            state["center"],
            state["scale"],
            state["extrapolated"],
        )
        det.threshold_, det.threshold_extrapolated_ = det._calibration.threshold, det._calibration.extrapolated
        det.t_, det._ring = state["t"], Ring(rows, state["f"], state["g"])
        return det

    def get_params(self) -> dict[str, Any]:
        return {
            "ert": self.ert,
            "window_size": self.window_size,
            "kernel": self.kernel,
            "n_landmarks": self.n_landmarks,
            "sampler": self.sampler,
            "n_bootstraps": self.n_bootstraps,
            "n_holdout": self.n_holdout,
            "standardize": self.standardize,
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
            "threshold": self.threshold_,
            "threshold_extrapolated": self.threshold_extrapolated_,
            "simulated_rows": self._calibration.rows,
            "t": self.t_,
            **scaling_summary(self.scaling_),
        }

    def __repr__(self) -> str:
        return (
            f"OnlineDriftDetector(ert={self.ert:g}, window_size={self.window_size}, kernel={self.kernel_!r}, "
            f"m={self.landmarks_.shape[0]}, t={self.t_})"
        )


__all__ = ["DEFAULT_LANDMARKS", "OnlineDriftDetector", "OnlineDriftResult"]
