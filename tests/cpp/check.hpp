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
