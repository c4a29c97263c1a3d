// Bindings of median.hpp: the median heuristic's pairwise distances.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <nystrom_kme/median.hpp>

#include "arrays.hpp"

namespace py = pybind11;
using namespace pybind11::literals;
using nystrom_kme::python::add_argument_error;
using nystrom_kme::python::as_matrix;
using nystrom_kme::python::CArray;

namespace {

template <class T>
void define_median_for(py::module_& m) {
  m.def(
      "median_pairwise_distance",
      [](const CArray<T>& X, int n_threads) {
        const auto x = as_matrix(X, "X");
        // Safe without the GIL: only a view of an array kept alive by the caller is read.
        py::gil_scoped_release nogil;
        return nystrom_kme::median_pairwise_distance<T>(x, n_threads);
      },
      "X"_a.noconvert(), "n_threads"_a = 0,
      "Median Euclidean distance over the k (k - 1) / 2 pairs of distinct rows of X (k, d): "
      "numpy's bits (pairwise sums, mean of the two middle values).");
  m.def(
      "pairwise_distances",
      [](const CArray<T>& X, int n_threads) {
        const auto x = as_matrix(X, "X");
        std::vector<double> d;
        {
          // Safe without the GIL: only a view of an array kept alive by the caller is read.
          py::gil_scoped_release nogil;
          d = nystrom_kme::pairwise_distances<T>(x, n_threads);
        }
        py::array_t<double> out(py::ssize_t(d.size()));
        std::copy(d.begin(), d.end(), out.mutable_data());
        return out;
      },
      "X"_a.noconvert(), "n_threads"_a = 0,
      "The k (k - 1) / 2 Euclidean distances between distinct rows of X (k, d), in scipy's pdist "
      "order, float64.");
}

}  // namespace

void register_median(py::module_& m) {
  define_median_for<double>(m);
  define_median_for<float>(m);
  add_argument_error(m, "median_pairwise_distance",
                     "(X, n_threads=0): X (k, d) float64 or float32 with k >= 2, n_threads an int (0: the default)");
  add_argument_error(m, "pairwise_distances",
                     "(X, n_threads=0): X (k, d) float64 or float32 with k >= 2, n_threads an int (0: the default)");
}
