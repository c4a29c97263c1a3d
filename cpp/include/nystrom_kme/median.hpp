// The median heuristic for kernel bandwidths: the median Euclidean distance between
// the distinct pairs of rows of a (small) sample.
//
// Every distance is computed from direct differences (no |x|^2 + |y|^2 - 2 x.y, so no
// cancellation) on the data divided by a power of two near its largest magnitude (an
// exact rescaling: no overflow of the squares near 1e154, no underflow near 1e-170).
// The squares are summed in numpy's pairwise order and the median is numpy's (the mean
// of the two middle values for an even count), so the result has the bits of
//     scale * numpy.median(numpy.sqrt(((Z[j] - Z[i]) ** 2).sum()) over i < j)
// with Z = X / scale in float64: what the Python package computed before this header.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <nystrom_kme/detail/checks.hpp>
#include <nystrom_kme/detail/format.hpp>
#include <nystrom_kme/detail/memory.hpp>
#include <nystrom_kme/detail/parallel.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme {

namespace detail {

/// numpy's pairwise summation of term(i) for i in [begin, begin + n) (umath's
/// pairwise_sum: a plain loop below 8 terms, eight interleaved accumulators up to 128,
/// halves at multiples of 8 above), the order numpy's sum(axis=-1) uses for a
/// contiguous float64 row. The terms are computed on the fly (no array of them).
template <class Term>
double numpy_pairwise_sum(const Term& term, Index begin, Index n) {
  if (n < 8) {
    double res = 0.0;
    for (Index i = 0; i < n; ++i) res += term(begin + i);
    return res;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = term(begin + j);
    Index i = 8;
    for (; i < n - n % 8; i += 8)
      for (int j = 0; j < 8; ++j) r[j] += term(begin + i + j);
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += term(begin + i);
    return res;
  }
  Index n2 = n / 2;
  n2 -= n2 % 8;
  return numpy_pairwise_sum(term, begin, n2) + numpy_pairwise_sum(term, begin + n2, n - n2);
}

/// Pairs handled per thread at least (~0.1 ms): smaller calls run on one thread.
inline constexpr double kMedianPairWorkPerThread = 1e5;

}  // namespace detail

namespace detail {

/// The squared distances of the k (k - 1) / 2 pairs (i < j, row-major as scipy's pdist)
/// of the rows of X divided by ``scale`` (set here: a power of two near their largest
/// magnitude). The checks and arithmetic of the file comment; ``caller`` names the
/// public function in errors.
template <class T>
std::vector<double> scaled_squared_distances(const ConstRowRef<T>& X, int n_threads, const char* caller,
                                             double& scale) {
  const Index k = X.rows(), d = X.cols();
  if (k < 2 || d < 1) {
    throw std::invalid_argument(std::string(caller) + ": X needs at least 2 rows and 1 column, got (" +
                                std::to_string(k) + ", " + std::to_string(d) + ")");
  }
  const double n_pairs = double(k) * double(k - 1) / 2.0;
  const double bytes = (n_pairs + double(k) * double(d)) * double(sizeof(double));
  const double memory = physical_memory_bytes();
  if (bytes > double(std::numeric_limits<std::ptrdiff_t>::max()) || (memory > 0 && bytes > memory)) {
    throw std::length_error(std::string(caller) + ": the " + format_number(n_pairs) + " pairwise distances of " +
                            std::to_string(k) + " rows need " + format_number(bytes) + " bytes; use fewer rows");
  }
  check_finite(X, "X");
  double largest = 0.0;
  for (Index i = 0; i < k; ++i)
    for (Index f = 0; f < d; ++f) largest = std::max(largest, std::abs(double(X(i, f))));
  // 2^floor(log2(largest)), as Python's 2.0 ** math.floor(math.log2(largest)) (the same
  // libm log2): the same scale, so the same bits.
  const int exponent = largest > 0 ? int(std::floor(std::log2(largest))) : 0;
  scale = std::ldexp(1.0, exponent);
  RowMatrixXd Z(k, d);
  for (Index i = 0; i < k; ++i)
    for (Index f = 0; f < d; ++f) Z(i, f) = double(X(i, f)) / scale;

  const Index count = k * (k - 1) / 2;
  std::vector<double> squared(static_cast<std::size_t>(count));
  const double work = n_pairs * double(d);
  const int threads = work < kMedianPairWorkPerThread ? 1 : n_threads;
  // Task i: the pairs (i, j > i), stored after those of rows 0..i-1.
  parallel_tasks(k - 1, threads, [&](Index i) {
    double* out = squared.data() + (i * (k - 1) - i * (i - 1) / 2);
    const double* zi = Z.row(i).data();
    for (Index j = i + 1; j < k; ++j) {
      const double* zj = Z.row(j).data();
      const auto term = [zi, zj](Index f) {
        const double t = zj[f] - zi[f];
        return t * t;
      };
      out[j - i - 1] = numpy_pairwise_sum(term, 0, d);
    }
  });
  return squared;
}

}  // namespace detail

/// Median Euclidean distance between the k (k - 1) / 2 distinct pairs of rows of X
/// (the median heuristic's bandwidth; see the file comment for the exact arithmetic).
/// float32 rows are converted to float64 first. The pairs are computed in parallel
/// (rows of pairs as tasks) and each distance by one fixed sequence of operations, so
/// the result does not depend on the thread count. O(k^2 d) time, k (k - 1) / 2
/// doubles of memory (4 MB at k = 1000).
/// @param X (k, d) rows, k >= 2, d >= 1, finite
/// @param n_threads OpenMP threads (<= 0: the default)
/// @return the median distance in the units of X; 0 when most pairs are identical rows
/// @throws std::invalid_argument for fewer than 2 rows, no column, NaN or inf
/// @throws std::length_error when the k (k - 1) / 2 distances exceed this machine's memory
/// @throws Interrupted when the interrupt check (set_interrupt_check) asks to stop
template <class T>
double median_pairwise_distance(const ConstRowRef<T>& X, int n_threads = 0) {
  double scale = 1.0;
  std::vector<double> squared = detail::scaled_squared_distances(X, n_threads, "median_pairwise_distance", scale);
  const std::size_t count = squared.size();
  // The middle order statistics (sqrt is monotone: they are those of the distances).
  const std::size_t upper = count / 2;
  std::nth_element(squared.begin(), squared.begin() + std::ptrdiff_t(upper), squared.end());
  double median = std::sqrt(squared[upper]);
  if (count % 2 == 0) {
    const double lower = std::sqrt(*std::max_element(squared.begin(), squared.begin() + std::ptrdiff_t(upper)));
    median = (lower + median) / 2.0;  // numpy.median: the mean of the two middle values
  }
  return median * scale;
}

/// The k (k - 1) / 2 Euclidean distances between distinct rows of X, pair (i, j > i)
/// after those of rows 0..i-1 (scipy's pdist order), by the arithmetic of the file
/// comment: sqrt of numpy's pairwise sum of the rescaled squares, times the scale. What
/// the bandwidth grids of kernel collections read their quantiles from.
/// @param X (k, d) rows, k >= 2, d >= 1, finite
/// @param n_threads OpenMP threads (<= 0: the default)
/// @throws as median_pairwise_distance
template <class T>
std::vector<double> pairwise_distances(const ConstRowRef<T>& X, int n_threads = 0) {
  double scale = 1.0;
  std::vector<double> out = detail::scaled_squared_distances(X, n_threads, "pairwise_distances", scale);
  for (double& v : out) v = std::sqrt(v) * scale;
  return out;
}

}  // namespace nystrom_kme
