// Runtime dispatch of the hot loops: the bodies in simd_body/ are compiled once
// per instruction-set level, each in its own namespace and under that level's
// target pragma, and each level exports a table of entry points (SimdTable).
// Everything stays header-only: a consumer who compiles these headers with no
// -march flag gets the same levels as our wheels (see ARCHITECTURE.md).
//
// Levels at or above what the compiler flags already guarantee are compiled;
// lower ones are not (a -march=native build keeps only its own level and up).
// Define NYSTROM_KME_NO_DISPATCH to compile the static level only.
//
// Where the bodies are compiled: by default in every translation unit that includes
// this header, so a native application needs nothing but the headers. A program of
// many translation units may compile each level once instead (the Python module does:
// python/src/simd_<level>.cpp): define NYSTROM_KME_EXTERN_SIMD_LEVELS in all of them
// and, in exactly one per level, NYSTROM_KME_COMPILE_SIMD_<LEVEL> (BASELINE, AVX2,
// AVX512, NEON) before the first include; the others then see only the declaration of
// each level's table(). Every translation unit must see the same compiler flags (the
// levels compiled depend on them).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>
#include <vector>

#include <nystrom_kme/detail/cpu_features.hpp>
#include <nystrom_kme/detail/tile_layout.hpp>
#include <nystrom_kme/kernels.hpp>
#include <nystrom_kme/types.hpp>

#if !defined(__GNUC__)
#error "nystrom_kme needs GCC or Clang vector extensions (MSVC: use clang-cl)"
#endif

// __builtin_shufflevector (Clang; GCC from 12): float lanes widened in registers.
#if !defined(NYSTROM_KME_HAS_SHUFFLEVECTOR) && defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define NYSTROM_KME_HAS_SHUFFLEVECTOR 1
#endif
#endif
#if !defined(NYSTROM_KME_HAS_SHUFFLEVECTOR)
#define NYSTROM_KME_HAS_SHUFFLEVECTOR 0
#endif

#if defined(NYSTROM_KME_X86)
#include <immintrin.h>
#elif defined(NYSTROM_KME_AARCH64)
#include <arm_neon.h>
#endif

namespace nystrom_kme::detail {

/// Entry points of one level for one element type (float or double inputs).
template <class T>
struct SimdOps {
  void (*tile_sums)(const TileTask<T>&);
  void (*tile_matrix)(const TileTask<T>&, Index qn, double* out, Index ld);
  void (*tile_bins)(const TileTask<T>&, const BinTask&);
  void (*kernel_rows)(const T* X, Index ld, Index d, const T* p, const Kernel& kernel,
                      Index begin, Index end, double* out);
  void (*paired_rows)(const T* A, Index lda, const T* B, Index ldb, Index n, Index d,
                      const Kernel& kernel, double* out);
  bool (*all_finite)(const T* data, Index rows, Index cols, Index ld);
};

struct SimdTable {
  SimdLevel level;
  PartialLayout partial_layout;  ///< of the sums of a tile (TileTask::partial)
  void (*map_values)(const Kernel& kernel, double* values, Index n);
  void (*split_weights)(std::uint64_t* state, double* needed, const double* plus,
                        const double* minus, Index left0, Index rows, double* out, Index ld);
  /// C += sign * A Bt, Bt(p, j) = B[p * b_p + j * b_j] (simd_body/gemm.inl)
  void (*gemm_acc)(const double* A, Index lda, Index rows, Index k, const double* B, Index b_p,
                   Index b_j, Index cols, double sign, bool upper, double* C, Index ldc);
  SimdOps<double> f64;
  SimdOps<float> f32;

  template <class T>
  const SimdOps<T>& ops() const {
    if constexpr (std::is_same_v<T, double>) {
      return f64;
    } else {
      return f32;
    }
  }
};

}  // namespace nystrom_kme::detail

// The static level: what every function of this translation unit may use anyway.
#if defined(NYSTROM_KME_X86)
#if defined(__AVX512F__) && defined(__AVX512DQ__) && defined(__AVX512BW__) && \
    defined(__AVX512VL__) && defined(__AVX2__) && defined(__FMA__)
#define NYSTROM_KME_STATIC_RANK 2
#elif defined(__AVX2__) && defined(__FMA__)
#define NYSTROM_KME_STATIC_RANK 1
#else
#define NYSTROM_KME_STATIC_RANK 0
#endif
#endif

// A level's table(), outside its target region so that any CPU may call it
// (compiled_table asks every compiled level, whatever this CPU runs): inline where
// every translation unit compiles the bodies, else defined once, in the level's own.
#if defined(NYSTROM_KME_EXTERN_SIMD_LEVELS)
#define NYSTROM_KME_SIMD_TABLE_DEFINITION \
  const SimdTable& table() { return kTable; }
#else
#define NYSTROM_KME_SIMD_TABLE_DEFINITION \
  inline const SimdTable& table() { return kTable; }
#endif
#define NYSTROM_KME_SIMD_TABLE_DECLARATION const SimdTable& table();

// 64-byte vectors passed by value inside a level change the ABI only against code
// of another level, which never sees them: GCC's -Wpsabi notes are noise here.
#pragma GCC diagnostic push
#if defined(__clang__)
#pragma GCC diagnostic ignored "-Wunknown-warning-option"
#endif
#pragma GCC diagnostic ignored "-Wpsabi"

#if defined(NYSTROM_KME_X86)

// The target region of a level above the static one: every function between
// NYSTROM_KME_TARGET_PUSH(features) and NYSTROM_KME_TARGET_POP is compiled for
// `features` (a string literal), by GCC's target pragma or Clang's attribute push.
#define NYSTROM_KME_PRAGMA(text) _Pragma(#text)
#if defined(__clang__)
#define NYSTROM_KME_TARGET_PUSH(features) \
  NYSTROM_KME_PRAGMA(clang attribute push(__attribute__((target(features))), apply_to = function))
#define NYSTROM_KME_TARGET_POP _Pragma("clang attribute pop")
#else
#define NYSTROM_KME_TARGET_PUSH(features) \
  _Pragma("GCC push_options") NYSTROM_KME_PRAGMA(GCC target(features))
#define NYSTROM_KME_TARGET_POP _Pragma("GCC pop_options")
#endif

#if NYSTROM_KME_STATIC_RANK == 0
#if !defined(NYSTROM_KME_EXTERN_SIMD_LEVELS) || defined(NYSTROM_KME_COMPILE_SIMD_BASELINE)
namespace nystrom_kme::detail::simd_baseline {
#define NYSTROM_KME_SIMD_BYTES 16
#define NYSTROM_KME_SIMD_SSE2 1
#define NYSTROM_KME_SIMD_LEVEL SimdLevel::baseline
#include <nystrom_kme/detail/simd_body/level.inl>
NYSTROM_KME_SIMD_TABLE_DEFINITION
}  // namespace nystrom_kme::detail::simd_baseline
#else
namespace nystrom_kme::detail::simd_baseline { NYSTROM_KME_SIMD_TABLE_DECLARATION }
#endif
#define NYSTROM_KME_HAVE_BASELINE 1
#endif

#if NYSTROM_KME_STATIC_RANK <= 1 && !(NYSTROM_KME_STATIC_RANK < 1 && defined(NYSTROM_KME_NO_DISPATCH))
#if !defined(NYSTROM_KME_EXTERN_SIMD_LEVELS) || defined(NYSTROM_KME_COMPILE_SIMD_AVX2)
#if NYSTROM_KME_STATIC_RANK < 1
NYSTROM_KME_TARGET_PUSH("avx2,fma,bmi,bmi2,f16c,lzcnt,movbe")
#endif
namespace nystrom_kme::detail::simd_avx2 {
#define NYSTROM_KME_SIMD_BYTES 32
#define NYSTROM_KME_SIMD_AVX2 1
#define NYSTROM_KME_SIMD_LEVEL SimdLevel::avx2
#include <nystrom_kme/detail/simd_body/level.inl>
}  // namespace nystrom_kme::detail::simd_avx2
#if NYSTROM_KME_STATIC_RANK < 1
NYSTROM_KME_TARGET_POP
#endif
namespace nystrom_kme::detail::simd_avx2 { NYSTROM_KME_SIMD_TABLE_DEFINITION }
#else
namespace nystrom_kme::detail::simd_avx2 { NYSTROM_KME_SIMD_TABLE_DECLARATION }
#endif
#define NYSTROM_KME_HAVE_AVX2 1
#endif

#if !(NYSTROM_KME_STATIC_RANK < 2 && defined(NYSTROM_KME_NO_DISPATCH))
#if !defined(NYSTROM_KME_EXTERN_SIMD_LEVELS) || defined(NYSTROM_KME_COMPILE_SIMD_AVX512)
#if NYSTROM_KME_STATIC_RANK < 2
NYSTROM_KME_TARGET_PUSH("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,bmi,bmi2,f16c,lzcnt,movbe")
#endif
namespace nystrom_kme::detail::simd_avx512 {
#define NYSTROM_KME_SIMD_BYTES 64
#define NYSTROM_KME_SIMD_AVX512 1
#define NYSTROM_KME_SIMD_LEVEL SimdLevel::avx512
#include <nystrom_kme/detail/simd_body/level.inl>
}  // namespace nystrom_kme::detail::simd_avx512
#if NYSTROM_KME_STATIC_RANK < 2
NYSTROM_KME_TARGET_POP
#endif
namespace nystrom_kme::detail::simd_avx512 { NYSTROM_KME_SIMD_TABLE_DEFINITION }
#else
namespace nystrom_kme::detail::simd_avx512 { NYSTROM_KME_SIMD_TABLE_DECLARATION }
#endif
#define NYSTROM_KME_HAVE_AVX512 1
#endif

#undef NYSTROM_KME_TARGET_PUSH
#undef NYSTROM_KME_TARGET_POP
#undef NYSTROM_KME_PRAGMA

#elif defined(NYSTROM_KME_AARCH64)

// ASIMD is part of every aarch64 CPU: one level, no target region. (SVE is not
// compiled yet: there is no machine to measure it on.)
#if !defined(NYSTROM_KME_EXTERN_SIMD_LEVELS) || defined(NYSTROM_KME_COMPILE_SIMD_NEON)
namespace nystrom_kme::detail::simd_neon {
#define NYSTROM_KME_SIMD_BYTES 16
#define NYSTROM_KME_SIMD_NEON 1
#define NYSTROM_KME_SIMD_LEVEL SimdLevel::neon
#include <nystrom_kme/detail/simd_body/level.inl>
NYSTROM_KME_SIMD_TABLE_DEFINITION
}  // namespace nystrom_kme::detail::simd_neon
#else
namespace nystrom_kme::detail::simd_neon { NYSTROM_KME_SIMD_TABLE_DECLARATION }
#endif
#define NYSTROM_KME_HAVE_NEON 1

#else

// Other architectures: portable vector code, lowered by the compiler.
#if !defined(NYSTROM_KME_EXTERN_SIMD_LEVELS) || defined(NYSTROM_KME_COMPILE_SIMD_BASELINE)
namespace nystrom_kme::detail::simd_baseline {
#define NYSTROM_KME_SIMD_BYTES 16
#define NYSTROM_KME_SIMD_GENERIC 1
#define NYSTROM_KME_SIMD_LEVEL SimdLevel::baseline
#include <nystrom_kme/detail/simd_body/level.inl>
NYSTROM_KME_SIMD_TABLE_DEFINITION
}  // namespace nystrom_kme::detail::simd_baseline
#else
namespace nystrom_kme::detail::simd_baseline { NYSTROM_KME_SIMD_TABLE_DECLARATION }
#endif
#define NYSTROM_KME_HAVE_BASELINE 1

#endif

#pragma GCC diagnostic pop
#undef NYSTROM_KME_SIMD_TABLE_DEFINITION
#undef NYSTROM_KME_SIMD_TABLE_DECLARATION

namespace nystrom_kme::detail {

/// The table of `level`, or nullptr when that level is not compiled in.
inline const SimdTable* compiled_table(SimdLevel level) {
  switch (level) {
#if defined(NYSTROM_KME_HAVE_BASELINE)
    case SimdLevel::baseline: return &simd_baseline::table();
#endif
#if defined(NYSTROM_KME_HAVE_AVX2)
    case SimdLevel::avx2: return &simd_avx2::table();
#endif
#if defined(NYSTROM_KME_HAVE_AVX512)
    case SimdLevel::avx512: return &simd_avx512::table();
#endif
#if defined(NYSTROM_KME_HAVE_NEON)
    case SimdLevel::neon: return &simd_neon::table();
#endif
    default: return nullptr;
  }
}

}  // namespace nystrom_kme::detail
