// The one definition of each kernel (kernel_formulas.inl) against closed forms written
// here in long double, independently of it: the active SIMD level's map (map_values),
// the host's scalar instantiation, the gradient factor psi = -k'(r) / r against central
// differences, each gradient identity (psi as a kernel of its own), and the kinds' names.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <nystrom_kme/gradient_sums.hpp>
#include <nystrom_kme/kernels.hpp>
#include <nystrom_kme/simd.hpp>

#include "check.hpp"

using namespace nystrom_kme;

namespace {

/// k as a function of v (the kind's scaled distance), by the textbook formulas.
long double closed_form(const Kernel& k, long double v) {
  const long double r = std::sqrt(v);
  switch (k.kind()) {
    case KernelKind::gaussian: return std::exp(-v / 2);
    case KernelKind::laplacian: return std::exp(-r);
    case KernelKind::matern32: return (1 + std::sqrt(3.0L) * r) * std::exp(-std::sqrt(3.0L) * r);
    case KernelKind::matern52: return (1 + std::sqrt(5.0L) * r + 5 * v / 3) * std::exp(-std::sqrt(5.0L) * r);
    case KernelKind::inverse_multiquadric: return 1 / std::sqrt(1 + v);
    case KernelKind::rational_quadratic: {  // (1 + v / (2 alpha))^-alpha, 1 + x not rounded
      const long double alpha = k.shape();
      return std::exp(-alpha * std::log1p(v / (2 * alpha)));
    }
    case KernelKind::laplacian_l1: return std::exp(-v);
    case KernelKind::linear: return v;
    case KernelKind::polynomial: return std::pow(v + (long double)k.offset(), (long double)k.degree());
  }
  return NAN;
}

std::vector<Kernel> every_kind() {
  std::vector<Kernel> out;
  for (int code = 0; code < kKernelKinds; ++code) {
    const KernelKind kind = KernelKind(code);
    out.emplace_back(kind, 1.0, 1.5, 3, 1.0);
    if (kind == KernelKind::rational_quadratic) {
      for (double alpha : {0.01, 0.5, 3.0, 1e3}) out.emplace_back(kind, 1.0, 1.0, 2, alpha);
    }
  }
  return out;
}

void test_names_and_kinds() {
  for (int code = 0; code < kKernelKinds; ++code) {
    const KernelKind kind = KernelKind(code);
    CHECK(kind_name(kind) != nullptr);
    CHECK(Kernel::from_name(kind_name(kind), 2.0).kind() == kind);
  }
  CHECK(kind_name(KernelKind(kKernelKinds)) == nullptr);  // one past the last: no kind
  CHECK_THROWS(Kernel(KernelKind(kKernelKinds), 1.0));
  CHECK(Kernel::from_name("matern12", 1.0).kind() == KernelKind::laplacian);
  CHECK(Kernel::from_name("laplacian_l1", 1.0).distance() == Distance::l1);
  CHECK(Kernel::from_name("laplacian_l1", 1.0).is_radial());
  CHECK(!Kernel::from_name("polynomial", 1.0).is_radial());
  CHECK(Kernel::from_name("rational_quadratic", 1.0, 1.0, 2, 2.5).shape() == 2.5);
  CHECK_THROWS(Kernel::from_name("rational_quadratic", 1.0, 1.0, 2, 0.0));
  CHECK_THROWS(Kernel::from_name("rational_quadratic", 1.0, 1.0, 2, NAN));
}

/// The SIMD level's map and the scalar formulas against the closed forms at many v.
void test_values() {
  std::vector<double> vs = {0.0, 1e-300, 1e-30, 1e-12, 1e-6};
  for (double v = 1e-3; v < 2e3; v *= 1.37) vs.push_back(v);
  for (const Kernel& k : every_kind()) {
    std::vector<double> mapped = vs;
    if (k.is_radial()) mapped.insert(mapped.end(), {1e10, 1e100, 1e300, 1.7e308});  // far: 0 or nearly
    const std::vector<double> at = mapped;
    if (k.is_radial()) mapped.push_back(INFINITY);
    const std::size_t n = mapped.size();
    detail::simd_table().map_values(k, mapped.data(), Index(n));
    for (std::size_t i = 0; i < n; ++i) {
      const long double v = i < at.size() ? (long double)at[i] : (long double)INFINITY;
      const long double want = i < at.size() ? closed_form(k, v) : 0.0L;
      // the exponential family to a few ulp; the power family's log1p and exp compound
      // with alpha (alpha log(1 + x) carries alpha times its ulp)
      const double alpha = k.kind() == KernelKind::rational_quadratic ? k.shape() : 1.0;
      const double tol = 4e-15 * std::max(1.0, alpha * std::log1p(double(v) / (2 * alpha)));
      const long double err = std::abs((long double)mapped[i] - want);
      const bool ok = k.is_radial() ? err <= tol * std::max(want, 1e-300L) || (want < 1e-300L && mapped[i] < 1e-290)
                                    : err <= 1e-15L * std::abs(want) + 1e-300L;
      if (!ok) std::fprintf(stderr, "%s(shape %g) at v = %g: %.17g, want %.17Lg\n", k.name(), k.shape(), double(v), mapped[i], want);
      CHECK(ok);
    }
  }
}

/// psi = -k'(r) / r (h = 1) against central differences of the closed form in r, and the
/// gradient identity: factor * k'(v h^2 / h'^2) = h^2 psi, k' the identity's kernel.
void test_gradient_factors() {
  for (const Kernel& k : every_kind()) {
    if (k.distance() != Distance::squared_euclidean) continue;
    const scalar::GradientKernel g = kind_gradient(k.kind(), k.params());
    for (double r = 0.01; r < 30; r *= 1.29) {
      // truncation O((step r)^2) for the Gaussian, O((step / r)^2) near 0; rounding ~1e-19 / step
      const long double step = 1e-5L * std::min(r, 1 / r);
      const long double up = closed_form(k, (r + step) * (r + step)), down = closed_form(k, (r - step) * (r - step));
      const long double psi = -(up - down) / (2 * step) / r;
      const double value = double(closed_form(k, (long double)r * r));
      const double got = detail::gradient_factor(k, r * r, value);
      const bool ok = std::abs(got - psi) <= 1e-8L * std::abs(psi) + 1e-300L;
      if (!ok) std::fprintf(stderr, "psi of %s at r = %g: %.17g, want %.17Lg\n", k.name(), r, got, psi);
      CHECK(ok);
      if (g.fused) {
        const Kernel gk(g.kind, std::sqrt(g.bandwidth_squared), 1.0, 2, g.shape);
        const long double via = g.factor * closed_form(gk, (long double)r * r / g.bandwidth_squared);
        CHECK(std::abs(via - psi) <= 1e-8L * std::abs(psi));
      }
    }
  }
  // the Laplacian's psi is singular at 0: its subgradient, 0
  CHECK(detail::gradient_factor(Kernel::laplacian(1.0), 0.0, 1.0) == 0.0);
}

}  // namespace

int main() {
  if (const int skip = test::skip_if_level_unsupported()) return skip;
  test_names_and_kinds();
  test_values();
  test_gradient_factors();
  if (test::failures == 0) std::printf("test_kernel_formulas: all checks passed\n");
  return test::failures == 0 ? 0 : 1;
}
