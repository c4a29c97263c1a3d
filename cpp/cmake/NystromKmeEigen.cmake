# Find Eigen 3.4: a system or CMAKE_PREFIX_PATH install first, then the prefix of
# the cmeel-eigen wheel (PyPI build requirement), printed by `python -m cmeel cmake`.
find_package(Eigen3 3.4 QUIET NO_MODULE)
if(NOT Eigen3_FOUND)
  find_package(Python COMPONENTS Interpreter QUIET)
  if(Python_Interpreter_FOUND)
    execute_process(
      COMMAND "${Python_EXECUTABLE}" -m cmeel cmake
      OUTPUT_VARIABLE NYSTROM_KME_CMEEL_PREFIX
      OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(NYSTROM_KME_CMEEL_PREFIX)
      list(APPEND CMAKE_PREFIX_PATH "${NYSTROM_KME_CMEEL_PREFIX}")
    endif()
  endif()
  find_package(Eigen3 3.4 REQUIRED NO_MODULE)
endif()
message(STATUS "nystrom_kme: Eigen ${Eigen3_VERSION} from ${Eigen3_DIR}")
