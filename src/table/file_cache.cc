// FileCache: decoded table objects (data-file footers, deletion vectors, key segments)
// shared between readers, evicted least-recently-used beyond a byte budget.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <variant>

#include "table/table_internal.h"
#include "util/mutex.h"

namespace strata::table::internal {
namespace {

using CachedValue =
    std::variant<std::shared_ptr<DataFileReader>, std::shared_ptr<const DeletionVector>,
                 std::shared_ptr<const KeySegment>>;

// Roughly what a cached entry costs beyond its own accounting (key, list node, map slot).
constexpr int64_t kEntryOverheadBytes = 128;

}  // namespace

struct FileCache::State {
  struct Entry {
    std::string key;
    CachedValue value;
    int64_t charge = 0;
  };
  // A load in progress; `done` once its status and value are set.
  struct Flight {
    bool done = false;
    Status status;
    CachedValue value;
  };

  explicit State(int64_t capacity) : capacity_bytes(capacity) {}

  const int64_t capacity_bytes;
  Mutex mu;
  // Most recently used first.
  std::list<Entry> lru STRATA_GUARDED_BY(mu);
  std::unordered_map<std::string, std::list<Entry>::iterator> index STRATA_GUARDED_BY(mu);
  int64_t used_bytes STRATA_GUARDED_BY(mu) = 0;
  // Keys being loaded; `loaded` is signalled as each load finishes.
  std::unordered_map<std::string, std::shared_ptr<Flight>> loading STRATA_GUARDED_BY(mu);
  CondVar loaded;
  int64_t waiting STRATA_GUARDED_BY(mu) = 0;  // threads waiting for another's load

  // The cached value of `key`, else what `load` returns (Result<std::shared_ptr<T>>),
  // cached with the charge `bytes_of(value)`. One thread loads a key at a time: threads
  // asking for a key that is loading wait for that load and share its value or its error
  // (readers scanning on several threads would otherwise decode the same object each).
  template <typename T, typename Load, typename BytesOf>
  Result<std::shared_ptr<T>> GetOrLoad(const std::string& key, Load load, BytesOf bytes_of)
      STRATA_EXCLUDES(mu) {
    std::shared_ptr<Flight> flight;
    {
      MutexLock lock(mu);
      while (true) {
        if (auto cached = LookupLocked<T>(key)) return cached;
        auto it = loading.find(key);
        if (it == loading.end()) break;
        std::shared_ptr<Flight> other = it->second;
        ++waiting;
        while (!other->done) loaded.Wait(mu);
        --waiting;
        if (!other->status.ok()) return other->status;
        if (auto* value = std::get_if<std::shared_ptr<T>>(&other->value)) return *value;
        // Loaded as another kind (cannot happen for well-formed manifests): load it here.
      }
      flight = std::make_shared<Flight>();
      loading.emplace(key, flight);
    }
    Result<std::shared_ptr<T>> result = Status::Internal("file cache: load threw");
    try {
      result = load();
    } catch (...) {
      Finish(key, *flight, result.status(), CachedValue());
      throw;
    }
    if (!result.ok()) {
      Finish(key, *flight, result.status(), CachedValue());
      return result;
    }
    const int64_t bytes = bytes_of(**result);
    std::shared_ptr<T> value = Insert<T>(key, *std::move(result), bytes);
    Finish(key, *flight, Status::OK(), CachedValue(value));
    return value;
  }

 private:
  template <typename T>
  std::shared_ptr<T> LookupLocked(const std::string& key) STRATA_REQUIRES(mu) {
    auto it = index.find(key);
    if (it == index.end()) return nullptr;
    auto* value = std::get_if<std::shared_ptr<T>>(&it->second->value);
    if (value == nullptr) return nullptr;
    lru.splice(lru.begin(), lru, it->second);
    return *value;
  }

  void Finish(const std::string& key, Flight& flight, Status status, CachedValue value)
      STRATA_EXCLUDES(mu) {
    MutexLock lock(mu);
    flight.status = std::move(status);
    flight.value = std::move(value);
    flight.done = true;
    loading.erase(key);
    loaded.SignalAll();
  }

  // Caches `loaded` under `key` unless another thread cached the key meanwhile, in which
  // case that value is returned instead so every reader shares one copy.
  template <typename T>
  std::shared_ptr<T> Insert(const std::string& key, std::shared_ptr<T> loaded, int64_t bytes)
      STRATA_EXCLUDES(mu) {
    const int64_t charge = bytes + static_cast<int64_t>(key.size()) + kEntryOverheadBytes;
    if (charge > capacity_bytes) return loaded;  // covers capacity 0: nothing is cached
    MutexLock lock(mu);
    auto it = index.find(key);
    if (it != index.end()) {
      if (auto* existing = std::get_if<std::shared_ptr<T>>(&it->second->value)) {
        lru.splice(lru.begin(), lru, it->second);
        return *existing;
      }
      // Same key, different kind (cannot happen for well-formed manifests): replace it.
      used_bytes -= it->second->charge;
      lru.erase(it->second);
      index.erase(it);
    }
    lru.push_front(Entry{key, CachedValue(loaded), charge});
    index.emplace(key, lru.begin());
    used_bytes += charge;
    while (used_bytes > capacity_bytes && !lru.empty()) {
      Entry& victim = lru.back();
      used_bytes -= victim.charge;
      index.erase(victim.key);
      lru.pop_back();
    }
    return loaded;
  }
};

FileCache::FileCache(int64_t capacity_bytes)
    : state_(std::make_unique<State>(capacity_bytes < 0 ? 0 : capacity_bytes)) {}

FileCache::~FileCache() = default;

int64_t FileCache::LoadsWaiting() const {
  MutexLock lock(state_->mu);
  return state_->waiting;
}

Result<std::shared_ptr<DataFileReader>> FileCache::DataFile(
    const std::shared_ptr<ObjectStore>& store, const std::string& prefix,
    const pb::DataFile& entry) {
  return state_->GetOrLoad<DataFileReader>(
      FileKey(prefix, entry.path()), [&] { return DataFileReader::Open(store, prefix, entry); },
      [](const DataFileReader& reader) { return reader.memory_bytes(); });
}

Result<std::shared_ptr<const DeletionVector>> FileCache::Deletions(ObjectStore& store,
                                                                   const std::string& prefix,
                                                                   const pb::DeletionFile& entry,
                                                                   int64_t physical_rows) {
  return state_->GetOrLoad<const DeletionVector>(
      FileKey(prefix, entry.path()),
      [&]() -> Result<std::shared_ptr<const DeletionVector>> {
        STRATA_ASSIGN_OR_RETURN(DeletionVector loaded,
                                ReadDeletionFile(store, prefix, entry, physical_rows));
        return std::make_shared<const DeletionVector>(std::move(loaded));
      },
      // A decoded Roaring bitmap takes about as much memory as its portable serialization;
      // an entry without a recorded size is charged 4 bytes per member (array containers).
      [&](const DeletionVector& vector) {
        return entry.size() > 0 ? entry.size() : vector.Cardinality() * 4;
      });
}

Result<std::shared_ptr<const KeySegment>> FileCache::Segment(ObjectStore& store,
                                                             const std::string& prefix,
                                                             const pb::KeySegment& entry) {
  // A segment maps local fragment positions through its manifest entry's fragment list, so the
  // list is part of the key: the same file is never served with another version's list.
  std::string key = FileKey(prefix, entry.path());
  for (uint32_t id : entry.fragment_ids()) key += fmt::format("#{}", id);
  return state_->GetOrLoad<const KeySegment>(
      key, [&] { return KeySegment::Load(store, prefix, entry); },
      [](const KeySegment& segment) { return segment.memory_bytes(); });
}

}  // namespace strata::table::internal
