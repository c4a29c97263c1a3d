// Blocked Householder QR (compact WY, LAPACK dgeqrf/dlarft/dlarfb) of a tall m x n
// matrix, with the trailing update split into FIXED-width column tiles processed in
// an OpenMP loop, each tile's two products through the dispatched GEMM
// (dense_products.hpp): results are bit-identical for any number of threads.
#pragma once

#include <algorithm>
#include <vector>

#include <Eigen/Core>
#include <Eigen/Householder>

#include <nystrom_kme/detail/cholesky_blocked.hpp>
#include <nystrom_kme/detail/dense_products.hpp>
#include <nystrom_kme/detail/parallel.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme::detail {

inline constexpr Index kQrBlock = 64;

/// A = Q R, m >= n. R is the upper triangle of qr; the Householder vectors (unit
/// diagonal implied) are below it; T[b] is the upper-triangular factor of block b,
/// whose reflector is I - V_b T_b V_b^T.
class BlockedQR {
 public:
  BlockedQR(Eigen::MatrixXd A, int n_threads) : qr_(std::move(A)), n_threads_(n_threads) {
    const Index m = qr_.rows(), n = qr_.cols();
    tau_.setZero(n);
    Eigen::VectorXd work(std::max<Index>(n, 1));
    for (Index k = 0; k < n; k += kQrBlock) {
      const Index kb = std::min(kQrBlock, n - k);
      for (Index j = k; j < k + kb; ++j) {  // unblocked panel
        double beta;
        qr_.col(j).tail(m - j).makeHouseholderInPlace(tau_(j), beta);
        qr_(j, j) = beta;
        if (j + 1 < k + kb) {
          qr_.block(j, j + 1, m - j, k + kb - j - 1)
              .applyHouseholderOnTheLeft(qr_.col(j).tail(m - j - 1), tau_(j), work.data());
        }
      }
      const Eigen::MatrixXd V = vectors(k, kb);
      T_.push_back(triangular_factor(V, k, kb));
      if (k + kb < n) {
        const Eigen::MatrixXd& T = T_.back();
        const Index c0 = k + kb, tiles = (n - c0 + kUpdateTile - 1) / kUpdateTile;
        parallel_tasks(tiles, n_threads_, [&](Index t) {
          const Index c = c0 + t * kUpdateTile, w = std::min(kUpdateTile, n - c);
          double* C = &qr_(k, c);  // (m - k) x w, leading dimension m
          Eigen::MatrixXd W = Eigen::MatrixXd::Zero(kb, w);
          product_acc(kb, w, m - k, 1.0, V.data(), V.rows(), 1, C, m, W.data(), kb);  // V^T C
          W = T.transpose().triangularView<Eigen::Lower>() * W;                         // T^T W
          product_acc(m - k, w, kb, -1.0, V.data(), 1, V.rows(), W.data(), kb, C, m);  // C -= V W
        });
      }
    }
  }

  Index rows() const { return qr_.rows(); }
  Index cols() const { return qr_.cols(); }
  /// R (n x n upper triangle).
  auto matrixR() const {
    return qr_.topRows(qr_.cols()).triangularView<Eigen::Upper>();
  }

  /// B <- Q^T B (B has m rows).
  void apply_qt(Eigen::MatrixXd& B) const {
    for (Index b = 0; b < Index(T_.size()); ++b) apply_block(B, b, true);
  }
  /// B <- Q B.
  void apply_q(Eigen::MatrixXd& B) const {
    for (Index b = Index(T_.size()) - 1; b >= 0; --b) apply_block(B, b, false);
  }

 private:
  Eigen::MatrixXd vectors(Index k, Index kb) const {
    const Index m = qr_.rows();
    Eigen::MatrixXd V = qr_.block(k, k, m - k, kb);
    for (Index j = 0; j < kb; ++j) {
      V.col(j).head(j).setZero();
      V(j, j) = 1.0;
    }
    return V;
  }
  Eigen::MatrixXd triangular_factor(const Eigen::MatrixXd& V, Index k, Index kb) const {
    const Eigen::MatrixXd G = V.transpose() * V;
    Eigen::MatrixXd T = Eigen::MatrixXd::Zero(kb, kb);
    for (Index i = 0; i < kb; ++i) {
      const double t = tau_(k + i);
      T(i, i) = t;
      if (i > 0) {
        Eigen::VectorXd g = G.col(i).head(i);
        g = T.topLeftCorner(i, i).triangularView<Eigen::Upper>() * g;
        T.col(i).head(i) = -t * g;
      }
    }
    return T;
  }
  void apply_block(Eigen::MatrixXd& B, Index b, bool transposed) const {
    const Index k = b * kQrBlock, kb = T_[std::size_t(b)].rows(), m = qr_.rows();
    const Eigen::MatrixXd V = vectors(k, kb);
    const Eigen::MatrixXd& T = T_[std::size_t(b)];
    auto C = B.bottomRows(m - k);
    Eigen::MatrixXd W = V.transpose() * C;
    if (transposed) {
      W = T.transpose().triangularView<Eigen::Lower>() * W;
    } else {
      W = T.triangularView<Eigen::Upper>() * W;
    }
    C.noalias() -= V * W;
  }

  Eigen::MatrixXd qr_;
  Eigen::VectorXd tau_;
  std::vector<Eigen::MatrixXd> T_;
  int n_threads_;
};

}  // namespace nystrom_kme::detail
