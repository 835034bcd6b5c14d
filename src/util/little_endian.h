// Fixed-width little-endian integers in byte strings, for strata's own binary formats
// (envelopes, key segments, WAL records), independent of the host's byte order.
#pragma once

#include <cstdint>
#include <string>

namespace strata {

inline void PutFixed32(std::string* out, uint32_t value) {
  char bytes[4];
  for (int i = 0; i < 4; ++i) bytes[i] = static_cast<char>(value >> (8 * i));
  out->append(bytes, 4);
}

inline void PutFixed64(std::string* out, uint64_t value) {
  char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(value >> (8 * i));
  out->append(bytes, 8);
}

// REQUIRES: 4 (or 8) readable bytes at `p`.
inline uint32_t DecodeFixed32(const char* p) {
  uint32_t value = 0;
  for (int i = 3; i >= 0; --i) value = (value << 8) | static_cast<uint8_t>(p[i]);
  return value;
}

inline uint64_t DecodeFixed64(const char* p) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<uint8_t>(p[i]);
  return value;
}

}  // namespace strata
