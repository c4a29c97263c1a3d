// The AVX2 level's bodies (x86-64-v3), compiled once for the whole module (the
// other translation units see only its table's declaration:
// NYSTROM_KME_EXTERN_SIMD_LEVELS, detail/simd_dispatch.hpp). Empty on other
// architectures and where the compiler flags imply AVX-512.
#define NYSTROM_KME_COMPILE_SIMD_AVX2 1
#include <nystrom_kme/detail/simd_dispatch.hpp>
