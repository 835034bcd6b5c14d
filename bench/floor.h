// Shared helpers for benchmarks that state strata's figures beside a physical floor measured
// in the same run: the disk's sequential write bandwidth and fdatasync latency, latency
// percentiles and rate formatting (ipc_bench measures memcpy itself, as a Google Benchmark
// case).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "strata/status.h"

namespace strata::bench {

using Clock = std::chrono::steady_clock;

// Seconds elapsed since `start`.
double Seconds(Clock::time_point start);
double MiB(double bytes);
// "1.23 GB/s" / "456 MB/s" style formatting of a byte rate.
std::string FormatRate(double bytes_per_second);
// "42%" (num / den), or "-" when den is not positive.
std::string Pct(double num, double den);

// ---- Disk floor ------------------------------------------------------------------------

struct DiskFloor {
  double sync_write_bps = 0;    // write() in 1 MiB chunks, then fdatasync
  double cached_write_bps = 0;  // the same without fdatasync (page cache)
  double fdatasync_4k_p50_us = 0;
};

// write() until all of `n` bytes are written (retrying on EINTR and short writes).
Status WriteAll(int fd, const char* data, size_t n);
// Seconds to write `bytes` sequentially to a new file at `path` in 1 MiB chunks of random
// bytes (and fdatasync when `sync`); the file is removed afterwards.
Result<double> TimeSequentialWrite(const std::string& path, int64_t bytes, bool sync);
// p50 of (append 4 KiB + fdatasync): the latency floor of one durable commit step.
Result<double> Fdatasync4kP50Micros(const std::string& path, int samples);
// Both bandwidths over `floor_bytes` and the 4 KiB fdatasync p50 over `fdatasync_samples`,
// using a scratch file in `dir`.
Result<DiskFloor> MeasureDiskFloor(int64_t floor_bytes, const std::string& dir,
                                   int fdatasync_samples = 50);

// ---- Latency percentiles ---------------------------------------------------------------

struct Latency {
  double p50_us = 0, p99_us = 0, max_us = 0;
  int samples = 0;
};

// Percentiles of samples in microseconds (all zero for no samples).
Latency Summarize(std::vector<double> us);

}  // namespace strata::bench
