#include <pybind11/eigen.h>
#include <pybind11/pybind11.h>

#include <nystrom_kme/simplex_weights.hpp>

#include "arrays.hpp"

namespace py = pybind11;
using namespace pybind11::literals;
using nystrom_kme::python::add_argument_error;

void register_simplex_weights(py::module_& m) {
  m.def(
      "simplex_weights",
      [](const Eigen::MatrixXd& K, const Eigen::VectorXd& s, double tolerance, double dependence,
         long long max_iterations) {
        nystrom_kme::SimplexOptions options{tolerance, dependence,
                                            static_cast<nystrom_kme::Index>(max_iterations)};
        nystrom_kme::SimplexResult r;
        {
          // Safe without the GIL: K and s are copies owned by this frame.
          py::gil_scoped_release nogil;
          r = nystrom_kme::simplex_weights(K, s, options);
        }
        return py::dict("weights"_a = r.weights, "objective"_a = r.objective, "iterations"_a = r.iterations,
                        "support_size"_a = r.support_size, "n_skipped"_a = r.n_skipped,
                        "kkt_violation"_a = r.kkt_violation, "converged"_a = r.converged);
      },
      "K"_a, "s"_a, "tolerance"_a = 1e-10, "dependence"_a = 0.0, "max_iterations"_a = 0,
      "argmin of w^T K w - 2 w^T s over the probability simplex (active set): a dict with "
      "weights (m,), objective, iterations, support_size, n_skipped, kkt_violation, converged.");
  m.def(
      "ridge_weights",
      [](const Eigen::MatrixXd& K, const Eigen::VectorXd& s, double ridge) {
        py::gil_scoped_release nogil;  // K and s are copies owned by this frame
        return Eigen::VectorXd(nystrom_kme::ridge_weights(K, s, ridge));
      },
      "K"_a, "s"_a, "ridge"_a, "(K + ridge I)^{-1} s by Cholesky: the Tikhonov-regularised signed weights.");
  add_argument_error(m, "ridge_weights", "(K, s, ridge): K (m, m) float64, s (m,) float64, ridge a float > 0");
  add_argument_error(m, "simplex_weights",
                     "(K, s, tolerance=1e-10, dependence=0.0, max_iterations=0): K (m, m) float64, s (m,) float64, tolerance and dependence floats, max_iterations an int (<= 0: 10 m + 100)");
}
