// Tests of the generation bloom filter (bloom.h): no false negatives, the false-positive
// rate, and the stored form.
#include "lsm/bloom.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "lsm/layout.h"
#include "support/status_assertions.h"
#include "support/temp_dir.h"
#include "util/envelope.h"
#include "util/little_endian.h"

namespace strata::lsm {
namespace {

std::vector<std::string> Keys(const std::string& prefix, int n) {
  std::vector<std::string> keys;
  keys.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) keys.push_back(prefix + std::to_string(i));
  return keys;
}

TEST(BloomTest, NoFalseNegativesForManyKeys) {
  const std::vector<std::string> keys = Keys("key-", 100'000);
  BloomFilter filter = BloomFilter::Build(keys);
  EXPECT_GE(filter.bit_count(), 1'000'000);
  EXPECT_EQ(filter.probes(), 7);  // round(10 * ln 2)
  for (const std::string& key : keys) ASSERT_TRUE(filter.MayContain(key)) << key;
}

TEST(BloomTest, FalsePositiveRateIsNearOnePercentAtTenBitsPerKey) {
  BloomFilter filter = BloomFilter::Build(Keys("in-", 20'000), 10);
  const int trials = 100'000;
  int positives = 0;
  for (const std::string& key : Keys("out-", trials)) positives += filter.MayContain(key) ? 1 : 0;
  const double rate = static_cast<double>(positives) / trials;
  // Theory gives ~0.82% for k = 7; allow noise and hash imperfection.
  EXPECT_GT(rate, 0.002) << rate;
  EXPECT_LT(rate, 0.02) << rate;
}

TEST(BloomTest, FewerBitsPerKeyGiveMoreFalsePositives) {
  const std::vector<std::string> keys = Keys("k", 5'000);
  BloomFilter sparse = BloomFilter::Build(keys, 4);
  BloomFilter dense = BloomFilter::Build(keys, 16);
  EXPECT_EQ(sparse.probes(), 3);
  EXPECT_EQ(dense.probes(), 11);
  int sparse_hits = 0;
  int dense_hits = 0;
  for (const std::string& key : Keys("absent", 20'000)) {
    sparse_hits += sparse.MayContain(key) ? 1 : 0;
    dense_hits += dense.MayContain(key) ? 1 : 0;
  }
  EXPECT_GT(sparse_hits, dense_hits);
}

TEST(BloomTest, ProbeCountIsClamped) {
  EXPECT_EQ(BloomFilter::Build({"a"}, 1).probes(), 1);
  EXPECT_EQ(BloomFilter::Build({"a"}, 100).probes(), 30);
}

TEST(BloomTest, SerializeParseRoundTrip) {
  const std::vector<std::string> keys = Keys("r", 1'000);
  BloomFilter filter = BloomFilter::Build(keys, 12);
  const std::string bytes = filter.Serialize();
  ASSERT_OK_AND_ASSIGN(BloomFilter parsed, BloomFilter::Parse(bytes, "bloom.bin"));
  EXPECT_EQ(parsed.bit_count(), filter.bit_count());
  EXPECT_EQ(parsed.probes(), filter.probes());
  EXPECT_EQ(parsed.Serialize(), bytes);
  for (const std::string& key : keys) ASSERT_TRUE(parsed.MayContain(key)) << key;
  for (const std::string& key : Keys("x", 1'000)) {
    EXPECT_EQ(parsed.MayContain(key), filter.MayContain(key)) << key;
  }
  // Envelope (32 bytes of header and checksum) around a 16-byte header and the bits.
  EXPECT_EQ(bytes.size(), 24 + 16 + static_cast<size_t>(filter.bit_count() / 8) + 8);
  EXPECT_EQ(bytes.substr(4, 4), "BLOM");
}

TEST(BloomTest, FlippedByteAnywhereIsCorruption) {
  const std::string bytes = BloomFilter::Build(Keys("f", 50)).Serialize();
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x20);
    Result<BloomFilter> parsed = BloomFilter::Parse(damaged, "gen/1/bloom.bin");
    ASSERT_FALSE(parsed.ok()) << "byte " << i;
    EXPECT_TRUE(parsed.status().IsCorruption()) << "byte " << i << ": " << parsed.status();
    EXPECT_NE(parsed.status().message().find("gen/1/bloom.bin"), std::string::npos);
  }
  EXPECT_TRUE(BloomFilter::Parse(bytes.substr(0, bytes.size() - 1), "b").status().IsCorruption());
  EXPECT_TRUE(BloomFilter::Parse("", "b").status().IsCorruption());
}

TEST(BloomTest, ValidEnvelopeWithBadPayloadIsCorruption) {
  auto payload = [](uint32_t probes, uint32_t reserved, uint64_t bits, size_t words) {
    std::string p;
    PutFixed32(&p, probes);
    PutFixed32(&p, reserved);
    PutFixed64(&p, bits);
    p.append(words * 8, '\xff');
    return EncodeEnvelope(kBloomKind, p);
  };
  ASSERT_OK(BloomFilter::Parse(payload(3, 0, 128, 2), "ok").status());
  EXPECT_TRUE(BloomFilter::Parse(payload(0, 0, 128, 2), "p").status().IsCorruption());
  EXPECT_TRUE(BloomFilter::Parse(payload(31, 0, 128, 2), "p").status().IsCorruption());
  EXPECT_TRUE(BloomFilter::Parse(payload(3, 1, 128, 2), "p").status().IsCorruption());
  EXPECT_TRUE(BloomFilter::Parse(payload(3, 0, 192, 2), "p").status().IsCorruption());
  EXPECT_TRUE(BloomFilter::Parse(payload(3, 0, 100, 2), "p").status().IsCorruption());
  EXPECT_TRUE(BloomFilter::Parse(payload(3, 0, 0, 0), "p").status().IsCorruption());
  EXPECT_TRUE(BloomFilter::Parse(EncodeEnvelope(kBloomKind, "short"), "p").status().IsCorruption());
  // Another kind's envelope is not a bloom filter.
  EXPECT_TRUE(
      BloomFilter::Parse(EncodeEnvelope(kShardManifestKind, ""), "p").status().IsCorruption());
}

TEST(BloomTest, TinyAndEmptyFilters) {
  BloomFilter empty = BloomFilter::Build({});
  EXPECT_EQ(empty.bit_count(), 64);
  EXPECT_FALSE(empty.MayContain("anything"));
  EXPECT_FALSE(empty.MayContain(""));
  ASSERT_OK_AND_ASSIGN(BloomFilter empty_parsed, BloomFilter::Parse(empty.Serialize(), "e"));
  EXPECT_EQ(empty_parsed.bit_count(), 64);
  EXPECT_FALSE(empty_parsed.MayContain("anything"));

  BloomFilter one = BloomFilter::Build({std::string("\0", 1)});
  EXPECT_EQ(one.bit_count(), 64);
  EXPECT_TRUE(one.MayContain(std::string("\0", 1)));
  ASSERT_OK_AND_ASSIGN(BloomFilter one_parsed, BloomFilter::Parse(one.Serialize(), "o"));
  EXPECT_TRUE(one_parsed.MayContain(std::string("\0", 1)));

  BloomFilter empty_key = BloomFilter::Build({""});
  EXPECT_TRUE(empty_key.MayContain(""));
}

TEST(BloomTest, RandomKeysHaveNoFalseNegatives) {
  const unsigned long long seed = strata::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  std::vector<std::string> keys;
  for (int i = 0; i < 5'000; ++i) {
    std::string key(rng() % 24, '\0');
    for (char& c : key) c = static_cast<char>(rng());
    keys.push_back(std::move(key));
  }
  ASSERT_OK_AND_ASSIGN(BloomFilter filter,
                       BloomFilter::Parse(BloomFilter::Build(keys, 6).Serialize(), "r"));
  for (const std::string& key : keys) ASSERT_TRUE(filter.MayContain(key));
}

}  // namespace
}  // namespace strata::lsm
