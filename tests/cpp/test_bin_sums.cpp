// bin_sums.hpp, matrix_product.hpp and feature_sums.hpp: the aggregated test's core
// pieces against long-double and dense references, their bit-identity for any thread
// count, and their precondition checks.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Cholesky>

#include <nystrom_kme/bin_sums.hpp>
#include <nystrom_kme/feature_sums.hpp>
#include <nystrom_kme/kernel_sums.hpp>
#include <nystrom_kme/matrix_product.hpp>

#include "check.hpp"

using nystrom_kme::Index;
using nystrom_kme::Kernel;
using nystrom_kme::RowMatrix;
using nystrom_kme::RowMatrixXd;

namespace {

std::vector<std::int64_t> random_bins(Index n, Index n_bins, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<std::int64_t> pick(-1, n_bins - 1);  // -1: skipped rows
  std::vector<std::int64_t> bins(static_cast<std::size_t>(n));
  for (auto& b : bins) b = pick(gen);
  return bins;
}

// Every kernel of a mixed list (bandwidths 40x apart) against long double, rows spread
// over several superblocks (q = 9000 at d = 3), both dtypes and the expansion path (d = 40);
// 50 bins give runs of one bin longer than a chunk (the rows are packed in bin order),
// 20000 bins runs of 0 or 1 row.
// The kernels of one call measure one distance: the Euclidean kinds, or l1 Laplacians (at
// l1 scales), and a rational quadratic with its shape parameter alpha = 0.7.
const std::vector<std::string> kEuclidean = {"gaussian", "laplacian", "matern32", "matern52", "inverse_multiquadric",
                                             "rational_quadratic"};
const std::vector<std::string> kL1 = {"laplacian_l1", "laplacian_l1", "laplacian_l1"};
constexpr double kAlpha = 0.7;

template <class T>
void check_against_long_double(Index d, double tolerance, Index n_bins = 50,
                               const std::vector<std::string>& names = kEuclidean) {
  const Index m = 37, q = 9000;
  const RowMatrix<T> L = test::normal_matrix<T>(m, d, 3);
  const RowMatrix<T> Z = test::normal_matrix<T>(q, d, 4);
  const std::vector<std::int64_t> bins = random_bins(q, n_bins, 5);
  const double s = names.front() == "laplacian_l1" ? double(d) : std::sqrt(double(d));
  std::vector<Kernel> kernels;
  for (std::size_t j = 0; j < names.size(); ++j) {
    kernels.push_back(Kernel::from_name(names[j], s * (0.25 + 2.5 * j), 1.0, 2, kAlpha));
  }
  const auto E = nystrom_kme::kernel_bin_sums<T>(L, Z, bins.data(), n_bins, kernels, {1});
  for (std::size_t j = 0; j < kernels.size(); ++j) {
    std::vector<long double> ref(std::size_t(m * n_bins), 0.0L);
    for (Index i = 0; i < m; ++i) {
      const RowMatrixXd li = L.row(i).template cast<double>();
      for (Index r = 0; r < q; ++r) {
        if (bins[std::size_t(r)] < 0) continue;
        const RowMatrixXd zr = Z.row(r).template cast<double>();
        ref[std::size_t(i * n_bins + bins[std::size_t(r)])] +=
            test::reference_kernel(names[j], li.data(), zr.data(), d, kernels[j].bandwidth(), 1, 2, kAlpha);
      }
    }
    double worst = 0, scale = 0;
    for (Index i = 0; i < m; ++i) {
      for (Index g = 0; g < n_bins; ++g) {
        const long double r = ref[std::size_t(i * n_bins + g)];
        worst = std::max(worst, double(std::abs(E[j](i, g) - r)));
        scale = std::max(scale, double(std::abs(r)));
      }
    }
    if (!(worst <= tolerance * scale)) {
      std::fprintf(stderr, "%s d %ld: relative error %g\n", names[j].c_str(), long(d), worst / scale);
    }
    CHECK(worst <= tolerance * scale);
  }
  // the same bits on 2 and 3 threads, and chunks adding up to the whole
  for (int threads : {2, 3}) {
    const auto again = nystrom_kme::kernel_bin_sums<T>(L, Z, bins.data(), n_bins, kernels, {threads});
    for (std::size_t j = 0; j < kernels.size(); ++j) CHECK(again[j] == E[j]);
  }
  // nested landmark sets: kernel j on the first rows[j] rows only (a whole tile, part of
  // one, a single row) gives those rows' sums of the whole pass, bit for bit
  std::vector<Index> rows;
  for (std::size_t j = 0; j < kernels.size(); ++j) rows.push_back(std::max<Index>(1, m - 11 * Index(j)));
  for (int threads : {1, 3}) {
    const auto nested = nystrom_kme::kernel_bin_sums<T>(L, Z, bins.data(), n_bins, kernels, {threads}, rows);
    for (std::size_t j = 0; j < kernels.size(); ++j) {
      CHECK(nested[j].rows() == rows[j] && nested[j] == E[j].topRows(rows[j]));
    }
  }
  std::vector<RowMatrixXd> parts(kernels.size(), RowMatrixXd::Zero(m, n_bins));
  std::vector<double*> outs;
  for (auto& p : parts) outs.push_back(p.data());
  const Index cut = 4321;
  nystrom_kme::add_kernel_bin_sums<T>(L, Z.topRows(cut), bins.data(), n_bins, kernels, outs, {2});
  nystrom_kme::add_kernel_bin_sums<T>(L, Z.bottomRows(q - cut), bins.data() + cut, n_bins, kernels, outs, {2});
  // float data's runs are summed in float lanes, and a cut moves where runs end: the
  // parts agree to a few float ulps of the largest sum (float64: to round-off)
  const double parts_tolerance = sizeof(T) == 4 ? 8 * double(std::numeric_limits<float>::epsilon()) : 1e-13;
  for (std::size_t j = 0; j < kernels.size(); ++j) {
    const double diff = (parts[j] - E[j]).cwiseAbs().maxCoeff(), scale = E[j].cwiseAbs().maxCoeff();
    if (!(diff <= parts_tolerance * scale)) std::fprintf(stderr, "parts: relative %g\n", diff / scale);
    CHECK(diff <= parts_tolerance * scale);
  }
}

// Float32 kernel values one by one (one row per bin, and the kernel matrix) along a ray, from
// 1 down past float's smallest normal: the base-2 maps (exp2 after log2(e) folded into the
// scale: map_scaled, kernel_map) within
// (4e-7 + 3e-7 t) of long double, t the exponent (the rounding of the float distance grows
// with it), and values below float's normals 0 or within that bound.
void test_float_values_one_by_one() {
  const Index q = 3000;
  nystrom_kme::RowMatrixXf L = nystrom_kme::RowMatrixXf::Zero(2, 1), Z(q, 1);
  L(1, 0) = 0.375f;
  for (Index i = 0; i < q; ++i) Z(i, 0) = float(i) * 0.0047f;  // up to 14 bandwidths away
  std::vector<std::int64_t> bins(static_cast<std::size_t>(q));
  for (Index i = 0; i < q; ++i) bins[std::size_t(i)] = i;
  for (const char* name : {"gaussian", "laplacian_l1", "matern32"}) {
    const double h = std::string(name) == "laplacian_l1" ? 0.15 : 1.0;
    const Kernel kernel = Kernel::from_name(name, h, 1.0, 2, 1.0);
    // the binned sums (map_scaled) and the kernel matrix (kernel_map, as the fit's sums)
    const RowMatrixXd E = nystrom_kme::kernel_bin_sums<float>(L, Z, bins.data(), q, {kernel})[0];
    const RowMatrixXd K = nystrom_kme::kernel_matrix<float>(L, Z, kernel);
    for (const RowMatrixXd* got : {&E, &K}) {
      double worst = 0;
      for (Index r = 0; r < 2; ++r) {
        for (Index i = 0; i < q; ++i) {
          const double l = L(r, 0), z = Z(i, 0), dist = std::abs((long double)z - l) / h;
          const long double want = test::reference_kernel(name, &l, &z, 1, h, 1, 2, 1.0);
          const std::string kind = name;
          const double t = kind == "gaussian" ? dist * dist / 2 : kind == "matern32" ? std::sqrt(3.0) * dist : dist;
          const double value = (*got)(r, i), err = double(std::abs(value - want)), bound = (4e-7 + 3e-7 * t) * double(want);
          if (want < 1.2e-38L) {
            CHECK(value == 0.0 || err <= bound);
          } else {
            worst = std::max(worst, err / double(want) / (4e-7 + 3e-7 * t));
            CHECK(err <= bound);
          }
        }
      }
      if (!(worst <= 1)) std::fprintf(stderr, "%s (%s): %g of the bound\n", name, got == &E ? "bins" : "matrix", worst);
    }
  }
}

void test_bin_sums_errors() {
  const RowMatrixXd L = test::normal_matrix(4, 2, 1), Z = test::normal_matrix(10, 2, 2);
  std::vector<std::int64_t> bins(10, 0);
  const std::vector<Kernel> gauss = {Kernel::gaussian(1.0)};
  using test::throws_with;
  CHECK(throws_with<std::invalid_argument>([&] { nystrom_kme::kernel_bin_sums<double>(L, Z, bins.data(), 3, {}); },
                                           "no kernels"));
  CHECK(throws_with<std::invalid_argument>(
      [&] { nystrom_kme::kernel_bin_sums<double>(L, Z, bins.data(), 3, {Kernel::from_name("linear", 1.0)}); },
      "radial"));
  CHECK(throws_with<std::invalid_argument>([&] { nystrom_kme::kernel_bin_sums<double>(L, Z, bins.data(), 0, gauss); },
                                           "n_bins"));
  bins[7] = 3;
  CHECK(throws_with<std::invalid_argument>([&] { nystrom_kme::kernel_bin_sums<double>(L, Z, bins.data(), 3, gauss); },
                                           "bins[7] = 3"));
  bins[7] = -2;
  CHECK(throws_with<std::invalid_argument>([&] { nystrom_kme::kernel_bin_sums<double>(L, Z, bins.data(), 3, gauss); },
                                           "bins[7] = -2"));
  bins[7] = 0;
  RowMatrixXd bad = Z;
  bad(2, 1) = std::nan("");
  CHECK(throws_with<std::invalid_argument>([&] { nystrom_kme::kernel_bin_sums<double>(L, bad, bins.data(), 3, gauss); },
                                           "NaN"));
  for (const std::vector<Index>& rows : {std::vector<Index>{0}, std::vector<Index>{5}, std::vector<Index>{4, 4}}) {
    CHECK(throws_with<std::invalid_argument>(
        [&] { nystrom_kme::kernel_bin_sums<double>(L, Z, bins.data(), 3, gauss, {}, rows); }, "kernel_rows"));
  }
  const RowMatrixXd wide = test::normal_matrix(10, 3, 3);
  CHECK(throws_with<std::invalid_argument>([&] { nystrom_kme::kernel_bin_sums<double>(L, wide, bins.data(), 3, gauss); },
                                           "features"));
  CHECK(throws_with<std::invalid_argument>(
      [&] { nystrom_kme::add_kernel_bin_sums<double>(L, Z, bins.data(), 3, gauss, {nullptr}); }, "null output"));
  // kernel j's distances are scaled by (widest / its bandwidth)^2 in T: refused where that overflows
  const nystrom_kme::RowMatrixXf Lf = L.cast<float>(), Zf = Z.cast<float>();
  const std::vector<Kernel> apart = {Kernel::gaussian(1e-20), Kernel::gaussian(1.0)};
  CHECK(throws_with<std::invalid_argument>([&] { nystrom_kme::kernel_bin_sums<float>(Lf, Zf, bins.data(), 3, apart); },
                                           "overflows float32"));
  CHECK(nystrom_kme::kernel_bin_sums<double>(L, Z, bins.data(), 3, apart).size() == 2);
  // one distance per call: a Gaussian beside an l1 Laplacian is refused, naming both
  const std::vector<Kernel> mixed = {Kernel::gaussian(1.0), Kernel::from_name("laplacian_l1", 1.0)};
  CHECK(throws_with<std::invalid_argument>([&] { nystrom_kme::kernel_bin_sums<double>(L, Z, bins.data(), 3, mixed); },
                                           "gaussian and laplacian_l1 measure different distances"));
}

// Against a long-double product, for shapes around the micro-tile (6 rows) and the
// task size (48 rows), and the same bits on 1 to 3 threads.
void test_matrix_product() {
  for (Index p : {1, 5, 48, 49, 130}) {
    for (Index k : {1, 7, 300}) {
      const RowMatrixXd A = test::normal_matrix(p, k, unsigned(p + k));
      const RowMatrixXd B = test::normal_matrix(k, 13, unsigned(2 * k + 1));
      const RowMatrixXd C = nystrom_kme::matrix_product(A, B, {1});
      double worst = 0;
      for (Index i = 0; i < p; ++i) {
        for (Index j = 0; j < 13; ++j) {
          long double ref = 0, size = 0;
          for (Index t = 0; t < k; ++t) {
            ref += (long double)A(i, t) * B(t, j);
            size += std::abs((long double)A(i, t) * B(t, j));
          }
          worst = std::max(worst, double(std::abs(C(i, j) - ref) / size));
        }
      }
      CHECK(worst < 1e-14);
      for (int threads : {2, 3}) CHECK(nystrom_kme::matrix_product(A, B, {threads}) == C);
    }
  }
  CHECK(nystrom_kme::matrix_product(RowMatrixXd(0, 3), RowMatrixXd::Ones(3, 2)).rows() == 0);
  CHECK(test::throws_with<std::invalid_argument>(
      [] { nystrom_kme::matrix_product(RowMatrixXd::Ones(2, 3), RowMatrixXd::Ones(4, 2)); }, "3 columns"));
}

// Full rank: ||y_b||^2 = s_b^T K^{-1} s_b and y_b . y_c = s_b^T K^{-1} s_c (LLT of K as the
// reference); duplicated landmarks: the rank drops and the forms equal those of the
// distinct landmarks alone; bit-identical on 1 to 3 threads. m = 300: the blocked
// triangular solve (blocks of 64 rows) with its products at the dispatched level.
void test_feature_sums(Index m) {
  const Index k = 70;
  const RowMatrixXd L = test::normal_matrix(m, 3, 8);
  const Kernel kernel = Kernel::gaussian(m > 100 ? 0.3 : 0.8);  // K of full numerical rank
  const RowMatrixXd S = test::normal_matrix(m, k, 9);
  const auto F = nystrom_kme::nystrom_feature_sums<double>(L, S, kernel, 0.0, {1});
  CHECK(F.rank == m);
  const Eigen::MatrixXd K = nystrom_kme::kernel_matrix<double>(L, L, kernel);
  const Eigen::MatrixXd KinvS = K.llt().solve(Eigen::MatrixXd(S));
  const Eigen::MatrixXd forms = Eigen::MatrixXd(S).transpose() * KinvS;
  const Eigen::MatrixXd ours = F.features.transpose() * F.features;
  CHECK((ours - forms).cwiseAbs().maxCoeff() <= 1e-8 * forms.cwiseAbs().maxCoeff());
  for (int threads : {2, 3}) CHECK(nystrom_kme::nystrom_feature_sums<double>(L, S, kernel, 0.0, {threads}).features == F.features);

  RowMatrixXd twice(2 * m, 3);
  twice << L, L;
  RowMatrixXd S2(2 * m, k);
  S2 << S, S;  // sums at duplicated landmarks are equal
  const auto D = nystrom_kme::nystrom_feature_sums<double>(twice, S2, kernel);
  CHECK(D.rank == m);
  const Eigen::MatrixXd dup = D.features.transpose() * D.features;
  CHECK((dup - forms).cwiseAbs().maxCoeff() <= 1e-8 * forms.cwiseAbs().maxCoeff());

  // the weights of the first columns: K^{-1} s_b at full rank; with duplicated landmarks,
  // one of each pair weighted (the pivots), the function k(., L) alpha unchanged
  const auto W = nystrom_kme::nystrom_feature_sums<double>(L, S, kernel, 0.0, {2}, 3);
  CHECK(W.weights.rows() == m && W.weights.cols() == 3 && W.features == F.features);
  CHECK((W.weights - KinvS.leftCols(3)).cwiseAbs().maxCoeff() <= 1e-7 * KinvS.leftCols(3).cwiseAbs().maxCoeff());
  const auto Wd = nystrom_kme::nystrom_feature_sums<double>(twice, S2, kernel, 0.0, {1}, 2);
  const Eigen::MatrixXd folded = Wd.weights.topRows(m) + Wd.weights.bottomRows(m);
  CHECK((folded - KinvS.leftCols(2)).cwiseAbs().maxCoeff() <= 1e-7 * KinvS.leftCols(2).cwiseAbs().maxCoeff());
  Index zero_rows = 0;
  for (Index i = 0; i < 2 * m; ++i) zero_rows += Wd.weights.row(i).isZero(0.0);
  CHECK(zero_rows == m);
  CHECK(nystrom_kme::nystrom_feature_sums<double>(L, S, kernel).weights.cols() == 0);

  using test::throws_with;
  CHECK(throws_with<std::invalid_argument>(
      [&] { nystrom_kme::nystrom_feature_sums<double>(L, RowMatrixXd(m, 0), kernel); }, "at least one column"));
  CHECK(throws_with<std::invalid_argument>(
      [&] { nystrom_kme::nystrom_feature_sums<double>(L, RowMatrixXd::Ones(m + 1, 2), kernel); }, "rows"));
  CHECK(throws_with<std::invalid_argument>(
      [&] { nystrom_kme::nystrom_feature_sums<double>(L, S, kernel, 1.5); }, "rcond"));
  CHECK(throws_with<std::invalid_argument>(
      [&] { nystrom_kme::nystrom_feature_sums<double>(L, S, kernel, 0.0, {}, k + 1); }, "weight_columns"));
  RowMatrixXd bad = S;
  bad(0, 0) = INFINITY;
  CHECK(throws_with<std::invalid_argument>([&] { nystrom_kme::nystrom_feature_sums<double>(L, bad, kernel); }, "NaN or inf"));
}

}  // namespace

int main() {
  if (const int skip = test::skip_if_level_unsupported()) return skip;
  check_against_long_double<double>(3, 1e-13);
  check_against_long_double<double>(40, 1e-12);
  check_against_long_double<float>(3, 2e-6);
  check_against_long_double<double>(3, 1e-13, 20000);
  check_against_long_double<double>(3, 1e-13, 50, kL1);
  check_against_long_double<double>(40, 1e-12, 50, kL1);
  check_against_long_double<float>(3, 2e-6, 50, kL1);
  test_float_values_one_by_one();
  test_bin_sums_errors();
  test_matrix_product();
  test_feature_sums(60);
  test_feature_sums(300);
  if (test::failures == 0) std::printf("test_bin_sums: all checks passed\n");
  return test::failures == 0 ? 0 : 1;
}
