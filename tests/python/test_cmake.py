"""What the wheel ships for native builds (nystrom_kme.cmake): headers and the CMake package."""

from __future__ import annotations

from pathlib import Path

import nystrom_kme as nk


def test_wheel_ships_headers_and_cmake_package():
    cmake_dir = Path(nk.get_cmake_dir())
    assert (cmake_dir / "nystrom_kmeConfig.cmake").is_file()
    assert (cmake_dir / "nystrom_kmeTargets.cmake").is_file()
    assert (Path(nk.get_include()) / "nystrom_kme" / "nystrom_kme.hpp").is_file()
