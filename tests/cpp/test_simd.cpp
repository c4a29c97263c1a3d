// Instruction-set levels: the selection API, agreement between levels (the
// documented bound: 1e-13 relative on sums of non-negative terms in float64),
// and the paths whose shape depends on the vector width (weight panels walked in
// slices, the finite check's tails), checked at every level the CPU runs.
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <nystrom_kme/kernel_sums.hpp>
#include <nystrom_kme/sampling.hpp>
#include <nystrom_kme/simd.hpp>

#include "check.hpp"

using namespace nystrom_kme;

namespace {

double max_rel_diff(const RowMatrixXd& a, const RowMatrixXd& b) {
  return ((a - b).cwiseAbs().array() / b.cwiseAbs().array().max(1e-300)).maxCoeff();
}

// Normwise: single kernel values of the polynomial kernel cross zero, where no
// relative bound per entry holds for any method.
double max_normwise_diff(const RowMatrixXd& a, const RowMatrixXd& b) {
  return (a - b).cwiseAbs().maxCoeff() / b.cwiseAbs().maxCoeff();
}

void test_level_api() {
  const std::vector<SimdLevel> compiled = compiled_simd_levels();
  const std::vector<SimdLevel> available = available_simd_levels();
  CHECK(!compiled.empty());
  CHECK(!available.empty());
  for (SimdLevel level : available) CHECK(cpu_supports(level));
  // Without NYSTROM_KME_SIMD the best available level runs.
  const char* env = std::getenv("NYSTROM_KME_SIMD");
  if (!env || std::string(env).empty()) CHECK(simd_level() == available.back());
  CHECK(parse_simd_level("avx2") == SimdLevel::avx2);
  CHECK_THROWS(parse_simd_level("sse9"));
#if defined(__x86_64__)
  CHECK(cpu_supports(SimdLevel::baseline));
  CHECK(!cpu_supports(SimdLevel::neon));
  CHECK_THROWS(set_simd_level(SimdLevel::neon));  // not compiled for x86-64
#endif
}

/// Everything a level computes, on shapes that cross every block boundary.
struct Results {
  RowMatrixXd sums64, sums32, wide64, wide32, matrix64, paired64;
  std::vector<Index> pivots;
};

Results compute_all(const Kernel& kernel, Index d) {
  const RowMatrixXd X = test::normal_matrix<double>(1237, d, 11 + unsigned(d));
  const RowMatrixXd L = X.topRows(37);
  const RowMatrixXf Xf = X.cast<float>(), Lf = L.cast<float>();
  const RowMatrixXd W = test::normal_matrix<double>(1237, 21, 3).cwiseAbs();  // 21 columns: two weight panels
  Results r;
  r.sums64 = kernel_row_sums<double>(L, X, kernel);
  r.sums32 = kernel_row_sums<float>(Lf, Xf, kernel);
  r.wide64 = kernel_sums<double>(L, X, W, kernel);
  r.wide32 = kernel_sums<float>(Lf, Xf, W, kernel);
  r.matrix64 = kernel_matrix<double>(L, X, kernel);
  r.paired64 = paired_kernel<double>(X.topRows(300), X.middleRows(300, 300), kernel);
  r.pivots = pivoted_cholesky<double>(X, kernel, 25, PivotRule::greedy).pivots;
  // Multi-column sums against the dense matrix of the same level.
  const RowMatrixXd dense = r.matrix64 * W;
  CHECK(max_rel_diff(r.wide64, dense) < 1e-12);
  const RowMatrixXd dense32 = kernel_matrix<float>(Lf, Xf, kernel) * W;
  CHECK(max_rel_diff(r.wide32, dense32) < 1e-5);
  return r;
}

void test_levels_agree() {
  const std::vector<SimdLevel> levels = available_simd_levels();
  const SimdLevel before = simd_level();
  const char* names[] = {"gaussian", "laplacian", "matern32", "matern52", "inverse_multiquadric", "polynomial"};
  for (Index d : {3, 40}) {
    for (const char* name : names) {
      const Kernel kernel = Kernel::from_name(name, std::sqrt(double(d)), 1.0, 3);
      set_simd_level(levels.front());
      const Results ref = compute_all(kernel, d);
      for (SimdLevel level : levels) {
        set_simd_level(level);
        CHECK(simd_level() == level);
        const Results got = compute_all(kernel, d);
        const double e64 = max_rel_diff(got.sums64, ref.sums64);
        const double ew = max_rel_diff(got.wide64, ref.wide64);
        const double em = max_normwise_diff(got.matrix64, ref.matrix64);
        const double ep = max_normwise_diff(got.paired64, ref.paired64);
        const double e32 = max_rel_diff(got.sums32, ref.sums32);
        if (e64 > 1e-13 || ew > 1e-13 || em > 1e-13 || ep > 1e-13 || e32 > 1e-5) {
          std::fprintf(stderr, "%s vs %s, %s d=%ld: sums %g wide %g matrix %g paired %g f32 %g\n",
                       to_string(level), to_string(levels.front()), name, long(d), e64, ew, em, ep, e32);
        }
        CHECK(e64 <= 1e-13);
        CHECK(ew <= 1e-13);
        CHECK(em <= 1e-13);
        CHECK(ep <= 1e-13);
        CHECK(e32 <= 1e-5);
        CHECK(got.pivots == ref.pivots);
      }
    }
  }
  set_simd_level(before);
}

template <class T>
void check_finite_detection() {
  // Every position of a non-finite value is found, in contiguous and strided
  // matrices, whatever the vector width (tails included).
  for (Index cols : {1, 3, 8, 17, 33}) {
    RowMatrix<T> M = RowMatrix<T>::Ones(5, cols + 2);
    CHECK(detail::simd_table().template ops<T>().all_finite(M.data(), 5, cols, M.outerStride()));
    CHECK(detail::simd_table().template ops<T>().all_finite(M.data(), 5, cols + 2, cols + 2));
    for (Index i = 0; i < 5; ++i) {
      for (Index c = 0; c < cols; ++c) {
        for (T bad : {std::numeric_limits<T>::quiet_NaN(), std::numeric_limits<T>::infinity(),
                      -std::numeric_limits<T>::infinity()}) {
          M(i, c) = bad;
          CHECK(!detail::simd_table().template ops<T>().all_finite(M.data(), 5, cols, M.outerStride()));
          CHECK(!detail::simd_table().template ops<T>().all_finite(M.data(), 5, cols + 2, cols + 2));
          M(i, c) = T(1);
        }
      }
    }
    M(4, cols + 1) = std::numeric_limits<T>::quiet_NaN();  // outside the strided view: ignored
    CHECK(detail::simd_table().template ops<T>().all_finite(M.data(), 5, cols, M.outerStride()));
  }
}

void test_finite_checks_every_level() {
  const SimdLevel before = simd_level();
  for (SimdLevel level : available_simd_levels()) {
    set_simd_level(level);
    check_finite_detection<double>();
    check_finite_detection<float>();
  }
  set_simd_level(before);
}

}  // namespace

int main() {
  if (const int skip = test::skip_if_level_unsupported()) return skip;
  test_level_api();
  test_levels_agree();
  test_finite_checks_every_level();
  if (test::failures == 0) std::printf("test_simd: all checks passed\n");
  return test::failures == 0 ? 0 : 1;
}
