// Physical floors: memcpy, sequential write + fsync, append + fdatasync latency.
#include "floor.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <stdexcept>

namespace strata::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

int OpenScratch(const std::string& dir, std::string* path) {
  *path = dir + "/strata-floor-XXXXXX";
  int fd = mkstemp(path->data());
  if (fd < 0) throw std::runtime_error("cannot create a scratch file in " + dir);
  return fd;
}

void WriteAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0) throw std::runtime_error(std::string("write: ") + std::strerror(errno));
    data += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace

double MemcpyBandwidth(int64_t bytes, int repeats) {
  std::unique_ptr<char[]> src(new char[bytes]);
  std::unique_ptr<char[]> dst(new char[bytes]);
  std::memset(src.get(), 0x5a, bytes);
  std::memset(dst.get(), 0, bytes);  // fault the pages in before timing
  double best = 0;
  for (int i = 0; i < repeats; ++i) {
    auto t0 = Clock::now();
    std::memcpy(dst.get(), src.get(), bytes);
    auto t1 = Clock::now();
    best = std::max(best, static_cast<double>(bytes) / Seconds(t0, t1));
  }
  if (dst[bytes / 2] != 0x5a) throw std::runtime_error("memcpy floor: copy did not happen");
  return best;
}

double SequentialWriteBandwidth(const std::string& dir, int64_t bytes) {
  std::string path;
  int fd = OpenScratch(dir, &path);
  const size_t chunk = 1 << 20;
  std::unique_ptr<char[]> buf(new char[chunk]);
  for (size_t i = 0; i < chunk; ++i) buf[i] = static_cast<char>(i * 131);
  auto t0 = Clock::now();
  for (int64_t done = 0; done < bytes; done += chunk) WriteAll(fd, buf.get(), chunk);
  ::fsync(fd);
  auto t1 = Clock::now();
  ::close(fd);
  ::unlink(path.c_str());
  return static_cast<double>(bytes) / Seconds(t0, t1);
}

LatencySummary Summarize(std::vector<double> micros) {
  LatencySummary s;
  if (micros.empty()) return s;
  std::sort(micros.begin(), micros.end());
  auto at = [&](double q) {
    size_t i = std::min(micros.size() - 1, static_cast<size_t>(q * micros.size()));
    return micros[i];
  };
  s.p50_us = at(0.50);
  s.p99_us = at(0.99);
  s.mean_us = std::accumulate(micros.begin(), micros.end(), 0.0) / micros.size();
  return s;
}

LatencySummary FdatasyncLatency(const std::string& dir, int iterations, int64_t append_bytes) {
  std::string path;
  int fd = OpenScratch(dir, &path);
  std::string payload(append_bytes, 'x');
  std::vector<double> micros;
  micros.reserve(iterations);
  for (int i = 0; i < iterations; ++i) {
    auto t0 = Clock::now();
    WriteAll(fd, payload.data(), payload.size());
    ::fdatasync(fd);
    auto t1 = Clock::now();
    micros.push_back(Seconds(t0, t1) * 1e6);
  }
  ::close(fd);
  ::unlink(path.c_str());
  return Summarize(std::move(micros));
}

std::string FormatRate(double bytes_per_second) {
  if (bytes_per_second >= 1e9) return fmt::format("{:.2f} GB/s", bytes_per_second / 1e9);
  return fmt::format("{:.0f} MB/s", bytes_per_second / 1e6);
}

}  // namespace strata::bench
