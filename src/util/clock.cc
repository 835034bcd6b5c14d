// SystemClock, ManualClock, SystemRandom (per-thread xoshiro256** seeded from
// std::random_device) and SeededRandom.
#include "util/clock.h"

#include <pthread.h>

#include <atomic>
#include <random>
#include <thread>

#include "util/no_destructor.h"

namespace strata {
namespace {

class RealClock final : public Clock {
 public:
  int64_t NowMicros() override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  int64_t MonotonicNanos() override {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

constexpr uint64_t RotateLeft(uint64_t x, int bits) { return (x << bits) | (x >> (64 - bits)); }

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// One step of xoshiro256** (Blackman and Vigna, 2018).
uint64_t Xoshiro256StarStar(uint64_t (&s)[4]) {
  const uint64_t result = RotateLeft(s[1] * 5, 7) * 9;
  const uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = RotateLeft(s[3], 45);
  return result;
}

// Bumped in a forked child so every thread-local stream reseeds instead of repeating the
// parent's values.
std::atomic<uint64_t> fork_generation{1};

class SystemRandomSource final : public RandomSource {
 public:
  SystemRandomSource() {
    pthread_atfork(nullptr, nullptr,
                   [] { fork_generation.fetch_add(1, std::memory_order_relaxed); });
  }

  uint64_t Next() override {
    thread_local ThreadStream stream;
    const uint64_t generation = fork_generation.load(std::memory_order_relaxed);
    if (stream.generation != generation) {
      std::random_device device;
      for (uint64_t& word : stream.state) {
        word = (uint64_t{device()} << 32) | device();
      }
      // xoshiro's all-zero state is a fixed point; astronomically unlikely, but cheap to rule
      // out.
      if ((stream.state[0] | stream.state[1] | stream.state[2] | stream.state[3]) == 0) {
        stream.state[0] = 1;
      }
      stream.generation = generation;
    }
    return Xoshiro256StarStar(stream.state);
  }

 private:
  struct ThreadStream {
    uint64_t state[4] = {0, 0, 0, 0};
    uint64_t generation = 0;  // 0: never seeded.
  };
};

}  // namespace

void Clock::SleepFor(std::chrono::microseconds duration) {
  if (duration.count() > 0) std::this_thread::sleep_for(duration);
}

Clock* SystemClock() {
  static NoDestructor<RealClock> clock;
  return clock.get();
}

ManualClock::ManualClock(int64_t now_micros, SleepMode mode)
    : mode_(mode), wall_nanos_(now_micros * 1000) {}

int64_t ManualClock::NowMicros() {
  MutexLock lock(mutex_);
  // Floor division, so a wall time before 1970 rounds towards the past like the real clock.
  const int64_t quotient = wall_nanos_ / 1000;
  return wall_nanos_ % 1000 < 0 ? quotient - 1 : quotient;
}

int64_t ManualClock::MonotonicNanos() {
  MutexLock lock(mutex_);
  return monotonic_nanos_;
}

void ManualClock::SleepFor(std::chrono::microseconds duration) {
  if (duration.count() <= 0) return;
  if (mode_ == SleepMode::kAdvance) {
    Advance(duration);
    return;
  }
  MutexLock lock(mutex_);
  const int64_t deadline = monotonic_nanos_ + duration.count() * 1000;
  ++sleepers_;
  changed_.SignalAll();  // Wake WaitForSleepers().
  while (monotonic_nanos_ < deadline) changed_.Wait(mutex_);
  --sleepers_;
}

void ManualClock::Advance(std::chrono::nanoseconds delta) {
  if (delta.count() <= 0) return;
  MutexLock lock(mutex_);
  wall_nanos_ += delta.count();
  monotonic_nanos_ += delta.count();
  changed_.SignalAll();
}

void ManualClock::Set(int64_t now_micros) {
  MutexLock lock(mutex_);
  wall_nanos_ = now_micros * 1000;
}

int ManualClock::SleepersWaiting() {
  MutexLock lock(mutex_);
  return sleepers_;
}

void ManualClock::WaitForSleepers(int count) {
  MutexLock lock(mutex_);
  while (sleepers_ < count) changed_.Wait(mutex_);
}

uint64_t RandomSource::Uniform(uint64_t n) {
  if (n == 0) return 0;
  // Values below `threshold` would make some residues more likely; 2^64 mod n of them.
  const uint64_t threshold = (0 - n) % n;
  while (true) {
    const uint64_t value = Next();
    if (value >= threshold) return value % n;
  }
}

void RandomSource::Fill(std::span<uint8_t> out) {
  size_t pos = 0;
  while (pos < out.size()) {
    uint64_t value = Next();
    for (int i = 0; i < 8 && pos < out.size(); ++i, ++pos) {
      out[pos] = static_cast<uint8_t>(value);
      value >>= 8;
    }
  }
}

std::string RandomSource::Bytes(size_t count) {
  std::string bytes(count, '\0');
  Fill(std::span<uint8_t>(reinterpret_cast<uint8_t*>(bytes.data()), bytes.size()));
  return bytes;
}

RandomSource* SystemRandom() {
  static NoDestructor<SystemRandomSource> random;
  return random.get();
}

SeededRandom::SeededRandom(uint64_t seed) {
  for (uint64_t& word : state_) word = SplitMix64(seed);
}

uint64_t SeededRandom::Next() { return Xoshiro256StarStar(state_); }

}  // namespace strata
