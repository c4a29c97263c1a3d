// Bindings of feature_sums.hpp: kernel sums in Nystrom feature coordinates.
#include <pybind11/eigen.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <nystrom_kme/feature_sums.hpp>

#include "arrays.hpp"

namespace py = pybind11;
using namespace pybind11::literals;
using nystrom_kme::python::add_argument_error;
using nystrom_kme::python::as_matrix;
using nystrom_kme::python::CArray;

namespace {

template <class T>
void define_feature_sums_for(py::module_& m) {
  m.def(
      "nystrom_feature_sums",
      [](const CArray<T>& L, const Eigen::MatrixXd& S, const nystrom_kme::Kernel& kernel, double rcond,
         int n_threads, nystrom_kme::Index weight_columns) {
        const auto l = as_matrix(L, "L");
        nystrom_kme::FeatureSums result;
        {
          py::gil_scoped_release nogil;
          result = nystrom_kme::nystrom_feature_sums<T>(l, S, kernel, rcond, {n_threads}, weight_columns);
        }
        return py::make_tuple(result.features, result.rank, result.weights);
      },
      "L"_a.noconvert(), "S"_a, "kernel"_a, "rcond"_a = 0.0, "n_threads"_a = 0, "weight_columns"_a = 0,
      "(Y, rank, alpha): the columns of S (m, k) in the Nystrom feature coordinates of the landmarks L, "
      "Y (rank, k) = L11^{-1} (P^T S)[:rank] for the pivoted Cholesky factor of K(L, L); alpha "
      "(m, weight_columns) = P (L11^{-T} Y[:, :weight_columns]; 0), k(., L) alpha = Phi^T Y.");
}

}  // namespace

void register_feature_sums(py::module_& m) {
  define_feature_sums_for<double>(m);
  define_feature_sums_for<float>(m);
  add_argument_error(m, "nystrom_feature_sums",
                     "(L, S, kernel, rcond=0.0, n_threads=0, weight_columns=0): L (m, d) float64 or float32, S (m, k) float64, kernel a Kernel, rcond a float < 1 (<= 0: the default), n_threads an int (0: the default), weight_columns an int in [0, k]");
}
