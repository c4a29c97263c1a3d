// Blocked Cholesky factorisations of a symmetric PSD matrix, lower triangle, in place:
//  * blocked_cholesky: right-looking, no pivoting (K = L L^T);
//  * pivoted_cholesky_factor: diagonally pivoted, rank revealing (P^T K P ~ L L^T
//    with L m x r lower trapezoidal), LAPACK dpstrf's algorithm with a Level-3
//    trailing update.
//
// Parallelism: the trailing update A22 -= L21 L21^T and the panel solve are split into
// FIXED-size tiles that depend only on the matrix size, never on the thread count; each
// tile is one sequential product through the dispatched register-blocked GEMM
// (dense_products.hpp), the panel solve's diagonal blocks Eigen's substitution. Every
// entry is therefore computed by the same operations in the same order for any number
// of OpenMP threads: bit-identical results (for a given SIMD level).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <Eigen/Core>

#include <nystrom_kme/detail/dense_products.hpp>
#include <nystrom_kme/detail/parallel.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme::detail {

/// Columns factorised per step (panel width) and width of the trailing-update tiles.
inline constexpr Index kCholeskyBlock = 128;
inline constexpr Index kPivotedBlock = 64;
inline constexpr Index kUpdateTile = 128;
inline constexpr Index kRowTile = 256;

/// A(c0:n, c0:n) -= P P^T on the lower triangle, P = A(c0:n, k0:k0+kb): tiles of
/// kUpdateTile columns; the diagonal tile is updated in full (its upper part is scratch).
/// Tile c is A(c:n, c:c+w) -= P(c:n, :) P(c:c+w, :)^T, its right factor read from P^T,
/// copied once (column-major, so that the product reads it in place).
inline void trailing_update(Eigen::Ref<Eigen::MatrixXd> A, Index k0, Index kb, Index c0, int n_threads) {
  const Index n = A.rows(), ld = A.outerStride();
  if (c0 >= n || kb <= 0) return;
  const Eigen::MatrixXd Pt = A.block(c0, k0, n - c0, kb).transpose();
  const Index tiles = (n - c0 + kUpdateTile - 1) / kUpdateTile;
  parallel_tasks(tiles, n_threads, [&](Index t) {
    const Index c = c0 + t * kUpdateTile, w = std::min(kUpdateTile, n - c);
    product_acc(n - c, w, kb, -1.0, &A(c, k0), 1, ld, Pt.data() + (c - c0) * kb, kb, &A(c, c), ld);
  });
}

/// Columns per diagonal block of the panel solve (kCholeskyBlock / 4: the rest of the
/// panel's work goes through the dispatched product).
inline constexpr Index kPanelSolveBlock = 32;

/// A(r0:n, k0:k0+kb) <- A(r0:n, k0:k0+kb) L11^{-T}, L11 = lower(A(k0:k0+kb, k0:k0+kb)), in
/// tiles of kRowTile rows (lower_transpose_solve_right, blocks of kPanelSolveBlock columns).
inline void panel_solve(Eigen::MatrixXd& A, Index k0, Index kb, Index r0, int n_threads) {
  const Index n = A.rows();
  if (r0 >= n) return;
  const auto L11 = A.block(k0, k0, kb, kb);
  const Eigen::MatrixXd L11t = L11.transpose();
  const Index tiles = (n - r0 + kRowTile - 1) / kRowTile;
  parallel_tasks(tiles, n_threads, [&](Index t) {
    const Index r = r0 + t * kRowTile, h = std::min(kRowTile, n - r);
    auto block = A.block(r, k0, h, kb);
    lower_transpose_solve_right(L11, L11t, block, kPanelSolveBlock);  // X L11^T = B
  });
}

/// Unblocked Cholesky of the diagonal block A(k0:k0+kb, k0:k0+kb). Returns the index
/// of the first pivot that is not > min_pivot (or not finite), or -1 on success.
inline Index diagonal_block_cholesky(Eigen::MatrixXd& A, Index k0, Index kb, double min_pivot) {
  auto B = A.block(k0, k0, kb, kb);
  for (Index j = 0; j < kb; ++j) {
    const double d = B(j, j);
    if (!(d > min_pivot) || !std::isfinite(d)) return k0 + j;
    const double l = std::sqrt(d);
    B(j, j) = l;
    B.col(j).tail(kb - j - 1) /= l;
    for (Index c = j + 1; c < kb; ++c) {
      B.col(c).tail(kb - c) -= B(c, j) * B.col(j).tail(kb - c);
    }
  }
  return -1;
}

/// In-place blocked Cholesky A = L L^T of the lower triangle (the strict upper part is
/// scratch). Returns -1 on success, else the index of the first pivot (diagonal of
/// the Schur complement) that is <= min_pivot or not finite. Polls the interrupt
/// check once per panel (each panel's parallel loops may be too short to poll).
/// @throws Interrupted when the interrupt check asks to stop
inline Index blocked_cholesky(Eigen::MatrixXd& A, double min_pivot, int n_threads) {
  const Index n = A.rows();
  InterruptPoller poller;
  for (Index k = 0; k < n; k += kCholeskyBlock) {
    poller.poll();
    const Index kb = std::min(kCholeskyBlock, n - k);
    const Index failed = diagonal_block_cholesky(A, k, kb, min_pivot);
    if (failed >= 0) return failed;
    panel_solve(A, k, kb, k + kb, n_threads);
    trailing_update(A, k, kb, k + kb, n_threads);
  }
  return -1;
}

/// Result of the pivoted factorisation: position i of the factor holds original
/// index perm[i]; L = lower trapezoid of A(:, 0:rank) in that order.
struct PivotedCholesky {
  std::vector<Index> perm;
  Index rank = 0;
  double max_diagonal = 0.0;  ///< largest diagonal entry of K (= first pivot)
  double threshold = 0.0;     ///< pivots (Schur-complement diagonals) <= this stop it
  double next_pivot = 0.0;    ///< largest remaining Schur diagonal at stop (0 if full rank)
};

/// Diagonally pivoted Cholesky (dpstrf): at step j the largest diagonal entry of the
/// Schur complement is moved to position j; it stops when that entry is
/// <= rcond * max_i K_ii. The panel columns are computed left-looking (GEMV); after
/// each panel the trailing lower triangle gets one Level-3 update. Row swaps in the
/// columns of finished panels are deferred and applied once at the end.
inline PivotedCholesky pivoted_cholesky_factor(Eigen::Ref<Eigen::MatrixXd> A, double rcond, int n_threads) {
  const Index n = A.rows();
  PivotedCholesky out;
  out.perm.resize(std::size_t(n));
  for (Index i = 0; i < n; ++i) out.perm[std::size_t(i)] = i;
  if (n == 0) return out;
  out.max_diagonal = A.diagonal().maxCoeff();
  out.threshold = rcond * out.max_diagonal;
  if (!(out.max_diagonal > 0.0)) return out;  // K = 0: rank 0
  Eigen::VectorXd dots(n);
  std::vector<std::vector<Index>> snapshots;  // perm after each finished panel
  std::vector<Index> panel_start;
  Index rank = n;
  for (Index k = 0; k < n && rank == n; k += kPivotedBlock) {
    const Index kb = std::min(kPivotedBlock, n - k);
    dots.tail(n - k).setZero();
    Index j = k;
    for (; j < k + kb; ++j) {
      if (j > k) dots.tail(n - j).array() += A.col(j - 1).tail(n - j).array().square();
      // pivot: largest Schur diagonal, first index on ties
      Index p = j;
      double best = A(j, j) - dots(j);
      for (Index i = j + 1; i < n; ++i) {
        const double v = A(i, i) - dots(i);
        if (v > best) best = v, p = i;
      }
      if (!(best > out.threshold) || !std::isfinite(best)) {
        out.next_pivot = std::isfinite(best) ? std::max(best, 0.0) : best;
        rank = j;
        break;
      }
      if (p != j) {
        A(p, p) = A(j, j);
        for (Index c = k; c < j; ++c) std::swap(A(j, c), A(p, c));
        if (p + 1 < n) A.col(j).tail(n - p - 1).swap(A.col(p).tail(n - p - 1));
        for (Index i = j + 1; i < p; ++i) std::swap(A(i, j), A(p, i));
        std::swap(dots(j), dots(p));
        std::swap(out.perm[std::size_t(j)], out.perm[std::size_t(p)]);
      }
      const double ljj = std::sqrt(best);
      A(j, j) = ljj;
      if (j + 1 < n) {
        if (j > k) {
          A.col(j).tail(n - j - 1).noalias() -=
              A.block(j + 1, k, n - j - 1, j - k) * A.row(j).segment(k, j - k).transpose();
        }
        A.col(j).tail(n - j - 1) /= ljj;
      }
    }
    if (rank == n) {
      trailing_update(A, k, kb, k + kb, n_threads);
      snapshots.push_back(out.perm);
      panel_start.push_back(k);
    }
  }
  out.rank = rank;
  // Deferred row swaps: rows >= end of panel b of its columns are in the order of
  // snapshot b; bring them to the final order. (The columns of the panel where the
  // factorisation stopped and the trailing block are in the final order already.)
  std::vector<Index> final_pos(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i) final_pos[std::size_t(out.perm[std::size_t(i)])] = i;
  const Index n_panels = Index(snapshots.size());
  parallel_tasks(n_panels, n_threads, [&](Index b) {
    const Index k = panel_start[std::size_t(b)];
    const Index end = std::min(k + kPivotedBlock, rank);
    const std::vector<Index>& snap = snapshots[std::size_t(b)];
    Eigen::VectorXd tmp(n);
    for (Index c = k; c < end; ++c) {
      for (Index i = end; i < n; ++i) tmp(final_pos[std::size_t(snap[std::size_t(i)])]) = A(i, c);
      A.col(c).tail(n - end) = tmp.tail(n - end);
    }
  });
  return out;
}

/// Extremes of the Schur complement S = K22 - L21 L21^T that a rank-revealing stop
/// leaves (positions rank..n-1 of the factor): its smallest diagonal entry and its
/// largest off-diagonal |S_ij|; NaN when an entry is not finite; 0 and 0 at full rank.
struct SchurExtremes {
  double min_diagonal = 0.0;
  double max_off_diagonal = 0.0;
};

/// For a PSD K every S_ii is <= the stop threshold and |S_ij| <= sqrt(S_ii S_jj), so
/// both extremes are bounded by the threshold up to rounding; larger values prove K
/// indefinite. Call with the A that pivoted_cholesky_factor(A, ...) returned `pc` for
/// (it holds the trailing block with the finished panels' updates applied, and the
/// columns of the unfinished panel). O((n - r)^2 (r mod kPivotedBlock)) time, one
/// (n - r) x kUpdateTile block per task in fixed tiles: the same for any thread count.
inline SchurExtremes remaining_schur_extremes(const Eigen::MatrixXd& A, const PivotedCholesky& pc,
                                              int n_threads) {
  const Index n = A.rows(), r = pc.rank;
  SchurExtremes out;
  if (r >= n) return out;
  const Index k0 = (r / kPivotedBlock) * kPivotedBlock, w = r - k0;  // unfinished panel
  const Index tiles = (n - r + kUpdateTile - 1) / kUpdateTile;
  std::vector<double> min_diag(static_cast<std::size_t>(tiles)), max_off(static_cast<std::size_t>(tiles));
  parallel_tasks(tiles, n_threads, [&](Index t) {
    const Index c = r + t * kUpdateTile, cw = std::min(kUpdateTile, n - c);
    Eigen::MatrixXd S = A.block(c, c, n - c, cw);
    if (w > 0) S.noalias() -= A.block(c, k0, n - c, w) * A.block(c, k0, cw, w).transpose();
    double lo = std::numeric_limits<double>::infinity(), hi = 0.0;
    bool finite = true;
    for (Index j = 0; j < cw; ++j) {
      finite = finite && std::isfinite(S(j, j));
      lo = std::min(lo, S(j, j));
      for (Index i = j + 1; i < n - c; ++i) {
        finite = finite && std::isfinite(S(i, j));
        hi = std::max(hi, std::abs(S(i, j)));
      }
    }
    min_diag[std::size_t(t)] = finite ? lo : std::numeric_limits<double>::quiet_NaN();
    max_off[std::size_t(t)] = finite ? hi : std::numeric_limits<double>::quiet_NaN();
  });
  out.min_diagonal = std::numeric_limits<double>::infinity();
  for (Index t = 0; t < tiles; ++t) {
    const double lo = min_diag[std::size_t(t)], hi = max_off[std::size_t(t)];
    if (std::isnan(lo) || std::isnan(hi)) return {std::nan(""), std::nan("")};
    out.min_diagonal = std::min(out.min_diagonal, lo);
    out.max_off_diagonal = std::max(out.max_off_diagonal, hi);
  }
  return out;
}

}  // namespace nystrom_kme::detail
