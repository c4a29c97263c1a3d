// The label weights of the permutation test's random splits, generated on the GPU:
// bit for bit those of RandomSplits (random_splits.hpp) on the CPU, so that a test
// on CUDA arrays uses the splits nystrom_kme.random_splits replays. Column b >= 1
// is selection sampling (Knuth's Algorithm S) driven by its own SplitMix64 stream;
// column 0 the observed split. Integer and exactly rounded float64 arithmetic only.
#pragma once

namespace nystrom_kme {
namespace cuda {

/// SplitMix64's increment.
constexpr unsigned long long kSplitMixGamma = 0x9E3779B97F4A7C15ULL;

namespace detail {

/// SplitMix64's output function of a state (Steele, Lea, Flood 2014).
__device__ __forceinline__ unsigned long long splitmix_output(unsigned long long z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

}  // namespace detail

/// Column b's SplitMix64 state and its count of rows still to assign to the first
/// sample, at row 0: what RandomSplits' constructor sets. One thread per column.
/// (Real is double: a template, as every kernel here, so that several translation
/// units may include the header.)
template <class Real>
__global__ void split_labels_start(unsigned long long seed, unsigned long long* __restrict__ state,
                                   Real* __restrict__ needed, long long columns, long long n1) {
  const long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= columns) return;
  const unsigned long long s = seed ^ (0xD1B54A32D192ED03ULL * (unsigned long long)(b + 1));
  state[b] = detail::splitmix_output(s + kSplitMixGamma);  // SplitMix64(s).next()
  needed[b] = (Real)n1;
}

/// W (rows, columns) row-major float64 = the label weights of pooled rows [position,
/// position + rows): +1/n1 where the row joins the first sample, else -1/n2. Advances
/// each column's state: launches must cover the rows in order. One thread per column
/// (column b draws 52-bit uniforms u and selects the row when u (rows left) < needed).
template <class Real>
__global__ void split_labels_next(unsigned long long* __restrict__ state, Real* __restrict__ needed,
                                  Real* __restrict__ W, long long columns, long long n1, long long n2,
                                  long long position, long long rows) {
  const long long b = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (b >= columns) return;
  const double plus = 1.0 / (double)n1, minus = -1.0 / (double)n2;
  if (b == 0) {  // the observed split: the first n1 rows
    for (long long i = 0; i < rows; ++i) W[i * columns] = position + i < n1 ? plus : minus;
    return;
  }
  unsigned long long s = state[b];
  double need = needed[b];
  const long long left0 = n1 + n2 - position;
#pragma unroll 4
  for (long long i = 0; i < rows; ++i) {
    s += kSplitMixGamma;
    const unsigned long long z = detail::splitmix_output(s);
    // 52 random mantissa bits under the exponent of 1.0: a uniform in [0, 1), exactly
    const double u = __longlong_as_double((long long)((z >> 12) | 0x3FF0000000000000ULL)) - 1.0;
    const bool first = __dmul_rn(u, (double)(left0 - i)) < need;
    if (first) need -= 1.0;
    W[i * columns + b] = first ? plus : minus;
  }
  state[b] = s;
  needed[b] = need;
}

}  // namespace cuda
}  // namespace nystrom_kme
