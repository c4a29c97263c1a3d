#include <string>

#include <pybind11/eigen.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nystrom_kme/solve.hpp>

#include "arrays.hpp"

namespace py = pybind11;
using namespace pybind11::literals;
using nystrom_kme::python::add_argument_error;
using nystrom_kme::python::as_matrix;
using nystrom_kme::python::CArray;

namespace {

nystrom_kme::Solver parse_solver(const std::string& name) {
  if (name == "auto") return nystrom_kme::Solver::automatic;
  if (name == "cod") return nystrom_kme::Solver::cod;
  if (name == "cholesky") return nystrom_kme::Solver::cholesky;
  throw std::invalid_argument("solver must be 'auto', 'cod' or 'cholesky', got '" + name + "'");
}

py::tuple to_python(const nystrom_kme::SolveResult& r) {
  const char* used = r.used == nystrom_kme::Solver::cholesky ? "cholesky" : "cod";
  return py::make_tuple(r.weights, used, r.rank);
}

template <class T>
void define_for(py::module_& m) {
  m.def(
      "nystrom_weights",
      [](const CArray<T>& L, const Eigen::MatrixXd& s, const nystrom_kme::Kernel& kernel,
         const std::string& solver, double rcond, double tolerance, int n_threads) {
        const auto l = as_matrix(L, "L");
        nystrom_kme::SolveOptions options{parse_solver(solver), rcond, tolerance};
        nystrom_kme::SolveResult result;
        {
          py::gil_scoped_release nogil;
          result = nystrom_kme::nystrom_weights<T>(l, s, kernel, options, {n_threads});
        }
        return to_python(result);
      },
      "L"_a.noconvert(), "s"_a, "kernel"_a, "solver"_a = "auto", "rcond"_a = 0.0,
      "tolerance"_a = 1e-12, "n_threads"_a = 0,
      "Minimum-norm solution of K(L, L) alpha = s: returns (alpha (m, k), solver used, rank).");
}

}  // namespace

void register_solve(py::module_& m) {
  define_for<double>(m);
  define_for<float>(m);
  add_argument_error(m, "nystrom_weights",
                     "(L, s, kernel, solver='auto', rcond=0.0, tolerance=1e-12, n_threads=0): L (m, d) float64 or float32, s (m, k) float64, kernel a Kernel, solver a str, rcond and tolerance floats, n_threads an int (0: the default)");
}
