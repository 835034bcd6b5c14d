// Checksums for on-disk and on-wire integrity: xxHash (fast, 64-bit, for data files and
// bundles) and CRC-32C (for WAL records, with LevelDB-style masking when stored with data).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace strata {

// XXH64 of `data` (libxxhash). Stable across platforms and versions: safe to persist.
uint64_t XxHash64(std::string_view data, uint64_t seed = 0);

// XXH3 64-bit variant: faster than XXH64 on most inputs, also stable since xxHash 0.8.0.
// Not interchangeable with XxHash64: a format must say which one it stores.
uint64_t XxHash3_64(std::string_view data, uint64_t seed = 0);

// Incremental XXH64: Update() over any split of the input, then Digest(), gives the same value
// as XxHash64() over the concatenation. Digest() does not end the stream; more Update()s may
// follow. A value type (copyable; no allocation). Not thread safe: one user at a time.
class XxHash64Stream {
 public:
  explicit XxHash64Stream(uint64_t seed = 0);

  void Update(std::string_view data);
  uint64_t Digest() const;
  // Forgets everything fed so far and starts again with `seed`.
  void Reset(uint64_t seed = 0);

 private:
  // Holds an XXH64_state_t (88 bytes in xxHash 0.8), kept opaque so this header does not
  // include xxhash.h; the .cc static_asserts that it fits.
  static constexpr size_t kStateBytes = 96;
  alignas(8) unsigned char state_[kStateBytes];
};

// CRC-32C (Castagnoli, as in iSCSI, ext4, LevelDB). Crc32c("123456789") == 0xE3069283.
// Uses the SSE4.2 crc32 instruction when the CPU has it, else a table-driven software path;
// both give identical results.
uint32_t Crc32c(std::string_view data);

// The CRC-32C of A + data, given crc == Crc32c(A). Crc32cExtend(0, data) == Crc32c(data).
uint32_t Crc32cExtend(uint32_t crc, std::string_view data);

// Computing the CRC of a string that contains embedded CRCs is error prone (a CRC over data
// ending in its own CRC is a constant), so stored CRCs are masked, as in LevelDB:
// rotate right by 15 bits and add a constant. UnmaskCrc(MaskCrc(c)) == c.
uint32_t MaskCrc(uint32_t crc);
uint32_t UnmaskCrc(uint32_t masked_crc);

// Exposed so tests can check that the hardware and software paths agree.
namespace crc32c_internal {
uint32_t ExtendPortable(uint32_t crc, std::string_view data);
// Returns false (and computes nothing) when the CPU lacks SSE4.2 or this is not x86-64.
bool ExtendHardware(uint32_t crc, std::string_view data, uint32_t& result);
}  // namespace crc32c_internal

}  // namespace strata
