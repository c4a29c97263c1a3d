// Matrix products and triangular solves on column-major (Eigen) matrices through the
// dispatched register-blocked product (simd_body/gemm.inl): the Level-3 parts of the
// blocked factorisations of the solve run at the CPU's best SIMD level also in a
// portable build, where Eigen's own products are compiled for SSE2 (measured at
// m = 4000: bench/RESULTS.md, "The solve's products at the dispatched level").
//
// Each call sums every entry in an order fixed by the shapes (the depth in slices,
// ascending), on the calling thread: callers that cut their work into fixed tiles get
// the same bits for any thread count. The bits depend on the SIMD level (FMA).
#pragma once

#include <algorithm>

#include <Eigen/Core>

#include <nystrom_kme/detail/simd_select.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme::detail {

/// C += sign * L R for C (M x N) and R (K x N) column-major with leading dimensions ldc
/// and ldr, and L (M x K) read through two strides, L(i, p) = L[i * l_row + p * l_col]
/// (a column-major block, or the transpose of one). C must not overlap L or R.
inline void product_acc(Index M, Index N, Index K, double sign, const double* L, Index l_row,
                        Index l_col, const double* R, Index ldr, double* C, Index ldc) {
  // gemm_acc forms a row-major C' += A Bt: here C' = C^T, A = R^T and Bt = L^T.
  simd_table().gemm_acc(R, ldr, N, K, L, l_col, l_row, M, sign, false, C, ldc);
}

/// Address of entry (i, j) of a column-major Eigen matrix or block with unit inner stride.
template <class Matrix>
auto entry(Matrix& M, Index i, Index j) {
  return M.data() + i + j * M.outerStride();
}

/// out (cols x rows, row-major) = A^T for row-major A (rows x cols), in 16 x 16 tiles: a
/// plain loop writes one cache line per element (measured: 9% of block_rpcholesky; a
/// row-major 4000 x 4000 kernel matrix copied column-major by Eigen's assignment took
/// 0.25 s, a sixth of the solve). `out` is also A in column-major order.
inline void transpose_blocked(const double* A, Index rows, Index cols, double* out) {
  constexpr Index kTile = 16;
  for (Index i0 = 0; i0 < rows; i0 += kTile) {
    const Index i1 = std::min(rows, i0 + kTile);
    for (Index j0 = 0; j0 < cols; j0 += kTile) {
      const Index j1 = std::min(cols, j0 + kTile);
      for (Index j = j0; j < j1; ++j)
        for (Index i = i0; i < i1; ++i) out[j * rows + i] = A[i * cols + j];
    }
  }
}

/// A row-major matrix (a kernel matrix from the tile engine) as a column-major one,
/// by transpose_blocked.
inline Eigen::MatrixXd column_major(const RowMatrixXd& A) {
  Eigen::MatrixXd out(A.rows(), A.cols());
  transpose_blocked(A.data(), A.rows(), A.cols(), out.data());
  return out;
}

/// Rows (or columns) of a triangular factor per diagonal block of the blocked solves
/// below: Eigen's substitution solves the diagonal blocks, product_acc does the rest.
inline constexpr Index kSolveBlock = 64;

/// B <- L^{-1} B in place for L (n x n) lower triangular and B (n x k), Eigen blocks of
/// column-major matrices; left-looking, blocks of kSolveBlock rows: B_I -= L(I, :I) B(:I),
/// then the diagonal block's substitution.
template <class LowerBlock, class RhsBlock>
void lower_solve_left(const LowerBlock& L, RhsBlock& B) {
  const Index n = L.rows(), k = B.cols();
  for (Index i = 0; i < n; i += kSolveBlock) {
    const Index nb = std::min(kSolveBlock, n - i);
    if (i > 0) {
      product_acc(nb, k, i, -1.0, entry(L, i, 0), 1, L.outerStride(), entry(B, 0, 0),
                  B.outerStride(), entry(B, i, 0), B.outerStride());
    }
    auto rows = B.middleRows(i, nb);
    L.block(i, i, nb, nb).template triangularView<Eigen::Lower>().solveInPlace(rows);
  }
}

/// B <- B L^{-1} in place (X L = B) for L (n x n) lower triangular and B (h x n):
/// column blocks from the last, B_J -= B(:, J+) L(J+, J), then the diagonal block's
/// substitution.
template <class LowerBlock, class RhsBlock>
void lower_solve_right(const LowerBlock& L, RhsBlock& B) {
  const Index n = L.rows(), h = B.rows();
  for (Index j = ((n - 1) / kSolveBlock) * kSolveBlock; j >= 0 && n > 0; j -= kSolveBlock) {
    const Index nb = std::min(kSolveBlock, n - j), after = n - j - nb;
    if (after > 0) {
      product_acc(h, nb, after, -1.0, entry(B, 0, j + nb), 1, B.outerStride(),
                  entry(L, j + nb, j), L.outerStride(), entry(B, 0, j), B.outerStride());
    }
    auto cols = B.middleCols(j, nb);
    L.block(j, j, nb, nb).template triangularView<Eigen::Lower>().template solveInPlace<Eigen::OnTheRight>(cols);
  }
}

/// B <- B L^{-T} in place (X L^T = B) for L (n x n) lower triangular and B (h x n), with
/// Lt = L^T column-major (upper triangle read): column blocks of `block` from the first,
/// B_J -= B(:, :J) L(J, :J)^T, then the diagonal block's substitution.
template <class LowerBlock, class RhsBlock>
void lower_transpose_solve_right(const LowerBlock& L, const Eigen::MatrixXd& Lt, RhsBlock& B,
                                 Index block) {
  const Index n = L.rows(), h = B.rows();
  for (Index j = 0; j < n; j += block) {
    const Index nb = std::min(block, n - j);
    if (j > 0) {
      product_acc(h, nb, j, -1.0, entry(B, 0, 0), 1, B.outerStride(), entry(Lt, 0, j),
                  Lt.outerStride(), entry(B, 0, j), B.outerStride());
    }
    auto cols = B.middleCols(j, nb);
    L.block(j, j, nb, nb).template triangularView<Eigen::Lower>().transpose().template solveInPlace<Eigen::OnTheRight>(
        cols);
  }
}

}  // namespace nystrom_kme::detail
