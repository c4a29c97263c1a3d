// The median heuristic's distance and all pairwise distances (median.hpp) against
// hand-computed values, a long double reference, exact rescalings, float32 input, thread
// counts and bad input.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include <nystrom_kme/interrupt.hpp>
#include <nystrom_kme/median.hpp>

#include "check.hpp"

using namespace nystrom_kme;
using test::throws_with;

namespace {

double median_of(const RowMatrixXd& X, int threads = 0) {
  return median_pairwise_distance<double>(X, threads);
}

RowMatrixXd column(std::vector<double> v) {
  RowMatrixXd X(Index(v.size()), 1);
  for (std::size_t i = 0; i < v.size(); ++i) X(Index(i), 0) = v[i];
  return X;
}

// Points on a line: distances 1, 3, 2 (odd count: the middle one); 1, 3, 7, 2, 6, 4
// (even: the mean of 3 and 4).
void test_hand_computed() {
  CHECK(median_of(column({0, 1, 3})) == 2.0);
  CHECK(median_of(column({0, 1, 3, 7})) == 3.5);
  CHECK(median_of(column({5, 5})) == 0.0);
  CHECK(median_of(column({0, 0, 0, 1})) == 0.5);  // 0, 0, 0, 1, 1, 1
  RowMatrixXd P(3, 2);
  P << 0, 0, 3, 4, 0, 8;  // distances 5, 8, 5
  CHECK(median_of(P) == 5.0);
}

// Against the median of distances computed in long double, then rounded.
void test_against_long_double() {
  std::mt19937_64 gen(3);
  std::normal_distribution<double> normal;
  for (Index d : {1, 5, 8, 9, 64, 129, 300}) {
    const Index k = 51;
    RowMatrixXd X(k, d);
    for (Index i = 0; i < X.size(); ++i) X.data()[i] = normal(gen) * std::exp(2 * normal(gen));
    std::vector<long double> dist;
    for (Index i = 0; i < k; ++i)
      for (Index j = i + 1; j < k; ++j) {
        long double s = 0;
        for (Index f = 0; f < d; ++f) s += ((long double)X(j, f) - X(i, f)) * ((long double)X(j, f) - X(i, f));
        dist.push_back(std::sqrt(s));
      }
    std::sort(dist.begin(), dist.end());  // 1275 pairs: odd
    const long double ref = dist[dist.size() / 2];
    CHECK(std::abs((long double)median_of(X) - ref) <= 1e-15L * ref);
  }
}

// Exact rescalings give exactly rescaled medians, also near the ends of float64, where
// squared differences would overflow or underflow without the power-of-two scaling.
void test_scales_and_types() {
  const RowMatrixXd X = test::normal_matrix(40, 6, 9);
  const double base = median_of(X);
  for (int e : {-1000, -500, 500, 1000}) CHECK(median_of(X * std::ldexp(1.0, e)) == std::ldexp(base, e));
  const RowMatrixXf Xf = X.cast<float>();
  const RowMatrixXd back = Xf.cast<double>();
  CHECK(median_pairwise_distance<float>(Xf) == median_of(back));
  const RowMatrixXd Y = test::normal_matrix(700, 20, 4);  // enough pairs for 2-3 threads
  const double one = median_of(Y, 1);
  for (int nt : {2, 3}) CHECK(median_of(Y, nt) == one);
}

// Every pair's distance, in scipy's pdist order, against long double; the median of them
// is median_pairwise_distance's; a bad input names the function.
void test_pairwise_distances() {
  const RowMatrixXd X = test::normal_matrix(30, 7, 11) * 1e200;  // squares beyond float64
  const std::vector<double> d = pairwise_distances<double>(X);
  CHECK(d.size() == std::size_t(30 * 29 / 2));
  std::size_t at = 0;
  bool close = true;
  for (Index i = 0; i < 30; ++i)
    for (Index j = i + 1; j < 30; ++j, ++at) {
      long double s = 0;
      for (Index f = 0; f < 7; ++f) {
        const long double t = ((long double)X(j, f) - X(i, f)) / 1e200L;
        s += t * t;
      }
      const long double ref = std::sqrt(s) * 1e200L;
      close = close && std::abs((long double)d[at] - ref) <= 1e-15L * ref;
    }
  CHECK(close);
  std::vector<double> sorted = d;
  std::sort(sorted.begin(), sorted.end());  // 435 pairs: odd
  CHECK(sorted[sorted.size() / 2] == median_of(X));
  CHECK(pairwise_distances<double>(column({0, 1, 3})) == std::vector<double>({1.0, 3.0, 2.0}));
  CHECK(throws_with<std::invalid_argument>([] { pairwise_distances<double>(RowMatrixXd::Zero(1, 3)); },
                                           "pairwise_distances: X needs at least 2 rows"));
}

bool stop_now() { return true; }

void test_bad_input_and_interrupts() {
  CHECK(throws_with<std::invalid_argument>([] { median_of(RowMatrixXd::Zero(1, 3)); }, "at least 2 rows"));
  CHECK(throws_with<std::invalid_argument>([] { median_of(RowMatrixXd::Zero(5, 0)); }, "at least 2 rows"));
  RowMatrixXd N = RowMatrixXd::Zero(4, 2);
  N(2, 1) = std::numeric_limits<double>::quiet_NaN();
  CHECK(throws_with<std::invalid_argument>([&] { median_of(N); }, "NaN or inf"));
  N(2, 1) = std::numeric_limits<double>::infinity();
  CHECK(throws_with<std::invalid_argument>([&] { median_of(N); }, "NaN or inf"));
  // 2^32 rows (one stored value, row stride 0): 2^63 distances, refused before any read
  const double one = 1.0;
  const Eigen::Map<const RowMatrixXd, 0, Eigen::OuterStride<>> huge(&one, Index(1) << 32, 1,
                                                                    Eigen::OuterStride<>(0));
  CHECK(throws_with<std::length_error>([&] { median_pairwise_distance<double>(huge); }, "use fewer rows"));
  // An interrupt stops a long call (3000 rows of width 500: 2.2e9 differences).
  const RowMatrixXd Z = test::normal_matrix(3000, 500, 5);
  set_interrupt_check(&stop_now);
  bool interrupted = false;
  try {
    median_of(Z);
  } catch (const Interrupted&) {
    interrupted = true;
  }
  set_interrupt_check(nullptr);
  CHECK(interrupted);
}

}  // namespace

int main() {
  if (const int skip = test::skip_if_level_unsupported()) return skip;
  test_hand_computed();
  test_against_long_double();
  test_scales_and_types();
  test_pairwise_distances();
  test_bad_input_and_interrupts();
  if (test::failures == 0) std::printf("test_median: all checks passed\n");
  return test::failures == 0 ? 0 : 1;
}
