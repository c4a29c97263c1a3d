// The AVX-512 level's bodies (x86-64-v4), compiled once for the whole module (the
// other translation units see only its table's declaration:
// NYSTROM_KME_EXTERN_SIMD_LEVELS, detail/simd_dispatch.hpp). Empty on other
// architectures.
#define NYSTROM_KME_COMPILE_SIMD_AVX512 1
#include <nystrom_kme/detail/simd_dispatch.hpp>
