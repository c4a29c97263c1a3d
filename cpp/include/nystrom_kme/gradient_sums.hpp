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
// Memory: bounded blocks (a few MiB) besides the output; no p x q buffer.
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
/// Bytes of float64 weights per block of B and of running sums per block of A in the
/// fused route (the engine keeps two running sums and the result per row of A). Large:
/// every block of B costs a pass over the running sums of all of A, every block of A a
/// packing of all of B (at 4 and 12 MiB, a third of the time at d = 768).
inline constexpr Index kFusedWeightBytes = Index(32) << 20;
inline constexpr Index kFusedRowBytes = Index(64) << 20;

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
  const scalar::GradientKernel g = scalar::visit_kind(
      kernel.kind(),
      [&](auto tag) {
        using F = typename decltype(tag)::formula;
        if constexpr (F::distance == Distance::squared_euclidean) {
          return F::gradient(kernel.params());
        } else {
          return scalar::GradientKernel{false, kernel.kind(), 1.0, 1.0, 1.0};
        }
      },
      [&] { return scalar::GradientKernel{false, kernel.kind(), 1.0, 1.0, 1.0}; });
  if (!g.fused) return std::nullopt;
  const double h = kernel.bandwidth();
  const bool same = g.kind == kernel.kind() && g.bandwidth_squared == 1.0 && g.shape == kernel.shape();
  return FusedGradient{Kernel(g.kind, h * std::sqrt(g.bandwidth_squared), 1.0, 2, g.shape), g.factor / (h * h), same};
}

/// The fused route: psi = factor * (kernel `grad_kernel`), values by `kernel` (the same
/// pass when `same` is true). Blocks of A and B sized so that the weight columns stay
/// within kFusedWeightBytes and the engine's running sums within kFusedRowBytes
/// (a_rows, b_rows > 0: those many rows instead, for tests). Float data: the d + 1 columns are reduced in float
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
                               Eigen::Ref<RowMatrixXd> out, const SumOptions& options, Index a_rows = 0,
                               Index b_rows = 0) {
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
  const Index b_block = b_rows > 0 ? b_rows : std::max<Index>(256, kFusedWeightBytes / (8 * d1));
  const Index k = in_float ? d1 + 1 : d1;  // the weight columns, with the rounding's
  // Blocks of B outside, blocks of A inside, so that each block's weight columns are
  // built once; the engine adds into each block of A's sums in place. (Built for every
  // block of A, and summed through copies, these serial passes over p x k and q x k
  // values took a quarter of the time at d = 768.)
  RowMatrixXd Wb(std::min(b_block, q), k);
  const Index n_blocks = (p + a_block - 1) / a_block;
  std::vector<RowMatrixXd> S(static_cast<std::size_t>(n_blocks)), V(S.size());
  for (Index i = 0; i < n_blocks; ++i) {
    const Index rows = std::min(a_block, p - i * a_block);
    S[std::size_t(i)] = RowMatrixXd::Zero(rows, k);
    if (!same) V[std::size_t(i)] = RowMatrixXd::Zero(rows, 1);
  }
  for (Index j0 = 0; j0 < q; j0 += b_block) {
    const Index cols = std::min(b_block, q - j0);
    const ConstRowRef<T> b = B.middleRows(j0, cols);
    parallel_tasks(cols, options.n_threads, [&](Index j) {
      const double wj = w[j0 + j] * unit;
      Wb(j, 0) = wj;
      for (Index f = 0; f < d; ++f) Wb(j, 1 + f) = wj * (double(b(j, f)) - c[f]);
      if (in_float) Wb(j, d1) = wj - double(float(wj));
      if (!Wb.row(j).allFinite()) throw std::invalid_argument("kernel_value_gradients: w times B overflows");
    });
    const WeightsRef wb = Wb.topRows(cols), w0 = Wb.topLeftCorner(cols, 1);
    for (Index i = 0; i < n_blocks; ++i) {
      const ConstRowRef<T> a = A.middleRows(i * a_block, S[std::size_t(i)].rows());
      TileEngine<T>(a, b, grad_kernel).template run<Mode::sums>(&wb, S[std::size_t(i)], options.n_threads, in_float);
      if (!same) TileEngine<T>(a, b, kernel).template run<Mode::sums>(&w0, V[std::size_t(i)], options.n_threads);
    }
  }
  parallel_tasks(n_blocks, options.n_threads, [&](Index blk) {
    RowMatrixXd& Sb = S[std::size_t(blk)];
    if (in_float) Sb.col(0) += Sb.col(d1);
    for (Index r = 0; r < Sb.rows(); ++r) {
      const Index i = blk * a_block + r;
      const double s0 = Sb(r, 0) / unit, v = same ? s0 : V[std::size_t(blk)](r, 0) / unit;
      out(i, 0) += scale * v;
      for (Index f = 0; f < d; ++f) out(i, 1 + f) += scale * factor * (Sb(r, 1 + f) / unit - (double(A(i, f)) - c[f]) * s0);
    }
  });
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
