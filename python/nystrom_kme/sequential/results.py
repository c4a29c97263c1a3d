"""What a sequential test's ``update`` returns."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..kernels import Kernel


@dataclass(frozen=True)
class SequentialResult:
    """A sequential test after an ``update`` of one or more rows.

    Attributes
    ----------
    log_wealth : ndarray (rows,)
        The log of the test's wealth (an e-process: the mixture of its bettors) after
        each row. Without a change its expectation is at most 1 at any stopping time, so
        P(the wealth ever reaches 1 / alpha) <= alpha (Ville's inequality).
    threshold : float
        The wealth that rejects: 1 / alpha (1 / (alpha - delta) for a drift test whose
        margin bets spend delta on the reference's own error).
    time : ndarray (rows,) of int
        The observation count t after each row (1 for the first).
    reject : bool
        Whether the test has rejected the null (no change) by the last of these rows: its
        wealth reached the threshold at some t (the decision is final; the wealth goes on
        being reported).
    rejection_time : int or None
        The first t at which the wealth reached the threshold (these rows or earlier).
    kernel : Kernel or None
        The kernel whose bettors hold the most wealth after these rows (at the end of the
        update that rejected, if the test rejected): the kernel that saw the change. None
        while a two-sample test's burn-in lasts.
    kernel_log_wealth : ndarray (K,)
        The log wealth of each kernel's own bettors after these rows (the test's wealth
        is their mean).

    ``is_drift`` and ``drift_time`` are ``reject`` and ``rejection_time`` in the drift
    detectors' words (:class:`~nystrom_kme.OnlineDriftResult`); ``wealth`` is
    ``exp(log_wealth)``.

    Examples
    --------
    >>> import numpy as np, nystrom_kme as nk
    >>> rng = np.random.default_rng(0)
    >>> test = nk.SequentialDriftTest(rng.normal(size=(5000, 2)), kernel="gaussian", random_state=0)
    >>> res = test.update(rng.normal(size=(400, 2)) + 1.0)      # a shifted stream
    >>> res.is_drift, res.drift_time < 200, bool(res.wealth.max() >= res.threshold)
    (True, True, True)
    """

    log_wealth: np.ndarray
    threshold: float
    time: np.ndarray
    reject: bool
    rejection_time: int | None
    kernel: Kernel | None
    kernel_log_wealth: np.ndarray

    @property
    def wealth(self) -> np.ndarray:
        """exp(log_wealth) (inf beyond float64's range)."""
        with np.errstate(over="ignore"):
            out: np.ndarray = np.exp(self.log_wealth)
        return out

    @property
    def is_drift(self) -> bool:
        return self.reject

    @property
    def drift_time(self) -> int | None:
        return self.rejection_time

    def __repr__(self) -> str:
        last = float(self.log_wealth[-1]) if self.log_wealth.size else math.nan
        t = int(self.time[-1]) if self.time.size else None
        return (
            f"SequentialResult(reject={self.reject}, rejection_time={self.rejection_time}, t={t}, "
            f"log_wealth={last:.4g}, log_threshold={math.log(self.threshold):.4g}, kernel={self.kernel!r})"
        )


def betting_outcome(
    log_wealth: np.ndarray,
    times: np.ndarray,
    threshold: float,
    rejection: tuple[int | None, int | None],
    per_kernel: np.ndarray,
    kernels: list[Kernel],
) -> tuple[SequentialResult, tuple[int | None, int | None]]:
    """An update's result, and the test's (rejection time, index of the kernel that
    rejected) after it: the first t whose log wealth reaches log(threshold) is kept, with
    the kernel of most wealth at the end of that update; the decision is final."""
    time, rejecting = rejection
    if time is None:
        hits = np.flatnonzero(log_wealth >= math.log(threshold))
        if hits.size:
            time, rejecting = int(times[hits[0]]), int(np.argmax(per_kernel))
    j = rejecting if rejecting is not None else int(np.argmax(per_kernel))
    result = SequentialResult(
        log_wealth=log_wealth,
        threshold=threshold,
        time=times,
        reject=time is not None,
        rejection_time=time,
        kernel=kernels[j],
        kernel_log_wealth=per_kernel,
    )
    return result, (time, rejecting)


def saved_rejection(state: dict[str, Any], first: int, t: int, n_kernels: int) -> tuple[int | None, int | None]:
    """A saved test's (rejection time, index of the kernel that rejected): both None, or a
    time in [first, t] and an index below n_kernels; else ValueError naming both."""
    rejection, rejecting = state["rejection_time"], state["rejecting"]
    if (rejection is None) != (rejecting is None) or (
        rejection is not None and not (first <= rejection <= t and 0 <= rejecting < n_kernels)
    ):
        raise ValueError(f"rejection_time={rejection!r} and rejecting={rejecting!r} do not fit t = {t}")
    return rejection, rejecting


__all__ = ["SequentialResult", "betting_outcome", "saved_rejection"]
