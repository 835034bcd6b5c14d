// Bloom filters over encoded keys, sized by the number of keys (a generation's filter is
// built for exactly its rows), stored as "bloom.bin" beside a generation table
// (docs/format/lsm.md §6.2).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strata/status.h"

namespace strata::lsm {

class BloomFilter {
 public:
  // A filter for `keys` with about `bits_per_key` bits per key (10 gives ~1% false
  // positives); at least 64 bits. Keys are hashed with XXH3-64 and probed with double
  // hashing (Kirsch–Mitzenmacher), k = round(bits_per_key * ln 2) probes, 1 <= k <= 30.
  static BloomFilter Build(const std::vector<std::string>& keys, int bits_per_key = 10);
  // Never false for a key given to Build.
  bool MayContain(std::string_view key) const;

  // The object bytes: the table envelope (kind "BLOM") around u32 probes | u32 reserved |
  // u64 bit count | bits (little endian words).
  std::string Serialize() const;
  // Corruption (naming `what`) for a damaged object.
  static Result<BloomFilter> Parse(std::string_view bytes, std::string_view what);

  int64_t bit_count() const { return static_cast<int64_t>(bits_.size()) * 64; }
  int probes() const { return probes_; }

 private:
  std::vector<uint64_t> bits_;
  int probes_ = 1;
};

}  // namespace strata::lsm
