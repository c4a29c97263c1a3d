"""Nyström kernel mean embeddings (Chatalic, Schreuder, Rudi, Rosasco, ICML 2022).

Public API: kernels, the empirical and Nyström embeddings (fitted over any row
source: arrays, memmaps, HDF5/zarr, iterables of chunks, dask arrays) with RKHS
inner products and distances, MMDs and two-sample tests, kernel quadrature, the
paper's bounds (:mod:`nystrom_kme.bounds`), landmark sampling policies
(:mod:`nystrom_kme.sampling`), the build configuration, and the location of the
C++ headers and CMake package for native builds.
"""

from __future__ import annotations

import os as _os

import numpy as _numpy  # noqa: F401  loaded first: its BLAS keeps the user's OpenMP settings


def _started_as_command_line() -> bool:
    """Whether this process is the command line (the ``nystrom-kme`` script or
    ``python -m nystrom_kme``), which must report an import failure as exit status 2."""
    import sys

    argv = getattr(sys, "orig_argv", sys.argv)
    as_module = any(a == "-m" and b in ("nystrom_kme", "nystrom_kme.cli") for a, b in zip(argv, argv[1:]))
    return as_module or _os.path.basename(sys.argv[0]).removesuffix(".exe") == "nystrom-kme"


# Idle OpenMP threads spin by default, starving the threads still working when another
# process holds a core (README, "Threads"). The package's own runtime waits passively
# unless the user chose a policy: libgomp reads OMP_WAIT_POLICY when it is loaded (with
# _core), LLVM's libomp at its first call (build_info). The variable is removed again, so
# other libraries and child processes see the user's environment unchanged.
_user_wait_policy = _os.environ.get("OMP_WAIT_POLICY")
_os.environ["OMP_WAIT_POLICY"] = _user_wait_policy or "PASSIVE"
try:
    from . import _core

    _core.build_info()  # libomp's first call
except ImportError as err:
    if "_core" not in str(err):  # the core refused to load, e.g. a bad NYSTROM_KME_SIMD
        if _started_as_command_line():
            # for `nystrom-kme` exit status 1 means "H0 rejected": fail as its other errors do
            import sys as _sys

            print(f"nystrom-kme: error: {' '.join(str(err).split())}", file=_sys.stderr)
            raise SystemExit(2) from None
        raise
    raise ImportError(  # pragma: no cover - only without a build
        f"{err}\nnystrom_kme._core is missing: install the package with `pip install .` (see README)."
    ) from err
finally:
    if _user_wait_policy is None:
        del _os.environ["OMP_WAIT_POLICY"]
    else:
        _os.environ["OMP_WAIT_POLICY"] = _user_wait_policy
    del _user_wait_policy

from . import bounds, datafiles, persistence, sampling, sources
from ._frames import results_frame
from ._validation import NotFittedError
from .bounds import default_n_landmarks
from .cmake import get_cmake_dir, get_include
from .column_report import ColumnReport, column_report
from .compression import CompressionResult, compress, compression_mmd
from .config import set_simd_level, show_config, simd_level
from .drift import DriftDetector, DriftResult, OnlineDriftDetector, OnlineDriftResult
from .embedding import (
    EmpiricalKME,
    KernelMeanEmbedding,
    inner_product,
    rkhs_distance,
    squared_distance,
)
from .independence import (
    ConditionalIndependenceResult,
    Dependence,
    IndependenceTestResult,
    conditional_independence_test,
    independence_test,
)
from .kernel_collection import KernelCollection
from .kernels import (
    Gaussian,
    InverseMultiquadric,
    Kernel,
    Laplacian,
    LaplacianL1,
    Linear,
    Matern,
    Polynomial,
    RationalQuadratic,
    get_kernel,
    median_distance,
)
from .landmark_search import AutoLandmarks, LandmarkSearch, StatisticalError, estimate_statistical_error
from .mmd_estimators import mmd, mmd2, mmd2_exact, mmd2_linear
from .nystrom import NystromKME
from .permutation import random_splits
from .persistence import FileFormatError, load
from .quadrature import QuadratureRule
from .sampling import (
    BlockRPCholeskySampling,
    CortesScottSampling,
    DPPGreedySampling,
    GreedyCholeskySampling,
    KernelHerding,
    RidgeLeverageSampling,
    RPCholeskySampling,
    SamplingPolicy,
    UniformSampling,
    resolve_sampler,
    ridge_leverage_scores,
)
from .sequential import SequentialDriftTest, SequentialResult, SequentialTwoSampleTest
from .two_sample import AggregatedTestResult, Effect, TwoSampleResult, two_sample_test

__version__: str = _core.__version__

__all__ = [
    "AggregatedTestResult",
    "ColumnReport",
    "column_report",
    "results_frame",
    "DriftDetector",
    "DriftResult",
    "OnlineDriftDetector",
    "OnlineDriftResult",
    "SequentialDriftTest",
    "SequentialResult",
    "SequentialTwoSampleTest",
    "Effect",
    "AutoLandmarks",
    "LandmarkSearch",
    "StatisticalError",
    "estimate_statistical_error",
    "BlockRPCholeskySampling",
    "CompressionResult",
    "CortesScottSampling",
    "DPPGreedySampling",
    "EmpiricalKME",
    "FileFormatError",
    "Gaussian",
    "GreedyCholeskySampling",
    "InverseMultiquadric",
    "LaplacianL1",
    "RationalQuadratic",
    "Kernel",
    "KernelCollection",
    "KernelHerding",
    "KernelMeanEmbedding",
    "Laplacian",
    "Linear",
    "Matern",
    "NotFittedError",
    "NystromKME",
    "Polynomial",
    "QuadratureRule",
    "RPCholeskySampling",
    "RidgeLeverageSampling",
    "SamplingPolicy",
    "TwoSampleResult",
    "UniformSampling",
    "default_n_landmarks",
    "get_cmake_dir",
    "get_include",
    "get_kernel",
    "inner_product",
    "load",
    "median_distance",
    "compress",
    "compression_mmd",
    "mmd",
    "mmd2",
    "mmd2_exact",
    "mmd2_linear",
    "resolve_sampler",
    "random_splits",
    "ridge_leverage_scores",
    "rkhs_distance",
    "set_simd_level",
    "show_config",
    "simd_level",
    "two_sample_test",
    "ConditionalIndependenceResult",
    "Dependence",
    "IndependenceTestResult",
    "conditional_independence_test",
    "independence_test",
    "bounds",
    "datafiles",
    "persistence",
    "sampling",
    "sources",
    "squared_distance",
    "__version__",
]
