"""One public-API workload per process, for whole-process A/B timing of two trees.

    python -m bench.api_speed fit|test|compress

- fit: ``NystromKME(Gaussian(3), n_landmarks=1000).fit(X)``, X (10^6, 10) standard normal
- test: the default single-kernel Nyström two-sample test at 10^5 + 10^5, d = 10, B = 200
- compress: ``compress(X, 128)`` with X (10^5, 10)

The data are drawn from fixed seeds, so two trees run the same arithmetic. Run each
command under an external timer with the tree to measure first on ``PYTHONPATH``
(alternating the two trees, A B A B ..., and taking the ratio pair by pair); the
script prints the call's own seconds too. Results are in bench/RESULTS.md.
"""

from __future__ import annotations

import sys
import time

import numpy as np

import nystrom_kme as nk


def main() -> None:
    workload = sys.argv[1] if len(sys.argv) > 1 else ""
    rng = np.random.default_rng(0)
    if workload == "fit":
        X = rng.standard_normal((10**6, 10))
        start = time.perf_counter()
        nk.NystromKME(nk.Gaussian(3.0), n_landmarks=1000, random_state=0).fit(X)
    elif workload == "test":
        X = rng.standard_normal((10**5, 10))
        Y = rng.standard_normal((10**5, 10)) + 0.01
        start = time.perf_counter()
        nk.two_sample_test(X, Y, n_permutations=200, random_state=0)
    elif workload == "compress":
        X = rng.standard_normal((10**5, 10))
        start = time.perf_counter()
        nk.compress(X, 128, random_state=0)
    else:
        raise SystemExit("usage: python -m bench.api_speed fit|test|compress")
    print(f"{workload}: {time.perf_counter() - start:.3f} s")


if __name__ == "__main__":
    main()
