// Kernel sums and their gradients (gradient_sums.hpp) against long-double references
// written here: the values from the kernels' definitions (check.hpp), the gradients by
// central differences of those values in long double, and the closed form at distance 0.
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include <nystrom_kme/gradient_sums.hpp>

#include "check.hpp"

using namespace nystrom_kme;

namespace {

const char* const kRadial[] = {"gaussian", "laplacian", "matern32", "matern52",
                               "inverse_multiquadric"};

RowMatrixXd shifted_normal(Index n, Index d, double shift, unsigned seed) {
  RowMatrixXd X = test::normal_matrix<double>(n, d, seed);
  X.array() += shift;
  return X;
}

Eigen::VectorXd signed_weights(Index q, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<double> u(-1.0, 2.0);
  Eigen::VectorXd w(q);
  for (Index j = 0; j < q; ++j) w[j] = u(gen);
  return w;
}

/// sum_j w_j k(a, b_j) in long double.
long double reference_sum(const std::string& name, const std::vector<long double>& a,
                          const RowMatrixXd& B, const Eigen::VectorXd& w, long double s) {
  const Index d = B.cols();
  std::vector<double> x(std::size_t(d), 0.0);
  long double total = 0;
  for (Index j = 0; j < B.rows(); ++j) {
    long double d2 = 0;
    for (Index f = 0; f < d; ++f) d2 += (a[std::size_t(f)] - B(j, f)) * (a[std::size_t(f)] - B(j, f));
    const long double r = std::sqrt(d2);
    long double k = 0;
    if (name == "gaussian") k = std::exp(-d2 / (2 * s * s));
    if (name == "laplacian") k = std::exp(-r / s);
    if (name == "matern32") k = (1 + std::sqrt(3.0L) * r / s) * std::exp(-std::sqrt(3.0L) * r / s);
    if (name == "matern52")
      k = (1 + std::sqrt(5.0L) * r / s + 5 * d2 / (3 * s * s)) * std::exp(-std::sqrt(5.0L) * r / s);
    if (name == "inverse_multiquadric") k = 1 / std::sqrt(1 + d2 / (s * s));
    total += w[j] * k;
  }
  return total;
}

/// [values, gradients] of row a by the definitions: central differences with step 1e-6
/// in long double (the truncation error, O(step^2), is far below the tolerances; no pair
/// sits within a step of another, where the Laplacian is not differentiable).
std::vector<long double> reference_row(const std::string& name, const double* a_row, Index d,
                                       const RowMatrixXd& B, const Eigen::VectorXd& w,
                                       long double s) {
  std::vector<long double> a(a_row, a_row + d), out(std::size_t(d + 1));
  out[0] = reference_sum(name, a, B, w, s);
  const long double step = 1e-6L;
  for (Index f = 0; f < d; ++f) {
    std::vector<long double> up = a, down = a;
    up[std::size_t(f)] += step;
    down[std::size_t(f)] -= step;
    out[std::size_t(1 + f)] =
        (reference_sum(name, up, B, w, s) - reference_sum(name, down, B, w, s)) / (2 * step);
  }
  return out;
}

template <class T>
void check_against_reference(Index d, double tolerance) {
  const RowMatrixXd A64 = shifted_normal(37, d, 3.0, 11 + unsigned(d));
  const RowMatrixXd B64 = shifted_normal(301, d, 3.5, 29 + unsigned(d));
  // the points as the core sees them (float32 inputs are rounded first)
  const RowMatrix<T> A = A64.cast<T>(), B = B64.cast<T>();
  const RowMatrixXd Ad = A.template cast<double>(), Bd = B.template cast<double>();
  const Eigen::VectorXd w = signed_weights(B.rows(), 5);
  for (const char* name : kRadial) {
    const double s = 0.8 * std::sqrt(double(d));
    const RowMatrixXd got = kernel_value_gradients<T>(A, B, w, Kernel::from_name(name, s));
    double worst = 0.0;
    for (Index i = 0; i < A.rows(); ++i) {
      const std::vector<long double> ref = reference_row(name, Ad.row(i).data(), d, Bd, w, s);
      long double scale = 0;  // the size of the row's terms: sum |w| (value), sum |w| / s (gradient)
      for (Index j = 0; j < w.size(); ++j) scale += std::abs(w[j]);
      for (Index f = 0; f <= d; ++f) {
        const long double unit = f == 0 ? scale : scale / s;
        worst = std::max(worst, double(std::abs(got(i, f) - ref[std::size_t(f)]) / unit));
      }
    }
    if (worst > tolerance) std::fprintf(stderr, "%s d=%ld T=%zu err %g\n", name, long(d), sizeof(T), worst);
    CHECK(worst <= tolerance);
  }
}

// The blocked route (any radial kernel) agrees with the fused one (Gaussian, Matern).
void test_routes_agree() {
  const RowMatrixXd A = shifted_normal(150, 7, -2.0, 3), B = shifted_normal(700, 7, -2.5, 4);
  const Eigen::VectorXd w = signed_weights(B.rows(), 6);
  for (const char* name : {"gaussian", "matern32", "matern52"}) {
    const Kernel kernel = Kernel::from_name(name, 1.7);
    const RowMatrixXd fused = kernel_value_gradients<double>(A, B, w, kernel);
    RowMatrixXd blocked = RowMatrixXd::Zero(A.rows(), A.cols() + 1);
    detail::add_value_gradients_blocked<double>(A, B, w, kernel, 1.0, blocked, {});
    const double err = (fused - blocked).cwiseAbs().maxCoeff() / fused.cwiseAbs().maxCoeff();
    if (err > 1e-12) std::fprintf(stderr, "%s routes differ by %g\n", name, err);
    CHECK(err <= 1e-12);
  }
}

// The fused route in several blocks of A (a ragged last one), its weights streamed over
// two superblocks of B (8192 rows at d = 9), gives the sums of the blocked route (an
// independent computation: float64; float32 data against float64 sums on the same points)
// and of one block.
template <class T>
void test_fused_blocks() {
  const RowMatrix<T> A = shifted_normal(250, 9, 0.5, 31).cast<T>(), B = shifted_normal(9000, 9, 1.0, 32).cast<T>();
  const RowMatrixXd Ad = A.template cast<double>(), Bd = B.template cast<double>();
  const Eigen::VectorXd w = signed_weights(B.rows(), 33);
  const double tolerance = std::is_same_v<T, float> ? 1e-6 : 1e-12;
  for (const char* name : {"gaussian", "matern32"}) {  // one pass; values by a second kernel
    const Kernel kernel = Kernel::from_name(name, 2.5);
    RowMatrixXd want = RowMatrixXd::Zero(A.rows(), A.cols() + 1);
    detail::add_value_gradients_blocked<double>(Ad, Bd, w, kernel, 1.0, want, {});
    const RowMatrixXd whole = kernel_value_gradients<T>(A, B, w, kernel);
    for (const Index a_rows : {100, 250, 7}) {
      RowMatrixXd got = RowMatrixXd::Zero(A.rows(), A.cols() + 1);
      const auto route = detail::fused_gradient(kernel);
      CHECK(route.has_value() && route->same == (name == std::string("gaussian")));
      detail::add_value_gradients_fused<T>(A, B, w, kernel, route->kernel, route->factor, route->same, 1.0, got, {},
                                           a_rows);
      const double err = (got - want).cwiseAbs().maxCoeff() / want.cwiseAbs().maxCoeff();
      const double err_whole = (got - whole).cwiseAbs().maxCoeff() / want.cwiseAbs().maxCoeff();
      if (!(err <= tolerance && err_whole <= tolerance))
        std::fprintf(stderr, "%s blocks of %ld rows: error %g, against one block %g\n", name, long(a_rows), err,
                     err_whole);
      CHECK(err <= tolerance);
      CHECK(err_whole <= tolerance);
    }
  }
}

// A row of A equal to a row of B: every kernel's gradient is finite; the Laplacian's pair
// at distance 0 adds 0, the smooth kernels' pair adds psi(0) (b - a) = 0 as well.
void test_coincident_points() {
  RowMatrixXd B = shifted_normal(40, 3, 0.0, 8);
  RowMatrixXd A = B.topRows(5);
  Eigen::VectorXd w = Eigen::VectorXd::Zero(B.rows());
  w[2] = 1.5;  // only the pair (a_2, b_2), at distance 0
  for (const char* name : kRadial) {
    const RowMatrixXd got = kernel_value_gradients<double>(A, B, w, Kernel::from_name(name, 0.9));
    CHECK(got.allFinite());
    CHECK(std::abs(got(2, 0) - 1.5) <= 1e-15);      // k(0) = 1
    for (Index f = 1; f <= 3; ++f) CHECK(got(2, f) == 0.0 || std::abs(got(2, f)) < 1e-15);
  }
  // float32 data, all of B in A: finite everywhere
  const RowMatrixXf Bf = B.cast<float>();
  const RowMatrixXd got = kernel_value_gradients<float>(Bf, Bf, Eigen::VectorXd::Ones(40),
                                                        Kernel::laplacian(0.5));
  CHECK(got.allFinite());
}

void test_scale_out_and_threads() {
  const RowMatrixXd A = shifted_normal(333, 5, 1.0, 12), B = shifted_normal(1000, 5, 1.0, 13);
  const Eigen::VectorXd w = signed_weights(B.rows(), 14);
  for (const char* name : kRadial) {
    const Kernel kernel = Kernel::from_name(name, 2.0);
    const RowMatrixXd once = kernel_value_gradients<double>(A, B, w, kernel, {1});
    const RowMatrixXd two = kernel_value_gradients<double>(A, B, w, kernel, {2});
    CHECK((once.array() == two.array()).all());  // fixed tasks: the same bits
    RowMatrixXd out = RowMatrixXd::Constant(A.rows(), A.cols() + 1, 1.0);
    add_kernel_value_gradients<double>(A, B, w, kernel, -0.5, out);
    CHECK(((out.array() - (1.0 - 0.5 * once.array())).abs() <= 1e-15 * (1.0 + once.array().abs())).all());
  }
  // empty B: nothing added; empty A: an empty result
  CHECK(kernel_value_gradients<double>(A, B.topRows(0), w.head(0), Kernel::gaussian(1.0)).isZero());
  CHECK(kernel_value_gradients<double>(A.topRows(0), B, w, Kernel::gaussian(1.0)).rows() == 0);
}

// float32 data are reduced in float lanes (gradient_sums.hpp): weights far outside float's
// range (1e38 and 1e-42 times a unit) give the float64 route's sums times that factor,
// with no overflow to inf nor underflow to 0, over 700 rows of B (runs and chunks of
// the float reduction, and a partial last chunk).
void test_float_weights_out_of_range() {
  const RowMatrixXf A = shifted_normal(40, 6, 0.5, 21).cast<float>();
  const RowMatrixXf B = shifted_normal(700, 6, 0.0, 22).cast<float>();
  const RowMatrixXd Ad = A.cast<double>(), Bd = B.cast<double>();
  const Eigen::VectorXd w = signed_weights(B.rows(), 23);
  for (const char* name : {"gaussian", "matern52"}) {
    const Kernel kernel = Kernel::from_name(name, 1.5);
    const RowMatrixXd want = kernel_value_gradients<double>(Ad, Bd, w, kernel);
    const double unit = want.cwiseAbs().maxCoeff();
    for (double factor : {1.0, 1e38, 1e-42}) {
      const Eigen::VectorXd wf = w * factor;
      const RowMatrixXd got = kernel_value_gradients<float>(A, B, wf, kernel) / factor;
      const double err = (got - want).cwiseAbs().maxCoeff() / unit;
      if (!(err <= 1e-6)) std::fprintf(stderr, "%s weights x %g: error %g\n", name, factor, err);
      CHECK(got.allFinite());
      CHECK(err <= 1e-6);
    }
  }
}

void test_errors() {
  const RowMatrixXd A = shifted_normal(4, 3, 0.0, 1), B = shifted_normal(6, 3, 0.0, 2);
  const Eigen::VectorXd w = Eigen::VectorXd::Ones(6);
  RowMatrixXd out = RowMatrixXd::Zero(4, 4);
  CHECK(test::throws_with<std::invalid_argument>(
      [&] { (void)kernel_value_gradients<double>(A, B, w, Kernel::from_name("linear", 1.0)); }, "radial"));
  CHECK(test::throws_with<std::invalid_argument>(
      [&] { (void)kernel_value_gradients<double>(A, B.leftCols(2), w, Kernel::gaussian(1.0)); }, "features"));
  CHECK(test::throws_with<std::invalid_argument>(
      [&] { (void)kernel_value_gradients<double>(A, B, w.head(5), Kernel::gaussian(1.0)); }, "w has 5"));
  RowMatrixXd bad = B;
  bad(1, 1) = std::nan("");
  CHECK(test::throws_with<std::invalid_argument>(
      [&] { (void)kernel_value_gradients<double>(A, bad, w, Kernel::gaussian(1.0)); }, "B contains NaN"));
  Eigen::VectorXd wbad = w;
  wbad[0] = INFINITY;
  CHECK(test::throws_with<std::invalid_argument>(
      [&] { (void)kernel_value_gradients<double>(A, B, wbad, Kernel::gaussian(1.0)); }, "w contains"));
  RowMatrixXd small = RowMatrixXd::Zero(4, 3);
  CHECK(test::throws_with<std::invalid_argument>(
      [&] { add_kernel_value_gradients<double>(A, B, w, Kernel::gaussian(1.0), 1.0, small); }, "out must"));
  CHECK(test::throws_with<std::invalid_argument>(
      [&] { add_kernel_value_gradients<double>(A, B, w, Kernel::gaussian(1.0), NAN, out); }, "scale"));
}

}  // namespace

int main() {
  if (const int skip = test::skip_if_level_unsupported()) return skip;
  for (Index d : {1, 3, 40}) {
    check_against_reference<double>(d, 1e-11);
    check_against_reference<float>(d, 1e-6);  // the fused route's float32 kernel values
  }
  test_routes_agree();
  test_fused_blocks<double>();
  test_fused_blocks<float>();
  test_coincident_points();
  test_scale_out_and_threads();
  test_float_weights_out_of_range();
  test_errors();
  if (test::failures == 0) std::printf("test_gradient_sums: all checks passed\n");
  return test::failures == 0 ? 0 : 1;
}
