"""Anytime-valid sequential kernel tests by betting on a compressed embedding.

* :class:`SequentialDriftTest`: a stream against a frozen reference (``drift.py``: the
  null with a finite reference, argued in its docstring);
* :class:`SequentialTwoSampleTest`: two streams against each other, A/B-style
  (``two_sample.py``).

Both bet on every row with a witness learnt from the past (coefficients on m landmarks,
O(K m d) per row in the compiled core, ``_betting.py``) and reject when the wealth, an
e-process, reaches 1 / alpha: P(a false alarm ever) <= alpha by Ville's inequality,
whenever and however often one looks. ``_reference.py`` reads a drift test's reference.
"""

from __future__ import annotations

from .drift import SequentialDriftTest
from .results import SequentialResult
from .two_sample import SequentialTwoSampleTest

__all__ = ["SequentialDriftTest", "SequentialResult", "SequentialTwoSampleTest"]
