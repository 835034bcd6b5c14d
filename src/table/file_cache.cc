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

  explicit State(int64_t capacity) : capacity_bytes(capacity) {}

  const int64_t capacity_bytes;
  Mutex mu;
  // Most recently used first.
  std::list<Entry> lru STRATA_GUARDED_BY(mu);
  std::unordered_map<std::string, std::list<Entry>::iterator> index STRATA_GUARDED_BY(mu);
  int64_t used_bytes STRATA_GUARDED_BY(mu) = 0;

  // The cached value of `key` if it holds a T, moved to the front.
  template <typename T>
  std::shared_ptr<T> Lookup(const std::string& key) {
    MutexLock lock(mu);
    auto it = index.find(key);
    if (it == index.end()) return nullptr;
    auto* value = std::get_if<std::shared_ptr<T>>(&it->second->value);
    if (value == nullptr) return nullptr;
    lru.splice(lru.begin(), lru, it->second);
    return *value;
  }

  // Caches `loaded` under `key` unless another thread cached the key meanwhile, in which
  // case that value is returned instead so every reader shares one copy.
  template <typename T>
  std::shared_ptr<T> Insert(const std::string& key, std::shared_ptr<T> loaded, int64_t bytes) {
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

Result<std::shared_ptr<DataFileReader>> FileCache::DataFile(
    const std::shared_ptr<ObjectStore>& store, const std::string& prefix,
    const pb::DataFile& entry) {
  const std::string key = FileKey(prefix, entry.path());
  if (auto cached = state_->Lookup<DataFileReader>(key)) return cached;
  // Loaded without the lock: two threads may both load a key; Insert keeps the first.
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<DataFileReader> reader,
                          DataFileReader::Open(store, prefix, entry));
  const int64_t bytes = reader->memory_bytes();
  return state_->Insert<DataFileReader>(key, std::move(reader), bytes);
}

Result<std::shared_ptr<const DeletionVector>> FileCache::Deletions(ObjectStore& store,
                                                                   const std::string& prefix,
                                                                   const pb::DeletionFile& entry,
                                                                   int64_t physical_rows) {
  const std::string key = FileKey(prefix, entry.path());
  if (auto cached = state_->Lookup<const DeletionVector>(key)) return cached;
  STRATA_ASSIGN_OR_RETURN(DeletionVector loaded,
                          ReadDeletionFile(store, prefix, entry, physical_rows));
  // A decoded Roaring bitmap takes about as much memory as its portable serialization;
  // an entry without a recorded size is charged 4 bytes per member (array containers).
  const int64_t bytes = entry.size() > 0 ? entry.size() : loaded.Cardinality() * 4;
  auto vector = std::make_shared<const DeletionVector>(std::move(loaded));
  return state_->Insert<const DeletionVector>(key, std::move(vector), bytes);
}

Result<std::shared_ptr<const KeySegment>> FileCache::Segment(ObjectStore& store,
                                                             const std::string& prefix,
                                                             const pb::KeySegment& entry) {
  // A segment maps local fragment positions through its manifest entry's fragment list, so the
  // list is part of the key: the same file is never served with another version's list.
  std::string key = FileKey(prefix, entry.path());
  for (uint32_t id : entry.fragment_ids()) key += fmt::format("#{}", id);
  if (auto cached = state_->Lookup<const KeySegment>(key)) return cached;
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<const KeySegment> segment,
                          KeySegment::Load(store, prefix, entry));
  const int64_t bytes = segment->memory_bytes();
  return state_->Insert<const KeySegment>(key, std::move(segment), bytes);
}

}  // namespace strata::table::internal
