// MergeBudget: a process-wide memory budget that WAL merges reserve before they read
// generations, so that many stores merging at once cannot exhaust the process's memory.
//
// The budget is counted in 1 MiB permits (the limit is rounded up to whole MiB). A merge
// reserves min(merge_max_bytes, limit) up front and grows its reservation only without
// waiting (a generation that does not fit ends the pass), so merges sharing a budget cannot
// deadlock. A reservation larger than the whole budget waits for the budget to be idle and
// then takes all of it: an oversized merge still runs, alone. Reservations are granted in
// the order Reserve was called, so a stream of small requests cannot starve a large one:
// requests behind it wait, and the reservations ahead of it (which may still grow) end.
// Hence a thread must not wait in Reserve while it holds a reservation (or a prepared merge)
// that a request ahead of it may need: commit or drop it first.
//
// Usage: create one and hand the same shared_ptr to every store of the process
// (StorageBaseOptions::merge_budget). Thread safe; Reserve blocks, everything else does not.
// A reservation must not outlive its budget.
#pragma once

#include <cstdint>
#include <memory>

namespace strata {

class MergeBudget {
 public:
  // `limit_bytes` < 1 is treated as 1 (one permit).
  explicit MergeBudget(int64_t limit_bytes);
  ~MergeBudget();
  MergeBudget(const MergeBudget&) = delete;
  MergeBudget& operator=(const MergeBudget&) = delete;

  // The limit given at construction (at least 1).
  int64_t limit_bytes() const { return limit_; }
  // Bytes held by live reservations now (exact, not rounded to permits).
  int64_t reserved_bytes() const;

  // Held permits; released when destroyed or assigned over. Move-only.
  class Reservation {
   public:
    Reservation() = default;
    Reservation(Reservation&& other) noexcept;
    Reservation& operator=(Reservation&& other) noexcept;
    ~Reservation();
    int64_t bytes() const { return bytes_; }
    // Grows to `bytes` if the permits are free now; false (unchanged) otherwise. Never
    // shrinks.
    bool TryGrowTo(int64_t bytes);

   private:
    friend class MergeBudget;
    MergeBudget* budget_ = nullptr;
    int64_t permits_ = 0;
    int64_t bytes_ = 0;
  };

  // Waits until the permits for `bytes` (capped at the whole budget) are free and every
  // Reserve called before this one has been granted.
  Reservation Reserve(int64_t bytes);

  // Blocks until at least `count` threads are waiting in Reserve: the sync point for tests
  // that must know a reservation (or the merge making it) is blocked on the budget.
  void WaitForWaiters(int count);

 private:
  struct State;  // permits and waiters under one mutex (src/lsm/merge.cc)
  int64_t Permits(int64_t bytes) const;
  void Release(int64_t permits, int64_t bytes);
  const int64_t limit_;
  const int64_t total_permits_;
  std::unique_ptr<State> state_;
};

}  // namespace strata
