// The instruction-set levels of the hot loops, as values: the enum and its names.
// Which level runs, and how to choose it, is simd.hpp.
#pragma once

#include <stdexcept>
#include <string>

namespace nystrom_kme {

/// Instruction-set levels of the hot loops. x86-64: baseline (SSE2, every x86-64
/// CPU), avx2 (x86-64-v3: AVX2, FMA, BMI1/2, F16C, LZCNT, MOVBE), avx512
/// (x86-64-v4: AVX-512 F/DQ/BW/VL on top of v3). aarch64: neon (ASIMD, every
/// aarch64 CPU). Other architectures: baseline (portable vector code).
enum class SimdLevel { baseline, avx2, avx512, neon };

inline const char* to_string(SimdLevel level) {
  switch (level) {
    case SimdLevel::baseline: return "baseline";
    case SimdLevel::avx2: return "avx2";
    case SimdLevel::avx512: return "avx512";
    case SimdLevel::neon: return "neon";
  }
  return "unknown";
}

/// "baseline", "avx2", "avx512" or "neon" to a level.
/// @throws std::invalid_argument for any other name
inline SimdLevel parse_simd_level(const std::string& name) {
  for (SimdLevel level : {SimdLevel::baseline, SimdLevel::avx2, SimdLevel::avx512, SimdLevel::neon})
    if (name == to_string(level)) return level;
  throw std::invalid_argument("unknown SIMD level '" + name +
                              "' (expected baseline, avx2, avx512, neon or auto)");
}

}  // namespace nystrom_kme
