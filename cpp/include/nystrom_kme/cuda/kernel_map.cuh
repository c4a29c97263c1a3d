// The radial kernels on the GPU: the kernel codes, the accurate map of a squared
// scaled distance to a kernel value (the CPU core's kernel_map, in the input's
// precision), and the fast float32 map of the fused row sums.
//
// One of the GPU path's headers (kernel_sums.cuh lists them). Under NVRTC
// (__CUDACC_RTC__) the headers include nothing: the Python package compiles their
// concatenation (nystrom_kme.cuda.program.SOURCES, in dependency order).
#pragma once

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

/// c of the fast map: the fused float32 row sums scale coordinates by sqrt(c) / sigma,
/// so that the map needs one exp2 and no multiplication (c = 0.5 log2(e) for the
/// Gaussian: 2^(-v c) = exp(-v / 2)).
template <int Kind>
__host__ __device__ constexpr double fast_map_factor() {
  return Kind == kGaussian    ? 0.72134752044448170  // log2(e) / 2
         : Kind == kLaplacian ? 2.0813689810056077   // log2(e)^2
         : Kind == kMatern32  ? 6.2441069430168232   // 3 log2(e)^2
         : Kind == kMatern52  ? 10.406844905028039   // 5 log2(e)^2
                              : 1.0;
}

/// The kernel value for u = c v (c = fast_map_factor<Kind>()), float32, through the
/// special-function unit. Equals kernel_map<Kind>(v) to a few float32 ulp.
template <int Kind>
__device__ __forceinline__ float fast_map(float u) {
  using namespace detail;
  constexpr float kLn2 = 0.69314718055994531f;
  if (Kind == kGaussian) return exp2_approx(-u);
  if (Kind == kInverseMultiquadric) return rsqrt_approx(u + 1.0f);
  const float q = sqrt_approx(fminf(u, 1e36f));  // q = r log2(e); clamped: (1 + q) 2^-q stays 0
  if (Kind == kLaplacian) return exp2_approx(-q);
  const float r = q * kLn2;
  if (Kind == kMatern32) return (r + 1.0f) * exp2_approx(-q);
  return (r * r * (1.0f / 3.0f) + r + 1.0f) * exp2_approx(-q);  // Matern 5/2
}

}  // namespace cuda
}  // namespace nystrom_kme
