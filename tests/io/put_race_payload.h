// Keys and payloads shared by the put-if-absent race test and its helper process, so the
// test can check that each stored object is exactly its winner's payload.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace strata::testing {

// Spread over 16 directories, so racing writers also race to create them.
inline std::string RaceKey(int i) { return fmt::format("race/d{:02}/key-{:04}", i % 16, i); }

// Deterministic bytes that differ per writer and key; 0.5 KiB to ~60 KiB, so some objects
// are read through mmap by a store with a small mmap threshold.
inline std::string RacePayload(std::string_view writer, int i) {
  std::string out = fmt::format("writer={} key={}\n", writer, i);
  const size_t header = out.size();
  out.resize(512 + static_cast<size_t>(i) * 7919 % 61440);
  uint64_t x = static_cast<uint64_t>(i + 1) * 0x9E3779B97F4A7C15ull;
  for (char c : writer) x = x * 31 + static_cast<unsigned char>(c);
  for (size_t pos = header; pos < out.size(); pos += sizeof(x)) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    std::memcpy(out.data() + pos, &x, std::min(sizeof(x), out.size() - pos));
  }
  return out;
}

}  // namespace strata::testing
