// Random splits for permutation two-sample tests, generated row by row so that
// the n x (B + 1) label matrix is never stored, and their kernel sums K(L, Z) W
// in one streaming pass of the tile engine.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include <nystrom_kme/detail/checks.hpp>
#include <nystrom_kme/detail/format.hpp>
#include <nystrom_kme/detail/memory.hpp>
#include <nystrom_kme/detail/sampling_common.hpp>
#include <nystrom_kme/detail/tile_engine.hpp>
#include <nystrom_kme/interrupt.hpp>
#include <nystrom_kme/kernel_sums.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme {

/// The label weights of a permutation test on n = n1 + n2 pooled rows. Column 0 is
/// the observed split (rows [0, n1) are the first sample); column b = 1..B is an
/// independent uniformly random split into n1 and n2 rows, drawn by selection
/// sampling (Knuth, TAOCP vol. 2, Algorithm 3.4.2 S: row i joins the first sample
/// with probability still-needed / rows-left, so exactly n1 rows do) from its own
/// SplitMix64 stream, seeded from (seed, b), with 52-bit uniforms. A row of the
/// first sample weighs +1/n1, the others -1/n2, so that K(L, Z) w_b is the
/// difference of the two mean embeddings at L.
///
/// The rows come in order (a cursor advances); the labels depend on (n1, n2, B,
/// seed) only: not on the chunking, the thread count or the SIMD level (integer
/// and exactly rounded arithmetic only). The columns of a panel of kWeightPanel
/// are generated as vector lanes. Memory O(B). Not thread-safe.
class RandomSplits {
 public:
  /// Most pooled rows: the counts of selection sampling are float64 and exact up to 2^53.
  static constexpr Index kMaxRows = Index(1) << 53;

  /// @throws std::invalid_argument unless n1 >= 1, n2 >= 1, n1 + n2 <= kMaxRows and
  ///         n_permutations >= 1
  /// @throws std::length_error when the B + 1 columns, padded to whole panels, overflow
  ///         Index or their state (32 bytes per column) exceeds this machine's memory
  RandomSplits(Index n1, Index n2, Index n_permutations, std::uint64_t seed)
      : n1_(n1), n2_(n2), columns_(checked_columns(n1, n2, n_permutations)) {
    const std::size_t padded = std::size_t(detail::weight_stride(columns_));
    try {
      state_.assign(padded, 0);
      needed_.assign(padded, 0.0);  // padding columns never select and weigh 0
      plus_.assign(padded, 0.0);
      minus_.assign(padded, 0.0);
    } catch (const std::bad_alloc&) {
      throw std::length_error("RandomSplits: n_permutations = " + std::to_string(n_permutations) +
                              " needs " + detail::format_number(double(padded) * kStateBytes) +
                              " bytes of split states, more than can be allocated");
    }
    for (Index b = 0; b < columns_; ++b) {
      // Distinct, well mixed starting states: SplitMix64 seeds that differ by a
      // multiple of its increment would give shifted copies of one stream.
      detail::SplitMix64 mix(seed ^ (0xD1B54A32D192ED03ULL * std::uint64_t(b + 1)));
      state_[std::size_t(b)] = mix.next();
      needed_[std::size_t(b)] = double(n1);
      plus_[std::size_t(b)] = 1.0 / double(n1);
      minus_[std::size_t(b)] = -1.0 / double(n2);
    }
  }

  Index n_rows() const { return n1_ + n2_; }
  Index n_columns() const { return columns_; }
  /// Rows produced so far.
  Index position() const { return position_; }
  Index n_panels() const { return Index(state_.size()) / detail::kWeightPanel; }

  /// Weights of the next `rows` rows of panel `panel` (columns panel * kWeightPanel
  /// ...), row-major rows x kWeightPanel in out; columns past B + 1 get 0. Panels
  /// may be generated concurrently; call advance(rows) once all of them are done.
  void panel_weights(Index panel, Index rows, double* out) {
    if (panel < 0 || panel >= n_panels()) throw std::invalid_argument("RandomSplits: no such panel");
    if (rows < 0 || rows > n_rows() - position_) {
      throw std::invalid_argument("RandomSplits: " + std::to_string(rows) + " rows requested but " +
                                  std::to_string(n_rows() - position_) + " remain");
    }
    const std::size_t c0 = std::size_t(panel * detail::kWeightPanel);
    detail::simd_table().split_weights(state_.data() + c0, needed_.data() + c0, plus_.data() + c0,
                                       minus_.data() + c0, n_rows() - position_, rows, out,
                                       detail::kWeightPanel);
    if (panel == 0) {  // column 0: the observed split, the first n1 rows
      for (Index i = 0; i < rows; ++i) out[i * detail::kWeightPanel] = position_ + i < n1_ ? plus_[0] : minus_[0];
    }
  }

  /// Moves the cursor past `rows` rows (after panel_weights covered every panel).
  void advance(Index rows) { position_ += rows; }

  /// Weights of the next `rows` rows, (rows, B + 1), advancing the cursor.
  /// @throws std::invalid_argument when fewer rows remain; nystrom_kme::Interrupted
  ///         (the cursor unmoved) when stopped
  RowMatrixXd next_weights(Index rows) {
    if (rows < 0 || rows > n_rows() - position_) {  // before any allocation: no Eigen assertion
      throw std::invalid_argument("RandomSplits: " + std::to_string(rows) + " rows requested but " +
                                  std::to_string(n_rows() - position_) + " remain");
    }
    RowMatrixXd W(rows, columns_);
    std::vector<double> panel(std::size_t(std::max<Index>(rows, 0) * detail::kWeightPanel));
    detail::InterruptPoller poller;  // 10^5 rows x 1001 columns take seconds
    for (Index p = 0; p < n_panels(); ++p) {
      poller.poll();
      panel_weights(p, rows, panel.data());
      const Index c0 = p * detail::kWeightPanel, width = std::min(detail::kWeightPanel, columns_ - c0);
      for (Index i = 0; i < rows; ++i)
        for (Index c = 0; c < width; ++c) W(i, c0 + c) = panel[std::size_t(i * detail::kWeightPanel + c)];
    }
    advance(rows);
    return W;
  }

 private:
  static constexpr double kStateBytes = sizeof(std::uint64_t) + 3 * sizeof(double);

  /// B + 1, after the checks of the constructor's documentation (in that order).
  static Index checked_columns(Index n1, Index n2, Index n_permutations) {
    if (n1 < 1 || n2 < 1) {
      throw std::invalid_argument("RandomSplits: n1 and n2 must be >= 1, got " + std::to_string(n1) +
                                  " and " + std::to_string(n2));
    }
    if (n1 > kMaxRows - n2) {  // no overflow: both are >= 1 and kMaxRows < max / 2
      throw std::invalid_argument("RandomSplits: n1 + n2 must be at most 2^53 = " + std::to_string(kMaxRows) +
                                  " (the split counts are exact in float64), got n1 = " +
                                  std::to_string(n1) + " and n2 = " + std::to_string(n2));
    }
    if (n_permutations < 1) {
      throw std::invalid_argument("RandomSplits: n_permutations must be >= 1, got " +
                                  std::to_string(n_permutations));
    }
    // The padded columns and their state bytes must fit Index (no signed overflow in
    // weight_stride or in the callers' products with kWeightPanel rows), and the
    // machine: a request beyond its memory would not fail cleanly where the system
    // overcommits.
    constexpr Index kMaxColumns =
        (std::numeric_limits<Index>::max() / Index(kStateBytes) / detail::kWeightPanel) * detail::kWeightPanel;
    const double bytes = (double(n_permutations) + detail::kWeightPanel) * kStateBytes;
    const double memory = detail::physical_memory_bytes();
    if (n_permutations >= kMaxColumns || (memory > 0 && bytes > memory)) {
      throw std::length_error("RandomSplits: n_permutations = " + std::to_string(n_permutations) +
                              " is too large: its split states need " + detail::format_number(bytes) +
                              " bytes" + (memory > 0 ? ", this machine has " + detail::format_number(memory)
                                                     : std::string()));
    }
    return n_permutations + 1;
  }

  Index n1_, n2_, columns_;
  Index position_ = 0;
  std::vector<std::uint64_t> state_;  // SplitMix64 state per column, padded to whole panels
  std::vector<double> needed_;        // rows still to assign to the first sample
  std::vector<double> plus_, minus_;  // the two weights of each column (0 for padding)
};

namespace detail {

/// RandomSplits as the tile engine's weight stream: one panel of kWeightPanel
/// columns at a time, for the next rows of B.
class SplitWeightStream final : public WeightStream {
 public:
  explicit SplitWeightStream(RandomSplits& splits) : splits_(splits) {}
  Index columns() const override { return splits_.n_columns(); }
  void next_panel(Index panel, Index rows, double* out) override { splits_.panel_weights(panel, rows, out); }
  void advance(Index rows) override { splits_.advance(rows); }

 private:
  RandomSplits& splits_;
};

}  // namespace detail

/// S = K(L, Z) W for the next Z.rows() rows of `splits` (W never stored): (m, B + 1),
/// float64. Chunks of the pooled sample may be passed one after the other; the sum
/// of their results is the sum over all rows. O(m q d + m q (B + 1)) time.
/// @throws std::invalid_argument on dimension mismatch, NaN/inf, or more rows than remain
template <class T>
RowMatrixXd split_kernel_sums(const ConstRowRef<T>& L, const ConstRowRef<T>& Z, RandomSplits& splits,
                              const Kernel& kernel, const SumOptions& options = {}) {
  if (L.rows() < 1) throw std::invalid_argument("split_kernel_sums: L needs at least one row");
  if (Z.rows() > splits.n_rows() - splits.position()) {
    throw std::invalid_argument("split_kernel_sums: Z has " + std::to_string(Z.rows()) +
                                " rows but the splits have " +
                                std::to_string(splits.n_rows() - splits.position()) + " left");
  }
  detail::check_finite(L, "L");
  detail::check_finite(Z, "Z");
  detail::SplitWeightStream stream(splits);
  detail::TileEngine<T> engine(L, Z, kernel);
  RowMatrixXd out = RowMatrixXd::Zero(L.rows(), splits.n_columns());
  engine.run_streamed(stream, out, options.n_threads);
  return out;
}

}  // namespace nystrom_kme
