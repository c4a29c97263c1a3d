// Binned kernel sums of several radial kernels in one pass: E_j = K_j(L, Z) A for the
// one-hot bin matrix A of the rows of Z. The aggregated two-sample test sums each
// sample's rows by random bins once, then permutes bins (random_splits.hpp) instead of
// rows, so its permutations cost O(m n_bins B) per kernel whatever the number of rows.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <nystrom_kme/detail/checks.hpp>
#include <nystrom_kme/detail/tile_engine.hpp>
#include <nystrom_kme/kernel_sums.hpp>
#include <nystrom_kme/kernels.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme {

namespace detail {
/// kernel_rows of add_kernel_bin_sums: empty, or one count in [1, m] per kernel.
inline void check_kernel_rows(const std::vector<Index>& kernel_rows, std::size_t n_kernels, Index m) {
  if (!kernel_rows.empty() && kernel_rows.size() != n_kernels) {
    throw std::invalid_argument("kernel_bin_sums: kernel_rows needs one count per kernel");
  }
  for (Index rows : kernel_rows) {
    if (rows < 1 || rows > m) {
      throw std::invalid_argument("kernel_bin_sums: kernel_rows has " + std::to_string(rows) + ", outside [1, " +
                                  std::to_string(m) + "] (the rows of L)");
    }
  }
}
}  // namespace detail

/// outs[j](r, g) += the sum over the rows i of Z with bins[i] = g of k_j(l_r, z_i), for
/// every kernel j; outs[j] points to a row-major (m, n_bins) float64 matrix. Rows with
/// bins[i] = -1 are skipped. One streaming pass over Z: each tile's squared distances
/// are computed once (in units of the largest bandwidth) and every kernel's values come
/// from them. Chunks of Z may be passed one after the other into the same outputs. All
/// rows of the call are packed in the order of their bins (a stable counting sort, rows
/// of bin -1 last), so a bin's rows are neighbours across superblocks and each run of
/// them is added in registers before one store (float data: a chunk's run, at most 256
/// values, in float lanes, then in float64; chunks passed one after the other may cut
/// runs elsewhere, a few float ulps apart); each output row is summed by one task:
/// bit-identical for any thread count. O(m q (d + K)) time; no memory beyond ~1 MiB of
/// packed rows and O(q) indices for the bin order.
/// Kernels on nested landmark sets share the pass: with `kernel_rows`, kernel j sums
/// over the first kernel_rows[j] rows of L only (outs[j] then has that many rows), and the
/// distances of those rows serve every kernel.
/// @param bins  Z.rows() entries in [-1, n_bins)
/// @param kernels  radial kernels of one distance (squared Euclidean or l1; their shape
///                 parameters kept): one call per distance
/// @param kernel_rows  empty (every kernel on all of L) or one count in [1, L.rows()] per kernel
/// @throws std::invalid_argument on dimension mismatch, NaN/inf input, a bin out of range,
///         no kernel, a kernel that is not radial, kernels of two distances, a null
///         output or a row count out of range; nystrom_kme::Interrupted
template <class T>
void add_kernel_bin_sums(const ConstRowRef<T>& L, const ConstRowRef<T>& Z, const std::int64_t* bins,
                         Index n_bins, const std::vector<Kernel>& kernels, const std::vector<double*>& outs,
                         const SumOptions& options = {}, const std::vector<Index>& kernel_rows = {}) {
  if (kernels.empty()) throw std::invalid_argument("kernel_bin_sums: no kernels");
  if (outs.size() != kernels.size()) {
    throw std::invalid_argument("kernel_bin_sums: one output per kernel is needed");
  }
  detail::check_kernel_rows(kernel_rows, kernels.size(), L.rows());
  if (n_bins < 1) throw std::invalid_argument("kernel_bin_sums: n_bins must be >= 1");
  for (double* o : outs) {
    if (!o) throw std::invalid_argument("kernel_bin_sums: null output");
  }
  if (L.cols() != Z.cols()) {
    throw std::invalid_argument("kernel_bin_sums: L has " + std::to_string(L.cols()) +
                                " features but Z " + std::to_string(Z.cols()));
  }
  double widest = 0.0, narrowest = std::numeric_limits<double>::infinity();
  for (const Kernel& k : kernels) {
    if (!k.is_radial()) throw std::invalid_argument("kernel_bin_sums: every kernel must be radial");
    widest = std::max(widest, k.bandwidth());
    narrowest = std::min(narrowest, k.bandwidth());
  }
  // Kernel j's squared distances are the packed ones times (widest / its bandwidth)^2 in T.
  const double ratio = widest / narrowest;
  if (!std::isfinite(T(ratio * ratio))) {
    throw std::invalid_argument("kernel_bin_sums: the largest to smallest bandwidth ratio squared (" +
                                std::to_string(ratio * ratio) + ") overflows " +
                                (sizeof(T) == 4 ? "float32" : "float64"));
  }
  for (Index i = 0; i < Z.rows(); ++i) {
    if (bins[i] < -1 || bins[i] >= n_bins) {
      throw std::invalid_argument("kernel_bin_sums: bins[" + std::to_string(i) + "] = " +
                                  std::to_string(bins[i]) + " is outside [-1, " +
                                  std::to_string(n_bins) + ")");
    }
  }
  detail::check_finite(L, "L");
  detail::check_finite(Z, "Z");
  // Packed in units of the widest bandwidth: the scaled data stay finite whenever they do
  // for every kernel, and kernel j's distances are the packed ones times a factor >= 1
  // (an overflow to inf maps to 0, the kernel's value far away).
  const Kernel packing = detail::packing_kernel(kernels, widest, "kernel_bin_sums");
  detail::BinJob job;
  job.bins = bins;
  job.n_bins = n_bins;
  job.outs = outs;
  job.rows = kernel_rows;
  for (const Kernel& k : kernels) job.maps.push_back({k.kind(), widest / k.bandwidth(), k.params()});
  detail::TileEngine<T> engine(L, Z, packing);
  engine.run_bins(job, options.n_threads);
}

/// The binned sums of add_kernel_bin_sums in new (m_j, n_bins) matrices, one per kernel
/// (m_j = kernel_rows[j], or L.rows() when kernel_rows is empty).
/// @throws the same as add_kernel_bin_sums
template <class T>
std::vector<RowMatrixXd> kernel_bin_sums(const ConstRowRef<T>& L, const ConstRowRef<T>& Z,
                                         const std::int64_t* bins, Index n_bins,
                                         const std::vector<Kernel>& kernels,
                                         const SumOptions& options = {},
                                         const std::vector<Index>& kernel_rows = {}) {
  detail::check_kernel_rows(kernel_rows, kernels.size(), L.rows());  // before the outputs' sizes
  std::vector<RowMatrixXd> out;
  std::vector<double*> outs;
  out.reserve(kernels.size());
  for (std::size_t j = 0; j < kernels.size(); ++j) {
    out.push_back(RowMatrixXd::Zero(kernel_rows.empty() ? L.rows() : kernel_rows[j], std::max<Index>(n_bins, 0)));
    outs.push_back(out.back().data());
  }
  add_kernel_bin_sums<T>(L, Z, bins, n_bins, kernels, outs, options, kernel_rows);
  return out;
}

}  // namespace nystrom_kme
