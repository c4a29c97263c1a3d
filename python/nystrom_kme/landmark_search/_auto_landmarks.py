"""The settings of ``n_landmarks="auto"``: :class:`AutoLandmarks` (the target, the
confidence, how ||mu_hat_n||^2 is obtained, the limits of the path) and
:func:`as_auto_spec`, which reads an ``n_landmarks`` argument as such settings."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: The default target: the Nyström embedding's RMS error within 10% of the empirical one's.
DEFAULT_WITHIN = 0.1
#: How the certificate obtains ||mu_hat_n||^2 (AutoLandmarks.check).
CHECKS = ("auto", "exact", "validation")


def _is_number(x: object) -> bool:
    return not isinstance(x, bool) and isinstance(x, (int, float, np.floating, np.integer))


@dataclass(frozen=True)
class AutoLandmarks:
    """Settings of the a-posteriori search of ``NystromKME(n_landmarks=AutoLandmarks(...))``;
    ``n_landmarks="auto"`` is ``AutoLandmarks()``. See :mod:`nystrom_kme.landmark_search`.

    Parameters
    ----------
    tol : float > 0 or None, default=None
        The bound to certify on e / sigma, the Nyström embedding's distance to the
        empirical one over the latter's statistical error. None: from ``within``.
    initial : int or None, default=None
        m of the first block of landmarks; None: 64 (at most ``max_landmarks``).
    max_landmarks : int or None, default=None
        Largest m tried; None: min(n, max(8192, 2 ceil(sqrt(n) log sqrt(n)))). The
        factorization takes 8 m^2 bytes (0.5 GiB at m = 8192) and O(m^3) time.
    stat_samples : int >= 2 or None, default=None
        None: sigma from the search's own estimate of ||mu_hat_n||^2 (no extra cost).
        An int s: from a subsample of s rows instead (O(s^2 d); as
        :func:`~nystrom_kme.estimate_statistical_error`).
    within : float > 0 or None, default=None
        The target as a fraction: the Nyström embedding's RMS error at most
        (1 + within) times the empirical embedding's, i.e.
        tol = ((1 + within)^2 - 1)^(1/2). None: 0.1 (tol = 0.458) unless ``tol`` is set.
    confidence : float in (0.5, 1), default=0.99
        The probability, over the search's random draws, that a certified embedding
        meets the target (for any data: see :mod:`nystrom_kme.landmark_search`).
    check : {"auto", "exact", "validation"}, default="auto"
        How ||mu_hat_n||^2 enters the certificate: "exact" computes it (O(n^2 d)),
        "validation" bounds it from rows drawn independently of the landmarks (each a
        kernel sum over the n rows; no fewer than about 7 / (tol sigma) of them can
        certify, and 3.5 to 8 times that are drawn), "auto" computes it unless the
        validation rows' most cost less (:mod:`nystrom_kme.landmark_search`, "Cost").

    Examples
    --------
    >>> import nystrom_kme as nk
    >>> round(nk.AutoLandmarks().ratio_bound, 4)         # within 10%: ((1.1)^2 - 1)^(1/2)
    0.4583
    >>> round(nk.AutoLandmarks(within=0.05).ratio_bound, 4), nk.AutoLandmarks(tol=0.1).ratio_bound
    (0.3202, 0.1)
    """

    tol: float | None = None
    initial: int | None = None
    max_landmarks: int | None = None
    stat_samples: int | None = None
    within: float | None = None
    confidence: float = 0.99
    check: str = "auto"

    def __post_init__(self) -> None:
        if self.check not in CHECKS:
            raise ValueError(f"check must be one of {CHECKS}, got {self.check!r}")
        for name in ("tol", "within"):
            value = getattr(self, name)
            if value is not None and not (_is_number(value) and math.isfinite(float(value)) and float(value) > 0):
                raise ValueError(f"{name} must be a positive finite number or None, got {value!r}")
        if self.tol is not None and self.within is not None:
            raise ValueError("give tol (the bound on e / sigma) or within (the excess RMS error), not both")
        for name in ("initial", "max_landmarks"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1):
                raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
        s = self.stat_samples
        if s is not None and (isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 2):
            raise ValueError(f"stat_samples must be an integer >= 2 or None, got {s!r}")
        c = self.confidence
        if not (_is_number(c) and 0.5 < float(c) < 1):
            raise ValueError(f"confidence must be a number in (0.5, 1), got {c!r}")

    @property
    def ratio_bound(self) -> float:
        """The certified bound on e / sigma: ``tol``, or ((1 + within)^2 - 1)^(1/2)."""
        if self.tol is not None:
            return float(self.tol)
        within = DEFAULT_WITHIN if self.within is None else float(self.within)
        return math.sqrt((1.0 + within) ** 2 - 1.0)


def as_auto_spec(n_landmarks: object) -> AutoLandmarks | None:
    """The search settings when ``n_landmarks`` asks for the search ("auto" or an
    :class:`AutoLandmarks`), else None."""
    if isinstance(n_landmarks, AutoLandmarks):
        return n_landmarks
    if isinstance(n_landmarks, str) and n_landmarks == "auto":
        return AutoLandmarks()
    return None


__all__ = ["CHECKS", "DEFAULT_WITHIN", "AutoLandmarks", "as_auto_spec"]
