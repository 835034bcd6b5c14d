// Physical floors (disk bandwidth, fdatasync latency), percentiles and formatting shared by
// the benchmarks.
#include "floor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

namespace strata::bench {

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double MiB(double bytes) { return bytes / 1048576.0; }

std::string FormatRate(double bytes_per_second) {
  if (bytes_per_second >= 1e9) return fmt::format("{:.2f} GB/s", bytes_per_second / 1e9);
  return fmt::format("{:.0f} MB/s", bytes_per_second / 1e6);
}

std::string Pct(double num, double den) {
  return den > 0 ? fmt::format("{:.0f}%", 100 * num / den) : "-";
}

Status WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return Status::IOError(fmt::format("write: {}", std::strerror(errno)));
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return Status::OK();
}

Result<double> TimeSequentialWrite(const std::string& path, int64_t bytes, bool sync) {
  std::vector<char> chunk(1 << 20);
  std::mt19937_64 rng(7);
  for (size_t i = 0; i < chunk.size(); i += 8) {
    uint64_t v = rng();
    std::memcpy(chunk.data() + i, &v, 8);
  }
  const auto start = Clock::now();
  int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError(fmt::format("open {}: {}", path, std::strerror(errno)));
  Status st;
  for (int64_t done = 0; done < bytes && st.ok(); done += static_cast<int64_t>(chunk.size())) {
    st = WriteAll(fd, chunk.data(), chunk.size());
  }
  if (st.ok() && sync && ::fdatasync(fd) != 0) {
    st = Status::IOError(fmt::format("fdatasync {}: {}", path, std::strerror(errno)));
  }
  const double seconds = Seconds(start);
  ::close(fd);
  ::unlink(path.c_str());
  STRATA_RETURN_IF_ERROR(st);
  return seconds;
}

Result<double> Fdatasync4kP50Micros(const std::string& path, int samples) {
  int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError(fmt::format("open {}: {}", path, std::strerror(errno)));
  std::vector<char> block(4096, 'x');
  std::vector<double> us;
  Status st;
  for (int i = 0; i < samples && st.ok(); ++i) {
    const auto start = Clock::now();
    st = WriteAll(fd, block.data(), block.size());
    if (st.ok() && ::fdatasync(fd) != 0) st = Status::IOError("fdatasync failed");
    us.push_back(Seconds(start) * 1e6);
  }
  ::close(fd);
  ::unlink(path.c_str());
  STRATA_RETURN_IF_ERROR(st);
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

Result<DiskFloor> MeasureDiskFloor(int64_t floor_bytes, const std::string& dir,
                                   int fdatasync_samples) {
  DiskFloor f;
  const std::string path = dir + "/floor.bin";
  STRATA_ASSIGN_OR_RETURN(double sync_s, TimeSequentialWrite(path, floor_bytes, true));
  STRATA_ASSIGN_OR_RETURN(double cached_s, TimeSequentialWrite(path, floor_bytes, false));
  f.sync_write_bps = floor_bytes / sync_s;
  f.cached_write_bps = floor_bytes / cached_s;
  STRATA_ASSIGN_OR_RETURN(f.fdatasync_4k_p50_us, Fdatasync4kP50Micros(path, fdatasync_samples));
  return f;
}

Latency Summarize(std::vector<double> us) {
  Latency l;
  if (us.empty()) return l;
  std::sort(us.begin(), us.end());
  l.samples = static_cast<int>(us.size());
  l.p50_us = us[us.size() / 2];
  l.p99_us = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  l.max_us = us.back();
  return l;
}

}  // namespace strata::bench
