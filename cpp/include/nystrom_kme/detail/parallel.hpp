// OpenMP helpers: thread-count resolution, exception capture (no exception ever
// escapes a parallel region: that would call std::terminate), and the two loops
// over fixed partitions that every parallel routine outside the tile engine uses.
// The partitions depend on the problem size only, never on the thread count, so
// results do not either.
#pragma once

#include <algorithm>
#include <exception>
#include <mutex>

#include <nystrom_kme/types.hpp>

#if defined(NYSTROM_KME_WITH_OPENMP)
#include <omp.h>
#endif

namespace nystrom_kme::detail {

/// n_threads <= 0 means "all OpenMP threads"; builds without OpenMP use one.
inline int resolve_threads(int n_threads) {
#if defined(NYSTROM_KME_WITH_OPENMP)
  return n_threads > 0 ? n_threads : omp_get_max_threads();
#else
  (void)n_threads;
  return 1;
#endif
}

inline int thread_id() {
#if defined(NYSTROM_KME_WITH_OPENMP)
  return omp_get_thread_num();
#else
  return 0;
#endif
}

/// Runs bodies inside a parallel region and keeps the first exception thrown.
class ErrorCapture {
 public:
  template <class Body>
  void run(Body&& body) noexcept {
    try {
      body();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr error_;
};

/// Runs body(c) for c in [0, n_tasks) on up to n_threads threads (dynamic schedule,
/// one task at a time). The caller's decomposition into tasks must not depend on
/// the thread count. The first exception thrown is rethrown after the loop.
template <class Body>
void parallel_tasks(Index n_tasks, int n_threads, Body&& body) {
  if (n_tasks <= 0) return;
  ErrorCapture errors;
#if defined(NYSTROM_KME_WITH_OPENMP)
  const int threads = int(std::min<Index>(resolve_threads(n_threads), n_tasks));
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
  for (Index c = 0; c < n_tasks; ++c) errors.run([&] { body(c); });
#else
  (void)n_threads;
  for (Index c = 0; c < n_tasks; ++c) errors.run([&] { body(c); });
#endif
  errors.rethrow();
}

/// Runs body(c, begin, end) for every chunk c of the fixed partition of [0, n) into
/// chunks of `chunk` rows ([c * chunk, min(n, (c + 1) * chunk))), in parallel over
/// chunks (static schedule). The first exception thrown is rethrown after the loop.
template <class Body>
void for_each_chunk(Index n, Index chunk, int n_threads, Body&& body) {
  const Index n_chunks = (n + chunk - 1) / chunk;
  const int nt = static_cast<int>(std::max<Index>(1, std::min<Index>(resolve_threads(n_threads), n_chunks)));
  ErrorCapture errors;
#if defined(NYSTROM_KME_WITH_OPENMP)
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
#endif
  for (Index c = 0; c < n_chunks; ++c) {
    errors.run([&] {
      const Index begin = c * chunk;
      body(c, begin, std::min(n, begin + chunk));
    });
  }
  (void)nt;
  errors.rethrow();
}

}  // namespace nystrom_kme::detail
