// Minimal test helpers: CHECK records a failure and keeps going; main returns it.
#pragma once

#include <cstdio>

namespace test {
inline int failures = 0;
}

#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) {                                                           \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++test::failures;                                                      \
    }                                                                        \
  } while (0)

#define CHECK_THROWS(expr)                                                   \
  do {                                                                       \
    bool thrown = false;                                                     \
    try {                                                                    \
      (void)(expr);                                                          \
    } catch (const std::exception&) {                                        \
      thrown = true;                                                         \
    }                                                                        \
    if (!thrown) {                                                           \
      std::fprintf(stderr, "%s:%d: expected an exception: %s\n", __FILE__, __LINE__, #expr); \
      ++test::failures;                                                      \
    }                                                                        \
  } while (0)

#include <cmath>
#include <cstdlib>
#include <exception>
#include <random>
#include <string>

#include <nystrom_kme/simd.hpp>
#include <nystrom_kme/types.hpp>

namespace test {
/// True when f() throws an E whose message contains `needle` (else says what it got).
template <class E, class F>
bool throws_with(F&& f, const std::string& needle) {
  try {
    f();
  } catch (const E& e) {
    if (std::string(e.what()).find(needle) != std::string::npos) return true;
    std::fprintf(stderr, "  message without '%s': %s\n", needle.c_str(), e.what());
    return false;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "  unexpected exception type: %s\n", e.what());
    return false;
  }
  return false;
}

/// An (n, d) matrix of independent N(0, 1) entries from a fixed seed.
template <class T = double>
nystrom_kme::RowMatrix<T> normal_matrix(nystrom_kme::Index n, nystrom_kme::Index d, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  nystrom_kme::RowMatrix<T> X(n, d);
  for (nystrom_kme::Index i = 0; i < n; ++i)
    for (nystrom_kme::Index k = 0; k < d; ++k) X(i, k) = T(normal(gen));
  return X;
}

/// k(x, y) straight from the definitions, in long double, independently of the
/// core's kernel map: bandwidth s, polynomial offset c and degree p.
inline long double reference_kernel(const std::string& name, const double* x, const double* y,
                                    nystrom_kme::Index d, long double s, long double c = 1, int p = 2,
                                    long double alpha = 1) {
  long double d2 = 0, dot = 0, l1 = 0;
  for (nystrom_kme::Index k = 0; k < d; ++k) {
    const long double e = (long double)x[k] - y[k];
    d2 += e * e;
    l1 += std::abs(e);
    dot += (long double)x[k] * y[k];
  }
  const long double r = std::sqrt(d2);
  if (name == "gaussian") return std::exp(-d2 / (2 * s * s));
  if (name == "laplacian") return std::exp(-r / s);
  if (name == "matern32") return (1 + std::sqrt(3.0L) * r / s) * std::exp(-std::sqrt(3.0L) * r / s);
  if (name == "matern52")
    return (1 + std::sqrt(5.0L) * r / s + 5 * d2 / (3 * s * s)) * std::exp(-std::sqrt(5.0L) * r / s);
  if (name == "inverse_multiquadric") return 1 / std::sqrt(1 + d2 / (s * s));
  if (name == "rational_quadratic") return std::pow(1 + d2 / (2 * alpha * s * s), -alpha);
  if (name == "laplacian_l1") return std::exp(-l1 / s);
  if (name == "linear") return dot / (s * s);
  return std::pow(dot / (s * s) + c, (long double)p);
}

/// 77 (ctest: skipped) when NYSTROM_KME_SIMD names a compiled level this CPU
/// cannot run; 0 otherwise (any other bad value fails at first use, as it should).
inline int skip_if_level_unsupported() {
  const char* env = std::getenv("NYSTROM_KME_SIMD");
  if (!env || std::string(env).empty() || std::string(env) == "auto") return 0;
  try {
    const nystrom_kme::SimdLevel level = nystrom_kme::parse_simd_level(env);
    if (nystrom_kme::detail::compiled_table(level) && !nystrom_kme::cpu_supports(level)) {
      std::fprintf(stderr, "skipped: this CPU cannot run NYSTROM_KME_SIMD=%s\n", env);
      return 77;
    }
  } catch (const std::exception&) {
  }
  return 0;
}
}  // namespace test
