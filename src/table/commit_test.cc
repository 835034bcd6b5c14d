// Version discovery and the commit protocol: create, load, latest-version discovery with and
// without the hint, rebasing on concurrent commits, giving up, ambiguous put failures and a
// many-thread commit race.
#include "table/commit.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "io/fault_injection_file_system.h"
#include "io/file_object_store.h"
#include "io/memory_file_system.h"
#include "support/forwarding_object_store.h"
#include "support/temp_dir.h"

namespace strata::table::internal {
namespace {

const std::string kPrefix = "tables/t1/";

// The smallest manifest MakeSnapshot accepts: one int64 column (field id 0), no fragments.
pb::Manifest MinimalManifest() {
  pb::Manifest m;
  pb::Field* f = m.mutable_schema()->add_fields();
  f->set_id(0);
  f->set_name("x");
  f->set_type("int64");
  f->set_nullable(true);
  m.set_next_field_id(1);
  return m;
}

// The base manifest plus one fragment of one row (id next_fragment_id); the transaction says
// it was added. `detail` lands in the manifest's transaction via CommitRequest, so it is
// unused here.
Result<pb::Manifest> AppendOneFragment(const Snapshot& base) {
  pb::Manifest m = base.manifest;
  m.clear_transaction();
  const uint32_t id = m.next_fragment_id();
  pb::Fragment* fragment = m.add_fragments();
  fragment->set_id(id);
  fragment->set_physical_rows(1);
  m.set_next_fragment_id(id + 1);
  m.mutable_transaction()->add_added_fragments(id);
  return m;
}

CommitRequest AppendRequest(std::string detail = {}, int max_retries = 20) {
  CommitRequest request;
  request.operation = "append";
  request.detail = std::move(detail);
  request.max_retries = max_retries;
  request.build = [](const Snapshot& base, const std::vector<pb::Transaction>&) {
    return AppendOneFragment(base);
  };
  return request;
}

// An ObjectStore that forwards to another and counts List calls; optional hooks run after
// PutIfAbsent (to simulate what a concurrent process does at exactly that moment).
class ObservedStore final : public strata::testing::ForwardingObjectStore {
 public:
  using ForwardingObjectStore::ForwardingObjectStore;

  std::function<Status(std::string_view key, Status result)> after_put_if_absent;
  std::atomic<int> list_calls{0};

  Status PutIfAbsent(std::string_view key, std::string_view data) override {
    Status s = ForwardingObjectStore::PutIfAbsent(key, data);
    return after_put_if_absent ? after_put_if_absent(key, s) : s;
  }
  Result<std::vector<ObjectMeta>> List(std::string_view prefix) override {
    ++list_calls;
    return ForwardingObjectStore::List(prefix);
  }
};

// Creates the table and makes `versions` versions in total (1 = just created).
SnapshotPtr MakeTable(ObjectStore& store, uint64_t versions) {
  Result<SnapshotPtr> created = CommitCreate(store, kPrefix, MinimalManifest());
  EXPECT_TRUE(created.ok()) << created.status();
  SnapshotPtr latest = *created;
  while (latest->version() < versions) {
    Result<CommitOutcome> outcome = CommitWithRetry(store, kPrefix, latest, AppendRequest());
    EXPECT_TRUE(outcome.ok()) << outcome.status();
    latest = outcome->snapshot;
  }
  return latest;
}

std::string ReadHintText(ObjectStore& store) {
  Result<Buffer> hint = store.Get(kPrefix + std::string(kLatestHintKey));
  return hint.ok() ? std::string(hint->view()) : "<" + hint.status().ToString() + ">";
}

// --- Both stores ----------------------------------------------------------------------------

class CommitStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "memory") {
      store_ = NewMemoryObjectStore();
    } else {
      Result<std::shared_ptr<ObjectStore>> local = OpenLocalObjectStore(temp_.str());
      ASSERT_TRUE(local.ok()) << local.status();
      store_ = *local;
    }
  }
  strata::testing::TempDir temp_{"commit"};
  std::shared_ptr<ObjectStore> store_;
};

TEST_P(CommitStoreTest, CreateWritesVersionOneThenAlreadyExists) {
  Result<SnapshotPtr> created = CommitCreate(*store_, kPrefix, MinimalManifest());
  ASSERT_TRUE(created.ok()) << created.status();
  const pb::Manifest& m = (*created)->manifest;
  EXPECT_EQ(m.version(), 1u);
  EXPECT_EQ(m.transaction().operation(), "create");
  EXPECT_EQ(m.transaction().read_version(), 0u);
  EXPECT_FALSE(m.transaction().uuid().empty());
  EXPECT_FALSE(m.table_uuid().empty());
  EXPECT_GT(m.timestamp_micros(), 0);
  EXPECT_EQ(ReadHintText(*store_), "1");

  Result<SnapshotPtr> again = CommitCreate(*store_, kPrefix, MinimalManifest());
  ASSERT_TRUE(again.status().IsAlreadyExists()) << again.status();
  EXPECT_NE(again.status().message().find("a table already exists at"), std::string::npos)
      << again.status();
  EXPECT_NE(again.status().message().find(kPrefix), std::string::npos) << again.status();
  Result<SnapshotPtr> loaded = LoadVersion(*store_, kPrefix, 1);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->manifest.table_uuid(), m.table_uuid());
}

TEST_P(CommitStoreTest, LoadMissingVersionIsNotFoundNamingVersionAndPrefix) {
  Result<SnapshotPtr> missing = LoadVersion(*store_, kPrefix, 3);
  ASSERT_TRUE(missing.status().IsNotFound()) << missing.status();
  EXPECT_NE(missing.status().message().find("version 3"), std::string::npos) << missing.status();
  EXPECT_NE(missing.status().message().find(kPrefix), std::string::npos) << missing.status();
  MakeTable(*store_, 1);
  EXPECT_TRUE(LoadVersion(*store_, kPrefix, 1).ok());
  EXPECT_TRUE(LoadVersion(*store_, kPrefix, 2).status().IsNotFound());
}

TEST_P(CommitStoreTest, CommitFillsVersionTransactionAndHint) {
  SnapshotPtr v1 = MakeTable(*store_, 1);
  Result<CommitOutcome> outcome = CommitWithRetry(*store_, kPrefix, v1, AppendRequest("one row"));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->attempts, 1);
  const pb::Manifest& m = outcome->snapshot->manifest;
  EXPECT_EQ(m.version(), 2u);
  EXPECT_EQ(m.transaction().read_version(), 1u);
  EXPECT_EQ(m.transaction().operation(), "append");
  EXPECT_EQ(m.transaction().detail(), "one row");
  EXPECT_EQ(m.transaction().added_fragments_size(), 1);  // the builder's list is kept
  EXPECT_NE(m.transaction().uuid(), v1->manifest.transaction().uuid());
  EXPECT_GE(m.timestamp_micros(), v1->manifest.timestamp_micros());
  EXPECT_EQ(ReadHintText(*store_), "2");
  Result<SnapshotPtr> loaded = LoadVersion(*store_, kPrefix, 2);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->manifest.SerializeAsString(), m.SerializeAsString());
}

TEST_P(CommitStoreTest, LoadTransactionReadsOnlyTheTransactionOfAVersion) {
  SnapshotPtr v1 = MakeTable(*store_, 1);
  Result<CommitOutcome> outcome = CommitWithRetry(*store_, kPrefix, v1, AppendRequest("row"));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  Result<pb::Transaction> txn = LoadTransaction(*store_, kPrefix, 2);
  ASSERT_TRUE(txn.ok()) << txn.status();
  EXPECT_EQ(txn->SerializeAsString(),
            outcome->snapshot->manifest.transaction().SerializeAsString());
  EXPECT_EQ(txn->version(), 2u);
  EXPECT_TRUE(LoadTransaction(*store_, kPrefix, 3).status().IsNotFound());
  // The envelope is still verified.
  Result<Buffer> bytes = store_->Get(kPrefix + ManifestKey(2));
  ASSERT_TRUE(bytes.ok());
  std::string damaged(bytes->view());
  damaged[damaged.size() / 2] ^= 0x01;
  ASSERT_TRUE(store_->Put(kPrefix + ManifestKey(7), damaged).ok());
  EXPECT_TRUE(LoadTransaction(*store_, kPrefix, 7).status().IsCorruption());
  ASSERT_TRUE(store_->Put(kPrefix + ManifestKey(8), std::string(bytes->view())).ok());
  EXPECT_TRUE(LoadTransaction(*store_, kPrefix, 8).status().IsCorruption());  // records 2
}

TEST_P(CommitStoreTest, LatestVersionWithoutHintListsVersions) {
  MakeTable(*store_, 5);
  ASSERT_TRUE(store_->Delete(kPrefix + std::string(kLatestHintKey)).ok());
  Result<uint64_t> latest = FindLatestVersion(*store_, kPrefix);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(*latest, 5u);
  Result<std::vector<uint64_t>> versions = ListVersionNumbers(*store_, kPrefix);
  ASSERT_TRUE(versions.ok()) << versions.status();
  EXPECT_EQ(*versions, (std::vector<uint64_t>{1, 2, 3, 4, 5}));
}

TEST_P(CommitStoreTest, NoTableIsNotFound) {
  Result<uint64_t> latest = FindLatestVersion(*store_, kPrefix);
  ASSERT_TRUE(latest.status().IsNotFound()) << latest.status();
  EXPECT_NE(latest.status().message().find("no table at"), std::string::npos) << latest.status();
  EXPECT_NE(latest.status().message().find(kPrefix), std::string::npos) << latest.status();
}

INSTANTIATE_TEST_SUITE_P(Stores, CommitStoreTest, ::testing::Values("memory", "local"));

// --- Latest-version discovery -------------------------------------------------------------

class LatestVersionTest : public ::testing::Test {
 protected:
  void SetHint(std::string_view text) {
    ASSERT_TRUE(store_->Put(kPrefix + std::string(kLatestHintKey), text).ok());
  }
  std::shared_ptr<ObservedStore> store_ = std::make_shared<ObservedStore>(NewMemoryObjectStore());
};

TEST_F(LatestVersionTest, CurrentHintIsUsedWithoutListing) {
  MakeTable(*store_, 6);
  EXPECT_EQ(ReadHintText(*store_), "6");
  store_->list_calls = 0;
  Result<uint64_t> latest = FindLatestVersion(*store_, kPrefix);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(*latest, 6u);
  EXPECT_EQ(store_->list_calls, 0);
}

TEST_F(LatestVersionTest, StaleHintIsProbedForwardWithoutListing) {
  MakeTable(*store_, 10);
  SetHint("3");
  store_->list_calls = 0;
  Result<uint64_t> latest = FindLatestVersion(*store_, kPrefix);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(*latest, 10u);
  EXPECT_EQ(store_->list_calls, 0);
}

TEST_F(LatestVersionTest, KnownVersionBeyondHintIsTheStartingPoint) {
  MakeTable(*store_, 70);
  SetHint("1");
  store_->list_calls = 0;
  Result<uint64_t> latest = FindLatestVersion(*store_, kPrefix, /*known=*/60);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(*latest, 70u);
  EXPECT_EQ(store_->list_calls, 0);
}

TEST_F(LatestVersionTest, HintFarBehindFallsBackToListing) {
  MakeTable(*store_, 70);
  SetHint("2");  // 68 versions behind: more than the probe budget
  store_->list_calls = 0;
  Result<uint64_t> latest = FindLatestVersion(*store_, kPrefix);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(*latest, 70u);
  EXPECT_EQ(store_->list_calls, 1);
}

TEST_F(LatestVersionTest, HintWithinProbeBudgetNeedsNoListing) {
  MakeTable(*store_, 70);
  SetHint("7");  // exactly 63 versions behind
  store_->list_calls = 0;
  Result<uint64_t> latest = FindLatestVersion(*store_, kPrefix);
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(*latest, 70u);
  EXPECT_EQ(store_->list_calls, 0);
}

TEST_F(LatestVersionTest, UnusableHintFallsBackToListing) {
  MakeTable(*store_, 4);
  for (std::string_view hint : {"", "abc", "12x", "-3", "99999999999999999999999", "100"}) {
    SetHint(hint);
    store_->list_calls = 0;
    Result<uint64_t> latest = FindLatestVersion(*store_, kPrefix);
    ASSERT_TRUE(latest.ok()) << "hint '" << hint << "': " << latest.status();
    EXPECT_EQ(*latest, 4u) << "hint '" << hint << "'";
    EXPECT_EQ(store_->list_calls, 1) << "hint '" << hint << "'";
  }
}

TEST_F(LatestVersionTest, ListingIgnoresOtherKeysAndOtherTables) {
  MakeTable(*store_, 3);
  ASSERT_TRUE(store_->Put(kPrefix + "_versions/notes.txt", "x").ok());
  ASSERT_TRUE(store_->Put(kPrefix + "_versions/00000000000000000009.manifest.tmp", "x").ok());
  ASSERT_TRUE(store_->Put("tables/t10/_versions/00000000000000000099.manifest", "x").ok());
  Result<std::vector<uint64_t>> versions = ListVersionNumbers(*store_, kPrefix);
  ASSERT_TRUE(versions.ok()) << versions.status();
  EXPECT_EQ(*versions, (std::vector<uint64_t>{1, 2, 3}));
}

TEST_F(LatestVersionTest, ManifestRecordingAnotherVersionIsCorruption) {
  pb::Manifest m = MinimalManifest();
  m.set_version(5);
  ASSERT_TRUE(store_->PutIfAbsent(kPrefix + ManifestKey(4), EncodeManifest(m)).ok());
  Status s = LoadVersion(*store_, kPrefix, 4).status();
  ASSERT_TRUE(s.IsCorruption()) << s;
}

TEST_F(LatestVersionTest, DamagedManifestIsCorruption) {
  MakeTable(*store_, 1);
  Result<Buffer> bytes = store_->Get(kPrefix + ManifestKey(1));
  ASSERT_TRUE(bytes.ok());
  std::string damaged(bytes->view());
  damaged[damaged.size() / 2] ^= 0x10;
  ASSERT_TRUE(store_->Put(kPrefix + ManifestKey(1), damaged).ok());
  Status s = LoadVersion(*store_, kPrefix, 1).status();
  ASSERT_TRUE(s.IsCorruption()) << s;
}

// --- Rebase and retry -------------------------------------------------------------------------

TEST(CommitRetryTest, CommitThatSneaksInIsSeenByTheRebasedBuilder) {
  auto store = NewMemoryObjectStore();
  SnapshotPtr v1 = MakeTable(*store, 1);
  std::vector<uint64_t> bases;
  std::vector<std::vector<pb::Transaction>> seen;
  CommitRequest request;
  request.operation = "append";
  request.build = [&](const Snapshot& base, const std::vector<pb::Transaction>& intervening) {
    bases.push_back(base.version());
    seen.push_back(intervening);
    if (bases.size() == 1) {  // a concurrent writer takes versions 2 and 3 meanwhile
      Result<CommitOutcome> other = CommitWithRetry(*store, kPrefix, v1, AppendRequest("other"));
      EXPECT_TRUE(other.ok()) << other.status();
      other = CommitWithRetry(*store, kPrefix, other->snapshot, AppendRequest("third"));
      EXPECT_TRUE(other.ok()) << other.status();
    }
    return AppendOneFragment(base);
  };
  Result<CommitOutcome> outcome = CommitWithRetry(*store, kPrefix, v1, request);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->attempts, 2);
  EXPECT_EQ(outcome->snapshot->version(), 4u);
  EXPECT_EQ(outcome->snapshot->manifest.transaction().read_version(), 1u);
  EXPECT_EQ(outcome->snapshot->manifest.fragments_size(), 3);
  EXPECT_EQ(bases, (std::vector<uint64_t>{1, 3}));
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_TRUE(seen[0].empty());
  ASSERT_EQ(seen[1].size(), 2u);
  EXPECT_EQ(seen[1][0].detail(), "other");
  EXPECT_EQ(seen[1][1].detail(), "third");
  EXPECT_EQ(seen[1][0].added_fragments(0), 0u);
}

TEST(CommitRetryTest, IntervenersAccumulateFromTheOriginalReadVersion) {
  auto store = NewMemoryObjectStore();
  SnapshotPtr v1 = MakeTable(*store, 1);
  std::vector<size_t> intervening_sizes;
  CommitRequest request;
  request.operation = "delete";
  request.build = [&](const Snapshot& base, const std::vector<pb::Transaction>& intervening) {
    intervening_sizes.push_back(intervening.size());
    if (intervening_sizes.size() <= 2) {  // lose twice
      Result<SnapshotPtr> latest = LoadVersion(*store, kPrefix, base.version());
      EXPECT_TRUE(latest.ok());
      EXPECT_TRUE(CommitWithRetry(*store, kPrefix, *latest, AppendRequest()).ok());
    }
    return AppendOneFragment(base);
  };
  Result<CommitOutcome> outcome = CommitWithRetry(*store, kPrefix, v1, request);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->attempts, 3);
  EXPECT_EQ(outcome->snapshot->version(), 4u);
  EXPECT_EQ(intervening_sizes, (std::vector<size_t>{0, 1, 2}));
}

TEST(CommitRetryTest, BuilderErrorsEndTheCommitWithoutWriting) {
  auto store = NewMemoryObjectStore();
  SnapshotPtr v1 = MakeTable(*store, 1);
  for (const Status& error : {Status::Busy("fragment 3 was rewritten"),
                              Status::InvalidArgument("bad column"), Status::IOError("disk")}) {
    int calls = 0;
    CommitRequest request;
    request.operation = "delete";
    request.build = [&](const Snapshot&, const std::vector<pb::Transaction>&) {
      ++calls;
      return Result<pb::Manifest>(error);
    };
    Result<CommitOutcome> outcome = CommitWithRetry(*store, kPrefix, v1, request);
    EXPECT_EQ(outcome.status(), error);
    EXPECT_EQ(calls, 1);
  }
  Result<std::vector<uint64_t>> versions = ListVersionNumbers(*store, kPrefix);
  ASSERT_TRUE(versions.ok());
  EXPECT_EQ(*versions, std::vector<uint64_t>{1});
}

TEST(CommitRetryTest, InvalidBuiltManifestIsInternalAndNotWritten) {
  auto store = NewMemoryObjectStore();
  SnapshotPtr v1 = MakeTable(*store, 1);
  CommitRequest request;
  request.operation = "append";
  request.build = [](const Snapshot& base, const std::vector<pb::Transaction>&) {
    pb::Manifest m = base.manifest;
    m.add_fragments()->set_id(0);
    m.add_fragments()->set_id(0);
    m.set_next_fragment_id(1);
    return Result<pb::Manifest>(std::move(m));
  };
  Status s = CommitWithRetry(*store, kPrefix, v1, request).status();
  ASSERT_EQ(s.code(), StatusCode::kInternal) << s;
  EXPECT_TRUE(LoadVersion(*store, kPrefix, 2).status().IsNotFound());
}

TEST(CommitRetryTest, GivesUpWithBusyAfterMaxRetries) {
  auto store = NewMemoryObjectStore();
  SnapshotPtr v1 = MakeTable(*store, 1);
  int calls = 0;
  CommitRequest request;
  request.operation = "compact";
  request.max_retries = 3;
  request.build = [&](const Snapshot& base, const std::vector<pb::Transaction>&) {
    ++calls;  // every attempt loses: someone else commits right before our put
    Result<SnapshotPtr> latest = LoadVersion(*store, kPrefix, base.version());
    EXPECT_TRUE(latest.ok());
    EXPECT_TRUE(CommitWithRetry(*store, kPrefix, *latest, AppendRequest()).ok());
    return AppendOneFragment(base);
  };
  Status s = CommitWithRetry(*store, kPrefix, v1, request).status();
  ASSERT_TRUE(s.IsBusy()) << s;
  EXPECT_EQ(calls, 4);
  EXPECT_NE(s.message().find("commit conflict on compact"), std::string::npos) << s;
  EXPECT_NE(s.message().find("gave up after 3 retries"), std::string::npos) << s;
  EXPECT_NE(s.message().find("version 5 was taken"), std::string::npos) << s;
}

TEST(CommitRetryTest, InterveningVersionCleanedUpMeanwhileIsBusy) {
  auto store = std::make_shared<ObservedStore>(NewMemoryObjectStore());
  SnapshotPtr v1 = MakeTable(*store, 4);
  v1 = *LoadVersion(*store, kPrefix, 1);
  // A cleanup removes version 2 right after our put of it lost.
  store->after_put_if_absent = [&](std::string_view key, Status result) {
    if (result.IsAlreadyExists() && key == kPrefix + ManifestKey(2)) {
      EXPECT_TRUE(store->Delete(key).ok());
    }
    return result;
  };
  Status s = CommitWithRetry(*store, kPrefix, v1, AppendRequest()).status();
  ASSERT_TRUE(s.IsBusy()) << s;
  EXPECT_NE(s.message().find("version 2"), std::string::npos) << s;
}

// --- Ambiguous put failures -----------------------------------------------------------------

TEST(CommitAmbiguityTest, ErrorAfterTheManifestWasCreatedIsASuccessfulCommit) {
  auto store = std::make_shared<ObservedStore>(NewMemoryObjectStore());
  SnapshotPtr v1 = MakeTable(*store, 1);
  store->after_put_if_absent = [](std::string_view, Status result) {
    return result.ok() ? Status::IOError("connection reset after upload") : result;
  };
  Result<CommitOutcome> outcome = CommitWithRetry(*store, kPrefix, v1, AppendRequest("x"));
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->snapshot->version(), 2u);
  Result<SnapshotPtr> loaded = LoadVersion(*store, kPrefix, 2);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ((*loaded)->manifest.transaction().uuid(),
            outcome->snapshot->manifest.transaction().uuid());
}

TEST(CommitAmbiguityTest, ErrorWhenSomeoneElsesManifestIsThereIsReturned) {
  auto store = std::make_shared<ObservedStore>(NewMemoryObjectStore());
  SnapshotPtr v1 = MakeTable(*store, 2);
  v1 = *LoadVersion(*store, kPrefix, 1);
  store->after_put_if_absent = [](std::string_view, Status) {
    return Status::IOError("timeout");  // version 2 exists but is not ours
  };
  Status s = CommitWithRetry(*store, kPrefix, v1, AppendRequest()).status();
  EXPECT_TRUE(s.IsIOError()) << s;
}

TEST(CommitAmbiguityTest, DirectorySyncFailureAfterLinkStillCommits) {
  auto faulty =
      std::make_shared<io::FaultInjectionFileSystem>(std::make_shared<io::MemoryFileSystem>());
  Result<std::shared_ptr<ObjectStore>> store = io::NewFileObjectStore(faulty, "/db");
  ASSERT_TRUE(store.ok()) << store.status();
  SnapshotPtr v1 = MakeTable(**store, 1);
  // PutIfAbsent syncs the temporary file (1), links it, then syncs the directory (2).
  faulty->FailNth(io::FaultOp::kSync, 2);
  Result<CommitOutcome> outcome = CommitWithRetry(**store, kPrefix, v1, AppendRequest());
  EXPECT_EQ(faulty->injected_faults(), 1);
  ASSERT_TRUE(outcome.ok()) << outcome.status();
  EXPECT_EQ(outcome->snapshot->version(), 2u);
}

TEST(CommitAmbiguityTest, LinkFailureIsReturnedAndNothingIsCommitted) {
  auto faulty =
      std::make_shared<io::FaultInjectionFileSystem>(std::make_shared<io::MemoryFileSystem>());
  Result<std::shared_ptr<ObjectStore>> store = io::NewFileObjectStore(faulty, "/db");
  ASSERT_TRUE(store.ok()) << store.status();
  SnapshotPtr v1 = MakeTable(**store, 1);
  faulty->FailNth(io::FaultOp::kLink, 1);
  Status s = CommitWithRetry(**store, kPrefix, v1, AppendRequest()).status();
  ASSERT_TRUE(s.IsIOError()) << s;
  EXPECT_TRUE(LoadVersion(**store, kPrefix, 2).status().IsNotFound());
}

// --- Many writers ---------------------------------------------------------------------------

TEST(CommitRaceTest, ConcurrentCommitsGetContiguousVersionsAndEveryTransactionOnce) {
  auto store = NewMemoryObjectStore();
  MakeTable(*store, 1);
  const int kThreads = 8;
  // Manifests grow by a fragment per commit, so stress runs scale this only a little.
  const int kCommitsPerThread = 50 * std::min(strata::testing::StressScale(), 4);
  std::atomic<int> failures{0};
  std::atomic<int> retries{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCommitsPerThread; ++i) {
        Result<uint64_t> latest = FindLatestVersion(*store, kPrefix);
        if (!latest.ok()) {
          ADD_FAILURE() << latest.status();
          ++failures;
          return;
        }
        Result<SnapshotPtr> read = LoadVersion(*store, kPrefix, *latest);
        if (!read.ok()) {
          ADD_FAILURE() << read.status();
          ++failures;
          return;
        }
        Result<CommitOutcome> outcome = CommitWithRetry(
            *store, kPrefix, *read, AppendRequest(fmt::format("t{}-{}", t, i), /*max_retries=*/20));
        if (!outcome.ok()) {
          ADD_FAILURE() << outcome.status();
          ++failures;
          return;
        }
        retries += outcome->attempts - 1;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_EQ(failures, 0);
  RecordProperty("retries", retries.load());

  const uint64_t total = 1 + uint64_t{kThreads} * kCommitsPerThread;
  Result<std::vector<uint64_t>> versions = ListVersionNumbers(*store, kPrefix);
  ASSERT_TRUE(versions.ok());
  ASSERT_EQ(versions->size(), total);
  for (uint64_t i = 0; i < total; ++i) ASSERT_EQ((*versions)[i], i + 1);
  Result<uint64_t> latest = FindLatestVersion(*store, kPrefix);
  ASSERT_TRUE(latest.ok());
  EXPECT_EQ(*latest, total);

  std::map<std::string, int> details;
  for (uint64_t v = 2; v <= total; ++v) {
    Result<SnapshotPtr> snapshot = LoadVersion(*store, kPrefix, v);
    ASSERT_TRUE(snapshot.ok()) << snapshot.status();
    // Each commit added exactly one fragment on top of its predecessor's.
    ASSERT_EQ((*snapshot)->manifest.fragments_size(), static_cast<int>(v - 1)) << v;
    ++details[(*snapshot)->manifest.transaction().detail()];
  }
  EXPECT_EQ(details.size(), static_cast<size_t>(kThreads * kCommitsPerThread));
  for (const auto& [detail, count] : details) EXPECT_EQ(count, 1) << detail;
  Result<SnapshotPtr> last = LoadVersion(*store, kPrefix, total);
  ASSERT_TRUE(last.ok());
  std::set<uint32_t> ids;
  for (const pb::Fragment& f : (*last)->manifest.fragments()) ids.insert(f.id());
  EXPECT_EQ(ids.size(), total - 1);
}

// --- FindConflict -------------------------------------------------------------------------------

pb::Transaction Txn(std::string operation, uint64_t read_version, std::vector<uint32_t> removed,
                    std::vector<uint32_t> modified) {
  pb::Transaction txn;
  txn.set_operation(std::move(operation));
  txn.set_read_version(read_version);
  txn.set_version(read_version + 1);
  for (uint32_t id : removed) txn.add_removed_fragments(id);
  for (uint32_t id : modified) txn.add_modified_fragments(id);
  return txn;
}

TEST(FindConflictTest, NothingInterveningOrDisjointIsNoConflict) {
  EXPECT_FALSE(FindConflict({}, {1, 2}, true).has_value());
  std::vector<pb::Transaction> intervening = {Txn("compact", 8, {3, 4}, {}),
                                              Txn("delete", 9, {}, {5})};
  EXPECT_FALSE(FindConflict(intervening, {1, 2, 6}, true).has_value());
  EXPECT_FALSE(FindConflict(intervening, {}, true).has_value());
}

TEST(FindConflictTest, RemovedFragmentConflicts) {
  std::vector<pb::Transaction> intervening = {Txn("append", 8, {}, {}),
                                              Txn("compact", 8, {3, 12}, {})};
  std::optional<std::string> conflict = FindConflict(intervening, {12}, false);
  ASSERT_TRUE(conflict.has_value());
  EXPECT_NE(conflict->find("fragment 12 was rewritten by a concurrent compact"), std::string::npos)
      << *conflict;
  EXPECT_NE(conflict->find("(version 9)"), std::string::npos) << *conflict;
}

TEST(FindConflictTest, ModifiedFragmentConflictsOnlyWhenAsked) {
  std::vector<pb::Transaction> intervening = {Txn("delete", 9, {}, {12})};
  EXPECT_FALSE(FindConflict(intervening, {12}, false).has_value());
  std::optional<std::string> conflict = FindConflict(intervening, {12}, true);
  ASSERT_TRUE(conflict.has_value());
  EXPECT_NE(conflict->find("fragment 12 was changed by a concurrent delete"), std::string::npos)
      << *conflict;
}

TEST(FindConflictTest, TheFirstConflictingTransactionIsReported) {
  std::vector<pb::Transaction> intervening = {Txn("delete", 5, {}, {7}),
                                              Txn("compact", 6, {7}, {})};
  std::optional<std::string> conflict = FindConflict(intervening, {7}, true);
  ASSERT_TRUE(conflict.has_value());
  EXPECT_NE(conflict->find("delete"), std::string::npos) << *conflict;
  conflict = FindConflict(intervening, {7}, false);
  ASSERT_TRUE(conflict.has_value());
  EXPECT_NE(conflict->find("compact"), std::string::npos) << *conflict;
}

TEST(FindConflictTest, FragmentRemovedByOtherOperationsSaysRemoved) {
  std::optional<std::string> conflict = FindConflict({Txn("repair", 2, {4}, {})}, {4}, false);
  ASSERT_TRUE(conflict.has_value());
  EXPECT_NE(conflict->find("fragment 4 was removed by a concurrent repair"), std::string::npos)
      << *conflict;
}

}  // namespace
}  // namespace strata::table::internal
