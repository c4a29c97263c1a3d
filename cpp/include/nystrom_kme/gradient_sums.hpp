// Kernel values and their gradients summed over weighted points, for radial kernels:
//   V(i)    = sum_j w_j k(a_i, b_j)                       (p,)
//   G(i, :) = sum_j w_j grad_a k(a_i, b_j)                (p, d)
// without storing any p x q matrix: the forward and backward passes of kernel losses
// (the MMD of nystrom_kme.torch). For k(x, y) = k(r), r = ||x - y||,
// grad_a k = psi(r) (b - a) with psi(r) = -k'(r) / r; the gradient sums are
// G = (sum_j w_j psi_j b_j) - a (sum_j w_j psi_j), i.e. kernel sums with the weight
// columns [w, w * b] under the kernel psi. Two routes:
//   - fused (every kernel whose Formula::gradient names one, kernel_formulas.inl): psi is
//     a core kernel up to a constant (Gaussian k / h^2; Matern 3/2 3/h^2 times the
//     Laplacian of bandwidth h / sqrt 3; Matern 5/2 5/(3 h^2) times Matern 3/2 of
//     bandwidth h sqrt(3/5); the rational quadratic with alpha + 1, the inverse
//     multiquadric with alpha 3/2), so the sums are kernel_sums (kernel_sums.hpp, the
//     tile engine) with d + 1 weight columns; for float32 data the engine's float
//     reduction (values, weights and the register-blocked product in float lanes, each
//     32 rows of B widened into float64 sums; see add_value_gradients_fused): 1.6-1.9x
//     the float64 reduction's rate, sums within ~6e-8 of float64's on the same points
//     (bench/RESULTS.md, "The loss's float reduction");
//   - blocked (the Laplacian; any Euclidean radial kernel through
//     detail::add_value_gradients_blocked): blocks of 64 rows of A against 256 rows of
//     B, distances by the dispatched float64 product (simd_body/gemm.inl) with
//     near-duplicates recomputed from coordinate differences, the kernel map of the
//     active SIMD level, psi from the kernel value, and the product with [1, b].
// The Laplacian's psi = k / (h r) is singular at r = 0, where its gradient is not
// defined: a pair at distance 0 adds 0 (the subgradient of smallest norm).
// Memory: besides the output, the running sums of a block of A (kFusedRowBytes) and the
// blocked route's few MiB; no p x q buffer, and the fused route's weight columns are streamed.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <nystrom_kme/detail/checks.hpp>
#include <nystrom_kme/detail/parallel.hpp>
#include <nystrom_kme/detail/simd_select.hpp>
#include <nystrom_kme/kernel_sums.hpp>
#include <nystrom_kme/kernels.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme {

namespace detail {

/// Rows of A per task and rows of B per block of the blocked route.
inline constexpr Index kGradientRows = 64;
inline constexpr Index kGradientCols = 256;
/// Squared distances below this fraction of ||a||^2 + ||b||^2 (scaled, centred) are
/// recomputed from coordinate differences: the expansion loses their leading bits.
inline constexpr double kRecomputeFraction = 1.0 / 1024.0;
/// Bytes of running sums per block of A in the fused route (the engine keeps two running
/// sums and the result per row of A): every block costs a packing of all of B.
inline constexpr Index kFusedRowBytes = Index(24) << 20;

/// h^2 psi(r) from the kernel's squared scaled distance v = r^2 / h^2 and its value k:
/// the gradient factor of the Euclidean radial kernels, in units of the bandwidth
/// (kernel_formulas.inl).
inline double gradient_factor(const Kernel& kernel, double v, double k) {
  return scalar::visit_kind(
      kernel.kind(),
      [&](auto tag) {
        using F = typename decltype(tag)::formula;
        if constexpr (F::distance == Distance::squared_euclidean) {
          return scalar::gradient_factor<scalar::Math, decltype(tag)::kind>(v, k, kernel.params());
        } else {
          return std::numeric_limits<double>::quiet_NaN();  // refused by check_gradient_arguments
        }
      },
      [] { return std::numeric_limits<double>::quiet_NaN(); });
}

/// The column means of B in float64: the centre of the weight columns, so that
/// [w, w * (b - c)] loses no digits to an offset of the data.
template <class T>
Eigen::RowVectorXd column_means(const ConstRowRef<T>& B) {
  Eigen::RowVectorXd c = Eigen::RowVectorXd::Zero(B.cols());
  for (Index j = 0; j < B.rows(); ++j)
    for (Index f = 0; f < B.cols(); ++f) c[f] += double(B(j, f));
  if (B.rows() > 0) c /= double(B.rows());
  return c;
}

inline void check_gradient_arguments(Index a_rows, Index a_cols, Index b_rows, Index b_cols,
                                     Index w_size, const Kernel& kernel, Index out_rows,
                                     Index out_cols) {
  if (kernel.distance() != Distance::squared_euclidean) {
    throw std::invalid_argument(std::string("kernel_value_gradients: the kernel must be radial in the "
                                            "Euclidean distance, got ") + kernel.name());
  }
  if (a_cols != b_cols) {
    throw std::invalid_argument("kernel_value_gradients: A has " + std::to_string(a_cols) +
                                " features but B has " + std::to_string(b_cols));
  }
  if (w_size != b_rows) {
    throw std::invalid_argument("kernel_value_gradients: w has " + std::to_string(w_size) +
                                " entries but B has " + std::to_string(b_rows) + " rows");
  }
  if (out_rows != a_rows || out_cols != a_cols + 1) {
    throw std::invalid_argument("kernel_value_gradients: out must have shape (" +
                                std::to_string(a_rows) + ", " + std::to_string(a_cols + 1) +
                                "), got (" + std::to_string(out_rows) + ", " +
                                std::to_string(out_cols) + ")");
  }
}

/// The blocked route for any radial kernel: out(i, 0) += scale V(i), out(i, 1:) += scale
/// G(i, :). Tasks of kGradientRows rows of A, each summing the blocks of B in order: the
/// result does not depend on the thread count.
template <class T>
void add_value_gradients_blocked(const ConstRowRef<T>& A, const ConstRowRef<T>& B,
                                 const Eigen::Ref<const Eigen::VectorXd>& w, const Kernel& kernel,
                                 double scale, Eigen::Ref<RowMatrixXd> out,
                                 const SumOptions& options) {
  const Index p = A.rows(), q = B.rows(), d = A.cols(), d1 = d + 1;
  if (p == 0 || q == 0) return;
  const double inv_h = kernel.inv_bandwidth();
  const Eigen::RowVectorXd c = column_means(B);
  const auto gemm = simd_table().gemm_acc;
  const auto map = simd_table().map_values;
  const Index tasks = (p + kGradientRows - 1) / kGradientRows;
  parallel_tasks(tasks, options.n_threads, [&](Index task) {
    const Index r0 = task * kGradientRows, rows = std::min(kGradientRows, p - r0);
    // a_s = (a - c) / h, b1 = [1, (b - c) / h]: scaled, centred, float64.
    const auto size = [](Index n) { return static_cast<std::size_t>(n); };
    std::vector<double> as(size(rows * d)), na(size(rows));
    std::vector<double> b1(size(kGradientCols * d1)), nb(size(kGradientCols));
    std::vector<double> dots(size(rows * kGradientCols)), vals(dots.size());
    std::vector<double> S(size(rows * d1), 0.0), V(size(rows), 0.0);
    for (Index i = 0; i < rows; ++i) {
      double n2 = 0.0;
      for (Index f = 0; f < d; ++f) {
        const double x = (double(A(r0 + i, f)) - c[f]) * inv_h;
        as[std::size_t(i * d + f)] = x;
        n2 += x * x;
      }
      na[std::size_t(i)] = n2;
    }
    for (Index j0 = 0; j0 < q; j0 += kGradientCols) {
      const Index cols = std::min(kGradientCols, q - j0);
      for (Index j = 0; j < cols; ++j) {
        double n2 = 0.0;
        double* row = b1.data() + j * d1;
        row[0] = 1.0;
        for (Index f = 0; f < d; ++f) {
          const double x = (double(B(j0 + j, f)) - c[f]) * inv_h;
          row[1 + f] = x;
          n2 += x * x;
        }
        nb[std::size_t(j)] = n2;
      }
      std::fill(dots.begin(), dots.begin() + rows * cols, 0.0);
      // dots(i, j) = a_s(i) . b_s(j): Bt(f, j) = b1[1 + j * d1 + f]
      gemm(as.data(), d, rows, d, b1.data() + 1, 1, d1, cols, 1.0, false, dots.data(), cols);
      for (Index i = 0; i < rows; ++i) {
        for (Index j = 0; j < cols; ++j) {
          const double norms = na[std::size_t(i)] + nb[std::size_t(j)];
          double r2 = norms - 2.0 * dots[std::size_t(i * cols + j)];
          if (r2 < kRecomputeFraction * norms) {  // a near-duplicate: direct differences
            r2 = 0.0;
            const double* a = as.data() + i * d;
            const double* b = b1.data() + j * d1 + 1;
            for (Index f = 0; f < d; ++f) r2 += (a[f] - b[f]) * (a[f] - b[f]);
          }
          dots[std::size_t(i * cols + j)] = r2;
          vals[std::size_t(i * cols + j)] = r2;
        }
      }
      map(kernel, vals.data(), rows * cols);  // kernel values of the scaled distances
      for (Index i = 0; i < rows; ++i) {
        double v = 0.0;
        for (Index j = 0; j < cols; ++j) {
          const std::size_t ij = std::size_t(i * cols + j);
          const double k = vals[ij], wj = w[j0 + j];
          v += wj * k;
          dots[ij] = wj * gradient_factor(kernel, dots[ij], k);
        }
        V[std::size_t(i)] += v;
      }
      // S += Psi [1, b_s]: Bt(j, f) = b1[j * d1 + f]
      gemm(dots.data(), cols, rows, cols, b1.data(), d1, 1, d1, 1.0, false, S.data(), d1);
    }
    // G = (sum w psi_s b_s - a_s sum w psi_s) / h  (psi = psi_s / h^2, b - a = h (b_s - a_s))
    for (Index i = 0; i < rows; ++i) {
      const double* s = S.data() + i * d1;
      out(r0 + i, 0) += scale * V[std::size_t(i)];
      for (Index f = 0; f < d; ++f)
        out(r0 + i, 1 + f) += scale * inv_h * (s[1 + f] - as[std::size_t(i * d + f)] * s[0]);
    }
  });
}

/// psi of a Euclidean radial kernel as factor times a kernel of its own (kernel_formulas.inl,
/// Formula::gradient), `same` when that is the kernel itself; none (the Laplacian): the
/// blocked route.
struct FusedGradient {
  Kernel kernel;
  double factor;
  bool same;
};

inline std::optional<FusedGradient> fused_gradient(const Kernel& kernel) {
  const scalar::GradientKernel g = kind_gradient(kernel.kind(), kernel.params());
  if (!g.fused) return std::nullopt;
  const double h = kernel.bandwidth();
  const bool same = g.kind == kernel.kind() && g.bandwidth_squared == 1.0 && g.shape == kernel.shape();
  return FusedGradient{Kernel(g.kind, h * std::sqrt(g.bandwidth_squared), 1.0, 2, g.shape), g.factor / (h * h), same};
}

/// The fused route's weight columns [u w, u w * (b - c)] (and, for float data, the float
/// rounding of u w) for consecutive rows of B, u a power of two: streamed to the tile
/// engine a panel at a time. @throws std::invalid_argument when u w (b - c) overflows
template <class T>
class GradientWeightStream final : public WeightStream {
 public:
  GradientWeightStream(const ConstRowRef<T>& B, const Eigen::Ref<const Eigen::VectorXd>& w,
                       const Eigen::RowVectorXd& centre, double unit, Index columns)
      : B_(B), w_(w), centre_(centre), unit_(unit), k_(columns) {}
  Index columns() const override { return k_; }
  void next_panel(Index panel, Index rows, double* out) override {
    const Index d = B_.cols(), c0 = panel * kWeightPanel, c1 = std::min(k_, c0 + kWeightPanel);
    for (Index r = 0; r < rows; ++r) {
      const Index j = row_ + r;
      const double wj = w_[j] * unit_;
      for (Index c = c0; c < c1; ++c) {
        const double v = c == 0 ? wj : c <= d ? wj * (double(B_(j, c - 1)) - centre_[c - 1]) : wj - double(float(wj));
        if (!std::isfinite(v)) throw std::invalid_argument("kernel_value_gradients: w times B overflows float64");
        out[r * kWeightPanel + (c - c0)] = v;
      }
    }
  }
  void advance(Index rows) override { row_ += rows; }
  void restart() { row_ = 0; }

 private:
  const ConstRowRef<T>& B_;
  const Eigen::Ref<const Eigen::VectorXd>& w_;
  const Eigen::RowVectorXd& centre_;
  double unit_;
  Index k_;
  Index row_ = 0;
};

/// The fused route: psi = factor * (kernel `grad_kernel`), values by `kernel` (the same
/// pass when `same` is true). Blocks of A sized so that the engine's running sums stay
/// within kFusedRowBytes (a_rows > 0: that many rows instead, for tests), the weight
/// columns streamed (GradientWeightStream). Float data: the d + 1 columns are reduced in float
/// lanes (TileEngine::run's float_reduction, twice the rate of float64), their weights
/// first scaled by a power of two that brings the largest near 1, so that no finite
/// weights overflow or underflow float; undone exactly after. The weights' own float
/// rounding goes into one more column (w - float(w)), added to the first: equal weights
/// (1/m) all round one way, a bias the loss's cancelling terms amplified (4e-6 of the
/// loss where float64 weights gave 5e-8, bench.loss's `correct`).
template <class T>
void add_value_gradients_fused(const ConstRowRef<T>& A, const ConstRowRef<T>& B,
                               const Eigen::Ref<const Eigen::VectorXd>& w, const Kernel& kernel,
                               const Kernel& grad_kernel, double factor, bool same, double scale,
                               Eigen::Ref<RowMatrixXd> out, const SumOptions& options, Index a_rows = 0) {
  const Index p = A.rows(), q = B.rows(), d = A.cols(), d1 = d + 1;
  if (p == 0 || q == 0) return;
  const Eigen::RowVectorXd c = column_means(B);
  constexpr bool in_float = std::is_same_v<T, float>;
  double unit = 1.0;  // the weight columns are multiplied by it (a power of two)
  if constexpr (in_float) {
    double largest = 0.0;
    for (Index j = 0; j < q; ++j) {
      double spread = 1.0;
      for (Index f = 0; f < d; ++f) spread = std::max(spread, std::abs(double(B(j, f)) - c[f]));
      largest = std::max(largest, std::abs(w[j]) * spread);
    }
    if (largest > 0.0) unit = std::ldexp(1.0, -std::ilogb(largest));
  }
  const Index row_bytes = 3 * 8 * (d1 + 8);
  const Index a_block = a_rows > 0 ? a_rows : std::max<Index>(256, kFusedRowBytes / row_bytes);
  const Index k = in_float ? d1 + 1 : d1;  // the weight columns, with the rounding's
  // Per block of A one pass of the engine over all of B, the weight columns streamed
  // (made per superblock, never stored for all of B): each call packs B and loads and
  // stores its block's running sums once, so the blocks of A are large (kFusedRowBytes).
  GradientWeightStream<T> stream(B, w, c, unit, k);
  const RowMatrixXd w1 = same ? RowMatrixXd() : RowMatrixXd(w);  // the values' weights (another kernel)
  for (Index i0 = 0; i0 < p; i0 += a_block) {
    const Index rows = std::min(a_block, p - i0);
    const ConstRowRef<T> a = A.middleRows(i0, rows);
    RowMatrixXd S = RowMatrixXd::Zero(rows, k);
    stream.restart();
    TileEngine<T>(a, B, grad_kernel).run_streamed(stream, S, options.n_threads, in_float);
    Eigen::VectorXd V;
    if (!same) V = kernel_sums<T>(a, B, w1, kernel, options).col(0);
    if (in_float) S.col(0) += S.col(d1);
    S /= unit;
    parallel_tasks(rows, options.n_threads, [&](Index r) {
      const Index i = i0 + r;
      out(i, 0) += scale * (same ? S(r, 0) : V[r]);
      for (Index f = 0; f < d; ++f) out(i, 1 + f) += scale * factor * (S(r, 1 + f) - (double(A(i, f)) - c[f]) * S(r, 0));
    });
  }
}

}  // namespace detail

/// out(i, 0) += scale * sum_j w_j k(a_i, b_j) and out(i, 1 + f) += scale * sum_j w_j
/// d/da_f k(a_i, b_j), for a Euclidean radial kernel: the kernel sums and their
/// gradients with respect to the rows of A, computed together (Gaussian: one pass of
/// kernel_sums with d + 1 weight columns; Matern, rational quadratic, inverse
/// multiquadric: two passes; Laplacian: the blocked route). The Laplacian's gradient at
/// distance 0 is taken as 0.
/// @param A    (p, d) points where the sums and gradients are evaluated
/// @param B    (q, d) points summed over
/// @param w    (q,) weights
/// @param out  (p, d + 1) float64, added to
/// @throws std::invalid_argument for a kernel that is not Euclidean radial, shapes that disagree,
///         NaN/inf in A, B or w; nystrom_kme::Interrupted when the interrupt check stops it
template <class T>
void add_kernel_value_gradients(const ConstRowRef<T>& A, const ConstRowRef<T>& B,
                                const Eigen::Ref<const Eigen::VectorXd>& w, const Kernel& kernel,
                                double scale, Eigen::Ref<RowMatrixXd> out,
                                const SumOptions& options = {}) {
  detail::check_gradient_arguments(A.rows(), A.cols(), B.rows(), B.cols(), w.size(), kernel,
                                   out.rows(), out.cols());
  if (!std::isfinite(scale)) throw std::invalid_argument("kernel_value_gradients: scale must be finite");
  detail::check_finite(A, "A");
  detail::check_finite(B, "B");
  for (Index j = 0; j < w.size(); ++j)
    if (!std::isfinite(w[j])) throw std::invalid_argument("kernel_value_gradients: w contains NaN or inf");
  const auto route = detail::fused_gradient(kernel);
  if (!route) {
    detail::add_value_gradients_blocked<T>(A, B, w, kernel, scale, out, options);
    return;
  }
  detail::add_value_gradients_fused<T>(A, B, w, kernel, route->kernel, route->factor, route->same, scale, out,
                                       options);
}

/// [V | G], (p, d + 1) float64: column 0 the sums sum_j w_j k(a_i, b_j), columns 1..d
/// their gradients with respect to a_i (see add_kernel_value_gradients).
/// @throws the same as add_kernel_value_gradients
template <class T>
RowMatrixXd kernel_value_gradients(const ConstRowRef<T>& A, const ConstRowRef<T>& B,
                                   const Eigen::Ref<const Eigen::VectorXd>& w,
                                   const Kernel& kernel, const SumOptions& options = {}) {
  RowMatrixXd out = RowMatrixXd::Zero(A.rows(), A.cols() + 1);
  add_kernel_value_gradients<T>(A, B, w, kernel, 1.0, out, options);
  return out;
}

}  // namespace nystrom_kme
