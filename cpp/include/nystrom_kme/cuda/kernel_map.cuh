// The radial kernels on the GPU: the accurate map of a squared scaled distance to a
// kernel value (the CPU core's kernel_map, in the input's precision) and the fast
// float32 map of the fused row sums, both instantiated from the one definition of each
// kernel (kernel_formulas.inl). Kernel codes are KernelKind's numbers.
//
// One of the GPU path's headers (kernel_sums.cuh lists them). Under NVRTC
// (__CUDACC_RTC__) the headers include nothing: the Python package compiles their
// concatenation (nystrom_kme.cuda.program.SOURCES, in dependency order).
#pragma once

#ifndef __CUDACC_RTC__
#include <nystrom_kme/kernel_kinds.hpp>
#endif

namespace nystrom_kme {
namespace cuda {

namespace detail {

__device__ __forceinline__ float nk_exp(float x) { return expf(x); }
__device__ __forceinline__ double nk_exp(double x) { return exp(x); }
__device__ __forceinline__ float nk_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ double nk_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ float nk_log1p(float x) { return log1pf(x); }
__device__ __forceinline__ double nk_log1p(double x) { return log1p(x); }
__device__ __forceinline__ float nk_min(float a, float b) { return fminf(a, b); }
__device__ __forceinline__ double nk_min(double a, double b) { return fmin(a, b); }

// x * y rounded on its own: never contracted into a fused multiply-add with what
// follows (a scaled coordinate must not keep extra bits: equal points then differ).
__device__ __forceinline__ float mul_rn(float x, float y) { return __fmul_rn(x, y); }
__device__ __forceinline__ double mul_rn(double x, double y) { return __dmul_rn(x, y); }

// The special-function unit's approximations (about 2 ulp): float32 sums carry
// ~1e-7 relative error from the kernel values anyway.
__device__ __forceinline__ float exp2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float sqrt_approx(float x) {
  float y;
  asm("sqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float rsqrt_approx(float x) {
  float y;
  asm("rsqrt.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/// The accurate arithmetic of the formulas (kernel_formulas.inl) in T: the CPU core's
/// kernel_map in the input's precision (whose float32 lanes take the exponential family
/// in base 2: the same values to a few ulp).
template <class Lane>
struct AccurateMath {
  using V = Lane;
  using T = Lane;
  static constexpr Lane far_v = Lane(sizeof(Lane) == 4 ? 1e36 : 1e300);
  static constexpr Lane far_t = Lane(sizeof(Lane) == 4 ? 1e18 : 1e150);
  static __device__ __forceinline__ Lane splat(Lane x) { return x; }
  static __device__ __forceinline__ Lane exp(Lane x) { return nk_exp(x); }
  static __device__ __forceinline__ Lane sqrt(Lane x) { return nk_sqrt(x); }
  static __device__ __forceinline__ Lane rsqrt(Lane x) { return Lane(1) / nk_sqrt(x); }
  static __device__ __forceinline__ Lane log1p(Lane x) { return nk_log1p(x); }
  static __device__ __forceinline__ Lane min(Lane a, Lane b) { return nk_min(a, b); }
  static __device__ __forceinline__ Lane positive_or_zero(Lane t, Lane x) { return t > Lane(0) ? x : Lane(0); }
};

/// The fused float32 row sums' arithmetic: the special-function unit (fast_value).
struct FastMath {
  using V = float;
  using T = float;
  static constexpr float far_v = 1e36f;
  static constexpr float far_t = 1e18f;
  static __device__ __forceinline__ float splat(float x) { return x; }
  static __device__ __forceinline__ float exp2(float x) { return exp2_approx(x); }
  static __device__ __forceinline__ float sqrt(float x) { return sqrt_approx(x); }
  static __device__ __forceinline__ float rsqrt(float x) { return rsqrt_approx(x); }
  static __device__ __forceinline__ float min(float a, float b) { return fminf(a, b); }
};

}  // namespace detail

// Each kind's formula (the CPU core's own text; NVRTC gets it in place of this include).
#include <nystrom_kme/kernel_formulas.inl>

/// The host launchers' kernel codes: KernelKind's numbers. Kept for native applications
/// written against them; any GPU kind's KernelKind converts (KernelCode(kind)).
enum KernelCode : int {
  kGaussian = int(KernelKind::gaussian),
  kLaplacian = int(KernelKind::laplacian),
  kMatern32 = int(KernelKind::matern32),
  kMatern52 = int(KernelKind::matern52),
  kInverseMultiquadric = int(KernelKind::inverse_multiquadric),
};

/// The kernel value for the squared scaled distance v = ||a - b||^2 / sigma^2, for a
/// kind the GPU computes (on_gpu); the same map as the CPU core's kernel_map. v = 0
/// gives exactly 1.
template <int Kind, class T>
__device__ __forceinline__ T kernel_map(T v) {
  static_assert(on_gpu<KernelKind(Kind)>(), "not a kind of the GPU path");
  return kernel_value<detail::AccurateMath<T>, KernelKind(Kind)>(v, KernelParams{});
}

/// c of the fast map: the fused float32 row sums scale coordinates by sqrt(c) / sigma,
/// so that the map needs one exp2 and no multiplication (c = 0.5 log2(e) for the
/// Gaussian: 2^(-v c) = exp(-v / 2)).
template <int Kind>
__host__ __device__ constexpr double fast_map_factor() {
  return fast_factor<KernelKind(Kind)>();
}

/// The kernel value for u = c v (c = fast_map_factor<Kind>()), float32, through the
/// special-function unit. Equals kernel_map<Kind>(v) to a few float32 ulp.
template <int Kind>
__device__ __forceinline__ float fast_map(float u) {
  static_assert(on_gpu<KernelKind(Kind)>(), "not a kind of the GPU path");
  return fast_value<detail::FastMath, KernelKind(Kind)>(u);
}

/// f(KindTag) for a GPU kind's run-time code, `none()` for any other code (functors, not
/// lambdas: NVRTC compiles no lambda without --extended-lambda).
template <class F, class None>
struct GpuKindsOnly {
  const F& f;
  const None& none;
  template <class Tag>
  __device__ __forceinline__ auto operator()(Tag tag) const -> decltype(none()) {
    if constexpr (on_gpu<Tag::kind>()) {
      return f(tag);
    } else {
      return none();
    }
  }
};

template <class F, class None>
__device__ __forceinline__ auto visit_gpu_kind(int code, const F& f, const None& none) -> decltype(none()) {
  return visit_kind(KernelKind(code), GpuKindsOnly<F, None>{f, none}, none);
}

}  // namespace cuda
}  // namespace nystrom_kme
