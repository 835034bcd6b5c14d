// Running engine calls without the GIL, and counting how many run at once.
//
// Every binding method that does I/O runs the engine call inside a WithoutGil scope, so other
// Python threads run meanwhile. The scopes are counted while the GIL is released (two relaxed
// atomics each): the most that were running at the same time is what tests read
// (strata._strata._gil_free_stats) to prove that calls from several Python threads really
// overlap in C++, which they cannot while one of them holds the GIL.
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <cstdint>
#include <optional>

namespace strata::python {

struct GilFreeStats {
  std::atomic<int64_t> running{0};  // scopes running now
  std::atomic<int64_t> peak{0};     // most scopes running at once since the last reset
  std::atomic<int64_t> entered{0};  // scopes entered since the last reset
};

GilFreeStats& GilFreeCounters();

// Releases the GIL for the scope's lifetime. Construct it with the GIL held.
class WithoutGil {
 public:
  WithoutGil() {
    release_.emplace();
    GilFreeStats& stats = GilFreeCounters();
    stats.entered.fetch_add(1, std::memory_order_relaxed);
    const int64_t now = stats.running.fetch_add(1, std::memory_order_relaxed) + 1;
    int64_t peak = stats.peak.load(std::memory_order_relaxed);
    while (now > peak && !stats.peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
  }
  // Re-taking the GIL throws only when pybind11's internals are gone, which cannot happen
  // while the module is loaded: terminating then is right.
  ~WithoutGil() {  // NOLINT(bugprone-exception-escape)
    GilFreeCounters().running.fetch_sub(1, std::memory_order_relaxed);
    release_.reset();
  }
  WithoutGil(const WithoutGil&) = delete;
  WithoutGil& operator=(const WithoutGil&) = delete;
  WithoutGil(WithoutGil&&) = delete;
  WithoutGil& operator=(WithoutGil&&) = delete;

 private:
  std::optional<pybind11::gil_scoped_release> release_;
};

}  // namespace strata::python
