// Nystrom weights alpha = K_m^+ s from the landmark kernel matrix K_m.
//
// Every solution of K_m alpha = s gives the same embedding sum_j alpha_j phi(l_j);
// the minimum-norm one (alpha = K_m^+ s, the paper's eq. 5) is the reference.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <nystrom_kme/detail/checks.hpp>
#include <nystrom_kme/detail/cholesky_blocked.hpp>
#include <nystrom_kme/detail/dense_products.hpp>
#include <nystrom_kme/detail/format.hpp>
#include <nystrom_kme/detail/solve_from_factor.hpp>
#include <nystrom_kme/detail/solve_input.hpp>
#include <nystrom_kme/kernel_sums.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme {

enum class Solver {
  automatic,  ///< pivoted Cholesky (+ small projection if singular) if accurate, else cod
  cod,        ///< complete orthogonal decomposition from pivoted Cholesky + QR: minimum norm
  cholesky,   ///< plain Cholesky (parallel, blocked); throws if K is numerically singular
};

struct SolveOptions {
  Solver solver = Solver::automatic;
  /// Rank threshold: the pivoted Cholesky stops when the largest remaining diagonal
  /// entry of the Schur complement (an eigenvalue-sized quantity, like |R_ii| of a
  /// pivoted QR of K) is <= rcond * max_i K_ii. <= 0 means the default m * machine
  /// epsilon (LAPACK dpstrf's default). "cholesky" uses the same value as the
  /// smallest acceptable pivot.
  double rcond = 0.0;
  /// "automatic" keeps the Cholesky solution when its estimated RKHS error
  /// (see solve_psd) is below tolerance * ||embedding||, else it computes the COD.
  double tolerance = 1e-12;
  /// OpenMP threads (<= 0: all). The result does not depend on it (bit for bit).
  int n_threads = 0;
};

struct SolveResult {
  Eigen::MatrixXd weights;   ///< (m, k): one column per column of s
  Solver used = Solver::cod; ///< cod or cholesky
  Index rank = 0;            ///< numerical rank (pivoted Cholesky) or number of distinct landmarks
  /// Largest (over columns) estimated RKHS error of the returned embedding relative to
  /// ||embedding||, for the Cholesky paths; 0 when not estimated (cod).
  double error_estimate = 0.0;
};

namespace detail {

/// Validates SolveOptions: a known solver, rcond finite and < 1 (<= 0: the default),
/// tolerance finite and >= 0.
/// @throws std::invalid_argument otherwise
inline void check_solve_options(const SolveOptions& o) {
  if (o.solver != Solver::automatic && o.solver != Solver::cod && o.solver != Solver::cholesky) {
    throw std::invalid_argument("solver must be Solver::automatic, Solver::cod or Solver::cholesky");
  }
  if (!std::isfinite(o.rcond) || !(o.rcond < 1.0)) {
    throw std::invalid_argument("rcond must be a finite number < 1 (<= 0: the default m * eps), got " +
                                format_number(o.rcond));
  }
  if (!std::isfinite(o.tolerance) || !(o.tolerance >= 0.0)) {
    throw std::invalid_argument("tolerance must be a finite number >= 0, got " +
                                format_number(o.tolerance));
  }
}

}  // namespace detail

/// Solution of K alpha = s for a symmetric positive semi-definite K (m x m, k columns).
///
/// All three solvers give the same embedding sum_j alpha_j phi(l_j) up to rounding and
/// the rank threshold; they differ in which alpha they return:
///  * cod: the minimum-norm solution. K is factorised by a diagonally pivoted (rank
///    revealing) blocked Cholesky P^T K P ~ L L^T, stopped at the numerical rank r
///    (pivot <= rcond * max K_ii, default rcond = m eps). If r = m, K is invertible and
///    alpha = K^{-1} s from that factor. If r < m, F = P L (m x r) is factorised
///    F = Q U by a blocked Householder QR, which gives the complete orthogonal
///    decomposition K ~ Q (U U^T) Q^T, and alpha = Q U^{-T} U^{-1} Q^T s is the
///    minimum-norm least-squares solution of that rank-r system. One step of iterative
///    refinement follows.
///  * cholesky: plain blocked Cholesky K = L L^T plus one refinement step; throws
///    std::runtime_error if a pivot is <= rcond * max K_ii (numerically singular K).
///  * automatic: the pivoted Cholesky above (one factorisation, ~ the cost of a plain
///    Cholesky). r = m: alpha = K^{-1} s from it, one refinement step (the COD solution
///    too); error_estimate = max_c sqrt(res^T K^{-1} res) / ||embedding||, res = s - K
///    alpha. r < m: the minimum-norm alpha of the same rank-r system as "cod" (equal
///    in exact arithmetic), but from semi-normal equations instead of the QR: with W = L21 L11^{-1} and the small
///    G = I + W W^T ((m - r) x (m - r)), (F F^T)^+ = B^{+T} K11^{-1} B^+, B = [I; W];
///    cost O((m - r) r^2 + (m - r)^2 r), two refinement steps. It is kept when
///    max |W_ij| <= 1e4 (condition of the normal equations 1 + ||W||^2) and either the
///    RKHS norm of the last correction is <= tolerance * ||embedding|| (error_estimate)
///    or the normwise backward error is that of a backward-stable solver,
///    ||s - K alpha|| <= m eps (||K||_F ||alpha|| + ||s||) (then the QR would not be
///    more accurate: both sit at the rounding floor, which can exceed tolerance for
///    ill-conditioned K). Otherwise the QR-based COD is computed from the same factor
///    (used = cod).
///    used = cholesky means the fast path was accepted.
///    In floating point the weights of a numerically singular K are not determined to
///    rounding: "automatic" and "cod" can return alpha that differ by O(1) relative
///    (measured: 150% at sigma = 3, m = 400) while their embeddings agree to ~1e-5
///    relative in RKHS norm or better; compare embeddings, not weights.
/// Positive semidefinite but singular K are the point of cod and automatic. A K that is
/// not PSD is rejected: a negative diagonal entry (below -m eps max |K_ij|), or, when
/// the pivoted factorisation stops at r < m, a remaining Schur complement with a
/// diagonal entry below -10 rcond max K_ii or an off-diagonal entry above 10 rcond
/// max K_ii in absolute value (rcond at least m eps; a PSD K keeps both within
/// rcond max K_ii up to rounding). For solver = cholesky this classification runs
/// only when the plain factorisation fails.
/// Results are bit-identical for any number of OpenMP threads.
/// @param K  (m, m) symmetric (max |K - K^T| <= 1e-10 max |K|), finite, PSD; m may be 0
/// @param s  (m, k) finite right-hand sides, k >= 1
/// @throws std::invalid_argument for non-square K, s with another number of rows or no
///         column, NaN or inf in K or s, a non-symmetric K, a K that is not positive
///         semidefinite ("K is not positive semidefinite ..."), an unknown solver, rcond not finite
///         or >= 1, or tolerance not finite or < 0.
/// @throws std::runtime_error for solver = cholesky when K is PSD but numerically
///         singular (a pivot <= rcond max K_ii), or if a solve yields NaN or inf.
inline SolveResult solve_psd(const Eigen::Ref<const Eigen::MatrixXd>& K,
                             const Eigen::Ref<const Eigen::MatrixXd>& s,
                             const SolveOptions& options = {}) {
  detail::check_solve_options(options);
  detail::check_solve_input(K, s);
  const Index m = K.rows(), k = s.cols();
  const double rcond = options.rcond > 0 ? options.rcond : detail::default_rcond(m);
  const int threads = options.n_threads;
  SolveResult result;
  if (m == 0) {
    result.weights.resize(0, k);
    result.used = options.solver == Solver::cod ? Solver::cod : Solver::cholesky;
    return result;
  }
  Eigen::MatrixXd A = K;
  Eigen::VectorXd error;
  if (options.solver == Solver::cholesky) {
    const double max_diag = K.diagonal().maxCoeff();
    const Index failed = detail::blocked_cholesky(A, rcond * std::max(max_diag, 0.0), threads);
    if (failed >= 0) {
      // Singular or indefinite? The rank-revealing factorisation tells (this path only).
      Eigen::MatrixXd B = K;
      const detail::PivotedCholesky pc = detail::pivoted_cholesky_factor(B, rcond, threads);
      detail::check_psd_factor(B, pc, rcond, threads);
      throw std::runtime_error(
          "Cholesky factorisation failed at pivot " + std::to_string(failed) + " of " +
          std::to_string(m) + ": K is numerically singular (pivot <= rcond * max K_ii = " +
          detail::format_number(rcond * max_diag) + "); use solver='cod' or 'auto'");
    }
    result.weights = detail::basic_solve(A, {}, m, K, s, error);
    if (!result.weights.allFinite()) throw std::runtime_error("Cholesky solve produced NaN or inf");
    detail::accurate_enough(result.weights, s, error, options.tolerance, result.error_estimate);
    result.used = Solver::cholesky;
    result.rank = m;
    return result;
  }
  const detail::PivotedCholesky pc = detail::pivoted_cholesky_factor(A, rcond, threads);
  const Index r = pc.rank;
  result.rank = r;
  detail::check_psd_factor(A, pc, rcond, threads);  // r < m: singular, or indefinite?
  if (r == m) {
    // K is invertible: K^{-1} s is the minimum-norm (COD) solution as well.
    Eigen::MatrixXd alpha = detail::basic_solve(A, pc.perm, r, K, s, error);
    if (!alpha.allFinite()) throw std::runtime_error("Cholesky solve produced NaN or inf");
    detail::accurate_enough(alpha, s, error, options.tolerance, result.error_estimate);
    result.weights = std::move(alpha);
    result.used = options.solver == Solver::automatic ? Solver::cholesky : Solver::cod;
    return result;
  }
  if (options.solver == Solver::automatic) {
    const detail::SemiNormalPinv pinv(A, pc, threads);
    if (pinv.ok()) {
      Eigen::MatrixXd alpha = pinv.apply(s);
      alpha += pinv.apply(s - K * alpha);  // iterative refinement
      const Eigen::MatrixXd delta = pinv.apply(s - K * alpha);
      alpha += delta;
      const Eigen::MatrixXd res = s - K * alpha;
      // forward estimate: RKHS norm of the last correction; backward error: residual
      // at the level of a backward-stable solver, ||res|| <= m eps (||K||_F ||alpha|| + ||s||)
      error.resize(k);
      const double k_norm = K.norm(), eps = std::numeric_limits<double>::epsilon();
      bool backward_ok = true;
      for (Index c = 0; c < k; ++c) {
        error(c) = std::sqrt(std::abs(delta.col(c).dot(K * delta.col(c))));
        backward_ok = backward_ok && res.col(c).norm() <= double(m) * eps *
                                         (k_norm * alpha.col(c).norm() + s.col(c).norm());
      }
      const bool forward_ok =
          detail::accurate_enough(alpha, s, error, options.tolerance, result.error_estimate);
      const bool ok = alpha.allFinite() && (forward_ok || backward_ok);
      if (ok) {
        result.weights = std::move(alpha);
        result.used = Solver::cholesky;
        return result;
      }
    }
  }
  result.error_estimate = 0.0;
  result.weights = detail::cod_from_factor(A, pc, K, s, threads);
  if (!result.weights.allFinite()) throw std::runtime_error("COD solve produced NaN or inf");
  result.used = Solver::cod;
  return result;
}

/// Nystrom weights for landmarks L: the minimum-norm solution of K(L, L) alpha = s (up
/// to the rank threshold and rounding; see solve_psd for how the solvers differ).
/// Identical landmarks (sampling with replacement) are merged first: with D the group
/// sizes, the u x u matrix D^1/2 K_u D^1/2 of the u distinct landmarks has the same
/// nonzero spectrum as K, and its minimum-norm solution, divided by sqrt(D) and
/// repeated over each group, is exactly the minimum-norm solution for K. Every solver
/// factorises that same matrix with the same pivoted Cholesky, so all take the same
/// rank. rcond stays relative to max K_ii; its default (rcond <= 0) is m eps for the
/// m landmarks before merging.
/// O(m^2 d + m^3) time, O(m^2) memory (K_m in float64).
/// @param L (m, d) landmarks, m >= 1, d >= 1, finite
/// @param s (m, k) finite right-hand sides, k >= 1, e.g. K(L, X) 1 / n
/// @throws std::invalid_argument for an empty L, s with another number of rows or no
///         column, NaN or inf in L or s, invalid options (see solve_psd), or kernel
///         values of L that are not finite (overflow)
/// @throws std::runtime_error as solve_psd (solver = cholesky on a singular K_m)
template <class T>
SolveResult nystrom_weights(const ConstRowRef<T>& L, const Eigen::Ref<const Eigen::MatrixXd>& s,
                            const Kernel& kernel, const SolveOptions& options = {},
                            const SumOptions& sum_options = {}) {
  if (L.rows() < 1 || L.cols() < 1) {
    throw std::invalid_argument("nystrom_weights: need at least one landmark with at least one "
                                "feature, got L of shape (" + std::to_string(L.rows()) + ", " +
                                std::to_string(L.cols()) + ")");
  }
  if (s.rows() != L.rows()) {
    throw std::invalid_argument("s has " + std::to_string(s.rows()) + " rows but there are " +
                                std::to_string(L.rows()) + " landmarks");
  }
  if (s.cols() < 1) {
    throw std::invalid_argument("nystrom_weights: s must have at least one column (one right-hand "
                                "side), got shape (" + std::to_string(s.rows()) + ", 0)");
  }
  detail::check_solve_options(options);
  detail::check_finite(L, "L");  // before sorting L: NaN breaks the ordering
  if (!s.allFinite()) throw std::invalid_argument("s contains NaN or inf");
  SolveOptions opts = options;
  if (opts.n_threads <= 0) opts.n_threads = sum_options.n_threads;
  // The default threshold counts all m landmarks, duplicates included, so that merging
  // them (below) does not change the rank decision: every solver keeps the same rank.
  if (!(opts.rcond > 0)) opts.rcond = detail::default_rcond(L.rows());
  // K_m is formed in float64 even for float32 landmarks (m x d is small): the
  // solve amplifies errors in K_m by its condition number.
  auto gram = [&](const RowMatrixXd& P) {
    RowMatrixXd K = kernel_matrix<double>(P, P, kernel, sum_options);
    if (!K.allFinite()) {
      throw std::invalid_argument("nystrom_weights: the kernel values of the landmarks are not "
                                  "finite (they overflow float64): rescale the data or increase "
                                  "the bandwidth");
    }
    return K;
  };
  // Identical rows: K = P K_u P^T with P the m x u indicator of the groups and
  // D = P^T P their sizes. With Q = P D^-1/2 (orthonormal columns), K = Q M Q^T for
  // M = D^1/2 K_u D^1/2, so K^+ s = Q M^+ Q^T s: the minimum-norm solution from the
  // u x u matrix M, exactly (also when K_u is singular).
  std::vector<Index> rep;
  const std::vector<Index> group = detail::group_duplicates<T>(L, rep);
  const Index u = Index(rep.size());
  RowMatrixXd unique(u, L.cols());
  for (Index j = 0; j < u; ++j) unique.row(j) = L.row(rep[std::size_t(j)]).template cast<double>();
  Eigen::VectorXd root_count = Eigen::VectorXd::Zero(u);
  Eigen::MatrixXd s_unique = Eigen::MatrixXd::Zero(u, s.cols());
  for (Index i = 0; i < L.rows(); ++i) {
    const Index g = group[std::size_t(i)];
    root_count(g) += 1.0;
    s_unique.row(g) += s.row(i);
  }
  root_count = root_count.cwiseSqrt();
  RowMatrixXd M = gram(unique);
  const double max_k = M.diagonal().maxCoeff();
  if (u < L.rows()) {
    M = root_count.asDiagonal() * M * root_count.asDiagonal();
    s_unique = root_count.cwiseInverse().asDiagonal() * s_unique;
    // The rank threshold stays rcond * max K_ii of the m x m K (M's diagonal is larger).
    const double max_m = M.diagonal().maxCoeff();
    if (max_m > 0) opts.rcond *= max_k / max_m;
  }
  // solve_psd takes K column-major: a tiled copy (Eigen's assignment reads M with a
  // stride of a row per element), M freed before the factorisation copies it again.
  const Eigen::MatrixXd Mc = detail::column_major(M);
  RowMatrixXd().swap(M);
  SolveResult merged = solve_psd(Mc, s_unique, opts);
  SolveResult result;
  result.used = merged.used;
  result.rank = merged.rank;
  result.error_estimate = merged.error_estimate;
  result.weights.resize(L.rows(), s.cols());
  for (Index i = 0; i < L.rows(); ++i) {
    const Index g = group[std::size_t(i)];
    result.weights.row(i) = merged.weights.row(g) / root_count(g);
  }
  return result;
}

}  // namespace nystrom_kme
