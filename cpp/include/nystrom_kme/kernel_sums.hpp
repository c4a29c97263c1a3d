// Streaming kernel sums: K(A, B) W, K(A, B) 1 and 1^T K(A, B) 1 without ever
// storing K(A, B). Memory: O(tile + ~256 KiB packed block + W block), independent
// of the number of rows of B. Also the direct per-row values: paired k(a_i, b_i),
// the diagonal k(x_i, x_i), and the dense K(A, B) for small inputs.
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>

#include <nystrom_kme/detail/checks.hpp>
#include <nystrom_kme/detail/kernel_rows.hpp>
#include <nystrom_kme/detail/parallel.hpp>
#include <nystrom_kme/detail/tile_engine.hpp>
#include <nystrom_kme/kernels.hpp>
#include <nystrom_kme/simd.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme {

struct SumOptions {
  int n_threads = 0;  ///< <= 0: all OpenMP threads; the result does not depend on it
};

namespace detail {
/// float_reduction: see TileEngine::run (float data, k > 1; the weights must fit in float).
template <class T>
RowMatrixXd weighted_sums(const ConstRowRef<T>& A, const ConstRowRef<T>& B, const WeightsRef* W,
                          Index k, const Kernel& kernel, const SumOptions& options,
                          bool float_reduction = false) {
  check_finite(A, "A");
  check_finite(B, "B");
  if (W) {
    if (W->rows() != B.rows()) {
      throw std::invalid_argument("weights have " + std::to_string(W->rows()) +
                                  " rows but B has " + std::to_string(B.rows()));
    }
    check_finite_weights(*W);
  }
  TileEngine<T> engine(A, B, kernel);
  RowMatrixXd out = RowMatrixXd::Zero(A.rows(), k);
  engine.template run<Mode::sums>(W, out, options.n_threads, float_reduction);
  return out;
}

/// Rows per parallel task of kernel_diagonal.
inline constexpr Index kDiagonalChunk = 2048;
}  // namespace detail

/// S = K(A, B) W: S(i, c) = sum_j k(a_i, b_j) W(j, c).
/// @param A  (p, d) points on the output side
/// @param B  (q, d) points summed over, streamed block by block
/// @param W  (q, k) weights, one weighting per column
/// @return   (p, k) row-major, float64 (accumulated in float64 for float inputs)
/// @throws std::invalid_argument on dimension mismatch, NaN/inf input, or points whose
///         division by the bandwidth overflows T; nystrom_kme::Interrupted when the
///         installed interrupt check (interrupt.hpp) stops the call
template <class T>
RowMatrixXd kernel_sums(const ConstRowRef<T>& A, const ConstRowRef<T>& B,
                        const WeightsRef& W, const Kernel& kernel,
                        const SumOptions& options = {}) {
  if (W.cols() < 1) throw std::invalid_argument("weights need at least one column");
  return detail::weighted_sums<T>(A, B, &W, W.cols(), kernel, options);
}

/// s = K(A, B) 1: s_i = sum_j k(a_i, b_j), (p,) float64.
/// @throws the same as kernel_sums.
template <class T>
Eigen::VectorXd kernel_row_sums(const ConstRowRef<T>& A, const ConstRowRef<T>& B,
                                const Kernel& kernel, const SumOptions& options = {}) {
  return detail::weighted_sums<T>(A, B, nullptr, 1, kernel, options).col(0);
}

/// 1^T K(A, B) 1 = sum_ij k(a_i, b_j), by a compensated sum of the row sums.
/// @throws the same as kernel_sums.
template <class T>
double kernel_total_sum(const ConstRowRef<T>& A, const ConstRowRef<T>& B, const Kernel& kernel,
                        const SumOptions& options = {}) {
  const Eigen::VectorXd rows = kernel_row_sums<T>(A, B, kernel, options);
  double sum = 0.0, comp = 0.0;
  for (Index i = 0; i < rows.size(); ++i) {
    const double x = rows[i], total = sum + x;
    comp += std::abs(sum) >= std::abs(x) ? (sum - total) + x : (x - total) + sum;
    sum = total;
  }
  return sum + comp;
}

/// k(a_i, b_i) for aligned rows of A and B, (p,) float64: the diagonal k(x, x)
/// (A = B) or the paired terms of the linear-time MMD. Direct formula, O(p d).
/// @throws std::invalid_argument when the shapes differ or the input holds NaN/inf
template <class T>
Eigen::VectorXd paired_kernel(const ConstRowRef<T>& A, const ConstRowRef<T>& B,
                              const Kernel& kernel) {
  if (A.rows() != B.rows() || A.cols() != B.cols()) {
    throw std::invalid_argument("paired_kernel: A and B must have the same shape");
  }
  detail::check_finite(A, "A");
  detail::check_finite(B, "B");
  Eigen::VectorXd out(A.rows());
  detail::simd_table().ops<T>().paired_rows(A.data(), A.outerStride(), B.data(), B.outerStride(),
                                            A.rows(), A.cols(), kernel, out.data());
  return out;
}

/// k(x_i, x_i) for every row of X, (n,) float64. Direct formula, O(n d), in
/// parallel over fixed chunks of rows.
/// @throws std::invalid_argument when X holds NaN/inf; nystrom_kme::Interrupted
template <class T>
Eigen::VectorXd kernel_diagonal(const ConstRowRef<T>& X, const Kernel& kernel,
                                const SumOptions& options = {}) {
  detail::check_finite(X, "X");
  Eigen::VectorXd out(X.rows());
  detail::for_each_chunk(X.rows(), detail::kDiagonalChunk, options.n_threads,
                         [&](Index, Index b, Index e) {
                           detail::kernel_diagonal_rows(X, kernel, b, e, out.data() + b);
                         });
  return out;
}

/// Dense K(A, B), (p, q) float64: for landmark matrices and tests, not for big data.
/// @throws the same as kernel_sums.
template <class T>
RowMatrixXd kernel_matrix(const ConstRowRef<T>& A, const ConstRowRef<T>& B, const Kernel& kernel,
                          const SumOptions& options = {}) {
  detail::check_finite(A, "A");
  detail::check_finite(B, "B");
  detail::TileEngine<T> engine(A, B, kernel);
  RowMatrixXd out(A.rows(), B.rows());
  engine.template run<detail::Mode::matrix>(nullptr, out, options.n_threads);
  return out;
}

}  // namespace nystrom_kme
