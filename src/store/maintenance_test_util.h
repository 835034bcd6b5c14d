// Shared by the maintenance tests: a store of a small generic schema, rows for it, an object
// store that parks one write until the test releases it, and metric look-ups.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "store/store_test_util.h"
#include "strata/builder.h"
#include "strata/storage_base.h"
#include "support/forwarding_object_store.h"
#include "util/mutex.h"

// EXPECT that `status` is OK.
#define EXPECT_OK_(expr)                           \
  do {                                             \
    const ::strata::Status st_ = (expr);           \
    EXPECT_TRUE(st_.ok()) << #expr << ": " << st_; \
  } while (0)

// EXPECT that `result` is OK and holds `want`.
#define EXPECT_OK_AND_EQ_(result, want)                \
  do {                                                 \
    auto strata_r_ = (result);                         \
    EXPECT_TRUE(strata_r_.ok()) << strata_r_.status(); \
    if (strata_r_.ok()) {                              \
      EXPECT_EQ(*strata_r_, want);                     \
    }                                                  \
  } while (0)

namespace strata::store::testing {

// Parks the first PutIfAbsent of `key` (after Arm) until Release; WaitUntilParked is the
// sync point for "the operation that makes this write is in progress".
class ParkingStore final : public strata::testing::ForwardingObjectStore {
 public:
  using ForwardingObjectStore::ForwardingObjectStore;

  void Arm(std::string key) {
    MutexLock lock(mutex_);
    key_ = std::move(key);
    armed_ = true;
  }
  void WaitUntilParked() {
    MutexLock lock(mutex_);
    while (!parked_) changed_.Wait(mutex_);
  }
  void Release() {
    MutexLock lock(mutex_);
    released_ = true;
    changed_.SignalAll();
  }
  // WAL segments are appended through the wrapped store.
  Result<std::unique_ptr<AppendableObject>> CreateAppendable(std::string_view key) override {
    return base_store()->CreateAppendable(key);
  }
  Status PutIfAbsent(std::string_view key, std::string_view data) override {
    {
      MutexLock lock(mutex_);
      if (armed_ && key == key_) {
        armed_ = false;
        parked_ = true;
        changed_.SignalAll();
        while (!released_) changed_.Wait(mutex_);
      }
    }
    return ForwardingObjectStore::PutIfAbsent(key, data);
  }

 private:
  Mutex mutex_;
  CondVar changed_;
  std::string key_ STRATA_GUARDED_BY(mutex_);
  bool armed_ STRATA_GUARDED_BY(mutex_) = false;
  bool parked_ STRATA_GUARDED_BY(mutex_) = false;
  bool released_ STRATA_GUARDED_BY(mutex_) = false;
};

// Fails every Put and PutIfAbsent while `fail` is set.
class FailingWritesStore final : public strata::testing::ForwardingObjectStore {
 public:
  using ForwardingObjectStore::ForwardingObjectStore;
  // WAL segments are appended through the wrapped store.
  Result<std::unique_ptr<AppendableObject>> CreateAppendable(std::string_view key) override {
    return base_store()->CreateAppendable(key);
  }
  Status Put(std::string_view key, std::string_view data) override {
    if (fail.load()) return Status::IOError(fmt::format("injected failure writing '{}'", key));
    return ForwardingObjectStore::Put(key, data);
  }
  Status PutIfAbsent(std::string_view key, std::string_view data) override {
    if (fail.load()) return Status::IOError(fmt::format("injected failure writing '{}'", key));
    return ForwardingObjectStore::PutIfAbsent(key, data);
  }
  std::atomic<bool> fail{false};
};

class MaintenanceFixture : public StoreFixture {
 protected:
  static SchemaPtr ItemSchema() {
    return std::make_shared<Schema>(std::vector<FieldPtr>{
        field("id", utf8(), false), field("status", utf8(), true), field("n", int64(), true)});
  }

  // A store of ItemSchema on `on` (default: the fixture's local store).
  Result<std::unique_ptr<StorageBase>> OpenItems(StorageBaseOptions options = {},
                                                 std::shared_ptr<ObjectStore> on = nullptr) {
    options.schema = ItemSchema();
    options.key_column = "id";
    if (options.shard_id.empty()) options.shard_id = "items";
    options.generation_delete_delay_seconds = 0;
    return StorageBase::Open(on != nullptr ? on : store_, prefix_, std::move(options));
  }

  // Rows "<prefix>0".."<prefix>count-1".
  static RecordBatch Items(const std::string& prefix, int count, int64_t n = 1) {
    auto builder = RecordBatchBuilder::Make(ItemSchema());
    EXPECT_TRUE(builder.ok());
    for (int i = 0; i < count; ++i) {
      EXPECT_TRUE((*builder)->GetAs<BinaryBuilder>(0)->Append(prefix + std::to_string(i)).ok());
      EXPECT_TRUE((*builder)->GetAs<BinaryBuilder>(1)->Append("ok").ok());
      (*builder)->GetAs<Int64Builder>(2)->Append(n);
    }
    auto batch = (*builder)->Finish();
    EXPECT_TRUE(batch.ok()) << batch.status();
    return *batch;
  }

  // `count` merges of new keys: `count` more base fragments.
  static void MakeFragments(StorageBase& base, int count) {
    static int next = 0;
    for (int i = 0; i < count; ++i) {
      Status put = base.Put({Items("f" + std::to_string(next++) + "-", 2)});
      ASSERT_TRUE(put.ok()) << put;
      ASSERT_TRUE(base.Cleanup().ok());
    }
  }

  // The object key of base table version `version` of the fixture's store.
  std::string BaseManifestKey(uint64_t version) const {
    return fmt::format("{}_versions/{:020}.manifest", prefix_, version);
  }

  // The value of one series in `metrics`' exposition (`series` as exposed, e.g.
  // `strata_wal_flush_total{result="ok",kind="generic"}`); 0 when absent.
  static double MetricValue(const MetricsRegistry& metrics, const std::string& series) {
    std::istringstream text(metrics.ExposePrometheus());
    std::string line;
    while (std::getline(text, line)) {
      if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
    }
    return 0;
  }
};

}  // namespace strata::store::testing
