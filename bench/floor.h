// Physical floors measured in the same run as a benchmark, so strata's figures can be stated
// as ratios on a noisy machine: memcpy bandwidth, sequential write bandwidth, fdatasync latency.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::bench {

// Bytes per second copying a `bytes`-sized buffer (best of `repeats`).
double MemcpyBandwidth(int64_t bytes = 256 << 20, int repeats = 5);

// Bytes per second writing `bytes` sequentially to a new file in `dir` in 1 MiB writes,
// including the final fsync. The file is removed afterwards.
double SequentialWriteBandwidth(const std::string& dir, int64_t bytes = 512 << 20);

struct LatencySummary {
  double p50_us = 0;
  double p99_us = 0;
  double mean_us = 0;
};
LatencySummary Summarize(std::vector<double> micros);

// Latency of appending `append_bytes` to a file and fdatasync'ing it, `iterations` times.
LatencySummary FdatasyncLatency(const std::string& dir, int iterations = 500,
                                int64_t append_bytes = 4096);

// "1.23 GB/s" style formatting.
std::string FormatRate(double bytes_per_second);

}  // namespace strata::bench
