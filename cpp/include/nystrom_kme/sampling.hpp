// Landmark selection: pivoted Cholesky (greedy, randomly pivoted, accelerated block
// randomly pivoted), kernel herding, farthest-point (incoherence) selection, and the
// ridge-leverage-score estimator used by BLESS. Kernel values come from the same
// Kernel::apply map as every other routine of the core.
//
// Every routine takes the data X (n, d) row-major and never forms the n x n kernel
// matrix. Memory is stated per routine: O(n m) for the Cholesky factor where one is
// needed, O(n) otherwise. Per-pivot loops run over a fixed partition of the rows
// into chunks and combine chunk results in order, so results (pivots, traces) are
// the same for every thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Core>

#include <nystrom_kme/detail/checks.hpp>
#include <nystrom_kme/detail/cholesky_blocked.hpp>
#include <nystrom_kme/detail/parallel.hpp>
#include <nystrom_kme/detail/sampling_common.hpp>
#include <nystrom_kme/detail/tile_engine.hpp>
#include <nystrom_kme/kernel_sums.hpp>
#include <nystrom_kme/kernels.hpp>
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

/// kernel_herding with allow_repeats refuses more than this many steps per candidate
/// (and more than kMaxHerdingSteps in all): beyond that the run time O(m n d) is absurd.
inline constexpr Index kMaxHerdingStepsPerCandidate = 1000;
inline constexpr Index kMaxHerdingSteps = Index(1) << 31;

enum class PivotRule {
  greedy,  ///< argmax of the residual diagonal (smallest index on ties)
  random,  ///< drawn with probability proportional to the residual diagonal
};

struct PivotedCholeskyResult {
  std::vector<Index> pivots;          ///< selected rows of X, in selection order (distinct)
  std::vector<double> residual_trace; ///< tr(K - F F^T) before the first pivot and after each
  std::vector<double> pivot_values;   ///< residual diagonal (Schur complement) of each pivot
};

namespace detail {

template <class T>
void check_pivot_args(const ConstRowRef<T>& X, Index m, const SamplingOptions& options,
                      const char* what) {
  check_sampling_args(X.rows(), X.cols(), m, what);
  check_tolerance(options.tolerance, what);
  if (m > X.rows()) {
    throw std::invalid_argument(std::string(what) + ": n_landmarks=" + std::to_string(m) +
                                " exceeds the number of rows of X, " + std::to_string(X.rows()));
  }
  check_finite(X, "X");
}

/// Thrown when kernel values of finite data are not finite (they overflow float64,
/// e.g. a linear or polynomial kernel on huge values).
inline std::invalid_argument kernel_overflow(const char* what, const char* data) {
  return std::invalid_argument(std::string(what) + ": the kernel values of " + data +
                               " are not finite (they overflow float64): rescale the data or "
                               "increase the bandwidth");
}

/// Residual diagonal d_i = k(x_i, x_i) and its chunk statistics.
/// @throws std::invalid_argument when a k(x_i, x_i) or their sum is not finite
template <class T>
std::vector<double> initial_diagonal(const ConstRowRef<T>& X, const Kernel& kernel, ChunkStats& stats,
                                     int n_threads, const char* what) {
  std::vector<double> diag(static_cast<std::size_t>(X.rows()));
  for_each_chunk(X.rows(), kSamplingChunk, n_threads, [&](Index c, Index b, Index e) {
    kernel_diagonal_rows(X, kernel, b, e, diag.data() + b);
    for (Index i = b; i < e; ++i) {
      if (!std::isfinite(diag[std::size_t(i)])) throw kernel_overflow(what, "X");
    }
    stats.record(c, diag.data(), b, e);
  });
  if (!std::isfinite(stats.total())) throw kernel_overflow(what, "X");
  return diag;
}

/// Defensive check before a row index is used: the loops never produce an index
/// outside [0, n) (in particular never -1), and this keeps it so.
inline void check_index(Index i, Index n, const char* what) {
  if (i < 0 || i >= n) {
    throw std::runtime_error(std::string(what) + ": internal error: selected row index " +
                             std::to_string(i) + " is outside [0, " + std::to_string(n) + ")");
  }
}

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

/// out (cols x rows, row-major) = A^T for row-major A (rows x cols), in 16 x 16 tiles: a
/// plain loop writes one cache line per element (measured: 9% of block_rpcholesky).
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

}  // namespace detail

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
  detail::check_pivot_args(X, m, options, what);
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
  detail::check_pivot_args(X, m, options, what);
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

/// Kernel herding (Y. Chen, Welling, Smola, UAI 2010) over the candidate rows C:
/// step t picks argmax_i target_i - (1/(t+1)) sum_{s<=t} k(c_i, c_{j_s}), with
/// target_i the mean embedding to match evaluated at c_i (e.g. mu_hat(c_i) =
/// (1/n) sum_l k(x_l, c_i)). O(m n_c d) time, O(n_c) memory beyond the target.
/// @param C  (n_c, d) candidates, n_c >= 1, d >= 1, finite
/// @param target  (n_c,) finite values
/// @param m  steps, >= 1; <= n_c without repeats; with repeats <=
///           min(kMaxHerdingStepsPerCandidate * n_c, kMaxHerdingSteps) = min(1000 n_c, 2^31)
/// @param allow_repeats  false: a chosen candidate is never chosen again (m <= n_c)
/// @throws std::invalid_argument on bad sizes, m out of range, NaN/inf in C or target,
///         options.tolerance not finite or outside [0, 1) (unused here, checked for
///         consistency), or when the kernel values of C or the herding scores are not
///         finite (overflow, e.g. a linear kernel on values near 1e200)
template <class T>
std::vector<Index> kernel_herding(const ConstRowRef<T>& C, const Eigen::Ref<const Eigen::VectorXd>& target,
                                  const Kernel& kernel, Index m, bool allow_repeats = false,
                                  const SamplingOptions& options = {}) {
  constexpr const char* what = "kernel_herding";
  detail::check_sampling_args(C.rows(), C.cols(), m, what);
  detail::check_tolerance(options.tolerance, what);
  const Index n = C.rows(), d = C.cols();
  if (!allow_repeats && m > n) {
    throw std::invalid_argument("kernel_herding: n_landmarks=" + std::to_string(m) +
                                " exceeds the number of candidates " + std::to_string(n) +
                                " (allow repeats to go beyond)");
  }
  const Index max_steps = n > kMaxHerdingSteps / kMaxHerdingStepsPerCandidate
                              ? kMaxHerdingSteps
                              : std::min(kMaxHerdingSteps, n * kMaxHerdingStepsPerCandidate);
  if (m > max_steps) {
    throw std::invalid_argument("kernel_herding: n_landmarks=" + std::to_string(m) +
                                " is too large: at most min(" +
                                std::to_string(kMaxHerdingStepsPerCandidate) + " * " + std::to_string(n) +
                                " candidates, 2^31) = " + std::to_string(max_steps) +
                                " herding steps are allowed");
  }
  if (target.size() != n) {
    throw std::invalid_argument("kernel_herding: target has " + std::to_string(target.size()) +
                                " entries but C has " + std::to_string(n) + " rows");
  }
  detail::check_finite(C, "C");
  if (!target.allFinite()) throw std::invalid_argument("kernel_herding: target contains NaN or inf");
  const Index n_chunks = detail::n_sampling_chunks(n);
  std::vector<double> sums(static_cast<std::size_t>(n), 0.0), column(static_cast<std::size_t>(n));
  std::vector<char> taken(static_cast<std::size_t>(n), 0);
  std::vector<double> best(static_cast<std::size_t>(n_chunks));
  std::vector<Index> arg(static_cast<std::size_t>(n_chunks));
  std::vector<T> p(static_cast<std::size_t>(d));
  std::vector<Index> chosen;
  Index last = -1;
  const int step_nt = detail::step_threads(options.n_threads, n);
  for (Index t = 0; t < m; ++t) {
    const double scale = 1.0 / double(t + 1);
    detail::for_each_chunk(n, detail::kSamplingChunk, step_nt, [&](Index c, Index b, Index e) {
      if (last >= 0) {
        detail::kernel_column(C, p.data(), kernel, b, e, column.data() + b);
        for (Index i = b; i < e; ++i) {
          if (!std::isfinite(column[std::size_t(i)])) throw detail::kernel_overflow(what, "C");
          sums[std::size_t(i)] += column[std::size_t(i)];
        }
      }
      double bv = -std::numeric_limits<double>::infinity();
      Index ba = -1;
      for (Index i = b; i < e; ++i) {
        if (taken[std::size_t(i)]) continue;
        const double v = target[i] - scale * sums[std::size_t(i)];
        if (!std::isfinite(v)) {  // a running sum of kernel values overflowed
          throw std::invalid_argument(
              "kernel_herding: the herding score of candidate " + std::to_string(i) + " at step " +
              std::to_string(t) + " is not finite: the kernel values of C overflow float64 "
              "(rescale the data or increase the bandwidth)");
        }
        if (v > bv) {
          bv = v;
          ba = i;
        }
      }
      best[std::size_t(c)] = bv;
      arg[std::size_t(c)] = ba;
    });
    double bv = -std::numeric_limits<double>::infinity();
    Index j = -1;
    for (Index c = 0; c < n_chunks; ++c) {
      if (arg[std::size_t(c)] >= 0 && (j < 0 || best[std::size_t(c)] > bv)) {
        bv = best[std::size_t(c)];
        j = arg[std::size_t(c)];
      }
    }
    detail::check_index(j, n, what);  // every score is finite, so some candidate wins
    chosen.push_back(j);
    if (!allow_repeats) taken[std::size_t(j)] = 1;
    last = j;
    for (Index f = 0; f < d; ++f) p[std::size_t(f)] = C(j, f);
  }
  return chosen;
}

/// Farthest-point selection in the RKHS metric ||phi(x) - phi(z)||^2 = k(x,x) + k(z,z)
/// - 2 k(x,z) (Gonzalez's greedy k-centre): each step picks the point least coherent
/// with the chosen set, the incoherence heuristic of Cruz Cortes & Scott, "Scalable
/// sparse approximation of a sample mean", ICASSP 2014. Starts at row `first`; stops
/// early once every point is within tolerance of a chosen one (squared RKHS distance
/// <= 2 * tolerance * max_i k(x_i, x_i)): the points returned are distinct.
/// O(m n d) time, O(n) memory.
/// @param X  (n, d) points, n >= 1, d >= 1, finite
/// @param m  number of points, 1 <= m <= n (fewer are returned if all are covered)
/// @param first  the starting row, 0 <= first < n
/// @throws std::invalid_argument on bad sizes, m outside [1, n], first outside [0, n),
///         NaN/inf in X, options.tolerance not finite or outside [0, 1), or kernel
///         values that are not finite (overflow)
template <class T>
std::vector<Index> farthest_point(const ConstRowRef<T>& X, const Kernel& kernel, Index m, Index first,
                                  const SamplingOptions& options = {}) {
  constexpr const char* what = "farthest_point";
  detail::check_pivot_args(X, m, options, what);
  const Index n = X.rows(), d = X.cols();
  if (first < 0 || first >= n) {
    throw std::invalid_argument("farthest_point: first=" + std::to_string(first) +
                                " is not a row of X (0 <= first < " + std::to_string(n) + ")");
  }
  detail::ChunkStats stats(detail::n_sampling_chunks(n));
  const std::vector<double> diag = detail::initial_diagonal(X, kernel, stats, options.n_threads, what);
  const double threshold = 2.0 * options.tolerance * stats.best().first;  // >= 0
  std::vector<double> dist(static_cast<std::size_t>(n), std::numeric_limits<double>::infinity());
  std::vector<double> column(static_cast<std::size_t>(n));
  std::vector<T> p(static_cast<std::size_t>(d));
  std::vector<Index> chosen;
  Index j = first;
  const int step_nt = detail::step_threads(options.n_threads, n);
  for (Index t = 0; t < m; ++t) {
    chosen.push_back(j);
    for (Index f = 0; f < d; ++f) p[std::size_t(f)] = X(j, f);
    const double djj = diag[std::size_t(j)];
    detail::for_each_chunk(n, detail::kSamplingChunk, step_nt, [&](Index c, Index b, Index e) {
      detail::kernel_column(X, p.data(), kernel, b, e, column.data() + b);
      for (Index i = b; i < e; ++i) {
        if (!std::isfinite(column[std::size_t(i)])) throw detail::kernel_overflow(what, "X");
        const double r = std::max(diag[std::size_t(i)] + djj - 2.0 * column[std::size_t(i)], 0.0);
        dist[std::size_t(i)] = std::min(dist[std::size_t(i)], r);
      }
      if (j >= b && j < e) dist[std::size_t(j)] = 0.0;
      stats.record(c, dist.data(), b, e);
    });
    const auto [far, arg] = stats.best();
    if (!(far > threshold)) break;
    detail::check_index(arg, n, what);
    j = arg;
  }
  return chosen;
}

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
