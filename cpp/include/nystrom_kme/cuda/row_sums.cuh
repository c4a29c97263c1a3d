// Fused row sums K(A, B) w on the GPU (one weight column: the fit, the evaluation,
// 1^T K 1), the hot path of the GPU core:
//  * row_sums_small<Kind, T, D>, d <= kSmallMaxDim, float32 and float64: each thread
//    keeps kSmallLandmarks landmarks in registers and streams rows of B through shared
//    memory; distances from coordinate differences (no cancellation), the map in
//    registers (float32: the special-function unit, fast_map), float32 partial sums
//    of kSmallStage rows added to float64 totals;
//  * row_sums_tc<Kind>, float32 at moderate d: the inner products on the tensor
//    cores (mma.sync m16n8k8 TF32, each operand split into two TF32 parts,
//    a_hi b_hi + a_hi b_lo + a_lo b_hi, which keeps float32 accuracy), squared
//    distances from the centred expansion ||a||^2 + ||b||^2 - 2 a.b (recomputed where
//    it cancels), the map and the sums in registers;
//  * for large d the Python package multiplies centred, split operands with cuBLAS
//    (centre_split) and maps and sums each block of the product (gemm_row_sums).
// All write one float64 partial per (row chunk, landmark); reduce_partials
// (kernel_sums.cuh) adds the chunks in order. No atomics: deterministic.
#pragma once

#ifndef __CUDACC_RTC__
#include <nystrom_kme/cuda/kernel_map.cuh>
#endif

namespace nystrom_kme {
namespace cuda {

/// row_sums_small: threads per block, landmarks per thread, rows of B per stage,
/// largest d (one instantiation per d).
constexpr int kSmallThreads = 128;
constexpr int kSmallLandmarks = 2;
constexpr int kSmallStage = 64;
constexpr int kSmallMaxDim = 16;

/// row_sums_tc: 4 warps (2 x 2, each 32 landmarks x 32 rows), block tiles of 64
/// landmarks x 64 rows x 32 coordinates, shared-memory rows padded by 4 floats
/// (conflict-free fragment loads).
constexpr int kTcThreads = 128;
constexpr int kTcTile = 64;
constexpr int kTcDepth = 32;
constexpr int kTcPad = 4;

/// The expansion ||a||^2 + ||b||^2 - 2<a,b> (row_sums_tc, gemm_row_sums) is recomputed
/// from coordinate differences below this fraction of ||a||^2 + ||b||^2, as on the CPU.
constexpr double kCancellation = 1e-6;

namespace detail {

/// The map of the fused row sums: float32 through fast_map (coordinates scaled by
/// sqrt(fast_map_factor) / sigma), float64 through the accurate kernel_map.
template <int Kind, class T>
struct RowMap;
template <int Kind>
struct RowMap<Kind, float> {
  static __device__ __forceinline__ float apply(float v) { return fast_map<Kind>(v); }
};
template <int Kind>
struct RowMap<Kind, double> {
  static __device__ __forceinline__ double apply(double v) { return kernel_map<Kind, double>(v); }
};

__device__ __forceinline__ unsigned to_tf32(float x) {
  unsigned y;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(y) : "f"(x));
  return y;
}

/// c += a b for one m16n8k8 TF32 tile (PTX fragment layouts: a0 (g, q), a1 (g + 8, q),
/// a2 (g, q + 4), a3 (g + 8, q + 4); b0 (k = q, n = g), b1 (k = q + 4, n = g);
/// c0 (g, 2q), c1 (g, 2q + 1), c2 (g + 8, 2q), c3 (g + 8, 2q + 1); g = lane / 4, q = lane % 4).
__device__ __forceinline__ void mma_tf32(float (&c)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/// The expansion's squared distance ||a||^2 + ||b||^2 - 2 <a, b> (centred norms an, bn
/// and inner product g), or, where it fell below kCancellation (an + bn) and so lost
/// most of its digits (near-duplicates), the sum of squared coordinate differences of
/// the rows a and b (d values each) recomputed: the CPU core's rule (tile_layout.hpp).
template <class T>
__device__ __forceinline__ T expanded_sq_distance(T an, T bn, T g, const T* __restrict__ a,
                                                  const T* __restrict__ b, int d) {
  const T v = an + bn - T(2) * g;
  if (v >= (an + bn) * T(kCancellation)) return v;
  T s = T(0);
  for (int l = 0; l < d; ++l) {
    const T diff = a[l] - b[l];
    s += diff * diff;
  }
  return s;
}

}  // namespace detail

/// partial[blockIdx.y][i] = sum over the rows j of chunk blockIdx.y of w_j k(a_i, b_j)
/// (w == nullptr: w_j = 1). A (m, D), B (n, D) row-major in T; `scale` multiplies every
/// coordinate: sqrt(fast_map_factor<Kind>()) / sigma for float, 1 / sigma for double.
/// Grid: (ceil(m / (kSmallThreads kSmallLandmarks)), n_chunks); block: kSmallThreads.
template <int Kind, class T, int D>
__global__ void __launch_bounds__(kSmallThreads)
    row_sums_small(const T* __restrict__ A, const T* __restrict__ B, const double* __restrict__ w,
                   double* __restrict__ partial, long long m, long long n, long long chunk_rows, T scale) {
  constexpr int R = kSmallLandmarks;
  constexpr int kPadded = sizeof(T) == 4 ? (D + 3) / 4 * 4 : (D + 1) / 2 * 2;  // 16-byte rows
  __shared__ __align__(16) T Bs[kSmallStage][kPadded];
  __shared__ T Ws[kSmallStage];
  const int t = threadIdx.x;
  const long long i0 = (long long)blockIdx.x * (kSmallThreads * R) + t;

  T a[R][D];
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const long long i = i0 + (long long)r * kSmallThreads;
#pragma unroll
    for (int l = 0; l < D; ++l) a[r][l] = i < m ? detail::mul_rn(A[i * D + l], scale) : T(0);
  }
  const long long row0 = (long long)blockIdx.y * chunk_rows;
  const long long row_end = row0 + chunk_rows < n ? row0 + chunk_rows : n;
  double total[R];
#pragma unroll
  for (int r = 0; r < R; ++r) total[r] = 0.0;

  for (long long r0 = row0; r0 < row_end; r0 += kSmallStage) {
    const int rows = (int)(row_end - r0 < kSmallStage ? row_end - r0 : kSmallStage);
    __syncthreads();
    for (int e = t; e < rows * D; e += kSmallThreads)  // coalesced
      Bs[e / D][e % D] = detail::mul_rn(B[r0 * D + e], scale);
    for (int j = t; j < rows; j += kSmallThreads) Ws[j] = w == nullptr ? T(1) : T(w[r0 + j]);
    __syncthreads();
    T part[R];
#pragma unroll
    for (int r = 0; r < R; ++r) part[r] = T(0);
#pragma unroll 4
    for (int j = 0; j < rows; ++j) {
      T b[D];
#pragma unroll
      for (int l = 0; l < D; ++l) b[l] = Bs[j][l];  // a shared-memory broadcast
      const T wj = Ws[j];
#pragma unroll
      for (int r = 0; r < R; ++r) {
        T v = T(0);
#pragma unroll
        for (int l = 0; l < D; ++l) {  // coordinates in order, as the CPU core adds them
          const T diff = a[r][l] - b[l];
          v += diff * diff;
        }
        part[r] += wj * detail::RowMap<Kind, T>::apply(v);
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) total[r] += (double)part[r];  // float32: sums of <= 64 terms
  }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const long long i = i0 + (long long)r * kSmallThreads;
    if (i < m) partial[(long long)blockIdx.y * m + i] = total[r];
  }
}

/// norms[i] = ||x_i - centre||^2 of the rows of X (n, d) row-major float32, summed in
/// float64 and rounded once. One warp per row. Grid: ceil(n / 8); block: 256.
template <class T>
__global__ void __launch_bounds__(256)
    centred_sq_norms(const T* __restrict__ X, const T* __restrict__ centre, T* __restrict__ norms,
                     long long n, int d) {
  const long long i = (long long)blockIdx.x * 8 + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (i >= n) return;
  double s = 0.0;
  for (int l = lane; l < d; l += 32) {
    const T diff = X[i * d + l] - centre[l];  // the rounding row_sums_tc stages
    s += (double)diff * (double)diff;
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_xor_sync(0xffffffffu, s, offset);
  if (lane == 0) norms[i] = (T)s;
}

/// partial[blockIdx.y][i] = sum over the rows j of chunk blockIdx.y of w_j k(a_i, b_j)
/// (w == nullptr: w_j = 1) on the tensor cores, in three TF32 passes. A (m, d), B (n, d)
/// row-major float32;
/// centre (d,) the point both are centred on (the landmarks' mean, so that the
/// expansion does not cancel for data far from 0); a_norm, b_norm their centred
/// squared norms (centred_sq_norms); u_scale = fast_map_factor<Kind>() / sigma^2.
/// Grid: (ceil(m / kTcTile), n_chunks); block: kTcThreads.
template <int Kind>
__global__ void __launch_bounds__(kTcThreads)
    row_sums_tc(const float* __restrict__ A, const float* __restrict__ B, const float* __restrict__ centre,
                const float* __restrict__ a_norm, const float* __restrict__ b_norm,
                const double* __restrict__ w, double* __restrict__ partial, long long m, long long n, int d,
                long long chunk_rows, float u_scale) {
  __shared__ float As[kTcTile][kTcDepth + kTcPad];
  __shared__ float Bs[kTcTile][kTcDepth + kTcPad];
  __shared__ float Bn[kTcTile];
  __shared__ float Ws[kTcTile];
  __shared__ double Red[2][kTcTile];
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  const int wm = warp >> 1, wn = warp & 1;  // the warp's 32 landmarks x 32 rows
  const int g = lane >> 2, q = lane & 3;
  const long long i_block = (long long)blockIdx.x * kTcTile;

  float an[2][2];  // norms of this thread's accumulator rows wm*32 + mt*16 + h*8 + g
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const long long i = i_block + wm * 32 + mt * 16 + h * 8 + g;
      an[mt][h] = i < m ? a_norm[i] : 0.0f;
    }
  double total[2][2] = {{0.0, 0.0}, {0.0, 0.0}};
  const long long row0 = (long long)blockIdx.y * chunk_rows;
  const long long row_end = row0 + chunk_rows < n ? row0 + chunk_rows : n;

  for (long long r0 = row0; r0 < row_end; r0 += kTcTile) {
    const int rows = (int)(row_end - r0 < kTcTile ? row_end - r0 : kTcTile);
    float c[2][4][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) c[mt][nt][e] = 0.0f;
    for (int k0 = 0; k0 < d; k0 += kTcDepth) {
      __syncthreads();
      // element e = t + kTcThreads s of a 64 x 32 tile: row e / 32, coordinate e % 32
      // (a warp reads 32 consecutive coordinates of one row); zero past the edges
#pragma unroll 4
      for (int s = 0; s < kTcTile * kTcDepth / kTcThreads; ++s) {
        const int r = (t >> 5) + s * (kTcThreads / kTcDepth), l = t & 31;
        const int dim = k0 + l;
        const long long i = i_block + r, j = r0 + r;
        const float cl = dim < d ? centre[dim] : 0.0f;
        As[r][l] = (i < m && dim < d) ? A[i * d + dim] - cl : 0.0f;
        Bs[r][l] = (r < rows && dim < d) ? B[j * d + dim] - cl : 0.0f;
      }
      if (k0 == 0 && t < kTcTile) {
        Bn[t] = t < rows ? b_norm[r0 + t] : 0.0f;
        Ws[t] = t < rows ? (w == nullptr ? 1.0f : (float)w[r0 + t]) : 0.0f;  // 0: rows past the end
      }
      __syncthreads();
#pragma unroll
      for (int kk = 0; kk < kTcDepth; kk += 8) {
        unsigned a_hi[2][4], a_lo[2][4], b_hi[4][2], b_lo[4][2];
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float x = As[wm * 32 + mt * 16 + g + (e & 1) * 8][kk + q + (e >> 1) * 4];
            a_hi[mt][e] = detail::to_tf32(x);
            a_lo[mt][e] = detail::to_tf32(x - __uint_as_float(a_hi[mt][e]));
          }
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const float x = Bs[wn * 32 + nt * 8 + g][kk + q + e * 4];
            b_hi[nt][e] = detail::to_tf32(x);
            b_lo[nt][e] = detail::to_tf32(x - __uint_as_float(b_hi[nt][e]));
          }
#pragma unroll
        for (int mt = 0; mt < 2; ++mt)
#pragma unroll
          for (int nt = 0; nt < 4; ++nt) {  // the small products first: the smaller terms
            detail::mma_tf32(c[mt][nt], a_lo[mt], b_hi[nt]);
            detail::mma_tf32(c[mt][nt], a_hi[mt], b_lo[nt]);
            detail::mma_tf32(c[mt][nt], a_hi[mt], b_hi[nt]);
          }
      }
    }
    float part[2][2] = {{0.0f, 0.0f}, {0.0f, 0.0f}};
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int h = e >> 1, j = wn * 32 + nt * 8 + 2 * q + (e & 1);
          const long long i = i_block + wm * 32 + mt * 16 + h * 8 + g;
          if (i >= m || j >= rows) continue;  // outside the matrix: nothing to add
          const float v = detail::expanded_sq_distance(an[mt][h], Bn[j], c[mt][nt][e], A + i * d,
                                                       B + (r0 + j) * d, d);
          part[mt][h] += Ws[j] * fast_map<Kind>(u_scale * fmaxf(v, 0.0f));
        }
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h) total[mt][h] += (double)part[mt][h];
  }
  // The 4 lanes of a group hold the same landmark rows (a fixed butterfly: every lane
  // gets the same sum), then the two warps of a row band.
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      double v = total[mt][h];
      v += __shfl_xor_sync(0xffffffffu, v, 1);
      v += __shfl_xor_sync(0xffffffffu, v, 2);
      if (q == 0) Red[wn][wm * 32 + mt * 16 + h * 8 + g] = v;
    }
  __syncthreads();
  if (t < kTcTile) {
    const long long i = i_block + t;
    if (i < m) partial[(long long)blockIdx.y * m + i] = Red[0][t] + Red[1][t];
  }
}

/// The GEMM path's operands: out (rows, Parts d) = the rows of X (rows, d) minus
/// `centre`, row-major. Parts = 1: that difference; Parts = 3 (float32): its TF32 split
/// x = hi + lo (hi = tf32(x), lo = tf32(x - hi)) laid out [hi, hi, lo] (Second = 0, the
/// landmarks) or [hi, lo, hi] (Second = 1, the rows), so that one TF32 GEMM of depth
/// 3d gives a_hi b_hi + a_hi b_lo + a_lo b_hi: the products of TF32 values are exact
/// in float32, and the dropped a_lo b_lo is ~2^-22 of a b. One thread per entry of X.
template <class T, int Parts>
__global__ void __launch_bounds__(256)
    centre_split(const T* __restrict__ X, const T* __restrict__ centre, T* __restrict__ out, long long rows,
                 int d, int second) {
  const long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= rows * d) return;
  const long long i = e / d;
  const int l = (int)(e - i * d);
  const T x = X[e] - centre[l];  // the rounding centred_sq_norms makes
  T* row = out + i * (long long)Parts * d;
  if (Parts == 1) {
    row[l] = x;
    return;
  }
  const float hi = __uint_as_float(detail::to_tf32((float)x));
  const float lo = __uint_as_float(detail::to_tf32((float)x - hi));
  row[l] = hi;
  row[d + l] = second ? lo : hi;
  row[2 * d + l] = second ? hi : lo;
}

/// partial[m_chunk][i] = sum over j < cols of w_j k(a_i, b_j) from G (m, cols) row-major,
/// G[i][j] = <a_i - c, b_j - c> (a GEMM of centre_split's operands), a_norm and b_norm
/// the centred squared norms: v = a_norm_i + b_norm_j - 2 G_ij (clamped at 0; from the
/// rows A (m, d) and B (cols, d) where it cancels, expanded_sq_distance). float32:
/// fast_map(u_scale v), u_scale = fast_map_factor / sigma^2; float64: kernel_map(u_scale
/// v), u_scale = 1 / sigma^2. One warp per landmark (lanes read consecutive entries of
/// its row), float64 sums, a fixed butterfly. w == nullptr: weights 1.
/// Grid: ceil(m / 8); block: 256.
template <int Kind, class T>
__global__ void __launch_bounds__(256)
    gemm_row_sums(const T* __restrict__ G, const T* __restrict__ a_norm, const T* __restrict__ b_norm,
                  const T* __restrict__ A, const T* __restrict__ B, const double* __restrict__ w,
                  double* __restrict__ partial, long long m, long long cols, int d, T u_scale) {
  const long long i = (long long)blockIdx.x * 8 + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (i >= m) return;
  const T an = a_norm[i];
  const T* row = G + i * cols;
  double s = 0.0;
  for (long long j = lane; j < cols; j += 32) {
    const T v = detail::expanded_sq_distance(an, b_norm[j], row[j], A + i * d, B + j * d, d);
    const T u = u_scale * (v > T(0) ? v : T(0));
    s += (w == nullptr ? 1.0 : w[j]) * (double)detail::RowMap<Kind, T>::apply(u);
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) s += __shfl_xor_sync(0xffffffffu, s, offset);
  if (lane == 0) partial[i] = s;
}

/// Row chunks of row_sums_small / row_sums_tc for n rows and `landmark_blocks` blocks
/// along the landmarks: about 4096 blocks in all (several waves on any GPU), at least
/// 1024 rows a chunk, a partial buffer of at most ~64 MiB. Sizes only, never the device.
inline __host__ __device__ long long row_sum_chunks(long long n, long long m, long long landmark_blocks) {
  long long chunks = (4096 + landmark_blocks - 1) / landmark_blocks;
  const long long max_by_rows = (n + 1023) / 1024;
  const long long budget = (64LL << 20) / 8;  // doubles
  if (m > 0 && chunks * m > budget) chunks = budget / m;
  if (chunks > max_by_rows) chunks = max_by_rows;
  return chunks < 1 ? 1 : chunks;
}

}  // namespace cuda
}  // namespace nystrom_kme
