// The base SIMD level's bodies, compiled once for the whole module (the other
// translation units see only its table's declaration: NYSTROM_KME_EXTERN_SIMD_LEVELS,
// detail/simd_dispatch.hpp): baseline SSE2 on x86-64, NEON on aarch64, portable
// vector code elsewhere. Empty where the compiler flags imply a higher level.
#define NYSTROM_KME_COMPILE_SIMD_BASELINE 1
#define NYSTROM_KME_COMPILE_SIMD_NEON 1
#include <nystrom_kme/detail/simd_dispatch.hpp>
