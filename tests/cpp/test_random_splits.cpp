// Random splits for permutation tests: exact split sizes, independence from the
// chunking and the thread count, and the streamed K(L, Z) W against a dense product
// and against long-double references at the edge shapes of the register blocks.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <nystrom_kme/interrupt.hpp>
#include <nystrom_kme/random_splits.hpp>

#include "check.hpp"

using namespace nystrom_kme;

namespace {

void test_labels() {
  const Index n1 = 700, n2 = 1300, B = 40;
  RandomSplits all(n1, n2, B, 123);
  const RowMatrixXd W = all.next_weights(n1 + n2);
  CHECK(all.position() == n1 + n2);
  for (Index c = 0; c <= B; ++c) {
    Index first = 0;
    for (Index i = 0; i < n1 + n2; ++i) {
      const bool in_first = W(i, c) > 0;
      first += in_first;
      CHECK(W(i, c) == (in_first ? 1.0 / n1 : -1.0 / n2));
      if (c == 0) CHECK(in_first == (i < n1));  // the observed split
    }
    CHECK(first == n1);
  }
  // The same labels whatever the chunking; different seeds give different splits.
  RandomSplits chunked(n1, n2, B, 123);
  const RowMatrixXd a = chunked.next_weights(1), b = chunked.next_weights(999), c = chunked.next_weights(1000);
  CHECK(a == W.topRows(1));
  CHECK(b == W.middleRows(1, 999));
  CHECK(c == W.bottomRows(1000));
  RandomSplits other(n1, n2, B, 124);
  CHECK(other.next_weights(n1 + n2).rightCols(B) != W.rightCols(B));
  CHECK_THROWS(chunked.next_weights(1));  // none left
  RandomSplits fresh(5, 5, 10, 0);
  CHECK_THROWS(fresh.next_weights(-1));  // refused before any allocation, in every build
  CHECK(fresh.position() == 0);
  // Integer and exactly rounded arithmetic only: the same labels at every SIMD level.
  const SimdLevel before = simd_level();
  for (SimdLevel level : available_simd_levels()) {
    set_simd_level(level);
    RandomSplits again(n1, n2, B, 123);
    CHECK(again.next_weights(n1 + n2) == W);
  }
  set_simd_level(before);
  CHECK_THROWS(RandomSplits(0, 5, 3, 1));
  CHECK_THROWS(RandomSplits(5, 5, 0, 1));
}

void test_streamed_sums_match_dense() {
  const Index n1 = 5000, n2 = 3001, B = 37;  // 38 columns: three weight panels, the last partial
  const RowMatrixXd Z = test::normal_matrix<double>(n1 + n2, 4, 9);
  const RowMatrixXd L = Z.topRows(45);
  const Kernel kernel = Kernel::gaussian(1.3);
  RandomSplits reference(n1, n2, B, 77);
  const RowMatrixXd dense = kernel_matrix<double>(L, Z, kernel) * reference.next_weights(n1 + n2);
  for (int threads : {1, 2, 3}) {
    RandomSplits splits(n1, n2, B, 77);
    RowMatrixXd S = split_kernel_sums<double>(L, Z.topRows(2500), splits, kernel, {threads});
    S += split_kernel_sums<double>(L, Z.bottomRows(n1 + n2 - 2500), splits, kernel, {threads});
    const double err = (S - dense).cwiseAbs().maxCoeff() / dense.cwiseAbs().maxCoeff();
    if (err > 1e-12) std::fprintf(stderr, "threads %d: error %g\n", threads, err);
    CHECK(err < 1e-12);
    if (threads == 1) continue;
    RandomSplits one(n1, n2, B, 77);
    RowMatrixXd S1 = split_kernel_sums<double>(L, Z.topRows(2500), one, kernel, {1});
    S1 += split_kernel_sums<double>(L, Z.bottomRows(n1 + n2 - 2500), one, kernel, {1});
    CHECK(S1 == S);  // bit-identical for any thread count
  }
  RandomSplits splits(n1, n2, B, 77);
  const RowMatrixXd none(0, 4);
  CHECK_THROWS(split_kernel_sums<double>(none, Z, splits, kernel));
  CHECK_THROWS(split_kernel_sums<double>(L, test::normal_matrix<double>(n1 + n2 + 1, 4, 1), splits, kernel));
}

// Sizes that overflowed Index (n1 + n2, B + 1 and its padding to whole panels) or that
// no machine can hold are refused with a clear message, before any arithmetic on them.
void test_size_checks() {
  using test::throws_with;
  const Index max = std::numeric_limits<Index>::max();
  CHECK(throws_with<std::invalid_argument>([&] { RandomSplits(max, 1, 10, 0); }, "at most 2^53"));
  CHECK(throws_with<std::invalid_argument>([&] { RandomSplits(Index(1) << 62, Index(1) << 62, 10, 0); },
                                           "at most 2^53"));
  CHECK(throws_with<std::invalid_argument>([&] { RandomSplits(Index(1) << 53, 1, 10, 0); }, "at most 2^53"));
  CHECK(throws_with<std::length_error>([&] { RandomSplits(10, 10, max, 0); }, "is too large"));
  CHECK(throws_with<std::length_error>([&] { RandomSplits(10, 10, max - 8, 0); }, "is too large"));
  CHECK(throws_with<std::length_error>([&] { RandomSplits(10, 10, Index(1) << 50, 0); },
                                       "split states need"));
  CHECK(throws_with<std::invalid_argument>([&] { RandomSplits(0, 5, 10, 0); }, "must be >= 1"));
  CHECK(throws_with<std::invalid_argument>([&] { RandomSplits(5, 5, 0, 0); }, "must be >= 1"));
  // the largest row count is accepted, and its labels are exact
  RandomSplits big((Index(1) << 53) - 1, 1, 20, 7);
  CHECK(big.n_rows() == Index(1) << 53 && big.n_columns() == 21);
  const RowMatrixXd W = big.next_weights(4);
  CHECK(W(0, 0) == 1.0 / double((Index(1) << 53) - 1));
}

// max |S - K W| / max |K W| with K from the long-double definitions and W the labels.
template <class T>
double error_vs_reference(const RowMatrixXd& S, const RowMatrix<T>& L, const RowMatrix<T>& Z,
                          const RowMatrixXd& W, const std::string& name, double bandwidth) {
  const Index d = L.cols();
  std::vector<long double> k_row(std::size_t(Z.rows()));
  double worst = 0, scale = 0;
  for (Index i = 0; i < L.rows(); ++i) {
    const RowMatrixXd li = L.row(i).template cast<double>();
    for (Index j = 0; j < Z.rows(); ++j) {
      const RowMatrixXd zj = Z.row(j).template cast<double>();
      k_row[std::size_t(j)] = test::reference_kernel(name, li.data(), zj.data(), d, bandwidth);
    }
    for (Index c = 0; c < W.cols(); ++c) {
      long double ref = 0;
      for (Index j = 0; j < Z.rows(); ++j) ref += k_row[std::size_t(j)] * W(j, c);
      worst = std::max(worst, double(std::abs(S(i, c) - ref)));
      scale = std::max(scale, double(std::abs(ref)));
    }
  }
  return worst / scale;
}

// The shapes around the register blocks of the reduction: k = 2 (one partial
// panel), 17 (two panels and one column), 201 (the usual B = 200); rows of L below,
// at and past a tile (16) and not a multiple of any register block (5, 6, 8); q not
// a multiple of a chunk (256) nor of a superblock; d below and above the direct-
// distance limit. Every level (ctest runs the file once per level), both dtypes,
// against long double, and bit-identical on 1, 2 and 3 threads.
template <class T>
void check_edge_shapes(Index k, Index m, Index d, const std::string& name, double tolerance) {
  const Index n1 = 611, n2 = 1234 - n1;  // q = 1234 = 4 * 256 + 210
  const RowMatrix<T> Z = test::normal_matrix<T>(n1 + n2, d, unsigned(100 + k + m + d));
  const RowMatrix<T> L = test::normal_matrix<T>(m, d, unsigned(7 + m));
  const Kernel kernel = Kernel::from_name(name, 1.1 * std::sqrt(double(d)));
  RandomSplits labels(n1, n2, k - 1, 5);
  const RowMatrixXd W = labels.next_weights(n1 + n2);
  RowMatrixXd first;
  for (int threads : {1, 2, 3}) {
    RandomSplits splits(n1, n2, k - 1, 5);
    RowMatrixXd S = split_kernel_sums<T>(L, Z.topRows(300), splits, kernel, {threads});
    S += split_kernel_sums<T>(L, Z.bottomRows(n1 + n2 - 300), splits, kernel, {threads});
    if (threads == 1) {
      first = S;
      const double err = error_vs_reference<T>(S, L, Z, W, name, kernel.bandwidth());
      if (!(err < tolerance)) {
        std::fprintf(stderr, "k %ld m %ld d %ld %s %s: error %g\n", long(k), long(m), long(d),
                     name.c_str(), sizeof(T) == 4 ? "float" : "double", err);
      }
      CHECK(err < tolerance);
    } else {
      CHECK(S == first);  // bit-identical for any thread count
    }
  }
  // kernel_sums with the same weights given: the same engine path, not streamed
  const RowMatrixXd S = kernel_sums<T>(L, Z, W, kernel, {2});
  CHECK((S - first).cwiseAbs().maxCoeff() <= 1e-13 * first.cwiseAbs().maxCoeff());
}

void test_edge_shapes() {
  for (Index k : {2, 17, 201}) {
    for (Index m : {1, 5, 16, 23, 37}) {
      check_edge_shapes<double>(k, m, 3, m % 2 ? "gaussian" : "laplacian", 1e-12);
      check_edge_shapes<float>(k, m, 3, "matern32", 2e-5);
    }
  }
  check_edge_shapes<double>(17, 19, 40, "inverse_multiquadric", 1e-12);  // expansion path
  check_edge_shapes<double>(17, 19, 40, "matern52", 1e-12);
  check_edge_shapes<double>(17, 7, 5, "polynomial", 1e-12);  // dot-product kernel
}

}  // namespace

bool stop_now() { return true; }

// next_weights of many rows polls the interrupt check (2 10^5 rows x 1001 columns take
// seconds; here 5 10^4, about 0.2 s, ten times the poller's first 20 ms) and leaves the
// cursor where it was when stopped.
void test_next_weights_interrupt() {
  RandomSplits splits(25000, 25000, 1000, 1);
  nystrom_kme::set_interrupt_check(&stop_now);
  bool interrupted = false;
  try {
    (void)splits.next_weights(50000);
  } catch (const nystrom_kme::Interrupted&) {
    interrupted = true;
  }
  nystrom_kme::set_interrupt_check(nullptr);
  CHECK(interrupted);
  CHECK(splits.position() == 0);
  CHECK(splits.next_weights(3).rows() == 3);
}

int main() {
  if (const int skip = test::skip_if_level_unsupported()) return skip;
  test_labels();
  test_streamed_sums_match_dense();
  test_size_checks();
  test_edge_shapes();
  test_next_weights_interrupt();
  if (test::failures == 0) std::printf("test_random_splits: all checks passed\n");
  return test::failures == 0 ? 0 : 1;
}
