// Boundary helpers shared by the bindings: numpy arrays in, Eigen views out,
// never a copy (the Python layer converts once and validates before calling).
#pragma once

#include <stdexcept>
#include <string>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <nystrom_kme/types.hpp>

namespace nystrom_kme::python {

namespace py = pybind11;

template <class T>
using CArray = py::array_t<T, py::array::c_style>;

/// Views a C-contiguous 2-D array as a row-major Eigen matrix without copying.
template <class T>
Eigen::Map<const RowMatrix<T>> as_matrix(const CArray<T>& a, const char* name) {
  if (a.ndim() != 2) {
    throw std::invalid_argument(std::string(name) + " must be 2-D, got " +
                                std::to_string(a.ndim()) + " dimensions");
  }
  return {a.data(), a.shape(0), a.shape(1)};
}

}  // namespace nystrom_kme::python
