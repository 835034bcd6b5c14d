// The engine's two injectable sources of nondeterminism: time (Clock) and randomness
// (RandomSource). Production code takes them as parameters; tests pass ManualClock and
// SeededRandom so runs are reproducible and never sleep on real time.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "util/mutex.h"

namespace strata {

// Wall and monotonic time, and sleeping. Implementations must be thread safe.
class Clock {
 public:
  Clock() = default;
  Clock(const Clock&) = delete;
  Clock& operator=(const Clock&) = delete;
  Clock(Clock&&) = delete;
  Clock& operator=(Clock&&) = delete;
  virtual ~Clock() = default;

  // Wall-clock time in microseconds since the Unix epoch (UTC). May jump backwards or forwards
  // (NTP, operator): use it for timestamps that people read, never for measuring durations.
  virtual int64_t NowMicros() = 0;

  // Nanoseconds from an arbitrary, fixed origin; never decreases. Use for durations,
  // deadlines and timeouts. Values are comparable only within one process (and one Clock).
  virtual int64_t MonotonicNanos() = 0;

  // Blocks the calling thread for at least `duration` of this clock's time. The default
  // implementation sleeps in real time. Non-positive durations return immediately.
  virtual void SleepFor(std::chrono::microseconds duration);
};

// The real clock (std::chrono::system_clock / steady_clock). A process-wide singleton that is
// never destroyed; thread safe.
Clock* SystemClock();

// A clock that moves only when told to, for deterministic tests. Thread safe.
//
// Advance() moves both the wall and the monotonic time forward. Set() moves only the wall time
// (either direction), as a wall-clock jump would. SleepFor() behaves per SleepMode:
//  - kAdvance (default): advances the clock by the duration and returns at once, so code
//    that sleeps (backoff, pacing) runs instantly and its waits are visible in NowMicros().
//  - kBlockUntilAdvanced: blocks until other threads Advance() the monotonic time past the
//    sleeper's deadline. Use WaitForSleepers() to know a thread has reached its sleep before
//    advancing, instead of sleeping in the test.
class ManualClock : public Clock {
 public:
  enum class SleepMode { kAdvance, kBlockUntilAdvanced };

  explicit ManualClock(int64_t now_micros = 0, SleepMode mode = SleepMode::kAdvance);

  int64_t NowMicros() override;
  int64_t MonotonicNanos() override;
  void SleepFor(std::chrono::microseconds duration) override;

  // Moves wall and monotonic time forward by `delta` and wakes sleepers whose deadline has
  // passed. Negative deltas are ignored (monotonic time never goes back).
  void Advance(std::chrono::nanoseconds delta);
  // Sets the wall time; monotonic time is unchanged.
  void Set(int64_t now_micros);

  // Threads currently blocked in SleepFor (kBlockUntilAdvanced only).
  int SleepersWaiting();
  // Blocks until at least `count` threads are blocked in SleepFor.
  void WaitForSleepers(int count);

 private:
  const SleepMode mode_;
  Mutex mutex_;
  CondVar changed_;  // Signalled on Advance and whenever a sleeper arrives.
  int64_t wall_nanos_ STRATA_GUARDED_BY(mutex_);
  int64_t monotonic_nanos_ STRATA_GUARDED_BY(mutex_) = 0;
  int sleepers_ STRATA_GUARDED_BY(mutex_) = 0;
};

// A source of uniformly distributed 64-bit values.
class RandomSource {
 public:
  RandomSource() = default;
  RandomSource(const RandomSource&) = delete;
  RandomSource& operator=(const RandomSource&) = delete;
  RandomSource(RandomSource&&) = delete;
  RandomSource& operator=(RandomSource&&) = delete;
  virtual ~RandomSource() = default;

  // 64 uniformly distributed bits.
  virtual uint64_t Next() = 0;

  // Uniform in [0, n), without modulo bias. REQUIRES: n > 0 (returns 0 for n == 0).
  uint64_t Uniform(uint64_t n);
  // `count` random bytes.
  std::string Bytes(size_t count);
  // Fills `out` with random bytes (uses Next() 8 bytes at a time, little-endian).
  void Fill(std::span<uint8_t> out);
};

// Non-deterministic randomness for production: one xoshiro256** stream per thread, each
// seeded from std::random_device and reseeded in a forked child (so parent and child never
// share a stream). Thread safe and lock-free. Not for cryptographic keys. Never destroyed.
RandomSource* SystemRandom();

// Deterministic xoshiro256** stream, state expanded from `seed` with splitmix64: the same
// seed gives the same sequence on every platform and build. Not thread safe.
class SeededRandom : public RandomSource {
 public:
  explicit SeededRandom(uint64_t seed);
  uint64_t Next() override;

 private:
  uint64_t state_[4];
};

}  // namespace strata
