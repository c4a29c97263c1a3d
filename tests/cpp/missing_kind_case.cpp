// Compiled by ctest, not run: the kernel formulas against a KernelKind with one more
// kind than kernel_formulas.inl has a case for (NYSTROM_KME_TEST_EXTRA_KIND). With
// -Werror=switch the build must fail naming that kind (test missing_kind_fails_the_build);
// without the extra kind the same file compiles (missing_kind_control), so the failure
// is the missing case and nothing else.
namespace probe {

enum class KernelKind : int {
  gaussian,
  laplacian,
  matern32,
  matern52,
  inverse_multiquadric,
  rational_quadratic,
  laplacian_l1,
  linear,
  polynomial,
#if defined(NYSTROM_KME_TEST_EXTRA_KIND)
  fake_new_kind,
#endif
};
enum class Distance : int { squared_euclidean, l1, inner_product };
struct KernelParams {
  double offset = 1.0;
  int degree = 2;
  double shape = 1.0;
};

#define NYSTROM_KME_FORMULA inline
#include <nystrom_kme/kernel_formulas.inl>

int code_of(KernelKind kind) {
  return visit_kind(kind, [](auto tag) { return int(decltype(tag)::kind); }, [] { return -1; });
}

}  // namespace probe

int main() { return probe::code_of(probe::KernelKind::gaussian); }
