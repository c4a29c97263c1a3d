// nystrom_kme._core: the private compiled module. The public API is Python.
#include <pybind11/pybind11.h>

#include <nystrom_kme/simd.hpp>

namespace py = pybind11;

void register_kernels(py::module_& m);
void register_kernel_sums(py::module_& m);
void register_solve(py::module_& m);
void register_sampling(py::module_& m);
void register_simd(py::module_& m);
void register_random_splits(py::module_& m);

PYBIND11_MODULE(_core, m) {
  m.doc() = "Private compiled core of nystrom_kme; use the public nystrom_kme API.";
  register_kernels(m);
  register_kernel_sums(m);
  register_solve(m);
  register_sampling(m);
  register_simd(m);
  register_random_splits(m);
  // Fail at import, with the reason, when NYSTROM_KME_SIMD names a level that cannot run.
  (void)nystrom_kme::simd_level();
  m.attr("__version__") = NYSTROM_KME_VERSION_INFO;
#if defined(NYSTROM_KME_WITH_OPENMP)
  m.attr("with_openmp") = true;
#else
  m.attr("with_openmp") = false;
#endif
}
