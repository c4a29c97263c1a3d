// The aggregated test's binned sums on the GPU: E_j[i][g] = sum over the rows x of bin
// g of k_j(a_i, x), for several radial kernels at once (bin_sums.hpp on the CPU). The
// rows come sorted by bin (the caller gathers them once), so bin g is one run of rows
// and one block owns it: each sum is formed by one thread in row order, no atomics.
#pragma once

#ifndef __CUDACC_RTC__
#include <nystrom_kme/cuda/kernel_map.cuh>
#endif

namespace nystrom_kme {
namespace cuda {

/// Kernels per launch (accumulators in registers), landmarks per block, rows and
/// coordinates staged per step.
constexpr int kBinKernels = 8;
constexpr int kBinThreads = 128;
constexpr int kBinRows = 32;
constexpr int kBinDims = 16;

namespace detail {

/// Kernel `kind`'s value at the squared distance v (in units of the smallest
/// bandwidth) times `factor`: float32 through fast_map (factor includes its c),
/// float64 through kernel_map. A run-time kind, the same for every thread; a code that
/// is not a radial kernel's gives NaN (never another kernel's values), and the host
/// checks the kinds before the launch and the sums after it.
/// fast_map / kernel_map of the visited kind at one value, and NaN for no kind: the
/// functors of BinMap's visits.
struct FastMapAt {
  float u;
  template <class Tag>
  __device__ __forceinline__ float operator()(Tag) const {
    return fast_map<int(Tag::kind)>(u);
  }
};
struct KernelMapAt {
  double v;
  template <class Tag>
  __device__ __forceinline__ double operator()(Tag) const {
    return kernel_map<int(Tag::kind), double>(v);
  }
};
struct NanFloat {
  __device__ __forceinline__ float operator()() const { return __int_as_float(0x7fc00000); }
};
struct NanDouble {
  __device__ __forceinline__ double operator()() const { return __longlong_as_double(0x7ff8000000000000LL); }
};

template <class T>
struct BinMap;
template <>
struct BinMap<float> {
  static __device__ __forceinline__ float apply(int kind, float u) {
    return visit_gpu_kind(kind, FastMapAt{u}, NanFloat{});  // an unknown code: NaN, which the host refuses
  }
};
template <>
struct BinMap<double> {
  static __device__ __forceinline__ double apply(int kind, double v) {
    return visit_gpu_kind(kind, KernelMapAt{v}, NanDouble{});  // an unknown code: NaN, refused by the host
  }
};

}  // namespace detail

/// E[j][i][g] = sum over rows [offsets[g], offsets[g + 1]) of B of k_j(a_i, b), for
/// j < n_kernels <= kBinKernels: kinds[j] its code, factors[j] what multiplies the
/// squared distance scaled by `scale` (1 / the smallest bandwidth): float32
/// fast_map_factor(kind) (sigma_min / sigma_j)^2, float64 (sigma_min / sigma_j)^2.
/// A (m, d), B (rows, d) row-major in T; E (n_kernels, m, n_bins) float64, written for
/// the bins bin0 + blockIdx.y. Grid: (ceil(m / kBinThreads), bins of this launch, at
/// most 65535); block: kBinThreads (thread = landmark).
template <class T>
__global__ void __launch_bounds__(kBinThreads)
    bin_sums_multi(const T* __restrict__ A, const T* __restrict__ B, const long long* __restrict__ offsets,
                   const int* __restrict__ kinds, const T* __restrict__ factors, double* __restrict__ E,
                   long long m, int d, int n_bins, int bin0, int n_kernels, T scale) {
  __shared__ T As[kBinDims][kBinThreads];  // landmark coordinates, transposed
  __shared__ T Bs[kBinRows][kBinDims];
  const int t = threadIdx.x;
  const long long i = (long long)blockIdx.x * kBinThreads + t;
  const int bin = bin0 + (int)blockIdx.y;
  const long long begin = offsets[bin], end = offsets[bin + 1];
  int kind[kBinKernels];
  T factor[kBinKernels];
  double acc[kBinKernels];
#pragma unroll
  for (int j = 0; j < kBinKernels; ++j) {
    kind[j] = j < n_kernels ? kinds[j] : 0;
    factor[j] = j < n_kernels ? factors[j] : T(0);
    acc[j] = 0.0;
  }
  for (long long r0 = begin; r0 < end; r0 += kBinRows) {
    const int rows = (int)(end - r0 < kBinRows ? end - r0 : kBinRows);
    T dist[kBinRows];
#pragma unroll
    for (int r = 0; r < kBinRows; ++r) dist[r] = T(0);
    for (int l0 = 0; l0 < d; l0 += kBinDims) {
      const int dims = d - l0 < kBinDims ? d - l0 : kBinDims;
      __syncthreads();
      for (int l = 0; l < dims; ++l) As[l][t] = i < m ? detail::mul_rn(A[i * d + l0 + l], scale) : T(0);
      for (int e = t; e < kBinRows * kBinDims; e += kBinThreads) {
        const int r = e / kBinDims, l = e % kBinDims;
        Bs[r][l] = (r < rows && l < dims) ? detail::mul_rn(B[(r0 + r) * d + l0 + l], scale) : T(0);
      }
      __syncthreads();
      for (int l = 0; l < dims; ++l) {  // coordinates in order, as the CPU core adds them
        const T a = As[l][t];
#pragma unroll
        for (int r = 0; r < kBinRows; ++r) {
          const T diff = a - Bs[r][l];
          dist[r] += diff * diff;
        }
      }
    }
#pragma unroll
    for (int j = 0; j < kBinKernels; ++j) {
      if (j < n_kernels) {
        T part = T(0);  // float32: sums of <= 32 terms, then float64
#pragma unroll
        for (int r = 0; r < kBinRows; ++r)
          if (r < rows) part += detail::BinMap<T>::apply(kind[j], dist[r] * factor[j]);
        acc[j] += (double)part;
      }
    }
  }
  if (i < m) {
#pragma unroll
    for (int j = 0; j < kBinKernels; ++j)
      if (j < n_kernels) E[((long long)j * m + i) * n_bins + bin] = acc[j];
  }
}

}  // namespace cuda
}  // namespace nystrom_kme
