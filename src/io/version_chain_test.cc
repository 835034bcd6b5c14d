// Version chains (version_chain.h): finding the latest version from a missing, stale, far
// behind or bogus hint and from a chain whose start was deleted, deleting from the start of
// a chain, and the backoff's bounds.
#include "io/version_chain.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>

#include "fmt/format.h"
#include "strata/object_store.h"
#include "support/forwarding_object_store.h"
#include "support/status_assertions.h"

namespace strata::io {
namespace {

constexpr std::string_view kDir = "t/v/";
constexpr std::string_view kHint = "t/v/_hint";

// Forwards to a memory store and counts the calls that tell probing from listing.
class CountingStore final : public strata::testing::ForwardingObjectStore {
 public:
  CountingStore() : ForwardingObjectStore(NewMemoryObjectStore()) {}
  Result<ObjectMeta> Head(std::string_view key) override {
    ++heads;
    return ForwardingObjectStore::Head(key);
  }
  Result<std::vector<ObjectMeta>> List(std::string_view prefix) override {
    ++lists;
    return ForwardingObjectStore::List(prefix);
  }
  std::string Describe() const override { return "counting"; }

  void Reset() { heads = lists = 0; }

  std::atomic<int> heads{0};
  std::atomic<int> lists{0};
};

VersionChainLayout Layout() {
  VersionChainLayout layout;
  layout.hint_key = std::string(kHint);
  layout.versions_dir = std::string(kDir);
  layout.version_key = [](uint64_t v) { return fmt::format("{}{:05}.v", kDir, v); };
  layout.parse_version_key = [](std::string_view key) -> std::optional<uint64_t> {
    if (key.size() != kDir.size() + 7 || key.substr(key.size() - 2) != ".v") return std::nullopt;
    return std::stoull(std::string(key.substr(kDir.size(), 5)));
  };
  return layout;
}

class VersionChainTest : public ::testing::Test {
 protected:
  // Versions first..last exist (and nothing else).
  void WriteChain(uint64_t first, uint64_t last) {
    for (uint64_t v = first; v <= last; ++v) {
      ASSERT_OK(store_.PutIfAbsent(layout_.version_key(v), "version"));
    }
  }
  void SetHint(std::string_view text) { ASSERT_OK(store_.Put(kHint, text)); }
  uint64_t Latest(uint64_t known = 0, int max_probes = kMaxVersionProbes) {
    store_.Reset();
    Result<uint64_t> latest = FindLatestVersion(store_, layout_, known, max_probes);
    EXPECT_TRUE(latest.ok()) << latest.status();
    return latest.ok() ? *latest : ~uint64_t{0};
  }

  CountingStore store_;
  VersionChainLayout layout_ = Layout();
};

TEST(VersionHintTest, ParsesDecimalWithTrailingLineEndsOnly) {
  EXPECT_EQ(ParseVersionHint("42"), 42u);
  EXPECT_EQ(ParseVersionHint("42\n"), 42u);
  EXPECT_EQ(ParseVersionHint("42 \r\n"), 42u);
  EXPECT_EQ(ParseVersionHint(""), std::nullopt);
  EXPECT_EQ(ParseVersionHint("\n"), std::nullopt);
  EXPECT_EQ(ParseVersionHint("4x2"), std::nullopt);
  EXPECT_EQ(ParseVersionHint("-1"), std::nullopt);
  EXPECT_EQ(ParseVersionHint(" 7"), std::nullopt);
  EXPECT_EQ(ParseVersionHint("99999999999999999999999"), std::nullopt);
}

TEST_F(VersionChainTest, HintRoundTripsAndMissingHintReadsAsZero) {
  EXPECT_EQ(ReadVersionHint(store_, kHint), 0u);
  ASSERT_OK(WriteVersionHint(store_, kHint, 17));
  EXPECT_EQ(ReadVersionHint(store_, kHint), 17u);
  SetHint("garbage");
  EXPECT_EQ(ReadVersionHint(store_, kHint), 0u);
}

TEST_F(VersionChainTest, EmptyChainIsZero) {
  EXPECT_EQ(Latest(), 0u);
  SetHint("5");
  EXPECT_EQ(Latest(), 0u);
}

TEST_F(VersionChainTest, HintAheadOfTheChainIsReturnedWithTheLatestVersion) {
  WriteChain(1, 6);
  SetHint("8");  // versions 7 and 8 were lost
  Result<LatestVersion> found = FindLatestVersionAndHint(store_, layout_);
  ASSERT_OK(found.status());
  EXPECT_EQ(found->version, 6u);
  EXPECT_EQ(found->hint, 8u);
  SetHint("4");  // behind: probing from it
  found = FindLatestVersionAndHint(store_, layout_);
  ASSERT_OK(found.status());
  EXPECT_EQ(found->version, 6u);
  EXPECT_EQ(found->hint, 4u);
}

TEST_F(VersionChainTest, MissingHintListsInsteadOfProbingFromOne) {
  WriteChain(1, 6);
  EXPECT_EQ(Latest(), 6u);
  EXPECT_EQ(store_.lists, 1);
  EXPECT_EQ(store_.heads, 0);
}

TEST_F(VersionChainTest, CurrentHintCostsOneProbePastIt) {
  WriteChain(1, 6);
  SetHint("6");
  EXPECT_EQ(Latest(), 6u);
  EXPECT_EQ(store_.lists, 0);
  EXPECT_EQ(store_.heads, 2);  // the start, then the missing 7
}

TEST_F(VersionChainTest, StaleHintWithinTheProbeBudgetProbesForward) {
  WriteChain(1, 20);
  SetHint("15");
  EXPECT_EQ(Latest(), 20u);
  EXPECT_EQ(store_.lists, 0);
  EXPECT_EQ(store_.heads, 1 + 6);  // 15 exists, 16..20 exist, 21 missing
  // `known` beyond the hint wins.
  EXPECT_EQ(Latest(/*known=*/19), 20u);
  EXPECT_EQ(store_.heads, 3);
}

TEST_F(VersionChainTest, HintFarBehindListsAfterTheProbeBudget) {
  WriteChain(1, 40);
  SetHint("2");
  EXPECT_EQ(Latest(0, /*max_probes=*/8), 40u);
  EXPECT_EQ(store_.lists, 1);
  EXPECT_EQ(store_.heads, 1 + 8);
  // Exactly at the budget: the last probe finds the end, no listing.
  EXPECT_EQ(Latest(/*known=*/33, /*max_probes=*/8), 40u);
  EXPECT_EQ(store_.lists, 0);
}

TEST_F(VersionChainTest, HintPastTheChainLists) {
  WriteChain(1, 3);
  SetHint("9");
  EXPECT_EQ(Latest(), 3u);
  EXPECT_EQ(store_.lists, 1);
  EXPECT_EQ(store_.heads, 1);  // version 9 does not exist
}

TEST_F(VersionChainTest, ChainWhoseStartWasDeletedIsFoundByListing) {
  WriteChain(1, 30);
  ASSERT_OK_AND_ASSIGN(int64_t deleted, DeleteVersionsBefore(store_, layout_, 25));
  EXPECT_EQ(deleted, 24);
  // No hint: version 1 is gone, so probing from it would find nothing.
  EXPECT_EQ(Latest(), 30u);
  // A hint or a known version that cleanup removed.
  SetHint("4");
  EXPECT_EQ(Latest(), 30u);
  EXPECT_EQ(store_.lists, 1);
  EXPECT_EQ(Latest(/*known=*/10), 30u);
  EXPECT_EQ(store_.lists, 1);
}

// A chain whose hint lives outside its versions' directory (a table's does): its watch moves
// when either changes, the hint alone included.
TEST(VersionChainWatchTest, MovesWhenAVersionOrAHintOutsideTheirDirectoryChanges) {
  std::shared_ptr<ObjectStore> store = NewMemoryObjectStore();
  VersionChainLayout layout = Layout();
  layout.hint_key = "t/_hint";  // beside "t/v/", not in it
  ASSERT_OK(store->PutIfAbsent(layout.version_key(1), "version"));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ChangeWatch> watch, WatchVersionChain(*store, layout));
  ASSERT_OK_AND_ASSIGN(uint64_t count, watch->Poll());
  ASSERT_OK_AND_ASSIGN(uint64_t again, watch->Poll());
  EXPECT_EQ(again, count);
  ASSERT_OK(store->Put(layout.hint_key, "7"));
  ASSERT_OK_AND_ASSIGN(uint64_t after_hint, watch->Poll());
  EXPECT_NE(after_hint, count);
  ASSERT_OK(store->PutIfAbsent(layout.version_key(2), "version"));
  ASSERT_OK_AND_ASSIGN(uint64_t after_version, watch->Poll());
  EXPECT_NE(after_version, after_hint);
  ASSERT_OK(store->Put("t/v2/other", "x"));  // neither directory
  ASSERT_OK_AND_ASSIGN(uint64_t after_other, watch->Poll());
  EXPECT_EQ(after_other, after_version);
}

TEST_F(VersionChainTest, DeleteVersionsBeforeKeepsTheRestAndIgnoresOtherObjects) {
  WriteChain(3, 9);
  SetHint("9");
  ASSERT_OK(store_.Put(std::string(kDir) + "leftover.tmp", "x"));
  ASSERT_OK_AND_ASSIGN(int64_t deleted, DeleteVersionsBefore(store_, layout_, 6));
  EXPECT_EQ(deleted, 3);
  ASSERT_OK_AND_ASSIGN(std::vector<uint64_t> left, ListVersions(store_, layout_));
  EXPECT_EQ(left, (std::vector<uint64_t>{6, 7, 8, 9}));
  ASSERT_OK_AND_ASSIGN(bool hint, store_.Exists(kHint));
  EXPECT_TRUE(hint);
  ASSERT_OK_AND_ASSIGN(deleted, DeleteVersionsBefore(store_, layout_, 6));
  EXPECT_EQ(deleted, 0);
}

TEST(BackoffTest, DelayStaysWithinTheDoublingCap) {
  SeededRandom random(7);
  const BackoffPolicy policy{std::chrono::microseconds(100), std::chrono::microseconds(1000)};
  for (int attempt = 0; attempt < 70; ++attempt) {
    const int64_t cap = std::min<int64_t>(int64_t{100} << std::min(attempt, 10), 1000);
    int64_t largest = 0;
    for (int i = 0; i < 200; ++i) {
      const int64_t delay = BackoffDelay(policy, attempt, random).count();
      ASSERT_GE(delay, 0);
      ASSERT_LE(delay, cap) << "attempt " << attempt;
      largest = std::max(largest, delay);
    }
    // Jittered over the whole range, not stuck at the bottom.
    EXPECT_GT(largest, cap / 2) << "attempt " << attempt;
  }
}

TEST(BackoffTest, SleepsOnTheInjectedClock) {
  ManualClock clock;
  SeededRandom random(11);
  const BackoffPolicy policy{std::chrono::microseconds(1000), std::chrono::microseconds(1000)};
  int64_t slept = 0;
  for (int i = 0; i < 50; ++i) {
    const int64_t before = clock.NowMicros();
    Backoff(policy, 3, &clock, &random);
    const int64_t delay = clock.NowMicros() - before;
    EXPECT_GE(delay, 0);
    EXPECT_LE(delay, 1000);
    slept += delay;
  }
  EXPECT_GT(slept, 0);
}

}  // namespace
}  // namespace strata::io
