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

/// Widens Vec<double>::lanes floats to one vector of doubles.
inline Vec<double>::type load_as_double(const double* p) { return load(p); }
inline Vec<double>::type load_as_double(const float* p) {
  Vec<double>::half_float v;
  __builtin_memcpy(&v, p, sizeof v);
  return __builtin_convertvector(v, Vec<double>::type);
}

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

/// The kernel map, lane by lane, on values of the scaled points x / bandwidth:
/// squared distances (radial kernels) or inner products (dot-product kernels) to
/// kernel values. A distance of 0 gives exactly 1 for every radial kernel.
template <class T>
inline vec_t<T> kernel_map(const Kernel& kernel, vec_t<T> v) {
  // Radial kernels vanish far away: an overflowed (infinite) distance gives 0, and
  // clamping it keeps Matern's (1 + r) exp(-r) at 0 instead of inf * 0.
  const vec_t<T> far = splat(T(sizeof(T) == 4 ? 1e36 : 1e300));
  switch (kernel.kind()) {
    case KernelKind::gaussian:
      return exp(v * T(-0.5));
    case KernelKind::laplacian:
      return exp(-sqrt(v));
    case KernelKind::matern32: {
      const vec_t<T> r = sqrt(vmin<T>(v, far)) * T(1.7320508075688772);
      return (r + T(1)) * exp(-r);
    }
    case KernelKind::matern52: {
      const vec_t<T> r = sqrt(vmin<T>(v, far)) * T(2.23606797749979);
      return (r * r * T(1.0 / 3.0) + r + T(1)) * exp(-r);
    }
    case KernelKind::inverse_multiquadric:
      return T(1) / sqrt(v + T(1));
    case KernelKind::linear:
      return v;
    case KernelKind::polynomial: {
      const vec_t<T> base = v + T(kernel.offset());
      vec_t<T> result = splat(T(1));
      vec_t<T> power = base;
      for (int e = kernel.degree(); e > 0; e >>= 1) {  // exponentiation by squaring
        if (e & 1) result *= power;
        power *= power;
      }
      return result;
    }
  }
  return v;  // unreachable
}
