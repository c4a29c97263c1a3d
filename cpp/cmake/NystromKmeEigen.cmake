# Find Eigen 3.4: a system or CMAKE_PREFIX_PATH install first, then the prefix of
# the cmeel-eigen wheel (`python -m cmeel cmake`), for builds and for native
# consumers of a pip-installed nystrom_kme (whose site-packages may hold it).
find_package(Eigen3 3.4 QUIET NO_MODULE)
if(NOT Eigen3_FOUND)
  set(_nystrom_kme_eigen_hints
      # site-packages/nystrom_kme/share/cmake/nystrom_kme -> site-packages/cmeel.prefix
      "${CMAKE_CURRENT_LIST_DIR}/../../../../cmeel.prefix")
  if(DEFINED Python_EXECUTABLE)
    set(_nystrom_kme_python "${Python_EXECUTABLE}")
  elseif(DEFINED ENV{VIRTUAL_ENV})
    set(_nystrom_kme_python "$ENV{VIRTUAL_ENV}/bin/python")
  else()
    # Through env: CMake itself would resolve a venv's python3 symlink to the
    # base interpreter, which does not see the venv's packages.
    set(_nystrom_kme_python env python3)
  endif()
  if(_nystrom_kme_python)
    execute_process(
      COMMAND ${_nystrom_kme_python} -m cmeel cmake
      OUTPUT_VARIABLE _nystrom_kme_cmeel_prefix
      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    list(APPEND _nystrom_kme_eigen_hints "${_nystrom_kme_cmeel_prefix}")
  endif()
  find_package(Eigen3 3.4 REQUIRED NO_MODULE HINTS ${_nystrom_kme_eigen_hints})
endif()
