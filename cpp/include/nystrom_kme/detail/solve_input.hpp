// What the solve does to its inputs before factorising: the checks of K and s, the
// default rank threshold, and the grouping of identical landmarks (nystrom_weights
// solves for the distinct ones).
#pragma once

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Core>

#include <nystrom_kme/detail/format.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme::detail {

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

inline double default_rcond(Index m) {
  return double(std::max<Index>(m, 1)) * std::numeric_limits<double>::epsilon();
}

/// Relative asymmetry max |K_ij - K_ji| / max |K_ij| that solve_psd accepts: rounding
/// in a float64 kernel matrix is far below it; a float32 one must be symmetrised first.
inline constexpr double kSymmetryTolerance = 1e-10;

/// Validates K and s: square, matching rows, finite, symmetric (to kSymmetryTolerance
/// relative), non-negative diagonal (to rounding).
/// @throws std::invalid_argument otherwise
inline void check_solve_input(const Eigen::Ref<const Eigen::MatrixXd>& K,
                              const Eigen::Ref<const Eigen::MatrixXd>& s) {
  if (K.rows() != K.cols()) {
    throw std::invalid_argument("K must be square, got " + std::to_string(K.rows()) + " x " +
                                std::to_string(K.cols()));
  }
  if (s.rows() != K.rows()) {
    throw std::invalid_argument("s has " + std::to_string(s.rows()) + " rows, K has " +
                                std::to_string(K.rows()));
  }
  if (s.cols() < 1) {
    throw std::invalid_argument("s must have at least one column (one right-hand side), got shape (" +
                                std::to_string(s.rows()) + ", 0)");
  }
  if (!K.allFinite()) throw std::invalid_argument("K contains NaN or inf");
  if (!s.allFinite()) throw std::invalid_argument("s contains NaN or inf");
  const Index m = K.rows();
  if (m == 0) return;
  const double scale = K.cwiseAbs().maxCoeff();
  double asym = 0.0;  // 64 x 64 tiles against their mirror images (cache friendly)
  const Index t = 64;
  for (Index j = 0; j < m; j += t) {
    for (Index i = j; i < m; i += t) {
      const Index h = std::min(t, m - i), w = std::min(t, m - j);
      asym = std::max(asym, (K.block(i, j, h, w) - K.block(j, i, w, h).transpose()).cwiseAbs().maxCoeff());
    }
  }
  if (asym > kSymmetryTolerance * scale) {
    throw std::invalid_argument("K is not symmetric: max |K - K^T| = " + format_number(asym) +
                                " > " + format_number(kSymmetryTolerance) + " max |K| (max |K| = " +
                                format_number(scale) + ")");
  }
  const double min_diag = K.diagonal().minCoeff();
  if (min_diag < -default_rcond(m) * scale) {
    throw std::invalid_argument("K is not positive semidefinite: diagonal entry " +
                                format_number(min_diag) + " < 0");
  }
}

}  // namespace nystrom_kme::detail
