// Streaming kernel sums against direct long-double references written here,
// independently of the core's kernel map.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <nystrom_kme/kernel_sums.hpp>

#include "check.hpp"

#if defined(NYSTROM_KME_WITH_OPENMP)
#include <omp.h>
#endif

using namespace nystrom_kme;

namespace {

RowMatrixXd gaussian_data(Index n, Index d, double scale, double shift, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal(0.0, scale);
  RowMatrixXd X(n, d);
  for (Index i = 0; i < n; ++i)
    for (Index k = 0; k < d; ++k) X(i, k) = normal(gen) + shift;
  return X;
}

// k(x, y) straight from the definitions, in long double.
long double reference_kernel(const std::string& name, const double* x, const double* y, Index d,
                             long double s, long double c = 1, int p = 2) {
  long double d2 = 0, dot = 0;
  for (Index k = 0; k < d; ++k) {
    const long double e = (long double)x[k] - y[k];
    d2 += e * e;
    dot += (long double)x[k] * y[k];
  }
  const long double r = std::sqrt(d2);
  if (name == "gaussian") return std::exp(-d2 / (2 * s * s));
  if (name == "laplacian") return std::exp(-r / s);
  if (name == "matern32") return (1 + std::sqrt(3.0L) * r / s) * std::exp(-std::sqrt(3.0L) * r / s);
  if (name == "matern52")
    return (1 + std::sqrt(5.0L) * r / s + 5 * d2 / (3 * s * s)) * std::exp(-std::sqrt(5.0L) * r / s);
  if (name == "inverse_multiquadric") return 1 / std::sqrt(1 + d2 / (s * s));
  if (name == "linear") return dot / (s * s);
  return std::pow(dot / (s * s) + c, (long double)p);
}

double max_rel_error(const Eigen::VectorXd& got, const std::vector<long double>& ref) {
  double worst = 0;
  for (Index i = 0; i < got.size(); ++i) {
    const long double r = ref[std::size_t(i)];
    worst = std::max(worst, double(std::abs((got[i] - r) / r)));
  }
  return worst;
}

void test_every_kernel_both_dtypes() {
  const char* names[] = {"gaussian", "laplacian", "matern32", "matern52", "inverse_multiquadric",
                         "linear", "polynomial"};
  // n not a multiple of any block size; d below and above the direct-distance limit
  for (Index d : {1, 3, 40}) {
    const RowMatrixXd X = gaussian_data(1237, d, 1.0, 0.5, 7 + unsigned(d));
    const RowMatrixXd L = X.topRows(19);  // landmarks are data points: exact duplicates
    for (const char* name : names) {
      const double s = std::sqrt(double(d));
      const Kernel kernel = Kernel::from_name(name, s, 1.0, 3);
      std::vector<long double> ref(std::size_t(L.rows()), 0.0L);
      for (Index i = 0; i < L.rows(); ++i)
        for (Index j = 0; j < X.rows(); ++j)
          ref[std::size_t(i)] += reference_kernel(name, L.row(i).data(), X.row(j).data(), d, s, 1, 3);
      const Eigen::VectorXd got = kernel_row_sums<double>(L, X, kernel);
      const double err = max_rel_error(got, ref);
      if (err > 1e-13) std::fprintf(stderr, "%s d=%ld f64 err %g\n", name, long(d), err);
      CHECK(err <= 1e-13);
      const RowMatrixXf Xf = X.cast<float>(), Lf = L.cast<float>();
      std::vector<long double> ref32(ref.size(), 0.0L);
      const RowMatrixXd X32 = Xf.cast<double>(), L32 = Lf.cast<double>();
      for (Index i = 0; i < L.rows(); ++i)
        for (Index j = 0; j < X.rows(); ++j)
          ref32[std::size_t(i)] +=
              reference_kernel(name, L32.row(i).data(), X32.row(j).data(), d, s, 1, 3);
      const double err32 = max_rel_error(kernel_row_sums<float>(Lf, Xf, kernel), ref32);
      if (err32 > 2e-5) std::fprintf(stderr, "%s d=%ld f32 err %g\n", name, long(d), err32);
      CHECK(err32 <= 2e-5);
    }
  }
}

void test_matrix_and_weighted_sums() {
  const RowMatrixXd A = gaussian_data(33, 5, 1.0, 0.0, 1);
  const RowMatrixXd B = gaussian_data(301, 5, 1.0, 0.0, 2);
  const Kernel kernel = Kernel::from_name("matern52", 1.3);
  const RowMatrixXd K = kernel_matrix<double>(A, B, kernel);
  double worst = 0;
  for (Index i = 0; i < A.rows(); ++i)
    for (Index j = 0; j < B.rows(); ++j)
      worst = std::max(worst, std::abs(K(i, j) - double(reference_kernel(
                                                     "matern52", A.row(i).data(), B.row(j).data(), 5, 1.3))));
  CHECK(worst < 1e-14);
  const RowMatrixXd W = gaussian_data(301, 3, 1.0, 0.0, 3);
  const RowMatrixXd S = kernel_sums<double>(A, B, W, kernel);
  CHECK((S - K * W).cwiseAbs().maxCoeff() < 1e-12);
  const double total = kernel_total_sum<double>(A, B, kernel);
  CHECK(std::abs(total - K.sum()) < 1e-12 * K.sum());
  // m = 1 landmark, n smaller than one block
  const RowMatrixXd one = A.topRows(1);
  CHECK(std::abs(kernel_row_sums<double>(one, B, kernel)[0] - K.row(0).sum()) < 1e-13 * K.row(0).sum());
}

void test_far_from_origin() {
  // Data centred at 1e4: the distance expansion would lose every digit uncentred.
  const RowMatrixXd X = gaussian_data(500, 50, 1.0, 1e4, 5);
  const RowMatrixXd L = X.topRows(7);
  const Kernel kernel = Kernel::from_name("laplacian", 5.0);
  std::vector<long double> ref(7, 0.0L);
  for (Index i = 0; i < 7; ++i)
    for (Index j = 0; j < X.rows(); ++j)
      ref[std::size_t(i)] += reference_kernel("laplacian", L.row(i).data(), X.row(j).data(), 50, 5.0);
  CHECK(max_rel_error(kernel_row_sums<double>(L, X, kernel), ref) < 1e-10);
}

void test_column_major_input_is_accepted() {
  // The API takes row-major views; a column-major matrix converts (copied once).
  const RowMatrixXd X = gaussian_data(700, 6, 1.0, 0.0, 12);
  const RowMatrixXd L = X.topRows(9);
  const Eigen::MatrixXd Xc = X, Lc = L;
  const Kernel kernel = Kernel::gaussian(1.7);
  const Eigen::VectorXd row_major = kernel_row_sums<double>(L, X, kernel);
  const Eigen::VectorXd col_major = kernel_row_sums<double>(Lc, Xc, kernel);
  CHECK((row_major.array() == col_major.array()).all());
}

void test_thread_invariance() {
#if defined(NYSTROM_KME_WITH_OPENMP)
  const RowMatrixXd X = gaussian_data(20011, 10, 1.0, 0.0, 9);
  const RowMatrixXd L = X.topRows(101);
  const Kernel kernel = Kernel::gaussian(2.0);
  const Eigen::VectorXd one = kernel_row_sums<double>(L, X, kernel, {1});
  const Eigen::VectorXd two = kernel_row_sums<double>(L, X, kernel, {2});
  const Eigen::VectorXd three = kernel_row_sums<double>(L, X, kernel, {3});
  CHECK((one.array() == two.array()).all());
  CHECK((one.array() == three.array()).all());
#endif
}

void test_errors() {
  const RowMatrixXd A = RowMatrixXd::Ones(3, 2), B = RowMatrixXd::Ones(4, 3);
  CHECK_THROWS(kernel_row_sums<double>(A, B, Kernel::gaussian(1.0)));
  CHECK_THROWS(Kernel::gaussian(0.0));
  CHECK_THROWS(Kernel::gaussian(-1.0));
  CHECK_THROWS(Kernel::from_name("nope", 1.0));
  CHECK_THROWS(Kernel(KernelKind::polynomial, 1.0, 1.0, 0));
  RowMatrixXd bad = RowMatrixXd::Ones(4, 2);
  bad(2, 1) = std::nan("");
  CHECK_THROWS(kernel_row_sums<double>(A, bad, Kernel::gaussian(1.0)));
  const RowMatrixXd W = RowMatrixXd::Ones(5, 1);
  CHECK_THROWS(kernel_sums<double>(A, A, W, Kernel::gaussian(1.0)));
}

}  // namespace

int main() {
  if (const int skip = test::skip_if_level_unsupported()) return skip;
  test_every_kernel_both_dtypes();
  test_matrix_and_weighted_sums();
  test_far_from_origin();
  test_column_major_input_is_accepted();
  test_thread_invariance();
  test_errors();
  if (test::failures == 0) std::printf("test_kernel_sums: all checks passed\n");
  return test::failures == 0 ? 0 : 1;
}
