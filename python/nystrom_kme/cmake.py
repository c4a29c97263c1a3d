"""Where a pip-installed nystrom_kme keeps its C++ headers and CMake package."""

from __future__ import annotations

from pathlib import Path

_ROOT = Path(__file__).resolve().parent


def get_include() -> str:
    """Directory holding ``nystrom_kme/*.hpp`` (add it to the include path).

    Examples
    --------
    >>> import os, nystrom_kme as nk
    >>> inc = nk.get_include()
    >>> isinstance(inc, str)
    True
    """
    return str(_ROOT / "include")


def get_cmake_dir() -> str:
    """Directory holding ``nystrom_kmeConfig.cmake``.

    Pass it as ``-Dnystrom_kme_DIR=...`` (or append it to ``CMAKE_PREFIX_PATH``)
    so that ``find_package(nystrom_kme CONFIG REQUIRED)`` finds the package.
    Eigen must be findable too (``pip install cmeel-eigen`` or a system Eigen 3.4).

    Examples
    --------
    >>> import os, nystrom_kme as nk
    >>> d = nk.get_cmake_dir()                # pass as -Dnystrom_kme_DIR=... to CMake
    >>> isinstance(d, str)
    True
    """
    return str(_ROOT / "share" / "cmake" / "nystrom_kme")
