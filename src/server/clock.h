// The server's time and randomness: wall time for record defaults (injectable through
// ServerOptions::now_micros), monotonic seconds for request durations, and the UUIDv4 ids the
// context routes give new records (the kernel's random source).
#pragma once

#include <sys/random.h>
#include <time.h>

#include <cstdint>
#include <string>

namespace strata::server {

inline double MonotonicSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

inline int64_t WallMicros() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

// A random (version 4) UUID in its 36-character text form.
inline std::string NewUuidV4() {
  unsigned char b[16] = {};
  size_t got = 0;
  while (got < sizeof(b)) {
    const ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[b[i] >> 4]);
    out.push_back(kHex[b[i] & 15]);
  }
  return out;
}

}  // namespace strata::server
