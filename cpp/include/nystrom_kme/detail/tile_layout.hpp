// Shapes shared by the tile engine (which packs and schedules) and the per-level
// micro-kernels (which compute): block sizes, the packed layouts of B and of the
// weights, and the description of one tile's work.
#pragma once

#include <algorithm>
#include <cstdint>

#include <nystrom_kme/kernels.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme::detail {

constexpr Index kTileRows = 16;      // rows of A per task
constexpr Index kGroupRows = 4;      // rows of A per micro-kernel call
constexpr Index kChunk = 256;        // rows of B per L1-resident block of kernel values
// Chunks per segment (k > 1): several kernels share a segment's distances, and each
// kernel's partial sums are folded into the tile's running sums once per segment.
constexpr Index kSegmentChunks = 4;
constexpr Index kDirectMaxDim = 32;  // Euclidean kernels below this d use sum (a-b)^2 directly
constexpr Index kPackBytes = 1024 * 1024;  // packed block of B, shared by all threads
constexpr Index kPackPiece = 32;           // rows of B per packing task
constexpr Index kPiecesPerChunk = kChunk / kPackPiece;
// Above this many bytes for one chunk of rows (kChunk x d), inputs with fewer rows
// than a chunk or a tile are summed pair by pair instead (d > 8192 in float64).
constexpr Index kWideBytes = 16 * 1024 * 1024;
// A call keeps every tile's packed rows of A (TileEngine) up to this many bytes, rather
// than each task repacking its tile for every superblock.
constexpr Index kKeptTileBytes = 64 * 1024 * 1024;
// Work (pairs x (d + 8) x weight columns) one extra thread must bring: ~0.5 ms of
// tile work, measured against the cost of waking a thread on a busy core.
constexpr double kMinWorkPerThread = 1.0e7;
// Expansion ||a||^2 + ||b||^2 - 2<a,b> is recomputed directly when it falls below
// this fraction of ||a||^2 + ||b||^2: there it has lost most of its digits.
constexpr double kCancellation = 1e-6;

// Packed B: panels of kPanelCols rows of B, each stored feature-major (d x
// kPanelCols contiguous), so micro-kernels read memory sequentially. 128 bytes is
// two AVX-512 vectors; narrower levels walk a panel in several column slices.
constexpr Index kPanelBytes = 128;
template <class T>
constexpr Index kPanelCols = kPanelBytes / Index(sizeof(T));

template <class T>
inline Index panel_index(Index col, Index f, Index d) {
  return (col / kPanelCols<T>)*d * kPanelCols<T> + f * kPanelCols<T> + col % kPanelCols<T>;
}

// Weight columns per packed panel (k > 1): 8 float64, one cache line per row of B,
// the width of the AVX-512 register block of the reduction (tile_sums.inl);
// narrower levels take a panel in two halves.
constexpr Index kWeightPanel = 8;
// Rows of B whose weighted values a float reduction (TileTask::wpack_f) sums in float
// lanes before adding them to float64: at most 32 float roundings (1.9e-6) of sum |w k|
// per sum, typically ~6. Measured on the loss's float32 gradients (bench.loss `correct`):
// 7e-7 of float64's at 32 rows, 1.2e-6 at 64, the same speed within noise.
constexpr Index kFloatRun = 32;

// Packed weights: one plain column for k = 1; for k > 1 panels of kWeightPanel
// columns, each R x kWeightPanel contiguous and zero-padded past column k.
inline Index weight_stride(Index k) {
  return k <= 1 ? 1 : ((k + kWeightPanel - 1) / kWeightPanel) * kWeightPanel;
}
inline Index weight_index(Index row, Index col, Index k, Index R) {
  if (k <= 1) return row;
  return ((col / kWeightPanel) * R + row) * kWeightPanel + col % kWeightPanel;
}

// Packed weights of a superblock (k > 1). Every tile streams all of them once per
// kernel, so they should stay in the core's L2 (1.25-2 MiB on current x86) next to
// the tile's blocks. Measured at k = 201, m = 1000, one thread, AVX-512: 1 MiB beat
// 0.5, 1.5 and 2 MiB (bench/RESULTS.md, "The permuted sums at BLAS speed").
constexpr Index kWeightPackBytes = 1024 * 1024;

/// Rows of B per packed superblock: ~kPackBytes of B, a multiple of kChunk. With
/// k > 1 weight columns, also at most ~kWeightPackBytes of packed weights: every
/// tile sweeps the whole superblock, whose weights must stay in cache for the next
/// tile (k = 201 with 16k-row superblocks streamed 27 MB from memory per tile).
inline Index superblock_rows(Index d, Index elem_bytes, Index k = 1) {
  Index r = kPackBytes / (d * elem_bytes);
  if (k > 1) r = std::min<Index>(r, kWeightPackBytes / (weight_stride(k) * Index(sizeof(double))));
  r = std::max<Index>(kChunk, (r / kChunk) * kChunk);
  return std::min<Index>(r, 64 * kChunk);
}

/// How a level's multi-column reduction lays out a tile's sums (TileTask::sum):
/// tile rows side by side (column c, row r at c * kTileRows + r), or the columns of
/// each weight panel side by side (at (c / P) * P * kTileRows + r * P + c % P).
enum class PartialLayout { rows_in_lanes, columns_in_lanes };

/// Offset of the sum of tile row `row` and weight column `col` in a tile's block of
/// sums (k weight columns; k = 1: the rows alone).
inline Index partial_offset(PartialLayout layout, Index k, Index col, Index row) {
  if (k <= 1) return row;
  if (layout == PartialLayout::rows_in_lanes) return col * kTileRows + row;
  return (col / kWeightPanel) * kWeightPanel * kTileRows + row * kWeightPanel + col % kWeightPanel;
}

/// One kernel of a multi-kernel pass (radial only): its values are f_kind(d2 ratio^2)
/// for the squared distances d2 of points scaled by the reference bandwidth (f_kind(d
/// ratio) for the l1 distances d of the l1 kernels), where ratio = reference
/// bandwidth / this kernel's bandwidth.
struct ScaledKernel {
  KernelKind kind = KernelKind::gaussian;
  double ratio = 1.0;
  KernelParams params = {};
};

/// How a tile's pairs are computed: inner products (the dot-product kernels, and the
/// Euclidean kernels in wide data, which expand them into squared distances), squared
/// differences summed directly, or absolute differences (the l1 distance).
enum class Pairwise { product, squared, l1 };

/// The pairwise computation of a kernel's tiles in d features.
inline Pairwise pairwise_of(const Kernel& kernel, Index d) {
  switch (kernel.distance()) {
    case Distance::squared_euclidean:
      return d < kDirectMaxDim ? Pairwise::squared : Pairwise::product;
    case Distance::l1:
      return Pairwise::l1;
    case Distance::inner_product:
      return Pairwise::product;
  }
  return Pairwise::product;
}

/// One tile of kTileRows rows of A against one packed superblock of B.
template <class T>
struct TileTask {
  const T* a = nullptr;        // kTileRows x d, centred, rows past `rows` zero
  const T* at = nullptr;       // the same, transposed: d x kTileRows
  const T* anorm = nullptr;    // kTileRows squared norms of a
  const T* bt = nullptr;       // packed superblock (panels), first chunk
  const T* bnorm = nullptr;    // squared norms of the packed rows
  const double* wpack = nullptr;  // packed weights of the superblock (k > 0)
  // k > 1, float data, a float reduction asked for (TileEngine::run): the same weights
  // rounded to float, in wpack's layout; the values then stay float in `block` and each
  // kFloatRun rows of B are summed in float lanes before the float64 partial sums. Else null.
  const float* wpack_f = nullptr;
  const Kernel* kernel = nullptr;
  const ScaledKernel* maps = nullptr;  // k > 1 only: n_maps kernels on distances in units
  Index n_maps = 0;                    // of `kernel`'s bandwidth, instead of `kernel` itself
  Index d = 0, R = 0, k = 0;   // features, superblock rows, weight columns
  Index rows = 0;              // valid rows of a
  Index n_chunks = 0;          // kChunk blocks in this superblock
  bool radial = true;           // translation invariant: a distance, centred packing
  Pairwise pairwise = Pairwise::squared;
  T* block = nullptr;          // scratch: kTileRows x kChunk (k = 1, matrices, wpack_f's values)
  T* dist = nullptr;           // scratch (k > 1): kSegmentChunks x kChunk x kTileRows distances
  T* root = nullptr;           // scratch (k > 1): their square roots
  double* kt = nullptr;        // scratch (k > 1): kChunk x kTileRows kernel values, 64-byte aligned
  double* partial = nullptr;   // scratch: one block of sums (below)
  // The tile's running sums (output, Neumaier-compensated by `comp`): for kernel j
  // (j < max(n_maps, 1)) a block of weight_stride(k) x kTileRows sums at
  // j * sums_stride, laid out by the level's PartialLayout (partial_offset).
  double* sum = nullptr;
  double* comp = nullptr;
  Index sums_stride = 0;
};

/// The kernels and bins of one tile's binned sums (TileEngine::run_bins): for the tile's
/// rows r (row0 + r < rows[j] when rows is given) and the superblock's rows i < qn with
/// bins[i] >= 0, outs[j][(row0 + r) * ld + bins[i]] += k_j(a_r, b_i).
struct BinTask {
  const ScaledKernel* maps = nullptr;  // n_kernels radial kernels: kind, packing / own bandwidth
  Index n_kernels = 0;
  const std::int64_t* bins = nullptr;  // the superblock's bins
  Index qn = 0;                        // valid rows of the superblock
  double* const* outs = nullptr;       // one row-major output per kernel
  const Index* rows = nullptr;         // per kernel: the rows of A it sums over (null: all)
  Index ld = 0, row0 = 0;
};

}  // namespace nystrom_kme::detail
