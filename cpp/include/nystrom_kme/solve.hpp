// Nystrom weights alpha = K_m^+ s from the landmark kernel matrix K_m.
//
// Every solution of K_m alpha = s gives the same embedding sum_j alpha_j phi(l_j);
// the minimum-norm one (alpha = K_m^+ s, the paper's eq. 5) is the reference.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Cholesky>
#include <Eigen/QR>

#include <nystrom_kme/kernel_sums.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme {

enum class Solver {
  automatic,  ///< merge duplicate landmarks, Cholesky with a residual check, else COD
  cod,        ///< Eigen's CompleteOrthogonalDecomposition of the full K_m: minimum norm
  cholesky,   ///< merge duplicates, Cholesky; throws if K_m is numerically singular
};

struct SolveOptions {
  Solver solver = Solver::automatic;
  /// Rank threshold of the COD: pivots below rcond * |largest pivot| count as
  /// zero. <= 0 means Eigen's default, m * machine epsilon.
  double rcond = 0.0;
  /// "automatic" keeps the Cholesky solution when its estimated RKHS error
  /// sqrt(r^T K^-1 r), r = s - K alpha, is below tolerance * ||embedding||.
  double tolerance = 1e-12;
};

struct SolveResult {
  Eigen::MatrixXd weights;   ///< (m, k): one column per column of s
  Solver used = Solver::cod; ///< cod or cholesky
  Index rank = 0;            ///< numerical rank (COD) or number of distinct landmarks
};

namespace detail {

/// Groups identical rows of L: representative row per group and group of each row.
template <class T>
std::vector<Index> group_duplicates(const ConstRowRef<T>& L, std::vector<Index>& representative) {
  std::vector<Index> order(static_cast<std::size_t>(L.rows()));
  for (Index i = 0; i < L.rows(); ++i) order[std::size_t(i)] = i;
  auto less = [&](Index a, Index b) {
    for (Index f = 0; f < L.cols(); ++f) {
      if (L(a, f) != L(b, f)) return L(a, f) < L(b, f);
    }
    return a < b;
  };
  std::sort(order.begin(), order.end(), less);
  std::vector<Index> group(static_cast<std::size_t>(L.rows()));
  representative.clear();
  for (std::size_t i = 0; i < order.size(); ++i) {
    const bool same = i > 0 && (L.row(order[i]).array() == L.row(order[i - 1]).array()).all();
    if (!same) representative.push_back(order[i]);
    group[std::size_t(order[i])] = Index(representative.size()) - 1;
  }
  return group;
}

inline Eigen::MatrixXd cod_solve(const Eigen::MatrixXd& K, const Eigen::MatrixXd& s, double rcond,
                                 Index& rank) {
  Eigen::CompleteOrthogonalDecomposition<Eigen::MatrixXd> cod(K);
  if (rcond > 0) cod.setThreshold(rcond);
  rank = cod.rank();
  return cod.solve(s);
}

}  // namespace detail

/// Minimum-norm solution of K alpha = s for a symmetric positive semi-definite K.
/// @param K (m, m) kernel matrix of the landmarks
/// @param s (m, k) right-hand sides (the scaled row sums K_mn w)
inline SolveResult solve_psd(const Eigen::Ref<const Eigen::MatrixXd>& K,
                             const Eigen::Ref<const Eigen::MatrixXd>& s,
                             const SolveOptions& options = {}) {
  if (K.rows() != K.cols()) throw std::invalid_argument("K must be square");
  if (s.rows() != K.rows()) {
    throw std::invalid_argument("s has " + std::to_string(s.rows()) + " rows, K has " +
                                std::to_string(K.rows()));
  }
  if (!K.allFinite() || !s.allFinite()) throw std::invalid_argument("K or s contains NaN or inf");
  SolveResult result;
  if (options.solver != Solver::cod) {
    Eigen::LLT<Eigen::MatrixXd> llt(K);
    if (llt.info() == Eigen::Success) {
      Eigen::MatrixXd alpha = llt.solve(s);
      alpha += llt.solve(s - K * alpha);  // one step of iterative refinement
      const Eigen::MatrixXd residual = s - K * alpha;
      // ||sum_j delta_j phi(l_j)||^2 = r^T K^-1 r = ||L^-1 r||^2 with K = L L^T
      const Eigen::MatrixXd whitened = llt.matrixL().solve(residual);
      bool accurate = alpha.allFinite();
      for (Index c = 0; accurate && c < s.cols(); ++c) {
        const double norm2 = std::abs(alpha.col(c).dot(s.col(c)));
        accurate = whitened.col(c).norm() <= options.tolerance * std::sqrt(norm2) ||
                   s.col(c).squaredNorm() == 0.0;
      }
      if (accurate || options.solver == Solver::cholesky) {
        if (!alpha.allFinite()) throw std::runtime_error("Cholesky solve produced NaN or inf");
        result.weights = std::move(alpha);
        result.used = Solver::cholesky;
        result.rank = K.rows();
        return result;
      }
    } else if (options.solver == Solver::cholesky) {
      throw std::runtime_error(
          "Cholesky factorisation failed: K_m is numerically singular; use solver='cod' or 'auto'");
    }
  }
  result.weights = detail::cod_solve(K, s, options.rcond, result.rank);
  result.used = Solver::cod;
  return result;
}

/// Nystrom weights for landmarks L: the minimum-norm solution of K(L, L) alpha = s.
/// Identical landmarks (sampling with replacement) are merged first for the
/// automatic and Cholesky solvers; the weight of a merged point is split equally
/// among its copies, which is exactly the minimum-norm solution.
/// @param L (m, d) landmarks;  @param s (m, k) right-hand sides, e.g. K(L, X) 1 / n
template <class T>
SolveResult nystrom_weights(const ConstRowRef<T>& L, const Eigen::Ref<const Eigen::MatrixXd>& s,
                            const Kernel& kernel, const SolveOptions& options = {},
                            const SumOptions& sum_options = {}) {
  if (L.rows() < 1) throw std::invalid_argument("need at least one landmark");
  if (s.rows() != L.rows()) {
    throw std::invalid_argument("s has " + std::to_string(s.rows()) + " rows but there are " +
                                std::to_string(L.rows()) + " landmarks");
  }
  if (options.solver == Solver::cod) {
    return solve_psd(kernel_matrix<T>(L, L, kernel, sum_options), s, options);
  }
  std::vector<Index> rep;
  const std::vector<Index> group = detail::group_duplicates<T>(L, rep);
  const Index u = Index(rep.size());
  RowMatrix<T> unique(u, L.cols());
  Eigen::MatrixXd s_unique(u, s.cols());
  std::vector<Index> count(static_cast<std::size_t>(u), 0);
  for (Index j = 0; j < u; ++j) {
    unique.row(j) = L.row(rep[std::size_t(j)]);
    s_unique.row(j) = s.row(rep[std::size_t(j)]);
  }
  for (Index g : group) ++count[std::size_t(g)];
  SolveResult merged = solve_psd(kernel_matrix<T>(unique, unique, kernel, sum_options), s_unique,
                                 options);
  SolveResult result;
  result.used = merged.used;
  result.rank = merged.rank;
  result.weights.resize(L.rows(), s.cols());
  for (Index i = 0; i < L.rows(); ++i) {
    const Index g = group[std::size_t(i)];
    result.weights.row(i) = merged.weights.row(g) / double(count[std::size_t(g)]);
  }
  return result;
}

}  // namespace nystrom_kme
