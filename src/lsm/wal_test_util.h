// Helpers shared by wal_test.cc and wal_file_test.cc: a store that counts appends and
// syncs, position helpers, and the WalTest and WalFaultTest fixtures (both instantiated over
// their stores once, in wal_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "io/fault_injection_file_system.h"
#include "io/file_object_store.h"
#include "io/memory_file_system.h"
#include "lsm/layout.h"
#include "lsm/wal.h"
#include "strata/object_store.h"
#include "support/forwarding_object_store.h"
#include "support/status_assertions.h"
#include "support/temp_dir.h"

namespace strata::lsm::testing {

// An AppendableObject that counts Append and Sync calls on its store's counters. Sync takes
// a little time, as an fsync does, so concurrent writers queue up behind it.
class CountingAppendable final : public AppendableObject {
 public:
  CountingAppendable(std::unique_ptr<AppendableObject> base, std::atomic<int64_t>* appends,
                     std::atomic<int64_t>* syncs)
      : base_(std::move(base)), appends_(appends), syncs_(syncs) {}
  Status Append(std::string_view data) override {
    ++*appends_;
    return base_->Append(data);
  }
  Status Sync() override {
    ++*syncs_;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    return base_->Sync();
  }
  Status Close() override { return base_->Close(); }
  int64_t size() const override { return base_->size(); }

 private:
  std::unique_ptr<AppendableObject> base_;
  std::atomic<int64_t>* appends_;
  std::atomic<int64_t>* syncs_;
};

// Forwards to another store and counts appends and syncs of the objects it creates.
class CountingStore final : public strata::testing::ForwardingObjectStore {
 public:
  using ForwardingObjectStore::ForwardingObjectStore;

  std::atomic<int64_t> appends{0};
  std::atomic<int64_t> syncs{0};

  Result<std::unique_ptr<AppendableObject>> CreateAppendable(std::string_view key) override {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<AppendableObject> object, base().CreateAppendable(key));
    return std::unique_ptr<AppendableObject>(
        std::make_unique<CountingAppendable>(std::move(object), &appends, &syncs));
  }
};

inline constexpr std::string_view kPrefix = "db/";

using SegmentId = std::pair<uint64_t, uint64_t>;  // (epoch, segment)

inline std::string PositionText(const pb::WalPosition& p) {
  return "(" + std::to_string(p.epoch()) + "," + std::to_string(p.segment()) + "," +
         std::to_string(p.offset()) + ")";
}

inline bool SamePosition(const pb::WalPosition& a, const pb::WalPosition& b) {
  return CompareWalPositions(a, b) == 0;
}

struct Replayed {
  WalRecordKind kind;
  pb::WalPosition end;
  std::string payload;
};

class WalTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "memory") {
      base_ = NewMemoryObjectStore();
    } else {
      ASSERT_OK_AND_ASSIGN(base_, OpenLocalObjectStore((temp_ / "store").string()));
    }
    store_ = std::make_shared<CountingStore>(base_);
  }

  std::unique_ptr<WalWriter> OpenWriter(uint64_t epoch, uint64_t first_segment,
                                        WalWriterOptions options = {}) {
    Result<std::unique_ptr<WalWriter>> writer =
        WalWriter::Open(store_, std::string(kPrefix), shard_, epoch, first_segment, options);
    EXPECT_TRUE(writer.ok()) << writer.status();
    return writer.ok() ? std::move(*writer) : nullptr;
  }

  // Replays everything after `after` up to `max_epoch`, failing the test on an error.
  std::vector<Replayed> ReplayAll(const pb::WalPosition& after, uint64_t max_epoch,
                                  ReplayStats* stats_out = nullptr) {
    std::vector<Replayed> out;
    Result<ReplayStats> stats =
        ReplayWal(*store_, kPrefix, shard_, after, max_epoch, [&](const WalRecord& record) {
          out.push_back({record.kind, record.end, std::string(record.payload)});
          return Status::OK();
        });
    EXPECT_TRUE(stats.ok()) << stats.status();
    if (stats.ok() && stats_out != nullptr) *stats_out = *stats;
    return out;
  }

  std::vector<SegmentId> SegmentIds() {
    std::vector<SegmentId> ids;
    Result<std::vector<WalSegment>> segments = ListWalSegments(*store_, kPrefix, shard_);
    EXPECT_TRUE(segments.ok()) << segments.status();
    if (segments.ok()) {
      for (const WalSegment& s : *segments) ids.emplace_back(s.epoch, s.segment);
    }
    return ids;
  }

  strata::testing::TempDir temp_{"wal"};
  std::shared_ptr<ObjectStore> base_;
  std::shared_ptr<CountingStore> store_;
  Uuid shard_ = DeriveShardId("wal-test");
};

// Over a FaultInjectionFileSystem (on the in-memory or the real file system), to inject
// write and sync errors.
class WalFaultTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::shared_ptr<io::FileSystem> base = io::PosixFileSystem();
    std::string root = (temp_ / "store").string();
    if (GetParam() == "memory_fs") {
      base = std::make_shared<io::MemoryFileSystem>();
      root = "/store";
    }
    fault_ = std::make_shared<io::FaultInjectionFileSystem>(base);
    ASSERT_OK_AND_ASSIGN(store_, io::NewFileObjectStore(fault_, root));
  }

  std::vector<std::string> ReplayPayloads() {
    std::vector<std::string> out;
    Result<ReplayStats> stats =
        ReplayWal(*store_, kPrefix, shard_, MakeWalPosition(0, 0, 0), 9, [&](const WalRecord& r) {
          out.emplace_back(r.payload);
          return Status::OK();
        });
    EXPECT_TRUE(stats.ok()) << stats.status();
    return out;
  }

  strata::testing::TempDir temp_{"wal-fault"};
  std::shared_ptr<io::FaultInjectionFileSystem> fault_;
  std::shared_ptr<ObjectStore> store_;
  Uuid shard_ = DeriveShardId("wal-fault");
};

}  // namespace strata::lsm::testing
