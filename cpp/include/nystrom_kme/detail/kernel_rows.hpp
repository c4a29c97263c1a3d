// Kernel values row by row through the active SIMD level, with the direct formula
// (features in order, accumulated in float64): one kernel column k(x_i, p), and the
// diagonal k(x_i, x_i). The per-pivot loops of the samplers and kernel_diagonal.
#pragma once

#include <nystrom_kme/detail/simd_select.hpp>
#include <nystrom_kme/kernels.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme::detail {

/// out[i - begin] = k(x_i, p) for rows begin <= i < end of X, with p a pointer to d values.
template <class T>
void kernel_column(const ConstRowRef<T>& X, const T* p, const Kernel& kernel, Index begin,
                   Index end, double* out) {
  simd_table().ops<T>().kernel_rows(X.data(), X.outerStride(), X.cols(), p, kernel, begin, end, out);
}

/// out[i - begin] = k(x_i, x_i) for rows begin <= i < end of X.
template <class T>
void kernel_diagonal_rows(const ConstRowRef<T>& X, const Kernel& kernel, Index begin, Index end,
                          double* out) {
  const T* rows = X.data() + begin * X.outerStride();
  simd_table().ops<T>().paired_rows(rows, X.outerStride(), rows, X.outerStride(), end - begin,
                                    X.cols(), kernel, out);
}

}  // namespace nystrom_kme::detail
