// Portable 64-byte vectors (GCC/Clang vector extensions) and a vectorised exp.
//
// A 64-byte vector is one AVX-512 register, two AVX2 or four SSE registers: the
// compiler lowers it to whatever the target has, so the same code serves
// -march=native source builds and portable wheels.
#pragma once

#include <cstdint>
#include <cstring>

#if !defined(__GNUC__)
#error "nystrom_kme needs GCC or Clang vector extensions (MSVC is not supported yet)"
#endif

namespace nystrom_kme::detail {

template <class T>
struct Vec;

template <>
struct Vec<double> {
  typedef double type __attribute__((vector_size(64)));
  typedef std::int64_t itype __attribute__((vector_size(64)));
  static constexpr int lanes = 8;
};

template <>
struct Vec<float> {
  typedef float type __attribute__((vector_size(64)));
  typedef std::int32_t itype __attribute__((vector_size(64)));
  static constexpr int lanes = 16;
};

template <class T>
using vec_t = typename Vec<T>::type;

// memcpy-based loads and stores: no alignment requirement, compiled to one move.
template <class T>
inline vec_t<T> load(const T* p) {
  vec_t<T> v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
inline void store(T* p, vec_t<T> v) {
  std::memcpy(p, &v, sizeof v);
}

template <class T>
inline vec_t<T> splat(T x) {
  return vec_t<T>{} + x;
}

template <class T>
inline vec_t<T> vmax(vec_t<T> a, vec_t<T> b) {
  return a > b ? a : b;
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

/// Lane-wise square root of non-negative lanes (scalar sqrt per lane; GCC and
/// Clang turn the fixed-length loop into one vector sqrt).
template <class T>
inline vec_t<T> sqrt(vec_t<T> x) {
  vec_t<T> out = {};
  for (int i = 0; i < Vec<T>::lanes; ++i) out[i] = __builtin_sqrt(x[i]);
  return out;
}

}  // namespace nystrom_kme::detail
