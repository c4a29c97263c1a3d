// Which compiled level the hot loops call: the best one this CPU runs, unless the
// environment variable NYSTROM_KME_SIMD or set_simd_level (simd.hpp) chose another.
// The detail/ headers reach the active table, simd_table(), from here; the public
// API over it is simd.hpp.
#pragma once

#include <atomic>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <nystrom_kme/detail/cpu_features.hpp>
#include <nystrom_kme/detail/simd_dispatch.hpp>
#include <nystrom_kme/simd_level.hpp>

namespace nystrom_kme::detail {

/// Levels compiled into this binary, lowest first.
inline std::vector<SimdLevel> compiled_levels() {
  std::vector<SimdLevel> out;
  for (SimdLevel level : {SimdLevel::baseline, SimdLevel::avx2, SimdLevel::avx512, SimdLevel::neon})
    if (compiled_table(level)) out.push_back(level);
  return out;
}

/// Levels that are both compiled in and run by this CPU, lowest first.
inline std::vector<SimdLevel> available_levels() {
  std::vector<SimdLevel> out;
  for (SimdLevel level : compiled_levels())
    if (cpu_runs(level)) out.push_back(level);
  return out;
}

inline std::string level_list(const std::vector<SimdLevel>& levels) {
  std::string out;
  for (SimdLevel level : levels) out += (out.empty() ? "" : ", ") + std::string(to_string(level));
  return out;
}

/// The table of `level` after checking that it is compiled in and that the CPU runs it.
/// @throws std::invalid_argument naming `source` otherwise
inline const SimdTable& checked_table(SimdLevel level, const std::string& source) {
  const SimdTable* table = compiled_table(level);
  if (!table) {
    throw std::invalid_argument(source + ": level '" + to_string(level) +
                                "' is not compiled into this build (compiled: " +
                                level_list(compiled_levels()) + ")");
  }
  if (!cpu_runs(level)) {
    throw std::invalid_argument(source + ": this CPU cannot run level '" + to_string(level) +
                                "' (it supports: " + level_list(available_levels()) + ")");
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
  const std::vector<SimdLevel> levels = available_levels();
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

}  // namespace nystrom_kme::detail
