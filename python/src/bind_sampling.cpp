// Bindings of sampling.hpp: landmark selection loops (one line each; the public,
// documented API is nystrom_kme.sampling).
#include <cstdint>
#include <vector>

#include <pybind11/eigen.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nystrom_kme/sampling.hpp>

#include "arrays.hpp"

namespace py = pybind11;
using namespace pybind11::literals;
using nystrom_kme::Index;
using nystrom_kme::python::add_argument_error;
using nystrom_kme::python::as_matrix;
using nystrom_kme::python::CArray;

namespace {

py::array_t<std::int64_t> to_array(const std::vector<Index>& v) {
  py::array_t<std::int64_t> out(static_cast<py::ssize_t>(v.size()));
  auto r = out.mutable_unchecked<1>();
  for (std::size_t i = 0; i < v.size(); ++i) r(py::ssize_t(i)) = std::int64_t(v[i]);
  return out;
}

py::tuple to_tuple(const nystrom_kme::PivotedCholeskyResult& r) {
  return py::make_tuple(to_array(r.pivots), py::array(py::cast(r.residual_trace)),
                        py::array(py::cast(r.pivot_values)));
}

nystrom_kme::PivotRule parse_rule(const std::string& rule) {
  if (rule == "greedy") return nystrom_kme::PivotRule::greedy;
  if (rule == "random") return nystrom_kme::PivotRule::random;
  throw std::invalid_argument("rule must be 'greedy' or 'random', got '" + rule + "'");
}

template <class T>
void define_sampling_for(py::module_& m) {
  m.def(
      "pivoted_cholesky",
      [](const CArray<T>& X, const nystrom_kme::Kernel& kernel, Index m, const std::string& rule,
         std::uint64_t seed, double tolerance, int n_threads) {
        const auto x = as_matrix(X, "X");
        const auto r = parse_rule(rule);
        nystrom_kme::PivotedCholeskyResult res;
        {
          // Safe without the GIL: only a view of an array kept alive by the caller is read.
          py::gil_scoped_release nogil;
          res = nystrom_kme::pivoted_cholesky<T>(x, kernel, m, r, seed, {n_threads, tolerance});
        }
        return to_tuple(res);
      },
      "X"_a.noconvert(), "kernel"_a, "m"_a, "rule"_a, "seed"_a = 0, "tolerance"_a = 1e-12,
      "n_threads"_a = 0,
      "Greedy or randomly pivoted partial Cholesky -> (pivots, residual_trace, pivot_values).");
  m.def(
      "block_rpcholesky",
      [](const CArray<T>& X, const nystrom_kme::Kernel& kernel, Index m, Index block_size,
         std::uint64_t seed, double tolerance, int n_threads) {
        const auto x = as_matrix(X, "X");
        nystrom_kme::PivotedCholeskyResult res;
        {
          py::gil_scoped_release nogil;
          res = nystrom_kme::block_rpcholesky<T>(x, kernel, m, block_size, seed, {n_threads, tolerance});
        }
        return to_tuple(res);
      },
      "X"_a.noconvert(), "kernel"_a, "m"_a, "block_size"_a, "seed"_a = 0, "tolerance"_a = 1e-12,
      "n_threads"_a = 0,
      "Accelerated (rejection) block RPCholesky -> (pivots, residual_trace, pivot_values).");
  m.def(
      "kernel_herding",
      [](const CArray<T>& C, const Eigen::Ref<const Eigen::VectorXd>& target,
         const nystrom_kme::Kernel& kernel, Index m, bool allow_repeats, int n_threads) {
        const auto c = as_matrix(C, "C");
        std::vector<Index> res;
        {
          py::gil_scoped_release nogil;
          res = nystrom_kme::kernel_herding<T>(c, target, kernel, m, allow_repeats, {n_threads});
        }
        return to_array(res);
      },
      "C"_a.noconvert(), "target"_a.noconvert(), "kernel"_a, "m"_a, "allow_repeats"_a = false,
      "n_threads"_a = 0, "Kernel herding over the candidate rows C -> indices into C.");
  m.def(
      "farthest_point",
      [](const CArray<T>& X, const nystrom_kme::Kernel& kernel, Index m, Index first,
         double tolerance, int n_threads) {
        const auto x = as_matrix(X, "X");
        std::vector<Index> res;
        {
          py::gil_scoped_release nogil;
          res = nystrom_kme::farthest_point<T>(x, kernel, m, first, {n_threads, tolerance});
        }
        return to_array(res);
      },
      "X"_a.noconvert(), "kernel"_a, "m"_a, "first"_a, "tolerance"_a = 1e-12, "n_threads"_a = 0,
      "Farthest-point (RKHS k-centre) selection starting at row `first`.");
  m.def(
      "ridge_leverage_estimates",
      [](const CArray<T>& X, const CArray<T>& D, const Eigen::Ref<const Eigen::VectorXd>& reg,
         double lambda_n, const nystrom_kme::Kernel& kernel, int n_threads) {
        const auto x = as_matrix(X, "X");
        const auto dd = as_matrix(D, "D");
        py::gil_scoped_release nogil;
        return nystrom_kme::ridge_leverage_estimates<T>(x, dd, reg, lambda_n, kernel, {n_threads});
      },
      "X"_a.noconvert(), "D"_a.noconvert(), "reg"_a.noconvert(), "lambda_n"_a, "kernel"_a,
      "n_threads"_a = 0,
      "(k(x,x) - k_D(x)^T (K_DD + diag(reg))^-1 k_D(x)) / lambda_n for each row of X.");
}

}  // namespace

void register_sampling(py::module_& m) {
  define_sampling_for<double>(m);
  define_sampling_for<float>(m);
  add_argument_error(m, "pivoted_cholesky",
                     "(X, kernel, m, rule, seed=0, tolerance=1e-12, n_threads=0): X (n, d) float64 or float32, kernel a Kernel, m an int64, rule a str, seed an int in [0, 2^64), tolerance a float, n_threads an int (0: the default)");
  add_argument_error(m, "block_rpcholesky",
                     "(X, kernel, m, block_size, seed=0, tolerance=1e-12, n_threads=0): X (n, d) float64 or float32, kernel a Kernel, m and block_size int64, seed an int in [0, 2^64), tolerance a float, n_threads an int (0: the default)");
  add_argument_error(m, "kernel_herding",
                     "(C, target, kernel, m, allow_repeats=False, n_threads=0): C (n, d) float64 or float32, target (n,) float64, kernel a Kernel, m an int64, allow_repeats a bool, n_threads an int (0: the default)");
  add_argument_error(m, "farthest_point",
                     "(X, kernel, m, first, tolerance=1e-12, n_threads=0): X (n, d) float64 or float32, kernel a Kernel, m and first int64, tolerance a float, n_threads an int (0: the default)");
  add_argument_error(m, "ridge_leverage_estimates",
                     "(X, D, reg, lambda_n, kernel, n_threads=0): X (n, d) and D (s, d) both float64 or both float32, reg (s,) float64, lambda_n a float, kernel a Kernel, n_threads an int (0: the default)");
}
