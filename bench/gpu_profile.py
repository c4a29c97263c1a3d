"""One launch of each fused row-sum kernel at the sizes of issue 30's targets, for a
profiler: ``row_sums_small`` at (10^6, 4096, 3) and ``row_sums_tc`` at (10^6, 4096, 256),
float32, Gaussian. Each is run once to compile and once more for the profiler.

    ncu --clock-control none --kernel-name regex:row_sums --launch-skip 2 --launch-count 2 \
        --section SpeedOfLight --section ComputeWorkloadAnalysis --section Occupancy \
        python -m bench.gpu_profile
"""

from __future__ import annotations

import math


def main() -> None:
    import cupy as cp

    import nystrom_kme as nk
    from nystrom_kme.cuda import sums

    gen = cp.random.default_rng(0)
    for n, m, d in ((10**6, 4096, 3), (10**6, 4096, 256)):
        X = gen.standard_normal((n, d), dtype=cp.float32)
        L = gen.standard_normal((m, d), dtype=cp.float32)
        k = nk.Gaussian(math.sqrt(d))
        sums.row_sums(L, X, k)  # compiles; the profiler skips these two launches
        cp.cuda.Device().synchronize()
    for n, m, d in ((10**6, 4096, 3), (10**6, 4096, 256)):
        X = gen.standard_normal((n, d), dtype=cp.float32)
        L = gen.standard_normal((m, d), dtype=cp.float32)
        sums.row_sums(L, X, nk.Gaussian(math.sqrt(d)))
        cp.cuda.Device().synchronize()


if __name__ == "__main__":
    main()
