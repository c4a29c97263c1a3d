// The machine's memory, for refusing allocations that cannot succeed: where the
// system overcommits, a request beyond it is not refused but fails on first touch.
#pragma once

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

namespace nystrom_kme::detail {

/// Physical memory in bytes, or 0 when unknown.
inline double physical_memory_bytes() {
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) return double(pages) * double(page);
#endif
  return 0.0;
}

}  // namespace nystrom_kme::detail
