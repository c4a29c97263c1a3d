// Boundary helpers shared by the bindings: numpy arrays in, Eigen views out,
// never a copy (the Python layer converts once and validates before calling).
#pragma once

#include <cstdint>
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
/// @throws std::invalid_argument when it is not 2-D or its data are not aligned to the
///         item size (numpy allows that, e.g. for arrays deserialised from a buffer;
///         the core's vector loads do not)
template <class T>
Eigen::Map<const RowMatrix<T>> as_matrix(const CArray<T>& a, const char* name) {
  if (a.ndim() != 2) {
    throw std::invalid_argument(std::string(name) + " must be 2-D, got " +
                                std::to_string(a.ndim()) + " dimensions");
  }
  if (reinterpret_cast<std::uintptr_t>(a.data()) % alignof(T) != 0) {
    throw std::invalid_argument(std::string(name) +
                                " is not aligned to its item size: pass an aligned copy, "
                                "e.g. numpy.require(" + name + ", requirements='CA')");
  }
  return {a.data(), a.shape(0), a.shape(1)};
}

/// One argument as the layout error below shows it: arrays by dtype, shape, order,
/// byte order and alignment; anything else by type (and value for numbers).
inline std::string describe_argument(const py::handle& h) {
  if (py::isinstance<py::array>(h)) {
    const auto a = py::reinterpret_borrow<py::array>(h);
    std::string shape = "(";
    for (py::ssize_t i = 0; i < a.ndim(); ++i) {
      shape += (i ? ", " : "") + std::to_string(a.shape(i));
    }
    shape += a.ndim() == 1 ? ",)" : ")";
    const int flags = py::detail::array_proxy(a.ptr())->flags;
    const bool c_order = (flags & py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_) != 0;
    const bool aligned = (flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_) != 0;
    const bool native = a.dtype().attr("isnative").cast<bool>();
    return "array " + py::str(a.dtype()).cast<std::string>() + " " + shape +
           (c_order ? " C-contiguous" : " NOT C-contiguous") +
           (native ? "" : " NON-native byte order") + (aligned ? "" : " NOT aligned");
  }
  const std::string type = py::str(py::type::handle_of(h).attr("__name__")).cast<std::string>();
  if (py::isinstance<py::int_>(h) || py::isinstance<py::float_>(h)) {
    return type + " " + py::repr(h).cast<std::string>();
  }
  return type;
}

/// Registers, after a function's typed overloads, the overload that catches every call
/// none of them accepts and raises a TypeError that names what the function expects and
/// describes what it got (pybind11's own "incompatible function arguments" names
/// neither the layout nor the range).
inline void add_argument_error(py::module_& m, const char* name, const char* expects) {
  m.def(
      name,
      [name = std::string(name), expects = std::string(expects)](const py::args& args,
                                                                  const py::kwargs& kwargs) {
        std::string got;
        for (const py::handle& a : args) got += (got.empty() ? "" : ", ") + describe_argument(a);
        for (const auto& kv : kwargs) {
          got += (got.empty() ? "" : ", ") + py::str(kv.first).cast<std::string>() + "=" +
                 describe_argument(kv.second);
        }
        throw py::type_error(name + "(): invalid arguments. It takes " + expects +
                             ". Arrays must be C-contiguous, aligned, in native byte order and "
                             "of exactly that dtype (no conversion happens here); integers must "
                             "fit their C++ type. Got: (" + got + ")");
      },
      "Raises a TypeError describing the expected arguments (when no overload above matches).");
}

}  // namespace nystrom_kme::python
