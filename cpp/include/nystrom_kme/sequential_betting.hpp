// Sequential kernel tests by betting on a compressed embedding: the betting loop over a
// block of rows (Shekhar & Ramdas, "Nonparametric two-sample testing by betting", IEEE
// Trans. IT 2023; Podkopaev et al., "Sequential kernelized independence testing", ICML
// 2023), with the witness kept as coefficients on m landmarks, so that a row costs
// O(K m d) for K kernels and the memory is O(K m^2), whatever the number of rows seen.
//
// For each kernel j the witness is f_j = sum_i c_ji k_j(l_i, .), the projection onto the
// landmarks' span of mu_X - mu_Y (the stream's mean embedding so far minus the other
// side's: the reference, or the second stream), normalised to RKHS norm at most 1:
//     u = S_x / n_x - S_y / n_y,  c = P u / sqrt(c' G c),
// with S the kernel sums K(L, rows) 1, G = K(L, L) and P the caller's (a regularised
// inverse of G: the package uses (G + 1e-6 I)^-1). No guarantee rests on P: the norm is
// c' G c itself, plus an allowance for its rounding. Every radial kernel has
// k(x, x) = 1, so |f(x)| <= ||f|| <= 1 for every x. The witness that bets on
// row t is computed from the rows before it only (refreshed every few rows: at row counts
// t with t / 16 rows since the last refresh, at most `refresh`), so every payoff is a
// predictable function of the next row:
//   * a paired bet, on a row x and a row y that are exchangeable without a change (a
//     held-out reference row, or the second stream's row): g = (f(x) - f(y)) / 2, in
//     [-1, 1], mean 0 under the null, exactly;
//   * a margin bet, on x alone against the fixed other side (the reference's sums):
//     g = (f(x) - f_bar - eps) / (1 + |f_bar| + eps), f_bar = c' S_y / n_y the mean of f
//     over the reference rows, eps >= ||f|| ||mu_P - mu_R|| (the caller's bound on the
//     reference's error): mean <= 0 under the null on that bound's event, g in [-1, 1].
// Each payoff feeds two bettors: online Newton step (ONS, Cutkosky & Orabona 2018) and
// aGRAPA (Waudby-Smith & Ramdas 2023), each fraction in [0, limit] chosen from the past
// payoffs only, each wealth W = prod (1 + lambda g) a nonnegative (super)martingale. The
// test's wealth is a fixed mixture of the 4 K wealths (margin/paired x ONS/aGRAPA x
// kernel), kept in logarithms (no overflow on long drifts).
//
// The loop's state (BettingState) is the caller's; a call checks every argument before it
// changes anything (std::invalid_argument naming the argument).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <nystrom_kme/detail/checks.hpp>
#include <nystrom_kme/detail/kernel_rows.hpp>
#include <nystrom_kme/detail/tile_engine.hpp>
#include <nystrom_kme/interrupt.hpp>
#include <nystrom_kme/kernel_sums.hpp>
#include <nystrom_kme/kernels.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme {

/// The bettors of one kernel: the columns of BettingState::bettors.
namespace bettor {
/// Where each of the 4 bettors' fields are: bettor b (kMarginOns, kMarginGrapa,
/// kPairedOns, kPairedGrapa) keeps its log wealth at column b, its first statistic at
/// kBettors + 2 b and its second at kBettors + 2 b + 1: ONS its fraction lambda and
/// its curvature A = 1 + sum z^2; aGRAPA the sum of its payoffs and of their squares.
enum : Index { kMarginOns = 0, kMarginGrapa = 1, kPairedOns = 2, kPairedGrapa = 3, kBettors = 4 };
inline constexpr Index kColumns = 3 * kBettors;
/// ONS's step constant 2 / (2 - log 3) (Cutkosky & Orabona 2018).
inline constexpr double kOnsStep = 2.0 / (2.0 - 1.0986122886681098);
}  // namespace bettor

/// How a test bets (fixed for the test).
struct BettingOptions {
  bool margin_bets = true;  ///< place margin bets (the other side is a fixed reference)
  bool pairs_join = false;  ///< paired rows join S_y (two streams) or not (a reference's held-out rows)
  Index refresh = 256;      ///< the witness is refreshed at least every `refresh` rows
  double limit = 0.5;       ///< the largest betting fraction, in (0, 1)
};

/// What a test fixes once, checked once: the landmarks, the kernels and their matrices,
/// the margins and the mixture's weights.
class BettingModel {
 public:
  /// @param landmarks L (m, d)
  /// @param kernels K radial kernels
  /// @param inverse (K m, m): rows j m .. (j + 1) m - 1 hold P_j, the projection's (regularised) inverse of G_j
  /// @param gram (K m, m): G_j = k_j(L, L), rows as in `inverse`
  /// @param margin (K,) eps_j >= 0 of the margin bets
  /// @param weights (K, 4) >= 0, summing to at most 1: the mixture over the bettors
  /// @throws std::invalid_argument naming the argument that is out of range
  BettingModel(RowMatrixXd landmarks, std::vector<Kernel> kernels, RowMatrixXd inverse, RowMatrixXd gram,
               Eigen::VectorXd margin, RowMatrixXd weights, BettingOptions options)
      : landmarks_(std::move(landmarks)),
        kernels_(std::move(kernels)),
        inverse_(std::move(inverse)),
        gram_(std::move(gram)),
        margin_(std::move(margin)),
        weights_(std::move(weights)),
        options_(options) {
    check();
  }

  const RowMatrixXd& landmarks() const { return landmarks_; }
  const std::vector<Kernel>& kernels() const { return kernels_; }
  const RowMatrixXd& inverse() const { return inverse_; }
  const RowMatrixXd& gram() const { return gram_; }
  const Eigen::VectorXd& margin() const { return margin_; }
  const RowMatrixXd& weights() const { return weights_; }
  const BettingOptions& options() const { return options_; }
  Index n_kernels() const { return Index(kernels_.size()); }
  Index n_landmarks() const { return landmarks_.rows(); }

 private:
  void check() const;

  RowMatrixXd landmarks_;
  std::vector<Kernel> kernels_;
  RowMatrixXd inverse_, gram_;
  Eigen::VectorXd margin_;
  RowMatrixXd weights_;
  BettingOptions options_;
};

/// A test's state after t rows: updated by bet_rows.
struct BettingState {
  RowMatrixXd sums_x;     ///< (K, m) S_x: the kernel sums of the rows seen
  double count_x = 0;     ///< n_x
  RowMatrixXd sums_y;     ///< (K, m) S_y: the other side's kernel sums
  double count_y = 0;     ///< n_y
  RowMatrixXd witness;    ///< (K, m) c_j (zero before a witness exists)
  Eigen::VectorXd offset; ///< (K,) f_bar_j = c_j' S_y / n_y at the last refresh
  RowMatrixXd bettors;    ///< (K, bettor::kColumns)
  std::int64_t t = 0;     ///< rows seen
  std::int64_t next_refresh = 1;  ///< the row count at which the witness is refreshed next
};

namespace detail {

inline std::string betting_shape(const char* name, Index rows, Index cols) {
  return std::string(name) + " must have shape (" + std::to_string(rows) + ", " + std::to_string(cols) + ")";
}

}  // namespace detail

inline void BettingModel::check() const {
  const Index K = n_kernels(), m = n_landmarks();
  if (K < 1) throw std::invalid_argument("kernels must hold at least one kernel");
  for (const Kernel& k : kernels_)
    if (!k.is_radial())
      throw std::invalid_argument(std::string("kernels must be radial (k(x, x) = 1 bounds the witness), got ") +
                                  k.name());
  if (m < 1 || landmarks_.cols() < 1) throw std::invalid_argument("landmarks must hold at least one row");
  detail::check_finite<double>(landmarks_, "landmarks");
  if (inverse_.rows() != K * m || inverse_.cols() != m)
    throw std::invalid_argument(detail::betting_shape("inverse", K * m, m));
  if (gram_.rows() != K * m || gram_.cols() != m) throw std::invalid_argument(detail::betting_shape("gram", K * m, m));
  detail::check_finite<double>(inverse_, "inverse");
  detail::check_finite<double>(gram_, "gram");
  if (margin_.size() != K) throw std::invalid_argument("margin must hold one value per kernel");
  for (Index j = 0; j < K; ++j)
    if (!(margin_(j) >= 0.0) || !std::isfinite(margin_(j)))
      throw std::invalid_argument("margin must be finite and >= 0");
  if (weights_.rows() != K || weights_.cols() != bettor::kBettors)
    throw std::invalid_argument(detail::betting_shape("weights", K, bettor::kBettors));
  double total = 0.0;
  for (Index i = 0; i < weights_.size(); ++i) {
    const double w = weights_.data()[i];
    if (!(w >= 0.0) || !std::isfinite(w)) throw std::invalid_argument("weights must be finite and >= 0");
    total += w;
  }
  if (!(total > 0.0) || total > 1.0 + 1e-12) throw std::invalid_argument("weights must sum to a value in (0, 1]");
  if (options_.refresh < 1) throw std::invalid_argument("refresh must be at least 1");
  if (!(options_.limit > 0.0 && options_.limit < 1.0)) throw std::invalid_argument("limit must lie in (0, 1)");
}

namespace detail {

/// @throws std::invalid_argument naming the field of `state` that does not fit `model`
inline void check_betting_state(const BettingModel& model, const BettingState& s) {
  const Index K = model.n_kernels(), m = model.n_landmarks();
  const auto fits = [&](const RowMatrixXd& a, Index rows, Index cols, const char* name) {
    if (a.rows() != rows || a.cols() != cols) throw std::invalid_argument(betting_shape(name, rows, cols));
    check_finite<double>(a, name);
  };
  fits(s.sums_x, K, m, "sums_x");
  fits(s.sums_y, K, m, "sums_y");
  fits(s.witness, K, m, "witness");
  fits(s.bettors, K, bettor::kColumns, "bettors");
  if (s.offset.size() != K || !s.offset.allFinite())
    throw std::invalid_argument("offset must hold one finite value per kernel");
  if (!(s.count_x >= 0.0) || !std::isfinite(s.count_x) || !(s.count_y >= 0.0) || !std::isfinite(s.count_y))
    throw std::invalid_argument("count_x and count_y must be finite and >= 0");
  if (s.t < 0 || s.next_refresh <= s.t) throw std::invalid_argument("t must be >= 0 and next_refresh > t");
  for (Index j = 0; j < K; ++j)
    for (Index b = 0; b < bettor::kBettors; ++b) {
      const double first = s.bettors(j, bettor::kBettors + 2 * b), second = s.bettors(j, bettor::kBettors + 2 * b + 1);
      const bool ons = b == bettor::kMarginOns || b == bettor::kPairedOns;
      if (ons ? !(first >= 0.0 && first <= model.options().limit && second >= 1.0) : !(second >= 0.0))
        throw std::invalid_argument("bettors: a fraction outside [0, limit], a curvature below 1 or a negative "
                                    "sum of squares");
    }
}

/// Refresh kernel j's witness from the sums (BettingState's comment); `u` and `gc` are
/// work vectors of m values.
inline void refresh_witness(const BettingModel& model, BettingState& s, Index j, Eigen::VectorXd& u,
                            Eigen::VectorXd& gc) {
  const Index m = model.n_landmarks();
  auto c = s.witness.row(j);
  if (s.count_x <= 0.0 || s.count_y <= 0.0) {
    c.setZero();
    s.offset(j) = 0.0;
    return;
  }
  u = s.sums_x.row(j).transpose() / s.count_x - s.sums_y.row(j).transpose() / s.count_y;
  const auto P = model.inverse().middleRows(j * m, m);
  const auto G = model.gram().middleRows(j * m, m);
  gc.noalias() = P * u;  // c before its scaling
  c = gc.transpose();
  gc.noalias() = G * c.transpose();
  const double norm2 = c.dot(gc.transpose());
  // c' G c computed in floating point: off by at most about m eps sum_ik |c_i| |G_ik| |c_k|
  // <= m eps ||c||_1^2 (|G_ik| <= 1), added so that ||f|| <= 1 also after rounding
  const double l1 = c.cwiseAbs().sum();
  const double bound = norm2 + 4.0 * double(m + 2) * std::numeric_limits<double>::epsilon() * l1 * l1;
  if (!(norm2 > 0.0) || !std::isfinite(bound) || !(bound > std::numeric_limits<double>::min())) {
    c.setZero();
    s.offset(j) = 0.0;
    return;
  }
  c /= std::sqrt(bound);
  s.offset(j) = c.dot(s.sums_y.row(j)) / s.count_y;
}

/// One bettor pair (ONS at column `ons`, aGRAPA at `ons + 1`) after the payoff g.
inline void place_bets(double* row, Index ons, double g, double limit) {
  using namespace bettor;
  double& lam = row[kBettors + 2 * ons];
  double& curvature = row[kBettors + 2 * ons + 1];
  double& sum = row[kBettors + 2 * (ons + 1)];
  double& squares = row[kBettors + 2 * (ons + 1) + 1];
  // aGRAPA's fraction: the running mean over the running second moment, with one
  // pseudo-payoff of square 1 (Podkopaev et al.'s prior), from the past only
  const double grapa = std::min(std::max(sum / (1.0 + squares), 0.0), limit);
  row[ons] += std::log1p(lam * g);
  row[ons + 1] += std::log1p(grapa * g);
  const double z = g / (1.0 + lam * g);  // d/dlambda log(1 + lambda g)
  curvature += z * z;
  lam = std::min(std::max(lam + kOnsStep * z / curvature, 0.0), limit);
  sum += g;
  squares += g * g;
}

/// log sum_i w_i exp(a_i) over the weights' nonzero entries.
inline double log_mixture(const RowMatrixXd& weights, const RowMatrixXd& bettors) {
  double top = -std::numeric_limits<double>::infinity();
  for (Index j = 0; j < weights.rows(); ++j)
    for (Index b = 0; b < bettor::kBettors; ++b)
      if (weights(j, b) > 0.0) top = std::max(top, bettors(j, b));
  double sum = 0.0;
  for (Index j = 0; j < weights.rows(); ++j)
    for (Index b = 0; b < bettor::kBettors; ++b)
      if (weights(j, b) > 0.0) sum += weights(j, b) * std::exp(bettors(j, b) - top);
  return top + std::log(sum);
}

/// Rows per block of kernel values (K blocks of kBettingBlock x m values at a time).
inline constexpr Index kBettingBlock = 256;
/// Blocks of fewer rows take their kernel values row by row (kernel_rows.hpp: about 3 us
/// per row at m = 256, d = 10) rather than from the tile engine (about 0.8 us per row in
/// blocks of 256, but 160 us for one row: its fixed cost).
inline constexpr Index kBettingTileRows = 48;

/// out (m, rows) = k_j(L, rows): from the tile engine with the landmarks first (it
/// centres on its first argument: a row's values do not depend on the other rows of its
/// block), or row by row for small blocks (the direct formula: equal to round-off). The
/// caller has checked that the rows are finite; `out` keeps its memory between blocks.
inline void landmark_columns(const BettingModel& model, const ConstRowRef<double>& rows, std::size_t j,
                             int n_threads, RowMatrixXd& out, std::vector<double>& work) {
  const Kernel& kernel = model.kernels()[j];
  const RowMatrixXd& L = model.landmarks();
  const Index m = L.rows(), b = rows.rows();
  out.resize(m, b);
  if (b >= kBettingTileRows) {
    const ConstRowRef<double> landmarks(L);  // the engine keeps references: no temporary
    TileEngine<double> engine(landmarks, rows, kernel);
    engine.template run<Mode::matrix>(nullptr, out, n_threads);
    return;
  }
  work.resize(std::size_t(m));
  for (Index i = 0; i < b; ++i) {
    kernel_column<double>(L, rows.row(i).data(), kernel, 0, m, work.data());
    for (Index k = 0; k < m; ++k) out(k, i) = work[std::size_t(k)];
  }
}

}  // namespace detail

/// The state of a test before its first row: no witness, every fraction 0, ONS's
/// curvature 1, every wealth 1; S_y and n_y the other side's (the reference's sums, or
/// zeros for a second stream).
inline BettingState initial_betting_state(const BettingModel& model, const RowMatrixXd& sums_y, double count_y) {
  const Index K = model.n_kernels(), m = model.n_landmarks();
  BettingState s;
  s.sums_x = RowMatrixXd::Zero(K, m);
  s.sums_y = sums_y;
  s.count_y = count_y;
  s.witness = RowMatrixXd::Zero(K, m);
  s.offset = Eigen::VectorXd::Zero(K);
  s.bettors = RowMatrixXd::Zero(K, bettor::kColumns);
  for (Index b : {bettor::kMarginOns, bettor::kPairedOns}) s.bettors.col(bettor::kBettors + 2 * b + 1).setOnes();
  return s;
}

/// Bet on the rows of X (r, d), oldest first; the first rows of Y (q <= r rows, q = 0
/// allowed) are the paired rows of X's first q rows. Updates `state` and returns the log
/// of the mixture's wealth after each row (r,).
///
/// Cost: K kernel blocks of (r + q) x m values (the tile engine, on n_threads threads),
/// O(K m) per row for the payoffs and sums, and O(K m^2) per refresh of the witnesses.
/// @throws std::invalid_argument (naming the argument) before anything changes: a state
///         that does not fit the model (check_betting_state), X or Y not finite or not of
///         L's width, more rows in Y than in X, or rows without a pair where no margin
///         bet is placed; nystrom_kme::Interrupted (the state is then partly updated)
inline Eigen::VectorXd bet_rows(const BettingModel& model, const ConstRowRef<double>& X,
                                const ConstRowRef<double>& Y, BettingState& state, int n_threads = 0) {
  detail::check_betting_state(model, state);
  const BettingOptions& opt = model.options();
  const Index K = model.n_kernels(), m = model.n_landmarks(), d = model.landmarks().cols();
  const Index r = X.rows(), q = Y.rows();
  if (r > 0 && X.cols() != d)
    throw std::invalid_argument("X must have " + std::to_string(d) + " columns (the landmarks'), got " +
                                std::to_string(X.cols()));
  if (q > 0 && Y.cols() != d)
    throw std::invalid_argument("Y must have " + std::to_string(d) + " columns (the landmarks'), got " +
                                std::to_string(Y.cols()));
  if (q > r) throw std::invalid_argument("Y must not have more rows than X");
  if (q < r && !opt.margin_bets)
    throw std::invalid_argument("Y must pair every row of X: this test places no margin bets");
  detail::check_finite(X, "X");
  detail::check_finite(Y, "Y");

  Eigen::VectorXd out(r), u(m), gc(m);
  std::vector<RowMatrixXd> kx(static_cast<std::size_t>(K)), ky(static_cast<std::size_t>(K));
  RowMatrixXd fx(K, detail::kBettingBlock), fy(K, detail::kBettingBlock);
  std::vector<double> work;
  detail::InterruptPoller poller;
  for (Index start = 0; start < r; start += detail::kBettingBlock) {
    poller.poll();
    const Index b = std::min(detail::kBettingBlock, r - start);
    const Index paired = std::clamp<Index>(q - start, 0, b);
    for (std::size_t j = 0; j < std::size_t(K); ++j) {
      detail::landmark_columns(model, X.middleRows(start, b), j, n_threads, kx[j], work);
      if (paired > 0) detail::landmark_columns(model, Y.middleRows(start, paired), j, n_threads, ky[j], work);
    }
    // segments of rows between refreshes: one witness each, so that its values on the
    // segment's rows are one product c' K(L, rows) per kernel
    for (Index i0 = 0; i0 < b;) {
      const Index i1 = std::min<Index>(b, i0 + Index(state.next_refresh - state.t));
      const Index len = i1 - i0, pairs = std::clamp<Index>(paired - i0, 0, len);
      for (Index j = 0; j < K; ++j) {
        const auto c = state.witness.row(j).transpose();
        const auto& Kx = kx[std::size_t(j)];
        fx.row(j).head(len).noalias() = (Kx.middleCols(i0, len).transpose() * c).transpose();
        state.sums_x.row(j) += Kx.middleCols(i0, len).rowwise().sum().transpose();
        if (pairs > 0) {
          const auto& Ky = ky[std::size_t(j)];
          fy.row(j).head(pairs).noalias() = (Ky.middleCols(i0, pairs).transpose() * c).transpose();
          if (opt.pairs_join) state.sums_y.row(j) += Ky.middleCols(i0, pairs).rowwise().sum().transpose();
        }
      }
      for (Index i = 0; i < len; ++i) {
        for (Index j = 0; j < K; ++j) {
          double* bet = state.bettors.row(j).data();
          if (opt.margin_bets) {
            const double off = state.offset(j), eps = model.margin()(j);
            detail::place_bets(bet, bettor::kMarginOns, (fx(j, i) - off - eps) / (1.0 + std::abs(off) + eps),
                               opt.limit);
          }
          if (i < pairs) detail::place_bets(bet, bettor::kPairedOns, 0.5 * (fx(j, i) - fy(j, i)), opt.limit);
        }
        out(start + i0 + i) = detail::log_mixture(model.weights(), state.bettors);
      }
      state.count_x += double(len);
      if (opt.pairs_join) state.count_y += double(pairs);
      state.t += len;
      if (state.t >= state.next_refresh) {
        for (Index j = 0; j < K; ++j) detail::refresh_witness(model, state, j, u, gc);
        state.next_refresh = state.t + std::clamp<std::int64_t>(state.t / 16, 1, std::int64_t(opt.refresh));
      }
      i0 = i1;
    }
  }
  return out;
}

}  // namespace nystrom_kme
