"""The defaults that the Python API and the command line share: one table, read by the
functions' signatures and by the ``nystrom-kme`` parser, so that a command and the call
it makes cannot drift apart (``drift fit`` once held out 2000 reference rows where
``DriftDetector`` holds out 20,000).

:data:`SHARED` lists every (Python parameter, command-line option) pair that takes one
of these values; ``tests/python/test_defaults.py`` checks both sides against it. The
command line differs on purpose in one place: ``--random-state`` defaults to 0 (a
command gives the same answer when run again), the Python functions to None (fresh
entropy, numpy's convention).
"""

from __future__ import annotations

from typing import Final, NamedTuple

#: Permutations of a two-sample test and of each drift batch.
N_PERMUTATIONS: Final = 200
#: Level of the tests and of the batch drift detector.
ALPHA: Final = 0.05
#: Reference rows a batch drift detector holds out and permutes against each batch (at
#: most half the reference): batches up to 1/30 of them are calibrated (drift/_statistic.py).
DRIFT_N_HOLDOUT: Final = 100_000
#: How a two-sample test computes its statistics ("auto": exact up to 10 000 pooled rows, fewer above 20 features).
TEST_METHOD: Final = "auto"
#: A batch drift detector's default m is the paper's for at most this many reference
#: rows outside the held-out ones (302 landmarks at 5000 rows).
DRIFT_MAX_DEFAULT_ROWS: Final = 5_000
#: An online drift detector's default m is the paper's for at most this many rows.
ONLINE_MAX_DEFAULT_ROWS: Final = 20_000
#: An online detector holds out max(ONLINE_MIN_HOLDOUT, 4 window_size) rows by default.
ONLINE_MIN_HOLDOUT: Final = 2_000
#: The landmark sampler of a fit (uniform with replacement: the paper's).
FIT_SAMPLER: Final = "uniform"
#: How ``compress`` chooses and weights its points.
COMPRESS_SAMPLER: Final = "rpcholesky"
COMPRESS_WEIGHTS: Final = "simplex"
#: Failure probability of the bounds behind ``suggest_n_landmarks``.
BOUNDS_DELTA: Final = 0.05
#: The scalings ``standardize=`` names (True is the first); the command line's
#: ``--standardize`` takes them and "none".
STANDARDIZE_KINDS: Final = ("standard", "robust")


class Shared(NamedTuple):
    """A Python parameter and the command-line option that must default alike."""

    function: str  # "module:qualified name" of the function or class
    parameter: str
    command: str  # the command, its words separated by spaces ("drift fit")
    option: str  # the option's destination in the parsed arguments
    value: object


#: Every pair that shares a default (tests/python/test_defaults.py checks both sides).
SHARED: Final = (
    Shared("nystrom_kme.two_sample:two_sample_test", "n_permutations", "test", "permutations", N_PERMUTATIONS),
    Shared("nystrom_kme.two_sample:two_sample_test", "alpha", "test", "alpha", ALPHA),
    Shared("nystrom_kme.two_sample:two_sample_test", "method", "test", "method", TEST_METHOD),
    Shared("nystrom_kme.drift:DriftDetector", "n_permutations", "drift fit", "permutations", N_PERMUTATIONS),
    Shared("nystrom_kme.drift:DriftDetector", "n_holdout", "drift fit", "holdout", DRIFT_N_HOLDOUT),
    Shared("nystrom_kme.drift:DriftDetector", "alpha", "drift fit", "alpha", ALPHA),
    Shared("nystrom_kme.nystrom:NystromKME", "sampler", "fit", "sampler", FIT_SAMPLER),
    Shared("nystrom_kme.compression:compress", "sampler", "compress", "sampler", COMPRESS_SAMPLER),
    Shared("nystrom_kme.compression:compress", "weights", "compress", "weights", COMPRESS_WEIGHTS),
    Shared("nystrom_kme.bounds:suggest_n_landmarks", "delta", "suggest-m", "delta", BOUNDS_DELTA),
)

__all__ = [
    "ALPHA",
    "BOUNDS_DELTA",
    "COMPRESS_SAMPLER",
    "COMPRESS_WEIGHTS",
    "DRIFT_MAX_DEFAULT_ROWS",
    "DRIFT_N_HOLDOUT",
    "FIT_SAMPLER",
    "N_PERMUTATIONS",
    "ONLINE_MAX_DEFAULT_ROWS",
    "ONLINE_MIN_HOLDOUT",
    "SHARED",
    "STANDARDIZE_KINDS",
    "Shared",
]
