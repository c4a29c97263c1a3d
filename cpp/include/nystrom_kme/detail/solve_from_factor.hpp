// From the pivoted Cholesky factor of K to the weights: the check that what a
// rank-revealing stop leaves is PSD, the basic solution with its error estimate, the
// minimum-norm solution by semi-normal equations (SemiNormalPinv) and by a complete
// orthogonal decomposition (cod_from_factor). The three solvers of solve.hpp combine them.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include <nystrom_kme/detail/cholesky_blocked.hpp>
#include <nystrom_kme/detail/dense_products.hpp>
#include <nystrom_kme/detail/format.hpp>
#include <nystrom_kme/detail/parallel.hpp>
#include <nystrom_kme/detail/solve_input.hpp>
#include <nystrom_kme/detail/solve_qr.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme::detail {

/// K is "significantly indefinite" when the Schur complement left by the pivoted
/// factorisation has a diagonal entry below -kIndefiniteFactor * rcond * max_i K_ii or
/// an off-diagonal entry above kIndefiniteFactor * rcond * max_i K_ii in absolute value
/// (rcond at least its default m eps). For a PSD K both stay below rcond * max_i K_ii
/// plus rounding (measured: < 1 x m eps max K_ii on low-rank Gram, duplicated-landmark
/// and polynomial-kernel matrices up to m = 900).
inline constexpr double kIndefiniteFactor = 10.0;

/// After a rank-revealing stop (pc.rank < m) of pivoted_cholesky_factor(A, rcond, ...):
/// @throws std::invalid_argument "K is not positive semidefinite" when the remaining
///         Schur complement is significantly indefinite (see kIndefiniteFactor)
inline void check_psd_factor(const Eigen::MatrixXd& A, const PivotedCholesky& pc, double rcond,
                             int n_threads) {
  const Index m = A.rows();
  if (pc.rank >= m) return;
  const double limit =
      kIndefiniteFactor * std::max(rcond, default_rcond(m)) * std::max(pc.max_diagonal, 0.0);
  const SchurExtremes e = remaining_schur_extremes(A, pc, n_threads);
  if (!(e.min_diagonal >= -limit) || !(e.max_off_diagonal <= limit)) {
    throw std::invalid_argument(
        "K is not positive semidefinite: after " + std::to_string(pc.rank) +
        " pivots of the pivoted Cholesky factorisation the remaining Schur complement has "
        "smallest diagonal entry " + format_number(e.min_diagonal) +
        " and largest off-diagonal |entry| " + format_number(e.max_off_diagonal) +
        ", beyond the rounding level " + format_number(limit) +
        " (10 rcond max K_ii); a PSD K keeps both within it");
  }
}

/// For each column c: ||embedding_c||^2 = alpha_c^T s_c (>= 0 up to rounding).
inline bool accurate_enough(const Eigen::MatrixXd& alpha, const Eigen::Ref<const Eigen::MatrixXd>& s,
                            const Eigen::VectorXd& error, double tolerance, double& worst) {
  bool ok = true;
  worst = 0.0;
  for (Index c = 0; c < s.cols(); ++c) {
    const double norm = std::sqrt(std::abs(alpha.col(c).dot(s.col(c))));
    const double rel = norm > 0 ? error(c) / norm : (error(c) > 0 ? INFINITY : 0.0);
    worst = std::max(worst, rel);
    if (!(rel <= tolerance)) ok = false;
  }
  return ok;
}

/// Basic solution from a (pivoted) Cholesky factor: L11 = leading r x r lower triangle
/// of A, position i <-> index perm[i] (empty perm: identity). alpha_P = K_PP^{-1} s_P
/// with one step of iterative refinement, alpha = 0 off the pivots.
/// For r = m, error(c) = ||L^{-1} res|| = sqrt(res^T K^{-1} res), res = s - K alpha: the
/// RKHS distance of the embedding to the exact one (up to rounding).
inline Eigen::MatrixXd basic_solve(const Eigen::MatrixXd& A, const std::vector<Index>& perm,
                                   Index r, const Eigen::Ref<const Eigen::MatrixXd>& K,
                                   const Eigen::Ref<const Eigen::MatrixXd>& s,
                                   Eigen::VectorXd& error) {
  const Index m = K.rows(), k = s.cols();
  auto idx = [&](Index i) { return perm.empty() ? i : perm[std::size_t(i)]; };
  Eigen::MatrixXd alpha = Eigen::MatrixXd::Zero(m, k);
  error.setZero(k);
  if (r == 0) {
    for (Index c = 0; c < k; ++c) error(c) = s.col(c).norm() > 0 ? INFINITY : 0.0;
    return alpha;
  }
  const auto L11 = A.topLeftCorner(r, r).triangularView<Eigen::Lower>();
  auto residual = [&](const Eigen::MatrixXd& x) {  // permuted s - K alpha
    for (Index i = 0; i < r; ++i) alpha.row(idx(i)) = x.row(i);
    const Eigen::MatrixXd res = s - K * alpha;
    Eigen::MatrixXd rp(m, k);
    for (Index i = 0; i < m; ++i) rp.row(i) = res.row(idx(i));
    return rp;
  };
  Eigen::MatrixXd x(r, k);
  for (Index i = 0; i < r; ++i) x.row(i) = s.row(idx(i));
  L11.solveInPlace(x);
  L11.transpose().solveInPlace(x);
  Eigen::MatrixXd rp = residual(x);
  Eigen::MatrixXd dx = rp.topRows(r);
  L11.solveInPlace(dx);
  L11.transpose().solveInPlace(dx);
  x += dx;
  rp = residual(x);
  Eigen::MatrixXd y0 = rp.topRows(r);
  L11.solveInPlace(y0);
  error = y0.colwise().norm().transpose();
  return alpha;
}

/// Minimum-norm solution of the rank-r system F F^T alpha = s, F = P [L11; L21]
/// = P B L11 with B = [I; W], W = L21 L11^{-1}, without an orthogonal factorisation:
/// (F F^T)^+ = B^{+T} K11^{-1} B^+, B^+ = (I + W^T W)^{-1} [I, W^T], and
/// (I + W^T W)^{-1} = I - W^T G^{-1} W with the small G = I + W W^T ((m-r) x (m-r)).
/// Cost O((m - r) r^2) for W, O((m - r)^2 r) for G. These normal equations have
/// condition 1 + ||W||^2; the constructor reports failure for max |W_ij| > 1e4.
class SemiNormalPinv {
 public:
  SemiNormalPinv(const Eigen::MatrixXd& A, const PivotedCholesky& pc, int n_threads)
      : A_(A), pc_(pc), r_(pc.rank), q_(A.rows() - pc.rank) {
    if (r_ == 0) return;
    W_ = A.bottomLeftCorner(q_, r_);  // L21, then W L11 = L21
    const auto L11 = A_.topLeftCorner(r_, r_);
    const Index row_tiles = (q_ + kRowTile - 1) / kRowTile;
    parallel_tasks(row_tiles, n_threads, [&](Index t) {
      const Index i = t * kRowTile, h = std::min(kRowTile, q_ - i);
      auto block = W_.middleRows(i, h);
      lower_solve_right(L11, block);
    });
    if (!W_.allFinite() || (q_ > 0 && W_.cwiseAbs().maxCoeff() > 1e4)) return;
    // lower triangle of I + W W^T in fixed column tiles; tile c's right factor
    // W(c:c+w, :)^T read in place from W^T, copied once
    const Eigen::MatrixXd Wt = W_.transpose();
    G_.resize(q_, q_);
    const Index col_tiles = (q_ + kUpdateTile - 1) / kUpdateTile;
    parallel_tasks(col_tiles, n_threads, [&](Index t) {
      const Index c = t * kUpdateTile, w = std::min(kUpdateTile, q_ - c);
      G_.block(c, c, q_ - c, w).setZero();
      product_acc(q_ - c, w, r_, 1.0, &W_(c, 0), 1, q_, Wt.data() + c * r_, r_, &G_(c, c), q_);
    });
    G_.diagonal().array() += 1.0;
    ok_ = blocked_cholesky(G_, 0.0, n_threads) < 0;
  }
  bool ok() const { return ok_; }

  /// (F F^T)^+ rhs, rhs and result in the original order.
  Eigen::MatrixXd apply(const Eigen::MatrixXd& rhs) const {
    const Index m = rhs.rows(), k = rhs.cols();
    Eigen::MatrixXd out = Eigen::MatrixXd::Zero(m, k);
    if (r_ == 0) return out;
    Eigen::MatrixXd top(r_, k), bottom(q_, k);
    for (Index i = 0; i < r_; ++i) top.row(i) = rhs.row(pc_.perm[std::size_t(i)]);
    for (Index i = 0; i < q_; ++i) bottom.row(i) = rhs.row(pc_.perm[std::size_t(r_ + i)]);
    top.noalias() += W_.transpose() * bottom;  // [I, W^T] rhs
    reduce(top);                               // (I + W^T W)^{-1}
    const auto L11 = A_.topLeftCorner(r_, r_).triangularView<Eigen::Lower>();
    L11.solveInPlace(top);                     // K11^{-1}
    L11.transpose().solveInPlace(top);
    reduce(top);                               // (I + W^T W)^{-1}
    bottom.noalias() = W_ * top;               // B = [I; W]
    for (Index i = 0; i < r_; ++i) out.row(pc_.perm[std::size_t(i)]) = top.row(i);
    for (Index i = 0; i < q_; ++i) out.row(pc_.perm[std::size_t(r_ + i)]) = bottom.row(i);
    return out;
  }

 private:
  void reduce(Eigen::MatrixXd& z) const {  // z <- z - W^T G^{-1} W z
    if (q_ == 0) return;
    Eigen::MatrixXd t = W_ * z;
    const auto LG = G_.triangularView<Eigen::Lower>();
    LG.solveInPlace(t);
    LG.transpose().solveInPlace(t);
    z.noalias() -= W_.transpose() * t;
  }
  const Eigen::MatrixXd& A_;
  const PivotedCholesky& pc_;
  Index r_, q_;
  Eigen::MatrixXd W_, G_;
  bool ok_ = false;
};

/// Minimum-norm solution from the pivoted factor (columns 0..r-1 of A, order perm):
/// F = P L (m x r) = Q U (Householder QR), K ~ F F^T = Q (U U^T) Q^T,
/// alpha = Q U^{-T} U^{-1} Q^T s; plus one step of iterative refinement.
inline Eigen::MatrixXd cod_from_factor(const Eigen::MatrixXd& A, const PivotedCholesky& pc,
                                       const Eigen::Ref<const Eigen::MatrixXd>& K,
                                       const Eigen::Ref<const Eigen::MatrixXd>& s, int n_threads) {
  const Index m = K.rows(), r = pc.rank, k = s.cols();
  if (r == 0) return Eigen::MatrixXd::Zero(m, k);
  Eigen::MatrixXd F = A.leftCols(r).triangularView<Eigen::Lower>();
  const BlockedQR qr(std::move(F), n_threads);
  const auto U = qr.matrixR();
  auto pinv = [&](const Eigen::MatrixXd& rhs) {
    Eigen::MatrixXd y(m, k);
    for (Index i = 0; i < m; ++i) y.row(i) = rhs.row(pc.perm[std::size_t(i)]);
    qr.apply_qt(y);
    Eigen::MatrixXd z = y.topRows(r);
    U.solveInPlace(z);              // U^{-1} y
    U.transpose().solveInPlace(z);  // z = U^{-T} U^{-1} y = (U U^T)^{-1} y
    y.topRows(r) = z;
    y.bottomRows(m - r).setZero();
    qr.apply_q(y);
    Eigen::MatrixXd out(m, k);
    for (Index i = 0; i < m; ++i) out.row(pc.perm[std::size_t(i)]) = y.row(i);
    return out;
  };
  Eigen::MatrixXd alpha = pinv(s);
  alpha += pinv(s - K * alpha);
  return alpha;
}

}  // namespace nystrom_kme::detail
