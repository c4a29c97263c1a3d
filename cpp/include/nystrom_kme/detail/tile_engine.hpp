// The blocked streaming engine behind every kernel sum and kernel matrix.
//
// Output side A (p x d) is cut into tiles of kTileRows rows, one task each;
// summed side B (q x d) is streamed in packed superblocks of ~1 MiB. Within a
// task, a kTileRows x kChunk block of kernel values is formed in L1 (register-
// tiled distances or inner products, then the kernel map) and immediately reduced
// against the weights. Nothing of size p x q is ever stored.
//
// This file packs and schedules; the arithmetic runs through the SIMD table of
// the active instruction-set level (detail/simd_select.hpp), one call per tile and superblock.
//
// Determinism: every output row is owned by one task at a time and summed in an
// order fixed by (d, q) alone, so results are bit-identical for any thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <nystrom_kme/detail/parallel.hpp>
#include <nystrom_kme/detail/simd_select.hpp>
#include <nystrom_kme/detail/tile_layout.hpp>
#include <nystrom_kme/kernels.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme::detail {

/// Weights made on the fly for consecutive rows of B (e.g. random permutation
/// labels), a panel of kWeightPanel columns at a time: never stored for all rows.
class WeightStream {
 public:
  virtual ~WeightStream() = default;
  /// Number of weight columns k (> 1).
  virtual Index columns() const = 0;
  /// Writes the next `rows` rows of panel `panel` (row-major, rows x kWeightPanel,
  /// columns past k left alone). Called concurrently for different panels.
  virtual void next_panel(Index panel, Index rows, double* out) = 0;
  /// Moves past `rows` rows once every panel of them has been written.
  virtual void advance(Index rows) = 0;
};

/// What the engine does with each block of kernel values.
enum class Mode { sums, matrix, bins };

/// Binned sums of several kernels (TileEngine::run_bins): outs[j] (p x n_bins, row-major)
/// += K_j(A, B) onehot(bins), bins[i] in [0, n_bins) or -1 (row i skipped). The engine's
/// own kernel sets the packing scale; maps[j] = kernel j's kind and the ratio of the
/// packing bandwidth to its own.
struct BinJob {
  std::vector<ScaledKernel> maps;
  const std::int64_t* bins = nullptr;  // one per row of B
  Index n_bins = 0;
  std::vector<double*> outs;
  std::vector<Index> rows;  // kernel j's sums over the first rows[j] rows of A only (empty: all)
};

/// A zero-filled float64 buffer whose data() is 64-byte aligned: the packed weights
/// and the tile's kernel values are read a cache line (an AVX-512 vector) at a time.
class AlignedBuffer {
 public:
  explicit AlignedBuffer(std::size_t n = 0) { resize(n); }
  void resize(std::size_t n) {
    storage_.assign(n + kAlign, 0.0);
    const auto address = reinterpret_cast<std::uintptr_t>(storage_.data());
    offset_ = ((kAlign * sizeof(double) - address % (kAlign * sizeof(double))) / sizeof(double)) % kAlign;
  }
  double* data() { return storage_.data() + offset_; }
  const double* data() const { return storage_.data() + offset_; }

 private:
  static constexpr std::size_t kAlign = 8;  // doubles per 64 bytes
  std::vector<double> storage_;
  std::size_t offset_ = 0;
};

/// The packing kernel of a pass over several radial kernels at `bandwidth`: the engine
/// reads only its distance (how a tile's pairs are computed) and its bandwidth (the
/// scale of the packed points), so it is the first kernel's kind there. Every kernel
/// must measure that distance: the l1 and the Euclidean kernels take separate passes.
/// @throws std::invalid_argument naming `who` and two kernels of different distances
inline Kernel packing_kernel(const std::vector<Kernel>& kernels, double bandwidth, const char* who) {
  const Kernel& first = kernels.front();
  for (const Kernel& k : kernels) {
    if (k.distance() != first.distance()) {
      throw std::invalid_argument(std::string(who) + ": " + first.name() + " and " + k.name() +
                                  " measure different distances: one call per distance");
    }
  }
  return Kernel(first.kind(), bandwidth, first.offset(), first.degree(), first.shape());
}

template <class T>
class TileEngine {
 public:
  TileEngine(const ConstRowRef<T>& A, const ConstRowRef<T>& B, const Kernel& kernel)
      : A_(A), B_(B), kernel_(kernel), d_(A.cols()) {
    if (A.cols() != B.cols()) {
      throw std::invalid_argument("dimension mismatch: " + std::to_string(A.cols()) +
                                  " features vs " + std::to_string(B.cols()));
    }
    if (d_ < 1) throw std::invalid_argument("points need at least one feature");
    radial_ = kernel.is_radial();
    pairwise_ = pairwise_of(kernel, d_);
    // Radial kernels are translation invariant: centring both sides on the mean
    // of A keeps the distance expansion from cancelling for data far from 0.
    // Both sides are packed as (x - centre) / bandwidth, in double then rounded
    // once: the kernel map then needs no 1 / bandwidth^2, which overflows for
    // bandwidths below 1e-154, and scaled distances stay in range for any data
    // that float64 holds (issue: "correct at the edges of floating point").
    center_.assign(std::size_t(d_), 0.0);
    scale_ = kernel.inv_bandwidth();
    if (radial_ && A.rows() > 0) {
      std::vector<double> mean(std::size_t(d_), 0.0);
      for (Index i = 0; i < A.rows(); ++i)
        for (Index k = 0; k < d_; ++k) mean[std::size_t(k)] += A(i, k);
      for (Index k = 0; k < d_; ++k) center_[std::size_t(k)] = mean[std::size_t(k)] / double(A.rows());
    }
  }

  /// S (p x k) = K(A, B) W, W (q x k); or, with Mode::matrix, out = K(A, B).
  /// float_reduction: float data and k > 1 only (else ignored), the values and weights of
  /// each kFloatRun rows of B multiplied and summed in float lanes (TileTask::wpack_f).
  template <Mode mode>
  void run(const WeightsRef* W, RowMatrixXd& out, int n_threads, bool float_reduction = false) const {
    run_impl<mode>(W, nullptr, &out, {}, n_threads, nullptr, float_reduction);
  }

  /// The binned sums of `job` (Mode::bins); every kernel must be radial, like the engine's.
  void run_bins(const BinJob& job, int n_threads) const {
    if (!radial_) throw std::invalid_argument("run_bins: binned sums need a radial packing kernel");
    for (const ScaledKernel& map : job.maps) {
      if (kind_distance(map.kind) != kernel_.distance()) {
        throw std::invalid_argument(std::string("run_bins: kernel ") + kind_name(map.kind) +
                                    " measures another distance than the packing kernel " + kernel_.name());
      }
    }
    run_impl<Mode::bins>(nullptr, nullptr, nullptr, {}, n_threads, &job);
  }

  /// S (p x k) += K(A, B) W with the rows of W taken from `stream` in order;
  /// float_reduction as in run (the streamed panels rounded to float).
  void run_streamed(WeightStream& stream, RowMatrixXd& out, int n_threads, bool float_reduction = false) const {
    if (stream.columns() < 2 || out.cols() != stream.columns() || out.rows() != A_.rows()) {
      throw std::invalid_argument("run_streamed: output and weight stream shapes differ");
    }
    run_impl<Mode::sums>(nullptr, &stream, &out, {}, n_threads, nullptr, float_reduction);
  }

  /// outs[j] (p x k) += K_j(A, B) W for every radial kernel j of `kernels`, the rows
  /// of W taken once from `stream`: one pass, the distances of each tile computed
  /// once in units of the engine kernel's bandwidth (the reference) and scaled per
  /// kernel. The caller checks that the kernels are radial and that (reference /
  /// bandwidth)^2 is a normal T.
  void run_streamed_multi(WeightStream& stream, const std::vector<Kernel>& kernels,
                          std::vector<RowMatrixXd>& outs, int n_threads) const {
    if (stream.columns() < 2 || kernels.empty() || outs.size() != kernels.size()) {
      throw std::invalid_argument("run_streamed_multi: no kernels or no weight columns");
    }
    for (const RowMatrixXd& out : outs) {
      if (out.cols() != stream.columns() || out.rows() != A_.rows()) {
        throw std::invalid_argument("run_streamed_multi: output and weight stream shapes differ");
      }
    }
    std::vector<ScaledKernel> maps;
    for (const Kernel& kernel : kernels) {
      if (!kernel.is_radial() || !radial_) throw std::invalid_argument("run_streamed_multi: radial kernels only");
      if (kernel.distance() != kernel_.distance()) {
        throw std::invalid_argument(std::string("run_streamed_multi: kernel ") + kernel.name() +
                                    " measures another distance than the packing kernel " + kernel_.name());
      }
      maps.push_back({kernel.kind(), kernel_.bandwidth() / kernel.bandwidth(), kernel.params()});
    }
    run_impl<Mode::sums>(nullptr, &stream, outs.data(), {&kernels, &maps}, n_threads);
  }

 private:
  // The kernels of a multi-kernel pass: the originals (for the pairwise path) and
  // their maps on the reference distances (for the tiles). Empty: the engine kernel.
  struct KernelSet {
    const std::vector<Kernel>* kernels = nullptr;
    const std::vector<ScaledKernel>* maps = nullptr;
    Index size() const { return maps ? Index(maps->size()) : 0; }
  };

  template <Mode mode>
  void run_impl(const WeightsRef* W, WeightStream* stream, RowMatrixXd* outs, KernelSet multi,
                int n_threads, const BinJob* bins = nullptr, bool float_reduction = false) const {
    const Index p = A_.rows(), q = B_.rows();
    const Index k = mode == Mode::sums ? outs[0].cols() : 0;
    float_reduction = float_reduction && std::is_same_v<T, float> && mode == Mode::sums && k > 1 && (W || stream) &&
                      multi.size() == 0;
    const Index n_outs = std::max<Index>(1, multi.size());
    if (p == 0 || q == 0) return;
    const SimdTable& table = simd_table();  // one level for the whole call
    const SimdOps<T>& ops = table.ops<T>();
    // Few rows of very wide data: the tiled path packs kChunk rows of B and
    // kTileRows rows of A per thread, far more memory than such inputs hold.
    const bool wide = double(d_) * double(kChunk) * double(sizeof(T)) > double(kWideBytes);
    if constexpr (mode != Mode::bins) {  // binned sums always take the tiled path
      if (wide && (q < kChunk || (p < kTileRows && !stream))) {
        run_pairwise<mode>(ops, W, stream, outs, multi, n_threads);
        return;
      }
    }
    const Index R = superblock_rows(d_, Index(sizeof(T)), k);
    const Index n_super = (q + R - 1) / R;
    const Index n_tiles = (p + kTileRows - 1) / kTileRows;
    // Each thread gets at least ~0.5 ms of work: a parallel region waits for all
    // its threads, and on a busy machine a woken thread waits for a time slice, so
    // tiny calls are faster on fewer threads (results do not depend on the count).
    const Index columns = mode == Mode::bins ? Index(bins->maps.size()) : std::max<Index>(k, 1) * n_outs;
    const double work = double(p) * double(q) * double(d_ + 8) * double(columns);
    const Index by_work = std::max<Index>(1, Index(work / kMinWorkPerThread));
    const int nt = int(std::min<Index>({Index(resolve_threads(n_threads)), n_tiles, by_work}));

    // Shared packed superblock of B: panels (centred), plus norms and weights.
    std::vector<T> bt(static_cast<std::size_t>(d_ * R));
    std::vector<T> bnorm(static_cast<std::size_t>(R));
    AlignedBuffer wpack(static_cast<std::size_t>(R * weight_stride(k)));
    std::vector<float> wpack_f(float_reduction ? static_cast<std::size_t>(R * weight_stride(k)) : 0);
    // Binned sums: all rows of the call are packed in the order of their bins (rows
    // skipped with bin -1 last), so the rows of one bin are neighbours across the
    // superblocks and the micro-kernel adds each run of them in registers before one
    // store: runs of ~q / n_bins rows, not ~R / n_bins as a sort per superblock gives.
    std::vector<Index> order;
    std::vector<std::int64_t> packed_bins;
    if (mode == Mode::bins) sort_by_bin(bins->bins, q, bins->n_bins, order, packed_bins);
    // The running sums of each tile across superblocks with their Neumaier
    // compensation, in the micro-kernels' layout (see TileTask::sum), so that
    // adding a segment's partial sums is one vector pass.
    const Index stride = weight_stride(k) * kTileRows;  // one tile's block of one output
    TileSums sums;
    if (mode == Mode::sums) sums = start_sums(n_outs, n_tiles, stride);

    // Every tile's packed rows, once for the call where they fit in kKeptTileBytes:
    // otherwise each tile repacks its rows for every superblock, a quarter of the row
    // sums' time at d = 768 (superblocks of 256 rows there).
    const bool keep_tiles = n_super > 1 && double(n_tiles) * double(kTileRows) * double(2 * d_ + 1) *
                                                   double(sizeof(T)) <= double(kKeptTileBytes);
    PackedTile kept;
    if (keep_tiles) kept = PackedTile(n_tiles, d_);
    std::vector<Scratch> scratch(static_cast<std::size_t>(nt));
    for (auto& s : scratch) {
      if (!keep_tiles) s.tile = PackedTile(1, d_);
      if (k <= 1 || float_reduction) s.block.assign(std::size_t(kTileRows * kChunk), T(0));
      if (mode == Mode::sums) {
        // k = 1: the fused path writes whole groups of rows; k > 1: whole tiles
        s.partial.resize(std::size_t(stride));
        if (k > 1) {
          s.kt.resize(std::size_t(kChunk * kTileRows));
          const Index segment = (multi.size() > 1 ? kSegmentChunks : 1) * kChunk * kTileRows;
          s.dist.assign(std::size_t(segment), T(0));
          s.root.assign(std::size_t(segment), T(0));
        }
      }
    }

    ErrorCapture errors;
    InterruptPoller poller;  // used by the calling thread (OpenMP thread 0) only
#if defined(NYSTROM_KME_WITH_OPENMP)
#pragma omp parallel num_threads(nt)
#endif
    {
      Scratch& s = scratch[std::size_t(thread_id())];
      if (mode == Mode::sums) {
#if defined(NYSTROM_KME_WITH_OPENMP)
#pragma omp for schedule(static)
#endif
        for (Index t = 0; t < n_tiles; ++t) load_sums(sums, outs, n_outs, n_tiles, stride, table.partial_layout, t);
      }
      if (keep_tiles) {
#if defined(NYSTROM_KME_WITH_OPENMP)
#pragma omp for schedule(static)
#endif
        for (Index t = 0; t < n_tiles; ++t) errors.run([&] { pack_tile(t, kept, t); });
      }
      for (Index sb = 0; sb < n_super; ++sb) {
        const Index q0 = sb * R, qn = std::min(R, q - q0);
        const Index n_chunks = (qn + kChunk - 1) / kChunk;
        // Packed in pieces of kPackPiece rows: wide data have superblocks of a single
        // chunk, which one thread packed while the others waited.
#if defined(NYSTROM_KME_WITH_OPENMP)
#pragma omp for schedule(static)
#endif
        for (Index piece = 0; piece < n_chunks * kPiecesPerChunk; ++piece) {
          errors.run([&] {
            pack_rows(W, stream ? 0 : k, q0, qn, piece * kPackPiece, (piece + 1) * kPackPiece, R, bt, bnorm, wpack,
                      float_reduction ? wpack_f.data() : nullptr, mode == Mode::bins ? order.data() + q0 : nullptr);
          });
        }
        if (stream) pack_stream(*stream, k, qn, n_chunks * kChunk, R, wpack, float_reduction ? wpack_f.data() : nullptr, errors);
#if defined(NYSTROM_KME_WITH_OPENMP)
#pragma omp for schedule(dynamic, 1)
#endif
        for (Index t = 0; t < n_tiles; ++t) {
          errors.run([&] {
            if (errors.failed()) return;  // an error or an interrupt: stop taking tiles
            if (thread_id() == 0) poller.poll();
            run_tile<mode>(ops, t, q0, qn, n_chunks, R, k, bt, bnorm, wpack,
                           float_reduction ? wpack_f.data() : nullptr, keep_tiles ? &kept : nullptr, s,
                           outs, sums, multi, bins,
                           mode == Mode::bins ? packed_bins.data() + q0 : nullptr);
          });
        }
      }
      if (mode == Mode::sums) {
#if defined(NYSTROM_KME_WITH_OPENMP)
#pragma omp for schedule(static)
#endif
        for (Index t = 0; t < n_tiles; ++t) store_sums(sums, outs, n_outs, n_tiles, stride, table.partial_layout, t);
      }
    }
    errors.rethrow();
  }

  struct TileSums {
    // [(output * n_tiles + tile) * stride + partial_offset(layout, k, col, row)]
    AlignedBuffer sum, comp;
  };

  // The running sums start at the outputs (sums are added to them), in the level's
  // layout; tile t's rows are loaded by load_sums and written back by store_sums (inside
  // the parallel region: with wide weights, p x k values each way).
  static TileSums start_sums(Index n_outs, Index n_tiles, Index stride) {
    TileSums sums;
    sums.sum.resize(std::size_t(n_outs * n_tiles * stride));
    sums.comp.resize(std::size_t(n_outs * n_tiles * stride));
    return sums;
  }

  static void load_sums(TileSums& sums, const RowMatrixXd* outs, Index n_outs, Index n_tiles, Index stride,
                        PartialLayout layout, Index t) {
    for (Index j = 0; j < n_outs; ++j) {
      const RowMatrixXd& out = outs[j];
      double* tile = sums.sum.data() + (j * n_tiles + t) * stride;
      for (Index i = t * kTileRows; i < std::min(out.rows(), (t + 1) * kTileRows); ++i)
        for (Index c = 0; c < out.cols(); ++c) tile[partial_offset(layout, out.cols(), c, i % kTileRows)] = out(i, c);
    }
  }

  static void store_sums(const TileSums& sums, RowMatrixXd* outs, Index n_outs, Index n_tiles, Index stride,
                         PartialLayout layout, Index t) {
    for (Index j = 0; j < n_outs; ++j) {
      RowMatrixXd& out = outs[j];
      const double* sum = sums.sum.data() + (j * n_tiles + t) * stride;
      const double* comp = sums.comp.data() + (j * n_tiles + t) * stride;
      for (Index i = t * kTileRows; i < std::min(out.rows(), (t + 1) * kTileRows); ++i) {
        for (Index c = 0; c < out.cols(); ++c) {
          const Index at = partial_offset(layout, out.cols(), c, i % kTileRows);
          out(i, c) = sum[at] + comp[at];
        }
      }
    }
  }

  /// The rows of n tiles as the micro-kernels read them (TileTask::a, at, anorm).
  struct PackedTile {
    PackedTile() = default;
    PackedTile(Index n, Index d)
        : d(d), a(std::size_t(n * kTileRows * d)), at(a.size()), anorm(std::size_t(n * kTileRows)) {}
    T* rows(Index i) { return a.data() + i * kTileRows * d; }
    T* transposed(Index i) { return at.data() + i * kTileRows * d; }
    T* norms(Index i) { return anorm.data() + i * kTileRows; }
    Index d = 0;
    std::vector<T> a, at, anorm;
  };

  struct Scratch {
    PackedTile tile;  // the task's tile, when the tiles are not kept for the call
    std::vector<T> block, dist, root;
    AlignedBuffer kt, partial;
  };

  /// order[0..q) = the rows sorted by bin (a counting sort: stable, bin -1 last) and
  /// packed_bins[i] = the bin of the row packed at slot i (-1 for skipped rows).
  static void sort_by_bin(const std::int64_t* bins, Index q, Index n_bins, std::vector<Index>& order,
                          std::vector<std::int64_t>& packed_bins) {
    // start[b + 1] counts bin b's rows, start[n_bins + 1] the skipped ones; then prefix sums
    std::vector<Index> start(static_cast<std::size_t>(n_bins + 2), 0);
    const auto slot = [&](std::int64_t bin) { return std::size_t(bin < 0 ? n_bins : bin); };
    for (Index i = 0; i < q; ++i) ++start[slot(bins[i]) + 1];
    for (std::size_t b = 1; b < start.size(); ++b) start[b] += start[b - 1];
    order.resize(static_cast<std::size_t>(q));
    packed_bins.resize(static_cast<std::size_t>(q));
    for (Index i = 0; i < q; ++i) {
      const Index at = start[slot(bins[i])]++;
      order[std::size_t(at)] = i;
      packed_bins[std::size_t(at)] = bins[i] < 0 ? -1 : bins[i];
    }
  }

  /// Packed slots begin .. end of the superblock at q0 (qn rows of B; slots past them zero).
  void pack_rows(const WeightsRef* W, Index k, Index q0, Index qn, Index begin, Index end, Index R,
                 std::vector<T>& bt, std::vector<T>& bnorm, AlignedBuffer& wpack, float* wpack_f,
                 const Index* order = nullptr) const {
    for (Index i = begin; i < end; ++i) {
      const bool valid = i < qn;
      const Index row = valid && order ? order[i] : q0 + i;  // order: rows of B, not offsets
      double norm = 0.0;
      for (Index f = 0; f < d_; ++f) {
        const T v = valid ? scaled(B_(row, f), f) : T(0);
        bt[std::size_t(panel_index<T>(i, f, d_))] = v;
        norm += double(v) * double(v);
      }
      bnorm[std::size_t(i)] = T(norm);
      if (k == 0) continue;
      // row i of each panel (weight_index; k = 1: the plain column), a plain copy: wide
      // weights (k ~ d at large d, the gradients' columns) are as many values as B's rows
      const double* w_row = valid && W ? W->data() + (q0 + i) * W->outerStride() : nullptr;
      for (Index c0 = 0; c0 < k; c0 += kWeightPanel) {
        const Index at = weight_index(i, c0, k, R), n = std::min(kWeightPanel, k - c0);
        if (wpack_f) {  // a float reduction reads the float panels alone
          for (Index c = 0; c < n; ++c) wpack_f[at + c] = !valid ? 0.0f : (w_row ? float(w_row[c0 + c]) : 1.0f);
          continue;
        }
        double* to = wpack.data() + at;
        for (Index c = 0; c < n; ++c) to[c] = !valid ? 0.0 : (w_row ? w_row[c0 + c] : 1.0);
      }
    }
  }

  /// (x - centre) / bandwidth for feature f, rounded once to T.
  /// @throws std::invalid_argument when it overflows T
  T scaled(T x, Index f) const {
    const T v = T((double(x) - center_[std::size_t(f)]) * scale_);
    if (!std::isfinite(v)) {
      throw std::invalid_argument("the data divided by the kernel's bandwidth overflows " +
                                  std::string(sizeof(T) == 4 ? "float32 (use float64 data or a "
                                                               "larger bandwidth)"
                                                             : "float64 (use a larger bandwidth)"));
    }
    return v;
  }

  // Streamed weights of one superblock, panel by panel (in parallel over panels;
  // called inside the parallel region). Padded rows get weight 0.
  static void pack_stream(WeightStream& stream, Index k, Index qn, Index padded, Index R,
                          AlignedBuffer& wpack, float* wpack_f, ErrorCapture& errors) {
    const Index n_panels = weight_stride(k) / kWeightPanel;
#if defined(NYSTROM_KME_WITH_OPENMP)
#pragma omp for schedule(static)
#endif
    for (Index panel = 0; panel < n_panels; ++panel) {
      double* out = wpack.data() + panel * R * kWeightPanel;
      std::fill(out, out + padded * kWeightPanel, 0.0);
      errors.run([&] { stream.next_panel(panel, qn, out); });
      if (wpack_f) {  // a float reduction reads the float panels (the same layout)
        float* to = wpack_f + panel * R * kWeightPanel;
        for (Index i = 0; i < padded * kWeightPanel; ++i) to[i] = float(out[i]);
      }
    }
#if defined(NYSTROM_KME_WITH_OPENMP)
#pragma omp single
#endif
    errors.run([&] { stream.advance(qn); });
  }

  /// Tile t of A into slot i of `to`: scaled rows, transposed, squared norms (rows past
  /// A's end zero).
  void pack_tile(Index t, PackedTile& to, Index i) const {
    const Index r0 = t * kTileRows, rows = std::min(kTileRows, A_.rows() - r0);
    T* a = to.rows(i);
    T* at = to.transposed(i);
    T* anorm = to.norms(i);
    for (Index r = 0; r < kTileRows; ++r) {
      double norm = 0.0;
      for (Index f = 0; f < d_; ++f) {
        const T v = r < rows ? scaled(A_(r0 + r, f), f) : T(0);
        a[r * d_ + f] = v;
        at[f * kTileRows + r] = v;
        norm += double(v) * double(v);
      }
      anorm[r] = T(norm);
    }
  }

  // Pair by pair, no packing: for few rows of very wide data. Each output row is
  // one task (direct differences of the scaled points, the kernel map, then the
  // weighted sum in float64 in row order of B).
  template <Mode mode>
  void run_pairwise(const SimdOps<T>& ops, const WeightsRef* W, WeightStream* stream, RowMatrixXd* outs,
                    KernelSet multi, int n_threads) const {
    const Index p = A_.rows(), q = B_.rows();
    const Index k = mode == Mode::sums ? outs[0].cols() : 0;
    RowMatrixXd Wd;  // streamed weights: few rows of B here (q < kChunk)
    if (stream) {
      Wd = RowMatrixXd::Zero(q, weight_stride(k));
      std::vector<double> panel(std::size_t(q * kWeightPanel));
      for (Index pnl = 0; pnl * kWeightPanel < k; ++pnl) {
        std::fill(panel.begin(), panel.end(), 0.0);
        stream->next_panel(pnl, q, panel.data());
        for (Index j = 0; j < q; ++j)
          for (Index c = 0; c < kWeightPanel; ++c) Wd(j, pnl * kWeightPanel + c) = panel[std::size_t(j * kWeightPanel + c)];
      }
      stream->advance(q);
    }
    const Index n_kernels = std::max<Index>(1, multi.size());
    parallel_tasks(p * n_kernels, n_threads, [&](Index task) {
      const Index i = task / n_kernels, j = task % n_kernels;
      const Kernel& kernel = multi.kernels ? (*multi.kernels)[std::size_t(j)] : kernel_;
      RowMatrixXd& out = outs[j];
      std::vector<double> kv(static_cast<std::size_t>(q));
      ops.kernel_rows(B_.data(), B_.outerStride(), d_, A_.row(i).data(), kernel, 0, q, kv.data());
      if constexpr (mode == Mode::matrix) {
        for (Index c = 0; c < q; ++c) out(i, c) = kv[std::size_t(c)];
      } else {
        for (Index c = 0; c < k; ++c) {
          double sum = 0.0;
          for (Index r = 0; r < q; ++r)
            sum += kv[std::size_t(r)] * (stream ? Wd(r, c) : W ? (*W)(r, c) : 1.0);
          out(i, c) += sum;
        }
      }
    });
  }

  template <Mode mode>
  void run_tile(const SimdOps<T>& ops, Index t, Index q0, Index qn, Index n_chunks, Index R,
                Index k, const std::vector<T>& bt, const std::vector<T>& bnorm,
                const AlignedBuffer& wpack, const float* wpack_f, PackedTile* kept, Scratch& s,
                RowMatrixXd* outs, TileSums& sums,
                KernelSet multi, const BinJob* bins, const std::int64_t* packed_bins) const {
    const Index r0 = t * kTileRows;
    const Index rows = std::min(kTileRows, A_.rows() - r0);
    PackedTile& tile = kept ? *kept : s.tile;
    const Index slot = kept ? t : 0;
    if (!kept) pack_tile(t, tile, 0);
    TileTask<T> task;
    task.a = tile.rows(slot);
    task.at = tile.transposed(slot);
    task.anorm = tile.norms(slot);
    task.bt = bt.data();
    task.bnorm = bnorm.data();
    task.wpack = wpack.data();
    task.wpack_f = wpack_f;
    task.kernel = &kernel_;
    task.maps = multi.maps ? multi.maps->data() : nullptr;
    task.n_maps = multi.size();
    task.d = d_;
    task.R = R;
    task.k = k;
    task.rows = rows;
    task.n_chunks = n_chunks;
    task.radial = radial_;
    task.pairwise = pairwise_;
    task.block = s.block.data();
    task.dist = s.dist.data();
    task.root = s.root.data();
    task.kt = s.kt.data();
    task.partial = s.partial.data();
    if constexpr (mode == Mode::matrix) {
      ops.tile_matrix(task, qn, outs[0].data() + r0 * outs[0].cols() + q0, outs[0].cols());
    } else if constexpr (mode == Mode::bins) {
      BinTask job;
      job.maps = bins->maps.data();
      job.n_kernels = Index(bins->maps.size());
      job.bins = packed_bins;  // the superblock's bins in packed order
      job.qn = qn;
      job.outs = bins->outs.data();
      job.rows = bins->rows.empty() ? nullptr : bins->rows.data();
      job.ld = bins->n_bins;
      job.row0 = r0;
      ops.tile_bins(task, job);
    } else {
      // Neumaier summation across superblocks keeps n = 1e6 sums at ~1e-16 relative.
      const Index stride = weight_stride(k) * kTileRows, n_tiles = (A_.rows() + kTileRows - 1) / kTileRows;
      task.sum = sums.sum.data() + t * stride;
      task.comp = sums.comp.data() + t * stride;
      task.sums_stride = n_tiles * stride;
      ops.tile_sums(task);
    }
  }

  const ConstRowRef<T>& A_;
  const ConstRowRef<T>& B_;
  const Kernel& kernel_;
  Index d_;
  bool radial_ = true;
  Pairwise pairwise_ = Pairwise::squared;
  std::vector<double> center_;
  double scale_ = 1.0;
};

}  // namespace nystrom_kme::detail
