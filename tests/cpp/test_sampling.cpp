// Landmark samplers against dense references written here: pivoted Cholesky
// residual traces, thread-count invariance, herding and farthest-point choices, and
// ridge leverage estimates against the exact scores.
#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <vector>

#include <Eigen/Dense>

#include <nystrom_kme/sampling.hpp>

#include "check.hpp"

using namespace nystrom_kme;

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

}  // namespace

int main() {
  if (const int skip = test::skip_if_level_unsupported()) return skip;
  test_pivoted_cholesky();
  test_herding_and_farthest_point();
  test_ridge_leverage();
  if (test::failures == 0) std::printf("test_sampling: all checks passed\n");
  return test::failures == 0 ? 0 : 1;
}
