// The GPU path's kernel sums: the fused weighted kernel sums K(A, B) W for k >= 1
// weight columns (the permutation test's B + 1 label columns take one pass), the
// reduction of their chunk partials, 1^T K 1, the dense kernel matrix, and the host
// launchers of native applications; for the radial kernels, float32 and float64.
//
// The headers of the GPU path, one job each (this one includes the others):
//   kernel_map.cuh    kernel codes, the accurate map, the fast float32 map
//   row_sums.cuh      fused row sums K(A, B) w (one column): small d, tensor cores
//   split_labels.cuh  the random splits' label weights, as RandomSplits draws them
//   bin_sums.cuh      the aggregated test's sums by bins of rows, several kernels
//   kernel_sums.cuh   this file
//
// One source, two compilers:
//  * native applications include this header in a .cu file compiled by nvcc and
//    call the host launchers at the bottom (namespace nystrom_kme::cuda);
//  * the Python package compiles the headers at run time with NVRTC
//    (cupy.RawModule), so wheels need no CUDA toolkit. Under NVRTC (__CUDACC_RTC__)
//    the headers include nothing and define no host code: the package compiles
//    their concatenation, in the order of nystrom_kme.cuda.program.SOURCES.
//
// Numerics. weighted_sums_partial computes every kernel value from the coordinate
// differences (a_l - b_l) / sigma (no cancellation near the diagonal), mapped as in
// detail/simd_body/vector_math.inl, in the input's precision T, and accumulates the
// sums over rows in float64 whatever T (for float32 the relative error of a sum is
// that of the kernel values, a few ulp of float32, never the n eps of a float32
// running sum). The row sums (row_sums.cuh) say how they differ.
//
// Determinism: no atomics. Pass 1 gives every (landmark row, row chunk, column
// group) one thread, which sums its chunk's rows in row order into a partial
// buffer; pass 2 adds the chunk partials of each output in chunk order with
// Neumaier compensation. The chunk count is a function of (n, m, k) only, so a
// result is the same on every run and every GPU.
#pragma once

#ifndef __CUDACC_RTC__
#include <cuda_runtime.h>

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>

#include <nystrom_kme/cuda/bin_sums.cuh>
#include <nystrom_kme/cuda/kernel_map.cuh>
#include <nystrom_kme/cuda/row_sums.cuh>
#include <nystrom_kme/cuda/split_labels.cuh>
#endif

namespace nystrom_kme {
namespace cuda {

/// Landmark rows (threads) per block, rows of B staged per step, coordinates
/// staged per step.
constexpr int kThreads = 128;
constexpr int kRowTile = 32;
constexpr int kDimTile = 16;

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
        As[l][t] = i < m ? detail::mul_rn(A[i * d + l0 + l], inv_bandwidth) : T(0);
      for (int e = t; e < kRowTile * kDimTile; e += kThreads) {
        const int j = e / kDimTile, l = e % kDimTile;
        Bs[j][l] = (j < rows && l < dims) ? detail::mul_rn(B[(r0 + j) * d + l0 + l], inv_bandwidth) : T(0);
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
    // scaled and rounded on their own (no contraction into a fused multiply-add), so
    // that equal points give exactly 0 and k = 1, as the staged kernels do
    const T diff = detail::mul_rn(A[i * d + l], inv_bandwidth) - detail::mul_rn(B[j * d + l], inv_bandwidth);
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

/// row_sums_small<Kind, T, D> for the run-time d = D (D from Dmin to kSmallMaxDim).
template <int Kind, class T, int D = 1>
void launch_small(int d, const T* A, const T* B, const double* w, double* partial, long long m, long long n,
                  long long chunk_rows, long long n_chunks, T scale, cudaStream_t stream) {
  if (d == D) {
    const dim3 grid((unsigned)((m + kSmallThreads * kSmallLandmarks - 1) / (kSmallThreads * kSmallLandmarks)),
                    (unsigned)n_chunks);
    row_sums_small<Kind, T, D><<<grid, kSmallThreads, 0, stream>>>(A, B, w, partial, m, n, chunk_rows, scale);
  } else if constexpr (D < kSmallMaxDim) {
    launch_small<Kind, T, D + 1>(d, A, B, w, partial, m, n, chunk_rows, n_chunks, scale, stream);
  }
}

/// The launches of one kernel: row_sums_small for one weight column at d <= kSmallMaxDim,
/// weighted_sums_partial otherwise; the partials' chunk count. (The Python package also
/// runs row_sums_tc and, for large d, cuBLAS: nystrom_kme.cuda.program.row_sums_path.)
template <int Kind, class T>
long long launch_sums(const T* A, const T* B, const double* W, double* partial, long long m, long long n, int d,
                      int k, T bandwidth, cudaStream_t stream) {
  if (k == 1 && d <= kSmallMaxDim) {
    const long long blocks = (m + kSmallThreads * kSmallLandmarks - 1) / (kSmallThreads * kSmallLandmarks);
    const long long n_chunks = row_sum_chunks(n, m, blocks);
    const long long chunk_rows = (n + n_chunks - 1) / n_chunks;
    const double factor = sizeof(T) == 4 ? std::sqrt(fast_map_factor<Kind>()) : 1.0;  // fast_map's units
    launch_small<Kind, T>(d, A, B, W, partial, m, n, chunk_rows, n_chunks, T(factor / double(bandwidth)), stream);
    check(cudaGetLastError(), "row_sums_small");
    return n_chunks;
  }
  const long long n_chunks = n_row_chunks(n, m, k);
  const long long chunk_rows = (n + n_chunks - 1) / n_chunks;
  launch_partial<Kind, T>(A, B, W, partial, m, n, d, k, chunk_rows, n_chunks, T(1) / bandwidth, stream);
  check(cudaGetLastError(), "weighted_sums_partial");
  return n_chunks;
}

}  // namespace detail

/// Bytes of device workspace that weighted_kernel_sums needs for (m, n, k).
inline std::size_t workspace_bytes(long long m, long long n, int k) {
  long long entries = n_row_chunks(n, m, k) * m * (long long)k;
  if (k == 1) {
    const long long blocks = (m + kSmallThreads * kSmallLandmarks - 1) / (kSmallThreads * kSmallLandmarks);
    const long long small = row_sum_chunks(n, m, blocks) * m;
    if (small > entries) entries = small;
  }
  return (std::size_t)entries * sizeof(double);
}

namespace detail {

/// launch_sums for the visited kind (a host functor of visit_kind), refusing by name a
/// kind the GPU path does not compute.
template <class T>
struct LaunchSums {
  const T *A, *B;
  const double* W;
  double* workspace;
  long long m, n;
  int d, k;
  T bandwidth;
  cudaStream_t stream;
  template <class Tag>
  long long operator()(Tag) const {
    constexpr KernelKind K = Tag::kind;
    if constexpr (on_gpu<K>()) {
      return launch_sums<int(K), T>(A, B, W, workspace, m, n, d, k, bandwidth, stream);
    } else {
      throw std::invalid_argument(std::string("nystrom_kme::cuda: the GPU path does not compute the ") +
                                  Formula<K>::name + " kernel");
    }
  }
};

struct NotAKernelCode {
  long long operator()() const { throw std::invalid_argument("nystrom_kme::cuda: not a kernel code"); }
};

}  // namespace detail

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
  const long long n_chunks =
      visit_kind(KernelKind(kind), detail::LaunchSums<T>{A, B, W, workspace, m, n, d, k, bandwidth, stream},
                 detail::NotAKernelCode{});
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
