// split_kernel_sums_multi: every kernel of a collection in one pass, against
// split_kernel_sums kernel by kernel and against long-double references; thread
// and chunking invariance, the wide-data path, interrupts and argument checks.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include <nystrom_kme/interrupt.hpp>
#include <nystrom_kme/multi_kernel_sums.hpp>

#include "check.hpp"

using namespace nystrom_kme;

namespace {

// One call's kernels measure one distance: the Euclidean kinds (the rational quadratic
// with its shape alpha = 0.7), or the l1 Laplacian (at l1 scales).
const std::vector<std::string> kRadial = {"gaussian", "laplacian", "matern32", "matern52", "inverse_multiquadric",
                                          "rational_quadratic"};
const std::vector<std::string> kL1 = {"laplacian_l1"};
constexpr double kAlpha = 0.7;

std::vector<Kernel> collection(double base, const std::vector<std::string>& names = kRadial) {
  std::vector<Kernel> kernels;
  for (const std::string& name : names)
    for (double f : {0.25, 1.0, 4.0}) kernels.push_back(Kernel::from_name(name, base * f, 1.0, 2, kAlpha));
  return kernels;
}

double rel_diff(const RowMatrixXd& a, const RowMatrixXd& b) {
  return (a - b).cwiseAbs().maxCoeff() / b.cwiseAbs().maxCoeff();
}

// Each kernel's sums against split_kernel_sums on fresh splits with the same seed
// (float64: the one-pass distances differ by the bandwidth scaling only) and the
// K(L, Z) W of the long-double definitions; chunked calls compose; bit-identical on
// 1, 2 and 3 threads.
template <class T>
void check_against_single(Index m, Index d, Index B, double single_tol, double ref_tol,
                          const std::vector<std::string>& names = kRadial) {
  const Index n1 = 700, n2 = 613;
  const RowMatrix<T> Z = test::normal_matrix<T>(n1 + n2, d, unsigned(11 + d));
  const RowMatrix<T> L = test::normal_matrix<T>(m, d, unsigned(3 + m));
  const std::vector<Kernel> kernels = collection(names == kL1 ? double(d) : std::sqrt(double(d)), names);
  RandomSplits labels(n1, n2, B, 9);
  const RowMatrixXd W = labels.next_weights(n1 + n2);
  RandomSplits splits(n1, n2, B, 9);
  const std::vector<RowMatrixXd> S = split_kernel_sums_multi<T>(L, Z, splits, kernels, {1});
  CHECK(splits.position() == n1 + n2);
  CHECK(S.size() == kernels.size());
  double worst_single = 0, worst_ref = 0;
  for (std::size_t j = 0; j < kernels.size(); ++j) {
    CHECK(S[j].rows() == m && S[j].cols() == B + 1);
    RandomSplits fresh(n1, n2, B, 9);
    worst_single = std::max(worst_single, rel_diff(S[j], split_kernel_sums<T>(L, Z, fresh, kernels[j], {1})));
    const std::string& name = names[j / 3];
    RowMatrixXd ref(m, B + 1);
    for (Index i = 0; i < m; ++i) {
      const RowMatrixXd li = L.row(i).template cast<double>();
      std::vector<long double> acc(std::size_t(B + 1), 0.0L);
      for (Index r = 0; r < n1 + n2; ++r) {
        const RowMatrixXd zr = Z.row(r).template cast<double>();
        const long double k = test::reference_kernel(name, li.data(), zr.data(), d, kernels[j].bandwidth(), 1, 2, kAlpha);
        for (Index c = 0; c <= B; ++c) acc[std::size_t(c)] += k * W(r, c);
      }
      for (Index c = 0; c <= B; ++c) ref(i, c) = double(acc[std::size_t(c)]);
    }
    worst_ref = std::max(worst_ref, rel_diff(S[j], ref));
  }
  if (!(worst_single < single_tol) || !(worst_ref < ref_tol)) {
    std::fprintf(stderr, "%s m %ld d %ld B %ld: vs single %g, vs reference %g\n",
                 sizeof(T) == 4 ? "float" : "double", long(m), long(d), long(B), worst_single, worst_ref);
  }
  CHECK(worst_single < single_tol);
  CHECK(worst_ref < ref_tol);
  for (int threads : {2, 3}) {
    RandomSplits again(n1, n2, B, 9);
    std::vector<RowMatrixXd> parts = split_kernel_sums_multi<T>(L, Z.topRows(333), again, kernels, {threads});
    const std::vector<RowMatrixXd> rest = split_kernel_sums_multi<T>(L, Z.bottomRows(n1 + n2 - 333), again,
                                                                     kernels, {threads});
    RandomSplits whole(n1, n2, B, 9);
    const std::vector<RowMatrixXd> same = split_kernel_sums_multi<T>(L, Z, whole, kernels, {threads});
    for (std::size_t j = 0; j < kernels.size(); ++j) {
      CHECK(same[j] == S[j]);  // bit-identical for any thread count
      // another summation order: wide kernels (values near 1) cancel to ~1e-13 relative
      CHECK(rel_diff(parts[j] + rest[j], S[j]) < 1e-12);
    }
  }
}

void test_against_single_kernels() {
  check_against_single<double>(37, 3, 200, 1e-13, 1e-12);  // direct distances
  check_against_single<double>(5, 40, 16, 1e-13, 1e-12);   // centred expansion
  check_against_single<double>(16, 7, 1, 1e-13, 1e-12);
  check_against_single<float>(21, 5, 17, 1e-5, 1e-5);
  check_against_single<double>(37, 3, 200, 1e-13, 1e-12, kL1);
  check_against_single<double>(5, 40, 16, 1e-13, 1e-12, kL1);
  check_against_single<float>(21, 5, 17, 1e-5, 1e-5, kL1);
}

void test_few_very_wide_rows() {
  // d = 20,000 with 5 rows of Z: the pairwise path, kernel by kernel.
  const Index d = 20000;
  const RowMatrixXd Z = test::normal_matrix<double>(5, d, 21), L = test::normal_matrix<double>(3, d, 22);
  const std::vector<Kernel> kernels = {Kernel::gaussian(150.0), Kernel::laplacian(300.0)};
  RandomSplits splits(2, 3, 4, 1);
  const std::vector<RowMatrixXd> S = split_kernel_sums_multi<double>(L, Z, splits, kernels);
  for (std::size_t j = 0; j < kernels.size(); ++j) {
    RandomSplits fresh(2, 3, 4, 1);
    CHECK(rel_diff(S[j], split_kernel_sums<double>(L, Z, fresh, kernels[j])) < 1e-14);
  }
}

bool stop_now() { return true; }

void test_interrupt() {
  const RowMatrixXd Z = test::normal_matrix<double>(200000, 5, 41);
  RandomSplits splits(100000, 100000, 200, 1);
  set_interrupt_check(&stop_now);
  bool interrupted = false;
  try {
    (void)split_kernel_sums_multi<double>(Z.topRows(500), Z, splits, collection(1.0));  // ~minutes without the check
  } catch (const Interrupted&) {
    interrupted = true;
  }
  set_interrupt_check(nullptr);
  CHECK(interrupted);
}

void test_errors() {
  const RowMatrixXd Z = test::normal_matrix<double>(50, 3, 1), L = Z.topRows(4);
  const std::vector<Kernel> ok = {Kernel::gaussian(1.0)};
  auto call = [&](const std::vector<Kernel>& kernels, const RowMatrixXd& l, const RowMatrixXd& z) {
    RandomSplits splits(25, 25, 9, 1);
    return split_kernel_sums_multi<double>(l, z, splits, kernels);
  };
  CHECK(test::throws_with<std::invalid_argument>([&] { call({}, L, Z); }, "kernels is empty"));
  CHECK(test::throws_with<std::invalid_argument>(
      [&] { call({Kernel::gaussian(1.0), Kernel::from_name("polynomial", 1.0)}, L, Z); }, "kernels[1] is not radial"));
  CHECK(test::throws_with<std::invalid_argument>(
      [&] { call({Kernel::gaussian(1e-160), Kernel::gaussian(1.0)}, L, Z); }, "bandwidths span"));
  RandomSplits small(25, 25, 9, 1);
  const RowMatrixXf Lf = L.cast<float>(), Zf = Z.cast<float>();
  CHECK(test::throws_with<std::invalid_argument>(  // a ratio of 1e20 squared overflows float
      [&] { split_kernel_sums_multi<float>(Lf, Zf, small, {Kernel::gaussian(1e-20), Kernel::laplacian(1.0)}); },
      "bandwidths span"));
  CHECK(test::throws_with<std::invalid_argument>(
      [&] { call({Kernel::gaussian(1.0), Kernel::from_name("laplacian_l1", 1.0)}, L, Z); },
      "gaussian and laplacian_l1 measure different distances"));
  CHECK(test::throws_with<std::invalid_argument>([&] { call(ok, L.topRows(0), Z); }, "L needs at least one row"));
  CHECK(test::throws_with<std::invalid_argument>(
      [&] { call(ok, L, test::normal_matrix<double>(51, 3, 2)); }, "51 rows but the splits have 50 left"));
  CHECK(test::throws_with<std::invalid_argument>([&] { call(ok, L, test::normal_matrix<double>(50, 4, 2)); },
                                                 "dimension mismatch"));
  RowMatrixXd bad = Z;
  bad(3, 1) = std::nan("");
  CHECK(test::throws_with<std::invalid_argument>([&] { call(ok, L, bad); }, "Z contains NaN or inf"));
  // Z without rows: zero sums and the cursor stays
  RandomSplits splits(25, 25, 9, 1);
  const auto none = split_kernel_sums_multi<double>(L, Z.topRows(0), splits, ok);
  CHECK(none.size() == 1 && none[0].rows() == 4 && none[0].cols() == 10 && none[0].isZero(0.0));
  CHECK(splits.position() == 0);
}

}  // namespace

int main() {
  if (const int skip = test::skip_if_level_unsupported()) return skip;
  test_against_single_kernels();
  test_few_very_wide_rows();
  test_interrupt();
  test_errors();
  if (test::failures == 0) std::printf("test_multi_kernel_sums: all checks passed\n");
  return test::failures == 0 ? 0 : 1;
}
