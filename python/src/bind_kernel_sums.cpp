#include <pybind11/eigen.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <nystrom_kme/kernel_sums.hpp>

#include "arrays.hpp"

namespace py = pybind11;
using namespace pybind11::literals;
using nystrom_kme::python::add_argument_error;
using nystrom_kme::python::as_matrix;
using nystrom_kme::python::CArray;

namespace {

template <class T>
void define_kernel_sums_for(py::module_& m) {
  m.def(
      "kernel_sums",
      [](const CArray<T>& A, const CArray<T>& B, const CArray<double>& W,
         const nystrom_kme::Kernel& kernel, int n_threads) {
        const auto a = as_matrix(A, "A");
        const auto b = as_matrix(B, "B");
        const auto w = as_matrix(W, "W");
        // Safe without the GIL: only views of arrays kept alive by the caller are read.
        py::gil_scoped_release nogil;
        return nystrom_kme::kernel_sums<T>(a, b, w, kernel, {n_threads});
      },
      "A"_a.noconvert(), "B"_a.noconvert(), "W"_a.noconvert(), "kernel"_a, "n_threads"_a = 0,
      "K(A, B) @ W without storing K: (p, d), (q, d), (q, k) -> (p, k) float64.");
  m.def(
      "kernel_row_sums",
      [](const CArray<T>& A, const CArray<T>& B, const nystrom_kme::Kernel& kernel, int n_threads) {
        const auto a = as_matrix(A, "A");
        const auto b = as_matrix(B, "B");
        py::gil_scoped_release nogil;
        return nystrom_kme::kernel_row_sums<T>(a, b, kernel, {n_threads});
      },
      "A"_a.noconvert(), "B"_a.noconvert(), "kernel"_a, "n_threads"_a = 0,
      "K(A, B) @ 1 without storing K: (p, d), (q, d) -> (p,) float64.");
  m.def(
      "kernel_total_sum",
      [](const CArray<T>& A, const CArray<T>& B, const nystrom_kme::Kernel& kernel, int n_threads) {
        const auto a = as_matrix(A, "A");
        const auto b = as_matrix(B, "B");
        py::gil_scoped_release nogil;
        return nystrom_kme::kernel_total_sum<T>(a, b, kernel, {n_threads});
      },
      "A"_a.noconvert(), "B"_a.noconvert(), "kernel"_a, "n_threads"_a = 0,
      "1^T K(A, B) 1 (compensated) without storing K.");
  m.def(
      "paired_kernel",
      [](const CArray<T>& A, const CArray<T>& B, const nystrom_kme::Kernel& kernel) {
        const auto a = as_matrix(A, "A");
        const auto b = as_matrix(B, "B");
        py::gil_scoped_release nogil;
        return nystrom_kme::paired_kernel<T>(a, b, kernel);
      },
      "A"_a.noconvert(), "B"_a.noconvert(), "kernel"_a,
      "k(a_i, b_i) for aligned rows: (p, d), (p, d) -> (p,) float64.");
  m.def(
      "kernel_diagonal",
      [](const CArray<T>& X, const nystrom_kme::Kernel& kernel, int n_threads) {
        const auto x = as_matrix(X, "X");
        py::gil_scoped_release nogil;
        return nystrom_kme::kernel_diagonal<T>(x, kernel, {n_threads});
      },
      "X"_a.noconvert(), "kernel"_a, "n_threads"_a = 0, "k(x_i, x_i) for each row, (n,) float64.");
  m.def(
      "kernel_matrix",
      [](const CArray<T>& A, const CArray<T>& B, const nystrom_kme::Kernel& kernel, int n_threads) {
        const auto a = as_matrix(A, "A");
        const auto b = as_matrix(B, "B");
        py::gil_scoped_release nogil;
        return nystrom_kme::kernel_matrix<T>(a, b, kernel, {n_threads});
      },
      "A"_a.noconvert(), "B"_a.noconvert(), "kernel"_a, "n_threads"_a = 0,
      "Dense K(A, B), (p, q) float64: for small p and q only.");
}

}  // namespace

void register_kernel_sums(py::module_& m) {
  define_kernel_sums_for<double>(m);
  define_kernel_sums_for<float>(m);
  add_argument_error(m, "kernel_sums",
                     "(A, B, W, kernel, n_threads=0): A (p, d) and B (q, d) both float64 or both float32, W (q, k) float64, kernel a Kernel, n_threads an int (0: the default)");
  add_argument_error(m, "kernel_row_sums",
                     "(A, B, kernel, n_threads=0): A (p, d) and B (q, d) both float64 or both float32, kernel a Kernel, n_threads an int (0: the default)");
  add_argument_error(m, "kernel_total_sum",
                     "(A, B, kernel, n_threads=0): A (p, d) and B (q, d) both float64 or both float32, kernel a Kernel, n_threads an int (0: the default)");
  add_argument_error(m, "paired_kernel",
                     "(A, B, kernel): A (p, d) and B (p, d) both float64 or both float32, kernel a Kernel");
  add_argument_error(m, "kernel_diagonal",
                     "(X, kernel, n_threads=0): X (n, d) float64 or float32, kernel a Kernel, n_threads an int (0: the default)");
  add_argument_error(m, "kernel_matrix",
                     "(A, B, kernel, n_threads=0): A (p, d) and B (q, d) both float64 or both float32, kernel a Kernel, n_threads an int (0: the default)");
}
