// The delayed, background deletion of merged generations and the sweep of leftovers (see
// generation_deleter.h).
//
// Invariant: a directory is deleted only when no new read view can name it — it is no
// longer listed in the shard manifest — and its rows are read elsewhere: its generation number
// is at or below the shard's merge watermark (the rows are in the base version every new read
// starts from), or a recode replaced it (the rows are in the listed copy, lsm.md §6.4).
#include "lsm/generation_deleter.h"

#include <algorithm>
#include <set>

#include "lsm/layout.h"
#include "util/log.h"

namespace strata::lsm {

GenerationDeleter::GenerationDeleter(std::shared_ptr<ObjectStore> store, std::string store_prefix,
                                     GenerationCache* cache, std::chrono::microseconds delay,
                                     Clock* clock, Histogram* duration, Counter* errors)
    : store_(std::move(store)),
      prefix_(std::move(store_prefix)),
      cache_(cache),
      delay_(delay),
      clock_(clock != nullptr ? clock : SystemClock()),
      duration_(duration),
      errors_(errors) {}

GenerationDeleter::~GenerationDeleter() { Stop(); }

void GenerationDeleter::Enqueue(const Uuid& shard, std::vector<std::string> paths) {
  {
    MutexLock lock(mutex_);
    if (stopping_) return;
    const int64_t due = clock_->MonotonicNanos() + std::chrono::nanoseconds(delay_).count();
    for (std::string& path : paths) queue_.push_back(Entry{shard, std::move(path), due});
    StartLocked();
  }
  changed_.SignalAll();
}

void GenerationDeleter::Start() {
  MutexLock lock(mutex_);
  if (!stopping_) StartLocked();
}

void GenerationDeleter::StartLocked() {
  if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
}

bool GenerationDeleter::PendingLocked(const Uuid& shard, const std::string& path) const {
  if (busy_ && in_progress_.shard == shard && in_progress_.path == path) return true;
  return std::any_of(queue_.begin(), queue_.end(),
                     [&](const Entry& e) { return e.shard == shard && e.path == path; });
}

bool GenerationDeleter::Pending(const Uuid& shard, const std::string& path) const {
  MutexLock lock(mutex_);
  return PendingLocked(shard, path);
}

void GenerationDeleter::Wake() { changed_.SignalAll(); }

void GenerationDeleter::WaitIdle() const {
  MutexLock lock(mutex_);
  while (!queue_.empty() || busy_) changed_.Wait(mutex_);
}

void GenerationDeleter::Stop() {
  std::thread thread;
  {
    MutexLock lock(mutex_);
    stopping_ = true;
    thread = std::move(thread_);
  }
  changed_.SignalAll();
  if (thread.joinable()) thread.join();
}

void GenerationDeleter::Delete(const Uuid& shard, const std::string& path) {
  ScopedTimer timer(duration_, *clock_);
  const std::string dir = ShardDir(prefix_, shard) + path;
  Result<int64_t> removed = store_->DeletePrefix(dir);
  if (!removed.ok()) {
    if (errors_ != nullptr) errors_->Increment();
    LogWarning("could not delete merged generation {}: {}", dir, removed.status().ToString());
  }
  cache_->Forget(shard, path);
}

void GenerationDeleter::Run() {
  mutex_.Lock();
  for (;;) {
    if (queue_.empty()) {
      if (stopping_) break;
      changed_.Wait(mutex_);
      continue;
    }
    const int64_t wait = queue_.front().due_nanos - clock_->MonotonicNanos();
    if (!stopping_ && wait > 0) {
      changed_.WaitFor(mutex_, std::chrono::nanoseconds(wait));
      continue;
    }
    in_progress_ = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    const Entry entry = in_progress_;
    mutex_.Unlock();
    Delete(entry.shard, entry.path);
    mutex_.Lock();
    busy_ = false;
    changed_.SignalAll();
  }
  mutex_.Unlock();
}

int GenerationDeleter::Sweep(const Uuid& shard, uint64_t watermark,
                             const pb::ShardManifest& manifest) {
  std::set<std::string> listed;
  for (const pb::Generation& g : manifest.generations()) listed.insert(g.path());
  const std::string gen_dir = ShardDir(prefix_, shard) + "gen/";
  Result<std::vector<ObjectMeta>> objects = store_->List(gen_dir);
  if (!objects.ok()) return 0;
  std::set<std::string> dirs;
  for (const ObjectMeta& object : *objects) {
    std::string_view rest = std::string_view(object.key).substr(gen_dir.size());
    size_t slash = rest.find('/');
    if (slash == std::string_view::npos) continue;
    dirs.insert("gen/" + std::string(rest.substr(0, slash)) + "/");
  }
  int deleted = 0;
  for (const std::string& path : dirs) {
    std::optional<uint64_t> number = ParseGenerationPath(path);
    if (!number.has_value() || *number > watermark || listed.count(path) > 0 ||
        Pending(shard, path)) {
      continue;
    }
    Delete(shard, path);
    ++deleted;
  }
  return deleted;
}

}  // namespace strata::lsm
