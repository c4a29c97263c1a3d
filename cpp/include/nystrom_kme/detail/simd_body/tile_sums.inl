// The running sums of a tile for one instruction-set level (tile_sums): Neumaier
// compensation of each superblock's partial sums, and with k > 1 weight columns the
// multi-column reduction, a register-blocked GEMM on a transposed block of kernel
// values against packed weight panels, for one kernel or several; and the binned sums
// of several kernels (tile_bins).
//
// Included once per level by detail/simd_dispatch.hpp (through level.inl), after
// tile_kernels.inl, in the same namespace and target region. No include guard, on purpose.

// ---------------------------------------------------------------- k > 1 weight columns
//
// A tile's kernel values against a chunk are formed transposed, kt[i * kTileRows + r]
// (float64, L1-resident), so that one row i of B gives the values of all tile rows
// side by side; the reduction is then a packed GEMM in the manner of BLIS/OpenBLAS,
// each loaded value used across a whole row or column of a register block:
// - AVX-512 (32 registers): 2 vectors of tile rows (all 16) x 8 weight columns
//   broadcast from the panel, 16 accumulators, as BLIS's skx kernel (16 x 14) keeps
//   the rows in vectors; the 8 columns of a panel row are one cache line.
// - other levels (16 registers): the panel's 8 columns as vectors x 6, 5 and 5 tile
//   rows broadcast (12 or 10 accumulators of 4 doubles at AVX2), as BLIS's haswell
//   kernel (6 x 8); 2-row groups at the 2-lane levels.
// Measured on one core, k = 201 (bench/RESULTS.md, "The permuted sums at BLAS
// speed"): AVX-512 2 x 8 at the rate of 2 x 12 and 2 x 14 in L1, and 3% faster with
// panels of 8 than of 16 columns; AVX2 6/5/5 x 8 15% above 2 vectors x 4 columns.
// A float reduction (TileTask::wpack_f) runs the same blocks on float values and
// weights, twice the lanes per vector, each register block's sums of kFloatRun rows
// widened and added to the float64 partial sums.

#if defined(__clang__)
#define NYSTROM_KME_UNROLL _Pragma("unroll")
#else
#define NYSTROM_KME_UNROLL _Pragma("GCC unroll 16")
#endif

/// o[0 .. lanes of v) += v in float64 (float lanes widened in registers).
inline void add_into(double* o, Vec<double>::type v) { store(o, load(o) + v); }
inline void add_into(double* o, Vec<float>::type v) {
  constexpr int LD = Vec<double>::lanes;
  store(o, load(o) + widen_half<0>(v));
  store(o + LD, load(o + LD) + widen_half<1>(v));
}

/// Rows of B per call of a register block: the whole chunk in float64, kFloatRun in float.
template <class T>
constexpr Index kReductionRun = std::is_same_v<T, float> ? kFloatRun : kChunk;
static_assert(kChunk % kFloatRun == 0, "whole float runs per chunk");

#if defined(NYSTROM_KME_SIMD_AVX512)

constexpr PartialLayout kPartialLayout = PartialLayout::rows_in_lanes;
constexpr int kGemmRowVectors = 2;
constexpr int kGemmCols = 8;
static_assert(kWeightPanel % kGemmCols == 0, "a register block must not straddle two panels");
static_assert(kTileRows % (kGemmRowVectors * Vec<double>::lanes) == 0, "tile rows in whole blocks");

/// out (NR columns of kTileRows) += kt^T w over n rows: the register block at
/// kt (row stride kTileRows) and w (row stride kWeightPanel), T float64 or float (one
/// vector of float lanes holds the block's rows). Each out entry gets one sum over i
/// ascending, the same for any caller.
template <class T, int NR>
inline void gemm_block(const T* kt, const T* w, Index n, double* out) {
  using V = vec_t<T>;
  constexpr int L = Vec<T>::lanes;
  constexpr int MR = kGemmRowVectors * Vec<double>::lanes / L;
  // Float: one vector holds the block's rows, so NR accumulators alone are too few
  // chains to cover the FMA latency; rows i of even and odd parity go to two sets.
  constexpr int S = MR == 1 ? 2 : 1;
  V acc[S][NR][MR];
  NYSTROM_KME_UNROLL
  for (int s = 0; s < S; ++s) {
    NYSTROM_KME_UNROLL
    for (int c = 0; c < NR; ++c) {
      NYSTROM_KME_UNROLL
      for (int h = 0; h < MR; ++h) acc[s][c][h] = V{};
    }
  }
  for (Index i = 0; i < n; i += S) {
    NYSTROM_KME_UNROLL
    for (int s = 0; s < S; ++s) {
      V kv[MR];
      NYSTROM_KME_UNROLL
      for (int h = 0; h < MR; ++h) kv[h] = load(kt + (i + s) * kTileRows + h * L);
      NYSTROM_KME_UNROLL
      for (int c = 0; c < NR; ++c) {
        const T wc = w[(i + s) * kWeightPanel + c];
        NYSTROM_KME_UNROLL
        for (int h = 0; h < MR; ++h) acc[s][c][h] += kv[h] * wc;
      }
    }
  }
  NYSTROM_KME_UNROLL
  for (int c = 0; c < NR; ++c) {
    NYSTROM_KME_UNROLL
    for (int h = 0; h < MR; ++h) {
      V total = acc[0][c][h];
      NYSTROM_KME_UNROLL
      for (int s = 1; s < S; ++s) total += acc[s][c][h];
      add_into(out + c * kTileRows + h * L, total);
    }
  }
}

template <class T, int NR = kGemmCols>
inline void gemm_block_cols(int cols, const T* kt, const T* w, Index n, double* out) {
  if constexpr (NR > 0) {
    if (cols == NR) return gemm_block<T, NR>(kt, w, n, out);
    gemm_block_cols<T, NR - 1>(cols, kt, w, n, out);
  }
}

/// partial (see partial_offset) += kt^T W over one chunk, for the k weight columns
/// packed at w (the chunk's first row of panel 0; panels R rows apart) and the first
/// `rows` tile rows (in whole register blocks); kReductionRun<T> rows of the chunk at a time.
template <class T>
inline void reduce_panels(const T* kt, const T* w, Index R, Index k, Index rows, double* partial) {
  constexpr Index block_rows = kGemmRowVectors * Vec<double>::lanes;
  constexpr Index run = kReductionRun<T>;
  const Index row_end = ((rows + block_rows - 1) / block_rows) * block_rows;
  for (Index panel = 0; panel * kWeightPanel < k; ++panel) {
    const T* wp = w + panel * R * kWeightPanel;
    const Index cols = std::min(kWeightPanel, k - panel * kWeightPanel);
    for (Index c0 = 0; c0 < cols; c0 += kGemmCols) {
      const int nr = int(std::min<Index>(kGemmCols, cols - c0));
      double* out = partial + (panel * kWeightPanel + c0) * kTileRows;
      for (Index r0 = 0; r0 < row_end; r0 += block_rows)
        for (Index i0 = 0; i0 < kChunk; i0 += run)
          gemm_block_cols<T>(nr, kt + i0 * kTileRows + r0, wp + i0 * kWeightPanel + c0, run, out + r0);
    }
  }
}

#else  // 16 vector registers (or 2 lanes)

constexpr PartialLayout kPartialLayout = PartialLayout::columns_in_lanes;
template <class T>
constexpr int kPanelVectors = int(kWeightPanel) / Vec<T>::lanes;
static_assert(kPanelVectors<float> * Vec<float>::lanes == int(kWeightPanel), "whole vectors per panel row");
#if defined(NYSTROM_KME_SIMD_AVX2) || defined(NYSTROM_KME_SIMD_NEON)
constexpr int kRowGroups[] = {6, 5, 5};
#else
constexpr int kRowGroups[] = {2, 2, 2, 2, 2, 2, 2, 2};
#endif

/// out (MR rows x NV vectors of columns, row stride kWeightPanel) += kt^T w over n
/// rows, for tile rows kt[i * kTileRows + r], r < MR, and weights w (row stride
/// kWeightPanel), T float64 or float. Each out entry gets one sum over i ascending.
template <class T, int MR, int NV>
inline void gemm_rows(const T* kt, const T* w, Index n, double* out) {
  using V = vec_t<T>;
  constexpr int L = Vec<T>::lanes;
  V acc[MR][NV];
  NYSTROM_KME_UNROLL
  for (int r = 0; r < MR; ++r) {
    NYSTROM_KME_UNROLL
    for (int v = 0; v < NV; ++v) acc[r][v] = V{};
  }
  for (Index i = 0; i < n; ++i) {
    V wv[NV];
    NYSTROM_KME_UNROLL
    for (int v = 0; v < NV; ++v) wv[v] = load(w + i * kWeightPanel + v * L);
    NYSTROM_KME_UNROLL
    for (int r = 0; r < MR; ++r) {
      const T kr = kt[i * kTileRows + r];
      NYSTROM_KME_UNROLL
      for (int v = 0; v < NV; ++v) acc[r][v] += wv[v] * kr;
    }
  }
  NYSTROM_KME_UNROLL
  for (int r = 0; r < MR; ++r) {
    NYSTROM_KME_UNROLL
    for (int v = 0; v < NV; ++v) add_into(out + r * kWeightPanel + v * L, acc[r][v]);
  }
}

template <class T, int MR, int NV = kPanelVectors<T>>
inline void gemm_rows_vectors(int vectors, const T* kt, const T* w, Index n, double* out) {
  if constexpr (NV > 0) {
    if (vectors == NV) return gemm_rows<T, MR, NV>(kt, w, n, out);
    gemm_rows_vectors<T, MR, NV - 1>(vectors, kt, w, n, out);
  }
}

template <class T, std::size_t G = 0>
inline void gemm_row_groups(Index rows, int vectors, const T* kt, const T* w, Index n, double* out,
                            Index r0 = 0) {
  if constexpr (G < sizeof(kRowGroups) / sizeof(kRowGroups[0])) {
    if (r0 >= rows) return;
    gemm_rows_vectors<T, kRowGroups[G]>(vectors, kt + r0, w, n, out + r0 * kWeightPanel);
    gemm_row_groups<T, G + 1>(rows, vectors, kt, w, n, out, r0 + kRowGroups[G]);
  }
}

/// partial (see partial_offset) += kt^T W over one chunk, for the k weight columns
/// packed at w (the chunk's first row of panel 0; panels R rows apart) and the first
/// `rows` tile rows (in whole row groups); kReductionRun<T> rows of the chunk at a time.
template <class T>
inline void reduce_panels(const T* kt, const T* w, Index R, Index k, Index rows, double* partial) {
  constexpr int L = Vec<T>::lanes;
  constexpr Index run = kReductionRun<T>;
  for (Index panel = 0; panel * kWeightPanel < k; ++panel) {
    const Index cols = std::min(kWeightPanel, k - panel * kWeightPanel);
    for (Index i0 = 0; i0 < kChunk; i0 += run) {
      gemm_row_groups<T>(rows, int((cols + L - 1) / L), kt + i0 * kTileRows,
                         w + panel * R * kWeightPanel + i0 * kWeightPanel, run,
                         partial + panel * kWeightPanel * kTileRows);
    }
  }
}

#endif

/// Writes one vector of T into p: float64 (two vectors for float), or T itself.
inline void store_into(double* p, Vec<double>::type v) { store(p, v); }
inline void store_into(float* p, Vec<float>::type v) { store(p, v); }
inline void store_into(double* p, Vec<float>::type v) {
  store(p, widen_half<0>(v));
  store(p + Vec<double>::lanes, widen_half<1>(v));
}

/// The tile's squared distances (squared: sum (a-b)^2; product and radial: the centred
/// expansion, re-done exactly where it cancels), l1 distances or inner products (not
/// radial) against kChunk packed columns, tile rows in vector lanes: sink(j * kTileRows
/// + h * L, v) gets rows h * L .. h * L + L - 1 of column j. Per pair, the same
/// operations in the same order as panel_products and expand_distances: the same values.
template <class T, Pairwise Mode, class Sink>
inline void distance_block(const TileTask<T>& t, const T* bt, const T* bnorm, Sink&& sink) {
  using V = vec_t<T>;
  using I = typename Vec<T>::itype;
  constexpr int L = Vec<T>::lanes;
  constexpr int RV = int(kTileRows) / L;    // vectors per column of the tile
  constexpr int NJ = RV >= 8 ? 1 : 8 / RV;  // columns per step: 8 accumulators
  constexpr Index P = kPanelCols<T>;
  static_assert(P % NJ == 0, "a step must not straddle two panels");
  const Index d = t.d;
  const bool expansion = Mode == Pairwise::product && t.radial;
  V an[RV];
  for (int h = 0; h < RV; ++h) an[h] = load(t.anorm + h * L);
  for (Index j = 0; j < kChunk; j += NJ) {
    const T* col = bt + (j / P) * d * P + j % P;
    V acc[NJ][RV];
    NYSTROM_KME_UNROLL
    for (int u = 0; u < NJ; ++u) {
      NYSTROM_KME_UNROLL
      for (int h = 0; h < RV; ++h) acc[u][h] = V{};
    }
    for (Index f = 0; f < d; ++f) {
      V av[RV];
      NYSTROM_KME_UNROLL
      for (int h = 0; h < RV; ++h) av[h] = load(t.at + f * kTileRows + h * L);
      NYSTROM_KME_UNROLL
      for (int u = 0; u < NJ; ++u) {
        const T b = col[f * P + u];
        NYSTROM_KME_UNROLL
        for (int h = 0; h < RV; ++h) {
          if constexpr (Mode == Pairwise::squared) {
            const V e = av[h] - b;
            acc[u][h] += e * e;
          } else if constexpr (Mode == Pairwise::l1) {
            acc[u][h] += vabs<T>(av[h] - b);
          } else {
            acc[u][h] += av[h] * b;
          }
        }
      }
    }
    for (int u = 0; u < NJ; ++u) {
      for (int h = 0; h < RV; ++h) {
        V v = acc[u][h];
        if (expansion) {
          const V sum = an[h] + bnorm[j + u];
          const V d2 = vmax<T>(sum - v * T(2), splat(T(0)));
          const I lost = (I)(d2 < sum * T(kCancellation));
          v = d2;
          if (any_lane<T>(lost)) {  // rare: near-duplicate points
            for (int l = 0; l < L; ++l)
              if (lost[l]) v[l] = exact_sq_distance(t.a + (h * L + l) * d, panel_column(bt, j + u, d), d);
          }
        }
        sink((j + u) * kTileRows + h * L, v);
      }
    }
  }
}

template <class T, class Sink>
inline void distance_block(const TileTask<T>& t, const T* bt, const T* bnorm, Sink&& sink) {
  switch (t.pairwise) {
    case Pairwise::squared:
      return distance_block<T, Pairwise::squared>(t, bt, bnorm, sink);
    case Pairwise::l1:
      return distance_block<T, Pairwise::l1>(t, bt, bnorm, sink);
    case Pairwise::product:
      return distance_block<T, Pairwise::product>(t, bt, bnorm, sink);
  }
}

/// kt = kernel values of one radial kernel from the distances d2 of points scaled by
/// the reference bandwidth (squared, or l1 for the l1 kernels) and the square roots r =
/// sqrt(min(d2, far)) (shared by the kernels that need them): the values of kernel_map
/// for ratio 1 (kernel_formulas.inl), with the kind's switch out of the loop; kt in
/// float64, or in T itself (the binned sums of float32 data).
/// Flattened: GCC otherwise calls exp out of line, 2x slower on this loop.
template <class T, class Out = double>
__attribute__((flatten)) void map_scaled(const ScaledKernel& map, const T* d2, const T* r, Out* kt) {
  using M = SimdMath<T>;
  constexpr int L = Vec<T>::lanes;
  constexpr Index n = kChunk * kTileRows;
  const double ratio = map.ratio;
  visit_kind(
      map.kind,
      [&](auto tag) {
        using F = typename decltype(tag)::formula;
        if constexpr (F::family == Family::exponential) {
          const T* v = F::root ? r : d2;
          const double scale = (F::root || F::distance == Distance::l1 ? ratio : ratio * ratio) * F::rate;
          if constexpr (std::is_same_v<T, float>) {
            // in base 2 (exp2 needs no Cody-Waite reduction and a shorter polynomial):
            // two Gaussians' float sums 1.1x faster (test_bin_sums: 2e-6 of long double)
            const T c = T(scale * kLog2e);
            for (Index i = 0; i < n; i += L) store_into(kt + i, exponential_of_q<M, F>(load(v + i) * c));
          } else {
            const T c = T(scale);
            for (Index i = 0; i < n; i += L) store_into(kt + i, exponential_of_t<M, F>(load(v + i) * c));
          }
        } else if constexpr (F::family == Family::power) {
          const T c = T(ratio * ratio * F::scale(map.params));
          for (Index i = 0; i < n; i += L) {
            store_into(kt + i, F::template of_scaled<M>(load(d2 + i) * c, map.params));
          }
        }
        // dot-product kernels are never scaled: the caller maps them as computed
      },
      [] {});
}

/// Whether a kind's map reads the square roots of the squared distances.
inline bool needs_root(KernelKind kind) {
  return visit_kind(
      kind,
      [](auto tag) {
        using F = typename decltype(tag)::formula;
        if constexpr (F::family == Family::exponential) {
          return F::root;
        } else {
          return false;
        }
      },
      [] { return false; });
}

/// values[s..e) summed in a fixed order (two vectors of lane-wise partial sums, the
/// last e - s mod lanes values in a masked vector, then the lanes by lane_sum in
/// float64): the order depends on s and e only, so the bits do not depend on the thread
/// count. Float values (a run of at most kChunk: at most kChunk / (2 lanes) + 1 of them per
/// lane) are summed in float lanes, each lane's rounding at most a few float ulps of the
/// run, below the float kernel values' own. A run of one bin is one row's values between
/// two bin boundaries: the lanes' reduction comes once per run and row, so it must not be
/// a chain of scalar additions (measured: 13% of the binned sums at 200 rows per bin).
/// values[e, e + lanes) must be readable (their values are not used).
template <class T>
inline double run_sum(const T* values, Index s, Index e) {
  using V = vec_t<T>;
  constexpr int L = Vec<T>::lanes;
  V acc0 = V{}, acc1 = V{};
  Index i = s;
  for (; i + 2 * L <= e; i += 2 * L) {
    acc0 += load(values + i);
    acc1 += load(values + i + L);
  }
  if (i + L <= e) {
    acc0 += load(values + i);
    i += L;
  }
  if (i < e) {  // values[i, i + L) is readable (the caller pads its buffer); lanes from e on count 0
    const V v = load(values + i);
    acc1 += lane_index<T>() < T(e - i) ? v : V{};
  }
  return lane_sum(acc0 + acc1);
}

/// One tile against one superblock, for several radial kernels at once: for each kernel j,
/// outs[j](row0 + r, bins[i]) += k_j(a_r, b_i) over the superblock's rows i < qn with
/// bins[i] >= 0. The squared distances (in units of the packing bandwidth) and, when a
/// kernel needs them, their square roots are computed once per chunk; each kernel maps
/// them with its ratio (map_scaled, the kind's switch out of the loop). The rows come
/// sorted by bin (TileEngine packs all rows of the call so), so the chunk's runs of one
/// bin are found once and each run of each row is summed in vector registers (in T: float
/// data's values stay float until a run's lanes are added) and added to its output once.
template <class T>
void tile_bins(const TileTask<T>& t, const BinTask& job) {
  using V = vec_t<T>;
  constexpr int L = Vec<T>::lanes;
  constexpr Index n = kChunk * kTileRows;
  const Index groups = (t.rows + kGroupRows - 1) / kGroupRows;
  alignas(64) T root[n];
  alignas(64) T values[n + L];  // run_sum's last vector may read past a row: padded
  store(values + n, V{});
  Index run_start[kChunk + 1];
  std::int64_t run_bin[kChunk];
  bool any_root = false;
  for (Index j = 0; j < job.n_kernels; ++j) any_root = any_root || needs_root(job.maps[j].kind);
  const V far = splat(SimdMath<T>::far_v);
  for (Index c = 0; c < t.n_chunks; ++c) {
    const Index c0 = c * kChunk;
    kernel_block(t, t.bt + c0 * t.d, t.bnorm + c0, groups, t.block, false);
    if (any_root) {
      for (Index i = 0; i < n; i += L) store(root + i, sqrt(vmin<T>(load(t.block + i), far)));
    }
    const Index cols = std::min(kChunk, job.qn - c0);
    const std::int64_t* bins = job.bins + c0;
    // The chunk's runs of one bin, the same for every row and kernel (skipped rows,
    // bin -1, come last and end the runs).
    Index n_runs = 0, i = 0;
    while (i < cols && bins[i] >= 0) {
      run_start[n_runs] = i;
      run_bin[n_runs] = bins[i];
      while (i < cols && bins[i] == run_bin[n_runs]) ++i;
      ++n_runs;
    }
    run_start[n_runs] = i;
    for (Index j = 0; j < job.n_kernels; ++j) {
      const Index rows = job.rows ? std::min(t.rows, job.rows[j] - job.row0) : t.rows;
      if (rows <= 0) continue;  // a kernel of fewer rows of A (nested landmark sets)
      map_scaled<T>(job.maps[j], t.block, root, values);
      for (Index r = 0; r < rows; ++r) {
        const T* row = values + r * kChunk;
        double* out = job.outs[j] + (job.row0 + r) * job.ld;
        for (Index u = 0; u < n_runs; ++u) out[run_bin[u]] += run_sum(row, run_start[u], run_start[u + 1]);
      }
    }
  }
}

/// Neumaier's compensated sum, element by element: sum[i] += x[i], with the rounding
/// error of that addition added to comp[i] (the same operations as the scalar rule
/// comp += |s| >= |x| ? (s - t) + x : (x - t) + s, t = s + x). n: a multiple of
/// kTileRows (whole blocks of a tile's sums), hence of the vector lanes.
inline void compensated_add(double* sum, double* comp, const double* x, Index n) {
  using VD = Vec<double>::type;
  constexpr int LD = Vec<double>::lanes;
  static_assert(kTileRows % LD == 0, "whole vectors per block");
  for (Index i = 0; i < n; i += LD) {
    const VD s = load(sum + i), v = load(x + i), total = s + v;
    const VD s_abs = s < 0.0 ? -s : s, v_abs = v < 0.0 ? -v : v;
    const VD error = s_abs >= v_abs ? (s - total) + v : (v - total) + s;
    store(comp + i, load(comp + i) + error);
    store(sum + i, total);
  }
}

/// One tile's partial sums of kernel j (n values, computed into t.partial by
/// `compute`) added to its running sums.
template <class T, class Compute>
inline void sums_of_kernel(const TileTask<T>& t, Index j, Index n, Compute&& compute) {
  std::fill(t.partial, t.partial + n, 0.0);
  compute();
  compensated_add(t.sum + j * t.sums_stride, t.comp + j * t.sums_stride, t.partial, n);
}

/// k > 1: the running sums of the tile (see TileTask) += K_j(a, B_superblock) W, a
/// segment of kSegmentChunks chunks at a time: the transposed distances, the kernel
/// values of each kernel, then the packed GEMM. A single radial kernel is the map of
/// ratio 1 (the same values as kernel_map: the map loops keep the kind's switch out
/// of the loop and exp inlined), computed chunk by chunk; several kernels share each
/// segment's distances (and their square roots), then take it kernel by kernel so
/// that one kernel's partial sums stay in L1 through the segment.
template <class T>
void tile_sums_multi_column(const TileTask<T>& t) {
  using V = vec_t<T>;
  constexpr int L = Vec<T>::lanes;
  constexpr Index chunk_values = kChunk * kTileRows;
  const Index d = t.d, block = weight_stride(t.k) * kTileRows;
  const ScaledKernel single{t.kernel->kind(), 1.0, t.kernel->params()};
  const ScaledKernel* maps = t.n_maps > 0 ? t.maps : &single;
  const Index n_maps = std::max<Index>(t.n_maps, 1);
  bool root = false;
  for (Index j = 0; j < n_maps; ++j) root = root || needs_root(maps[j].kind);
  const V far = splat(SimdMath<T>::far_v);
  auto distances = [&](Index c, T* dist, T* rt) {  // chunk c, mapped later
    distance_block(t, t.bt + c * kChunk * d, t.bnorm + c * kChunk, [&](Index off, V v) { store(dist + off, v); });
    if (root) {
      for (Index i = 0; i < chunk_values; i += L) store(rt + i, sqrt(vmin<T>(load(dist + i), far)));
    }
  };
  for (Index c0 = 0; c0 < t.n_chunks; c0 += kSegmentChunks) {
    const Index c1 = std::min(t.n_chunks, c0 + kSegmentChunks);
    if (!t.radial) {  // dot-product kernels: one kernel, mapped as computed
      const Kernel& kernel = *t.kernel;
      sums_of_kernel(t, 0, block, [&] {
        for (Index c = c0; c < c1; ++c) {
          distance_block(t, t.bt + c * kChunk * d, t.bnorm + c * kChunk,
                         [&](Index off, V v) { store_into(t.kt + off, kernel_map<T>(kernel, v)); });
          reduce_panels(t.kt, t.wpack + c * kChunk * kWeightPanel, t.R, t.k, t.rows, t.partial);
        }
      });
    } else if (n_maps == 1) {
      sums_of_kernel(t, 0, block, [&] {
        for (Index c = c0; c < c1; ++c) {
          distances(c, t.dist, t.root);
          if constexpr (std::is_same_v<T, float>) {
            if (t.wpack_f) {  // a float reduction: the values stay float
              map_scaled<T, T>(maps[0], t.dist, t.root, t.block);
              reduce_panels(t.block, t.wpack_f + c * kChunk * kWeightPanel, t.R, t.k, t.rows, t.partial);
              continue;
            }
          }
          map_scaled<T>(maps[0], t.dist, t.root, t.kt);
          reduce_panels(t.kt, t.wpack + c * kChunk * kWeightPanel, t.R, t.k, t.rows, t.partial);
        }
      });
    } else {
      for (Index c = c0; c < c1; ++c) distances(c, t.dist + (c - c0) * chunk_values, t.root + (c - c0) * chunk_values);
      for (Index j = 0; j < n_maps; ++j) {
        sums_of_kernel(t, j, block, [&] {
          for (Index c = c0; c < c1; ++c) {
            map_scaled<T>(maps[j], t.dist + (c - c0) * chunk_values, t.root + (c - c0) * chunk_values, t.kt);
            reduce_panels(t.kt, t.wpack + c * kChunk * kWeightPanel, t.R, t.k, t.rows, t.partial);
          }
        });
      }
    }
  }
}

/// One tile against one superblock: the tile's running sums (see TileTask) +=
/// K(a, B_superblock) W.
template <class T>
void tile_sums(const TileTask<T>& t) {
  if (t.k > 1) return tile_sums_multi_column(t);
  const Index groups = (t.rows + kGroupRows - 1) / kGroupRows;
  const Index d = t.d;
  sums_of_kernel(t, 0, kTileRows, [&] {
    for (Index c = 0; c < t.n_chunks; ++c) {
      const Index c0 = c * kChunk;
      const T* bt = t.bt + c0 * d;
      const T* bnorm = t.bnorm + c0;
      // float: converting each register to float64 for the fused reduction costs
      // more than one pass over the L1-resident block (measured 10-15%).
      if constexpr (std::is_same_v<T, double>) {
        for (Index g = 0; g < groups; ++g) {
          const Index off = g * kGroupRows;
          auto fused = t.pairwise == Pairwise::squared ? fused_group_sums<T, Pairwise::squared>
                       : t.pairwise == Pairwise::l1    ? fused_group_sums<T, Pairwise::l1>
                                                       : fused_group_sums<T, Pairwise::product>;
          fused(t.a + off * d, t.anorm + off, bt, bnorm, d, t.wpack + c0, *t.kernel, t.radial,
                t.partial + off);
        }
      } else {
        kernel_block(t, bt, bnorm, groups, t.block);
        reduce_block(t, t.block, t.wpack + c0);
      }
    }
  });
}
