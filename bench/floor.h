// Shared helpers for benchmarks that state strata's figures beside a physical floor measured
// in the same run (ipc_bench measures memcpy itself, as a Google Benchmark case).
#pragma once

#include <string>

namespace strata::bench {

// "1.23 GB/s" / "456 MB/s" style formatting of a byte rate.
std::string FormatRate(double bytes_per_second);

}  // namespace strata::bench
