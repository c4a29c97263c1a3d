// Landmark samplers against dense references written here: pivoted Cholesky
// residual traces, thread-count invariance, herding and farthest-point choices, and
// ridge leverage estimates against the exact scores.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include <nystrom_kme/sampling.hpp>

#include "check.hpp"

using namespace nystrom_kme;
using test::throws_with;

namespace {

RowMatrixXd gaussian_data(Index n, Index d, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  RowMatrixXd X(n, d);
  for (Index i = 0; i < n; ++i)
    for (Index k = 0; k < d; ++k) X(i, k) = normal(gen) + (i % 3 == 0 ? 3.0 : 0.0);
  return X;
}

// Dense Gaussian kernel matrix straight from the definition (std::exp), independent
// of the core's kernel map.
Eigen::MatrixXd dense(const RowMatrixXd& X, const Kernel& k) {
  Eigen::MatrixXd K(X.rows(), X.rows());
  const double s = k.bandwidth();
  for (Index i = 0; i < X.rows(); ++i)
    for (Index j = 0; j < X.rows(); ++j) K(i, j) = std::exp(-(X.row(i) - X.row(j)).squaredNorm() / (2 * s * s));
  return K;
}

// tr(K - K_{:,S} K_SS^{-1} K_{S,:}) from the dense matrix.
double dense_residual_trace(const Eigen::MatrixXd& K, const std::vector<Index>& S) {
  const Index n = K.rows(), m = Index(S.size());
  if (m == 0) return K.trace();
  Eigen::MatrixXd KS(n, m), KSS(m, m);
  for (Index a = 0; a < m; ++a) {
    KS.col(a) = K.col(S[std::size_t(a)]);
    for (Index b = 0; b < m; ++b) KSS(a, b) = K(S[std::size_t(a)], S[std::size_t(b)]);
  }
  const Eigen::MatrixXd Z = KSS.llt().matrixL().solve(KS.transpose());
  return K.trace() - Z.colwise().squaredNorm().sum();
}

bool distinct_and_valid(const std::vector<Index>& v, Index n) {
  std::set<Index> s(v.begin(), v.end());
  for (Index i : v)
    if (i < 0 || i >= n) return false;
  return s.size() == v.size();
}

void check_cholesky(const PivotedCholeskyResult& r, const Eigen::MatrixXd& K, Index m) {
  CHECK(Index(r.pivots.size()) == m);
  CHECK(distinct_and_valid(r.pivots, K.rows()));
  CHECK(r.residual_trace.size() == r.pivots.size() + 1);
  for (std::size_t j = 1; j < r.residual_trace.size(); ++j) {
    CHECK(r.residual_trace[j] <= r.residual_trace[j - 1]);
    std::vector<Index> head(r.pivots.begin(), r.pivots.begin() + long(j));
    const double ref = dense_residual_trace(K, head);
    CHECK(std::abs(r.residual_trace[j] - ref) <= 1e-8 * K.trace());
  }
}

void test_pivoted_cholesky() {
  const RowMatrixXd X = gaussian_data(300, 3, 1);
  const Kernel k = Kernel::gaussian(1.5);
  const Eigen::MatrixXd K = dense(X, k);
  const Index m = 40;
  const auto greedy = pivoted_cholesky<double>(X, k, m, PivotRule::greedy);
  check_cholesky(greedy, K, m);
  // greedy = argmax of the exact residual diagonal at every step
  for (std::size_t j = 1; j < greedy.pivots.size(); ++j) {
    std::vector<Index> head(greedy.pivots.begin(), greedy.pivots.begin() + long(j));
    const Index m2 = Index(head.size());
    Eigen::MatrixXd KS(K.rows(), m2), KSS(m2, m2);
    for (Index a = 0; a < m2; ++a) {
      KS.col(a) = K.col(head[std::size_t(a)]);
      for (Index b = 0; b < m2; ++b) KSS(a, b) = K(head[std::size_t(a)], head[std::size_t(b)]);
    }
    const Eigen::MatrixXd Z = KSS.llt().matrixL().solve(KS.transpose());
    const Eigen::VectorXd res = K.diagonal() - Z.colwise().squaredNorm().transpose();
    CHECK(res[greedy.pivots[j]] >= res.maxCoeff() - 1e-10);
  }
  const auto rp = pivoted_cholesky<double>(X, k, m, PivotRule::random, 7);
  check_cholesky(rp, K, m);
  const auto blk = block_rpcholesky<double>(X, k, m, 16, 7);
  check_cholesky(blk, K, m);
  // pivots do not depend on the thread count
  for (int nt : {1, 2, 3}) {
    CHECK(pivoted_cholesky<double>(X, k, m, PivotRule::random, 7, {nt}).pivots == rp.pivots);
    CHECK(block_rpcholesky<double>(X, k, m, 16, 7, {nt}).pivots == blk.pivots);
  }
  // float input gives a valid factorisation too
  const RowMatrixXf Xf = X.cast<float>();
  const auto rpf = block_rpcholesky<float>(Xf, k, m, 8, 3);
  CHECK(Index(rpf.pivots.size()) == m && distinct_and_valid(rpf.pivots, X.rows()));
  // rank-deficient kernel: linear kernel on d = 3 stops after 3 pivots
  const Kernel lin = Kernel::from_name("linear", 1.0);
  CHECK(pivoted_cholesky<double>(X, lin, 10, PivotRule::greedy).pivots.size() == 3);
  CHECK(pivoted_cholesky<double>(X, lin, 10, PivotRule::random, 1).pivots.size() == 3);
  CHECK(block_rpcholesky<double>(X, lin, 10, 4, 1).pivots.size() == 3);
  CHECK_THROWS(pivoted_cholesky<double>(X, k, 301, PivotRule::greedy));
  CHECK_THROWS(pivoted_cholesky<double>(X, k, 0, PivotRule::greedy));
  CHECK_THROWS(block_rpcholesky<double>(X, k, 5, 0));
}

void test_herding_and_farthest_point() {
  const RowMatrixXd X = gaussian_data(200, 2, 2);
  const Kernel k = Kernel::gaussian(1.0);
  const Eigen::MatrixXd K = dense(X, k);
  const Eigen::VectorXd mu = K.rowwise().mean();
  const auto h = kernel_herding<double>(X, mu, k, 25);
  CHECK(h.size() == 25 && distinct_and_valid(h, X.rows()));
  // reference herding, written from the definition
  std::vector<char> taken(200, 0);
  Eigen::VectorXd sums = Eigen::VectorXd::Zero(200);
  for (std::size_t t = 0; t < h.size(); ++t) {
    Index best = -1;
    double bv = -1e300;
    for (Index i = 0; i < 200; ++i) {
      const double v = mu[i] - sums[i] / double(t + 1);
      if (!taken[std::size_t(i)] && v > bv) bv = v, best = i;
    }
    CHECK(best == h[t]);
    taken[std::size_t(best)] = 1;
    sums += K.col(best);
  }
  const auto hr = kernel_herding<double>(X, mu, k, 300, true);
  CHECK(hr.size() == 300);
  CHECK_THROWS(kernel_herding<double>(X, mu, k, 201, false));

  const auto fp = farthest_point<double>(X, k, 20, 5);
  CHECK(fp.size() == 20 && fp[0] == 5 && distinct_and_valid(fp, X.rows()));
  for (std::size_t t = 1; t < fp.size(); ++t) {  // the next point is the farthest from the chosen
    Eigen::VectorXd dist = Eigen::VectorXd::Constant(200, 1e300);
    for (std::size_t s = 0; s < t; ++s)
      dist = dist.cwiseMin((2.0 - 2.0 * K.col(fp[s]).array()).matrix());
    CHECK(dist[fp[t]] >= dist.maxCoeff() - 1e-12);
  }
}

void test_ridge_leverage() {
  const RowMatrixXd X = gaussian_data(250, 3, 3);
  const Kernel k = Kernel::gaussian(1.0);
  const Eigen::MatrixXd K = dense(X, k);
  const double lam = 1e-3, lam_n = lam * 250;
  // with the full data set as dictionary and unit weights the estimate is exact:
  // l_i = (K (K + lam n I)^{-1})_ii
  const Eigen::VectorXd reg = Eigen::VectorXd::Constant(250, lam_n);
  const Eigen::VectorXd est = ridge_leverage_estimates<double>(X, X, reg, lam_n, k);
  const Eigen::MatrixXd A = K + lam_n * Eigen::MatrixXd::Identity(250, 250);
  const Eigen::VectorXd exact = (K * A.llt().solve(Eigen::MatrixXd::Identity(250, 250))).diagonal();
  CHECK((est - exact).cwiseAbs().maxCoeff() <= 1e-8);
  // empty dictionary: k(x, x) / lambda_n, an upper bound
  const RowMatrixXd none(0, 3);
  const Eigen::VectorXd upper = ridge_leverage_estimates<double>(X, none, Eigen::VectorXd(0), lam_n, k);
  CHECK(std::abs(upper[0] - 1.0 / lam_n) <= 1e-12);
  CHECK((upper.array() >= exact.array()).all());
  CHECK_THROWS(ridge_leverage_estimates<double>(X, X, reg.head(3), lam_n, k));
  CHECK_THROWS(ridge_leverage_estimates<double>(X, X, reg, -1.0, k));
}

// Regression tests of the "Reliability" campaign: hostile arguments must throw a clear
// std::invalid_argument (Python: ValueError), never select row -1 or run unbounded.
void test_herding_overflow() {
  // Linear kernel on values near 1e200: every kernel value overflows to inf, so every
  // score was -inf or NaN and herding selected row -1 (heap corruption, or -1 returned
  // with allow_repeats).
  RowMatrixXd C = gaussian_data(40, 2, 4) * 1e200;
  const Kernel lin = Kernel::from_name("linear", 1.0);
  const Eigen::VectorXd target = Eigen::VectorXd::LinSpaced(40, 0.0, 1.0);
  for (bool repeats : {false, true}) {
    CHECK(throws_with<std::invalid_argument>([&] { kernel_herding<double>(C, target, lin, 5, repeats); },
                                             "not finite"));
  }
  // float input: a polynomial kernel of degree 50 on values ~1e10 overflows float64
  const RowMatrixXf Cf = (gaussian_data(40, 2, 4) * 1e10).cast<float>();
  const Kernel poly(KernelKind::polynomial, 1.0, 1.0, 50);
  CHECK(throws_with<std::invalid_argument>([&] { kernel_herding<float>(Cf, target, poly, 3, true); },
                                           "not finite"));
  // Finite kernel values (1.7e308) whose running sum overflows: the scores become -inf.
  RowMatrixXd D = RowMatrixXd::Constant(3, 1, 1.3e154);
  D(1, 0) = 1.2e154;
  D(2, 0) = 1.1e154;
  CHECK(throws_with<std::invalid_argument>(
      [&] { kernel_herding<double>(D, Eigen::VectorXd::Zero(3), lin, 6, true); }, "not finite"));
  // one step needs no kernel value at all: still fine
  CHECK(kernel_herding<double>(C, target, lin, 1, false) == std::vector<Index>{39});
}

void test_herding_bounds() {
  const RowMatrixXd X = gaussian_data(50, 2, 5);
  const Kernel k = Kernel::gaussian(1.0);
  const Eigen::VectorXd mu = Eigen::VectorXd::Constant(50, 0.5);
  const auto start = std::chrono::steady_clock::now();
  // allow_repeats with m = 10^12 used to run (practically) forever
  CHECK(throws_with<std::invalid_argument>([&] { kernel_herding<double>(X, mu, k, Index(1e12), true); },
                                           "n_landmarks"));
  CHECK(throws_with<std::invalid_argument>(
      [&] { kernel_herding<double>(X, mu, k, 1000 * 50 + 1, true); }, "n_landmarks"));
  CHECK(throws_with<std::invalid_argument>(
      [&] { kernel_herding<double>(X, mu, k, std::numeric_limits<Index>::max(), true); }, "n_landmarks"));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(secs < 1.0);
  CHECK(kernel_herding<double>(X, mu, k, 2000, true).size() == 2000);  // within the bound
  // other arguments
  CHECK(throws_with<std::invalid_argument>([&] { kernel_herding<double>(X, mu, k, 0); }, "n_landmarks"));
  CHECK(throws_with<std::invalid_argument>([&] { kernel_herding<double>(X, mu, k, -5, true); }, "n_landmarks"));
  CHECK(throws_with<std::invalid_argument>([&] { kernel_herding<double>(X, mu, k, 51, false); }, "n_landmarks"));
  CHECK(throws_with<std::invalid_argument>([&] { kernel_herding<double>(X, mu.head(49), k, 5); }, "target"));
  Eigen::VectorXd bad = mu;
  bad[3] = std::nan("");
  CHECK(throws_with<std::invalid_argument>([&] { kernel_herding<double>(X, bad, k, 5); }, "target"));
  RowMatrixXd Xn = X;
  Xn(7, 1) = INFINITY;
  CHECK(throws_with<std::invalid_argument>([&] { kernel_herding<double>(Xn, mu, k, 5); }, "C contains"));
  const RowMatrixXd empty(0, 2), no_cols(5, 0);
  CHECK(throws_with<std::invalid_argument>(
      [&] { kernel_herding<double>(empty, Eigen::VectorXd(0), k, 1, true); }, "at least one row"));
  CHECK(throws_with<std::invalid_argument>(
      [&] { kernel_herding<double>(no_cols, Eigen::VectorXd::Zero(5), k, 1); }, "at least one row"));
}

void test_tolerance_validation() {
  const RowMatrixXd X = gaussian_data(120, 2, 6);
  const Kernel k = Kernel::gaussian(1.0);
  const Eigen::VectorXd mu = Eigen::VectorXd::Zero(120);
  for (double tol : {-1e-3, -1.0, std::nan(""), double(INFINITY), -double(INFINITY), 1.0, 2.0}) {
    const SamplingOptions o{0, tol};
    CHECK(throws_with<std::invalid_argument>(
        [&] { pivoted_cholesky<double>(X, k, 10, PivotRule::greedy, 0, o); }, "tolerance"));
    CHECK(throws_with<std::invalid_argument>(
        [&] { pivoted_cholesky<double>(X, k, 10, PivotRule::random, 1, o); }, "tolerance"));
    CHECK(throws_with<std::invalid_argument>([&] { block_rpcholesky<double>(X, k, 10, 4, 1, o); }, "tolerance"));
    CHECK(throws_with<std::invalid_argument>([&] { farthest_point<double>(X, k, 10, 0, o); }, "tolerance"));
    CHECK(throws_with<std::invalid_argument>([&] { kernel_herding<double>(X, mu, k, 10, false, o); },
                                             "tolerance"));
  }
  // tolerance 0 on an exactly rank-3 kernel (linear, d = 3): the loops stop when the
  // residual vanishes and never select an invalid or repeated row
  const RowMatrixXd Y = gaussian_data(100, 3, 7);
  const Kernel lin = Kernel::from_name("linear", 1.0);
  const SamplingOptions zero{0, 0.0};
  for (const auto& r : {pivoted_cholesky<double>(Y, lin, 20, PivotRule::greedy, 0, zero),
                        pivoted_cholesky<double>(Y, lin, 20, PivotRule::random, 3, zero),
                        block_rpcholesky<double>(Y, lin, 20, 8, 3, zero)}) {
    CHECK(r.pivots.size() <= 20 && distinct_and_valid(r.pivots, 100));
    CHECK(r.pivots.size() == r.pivot_values.size() && r.residual_trace.size() == r.pivots.size() + 1);
    for (double v : r.pivot_values) CHECK(v > 0.0);
  }
  // all-zero kernel matrix: no pivot at all (the random rule used to draw row -1)
  const RowMatrixXd Z = RowMatrixXd::Zero(30, 2);
  CHECK(pivoted_cholesky<double>(Z, lin, 5, PivotRule::random, 1, zero).pivots.empty());
  CHECK(pivoted_cholesky<double>(Z, lin, 5, PivotRule::greedy, 1, zero).pivots.empty());
  CHECK(block_rpcholesky<double>(Z, lin, 5, 3, 1, zero).pivots.empty());
  CHECK(farthest_point<double>(Z, lin, 5, 2, zero) == std::vector<Index>{2});
  // duplicated rows: farthest-point returns distinct rows only (a negative tolerance
  // used to let it pick the duplicates)
  RowMatrixXd dup(60, 2);
  for (Index i = 0; i < 60; ++i) dup.row(i) = X.row(i % 6);
  const auto fp = farthest_point<double>(dup, k, 20, 0);
  CHECK(fp.size() == 6 && distinct_and_valid(fp, 60));
  // the sampler itself never returns -1
  std::vector<double> v(5000, 0.0);
  detail::ChunkStats stats(detail::n_sampling_chunks(5000));
  for (Index c = 0; c < detail::n_sampling_chunks(5000); ++c) {
    const Index b = c * detail::kSamplingChunk;
    stats.record(c, v.data(), b, std::min<Index>(5000, b + detail::kSamplingChunk));
  }
  detail::SplitMix64 gen(1);
  CHECK(throws_with<std::runtime_error>([&] { detail::sample_proportional(v, stats, gen); }, "no positive"));
}

void test_block_size_cap() {
  const RowMatrixXd X = gaussian_data(200, 3, 8);
  const Kernel k = Kernel::gaussian(1.5);
  const auto start = std::chrono::steady_clock::now();
  // 20,000 proposals per round at n = 200 took 146 s; 10^12 ended in bad_alloc
  const auto big = block_rpcholesky<double>(X, k, 30, 20000, 11);
  const auto huge = block_rpcholesky<double>(X, k, 30, Index(1e12), 11);
  const auto capped = block_rpcholesky<double>(X, k, 30, 200, 11);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  CHECK(secs < 20.0);
  CHECK(big.pivots.size() == 30 && distinct_and_valid(big.pivots, 200));
  CHECK(big.pivots == capped.pivots && huge.pivots == capped.pivots);
  CHECK(throws_with<std::invalid_argument>([&] { block_rpcholesky<double>(X, k, 5, -3); }, "block_size"));
  CHECK(throws_with<std::invalid_argument>(
      [&] { block_rpcholesky<double>(X, k, 5, std::numeric_limits<Index>::min()); }, "block_size"));
}

void test_pivot_argument_validation() {
  const RowMatrixXd X = gaussian_data(40, 2, 9);
  const Kernel k = Kernel::gaussian(1.0);
  for (Index m : {Index(0), Index(-1), Index(41), std::numeric_limits<Index>::max(),
                  std::numeric_limits<Index>::min()}) {
    CHECK(throws_with<std::invalid_argument>([&] { pivoted_cholesky<double>(X, k, m, PivotRule::greedy); },
                                             "n_landmarks"));
    CHECK(throws_with<std::invalid_argument>([&] { block_rpcholesky<double>(X, k, m, 4); }, "n_landmarks"));
    CHECK(throws_with<std::invalid_argument>([&] { farthest_point<double>(X, k, m, 0); }, "n_landmarks"));
  }
  for (Index first : {Index(-1), Index(40), std::numeric_limits<Index>::max()}) {
    CHECK(throws_with<std::invalid_argument>([&] { farthest_point<double>(X, k, 3, first); }, "first"));
  }
  CHECK(throws_with<std::invalid_argument>(
      [&] { pivoted_cholesky<double>(X, k, 3, static_cast<PivotRule>(7)); }, "rule"));
  RowMatrixXd Xn = X;
  Xn(3, 0) = std::nan("");
  CHECK(throws_with<std::invalid_argument>([&] { pivoted_cholesky<double>(Xn, k, 3, PivotRule::greedy); },
                                           "X contains"));
  CHECK(throws_with<std::invalid_argument>([&] { block_rpcholesky<double>(Xn, k, 3, 2); }, "X contains"));
  CHECK(throws_with<std::invalid_argument>([&] { farthest_point<double>(Xn, k, 3, 0); }, "X contains"));
  const RowMatrixXd empty(0, 2), no_cols(5, 0);
  CHECK(throws_with<std::invalid_argument>([&] { pivoted_cholesky<double>(empty, k, 1, PivotRule::greedy); },
                                           "at least one row"));
  CHECK(throws_with<std::invalid_argument>([&] { block_rpcholesky<double>(no_cols, k, 1, 1); },
                                           "at least one row"));
  CHECK(throws_with<std::invalid_argument>([&] { farthest_point<double>(no_cols, k, 1, 0); },
                                           "at least one row"));
  // kernel values that overflow float64 (linear kernel on values near 1e200)
  const RowMatrixXd H = gaussian_data(40, 2, 10) * 1e200;
  const Kernel lin = Kernel::from_name("linear", 1.0);
  CHECK(throws_with<std::invalid_argument>([&] { pivoted_cholesky<double>(H, lin, 3, PivotRule::greedy); },
                                           "not finite"));
  CHECK(throws_with<std::invalid_argument>([&] { pivoted_cholesky<double>(H, lin, 3, PivotRule::random); },
                                           "not finite"));
  CHECK(throws_with<std::invalid_argument>([&] { block_rpcholesky<double>(H, lin, 3, 2); }, "not finite"));
  CHECK(throws_with<std::invalid_argument>([&] { farthest_point<double>(H, lin, 3, 0); }, "not finite"));
}

// The register-blocked product behind the blocked samplers against plain loops: odd
// sizes around the micro-tile (6 rows), panel (2 vectors) and block (128 columns, 256
// deep) edges, a transposed and a column-major B, the triangular variant.
void test_gemm_acc() {
  std::mt19937_64 gen(11);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const auto& gemm = detail::simd_table().gemm_acc;
  for (Index rows : {1, 5, 6, 7, 13}) {
    for (Index k : {1, 9, 129, 256, 300}) {
      for (Index cols : {1, 3, 17, 129, 300}) {
        for (bool upper : {false, true}) {
          if (upper && k != cols) continue;
          RowMatrixXd A(rows, k), C(rows, cols);
          Eigen::MatrixXd B(k, cols);  // column-major: Bt(p, j) = B[p + j * k]
          for (Index i = 0; i < A.size(); ++i) A.data()[i] = u(gen);
          for (Index i = 0; i < B.size(); ++i) B.data()[i] = u(gen);
          for (Index i = 0; i < C.size(); ++i) C.data()[i] = u(gen);
          if (upper) B = B.triangularView<Eigen::Upper>().toDenseMatrix().eval();  // Bt(p, j) = 0, p > j
          RowMatrixXd ref = C;
          for (Index i = 0; i < rows; ++i)
            for (Index j = 0; j < cols; ++j) {
              double acc = 0.0;
              for (Index p = 0; p < (upper ? j + 1 : k); ++p) acc += A(i, p) * B(p, j);
              ref(i, j) -= acc;
            }
          RowMatrixXd got = C;
          gemm(A.data(), k, rows, k, B.data(), 1, k, cols, -1.0, upper, got.data(), cols);
          const double err = (got - ref).cwiseAbs().maxCoeff();
          if (!(err <= 1e-13 * double(k))) std::printf("gemm rows=%ld k=%ld cols=%ld upper=%d err=%g\n", long(rows), long(k), long(cols), int(upper), err);
          CHECK(err <= 1e-13 * double(k));
          // B^T of a row-major (cols x k) matrix: the samplers' F F(S, :)^T
          if (!upper) {
            const RowMatrixXd Bt = B.transpose();
            RowMatrixXd got2 = C;
            detail::subtract_abt(A.data(), k, rows, k, Bt.data(), k, cols, got2.data(), cols);
            CHECK(got2 == got);
          }
        }
      }
    }
  }
}

// Greedy pivoted Cholesky from the dense matrix, one pivot at a time: the full Schur
// complement after each pivot, argmax (smallest index on ties) of its diagonal.
std::vector<Index> dense_greedy(Eigen::MatrixXd K, Index m) {
  std::vector<Index> piv;
  for (Index j = 0; j < m; ++j) {
    Index s = 0;
    for (Index i = 1; i < K.rows(); ++i)
      if (K(i, i) > K(s, s)) s = i;
    piv.push_back(s);
    const Eigen::VectorXd col = K.col(s) / std::sqrt(K(s, s));
    K -= col * col.transpose();
    K(s, s) = 0.0;
  }
  return piv;
}

// The blocked greedy (panels of candidates) against the dense one-at-a-time reference,
// with m large enough for several panels, for 1, 2 and 3 threads.
void test_greedy_blocked_matches_dense() {
  const RowMatrixXd X = gaussian_data(700, 4, 5);
  const Kernel k = Kernel::gaussian(1.5);
  const Index m = 150;
  const std::vector<Index> ref = dense_greedy(dense(X, k), m);
  for (int nt : {1, 2, 3}) {
    const auto r = pivoted_cholesky<double>(X, k, m, PivotRule::greedy, 0, {nt});
    CHECK(r.pivots == ref);
  }
}

// Ridge leverage estimates (now one matrix product per block) do not depend on the
// thread count, bit for bit.
void test_ridge_leverage_threads() {
  const RowMatrixXd X = gaussian_data(1500, 3, 8);
  const Kernel k = Kernel::gaussian(1.0);
  const RowMatrixXd D = X.topRows(300);
  const Eigen::VectorXd reg = Eigen::VectorXd::Constant(300, 0.5);
  const Eigen::VectorXd one = ridge_leverage_estimates<double>(X, D, reg, 2.0, k, {1});
  for (int nt : {2, 3}) CHECK(ridge_leverage_estimates<double>(X, D, reg, 2.0, k, {nt}) == one);
}

// The blocked inverse of a lower-triangular factor: L L^{-1} = I, zero above the
// diagonal, the same bits for any thread count, and for r <= 128 (one block) exactly
// the plain substitution on I that block_rpcholesky used before.
void test_lower_inverse() {
  const RowMatrixXd X = gaussian_data(300, 3, 17);
  Eigen::MatrixXd A = dense(X, Kernel::gaussian(1.0)) + Eigen::MatrixXd::Identity(300, 300);
  CHECK(detail::blocked_cholesky(A, 0.0, 0) < 0);
  const Eigen::MatrixXd L = A.triangularView<Eigen::Lower>();
  const Eigen::MatrixXd inv = detail::lower_inverse(A, 300, 1);
  CHECK((L * inv - Eigen::MatrixXd::Identity(300, 300)).cwiseAbs().maxCoeff() < 1e-13);
  CHECK(inv.triangularView<Eigen::StrictlyUpper>().toDenseMatrix().isZero(0));
  for (int nt : {2, 3}) CHECK(detail::lower_inverse(A, 300, nt) == inv);
  Eigen::MatrixXd plain = Eigen::MatrixXd::Identity(100, 100);
  A.topLeftCorner(100, 100).triangularView<Eigen::Lower>().solveInPlace(plain);
  CHECK(detail::lower_inverse(A, 100, 2) == plain);
}

bool stop_now() { return true; }

// The dictionary system of ridge_leverage_estimates (|D| x |D|) is factorised and
// inverted by blocked routines that poll the interrupt check: with a check that always
// says stop, each stops early. (The poller checks after 20 ms: |D| = 2500 takes longer.)
void test_dictionary_solve_interrupts() {
  const Index M = 2500;
  const RowMatrixXd D = gaussian_data(M, 3, 23);
  const Eigen::MatrixXd S = dense(D, Kernel::gaussian(1.0)) + Eigen::MatrixXd::Identity(M, M);
  Eigen::MatrixXd A = S;
  CHECK(detail::blocked_cholesky(A, 0.0, 0) < 0);
  const Eigen::MatrixXd factor = A;
  set_interrupt_check(&stop_now);
  auto interrupted = [](auto&& f) {
    try {
      f();
    } catch (const Interrupted&) {
      return true;
    }
    return false;
  };
  CHECK(interrupted([&] {
    Eigen::MatrixXd B = S;
    detail::blocked_cholesky(B, 0.0, 0);
  }));
  CHECK(interrupted([&] { detail::lower_inverse(factor, M, 0); }));
  CHECK(interrupted([&] {
    ridge_leverage_estimates<double>(D.topRows(10), D, Eigen::VectorXd::Constant(M, 1.0), 1.0,
                                     Kernel::gaussian(1.0));
  }));
  set_interrupt_check(nullptr);
  // and they work afterwards
  CHECK(detail::lower_inverse(factor, 200, 0).allFinite());
}

}  // namespace

int main() {
  if (const int skip = test::skip_if_level_unsupported()) return skip;
  test_pivoted_cholesky();
  test_herding_and_farthest_point();
  test_ridge_leverage();
  test_herding_overflow();
  test_herding_bounds();
  test_tolerance_validation();
  test_block_size_cap();
  test_pivot_argument_validation();
  test_gemm_acc();
  test_greedy_blocked_matches_dense();
  test_ridge_leverage_threads();
  test_lower_inverse();
  test_dictionary_solve_interrupts();
  if (test::failures == 0) std::printf("test_sampling: all checks passed\n");
  return test::failures == 0 ? 0 : 1;
}
