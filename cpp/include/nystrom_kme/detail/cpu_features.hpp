// What this CPU can run: instruction-set levels, detected once from CPUID (x86-64)
// or known at compile time (aarch64, other architectures).
#pragma once

#include <cstdint>

#include <nystrom_kme/simd_level.hpp>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#define NYSTROM_KME_X86 1
#elif defined(__aarch64__)
#define NYSTROM_KME_AARCH64 1
#endif

namespace nystrom_kme::detail {

#if defined(NYSTROM_KME_X86)
struct X86Levels {
  bool avx2 = false;
  bool avx512 = false;
};

inline std::uint64_t read_xcr0() {
  std::uint32_t eax = 0, edx = 0;
  // xgetbv with ecx = 0 (needs OSXSAVE, checked by the caller); raw bytes so that
  // no -mxsave flag is needed.
  __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(eax), "=d"(edx) : "c"(0));
  return (std::uint64_t(edx) << 32) | eax;
}

inline X86Levels detect_x86() {
  X86Levels out;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return out;
  const bool fma = c & (1u << 12), movbe = c & (1u << 22), osxsave = c & (1u << 27),
             avx = c & (1u << 28), f16c = c & (1u << 29);
  if (!osxsave || !avx) return out;
  const std::uint64_t xcr0 = read_xcr0();
  const bool ymm_state = (xcr0 & 0x6) == 0x6;  // XMM and YMM saved by the OS
#if defined(__APPLE__)
  // macOS enables the AVX-512 state on first use, so XCR0 does not show it
  // before; trust CPUID there (as numpy does).
  const bool zmm_state = ymm_state;
#else
  const bool zmm_state = (xcr0 & 0xe6) == 0xe6;  // plus opmask, ZMM0-15 upper, ZMM16-31
#endif
  if (__get_cpuid_max(0, nullptr) < 7) return out;
  __cpuid_count(7, 0, a, b, c, d);
  const bool bmi1 = b & (1u << 3), avx2 = b & (1u << 5), bmi2 = b & (1u << 8);
  const bool f = b & (1u << 16), dq = b & (1u << 17), bw = b & (1u << 30), vl = b & (1u << 31);
  unsigned ea = 0, eb = 0, ec = 0, ed = 0;
  const bool lzcnt = __get_cpuid(0x80000001u, &ea, &eb, &ec, &ed) && (ec & (1u << 5));
  out.avx2 = ymm_state && avx2 && fma && bmi1 && bmi2 && f16c && lzcnt && movbe;
  out.avx512 = out.avx2 && zmm_state && f && dq && bw && vl;
  return out;
}
#endif

/// Whether this CPU (and its operating system) can run code of `level`
/// (nystrom_kme::cpu_supports).
inline bool cpu_runs(SimdLevel level) {
#if defined(NYSTROM_KME_X86)
  static const X86Levels levels = detect_x86();
  switch (level) {
    case SimdLevel::baseline: return true;
    case SimdLevel::avx2: return levels.avx2;
    case SimdLevel::avx512: return levels.avx512;
    case SimdLevel::neon: return false;
  }
  return false;
#elif defined(NYSTROM_KME_AARCH64)
  return level == SimdLevel::neon;
#else
  return level == SimdLevel::baseline;
#endif
}

}  // namespace nystrom_kme::detail
