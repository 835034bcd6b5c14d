// The checksummed object envelope: round trips, and every way a damaged object is reported.
#include "util/envelope.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "util/checksum.h"

namespace strata {
namespace {

// Kinds as the table layer names them (any four bytes will do).
constexpr std::string_view kManifestKind = "MNFT";
constexpr std::string_view kDeletionKind = "DELV";
constexpr std::string_view kKeySegmentKind = "KIDX";

void PutU32At(std::string* bytes, size_t offset, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*bytes)[offset + i] = static_cast<char>(v >> (8 * i));
}
void PutU64At(std::string* bytes, size_t offset, uint64_t v) {
  for (int i = 0; i < 8; ++i) (*bytes)[offset + i] = static_cast<char>(v >> (8 * i));
}
// Recomputes the trailing checksum so a deliberate header edit is seen by the later checks.
void Reseal(std::string* bytes) {
  const size_t body = bytes->size() - 8;
  PutU64At(bytes, body, XxHash3_64(std::string_view(*bytes).substr(0, body)));
}

// --- Envelope ----------------------------------------------------------------------------

TEST(EnvelopeTest, RoundTripsPayloadWithEveryByteValue) {
  std::string payload;
  for (int i = 0; i < 512; ++i) payload.push_back(static_cast<char>(i % 256));
  const std::string bytes = EncodeEnvelope(kDeletionKind, payload);
  EXPECT_EQ(bytes.size(), 24 + payload.size() + 8);
  EXPECT_EQ(bytes.substr(0, 8), "STRADELV");
  Result<std::string_view> decoded = DecodeEnvelope(kDeletionKind, bytes, "test object");
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(*decoded, payload);
}

TEST(EnvelopeTest, EmptyPayloadRoundTrips) {
  const std::string bytes = EncodeEnvelope(kKeySegmentKind, "");
  Result<std::string_view> decoded = DecodeEnvelope(kKeySegmentKind, bytes, "empty");
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_TRUE(decoded->empty());
}

TEST(EnvelopeTest, WrongKindIsCorruption) {
  const std::string bytes = EncodeEnvelope(kDeletionKind, "payload");
  Result<std::string_view> decoded = DecodeEnvelope(kManifestKind, bytes, "x.bin");
  ASSERT_TRUE(decoded.status().IsCorruption()) << decoded.status().ToString();
  EXPECT_NE(decoded.status().message().find("x.bin"), std::string::npos);
}

TEST(EnvelopeTest, NewerFormatVersionIsNotSupported) {
  std::string bytes = EncodeEnvelope(kManifestKind, "payload");
  PutU32At(&bytes, 8, kEnvelopeFormatVersion + 1);
  Reseal(&bytes);
  Result<std::string_view> decoded = DecodeEnvelope(kManifestKind, bytes, "m");
  EXPECT_TRUE(decoded.status().IsNotSupported()) << decoded.status().ToString();
}

TEST(EnvelopeTest, PayloadLengthDisagreeingWithSizeIsCorruption) {
  std::string bytes = EncodeEnvelope(kManifestKind, "payload");
  PutU64At(&bytes, 16, 6);
  Reseal(&bytes);
  EXPECT_TRUE(DecodeEnvelope(kManifestKind, bytes, "m").status().IsCorruption());
  PutU64At(&bytes, 16, UINT64_MAX);
  Reseal(&bytes);
  EXPECT_TRUE(DecodeEnvelope(kManifestKind, bytes, "m").status().IsCorruption());
}

TEST(EnvelopeTest, TrailingByteIsCorruption) {
  std::string bytes = EncodeEnvelope(kManifestKind, "payload");
  bytes.push_back('\0');
  EXPECT_TRUE(DecodeEnvelope(kManifestKind, bytes, "m").status().IsCorruption());
}

}  // namespace
}  // namespace strata
