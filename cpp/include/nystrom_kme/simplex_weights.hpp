// MMD-optimal weights on the probability simplex: distribution compression.
//
// Given landmarks l_1..l_m with kernel matrix K (m x m, PSD) and the kernel mean of the
// data at the landmarks, s_j = sum_i a_i k(l_j, x_i) (a the normalised data weights),
// the squared MMD between sum_j w_j delta_{l_j} and the data is
//     MMD^2(w) = w^T K w - 2 w^T s + a^T K_XX a,
// so the best probability measure on the landmarks solves the convex QP
//     min_w  w^T K w - 2 w^T s   subject to  w >= 0,  sum_j w_j = 1.
// simplex_weights solves it by a primal active-set method (Lawson-Hanson style):
// the support F grows by the index most violating the KKT conditions and, when the
// equality-constrained minimiser on F leaves the simplex, shrinks along the segment
// to it. The Cholesky factor of K_FF is updated (one row appended, O(|F|^2)) and
// downdated (Givens rotations, O(|F|^2)) and never refactored; each outer iteration
// costs O(m |F|) for the gradient plus O(|F|^2) per inner step (measured, one thread:
// ~1 ms at m = 128, 0.3-1.4 s at m = 1024, 5.5 s at m = 2000, with ~0.7 m iterations).
// Every loop runs serially in a fixed order: the result is deterministic (bit for bit,
// whatever the thread settings).
// ridge_weights gives the unconstrained alternative with Tikhonov regularisation,
// w = (K + ridge I)^{-1} s, the minimiser of w^T K w - 2 w^T s + ridge |w|^2.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Cholesky>

#include <nystrom_kme/detail/format.hpp>
#include <nystrom_kme/interrupt.hpp>

#include <nystrom_kme/types.hpp>

namespace nystrom_kme {

struct SimplexOptions {
  /// KKT tolerance: the solve stops when no index improves the objective's directional
  /// derivative by more than tolerance * max_j K_jj, i.e. when
  /// min_{j} (Kw - s)_j >= w^T (Kw - s) - tolerance * max_j K_jj. Must be finite, > 0.
  double tolerance = 1e-10;
  /// An index j enters the support only when its Schur complement
  /// K_jj - K_jF K_FF^{-1} K_Fj exceeds dependence * max_j K_jj (else its feature is
  /// numerically in the span of the support's and it is skipped, see
  /// SimplexResult::n_skipped). <= 0 means the default m * machine epsilon.
  double dependence = 0.0;
  /// Cap on the outer iterations (support additions); <= 0 means 10 m + 100.
  Index max_iterations = 0;
};

struct SimplexResult {
  Eigen::VectorXd weights;      ///< (m,): w >= 0 (exact zeros off the support), sum 1
  double objective = 0.0;       ///< w^T K w - 2 w^T s
  Index iterations = 0;         ///< outer iterations (indices considered for the support)
  Index support_size = 0;       ///< number of nonzero weights
  Index n_skipped = 0;          ///< indices refused as numerically dependent
  /// max(0, w^T g - min_j g_j) / max_j K_jj with g = K w - s: the scaled KKT residual
  double kkt_violation = 0.0;
  bool converged = false;       ///< kkt_violation <= tolerance (else the iteration cap hit)
};

namespace detail {

/// @throws std::invalid_argument for bad options
inline void check_simplex_options(const SimplexOptions& o) {
  if (!(std::isfinite(o.tolerance) && o.tolerance > 0.0)) {
    throw std::invalid_argument("tolerance must be a finite number > 0, got " + std::to_string(o.tolerance));
  }
  if (!(std::isfinite(o.dependence) && o.dependence < 1.0)) {
    throw std::invalid_argument("dependence must be a finite number < 1 (<= 0: the default m * eps), got " +
                                std::to_string(o.dependence));
  }
}

/// Shared preconditions of simplex_weights and ridge_weights: K square, non-empty,
/// finite and symmetric (to 1e-10 relative); s finite with one entry per row of K.
/// @throws std::invalid_argument otherwise
inline void check_gram_and_target(const Eigen::Ref<const Eigen::MatrixXd>& K,
                                  const Eigen::Ref<const Eigen::VectorXd>& s) {
  const Index m = K.rows();
  if (m == 0 || K.cols() != m) {
    throw std::invalid_argument("K must be square and non-empty, got " + std::to_string(K.rows()) + " x " +
                                std::to_string(K.cols()));
  }
  if (s.size() != m) {
    throw std::invalid_argument("s has " + std::to_string(s.size()) + " entries, K has " + std::to_string(m) +
                                " rows");
  }
  if (!K.allFinite()) throw std::invalid_argument("K contains NaN or inf");
  if (!s.allFinite()) throw std::invalid_argument("s contains NaN or inf");
  if ((K - K.transpose()).cwiseAbs().maxCoeff() > 1e-10 * K.cwiseAbs().maxCoeff()) {
    throw std::invalid_argument("K is not symmetric");
  }
}

/// Cholesky factor of K_FF (lower triangular, stored in the top-left k x k block of a
/// preallocated m x m matrix) with O(k^2) appends and deletions.
class GrowingCholesky {
 public:
  explicit GrowingCholesky(Index capacity) : L_(Eigen::MatrixXd::Zero(capacity, capacity)) {}
  Index size() const { return k_; }

  /// Appends the row/column (c = K_Fj, d = K_jj); returns false (and leaves the factor
  /// unchanged) when the Schur complement d - |L^{-1} c|^2 is <= threshold.
  bool append(const Eigen::VectorXd& c, double d, double threshold) {
    Eigen::VectorXd l = c;
    if (k_ > 0) L_.topLeftCorner(k_, k_).triangularView<Eigen::Lower>().solveInPlace(l);
    const double schur = d - (k_ > 0 ? l.squaredNorm() : 0.0);
    if (!(schur > threshold)) return false;
    if (k_ > 0) L_.row(k_).head(k_) = l.transpose();
    L_(k_, k_) = std::sqrt(schur);
    ++k_;
    return true;
  }

  /// Removes row/column p: rows below p move up and Givens rotations on columns
  /// (i, i+1) restore the triangle (L L^T is unchanged by orthogonal column mixing).
  void remove(Index p) {
    for (Index r = p; r + 1 < k_; ++r) L_.row(r).head(k_) = L_.row(r + 1).head(k_);
    L_.row(k_ - 1).head(k_).setZero();
    for (Index i = p; i + 1 < k_; ++i) {
      const double a = L_(i, i), b = L_(i, i + 1);
      const double r = std::hypot(a, b);
      const double c = r > 0 ? a / r : 1.0, s = r > 0 ? b / r : 0.0;
      for (Index row = i; row + 1 < k_; ++row) {
        const double x = L_(row, i), y = L_(row, i + 1);
        L_(row, i) = c * x + s * y;
        L_(row, i + 1) = -s * x + c * y;
      }
      L_(i, i + 1) = 0.0;
    }
    L_.col(k_ - 1).head(k_).setZero();
    --k_;
  }

  /// Solves K_FF x = b in place.
  void solve(Eigen::VectorXd& b) const {
    const auto T = L_.topLeftCorner(k_, k_).triangularView<Eigen::Lower>();
    T.solveInPlace(b);
    T.transpose().solveInPlace(b);
  }

 private:
  Eigen::MatrixXd L_;
  Index k_ = 0;
};

}  // namespace detail

/// MMD-optimal probability weights on the landmarks: argmin over the simplex of
/// w^T K w - 2 w^T s (see the file comment).
///
/// @param K the landmark kernel matrix (m x m), symmetric positive semidefinite
/// @param s the data's kernel mean at the landmarks (m), s_j = sum_i a_i k(l_j, x_i)
/// @param options tolerance, dependence threshold, iteration cap
/// @return the weights with the objective and the KKT residual of the solution
/// @throws std::invalid_argument for an empty or non-square K, s of another length, NaN
///         or inf in K or s, a non-symmetric K (max |K - K^T| > 1e-10 max |K|), a
///         negative diagonal entry, or bad options
/// @throws Interrupted when the interrupt check (set_interrupt_check) asks to stop
inline SimplexResult simplex_weights(const Eigen::Ref<const Eigen::MatrixXd>& K,
                                     const Eigen::Ref<const Eigen::VectorXd>& s,
                                     const SimplexOptions& options = {}) {
  detail::check_simplex_options(options);
  detail::check_gram_and_target(K, s);
  const Index m = K.rows();
  if (K.diagonal().minCoeff() < 0.0) throw std::invalid_argument("K has a negative diagonal entry");

  SimplexResult result;
  result.weights = Eigen::VectorXd::Zero(m);
  const double scale = K.diagonal().maxCoeff();
  if (scale == 0.0) {  // K = 0 (PSD with zero diagonal): the objective is -2 w^T s
    Index best = 0;
    s.maxCoeff(&best);
    result.weights(best) = 1.0;
    result.objective = -2.0 * s(best);
    result.support_size = 1;
    result.converged = true;
    return result;
  }
  const double dependence =
      (options.dependence > 0 ? options.dependence : double(m) * std::numeric_limits<double>::epsilon()) * scale;
  const Index max_iterations = options.max_iterations > 0 ? options.max_iterations : 10 * m + 100;
  const double tol = options.tolerance * scale;

  std::vector<Index> F;              // the support, in order of entry
  std::vector<char> in_support(std::size_t(m), 0), skipped(std::size_t(m), 0);
  detail::GrowingCholesky chol(m);
  Eigen::VectorXd& w = result.weights;
  Eigen::VectorXd g(m);              // K w - s, recomputed from the support
  auto gradient = [&] {
    g = -s;
    for (Index i : F) g.noalias() += w(i) * K.col(i);
  };
  // Start at the best vertex: argmin K_jj - 2 s_j (first index on ties).
  {
    Index j0 = -1;
    double best = std::numeric_limits<double>::infinity();
    for (Index j = 0; j < m; ++j) {
      if (K(j, j) <= dependence) continue;
      const double v = K(j, j) - 2.0 * s(j);
      if (v < best) best = v, j0 = j;
    }
    if (j0 < 0) throw std::invalid_argument("K has no diagonal entry above the dependence threshold");
    chol.append(Eigen::VectorXd(0), K(j0, j0), dependence);
    F.push_back(j0);
    in_support[std::size_t(j0)] = 1;
    w(j0) = 1.0;
  }

  Eigen::VectorXd rhs, ones, z;
  detail::InterruptPoller poller;  // up to O(m) iterations of O(m k): seconds at m ~ 2000
  for (;;) {
    poller.poll();
    gradient();
    double nu = 0.0;
    for (Index i : F) nu += w(i) * g(i);
    Index j = -1;
    double gmin = std::numeric_limits<double>::infinity();
    for (Index t = 0; t < m; ++t) {
      if (!in_support[std::size_t(t)] && !skipped[std::size_t(t)] && g(t) < gmin) gmin = g(t), j = t;
    }
    result.kkt_violation = j < 0 ? 0.0 : std::max(0.0, nu - gmin) / scale;
    if (j < 0 || nu - gmin <= tol) {
      result.converged = true;
      break;
    }
    if (result.iterations >= max_iterations) break;
    ++result.iterations;
    Eigen::VectorXd c(Index(F.size()));
    for (std::size_t a = 0; a < F.size(); ++a) c(Index(a)) = K(F[a], j);
    if (!chol.append(c, K(j, j), dependence)) {
      skipped[std::size_t(j)] = 1;
      ++result.n_skipped;
      continue;
    }
    F.push_back(j);
    in_support[std::size_t(j)] = 1;
    w(j) = 0.0;
    // Inner loop: the equality-constrained minimiser on F, z = K_FF^{-1}(s_F - nu 1) with
    // nu chosen so that 1^T z = 1; step towards it until no weight would turn negative.
    for (bool first = true;; first = false) {
      const Index k = Index(F.size());
      rhs.resize(k);
      for (Index a = 0; a < k; ++a) rhs(a) = s(F[std::size_t(a)]);
      ones = Eigen::VectorXd::Ones(k);
      chol.solve(rhs);
      chol.solve(ones);
      const double shift = (rhs.sum() - 1.0) / ones.sum();
      z = rhs - shift * ones;
      double alpha = 1.0;
      Index leaving = -1;
      for (Index a = 0; a < k; ++a) {
        if (z(a) > 0.0) continue;
        const double wa = w(F[std::size_t(a)]);
        const double step = wa / (wa - z(a));  // in [0, 1)
        if (leaving < 0 || step < alpha) alpha = step, leaving = a;
      }
      if (leaving < 0) {
        for (Index a = 0; a < k; ++a) w(F[std::size_t(a)]) = z(a);
        break;
      }
      if (first && F[std::size_t(leaving)] == j && alpha == 0.0) {
        // Round-off: the entering index cannot take weight; refuse it.
        chol.remove(leaving);
        F.pop_back();
        in_support[std::size_t(j)] = 0;
        skipped[std::size_t(j)] = 1;
        ++result.n_skipped;
        break;
      }
      for (Index a = 0; a < k; ++a) {
        double& wa = w(F[std::size_t(a)]);
        wa += alpha * (z(a) - wa);
      }
      w(F[std::size_t(leaving)]) = 0.0;
      // Drop every index whose weight reached zero (the leaving one at least), last first.
      for (Index a = k - 1; a >= 0; --a) {
        const Index i = F[std::size_t(a)];
        if (w(i) <= 0.0) {
          w(i) = 0.0;
          chol.remove(a);
          F.erase(F.begin() + a);
          in_support[std::size_t(i)] = 0;
        }
      }
      if (F.empty()) throw std::runtime_error("simplex_weights: the support became empty (round-off)");
    }
  }
  // Renormalise against round-off in the sum (the weights are >= 0 by construction).
  const double total = w.sum();
  w /= total;
  gradient();
  result.objective = w.dot(g) - w.dot(s);  // w^T K w - 2 w^T s = w^T (Kw - s) - w^T s
  result.support_size = Index(F.size());
  return result;
}

/// Tikhonov-regularised (signed) weights w = (K + ridge I)^{-1} s, by Eigen's Cholesky
/// (serial, deterministic). The solve runs on K, ridge and s scaled by powers of two
/// (exact, so the bits are those of the unscaled solve wherever that stays in range):
/// K + ridge I cannot overflow, and w is scaled back with ldexp.
///
/// @param K the landmark kernel matrix (m x m), symmetric positive semidefinite
/// @param s the data's kernel mean at the landmarks (m)
/// @param ridge lambda > 0
/// @throws std::invalid_argument for an empty or non-square K, s of another length, NaN
///         or inf, a non-symmetric K, ridge not a finite number > 0, or weights that
///         overflow float64 (ridge too small for s)
/// @throws std::runtime_error when K + ridge I is not numerically positive definite
///         (K indefinite beyond round-off, or ridge below the round-off of K)
inline Eigen::VectorXd ridge_weights(const Eigen::Ref<const Eigen::MatrixXd>& K,
                                     const Eigen::Ref<const Eigen::VectorXd>& s, double ridge) {
  if (!(std::isfinite(ridge) && ridge > 0.0)) {
    throw std::invalid_argument("ridge must be a finite number > 0, got " + detail::format_number(ridge));
  }
  detail::check_gram_and_target(K, s);
  const Index m = K.rows();
  const double s_max = s.cwiseAbs().maxCoeff();
  // K and ridge in units of an even power of two near max(max |K|, ridge): the
  // Cholesky factor then scales by an exact power of two too (sqrt of 4^j).
  int k_exp = 0;
  std::frexp(std::max(K.cwiseAbs().maxCoeff(), ridge), &k_exp);
  k_exp -= k_exp & 1;
  int s_exp = 0;
  std::frexp(s_max, &s_exp);
  Eigen::MatrixXd A(m, m);
  for (Index j = 0; j < m; ++j)
    for (Index i = 0; i < m; ++i) A(i, j) = std::ldexp(K(i, j), -k_exp);
  A.diagonal().array() += std::ldexp(ridge, -k_exp);
  Eigen::LLT<Eigen::MatrixXd> llt(A);
  if (llt.info() != Eigen::Success) {
    throw std::runtime_error("ridge_weights: K + ridge I is not numerically positive definite (K is not "
                             "PSD, or ridge is below the round-off of K: use a larger ridge)");
  }
  Eigen::VectorXd w(m);
  for (Index i = 0; i < m; ++i) w(i) = std::ldexp(s(i), -s_exp);
  w = llt.solve(w);
  if (!w.allFinite()) throw std::runtime_error("ridge_weights: the solve produced NaN or inf");
  for (Index i = 0; i < m; ++i) w(i) = std::ldexp(w(i), s_exp - k_exp);
  if (!w.allFinite()) {
    throw std::invalid_argument("ridge_weights: the weights (K + ridge I)^{-1} s overflow float64: ridge = " +
                                detail::format_number(ridge) + " is too small for s (max |s| = " +
                                detail::format_number(s_max) + "); use a larger ridge or rescale s");
  }
  return w;
}

}  // namespace nystrom_kme
