// The betting loop of sequential_betting.hpp against a plain re-implementation (direct
// Gaussian and Laplacian formulas, the witness, payoffs, ONS and aGRAPA written out),
// split calls against one call, the witness's RKHS norm, and bad input refused by name
// before the state changes.
#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <vector>

#include <Eigen/LU>

#include <nystrom_kme/sequential_betting.hpp>

#include "check.hpp"

using namespace nystrom_kme;
using test::throws_with;

namespace {

constexpr double kStep = 2.0 / (2.0 - 1.0986122886681098);  // ONS: 2 / (2 - log 3)

double plain_kernel(const double* a, const double* b, Index d, bool gaussian, double bw) {
  double s = 0;
  for (Index f = 0; f < d; ++f) s += (a[f] - b[f]) * (a[f] - b[f]);
  return gaussian ? std::exp(-s / (2 * bw * bw)) : std::exp(-std::sqrt(s) / bw);
}

RowMatrixXd plain_gram(const RowMatrixXd& A, const RowMatrixXd& B, bool gaussian, double bw) {
  RowMatrixXd K(A.rows(), B.rows());
  for (Index i = 0; i < A.rows(); ++i)
    for (Index j = 0; j < B.rows(); ++j) K(i, j) = plain_kernel(&A(i, 0), &B(j, 0), A.cols(), gaussian, bw);
  return K;
}

struct Case {
  RowMatrixXd L, R, X, Y;
  std::vector<bool> gaussian;
  std::vector<double> bw;
  RowMatrixXd inverse, gram, sums;
  Eigen::VectorXd margin;
  RowMatrixXd weights;
};

// Reference rows R, landmarks L (part of R), a shifted stream X, reference-like rows Y;
// a Gaussian and a Laplacian kernel, ridge-regularised inverses.
Case make_case(unsigned seed, Index d, Index m, Index n) {
  Case c;
  c.R = test::normal_matrix(2000, d, seed);
  c.L = c.R.topRows(m);
  c.X = test::normal_matrix(n, d, seed + 1);
  c.X.col(0).array() += 0.4;
  c.Y = test::normal_matrix(n, d, seed + 2);
  c.gaussian = {true, false};
  c.bw = {1.5, 2.5};
  const Index K = 2;
  c.inverse.resize(K * m, m);
  c.gram.resize(K * m, m);
  c.sums.resize(K, m);
  for (Index j = 0; j < K; ++j) {
    const RowMatrixXd G = plain_gram(c.L, c.L, c.gaussian[j], c.bw[j]);
    c.gram.middleRows(j * m, m) = G;
    c.inverse.middleRows(j * m, m) = RowMatrixXd(G + 1e-6 * RowMatrixXd::Identity(m, m)).inverse();
    c.sums.row(j) = plain_gram(c.L, c.R, c.gaussian[j], c.bw[j]).rowwise().sum().transpose();
  }
  c.margin = Eigen::VectorXd::Constant(K, 0.02);
  c.weights = RowMatrixXd::Constant(K, 4, 1.0 / 8);
  return c;
}

BettingModel model_of(const Case& c, bool margin_bets, bool pairs_join, Index refresh = 7) {
  std::vector<Kernel> ks;
  for (std::size_t j = 0; j < c.gaussian.size(); ++j)
    ks.push_back(c.gaussian[j] ? Kernel::gaussian(c.bw[j]) : Kernel::laplacian(c.bw[j]));
  RowMatrixXd w = c.weights;
  if (!margin_bets) {
    w.leftCols(2).setZero();
    w.rightCols(2).setConstant(0.25);
  }
  return BettingModel(c.L, ks, c.inverse, c.gram, c.margin, w, BettingOptions{margin_bets, pairs_join, refresh, 0.5});
}

// The loop written out row by row, every quantity from the definitions.
std::vector<double> plain_run(const Case& c, bool margin_bets, bool pairs_join, Index q, Index refresh) {
  const Index K = 2, m = c.L.rows(), n = c.X.rows();
  RowMatrixXd w = c.weights;
  if (!margin_bets) {
    w.leftCols(2).setZero();
    w.rightCols(2).setConstant(0.25);
  }
  std::vector<Eigen::VectorXd> sx(K, Eigen::VectorXd::Zero(m)), sy(K), coef(K, Eigen::VectorXd::Zero(m));
  std::vector<double> off(K, 0.0), ny(K, 2000.0);
  for (Index j = 0; j < K; ++j) sy[std::size_t(j)] = c.sums.row(j).transpose();
  struct Bettor { double lam = 0, A = 1, S = 0, Q = 0, lw_ons = 0, lw_grapa = 0; };
  std::vector<std::vector<Bettor>> bet(K, std::vector<Bettor>(2));
  auto play = [](Bettor& b, double g) {
    const double grapa = std::min(std::max(b.S / (1 + b.Q), 0.0), 0.5);
    b.lw_ons += std::log1p(b.lam * g);
    b.lw_grapa += std::log1p(grapa * g);
    const double z = g / (1 + b.lam * g);
    b.A += z * z;
    b.lam = std::min(std::max(b.lam + kStep * z / b.A, 0.0), 0.5);
    b.S += g;
    b.Q += g * g;
  };
  std::vector<double> out;
  long next = 1;
  double nx = 0;
  for (Index t = 0; t < n; ++t) {
    for (Index j = 0; j < K; ++j) {
      Eigen::VectorXd kx(m), ky(m);
      for (Index i = 0; i < m; ++i) kx(i) = plain_kernel(&c.L(i, 0), &c.X(t, 0), c.L.cols(), c.gaussian[j], c.bw[j]);
      const double fx = coef[std::size_t(j)].dot(kx);
      if (margin_bets) {
        const double e = c.margin(j), o = off[std::size_t(j)];
        play(bet[std::size_t(j)][0], (fx - o - e) / (1 + std::abs(o) + e));
      }
      if (t < q) {
        for (Index i = 0; i < m; ++i) ky(i) = plain_kernel(&c.L(i, 0), &c.Y(t, 0), c.L.cols(), c.gaussian[j], c.bw[j]);
        play(bet[std::size_t(j)][1], 0.5 * (fx - coef[std::size_t(j)].dot(ky)));
        if (pairs_join) sy[std::size_t(j)] += ky, ny[std::size_t(j)] += 1;
      }
      sx[std::size_t(j)] += kx;
    }
    nx += 1;
    double mix = 0;
    for (Index j = 0; j < K; ++j) {
      const Bettor& a = bet[std::size_t(j)][0];
      const Bettor& b = bet[std::size_t(j)][1];
      mix += w(j, 0) * std::exp(a.lw_ons) + w(j, 1) * std::exp(a.lw_grapa) + w(j, 2) * std::exp(b.lw_ons) +
             w(j, 3) * std::exp(b.lw_grapa);
    }
    out.push_back(std::log(mix));
    if (t + 1 >= next) {
      for (Index j = 0; j < K; ++j) {
        const Eigen::VectorXd u = sx[std::size_t(j)] / nx - sy[std::size_t(j)] / ny[std::size_t(j)];
        Eigen::VectorXd cj = c.inverse.middleRows(j * m, m) * u;
        // the norm with the header's allowance for its rounding, 4 (m + 2) eps ||c||_1^2
        const double l1 = cj.cwiseAbs().sum();
        cj /= std::sqrt(cj.dot(c.gram.middleRows(j * m, m) * cj) + 4.0 * double(m + 2) * 2.220446049250313e-16 * l1 * l1);
        coef[std::size_t(j)] = cj;
        off[std::size_t(j)] = cj.dot(sy[std::size_t(j)]) / ny[std::size_t(j)];
      }
      next = t + 1 + std::min<long>(std::max<long>((t + 1) / 16, 1), long(refresh));
    }
  }
  return out;
}

double max_gap(const Eigen::VectorXd& a, const std::vector<double>& b) {
  double gap = 0;
  for (Index i = 0; i < a.size(); ++i) gap = std::max(gap, std::abs(a(i) - b[std::size_t(i)]));
  return gap;
}

// Margin and paired bets, paired rows joining the other side or not, against the plain loop.
void test_against_plain_loop() {
  for (const Index d : {2, 5}) {
    const Case c = make_case(3 + unsigned(d), d, 24, 300);
    for (const int variant : {0, 1, 2}) {
      const bool margin_bets = variant != 2, pairs_join = variant == 2;
      const Index q = variant == 0 ? 120 : 300;  // pairs for the first q rows
      const BettingModel model = model_of(c, margin_bets, pairs_join);
      BettingState s = initial_betting_state(model, c.sums, 2000.0);
      const Eigen::VectorXd lw = bet_rows(model, c.X, c.Y.topRows(q), s, 1);
      const std::vector<double> ref = plain_run(c, margin_bets, pairs_join, q, 7);
      const double gap = max_gap(lw, ref);
      if (!(gap < 1e-9)) std::fprintf(stderr, "  d=%ld variant %d: gap %g\n", long(d), variant, gap);
      CHECK(gap < 1e-9);
      CHECK(s.t == 300 && s.count_x == 300.0);
      CHECK(s.count_y == (pairs_join ? 2300.0 : 2000.0));
      CHECK(std::abs(lw(299)) > 0.1);  // the shifted stream moved the wealth: the comparison is not vacuous
    }
  }
}

// Any split of the rows into calls gives the same wealth (to round-off: small blocks take
// their kernel values row by row, large ones from the tile engine), and the same state.
void test_split_calls() {
  const Case c = make_case(11, 3, 40, 700);
  const BettingModel model = model_of(c, true, false, 256);
  BettingState whole = initial_betting_state(model, c.sums, 2000.0);
  const Eigen::VectorXd lw = bet_rows(model, c.X, c.Y.topRows(500), whole, 2);
  BettingState part = initial_betting_state(model, c.sums, 2000.0);
  std::vector<double> pieces;
  for (Index start = 0; start < 700;) {
    const Index len = std::min<Index>(start < 100 ? 1 : 97, 700 - start);
    const Index q = std::clamp<Index>(500 - start, 0, len);
    const Eigen::VectorXd piece = bet_rows(model, c.X.middleRows(start, len), c.Y.middleRows(start, q), part, 1);
    for (Index i = 0; i < len; ++i) pieces.push_back(piece(i));
    start += len;
  }
  CHECK(max_gap(lw, pieces) < 1e-10);
  CHECK(part.t == whole.t && part.next_refresh == whole.next_refresh);
  CHECK((part.bettors - whole.bettors).cwiseAbs().maxCoeff() < 1e-10);
}

// The witness has RKHS norm at most 1 after every refresh, and its offset is its mean
// over the other side.
void test_witness_norm() {
  const Case c = make_case(21, 4, 30, 200);
  const BettingModel model = model_of(c, true, false, 1);
  BettingState s = initial_betting_state(model, c.sums, 2000.0);
  for (Index start = 0; start < 200; start += 20) {
    bet_rows(model, c.X.middleRows(start, 20), c.Y.topRows(0), s, 1);
    for (Index j = 0; j < 2; ++j) {
      const Eigen::VectorXd cj = s.witness.row(j).transpose();
      const double norm2 = cj.dot(c.gram.middleRows(j * 30, 30) * cj);
      CHECK(norm2 <= 1.0 + 1e-12 && norm2 > 0.99);
      CHECK(std::abs(s.offset(j) - cj.dot(c.sums.row(j).transpose()) / 2000.0) < 1e-12);
    }
  }
}

// Bad input: named, and the state is left as it was.
void test_bad_input() {
  const Case c = make_case(31, 2, 10, 50);
  const BettingModel model = model_of(c, true, false);
  BettingState s = initial_betting_state(model, c.sums, 2000.0);
  bet_rows(model, c.X.topRows(20), c.Y.topRows(5), s, 1);
  const BettingState before = s;
  auto unchanged = [&] {
    return s.t == before.t && s.sums_x == before.sums_x && s.bettors == before.bettors && s.witness == before.witness;
  };
  RowMatrixXd bad = c.X.topRows(5);
  bad(3, 1) = std::nan("");
  CHECK(throws_with<std::invalid_argument>([&] { bet_rows(model, bad, c.Y.topRows(0), s); }, "X contains NaN"));
  CHECK(unchanged());
  bad(3, 1) = INFINITY;
  CHECK(throws_with<std::invalid_argument>([&] { bet_rows(model, c.X.topRows(5), bad, s); }, "Y contains NaN"));
  const RowMatrixXd wide = RowMatrixXd::Zero(4, 3);
  CHECK(throws_with<std::invalid_argument>([&] { bet_rows(model, wide, c.Y.topRows(0), s); }, "X must have 2 columns"));
  CHECK(throws_with<std::invalid_argument>([&] { bet_rows(model, c.X.topRows(2), c.Y.topRows(3), s); },
                                           "Y must not have more rows"));
  const BettingModel paired_only = model_of(c, false, true);
  BettingState p = initial_betting_state(paired_only, c.sums, 2000.0);
  CHECK(throws_with<std::invalid_argument>([&] { bet_rows(paired_only, c.X.topRows(3), c.Y.topRows(2), p); },
                                           "Y must pair every row"));
  BettingState broken = s;
  broken.bettors(0, bettor::kBettors) = 0.9;  // an ONS fraction above the limit
  CHECK(throws_with<std::invalid_argument>([&] { bet_rows(model, c.X.topRows(1), c.Y.topRows(0), broken); },
                                           "bettors"));
  broken = s;
  broken.next_refresh = broken.t;
  CHECK(throws_with<std::invalid_argument>([&] { bet_rows(model, c.X.topRows(1), c.Y.topRows(0), broken); },
                                           "next_refresh"));
  broken = s;
  broken.sums_x.resize(1, 10);
  CHECK(throws_with<std::invalid_argument>([&] { bet_rows(model, c.X.topRows(1), c.Y.topRows(0), broken); },
                                           "sums_x must have shape (2, 10)"));
  CHECK(unchanged());

  // the model is checked once, when built
  const std::vector<Kernel> ks{Kernel::gaussian(1.0), Kernel::laplacian(1.0)};
  const Eigen::VectorXd eps = Eigen::VectorXd::Constant(2, 0.1);
  const RowMatrixXd w = RowMatrixXd::Constant(2, 4, 0.125);
  const BettingOptions opt{};
  CHECK(throws_with<std::invalid_argument>(
      [&] { BettingModel(c.L, {Kernel::gaussian(1.0), Kernel::from_name("linear", 1.0)}, c.inverse, c.gram, eps, w, opt); },
      "kernels must be radial"));
  CHECK(throws_with<std::invalid_argument>(
      [&] { BettingModel(c.L, ks, c.inverse.topRows(10), c.gram, eps, w, opt); }, "inverse must have shape (20, 10)"));
  CHECK(throws_with<std::invalid_argument>(
      [&] { BettingModel(c.L, ks, c.inverse, c.gram, -eps, w, opt); }, "margin must be finite and >= 0"));
  CHECK(throws_with<std::invalid_argument>(
      [&] { BettingModel(c.L, ks, c.inverse, c.gram, eps, 2 * w, opt); }, "weights must sum"));
  CHECK(throws_with<std::invalid_argument>(
      [&] { BettingModel(c.L, ks, c.inverse, c.gram, eps, w, BettingOptions{true, false, 0, 0.5}); },
      "refresh must be at least 1"));
  CHECK(throws_with<std::invalid_argument>(
      [&] { BettingModel(c.L, ks, c.inverse, c.gram, eps, w, BettingOptions{true, false, 1, 1.0}); },
      "limit must lie in (0, 1)"));
  RowMatrixXd gram = c.gram;
  gram(3, 4) = std::nan("");
  CHECK(throws_with<std::invalid_argument>([&] { BettingModel(c.L, ks, c.inverse, gram, eps, w, opt); },
                                           "gram contains NaN"));
}

}  // namespace

int main() {
  test_against_plain_loop();
  test_split_calls();
  test_witness_norm();
  test_bad_input();
  if (test::failures) std::fprintf(stderr, "%d failure(s)\n", test::failures);
  return test::failures ? 1 : 0;
}
