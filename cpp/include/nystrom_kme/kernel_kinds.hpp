// The kernels the core computes: their kinds and parameters, with no dependency, so that
// every backend shares them (the CPU core, its SIMD levels, and the GPU path's CUDA
// headers, which NVRTC compiles without the standard library). Each kind's formula is
// written once, in kernel_formulas.inl.
#pragma once

#if defined(__CUDACC__)
#define NYSTROM_KME_FORMULA __host__ __device__ __forceinline__
#else
#define NYSTROM_KME_FORMULA inline
#endif

namespace nystrom_kme {

/// The kinds of kernel. The numbers are also the GPU path's kernel codes (template
/// arguments of its device code). A new kind: an enumerator here (and kKernelKinds),
/// its Formula and case in kernel_formulas.inl.
enum class KernelKind : int {
  gaussian = 0,              ///< exp(-r^2 / (2 sigma^2))
  laplacian = 1,             ///< exp(-r / sigma), also Matern nu = 1/2
  matern32 = 2,              ///< (1 + sqrt(3) r / sigma) exp(-sqrt(3) r / sigma)
  matern52 = 3,              ///< (1 + sqrt(5) r / sigma + 5 r^2 / (3 sigma^2)) exp(-sqrt(5) r / sigma)
  inverse_multiquadric = 4,  ///< (1 + r^2 / sigma^2)^(-1/2)
  rational_quadratic = 5,    ///< (1 + r^2 / (2 alpha sigma^2))^(-alpha)
  laplacian_l1 = 6,          ///< exp(-||x - y||_1 / sigma)
  linear = 7,                ///< <x, y> / sigma^2
  polynomial = 8,            ///< (<x, y> / sigma^2 + offset)^degree
};

/// The number of kinds (the last enumerator + 1).
inline constexpr int kKernelKinds = 9;

/// What a kernel's value is a function of, for the points scaled by 1 / sigma: the
/// squared Euclidean distance (radial kernels), the l1 distance, or the inner product.
enum class Distance : int { squared_euclidean, l1, inner_product };

/// A kernel's parameters beside its kind and bandwidth: the polynomial kernel's offset
/// and degree, and the shape parameter of a kind that has one (the rational quadratic
/// kernel's alpha).
struct KernelParams {
  double offset = 1.0;
  int degree = 2;
  double shape = 1.0;
};

}  // namespace nystrom_kme
