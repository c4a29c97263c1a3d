// Bindings of bin_sums.hpp and matrix_product.hpp: the binned kernel sums of several
// kernels in one pass, and the thread-count-independent product that permutes them.
#include <cstdint>
#include <string>
#include <vector>

#include <pybind11/eigen.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nystrom_kme/bin_sums.hpp>
#include <nystrom_kme/matrix_product.hpp>

#include "arrays.hpp"

namespace py = pybind11;
using namespace pybind11::literals;
using nystrom_kme::Index;
using nystrom_kme::python::add_argument_error;
using nystrom_kme::python::as_matrix;
using nystrom_kme::python::CArray;

namespace {

template <class T>
void define_bin_sums_for(py::module_& m) {
  m.def(
      "kernel_bin_sums",
      [](const CArray<T>& L, const CArray<T>& Z, const CArray<std::int64_t>& bins, Index n_bins,
         const std::vector<nystrom_kme::Kernel>& kernels, int n_threads, py::object out,
         const std::vector<Index>& rows) {
        const auto l = as_matrix(L, "L");
        const auto z = as_matrix(Z, "Z");
        if (bins.ndim() != 1 || bins.shape(0) != z.rows()) {
          throw std::invalid_argument("bins must be 1-D with one entry per row of Z (" +
                                      std::to_string(z.rows()) + ")");
        }
        const py::ssize_t K = py::ssize_t(kernels.size());
        CArray<double> result;
        if (out.is_none()) {
          // Allocated here, not by numpy: numpy advises transparent huge pages for large
          // arrays, whose first touch cost 0.87 s for these 200 MB on the 2-core VM of
          // bench/RESULTS.md, against 0.07 s for plain pages (issue 46).
          const py::ssize_t G = py::ssize_t(std::max<Index>(n_bins, 0)), rows = py::ssize_t(l.rows());
          auto* zeros = new double[std::size_t(K * rows * G)]();
          py::capsule owner(zeros, [](void* p) { delete[] static_cast<double*>(p); });
          result = CArray<double>({K, rows, G}, zeros, owner);
        } else {
          result = out.cast<CArray<double>>();  // c_style float64: no copy of a conforming array
          if (!result.ptr() || result.ptr() != out.ptr() || result.ndim() != 3 || result.shape(0) != K ||
              result.shape(1) != l.rows() || result.shape(2) != n_bins || !result.writeable()) {
            throw std::invalid_argument("out must be a writeable C-contiguous float64 array of shape (" +
                                        std::to_string(K) + ", " + std::to_string(l.rows()) + ", " +
                                        std::to_string(n_bins) + ")");
          }
        }
        std::vector<double*> outs;
        for (py::ssize_t j = 0; j < K; ++j) outs.push_back(result.mutable_data(j));
        {
          // Safe without the GIL: views of arrays kept alive by the caller and by `result`.
          py::gil_scoped_release nogil;
          nystrom_kme::add_kernel_bin_sums<T>(l, z, bins.data(), n_bins, kernels, outs, {n_threads}, rows);
        }
        return result;
      },
      "L"_a.noconvert(), "Z"_a.noconvert(), "bins"_a.noconvert(), "n_bins"_a, "kernels"_a,
      "n_threads"_a = 0, "out"_a = py::none(), "rows"_a = std::vector<Index>{},
      "For every kernel j, E_j(r, g) = sum over the rows i of Z in bin g of k_j(l_r, z_i): "
      "(K, m, n_bins) float64, added into `out` when given; bins int64 in [-1, n_bins) (-1: skipped). "
      "rows: empty, or one count per kernel: kernel j on the first rows[j] rows of L only "
      "(E_j's other rows untouched), one pass for nested landmark sets.");
}

}  // namespace

void register_bin_sums(py::module_& m) {
  define_bin_sums_for<double>(m);
  define_bin_sums_for<float>(m);
  add_argument_error(m, "kernel_bin_sums",
                     "(L, Z, bins, n_bins, kernels, n_threads=0, out=None, rows=[]): L (m, d) and Z (q, d) both float64 or both float32, bins int64 (q,), n_bins an int, kernels a list of radial Kernel, n_threads an int (0: the default), out None or a (K, m, n_bins) float64 array, rows a list of ints (empty, or one in [1, m] per kernel)");
  m.def(
      "matrix_product",
      [](const CArray<double>& A, const CArray<double>& B, int n_threads) {
        const auto a = as_matrix(A, "A");
        const auto b = as_matrix(B, "B");
        py::gil_scoped_release nogil;
        return nystrom_kme::matrix_product(a, b, {n_threads});
      },
      "A"_a.noconvert(), "B"_a.noconvert(), "n_threads"_a = 0,
      "A @ B, (p, k) x (k, q) -> (p, q) float64, bit-identical for any thread count.");
  add_argument_error(m, "matrix_product",
                     "(A, B, n_threads=0): A (p, k) and B (k, q) float64");
}
