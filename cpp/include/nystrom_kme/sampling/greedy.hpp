// Greedy mean-matching samplers, one row per step by an argmax over the rows:
// kernel herding and farthest-point (incoherence) selection. O(n) memory each.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Core>

#include <nystrom_kme/detail/checks.hpp>
#include <nystrom_kme/detail/kernel_rows.hpp>
#include <nystrom_kme/detail/parallel.hpp>
#include <nystrom_kme/detail/sampling_common.hpp>
#include <nystrom_kme/kernels.hpp>
#include <nystrom_kme/sampling/types.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme {

/// kernel_herding with allow_repeats refuses more than this many steps per candidate
/// (and more than kMaxHerdingSteps in all): beyond that the run time O(m n d) is absurd.
inline constexpr Index kMaxHerdingStepsPerCandidate = 1000;
inline constexpr Index kMaxHerdingSteps = Index(1) << 31;

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
  detail::check_pivot_args(X, m, options.tolerance, what);
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

}  // namespace nystrom_kme
