// xxHash wrappers over libxxhash, and CRC-32C with a slicing-by-8 software path plus an
// SSE4.2 path chosen at run time.
#include "util/checksum.h"

#include <array>
#include <cstring>
#include <new>

#define XXH_STATIC_LINKING_ONLY  // for the XXH64_state_t definition (fixed-size, no malloc)
#include <xxhash.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace strata {
namespace {

XXH64_state_t* AsState(unsigned char* storage) {
  return std::launder(reinterpret_cast<XXH64_state_t*>(storage));
}
const XXH64_state_t* AsState(const unsigned char* storage) {
  return std::launder(reinterpret_cast<const XXH64_state_t*>(storage));
}

// Reflected Castagnoli polynomial.
constexpr uint32_t kCrc32cPolynomial = 0x82F63B78;

// kCrcTables[0] is the classic byte-at-a-time table; kCrcTables[k][b] is the CRC of byte b
// followed by k zero bytes, which lets the loop fold 8 input bytes per step.
using CrcTables = std::array<std::array<uint32_t, 256>, 8>;
constexpr CrcTables MakeCrcTables() {
  CrcTables tables{};
  for (uint32_t byte = 0; byte < 256; ++byte) {
    uint32_t crc = byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1) ? kCrc32cPolynomial : 0);
    tables[0][byte] = crc;
  }
  for (size_t k = 1; k < 8; ++k) {
    for (size_t byte = 0; byte < 256; ++byte) {
      const uint32_t previous = tables[k - 1][byte];
      tables[k][byte] = (previous >> 8) ^ tables[0][previous & 0xff];
    }
  }
  return tables;
}
constexpr CrcTables kCrcTables = MakeCrcTables();

uint64_t LoadLittleEndian64(const unsigned char* p) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | p[i];
  return value;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t ExtendSse42(uint32_t crc, std::string_view data) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  uint64_t state = ~crc;
  while (n >= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);  // x86 is little-endian, matching the CRC's byte order.
    state = _mm_crc32_u64(state, word);
    p += 8;
    n -= 8;
  }
  auto state32 = static_cast<uint32_t>(state);
  while (n > 0) {
    state32 = _mm_crc32_u8(state32, *p++);
    --n;
  }
  return ~state32;
}

bool CpuHasSse42() {
  static const bool has_sse42 = __builtin_cpu_supports("sse4.2");
  return has_sse42;
}
#endif

}  // namespace

uint64_t XxHash64(std::string_view data, uint64_t seed) {
  return XXH64(data.data(), data.size(), seed);
}

uint64_t XxHash3_64(std::string_view data, uint64_t seed) {
  return XXH3_64bits_withSeed(data.data(), data.size(), seed);
}

static_assert(sizeof(XXH64_state_t) <= sizeof(XxHash64Stream),
              "XxHash64Stream::kStateBytes is too small for this xxHash version");
static_assert(alignof(XXH64_state_t) <= 8, "XxHash64Stream storage is under-aligned");

XxHash64Stream::XxHash64Stream(uint64_t seed) { Reset(seed); }

void XxHash64Stream::Reset(uint64_t seed) {
  std::memset(state_, 0, sizeof(state_));
  // XXH64_reset cannot fail for caller-owned state; it only reports a null pointer.
  XXH64_reset(AsState(state_), seed);
}

void XxHash64Stream::Update(std::string_view data) {
  XXH64_update(AsState(state_), data.data(), data.size());
}

uint64_t XxHash64Stream::Digest() const { return XXH64_digest(AsState(state_)); }

namespace crc32c_internal {

uint32_t ExtendPortable(uint32_t crc, std::string_view data) {
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  size_t n = data.size();
  uint32_t state = ~crc;
  while (n >= 8) {
    const uint64_t word = LoadLittleEndian64(p) ^ state;
    state = kCrcTables[7][word & 0xff] ^ kCrcTables[6][(word >> 8) & 0xff] ^
            kCrcTables[5][(word >> 16) & 0xff] ^ kCrcTables[4][(word >> 24) & 0xff] ^
            kCrcTables[3][(word >> 32) & 0xff] ^ kCrcTables[2][(word >> 40) & 0xff] ^
            kCrcTables[1][(word >> 48) & 0xff] ^ kCrcTables[0][word >> 56];
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    state = (state >> 8) ^ kCrcTables[0][(state ^ *p++) & 0xff];
    --n;
  }
  return ~state;
}

bool ExtendHardware(uint32_t crc, std::string_view data, uint32_t& result) {
#if defined(__x86_64__)
  if (!CpuHasSse42()) return false;
  result = ExtendSse42(crc, data);
  return true;
#else
  (void)crc;
  (void)data;
  (void)result;
  return false;
#endif
}

}  // namespace crc32c_internal

uint32_t Crc32cExtend(uint32_t crc, std::string_view data) {
  uint32_t result = 0;
  if (crc32c_internal::ExtendHardware(crc, data, result)) return result;
  return crc32c_internal::ExtendPortable(crc, data);
}

uint32_t Crc32c(std::string_view data) { return Crc32cExtend(0, data); }

namespace {
constexpr uint32_t kCrcMaskDelta = 0xa282ead8u;
}  // namespace

uint32_t MaskCrc(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kCrcMaskDelta; }

uint32_t UnmaskCrc(uint32_t masked_crc) {
  const uint32_t rotated = masked_crc - kCrcMaskDelta;
  return (rotated >> 17) | (rotated << 15);
}

}  // namespace strata
