// Numbers in error messages.
#pragma once

#include <cstdio>
#include <string>

namespace nystrom_kme::detail {

/// A number for a message: %g, so that tiny values do not print as 0.000000.
inline std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace nystrom_kme::detail
