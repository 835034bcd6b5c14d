// Tests for Uuid: RFC 9562 vectors for v4/v5/v7, parsing, ordering and v7 monotonicity.
#include "util/uuid.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <deque>
#include <set>
#include <thread>
#include <unordered_set>
#include <vector>

#include "support/temp_dir.h"

namespace strata {
namespace {

using ::testing::HasSubstr;

// Returns queued values in order, then fails the test if asked for more.
class ScriptedRandom : public RandomSource {
 public:
  explicit ScriptedRandom(std::vector<uint64_t> values) : values_(values.begin(), values.end()) {}
  uint64_t Next() override {
    if (values_.empty()) {
      ADD_FAILURE() << "ScriptedRandom ran out of values";
      return 0;
    }
    const uint64_t value = values_.front();
    values_.pop_front();
    return value;
  }
  size_t remaining() const { return values_.size(); }

 private:
  std::deque<uint64_t> values_;
};

// The little-endian word whose Fill() bytes are bytes[offset..offset+8).
uint64_t WordForBytes(const Uuid::Bytes& bytes, size_t offset) {
  uint64_t word = 0;
  for (int i = 7; i >= 0; --i) word = (word << 8) | bytes[offset + i];
  return word;
}

std::string Canonical(std::string_view text) { return Uuid::Parse(text)->ToString(); }

TEST(UuidTest, NamespaceConstantsMatchRfc) {
  EXPECT_EQ(NamespaceDns().ToString(), "6ba7b810-9dad-11d1-80b4-00c04fd430c8");
  EXPECT_EQ(NamespaceUrl().ToString(), "6ba7b811-9dad-11d1-80b4-00c04fd430c8");
  EXPECT_EQ(NamespaceOid().ToString(), "6ba7b812-9dad-11d1-80b4-00c04fd430c8");
  EXPECT_EQ(NamespaceX500().ToString(), "6ba7b814-9dad-11d1-80b4-00c04fd430c8");
}

TEST(UuidTest, V5MatchesRfcDnsExample) {
  const Uuid id = UuidV5(NamespaceDns(), "www.example.com");
  EXPECT_EQ(id.ToString(), "2ed6657d-e927-568b-95e1-2665a8aea6a2");
  EXPECT_EQ(id.version(), 5);
  EXPECT_TRUE(id.IsRfc9562Variant());
}

TEST(UuidTest, V5MatchesIndependentImplementationForEachNamespace) {
  // Expected values from Python's uuid.uuid5.
  EXPECT_EQ(UuidV5(NamespaceUrl(), "https://example.com/strata").ToString(),
            "ba880522-0b35-5253-962b-fc2a2748145b");
  EXPECT_EQ(UuidV5(NamespaceOid(), "1.3.6.1").ToString(), "1447fa61-5277-5fef-a9b3-fbc6e44f4af3");
  EXPECT_EQ(UuidV5(NamespaceX500(), "cn=strata").ToString(),
            "082cb7ac-aba4-508c-bcdf-129a0e79ea16");
  EXPECT_EQ(UuidV5(NamespaceDns(), "").ToString(), "4ebd0208-8328-5d69-8c44-ec50939c0967");
}

TEST(UuidTest, V4MatchesRfcExampleFromItsRandomBits) {
  // RFC 9562 appendix A.2: 919108f7-52d1-4320-9bac-f847db4148a8. Feed back its own bits
  // with the version and variant fields scrambled, to show UuidV4 sets them.
  Uuid::Bytes bytes = Uuid::Parse("919108f7-52d1-4320-9bac-f847db4148a8")->bytes();
  bytes[6] ^= 0xF0;
  bytes[8] ^= 0xC0;
  ScriptedRandom random({WordForBytes(bytes, 0), WordForBytes(bytes, 8)});
  EXPECT_EQ(UuidV4(random).ToString(), "919108f7-52d1-4320-9bac-f847db4148a8");
}

TEST(UuidTest, V4SetsVersionAndVariantBitsAndIsUnique) {
  SeededRandom random(testing::TestSeed());
  std::set<Uuid> seen;
  for (int i = 0; i < 1000; ++i) {
    const Uuid id = UuidV4(random);
    ASSERT_EQ(id.version(), 4);
    ASSERT_TRUE(id.IsRfc9562Variant());
    const std::string text = id.ToString();
    ASSERT_EQ(text[14], '4');
    ASSERT_THAT(std::string("89ab"), HasSubstr(std::string(1, text[19])));
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(UuidTest, V7MatchesRfcAppendixExample) {
  // RFC 9562 appendix A.6: unix_ts_ms 0x017F22E279B0 (2022-02-22 19:22:22 UTC), rand_a 0xCC3,
  // rand_b 0x18C4DC0C0C07398F.
  ManualClock clock(int64_t{0x017F22E279B0} * 1000 + 123);
  ScriptedRandom random({0xCC3, 0x18C4DC0C0C07398Full});
  UuidV7Generator generator;
  const Uuid id = generator.Next(clock, random);
  EXPECT_EQ(id.ToString(), "017f22e2-79b0-7cc3-98c4-dc0c0c07398f");
  EXPECT_EQ(id.version(), 7);
  EXPECT_TRUE(id.IsRfc9562Variant());
  EXPECT_EQ(id.V7UnixMillis(), 0x017F22E279B0);
  EXPECT_EQ(random.remaining(), 0u);
}

TEST(UuidTest, V7IncrementsCounterWithinAMillisecondAndRunsAheadOnOverflow) {
  ManualClock clock(5'000'000);  // 5000 ms
  ScriptedRandom random({0xFFE, 0, 0, 0x123, 0});
  UuidV7Generator generator;
  const Uuid first = generator.Next(clock, random);
  const Uuid second = generator.Next(clock, random);
  const Uuid third = generator.Next(clock, random);  // rand_a would pass 0xFFF
  EXPECT_EQ(first.ToString(), "00000000-1388-7ffe-8000-000000000000");
  EXPECT_EQ(second.ToString(), "00000000-1388-7fff-8000-000000000000");
  EXPECT_EQ(third.ToString(), "00000000-1389-7123-8000-000000000000");
  EXPECT_LT(first, second);
  EXPECT_LT(second, third);
  EXPECT_EQ(random.remaining(), 0u);
}

TEST(UuidTest, V7StaysOrderedWhenClockStallsOrGoesBack) {
  ManualClock clock(1'700'000'000'000'000);
  SeededRandom random(testing::TestSeed());
  UuidV7Generator generator;
  Uuid previous = generator.Next(clock, random);
  for (int i = 0; i < 20000; ++i) {
    if (i % 1000 == 0) clock.Set(clock.NowMicros() - 5'000);  // Wall clock jumps back 5 ms.
    if (i % 7 == 0) clock.Advance(std::chrono::microseconds(300));
    const Uuid next = generator.Next(clock, random);
    ASSERT_LT(previous, next) << "call " << i;
    ASSERT_EQ(next.version(), 7);
    previous = next;
  }
}

TEST(UuidTest, V7TimestampFollowsTheClock) {
  ManualClock clock(1'714'566'896'123'456);
  SeededRandom random(1);
  UuidV7Generator generator;
  EXPECT_EQ(generator.Next(clock, random).V7UnixMillis(), 1'714'566'896'123);
  clock.Advance(std::chrono::milliseconds(10));
  EXPECT_EQ(generator.Next(clock, random).V7UnixMillis(), 1'714'566'896'133);
  clock.Set(-5);  // Before 1970 clamps to 0, but the generator never goes backwards.
  EXPECT_EQ(UuidV7Generator().Next(clock, random).V7UnixMillis(), 0);
}

TEST(UuidTest, ProcessWideV7IsOrderedAcrossThreads) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  std::vector<std::vector<Uuid>> ids(kThreads);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&ids, t] {
      for (int i = 0; i < kPerThread; ++i) {
        ids[t].push_back(UuidV7(*SystemClock(), *SystemRandom()));
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::set<Uuid> all;
  for (const auto& sequence : ids) {
    for (size_t i = 1; i < sequence.size(); ++i) ASSERT_LT(sequence[i - 1], sequence[i]);
    all.insert(sequence.begin(), sequence.end());
  }
  EXPECT_EQ(all.size(), size_t{kThreads} * kPerThread);
  const int64_t now_millis = SystemClock()->NowMicros() / 1000;
  EXPECT_NEAR(static_cast<double>(ids[0].back().V7UnixMillis()), static_cast<double>(now_millis),
              60'000);
}

TEST(UuidTest, ParseAcceptsEitherCaseAndRoundTrips) {
  EXPECT_EQ(Canonical("2ED6657D-E927-568B-95E1-2665A8AEA6A2"),
            "2ed6657d-e927-568b-95e1-2665a8aea6a2");
  SeededRandom random(testing::TestSeed());
  for (int i = 0; i < 100; ++i) {
    const Uuid id = UuidV4(random);
    Result<Uuid> parsed = Uuid::Parse(id.ToString());
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, id);
  }
  EXPECT_TRUE(Uuid::Parse("00000000-0000-0000-0000-000000000000")->IsNil());
}

TEST(UuidTest, ParseRejectsMalformedTextNamingThePosition) {
  struct Case {
    const char* text;
    const char* message_part;
  };
  const Case cases[] = {
      {"", "got 0"},
      {"2ed6657d-e927-568b-95e1-2665a8aea6a", "got 35"},
      {"{2ed6657d-e927-568b-95e1-2665a8aea6a2}", "got 38"},
      {"2ed6657de927-568b-95e1-2665a8aea6a2-", "'-' at position 8"},
      {"2ed6657d-e927-568b-95e1_2665a8aea6a2", "'-' at position 23"},
      {"2ed6657d-e927-568b-95e1-2665a8aea6ag", "hex digit at position 35"},
      {"xed6657d-e927-568b-95e1-2665a8aea6a2", "hex digit at position 0"},
      {"2ed6657d-e927-568b-95e1-2665a8aea6 2", "hex digit at position 34"},
  };
  for (const Case& c : cases) {
    Result<Uuid> r = Uuid::Parse(c.text);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_TRUE(r.status().IsInvalidArgument());
    EXPECT_THAT(r.status().message(), HasSubstr(c.message_part)) << c.text;
  }
}

TEST(UuidTest, ComparesBytewiseAndHashesConsistently) {
  const Uuid low = *Uuid::Parse("00000000-0000-0000-0000-0000000000ff");
  const Uuid high = *Uuid::Parse("00000000-0000-0000-0000-000000000100");
  EXPECT_LT(low, high);
  EXPECT_NE(low, high);
  EXPECT_EQ(low, *Uuid::Parse("00000000-0000-0000-0000-0000000000FF"));
  EXPECT_LT(Uuid(), low);
  std::unordered_set<Uuid> set = {low, high, low};
  EXPECT_EQ(set.size(), 2u);
  EXPECT_EQ(std::hash<Uuid>()(low), std::hash<Uuid>()(*Uuid::Parse(low.ToString())));
}

}  // namespace
}  // namespace strata
