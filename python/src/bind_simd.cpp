// Bindings of simd.hpp: which instruction-set level runs the hot loops, plus the
// build facts a bug report needs (nystrom_kme.show_config() prints them).
#include <cstdlib>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nystrom_kme/detail/parallel.hpp>
#include <nystrom_kme/simd.hpp>

#if defined(NYSTROM_KME_WITH_OPENMP)
#include <omp.h>
#endif

namespace py = pybind11;
using namespace pybind11::literals;

namespace {

// OMP_WAIT_POLICY when this module was loaded: libgomp, loaded with it, read it then
// (nystrom_kme/__init__.py sets PASSIVE around the import unless the user set it).
const std::string wait_policy_at_load = [] {
  const char* value = std::getenv("OMP_WAIT_POLICY");
  return std::string(value ? value : "");
}();

std::vector<std::string> names(const std::vector<nystrom_kme::SimdLevel>& levels) {
  std::vector<std::string> out;
  for (auto level : levels) out.emplace_back(nystrom_kme::to_string(level));
  return out;
}

py::dict build_info() {
  py::dict info;
#if defined(__clang__)
  info["compiler"] = std::string("clang ") + __clang_version__;
#elif defined(__GNUC__)
  info["compiler"] = std::string("gcc ") + __VERSION__;
#endif
#if defined(NYSTROM_KME_WITH_OPENMP)
  info["openmp"] = true;
  info["openmp_version"] = _OPENMP;
#if defined(__clang__)
  info["openmp_runtime"] = "libomp (LLVM)";
#else
  info["openmp_runtime"] = "libgomp (GNU)";
#endif
  info["max_threads"] = omp_get_max_threads();
#else
  info["openmp"] = false;
  info["openmp_runtime"] = "none";
  info["max_threads"] = 1;
#endif
  // What a call with n_threads=None uses now: max_threads (OMP_NUM_THREADS,
  // threadpoolctl) capped by the CPU affinity and the cgroup CPU quota.
  info["default_threads"] = nystrom_kme::detail::resolve_threads(0);
  info["available_cpus"] = nystrom_kme::detail::available_cpus();
  const int quota = nystrom_kme::detail::cgroup_cpu_limit();
  if (quota > 0) {
    info["cpu_quota"] = quota;
  } else {
    info["cpu_quota"] = py::none();
  }
  if (wait_policy_at_load.empty()) {
    info["wait_policy"] = py::none();  // the runtime's default
  } else {
    info["wait_policy"] = wait_policy_at_load;
  }
#if defined(NYSTROM_KME_NATIVE_BUILD)
  info["march_native"] = true;
#else
  info["march_native"] = false;
#endif
  return info;
}

}  // namespace

void register_simd(py::module_& m) {
  m.def("simd_level", [] { return std::string(nystrom_kme::to_string(nystrom_kme::simd_level())); },
        "The instruction-set level the hot loops run at.");
  m.def(
      "set_simd_level",
      [](const std::string& name) {
        nystrom_kme::set_simd_level(name == "auto" ? nystrom_kme::available_simd_levels().back()
                                                   : nystrom_kme::parse_simd_level(name));
      },
      "name"_a, "Forces a level ('baseline', 'avx2', 'avx512', 'neon' or 'auto') for the process.");
  m.def("compiled_simd_levels", [] { return names(nystrom_kme::compiled_simd_levels()); },
        "Levels compiled into this build, lowest first.");
  m.def("available_simd_levels", [] { return names(nystrom_kme::available_simd_levels()); },
        "Levels compiled in that this CPU runs, lowest first.");
  m.def("build_info", &build_info, "Compiler, OpenMP runtime, thread counts and flags of this build (a dict).");
}
