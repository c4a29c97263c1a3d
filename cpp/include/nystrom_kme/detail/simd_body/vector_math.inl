// Vectors (GCC/Clang vector extensions), a vectorised exp and sqrt, and the
// kernel map from squared distances or inner products to kernel values.
//
// Included once per instruction set by detail/simd_dispatch.hpp, inside
// namespace nystrom_kme::detail::<level> and that level's target region, with
// NYSTROM_KME_SIMD_BYTES (16, 32 or 64) and one of NYSTROM_KME_SIMD_SSE2 /
// _AVX2 / _AVX512 / _NEON / _GENERIC defined. No include guard, on purpose.

constexpr int kVectorBytes = NYSTROM_KME_SIMD_BYTES;

template <class T>
struct Vec;

template <>
struct Vec<double> {
  typedef double type __attribute__((vector_size(NYSTROM_KME_SIMD_BYTES)));
  typedef std::int64_t itype __attribute__((vector_size(NYSTROM_KME_SIMD_BYTES)));
  typedef std::uint64_t utype __attribute__((vector_size(NYSTROM_KME_SIMD_BYTES)));
  typedef float half_float __attribute__((vector_size(NYSTROM_KME_SIMD_BYTES / 2)));
  static constexpr int lanes = NYSTROM_KME_SIMD_BYTES / 8;
};

template <>
struct Vec<float> {
  typedef float type __attribute__((vector_size(NYSTROM_KME_SIMD_BYTES)));
  typedef std::int32_t itype __attribute__((vector_size(NYSTROM_KME_SIMD_BYTES)));
  static constexpr int lanes = NYSTROM_KME_SIMD_BYTES / 4;
};

template <class T>
using vec_t = typename Vec<T>::type;

// memcpy-based loads and stores: no alignment requirement, compiled to one move.
template <class T>
inline vec_t<T> load(const T* p) {
  vec_t<T> v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
inline void store(T* p, vec_t<T> v) {
  __builtin_memcpy(p, &v, sizeof v);
}

template <class T>
inline vec_t<T> splat(T x) {
  return vec_t<T>{} + x;
}

template <class T>
inline vec_t<T> vmax(vec_t<T> a, vec_t<T> b) {
  return a > b ? a : b;
}

template <class T>
inline vec_t<T> vmin(vec_t<T> a, vec_t<T> b) {
  return a < b ? a : b;
}

/// |x| by clearing the sign bit: one AND, where a compare, a negation and a blend took
/// three (the l1 distances' inner loop: the binned l1 pass 1.12x faster).
template <class T>
inline vec_t<T> vabs(vec_t<T> x) {
  using I = typename Vec<T>::itype;
  using S = std::conditional_t<sizeof(T) == 4, std::int32_t, std::int64_t>;
  constexpr S magnitude = std::numeric_limits<S>::max();  // every bit but the sign
  return (vec_t<T>)((I)x & magnitude);
}

/// Widens Vec<double>::lanes floats to one vector of doubles.
inline Vec<double>::type load_as_double(const double* p) { return load(p); }
inline Vec<double>::type load_as_double(const float* p) {
  Vec<double>::half_float v;
  __builtin_memcpy(&v, p, sizeof v);
  return __builtin_convertvector(v, Vec<double>::type);
}

/// Lanes [H * L, H * L + L) of a float vector (L = Vec<double>::lanes) as doubles. In
/// registers where the compiler has __builtin_shufflevector (GCC 12, Clang): through
/// memory, GCC keeps a register block's float accumulators in memory too.
template <int H, std::size_t... I>
inline Vec<double>::type widen_half(Vec<float>::type v, std::index_sequence<I...>) {
#if NYSTROM_KME_HAS_SHUFFLEVECTOR
  return __builtin_convertvector(__builtin_shufflevector(v, v, (H * sizeof...(I) + I)...), Vec<double>::type);
#else
  float lanes[Vec<float>::lanes];
  store(lanes, v);
  return load_as_double(lanes + H * sizeof...(I));
#endif
}
template <int H>
inline Vec<double>::type widen_half(Vec<float>::type v) {
  return widen_half<H>(v, std::make_index_sequence<std::size_t(Vec<double>::lanes)>{});
}

/// The vector 0, 1, ..., lanes - 1 (a mask of the first k lanes: lane_index < k).
template <class T>
inline vec_t<T> lane_index() {
  vec_t<T> v{};
  for (int l = 0; l < Vec<T>::lanes; ++l) v[l] = T(l);
  return v;
}

/// The sum of a vector's lanes in float64, in a fixed tree (lane i with lane i + w, w
/// halving from lanes / 2): log2(lanes) additions deep, where one addition per lane in a
/// chain would wait on each one's latency.
inline double lane_sum(Vec<double>::type v) {
  constexpr int L = Vec<double>::lanes;
  double lanes[L];
  store(lanes, v);
  for (int w = L / 2; w >= 1; w /= 2) {
    for (int i = 0; i < w; ++i) lanes[i] += lanes[i + w];
  }
  return lanes[0];
}
inline double lane_sum(Vec<float>::type v) { return lane_sum(widen_half<0>(v) + widen_half<1>(v)); }

/// exp(x) lane by lane, for x <= 709 (the kernels only pass x <= 0): relative
/// error below 4e-16. Cody-Waite reduction x = k ln2 + r with |r| <= ln2/2, a
/// degree-10 polynomial interpolating exp at the Chebyshev nodes of that interval
/// (3.3e-16 relative, checked in high precision), then 2^k built in the exponent
/// bits. Inputs below the smallest normal result give exactly 0.
inline Vec<double>::type exp(Vec<double>::type x) {
  using V = Vec<double>::type;
  using I = Vec<double>::itype;
  const V lo = splat(-708.3964185322641);
  const V xc = vmax<double>(x, lo);
  const V magic = splat(0x1.8p52);  // adding it rounds to an integer kept in the low mantissa bits
  const V t = xc * 1.4426950408889634 + magic;
  const V k = t - magic;
  V r = xc - k * 6.93147180369123816490e-01;
  r = r - k * 1.90821492927058770002e-10;
  V p = splat(2.7626357241447223e-07);
  p = p * r + 2.764018079620985e-06;
  p = p * r + 2.4801504346997686e-05;
  p = p * r + 0.00019841170270440067;
  p = p * r + 0.0013888888932488599;
  p = p * r + 0.008333333385667782;
  p = p * r + 0.04166666666657314;
  p = p * r + 0.16666666666554406;
  p = p * r + 0.5000000000000006;
  p = p * r + 1.0000000000000067;
  p = p * r + 1.0;
  const I ki = (I)t - (I)magic;
  const V scale = (V)((ki + 1023) << 52);
  const V result = p * scale;
  return x < lo ? splat(0.0) : result;
}

/// exp(x) lane by lane in float, for x <= 88: relative error below 2e-7.
inline Vec<float>::type exp(Vec<float>::type x) {
  using V = Vec<float>::type;
  using I = Vec<float>::itype;
  const V lo = splat(-87.33654f);
  const V xc = vmax<float>(x, lo);
  const V magic = splat(0x1.8p23f);
  const V t = xc * 1.44269504f + magic;
  const V k = t - magic;
  V r = xc - k * 0.693145751953125f;
  r = r - k * 1.428606765330187e-06f;
  V p = splat(1.0f / 5040.0f);
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const I ki = (I)t - (I)magic;
  const V scale = (V)((ki + 127) << 23);
  const V result = p * scale;
  return x < lo ? splat(0.0f) : result;
}

/// 2^y lane by lane in float, for y <= 127 (the kernel maps pass y <= 0): relative error
/// below 1e-7 (7.9e-8 measured in float arithmetic on r). y = k + r with k the nearest
/// integer and r = y - k exact (|r| <= 1/2), a degree-6 polynomial fitted to 2^r on
/// that interval for the relative error (1.9e-9), then 2^k built in the exponent bits.
/// Inputs below -126 give exactly 0 (no subnormal reaches a sum: some CPUs take a slow
/// path for them). The kernel maps' base 2: log2(e) goes into the distance's scale, so no
/// Cody-Waite reduction is needed, and the polynomial is a degree lower than exp's (two
/// Gaussians' binned float sums 1.1x faster; AVX-512's scalef, which builds p 2^k in one
/// instruction, another 1.1x).
inline Vec<float>::type exp2(Vec<float>::type y) {
  using V = Vec<float>::type;
  const V lo = splat(-126.0f);
  const V magic = splat(0x1.8p23f);  // adding it rounds to an integer kept in the low mantissa bits
#if defined(NYSTROM_KME_SIMD_AVX512)
  const V t = y + magic;  // y = -inf: r is NaN, and the blend below gives 0
#else
  const V yc = vmax<float>(y, lo);  // k + 127 stays a normal exponent
  const V t = yc + magic;
#endif
  const V k = t - magic;
#if defined(NYSTROM_KME_SIMD_AVX512)
  const V r = y - k;
#else
  const V r = yc - k;
#endif
  V p = splat(1.53458110e-4f);
  p = p * r + 1.33999309e-3f;
  p = p * r + 9.61848907e-3f;
  p = p * r + 5.55032864e-2f;
  p = p * r + 2.40226462e-1f;
  p = p * r + 6.93147182e-1f;
  p = p * r + 1.0f;
#if defined(NYSTROM_KME_SIMD_AVX512)
  // the masked form with every lane set: GCC's unmasked one reads an undefined vector,
  // -Werror=uninitialized where this gets inlined into some callers (seen with GCC 12)
  const V result = (V)_mm512_mask_scalef_ps((__m512)p, __mmask16(0xFFFF), (__m512)p, (__m512)k);
#else
  using I = Vec<float>::itype;
  const V result = p * (V)(((I)t - ((I)magic - 127)) << 23);  // the bits of 2^k
#endif
  return y < lo ? splat(0.0f) : result;
}

/// Lane-wise square root of non-negative lanes. Through the instruction set's own
/// vector sqrt: a lane loop of __builtin_sqrt stays scalar (it may set errno).
inline Vec<double>::type sqrt(Vec<double>::type x) {
  using V = Vec<double>::type;
#if defined(NYSTROM_KME_SIMD_AVX512)
  return (V)_mm512_sqrt_pd((__m512d)x);
#elif defined(NYSTROM_KME_SIMD_AVX2)
  return (V)_mm256_sqrt_pd((__m256d)x);
#elif defined(NYSTROM_KME_SIMD_SSE2)
  return (V)_mm_sqrt_pd((__m128d)x);
#elif defined(NYSTROM_KME_SIMD_NEON)
  return (V)vsqrtq_f64((float64x2_t)x);
#else
  V out = {};
  for (int i = 0; i < Vec<double>::lanes; ++i) out[i] = __builtin_sqrt(x[i]);
  return out;
#endif
}

inline Vec<float>::type sqrt(Vec<float>::type x) {
  using V = Vec<float>::type;
#if defined(NYSTROM_KME_SIMD_AVX512)
  return (V)_mm512_sqrt_ps((__m512)x);
#elif defined(NYSTROM_KME_SIMD_AVX2)
  return (V)_mm256_sqrt_ps((__m256)x);
#elif defined(NYSTROM_KME_SIMD_SSE2)
  return (V)_mm_sqrt_ps((__m128)x);
#elif defined(NYSTROM_KME_SIMD_NEON)
  return (V)vsqrtq_f32((float32x4_t)x);
#else
  V out = {};
  for (int i = 0; i < Vec<float>::lanes; ++i) out[i] = __builtin_sqrtf(x[i]);
  return out;
#endif
}

/// log(1 + x) lane by lane for 0 <= x <= inf (the rational quadratic kernel's x = v /
/// (2 alpha)): u = 1 + x = 2^k m with m in [sqrt(1/2), sqrt(2)), log m from fdlibm's
/// log (s = f / (2 + f), a degree-14 odd polynomial in s, 1 ulp), plus the rounding of
/// 1 + x, (x - (u - 1)) / u: a few ulp relative over the whole range.
inline Vec<double>::type log1p(Vec<double>::type x) {
  using V = Vec<double>::type;
  using U = Vec<double>::utype;
  const V u = x + 1.0;
  const V c = (x - (u - 1.0)) / u;  // the bits of x that 1 + x lost, to first order
  const U bits = (U)u;
  U e = bits >> 52;                                        // biased exponent (u >= 1: no sign)
  V m = (V)((bits & 0x000fffffffffffffULL) | 0x3ff0000000000000ULL);  // [1, 2)
  const auto big = m > 1.4142135623730951;  // lanes of -1 (true) or 0
  m = big ? m * 0.5 : m;
  e = e - (U)big;
  // k = e - 1023 as double, exactly: 2^52 + e read as a double, minus 2^52 + 1023
  const V k = (V)(e | 0x4330000000000000ULL) - (4503599627370496.0 + 1023.0);
  const V f = m - 1.0;
  const V s = f / (f + 2.0);
  const V z = s * s;
  const V w = z * z;
  const V t1 = w * (3.999999999940941908e-01 + w * (2.222219843214978396e-01 + w * 1.531383769920937332e-01));
  const V t2 = z * (6.666666666666735130e-01 +
                    w * (2.857142874366239149e-01 + w * (1.818357216161805012e-01 + w * 1.479819860511658591e-01)));
  const V r = t1 + t2;
  const V hfsq = 0.5 * f * f;
  const V out = k * 6.93147180369123816490e-01 - ((hfsq - (s * (hfsq + r) + (k * 1.90821492927058770002e-10 + c))) - f);
  return x < __builtin_inf() ? out : x;  // log1p(inf) = inf
}

/// log(1 + x) lane by lane in float for 0 <= x <= inf: musl's logf polynomial, a few ulp.
inline Vec<float>::type log1p(Vec<float>::type x) {
  using V = Vec<float>::type;
  using I = Vec<float>::itype;
  const V u = x + 1.0f;
  const V c = (x - (u - 1.0f)) / u;
  const I bits = (I)u;
  I e = bits >> 23;
  V m = (V)((bits & 0x007fffff) | 0x3f800000);
  const auto big = m > 1.41421356f;  // lanes of -1 (true) or 0
  m = big ? m * 0.5f : m;
  e = e - big;
  const V k = __builtin_convertvector(e - 127, V);
  const V f = m - 1.0f;
  const V s = f / (f + 2.0f);
  const V z = s * s;
  const V w = z * z;
  const V t1 = w * (0.40000972152f + w * 0.24279078841f);
  const V t2 = z * (0.66666662693f + w * 0.28498786688f);
  const V hfsq = 0.5f * f * f;
  const V out = k * 0.693145751953125f - ((hfsq - (s * (hfsq + (t1 + t2)) + (k * 1.428606765330187e-06f + c))) - f);
  return x < __builtin_inff() ? out : x;  // log1p(inf) = inf
}

// The level's exp, sqrt and log1p under other names, for SimdMath (whose members of
// the same names would find themselves).
template <class V>
inline V level_exp(V x) {
  return exp(x);
}
template <class V>
inline V level_exp2(V x) {
  return exp2(x);
}
template <class V>
inline V level_sqrt(V x) {
  return sqrt(x);
}
template <class V>
inline V level_log1p(V x) {
  return log1p(x);
}

/// The arithmetic of this level for the kernel formulas (kernel_formulas.inl).
template <class Lane>
struct SimdMath {
  using V = vec_t<Lane>;
  using T = Lane;
  static constexpr Lane far_v = Lane(sizeof(Lane) == 4 ? 1e36 : 1e300);
  static constexpr Lane far_t = Lane(sizeof(Lane) == 4 ? 1e18 : 1e150);
  static V splat(Lane x) { return vec_t<Lane>{} + x; }
  static V exp(V x) { return level_exp(x); }
  static V exp2(V x) { return level_exp2(x); }  // float lanes only
  static V sqrt(V x) { return level_sqrt(x); }
  static V rsqrt(V x) { return Lane(1) / level_sqrt(x); }
  static V log1p(V x) { return level_log1p(x); }
  static V min(V a, Lane b) { return vmin<Lane>(a, splat(b)); }
  static V positive_or_zero(V t, V x) { return t > Lane(0) ? x : splat(0); }
};

#include <nystrom_kme/kernel_formulas.inl>

/// The kernel map, lane by lane, on values of the scaled points x / bandwidth:
/// squared distances (radial kernels), l1 distances (laplacian_l1) or inner products
/// (dot-product kernels) to kernel values (kernel_formulas.inl). A distance of 0 gives
/// exactly 1 for every radial kernel. Float lanes take the exponential family in base 2,
/// log2(e) in the exponent's rate, as map_scaled does (exp2: no Cody-Waite reduction, a
/// shorter polynomial; the fit's pass 1.1x faster in float32).
template <class T>
inline vec_t<T> kernel_map(const Kernel& kernel, vec_t<T> v) {
  return visit_kind(
      kernel.kind(),
      [&](auto tag) {
        using F = typename decltype(tag)::formula;
        if constexpr (std::is_same_v<T, float> && F::family == Family::exponential) {
          return exponential_of_q<SimdMath<T>, F>(exponent_in_base_2<SimdMath<T>, F>(v));
        } else {
          return kernel_value<SimdMath<T>, decltype(tag)::kind>(v, kernel.params());
        }
      },
      [&]() { return v * T(0) / T(0); });  // no kind (a cast): NaN, never a wrong kernel
}
