// The Nyström features of kernel sums: Y = Phi applied to the columns of S = K(L, X) W,
// the quantities whose inner products are the Nyström MMDs of a permutation test
// (||y_b||^2 = w_b^T Phi(X) Phi(X)^T w_b). One factorisation of K_m, one triangular solve:
// the cheap route to many statistics at once (the weights of solve.hpp refine each
// right-hand side, which a test statistic does not need).
#pragma once

#include <algorithm>
#include <stdexcept>
#include <string>

#include <nystrom_kme/detail/checks.hpp>
#include <nystrom_kme/detail/cholesky_blocked.hpp>
#include <nystrom_kme/detail/dense_products.hpp>
#include <nystrom_kme/detail/parallel.hpp>
#include <nystrom_kme/kernel_sums.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme {

struct FeatureSums {
  Eigen::MatrixXd features;  ///< (rank, k): the columns of S in Nystrom feature coordinates
  Index rank = 0;            ///< pivots kept by the factorisation of K_m
  Eigen::MatrixXd weights;   ///< (m, weight_columns): alpha with k(., L) alpha = Phi^T y_b
};

/// Y = L11^{-1} (P^T S)_{1..r} for the diagonally pivoted Cholesky factor P^T K_m P ~ L L^T
/// of K_m = K(L, L) (pivots down to rcond * max K_ii; rcond <= 0: m times the machine
/// epsilon, as the solve). For the feature map Phi(x) = L11^{-1} (P^T k(L, x))_{1..r} of the
/// Nystrom approximation on the r pivot landmarks, column b of Y is Phi applied to the sum
/// in column b of S = K(L, X) W: inner products of its columns are the quadratic forms
/// w_b^T Phi Phi^T w_c, and for a full-rank K_m they equal s_b^T K_m^{-1} s_c. O(m^3 + m^2 k)
/// time; the columns are solved in fixed blocks, bit-identical for any thread count.
/// The first `weight_columns` columns also get their weights on the landmarks: alpha_b =
/// P (L11^{-T} y_b; 0), the function k(., L) alpha_b = Phi(.)^T y_b whose squared RKHS norm
/// is ||y_b||^2 (the witness of a test's statistic: O(m^2) per column, where a minimum-norm
/// solve of K_m alpha = s_b would factorise K_m again).
/// @param S (m, k) finite
/// @param weight_columns in [0, k]
/// @throws std::invalid_argument for an empty L, S with another number of rows or no
///         column, NaN or inf, kernel values of L that overflow, or weight_columns out of
///         range; nystrom_kme::Interrupted
template <class T>
FeatureSums nystrom_feature_sums(const ConstRowRef<T>& L, const Eigen::Ref<const Eigen::MatrixXd>& S,
                                 const Kernel& kernel, double rcond = 0.0, const SumOptions& options = {},
                                 Index weight_columns = 0) {
  const Index m = L.rows(), k = S.cols();
  if (m < 1 || L.cols() < 1) {
    throw std::invalid_argument("nystrom_feature_sums: need at least one landmark with at least one "
                                "feature, got L of shape (" + std::to_string(m) + ", " +
                                std::to_string(L.cols()) + ")");
  }
  if (S.rows() != m || k < 1) {
    throw std::invalid_argument("nystrom_feature_sums: S must have " + std::to_string(m) +
                                " rows and at least one column, got shape (" +
                                std::to_string(S.rows()) + ", " + std::to_string(k) + ")");
  }
  if (!(rcond < 1.0) || !std::isfinite(rcond)) {
    throw std::invalid_argument("nystrom_feature_sums: rcond must be finite and < 1");
  }
  if (weight_columns < 0 || weight_columns > k) {
    throw std::invalid_argument("nystrom_feature_sums: weight_columns must lie in [0, " + std::to_string(k) +
                                "] (the columns of S), got " + std::to_string(weight_columns));
  }
  detail::check_finite(L, "L");
  if (!S.allFinite()) throw std::invalid_argument("nystrom_feature_sums: S contains NaN or inf");
  const RowMatrixXd Ld = L.template cast<double>();
  // The factorisation reads one triangle, and K(L, L) comes out symmetric bit for bit (each
  // pair's distance is summed in the same order either way round; test_kernel_sums), so its
  // row-major buffer serves as the column-major one: no transposed copy (0.08 s of 0.48 at
  // m = 4096).
  RowMatrixXd K = kernel_matrix<double>(Ld, Ld, kernel, options);
  Eigen::Map<Eigen::MatrixXd> A(K.data(), m, m);
  if (!A.allFinite()) {
    throw std::invalid_argument("nystrom_feature_sums: the kernel values of the landmarks are not "
                                "finite (they overflow float64)");
  }
  const double threshold = rcond > 0 ? rcond : double(m) * std::numeric_limits<double>::epsilon();
  const detail::PivotedCholesky pc = detail::pivoted_cholesky_factor(A, threshold, options.n_threads);
  FeatureSums out;
  out.rank = pc.rank;
  out.features.resize(pc.rank, k);
  for (Index i = 0; i < pc.rank; ++i) out.features.row(i) = S.row(pc.perm[std::size_t(i)]);
  out.weights = Eigen::MatrixXd::Zero(m, weight_columns);
  if (pc.rank == 0) return out;
  // Columns per task: fixed, so the result ignores the thread count. 64 rather than 32:
  // the blocked solve's products then run 1.5x faster (m = 4000, one thread).
  constexpr Index kColumns = 64;
  const auto L11 = A.topLeftCorner(pc.rank, pc.rank);
  detail::parallel_tasks((k + kColumns - 1) / kColumns, options.n_threads, [&](Index t) {
    auto block = out.features.middleCols(t * kColumns, std::min(kColumns, k - t * kColumns));
    detail::lower_solve_left(L11, block);  // blocked: the products at the dispatched level
  });
  if (weight_columns > 0) {
    const Eigen::MatrixXd z =
        L11.template triangularView<Eigen::Lower>().transpose().solve(out.features.leftCols(weight_columns));
    for (Index i = 0; i < pc.rank; ++i) out.weights.row(pc.perm[std::size_t(i)]) = z.row(i);
  }
  return out;
}

}  // namespace nystrom_kme
