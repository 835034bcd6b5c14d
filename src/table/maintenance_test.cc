// Table maintenance through the public API: cleanup of old versions and their files,
// verification of every referenced object, repair of fragments whose files are lost; and
// the FileCache shared by a table's readers.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "strata/builder.h"
#include "strata/object_store.h"
#include "strata/table.h"
#include "support/forwarding_object_store.h"
#include "support/status_assertions.h"
#include "support/temp_dir.h"
#include "table/commit.h"
#include "table/deletion_file.h"
#include "table/format.h"
#include "table/table_internal.h"
#include "util/clock.h"

namespace strata::table {
namespace {

using internal::kDataDir;
using internal::kDeletionsDir;
using internal::kIndicesDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

constexpr std::string_view kPrefix = "t/";

SchemaPtr TestSchema() {
  return schema(
      {field("id", int64(), /*nullable=*/false, KeyValueMetadata({{"strata:primary-key", "true"}})),
       field("name", utf8())});
}

// Rows with ids [first, first + n) and names "row<id>".
RecordBatch Rows(int64_t first, int64_t n) {
  Int64Builder ids(int64());
  BinaryBuilder names(utf8());
  for (int64_t i = first; i < first + n; ++i) {
    ids.Append(i);
    EXPECT_TRUE(names.Append("row" + std::to_string(i)).ok());
  }
  Result<RecordBatch> batch = RecordBatch::Make(TestSchema(), n, {*ids.Finish(), *names.Finish()});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

// Every live id the table returns, sorted.
std::vector<int64_t> ScanIds(const Table& table) {
  Result<std::unique_ptr<BatchIterator>> scan = table.Scan();
  EXPECT_TRUE(scan.ok()) << scan.status();
  if (!scan.ok()) return {};
  Result<std::vector<RecordBatch>> batches = (*scan)->ToBatches();
  EXPECT_TRUE(batches.ok()) << batches.status();
  if (!batches.ok()) return {};
  std::vector<int64_t> ids;
  for (const RecordBatch& batch : *batches) {
    for (int64_t i = 0; i < batch.num_rows(); ++i) ids.push_back(batch.column(0).Value<int64_t>(i));
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::vector<int64_t> Range(int64_t begin, int64_t end) {
  std::vector<int64_t> out;
  for (int64_t i = begin; i < end; ++i) out.push_back(i);
  return out;
}

std::vector<int64_t> Concat(std::vector<int64_t> a, const std::vector<int64_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  std::sort(a.begin(), a.end());
  return a;
}

class MaintenanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<std::shared_ptr<ObjectStore>> store =
        OpenLocalObjectStore(dir_.str(), LocalObjectStoreOptions{.sync = false});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *store;
    Result<std::shared_ptr<Table>> table =
        Table::Create(store_, std::string(kPrefix), TestSchema());
    ASSERT_TRUE(table.ok()) << table.status();
    table_ = *table;
  }

  void Append(int64_t first, int64_t n) {
    Result<AppendResult> appended = table_->Append({Rows(first, n)});
    ASSERT_TRUE(appended.ok()) << appended.status();
  }

  void Delete(const std::string& filter) {
    Result<DeleteResult> deleted = table_->Delete(filter);
    ASSERT_TRUE(deleted.ok()) << deleted.status();
    ASSERT_GT(deleted->rows_deleted, 0) << filter;
  }

  // Keys (relative to the table prefix) under `dir` ("data/", "_deletions/", ...).
  std::set<std::string> Keys(std::string_view dir) {
    std::set<std::string> keys;
    Result<std::vector<ObjectMeta>> listed = store_->List(std::string(kPrefix) + std::string(dir));
    EXPECT_TRUE(listed.ok()) << listed.status();
    if (!listed.ok()) return keys;
    for (const ObjectMeta& meta : *listed) keys.insert(meta.key.substr(kPrefix.size()));
    return keys;
  }

  // The one key under `dir` ("" after a test failure when there is not exactly one).
  std::string OnlyKey(std::string_view dir) {
    std::set<std::string> keys = Keys(dir);
    EXPECT_THAT(keys, SizeIs(1)) << dir;
    return keys.size() == 1 ? *keys.begin() : std::string();
  }

  static std::string First(const std::set<std::string>& keys) {
    EXPECT_FALSE(keys.empty());
    return keys.empty() ? std::string() : *keys.begin();
  }

  // The keys in `after` that are not in `before` (expects exactly one).
  static std::string NewKey(const std::set<std::string>& before,
                            const std::set<std::string>& after) {
    std::vector<std::string> added;
    std::set_difference(after.begin(), after.end(), before.begin(), before.end(),
                        std::back_inserter(added));
    EXPECT_THAT(added, SizeIs(1));
    return added.empty() ? std::string() : added[0];
  }

  std::filesystem::path PathOf(const std::string& key) {
    return dir_.path() / std::string(kPrefix) / key;
  }

  // Flips one byte in the middle of the object, editing the file under the store's root.
  void FlipByte(const std::string& key) {
    const std::filesystem::path path = PathOf(key);
    std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(file.is_open()) << path;
    const auto size = static_cast<std::streamoff>(std::filesystem::file_size(path));
    ASSERT_GT(size, 0);
    char byte = 0;
    file.seekg(size / 2);
    file.read(&byte, 1);
    byte = static_cast<char>(byte ^ 0x5a);
    file.seekp(size / 2);
    file.write(&byte, 1);
    ASSERT_TRUE(file.good());
  }

  std::vector<uint64_t> VersionNumbers() {
    Result<std::vector<VersionInfo>> versions = table_->ListVersions();
    EXPECT_TRUE(versions.ok()) << versions.status();
    std::vector<uint64_t> out;
    if (versions.ok()) {
      for (const VersionInfo& info : *versions) out.push_back(info.version);
    }
    return out;
  }

  // Live ids at `version`, through a read-only handle.
  std::vector<int64_t> IdsAt(uint64_t version) {
    Result<std::shared_ptr<Table>> old = table_->Checkout(version);
    EXPECT_TRUE(old.ok()) << "version " << version << ": " << old.status();
    return old.ok() ? ScanIds(**old) : std::vector<int64_t>{};
  }

  testing::TempDir dir_{"maintenance"};
  std::shared_ptr<ObjectStore> store_;
  std::shared_ptr<Table> table_;
};

CleanupOptions RemoveAllOld(int keep_at_least) {
  CleanupOptions options;
  options.older_than_micros = 0;
  options.keep_at_least = keep_at_least;
  return options;
}

// --- Cleanup ------------------------------------------------------------------------------

TEST_F(MaintenanceTest, CleanupKeepsTheNewestVersionsAndRemovesOlderOnes) {
  for (int i = 0; i < 4; ++i) Append(i * 10, 10);  // versions 2..5
  ASSERT_THAT(VersionNumbers(), ElementsAre(1, 2, 3, 4, 5));

  Result<CleanupResult> cleaned = table_->CleanupOldVersions(RemoveAllOld(2));
  ASSERT_TRUE(cleaned.ok()) << cleaned.status();
  EXPECT_EQ(cleaned->versions_removed, 3);
  EXPECT_EQ(cleaned->files_removed, 0);  // appends only add files: version 4 uses them all
  EXPECT_THAT(VersionNumbers(), ElementsAre(4, 5));
  EXPECT_TRUE(table_->Checkout(3).status().IsNotFound());
  EXPECT_EQ(IdsAt(4), Range(0, 30));
  EXPECT_EQ(ScanIds(*table_), Range(0, 40));

  // keep_at_least below 1 still keeps the latest.
  cleaned = table_->CleanupOldVersions(RemoveAllOld(0));
  ASSERT_TRUE(cleaned.ok()) << cleaned.status();
  EXPECT_EQ(cleaned->versions_removed, 1);
  EXPECT_THAT(VersionNumbers(), ElementsAre(5));
  EXPECT_EQ(ScanIds(*table_), Range(0, 40));
  EXPECT_TRUE(table_->Verify().value().ok());
}

TEST_F(MaintenanceTest, HandleWhoseReadVersionWasCleanedUpCannotCommitIntoTheGap) {
  Append(0, 10);  // version 2
  Result<std::shared_ptr<Table>> stale = Table::Open(store_, std::string(kPrefix));
  ASSERT_TRUE(stale.ok()) << stale.status();
  ASSERT_EQ((*stale)->version(), 2u);
  Append(10, 10);  // 3
  Append(20, 10);  // 4
  ASSERT_TRUE(table_->CleanupOldVersions(RemoveAllOld(1)).ok());
  ASSERT_THAT(VersionNumbers(), ElementsAre(4));

  // Manifest 3 is gone; putting it again would commit a version the latest one (4) does
  // not contain. The stale handle gets a retryable error instead, and after a refresh the
  // append lands on top of version 4.
  Result<AppendResult> appended = (*stale)->Append({Rows(30, 10)});
  ASSERT_TRUE(appended.status().IsBusy()) << appended.status();
  EXPECT_THAT(VersionNumbers(), ElementsAre(4));
  ASSERT_TRUE((*stale)->Refresh().ok());
  appended = (*stale)->Append({Rows(30, 10)});
  ASSERT_TRUE(appended.ok()) << appended.status();
  EXPECT_EQ(appended->version, 5u);
  ASSERT_TRUE(table_->Refresh().ok());
  EXPECT_EQ(ScanIds(*table_), Range(0, 40));
}

TEST_F(MaintenanceTest, CleanupByAgeRemovesOnlyVersionsCommittedBeforeTheCutoff) {
  for (int i = 0; i < 4; ++i) Append(i * 10, 10);
  Result<std::vector<VersionInfo>> versions = table_->ListVersions();
  ASSERT_TRUE(versions.ok()) << versions.status();
  ASSERT_THAT(*versions, SizeIs(5));

  // Nothing is older than a cutoff before the first commit.
  CleanupOptions options;
  options.older_than_micros = 1000;
  options.now_micros = (*versions)[0].timestamp_micros - 1;
  Result<CleanupResult> cleaned = table_->CleanupOldVersions(options);
  ASSERT_TRUE(cleaned.ok()) << cleaned.status();
  EXPECT_EQ(cleaned->versions_removed, 0);
  EXPECT_THAT(VersionNumbers(), SizeIs(5));

  // Cutoff = version 3's timestamp: the versions before it go (the oldest prefix whose
  // timestamps are below the cutoff), version 3 onwards stay.
  const int64_t cutoff = (*versions)[2].timestamp_micros;
  options.now_micros = cutoff + options.older_than_micros;
  size_t expect_removed = 0;
  while (expect_removed < 2 && (*versions)[expect_removed].timestamp_micros < cutoff) {
    ++expect_removed;
  }
  ASSERT_GT(expect_removed, 0u) << "version 1 committed in the same microsecond as version 3";
  cleaned = table_->CleanupOldVersions(options);
  ASSERT_TRUE(cleaned.ok()) << cleaned.status();
  EXPECT_EQ(cleaned->versions_removed, static_cast<int64_t>(expect_removed));
  std::vector<uint64_t> remaining = VersionNumbers();
  ASSERT_FALSE(remaining.empty());
  EXPECT_EQ(remaining.front(), expect_removed + 1);
  EXPECT_EQ(remaining.back(), 5u);
  EXPECT_EQ(IdsAt(3), Range(0, 20));
}

// A table in memory whose TableOptions carry `clock` and `random`.
Result<std::shared_ptr<Table>> CreateWithClock(ManualClock& clock, SeededRandom& random) {
  TableOptions options;
  options.clock = &clock;
  options.random = &random;
  return Table::Create(NewMemoryObjectStore(), std::string(kPrefix), TestSchema(), options);
}

TEST(TableClockTest, CleanupReadsTheClockOfTheTableOptions) {
  constexpr int64_t kLongAgo = 1'000'000'000;                         // 1970
  constexpr int64_t kFarFuture = int64_t{4'000'000'000} * 1'000'000;  // 2096
  ManualClock clock(kLongAgo);
  SeededRandom random(7);
  Result<std::shared_ptr<Table>> table = CreateWithClock(clock, random);
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_TRUE((*table)->Append({Rows(0, 10)}).ok());

  // By the table's clock no version is older than "now"; by the system clock version 1 is.
  CleanupOptions cleanup;
  cleanup.older_than_micros = 0;
  Result<CleanupResult> cleaned = (*table)->CleanupOldVersions(cleanup);
  ASSERT_TRUE(cleaned.ok()) << cleaned.status();
  EXPECT_EQ(cleaned->versions_removed, 0);
  clock.Set(kFarFuture);
  cleaned = (*table)->CleanupOldVersions(cleanup);
  ASSERT_TRUE(cleaned.ok()) << cleaned.status();
  EXPECT_EQ(cleaned->versions_removed, 1);  // the newest version always stays
}

// Every object name a table draws takes its random part from the TableOptions' source.
TEST(TableClockTest, ObjectNamesComeFromTheSourcesOfTheTableOptions) {
  // Always the same bits, so they are recognisable in the names.
  class FixedRandom final : public RandomSource {
   public:
    uint64_t Next() override { return 0xabcdef0123456789; }
  };
  ManualClock clock(1'600'000'000'000'000);
  FixedRandom random;
  TableOptions options;
  options.clock = &clock;
  options.random = &random;
  std::shared_ptr<ObjectStore> store = NewMemoryObjectStore();
  Result<std::shared_ptr<Table>> table =
      Table::Create(store, std::string(kPrefix), TestSchema(), options);
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_TRUE((*table)->Append({Rows(0, 10)}).ok());
  ASSERT_TRUE((*table)->Append({Rows(10, 10)}).ok());
  ASSERT_TRUE((*table)->Delete("id < 3").ok());

  Result<std::vector<ObjectMeta>> listed = store->List(std::string(kPrefix));
  ASSERT_TRUE(listed.ok()) << listed.status();
  int uuid_names = 0;
  int deletion_files = 0;
  for (const ObjectMeta& object : *listed) {
    std::string_view name = std::string_view(object.key).substr(kPrefix.size());
    for (std::string_view dir : {kDataDir, kIndicesDir}) {
      if (!name.starts_with(dir)) continue;
      // UUIDv7: the random bits end the name. (Its time part is the injected clock's only
      // in a fresh process: UUIDv7s never go back in time within one.)
      EXPECT_NE(name.find("-ef0123456789."), std::string_view::npos) << name;
      ++uuid_names;
    }
    if (name.starts_with(kDeletionsDir)) {
      EXPECT_TRUE(name.ends_with("-abcdef0123456789.bin")) << name;
      ++deletion_files;
    }
  }
  EXPECT_EQ(uuid_names, 4);  // two data files, two key segments
  EXPECT_EQ(deletion_files, 1);
}

TEST(TableClockTest, VersionsAreStampedByTheClockOfTheTableOptions) {
  constexpr int64_t kStart = 1'500'000'000'000'000;
  ManualClock clock(kStart);
  SeededRandom random(11);
  Result<std::shared_ptr<Table>> table = CreateWithClock(clock, random);
  ASSERT_TRUE(table.ok()) << table.status();
  clock.Advance(std::chrono::seconds(90));
  ASSERT_TRUE((*table)->Append({Rows(0, 10)}).ok());
  clock.Advance(std::chrono::seconds(30));
  ASSERT_TRUE((*table)->Delete("id < 3").ok());

  Result<std::vector<VersionInfo>> versions = (*table)->ListVersions();
  ASSERT_TRUE(versions.ok()) << versions.status();
  ASSERT_EQ(versions->size(), 3u);
  EXPECT_EQ((*versions)[0].timestamp_micros, kStart);
  EXPECT_EQ((*versions)[1].timestamp_micros, kStart + 90'000'000);
  EXPECT_EQ((*versions)[2].timestamp_micros, kStart + 120'000'000);
}

TEST_F(MaintenanceTest, CleanupKeepsFilesKeptVersionsUseAndDeletesFilesOnlyOldVersionsUsed) {
  Append(0, 100);     // v2: fragment A
  Append(100, 100);   // v3: fragment B
  Delete("id < 10");  // v4: deletion file D1 for A
  const std::set<std::string> after_first_delete = Keys(kDeletionsDir);
  ASSERT_THAT(after_first_delete, SizeIs(1));
  const std::string d1 = OnlyKey(kDeletionsDir);
  Delete("id < 20");  // v5: D2 replaces D1
  const std::string d2 = NewKey(after_first_delete, Keys(kDeletionsDir));
  const std::set<std::string> data = Keys(kDataDir);
  const std::set<std::string> indices = Keys(kIndicesDir);

  // Version 4 still uses D1: nothing but manifests may go.
  Result<CleanupResult> cleaned = table_->CleanupOldVersions(RemoveAllOld(2));
  ASSERT_TRUE(cleaned.ok()) << cleaned.status();
  EXPECT_EQ(cleaned->versions_removed, 3);
  EXPECT_EQ(cleaned->files_removed, 0);
  EXPECT_EQ(Keys(kDeletionsDir), (std::set<std::string>{d1, d2}));
  EXPECT_EQ(IdsAt(4), Range(10, 200));
  EXPECT_EQ(IdsAt(5), Range(20, 200));

  // Only version 5 stays: D1 is used by nothing kept.
  Result<int64_t> d1_size = store_->Size(std::string(kPrefix) + d1);
  ASSERT_TRUE(d1_size.ok()) << d1_size.status();
  cleaned = table_->CleanupOldVersions(RemoveAllOld(1));
  ASSERT_TRUE(cleaned.ok()) << cleaned.status();
  EXPECT_EQ(cleaned->versions_removed, 1);
  EXPECT_EQ(cleaned->files_removed, 1);
  EXPECT_EQ(cleaned->bytes_removed, *d1_size);
  EXPECT_EQ(Keys(kDeletionsDir), (std::set<std::string>{d2}));
  EXPECT_EQ(Keys(kDataDir), data);
  EXPECT_EQ(Keys(kIndicesDir), indices);
  EXPECT_EQ(ScanIds(*table_), Range(20, 200));
  Result<RecordBatch> found = table_->LookupKeys({expr::Scalar::Int64(150)});
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->num_rows(), 1);
  Result<VerifyReport> report = table_->Verify();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->problems, IsEmpty());
}

TEST_F(MaintenanceTest, CleanupAfterCompactionDeletesTheRewrittenFragmentsFiles) {
  Append(0, 30);
  Append(30, 30);
  Append(60, 30);
  Delete("id >= 50 and id < 55");
  const std::set<std::string> before = Keys(kDataDir);
  ASSERT_THAT(before, SizeIs(3));
  Result<CompactionResult> compacted = table_->Compact();
  ASSERT_TRUE(compacted.ok()) << compacted.status();
  ASSERT_GT(compacted->fragments_removed, 1);
  const uint64_t compacted_version = table_->version();

  // Kept: the version before compaction (uses the old files) and the compacted one.
  Result<CleanupResult> cleaned = table_->CleanupOldVersions(RemoveAllOld(2));
  ASSERT_TRUE(cleaned.ok()) << cleaned.status();
  EXPECT_EQ(cleaned->files_removed, 0);
  const std::vector<int64_t> live = Concat(Range(0, 50), Range(55, 90));
  EXPECT_EQ(IdsAt(compacted_version - 1), live);

  cleaned = table_->CleanupOldVersions(RemoveAllOld(1));
  ASSERT_TRUE(cleaned.ok()) << cleaned.status();
  EXPECT_GE(cleaned->files_removed, compacted->fragments_removed);  // data + deletion file
  EXPECT_GT(cleaned->bytes_removed, 0);
  for (const std::string& key : Keys(kDataDir)) {
    EXPECT_FALSE(before.contains(key)) << key << " should have been removed";
  }
  EXPECT_THAT(Keys(kDeletionsDir), IsEmpty());
  EXPECT_EQ(ScanIds(*table_), live);
  Result<VerifyReport> report = table_->Verify(VerifyOptions{.all_versions = true});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->problems, IsEmpty());
}

TEST_F(MaintenanceTest, DeleteUnreferencedRemovesAnOrphanDataFile) {
  Append(0, 20);
  const std::string orphan = "data/orphan-from-a-failed-append.arrow";
  ASSERT_TRUE(store_->Put(std::string(kPrefix) + orphan, "not referenced by any manifest").ok());

  CleanupOptions options;  // 14 days: no version is old enough
  Result<CleanupResult> cleaned = table_->CleanupOldVersions(options);
  ASSERT_TRUE(cleaned.ok()) << cleaned.status();
  EXPECT_EQ(cleaned->files_removed, 0);
  EXPECT_TRUE(Keys(kDataDir).contains(orphan));

  options.delete_unreferenced = true;
  cleaned = table_->CleanupOldVersions(options);
  ASSERT_TRUE(cleaned.ok()) << cleaned.status();
  EXPECT_EQ(cleaned->versions_removed, 0);
  EXPECT_EQ(cleaned->files_removed, 1);
  EXPECT_EQ(cleaned->bytes_removed, 30);
  EXPECT_FALSE(Keys(kDataDir).contains(orphan));
  EXPECT_THAT(Keys(kDataDir), SizeIs(1));
  EXPECT_EQ(ScanIds(*table_), Range(0, 20));
  EXPECT_EQ(IdsAt(1), std::vector<int64_t>{});
}

TEST_F(MaintenanceTest, CleanupToleratesFilesAlreadyDeletedByAConcurrentCleanup) {
  Append(0, 10);
  Delete("id < 2");
  const std::string d1 = OnlyKey(kDeletionsDir);
  Delete("id < 4");
  // Another cleanup got to D1 first.
  ASSERT_TRUE(store_->Delete(std::string(kPrefix) + d1).ok());
  Result<CleanupResult> cleaned = table_->CleanupOldVersions(RemoveAllOld(1));
  ASSERT_TRUE(cleaned.ok()) << cleaned.status();
  EXPECT_EQ(cleaned->versions_removed, 3);
  EXPECT_EQ(cleaned->files_removed, 0);
  EXPECT_EQ(ScanIds(*table_), Range(4, 10));
}

TEST_F(MaintenanceTest, ConcurrentCleanupsFromTwoHandlesBothSucceedAndKeepTheTableWhole) {
  Append(0, 20);
  for (int i = 0; i < 6; ++i) Delete("id < " + std::to_string(2 * (i + 1)));  // D1..D6
  Result<std::shared_ptr<Table>> other = Table::Open(store_, std::string(kPrefix));
  ASSERT_TRUE(other.ok()) << other.status();
  const uint64_t latest = table_->version();

  Result<CleanupResult> results[2] = {Status::Internal("not run"), Status::Internal("not run")};
  std::thread racer([&] { results[1] = (*other)->CleanupOldVersions(RemoveAllOld(1)); });
  results[0] = table_->CleanupOldVersions(RemoveAllOld(1));
  racer.join();
  ASSERT_TRUE(results[0].ok()) << results[0].status();
  ASSERT_TRUE(results[1].ok()) << results[1].status();
  // Between them every old version and every replaced deletion file went exactly once.
  EXPECT_EQ(results[0]->versions_removed + results[1]->versions_removed,
            static_cast<int64_t>(latest - 1));
  EXPECT_EQ(results[0]->files_removed + results[1]->files_removed, 5);
  EXPECT_THAT(VersionNumbers(), ElementsAre(latest));
  EXPECT_THAT(Keys(kDeletionsDir), SizeIs(1));
  EXPECT_EQ(ScanIds(*table_), Range(12, 20));
  Result<VerifyReport> report = table_->Verify(VerifyOptions{.all_versions = true});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->problems, IsEmpty());
}

// --- Verify -------------------------------------------------------------------------------

class VerifyTest : public MaintenanceTest {
 protected:
  // Two fragments, a deletion file and key segments; records the keys the latest version
  // references, by kind.
  void MakeHealthyTable() {
    Append(0, 50);
    Append(50, 50);
    Delete("id < 5");
    Result<internal::SnapshotPtr> latest =
        internal::LoadVersion(*store_, std::string(kPrefix), table_->version());
    ASSERT_TRUE(latest.ok()) << latest.status();
    for (const pb::Fragment& fragment : (*latest)->manifest.fragments()) {
      for (const pb::DataFile& file : fragment.files()) data_.insert(file.path());
      if (fragment.has_deletion()) deletions_.insert(fragment.deletion().path());
    }
    for (const pb::Index& index : (*latest)->manifest.indexes()) {
      for (const pb::KeySegment& segment : index.segments()) indices_.insert(segment.path());
    }
    ASSERT_THAT(data_, SizeIs(2));
    ASSERT_THAT(deletions_, SizeIs(1));
    ASSERT_THAT(indices_, ::testing::Not(IsEmpty()));
  }

  // Verify of the handle's version reports exactly one problem, naming `key`.
  void ExpectOneProblemNaming(const std::string& key) {
    Result<VerifyReport> report = table_->Verify();
    ASSERT_TRUE(report.ok()) << report.status();
    ASSERT_THAT(report->problems, SizeIs(1));
    EXPECT_THAT(report->problems[0], HasSubstr(key));
    EXPECT_THAT(report->problems[0],
                HasSubstr("version " + std::to_string(table_->version()) + ": "));
  }

  std::set<std::string> data_, deletions_, indices_;
};

TEST_F(VerifyTest, HealthyTableHasNoProblems) {
  ASSERT_NO_FATAL_FAILURE(MakeHealthyTable());
  Result<VerifyReport> report = table_->Verify();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok()) << ::testing::PrintToString(report->problems);
  EXPECT_EQ(report->manifests_checked, 1);
  EXPECT_EQ(report->files_checked,
            static_cast<int64_t>(data_.size() + deletions_.size() + indices_.size()));
  int64_t bytes = 0;
  for (const auto* keys : {&data_, &deletions_, &indices_}) {
    for (const std::string& key : *keys) bytes += *store_->Size(std::string(kPrefix) + key);
  }
  bytes += *store_->Size(std::string(kPrefix) + internal::ManifestKey(table_->version()));
  EXPECT_EQ(report->bytes_checked, bytes);

  // Every version: every file ever written is referenced by one of them, and each is
  // checked once however many versions share it.
  report = table_->Verify(VerifyOptions{.all_versions = true});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok()) << ::testing::PrintToString(report->problems);
  EXPECT_EQ(report->manifests_checked, 4);
  EXPECT_EQ(report->files_checked,
            static_cast<int64_t>(Keys(kDataDir).size() + Keys(kDeletionsDir).size() +
                                 Keys(kIndicesDir).size()));
}

TEST_F(VerifyTest, FlippedByteInDataFileIsReported) {
  ASSERT_NO_FATAL_FAILURE(MakeHealthyTable());
  const std::string key = First(data_);
  FlipByte(key);
  ExpectOneProblemNaming(key);
}

TEST_F(VerifyTest, FlippedByteInDeletionFileIsReported) {
  ASSERT_NO_FATAL_FAILURE(MakeHealthyTable());
  const std::string key = First(deletions_);
  FlipByte(key);
  ExpectOneProblemNaming(key);
}

TEST_F(VerifyTest, FlippedByteInKeySegmentIsReported) {
  ASSERT_NO_FATAL_FAILURE(MakeHealthyTable());
  const std::string key = First(indices_);
  FlipByte(key);
  ExpectOneProblemNaming(key);
}

TEST_F(VerifyTest, FlippedByteInManifestIsReported) {
  ASSERT_NO_FATAL_FAILURE(MakeHealthyTable());
  const std::string key = internal::ManifestKey(table_->version());
  FlipByte(key);
  ExpectOneProblemNaming(key);
}

TEST_F(VerifyTest, MissingFileOfAnOlderVersionIsReportedWithAllVersions) {
  Append(0, 10);
  Delete("id < 2");
  const std::string d1 = OnlyKey(kDeletionsDir);
  Delete("id < 4");  // version 4 no longer uses D1
  ASSERT_TRUE(store_->Delete(std::string(kPrefix) + d1).ok());

  Result<VerifyReport> report = table_->Verify();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok()) << ::testing::PrintToString(report->problems);

  report = table_->Verify(VerifyOptions{.all_versions = true});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_THAT(report->problems, SizeIs(1));
  EXPECT_THAT(report->problems[0], HasSubstr("version 3: " + d1));
  EXPECT_THAT(report->problems[0], HasSubstr("missing"));
}

// --- Repair -------------------------------------------------------------------------------

TEST_F(MaintenanceTest, RepairDropsExactlyTheFragmentWhoseDataFileIsMissing) {
  Append(0, 100);
  std::set<std::string> before = Keys(kDataDir);
  Append(100, 100);
  const std::string lost = NewKey(before, Keys(kDataDir));
  Append(200, 100);

  // The fragment id of the lost rows, from their row addresses.
  ScanOptions scan;
  scan.filter = "id = 150";
  scan.with_row_address = true;
  Result<std::unique_ptr<BatchIterator>> it = table_->Scan(scan);
  ASSERT_TRUE(it.ok()) << it.status();
  Result<std::vector<RecordBatch>> rows = (*it)->ToBatches();
  ASSERT_TRUE(rows.ok()) << rows.status();
  ASSERT_THAT(*rows, SizeIs(1));
  const uint32_t lost_fragment =
      RowAddressFragment(rows->at(0).column(rows->at(0).num_columns() - 1).Value<uint64_t>(0));

  ASSERT_TRUE(store_->Delete(std::string(kPrefix) + lost).ok());
  Result<VerifyReport> report = table_->Verify();
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_THAT(report->problems, SizeIs(1));
  EXPECT_THAT(report->problems[0], HasSubstr(lost));

  const uint64_t read_version = table_->version();
  Result<RepairReport> repaired = table_->Repair();
  ASSERT_TRUE(repaired.ok()) << repaired.status();
  EXPECT_EQ(repaired->read_version, read_version);
  ASSERT_TRUE(repaired->committed_version.has_value());
  EXPECT_EQ(*repaired->committed_version, read_version + 1);
  EXPECT_EQ(table_->version(), read_version + 1);
  ASSERT_THAT(repaired->dropped, SizeIs(1));
  EXPECT_EQ(repaired->dropped[0].fragment_id, lost_fragment);
  EXPECT_EQ(repaired->dropped[0].physical_rows, 100);
  EXPECT_THAT(repaired->dropped[0].missing_files, ElementsAre(lost));

  EXPECT_EQ(ScanIds(*table_), Concat(Range(0, 100), Range(200, 300)));
  EXPECT_EQ(*table_->CountRows(), 200);
  Result<RecordBatch> found =
      table_->LookupKeys({expr::Scalar::Int64(150), expr::Scalar::Int64(250)});
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_EQ(found->num_rows(), 1);
  EXPECT_EQ(found->column(0).Value<int64_t>(0), 250);
  Result<std::vector<VersionInfo>> versions = table_->ListVersions();
  ASSERT_TRUE(versions.ok()) << versions.status();
  EXPECT_EQ(versions->back().operation, "repair");
  report = table_->Verify();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->problems, IsEmpty());

  // Nothing is missing any more: no commit.
  repaired = table_->Repair();
  ASSERT_TRUE(repaired.ok()) << repaired.status();
  EXPECT_FALSE(repaired->committed_version.has_value());
  EXPECT_THAT(repaired->dropped, IsEmpty());
  EXPECT_EQ(table_->version(), read_version + 1);
}

TEST_F(MaintenanceTest, RepairDropsAFragmentWhoseDeletionFileIsMissing) {
  Append(0, 10);
  Append(10, 10);
  Delete("id = 3");
  const std::string lost = OnlyKey(kDeletionsDir);
  ASSERT_TRUE(store_->Delete(std::string(kPrefix) + lost).ok());

  Result<RepairReport> repaired = table_->Repair();
  ASSERT_TRUE(repaired.ok()) << repaired.status();
  ASSERT_TRUE(repaired->committed_version.has_value());
  ASSERT_THAT(repaired->dropped, SizeIs(1));
  EXPECT_EQ(repaired->dropped[0].physical_rows, 10);
  EXPECT_THAT(repaired->dropped[0].missing_files, ElementsAre(lost));
  EXPECT_EQ(ScanIds(*table_), Range(10, 20));
}

TEST_F(MaintenanceTest, RepairOfAHealthyTableCommitsNothing) {
  Append(0, 10);
  const uint64_t version = table_->version();
  Result<RepairReport> repaired = table_->Repair();
  ASSERT_TRUE(repaired.ok()) << repaired.status();
  EXPECT_EQ(repaired->read_version, version);
  EXPECT_FALSE(repaired->committed_version.has_value());
  EXPECT_THAT(repaired->dropped, IsEmpty());
  EXPECT_EQ(*table_->LatestVersion(), version);
}

}  // namespace

// --- FileCache ----------------------------------------------------------------------------

namespace internal {
namespace {

constexpr int64_t kPhysicalRows = 100000;

class FileCacheTest : public ::testing::Test {
 protected:
  // Writes a deletion vector holding `rows` deleted offsets for fragment `id`.
  pb::DeletionFile Write(uint32_t id, uint32_t rows) {
    DeletionVector deleted;
    for (uint32_t i = 0; i < rows; ++i) deleted.Add(i * 3);
    Result<pb::DeletionFile> entry = WriteDeletionFile(*store_, "", id, 1, kPhysicalRows, deleted);
    EXPECT_TRUE(entry.ok()) << entry.status();
    return entry.ok() ? *entry : pb::DeletionFile();
  }

  std::shared_ptr<const DeletionVector> Load(FileCache& cache, const pb::DeletionFile& entry) {
    Result<std::shared_ptr<const DeletionVector>> loaded =
        cache.Deletions(*store_, "", entry, kPhysicalRows);
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    return loaded.ok() ? *loaded : nullptr;
  }

  std::shared_ptr<ObjectStore> store_ = NewMemoryObjectStore();
};

TEST_F(FileCacheTest, CachedEntryIsServedWithoutReadingTheObjectAgain) {
  FileCache cache(1 << 20);
  const pb::DeletionFile entry = Write(1, 10);
  std::shared_ptr<const DeletionVector> first = Load(cache, entry);
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->Cardinality(), 10);
  ASSERT_TRUE(store_->Delete(entry.path()).ok());
  EXPECT_EQ(Load(cache, entry), first);
}

TEST_F(FileCacheTest, LeastRecentlyUsedEntryIsEvictedBeyondTheBudget) {
  // Large enough that per-entry bookkeeping is small next to the payload.
  const pb::DeletionFile a = Write(1, 2000);
  const pb::DeletionFile b = Write(2, 2000);
  const pb::DeletionFile c = Write(3, 2000);
  ASSERT_GT(a.size(), 2000);
  // Room for two entries, not three.
  FileCache cache(a.size() * 5 / 2);
  std::shared_ptr<const DeletionVector> loaded_a = Load(cache, a);
  std::shared_ptr<const DeletionVector> loaded_b = Load(cache, b);
  EXPECT_EQ(Load(cache, a), loaded_a);  // a is now the most recently used
  Load(cache, c);                       // evicts b
  for (const pb::DeletionFile* entry : {&a, &b, &c}) {
    ASSERT_TRUE(store_->Delete(entry->path()).ok());
  }
  EXPECT_EQ(Load(cache, a), loaded_a);
  EXPECT_NE(Load(cache, c), nullptr);
  EXPECT_TRUE(cache.Deletions(*store_, "", b, kPhysicalRows).status().IsNotFound());
}

TEST_F(FileCacheTest, ZeroCapacityCachesNothing) {
  FileCache cache(0);
  const pb::DeletionFile entry = Write(1, 10);
  std::shared_ptr<const DeletionVector> first = Load(cache, entry);
  std::shared_ptr<const DeletionVector> second = Load(cache, entry);
  ASSERT_NE(first, nullptr);
  EXPECT_NE(first, second);
  EXPECT_TRUE(first->Equals(*second));
  ASSERT_TRUE(store_->Delete(entry.path()).ok());
  EXPECT_TRUE(cache.Deletions(*store_, "", entry, kPhysicalRows).status().IsNotFound());
}

// Get of one key blocks until Release(); every Get is counted.
class GatedGetStore final : public strata::testing::ForwardingObjectStore {
 public:
  GatedGetStore(std::shared_ptr<ObjectStore> base, std::string key)
      : ForwardingObjectStore(std::move(base)), key_(std::move(key)) {}
  Result<Buffer> Get(std::string_view key) override {
    if (key == key_) {
      gets_.fetch_add(1);
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return released_; });
    }
    return ForwardingObjectStore::Get(key);
  }
  void Release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }
  int gets() const { return gets_.load(); }

 private:
  const std::string key_;
  std::atomic<int> gets_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
};

TEST_F(FileCacheTest, ThreadsAskingForAKeyBeingLoadedWaitForThatLoad) {
  for (int64_t capacity : {int64_t{1} << 20, int64_t{0}}) {  // shared even when not cached
    SCOPED_TRACE(capacity);
    store_ = NewMemoryObjectStore();
    const pb::DeletionFile entry = Write(1, 500);
    const pb::DeletionFile missing = Write(2, 5);
    auto gated = std::make_shared<GatedGetStore>(store_, entry.path());
    FileCache cache(capacity);
    constexpr int kThreads = 6;
    std::vector<Result<std::shared_ptr<const DeletionVector>>> results(kThreads,
                                                                       Status::Internal("not run"));
    std::vector<std::thread> threads;
    threads.emplace_back([&] { results[0] = cache.Deletions(*gated, "", entry, kPhysicalRows); });
    // Bounded waits: a broken cache fails the expectations below instead of hanging.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    auto before_deadline = [&] { return std::chrono::steady_clock::now() < deadline; };
    while (gated->gets() == 0 && before_deadline()) std::this_thread::yield();  // first load
    for (int t = 1; t < kThreads; ++t) {
      threads.emplace_back(
          [&, t] { results[t] = cache.Deletions(*gated, "", entry, kPhysicalRows); });
    }
    // Every other thread waits for that load rather than reading the object itself.
    while (cache.LoadsWaiting() < kThreads - 1 && gated->gets() == 1 && before_deadline()) {
      std::this_thread::yield();
    }
    EXPECT_EQ(cache.LoadsWaiting(), kThreads - 1);
    EXPECT_EQ(gated->gets(), 1);
    gated->Release();
    for (std::thread& thread : threads) thread.join();
    EXPECT_EQ(gated->gets(), 1);
    EXPECT_EQ(cache.LoadsWaiting(), 0);
    for (const auto& result : results) {
      ASSERT_TRUE(result.ok()) << result.status();
      EXPECT_EQ(*result, *results[0]);
    }
    EXPECT_EQ((*results[0])->Cardinality(), 500);
    // A load that fails returns its error.
    ASSERT_OK(store_->Delete(missing.path()));
    EXPECT_TRUE(cache.Deletions(*gated, "", missing, kPhysicalRows).status().IsNotFound());
  }
}

TEST_F(FileCacheTest, ConcurrentLoadsOfOneKeyShareOneValue) {
  FileCache cache(1 << 20);
  const pb::DeletionFile entry = Write(1, 500);
  constexpr int kThreads = 8;
  std::vector<std::shared_ptr<const DeletionVector>> results(kThreads);
  std::atomic<bool> go{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      while (!go.load()) std::this_thread::yield();
      results[t] = Load(cache, entry);
    });
  }
  go = true;
  for (std::thread& thread : threads) thread.join();
  for (const auto& result : results) {
    ASSERT_NE(result, nullptr);
    EXPECT_EQ(result, results[0]);
  }
  EXPECT_EQ(results[0]->Cardinality(), 500);
}

}  // namespace
}  // namespace internal
}  // namespace strata::table
