// The server's shared state: store names and kinds, the durable registries, the LRU of open
// handles per kind, the blob admission budget and the metrics every route records.
#pragma once

#include <fmt/format.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "strata/context_store.h"
#include "strata/datagen_store.h"
#include "strata/generic_store.h"
#include "strata/maintenance.h"
#include "strata/merge_budget.h"
#include "strata/metrics.h"
#include "strata/object_store.h"
#include "strata/rollout_store.h"
#include "strata/server.h"
#include "strata/status.h"

namespace strata::server {

enum class StoreKind { kContext, kRollout, kDatagen, kGeneric };
inline constexpr size_t kStoreKinds = static_cast<size_t>(StoreKind::kGeneric) + 1;

// "context", "rollout", "datagen", "generic": the registry folder, the directory suffix and
// the metrics label.
std::string_view KindName(StoreKind kind);
// "Context", "Rollout store", "Datagen store", "Generic store": how messages name a store.
std::string_view KindTitle(StoreKind kind);

// 1-128 ASCII characters, the first of [A-Za-z0-9_], the rest of [A-Za-z0-9._-]; not
// "_registry" or "_stats". InvalidArgument saying which rule failed.
Status ValidateStoreName(std::string_view name);

// Durable name registries, one folder of objects per kind (`_registry/<kind>/<name>`, each
// holding {"name", "uri"}), created with put-if-absent: of two servers registering one name,
// one wins.
class Registry {
 public:
  explicit Registry(std::shared_ptr<ObjectStore> objects) : objects_(std::move(objects)) {}
  // AlreadyExists when the name is registered.
  Status Add(StoreKind kind, std::string_view name, std::string_view uri);
  Result<bool> Contains(StoreKind kind, std::string_view name) const;
  // Sorted names.
  Result<std::vector<std::string>> List(StoreKind kind) const;
  // NotFound when the name is not registered.
  Status Remove(StoreKind kind, std::string_view name);

 private:
  std::shared_ptr<ObjectStore> objects_;
};

// Reserves bytes of in-flight blobs: admits when the total stays within the limit or nothing
// is in flight (a lone oversized request); 0 = unlimited. The returned guard releases on
// destruction; null when refused.
class BlobBudget {
 public:
  explicit BlobBudget(int64_t limit) : limit_(limit) {}
  std::shared_ptr<void> TryAcquire(int64_t bytes);
  int64_t used() const;

 private:
  const int64_t limit_;
  mutable std::mutex mu_;
  int64_t used_ = 0;  // guarded by mu_
};

// The open handles of one kind, least recently used first out. Opening runs without the
// cache's lock; of two concurrent opens of one name the first inserted wins. An evicted
// handle closes (sealing) when its last user lets go of it.
template <typename Store>
class HandleCache {
 public:
  using Opener = std::function<Result<std::unique_ptr<Store>>()>;

  explicit HandleCache(int64_t capacity) : capacity_(capacity < 1 ? 2000 : capacity) {}

  // The cached handle, or `open()`'s, inserted. `hit` tells which. An open that overlaps a
  // Remove of the name (a store being deleted) is not cached and fails with Aborted, so a
  // deleted store's handle never outlives its deletion in the cache.
  Result<std::shared_ptr<Store>> GetOrOpen(const std::string& name, const Opener& open, bool* hit) {
    uint64_t generation = 0;
    {
      std::lock_guard lock(mu_);
      if (auto it = index_.find(name); it != index_.end()) {
        lru_.splice(lru_.end(), lru_, it->second);
        *hit = true;
        return it->second->second;
      }
      generation = removals_;
    }
    *hit = false;
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Store> opened, open());
    std::shared_ptr<Store> handle(std::move(opened));
    std::shared_ptr<Store> evicted;
    std::lock_guard lock(mu_);
    if (auto it = index_.find(name); it != index_.end()) return it->second->second;
    if (removals_ != generation && removed_.contains(name)) {
      return Status::Aborted(fmt::format("store '{}' was deleted while it was opened", name));
    }
    lru_.emplace_back(name, handle);
    index_[name] = std::prev(lru_.end());
    if (static_cast<int64_t>(lru_.size()) > capacity_) {
      evicted = std::move(lru_.front().second);
      index_.erase(lru_.front().first);
      lru_.pop_front();
    }
    return handle;
  }

  // Removes the handle of `name`, if open, and returns it; opens of the name running now are
  // not cached (see GetOrOpen).
  std::shared_ptr<Store> Remove(const std::string& name) {
    std::lock_guard lock(mu_);
    ++removals_;
    if (removed_.size() >= 4096) removed_.clear();  // bounded: names of recent deletions
    removed_.insert(name);
    auto it = index_.find(name);
    if (it == index_.end()) return nullptr;
    std::shared_ptr<Store> handle = std::move(it->second->second);
    lru_.erase(it->second);
    index_.erase(it);
    return handle;
  }

  // The open handle of `name`, or null; does not change the LRU order.
  std::shared_ptr<Store> Peek(const std::string& name) const {
    std::lock_guard lock(mu_);
    auto it = index_.find(name);
    return it == index_.end() ? nullptr : it->second->second;
  }

  std::vector<std::pair<std::string, std::shared_ptr<Store>>> Snapshot() const {
    std::lock_guard lock(mu_);
    return {lru_.begin(), lru_.end()};
  }

  // Empties the cache; returns the handles.
  std::vector<std::pair<std::string, std::shared_ptr<Store>>> Clear() {
    std::lock_guard lock(mu_);
    std::vector<std::pair<std::string, std::shared_ptr<Store>>> out(lru_.begin(), lru_.end());
    lru_.clear();
    index_.clear();
    return out;
  }

  size_t size() const {
    std::lock_guard lock(mu_);
    return lru_.size();
  }

 private:
  const int64_t capacity_;
  mutable std::mutex mu_;
  std::list<std::pair<std::string, std::shared_ptr<Store>>> lru_;   // guarded by mu_
  std::map<std::string, typename decltype(lru_)::iterator> index_;  // guarded by mu_
  uint64_t removals_ = 0;                                           // guarded by mu_
  std::set<std::string> removed_;                                   // guarded by mu_
};

// Counting semaphore without waiting: TryAcquire or refuse (the merge-wal concurrency cap).
class ConcurrencyLimit {
 public:
  explicit ConcurrencyLimit(int limit) : limit_(limit) {}
  std::shared_ptr<void> TryAcquire();

 private:
  const int limit_;
  std::mutex mu_;
  int used_ = 0;  // guarded by mu_
};

// A metric series looked up in the registry on its first use and kept: the registry's lookup
// checks the name and labels, takes its lock and searches two maps, too much for every
// request. Get returns null when the registry refuses the series (the lookup's error is
// dropped, as the routes drop it; the next call tries again).
template <typename Metric>
class SeriesSlot {
 public:
  template <typename Lookup>  // Result<Metric*>()
  Metric* Get(const Lookup& lookup) {
    Metric* metric = metric_.load(std::memory_order_acquire);
    if (metric != nullptr) return metric;
    Result<Metric*> found = lookup();
    if (!found.ok()) return nullptr;
    // Racing first uses find the same series: either store is right.
    metric_.store(*found, std::memory_order_release);
    return *found;
  }

 private:
  std::atomic<Metric*> metric_{nullptr};
};

// The series every request of a hot route updates, each resolved once (SeriesSlot).
struct HotSeries {
  SeriesSlot<Counter> cache_hits[kStoreKinds];
  SeriesSlot<Counter> cache_misses[kStoreKinds];
  // Rollout appends, by their `flush` label (false, true).
  SeriesSlot<Counter> rollout_appends[2];
  SeriesSlot<Histogram> rollout_append_seconds[2];
  SeriesSlot<Counter> rollout_appends_flushed;
  SeriesSlot<Counter> rollout_records_appended;
};

class ServerState {
 public:
  static Result<std::unique_ptr<ServerState>> Open(ServerOptions options);
  ~ServerState();

  const ServerOptions& options() const { return options_; }
  int64_t NowMicros() const { return options_.now_micros(); }
  ObjectStore& objects() { return *objects_; }
  const std::shared_ptr<ObjectStore>& shared_objects() const { return objects_; }
  Registry& registry() { return registry_; }
  BlobBudget& blob_budget() { return blob_budget_; }
  ConcurrencyLimit& merge_limit() { return merge_limit_; }
  MetricsRegistry& metrics() { return *metrics_; }
  HotSeries& hot_series() { return hot_series_; }
  store::Maintenance* maintenance() { return maintenance_.get(); }

  // "<data_dir>/<name>.<kind>": what the API reports as a store's uri.
  std::string StoreUri(StoreKind kind, std::string_view name) const;
  std::string StorePrefix(StoreKind kind, std::string_view name) const;

  // The open handle of a registered store (NotFound "<Title> 'X' does not exist" when it is
  // not registered); the name is validated first.
  Result<std::shared_ptr<store::ContextStore>> Context(std::string_view name);
  // The base version of a registered context: its open handle's, else read without opening
  // one for the cache.
  Result<uint64_t> ContextVersion(std::string_view name);
  Result<std::shared_ptr<store::RolloutStore>> Rollout(std::string_view name);
  Result<std::shared_ptr<store::DatagenStore>> Datagen(std::string_view name);
  Result<std::shared_ptr<store::GenericStore>> Generic(std::string_view name);

  // Creation: validates the name, registers it (AlreadyExists "<Title> 'X' already exists"),
  // creates the store and caches the handle. A failure after registering unregisters.
  Result<std::shared_ptr<store::ContextStore>> CreateContext(std::string_view name,
                                                             store::ContextStoreOptions options);
  Result<std::shared_ptr<store::RolloutStore>> CreateRollout(std::string_view name);
  Result<std::shared_ptr<store::DatagenStore>> CreateDatagen(std::string_view name);
  Result<std::shared_ptr<store::GenericStore>> CreateGeneric(std::string_view name,
                                                             const store::SchemaSpec& spec,
                                                             bool seal_on_add);
  // Unregisters (NotFound when absent), closes the handle and deletes the store's data.
  Status Delete(StoreKind kind, std::string_view name);

  // The StorageBase of any kind's open handle, kept alive by `keep`.
  Result<store::StorageBase*> Base(StoreKind kind, std::string_view name,
                                   std::shared_ptr<void>* keep);

  // Moves the open handle of the store, if any, to the newest base version (after a commit
  // made outside it, such as a replication apply). Errors are logged.
  void RefreshOpenHandle(StoreKind kind, std::string_view name);

  // Closes every open handle (sealing); the first error.
  Status CloseAll();

 private:
  explicit ServerState(ServerOptions options);
  store::StorageBaseOptions BaseOptions(StoreKind kind, std::string_view name) const;
  // Opens a store without the registry check, the cache or a writer (for its deletion).
  Result<std::shared_ptr<void>> OpenForDeletion(StoreKind kind, std::string_view name,
                                                store::StorageBase** base);
  Status CheckRegistered(StoreKind kind, std::string_view name) const;
  void CountCache(StoreKind kind, bool hit);

  ServerOptions options_;
  std::shared_ptr<ObjectStore> objects_;
  Registry registry_;
  BlobBudget blob_budget_;
  ConcurrencyLimit merge_limit_;
  MetricsRegistry* metrics_;
  HotSeries hot_series_;
  std::shared_ptr<MergeBudget> merge_budget_;
  std::shared_ptr<store::Maintenance> maintenance_;
  HandleCache<store::ContextStore> contexts_;
  HandleCache<store::RolloutStore> rollouts_;
  HandleCache<store::DatagenStore> datagens_;
  HandleCache<store::GenericStore> generics_;
};

}  // namespace strata::server
