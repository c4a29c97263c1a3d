// One instruction-set level's code, in order. Included by simd_dispatch.hpp once per
// level, inside that level's namespace and target region, with NYSTROM_KME_SIMD_BYTES,
// NYSTROM_KME_SIMD_LEVEL and the level's NYSTROM_KME_SIMD_<ISA> macro defined.
// It undefines those macros again. No include guard, on purpose.
#include <nystrom_kme/detail/simd_body/vector_math.inl>
#include <nystrom_kme/detail/simd_body/tile_kernels.inl>
#include <nystrom_kme/detail/simd_body/tile_sums.inl>
#include <nystrom_kme/detail/simd_body/split_labels.inl>
#include <nystrom_kme/detail/simd_body/gemm.inl>
#include <nystrom_kme/detail/simd_body/table.inl>

#undef NYSTROM_KME_SIMD_LEVEL
#undef NYSTROM_KME_SIMD_BYTES
#undef NYSTROM_KME_SIMD_SSE2
#undef NYSTROM_KME_SIMD_AVX2
#undef NYSTROM_KME_SIMD_AVX512
#undef NYSTROM_KME_SIMD_NEON
#undef NYSTROM_KME_SIMD_GENERIC
#undef NYSTROM_KME_UNROLL
