// The greedy rule of pivoted_cholesky (sampling/cholesky.hpp) in panels: residual
// columns of the best candidates from one kernel block and one matrix product, then
// pivots taken from them while the argmax of the residual diagonal stays among them.
#pragma once

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include <nystrom_kme/detail/parallel.hpp>
#include <nystrom_kme/detail/sampling_blocks.hpp>
#include <nystrom_kme/detail/sampling_common.hpp>
#include <nystrom_kme/kernels.hpp>
#include <nystrom_kme/sampling/types.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme::detail {

/// Most candidates per panel of greedy_cholesky_blocked: at n = 5e4, m = 1000 on a
/// Gaussian mixture, 64 / 128 / 256 candidates gave 28 / 42 / 59 pivots per panel;
/// 128 was the fastest (the panel's matrix product grows with the candidates, the
/// number of panels with their inverse).
inline constexpr Index kGreedyCandidates = 128;

/// Greedy pivoted Cholesky in blocks (the greedy rule of pivoted_cholesky; its arguments
/// are checked there). Each panel takes the c largest residuals as candidates, forms
/// their residual columns H = K(X, C) - F F(C, :)^T at once (kernel engine + one matrix
/// product), then takes greedy pivots while the argmax of the residual diagonal is a
/// candidate: its column is H's minus the panel's own factor columns (O(n t) for the
/// t-th pivot of the panel). A panel ends when the argmax leaves the candidates; the
/// next panel starts from it. The pivots are those of the one-at-a-time loop: the same
/// argmax (smallest index on ties) of the same residual diagonal, up to round-off in
/// the residuals' summation order.
/// O(n m (m + d) c / t_avg) time with t_avg the mean pivots per panel; O(n (m + 2 c)) memory, c <= kGreedyCandidates.
template <class T>
PivotedCholeskyResult greedy_cholesky_blocked(const ConstRowRef<T>& X, const Kernel& kernel, Index m,
                                              const SamplingOptions& options) {
  constexpr const char* what = "pivoted_cholesky";
  const Index n = X.rows(), d = X.cols();
  const int nt = options.n_threads;
  ChunkStats stats(n_sampling_chunks(n));
  std::vector<double> diag = initial_diagonal(X, kernel, stats, nt, what);
  const double threshold = options.tolerance * stats.best().first;  // >= 0

  PivotedCholeskyResult result;
  result.residual_trace.push_back(stats.total());
  RowMatrixXd F(n, m);
  std::vector<Index> pos(static_cast<std::size_t>(n), -1), cand;
  std::vector<double> fs;
  // The panel's residual columns H (n x c, row-major) and factor columns P (n x t,
  // column-major) live in buffers allocated once: fresh n x 128 matrices per panel
  // cost a page fault per 4 kB (GBs over a run at n = 10^5, m = 1000).
  // candidates per panel for `left` pivots to go: twice that, within [16, kGreedyCandidates]
  const auto panel_candidates = [&](Index left) {
    return std::min<Index>(n, std::max<Index>(16, std::min<Index>(kGreedyCandidates, 2 * left)));
  };
  const Index c_cap = panel_candidates(m);
  std::vector<double> h_buf(static_cast<std::size_t>(n * c_cap)), p_buf(static_cast<std::size_t>(n * c_cap));
  ThreadMatrices kernel_scratch(nt);
  Index k = 0;
  while (k < m) {
    const auto [top, top_arg] = stats.best();
    if (!(top > threshold)) break;
    check_index(top_arg, n, what);
    // candidates: the c largest residuals above the threshold (smallest index on ties)
    const Index c_max = panel_candidates(m - k);
    cand.clear();
    for (Index i = 0; i < n; ++i) {
      if (diag[std::size_t(i)] > threshold) cand.push_back(i);
    }
    const auto better = [&](Index a, Index b) {
      const double da = diag[std::size_t(a)], db = diag[std::size_t(b)];
      return da > db || (da == db && a < b);
    };
    if (Index(cand.size()) > c_max) {
      std::nth_element(cand.begin(), cand.begin() + (c_max - 1), cand.end(), better);
      cand.resize(static_cast<std::size_t>(c_max));
    }
    if (std::find(cand.begin(), cand.end(), top_arg) == cand.end()) cand.back() = top_arg;
    std::sort(cand.begin(), cand.end());
    const Index c = Index(cand.size());
    RowMatrix<T> Xc(c, d);
    RowMatrixXd Fc(c, k);
    for (Index a = 0; a < c; ++a) {
      Xc.row(a) = X.row(cand[std::size_t(a)]);
      if (k > 0) Fc.row(a) = F.row(cand[std::size_t(a)]).head(k);
      pos[std::size_t(cand[std::size_t(a)])] = a;
    }
    // H = K(X, C) - F F(C, :)^T, per chunk of rows with its kernel block in cache
    Eigen::Map<RowMatrixXd> H(h_buf.data(), n, c);
    for_each_chunk(n, kSamplingChunk, nt, [&](Index, Index b, Index e) {
      kernel_block_rows(X, b, e - b, Xc, kernel, H.data() + b * c, kernel_scratch, what);
      if (k > 0) subtract_abt(F.data() + b * m, m, e - b, k, Fc.data(), k, c, H.data() + b * c, c);
    });
    const Index t_max = std::min(c, m - k);
    // the panel's factor columns, column-major: a pivot's column is H's minus P fs, one
    // matrix-vector product streaming t contiguous columns
    Eigen::Map<Eigen::MatrixXd> P(p_buf.data(), n, t_max);
    Index t = 0;
    while (t < t_max) {
      const std::pair<double, Index> best = stats.best();
      const Index s = best.second;
      if (!(best.first > threshold)) break;
      check_index(s, n, what);
      const Index a = pos[std::size_t(s)];
      if (a < 0) break;  // the argmax left the candidates: next panel
      const double piv = diag[std::size_t(s)];
      const double inv = 1.0 / std::sqrt(piv);
      fs.resize(static_cast<std::size_t>(t));
      for (Index l = 0; l < t; ++l) fs[std::size_t(l)] = P(s, l);
      for_each_chunk(n, kSamplingChunk, nt, [&](Index ch, Index b, Index e) {
        const Index rows = e - b;
        auto col = P.col(t).segment(b, rows);
        for (Index i = 0; i < rows; ++i) col[i] = H(b + i, a);
        if (t > 0) {
          col.noalias() -= P.block(b, 0, rows, t) * Eigen::Map<const Eigen::VectorXd>(fs.data(), t);
        }
        for (Index i = b; i < e; ++i) {
          const double f = P(i, t) * inv;
          P(i, t) = f;
          diag[std::size_t(i)] = std::max(diag[std::size_t(i)] - f * f, 0.0);
        }
        if (s >= b && s < e) diag[std::size_t(s)] = 0.0;
        stats.record(ch, diag.data(), b, e);
      });
      result.pivots.push_back(s);
      result.pivot_values.push_back(piv);
      result.residual_trace.push_back(stats.total());
      ++t;
    }
    for (Index a = 0; a < c; ++a) pos[std::size_t(cand[std::size_t(a)])] = -1;
    if (k + t < m) {  // F's columns k..k+t are read by the next panel
      for_each_chunk(n, kSamplingChunk, nt, [&](Index, Index b, Index e) {
        F.block(b, k, e - b, t) = P.block(b, 0, e - b, t);
      });
    }
    k += t;
  }
  return result;
}

}  // namespace nystrom_kme::detail
