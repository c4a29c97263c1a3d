// Thread counts (detail/parallel.hpp): the cgroup CPU quota parsers on file contents
// as the kernel writes them, the walk over a fake cgroup tree, the default count
// (OpenMP's, capped by the affinity mask and the quota) and the cap on explicit counts
// far above the CPUs.
#include <atomic>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include <nystrom_kme/detail/parallel.hpp>
#include <nystrom_kme/kernel_sums.hpp>

#include "check.hpp"

using namespace nystrom_kme;
using detail::cgroup_v1_cpu_limit;
using detail::cgroup_v2_cpu_limit;

namespace {

void test_cgroup_v2_parsing() {
  CHECK(cgroup_v2_cpu_limit("max 100000\n") == 0);     // no limit
  CHECK(cgroup_v2_cpu_limit("200000 100000\n") == 2);
  CHECK(cgroup_v2_cpu_limit("150000 100000\n") == 2);  // 1.5 CPUs: rounded up
  CHECK(cgroup_v2_cpu_limit("50000 100000") == 1);     // half a CPU: still one thread
  CHECK(cgroup_v2_cpu_limit("1 1000000\n") == 1);
  CHECK(cgroup_v2_cpu_limit("400000 50000\n") == 8);
  CHECK(cgroup_v2_cpu_limit("  300000   100000  \n") == 3);
  // Anything else is no limit: absent, empty, malformed, overflowing.
  CHECK(cgroup_v2_cpu_limit("") == 0);
  CHECK(cgroup_v2_cpu_limit("\n") == 0);
  CHECK(cgroup_v2_cpu_limit("200000") == 0);
  CHECK(cgroup_v2_cpu_limit("200000 0\n") == 0);
  CHECK(cgroup_v2_cpu_limit("-1 100000\n") == 0);
  CHECK(cgroup_v2_cpu_limit("2e5 100000\n") == 0);
  CHECK(cgroup_v2_cpu_limit("200000 100000 7\n") == 0);
  CHECK(cgroup_v2_cpu_limit("99999999999999999999999 100000\n") == 0);
  CHECK(cgroup_v2_cpu_limit("9223372036854775807 1\n") == INT_MAX);
}

void test_cgroup_v1_parsing() {
  CHECK(cgroup_v1_cpu_limit("-1\n", "100000\n") == 0);  // no limit
  CHECK(cgroup_v1_cpu_limit("100000\n", "100000\n") == 1);
  CHECK(cgroup_v1_cpu_limit("250000\n", "100000\n") == 3);
  CHECK(cgroup_v1_cpu_limit("20000\n", "100000\n") == 1);
  CHECK(cgroup_v1_cpu_limit("", "100000\n") == 0);
  CHECK(cgroup_v1_cpu_limit("100000\n", "") == 0);
  CHECK(cgroup_v1_cpu_limit("abc\n", "100000\n") == 0);
  CHECK(cgroup_v1_cpu_limit("100000\n", "0\n") == 0);
}

// A fake /sys/fs/cgroup in a temporary folder: the walk from the process's cgroup up to
// the mount's root, for cgroup v2 and v1, and a container's view (path absent).
void test_cgroup_walk() {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("nystrom_kme_cgroup_" + std::to_string(::getpid()));
  fs::remove_all(root);
  const auto write = [](const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
  };
  using detail::read_cgroup_cpu_limit;
  const std::string r = root.string();
  // v2: the smallest limit on the way up wins; "max" is no limit.
  write(root / "cpu.max", "max 100000\n");
  write(root / "user.slice" / "cpu.max", "400000 100000\n");
  write(root / "user.slice" / "job" / "cpu.max", "max 100000\n");
  CHECK(read_cgroup_cpu_limit("0::/user.slice/job\n", r) == 4);
  write(root / "user.slice" / "job" / "cpu.max", "150000 100000\n");
  CHECK(read_cgroup_cpu_limit("0::/user.slice/job\n", r) == 2);
  CHECK(read_cgroup_cpu_limit("0::/\n", r) == 0);
  // a container: its own cgroup is the mount's root, the host's path is absent
  write(root / "cpu.max", "300000 100000\n");
  CHECK(read_cgroup_cpu_limit("0::/docker/0123abcd\n", r) == 3);
  CHECK(read_cgroup_cpu_limit("0::/../../escape\n", r) == 3);
  fs::remove_all(root);
  // v1: under cpu,cpuacct (or cpu); other controllers' lines are ignored
  write(root / "cpu,cpuacct" / "cpu.cfs_quota_us", "-1\n");
  write(root / "cpu,cpuacct" / "cpu.cfs_period_us", "100000\n");
  write(root / "cpu,cpuacct" / "ci" / "cpu.cfs_quota_us", "250000\n");
  write(root / "cpu,cpuacct" / "ci" / "cpu.cfs_period_us", "100000\n");
  write(root / "memory" / "ci" / "cpu.cfs_quota_us", "100000\n");  // not the cpu controller
  write(root / "memory" / "ci" / "cpu.cfs_period_us", "100000\n");
  const std::string v1 = "12:memory:/ci\n4:cpu,cpuacct:/ci\n1:name=systemd:/ci\n0::/ci\n";
  CHECK(read_cgroup_cpu_limit(v1, r) == 3);
  CHECK(read_cgroup_cpu_limit("4:cpu,cpuacct:/\n", r) == 0);
  // nothing readable: no limit
  CHECK(read_cgroup_cpu_limit("", r) == 0);
  CHECK(read_cgroup_cpu_limit("garbage\n", r) == 0);
  CHECK(read_cgroup_cpu_limit("0::/x\n", (root / "absent").string()) == 0);
  fs::remove_all(root);
}

void test_quota_arithmetic() {
  CHECK(detail::cpu_limit_from_quota(0, 100000) == 0);
  CHECK(detail::cpu_limit_from_quota(100000, 0) == 0);
  CHECK(detail::cpu_limit_from_quota(100001, 100000) == 2);
  CHECK(detail::cpu_limit_from_quota(100000, 100000) == 1);
}

void test_resolve_threads() {
  const int cpus = detail::available_cpus();
  CHECK(cpus >= 1);
  const int quota = detail::cgroup_cpu_limit();  // this machine's, read once
  CHECK(quota >= 0);
  CHECK(detail::cgroup_cpu_limit() == quota);
  const int by_default = detail::resolve_threads(0);
  CHECK(by_default >= 1 && by_default <= cpus);
  if (quota > 0) CHECK(by_default <= quota);
  CHECK(detail::resolve_threads(-5) == by_default);
  CHECK(detail::resolve_threads(1) == 1);
#if defined(NYSTROM_KME_WITH_OPENMP)
  // Explicit counts: kept up to the CPUs, capped above them.
  CHECK(detail::resolve_threads(cpus) == cpus);
  CHECK(detail::resolve_threads(1'000'000) == cpus);
  CHECK(detail::resolve_threads(INT_MAX) == cpus);
  // The default follows omp_set_num_threads (what threadpoolctl calls).
  const int before = omp_get_max_threads();
  omp_set_num_threads(1);
  CHECK(detail::resolve_threads(0) == 1);
  omp_set_num_threads(before);
  CHECK(detail::resolve_threads(0) == by_default);
#else
  CHECK(detail::resolve_threads(1'000'000) == 1);
#endif
  std::printf("test_parallel: %d CPUs, cgroup quota %d (0: none), %d threads by default\n", cpus,
              quota, by_default);
}

// A million threads asked for: the loops and the tile engine run (capped), with the
// same results as one thread.
void test_huge_thread_counts_run() {
  std::atomic<long> total{0};
  detail::parallel_tasks(1000, 1'000'000, [&](Index c) { total += long(c); });
  CHECK(total == 999L * 1000 / 2);
  std::atomic<long> rows{0};
  detail::for_each_chunk(10'000, 64, INT_MAX, [&](Index, Index b, Index e) { rows += long(e - b); });
  CHECK(rows == 10'000);
  const RowMatrixXd L = test::normal_matrix(100, 5, 1), X = test::normal_matrix(3000, 5, 2);
  const Kernel kernel = Kernel::gaussian(1.3);
  const Eigen::VectorXd one = kernel_row_sums<double>(L, X, kernel, SumOptions{1});
  const Eigen::VectorXd many = kernel_row_sums<double>(L, X, kernel, SumOptions{1'000'000});
  CHECK(one == many);
}

}  // namespace

int main() {
  if (const int skip = test::skip_if_level_unsupported()) return skip;
  test_cgroup_v2_parsing();
  test_cgroup_v1_parsing();
  test_quota_arithmetic();
  test_cgroup_walk();
  test_resolve_threads();
  test_huge_thread_counts_run();
  if (test::failures == 0) std::printf("test_parallel: all checks passed\n");
  return test::failures == 0 ? 0 : 1;
}
