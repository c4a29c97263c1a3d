// The level's table of entry points, for the dispatcher (simd_dispatch.hpp).
// Included last, once per level, in that level's namespace. No include guard.

/// The level's entry points, for the dispatcher.
inline constexpr SimdTable kTable = {
    NYSTROM_KME_SIMD_LEVEL,
    kPartialLayout,
    &map_values,
    &split_weights,
    &gemm_acc,
    {&tile_sums<double>, &tile_matrix<double>, &tile_bins<double>, &kernel_rows<double>, &paired_rows<double>,
     &all_finite<double>},
    {&tile_sums<float>, &tile_matrix<float>, &tile_bins<float>, &kernel_rows<float>, &paired_rows<float>,
     &all_finite<float>},
};
