// Bloom filters over encoded keys (bloom.h): built once per generation, stored in the checksummed
// envelope (util/envelope.h) as "bloom.bin", consulted by point lookups to skip generations.
#include "lsm/bloom.h"

#include <algorithm>
#include <cmath>

#include "fmt/format.h"
#include "lsm/layout.h"
#include "util/checksum.h"
#include "util/envelope.h"
#include "util/little_endian.h"

namespace strata::lsm {
namespace {

constexpr int kMaxProbes = 30;
constexpr size_t kHeaderBytes = 16;  // u32 probes | u32 reserved | u64 bit count

// The two hashes of double hashing, both taken from one XXH3-64 value: the second is the
// value with its halves swapped, forced odd so that successive probes never repeat a step
// of zero.
struct ProbeHashes {
  uint64_t h1;
  uint64_t h2;
};

ProbeHashes HashKey(std::string_view key) {
  const uint64_t h = XxHash3_64(key);
  return {h, ((h >> 32) | (h << 32)) | 1};
}

}  // namespace

BloomFilter BloomFilter::Build(const std::vector<std::string>& keys, int bits_per_key) {
  bits_per_key = std::max(bits_per_key, 1);
  BloomFilter filter;
  filter.probes_ =
      std::clamp(static_cast<int>(std::lround(bits_per_key * std::log(2.0))), 1, kMaxProbes);
  const uint64_t wanted = std::max<uint64_t>(64, uint64_t{keys.size()} * uint64_t(bits_per_key));
  filter.bits_.assign(static_cast<size_t>((wanted + 63) / 64), 0);
  const uint64_t m = static_cast<uint64_t>(filter.bit_count());
  for (const std::string& key : keys) {
    const ProbeHashes h = HashKey(key);
    uint64_t position = h.h1;
    for (int i = 0; i < filter.probes_; ++i) {
      const uint64_t bit = position % m;
      filter.bits_[bit / 64] |= uint64_t{1} << (bit % 64);
      position += h.h2;
    }
  }
  return filter;
}

bool BloomFilter::MayContain(std::string_view key) const {
  if (bits_.empty()) return true;  // a default-constructed filter knows nothing
  const uint64_t m = static_cast<uint64_t>(bit_count());
  const ProbeHashes h = HashKey(key);
  uint64_t position = h.h1;
  for (int i = 0; i < probes_; ++i) {
    const uint64_t bit = position % m;
    if ((bits_[bit / 64] & (uint64_t{1} << (bit % 64))) == 0) return false;
    position += h.h2;
  }
  return true;
}

std::string BloomFilter::Serialize() const {
  std::string payload;
  payload.reserve(kHeaderBytes + bits_.size() * 8);
  PutFixed32(&payload, static_cast<uint32_t>(probes_));
  PutFixed32(&payload, 0);
  PutFixed64(&payload, static_cast<uint64_t>(bit_count()));
  for (uint64_t word : bits_) PutFixed64(&payload, word);
  return EncodeEnvelope(kBloomKind, payload);
}

Result<BloomFilter> BloomFilter::Parse(std::string_view bytes, std::string_view what) {
  STRATA_ASSIGN_OR_RETURN(std::string_view payload, DecodeEnvelope(kBloomKind, bytes, what));
  if (payload.size() < kHeaderBytes) {
    return Status::Corruption(
        fmt::format("{}: bloom filter payload of {} bytes is shorter than its {}-byte header", what,
                    payload.size(), kHeaderBytes));
  }
  const uint32_t probes = DecodeFixed32(payload.data());
  const uint32_t reserved = DecodeFixed32(payload.data() + 4);
  const uint64_t bit_count = DecodeFixed64(payload.data() + 8);
  if (probes < 1 || probes > kMaxProbes) {
    return Status::Corruption(
        fmt::format("{}: bloom filter probe count {} is outside 1..{}", what, probes, kMaxProbes));
  }
  if (reserved != 0) {
    return Status::Corruption(
        fmt::format("{}: bloom filter reserved field is {}, expected 0", what, reserved));
  }
  if (bit_count < 64 || bit_count % 64 != 0 || bit_count / 8 != payload.size() - kHeaderBytes) {
    return Status::Corruption(fmt::format(
        "{}: bloom filter bit count {} does not match its {} bytes of bits (or is not a "
        "positive multiple of 64)",
        what, bit_count, payload.size() - kHeaderBytes));
  }
  BloomFilter filter;
  filter.probes_ = static_cast<int>(probes);
  filter.bits_.resize(static_cast<size_t>(bit_count / 64));
  for (size_t i = 0; i < filter.bits_.size(); ++i) {
    filter.bits_[i] = DecodeFixed64(payload.data() + kHeaderBytes + i * 8);
  }
  return filter;
}

}  // namespace strata::lsm
