// NewMemoryObjectStore: an ObjectStore in a sorted map under one mutex (tests, scratch).
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "strata/object_store.h"
#include "util/mutex.h"

namespace strata {
namespace {

class MemoryObjectStore final : public ObjectStore,
                                public std::enable_shared_from_this<MemoryObjectStore> {
 public:
  Result<Buffer> Get(std::string_view key) override {
    STRATA_RETURN_IF_ERROR(ValidateObjectKey(key));
    MutexLock lock(mu_);
    auto it = objects_.find(key);
    if (it == objects_.end()) return NotFound(key);
    return it->second;  // immutable and shared: no copy
  }

  Result<Buffer> GetRange(std::string_view key, int64_t offset, int64_t length) override {
    STRATA_RETURN_IF_ERROR(ValidateObjectKey(key));
    if (offset < 0 || length < 0) {
      return Status::InvalidArgument(
          fmt::format("get range of '{}': negative offset {} or length {}", key, offset, length));
    }
    MutexLock lock(mu_);
    auto it = objects_.find(key);
    if (it == objects_.end()) return NotFound(key);
    const Buffer& object = it->second;
    if (offset > object.size()) {
      return Status::InvalidArgument(fmt::format(
          "get range of '{}': offset {} is past the end ({} bytes)", key, offset, object.size()));
    }
    return object.Slice(offset, std::min(length, object.size() - offset));
  }

  Result<ObjectMeta> Head(std::string_view key) override {
    STRATA_RETURN_IF_ERROR(ValidateObjectKey(key));
    MutexLock lock(mu_);
    auto it = objects_.find(key);
    if (it == objects_.end()) return NotFound(key);
    return ObjectMeta{it->first, it->second.size()};
  }

  Status Put(std::string_view key, std::string_view data) override {
    STRATA_RETURN_IF_ERROR(ValidateObjectKey(key));
    Buffer copy = Buffer::Copy(data);  // outside the lock
    MutexLock lock(mu_);
    objects_.insert_or_assign(std::string(key), std::move(copy));
    Changed(key);
    return Status::OK();
  }

  Status PutIfAbsent(std::string_view key, std::string_view data) override {
    STRATA_RETURN_IF_ERROR(ValidateObjectKey(key));
    Buffer copy = Buffer::Copy(data);
    MutexLock lock(mu_);
    if (!objects_.try_emplace(std::string(key), std::move(copy)).second) {
      return Status::AlreadyExists(fmt::format("object '{}' already exists in memory://", key));
    }
    Changed(key);
    return Status::OK();
  }

  Result<std::unique_ptr<AppendableObject>> CreateAppendable(std::string_view key) override;

  Result<std::vector<ObjectMeta>> List(std::string_view prefix) override {
    STRATA_RETURN_IF_ERROR(ValidateObjectPrefix(prefix));
    MutexLock lock(mu_);
    std::vector<ObjectMeta> out;
    for (auto it = objects_.lower_bound(prefix);
         it != objects_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      out.push_back({it->first, it->second.size()});
    }
    return out;
  }

  Status Delete(std::string_view key) override {
    STRATA_RETURN_IF_ERROR(ValidateObjectKey(key));
    MutexLock lock(mu_);
    auto it = objects_.find(key);
    if (it == objects_.end()) return NotFound(key);
    objects_.erase(it);
    Changed(key);
    return Status::OK();
  }

  Result<int64_t> DeletePrefix(std::string_view prefix) override {
    STRATA_RETURN_IF_ERROR(ValidateObjectPrefix(prefix));
    MutexLock lock(mu_);
    auto first = objects_.lower_bound(prefix);
    auto last = first;
    int64_t count = 0;
    while (last != objects_.end() && last->first.compare(0, prefix.size(), prefix) == 0) {
      Changed(last->first);
      ++last;
      ++count;
    }
    objects_.erase(first, last);
    return count;
  }

  Result<std::unique_ptr<ChangeWatch>> Watch(std::string_view prefix) override;

  std::string Describe() const override { return "memory://"; }

 private:
  friend class MemoryAppendableObject;
  friend class MemoryChangeWatch;

  // Moves the change count of `key`'s directory (ChangeWatch::Poll).
  void Changed(std::string_view key) STRATA_REQUIRES(mu_) {
    const std::string_view dir = WatchPrefixOf(key);
    auto it = changes_.find(dir);
    if (it == changes_.end()) it = changes_.emplace(std::string(dir), 0).first;
    ++it->second;
  }

  uint64_t ChangesOf(std::string_view dir) STRATA_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    auto it = changes_.find(dir);
    return it == changes_.end() ? 0 : it->second;
  }

  // The bytes of an object being appended to: a block that only grows. Bytes below the
  // published size are never written again, so Buffers handed out by Get stay valid and
  // unchanged while appends go on; a full block is replaced by a copy twice as large.
  struct AppendState {
    std::shared_ptr<uint8_t[]> block;
    int64_t capacity = 0;
    int64_t size = 0;
  };

  // Appends to `state` and, if `key` still names that object (not replaced or deleted
  // meanwhile, which would leave the appender writing to an unnamed object as with a file),
  // publishes the longer object.
  void AppendTo(const std::string& key, AppendState& state, std::string_view data)
      STRATA_EXCLUDES(mu_) {
    MutexLock lock(mu_);
    auto it = objects_.find(key);
    const bool named = it != objects_.end() && it->second.data() == state.block.get();
    const int64_t needed = state.size + static_cast<int64_t>(data.size());
    if (needed > state.capacity) {
      int64_t capacity = std::max(needed, state.capacity * 2);
      std::shared_ptr<uint8_t[]> block(new uint8_t[static_cast<size_t>(capacity)]);
      if (state.size > 0) std::memcpy(block.get(), state.block.get(), state.size);
      state.block = std::move(block);
      state.capacity = capacity;
    }
    if (!data.empty()) std::memcpy(state.block.get() + state.size, data.data(), data.size());
    state.size = needed;
    if (named) {
      it->second = Buffer(state.block.get(), state.size, state.block);
      Changed(key);
    }
  }

  static Status NotFound(std::string_view key) {
    return Status::NotFound(fmt::format("object '{}' not found in memory://", key));
  }

  Mutex mu_;
  std::map<std::string, Buffer, std::less<>> objects_ STRATA_GUARDED_BY(mu_);
  // Changes per directory of keys (WatchPrefixOf), counted by every mutation under mu_.
  std::map<std::string, uint64_t, std::less<>> changes_ STRATA_GUARDED_BY(mu_);
};

// Polls the change count of one directory of a memory store: exact, since every mutation
// counts under the store's mutex.
class MemoryChangeWatch final : public ChangeWatch {
 public:
  MemoryChangeWatch(std::shared_ptr<MemoryObjectStore> store, std::string dir)
      : store_(std::move(store)), dir_(std::move(dir)) {}

  Result<uint64_t> Poll() override { return store_->ChangesOf(dir_); }

 private:
  const std::shared_ptr<MemoryObjectStore> store_;
  const std::string dir_;
};

class MemoryAppendableObject final : public AppendableObject {
 public:
  MemoryAppendableObject(std::shared_ptr<MemoryObjectStore> store, std::string key,
                         MemoryObjectStore::AppendState state)
      : store_(std::move(store)), key_(std::move(key)), state_(std::move(state)) {}

  Status Append(std::string_view data) override {
    STRATA_RETURN_IF_ERROR(CheckOpen("append to"));
    store_->AppendTo(key_, state_, data);
    size_.store(state_.size, std::memory_order_relaxed);
    return Status::OK();
  }
  Status Sync() override { return CheckOpen("sync"); }
  Status Close() override {
    closed_ = true;
    return Status::OK();
  }
  int64_t size() const override { return size_.load(std::memory_order_relaxed); }

 private:
  Status CheckOpen(std::string_view op) const {
    if (!closed_) return Status::OK();
    return Status::InvalidArgument(fmt::format("{} '{}': the object is closed", op, key_));
  }

  const std::shared_ptr<MemoryObjectStore> store_;
  const std::string key_;
  MemoryObjectStore::AppendState state_;
  bool closed_ = false;
  std::atomic<int64_t> size_{0};
};

Result<std::unique_ptr<AppendableObject>> MemoryObjectStore::CreateAppendable(
    std::string_view key) {
  STRATA_RETURN_IF_ERROR(ValidateObjectKey(key));
  // A block of its own (never empty), so the map entry can be recognised as this object's.
  AppendState state;
  state.capacity = 256;
  state.block.reset(new uint8_t[state.capacity]);
  {
    MutexLock lock(mu_);
    if (!objects_.try_emplace(std::string(key), Buffer(state.block.get(), 0, state.block)).second) {
      return Status::AlreadyExists(fmt::format("object '{}' already exists in memory://", key));
    }
    Changed(key);
  }
  return std::unique_ptr<AppendableObject>(std::make_unique<MemoryAppendableObject>(
      shared_from_this(), std::string(key), std::move(state)));
}

Result<std::unique_ptr<ChangeWatch>> MemoryObjectStore::Watch(std::string_view prefix) {
  STRATA_RETURN_IF_ERROR(ValidateWatchPrefix(prefix));
  return std::unique_ptr<ChangeWatch>(
      std::make_unique<MemoryChangeWatch>(shared_from_this(), std::string(prefix)));
}

}  // namespace

std::shared_ptr<ObjectStore> NewMemoryObjectStore() {
  return std::make_shared<MemoryObjectStore>();
}

}  // namespace strata
