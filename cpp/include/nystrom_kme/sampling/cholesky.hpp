// The pivoted partial Cholesky samplers: greedy and randomly pivoted one pivot at a
// time (pivoted_cholesky; greedy runs in panels, detail/greedy_cholesky.hpp), and the
// accelerated block randomly pivoted Cholesky (block_rpcholesky). Each returns its
// pivots with the residual trace after each; memory O(n m) for the factor.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Core>

#include <nystrom_kme/detail/greedy_cholesky.hpp>
#include <nystrom_kme/detail/parallel.hpp>
#include <nystrom_kme/detail/sampling_blocks.hpp>
#include <nystrom_kme/detail/sampling_common.hpp>
#include <nystrom_kme/kernel_sums.hpp>
#include <nystrom_kme/kernels.hpp>
#include <nystrom_kme/sampling/types.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme {

enum class PivotRule {
  greedy,  ///< argmax of the residual diagonal (smallest index on ties)
  random,  ///< drawn with probability proportional to the residual diagonal
};

/// Pivoted partial Cholesky K ~ F F^T of the kernel matrix of X, one pivot at a time.
///
/// rule = greedy: the deterministic greedy pivoted Cholesky (also the fast greedy MAP
/// inference of a k-DPP with L-ensemble K, L. Chen, Zhang, Zhou, NeurIPS 2018, Alg. 1).
/// rule = random: randomly pivoted Cholesky (Y. Chen, Epperly, Tropp, Webber 2022,
/// "Randomly pivoted Cholesky", Alg. 1), pivots drawn from `seed`.
///
/// rule = greedy runs in panels (detail::greedy_cholesky_blocked): the residual columns
/// of up to kGreedyCandidates rows with the largest residuals come from one kernel block
/// and one matrix product against F, and pivots are taken from them while the argmax
/// stays among them; the pivots are the one-at-a-time rule's (up to round-off in the
/// order of the residuals' sums). rule = random is the plain sequential loop: each step
/// evaluates one kernel column (O(n d)) and subtracts F's projection (O(n j)); for
/// speed use block_rpcholesky, whose pivots have the same law.
/// O(n m (m + d)) time in all, O(n m) memory for F (n x m doubles; greedy: plus two
/// n x kGreedyCandidates panels).
/// @param X  (n, d) points, n >= 1, d >= 1, finite
/// @param m  number of pivots, 1 <= m <= n (fewer are returned if the residual vanishes)
/// @throws std::invalid_argument on bad sizes, m outside [1, n], NaN/inf in X, a rule
///         that is not a PivotRule, options.tolerance not finite or outside [0, 1), or
///         kernel values that are not finite (overflow)
template <class T>
PivotedCholeskyResult pivoted_cholesky(const ConstRowRef<T>& X, const Kernel& kernel, Index m,
                                       PivotRule rule, std::uint64_t seed = 0,
                                       const SamplingOptions& options = {}) {
  constexpr const char* what = "pivoted_cholesky";
  if (rule != PivotRule::greedy && rule != PivotRule::random) {
    throw std::invalid_argument("pivoted_cholesky: rule must be PivotRule::greedy or PivotRule::random");
  }
  detail::check_pivot_args(X, m, options.tolerance, what);
  if (rule == PivotRule::greedy) return detail::greedy_cholesky_blocked(X, kernel, m, options);
  const Index n = X.rows(), d = X.cols();
  const int nt = options.n_threads;
  detail::ChunkStats stats(detail::n_sampling_chunks(n));
  std::vector<double> diag = detail::initial_diagonal(X, kernel, stats, nt, what);
  const double threshold = options.tolerance * stats.best().first;  // >= 0

  PivotedCholeskyResult result;
  result.residual_trace.push_back(stats.total());
  RowMatrixXd F(n, m);  // O(n m): row i holds the first j factor entries of x_i
  std::vector<double> column(static_cast<std::size_t>(n)), fs(static_cast<std::size_t>(m));
  std::vector<T> p(static_cast<std::size_t>(d));
  detail::SplitMix64 gen(seed);

  for (Index j = 0; j < m; ++j) {
    if (!(stats.best().first > threshold)) break;  // numerically exact already
    Index s;
    if (rule == PivotRule::greedy) {
      s = stats.best().second;
    } else {
      for (;;) {  // a pivot below the threshold is cancellation noise: discard and redraw
        s = detail::sample_proportional(diag, stats, gen);
        if (diag[std::size_t(s)] > threshold) break;
        diag[std::size_t(s)] = 0.0;
        const Index c = s / detail::kSamplingChunk;
        const Index begin = c * detail::kSamplingChunk;
        stats.record(c, diag.data(), begin, std::min(n, begin + detail::kSamplingChunk));
      }
    }
    detail::check_index(s, n, what);
    const double piv = diag[std::size_t(s)];
    if (!(piv > 0.0)) throw std::runtime_error("pivoted_cholesky: internal error: pivot is not > 0");
    const double inv = 1.0 / std::sqrt(piv);
    for (Index l = 0; l < j; ++l) fs[std::size_t(l)] = F(s, l);
    for (Index f = 0; f < d; ++f) p[std::size_t(f)] = X(s, f);

    detail::for_each_chunk(n, detail::kSamplingChunk, nt, [&](Index c, Index b, Index e) {
      detail::kernel_column(X, p.data(), kernel, b, e, column.data() + b);
      for (Index i = b; i < e; ++i) {
        if (!std::isfinite(column[std::size_t(i)])) throw detail::kernel_overflow(what, "X");
      }
      const Eigen::Map<const Eigen::VectorXd> fsj(fs.data(), j);
      for (Index i = b; i < e; ++i) {
        // Eigen's dot keeps several accumulators (vectorised); a plain loop would not
        const double v = column[std::size_t(i)] -
                         (j > 0 ? Eigen::Map<const Eigen::VectorXd>(F.data() + i * m, j).dot(fsj) : 0.0);
        const double f = v * inv;
        F(i, j) = f;
        diag[std::size_t(i)] = std::max(diag[std::size_t(i)] - f * f, 0.0);
      }
      if (s >= b && s < e) diag[std::size_t(s)] = 0.0;
      stats.record(c, diag.data(), b, e);
    });
    result.pivots.push_back(s);
    result.pivot_values.push_back(piv);
    result.residual_trace.push_back(stats.total());
  }
  return result;
}

/// Accelerated randomly pivoted Cholesky (Epperly, Tropp, Webber 2024, "Embrace
/// rejection: kernel matrix approximation by accelerated randomly pivoted Cholesky",
/// Alg. 2): each round proposes `block_size` pivots i.i.d. from the residual diagonal
/// d, then accepts proposal i with probability g_ii / d_i, where g_ii is its residual
/// after the pivots accepted so far in the round (a b x b Schur complement), and
/// updates F with one block column K(X, S) from the tiled kernel engine. The pivots
/// have exactly the distribution of sequential RPCholesky, at block (GEMM) speed.
///
/// The proposals per round are b = min(block_size, n): the accepted pivots have the
/// RPCholesky law for any b, and more i.i.d. proposals than rows only add repeats (at
/// O(b^2) memory and O(b^2 d) time: block_size = 20,000 at n = 200 took minutes).
///
/// Per round and chunk of rows: the kernel block K(X_chunk, S), kept in cache, then F's
/// new columns (H - F F(S, :)^T) L^{-T} as two register-blocked matrix products
/// (detail::subtract_abt, times_lower_inverse_t), no per-pivot pass over F.
/// O(n m (m + d)) time, O(n m + b^2) memory (F and the proposals' Gram matrix).
/// residual_trace has one entry per accepted pivot, from the column norms of the block.
/// @param X  (n, d) points, n >= 1, d >= 1, finite
/// @param m  number of pivots, 1 <= m <= n (fewer are returned if the residual vanishes)
/// @param block_size  proposals per round, >= 1 (capped at n)
/// @throws std::invalid_argument on bad sizes, m outside [1, n], block_size < 1, NaN/inf
///         in X, options.tolerance not finite or outside [0, 1), or kernel values that
///         are not finite (overflow)
template <class T>
PivotedCholeskyResult block_rpcholesky(const ConstRowRef<T>& X, const Kernel& kernel, Index m,
                                       Index block_size, std::uint64_t seed = 0,
                                       const SamplingOptions& options = {}) {
  constexpr const char* what = "block_rpcholesky";
  if (block_size < 1) {
    throw std::invalid_argument("block_rpcholesky: block_size must be >= 1, got " +
                                std::to_string(block_size));
  }
  detail::check_pivot_args(X, m, options.tolerance, what);
  const Index n = X.rows(), d = X.cols();
  const int nt = options.n_threads;
  detail::ChunkStats stats(detail::n_sampling_chunks(n));
  std::vector<double> diag = detail::initial_diagonal(X, kernel, stats, nt, what);
  const double threshold = options.tolerance * stats.best().first;  // >= 0

  PivotedCholeskyResult result;
  result.residual_trace.push_back(stats.total());
  RowMatrixXd F(n, m);
  detail::ThreadMatrices kernel_scratch(nt), h_scratch(nt);
  detail::SplitMix64 gen(seed);
  Index k = 0;  // pivots so far

  while (k < m) {
    if (!(stats.best().first > threshold)) break;
    const Index b = std::min(block_size, n);
    std::vector<Index> prop(static_cast<std::size_t>(b));
    for (auto& s : prop) {
      s = detail::sample_proportional(diag, stats, gen);
      detail::check_index(s, n, what);
    }

    // G = K(S', S') - F(S', :k) F(S', :k)^T: residual kernel on the proposals.
    RowMatrixXd Fp(b, k);
    for (Index a = 0; a < b; ++a) Fp.row(a) = F.row(prop[std::size_t(a)]).head(k);
    RowMatrix<T> Xp(b, d);
    for (Index a = 0; a < b; ++a) Xp.row(a) = X.row(prop[std::size_t(a)]);
    RowMatrixXd G = kernel_matrix<T>(Xp, Xp, kernel, {1});
    if (!G.allFinite()) throw detail::kernel_overflow(what, "X");
    if (k > 0) detail::subtract_abt(Fp.data(), k, b, k, Fp.data(), k, b, G.data(), b);

    // Rejection step: sequential RPCholesky restricted to the proposals.
    std::vector<Index> accepted, noise;
    for (Index t = 0; t < b && k + Index(accepted.size()) < m; ++t) {
      const Index s = prop[std::size_t(t)];
      const double g = G(t, t), dt = diag[std::size_t(s)];
      if (!(dt > 0.0)) continue;
      if (!(g > threshold)) {  // a duplicate of an accepted pivot, or round-off
        if (accepted.empty()) noise.push_back(s);
        continue;
      }
      if (!(gen.uniform() * dt < g)) continue;
      accepted.push_back(prop[std::size_t(t)]);
      for (Index a = t + 1; a < b; ++a) {
        const double ga = G(a, t) / g;
        for (Index c = t + 1; c < b; ++c) G(a, c) -= ga * G(t, c);
      }
    }
    if (accepted.empty()) {
      // Residuals that vanish against the current factor alone are round-off: drop them
      // so that the loop always progresses.
      for (Index s : noise) diag[std::size_t(s)] = 0.0;
      detail::for_each_chunk(n, detail::kSamplingChunk, 1,
                             [&](Index c, Index bb, Index e) { stats.record(c, diag.data(), bb, e); });
      continue;
    }

    // H = K(X, S) - F(:, :k) F(S, :k)^T and the Cholesky factor of H(S, :).
    const Index t_acc = Index(accepted.size());
    RowMatrix<T> P(t_acc, d);
    RowMatrixXd Fs(t_acc, k);
    for (Index a = 0; a < t_acc; ++a) {
      P.row(a) = X.row(accepted[std::size_t(a)]);
      Fs.row(a) = F.row(accepted[std::size_t(a)]).head(k);
    }
    RowMatrixXd Hss(t_acc, t_acc);  // K(S, S), as the chunks below compute K(X, S)
    detail::kernel_block_rows<T>(P, 0, t_acc, P, kernel, Hss.data(), kernel_scratch, what);
    Eigen::MatrixXd Hs = Hss;
    if (k > 0) Hs.noalias() -= Fs * Fs.transpose();
    const Index r = detail::leading_cholesky(Hs, threshold);  // r < t only through round-off
    if (r == 0) {
      for (Index s : accepted) diag[std::size_t(s)] = 0.0;  // noise-level pivots
      detail::for_each_chunk(n, detail::kSamplingChunk, 1,
                             [&](Index c, Index bb, Index e) { stats.record(c, diag.data(), bb, e); });
      continue;
    }
    const Eigen::MatrixXd Linv = detail::lower_inverse(Hs, r, nt);

    // Per chunk of rows, with its kernel block in cache (an n x t matrix would cost a
    // page fault per 4 kB and a trip to memory; the same bits as H(S, :) above), then
    // F(chunk, k:k+r) = (H - F(chunk, :k) F(S, :k)^T) L^{-T} as two matrix products.
    std::vector<double> colsq(static_cast<std::size_t>(detail::n_sampling_chunks(n) * r), 0.0);
    detail::for_each_chunk(n, detail::kSamplingChunk, nt, [&](Index c, Index bb, Index e) {
      const Index rows = e - bb;
      RowMatrixXd& Hb = h_scratch.get(rows, t_acc);
      detail::kernel_block_rows(X, bb, rows, P, kernel, Hb.data(), kernel_scratch, what);
      if (k > 0) detail::subtract_abt(F.data() + bb * m, m, rows, k, Fs.data(), k, r, Hb.data(), t_acc);
      double* Fb = F.data() + bb * m + k;
      detail::times_lower_inverse_t(Hb.data(), t_acc, rows, Linv, Fb, m);
      for (Index i = 0; i < rows; ++i) {
        double& di = diag[std::size_t(bb + i)];
        double sq = 0.0;
        for (Index l = 0; l < r; ++l) {
          const double f = Fb[i * m + l];
          sq += f * f;
          colsq[std::size_t(c * r + l)] += f * f;
        }
        di = std::max(di - sq, 0.0);
      }
      for (Index a = 0; a < r; ++a) {
        const Index s = accepted[std::size_t(a)];
        if (s >= bb && s < e) diag[std::size_t(s)] = 0.0;
      }
      stats.record(c, diag.data(), bb, e);
    });
    if (r < t_acc) {  // round-off casualties: their residual is negligible
      for (Index a = r; a < t_acc; ++a) diag[std::size_t(accepted[std::size_t(a)])] = 0.0;
      detail::for_each_chunk(n, detail::kSamplingChunk, 1,
                             [&](Index c, Index bb, Index e) { stats.record(c, diag.data(), bb, e); });
    }
    const double before = result.residual_trace.back(), after = stats.total();
    double removed = 0.0;
    for (Index l = 0; l < r; ++l) {
      for (Index c = 0; c < detail::n_sampling_chunks(n); ++c) removed += colsq[std::size_t(c * r + l)];
      const double trace = l + 1 < r ? std::min(before, std::max(before - removed, after)) : after;
      result.residual_trace.push_back(std::min(trace, result.residual_trace.back()));
      result.pivots.push_back(accepted[std::size_t(l)]);
      result.pivot_values.push_back(Hs(l, l) * Hs(l, l));
    }
    k += r;
  }
  return result;
}

}  // namespace nystrom_kme
