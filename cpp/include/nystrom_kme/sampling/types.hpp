// The types the landmark samplers share: their options, and the result of the
// pivoted Cholesky samplers (sampling/cholesky.hpp, filled in panels by
// detail/greedy_cholesky.hpp).
#pragma once

#include <vector>

#include <nystrom_kme/types.hpp>

namespace nystrom_kme {

struct SamplingOptions {
  int n_threads = 0;  ///< <= 0: all OpenMP threads; results do not depend on it
  /// Pivoted Cholesky and farthest-point selection stop early (returning fewer
  /// than m pivots) once every residual diagonal entry is <= tolerance * max_i k(x_i, x_i):
  /// the remaining points are then in the span of the chosen ones up to round-off.
  /// Must be finite and in [0, 1): pivoted_cholesky, block_rpcholesky, kernel_herding
  /// and farthest_point throw std::invalid_argument otherwise.
  double tolerance = 1e-12;
};

struct PivotedCholeskyResult {
  std::vector<Index> pivots;          ///< selected rows of X, in selection order (distinct)
  std::vector<double> residual_trace; ///< tr(K - F F^T) before the first pivot and after each
  std::vector<double> pivot_values;   ///< residual diagonal (Schur complement) of each pivot
};

}  // namespace nystrom_kme
