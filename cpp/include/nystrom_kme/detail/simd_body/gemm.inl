// A small float64 matrix product for the samplers' factor updates:
//   C[i, j] += sign * sum_p A[i, p] * Bt(p, j),  Bt(p, j) = B[p * b_p + j * b_j],
// with A row-major (row stride lda), C row-major (row stride ldc) and B given by
// two strides (so Bt may be a transpose or a column-major matrix without a copy).
// Register-blocked (kMR rows of A against 2 vectors of Bt columns), with Bt packed
// into panels of 2 vectors' width and k cut into kKC slices that stay in L1/L2.
// Every C entry is summed by one call in a fixed order (slice by slice, p ascending
// inside a slice): the result does not depend on the caller's thread count.
//
// Included once per instruction set by detail/simd_dispatch.hpp, after
// vector_math.inl. No include guard, on purpose.

namespace gemm_detail {

constexpr int kMR = 6;                                // rows of A per micro-tile
constexpr int kNR = 2 * Vec<double>::lanes;           // columns per panel
constexpr Index kKC = 256;                            // depth of one slice
constexpr Index kNC = 128;                            // columns per packed block

template <int MR>
inline void micro_tile(const double* A, Index lda, const double* P, Index kc, double* C,
                       Index ldc, Index ncols) {
  using V = vec_t<double>;
  constexpr int W = Vec<double>::lanes;
  V acc0[MR], acc1[MR];
  for (int r = 0; r < MR; ++r) {
    acc0[r] = splat<double>(0.0);
    acc1[r] = splat<double>(0.0);
  }
  for (Index p = 0; p < kc; ++p) {
    const V b0 = load(P + p * kNR), b1 = load(P + p * kNR + W);
    for (int r = 0; r < MR; ++r) {
      // a scalar operand: the compiler broadcasts it straight from memory (splat() adds
      // 0.0 first, one scalar add per element)
      const double a = A[r * lda + p];
      acc0[r] += b0 * a;
      acc1[r] += b1 * a;
    }
  }
  if (ncols == kNR) {
    for (int r = 0; r < MR; ++r) {
      store(C + r * ldc, load(C + r * ldc) + acc0[r]);
      store(C + r * ldc + W, load(C + r * ldc + W) + acc1[r]);
    }
  } else {
    double tmp[kNR];
    for (int r = 0; r < MR; ++r) {
      store(tmp, acc0[r]);
      store(tmp + W, acc1[r]);
      for (Index j = 0; j < ncols; ++j) C[r * ldc + j] += tmp[j];
    }
  }
}

inline void micro_rows(int mr, const double* A, Index lda, const double* P, Index kc, double* C,
                       Index ldc, Index ncols) {
  switch (mr) {
    case 6: micro_tile<6>(A, lda, P, kc, C, ldc, ncols); break;
    case 5: micro_tile<5>(A, lda, P, kc, C, ldc, ncols); break;
    case 4: micro_tile<4>(A, lda, P, kc, C, ldc, ncols); break;
    case 3: micro_tile<3>(A, lda, P, kc, C, ldc, ncols); break;
    case 2: micro_tile<2>(A, lda, P, kc, C, ldc, ncols); break;
    default: micro_tile<1>(A, lda, P, kc, C, ldc, ncols); break;
  }
}

}  // namespace gemm_detail

/// C += sign * A Bt (see the top of this file). upper: Bt(p, j) = 0 for p > j, and the
/// product skips those terms. rows, k, cols >= 0; nothing is read when one is 0.
/// Loops as in Goto's GEMM: blocks of kNC columns, slices of kKC depth packed (at most
/// kKC x kNC values, L2-resident), then kMR rows of A at a time against each panel.
inline void gemm_acc(const double* A, Index lda, Index rows, Index k, const double* B, Index b_p,
                     Index b_j, Index cols, double sign, bool upper, double* C, Index ldc) {
  using namespace gemm_detail;
  if (rows <= 0 || k <= 0 || cols <= 0) return;
  thread_local std::vector<double> packed;
  packed.resize(static_cast<std::size_t>(kKC * kNC));
  for (Index jc = 0; jc < cols; jc += kNC) {
    const Index ncb = std::min(kNC, cols - jc);
    const Index n_panels = (ncb + kNR - 1) / kNR;
    const Index k_end = upper ? std::min(k, jc + ncb) : k;  // upper: no p beyond the last column
    for (Index p0 = 0; p0 < k_end; p0 += kKC) {
      const Index kc_slice = std::min(kKC, k_end - p0);
      for (Index q = 0; q < n_panels; ++q) {  // panel q: kc_slice x kNR, zero-padded
        double* P = packed.data() + q * kKC * kNR;
        const Index j0 = jc + q * kNR, nc = std::min<Index>(kNR, jc + ncb - j0);
        for (Index p = 0; p < kc_slice; ++p) {
          const double* src = B + (p0 + p) * b_p + j0 * b_j;
          for (Index j = 0; j < nc; ++j) P[p * kNR + j] = sign * src[j * b_j];
          for (Index j = nc; j < kNR; ++j) P[p * kNR + j] = 0.0;
        }
      }
      for (Index i = 0; i < rows; i += kMR) {
        const int mr = static_cast<int>(std::min<Index>(kMR, rows - i));
        for (Index q = 0; q < n_panels; ++q) {
          const Index j0 = jc + q * kNR, nc = std::min<Index>(kNR, jc + ncb - j0);
          // upper: columns j0 .. j0 + nc - 1 need p <= j0 + nc - 1 only
          const Index kc = upper ? std::min(kc_slice, j0 + nc - p0) : kc_slice;
          if (kc <= 0) continue;
          micro_rows(mr, A + i * lda + p0, lda, packed.data() + q * kKC * kNR, kc, C + i * ldc + j0,
                     ldc, nc);
        }
      }
    }
  }
}
