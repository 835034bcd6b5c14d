// Formatting shared by the benchmarks.
#include "floor.h"

#include <fmt/format.h>

namespace strata::bench {

std::string FormatRate(double bytes_per_second) {
  if (bytes_per_second >= 1e9) return fmt::format("{:.2f} GB/s", bytes_per_second / 1e9);
  return fmt::format("{:.0f} MB/s", bytes_per_second / 1e6);
}

}  // namespace strata::bench
