// UUID formatting, parsing and the v4/v5/v7 generators. SHA-1 for v5 comes from OpenSSL's
// EVP interface (the one-shot SHA1() is deprecated in OpenSSL 3).
#include "util/uuid.h"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "util/no_destructor.h"

namespace strata {
namespace {

constexpr char kHexDigits[] = "0123456789abcdef";
// Offsets of the four '-' in the canonical form.
constexpr size_t kDashPositions[] = {8, 13, 18, 23};
constexpr size_t kCanonicalLength = 36;
constexpr int64_t kMaxV7Millis = (int64_t{1} << 48) - 1;

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Status ParseError(std::string_view text, std::string_view what) {
  constexpr size_t kMaxQuoted = 64;
  std::string quoted(text.substr(0, kMaxQuoted));
  if (text.size() > kMaxQuoted) quoted += "...";
  return Status::InvalidArgument(fmt::format("invalid UUID \"{}\": {}", quoted, what));
}

Uuid::Bytes SetVersionAndVariant(Uuid::Bytes bytes, int version) {
  bytes[6] = static_cast<uint8_t>((bytes[6] & 0x0F) | (version << 4));
  bytes[8] = static_cast<uint8_t>((bytes[8] & 0x3F) | 0x80);
  return bytes;
}

[[noreturn]] void DieOpenSslFailure(const char* step) {
  std::fprintf(stderr, "strata: OpenSSL SHA-1 failed in %s; cannot compute UUIDv5\n", step);
  std::abort();
}

}  // namespace

Result<Uuid> Uuid::Parse(std::string_view text) {
  if (text.size() != kCanonicalLength) {
    return ParseError(
        text, fmt::format("expected 36 characters (8-4-4-4-12 hex digits), got {}", text.size()));
  }
  Bytes bytes{};
  size_t byte_index = 0;
  size_t dash_index = 0;
  for (size_t pos = 0; pos < kCanonicalLength;) {
    if (dash_index < 4 && pos == kDashPositions[dash_index]) {
      if (text[pos] != '-') {
        return ParseError(text, fmt::format("expected '-' at position {}", pos));
      }
      ++dash_index;
      ++pos;
      continue;
    }
    const int high = HexValue(text[pos]);
    const int low = HexValue(text[pos + 1]);
    if (high < 0 || low < 0) {
      const size_t bad = high < 0 ? pos : pos + 1;
      return ParseError(text, fmt::format("expected a hex digit at position {}", bad));
    }
    bytes[byte_index++] = static_cast<uint8_t>(high << 4 | low);
    pos += 2;
  }
  return Uuid(bytes);
}

std::string Uuid::ToString() const {
  std::string out;
  out.reserve(kCanonicalLength);
  for (size_t i = 0; i < kSize; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHexDigits[bytes_[i] >> 4];
    out += kHexDigits[bytes_[i] & 0x0F];
  }
  return out;
}

int64_t Uuid::V7UnixMillis() const {
  int64_t millis = 0;
  for (size_t i = 0; i < 6; ++i) millis = (millis << 8) | bytes_[i];
  return millis;
}

Uuid UuidV4(RandomSource& random) {
  Uuid::Bytes bytes;
  random.Fill(bytes);
  return Uuid(SetVersionAndVariant(bytes, 4));
}

Uuid UuidV5(const Uuid& namespace_id, std::string_view name) {
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  if (context == nullptr) DieOpenSslFailure("EVP_MD_CTX_new");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int digest_length = 0;
  const bool ok = EVP_DigestInit_ex(context, EVP_sha1(), nullptr) == 1 &&
                  EVP_DigestUpdate(context, namespace_id.bytes().data(), Uuid::kSize) == 1 &&
                  EVP_DigestUpdate(context, name.data(), name.size()) == 1 &&
                  EVP_DigestFinal_ex(context, digest, &digest_length) == 1;
  EVP_MD_CTX_free(context);
  if (!ok || digest_length < Uuid::kSize) DieOpenSslFailure("EVP_Digest*");
  Uuid::Bytes bytes;
  std::memcpy(bytes.data(), digest, Uuid::kSize);
  return Uuid(SetVersionAndVariant(bytes, 5));
}

Uuid UuidV7Generator::Next(Clock& clock, RandomSource& random) {
  int64_t now_millis = clock.NowMicros() / 1000;
  if (now_millis < 0) now_millis = 0;
  if (now_millis > kMaxV7Millis) now_millis = kMaxV7Millis;

  int64_t millis = 0;
  uint32_t rand_a = 0;
  {
    MutexLock lock(mutex_);
    if (now_millis > last_millis_) {
      last_millis_ = now_millis;
      last_rand_a_ = static_cast<uint32_t>(random.Next() & 0xFFF);
    } else if (last_rand_a_ < 0xFFF) {
      ++last_rand_a_;
    } else {
      // Counter exhausted within this millisecond: run ahead of the clock by one (RFC 9562
      // section 6.2 allows this); saturates at the largest 48-bit time.
      if (last_millis_ < kMaxV7Millis) ++last_millis_;
      last_rand_a_ = static_cast<uint32_t>(random.Next() & 0xFFF);
    }
    millis = last_millis_;
    rand_a = last_rand_a_;
  }
  const uint64_t rand_b = random.Next();

  Uuid::Bytes bytes;
  for (int i = 0; i < 6; ++i) bytes[i] = static_cast<uint8_t>(millis >> (40 - 8 * i));
  bytes[6] = static_cast<uint8_t>(rand_a >> 8);
  bytes[7] = static_cast<uint8_t>(rand_a);
  for (int i = 0; i < 8; ++i) bytes[8 + i] = static_cast<uint8_t>(rand_b >> (56 - 8 * i));
  return Uuid(SetVersionAndVariant(bytes, 7));
}

Uuid UuidV7(Clock& clock, RandomSource& random) {
  static NoDestructor<UuidV7Generator> generator;
  return generator->Next(clock, random);
}

}  // namespace strata

size_t std::hash<strata::Uuid>::operator()(const strata::Uuid& uuid) const noexcept {
  uint64_t high = 0;
  uint64_t low = 0;
  std::memcpy(&high, uuid.bytes().data(), 8);
  std::memcpy(&low, uuid.bytes().data() + 8, 8);
  // Mix both halves; v7 ids share their leading (time) bytes, so high alone hashes poorly.
  return static_cast<size_t>(high * 0x9e3779b97f4a7c15ull ^ low);
}
