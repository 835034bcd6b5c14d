// Maintenance (include/strata/maintenance.h): a registry of store handles, a timer thread
// that queues one action per store on each tick of a job, worker threads that run them,
// and the timeout accounting for actions that run too long.
//
// Invariants (all under State::mutex):
//   - each job of an Entry is `busy` from the moment an action of that job is queued (or a
//     synchronous pass claims it) until the action ends, `running` while it executes: at most
//     one action per store and job (the jobs of one store may run at the same time, as the
//     reference's sweepers do; StorageBase serialises what must be);
//   - an Entry is erased only when none of its jobs is running (Unregister waits), so the
//     StorageBase* an action uses stays valid for the action's whole run;
//   - a background pass is complete when each of its queued actions ended, timed out, or
//     was dropped (its store left, or Stop).
#include "strata/maintenance.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "util/clock.h"
#include "util/log.h"
#include "util/mutex.h"

namespace strata::store {
namespace {

constexpr int kJobs = 3;
constexpr int64_t kMinTimeoutNanos = int64_t{30} * 1000000000;
constexpr int64_t kNoTimeout = std::numeric_limits<int64_t>::max();

int JobIndex(MaintenanceJob job) { return static_cast<int>(job); }

std::string_view JobName(MaintenanceJob job) {
  switch (job) {
    case MaintenanceJob::kFlush:
      return "flush";
    case MaintenanceJob::kCleanup:
      return "cleanup";
    case MaintenanceJob::kCompaction:
      return "compaction";
  }
  return "unknown";
}

int64_t SecondsToNanos(double seconds) { return static_cast<int64_t>(seconds * 1e9); }

// The outcome of one action, counted in metrics when it ends in time.
struct ActionOutcome {
  bool ok = true;
  bool skipped = false;           // pinned handle: nothing was done
  std::string_view result;        // the job's metric result; "" = nothing to count
  std::string_view merge_result;  // the count-triggered merge after a flush; "" = none
  int64_t generations_reclaimed = 0;
  int compactions = 0;
};

}  // namespace

struct Maintenance::State {
  struct JobSlot {
    bool busy = false;     // an action of the job is queued or running
    bool running = false;  // the action runs now
    bool timed_out = false;
    uint64_t pass = 0;  // the background pass of the running action; 0 = synchronous
    int64_t started_nanos = 0;
    int64_t timeout_nanos = kNoTimeout;
  };
  struct Entry {
    StorageBase* store = nullptr;
    std::string name;
    std::string kind;
    bool removed = false;  // Unregister waits for the running actions
    JobSlot jobs[kJobs];
    JobSlot& slot(MaintenanceJob job) { return jobs[JobIndex(job)]; }
    bool AnyRunning() const {
      for (const JobSlot& j : jobs) {
        if (j.running) return true;
      }
      return false;
    }
  };
  struct Task {
    uint64_t entry = 0;
    MaintenanceJob job = MaintenanceJob::kFlush;
    uint64_t pass = 0;
  };
  struct PassState {
    MaintenanceJob job = MaintenanceJob::kFlush;
    int remaining = 0;
  };

  MaintenanceOptions options;
  Clock* clock = nullptr;
  MetricsRegistry* metrics = nullptr;
  Gauge* stores_gauge = nullptr;
  int64_t interval_nanos[kJobs] = {0, 0, 0};

  mutable Mutex mutex;
  CondVar work;              // queue or stopping changed (workers)
  CondVar timer;             // Wake, Stop, an action started (timer thread)
  mutable CondVar progress;  // progress changed, an action ended (WaitUntil, Unregister)
  std::map<uint64_t, Entry> entries STRATA_GUARDED_BY(mutex);
  std::map<StorageBase*, uint64_t> ids STRATA_GUARDED_BY(mutex);
  uint64_t next_entry STRATA_GUARDED_BY(mutex) = 1;
  std::deque<Task> queue STRATA_GUARDED_BY(mutex);
  std::map<uint64_t, PassState> passes STRATA_GUARDED_BY(mutex);
  uint64_t next_pass STRATA_GUARDED_BY(mutex) = 1;
  int64_t next_due[kJobs] STRATA_GUARDED_BY(mutex) = {0, 0, 0};
  MaintenanceProgress counters STRATA_GUARDED_BY(mutex);
  bool stopping STRATA_GUARDED_BY(mutex) = false;

  Mutex stop_mutex;  // serialises Stop
  std::vector<std::thread> threads STRATA_GUARDED_BY(stop_mutex);
  bool stopped STRATA_GUARDED_BY(stop_mutex) = false;

  int64_t IntervalNanos(MaintenanceJob job) const { return interval_nanos[JobIndex(job)]; }

  int64_t TimeoutNanos(MaintenanceJob job) const {
    return std::max(5 * IntervalNanos(job), kMinTimeoutNanos);
  }

  void Count(std::string_view family, std::string_view help, std::string_view result,
             const std::string& kind, uint64_t delta = 1) {
    Result<Counter*> counter =
        metrics->GetCounter(family, help, {{"result", std::string(result)}, {"kind", kind}});
    if (counter.ok()) (*counter)->Increment(delta);
  }

  void CountResult(MaintenanceJob job, std::string_view result, const std::string& kind) {
    switch (job) {
      case MaintenanceJob::kFlush:
        Count("strata_wal_flush_total", "Flushes by the maintenance flush sweeper", result, kind);
        break;
      case MaintenanceJob::kCleanup:
        Count("strata_wal_cleanup_total", "Time-triggered merges by the maintenance cleanup timer",
              result, kind);
        break;
      case MaintenanceJob::kCompaction:
        Count("strata_compactions_total", "Compactions by the maintenance compaction policy",
              result, kind);
        break;
    }
  }

  void CountReclaimed(const std::string& kind, int64_t generations) {
    if (generations <= 0) return;
    Result<Counter*> counter =
        metrics->GetCounter("strata_maintenance_generations_reclaimed_total",
                            "Generations merged into base tables by maintenance", {{"kind", kind}});
    if (counter.ok()) (*counter)->Increment(static_cast<uint64_t>(generations));
  }

  void UpdateGauge() STRATA_REQUIRES(mutex) {
    counters.registered = static_cast<int>(entries.size());
    if (stores_gauge != nullptr) stores_gauge->Set(static_cast<double>(entries.size()));
  }

  // Counts an action that ended in time.
  void CountOutcome(MaintenanceJob job, const std::string& kind, const ActionOutcome& outcome) {
    if (!outcome.result.empty()) CountResult(job, outcome.result, kind);
    if (!outcome.merge_result.empty()) {
      Count("strata_wal_count_merge_total", "Count-triggered merges after maintenance flushes",
            outcome.merge_result, kind);
    }
    CountReclaimed(kind, outcome.generations_reclaimed);
  }

  // Runs `job` on `store` (no lock held); the caller counts the outcome.
  ActionOutcome RunAction(StorageBase& store, MaintenanceJob job, const std::string& name) {
    ActionOutcome out;
    if (store.pinned()) {
      out.skipped = true;
      return out;
    }
    switch (job) {
      case MaintenanceJob::kFlush: {
        Result<FlushOutcome> flushed = store.Flush();
        if (!flushed.ok()) {
          LogWarning("maintenance: flush of store {} failed: {}", name,
                     flushed.status().ToString());
          out.result = "failed";
          out.ok = false;
          return out;
        }
        if (*flushed == FlushOutcome::kFenced) {
          // Another handle claimed the shard: it seals and merges what this one wrote.
          LogWarning("maintenance: flush of store {} was fenced by a newer writer", name);
          out.result = "fenced";
          return out;
        }
        out.result = "ok";
        // The count trigger rides the flush timer.
        Result<bool> due = store.CountMergeDue();
        if (!due.ok()) {
          LogWarning("maintenance: count-merge check of store {} failed: {}", name,
                     due.status().ToString());
          out.merge_result = "failed";
          out.ok = false;
          return out;
        }
        if (!*due) return out;
        Result<MergeReport> merged = store.MaybeMerge();
        if (!merged.ok()) {
          LogWarning("maintenance: count-triggered merge of store {} failed: {}", name,
                     merged.status().ToString());
          out.merge_result = "failed";
          out.ok = false;
          return out;
        }
        out.merge_result = merged->generations_reclaimed > 0 ? "merged" : "noop";
        if (!merged->complete()) {
          LogWarning("maintenance: merge of store {} committed, then: {}", name,
                     merged->follow_up.ToString());
        }
        out.generations_reclaimed = merged->generations_reclaimed;
        return out;
      }
      case MaintenanceJob::kCleanup: {
        Result<MergeReport> merged = store.Cleanup();
        if (!merged.ok()) {
          LogWarning("maintenance: cleanup of store {} failed: {}", name,
                     merged.status().ToString());
          out.result = "failed";
          out.ok = false;
          return out;
        }
        out.result = merged->generations_reclaimed > 0 ? "merged" : "noop";
        if (!merged->complete()) {
          LogWarning("maintenance: merge of store {} committed, then: {}", name,
                     merged->follow_up.ToString());
        }
        out.generations_reclaimed = merged->generations_reclaimed;
        return out;
      }
      case MaintenanceJob::kCompaction: {
        Result<bool> due = store.ShouldCompact(options.compaction);
        if (!due.ok()) {
          LogWarning("maintenance: compaction check of store {} failed: {}", name,
                     due.status().ToString());
          out.result = "failed";
          out.ok = false;
          return out;
        }
        if (!*due) return out;
        Result<table::CompactionResult> compacted = store.Compact(options.compaction.options);
        if (!compacted.ok()) {
          // Another compaction of this handle (its owner's) is running: not a failure.
          const bool busy = IsCompactionInProgress(compacted.status());
          if (!busy) {
            LogWarning("maintenance: compaction of store {} failed: {}", name,
                       compacted.status().ToString());
          }
          out.result = busy ? "busy" : "failed";
          out.ok = busy;
          return out;
        }
        out.result = "success";
        out.compactions = 1;
        return out;
      }
    }
    return out;
  }

  // One action of background pass `pass` is over (ended, timed out or dropped).
  void FinishPassAction(uint64_t pass) STRATA_REQUIRES(mutex) {
    auto it = passes.find(pass);
    if (it == passes.end()) return;
    if (--it->second.remaining > 0) return;
    switch (it->second.job) {
      case MaintenanceJob::kFlush:
        ++counters.flush_passes;
        break;
      case MaintenanceJob::kCleanup:
        ++counters.cleanup_passes;
        break;
      case MaintenanceJob::kCompaction:
        ++counters.compaction_passes;
        break;
    }
    passes.erase(it);
  }

  // Queues one action of `job` per registered store that is not busy.
  void StartPassLocked(MaintenanceJob job) STRATA_REQUIRES(mutex) {
    const uint64_t pass = next_pass++;
    int queued = 0;
    for (auto& [id, entry] : entries) {
      if (entry.removed) continue;
      if (entry.slot(job).busy) {
        ++counters.skipped;
        continue;
      }
      entry.slot(job).busy = true;
      queue.push_back(Task{id, job, pass});
      ++queued;
    }
    passes[pass] = PassState{job, queued + 1};
    FinishPassAction(pass);  // the +1: completes a pass that queued nothing
    work.SignalAll();
    progress.SignalAll();
  }

  // Counts actions that have run past their timeout; returns the nearest future deadline.
  int64_t CheckTimeoutsLocked(int64_t now) STRATA_REQUIRES(mutex) {
    int64_t nearest = kNoTimeout;
    for (auto& [id, entry] : entries) {
      for (int j = 0; j < kJobs; ++j) {
        JobSlot& slot = entry.jobs[j];
        if (!slot.running || slot.timed_out || slot.timeout_nanos == kNoTimeout) continue;
        const int64_t deadline = slot.started_nanos + slot.timeout_nanos;
        if (now < deadline) {
          nearest = std::min(nearest, deadline);
          continue;
        }
        const auto job = static_cast<MaintenanceJob>(j);
        slot.timed_out = true;
        ++counters.timeouts;
        LogWarning(
            "maintenance: {} of store {} has run longer than {} s; skipping the store until it "
            "ends",
            JobName(job), entry.name, slot.timeout_nanos / 1000000000);
        CountResult(job, "timeout", entry.kind);
        FinishPassAction(slot.pass);
        progress.SignalAll();
      }
    }
    return nearest;
  }

  void TimerLoop() {
    MutexLock lock(mutex);
    while (!stopping) {
      const int64_t now = clock->MonotonicNanos();
      int64_t wake_at = kNoTimeout;
      for (int j = 0; j < kJobs; ++j) {
        if (interval_nanos[j] <= 0) continue;
        if (now >= next_due[j]) {
          StartPassLocked(static_cast<MaintenanceJob>(j));
          next_due[j] = now + interval_nanos[j];
        }
        wake_at = std::min(wake_at, next_due[j]);
      }
      wake_at = std::min(wake_at, CheckTimeoutsLocked(now));
      if (wake_at == kNoTimeout) {
        timer.Wait(mutex);
      } else {
        timer.WaitFor(mutex, std::chrono::nanoseconds(std::max<int64_t>(wake_at - now, 1)));
      }
    }
  }

  // An action a worker took from the queue.
  struct Claimed {
    Task task;
    StorageBase* store = nullptr;
    std::string name;
    std::string kind;
  };

  // Waits for a queued action of a store still registered; nullopt once stopping.
  std::optional<Claimed> TakeTask() {
    MutexLock lock(mutex);
    while (true) {
      while (queue.empty() && !stopping) work.Wait(mutex);
      if (stopping) return std::nullopt;
      Task task = queue.front();
      queue.pop_front();
      auto it = entries.find(task.entry);
      if (it == entries.end() || it->second.removed) {
        if (it != entries.end()) it->second.slot(task.job).busy = false;
        FinishPassAction(task.pass);
        progress.SignalAll();
        continue;
      }
      Entry& entry = it->second;
      JobSlot& slot = entry.slot(task.job);
      slot.running = true;
      slot.timed_out = false;
      slot.pass = task.pass;
      slot.started_nanos = clock->MonotonicNanos();
      slot.timeout_nanos = TimeoutNanos(task.job);
      ++counters.actions_started;
      timer.Signal();  // the timer thread watches the new deadline
      progress.SignalAll();
      return Claimed{task, entry.store, entry.name, entry.kind};
    }
  }

  void EndTask(const Claimed& claimed, const ActionOutcome& outcome) {
    MutexLock lock(mutex);
    // Unregister waits for `running`.
    JobSlot& ended = entries.at(claimed.task.entry).slot(claimed.task.job);
    ended.running = false;
    ended.busy = false;
    if (ended.timed_out) {
      // Counted as a timeout already; its own result is not counted on top.
      LogWarning("maintenance: {} of store {} ended after its timeout ({})",
                 JobName(claimed.task.job), claimed.name, outcome.ok ? "ok" : "failed");
    } else {
      if (outcome.skipped) ++counters.skipped;
      CountOutcome(claimed.task.job, claimed.kind, outcome);
      FinishPassAction(claimed.task.pass);
    }
    ended.timed_out = false;
    ++counters.actions_finished;
    progress.SignalAll();
  }

  void WorkerLoop() {
    while (std::optional<Claimed> claimed = TakeTask()) {
      ActionOutcome outcome = RunAction(*claimed->store, claimed->task.job, claimed->name);
      EndTask(*claimed, outcome);
    }
  }

  MaintenancePassReport RunPass(MaintenanceJob job) {
    MaintenancePassReport report;
    std::vector<uint64_t> ids_now;
    {
      MutexLock lock(mutex);
      for (const auto& [id, entry] : entries) {
        if (!entry.removed) ids_now.push_back(id);
      }
    }
    for (uint64_t id : ids_now) {
      StorageBase* store = nullptr;
      std::string name;
      std::string kind;
      {
        MutexLock lock(mutex);
        auto it = entries.find(id);
        if (it == entries.end() || it->second.removed) continue;
        ++report.stores;
        Entry& entry = it->second;
        JobSlot& slot = entry.slot(job);
        if (slot.busy) {
          ++report.skipped;
          continue;
        }
        slot.busy = true;
        slot.running = true;
        slot.timed_out = false;
        slot.pass = 0;
        slot.started_nanos = clock->MonotonicNanos();
        slot.timeout_nanos = kNoTimeout;  // the caller's thread: no timeout
        store = entry.store;
        name = entry.name;
        kind = entry.kind;
      }
      ActionOutcome outcome = RunAction(*store, job, name);
      CountOutcome(job, kind, outcome);
      {
        MutexLock lock(mutex);
        JobSlot& slot = entries.at(id).slot(job);
        slot.running = false;
        slot.busy = false;
        progress.SignalAll();
      }
      if (outcome.skipped) {
        ++report.skipped;
      } else if (outcome.ok) {
        ++report.succeeded;
      } else {
        ++report.failed;
      }
      report.generations_reclaimed += outcome.generations_reclaimed;
      report.compactions += outcome.compactions;
    }
    return report;
  }
};

Maintenance::Maintenance(std::unique_ptr<State> state) : state_(std::move(state)) {}

Result<std::shared_ptr<Maintenance>> Maintenance::Create(MaintenanceOptions options) {
  auto check = [](double seconds, std::string_view what) -> Status {
    if (!std::isfinite(seconds) || seconds < 0) {
      return Status::InvalidArgument(
          fmt::format("maintenance {} interval must be a finite number of seconds >= 0, got {}",
                      what, seconds));
    }
    return Status::OK();
  };
  STRATA_RETURN_IF_ERROR(check(options.flush_interval_seconds, "flush"));
  STRATA_RETURN_IF_ERROR(check(options.cleanup_interval_seconds, "cleanup"));
  STRATA_RETURN_IF_ERROR(check(options.compaction.check_interval_seconds, "compaction check"));
  if (options.threads < 1) {
    return Status::InvalidArgument(
        fmt::format("maintenance needs at least 1 thread, got {}", options.threads));
  }
  if (options.compaction.enabled && options.compaction.min_fragments < 1) {
    return Status::InvalidArgument(
        fmt::format("maintenance compaction needs min_fragments >= 1, got {}",
                    options.compaction.min_fragments));
  }
  auto state = std::make_unique<State>();
  state->clock = options.clock != nullptr ? options.clock : SystemClock();
  state->metrics = options.metrics != nullptr ? options.metrics : &DefaultMetrics();
  state->interval_nanos[JobIndex(MaintenanceJob::kFlush)] =
      SecondsToNanos(options.flush_interval_seconds);
  state->interval_nanos[JobIndex(MaintenanceJob::kCleanup)] =
      SecondsToNanos(options.cleanup_interval_seconds);
  state->interval_nanos[JobIndex(MaintenanceJob::kCompaction)] =
      options.compaction.enabled ? SecondsToNanos(options.compaction.check_interval_seconds) : 0;
  Result<Gauge*> gauge =
      state->metrics->GetGauge("strata_maintenance_stores", "Store handles registered");
  if (gauge.ok()) state->stores_gauge = *gauge;
  state->options = std::move(options);
  {
    // The first tick of each job is one interval from now.
    const int64_t now = state->clock->MonotonicNanos();
    MutexLock lock(state->mutex);
    for (int j = 0; j < kJobs; ++j) state->next_due[j] = now + state->interval_nanos[j];
  }
  std::shared_ptr<Maintenance> maintenance(new Maintenance(std::move(state)));
  State* s = maintenance->state_.get();
  MutexLock lock(s->stop_mutex);
  s->threads.emplace_back([s] { s->TimerLoop(); });
  for (int i = 0; i < s->options.threads; ++i) s->threads.emplace_back([s] { s->WorkerLoop(); });
  return maintenance;
}

Maintenance::~Maintenance() { Stop(); }

void Maintenance::Stop() {
  State& s = *state_;
  MutexLock stop_lock(s.stop_mutex);
  if (s.stopped) return;
  {
    MutexLock lock(s.mutex);
    s.stopping = true;
    s.counters.stopping = true;
    s.progress.SignalAll();
    s.work.SignalAll();
    s.timer.SignalAll();
  }
  for (std::thread& t : s.threads) t.join();
  s.threads.clear();
  s.stopped = true;
  MutexLock lock(s.mutex);
  // Queued actions are dropped; their stores are free for synchronous passes.
  for (const State::Task& task : s.queue) {
    auto it = s.entries.find(task.entry);
    if (it != s.entries.end()) it->second.slot(task.job).busy = false;
    s.FinishPassAction(task.pass);
  }
  s.queue.clear();
  s.progress.SignalAll();
}

void Maintenance::Wake() {
  MutexLock lock(state_->mutex);
  state_->timer.SignalAll();
}

MaintenancePassReport Maintenance::RunFlushPass() {
  return state_->RunPass(MaintenanceJob::kFlush);
}

MaintenancePassReport Maintenance::RunCleanupPass() {
  return state_->RunPass(MaintenanceJob::kCleanup);
}

MaintenancePassReport Maintenance::RunCompactionPass() {
  return state_->RunPass(MaintenanceJob::kCompaction);
}

MaintenanceProgress Maintenance::Progress() const {
  MutexLock lock(state_->mutex);
  return state_->counters;
}

void Maintenance::WaitUntil(const std::function<bool(const MaintenanceProgress&)>& done) const {
  MutexLock lock(state_->mutex);
  while (!done(state_->counters)) state_->progress.Wait(state_->mutex);
}

void Maintenance::Register(StorageBase* store, std::string name, std::string kind) {
  State& s = *state_;
  MutexLock lock(s.mutex);
  if (s.ids.count(store) != 0) return;
  const uint64_t id = s.next_entry++;
  State::Entry entry;
  entry.store = store;
  entry.name = std::move(name);
  entry.kind = std::move(kind);
  s.entries.emplace(id, std::move(entry));
  s.ids.emplace(store, id);
  s.UpdateGauge();
  s.progress.SignalAll();
}

void Maintenance::Unregister(StorageBase* store) {
  State& s = *state_;
  MutexLock lock(s.mutex);
  auto id = s.ids.find(store);
  if (id == s.ids.end()) return;
  const uint64_t entry_id = id->second;
  s.ids.erase(id);
  s.entries.at(entry_id).removed = true;
  while (s.entries.at(entry_id).AnyRunning()) s.progress.Wait(s.mutex);
  // A queued action of this store finds no entry and completes its pass as dropped.
  s.entries.erase(entry_id);
  s.UpdateGauge();
  s.progress.SignalAll();
}

}  // namespace strata::store
