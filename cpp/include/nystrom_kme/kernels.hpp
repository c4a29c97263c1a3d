// Kernel functions on R^d: a validated description. Each kind's formula is written once,
// in kernel_formulas.inl: compiled per instruction set for the vectorised maps
// (detail/simd_body/vector_math.inl), for the GPU (cuda/kernel_map.cuh), and here, in
// scalar double, for the host's own uses (names, parameters, gradient factors).
#pragma once

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <nystrom_kme/kernel_kinds.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme {

/// The formulas in scalar double, for the host (kernel names, parameters, the gradient
/// sums' factors and identities).
namespace scalar {

struct Math {
  using V = double;
  using T = double;
  static constexpr double far_v = 1e300;
  static constexpr double far_t = 1e150;
  static double splat(double x) { return x; }
  static double exp(double x) { return std::exp(x); }
  static double sqrt(double x) { return std::sqrt(x); }
  static double rsqrt(double x) { return 1.0 / std::sqrt(x); }
  static double log1p(double x) { return std::log1p(x); }
  static double min(double a, double b) { return a < b ? a : b; }
  static double positive_or_zero(double t, double x) { return t > 0.0 ? x : 0.0; }
};

#include <nystrom_kme/kernel_formulas.inl>

}  // namespace scalar

/// The name of a kind, e.g. "matern32" (nullptr for a value outside the enum).
inline const char* kind_name(KernelKind kind) {
  return scalar::visit_kind(kind, [](auto tag) -> const char* { return decltype(tag)::formula::name; },
                            []() -> const char* { return nullptr; });
}

/// What the kind's value is a function of (Distance::inner_product for a value outside the enum).
inline Distance kind_distance(KernelKind kind) {
  return scalar::visit_kind(kind, [](auto tag) { return decltype(tag)::formula::distance; },
                            []() { return Distance::inner_product; });
}

/// Whether the kind has a shape parameter (the rational quadratic's alpha).
inline bool kind_has_shape(KernelKind kind) {
  return scalar::visit_kind(kind, [](auto tag) { return decltype(tag)::formula::has_shape; }, []() { return false; });
}

/// The gradient identity of a kind (kernel_formulas.inl, Formula::gradient): psi = -k'(r) / r
/// as a factor times a kernel of its own; `fused` false for the Laplacian and for the kinds
/// that are not radial in the Euclidean distance.
inline scalar::GradientKernel kind_gradient(KernelKind kind, const KernelParams& params) {
  const scalar::GradientKernel none{false, kind, 1.0, 1.0, 1.0};
  return scalar::visit_kind(
      kind,
      [&](auto tag) {
        using F = typename decltype(tag)::formula;
        if constexpr (F::distance == Distance::squared_euclidean) {
          return F::gradient(params);
        } else {
          return none;
        }
      },
      [&] { return none; });
}

/// A kernel k(x, y) on R^d with bandwidth sigma > 0 and the parameters of its kind
/// (KernelParams: the polynomial kernel's offset c >= 0 and integer degree p >= 1, the
/// rational quadratic kernel's alpha > 0). Immutable once built.
class Kernel {
 public:
  /// @throws std::invalid_argument for a kind outside the enum, sigma <= 0 or
  ///         non-finite, offset < 0, degree < 1, a shape parameter <= 0 or non-finite.
  Kernel(KernelKind kind, double bandwidth, double offset = 1.0, int degree = 2, double shape = 1.0)
      : kind_(kind), bandwidth_(bandwidth), params_{offset, degree, shape} {
    if (kind_name(kind) == nullptr) {
      throw std::invalid_argument("unknown kernel kind " + std::to_string(int(kind)));
    }
    // Values are computed on the data divided by the bandwidth, so 1 / bandwidth must
    // be finite: the bandwidth must be a normal (not subnormal) positive number.
    if (!(bandwidth >= std::numeric_limits<double>::min()) || !std::isfinite(bandwidth)) {
      throw std::invalid_argument("bandwidth must be a finite number >= 2.2250738585072014e-308 "
                                  "(the smallest normal double), got " + std::to_string(bandwidth));
    }
    if (kind == KernelKind::polynomial) {
      if (!(offset >= 0.0) || !std::isfinite(offset)) {
        throw std::invalid_argument("offset must be finite and >= 0, got " + std::to_string(offset));
      }
      if (degree < 1) {
        throw std::invalid_argument("degree must be >= 1, got " + std::to_string(degree));
      }
    }
    if (kind_has_shape(kind) && !(shape > 0.0 && std::isfinite(shape))) {
      throw std::invalid_argument(std::string(kind_name(kind)) + ": the shape parameter must be a finite number > 0, got " +
                                  std::to_string(shape));
    }
  }

  static Kernel gaussian(double bandwidth) { return {KernelKind::gaussian, bandwidth}; }
  static Kernel laplacian(double bandwidth) { return {KernelKind::laplacian, bandwidth}; }

  /// The kinds by name (kind_name: gaussian, laplacian, matern32, matern52,
  /// inverse_multiquadric, rational_quadratic, laplacian_l1, linear, polynomial), and
  /// matern12 for the Laplacian.
  static Kernel from_name(const std::string& name, double bandwidth, double offset = 1.0, int degree = 2,
                          double shape = 1.0) {
    if (name == "matern12") return {KernelKind::laplacian, bandwidth};
    for (int code = 0; code < kKernelKinds; ++code) {
      const KernelKind kind = KernelKind(code);
      if (name == kind_name(kind)) return {kind, bandwidth, offset, degree, shape};
    }
    throw std::invalid_argument("unknown kernel '" + name + "'");
  }

  KernelKind kind() const { return kind_; }
  const char* name() const { return kind_name(kind_); }
  double bandwidth() const { return bandwidth_; }
  /// 1 / bandwidth: the core computes every kernel value from the scaled points
  /// x / bandwidth (squared distances, l1 distances or inner products of those), which
  /// keeps the arithmetic in range for any bandwidth and data scale that float64 can hold.
  double inv_bandwidth() const { return 1.0 / bandwidth_; }
  double offset() const { return params_.offset; }
  int degree() const { return params_.degree; }
  double shape() const { return params_.shape; }
  const KernelParams& params() const { return params_; }
  /// What the value is a function of: squared Euclidean or l1 distance, or inner product.
  Distance distance() const { return kind_distance(kind_); }

  /// Translation-invariant kernels with k(x, x) = 1 (a function of a distance: the
  /// radial kernels and the l1 Laplacian); the others depend on <x, y>.
  bool is_radial() const { return distance() != Distance::inner_product; }

 private:
  KernelKind kind_;
  double bandwidth_;
  KernelParams params_;
};

}  // namespace nystrom_kme
