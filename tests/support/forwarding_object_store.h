// An ObjectStore that passes every call on to another: the base of test wrappers that count,
// hook or fail a few calls and forward the rest. CreateAppendable and Copy keep ObjectStore's
// own implementations unless a wrapper overrides them.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "strata/object_store.h"

namespace strata::testing {

class ForwardingObjectStore : public ObjectStore {
 public:
  explicit ForwardingObjectStore(std::shared_ptr<ObjectStore> base) : base_(std::move(base)) {}

  Result<Buffer> Get(std::string_view key) override { return base_->Get(key); }
  Result<Buffer> GetRange(std::string_view key, int64_t offset, int64_t length) override {
    return base_->GetRange(key, offset, length);
  }
  Result<ObjectMeta> Head(std::string_view key) override { return base_->Head(key); }
  Status Put(std::string_view key, std::string_view data) override { return base_->Put(key, data); }
  Status PutIfAbsent(std::string_view key, std::string_view data) override {
    return base_->PutIfAbsent(key, data);
  }
  Result<std::vector<ObjectMeta>> List(std::string_view prefix) override {
    return base_->List(prefix);
  }
  Status Delete(std::string_view key) override { return base_->Delete(key); }
  Result<int64_t> DeletePrefix(std::string_view prefix) override {
    return base_->DeletePrefix(prefix);
  }
  std::string Describe() const override { return base_->Describe(); }

 protected:
  ObjectStore& base() { return *base_; }
  const std::shared_ptr<ObjectStore>& base_store() const { return base_; }

 private:
  std::shared_ptr<ObjectStore> base_;
};

// Forwards to another store; runs `hook` once, just before the first PutIfAbsent of `key`
// (to make a racing writer act at exactly that moment).
class HookedStore final : public ForwardingObjectStore {
 public:
  HookedStore(std::shared_ptr<ObjectStore> base, std::string key, std::function<void()> hook)
      : ForwardingObjectStore(std::move(base)), key_(std::move(key)), hook_(std::move(hook)) {}
  Status PutIfAbsent(std::string_view key, std::string_view data) override {
    if (key == key_ && hook_) std::exchange(hook_, nullptr)();
    return ForwardingObjectStore::PutIfAbsent(key, data);
  }

 private:
  std::string key_;
  std::function<void()> hook_;
};

// Forwards to another store; runs `hook` once, just before the first Copy to a key ending
// in `suffix` (a generation recode copies the bloom filter last, right before it publishes).
// Appendable objects are the base store's.
class CopyHookedStore final : public ForwardingObjectStore {
 public:
  CopyHookedStore(std::shared_ptr<ObjectStore> base, std::string suffix, std::function<void()> hook)
      : ForwardingObjectStore(std::move(base)),
        suffix_(std::move(suffix)),
        hook_(std::move(hook)) {}
  Result<std::unique_ptr<AppendableObject>> CreateAppendable(std::string_view key) override {
    return base().CreateAppendable(key);
  }
  Status Copy(std::string_view from, std::string_view to) override {
    if (to.ends_with(suffix_)) {
      std::function<void()> hook;
      {
        std::lock_guard<std::mutex> lock(mu_);
        hook = std::exchange(hook_, nullptr);
      }
      if (hook) hook();
    }
    return base().Copy(from, to);
  }

 private:
  std::string suffix_;
  std::mutex mu_;
  std::function<void()> hook_;
};

}  // namespace strata::testing
