// Kernel functions on R^d: a validated description. The vectorised map from
// squared distances (radial kernels) or inner products (dot-product kernels) to
// kernel values is compiled per instruction set (detail/simd_body/vector_math.inl).
#pragma once

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <nystrom_kme/types.hpp>

namespace nystrom_kme {

enum class KernelKind {
  gaussian,              ///< exp(-r^2 / (2 sigma^2))
  laplacian,             ///< exp(-r / sigma), also Matern nu = 1/2
  matern32,              ///< (1 + sqrt(3) r / sigma) exp(-sqrt(3) r / sigma)
  matern52,              ///< (1 + sqrt(5) r / sigma + 5 r^2 / (3 sigma^2)) exp(-sqrt(5) r / sigma)
  inverse_multiquadric,  ///< (1 + r^2 / sigma^2)^(-1/2)
  linear,                ///< <x, y> / sigma^2
  polynomial,            ///< (<x, y> / sigma^2 + offset)^degree
};

/// A kernel k(x, y) on R^d with bandwidth sigma > 0 (and, for the polynomial
/// kernel, an offset c >= 0 and an integer degree p >= 1). Immutable once built.
class Kernel {
 public:
  /// @throws std::invalid_argument for sigma <= 0 or non-finite, offset < 0, degree < 1.
  Kernel(KernelKind kind, double bandwidth, double offset = 1.0, int degree = 2)
      : kind_(kind), bandwidth_(bandwidth), offset_(offset), degree_(degree) {
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
  }

  static Kernel gaussian(double bandwidth) { return {KernelKind::gaussian, bandwidth}; }
  static Kernel laplacian(double bandwidth) { return {KernelKind::laplacian, bandwidth}; }

  /// Names: gaussian, laplacian (= matern12), matern32, matern52,
  /// inverse_multiquadric, linear, polynomial.
  static Kernel from_name(const std::string& name, double bandwidth, double offset = 1.0,
                          int degree = 2) {
    if (name == "gaussian") return {KernelKind::gaussian, bandwidth};
    if (name == "laplacian" || name == "matern12") return {KernelKind::laplacian, bandwidth};
    if (name == "matern32") return {KernelKind::matern32, bandwidth};
    if (name == "matern52") return {KernelKind::matern52, bandwidth};
    if (name == "inverse_multiquadric") return {KernelKind::inverse_multiquadric, bandwidth};
    if (name == "linear") return {KernelKind::linear, bandwidth};
    if (name == "polynomial") return {KernelKind::polynomial, bandwidth, offset, degree};
    throw std::invalid_argument("unknown kernel '" + name + "'");
  }

  KernelKind kind() const { return kind_; }
  double bandwidth() const { return bandwidth_; }
  /// 1 / bandwidth: the core computes every kernel value from the scaled points
  /// x / bandwidth (squared distances or inner products of those), which keeps the
  /// arithmetic in range for any bandwidth and data scale that float64 can hold.
  double inv_bandwidth() const { return 1.0 / bandwidth_; }
  double offset() const { return offset_; }
  int degree() const { return degree_; }

  /// Radial kernels depend on ||x - y|| only; the others on <x, y>.
  bool is_radial() const { return kind_ != KernelKind::linear && kind_ != KernelKind::polynomial; }

 private:
  KernelKind kind_;
  double bandwidth_;
  double offset_;
  int degree_;
};

}  // namespace nystrom_kme
