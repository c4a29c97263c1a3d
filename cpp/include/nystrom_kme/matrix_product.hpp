// A float64 matrix product whose result does not depend on the thread count, for the
// small dense products of the statistics (e.g. the aggregated test's permuted bin sums):
// a BLAS splits the inner dimension differently with the thread count (and between
// libraries), which changes the last bits.
#pragma once

#include <stdexcept>
#include <string>

#include <nystrom_kme/detail/checks.hpp>
#include <nystrom_kme/detail/parallel.hpp>
#include <nystrom_kme/kernel_sums.hpp>
#include <nystrom_kme/simd.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme {

namespace detail {
/// Rows of C per parallel task of matrix_product (a multiple of the micro-tile's rows).
inline constexpr Index kProductRows = 48;
}  // namespace detail

/// C = A B, (p, q) float64, for A (p, k) and B (k, q) row-major. Each block of
/// kProductRows rows of C is one task of the register-blocked product of the active SIMD
/// level (simd_body/gemm.inl), which sums every entry in an order fixed by k alone:
/// bit-identical for any thread count. O(p k q) time, no memory beyond C (and one packed
/// panel of B per thread).
/// @throws std::invalid_argument when the inner dimensions differ; nystrom_kme::Interrupted
inline RowMatrixXd matrix_product(const ConstRowRef<double>& A, const ConstRowRef<double>& B,
                                  const SumOptions& options = {}) {
  if (A.cols() != B.rows()) {
    throw std::invalid_argument("matrix_product: A has " + std::to_string(A.cols()) +
                                " columns but B has " + std::to_string(B.rows()) + " rows");
  }
  RowMatrixXd C = RowMatrixXd::Zero(A.rows(), B.cols());
  if (A.rows() == 0 || B.cols() == 0 || A.cols() == 0) return C;
  const auto gemm = detail::simd_table().gemm_acc;
  const Index tasks = (A.rows() + detail::kProductRows - 1) / detail::kProductRows;
  detail::parallel_tasks(tasks, options.n_threads, [&](Index t) {
    const Index r0 = t * detail::kProductRows;
    const Index rows = std::min(detail::kProductRows, A.rows() - r0);
    gemm(A.data() + r0 * A.outerStride(), A.outerStride(), rows, A.cols(), B.data(),
         B.outerStride(), 1, B.cols(), 1.0, false, C.data() + r0 * C.cols(), C.cols());
  });
  return C;
}

}  // namespace nystrom_kme
