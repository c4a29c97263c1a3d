// Vectorised exp throughput of glibc's libmvec, as a machine limit for bench/row_sums.py.
//
// Build: g++ -O3 -march=native -ffast-math -fopenmp exp_limit.cpp -o exp_limit
// With -ffast-math, glibc's <math.h> declares exp/expf as `simd` functions, so GCC
// vectorises the loops below into calls to libmvec (_ZGV..._exp / _expf symbols).
//
// Each thread owns a cache-resident array (kPerThread values) and evaluates exp over it
// `reps` times; the argument is shifted by a tiny per-repetition amount (one add per
// value) so the loop cannot be hoisted. Prints "double <values/s>" and "float <values/s>"
// (best of `trials`), over all threads.
//
// Usage: exp_limit [n_threads=2] [reps=20000] [trials=5]

#include <omp.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

constexpr int kPerThread = 4096;

template <class T>
double run(int n_threads, long reps, int trials, double* checksum) {
  double best = 0.0;
  double check = 0.0;
  for (int t = 0; t < trials; ++t) {
    double total = 0.0;
    const double t0 = omp_get_wtime();
#pragma omp parallel num_threads(n_threads) reduction(+ : total)
    {
      std::vector<T> x(kPerThread);
      const int tid = omp_get_thread_num();
      for (int i = 0; i < kPerThread; ++i)  // arguments in [-20, 0]: typical kernel exponents
        x[i] = static_cast<T>(-20.0 * ((i * 7919 + tid * 104729) % kPerThread) / kPerThread);
      T acc = 0;
      for (long r = 0; r < reps; ++r) {
        const T shift = static_cast<T>(r & 1023) * static_cast<T>(1e-7);
        const T* __restrict xp = x.data();
        T s = 0;
        for (int i = 0; i < kPerThread; ++i) s += std::exp(xp[i] - shift);
        acc += s;
      }
      total += static_cast<double>(acc);
    }
    const double dt = omp_get_wtime() - t0;
    const double rate = static_cast<double>(reps) * kPerThread * n_threads / dt;
    if (rate > best) best = rate;
    check += total;
  }
  *checksum += check;
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int n_threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const long reps = argc > 2 ? std::atol(argv[2]) : 20000;
  const int trials = argc > 3 ? std::atoi(argv[3]) : 5;
  double checksum = 0.0;
  run<double>(n_threads, reps / 10 + 1, 1, &checksum);  // warm-up (threads, clocks)
  const double rd = run<double>(n_threads, reps, trials, &checksum);
  const double rf = run<float>(n_threads, reps, trials, &checksum);
  std::printf("double %.6e\nfloat %.6e\nthreads %d\nchecksum %.6e\n", rd, rf, n_threads,
              checksum);
  return 0;
}
