"""Drift detection against a frozen Nyström reference.

* :class:`DriftDetector`: one exact permutation test per batch, with the default
  statistic of :func:`~nystrom_kme.two_sample_test`, at a cost independent of the
  reference's size (``batch.py``);
* :class:`OnlineDriftDetector`: a sliding window's MMD to the reference after every new
  row, thresholds set by simulation for an expected run time (``online.py``).

``_reference.py`` reads the reference once: held-out rows, landmarks, kernel sums.
"""

from __future__ import annotations

from .batch import DriftDetector, DriftResult
from .online import OnlineDriftDetector, OnlineDriftResult

__all__ = ["DriftDetector", "DriftResult", "OnlineDriftDetector", "OnlineDriftResult"]
