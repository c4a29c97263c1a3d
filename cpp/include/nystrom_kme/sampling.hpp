// Landmark selection: pivoted Cholesky (greedy, randomly pivoted, accelerated block
// randomly pivoted), kernel herding, farthest-point (incoherence) selection, and the
// ridge-leverage-score estimator used by BLESS. Kernel values come from the same
// Kernel::apply map as every other routine of the core.
//
// Every routine takes the data X (n, d) row-major and never forms the n x n kernel
// matrix. Memory is stated per routine: O(n m) for the Cholesky factor where one is
// needed, O(n) otherwise. Per-pivot loops run over a fixed partition of the rows
// into chunks and combine chunk results in order, so results (pivots, traces) are
// the same for every thread count.
//
// One header per family, as the Python package's sampling/: sampling/cholesky.hpp
// (pivoted_cholesky, block_rpcholesky), sampling/greedy.hpp (kernel_herding,
// farthest_point), sampling/leverage.hpp (ridge_leverage_estimates), and
// sampling/types.hpp (SamplingOptions, PivotedCholeskyResult). This header includes
// them all.
#pragma once

#include <nystrom_kme/sampling/cholesky.hpp>
#include <nystrom_kme/sampling/greedy.hpp>
#include <nystrom_kme/sampling/leverage.hpp>
#include <nystrom_kme/sampling/types.hpp>
