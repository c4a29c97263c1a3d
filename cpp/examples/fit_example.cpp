// Fits a Nystrom kernel mean embedding on generated data with the C++ core alone,
// prints its weights and how long the two steps took.
// Usage: fit_example [n_samples] [n_landmarks] [dim]
//   (defaults: 20000, the paper's m = sqrt(n) log sqrt(n), 5)
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

#include <nystrom_kme/nystrom_kme.hpp>

int main(int argc, char** argv) {
  using namespace nystrom_kme;
  using Clock = std::chrono::steady_clock;
  const Index n = argc > 1 ? std::atol(argv[1]) : 20000;
  const Index d = argc > 3 ? std::atol(argv[3]) : 5;
  if (n < 2 || d < 1) {
    std::fprintf(stderr, "usage: fit_example [n_samples >= 2] [n_landmarks >= 1] [dim >= 1]\n");
    return 2;
  }
  // The paper's choice: m = sqrt(n) log sqrt(n) landmarks drawn uniformly with replacement.
  const double root = std::sqrt(double(n));
  const Index m = argc > 2 ? std::atol(argv[2]) : std::min<Index>(n, Index(std::ceil(root * std::log(root))));
  if (m < 1) {
    std::fprintf(stderr, "n_landmarks must be >= 1\n");
    return 2;
  }

  // Two well separated Gaussian blobs in R^d. Row-major: one point per row.
  std::mt19937_64 gen(42);
  std::normal_distribution<double> normal(0.0, 1.0);
  RowMatrixXd X(n, d);
  for (Index i = 0; i < n; ++i)
    for (Index k = 0; k < d; ++k) X(i, k) = normal(gen) + (i % 2 == 0 ? 3.0 : -3.0);
  std::uniform_int_distribution<Index> pick(0, n - 1);
  RowMatrixXd L(m, d);
  for (Index j = 0; j < m; ++j) L.row(j) = X.row(pick(gen));

  const Kernel kernel = Kernel::gaussian(std::sqrt(double(d)));
  const auto t0 = Clock::now();
  const Eigen::VectorXd s = kernel_row_sums<double>(L, X, kernel) / double(n);  // K_mn 1 / n
  const auto t1 = Clock::now();
  const SolveResult fit = nystrom_weights<double>(L, s, kernel);                // K_m^+ s
  const auto t2 = Clock::now();

  // alpha solves K_m alpha = s (the projection's normal equations).
  const RowMatrixXd Km = kernel_matrix<double>(L, L, kernel);
  const double residual = (Km * fit.weights.col(0) - s).norm() / s.norm();
  std::printf("n = %ld, d = %ld, m = %ld landmarks, SIMD level %s, solver = %s, rank = %ld\n",
              long(n), long(d), long(m), to_string(simd_level()),
              fit.used == Solver::cholesky ? "cholesky" : "cod", long(fit.rank));
  std::printf("sum of weights = %.6f, relative residual = %.2e\n", fit.weights.sum(), residual);
  std::printf("first weights:");
  for (Index j = 0; j < std::min<Index>(m, 5); ++j) std::printf(" %.6f", fit.weights(j, 0));
  std::printf("\nrow sums %.4f s, solve %.4f s\n", std::chrono::duration<double>(t1 - t0).count(),
              std::chrono::duration<double>(t2 - t1).count());
  return residual < 1e-6 ? 0 : 1;
}
