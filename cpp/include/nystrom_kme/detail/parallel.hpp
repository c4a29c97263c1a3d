// OpenMP helpers: thread-count resolution and exception capture, so that no
// exception ever escapes a parallel region (that would call std::terminate).
#pragma once

#include <exception>
#include <mutex>

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

}  // namespace nystrom_kme::detail
