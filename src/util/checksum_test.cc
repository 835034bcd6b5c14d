// Tests for xxHash wrappers and CRC-32C: published vectors, streaming splits, hardware vs
// software agreement, and CRC masking.
#include "util/checksum.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "support/temp_dir.h"

namespace strata {
namespace {

constexpr uint64_t kPrime32 = 2654435761u;
constexpr uint64_t kPrime64 = 11400714785074694797ull;

// The pseudo-random buffer that xxhsum's built-in sanity check hashes; the expected values
// below are from that check.
std::string XxhSanityBuffer(size_t length) {
  std::string buffer(length, '\0');
  uint64_t generator = kPrime32;
  for (char& c : buffer) {
    c = static_cast<char>(generator >> 56);
    generator *= kPrime64;
  }
  return buffer;
}

std::string RandomBytes(std::mt19937_64& rng, size_t length) {
  std::string bytes(length, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  return bytes;
}

TEST(XxHashTest, Xxh64MatchesReferenceVectors) {
  const std::string buffer = XxhSanityBuffer(2367);
  const std::string_view view = buffer;
  EXPECT_EQ(XxHash64(""), 0xEF46DB3751D8E999ull);
  EXPECT_EQ(XxHash64("", kPrime32), 0xAC75FDA2929B17EFull);
  EXPECT_EQ(XxHash64("a"), 0xD24EC4F1A98C6E5Bull);
  EXPECT_EQ(XxHash64("abc"), 0x44BC2CF5AD770999ull);
  EXPECT_EQ(XxHash64(view.substr(0, 1)), 0xE934A84ADB052768ull);
  EXPECT_EQ(XxHash64(view.substr(0, 1), kPrime32), 0x5014607643A9B4C3ull);
  EXPECT_EQ(XxHash64(view.substr(0, 4)), 0x9136A0DCA57457EEull);
  EXPECT_EQ(XxHash64(view.substr(0, 14)), 0x8282DCC4994E35C8ull);
  EXPECT_EQ(XxHash64(view.substr(0, 14), kPrime32), 0xC3BD6BF63DEB6DF0ull);
  EXPECT_EQ(XxHash64(view.substr(0, 222)), 0xB641AE8CB691C174ull);
  EXPECT_EQ(XxHash64(view.substr(0, 222), kPrime32), 0x20CB8AB7AE10C14Aull);
}

TEST(XxHashTest, Xxh3MatchesReferenceVectors) {
  const std::string buffer = XxhSanityBuffer(2367);
  const std::string_view view = buffer;
  EXPECT_EQ(XxHash3_64(""), 0x2D06800538D394C2ull);
  EXPECT_EQ(XxHash3_64("", kPrime64), 0xA8A6B918B2F0364Aull);
  EXPECT_EQ(XxHash3_64(view.substr(0, 1)), 0xC44BDFF4074EECDBull);
  EXPECT_EQ(XxHash3_64(view.substr(0, 6), kPrime64), 0x84589C116AB59AB9ull);
  EXPECT_EQ(XxHash3_64(view.substr(0, 48)), 0x397DA259ECBA1F11ull);
  EXPECT_EQ(XxHash3_64(view.substr(0, 195)), 0xCD94217EE362EC3Aull);
  EXPECT_EQ(XxHash3_64(view.substr(0, 2048)), 0xDD59E2C3A5F038E0ull);
  EXPECT_EQ(XxHash3_64(view, kPrime64), 0xD2DB3415B942B42Aull);
}

TEST(XxHashTest, Xxh64AndXxh3DifferAndSeedMatters) {
  EXPECT_NE(XxHash64("strata"), XxHash3_64("strata"));
  EXPECT_NE(XxHash64("strata", 1), XxHash64("strata", 2));
  EXPECT_NE(XxHash3_64("strata", 1), XxHash3_64("strata", 2));
}

TEST(XxHash64StreamTest, AnySplitGivesOneShotDigest) {
  const auto seed = testing::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 200; ++round) {
    const std::string data = RandomBytes(rng, rng() % 600);
    const uint64_t hash_seed = rng();
    XxHash64Stream stream(hash_seed);
    size_t pos = 0;
    while (pos < data.size()) {
      const size_t chunk = std::min<size_t>(rng() % 70, data.size() - pos);
      stream.Update(std::string_view(data).substr(pos, chunk));
      pos += chunk;
    }
    ASSERT_EQ(stream.Digest(), XxHash64(data, hash_seed)) << "length " << data.size();
  }
}

TEST(XxHash64StreamTest, DigestDoesNotEndTheStream) {
  XxHash64Stream stream;
  stream.Update("hello ");
  EXPECT_EQ(stream.Digest(), XxHash64("hello "));
  stream.Update("world");
  EXPECT_EQ(stream.Digest(), XxHash64("hello world"));
}

TEST(XxHash64StreamTest, CopiesAreIndependent) {
  XxHash64Stream stream(7);
  stream.Update("prefix-");
  XxHash64Stream fork = stream;
  stream.Update("left");
  fork.Update("right");
  EXPECT_EQ(stream.Digest(), XxHash64("prefix-left", 7));
  EXPECT_EQ(fork.Digest(), XxHash64("prefix-right", 7));
}

TEST(XxHash64StreamTest, ResetForgetsInputAndAppliesNewSeed) {
  XxHash64Stream stream(1);
  stream.Update("discarded");
  stream.Reset(9);
  stream.Update("kept");
  EXPECT_EQ(stream.Digest(), XxHash64("kept", 9));
}

TEST(Crc32cTest, MatchesStandardCheckValue) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(""), 0u);
}

// Vectors from RFC 3720 (iSCSI) appendix B.4, also used by LevelDB's crc32c tests.
TEST(Crc32cTest, MatchesIscsiVectors) {
  EXPECT_EQ(Crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending(32, '\0');
  std::string descending(32, '\0');
  for (int i = 0; i < 32; ++i) {
    ascending[i] = static_cast<char>(i);
    descending[i] = static_cast<char>(31 - i);
  }
  EXPECT_EQ(Crc32c(ascending), 0x46DD794Eu);
  EXPECT_EQ(Crc32c(descending), 0x113FDB5Cu);

  const unsigned char read_command[48] = {
      0x01, 0xc0, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x04, 0x00,
      0x00, 0x00, 0x00, 0x14, 0x00, 0x00, 0x00, 0x18, 0x28, 0x00, 0x00, 0x00,
      0x00, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
  };
  EXPECT_EQ(Crc32c(std::string_view(reinterpret_cast<const char*>(read_command), 48)), 0xD9963A56u);
}

TEST(Crc32cTest, ExtendEqualsCrcOfConcatenation) {
  EXPECT_EQ(Crc32cExtend(Crc32c("hello "), "world"), Crc32c("hello world"));
  EXPECT_EQ(Crc32cExtend(0, "123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32cExtend(Crc32c("abc"), ""), Crc32c("abc"));
}

TEST(Crc32cTest, PortableAndHardwarePathsAgreeOnRandomInputs) {
  const auto seed = testing::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::string data = RandomBytes(rng, 4096);
  uint32_t probe = 0;
  const bool has_hardware = crc32c_internal::ExtendHardware(0, "", probe);
  if (!has_hardware) GTEST_LOG_(INFO) << "no SSE4.2: checking the portable path only";
  for (int round = 0; round < 500; ++round) {
    const size_t offset = rng() % 64;  // exercise unaligned starts
    const size_t length = rng() % (data.size() - offset);
    const std::string_view piece = std::string_view(data).substr(offset, length);
    const auto initial = static_cast<uint32_t>(rng());
    // Oracle: bitwise CRC, one bit at a time.
    uint32_t expected = ~initial;
    for (unsigned char byte : piece) {
      expected ^= byte;
      for (int bit = 0; bit < 8; ++bit)
        expected = (expected >> 1) ^ (0x82F63B78u & -(expected & 1));
    }
    expected = ~expected;
    ASSERT_EQ(crc32c_internal::ExtendPortable(initial, piece), expected) << length;
    ASSERT_EQ(Crc32cExtend(initial, piece), expected) << length;
    if (has_hardware) {
      uint32_t hardware = 0;
      ASSERT_TRUE(crc32c_internal::ExtendHardware(initial, piece, hardware));
      ASSERT_EQ(hardware, expected) << length;
    }
  }
}

TEST(CrcMaskTest, MaskChangesValueAndUnmaskRestoresIt) {
  const uint32_t crc = Crc32c("foo");
  EXPECT_NE(crc, MaskCrc(crc));
  EXPECT_NE(crc, MaskCrc(MaskCrc(crc)));
  EXPECT_EQ(crc, UnmaskCrc(MaskCrc(crc)));
  EXPECT_EQ(crc, UnmaskCrc(UnmaskCrc(MaskCrc(MaskCrc(crc)))));
  // Rotate right by 15, then add 0xa282ead8 (LevelDB's kMaskDelta).
  EXPECT_EQ(MaskCrc(0), 0xA282EAD8u);
  EXPECT_EQ(MaskCrc(1u << 15), 0xA282EAD9u);
  for (uint32_t value : {0u, 1u, 0xFFFFFFFFu, 0x80000000u, 0xE3069283u}) {
    EXPECT_EQ(UnmaskCrc(MaskCrc(value)), value);
  }
}

}  // namespace
}  // namespace strata
