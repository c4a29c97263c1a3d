// CUDA kernels for the sums behind every fit, MMD and test: the fused weighted
// kernel sums K(A, B) W (k >= 1 weight columns, so the permutation test's B + 1
// label columns take one pass), the row sums K(A, B) 1, 1^T K 1 and the dense
// kernel matrix, for the radial kernels of kernels.hpp, float32 and float64.
//
// One source, two compilers:
//  * native applications include this header in a .cu file compiled by nvcc and
//    call the host launchers at the bottom (namespace nystrom_kme::cuda);
//  * the Python package reads this file from the installed package and compiles it
//    at run time with NVRTC (cupy.RawModule), so wheels need no CUDA toolkit. Under
//    NVRTC (__CUDACC_RTC__) the header includes nothing and defines no host code.
//
// Numerics. Every kernel value is computed from the coordinate differences
// (a_l - b_l) / sigma (no ||a||^2 + ||b||^2 - 2 a.b expansion, so no cancellation
// near the diagonal), mapped as in detail/simd_body/vector_math.inl, in the input's
// precision T. The sums over rows accumulate in float64 whatever T (for float32 the
// relative error of a sum is that of the kernel values, a few ulp of float32:
// ~1e-7 * (1 + d eps-growth), never the n eps of a float32 running sum).
//
// Determinism: no atomics. Pass 1 gives every (landmark row, row chunk, column
// group) one thread, which sums its chunk's rows in row order into a partial
// buffer; pass 2 adds the chunk partials of each output in chunk order with
// Neumaier compensation. The chunk count is a function of (n, m, k) only, so a
// result is the same on every run and every GPU.
#pragma once

#ifndef __CUDACC_RTC__
#include <cuda_runtime.h>

#include <cstddef>
#include <stdexcept>
#include <string>
#endif

namespace nystrom_kme {
namespace cuda {

/// Kernel codes (template arguments of the device code; Python passes the same
/// numbers). Laplacian is Matern 1/2.
enum KernelCode : int {
  kGaussian = 0,
  kLaplacian = 1,
  kMatern32 = 2,
  kMatern52 = 3,
  kInverseMultiquadric = 4,
};

/// Landmark rows (threads) per block, rows of B staged per step, coordinates
/// staged per step.
constexpr int kThreads = 128;
constexpr int kRowTile = 32;
constexpr int kDimTile = 16;

namespace detail {

__device__ __forceinline__ float nk_exp(float x) { return expf(x); }
__device__ __forceinline__ double nk_exp(double x) { return exp(x); }
__device__ __forceinline__ float nk_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double nk_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float nk_min(float a, float b) { return fminf(a, b); }
__device__ __forceinline__ double nk_min(double a, double b) { return fmin(a, b); }

template <class T>
struct Far;  // radial kernels vanish far away: overflowed distances give 0
template <>
struct Far<float> {
  static __device__ __forceinline__ float value() { return 1e36f; }
};
template <>
struct Far<double> {
  static __device__ __forceinline__ double value() { return 1e300; }
};

}  // namespace detail

/// The kernel value for the squared scaled distance v = ||a - b||^2 / sigma^2;
/// the same map as the CPU core's kernel_map. v = 0 gives exactly 1.
template <int Kind, class T>
__device__ __forceinline__ T kernel_map(T v) {
  using namespace detail;
  if (Kind == kGaussian) return nk_exp(v * T(-0.5));
  if (Kind == kLaplacian) return nk_exp(-nk_sqrt(v));
  if (Kind == kMatern32) {
    const T r = nk_sqrt(nk_min(v, Far<T>::value())) * T(1.7320508075688772);
    return (r + T(1)) * nk_exp(-r);
  }
  if (Kind == kMatern52) {
    const T r = nk_sqrt(nk_min(v, Far<T>::value())) * T(2.23606797749979);
    return (r * r * T(1.0 / 3.0) + r + T(1)) * nk_exp(-r);
  }
  return T(1) / nk_sqrt(v + T(1));  // inverse multiquadric
}

/// Pass 1. partial[chunk][i][c] = sum over the rows j of `chunk` of
/// k(a_i, b_j) * W[j][c] (W == nullptr: weight 1, one column), in row order.
/// A (m, d) and B (n, d) row-major in T; W (n, k) row-major float64.
/// Grid: (ceil(m / kThreads), n_chunks, ceil(k / KC)); block: kThreads threads.
/// Thread t owns landmark i = blockIdx.x * kThreads + t and the KC columns
/// blockIdx.z * KC .. + KC - 1 of its chunk's rows
/// [blockIdx.y * chunk_rows, min(n, (blockIdx.y + 1) * chunk_rows)).
template <int Kind, class T, int KC>
__global__ void __launch_bounds__(kThreads)
    weighted_sums_partial(const T* __restrict__ A, const T* __restrict__ B,
                          const double* __restrict__ W, double* __restrict__ partial,
                          long long m, long long n, int d, int k, long long chunk_rows,
                          T inv_bandwidth) {
  __shared__ T As[kDimTile][kThreads];    // landmark coordinates, transposed
  __shared__ T Bs[kRowTile][kDimTile];    // rows of B
  __shared__ double Ws[kRowTile][KC];     // their weights
  const int t = threadIdx.x;
  const long long i = (long long)blockIdx.x * kThreads + t;
  const long long row0 = (long long)blockIdx.y * chunk_rows;
  long long row_end = row0 + chunk_rows;
  if (row_end > n) row_end = n;
  const int c0 = blockIdx.z * KC;

  double acc[KC];
#pragma unroll
  for (int c = 0; c < KC; ++c) acc[c] = 0.0;

  for (long long r0 = row0; r0 < row_end; r0 += kRowTile) {
    const int rows = (int)((row_end - r0) < kRowTile ? (row_end - r0) : kRowTile);
    T dist[kRowTile];
#pragma unroll
    for (int j = 0; j < kRowTile; ++j) dist[j] = T(0);
    for (int l0 = 0; l0 < d; l0 += kDimTile) {
      const int dims = (d - l0) < kDimTile ? (d - l0) : kDimTile;
      __syncthreads();
      for (int l = 0; l < dims; ++l)  // coalesced enough: A is small and L2-resident
        As[l][t] = i < m ? A[i * d + l0 + l] * inv_bandwidth : T(0);
      for (int e = t; e < kRowTile * kDimTile; e += kThreads) {
        const int j = e / kDimTile, l = e % kDimTile;
        Bs[j][l] = (j < rows && l < dims) ? B[(r0 + j) * d + l0 + l] * inv_bandwidth : T(0);
      }
      __syncthreads();
      for (int l = 0; l < dims; ++l) {  // coordinates in order, as the CPU core adds them
        const T a = As[l][t];           // one landmark coordinate, reused for 32 rows
#pragma unroll
        for (int j = 0; j < kRowTile; ++j) {
          const T diff = a - Bs[j][l];  // a shared-memory broadcast
          dist[j] += diff * diff;
        }
      }
    }
    __syncthreads();
    for (int e = t; e < kRowTile * KC; e += kThreads) {
      const int j = e / KC, c = e % KC;
      double w = 0.0;
      if (j < rows && c0 + c < k) w = W == nullptr ? 1.0 : W[(r0 + j) * (long long)k + c0 + c];
      Ws[j][c] = w;
    }
    __syncthreads();
#pragma unroll
    for (int j = 0; j < kRowTile; ++j) {
      if (j < rows) {  // rows past the end: weight 0, skipped (no NaN from 0 * inf)
        const double v = (double)kernel_map<Kind, T>(dist[j]);
#pragma unroll
        for (int c = 0; c < KC; ++c) acc[c] += v * Ws[j][c];
      }
    }
  }
  if (i < m) {
    double* out = partial + ((long long)blockIdx.y * m + i) * k;
#pragma unroll
    for (int c = 0; c < KC; ++c)
      if (c0 + c < k) out[c0 + c] = acc[c];
  }
}

/// Pass 2. out[e] = sum over chunks of partial[chunk][e] (size entries per chunk),
/// in chunk order, Neumaier-compensated. One thread per output entry.
/// (A template, as every kernel here, so that the header may be included by several
/// translation units.)
template <class Real>
__global__ void reduce_partials(const Real* __restrict__ partial, Real* __restrict__ out,
                                long long size, int n_chunks) {
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= size) return;
  Real s = 0, comp = 0;
  for (int c = 0; c < n_chunks; ++c) {
    const Real x = partial[(long long)c * size + e];
    const Real t = s + x;
    comp += fabs(s) >= fabs(x) ? (s - t) + x : (x - t) + s;
    s = t;
  }
  out[e] = s + comp;
}

/// out[0] = sum of x[0..size) in a fixed order: one block of 256 threads, each a
/// strided Neumaier sum, then a fixed tree in shared memory. (1^T K 1 is the sum of
/// the row sums K(X, X) 1.)
template <class Real>
__global__ void __launch_bounds__(256)
    sum_fixed_order(const Real* __restrict__ x, Real* __restrict__ out, long long size) {
  __shared__ Real s_sum[256];
  __shared__ Real s_comp[256];
  const int t = threadIdx.x;
  Real s = 0, comp = 0;
  for (long long e = t; e < size; e += 256) {
    const Real v = x[e];
    const Real u = s + v;
    comp += fabs(s) >= fabs(v) ? (s - u) + v : (v - u) + s;
    s = u;
  }
  s_sum[t] = s;
  s_comp[t] = comp;
  __syncthreads();
  for (int half = 128; half > 0; half >>= 1) {
    if (t < half) {
      const Real a = s_sum[t], b = s_sum[t + half];
      const Real u = a + b;
      s_comp[t] += s_comp[t + half] + (fabs(a) >= fabs(b) ? (a - u) + b : (b - u) + a);
      s_sum[t] = u;
    }
    __syncthreads();
  }
  if (t == 0) out[0] = s_sum[0] + s_comp[0];
}

/// out[i][j] = k(a_i, b_j), (m, n) row-major float64 (the landmarks' K_m with A = B).
/// Grid: (ceil(n / 16), ceil(m / 16)); block: (16, 16).
template <int Kind, class T>
__global__ void kernel_matrix(const T* __restrict__ A, const T* __restrict__ B,
                              double* __restrict__ out, long long m, long long n, int d,
                              T inv_bandwidth) {
  const long long j = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  const long long i = (long long)blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= m || j >= n) return;
  T s = T(0);
  for (int l = 0; l < d; ++l) {
    const T diff = A[i * d + l] * inv_bandwidth - B[j * d + l] * inv_bandwidth;
    s += diff * diff;
  }
  out[i * n + j] = (double)kernel_map<Kind, T>(s);
}

/// Columns per thread for k weight columns: 1, 8 or 32 (the instantiated KC).
inline __host__ __device__ int columns_per_thread(int k) { return k <= 1 ? 1 : (k <= 8 ? 8 : 32); }

/// Row chunks of pass 1 for (n, m, k): enough blocks to fill a large GPU, at least
/// 2048 rows a chunk, and a partial buffer of at most ~64 MiB. Depends on the sizes
/// only (never on the device), so results are reproducible across GPUs.
inline __host__ __device__ long long n_row_chunks(long long n, long long m, int k) {
  const long long max_by_rows = (n + 2047) / 2048;
  long long chunks = 256;
  const long long budget = (64LL << 20) / 8;  // doubles
  const long long per_chunk = m * (long long)k;
  if (per_chunk > 0 && chunks * per_chunk > budget) chunks = budget / per_chunk;
  if (chunks > max_by_rows) chunks = max_by_rows;
  return chunks < 1 ? 1 : chunks;
}

#ifndef __CUDACC_RTC__

namespace detail {

inline void check(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw std::runtime_error(std::string("nystrom_kme::cuda: ") + what + ": " +
                             cudaGetErrorString(err));
}

template <int Kind, class T>
void launch_partial(const T* A, const T* B, const double* W, double* partial, long long m,
                    long long n, int d, int k, long long chunk_rows, long long n_chunks, T inv_bw,
                    cudaStream_t stream) {
  const int kc = columns_per_thread(k);
  const dim3 grid((unsigned)((m + kThreads - 1) / kThreads), (unsigned)n_chunks,
                  (unsigned)((k + kc - 1) / kc));
  if (kc == 1)
    weighted_sums_partial<Kind, T, 1><<<grid, kThreads, 0, stream>>>(A, B, W, partial, m, n, d, k,
                                                                     chunk_rows, inv_bw);
  else if (kc == 8)
    weighted_sums_partial<Kind, T, 8><<<grid, kThreads, 0, stream>>>(A, B, W, partial, m, n, d, k,
                                                                     chunk_rows, inv_bw);
  else
    weighted_sums_partial<Kind, T, 32><<<grid, kThreads, 0, stream>>>(A, B, W, partial, m, n, d, k,
                                                                      chunk_rows, inv_bw);
}

}  // namespace detail

/// Bytes of device workspace that weighted_kernel_sums needs for (m, n, k).
inline std::size_t workspace_bytes(long long m, long long n, int k) {
  return (std::size_t)n_row_chunks(n, m, k) * (std::size_t)m * (std::size_t)k * sizeof(double);
}

/// out (m, k) row-major float64 = K(A, B) W on the device (W == nullptr: k must be 1,
/// the row sums K(A, B) 1). A (m, d), B (n, d) row-major device arrays in T (float or
/// double); W (n, k) row-major float64; workspace of workspace_bytes(m, n, k) bytes.
/// Asynchronous on `stream`; deterministic (see the top of this file).
template <class T>
void weighted_kernel_sums(KernelCode kind, T bandwidth, const T* A, long long m, const T* B,
                          long long n, int d, const double* W, int k, double* out,
                          double* workspace, cudaStream_t stream = 0) {
  if (m < 0 || n < 0 || d < 1 || k < 1 || (W == nullptr && k != 1) || !(bandwidth > T(0)))
    throw std::invalid_argument("nystrom_kme::cuda::weighted_kernel_sums: bad arguments");
  if (m == 0) return;
  if (n == 0) {
    detail::check(cudaMemsetAsync(out, 0, (std::size_t)m * k * sizeof(double), stream), "memset");
    return;
  }
  const long long n_chunks = n_row_chunks(n, m, k);
  const long long chunk_rows = (n + n_chunks - 1) / n_chunks;
  const T inv_bw = T(1) / bandwidth;
  switch (kind) {
    case kGaussian:
      detail::launch_partial<kGaussian, T>(A, B, W, workspace, m, n, d, k, chunk_rows, n_chunks,
                                           inv_bw, stream);
      break;
    case kLaplacian:
      detail::launch_partial<kLaplacian, T>(A, B, W, workspace, m, n, d, k, chunk_rows, n_chunks,
                                            inv_bw, stream);
      break;
    case kMatern32:
      detail::launch_partial<kMatern32, T>(A, B, W, workspace, m, n, d, k, chunk_rows, n_chunks,
                                           inv_bw, stream);
      break;
    case kMatern52:
      detail::launch_partial<kMatern52, T>(A, B, W, workspace, m, n, d, k, chunk_rows, n_chunks,
                                           inv_bw, stream);
      break;
    case kInverseMultiquadric:
      detail::launch_partial<kInverseMultiquadric, T>(A, B, W, workspace, m, n, d, k, chunk_rows,
                                                      n_chunks, inv_bw, stream);
      break;
    default:
      throw std::invalid_argument("nystrom_kme::cuda: not a radial kernel code");
  }
  detail::check(cudaGetLastError(), "weighted_sums_partial");
  const long long size = m * k;
  reduce_partials<double><<<(unsigned)((size + 255) / 256), 256, 0, stream>>>(workspace, out, size,
                                                                      (int)n_chunks);
  detail::check(cudaGetLastError(), "reduce_partials");
}

/// out[0] = 1^T K(X, X) 1 on the device: row_sums (n doubles) receives K(X, X) 1,
/// workspace of workspace_bytes(n, n, 1) bytes.
template <class T>
void total_kernel_sum(KernelCode kind, T bandwidth, const T* X, long long n, int d,
                      double* row_sums, double* out, double* workspace, cudaStream_t stream = 0) {
  weighted_kernel_sums<T>(kind, bandwidth, X, n, X, n, d, nullptr, 1, row_sums, workspace, stream);
  sum_fixed_order<double><<<1, 256, 0, stream>>>(row_sums, out, n);
  detail::check(cudaGetLastError(), "sum_fixed_order");
}

#endif  // __CUDACC_RTC__

}  // namespace cuda
}  // namespace nystrom_kme
