// Umbrella header of the nystrom_kme C++ core.
#pragma once

#include <nystrom_kme/bin_sums.hpp>
#include <nystrom_kme/feature_sums.hpp>
#include <nystrom_kme/gradient_sums.hpp>
#include <nystrom_kme/kernel_sums.hpp>
#include <nystrom_kme/kernels.hpp>
#include <nystrom_kme/matrix_product.hpp>
#include <nystrom_kme/median.hpp>
#include <nystrom_kme/multi_kernel_sums.hpp>
#include <nystrom_kme/random_splits.hpp>
#include <nystrom_kme/sampling.hpp>
#include <nystrom_kme/simd.hpp>
#include <nystrom_kme/simplex_weights.hpp>
#include <nystrom_kme/solve.hpp>
#include <nystrom_kme/types.hpp>
