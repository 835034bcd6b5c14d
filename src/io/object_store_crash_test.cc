// FileObjectStore under simulated power loss and injected I/O errors: acknowledged puts
// survive, unsynced ones vanish whole, failures surface as IOError and never leave a
// partial object. Run over MemoryFileSystem and FaultInjectionFileSystem (posix, memory).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "io/fault_injection_file_system.h"
#include "io/file_object_store.h"
#include "io/memory_file_system.h"
#include "support/temp_dir.h"

namespace strata::io {
namespace {

using ::testing::HasSubstr;

std::string Payload(int i, int version) {
  std::string out = "key " + std::to_string(i) + " version " + std::to_string(version) + ":";
  out.resize(100 + static_cast<size_t>(i) * 37 % 5000, static_cast<char>('a' + version % 26));
  return out;
}

class ObjectStoreCrashTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string& kind = GetParam();
    if (kind == "memory_fs") {
      auto memory = std::make_shared<MemoryFileSystem>();
      crash_ = [memory] {
        memory->SimulateCrash();
        return Status::OK();
      };
      fs_ = memory;
      root_ = "/store";
    } else {
      std::shared_ptr<FileSystem> base = PosixFileSystem();
      root_ = (temp_ / "store").string();
      if (kind == "fault_over_memory_fs") {
        base = std::make_shared<MemoryFileSystem>();
        root_ = "/store";
      }
      fault_ = std::make_shared<FaultInjectionFileSystem>(base);
      crash_ = [fault = fault_] { return fault->SimulateCrash(); };
      fs_ = fault_;
    }
    store_ = Open(/*sync=*/true);
  }

  std::shared_ptr<ObjectStore> Open(bool sync) {
    LocalObjectStoreOptions options;
    options.sync = sync;
    options.mmap_threshold = 1024;  // exercise both read paths
    Result<std::shared_ptr<ObjectStore>> store = NewFileObjectStore(fs_, root_, options);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *store : nullptr;
  }

  // Crashes and reopens the store, as a restarted process would.
  void CrashAndReopen() {
    store_.reset();
    ASSERT_TRUE(crash_().ok());
    store_ = Open(/*sync=*/true);
  }

  // "<missing>" for NotFound.
  std::string Contents(std::string_view key) {
    Result<Buffer> data = store_->Get(key);
    if (data.status().IsNotFound()) return "<missing>";
    EXPECT_TRUE(data.ok()) << data.status();
    return data.ok() ? std::string(data->view()) : "<error>";
  }

  // No temporary file is left anywhere under the root.
  void ExpectNoTempFiles() {
    Result<std::vector<FileEntry>> files = fs_->ListFiles(root_);
    ASSERT_TRUE(files.ok()) << files.status();
    for (const FileEntry& file : *files) {
      EXPECT_THAT(file.relative_path, ::testing::Not(HasSubstr(kTempFilePrefix)));
    }
  }

  strata::testing::TempDir temp_{"store-crash"};
  std::shared_ptr<FileSystem> fs_;
  std::shared_ptr<FaultInjectionFileSystem> fault_;
  std::function<Status()> crash_;
  std::string root_;
  std::shared_ptr<ObjectStore> store_;
};

TEST_P(ObjectStoreCrashTest, AcknowledgedPutsSurviveACrash) {
  std::map<std::string, std::string> acked;
  for (int i = 0; i < 60; ++i) {
    std::string key = "tables/t" + std::to_string(i % 3) + "/v/" + std::to_string(i);
    ASSERT_TRUE(store_->Put(key, Payload(i, 1)).ok());
    acked[key] = Payload(i, 1);
  }
  for (int i = 0; i < 60; i += 4) {  // overwrites
    std::string key = "tables/t" + std::to_string(i % 3) + "/v/" + std::to_string(i);
    ASSERT_TRUE(store_->Put(key, Payload(i, 2)).ok());
    acked[key] = Payload(i, 2);
  }
  for (int i = 0; i < 10; ++i) {
    std::string key = "manifests/" + std::to_string(i);
    ASSERT_TRUE(store_->PutIfAbsent(key, Payload(i, 3)).ok());
    acked[key] = Payload(i, 3);
  }
  ASSERT_TRUE(store_->Delete("tables/t0/v/0").ok());
  acked.erase("tables/t0/v/0");
  CrashAndReopen();
  for (const auto& [key, value] : acked) EXPECT_EQ(Contents(key), value) << key;
  EXPECT_EQ(Contents("tables/t0/v/0"), "<missing>");
  EXPECT_EQ(store_->List("")->size(), acked.size());
}

TEST_P(ObjectStoreCrashTest, PutsWithoutSyncAreLostWholeOnACrash) {
  for (int i = 0; i < 20; ++i)
    ASSERT_TRUE(store_->Put("k/" + std::to_string(i), Payload(i, 1)).ok());
  std::shared_ptr<ObjectStore> unsynced = Open(/*sync=*/false);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(unsynced->Put("k/" + std::to_string(i), Payload(i, 2)).ok());  // overwrite
    ASSERT_TRUE(unsynced->PutIfAbsent("fresh/" + std::to_string(i), Payload(i, 2)).ok());
  }
  EXPECT_EQ(Contents("k/3"), Payload(3, 2));  // visible before the crash
  unsynced.reset();
  CrashAndReopen();
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(Contents("k/" + std::to_string(i)), Payload(i, 1)) << i;
    EXPECT_EQ(Contents("fresh/" + std::to_string(i)), "<missing>") << i;
  }
  ExpectNoTempFiles();
}

TEST_P(ObjectStoreCrashTest, SyncedAppendsSurviveACrashUnsyncedOnesDoNot) {
  Result<std::unique_ptr<AppendableObject>> log = store_->CreateAppendable("wal/s/1.wal");
  ASSERT_TRUE(log.ok()) << log.status();
  // Created and never appended to: the name alone is durable on return.
  Result<std::unique_ptr<AppendableObject>> empty = store_->CreateAppendable("wal/s/2.wal");
  ASSERT_TRUE(empty.ok()) << empty.status();
  std::string synced;
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE((*log)->Append(Payload(i, 1)).ok());
    synced += Payload(i, 1);
    if (i % 3 == 2) {
      ASSERT_TRUE((*log)->Sync().ok());
    }
  }
  ASSERT_TRUE((*log)->Sync().ok());
  const std::string tail = Payload(11, 2);
  ASSERT_TRUE((*log)->Append(tail).ok());
  EXPECT_EQ(Contents("wal/s/1.wal"), synced + tail);
  log->reset();  // a crashed process's handles are gone
  empty->reset();
  CrashAndReopen();
  EXPECT_EQ(Contents("wal/s/1.wal"), synced);
  EXPECT_EQ(Contents("wal/s/2.wal"), "");
  // The name stays taken after the crash.
  EXPECT_TRUE(store_->CreateAppendable("wal/s/1.wal").status().IsAlreadyExists());
}

TEST_P(ObjectStoreCrashTest, AppendsOfAStoreWithoutSyncAreLostOnACrash) {
  std::shared_ptr<ObjectStore> unsynced = Open(/*sync=*/false);
  Result<std::unique_ptr<AppendableObject>> log = unsynced->CreateAppendable("nosync/1.wal");
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_TRUE((*log)->Append(Payload(1, 1)).ok());
  ASSERT_TRUE((*log)->Sync().ok());  // a no-op without sync
  EXPECT_EQ(Contents("nosync/1.wal"), Payload(1, 1));
  log->reset();
  unsynced.reset();
  CrashAndReopen();
  EXPECT_EQ(Contents("nosync/1.wal"), "<missing>");
}

// The same setup with a FaultInjectionFileSystem, to inject I/O errors.
class ObjectStoreFaultTest : public ObjectStoreCrashTest {};

TEST_P(ObjectStoreFaultTest, EveryInjectedFailureIsAnIOErrorAndNoObjectIsPartial) {
  int failures = 0;
  for (FaultOp op : {FaultOp::kWrite, FaultOp::kSync, FaultOp::kRename, FaultOp::kLink}) {
    for (int n = 1; n <= 5; ++n) {
      for (bool overwrite : {false, true}) {
        std::string key = "f/" + std::to_string(static_cast<int>(op)) + "/" + std::to_string(n) +
                          (overwrite ? "/over" : "/new");
        if (overwrite) {
          ASSERT_TRUE(store_->Put(key, "old").ok());
        }
        fault_->FailNth(op, n);
        const std::string payload = Payload(n, static_cast<int>(op));
        Status s = op == FaultOp::kLink ? store_->PutIfAbsent(key + "-pia", payload)
                                        : store_->Put(key, payload);
        fault_->ClearFaults();
        const std::string stored = Contents(op == FaultOp::kLink ? key + "-pia" : key);
        if (s.ok()) {
          EXPECT_EQ(stored, payload) << key;
          continue;
        }
        ++failures;
        EXPECT_TRUE(s.IsIOError()) << key << ": " << s;
        EXPECT_THAT(s.message(), HasSubstr("injected"));
        EXPECT_THAT(s.message(), HasSubstr(key));
        // Old or whole new, never anything else.
        const std::string before = op == FaultOp::kLink || !overwrite ? "<missing>" : "old";
        EXPECT_TRUE(stored == before || stored == payload) << key << ": " << stored;
      }
    }
  }
  // The first write, sync, rename and link of a Put all precede its rename/link.
  EXPECT_GE(failures, 8);
  ExpectNoTempFiles();
}

TEST_P(ObjectStoreFaultTest, FirstFailureOfEachKindLeavesTheKeyUntouched) {
  ASSERT_TRUE(store_->Put("k", "old").ok());
  for (FaultOp op : {FaultOp::kWrite, FaultOp::kSync, FaultOp::kRename}) {
    fault_->FailNth(op, 1);
    EXPECT_TRUE(store_->Put("k", "new").IsIOError());
    EXPECT_EQ(Contents("k"), "old");
    EXPECT_TRUE(store_->Put("fresh", "new").ok());  // disarmed after firing
    ASSERT_TRUE(store_->Delete("fresh").ok());
  }
  fault_->FailNth(FaultOp::kLink, 1);
  EXPECT_TRUE(store_->PutIfAbsent("created", "new").IsIOError());
  EXPECT_EQ(Contents("created"), "<missing>");
  ExpectNoTempFiles();
}

TEST_P(ObjectStoreFaultTest, FullDiskFailsPutsClearlyUntilSpaceReturns) {
  ASSERT_TRUE(store_->Put("k", "old").ok());
  fault_->SetNoSpace(true);
  Status s = store_->Put("k", "new");
  EXPECT_TRUE(IsNoSpace(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("no space left on device"));
  EXPECT_THAT(s.message(), HasSubstr("put 'k'"));
  EXPECT_TRUE(IsNoSpace(store_->PutIfAbsent("other", "x")));
  EXPECT_EQ(Contents("k"), "old");
  EXPECT_EQ(Contents("other"), "<missing>");
  fault_->SetNoSpace(false);
  EXPECT_TRUE(store_->Put("k", "new").ok());
  EXPECT_EQ(Contents("k"), "new");
  ExpectNoTempFiles();
}

TEST_P(ObjectStoreFaultTest, AcknowledgedPutsSurviveACrashAfterFailedOnes) {
  const unsigned long long seed = strata::testing::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 random(seed);
  std::map<std::string, std::string> acked;
  // Payloads of puts that failed since the key's last acknowledged put: a put may fail
  // after its rename (directory sync), so its payload may legitimately survive.
  std::map<std::string, std::vector<std::string>> failed;
  for (int i = 0; i < 80; ++i) {
    std::string key = "r/" + std::to_string(random() % 4) + "/" + std::to_string(random() % 20);
    std::string payload = Payload(i, static_cast<int>(random() % 26));
    if (random() % 3 == 0) fault_->FailNth(static_cast<FaultOp>(random() % 3), 1 + random() % 3);
    Status s = store_->Put(key, payload);
    fault_->ClearFaults();
    if (s.ok()) {
      acked[key] = payload;
      failed.erase(key);
    } else {
      ASSERT_TRUE(s.IsIOError()) << s;
      failed[key].push_back(payload);
    }
  }
  CrashAndReopen();
  std::set<std::string> keys;
  for (const auto& entry : acked) keys.insert(entry.first);
  for (const auto& entry : failed) keys.insert(entry.first);
  for (const std::string& key : keys) {
    std::string stored = Contents(key);
    std::vector<std::string> allowed = failed[key];
    allowed.push_back(acked.count(key) != 0 ? acked[key] : "<missing>");
    EXPECT_THAT(allowed, ::testing::Contains(stored)) << key;
  }
  ExpectNoTempFiles();
}

TEST_P(ObjectStoreFaultTest, AFailedAppendIsAnIOErrorAndEndsTheObject) {
  Result<std::unique_ptr<AppendableObject>> log = store_->CreateAppendable("f/1.wal");
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_TRUE((*log)->Append("good").ok());
  fault_->FailNth(FaultOp::kWrite, 1);
  Status failed = (*log)->Append("bad");
  EXPECT_TRUE(failed.IsIOError()) << failed;
  EXPECT_THAT(failed.message(), HasSubstr("injected"));
  EXPECT_THAT(failed.message(), HasSubstr("f/1.wal"));
  // Never appended to again, even once the fault is gone.
  EXPECT_FALSE((*log)->Append("after").ok());
  EXPECT_TRUE((*log)->Sync().ok());
  EXPECT_TRUE((*log)->Close().ok());
  EXPECT_EQ(Contents("f/1.wal"), "good");

  Result<std::unique_ptr<AppendableObject>> second = store_->CreateAppendable("f/2.wal");
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_TRUE((*second)->Append("x").ok());
  fault_->FailNth(FaultOp::kSync, 1);
  Status sync = (*second)->Sync();
  EXPECT_TRUE(sync.IsIOError()) << sync;
  EXPECT_THAT(sync.message(), HasSubstr("f/2.wal"));
}

TEST_P(ObjectStoreFaultTest, CreateAppendableWhoseDirectorySyncFailsLeavesNoObject) {
  fault_->FailNth(FaultOp::kSync, 1);
  Result<std::unique_ptr<AppendableObject>> log = store_->CreateAppendable("d/1.wal");
  EXPECT_TRUE(log.status().IsIOError()) << log.status();
  EXPECT_EQ(Contents("d/1.wal"), "<missing>");
  fault_->ClearFaults();
  log = store_->CreateAppendable("d/1.wal");
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_TRUE((*log)->Append("v").ok());
  ASSERT_TRUE((*log)->Sync().ok());
  log->reset();
  CrashAndReopen();
  EXPECT_EQ(Contents("d/1.wal"), "v");
}

INSTANTIATE_TEST_SUITE_P(CrashModels, ObjectStoreCrashTest,
                         ::testing::Values("memory_fs", "fault_over_posix", "fault_over_memory_fs"),
                         [](const auto& info) { return info.param; });
INSTANTIATE_TEST_SUITE_P(FaultInjectingFileSystems, ObjectStoreFaultTest,
                         ::testing::Values("fault_over_posix", "fault_over_memory_fs"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace strata::io
