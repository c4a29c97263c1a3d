// The blocked streaming engine behind every kernel sum and kernel matrix.
//
// Output side A (p x d) is cut into tiles of kTileRows rows, one task each;
// summed side B (q x d) is streamed in packed superblocks of ~1 MiB. Within a
// task, a kTileRows x kChunk block of kernel values is formed in L1 (register-
// tiled distances or inner products, then the kernel map) and immediately reduced
// against the weights. Nothing of size p x q is ever stored.
//
// Determinism: every output row is owned by one task at a time and summed in an
// order fixed by (d, q) alone, so results are bit-identical for any thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <nystrom_kme/detail/parallel.hpp>
#include <nystrom_kme/detail/simd.hpp>
#include <nystrom_kme/kernels.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme::detail {

constexpr Index kTileRows = 16;      // rows of A per task
constexpr Index kGroupRows = 4;      // rows of A per micro-kernel call
constexpr Index kChunk = 256;        // rows of B per L1-resident block of kernel values
constexpr Index kDirectMaxDim = 32;  // radial kernels below this d use sum (a-b)^2 directly
constexpr Index kPackBytes = 1024 * 1024;  // packed block of B, shared by all threads
// Expansion ||a||^2 + ||b||^2 - 2<a,b> is recomputed directly when it falls below
// this fraction of ||a||^2 + ||b||^2: there it has lost most of its digits.
constexpr double kCancellation = 1e-6;

using WeightsRef = Eigen::Ref<const RowMatrixXd, 0, Eigen::OuterStride<>>;

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

inline Index superblock_rows(Index d, Index elem_bytes) {
  Index r = kPackBytes / (d * elem_bytes);
  r = std::max<Index>(kChunk, (r / kChunk) * kChunk);
  return std::min<Index>(r, 64 * kChunk);
}

template <class T>
void check_finite(const ConstRowRef<T>& M, const char* name) {
  for (Index i = 0; i < M.rows(); ++i) {
    const T* row = M.row(i).data();
    T acc = 0;
    for (Index k = 0; k < M.cols(); ++k) acc += row[k] * T(0);  // NaN/inf propagate
    if (acc != acc) throw std::invalid_argument(std::string(name) + " contains NaN or inf");
  }
}

inline void check_finite_weights(const WeightsRef& W) {
  for (Index i = 0; i < W.rows(); ++i)
    for (Index c = 0; c < W.cols(); ++c)
      if (!std::isfinite(W(i, c))) throw std::invalid_argument("weights contain NaN or inf");
}

/// The register-tiled micro-kernel: for kGroupRows rows of a (row-major, d
/// columns) against one packed panel of 2L columns (d x 2L contiguous),
/// acc[r][h] = sum_k (a[r][k] - b[k][.])^2 (Direct) or sum_k a[r][k] b[k][.].
template <class T, bool Direct>
inline void panel_products(const T* a, const T* panel, Index d,
                           typename Vec<T>::type (&acc)[kGroupRows][2]) {
  using V = vec_t<T>;
  constexpr int L = Vec<T>::lanes;
  // Local accumulators: the compiler cannot keep `acc` itself in registers (it
  // might alias a or panel) and would store all eight vectors every iteration.
  V sum[kGroupRows][2] = {};
  for (Index k = 0; k < d; ++k) {
    V b0 = load(panel + k * 2 * L);
    V b1 = load(panel + k * 2 * L + L);
    // Inner products: GCC folds the panel loads into each FMA as memory operands,
    // loading them kGroupRows times; pinning them in registers doubled the speed
    // at d = 100 (0.53 -> 0.24 s for n = 1e5, m = 1000 on one core).
#if defined(__AVX512F__)  // one 64-byte vector = one register only with AVX-512
    if constexpr (!Direct) __asm__("" : "+v"(b0), "+v"(b1));
#endif
    for (int r = 0; r < kGroupRows; ++r) {
      const T ar = a[r * d + k];
      if constexpr (Direct) {
        const V e0 = b0 - ar, e1 = b1 - ar;
        sum[r][0] += e0 * e0;
        sum[r][1] += e1 * e1;
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

/// panel_products over a whole chunk of kChunk columns, stored to out (row stride kChunk).
template <class T, bool Direct>
inline void group_block(const T* a, const T* bt, Index d, T* out) {
  using V = vec_t<T>;
  constexpr int L = Vec<T>::lanes;
  for (Index i = 0; i < kChunk; i += 2 * L) {
    V acc[kGroupRows][2];
    panel_products<T, Direct>(a, bt + i * d, d, acc);
    for (int r = 0; r < kGroupRows; ++r) {
      store(out + r * kChunk + i, acc[r][0]);
      store(out + r * kChunk + i + L, acc[r][1]);
    }
  }
}

inline Vec<double>::type load_as_double(const double* p) { return load(p); }
inline Vec<double>::type load_as_double(const float* p) {
  typedef float v8f __attribute__((vector_size(32)));
  v8f v;
  std::memcpy(&v, p, sizeof v);
  return __builtin_convertvector(v, Vec<double>::type);
}


template <class T>
inline bool any_lane(const typename Vec<T>::itype& mask) {
  for (int l = 0; l < Vec<T>::lanes; ++l)
    if (mask[l]) return true;
  return false;
}

/// Turns inner products of centred points into squared distances
/// ||a||^2 + ||b||^2 - 2<a,b>, recomputing exactly the few that cancelled.
template <class T>
void expand_distances(typename Vec<T>::type (&vals)[kGroupRows][2], const T* a, const T* anorm,
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
        double e2 = 0.0;
        for (Index f = 0; f < d; ++f) {
          const double e = double(a[r * d + f]) - double(panel[f * 2 * L + h * L + l]);
          e2 += e * e;
        }
        vals[r][h][l] = T(e2);
      }
    }
  }
}

/// The hot path of K(A, B) w: kGroupRows rows against kChunk columns, with the
/// squared distances (Direct: sum (a-b)^2; else the centred expansion
/// ||a||^2 + ||b||^2 - 2<a,b>, re-done exactly where it cancels) or inner products
/// kept in registers, mapped through the kernel and reduced against w at once,
/// so no block of kernel values is ever stored. Used for T = double.
/// sums[r] += sum_i k(a_r, b_i) w_i.
template <class T, bool Direct>
inline void fused_group_sums(const T* a, const T* anorm, const T* bt, const T* bnorm, Index d,
                             const double* w, const Kernel& kernel, double* sums) {
  using V = vec_t<T>;
  using VD = Vec<double>::type;
  constexpr int L = Vec<T>::lanes;
  constexpr int LD = Vec<double>::lanes;
  const bool expansion = !Direct && kernel.is_radial();
  VD racc[kGroupRows] = {};
  for (Index i = 0; i < kChunk; i += 2 * L) {
    V acc[kGroupRows][2];
    panel_products<T, Direct>(a, bt + i * d, d, acc);
    // Copy out of the accumulators: writing single lanes below must not force
    // `acc` into memory in the k loop above.
    V vals[kGroupRows][2];
    for (int r = 0; r < kGroupRows; ++r) {
      vals[r][0] = acc[r][0];
      vals[r][1] = acc[r][1];
    }
    if (expansion) expand_distances<T>(vals, a, anorm, bt + i * d, bnorm + i, d);
    for (int r = 0; r < kGroupRows; ++r) {
      racc[r] += kernel.apply<T>(vals[r][0]) * load(w + i);
      racc[r] += kernel.apply<T>(vals[r][1]) * load(w + i + L);
    }
  }
  for (int r = 0; r < kGroupRows; ++r) {
    double total = 0.0;
    for (int l = 0; l < LD; ++l) total += racc[r][l];
    sums[r] += total;
  }
}

/// What the engine does with each block of kernel values.
enum class Mode { sums, matrix };

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
    direct_ = radial_ && d_ < kDirectMaxDim;
    // Radial kernels are translation invariant: centring both sides on the mean
    // of A keeps the distance expansion from cancelling for data far from 0.
    center_.assign(d_, T(0));
    if (radial_ && A.rows() > 0) {
      std::vector<double> mean(d_, 0.0);
      for (Index i = 0; i < A.rows(); ++i)
        for (Index k = 0; k < d_; ++k) mean[k] += A(i, k);
      for (Index k = 0; k < d_; ++k) center_[k] = T(mean[k] / double(A.rows()));
    }
  }

  /// S (p x k) = K(A, B) W, W (q x k); or, with Mode::matrix, out = K(A, B).
  template <Mode mode>
  void run(const WeightsRef* W, RowMatrixXd& out, int n_threads) const {
    const Index p = A_.rows(), q = B_.rows();
    const Index k = mode == Mode::sums ? out.cols() : 0;
    if (p == 0 || q == 0) return;
    const Index R = superblock_rows(d_, Index(sizeof(T)));
    const Index n_super = (q + R - 1) / R;
    const Index n_tiles = (p + kTileRows - 1) / kTileRows;
    const int nt = int(std::min<Index>(resolve_threads(n_threads), n_tiles));

    // Shared packed superblock of B: transposed (d x R), centred, plus norms and weights.
    std::vector<T> bt(static_cast<std::size_t>(d_ * R));
    std::vector<T> bnorm(static_cast<std::size_t>(R));
    std::vector<double> wpack(static_cast<std::size_t>(R * weight_stride(k)));
    RowMatrixXd comp;  // Neumaier compensation of the sums
    if (mode == Mode::sums) comp = RowMatrixXd::Zero(p, k);

    std::vector<Scratch> scratch(static_cast<std::size_t>(nt));
    for (auto& s : scratch) {
      s.a.assign(std::size_t(kTileRows * d_), T(0));
      s.anorm.assign(std::size_t(kTileRows), T(0));
      s.block.assign(std::size_t(kTileRows * kChunk), T(0));
      if (mode == Mode::sums) {
        s.partial.assign(std::size_t(kTileRows * k), 0.0);  // fused path writes whole groups
        if (k > 1 && !std::is_same_v<T, double>) s.block_f64.assign(std::size_t(kTileRows * kChunk), 0.0);
      }
    }

    ErrorCapture errors;
#if defined(NYSTROM_KME_WITH_OPENMP)
#pragma omp parallel num_threads(nt)
#endif
    {
      Scratch& s = scratch[std::size_t(thread_id())];
      for (Index sb = 0; sb < n_super; ++sb) {
        const Index q0 = sb * R, qn = std::min(R, q - q0);
        const Index n_chunks = (qn + kChunk - 1) / kChunk;
#if defined(NYSTROM_KME_WITH_OPENMP)
#pragma omp for schedule(static)
#endif
        for (Index c = 0; c < n_chunks; ++c) pack_chunk(W, k, q0, qn, c, R, bt, bnorm, wpack);
#if defined(NYSTROM_KME_WITH_OPENMP)
#pragma omp for schedule(dynamic, 1)
#endif
        for (Index t = 0; t < n_tiles; ++t) {
          errors.run([&] {
            run_tile<mode>(t, q0, qn, n_chunks, R, k, bt, bnorm, wpack, s, out, comp);
          });
        }
      }
    }
    errors.rethrow();
    if (mode == Mode::sums) out += comp;
  }

 private:
  struct Scratch {
    std::vector<T> a, anorm, block;
    std::vector<double> block_f64, partial;
  };

  void pack_chunk(const WeightsRef* W, Index k, Index q0, Index qn, Index c, Index R,
                  std::vector<T>& bt, std::vector<T>& bnorm, std::vector<double>& wpack) const {
    const Index begin = c * kChunk, end = begin + kChunk;
    for (Index i = begin; i < end; ++i) {
      const bool valid = i < qn;
      double norm = 0.0;
      for (Index f = 0; f < d_; ++f) {
        const T v = valid ? T(B_(q0 + i, f) - center_[f]) : T(0);
        bt[std::size_t(panel_index(i, f))] = v;
        norm += double(v) * double(v);
      }
      bnorm[std::size_t(i)] = T(norm);
      if (k == 0) continue;
      for (Index col = 0; col < k; ++col)
        wpack[std::size_t(weight_index(i, col, k, R))] = !valid ? 0.0 : (W ? (*W)(q0 + i, col) : 1.0);
    }
  }

  void pack_tile(Index r0, Index rows, std::vector<T>& a, std::vector<T>& anorm) const {
    for (Index r = 0; r < kTileRows; ++r) {
      double norm = 0.0;
      for (Index f = 0; f < d_; ++f) {
        const T v = r < rows ? T(A_(r0 + r, f) - center_[f]) : T(0);
        a[std::size_t(r * d_ + f)] = v;
        norm += double(v) * double(v);
      }
      anorm[std::size_t(r)] = T(norm);
    }
  }

  // Kernel values for one kTileRows x kChunk block, in place in `block`.
  void kernel_block(const T* a, const T* anorm, const T* bt, const T* bnorm, Index groups,
                    T* block) const {
    using V = vec_t<T>;
    constexpr int L = Vec<T>::lanes;
    for (Index g = 0; g < groups; ++g) {
      const T* ag = a + g * kGroupRows * d_;
      T* out = block + g * kGroupRows * kChunk;
      if (direct_) {
        group_block<T, true>(ag, bt, d_, out);
      } else {
        group_block<T, false>(ag, bt, d_, out);
      }
    }
    const bool expansion = radial_ && !direct_;
    for (Index r = 0; r < groups * kGroupRows; ++r) {
      T* row = block + r * kChunk;
      const T an = anorm[r];
      for (Index i = 0; i < kChunk; i += 4 * L) {
        V v[4];
        for (int u = 0; u < 4; ++u) v[u] = load(row + i + u * L);
        if (expansion) {
          using I = typename Vec<T>::itype;
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
                if (lost[u][l]) {
                  v[u][l] = exact_sq_distance(a + r * d_, bt + panel_index(col, 0) - col % (2 * L),
                                              col % (2 * L));
                }
              }
            }
          }
        }
        for (int u = 0; u < 4; ++u) store(row + i + u * L, kernel_.apply<T>(v[u]));
      }
    }
  }

  // Packed layout of B: panels of 2L columns, each d x 2L contiguous, so the
  // micro-kernels read memory sequentially (a plain d x R transpose puts every
  // feature row R elements apart and thrashes a few L1 sets when d is large).
  Index panel_index(Index col, Index f) const {
    constexpr Index P = 2 * Vec<T>::lanes;
    return (col / P) * d_ * P + f * P + col % P;
  }

  T exact_sq_distance(const T* a, const T* panel, Index lane) const {
    double acc = 0.0;
    for (Index f = 0; f < d_; ++f) {
      const double e = double(a[f]) - double(panel[f * 2 * Vec<T>::lanes + lane]);
      acc += e * e;
    }
    return T(acc);
  }

  template <Mode mode>
  void run_tile(Index t, Index q0, Index qn, Index n_chunks, Index R, Index k,
                const std::vector<T>& bt, const std::vector<T>& bnorm,
                const std::vector<double>& wpack, Scratch& s, RowMatrixXd& out,
                RowMatrixXd& comp) const {
    const Index r0 = t * kTileRows;
    const Index rows = std::min(kTileRows, A_.rows() - r0);
    const Index groups = (rows + kGroupRows - 1) / kGroupRows;
    pack_tile(r0, rows, s.a, s.anorm);
    if (mode == Mode::sums) std::fill(s.partial.begin(), s.partial.end(), 0.0);
    for (Index c = 0; c < n_chunks; ++c) {
      const Index c0 = c * kChunk;
      // float: converting each register to float64 for the fused reduction costs
      // more than one pass over the L1-resident block (measured 10-15%).
      if constexpr (std::is_same_v<T, double> && mode == Mode::sums) {
        if (k == 1) {
          for (Index g = 0; g < groups; ++g) {
            const Index off = g * kGroupRows;
            auto fused = direct_ ? fused_group_sums<T, true> : fused_group_sums<T, false>;
            fused(s.a.data() + off * d_, s.anorm.data() + off, bt.data() + c0 * d_,
                  bnorm.data() + c0, d_, wpack.data() + c0, kernel_, s.partial.data() + off);
          }
          continue;
        }
      }
      kernel_block(s.a.data(), s.anorm.data(), bt.data() + c0 * d_, bnorm.data() + c0, groups,
                   s.block.data());
      if constexpr (mode == Mode::matrix) {
        const Index cols = std::min(kChunk, qn - c0);
        for (Index r = 0; r < rows; ++r)
          for (Index i = 0; i < cols; ++i)
            out(r0 + r, q0 + c0 + i) = double(s.block[std::size_t(r * kChunk + i)]);
      } else {
        reduce_block(s, rows, groups, wpack.data(), c0, R, k);
      }
    }
    if constexpr (mode == Mode::sums) {
      // Neumaier summation across superblocks keeps n = 1e6 sums at ~1e-16 relative.
      for (Index r = 0; r < rows; ++r) {
        for (Index col = 0; col < k; ++col) {
          double& sum = out(r0 + r, col);
          const double x = s.partial[std::size_t(r * k + col)];
          const double total = sum + x;
          comp(r0 + r, col) += std::abs(sum) >= std::abs(x) ? (sum - total) + x : (x - total) + sum;
          sum = total;
        }
      }
    }
  }

  // partial (rows x k) += block (rows x kChunk) * w (kChunk x k); padded w rows are 0.
  void reduce_block(Scratch& s, Index rows, Index groups, const double* wpack, Index c0, Index R,
                    Index k) const {
    using VD = Vec<double>::type;
    constexpr int LD = Vec<double>::lanes;
    if (k == 1) {
      const double* w = wpack + c0;
      for (Index r = 0; r < rows; ++r) {
        const T* row = s.block.data() + r * kChunk;
        VD acc[4] = {};
        for (Index i = 0; i < kChunk; i += 4 * LD)
          for (int u = 0; u < 4; ++u)
            acc[u] += load_as_double(row + i + u * LD) * load(w + i + u * LD);
        const VD total = (acc[0] + acc[1]) + (acc[2] + acc[3]);
        double sum = 0.0;
        for (int l = 0; l < LD; ++l) sum += total[l];
        s.partial[std::size_t(r)] += sum;
      }
      return;
    }
    const double* block = nullptr;
    if constexpr (std::is_same_v<T, double>) {
      block = s.block.data();
    } else {
      for (std::size_t i = 0; i < s.block.size(); ++i) s.block_f64[i] = double(s.block[i]);
      block = s.block_f64.data();
    }
    // Register-tiled GEMM against weight panels of kWeightPanel columns: no packing
    // per call (a library GEMM would repack the weight block for every tile).
    for (Index panel = 0; panel * kWeightPanel < k; ++panel) {
      const double* wp = wpack + (panel * R + c0) * kWeightPanel;
      const Index cols = std::min(kWeightPanel, k - panel * kWeightPanel);
      for (Index g = 0; g < groups; ++g) {
        VD acc[kGroupRows][2] = {};
        const double* b = block + g * kGroupRows * kChunk;
        for (Index i = 0; i < kChunk; ++i) {
          const VD w0 = load(wp + i * kWeightPanel);
          const VD w1 = load(wp + i * kWeightPanel + LD);
          for (int r = 0; r < kGroupRows; ++r) {
            const double v = b[r * kChunk + i];
            acc[r][0] += w0 * v;
            acc[r][1] += w1 * v;
          }
        }
        for (int r = 0; r < kGroupRows && g * kGroupRows + r < rows; ++r) {
          double* out = s.partial.data() + (g * kGroupRows + r) * k + panel * kWeightPanel;
          for (Index c = 0; c < cols; ++c) out[c] += acc[r][c / LD][c % LD];
        }
      }
    }
  }

  const ConstRowRef<T>& A_;
  const ConstRowRef<T>& B_;
  const Kernel& kernel_;
  Index d_;
  bool radial_ = true, direct_ = true;
  std::vector<T> center_;
};

}  // namespace nystrom_kme::detail
