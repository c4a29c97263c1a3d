// The permuted kernel sums of a collection of radial kernels in one pass over the
// data: the engine of aggregated two-sample tests (several kernels, one set of
// random splits).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <nystrom_kme/detail/checks.hpp>
#include <nystrom_kme/detail/tile_engine.hpp>
#include <nystrom_kme/kernel_sums.hpp>
#include <nystrom_kme/kernels.hpp>
#include <nystrom_kme/random_splits.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme {

/// S_j = K_j(L, Z) W for every kernel j, W the next Z.rows() rows of `splits` (never
/// stored): K matrices of shape (m, B + 1), float64, in the order of `kernels`.
/// Chunks of the pooled sample may be passed one after the other (the cursor of
/// `splits` advances by Z.rows()); the sum of their results is the sum over all rows.
///
/// One pass over Z: the labels are generated once for all kernels; each tile's
/// squared distances are computed once, in units of the smallest bandwidth, and
/// every kernel's values come from them (scaled by (smallest / own bandwidth)^2,
/// with one square root shared by the Laplacian and Matern kernels), reduced
/// against the same streamed weight panels. Time O(m q d + K m q (B + 1)); memory
/// O((block + m) d + K m (B + 1)) beyond the inputs, never q x K m.
///
/// Each S_j agrees with split_kernel_sums(L, Z, splits', kernels[j]) on a fresh
/// RandomSplits with the same seed to rounding (the distances differ by the scaling
/// only), measured relative to max |S_j| in float64: 1.5e-13 for 20 Gaussian and
/// Laplacian kernels at 0.1 to 10 times sqrt(2 d), d = 10 (bench/multi_column.py),
/// below 1e-13 in the tests (five radial kinds, d = 3 and 40); the widest kernels
/// differ most, their values near 1 cancelling in the label sums. float32 inputs:
/// ~1e-6 (float32 rounding of the scaled distances). Bit-identical for any thread
/// count; interruptible (interrupt.hpp).
///
/// @param kernels  one or more radial kernels of one distance (squared Euclidean or l1:
///                 one call per distance), each with its own bandwidth, whose largest
///                 to smallest bandwidth ratio squared stays a normal T (1e150 in
///                 float64, 1.8e19 in float32 for the ratio)
/// @throws std::invalid_argument on an empty or non-radial kernel list, kernels of two
///         distances, bandwidths
///         too far apart, dimension mismatch, NaN/inf, L without rows, or more rows
///         than the splits have left; nystrom_kme::Interrupted when stopped
template <class T>
std::vector<RowMatrixXd> split_kernel_sums_multi(const ConstRowRef<T>& L, const ConstRowRef<T>& Z,
                                                 RandomSplits& splits, const std::vector<Kernel>& kernels,
                                                 const SumOptions& options = {}) {
  if (kernels.empty()) throw std::invalid_argument("split_kernel_sums_multi: kernels is empty");
  double smallest = kernels[0].bandwidth(), largest = smallest;
  for (std::size_t j = 0; j < kernels.size(); ++j) {
    if (!kernels[j].is_radial()) {
      throw std::invalid_argument("split_kernel_sums_multi: kernels[" + std::to_string(j) +
                                  "] is not radial");
    }
    smallest = std::min(smallest, kernels[j].bandwidth());
    largest = std::max(largest, kernels[j].bandwidth());
  }
  const double ratio = smallest / largest;  // in (0, 1]: no overflow
  if (!(T(ratio * ratio) >= std::numeric_limits<T>::min())) {
    throw std::invalid_argument("split_kernel_sums_multi: the bandwidths span a factor " +
                                std::to_string(largest / smallest) +
                                ", too wide for one pass in this precision (call split_kernel_sums "
                                "for the extreme kernels)");
  }
  if (L.rows() < 1) throw std::invalid_argument("split_kernel_sums_multi: L needs at least one row");
  if (Z.rows() > splits.n_rows() - splits.position()) {
    throw std::invalid_argument("split_kernel_sums_multi: Z has " + std::to_string(Z.rows()) +
                                " rows but the splits have " +
                                std::to_string(splits.n_rows() - splits.position()) + " left");
  }
  detail::check_finite(L, "L");
  detail::check_finite(Z, "Z");
  // The reference: the smallest bandwidth, so the packed data overflows T exactly
  // when split_kernel_sums would overflow for that kernel, and every ratio is <= 1.
  const Kernel reference = detail::packing_kernel(kernels, smallest, "split_kernel_sums_multi");
  detail::SplitWeightStream stream(splits);
  detail::TileEngine<T> engine(L, Z, reference);
  std::vector<RowMatrixXd> out(kernels.size(), RowMatrixXd::Zero(L.rows(), splits.n_columns()));
  engine.run_streamed_multi(stream, kernels, out, options.n_threads);
  return out;
}

}  // namespace nystrom_kme
