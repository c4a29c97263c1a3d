// The hot loops of the tile engine for one instruction-set level, single column and
// kernel matrices: register-tiled distances or inner products, the fused kernel map
// and reduction against one weight column, blocks of kernel values (tile_matrix), and
// the row maps kernel_rows and paired_rows. The running sums of a tile, the reduction
// against k > 1 weight columns and the binned sums of several kernels are tile_sums.inl.
//
// Included once per level by detail/simd_dispatch.hpp (through level.inl), after
// vector_math.inl, in the same namespace and target region. No include guard, on purpose.

/// The register-tiled micro-kernel: for kGroupRows rows of a (row-major, d
/// columns) against 2L columns of a packed panel (feature stride kPanelCols),
/// acc[r][h] = sum_k (a[r][k] - b[k][.])^2 (squared), sum_k |a[r][k] - b[k][.]| (l1)
/// or sum_k a[r][k] b[k][.] (product).
template <class T, Pairwise P>
inline void panel_products(const T* a, const T* panel, Index d,
                           vec_t<T> (&acc)[kGroupRows][2]) {
  using V = vec_t<T>;
  constexpr int L = Vec<T>::lanes;
  constexpr Index PC = kPanelCols<T>;
  // Local accumulators: the compiler cannot keep `acc` itself in registers (it
  // might alias a or panel) and would store all eight vectors every iteration.
  V sum[kGroupRows][2] = {};
  for (Index k = 0; k < d; ++k) {
    V b0 = load(panel + k * PC);
    V b1 = load(panel + k * PC + L);
    // Inner products: GCC folds the panel loads into each FMA as memory operands,
    // loading them kGroupRows times; pinning them in registers doubled the speed
    // at d = 100 (0.53 -> 0.24 s for n = 1e5, m = 1000 on one core).
#if defined(NYSTROM_KME_SIMD_AVX512)
    if constexpr (P == Pairwise::product) __asm__("" : "+v"(b0), "+v"(b1));
#elif defined(NYSTROM_KME_SIMD_AVX2)
    if constexpr (P == Pairwise::product) __asm__("" : "+x"(b0), "+x"(b1));
#endif
    for (int r = 0; r < kGroupRows; ++r) {
      const T ar = a[r * d + k];
      if constexpr (P == Pairwise::squared) {
        const V e0 = b0 - ar, e1 = b1 - ar;
        sum[r][0] += e0 * e0;
        sum[r][1] += e1 * e1;
      } else if constexpr (P == Pairwise::l1) {
        sum[r][0] += vabs<T>(b0 - ar);
        sum[r][1] += vabs<T>(b1 - ar);
      } else {
        sum[r][0] += b0 * ar;
        sum[r][1] += b1 * ar;
      }
    }
  }
  for (int r = 0; r < kGroupRows; ++r) {
    acc[r][0] = sum[r][0];
    acc[r][1] = sum[r][1];
  }
}

/// Start of column `col` of the packed superblock bt (its panel, at the column's offset).
template <class T>
inline const T* panel_column(const T* bt, Index col, Index d) {
  return bt + panel_index<T>(col, 0, d);
}

/// Whether any lane of a comparison mask is set: one test instruction of the level. A
/// lane loop compiled to an extract and an OR per lane (16 at AVX-512), ~15% of the float
/// value-and-gradient tile at d = 64, where every 8 columns test their cancellation.
template <class T>
inline bool any_lane(const typename Vec<T>::itype& mask) {
#if defined(NYSTROM_KME_SIMD_AVX512)
  return _mm512_test_epi64_mask((__m512i)mask, (__m512i)mask) != 0;
#elif defined(NYSTROM_KME_SIMD_AVX2)
  return !_mm256_testz_si256((__m256i)mask, (__m256i)mask);
#elif defined(NYSTROM_KME_SIMD_SSE2)
  return _mm_movemask_epi8((__m128i)mask) != 0;  // lanes are all ones or all zeros
#elif defined(NYSTROM_KME_SIMD_NEON)
  return vmaxvq_u32((uint32x4_t)mask) != 0;
#else
  for (int l = 0; l < Vec<T>::lanes; ++l)
    if (mask[l]) return true;
  return false;
#endif
}

/// Squared distance of a (d values) and one packed column, in double.
template <class T>
inline T exact_sq_distance(const T* a, const T* column, Index d) {
  double acc = 0.0;
  for (Index f = 0; f < d; ++f) {
    const double e = double(a[f]) - double(column[f * kPanelCols<T>]);
    acc += e * e;
  }
  return T(acc);
}

/// Turns inner products of centred points into squared distances
/// ||a||^2 + ||b||^2 - 2<a,b>, recomputing exactly the few that cancelled.
template <class T>
void expand_distances(vec_t<T> (&vals)[kGroupRows][2], const T* a, const T* anorm,
                      const T* panel, const T* bnorm, Index d) {
  using V = vec_t<T>;
  using I = typename Vec<T>::itype;
  constexpr int L = Vec<T>::lanes;
  I lost_any = {};
  for (int r = 0; r < kGroupRows; ++r) {
    for (int h = 0; h < 2; ++h) {
      const V bn = load(bnorm + h * L);
      const V d2 = vmax<T>(bn + anorm[r] - vals[r][h] * T(2), splat(T(0)));
      lost_any |= (I)(d2 < (bn + anorm[r]) * T(kCancellation));
      vals[r][h] = d2;
    }
  }
  if (!any_lane<T>(lost_any)) return;
  for (int r = 0; r < kGroupRows; ++r) {
    for (int h = 0; h < 2; ++h) {
      for (int l = 0; l < L; ++l) {
        if (!(vals[r][h][l] < (bnorm[h * L + l] + anorm[r]) * T(kCancellation))) continue;
        vals[r][h][l] = exact_sq_distance(a + r * d, panel + h * L + l, d);
      }
    }
  }
}

/// The hot path of K(A, B) w for T = double: kGroupRows rows against kChunk
/// columns, with the squared distances (squared: sum (a-b)^2; product: the centred
/// expansion, re-done exactly where it cancels), l1 distances or inner products kept
/// in registers, mapped through the kernel and reduced against w at once, so no
/// block of kernel values is ever stored. sums[r] += sum_i k(a_r, b_i) w_i.
template <class T, Pairwise P>
inline void fused_group_sums(const T* a, const T* anorm, const T* bt, const T* bnorm, Index d,
                             const double* w, const Kernel& kernel, bool radial, double* sums) {
  using V = vec_t<T>;
  using VD = Vec<double>::type;
  constexpr int L = Vec<T>::lanes;
  constexpr int LD = Vec<double>::lanes;
  const bool expansion = P == Pairwise::product && radial;
  VD racc[kGroupRows] = {};
  for (Index i = 0; i < kChunk; i += 2 * L) {
    const T* panel = panel_column(bt, i, d);
    V acc[kGroupRows][2];
    panel_products<T, P>(a, panel, d, acc);
    // Copy out of the accumulators: writing single lanes below must not force
    // `acc` into memory in the k loop above.
    V vals[kGroupRows][2];
    for (int r = 0; r < kGroupRows; ++r) {
      vals[r][0] = acc[r][0];
      vals[r][1] = acc[r][1];
    }
    if (expansion) expand_distances<T>(vals, a, anorm, panel, bnorm + i, d);
    for (int r = 0; r < kGroupRows; ++r) {
      racc[r] += kernel_map<T>(kernel, vals[r][0]) * load(w + i);
      racc[r] += kernel_map<T>(kernel, vals[r][1]) * load(w + i + L);
    }
  }
  for (int r = 0; r < kGroupRows; ++r) {
    double total = 0.0;
    for (int l = 0; l < LD; ++l) total += racc[r][l];
    sums[r] += total;
  }
}

/// Kernel values of the tile's rows against kChunk columns, in place in `block`
/// (row stride kChunk); with map = false the squared distances (radial kernels) or inner
/// products they come from.
template <class T>
void kernel_block(const TileTask<T>& t, const T* bt, const T* bnorm, Index groups, T* block,
                  bool map = true) {
  using V = vec_t<T>;
  using I = typename Vec<T>::itype;
  constexpr int L = Vec<T>::lanes;
  const Index d = t.d;
  for (Index g = 0; g < groups; ++g) {
    const T* ag = t.a + g * kGroupRows * d;
    T* out = block + g * kGroupRows * kChunk;
    for (Index i = 0; i < kChunk; i += 2 * L) {
      V acc[kGroupRows][2] = {};  // set by every case below (zeroed for the compiler's sake)
      switch (t.pairwise) {
        case Pairwise::squared:
          panel_products<T, Pairwise::squared>(ag, panel_column(bt, i, d), d, acc);
          break;
        case Pairwise::l1:
          panel_products<T, Pairwise::l1>(ag, panel_column(bt, i, d), d, acc);
          break;
        case Pairwise::product:
          panel_products<T, Pairwise::product>(ag, panel_column(bt, i, d), d, acc);
          break;
      }
      for (int r = 0; r < kGroupRows; ++r) {
        store(out + r * kChunk + i, acc[r][0]);
        store(out + r * kChunk + i + L, acc[r][1]);
      }
    }
  }
  const bool expansion = t.radial && t.pairwise == Pairwise::product;
  for (Index r = 0; r < groups * kGroupRows; ++r) {
    T* row = block + r * kChunk;
    const T an = t.anorm[r];
    for (Index i = 0; i < kChunk; i += 4 * L) {
      V v[4];
      for (int u = 0; u < 4; ++u) v[u] = load(row + i + u * L);
      if (expansion) {
        I lost[4];
        for (int u = 0; u < 4; ++u) {
          const V bn = load(bnorm + i + u * L);
          const V d2 = vmax<T>(bn + an - v[u] * T(2), splat(T(0)));
          lost[u] = (I)(d2 < (bn + an) * T(kCancellation));
          v[u] = d2;
        }
        // Cancellation is rare (near-duplicate points): test the four masks at once.
        if (any_lane<T>(lost[0] | lost[1] | lost[2] | lost[3])) {
          for (int u = 0; u < 4; ++u) {
            for (int l = 0; l < L; ++l) {
              const Index col = i + u * L + l;
              if (lost[u][l]) v[u][l] = exact_sq_distance(t.a + r * d, panel_column(bt, col, d), d);
            }
          }
        }
      }
      for (int u = 0; u < 4; ++u) store(row + i + u * L, map ? kernel_map<T>(*t.kernel, v[u]) : v[u]);
    }
  }
}

/// partial (rows) += block (rows x kChunk) * w (kChunk); padded w rows are 0.
template <class T>
void reduce_block(const TileTask<T>& t, const T* block_values, const double* w) {
  using VD = Vec<double>::type;
  constexpr int LD = Vec<double>::lanes;
  for (Index r = 0; r < t.rows; ++r) {
    const T* row = block_values + r * kChunk;
    VD acc[4] = {};
    for (Index i = 0; i < kChunk; i += 4 * LD)
      for (int u = 0; u < 4; ++u) acc[u] += load_as_double(row + i + u * LD) * load(w + i + u * LD);
    const VD total = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    double sum = 0.0;
    for (int l = 0; l < LD; ++l) sum += total[l];
    t.partial[r] += sum;
  }
}

/// One tile against one superblock of qn rows: out(r, i) = k(a_r, b_i), out with row stride ld.
template <class T>
void tile_matrix(const TileTask<T>& t, Index qn, double* out, Index ld) {
  const Index groups = (t.rows + kGroupRows - 1) / kGroupRows;
  for (Index c = 0; c < t.n_chunks; ++c) {
    const Index c0 = c * kChunk;
    kernel_block(t, t.bt + c0 * t.d, t.bnorm + c0, groups, t.block);
    const Index cols = std::min(kChunk, qn - c0);
    for (Index r = 0; r < t.rows; ++r)
      for (Index i = 0; i < cols; ++i) out[r * ld + c0 + i] = double(t.block[r * kChunk + i]);
  }
}

/// In place: v[i] = kernel map of v[i] (squared distance or inner product), i < n.
inline void map_values(const Kernel& kernel, double* v, Index n) {
  constexpr int LD = Vec<double>::lanes;
  Index i = 0;
  for (; i + LD <= n; i += LD) store(v + i, kernel_map<double>(kernel, load(v + i)));
  if (i < n) {
    double buf[LD] = {};
    for (Index j = i; j < n; ++j) buf[j - i] = v[j];
    store(buf, kernel_map<double>(kernel, load(buf)));
    for (Index j = i; j < n; ++j) v[j] = buf[j - i];
  }
}

/// sum_f (s a_f - s b_f)^2 (Euclidean), sum_f |s a_f - s b_f| (l1) or sum_f (s a_f)(s
/// b_f) (inner products) over the d features of a and b scaled by s = 1 / bandwidth,
/// accumulated in double in feature order: the direct formula behind kernel_rows and
/// paired_rows. (exact_sq_distance keeps its own loop: Clang contracts its
/// `acc += e * e` into an FMA but not this conditional form, so sharing this one
/// would change its last bits in Clang builds.)
template <class T>
inline double pair_value(const T* a, const T* b, Index d, Distance distance, double scale) {
  // (x - y) * scale, not x * scale - y * scale: with FMA contraction the latter is
  // not 0 for x = y, and k(x, x) must be exactly 1 for radial kernels.
  double acc = 0.0;
  for (Index f = 0; f < d; ++f) {
    const double x = double(a[f]), y = double(b[f]);
    switch (distance) {
      case Distance::squared_euclidean: {
        const double e = (x - y) * scale;
        acc += e * e;
        break;
      }
      case Distance::l1: {
        const double e = (x - y) * scale;
        acc += e < 0.0 ? -e : e;
        break;
      }
      case Distance::inner_product:
        acc += (x * scale) * (y * scale);
        break;
    }
  }
  return acc;
}

/// out[i - begin] = k(x_i, p) for rows begin <= i < end of X (row stride ld),
/// the distance or inner product accumulated in double.
template <class T>
void kernel_rows(const T* X, Index ld, Index d, const T* p, const Kernel& kernel, Index begin,
                 Index end, double* out) {
  const Distance distance = kernel.distance();
  const double scale = kernel.inv_bandwidth();
  for (Index i = begin; i < end; ++i) out[i - begin] = pair_value(X + i * ld, p, d, distance, scale);
  map_values(kernel, out, end - begin);
}

/// out[i] = k(a_i, b_i) for aligned rows i < n of A and B (row strides lda, ldb).
template <class T>
void paired_rows(const T* A, Index lda, const T* B, Index ldb, Index n, Index d,
                 const Kernel& kernel, double* out) {
  const Distance distance = kernel.distance();
  const double scale = kernel.inv_bandwidth();
  for (Index i = 0; i < n; ++i) out[i] = pair_value(A + i * lda, B + i * ldb, d, distance, scale);
  map_values(kernel, out, n);
}

/// Whether every entry of a rows x cols matrix (row stride ld) is finite.
template <class T>
bool all_finite(const T* data, Index rows, Index cols, Index ld) {
  using V = vec_t<T>;
  using I = typename Vec<T>::itype;
  constexpr int L = Vec<T>::lanes;
  if (ld == cols) {  // contiguous: one long run
    cols *= rows;
    rows = 1;
  }
  I bad = {};
  T scalar = 0;
  for (Index r = 0; r < rows; ++r) {
    const T* row = data + r * ld;
    Index f = 0;
    for (; f + L <= cols; f += L) {
      const V v = load(row + f);
      bad |= (I)((v - v) != splat(T(0)));  // NaN and inf give NaN, which is != 0
    }
    for (; f < cols; ++f) scalar += row[f] - row[f];
  }
  return !any_lane<T>(bad) && scalar == T(0);
}
