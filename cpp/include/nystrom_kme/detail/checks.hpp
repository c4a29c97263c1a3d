// Finiteness checks of the inputs, one pass each (the matrices through the active
// SIMD level): every routine rejects NaN and infinities before any work.
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>

#include <nystrom_kme/detail/simd_select.hpp>
#include <nystrom_kme/types.hpp>

namespace nystrom_kme::detail {

/// @throws std::invalid_argument naming `name` when M holds a NaN or an infinity
template <class T>
void check_finite(const ConstRowRef<T>& M, const char* name) {
  if (M.size() == 0) return;
  if (!simd_table().ops<T>().all_finite(M.data(), M.rows(), M.cols(), M.outerStride()))
    throw std::invalid_argument(std::string(name) + " contains NaN or inf");
}

/// @throws std::invalid_argument when the weights hold a NaN or an infinity
inline void check_finite_weights(const WeightsRef& W) {
  for (Index i = 0; i < W.rows(); ++i)
    for (Index c = 0; c < W.cols(); ++c)
      if (!std::isfinite(W(i, c))) throw std::invalid_argument("weights contain NaN or inf");
}

}  // namespace nystrom_kme::detail
