// OpenMP helpers: thread-count resolution, exception capture (no exception ever
// escapes a parallel region: that would call std::terminate), and the two loops
// over fixed partitions that every parallel routine outside the tile engine uses.
// The partitions depend on the problem size only, never on the thread count, so
// results do not either.
#pragma once

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <nystrom_kme/interrupt.hpp>
#include <nystrom_kme/types.hpp>

#if defined(NYSTROM_KME_WITH_OPENMP)
#include <omp.h>
#endif

namespace nystrom_kme::detail {

/// CPUs that a CFS quota of `quota` per `period` (same unit) allows: ceil(quota / period),
/// or 0 ("no limit") when quota or period is not positive.
inline int cpu_limit_from_quota(long long quota, long long period) {
  if (quota <= 0 || period <= 0) return 0;
  const long long cpus = quota / period + (quota % period != 0 ? 1 : 0);
  return static_cast<int>(std::min<long long>(cpus, INT_MAX));
}

/// A whole decimal integer (surrounding whitespace allowed), else false.
inline bool parse_cgroup_integer(const std::string& text, long long& value) {
  std::istringstream in(text);
  std::string token, rest;
  if (!(in >> token) || (in >> rest)) return false;
  char* end = nullptr;
  errno = 0;
  value = std::strtoll(token.c_str(), &end, 10);
  return errno == 0 && end == token.c_str() + token.size();
}

/// The CPU limit in the contents of a cgroup v2 `cpu.max` file ("$MAX $PERIOD", e.g.
/// "150000 100000\n" -> 2); 0 for "max ..." (no limit) or anything unreadable.
inline int cgroup_v2_cpu_limit(const std::string& cpu_max) {
  std::istringstream in(cpu_max);
  std::string quota, period, rest;
  if (!(in >> quota) || quota == "max" || !(in >> period) || (in >> rest)) return 0;
  long long q = 0, p = 0;
  if (!parse_cgroup_integer(quota, q) || !parse_cgroup_integer(period, p)) return 0;
  return cpu_limit_from_quota(q, p);
}

/// The CPU limit in the contents of cgroup v1 `cpu.cfs_quota_us` ("-1" = no limit) and
/// `cpu.cfs_period_us`; 0 for no limit or anything unreadable.
inline int cgroup_v1_cpu_limit(const std::string& quota_us, const std::string& period_us) {
  long long q = 0, p = 0;
  if (!parse_cgroup_integer(quota_us, q) || !parse_cgroup_integer(period_us, p)) return 0;
  return cpu_limit_from_quota(q, p);
}

/// The contents of a small file, or false when it cannot be read.
inline bool read_small_file(const std::string& path, std::string& out) {
  std::ifstream file(path);
  if (!file) return false;
  std::ostringstream text;
  text << file.rdbuf();
  out = text.str();
  return true;
}

/// The CPU quota, in CPUs rounded up (0: none, or the files are absent), of the cgroups
/// that `proc_self_cgroup` (the contents of /proc/self/cgroup, lines
/// "hierarchy-id:controllers:path") names, read under `root` (/sys/fs/cgroup): cgroup
/// v2 `cpu.max`, or v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us` under root/cpu (or
/// root/cpu,cpuacct), in the cgroup and every ancestor (the smallest wins, as the kernel
/// enforces). Inside a container the process's path may not exist under the container's
/// mount; the walk then ends at the mount's root, which is the container's own cgroup.
inline int read_cgroup_cpu_limit(const std::string& proc_self_cgroup, const std::string& root) {
  std::istringstream lines(proc_self_cgroup);
  std::string line, text, quota, period;
  int limit = 0;
  const auto take = [&limit](int cpus) {
    if (cpus > 0 && (limit == 0 || cpus < limit)) limit = cpus;
  };
  while (std::getline(lines, line)) {
    const std::size_t a = line.find(':');
    const std::size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = "," + line.substr(a + 1, b - a - 1) + ",";
    const bool v2 = controllers == ",,";
    if (!v2 && controllers.find(",cpu,") == std::string::npos) continue;
    std::string path = line.substr(b + 1);
    if (path.empty() || path[0] != '/' || path.find("/..") != std::string::npos) path = "/";
    const std::vector<std::string> mounts =
        v2 ? std::vector<std::string>{root}
           : std::vector<std::string>{root + "/cpu", root + "/cpu,cpuacct", root + "/cpuacct,cpu"};
    for (const std::string& mount : mounts) {
      for (std::string p = path;;) {
        const std::string dir = mount + (p == "/" ? "" : p) + "/";
        if (v2) {
          if (read_small_file(dir + "cpu.max", text)) take(cgroup_v2_cpu_limit(text));
        } else if (read_small_file(dir + "cpu.cfs_quota_us", quota) &&
                   read_small_file(dir + "cpu.cfs_period_us", period)) {
          take(cgroup_v1_cpu_limit(quota, period));
        }
        if (p == "/") break;
        const std::size_t slash = p.rfind('/');
        p = slash == 0 ? "/" : p.substr(0, slash);
      }
    }
  }
  return limit;
}

/// This process's cgroup CPU quota (above, from /proc/self/cgroup and /sys/fs/cgroup);
/// 0 outside Linux.
inline int read_cgroup_cpu_limit() {
#if defined(__linux__)
  std::string self;
  if (!read_small_file("/proc/self/cgroup", self)) return 0;
  return read_cgroup_cpu_limit(self, "/sys/fs/cgroup");
#else
  return 0;
#endif
}

/// read_cgroup_cpu_limit(), read once per process.
inline int cgroup_cpu_limit() {
  static const int limit = read_cgroup_cpu_limit();
  return limit;
}

/// CPUs this process may run on (its affinity mask); 1 without OpenMP.
inline int available_cpus() {
#if defined(NYSTROM_KME_WITH_OPENMP)
  return std::max(1, omp_get_num_procs());
#else
  return 1;
#endif
}

/// The threads a parallel routine uses. n_threads <= 0 (the default): OpenMP's thread
/// count (OMP_NUM_THREADS, omp_set_num_threads and threadpoolctl set it; libgomp's own
/// default follows the CPU affinity), at most the CPUs of the affinity mask and of the
/// cgroup CPU quota (containers, CI runners). An explicit count is capped at the CPUs
/// of the affinity mask: more threads than CPUs only wait for each other, and a few
/// thousand make the OpenMP runtime abort the process. Results do not depend on the
/// count. Builds without OpenMP use one thread.
inline int resolve_threads(int n_threads) {
#if defined(NYSTROM_KME_WITH_OPENMP)
  const int cpus = available_cpus();
  if (n_threads > 0) return std::min(n_threads, cpus);
  int threads = std::min(omp_get_max_threads(), cpus);
  if (const int quota = cgroup_cpu_limit(); quota > 0) threads = std::min(threads, quota);
  return std::max(1, threads);
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

/// Runs bodies inside a parallel region and keeps the first exception thrown;
/// after one, failed() tells the other threads to stop taking work.
class ErrorCapture {
 public:
  template <class Body>
  void run(Body&& body) noexcept {
    try {
      body();
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
      failed_.store(true, std::memory_order_relaxed);
    }
  }
  bool failed() const { return failed_.load(std::memory_order_relaxed); }
  void rethrow() const {
    if (error_) std::rethrow_exception(error_);
  }

 private:
  std::mutex mutex_;
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};
};

/// Runs body(c) for c in [0, n_tasks) on up to n_threads threads (dynamic schedule,
/// one task at a time). The caller's decomposition into tasks must not depend on
/// the thread count. The first exception thrown is rethrown after the loop.
template <class Body>
void parallel_tasks(Index n_tasks, int n_threads, Body&& body) {
  if (n_tasks <= 0) return;
  ErrorCapture errors;
  InterruptPoller poller;
#if defined(NYSTROM_KME_WITH_OPENMP)
  const int threads = int(std::min<Index>(resolve_threads(n_threads), n_tasks));
#pragma omp parallel for schedule(dynamic, 1) num_threads(threads) if (threads > 1)
  for (Index c = 0; c < n_tasks; ++c) {
    errors.run([&] {
      if (errors.failed()) return;
      if (thread_id() == 0) poller.poll();
      body(c);
    });
  }
#else
  (void)n_threads;
  for (Index c = 0; c < n_tasks && !errors.failed(); ++c) {
    errors.run([&] {
      poller.poll();
      body(c);
    });
  }
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
  InterruptPoller poller;
#if defined(NYSTROM_KME_WITH_OPENMP)
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
#endif
  for (Index c = 0; c < n_chunks; ++c) {
    errors.run([&] {
      if (errors.failed()) return;
      if (thread_id() == 0) poller.poll();
      const Index begin = c * chunk;
      body(c, begin, std::min(n, begin + chunk));
    });
  }
  (void)nt;
  errors.rethrow();
}

}  // namespace nystrom_kme::detail
