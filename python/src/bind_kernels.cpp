#include <pybind11/pybind11.h>

#include <nystrom_kme/kernels.hpp>

namespace py = pybind11;
using namespace pybind11::literals;

void register_kernels(py::module_& m) {
  py::class_<nystrom_kme::Kernel>(m, "Kernel", "A validated kernel description (see kernels.hpp).")
      .def(py::init(&nystrom_kme::Kernel::from_name), "name"_a, "bandwidth"_a, "offset"_a = 1.0,
           "degree"_a = 2)
      .def_property_readonly("bandwidth", &nystrom_kme::Kernel::bandwidth)
      .def_property_readonly("offset", &nystrom_kme::Kernel::offset)
      .def_property_readonly("degree", &nystrom_kme::Kernel::degree)
      .def_property_readonly("is_radial", &nystrom_kme::Kernel::is_radial);
}
