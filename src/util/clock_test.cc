// Tests for the injectable clock and randomness sources.
#include "util/clock.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <set>
#include <thread>
#include <vector>

namespace strata {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

TEST(SystemClockTest, IsASingletonReportingPlausibleWallTime) {
  EXPECT_EQ(SystemClock(), SystemClock());
  const int64_t now = SystemClock()->NowMicros();
  EXPECT_GT(now, int64_t{1577836800} * 1000000);  // 2020-01-01
  EXPECT_LT(now, int64_t{4102444800} * 1000000);  // 2100-01-01
}

TEST(SystemClockTest, MonotonicTimeNeverDecreasesAndSleepTakesTime) {
  Clock* clock = SystemClock();
  int64_t previous = clock->MonotonicNanos();
  for (int i = 0; i < 1000; ++i) {
    const int64_t now = clock->MonotonicNanos();
    ASSERT_GE(now, previous);
    previous = now;
  }
  const int64_t before = clock->MonotonicNanos();
  clock->SleepFor(microseconds(2000));
  EXPECT_GE(clock->MonotonicNanos() - before, 2'000'000);
}

TEST(ManualClockTest, StartsAtGivenTimeAndMovesOnlyWhenAdvanced) {
  ManualClock clock(1'000'000);
  EXPECT_EQ(clock.NowMicros(), 1'000'000);
  EXPECT_EQ(clock.MonotonicNanos(), 0);
  EXPECT_EQ(clock.NowMicros(), 1'000'000);
  clock.Advance(milliseconds(5));
  EXPECT_EQ(clock.NowMicros(), 1'005'000);
  EXPECT_EQ(clock.MonotonicNanos(), 5'000'000);
  clock.Advance(nanoseconds(1500));
  EXPECT_EQ(clock.NowMicros(), 1'005'001);
  EXPECT_EQ(clock.MonotonicNanos(), 5'001'500);
}

TEST(ManualClockTest, NegativeAdvanceIsIgnored) {
  ManualClock clock(100);
  clock.Advance(nanoseconds(-5000));
  EXPECT_EQ(clock.NowMicros(), 100);
  EXPECT_EQ(clock.MonotonicNanos(), 0);
}

TEST(ManualClockTest, SetMovesWallTimeOnly) {
  ManualClock clock(5'000'000);
  clock.Advance(microseconds(10));
  clock.Set(1'000);
  EXPECT_EQ(clock.NowMicros(), 1'000);
  EXPECT_EQ(clock.MonotonicNanos(), 10'000);
  clock.Set(-1);
  EXPECT_EQ(clock.NowMicros(), -1);
}

TEST(ManualClockTest, SleepInAdvanceModeMovesTimeAndReturns) {
  ManualClock clock(0);
  clock.SleepFor(microseconds(250));
  EXPECT_EQ(clock.NowMicros(), 250);
  EXPECT_EQ(clock.MonotonicNanos(), 250'000);
  clock.SleepFor(microseconds(0));
  clock.SleepFor(microseconds(-3));
  EXPECT_EQ(clock.NowMicros(), 250);
}

TEST(ManualClockTest, SleepInBlockingModeWaitsUntilAdvancedPastDeadline) {
  ManualClock clock(0, ManualClock::SleepMode::kBlockUntilAdvanced);
  std::atomic<bool> woke{false};
  std::thread sleeper([&] {
    clock.SleepFor(microseconds(100));
    woke = true;
  });
  clock.WaitForSleepers(1);
  clock.Advance(microseconds(99));
  // The sleeper stays counted until its deadline passes, whether or not it was woken.
  EXPECT_EQ(clock.SleepersWaiting(), 1);
  EXPECT_FALSE(woke);
  clock.Advance(microseconds(1));
  sleeper.join();
  EXPECT_TRUE(woke);
  EXPECT_EQ(clock.SleepersWaiting(), 0);
  EXPECT_EQ(clock.MonotonicNanos(), 100'000);  // Sleeping itself did not move time.
}

TEST(ManualClockTest, AdvanceWakesEverySleeperWhoseDeadlinePassed) {
  ManualClock clock(0, ManualClock::SleepMode::kBlockUntilAdvanced);
  std::atomic<int> woke{0};
  std::vector<std::thread> sleepers;
  for (int i = 1; i <= 3; ++i) {
    sleepers.emplace_back([&clock, &woke, i] {
      clock.SleepFor(microseconds(10 * i));
      ++woke;
    });
  }
  clock.WaitForSleepers(3);
  clock.Advance(microseconds(20));
  // The 10us and 20us deadlines passed: those threads return (join would hang otherwise),
  // while the 30us sleeper stays blocked.
  sleepers[0].join();
  sleepers[1].join();
  EXPECT_EQ(woke, 2);
  EXPECT_EQ(clock.SleepersWaiting(), 1);
  clock.Advance(microseconds(10));
  sleepers[2].join();
  EXPECT_EQ(woke, 3);
}

TEST(SeededRandomTest, SequenceIsPinnedForAGivenSeed) {
  // xoshiro256** seeded by splitmix64; values computed with an independent implementation.
  SeededRandom zero(0);
  EXPECT_EQ(zero.Next(), 0x99ec5f36cb75f2b4ull);
  EXPECT_EQ(zero.Next(), 0xbf6e1f784956452aull);
  EXPECT_EQ(zero.Next(), 0x1a5f849d4933e6e0ull);
  SeededRandom forty_two(42);
  EXPECT_EQ(forty_two.Next(), 0x15780b2e0c2ec716ull);
  EXPECT_EQ(forty_two.Next(), 0x6104d9866d113a7eull);
}

TEST(SeededRandomTest, SameSeedSameSequenceDifferentSeedDifferentSequence) {
  SeededRandom a(7);
  SeededRandom b(7);
  SeededRandom c(8);
  int differences = 0;
  for (int i = 0; i < 100; ++i) {
    const uint64_t value = a.Next();
    EXPECT_EQ(value, b.Next());
    if (value != c.Next()) ++differences;
  }
  EXPECT_EQ(differences, 100);
}

TEST(RandomSourceTest, UniformStaysInRangeAndCoversItEvenly) {
  SeededRandom random(12345);
  EXPECT_EQ(random.Uniform(1), 0u);
  EXPECT_EQ(random.Uniform(0), 0u);
  int counts[10] = {};
  for (int i = 0; i < 10000; ++i) {
    const uint64_t value = random.Uniform(10);
    ASSERT_LT(value, 10u);
    ++counts[value];
  }
  for (int count : counts) {
    EXPECT_GT(count, 850);  // Expected 1000 each; these bounds are ~5 standard deviations.
    EXPECT_LT(count, 1150);
  }
  const uint64_t huge = (uint64_t{1} << 63) + 1;  // Rejection path: threshold is ~2^63.
  for (int i = 0; i < 100; ++i) ASSERT_LT(random.Uniform(huge), huge);
}

TEST(RandomSourceTest, BytesAreNextValuesInLittleEndianOrder) {
  SeededRandom random(3);
  SeededRandom reference(3);
  const std::string bytes = random.Bytes(11);
  ASSERT_EQ(bytes.size(), 11u);
  const uint64_t first = reference.Next();
  const uint64_t second = reference.Next();
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(static_cast<uint8_t>(bytes[i]), static_cast<uint8_t>(first >> (8 * i)));
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(static_cast<uint8_t>(bytes[8 + i]), static_cast<uint8_t>(second >> (8 * i)));
  }
  EXPECT_EQ(random.Next(), reference.Next());  // Bytes(11) consumed exactly two values.
  EXPECT_TRUE(random.Bytes(0).empty());
}

TEST(SystemRandomTest, ThreadsDrawDistinctValues) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 1000;
  std::vector<std::vector<uint64_t>> drawn(kThreads);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&drawn, t] {
      for (int i = 0; i < kPerThread; ++i) drawn[t].push_back(SystemRandom()->Next());
    });
  }
  for (auto& thread : threads) thread.join();
  std::set<uint64_t> unique;
  for (const auto& values : drawn) unique.insert(values.begin(), values.end());
  EXPECT_EQ(unique.size(), size_t{kThreads} * kPerThread);
}

TEST(SystemRandomTest, ForkedChildDoesNotRepeatParentStream) {
  SystemRandom()->Next();  // Seed this thread's stream before forking.
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const uint64_t value = SystemRandom()->Next();
    const bool wrote = write(pipe_fds[1], &value, sizeof(value)) == sizeof(value);
    _exit(wrote ? 0 : 1);
  }
  close(pipe_fds[1]);
  const uint64_t parent_value = SystemRandom()->Next();
  uint64_t child_value = 0;
  ASSERT_EQ(read(pipe_fds[0], &child_value, sizeof(child_value)),
            static_cast<ssize_t>(sizeof(child_value)));
  close(pipe_fds[0]);
  int wait_status = 0;
  ASSERT_EQ(waitpid(child, &wait_status, 0), child);
  EXPECT_TRUE(WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0);
  EXPECT_NE(child_value, parent_value);
}

}  // namespace
}  // namespace strata
