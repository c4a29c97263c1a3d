// Bindings of gradient_sums.hpp: kernel sums and their gradients with respect to the
// evaluation points (the forward and backward passes of nystrom_kme.torch's MMD loss).
#include <algorithm>
#include <stdexcept>
#include <string>

#include <pybind11/eigen.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <nystrom_kme/gradient_sums.hpp>

#include "arrays.hpp"

namespace py = pybind11;
using namespace pybind11::literals;
using nystrom_kme::python::add_argument_error;
using nystrom_kme::python::as_matrix;
using nystrom_kme::python::CArray;

namespace {

template <class T>
void define_gradient_sums_for(py::module_& m) {
  m.def(
      "kernel_value_gradients",
      [](const CArray<T>& A, const CArray<T>& B, const CArray<double>& w,
         const nystrom_kme::Kernel& kernel, int n_threads, double scale, py::object out) {
        const auto a = as_matrix(A, "A");
        const auto b = as_matrix(B, "B");
        if (w.ndim() != 1) {
          throw std::invalid_argument("w must be 1-D, got " + std::to_string(w.ndim()) + " dimensions");
        }
        const py::ssize_t rows = py::ssize_t(a.rows()), cols = py::ssize_t(a.cols() + 1);
        CArray<double> result;
        if (out.is_none()) {
          result = CArray<double>({rows, cols});
          std::fill(result.mutable_data(), result.mutable_data() + result.size(), 0.0);
        } else {
          result = out.cast<CArray<double>>();  // c_style float64: no copy of a conforming array
          if (!result.ptr() || result.ptr() != out.ptr() || result.ndim() != 2 ||
              result.shape(0) != rows || result.shape(1) != cols || !result.writeable()) {
            throw std::invalid_argument("out must be a writeable C-contiguous float64 array of shape (" +
                                        std::to_string(rows) + ", " + std::to_string(cols) + ")");
          }
        }
        const Eigen::Map<const Eigen::VectorXd> wv(w.data(), w.shape(0));
        Eigen::Map<nystrom_kme::RowMatrixXd> o(result.mutable_data(), rows, cols);
        {
          // Safe without the GIL: views of arrays kept alive by the caller and by `result`.
          py::gil_scoped_release nogil;
          nystrom_kme::add_kernel_value_gradients<T>(a, b, wv, kernel, scale, o, {n_threads});
        }
        return result;
      },
      "A"_a.noconvert(), "B"_a.noconvert(), "w"_a.noconvert(), "kernel"_a, "n_threads"_a = 0,
      "scale"_a = 1.0, "out"_a = py::none(),
      "[sum_j w_j k(a_i, b_j), sum_j w_j grad_a k(a_i, b_j)] for a radial kernel: (p, d), "
      "(q, d), (q,) -> (p, d + 1) float64, scale times it added into `out` when given.");
}

}  // namespace

void register_gradient_sums(py::module_& m) {
  define_gradient_sums_for<double>(m);
  define_gradient_sums_for<float>(m);
  add_argument_error(m, "kernel_value_gradients",
                     "(A, B, w, kernel, n_threads=0, scale=1.0, out=None): A (p, d) and B (q, d) both float64 or both float32, w (q,) float64, kernel a radial Kernel, n_threads an int (0: the default), scale a float, out None or a (p, d + 1) float64 array");
}
