// NewMemoryObjectStore: an ObjectStore in a sorted map under one mutex (tests, scratch).
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "util/mutex.h"
#include "strata/object_store.h"

namespace strata {
namespace {

class MemoryObjectStore final : public ObjectStore {
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
    return Status::OK();
  }

  Status PutIfAbsent(std::string_view key, std::string_view data) override {
    STRATA_RETURN_IF_ERROR(ValidateObjectKey(key));
    Buffer copy = Buffer::Copy(data);
    MutexLock lock(mu_);
    if (!objects_.try_emplace(std::string(key), std::move(copy)).second) {
      return Status::AlreadyExists(fmt::format("object '{}' already exists in memory://", key));
    }
    return Status::OK();
  }

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
    return Status::OK();
  }

  Result<int64_t> DeletePrefix(std::string_view prefix) override {
    STRATA_RETURN_IF_ERROR(ValidateObjectPrefix(prefix));
    MutexLock lock(mu_);
    auto first = objects_.lower_bound(prefix);
    auto last = first;
    int64_t count = 0;
    while (last != objects_.end() && last->first.compare(0, prefix.size(), prefix) == 0) {
      ++last;
      ++count;
    }
    objects_.erase(first, last);
    return count;
  }

  std::string Describe() const override { return "memory://"; }

 private:
  static Status NotFound(std::string_view key) {
    return Status::NotFound(fmt::format("object '{}' not found in memory://", key));
  }

  Mutex mu_;
  std::map<std::string, Buffer, std::less<>> objects_ STRATA_GUARDED_BY(mu_);
};

}  // namespace

std::shared_ptr<ObjectStore> NewMemoryObjectStore() {
  return std::make_shared<MemoryObjectStore>();
}

}  // namespace strata
