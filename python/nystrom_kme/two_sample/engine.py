"""The permutation-test engine as the drift detectors use it: the arguments' one set of
checks (the kernels and the rule, the level, the permutations, ``n_landmarks`` and
``sampler``), the decision of a rule from every kernel's permuted statistics (with all
the wiring before it: the round-off floor, the matrix the rule reads, MMD-FUSE's
normalisers), and the intervals. :func:`~nystrom_kme.two_sample_test` is built of the
same pieces (:mod:`nystrom_kme.two_sample` describes the pipeline); a detector brings
only its own permuted statistics, as a :class:`PermutedStatistics`
(:mod:`nystrom_kme.drift`).
"""

from __future__ import annotations

from ._arguments import check_landmarks, check_level, check_permutations, given_kernels, kernels_and_rule
from ._decision import Decision, decide, fuse_normalisers
from ._effect import LEVEL, distance, interval
from ._statistics import FROBENIUS_SUBSET, PermutedStatistics, mean_squares

__all__ = [
    "FROBENIUS_SUBSET",
    "LEVEL",
    "Decision",
    "PermutedStatistics",
    "check_landmarks",
    "check_level",
    "check_permutations",
    "decide",
    "distance",
    "fuse_normalisers",
    "given_kernels",
    "interval",
    "kernels_and_rule",
    "mean_squares",
]
