// The block steps of the blocked samplers (greedy and block-randomly pivoted
// Cholesky) and of the ridge leverage scores: kernel blocks of a chunk of rows against
// a few points, kept in cache; the factor updates as register-blocked products through
// the active SIMD level (simd_body/gemm.inl); the small Cholesky and triangular
// inverse of a block of pivots. Every entry is computed in an order fixed by the sizes,
// whatever the thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include <Eigen/Core>

#include <nystrom_kme/detail/cholesky_blocked.hpp>
#include <nystrom_kme/detail/dense_products.hpp>
#include <nystrom_kme/detail/parallel.hpp>
#include <nystrom_kme/detail/sampling_common.hpp>
#include <nystrom_kme/detail/simd_select.hpp>
#include <nystrom_kme/detail/tile_engine.hpp>
#include <nystrom_kme/kernels.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme::detail {

/// Unpivoted Cholesky of a small SPD matrix in place (lower triangle); returns the
/// number r of leading pivots that stayed above `threshold`.
inline Index leading_cholesky(Eigen::MatrixXd& A, double threshold) {
  const Index t = A.rows();
  for (Index j = 0; j < t; ++j) {
    double piv = A(j, j);
    for (Index l = 0; l < j; ++l) piv -= A(j, l) * A(j, l);
    if (!(piv > threshold)) return j;
    const double ljj = std::sqrt(piv);
    A(j, j) = ljj;
    for (Index i = j + 1; i < t; ++i) {
      double v = A(i, j);
      for (Index l = 0; l < j; ++l) v -= A(i, l) * A(j, l);
      A(i, j) = v / ljj;
    }
  }
  return t;
}

/// C -= A B^T for row-major A (rows x k, row stride lda), B (cols x k, row stride ldb) and
/// C (rows x cols, row stride ldc): the factor updates of the blocked samplers, through
/// the active SIMD level's register-blocked product (simd_body/gemm.inl). Each entry of
/// C is summed in a fixed order, whatever the caller's thread count.
inline void subtract_abt(const double* A, Index lda, Index rows, Index k, const double* B, Index ldb,
                         Index cols, double* C, Index ldc) {
  simd_table().gemm_acc(A, lda, rows, k, B, 1, ldb, cols, -1.0, false, C, ldc);
}

/// One matrix per thread for a chunk loop (for_each_chunk), kept for a whole call: a
/// fresh ~1 MB matrix per chunk costs page faults whenever malloc hands it back to the
/// system, and measured, that undid most of what the in-cache kernel blocks gain.
class ThreadMatrices {
 public:
  explicit ThreadMatrices(int n_threads) : mats_(std::size_t(std::max(1, resolve_threads(n_threads)))) {}
  /// This thread's matrix, resized to (rows, cols) (reallocated only when that changes).
  RowMatrixXd& get(Index rows, Index cols) {
    const std::size_t id = std::size_t(thread_id());  // < resolve_threads: for_each_chunk's team
    if (id >= mats_.size()) throw std::logic_error("ThreadMatrices: more threads than sized for");
    RowMatrixXd& a = mats_[id];
    if (a.rows() != rows || a.cols() != cols) a.resize(rows, cols);
    return a;
  }

 private:
  std::vector<RowMatrixXd> mats_;
};

/// out (rows x t, row stride t) = K(X[b : b + rows], P) for the t rows of P: the blocked
/// samplers' kernel block for one chunk of rows, small enough to stay in cache. The
/// engine is centred on P, so every chunk (and K(P, P) built the same way) gets the same
/// bits for the same pair; it runs on one thread (the caller's loop is the parallel one).
/// `scratch` holds K(P, X_chunk), the engine's fast orientation, before the transpose.
/// @throws std::invalid_argument (kernel_overflow) when a kernel value is not finite
template <class T>
void kernel_block_rows(const ConstRowRef<T>& X, Index b, Index rows, const RowMatrix<T>& P,
                       const Kernel& kernel, double* out, ThreadMatrices& scratch, const char* what) {
  RowMatrixXd& kt = scratch.get(P.rows(), rows);
  TileEngine<T>(P, X.middleRows(b, rows), kernel).template run<Mode::matrix>(nullptr, kt, 1);
  if (!kt.allFinite()) throw kernel_overflow(what, "X");
  transpose_blocked(kt.data(), P.rows(), rows, out);
}

/// The inverse of the lower-triangular factor held in the lower triangle of L's leading
/// r x r block (column-major; the upper triangle is ignored), by substitution on I in
/// blocks of kUpdateTile columns: the inverse is lower triangular, so block [j, j + w)
/// is L(j:, j:)^{-1} applied to the identity's columns, rows j.. only (r^3 / 3 flops,
/// not r^3). The blocks run in parallel (parallel_tasks: the same bits for any thread
/// count, interrupt polls between blocks); one block (r <= kUpdateTile) is the plain
/// substitution on I.
inline Eigen::MatrixXd lower_inverse(const Eigen::MatrixXd& L, Index r, int n_threads) {
  Eigen::MatrixXd inv = Eigen::MatrixXd::Zero(r, r);
  const Index blocks = (r + kUpdateTile - 1) / kUpdateTile;
  parallel_tasks(blocks, n_threads, [&](Index b) {
    const Index j = b * kUpdateTile, w = std::min(kUpdateTile, r - j);
    auto block = inv.block(j, j, r - j, w);
    block.topRows(w).setIdentity();
    L.block(j, j, r - j, r - j).triangularView<Eigen::Lower>().solveInPlace(block);
  });
  return inv;
}

/// out(i, j) = sum_{p <= j} A(i, p) Linv(j, p) for rows x r row-major A (row stride lda),
/// out row-major (row stride ldo), Linv lower triangular (column-major r x r): the new
/// factor columns A L^{-T} of a blocked Cholesky step, as a matrix product.
inline void times_lower_inverse_t(const double* A, Index lda, Index rows, const Eigen::MatrixXd& Linv,
                                  double* out, Index ldo) {
  const Index r = Linv.rows();
  for (Index i = 0; i < rows; ++i) {
    for (Index j = 0; j < r; ++j) out[i * ldo + j] = 0.0;
  }
  simd_table().gemm_acc(A, lda, rows, r, Linv.data(), r, 1, r, 1.0, true, out, ldo);
}

}  // namespace nystrom_kme::detail
