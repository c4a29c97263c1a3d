// Label weights of random splits (RandomSplits, random_splits.hpp), one panel of
// kWeightPanel columns at a time: each column is a SplitMix64 stream driving
// selection sampling, and the columns of a panel run as independent vector lanes.
//
// Included once per level by detail/simd_dispatch.hpp, after vector_math.inl, in
// the same namespace and target region. No include guard, on purpose.

/// For the next `rows` rows of a panel of kWeightPanel columns: column c joins
/// the first sample with probability needed[c] / rows-left (rows-left = left0 at
/// the first row), drawing from SplitMix64 state[c]; writes plus[c] or minus[c]
/// to out[i * ld + c] and advances state and needed. Columns with plus = minus = 0
/// are padding (they still draw, and write 0).
inline void split_weights(std::uint64_t* state, double* needed, const double* plus,
                          const double* minus, Index left0, Index rows, double* out, Index ld) {
  using VD = Vec<double>::type;
  using VU = Vec<double>::itype;  // int64 lanes, used as unsigned bit patterns
  constexpr int LD = Vec<double>::lanes;
  constexpr int NV = int(kWeightPanel) / LD;
  VU s[NV];
  VD need[NV], p[NV], m[NV];
  for (int v = 0; v < NV; ++v) {
    __builtin_memcpy(&s[v], state + v * LD, sizeof(VU));
    need[v] = load(needed + v * LD);
    p[v] = load(plus + v * LD);
    m[v] = load(minus + v * LD);
  }
  const VU one_bits = (VU){} + std::int64_t(0x3FF0000000000000);
  for (Index i = 0; i < rows; ++i) {
    const VD left = splat(double(left0 - i));
    for (int v = 0; v < NV; ++v) {
      // SplitMix64 (Steele, Lea, Flood 2014) lane by lane, in unsigned arithmetic.
      s[v] = (VU)((Vec<double>::utype)s[v] + 0x9E3779B97F4A7C15ULL);
      auto z = (Vec<double>::utype)s[v];
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
      z = z ^ (z >> 31);
      // 52 random mantissa bits under the exponent of 1.0: a uniform in [1, 2).
      const VD u = (VD)((VU)(z >> 12) | one_bits) - 1.0;
      const VU first = (VU)(u * left < need[v]);  // all ones where selected
      need[v] -= (VD)(first & (VU)((VD){} + 1.0));  // bits of 1.0 where selected, else 0
      store(out + i * ld + v * LD, first ? p[v] : m[v]);
    }
  }
  for (int v = 0; v < NV; ++v) {
    __builtin_memcpy(state + v * LD, &s[v], sizeof(VU));
    store(needed + v * LD, need[v]);
  }
}
