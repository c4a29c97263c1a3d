// Tests of simplex_weights: feasibility, the KKT conditions, known solutions, duplicates,
// validation. Returns non-zero on failure.
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>

#include <nystrom_kme/simplex_weights.hpp>

#include "check.hpp"

using namespace nystrom_kme;
using Eigen::MatrixXd;
using Eigen::VectorXd;

namespace {

// Gaussian kernel matrix of random points and the kernel mean of a larger sample.
void problem(Index m, Index n, unsigned seed, MatrixXd& K, VectorXd& s, bool duplicate = false) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal;
  MatrixXd L(m, 2), X(n, 2);
  for (Index i = 0; i < m; ++i) L(i, 0) = normal(gen), L(i, 1) = normal(gen);
  for (Index i = 0; i < n; ++i) X(i, 0) = normal(gen), X(i, 1) = normal(gen);
  if (duplicate) L.row(m - 1) = L.row(0), L.row(m - 2) = L.row(0);
  auto k = [](const auto& a, const auto& b) { return std::exp(-(a - b).squaredNorm() / 2.0); };
  K.resize(m, m);
  s = VectorXd::Zero(m);
  for (Index i = 0; i < m; ++i) {
    for (Index j = 0; j < m; ++j) K(i, j) = k(L.row(i), L.row(j));
    for (Index t = 0; t < n; ++t) s(i) += k(L.row(i), X.row(t)) / double(n);
  }
}

// KKT: w >= 0, sum 1, g = Kw - s, g_j >= nu everywhere and g_j = nu on the support.
void check_kkt(const MatrixXd& K, const VectorXd& s, const SimplexResult& r, double tol) {
  const VectorXd& w = r.weights;
  CHECK(r.converged);
  CHECK(w.minCoeff() >= 0.0);
  CHECK(std::abs(w.sum() - 1.0) < 1e-14);
  const VectorXd g = K * w - s;
  const double nu = w.dot(g);
  CHECK(g.minCoeff() >= nu - tol);
  for (Index j = 0; j < w.size(); ++j) {
    if (w(j) > 0) CHECK(std::abs(g(j) - nu) < tol);
  }
  CHECK(std::abs(r.objective - (w.dot(K * w) - 2 * w.dot(s))) < 1e-12);
}

}  // namespace

int main() {
  for (unsigned seed = 1; seed <= 5; ++seed) {
    MatrixXd K;
    VectorXd s;
    problem(40, 300, seed, K, s);
    const SimplexResult r = simplex_weights(K, s);
    check_kkt(K, s, r, 1e-8);
    // Deterministic: the same call gives the same bits.
    const SimplexResult again = simplex_weights(K, s);
    CHECK((again.weights.array() == r.weights.array()).all());
    // Optimal against random feasible points.
    std::mt19937_64 gen(seed);
    std::exponential_distribution<double> e;
    for (int t = 0; t < 50; ++t) {
      VectorXd v(40);
      for (Index j = 0; j < 40; ++j) v(j) = e(gen);
      v /= v.sum();
      CHECK(v.dot(K * v) - 2 * v.dot(s) >= r.objective - 1e-12);
    }
  }
  {  // Duplicated landmarks (singular K): still feasible and KKT-optimal.
    MatrixXd K;
    VectorXd s;
    problem(30, 200, 11, K, s, true);
    const SimplexResult r = simplex_weights(K, s);
    check_kkt(K, s, r, 1e-8);
  }
  {  // Identity K: the projection of s onto the simplex (closed form).
    MatrixXd K = MatrixXd::Identity(3, 3);
    VectorXd s(3);
    s << 0.9, 0.5, -1.0;
    const SimplexResult r = simplex_weights(K, s);  // min |w - s|^2: w = (0.7, 0.3, 0)
    CHECK(std::abs(r.weights(0) - 0.7) < 1e-14);
    CHECK(std::abs(r.weights(1) - 0.3) < 1e-14);
    CHECK(r.weights(2) == 0.0);
    CHECK(r.support_size == 2);
  }
  {  // One landmark: weight 1. Zero K: the vertex with the largest s.
    MatrixXd K = MatrixXd::Constant(1, 1, 1.0);
    VectorXd s = VectorXd::Constant(1, 0.3);
    CHECK(simplex_weights(K, s).weights(0) == 1.0);
    MatrixXd Z = MatrixXd::Zero(3, 3);
    VectorXd t(3);
    t << 0.1, 0.4, 0.2;
    CHECK(simplex_weights(Z, t).weights(1) == 1.0);
  }
  {  // Validation.
    MatrixXd K = MatrixXd::Identity(3, 3);
    VectorXd s = VectorXd::Zero(3);
    CHECK_THROWS(simplex_weights(MatrixXd(0, 0), VectorXd(0)));
    CHECK_THROWS(simplex_weights(MatrixXd::Identity(3, 2), s));
    CHECK_THROWS(simplex_weights(K, VectorXd::Zero(2)));
    MatrixXd A = K;
    A(0, 1) = 0.5;
    CHECK_THROWS(simplex_weights(A, s));
    A = K;
    A(2, 2) = -1.0;
    CHECK_THROWS(simplex_weights(A, s));
    A = K;
    A(1, 1) = std::nan("");
    CHECK_THROWS(simplex_weights(A, s));
    VectorXd bad = s;
    bad(0) = INFINITY;
    CHECK_THROWS(simplex_weights(K, bad));
    CHECK_THROWS(simplex_weights(K, s, SimplexOptions{0.0}));
    CHECK_THROWS(simplex_weights(K, s, SimplexOptions{1e-10, 2.0}));
  }
  {  // ridge_weights: (K + lambda I) w = s, and validation.
    MatrixXd K;
    VectorXd s;
    problem(20, 100, 3, K, s);
    const VectorXd w = ridge_weights(K, s, 1e-3);
    CHECK(((K + 1e-3 * MatrixXd::Identity(20, 20)) * w - s).cwiseAbs().maxCoeff() < 1e-12);
    CHECK_THROWS(ridge_weights(K, s, 0.0));
    CHECK_THROWS(ridge_weights(K, VectorXd::Zero(3), 1.0));
    CHECK_THROWS(ridge_weights(-MatrixXd::Identity(2, 2), VectorXd::Zero(2), 0.5));
    // In range, the power-of-two scaling changes no bit: Eigen's Cholesky of K + ridge I.
    const VectorXd plain = (K + 1e-3 * MatrixXd::Identity(20, 20)).llt().solve(s);
    CHECK((w.array() == plain.array()).all());
    CHECK((ridge_weights(K * std::ldexp(1.0, 700), s * std::ldexp(1.0, 700), std::ldexp(1e-3, 700)).array() ==
           plain.array()).all());
  }
  {  // ridge_weights near the float64 limit: K + ridge I overflowed (weights came back 0).
    const VectorXd diag = (VectorXd(3) << 1.5e308, 1e308, 0.5e308).finished();
    const VectorXd s = (VectorXd(3) << 1e300, 3e299, -2e300).finished();
    const VectorXd w = ridge_weights(diag.asDiagonal().toDenseMatrix(), s, 1e308);
    for (Index i = 0; i < 3; ++i) {  // closed form in long double (range to 1e4932)
      const long double ref = (long double)s(i) / ((long double)diag(i) + 1e308L);
      CHECK(std::abs((long double)w(i) - ref) <= 1e-15L * std::abs(ref));
    }
    // weights that overflow float64 are an error, not inf
    CHECK(test::throws_with<std::invalid_argument>(
        [] { ridge_weights(MatrixXd::Zero(2, 2), (VectorXd(2) << 1e300, 1.0).finished(), 1e-10); },
        "overflow float64"));
    // and tiny weights underflow gradually, not to 0: s = 2^-1060 on K = I, ridge 1
    const VectorXd tiny = ridge_weights(MatrixXd::Identity(1, 1), VectorXd::Constant(1, std::ldexp(1.0, -1060)), 1.0);
    CHECK(tiny(0) == std::ldexp(1.0, -1061));
  }
  if (test::failures == 0) std::puts("test_simplex_weights: all checks passed");
  return test::failures == 0 ? 0 : 1;
}
