// Which instruction-set level runs the hot loops: the best one this CPU supports
// among those compiled in, unless the environment variable NYSTROM_KME_SIMD
// (baseline | avx2 | avx512 | neon | auto) or set_simd_level() says otherwise.
//
// Results differ between levels only in the last bits (FMA contraction and vector
// width change the rounding): kernel values by a few ulps, sums of non-negative
// terms by at most 1e-13 relative (tested), the factorisations of the solve by the
// rounding of their products. For a given level they are bit-identical for every
// thread count.
#pragma once

#include <vector>

#include <nystrom_kme/detail/simd_select.hpp>
#include <nystrom_kme/simd_level.hpp>

namespace nystrom_kme {

/// Whether this CPU (and its operating system) can run code of `level`.
inline bool cpu_supports(SimdLevel level) { return detail::cpu_runs(level); }

/// Levels compiled into this binary, lowest first.
inline std::vector<SimdLevel> compiled_simd_levels() { return detail::compiled_levels(); }

/// Levels that are both compiled in and supported by this CPU, lowest first.
inline std::vector<SimdLevel> available_simd_levels() { return detail::available_levels(); }

/// The level the hot loops run at.
inline SimdLevel simd_level() { return detail::simd_table().level; }

/// Forces a level for the whole process (tests, benchmarks); calls already running
/// finish on the level they started with.
/// @throws std::invalid_argument when the level is not compiled in or the CPU lacks it
inline void set_simd_level(SimdLevel level) {
  const detail::SimdTable& table = detail::checked_table(level, "set_simd_level");
  detail::active_table_slot().store(&table, std::memory_order_release);
}

}  // namespace nystrom_kme
