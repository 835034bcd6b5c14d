// Maintenance: the background work every store needs, for all store handles of a process —
// sealing rows that wait in memtables, folding pending generations into the base table,
// compacting the base table — on a few threads, with every action counted in metrics.
//
// One per process: create it, keep the shared_ptr, and give it to every store
// (StorageBaseOptions::maintenance). StorageBase::Open registers the handle; Close,
// DeleteData and the destructor unregister it. The registry holds no handle alive:
// unregistering waits for an action running on that handle, and a handle that is dropped
// leaves at once. Three jobs, each on its own interval (0 = off), measured on the injected
// clock from Create; the first tick comes one interval after Create (never at once):
//   - flush sweeper (flush_interval_seconds): StorageBase::Flush (seals unflushed rows and
//     waits for their publication), then, when CountMergeDue, the count-triggered MaybeMerge;
//   - cleanup timer (cleanup_interval_seconds): StorageBase::Cleanup (seal, then merge
//     whatever is pending: the time trigger);
//   - compaction policy (compaction.enabled, every compaction.check_interval_seconds):
//     Compact(compaction.options) when ShouldCompact(compaction).
// A tick queues one action per registered store for the worker threads. A store whose
// previous action has not ended is skipped by the tick (one action per store at a time).
// An action running longer than max(5 × its job's interval, 30 s) is counted as a timeout
// (metrics result="timeout"; its own result is then not counted) and the store is skipped
// until it ends: actions cannot be cancelled. Pinned handles (Checkout) are skipped.
//
// Metrics (MaintenanceOptions::metrics, default DefaultMetrics()), each with a `kind` label
// (StorageBaseOptions::store_kind):
//   strata_wal_flush_total{result=ok|fenced|failed|timeout}
//   strata_wal_count_merge_total{result=merged|noop|failed}        (after a flush)
//   strata_wal_cleanup_total{result=merged|noop|failed|timeout}
//   strata_maintenance_generations_reclaimed_total                  (by the two above)
//   strata_compactions_total{result=success|failed|busy|timeout}
// and the gauge strata_maintenance_stores (registered handles, no labels).
//
// Thread safety: every method may be called from any thread. Run*Pass run one pass on the
// calling thread (for tools and tests; no timeout applies) beside the background jobs.
// Stop ends the background jobs: it waits for the actions running on the worker threads,
// drops queued ones and joins the threads; it is idempotent and the destructor calls it.
// Registration and Run*Pass keep working after Stop.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "strata/metrics.h"
#include "strata/status.h"
#include "strata/storage_base.h"

namespace strata::store {

struct MaintenanceOptions {
  // Seconds between ticks of each job; 0 = the job is off. Reference defaults: flush 30 s,
  // cleanup off.
  double flush_interval_seconds = 30;
  double cleanup_interval_seconds = 0;
  // The compaction job runs when compaction.enabled, every check_interval_seconds.
  CompactionPolicy compaction;
  // Worker threads that run the actions (at least 1). One more thread keeps the timers.
  int threads = 2;
  MetricsRegistry* metrics = nullptr;  // null = DefaultMetrics(); must outlive this
  Clock* clock = nullptr;              // null = the system clock; must outlive this
};

enum class MaintenanceJob { kFlush, kCleanup, kCompaction };

// What one synchronous pass did.
struct MaintenancePassReport {
  int stores = 0;                     // registered stores the pass visited
  int succeeded = 0;                  // actions that ended OK (including noops and "not due")
  int failed = 0;                     // actions that returned an error (logged, counted in metrics)
  int skipped = 0;                    // stores busy with an earlier action, or pinned
  int64_t generations_reclaimed = 0;  // by the merges of the pass
  int compactions = 0;                // successful compactions
};

// Counters of the background jobs, for tests and tools that wait for them.
struct MaintenanceProgress {
  // Background passes whose every action ended or timed out, per job.
  int64_t flush_passes = 0;
  int64_t cleanup_passes = 0;
  int64_t compaction_passes = 0;
  int64_t actions_started = 0;   // by background passes
  int64_t actions_finished = 0;  // by background passes, including timed-out ones that ended
  int64_t timeouts = 0;
  int64_t skipped = 0;    // stores a background tick skipped (busy or pinned)
  int registered = 0;     // handles registered now
  bool stopping = false;  // Stop has begun
};

class Maintenance {
 public:
  // Starts the worker and timer threads. InvalidArgument for negative or non-finite
  // intervals, threads < 1, or an enabled compaction policy with min_fragments < 1.
  static Result<std::shared_ptr<Maintenance>> Create(MaintenanceOptions options = {});
  // Stops (as Stop).
  ~Maintenance();
  Maintenance(const Maintenance&) = delete;
  Maintenance& operator=(const Maintenance&) = delete;

  // Ends the background jobs (see the header comment). Idempotent.
  void Stop();
  // Re-reads the clock now: a test that advances a ManualClock calls this instead of
  // waiting for the timer's real-time wait to end.
  void Wake();

  // One pass of a job over every registered store, on the calling thread.
  MaintenancePassReport RunFlushPass();
  MaintenancePassReport RunCleanupPass();
  MaintenancePassReport RunCompactionPass();

  MaintenanceProgress Progress() const;
  // Blocks until `done(Progress())` holds; re-evaluated whenever the progress changes.
  void WaitUntil(const std::function<bool(const MaintenanceProgress&)>& done) const;

  // Called by StorageBase (Open / Close / DeleteData / destructor); `name` is for logs,
  // `kind` the metrics label. Register of a registered handle is a no-op. Unregister waits
  // for the action running on `store`, if any, and is a no-op for an unknown handle.
  // Neither may be called from inside an action on the same handle.
  void Register(StorageBase* store, std::string name, std::string kind);
  void Unregister(StorageBase* store);

  struct State;

 private:
  explicit Maintenance(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace strata::store
