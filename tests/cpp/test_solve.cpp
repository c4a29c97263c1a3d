// Tests of solve_psd / nystrom_weights against independent references (Eigen's
// SelfAdjointEigenSolver / JacobiSVD pseudo-inverses), and of the products and blocked
// triangular solves under the factorisations (detail/dense_products.hpp) against long
// double sums and the residuals of their definitions. Returns non-zero on failure.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Eigenvalues>
#include <Eigen/QR>
#include <Eigen/SVD>

#include <nystrom_kme/detail/dense_products.hpp>
#include <nystrom_kme/solve.hpp>

#if defined(NYSTROM_KME_WITH_OPENMP)
#include <omp.h>
#endif

#include "check.hpp"

using namespace nystrom_kme;
using test::throws_with;
using Eigen::MatrixXd;
using Eigen::VectorXd;

#define CHECK_THROWS_AS(expr, type)                                                       \
  do {                                                                                    \
    bool right = false;                                                                   \
    try {                                                                                 \
      (void)(expr);                                                                       \
    } catch (const type&) {                                                               \
      right = true;                                                                       \
    } catch (...) {                                                                       \
    }                                                                                     \
    if (!right) {                                                                         \
      std::fprintf(stderr, "%s:%d: expected %s: %s\n", __FILE__, __LINE__, #type, #expr); \
      ++test::failures;                                                                   \
    }                                                                                     \
  } while (0)

namespace {

std::mt19937_64 rng(12345);

MatrixXd normal(Index rows, Index cols) {
  std::normal_distribution<double> n;
  MatrixXd X(rows, cols);
  for (Index i = 0; i < X.size(); ++i) X.data()[i] = n(rng);
  return X;
}

MatrixXd gaussian_gram(const MatrixXd& A, const MatrixXd& B, double sigma) {
  MatrixXd K(A.rows(), B.rows());
  for (Index i = 0; i < A.rows(); ++i) {
    for (Index j = 0; j < B.rows(); ++j) {
      K(i, j) = std::exp(-(A.row(i) - B.row(j)).squaredNorm() / (2 * sigma * sigma));
    }
  }
  return K;
}

/// Landmarks: `distinct` points, then m - distinct copies of random ones, shuffled.
MatrixXd landmarks_with_duplicates(Index m, Index distinct, Index d) {
  MatrixXd base = normal(distinct, d);
  MatrixXd L(m, d);
  std::uniform_int_distribution<Index> pick(0, distinct - 1);
  for (Index i = 0; i < m; ++i) L.row(i) = i < distinct ? base.row(i) : base.row(pick(rng));
  std::vector<Index> order(std::size_t(m), 0);
  for (Index i = 0; i < m; ++i) order[std::size_t(i)] = i;
  std::shuffle(order.begin(), order.end(), rng);
  MatrixXd out(m, d);
  for (Index i = 0; i < m; ++i) out.row(i) = L.row(order[std::size_t(i)]);
  return out;
}

/// Reference K^+ s by an eigendecomposition, eigenvalues <= rel * max dropped.
MatrixXd pinv_eig(const MatrixXd& K, const MatrixXd& s, double rel) {
  Eigen::SelfAdjointEigenSolver<MatrixXd> eig(K);
  const VectorXd& w = eig.eigenvalues();
  const double cut = rel * w.cwiseAbs().maxCoeff();
  VectorXd inv = VectorXd::Zero(w.size());
  for (Index i = 0; i < w.size(); ++i) if (w(i) > cut) inv(i) = 1.0 / w(i);
  return eig.eigenvectors() * inv.asDiagonal() * (eig.eigenvectors().transpose() * s);
}

/// Reference K^+ s by JacobiSVD (small matrices).
MatrixXd pinv_svd(const MatrixXd& K, const MatrixXd& s, double rel) {
  Eigen::JacobiSVD<MatrixXd> svd(K, Eigen::ComputeThinU | Eigen::ComputeThinV);
  svd.setThreshold(rel);
  return svd.solve(s);
}

/// max over columns of ||sum_j (a_j - b_j) phi(l_j)|| / ||sum_j b_j phi(l_j)||.
double rkhs_rel(const MatrixXd& K, const MatrixXd& a, const MatrixXd& b) {
  double worst = 0.0;
  for (Index c = 0; c < a.cols(); ++c) {
    const VectorXd d = a.col(c) - b.col(c);
    const double num = std::sqrt(std::abs(d.dot(K * d)));
    const double den = std::sqrt(std::abs(b.col(c).dot(K * b.col(c))));
    worst = std::max(worst, den > 0 ? num / den : num);
  }
  return worst;
}

double rel_diff(const MatrixXd& a, const MatrixXd& b) { return (a - b).norm() / b.norm(); }

SolveResult solve(const MatrixXd& K, const MatrixXd& s, Solver solver, int threads = 0) {
  SolveOptions o;
  o.solver = solver;
  o.n_threads = threads;
  return solve_psd(K, s, o);
}

bool same_bits(const MatrixXd& a, const MatrixXd& b) {
  return a.rows() == b.rows() && a.cols() == b.cols() &&
         std::memcmp(a.data(), b.data(), sizeof(double) * std::size_t(a.size())) == 0;
}

void test_well_conditioned() {
  const MatrixXd X = normal(150, 3), Y = normal(400, 3);
  const MatrixXd K = gaussian_gram(X, X, 0.5);
  const MatrixXd s = gaussian_gram(X, Y, 0.5).rowwise().mean();
  const MatrixXd ref = pinv_svd(K, s, 1e-15);
  for (Solver sv : {Solver::cod, Solver::cholesky, Solver::automatic}) {
    const SolveResult r = solve(K, s, sv);
    CHECK(rel_diff(r.weights, ref) < 1e-10);
    CHECK(rkhs_rel(K, r.weights, ref) < 1e-12);
    CHECK(r.rank == 150);
  }
  CHECK(solve(K, s, Solver::automatic).used == Solver::cholesky);
  // several right-hand sides
  MatrixXd S(150, 3);
  S << s, 2 * s, gaussian_gram(X, normal(50, 3), 0.5).rowwise().mean();
  const MatrixXd ref3 = pinv_svd(K, S, 1e-15);
  for (Solver sv : {Solver::cod, Solver::cholesky, Solver::automatic}) {
    CHECK(rel_diff(solve(K, S, sv).weights, ref3) < 1e-10);
  }
}

void test_duplicated_rows(Index m, Index distinct, Index d, double sigma) {
  const MatrixXd L = landmarks_with_duplicates(m, distinct, d);
  const MatrixXd X = normal(3 * m, d);
  const MatrixXd K = gaussian_gram(L, L, sigma);
  const MatrixXd s = gaussian_gram(L, X, sigma).rowwise().mean();
  const MatrixXd ref = m <= 200 ? pinv_svd(K, s, 1e-13) : pinv_eig(K, s, 1e-13);
  const SolveResult cod = solve(K, s, Solver::cod);
  CHECK(cod.used == Solver::cod);
  CHECK(cod.rank <= distinct);
  // minimum norm: equal to the pseudo-inverse, and equal weights on identical rows
  CHECK(rel_diff(cod.weights, ref) < 1e-7);
  double spread = 0.0;
  for (Index i = 0; i < m; ++i) {
    for (Index j = i + 1; j < m; ++j) {
      if (L.row(i) == L.row(j)) spread = std::max(spread, std::abs(cod.weights(i, 0) - cod.weights(j, 0)));
    }
  }
  CHECK(spread <= 1e-9 * cod.weights.cwiseAbs().maxCoeff());
  const SolveResult aut = solve(K, s, Solver::automatic);
  CHECK(rkhs_rel(K, cod.weights, ref) < 1e-10);
  CHECK(rkhs_rel(K, aut.weights, ref) < 1e-10);
  CHECK(aut.weights.norm() >= cod.weights.norm() * (1 - 1e-9));  // cod has the least norm
  CHECK(rel_diff(aut.weights, cod.weights) < 1e-8);                // ... and so has auto
  CHECK(rkhs_rel(K, aut.weights, cod.weights) < 1e-10);
  // Cholesky of a matrix with identical rows must fail with a clear error
  bool threw = false;
  try {
    solve(K, s, Solver::cholesky);
  } catch (const std::runtime_error& e) {
    threw = std::string(e.what()).find("singular") != std::string::npos;
  }
  CHECK(threw);
  std::printf("  duplicated rows m=%ld distinct=%ld: rank %ld, auto used %s (est %.1e)\n",
              long(m), long(distinct), long(cod.rank),
              aut.used == Solver::cholesky ? "cholesky" : "cod", aut.error_estimate);
}

void test_low_rank_gram() {
  const Index m = 100, rank = 10;
  const MatrixXd X = normal(m, rank);
  const MatrixXd K = X * X.transpose();
  const MatrixXd s = K * normal(m, 2);  // consistent right-hand sides
  const MatrixXd ref = pinv_svd(K, s, 1e-12);
  const SolveResult cod = solve(K, s, Solver::cod);
  CHECK(cod.rank == rank);
  CHECK(rel_diff(cod.weights, ref) < 1e-10);
  const SolveResult aut = solve(K, s, Solver::automatic);
  // linear kernel with features X: the embedding of alpha is X^T alpha (exact metric;
  // the rounded K = X X^T is not exactly of rank 10)
  auto emb_rel = [&](const MatrixXd& a) {
    return (X.transpose() * (a - ref)).norm() / (X.transpose() * ref).norm();
  };
  std::printf("  X X^T rank %ld: auto used %s (est %.1e), emb(auto, svd-pinv) %.1e, emb(cod, svd-pinv) %.1e\n",
              long(rank), aut.used == Solver::cholesky ? "cholesky" : "cod", aut.error_estimate,
              emb_rel(aut.weights), emb_rel(cod.weights));
  CHECK(aut.rank == rank);
  CHECK(emb_rel(aut.weights) < 1e-10);
  CHECK(emb_rel(cod.weights) < 1e-10);
  // auto (pivoted Cholesky + projection) is the minimum-norm solution too
  CHECK(aut.used == Solver::cholesky);
  CHECK(rel_diff(aut.weights, ref) < 1e-10);
  CHECK_THROWS_AS(solve(K, s, Solver::cholesky), std::runtime_error);
  // inconsistent s (not in the range of K): cod is still the least-squares minimum norm
  const MatrixXd t = normal(m, 1);
  CHECK(rel_diff(solve(K, t, Solver::cod).weights, pinv_svd(K, t, 1e-12)) < 1e-9);
}

void test_nystrom_weights_merge() {
  const Index m = 90;
  const MatrixXd Ld = landmarks_with_duplicates(m, 60, 3);
  const RowMatrixXd L = Ld;
  const RowMatrixXd X = normal(500, 3);
  const Kernel kernel = Kernel::gaussian(0.8);
  const MatrixXd K = gaussian_gram(Ld, Ld, 0.8);
  const MatrixXd s = gaussian_gram(Ld, MatrixXd(X), 0.8).rowwise().mean();
  const MatrixXd ref = pinv_svd(K, s, 1e-13);
  for (Solver sv : {Solver::cod, Solver::cholesky, Solver::automatic}) {
    SolveOptions o;
    o.solver = sv;
    const SolveResult r = nystrom_weights<double>(L, s, kernel, o);
    CHECK(rel_diff(r.weights, ref) < 1e-7);
    CHECK(rkhs_rel(K, r.weights, ref) < 1e-9);
    if (sv != Solver::cod) {
      for (Index i = 0; i < m; ++i) {
        for (Index j = i + 1; j < m; ++j) {
          if (L.row(i) == L.row(j)) CHECK(r.weights(i, 0) == r.weights(j, 0));
        }
      }
      CHECK(r.rank == 60);
    }
  }
}

void test_bad_input() {
  const MatrixXd K = MatrixXd::Identity(4, 4), s = MatrixXd::Ones(4, 1);
  for (Solver sv : {Solver::cod, Solver::cholesky, Solver::automatic}) {
    CHECK_THROWS_AS(solve(MatrixXd::Ones(4, 3), MatrixXd::Ones(4, 1), sv), std::invalid_argument);
    CHECK_THROWS_AS(solve(K, MatrixXd::Ones(3, 1), sv), std::invalid_argument);
    MatrixXd Kn = K;
    Kn(1, 2) = Kn(2, 1) = std::nan("");
    CHECK_THROWS_AS(solve(Kn, s, sv), std::invalid_argument);
    MatrixXd sn = s;
    sn(2, 0) = INFINITY;
    CHECK_THROWS_AS(solve(K, sn, sv), std::invalid_argument);
    MatrixXd Ka = K;
    Ka(0, 3) = 0.5;  // not symmetric
    CHECK_THROWS_AS(solve(Ka, s, sv), std::invalid_argument);
    MatrixXd Kneg = K;
    Kneg(2, 2) = -1.0;  // not PSD
    CHECK_THROWS_AS(solve(Kneg, s, sv), std::invalid_argument);
  }
  SolveOptions o;
  o.rcond = std::nan("");
  CHECK_THROWS_AS(solve_psd(K, s, o), std::invalid_argument);
  // degenerate but valid input
  const SolveResult z = solve(MatrixXd::Zero(5, 5), MatrixXd::Ones(5, 1), Solver::cod);
  CHECK(z.rank == 0 && z.weights.isZero(0) && z.weights.allFinite());
  CHECK(solve(MatrixXd::Zero(5, 5), MatrixXd::Ones(5, 1), Solver::automatic).weights.isZero(0));
  CHECK_THROWS_AS(solve(MatrixXd::Zero(5, 5), MatrixXd::Ones(5, 1), Solver::cholesky),
                  std::runtime_error);
  for (Solver sv : {Solver::cod, Solver::cholesky, Solver::automatic}) {
    CHECK(solve(K, MatrixXd::Zero(4, 2), sv).weights.isZero(0));
    const SolveResult one = solve(MatrixXd::Constant(1, 1, 4.0), MatrixXd::Constant(1, 1, 2.0), sv);
    CHECK(std::abs(one.weights(0, 0) - 0.5) < 1e-15);
    CHECK(solve(MatrixXd(0, 0), MatrixXd(0, 1), sv).weights.size() == 0);
  }
  RowMatrixXd L(0, 2);
  CHECK_THROWS_AS(nystrom_weights<double>(L, MatrixXd(0, 1), Kernel::gaussian(1.0)),
                  std::invalid_argument);
  // s without columns (no right-hand side) is refused, not solved for nothing
  for (Solver sv : {Solver::cod, Solver::cholesky, Solver::automatic}) {
    CHECK(test::throws_with<std::invalid_argument>([&] { solve(K, MatrixXd(4, 0), sv); },
                                                   "at least one column"));
    SolveOptions so;
    so.solver = sv;
    const RowMatrixXd L3 = (RowMatrixXd(3, 2) << 0, 0, 1, 0, 0, 1).finished();
    const RowMatrixXd L6 = (RowMatrixXd(6, 2) << 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 1).finished();
    for (const RowMatrixXd* Lp : {&L3, &L6}) {  // distinct and duplicated landmarks
      CHECK(test::throws_with<std::invalid_argument>(
          [&] { nystrom_weights<double>(*Lp, MatrixXd(Lp->rows(), 0), Kernel::gaussian(1.0), so); },
          "s must have at least one column"));
    }
  }
}

void test_larger_against_eig() {
  // several panels of the blocked factorisations and of the QR
  const Index m = 700;
  const MatrixXd L = landmarks_with_duplicates(m, 520, 4);
  const MatrixXd K = gaussian_gram(L, L, 1.5);
  const MatrixXd s = gaussian_gram(L, normal(800, 4), 1.5).rowwise().mean();
  const MatrixXd ref = pinv_eig(K, s, 1e-13);
  const SolveResult cod = solve(K, s, Solver::cod), aut = solve(K, s, Solver::automatic);
  std::printf("  m=700: rank %ld, auto used %s, rkhs(cod, eig-pinv) %.1e, rkhs(auto, eig-pinv) %.1e\n",
              long(cod.rank), aut.used == Solver::cholesky ? "cholesky" : "cod",
              rkhs_rel(K, cod.weights, ref), rkhs_rel(K, aut.weights, ref));
  CHECK(rkhs_rel(K, cod.weights, ref) < 1e-9);
  CHECK(rkhs_rel(K, aut.weights, ref) < 1e-9);
  CHECK(rkhs_rel(K, aut.weights, cod.weights) < 1e-9);
  // well conditioned, all three
  const MatrixXd X = normal(m, 4);
  const MatrixXd K2 = gaussian_gram(X, X, 0.7);
  const MatrixXd s2 = gaussian_gram(X, normal(300, 4), 0.7).rowwise().mean();
  const MatrixXd ref2 = pinv_eig(K2, s2, 1e-15);
  for (Solver sv : {Solver::cod, Solver::cholesky, Solver::automatic}) {
    CHECK(rel_diff(solve(K2, s2, sv).weights, ref2) < 1e-9);
  }
}

void test_thread_invariance() {
  const Index m = 900;  // > several 128/64-column panels and update tiles
  const MatrixXd X = normal(m, 3);
  const MatrixXd K = gaussian_gram(X, X, 0.6);
  const MatrixXd s = gaussian_gram(X, normal(200, 3), 0.6).rowwise().mean();
  const MatrixXd Ld = landmarks_with_duplicates(m, 700, 3);
  const MatrixXd Kd = gaussian_gram(Ld, Ld, 1.2);
  const MatrixXd sd = gaussian_gram(Ld, normal(200, 3), 1.2).rowwise().mean();
  bool all_same = true;
  for (Solver sv : {Solver::cod, Solver::cholesky, Solver::automatic}) {
    for (int variant = 0; variant < 2; ++variant) {
      const MatrixXd& KK = variant ? Kd : K;
      const MatrixXd& ss = variant ? sd : s;
      if (variant && sv == Solver::cholesky) continue;
      MatrixXd w[3];
      for (int t = 1; t <= 2; ++t) {
#if defined(NYSTROM_KME_WITH_OPENMP)
        omp_set_num_threads(t);
#endif
        w[t - 1] = solve(KK, ss, sv).weights;  // n_threads = 0: all OpenMP threads
      }
      w[2] = solve(KK, ss, sv, 2).weights;
      const bool same = same_bits(w[0], w[1]) && same_bits(w[0], w[2]);
      if (!same) std::fprintf(stderr, "  solver %d variant %d differs between thread counts\n", int(sv), variant);
      all_same = all_same && same;
    }
  }
  CHECK(all_same);
#if defined(NYSTROM_KME_WITH_OPENMP)
  omp_set_num_threads(omp_get_num_procs());
#endif
}

/// product_acc against long double sums, for L column-major and transposed, both signs,
/// blocks with leading dimensions larger than their rows, sizes across the kernel's
/// register blocks (6 rows, 2 vectors of columns) and depth slices (256).
void test_product_acc() {
  const Index shapes[][3] = {{1, 1, 1}, {37, 5, 300}, {200, 130, 70}, {5, 200, 513}, {16, 6, 256}};
  for (const auto& shape : shapes) {
    const Index M = shape[0], N = shape[1], K = shape[2];
    const MatrixXd Lbig = normal(M + 3, K + 1), R = normal(K + 2, N), C0 = normal(M + 1, N);
    const auto L = Lbig.block(2, 1, M, K);
    const MatrixXd Lt = Lbig.transpose();  // L(i, p) = Lt(1 + p, 2 + i)
    for (double sign : {1.0, -1.0}) {
      for (int transposed = 0; transposed < 2; ++transposed) {
        MatrixXd C = C0;
        if (transposed) {
          detail::product_acc(M, N, K, sign, Lt.data() + 1 + 2 * Lt.rows(), Lt.rows(), 1, R.data(), R.rows(),
                              C.data(), C.rows());
        } else {
          detail::product_acc(M, N, K, sign, L.data(), 1, Lbig.rows(), R.data(), R.rows(), C.data(), C.rows());
        }
        double worst = 0.0;
        for (Index i = 0; i < M; ++i) {
          for (Index j = 0; j < N; ++j) {
            long double exact = C0(i, j), scale = std::abs(C0(i, j));
            for (Index p = 0; p < K; ++p) {
              exact += (long double)sign * L(i, p) * R(p, j);
              scale += std::abs(L(i, p) * R(p, j));
            }
            worst = std::max(worst, double(std::abs(C(i, j) - exact) / scale));
          }
        }
        CHECK(worst <= 4.0 * double(K + 1) * 1.1e-16);
        CHECK(C.bottomRows(1) == C0.bottomRows(1));  // the row below the block is untouched
      }
    }
  }
}

/// The blocked triangular solves against the residuals of their definitions, for orders
/// around the block sizes (32, 64) and blocks inside larger matrices (leading dimension
/// above the rows); a well-conditioned factor (Cholesky of X X^T / n + I).
void test_blocked_triangular_solves() {
  for (Index n : {1, 31, 63, 64, 65, 200}) {
    const MatrixXd X = normal(n, n);
    MatrixXd big = MatrixXd::Zero(n + 5, n + 5);
    big.topLeftCorner(n, n) = MatrixXd((X * X.transpose() / double(n) + MatrixXd::Identity(n, n)).llt().matrixL());
    big.topLeftCorner(n, n).triangularView<Eigen::StrictlyUpper>().setConstant(1e300);  // must not be read
    const auto L = big.topLeftCorner(n, n);
    const MatrixXd Lfull = MatrixXd(L.triangularView<Eigen::Lower>());
    const MatrixXd Lt = L.transpose();
    const double tol = 1e-13 * double(n);

    MatrixXd Bl = normal(n + 7, 40);  // left: rows 3 .. n + 3 of 40 columns, leading dimension n + 7
    const MatrixXd Bl0 = Bl;
    auto left = Bl.middleRows(3, n);
    detail::lower_solve_left(L, left);
    CHECK((Lfull * left - Bl0.middleRows(3, n)).norm() <= tol * Bl0.middleRows(3, n).norm());
    CHECK(Bl.topRows(3) == Bl0.topRows(3) && Bl.bottomRows(4) == Bl0.bottomRows(4));

    MatrixXd Br = normal(300, n + 2);  // right: columns 1 .. n + 1, rows 0 .. 257 of 300
    const MatrixXd Br0 = Br;
    auto right = Br.block(0, 1, 257, n);
    detail::lower_solve_right(L, right);
    CHECK((right * Lfull - Br0.block(0, 1, 257, n)).norm() <= tol * Br0.block(0, 1, 257, n).norm());
    CHECK(Br.bottomRows(43) == Br0.bottomRows(43) && Br.col(0) == Br0.col(0));

    MatrixXd Bt = Br0;
    auto right_t = Bt.block(0, 1, 257, n);
    detail::lower_transpose_solve_right(L, Lt, right_t, 32);
    CHECK((right_t * Lfull.transpose() - Br0.block(0, 1, 257, n)).norm() <= tol * Br0.block(0, 1, 257, n).norm());
    CHECK(Bt.bottomRows(43) == Br0.bottomRows(43) && Bt.col(n + 1) == Br0.col(n + 1));
  }
}

/// Q diag(w) Q^T with a random orthogonal Q.
MatrixXd with_spectrum(const VectorXd& w) {
  const Eigen::HouseholderQR<MatrixXd> qr(normal(w.size(), w.size()));
  const MatrixXd Q = qr.householderQ();
  MatrixXd K = Q * w.asDiagonal() * Q.transpose();
  return (K + K.transpose()) / 2;  // exactly symmetric
}

// Regression tests of the "Reliability" campaign: solve_psd used to accept indefinite K.
void test_indefinite() {
  const Solver all[] = {Solver::cod, Solver::cholesky, Solver::automatic};
  const MatrixXd s2 = MatrixXd::Ones(2, 1), s3 = MatrixXd::Ones(3, 1);
  MatrixXd A(2, 2), B(3, 3), Z(2, 2);
  A << 1, 2, 2, 1;                   // eigenvalues 3, -1: negative Schur complement
  B << 1, 0, 0, 0, 0, 1, 0, 1, 0;    // eigenvalues 1, 1, -1: zero diagonal Schur block
  Z << 0, 1, 1, 0;                   // zero diagonal, eigenvalues +-1
  const VectorXd w = VectorXd::LinSpaced(60, 1.0, 0.01);
  VectorXd w1 = w, w2 = w, w3 = w;
  w1(59) = -1e-3;
  w2(30) = -1e-6;  // mildly indefinite, far above rounding (1e-13)
  w3.tail(20).setZero();
  w3(59) = -1e-4;  // singular and indefinite
  const MatrixXd s60 = normal(60, 2);
  for (Solver sv : all) {
    const char* msg = "K is not positive semidefinite";
    CHECK(throws_with<std::invalid_argument>([&] { solve(A, s2, sv); }, msg));
    CHECK(throws_with<std::invalid_argument>([&] { solve(B, s3, sv); }, msg));
    CHECK(throws_with<std::invalid_argument>([&] { solve(Z, s2, sv); }, msg));
    CHECK(throws_with<std::invalid_argument>([&] { solve(with_spectrum(w1), s60, sv); }, msg));
    CHECK(throws_with<std::invalid_argument>([&] { solve(with_spectrum(w2), s60, sv); }, msg));
    CHECK(throws_with<std::invalid_argument>([&] { solve(with_spectrum(w3), s60, sv); }, msg));
    CHECK(throws_with<std::invalid_argument>([&] { solve(-MatrixXd::Identity(3, 3), s3, sv); }, msg));
  }
  // PSD but singular K keep working: rank 40 of 60, plus symmetric noise at the
  // rounding level (eigenvalues of +-1e-16 around the zero ones)
  VectorXd w4 = w;
  w4.tail(20).setZero();
  MatrixXd K4 = with_spectrum(w4);
  MatrixXd noise = 1e-16 * normal(60, 60);
  K4 += (noise + noise.transpose()) / 2;
  for (Solver sv : {Solver::cod, Solver::automatic}) {
    const SolveResult r = solve(K4, s60, sv);
    CHECK(r.weights.allFinite() && r.rank < 60);
    CHECK(rel_diff(K4 * r.weights, K4 * pinv_eig(K4, s60, 1e-12)) < 1e-6);
  }
  CHECK(throws_with<std::runtime_error>([&] { solve(K4, s60, Solver::cholesky); }, "singular"));
  // positive semidefinite low-rank Gram matrices of several scales and offsets
  for (double scale : {1e-150, 1.0, 1e100}) {
    for (double offset : {0.0, 1e3}) {
      const MatrixXd X = (normal(200, 5).array() + offset).matrix() * scale;
      const MatrixXd K = X * X.transpose();
      const MatrixXd sk = K * normal(200, 1);
      for (Solver sv : {Solver::cod, Solver::automatic}) {
        const SolveResult r = solve(K, sk, sv);
        CHECK(r.rank == 5 && r.weights.allFinite());
      }
    }
  }
}

void test_option_and_symmetry_validation() {
  const MatrixXd X = normal(20, 2);
  const MatrixXd G = gaussian_gram(X, X, 1.0), s = MatrixXd::Ones(20, 1);
  for (Solver sv : {Solver::cod, Solver::cholesky, Solver::automatic}) {
    for (double rcond : {std::nan(""), double(INFINITY), -double(INFINITY), 1.0, 5.0}) {
      SolveOptions o;
      o.solver = sv;
      o.rcond = rcond;
      CHECK(throws_with<std::invalid_argument>([&] { solve_psd(G, s, o); }, "rcond"));
    }
    for (double tol : {std::nan(""), double(INFINITY), -1e-3}) {
      SolveOptions o;
      o.solver = sv;
      o.tolerance = tol;
      CHECK(throws_with<std::invalid_argument>([&] { solve_psd(G, s, o); }, "tolerance"));
    }
    // asymmetry of 1e-8 relative is rejected (it used to pass up to 1e-5); 1e-13 is rounding
    MatrixXd Ga = G;
    Ga(3, 7) += 1e-8;
    CHECK(throws_with<std::invalid_argument>([&] { solve(Ga, s, sv); }, "not symmetric"));
    MatrixXd Gr = G;
    Gr(3, 7) += 1e-13;
    CHECK(solve(Gr, s, sv).weights.allFinite());
  }
  SolveOptions bad;
  bad.solver = static_cast<Solver>(9);
  CHECK(throws_with<std::invalid_argument>([&] { solve_psd(G, s, bad); }, "solver"));
  // negative rcond means the default (documented), as before
  SolveOptions neg;
  neg.rcond = -1.0;
  CHECK(solve_psd(G, s, neg).weights.allFinite());
  // nystrom_weights validates its own arguments
  const Kernel kern = Kernel::gaussian(1.0);
  RowMatrixXd L = normal(20, 2);
  RowMatrixXd Ln = L;
  Ln(4, 1) = std::nan("");  // NaN used to reach std::sort (undefined behaviour)
  CHECK(throws_with<std::invalid_argument>([&] { nystrom_weights<double>(Ln, s, kern); }, "L contains"));
  RowMatrixXf Lfn = L.cast<float>();
  Lfn(0, 0) = INFINITY;
  CHECK(throws_with<std::invalid_argument>([&] { nystrom_weights<float>(Lfn, s, kern); }, "L contains"));
  MatrixXd sn = s;
  sn(2, 0) = std::nan("");
  CHECK(throws_with<std::invalid_argument>([&] { nystrom_weights<double>(L, sn, kern); }, "s contains"));
  CHECK(throws_with<std::invalid_argument>([&] { nystrom_weights<double>(L, s.topRows(19), kern); }, "rows"));
  const RowMatrixXd no_cols(20, 0);
  CHECK(throws_with<std::invalid_argument>([&] { nystrom_weights<double>(no_cols, s, kern); }, "landmark"));
  SolveOptions nan_rcond;
  nan_rcond.rcond = std::nan("");
  CHECK(throws_with<std::invalid_argument>([&] { nystrom_weights<double>(L, s, kern, nan_rcond); }, "rcond"));
  // kernel values that overflow (linear kernel on values near 1e200)
  const RowMatrixXd H = L * 1e200;
  const Kernel lin = Kernel::from_name("linear", 1.0);
  for (Solver sv : {Solver::cod, Solver::cholesky, Solver::automatic}) {
    SolveOptions o;
    o.solver = sv;
    CHECK(throws_with<std::invalid_argument>([&] { nystrom_weights<double>(H, s, lin, o); }, "not finite"));
  }
}

}  // namespace

int main() {
  if (const int skip = test::skip_if_level_unsupported()) return skip;
  test_well_conditioned();
  test_duplicated_rows(120, 80, 3, 1.0);
  test_duplicated_rows(400, 300, 4, 0.8);
  test_low_rank_gram();
  test_nystrom_weights_merge();
  test_bad_input();
  test_larger_against_eig();
  test_thread_invariance();
  test_indefinite();
  test_option_and_symmetry_validation();
  test_product_acc();
  test_blocked_triangular_solves();
  if (test::failures == 0) std::printf("test_solve: all checks passed\n");
  return test::failures == 0 ? 0 : 1;
}
