// Deleting the files of merged generations: after a merge drains generations from a shard
// manifest, their directories are deleted a delay later on one background thread, so a
// reader that built its view just before the drain still finds them for that long (after
// it, a vanished generation makes the read retry with a fresh view). Directories that a
// merger which died before its delayed deletion left behind are swept by the shard's next
// merge (Sweep).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lsm/generation.h"
#include "lsm/lsm.pb.h"
#include "strata/metrics.h"
#include "strata/object_store.h"
#include "util/clock.h"
#include "util/mutex.h"
#include "util/uuid.h"

namespace strata::lsm {

// Thread safe. The delay is measured on `clock`'s monotonic time; the thread also wakes on
// Wake(), so a test with a ManualClock advances the clock and wakes it instead of sleeping.
class GenerationDeleter {
 public:
  // `cache` forgets a generation once its files are deleted; `duration` / `errors` (both
  // optional) time each deletion and count failures.
  GenerationDeleter(std::shared_ptr<ObjectStore> store, std::string store_prefix,
                    GenerationCache* cache, std::chrono::microseconds delay,
                    Clock* clock = SystemClock(), Histogram* duration = nullptr,
                    Counter* errors = nullptr);
  // Stops (see Stop).
  ~GenerationDeleter();
  GenerationDeleter(const GenerationDeleter&) = delete;
  GenerationDeleter& operator=(const GenerationDeleter&) = delete;

  // Deletes `paths` (generation directories relative to the shard dir) of `shard` once the
  // delay has passed. Ignored after Stop. Starts the deletion thread when it is not running
  // (it inherits the caller's scheduling class: see Start).
  void Enqueue(const Uuid& shard, std::vector<std::string> paths);
  // Starts the deletion thread now, from the caller, when it is not running: for callers
  // whose later Enqueue comes from a thread of lower priority. Ignored after Stop.
  void Start();
  // True while `path` of `shard` waits for (or is in) deletion.
  bool Pending(const Uuid& shard, const std::string& path) const;
  // Deletes one generation directory now (best effort: a failure is logged and counted).
  void Delete(const Uuid& shard, const std::string& path);
  // Re-checks the queue against the clock now.
  void Wake();
  // Blocks until nothing is queued or in deletion.
  void WaitIdle() const;
  // Runs the remaining deletions at once and joins the thread. Idempotent.
  void Stop();

  // Deletes the directories of `shard`'s generations that were merged (numbered at or below
  // `watermark`), are no longer listed in `manifest` and are not waiting here: leftovers of
  // a merger that died before its delayed deletion ran. Best effort; returns how many were
  // deleted.
  int Sweep(const Uuid& shard, uint64_t watermark, const pb::ShardManifest& manifest);

 private:
  struct Entry {
    Uuid shard;
    std::string path;
    int64_t due_nanos = 0;  // clock_->MonotonicNanos() from which it may be deleted
  };

  void Run();
  void StartLocked() STRATA_REQUIRES(mutex_);
  bool PendingLocked(const Uuid& shard, const std::string& path) const STRATA_REQUIRES(mutex_);

  const std::shared_ptr<ObjectStore> store_;
  const std::string prefix_;
  GenerationCache* const cache_;
  const std::chrono::microseconds delay_;
  Clock* const clock_;
  Histogram* const duration_;
  Counter* const errors_;

  mutable Mutex mutex_;
  mutable CondVar changed_;  // queue, busy_ or stopping_ changed, or Wake()
  std::deque<Entry> queue_ STRATA_GUARDED_BY(mutex_);
  Entry in_progress_ STRATA_GUARDED_BY(mutex_);
  bool busy_ STRATA_GUARDED_BY(mutex_) = false;
  bool stopping_ STRATA_GUARDED_BY(mutex_) = false;
  std::thread thread_ STRATA_GUARDED_BY(mutex_);
};

}  // namespace strata::lsm
