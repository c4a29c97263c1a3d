"""Build and run-time configuration: version, SIMD level, OpenMP runtime.

The hot loops of the C++ core are compiled for several instruction-set levels
(x86-64: ``baseline`` SSE2, ``avx2``, ``avx512``; aarch64: ``neon``) and the best
one the CPU supports is chosen at import. The environment variable
``NYSTROM_KME_SIMD`` (read at import) or :func:`set_simd_level` forces a level;
results then differ from the default only in the last bits (at most 1e-13
relative on sums of non-negative terms in float64).

Threads: ``n_threads=None`` (every function's default) uses OpenMP's thread count
(``OMP_NUM_THREADS``, ``threadpoolctl.threadpool_limits``), at most the CPUs of the
process's affinity mask and of its cgroup CPU quota; an explicit ``n_threads`` is
capped at the CPUs of the affinity mask. Results do not depend on the count. The
package's OpenMP runtime waits passively (``OMP_WAIT_POLICY=PASSIVE``, unless the
variable is set) so that idle threads leave the CPU to threads still working.
"""

from __future__ import annotations

import platform
import sys
from typing import Any

from . import _core

__all__ = ["set_simd_level", "show_config", "simd_level"]


def simd_level() -> str:
    """The instruction-set level the hot loops run at, e.g. ``"avx512"``.

    Examples
    --------
    >>> import nystrom_kme as nk
    >>> nk.simd_level() in ("baseline", "avx2", "avx512", "neon")
    True
    """
    return _core.simd_level()


def set_simd_level(level: str) -> None:
    """Force an instruction-set level for this process (benchmarks, tests).

    Parameters
    ----------
    level : {"baseline", "avx2", "avx512", "neon", "auto"}
        ``"auto"`` returns to the best level this CPU supports.

    Raises
    ------
    ValueError
        If the level is unknown, not compiled into this build, or not supported
        by this CPU; the message lists the levels that are.

    Examples
    --------
    >>> import nystrom_kme as nk
    >>> nk.set_simd_level("baseline"); nk.simd_level()
    'baseline'
    >>> nk.set_simd_level("auto")
    """
    if not isinstance(level, str):
        raise TypeError(f"level must be a string, got {type(level).__name__}")
    _core.set_simd_level(level)


def _config() -> dict[str, Any]:
    info = dict(_core.build_info())
    return {
        "version": _core.__version__,
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": f"{sys.platform}, {platform.machine()}",
        "simd": {
            "level": _core.simd_level(),
            "compiled": list(_core.compiled_simd_levels()),
            "available": list(_core.available_simd_levels()),
            "march_native": info.pop("march_native"),
        },
        "openmp": {
            "enabled": info.pop("openmp"),
            "runtime": info.pop("openmp_runtime"),
            "version": info.pop("openmp_version", None),
            "max_threads": info.pop("max_threads"),
            "default_threads": info.pop("default_threads"),
            "available_cpus": info.pop("available_cpus"),
            "cpu_quota": info.pop("cpu_quota"),
            "wait_policy": info.pop("wait_policy"),
        },
        "compiler": info.pop("compiler", "unknown"),
    }


def show_config(mode: str = "stdout") -> dict[str, Any] | None:
    """Print (or return) the build configuration, for bug reports.

    Parameters
    ----------
    mode : {"stdout", "dicts"}
        ``"stdout"`` prints a readable summary; ``"dicts"`` returns it as a dict.

    Examples
    --------
    >>> import nystrom_kme as nk
    >>> nk.show_config()                                  # doctest: +SKIP
    nystrom-kme 0.1.0
      SIMD level      avx512 (compiled: baseline, avx2, avx512; this CPU: ...)
      ...
    """
    if mode not in ("stdout", "dicts"):
        raise ValueError(f"mode must be 'stdout' or 'dicts', got {mode!r}")
    cfg = _config()
    if mode == "dicts":
        return cfg
    simd, omp = cfg["simd"], cfg["openmp"]
    n = omp["default_threads"]
    threads = f"{n} thread{'s' if n != 1 else ''} by default" if omp["enabled"] else "off (1 thread)"
    runtime = f"{omp['runtime']}, OpenMP {omp['version']}" if omp["enabled"] else "none"
    quota = omp["cpu_quota"] if omp["cpu_quota"] is not None else "none"
    lines = [
        f"nystrom-kme {cfg['version']}",
        f"  SIMD level      {simd['level']} (compiled: {', '.join(simd['compiled'])}; "
        f"this CPU: {', '.join(simd['available'])})",
        f"  -march=native   {'yes' if simd['march_native'] else 'no (portable build)'}",
        f"  OpenMP          {threads}; runtime {runtime}",
        f"  threads         OpenMP max {omp['max_threads']}, CPUs "
        f"{omp['available_cpus']}, cgroup CPU quota {quota}; wait policy "
        f"{omp['wait_policy'] or 'the runtime default'}",
        f"  compiler        {cfg['compiler']}",
        f"  Python          {cfg['python']} on {cfg['platform']}",
    ]
    print("\n".join(lines))
    return None
