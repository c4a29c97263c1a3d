#include <pybind11/pybind11.h>

#include <nystrom_kme/kernels.hpp>

namespace py = pybind11;
using namespace pybind11::literals;

namespace {

const char* distance_name(nystrom_kme::Distance distance) {
  switch (distance) {
    case nystrom_kme::Distance::squared_euclidean: return "squared_euclidean";
    case nystrom_kme::Distance::l1: return "l1";
    case nystrom_kme::Distance::inner_product: return "inner_product";
  }
  return "";
}

// One dict per kind, from the formulas themselves (kernel_formulas.inl): what the GPU
// path and the package's tables read instead of restating them.
py::list kernel_kinds() {
  namespace s = nystrom_kme::scalar;
  py::list out;
  for (int code = 0; code < nystrom_kme::kKernelKinds; ++code) {
    s::visit_kind(
        nystrom_kme::KernelKind(code),
        [&](auto tag) {
          using F = typename decltype(tag)::formula;
          constexpr auto K = decltype(tag)::kind;
          py::object fast = py::none();
          if constexpr (s::on_gpu<K>()) fast = py::float_(s::fast_factor<K>());
          out.append(py::dict("name"_a = F::name, "code"_a = code, "distance"_a = distance_name(F::distance),
                              "has_shape"_a = F::has_shape, "gpu"_a = s::on_gpu<K>(), "fast_map_factor"_a = fast));
        },
        [] {});
  }
  return out;
}

}  // namespace

void register_kernels(py::module_& m) {
  py::class_<nystrom_kme::Kernel>(m, "Kernel", "A validated kernel description (see kernels.hpp).")
      .def(py::init(&nystrom_kme::Kernel::from_name), "name"_a, "bandwidth"_a, "offset"_a = 1.0,
           "degree"_a = 2, "shape"_a = 1.0)
      .def_property_readonly("name", &nystrom_kme::Kernel::name)
      .def_property_readonly("bandwidth", &nystrom_kme::Kernel::bandwidth)
      .def_property_readonly("offset", &nystrom_kme::Kernel::offset)
      .def_property_readonly("degree", &nystrom_kme::Kernel::degree)
      .def_property_readonly("shape", &nystrom_kme::Kernel::shape)
      .def_property_readonly("distance", [](const nystrom_kme::Kernel& k) { return distance_name(k.distance()); })
      .def_property_readonly("is_radial", &nystrom_kme::Kernel::is_radial);
  m.def("kernel_kinds", &kernel_kinds,
        "Every kernel kind of the core: name, code, distance, has_shape, gpu, fast_map_factor (kernel_formulas.inl).");
}
