// Bindings of random_splits.hpp and multi_kernel_sums.hpp: the permutation labels
// of two-sample tests, streamed, and their kernel sums in one pass (for one kernel
// or a collection).
#include <cstdint>
#include <cstring>
#include <vector>

#include <pybind11/eigen.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nystrom_kme/multi_kernel_sums.hpp>
#include <nystrom_kme/random_splits.hpp>

#include "arrays.hpp"

namespace py = pybind11;
using namespace pybind11::literals;
using nystrom_kme::Index;
using nystrom_kme::RandomSplits;
using nystrom_kme::python::add_argument_error;
using nystrom_kme::python::as_matrix;
using nystrom_kme::python::CArray;

namespace {

template <class T>
void define_random_splits_for(py::module_& m) {
  m.def(
      "split_kernel_sums",
      [](const CArray<T>& L, const CArray<T>& Z, RandomSplits& splits,
         const nystrom_kme::Kernel& kernel, int n_threads) {
        const auto l = as_matrix(L, "L");
        const auto z = as_matrix(Z, "Z");
        // Safe without the GIL: views of arrays kept alive by the caller, and the
        // splits object is kept alive by the call's own reference.
        py::gil_scoped_release nogil;
        return nystrom_kme::split_kernel_sums<T>(l, z, splits, kernel, {n_threads});
      },
      "L"_a.noconvert(), "Z"_a.noconvert(), "splits"_a, "kernel"_a, "n_threads"_a = 0,
      "K(L, Z) W for the next Z.shape[0] rows of the splits (W never stored): (m, B + 1) float64.");
  m.def(
      "split_kernel_sums_multi",
      [](const CArray<T>& L, const CArray<T>& Z, RandomSplits& splits,
         const std::vector<nystrom_kme::Kernel>& kernels, int n_threads) {
        const auto l = as_matrix(L, "L");
        const auto z = as_matrix(Z, "Z");
        std::vector<nystrom_kme::RowMatrixXd> sums;
        {
          py::gil_scoped_release nogil;  // as split_kernel_sums; `kernels` is a copy
          sums = nystrom_kme::split_kernel_sums_multi<T>(l, z, splits, kernels, {n_threads});
        }
        const Index rows = l.rows(), cols = splits.n_columns();
        py::array_t<double> out({Index(sums.size()), rows, cols});
        for (std::size_t j = 0; j < sums.size(); ++j)
          std::memcpy(out.mutable_data(Index(j)), sums[j].data(), sizeof(double) * std::size_t(rows * cols));
        return out;
      },
      "L"_a.noconvert(), "Z"_a.noconvert(), "splits"_a, "kernels"_a, "n_threads"_a = 0,
      "K_j(L, Z) W for every radial kernel j, one pass over the next Z.shape[0] rows of the "
      "splits: (K, m, B + 1) float64, C-contiguous.");
}

}  // namespace

void register_random_splits(py::module_& m) {
  py::class_<RandomSplits>(m, "RandomSplits",
                           "Permutation-test label weights (+1/n1, -1/n2), generated row by row.")
      .def(py::init<Index, Index, Index, std::uint64_t>(), "n1"_a, "n2"_a, "n_permutations"_a, "seed"_a)
      .def_property_readonly("n_rows", &RandomSplits::n_rows)
      .def_property_readonly("n_columns", &RandomSplits::n_columns)
      .def_property_readonly("position", &RandomSplits::position)
      .def(
          "next_weights",
          [](RandomSplits& s, Index rows) {
            py::gil_scoped_release nogil;
            return s.next_weights(rows);
          },
          "rows"_a, "Weights of the next rows, (rows, B + 1) float64; advances the cursor.");
  define_random_splits_for<double>(m);
  define_random_splits_for<float>(m);
  add_argument_error(m, "split_kernel_sums",
                     "(L, Z, splits, kernel, n_threads=0): L (m, d) and Z (b, d) both float64 or both float32, splits a RandomSplits, kernel a Kernel, n_threads an int (0: the default)");
  add_argument_error(m, "split_kernel_sums_multi",
                     "(L, Z, splits, kernels, n_threads=0): L (m, d) and Z (b, d) both float64 or both float32, splits a RandomSplits, kernels a list of radial Kernel, n_threads an int (0: the default)");
}
