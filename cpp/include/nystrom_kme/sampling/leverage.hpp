// Ridge leverage score estimates from a weighted dictionary, the step of BLESS
// (the Python driver in sampling/leverage.py runs the schedule of dictionaries).
#pragma once

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include <Eigen/Core>

#include <nystrom_kme/detail/checks.hpp>
#include <nystrom_kme/detail/cholesky_blocked.hpp>
#include <nystrom_kme/detail/parallel.hpp>
#include <nystrom_kme/detail/sampling_blocks.hpp>
#include <nystrom_kme/kernel_sums.hpp>
#include <nystrom_kme/kernels.hpp>
#include <nystrom_kme/sampling/types.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme {

/// Ridge leverage score estimates from a weighted dictionary D (Rudi, Calandriello,
/// Carratino, Rosasco, "On fast leverage score sampling and optimal learning",
/// NeurIPS 2018, eq. (5)):
///   l(x, lambda) = (k(x, x) - k_D(x)^T (K_DD + diag(reg))^{-1} k_D(x)) / lambda_n
/// with reg_j = lambda_n / w_j for dictionary weights w_j and lambda_n = lambda * n.
/// With D empty it is k(x, x) / lambda_n. Evaluated for each row of X in blocks of
/// 256 rows: O(n_x |D| (|D| + d) + |D|^3) time, O(|D|^2 + 256 |D|) memory.
///
/// Numerically safe form: with R = diag(reg), K_DD + R = R^{1/2} S R^{1/2} where
/// S = I + R^{-1/2} K_DD R^{-1/2} >= I, so k_D(x)^T (K_DD + R)^{-1} k_D(x) = ||L^{-1} b||^2
/// with L L^T = S and b = R^{-1/2} k_D(x). S is positive definite with eigenvalues >= 1
/// whatever the rank of K_DD (duplicate dictionary rows) or the spread of reg, so its
/// Cholesky factor exists (where round-off in K_DD still breaks it, S gets a small shift
/// of its diagonal, which errs towards larger estimates). The numerator is the Schur
/// complement of a positive semi-definite matrix, in [0, k(x, x)]: round-off below 0 is
/// set to 0. It carries an absolute error of about eps * k(x, x), so the estimate is
/// resolved to about eps * k(x, x) / lambda_n: callers keep lambda_n well above
/// eps * max_x k(x, x) (the Python BLESS driver: lambda_n >= sqrt(eps) * max_x k(x, x)).
/// The subtracted term is ||W k_D(x)||^2 with W = L^{-1} R^{-1/2} formed once (||L^{-1}||
/// <= 1 since S >= I), so each block of rows is one kernel block and one triangular
/// matrix product (register-blocked, simd_body/gemm.inl), not a triangular solve.
/// The estimate is not capped at 1 (the bound of the exact scores): a point the
/// dictionary does not represent gets up to k(x, x) / lambda_n.
/// @param X  (n_x, d) rows to score, finite (n_x = 0 gives an empty result)
/// @param D  (|D|, d) dictionary rows, finite; reg (|D|,) finite and > 0; lambda_n finite > 0
/// @throws std::invalid_argument on NaN/inf in X or D, X and D with different column
///         counts, reg of the wrong size or not finite and > 0, lambda_n not finite and
///         > 0, or reg too small for the kernel values (K_DD / reg overflows)
/// @throws std::runtime_error when I + R^-1/2 K_DD R^-1/2 cannot be factored even after
///         40 growing diagonal shifts (round-off beyond repair)
template <class T>
Eigen::VectorXd ridge_leverage_estimates(const ConstRowRef<T>& X, const ConstRowRef<T>& D,
                                         const Eigen::Ref<const Eigen::VectorXd>& reg, double lambda_n,
                                         const Kernel& kernel, const SamplingOptions& options = {}) {
  detail::check_finite(X, "X");
  detail::check_finite(D, "D");
  if (X.rows() > 0 && D.rows() > 0 && X.cols() != D.cols()) {
    throw std::invalid_argument("ridge_leverage_estimates: X has " + std::to_string(X.cols()) +
                                " features but D has " + std::to_string(D.cols()));
  }
  if (reg.size() != D.rows()) {
    throw std::invalid_argument("ridge_leverage_estimates: reg has " + std::to_string(reg.size()) +
                                " entries but D has " + std::to_string(D.rows()) + " rows");
  }
  if (!(lambda_n > 0.0) || !std::isfinite(lambda_n)) {
    throw std::invalid_argument("ridge_leverage_estimates: lambda_n must be finite and > 0");
  }
  if (!(reg.array() > 0.0).all() || !reg.allFinite()) {
    throw std::invalid_argument("ridge_leverage_estimates: reg must be finite and > 0");
  }
  const Index n = X.rows(), M = D.rows();
  Eigen::VectorXd out = kernel_diagonal<T>(X, kernel, {options.n_threads});
  if (n == 0) return out;
  if (M > 0) {
    const Eigen::VectorXd inv_sqrt_reg = reg.cwiseSqrt().cwiseInverse();
    // S = I + R^{-1/2} K_DD R^{-1/2}
    Eigen::MatrixXd S = kernel_matrix<T>(D, D, kernel, {options.n_threads});
    S = inv_sqrt_reg.asDiagonal() * S * inv_sqrt_reg.asDiagonal();
    S.diagonal().array() += 1.0;
    if (!S.allFinite()) {
      throw std::invalid_argument(
          "ridge_leverage_estimates: reg is too small for the kernel values (K_DD / reg overflows)");
    }
    // S >= I exactly; only round-off in K_DD of the size of reg breaks the factorisation.
    // Then S + delta I, delta growing from M eps max(S_ii): a larger S underestimates the
    // subtracted term, so the estimate errs upwards (oversampling, never missing a point).
    // The blocked factorisation and inverse poll the interrupt check (|D| in the
    // thousands takes seconds) and give the same bits for any thread count.
    Eigen::MatrixXd L = S;
    double delta = static_cast<double>(M) * std::numeric_limits<double>::epsilon() * S.diagonal().maxCoeff();
    for (int attempt = 0; detail::blocked_cholesky(L, 0.0, options.n_threads) >= 0; ++attempt) {
      if (attempt == 40) {
        throw std::runtime_error("ridge_leverage_estimates: I + R^-1/2 K_DD R^-1/2 is not positive definite");
      }
      L = S;
      L.diagonal().array() += delta;
      delta *= 4.0;
    }
    // W = L^{-1} R^{-1/2} (lower triangular, ||L^{-1}|| <= 1 as S >= I): the subtracted
    // term is ||W k_D(x)||^2, so each block of rows is one kernel block and one matrix
    // product (half of it: W is triangular) instead of a triangular solve per row.
    const Eigen::MatrixXd W = detail::lower_inverse(L, M, options.n_threads) * inv_sqrt_reg.asDiagonal();
    constexpr Index kBlock = 256;
    const Index n_blocks = (n + kBlock - 1) / kBlock;
    detail::parallel_tasks(n_blocks, options.n_threads, [&](Index blk) {
      const Index b = blk * kBlock, rows = std::min(kBlock, n - b);
      const RowMatrixXd Kt = kernel_matrix<T>(X.middleRows(b, rows), D, kernel, {1});  // (rows, M)
      RowMatrixXd Z(rows, M);
      detail::times_lower_inverse_t(Kt.data(), M, rows, W, Z.data(), M);
      for (Index i = 0; i < rows; ++i) out[b + i] -= Z.row(i).squaredNorm();
    });
  }
  out = (out.array().max(0.0) / lambda_n).matrix();
  return out;
}

}  // namespace nystrom_kme
