// Which instruction-set level runs the hot loops: the best one this CPU supports
// among those compiled in, unless the environment variable NYSTROM_KME_SIMD
// (baseline | avx2 | avx512 | neon | auto) or set_simd_level() says otherwise.
//
// Results differ between levels only in the last bits (FMA contraction and vector
// width change the rounding): kernel values by a few ulps, sums of non-negative
// terms by at most 1e-13 relative (tested). For a given level they are
// bit-identical for every thread count.
#pragma once

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <nystrom_kme/detail/cpu_features.hpp>
#include <nystrom_kme/detail/simd_dispatch.hpp>

namespace nystrom_kme {

/// Levels compiled into this binary, lowest first.
inline std::vector<SimdLevel> compiled_simd_levels() {
  std::vector<SimdLevel> out;
  for (SimdLevel level : {SimdLevel::baseline, SimdLevel::avx2, SimdLevel::avx512, SimdLevel::neon})
    if (detail::compiled_table(level)) out.push_back(level);
  return out;
}

/// Levels that are both compiled in and supported by this CPU, lowest first.
inline std::vector<SimdLevel> available_simd_levels() {
  std::vector<SimdLevel> out;
  for (SimdLevel level : compiled_simd_levels())
    if (cpu_supports(level)) out.push_back(level);
  return out;
}

/// "baseline", "avx2", "avx512" or "neon" to a level.
/// @throws std::invalid_argument for any other name
inline SimdLevel parse_simd_level(const std::string& name) {
  for (SimdLevel level : {SimdLevel::baseline, SimdLevel::avx2, SimdLevel::avx512, SimdLevel::neon})
    if (name == to_string(level)) return level;
  throw std::invalid_argument("unknown SIMD level '" + name +
                              "' (expected baseline, avx2, avx512, neon or auto)");
}

namespace detail {

inline std::string level_list(const std::vector<SimdLevel>& levels) {
  std::string out;
  for (SimdLevel level : levels) out += (out.empty() ? "" : ", ") + std::string(to_string(level));
  return out;
}

/// The table of `level` after checking that it is compiled in and that the CPU runs it.
inline const SimdTable& checked_table(SimdLevel level, const std::string& source) {
  const SimdTable* table = compiled_table(level);
  if (!table) {
    throw std::invalid_argument(source + ": level '" + to_string(level) +
                                "' is not compiled into this build (compiled: " +
                                level_list(compiled_simd_levels()) + ")");
  }
  if (!cpu_supports(level)) {
    throw std::invalid_argument(source + ": this CPU cannot run level '" + to_string(level) +
                                "' (it supports: " + level_list(available_simd_levels()) + ")");
  }
  return *table;
}

/// The best available level, or the one NYSTROM_KME_SIMD names.
inline const SimdTable& initial_table() {
  const char* env = std::getenv("NYSTROM_KME_SIMD");
  const std::string name = env ? env : "";
  if (!name.empty() && name != "auto") {
    SimdLevel level;
    try {
      level = parse_simd_level(name);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("NYSTROM_KME_SIMD=") + name + ": " + e.what());
    }
    return checked_table(level, "NYSTROM_KME_SIMD=" + name);
  }
  const std::vector<SimdLevel> levels = available_simd_levels();
  if (levels.empty()) throw std::runtime_error("nystrom_kme: no compiled SIMD level runs on this CPU");
  return *compiled_table(levels.back());
}

inline std::atomic<const SimdTable*>& active_table_slot() {
  static std::atomic<const SimdTable*> slot{nullptr};
  return slot;
}

/// The table every hot loop calls through (chosen on first use).
/// @throws std::invalid_argument when NYSTROM_KME_SIMD names a level that cannot run
inline const SimdTable& simd_table() {
  const SimdTable* table = active_table_slot().load(std::memory_order_acquire);
  if (!table) {
    table = &initial_table();
    active_table_slot().store(table, std::memory_order_release);
  }
  return *table;
}

}  // namespace detail

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
