// Array aliases shared by the whole core.
#pragma once

#include <Eigen/Core>

namespace nystrom_kme {

using Index = Eigen::Index;

/// Row-major matrices: one sample per row, matching C-ordered numpy arrays.
template <class T>
using RowMatrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowMatrixXd = RowMatrix<double>;
using RowMatrixXf = RowMatrix<float>;

/// Read-only view of a row-major matrix with unit column stride and any row stride.
template <class T>
using ConstRowRef = Eigen::Ref<const RowMatrix<T>, 0, Eigen::OuterStride<>>;

/// Read-only view of float64 weights (q, k), one row per summed point, any row stride.
using WeightsRef = ConstRowRef<double>;

}  // namespace nystrom_kme
