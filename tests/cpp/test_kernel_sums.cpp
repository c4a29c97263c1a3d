// Streaming kernel sums against direct long-double references written here,
// independently of the core's kernel map.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <nystrom_kme/interrupt.hpp>
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

using test::reference_kernel;

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

// K(X, X) is symmetric bit for bit (nystrom_feature_sums reads its row-major buffer as the
// column-major one): every distance is summed in the same order either way round, through
// the direct differences (d < 32) and the expansion, near-duplicates among them.
template <class T>
void test_self_matrix_is_symmetric() {
  for (Index d : {1, 10, 40, 300}) {
    RowMatrixXd X = gaussian_data(300, d, 3.0, 5.0, 40 + unsigned(d));
    X.row(7) = X.row(3);  // an exact duplicate
    X(11, 0) = X(12, 0) + 1e-9;
    X.row(11).tail(d - 1) = X.row(12).tail(d - 1);  // a near one
    const RowMatrix<T> Xt = X.cast<T>();
    for (const char* name : {"gaussian", "laplacian", "matern52", "laplacian_l1", "inverse_multiquadric", "linear"}) {
      const RowMatrixXd K = kernel_matrix<T>(Xt, Xt, Kernel::from_name(name, 2.0 * std::sqrt(double(d))));
      const bool symmetric = (K.array() == K.transpose().array()).all();
      if (!symmetric) std::fprintf(stderr, "K(X, X) not symmetric: %s, d = %ld, %zu-byte data\n", name, long(d), sizeof(T));
      CHECK(symmetric);
    }
  }
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


void test_whole_float_range() {
  // Bandwidths near the smallest normal double: k(x, x) = 1 exactly, 0 elsewhere.
  const RowMatrixXd X = gaussian_data(37, 4, 1.0, 0.0, 21);
  for (const char* name : {"gaussian", "laplacian", "matern32", "matern52", "inverse_multiquadric"}) {
    for (double s : {1e-200, 2.3e-308}) {
      const RowMatrixXd K = kernel_matrix<double>(X, X, Kernel::from_name(name, s));
      for (Index i = 0; i < K.rows(); ++i)
        for (Index j = 0; j < K.cols(); ++j) CHECK(K(i, j) == (i == j ? 1.0 : 0.0));
      const Eigen::VectorXd diag = kernel_diagonal<double>(X, Kernel::from_name(name, s));
      CHECK((diag.array() == 1.0).all());
    }
    CHECK_THROWS(Kernel::from_name(name, 1e-310));  // subnormal: 1 / bandwidth overflows
  }
  // The same points in other units with the bandwidth in those units: the same values.
  const RowMatrixXd Y = gaussian_data(300, 6, 1.0, 0.3, 22);
  for (const char* name : {"gaussian", "matern52", "inverse_multiquadric", "linear", "polynomial"}) {
    const Eigen::VectorXd ref = kernel_row_sums<double>(X.leftCols(4), Y.leftCols(4), Kernel::from_name(name, 1.5, 1.0, 3));
    for (double a : {1e150, 1e-170}) {
      const RowMatrixXd Xa = X.leftCols(4) * a, Ya = Y.leftCols(4) * a;
      const Eigen::VectorXd got = kernel_row_sums<double>(Xa, Ya, Kernel::from_name(name, 1.5 * a, 1.0, 3));
      const double err = ((got - ref).cwiseAbs().array() / ref.cwiseAbs().array().max(1e-300)).maxCoeff();
      if (err > 1e-12) std::fprintf(stderr, "%s scale %g: err %g\n", name, a, err);
      CHECK(err < 1e-12);
    }
  }
  // Data whose scaled values overflow: a clear error, never inf or NaN.
  RowMatrixXd huge = gaussian_data(20, 3, 1e300, 0.0, 23);
  CHECK_THROWS(kernel_row_sums<double>(huge, huge, Kernel::gaussian(1e-10)));
}

void test_few_very_wide_rows() {
  // d = 20,000 (160 KB a row) with 3 rows: summed pair by pair, against the tiled
  // path's values on the same data (A with 16+ rows and B with 256+ rows would tile).
  const Index d = 20000;
  const RowMatrixXd A = gaussian_data(3, d, 1.0, 0.0, 31), B = gaussian_data(5, d, 1.0, 0.1, 32);
  const Kernel kernel = Kernel::gaussian(150.0);
  const RowMatrixXd K = kernel_matrix<double>(A, B, kernel);
  for (Index i = 0; i < 3; ++i) {
    for (Index j = 0; j < 5; ++j) {
      long double d2 = 0;
      for (Index f = 0; f < d; ++f) {
        const long double e = (long double)A(i, f) - B(j, f);
        d2 += e * e;
      }
      CHECK(std::abs(K(i, j) - double(std::exp(-d2 / (2.0L * 150 * 150)))) < 1e-13);
    }
  }
  const RowMatrixXd W = gaussian_data(5, 3, 1.0, 0.0, 33);
  CHECK(((kernel_sums<double>(A, B, W, kernel) - K * W).cwiseAbs().array() < 1e-13).all());
}

bool stop_now() { return true; }

void test_interrupt_check_stops_a_long_call() {
  const RowMatrixXd X = gaussian_data(200000, 5, 1.0, 0.0, 41);
  const Kernel kernel = Kernel::gaussian(1.0);
  set_interrupt_check(&stop_now);
  bool interrupted = false;
  const auto start = std::chrono::steady_clock::now();
  try {
    (void)kernel_row_sums<double>(X, X, kernel);  // ~minutes of work without the check
  } catch (const Interrupted&) {
    interrupted = true;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  set_interrupt_check(nullptr);
  CHECK(interrupted);
  CHECK(seconds < 2.0);  // the check runs every 20 ms; work in flight finishes its tile
  // the pool is usable afterwards and gives the same result as before
  const Eigen::VectorXd a = kernel_row_sums<double>(X.topRows(500), X.topRows(3000), kernel);
  const Eigen::VectorXd b = kernel_row_sums<double>(X.topRows(500), X.topRows(3000), kernel);
  CHECK((a.array() == b.array()).all());
}

}  // namespace

int main() {
  if (const int skip = test::skip_if_level_unsupported()) return skip;
  test_every_kernel_both_dtypes();
  test_matrix_and_weighted_sums();
  test_self_matrix_is_symmetric<double>();
  test_self_matrix_is_symmetric<float>();
  test_far_from_origin();
  test_column_major_input_is_accepted();
  test_whole_float_range();
  test_few_very_wide_rows();
  test_interrupt_check_stops_a_long_call();
  test_thread_invariance();
  test_errors();
  if (test::failures == 0) std::printf("test_kernel_sums: all checks passed\n");
  return test::failures == 0 ? 0 : 1;
}
