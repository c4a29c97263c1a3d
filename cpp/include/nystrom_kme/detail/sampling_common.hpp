// Building blocks of the landmark samplers: the fixed partition of the rows into
// chunks with per-chunk statistics combined in order (so reductions do not depend on
// the thread count), a portable uniform random number, the residual diagonal the
// pivoted samplers start from, and the checks of their arguments.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <nystrom_kme/detail/checks.hpp>
#include <nystrom_kme/detail/kernel_rows.hpp>
#include <nystrom_kme/detail/parallel.hpp>
#include <nystrom_kme/kernels.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme::detail {

/// Rows per chunk of the fixed partition used by every per-pivot loop
/// (for_each_chunk(n, kSamplingChunk, ...), detail/parallel.hpp).
inline constexpr Index kSamplingChunk = 2048;

inline Index n_sampling_chunks(Index n) { return (n + kSamplingChunk - 1) / kSamplingChunk; }

/// Rows per thread below which a per-step loop (one kernel column, O(rows d)) runs on
/// fewer threads: such a step takes tens of microseconds, less than waking a team of
/// threads on a busy machine, and a loop of m steps opens m parallel regions.
inline constexpr Index kMinRowsPerThread = Index(1) << 15;

/// The threads for a per-step loop over n rows: resolve_threads(n_threads), at most
/// one per kMinRowsPerThread rows, at least 1. The results never depend on it.
inline int step_threads(int n_threads, Index n) {
  const Index by_rows = std::max<Index>(1, n / kMinRowsPerThread);
  return static_cast<int>(std::min<Index>(resolve_threads(n_threads), by_rows));
}

/// SplitMix64 (Steele, Lea, Flood 2014): small, fast, and the same stream on every
/// platform, unlike the std distributions.
class SplitMix64 {
 public:
  explicit SplitMix64(std::uint64_t seed) : state_(seed) {}
  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  /// Uniform in [0, 1) with 53 random bits.
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }

 private:
  std::uint64_t state_;
};

/// Per-chunk sum and (first) argmax of a non-negative vector, combined in chunk
/// order: identical for every thread count.
struct ChunkStats {
  std::vector<double> sum;
  std::vector<double> max;
  std::vector<Index> argmax;
  explicit ChunkStats(Index n_chunks)
      : sum(static_cast<std::size_t>(n_chunks), 0.0), max(static_cast<std::size_t>(n_chunks), -1.0),
        argmax(static_cast<std::size_t>(n_chunks), -1) {}

  void record(Index c, const double* v, Index begin, Index end) {
    double s = 0.0, best = -1.0;
    Index arg = -1;
    for (Index i = begin; i < end; ++i) {
      s += v[i];
      if (v[i] > best) {
        best = v[i];
        arg = i;
      }
    }
    sum[std::size_t(c)] = s;
    max[std::size_t(c)] = best;
    argmax[std::size_t(c)] = arg;
  }
  double total() const {
    double s = 0.0;
    for (double x : sum) s += x;
    return s;
  }
  /// Largest entry and its smallest index.
  std::pair<double, Index> best() const {
    double b = -1.0;
    Index arg = -1;
    for (std::size_t c = 0; c < max.size(); ++c) {
      if (max[c] > b) {
        b = max[c];
        arg = argmax[c];
      }
    }
    return {b, arg};
  }
};

/// Index i drawn with probability v_i / sum(v) (v >= 0, sum > 0), by inverse
/// transform over the chunk sums then within one chunk: O(n / chunk + chunk).
/// Always returns an index with v_i > 0.
/// @throws std::runtime_error when no entry of v is > 0 (the callers only draw while one
///         is, so this is a defensive check: a -1 index is never returned)
inline Index sample_proportional(const std::vector<double>& v, const ChunkStats& stats,
                                 SplitMix64& gen) {
  const Index n = Index(v.size());
  const double total = stats.total();
  double target = gen.uniform() * total;
  Index c = 0;
  const Index n_chunks = Index(stats.sum.size());
  for (; c < n_chunks - 1; ++c) {
    if (target < stats.sum[std::size_t(c)]) break;
    target -= stats.sum[std::size_t(c)];
  }
  Index last_positive = -1;
  for (; c < n_chunks; ++c) {  // usually one chunk; rounding may push us one further
    const Index begin = c * kSamplingChunk, end = std::min(n, begin + kSamplingChunk);
    double acc = 0.0;
    for (Index i = begin; i < end; ++i) {
      if (v[std::size_t(i)] > 0.0) {
        last_positive = i;
        acc += v[std::size_t(i)];
        if (acc > target) return i;
      }
    }
    target -= acc;
  }
  if (last_positive < 0) {  // rounding at the very end: take the largest-index positive entry
    for (Index i = n - 1; i >= 0; --i) {
      if (v[std::size_t(i)] > 0.0) return i;
    }
    throw std::runtime_error("internal error: sampling from a residual with no positive entry");
  }
  return last_positive;
}

/// @throws std::invalid_argument for n < 1, d < 1 or m < 1, naming `what`
inline void check_sampling_args(Index n, Index d, Index m, const char* what) {
  if (n < 1 || d < 1) {
    throw std::invalid_argument(std::string(what) + ": X must have at least one row and column, got (" +
                                std::to_string(n) + ", " + std::to_string(d) + ")");
  }
  if (m < 1) {
    throw std::invalid_argument(std::string(what) + ": n_landmarks must be >= 1, got " +
                                std::to_string(m));
  }
}

/// The early-stopping tolerance of SamplingOptions: finite and in [0, 1). A negative or
/// NaN value would let the loops pick points whose residual is zero (or stop at once).
/// @throws std::invalid_argument naming `what` otherwise
inline void check_tolerance(double tolerance, const char* what) {
  if (!std::isfinite(tolerance) || !(tolerance >= 0.0) || !(tolerance < 1.0)) {
    char got[32];
    std::snprintf(got, sizeof got, "%.6g", tolerance);
    throw std::invalid_argument(std::string(what) + ": tolerance must be a finite number in [0, 1), got " +
                                got);
  }
}

/// Thrown when kernel values of finite data are not finite (they overflow float64,
/// e.g. a linear or polynomial kernel on huge values).
inline std::invalid_argument kernel_overflow(const char* what, const char* data) {
  return std::invalid_argument(std::string(what) + ": the kernel values of " + data +
                               " are not finite (they overflow float64): rescale the data or "
                               "increase the bandwidth");
}

/// The arguments of the pivoted samplers: sizes, tolerance, m <= n, finite X.
/// @throws std::invalid_argument naming `what` otherwise
template <class T>
void check_pivot_args(const ConstRowRef<T>& X, Index m, double tolerance, const char* what) {
  check_sampling_args(X.rows(), X.cols(), m, what);
  check_tolerance(tolerance, what);
  if (m > X.rows()) {
    throw std::invalid_argument(std::string(what) + ": n_landmarks=" + std::to_string(m) +
                                " exceeds the number of rows of X, " + std::to_string(X.rows()));
  }
  check_finite(X, "X");
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

}  // namespace nystrom_kme::detail
