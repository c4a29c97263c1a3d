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
constexpr Index kDirectMaxDim = 32;  // radial kernels below this d use sum (a-b)^2 directly
constexpr Index kPackBytes = 1024 * 1024;  // packed block of B, shared by all threads
// Above this many bytes for one chunk of rows (kChunk x d), inputs with fewer rows
// than a chunk or a tile are summed pair by pair instead (d > 8192 in float64).
constexpr Index kWideBytes = 16 * 1024 * 1024;
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

constexpr Index kWeightPanel = 16;  // weight columns per register panel (k > 1)

// Packed weights: one plain column for k = 1; for k > 1 panels of kWeightPanel
// columns, each R x kWeightPanel contiguous and zero-padded past column k.
inline Index weight_stride(Index k) {
  return k <= 1 ? 1 : ((k + kWeightPanel - 1) / kWeightPanel) * kWeightPanel;
}
inline Index weight_index(Index row, Index col, Index k, Index R) {
  if (k <= 1) return row;
  return ((col / kWeightPanel) * R + row) * kWeightPanel + col % kWeightPanel;
}

constexpr Index kWeightPackBytes = 4 * 1024 * 1024;  // packed weights of a superblock (k > 1)

/// Rows of B per packed superblock: ~kPackBytes of B, a multiple of kChunk. With
/// k > 1 weight columns, also at most ~kWeightPackBytes of packed weights: every
/// tile sweeps the whole superblock, whose weights must stay in cache for the next
/// tile (k = 201 with 16k-row superblocks streamed 27 MB from memory per tile).
/// Measured at k = 201, d = 5: 256 KB superblocks lose to per-superblock costs,
/// 4 MB (L3) reach 2.4x the speed of 27 MB.
inline Index superblock_rows(Index d, Index elem_bytes, Index k = 1) {
  Index r = kPackBytes / (d * elem_bytes);
  if (k > 1) r = std::min<Index>(r, kWeightPackBytes / (weight_stride(k) * Index(sizeof(double))));
  r = std::max<Index>(kChunk, (r / kChunk) * kChunk);
  return std::min<Index>(r, 64 * kChunk);
}

/// One tile of kTileRows rows of A against one packed superblock of B.
template <class T>
struct TileTask {
  const T* a = nullptr;        // kTileRows x d, centred, rows past `rows` zero
  const T* anorm = nullptr;    // kTileRows squared norms of a
  const T* bt = nullptr;       // packed superblock (panels), first chunk
  const T* bnorm = nullptr;    // squared norms of the packed rows
  const double* wpack = nullptr;  // packed weights of the superblock (k > 0)
  const Kernel* kernel = nullptr;
  Index d = 0, R = 0, k = 0;   // features, superblock rows, weight columns
  Index rows = 0;              // valid rows of a
  Index n_chunks = 0;          // kChunk blocks in this superblock
  bool radial = true, direct = true;
  T* block = nullptr;          // scratch: kTileRows x kChunk
  double* block_f64 = nullptr; // scratch for float with k > 1: kTileRows x kChunk
  double* partial = nullptr;   // output: rows x k sums (accumulated into)
};

/// The kernels and bins of one tile's binned sums (TileEngine::run_bins): for the tile's
/// rows r and the superblock's rows i < qn with bins[i] >= 0,
/// outs[j][(row0 + r) * ld + bins[i]] += k_j(a_r, b_i).
struct BinTask {
  const Kernel* kernels = nullptr;  // n_kernels radial kernels
  const double* scales = nullptr;   // (packing bandwidth / kernel j's bandwidth)^2
  Index n_kernels = 0;
  const std::int64_t* bins = nullptr;  // the superblock's bins
  Index qn = 0;                        // valid rows of the superblock
  double* const* outs = nullptr;       // one row-major output per kernel
  Index ld = 0, row0 = 0;
};

}  // namespace nystrom_kme::detail
