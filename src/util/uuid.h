// UUIDs (RFC 9562): random v4 ids, name-based v5 ids, and time-ordered v7 ids for keys that
// should sort by creation time. Randomness and time are injected (util/clock.h).
#pragma once

#include <array>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "strata/status.h"
#include "util/clock.h"
#include "util/mutex.h"

namespace strata {

// 16 bytes in network (big-endian) order, as laid out by RFC 9562. Comparison is bytewise,
// which for v7 ids is creation-time order. A value type; the default is the nil UUID.
class Uuid {
 public:
  static constexpr size_t kSize = 16;
  using Bytes = std::array<uint8_t, kSize>;

  constexpr Uuid() = default;
  explicit constexpr Uuid(const Bytes& bytes) : bytes_(bytes) {}

  // Parses the canonical 36-character form "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", hex digits
  // in either case. No braces, "urn:uuid:" prefix or surrounding whitespace.
  // Errors: InvalidArgument quoting the text and naming the bad position.
  static Result<Uuid> Parse(std::string_view text);

  // Canonical lower-case form, e.g. "2ed6657d-e927-568b-95e1-2665a8aea6a2".
  std::string ToString() const;

  const Bytes& bytes() const { return bytes_; }
  // The version nibble (4, 5, 7, ...). Meaningful only when IsRfc9562Variant().
  int version() const { return bytes_[6] >> 4; }
  // True when the variant bits are 10xx, the layout RFC 9562 defines versions for.
  bool IsRfc9562Variant() const { return (bytes_[8] & 0xC0) == 0x80; }
  bool IsNil() const { return *this == Uuid(); }
  // The 48-bit Unix millisecond timestamp of a v7 id. Meaningless for other versions.
  int64_t V7UnixMillis() const;

  friend auto operator<=>(const Uuid&, const Uuid&) = default;

 private:
  Bytes bytes_{};
};

// Random UUID: 122 random bits from `random`, version 4, RFC variant.
Uuid UuidV4(RandomSource& random);

// Name-based UUID: SHA-1 (OpenSSL EVP) of namespace bytes + name, version 5, RFC variant.
// Deterministic: the same namespace and name always give the same UUID. Aborts the process if
// OpenSSL cannot compute SHA-1 at all (a broken installation, not a runtime condition).
Uuid UuidV5(const Uuid& namespace_id, std::string_view name);

// Time-ordered UUID (version 7): 48-bit Unix millisecond timestamp, 12-bit rand_a, RFC
// variant, 62-bit rand_b. Ids from one generator strictly increase (RFC 9562 section 6.2,
// method 1 with a 12-bit counter in rand_a):
//  - when the millisecond is later than the last id's, rand_a is random (low 12 bits of one
//    random.Next());
//  - otherwise (same millisecond, or the clock went back) the last timestamp is kept and
//    rand_a is the last one plus 1; when that overflows 12 bits the timestamp is moved one
//    millisecond ahead of the last one and rand_a is drawn afresh.
// rand_b is the low 62 bits of one random.Next() on every call (drawn after rand_a).
// Timestamps below 0 or above 2^48-1 ms are clamped. Thread safe.
class UuidV7Generator {
 public:
  UuidV7Generator() = default;
  Uuid Next(Clock& clock, RandomSource& random);

 private:
  Mutex mutex_;
  int64_t last_millis_ STRATA_GUARDED_BY(mutex_) = -1;
  uint32_t last_rand_a_ STRATA_GUARDED_BY(mutex_) = 0;
};

// A v7 id from the process-wide generator, so ids are monotonic across all callers in the
// process whatever Clock they pass. Tests that pin timestamps should use their own
// UuidV7Generator: a clock set in the future here would hold every later id at that time.
Uuid UuidV7(Clock& clock, RandomSource& random);

// Name-space ids from RFC 9562 section 6.6.
constexpr Uuid NamespaceDns() {
  return Uuid({0x6b, 0xa7, 0xb8, 0x10, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4,
               0x30, 0xc8});
}
constexpr Uuid NamespaceUrl() {
  return Uuid({0x6b, 0xa7, 0xb8, 0x11, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4,
               0x30, 0xc8});
}
constexpr Uuid NamespaceOid() {
  return Uuid({0x6b, 0xa7, 0xb8, 0x12, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4,
               0x30, 0xc8});
}
constexpr Uuid NamespaceX500() {
  return Uuid({0x6b, 0xa7, 0xb8, 0x14, 0x9d, 0xad, 0x11, 0xd1, 0x80, 0xb4, 0x00, 0xc0, 0x4f, 0xd4,
               0x30, 0xc8});
}

}  // namespace strata

template <>
struct std::hash<strata::Uuid> {
  size_t operator()(const strata::Uuid& uuid) const noexcept;
};
