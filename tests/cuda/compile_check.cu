// Compile check of the CUDA header for native applications (no GPU needed):
//   nvcc -std=c++17 -Icpp/include -c tests/cuda/compile_check.cu -o /tmp/cc.o
// Instantiates every host launcher (hence every kernel and dtype) and checks that
// two translation units may include the header (the second is this file's twin
// include guard test: the kernels are templates, so no duplicate symbols).
#include <nystrom_kme/cuda/kernel_sums.cuh>

namespace nkc = nystrom_kme::cuda;

template <class T>
void instantiate_all(const T* A, const T* B, const double* W, double* out, double* ws,
                     cudaStream_t s) {
  const nkc::KernelCode codes[] = {nkc::kGaussian, nkc::kLaplacian, nkc::kMatern32,
                                   nkc::kMatern52, nkc::kInverseMultiquadric};
  for (nkc::KernelCode c : codes) {
    nkc::weighted_kernel_sums<T>(c, T(1), A, 10, B, 100, 3, W, 201, out, ws, s);
    nkc::total_kernel_sum<T>(c, T(1), B, 100, 3, out, out + 100, ws, s);
  }
  dim3 grid(1, 1), block(16, 16);
  nkc::kernel_matrix<nkc::kGaussian, T><<<grid, block, 0, s>>>(A, A, out, 10, 10, 3, T(1));
}

template void instantiate_all<float>(const float*, const float*, const double*, double*, double*,
                                     cudaStream_t);
template void instantiate_all<double>(const double*, const double*, const double*, double*,
                                      double*, cudaStream_t);

std::size_t bytes_for_test() { return nkc::workspace_bytes(1000, 1000000, 201); }
