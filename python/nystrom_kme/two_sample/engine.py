"""The permutation-test engine as the drift detectors use it: the arguments' one set of
checks, the decision of a rule from every kernel's permuted statistics, the intervals,
and MMD-FUSE's normalisers. :func:`~nystrom_kme.two_sample_test` is built of the same
pieces (:mod:`nystrom_kme.two_sample` describes the pipeline); a detector brings only its
own permuted statistics (:mod:`nystrom_kme.drift`).
"""

from __future__ import annotations

from ._arguments import check_level, check_permutations, kernels_and_rule
from ._decision import Decision, decide
from ._effect import LEVEL, distance, interval
from ._statistics import FROBENIUS_SUBSET, fuse_normalisers, mean_squares

__all__ = [
    "FROBENIUS_SUBSET",
    "LEVEL",
    "Decision",
    "check_level",
    "check_permutations",
    "decide",
    "distance",
    "fuse_normalisers",
    "interval",
    "kernels_and_rule",
    "mean_squares",
]
