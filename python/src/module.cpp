// nystrom_kme._core: the private compiled module. The public API is Python.
#include <pybind11/pybind11.h>

#include <nystrom_kme/interrupt.hpp>
#include <nystrom_kme/simd.hpp>

namespace py = pybind11;

namespace {

// Python delivers signals to its main thread only: long core calls made from it
// run Python's handlers every 20 ms (the core polls from the calling thread), so
// Ctrl-C raises KeyboardInterrupt within a fraction of a second. Other threads
// are not polled (no handler would run there anyway).
unsigned long g_main_thread = 0;

bool python_interrupt_check() {
  if (PyThread_get_thread_ident() != g_main_thread) return false;
  py::gil_scoped_acquire gil;
  return PyErr_CheckSignals() != 0;  // the handler's exception stays set
}

}  // namespace

void register_kernels(py::module_& m);
void register_kernel_sums(py::module_& m);
void register_solve(py::module_& m);
void register_sampling(py::module_& m);
void register_simd(py::module_& m);
void register_random_splits(py::module_& m);
void register_simplex_weights(py::module_& m);
void register_bin_sums(py::module_& m);
void register_median(py::module_& m);
void register_feature_sums(py::module_& m);
void register_gradient_sums(py::module_& m);
void register_sequential(py::module_& m);

PYBIND11_MODULE(_core, m) {
  m.doc() = "Private compiled core of nystrom_kme; use the public nystrom_kme API.";
  register_kernels(m);
  register_kernel_sums(m);
  register_solve(m);
  register_sampling(m);
  register_simd(m);
  register_random_splits(m);
  register_bin_sums(m);
  register_simplex_weights(m);
  register_median(m);
  register_feature_sums(m);
  register_gradient_sums(m);
  register_sequential(m);
  g_main_thread = py::module_::import("threading").attr("main_thread")().attr("ident").cast<unsigned long>();
  nystrom_kme::set_interrupt_check(&python_interrupt_check);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const nystrom_kme::Interrupted&) {
      // The signal handler's exception (KeyboardInterrupt by default) is already set.
      if (!PyErr_Occurred()) PyErr_SetNone(PyExc_KeyboardInterrupt);
    }
  });
  // Fail at import, with the reason, when NYSTROM_KME_SIMD names a level that cannot run.
  (void)nystrom_kme::simd_level();
  m.attr("__version__") = NYSTROM_KME_VERSION_INFO;
#if defined(NYSTROM_KME_WITH_OPENMP)
  m.attr("with_openmp") = true;
#else
  m.attr("with_openmp") = false;
#endif
}
