// Damage to the version chain itself: manifests missing from outside (verify reports them,
// Open warns when the hint names a missing version) and corrupt newest manifests (rolled back
// to the newest intact version with a new version, never by reusing a version number).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "strata/object_store.h"
#include "strata/table.h"
#include "support/forwarding_object_store.h"
#include "table/commit.h"
#include "table/format.h"
#include "table/table_test_util.h"

namespace strata::table {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using testing_util::KeyedRows;
using testing_util::KeyedSchema;

constexpr std::string_view kPrefix = "t/";

class DamagedVersionsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = NewMemoryObjectStore();
    Result<std::shared_ptr<Table>> table =
        Table::Create(store_, std::string(kPrefix), KeyedSchema());
    ASSERT_TRUE(table.ok()) << table.status();
    table_ = *table;
  }

  // Appends rows [10 * (v - 2), 10 * (v - 1)) as version v, for v = 2..last.
  void AppendUpTo(uint64_t last) {
    while (table_->version() < last) {
      const int64_t first = 10 * static_cast<int64_t>(table_->version() - 1);
      Result<AppendResult> appended = table_->Append({KeyedRows(first, 10)});
      ASSERT_TRUE(appended.ok()) << appended.status();
    }
  }

  std::string ManifestKey(uint64_t version) {
    return std::string(kPrefix) + internal::ManifestKey(version);
  }

  void RemoveManifest(uint64_t version) {
    ASSERT_TRUE(store_->Delete(ManifestKey(version)).ok()) << version;
  }

  // Replaces manifest `version` with a copy that has one byte flipped in the middle.
  void CorruptManifest(uint64_t version) {
    Result<Buffer> bytes = store_->Get(ManifestKey(version));
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    std::string copy(bytes->view());
    copy[copy.size() / 2] = static_cast<char>(copy[copy.size() / 2] ^ 0x5a);
    ASSERT_TRUE(store_->Delete(ManifestKey(version)).ok());
    ASSERT_TRUE(store_->Put(ManifestKey(version), copy).ok());
  }

  std::set<std::string> Keys(std::string_view dir) {
    std::set<std::string> keys;
    Result<std::vector<ObjectMeta>> listed = store_->List(std::string(kPrefix) + std::string(dir));
    EXPECT_TRUE(listed.ok()) << listed.status();
    if (listed.ok()) {
      for (const ObjectMeta& meta : *listed) keys.insert(meta.key);
    }
    return keys;
  }

  Result<std::shared_ptr<Table>> Open() { return Table::Open(store_, std::string(kPrefix)); }

  static std::vector<int64_t> Ids(const Table& table) {
    Result<RecordBatch> all = testing_util::ReadAll(table);
    EXPECT_TRUE(all.ok()) << all.status();
    if (!all.ok()) return {};
    std::vector<int64_t> ids = testing_util::Int64Column(*all, "id");
    std::sort(ids.begin(), ids.end());
    return ids;
  }

  static std::vector<uint64_t> Versions(const Table& table) {
    Result<std::vector<VersionInfo>> versions = table.ListVersions();
    EXPECT_TRUE(versions.ok()) << versions.status();
    std::vector<uint64_t> out;
    if (versions.ok()) {
      for (const VersionInfo& info : *versions) out.push_back(info.version);
    }
    return out;
  }

  std::shared_ptr<ObjectStore> store_;
  std::shared_ptr<Table> table_;
};

// --- Missing manifests --------------------------------------------------------------------

TEST_F(DamagedVersionsTest, VerifyReportsAMissingNewestManifestTheHintNames) {
  AppendUpTo(4);
  RemoveManifest(4);
  Result<std::shared_ptr<Table>> opened = Open();
  ASSERT_TRUE(opened.ok()) << opened.status();
  ASSERT_EQ((*opened)->version(), 3u);

  Result<VerifyReport> report = (*opened)->Verify();
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_THAT(report->problems, SizeIs(1));
  EXPECT_THAT(report->problems[0], HasSubstr("version 4: " + internal::ManifestKey(4)));
  EXPECT_THAT(report->problems[0], HasSubstr("missing from storage"));
}

TEST_F(DamagedVersionsTest, VerifyAllVersionsReportsAMissingMiddleManifest) {
  AppendUpTo(5);
  RemoveManifest(3);
  Result<VerifyReport> report = table_->Verify();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->problems, IsEmpty());  // the latest version itself is whole

  report = table_->Verify(VerifyOptions{.all_versions = true});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_THAT(report->problems, SizeIs(1));
  EXPECT_THAT(report->problems[0], HasSubstr("version 3: " + internal::ManifestKey(3)));
  EXPECT_THAT(report->problems[0], HasSubstr("missing from storage"));
}

TEST_F(DamagedVersionsTest, VersionsRemovedByCleanupAreNotReportedMissing) {
  AppendUpTo(5);
  CleanupOptions options;
  options.older_than_micros = 0;
  options.keep_at_least = 2;
  ASSERT_TRUE(table_->CleanupOldVersions(options).ok());
  Result<VerifyReport> report = table_->Verify(VerifyOptions{.all_versions = true});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->problems, IsEmpty());
}

TEST_F(DamagedVersionsTest, OpenWarnsWhenTheHintNamesAMissingVersion) {
  AppendUpTo(4);
  Result<std::shared_ptr<Table>> healthy = Open();
  ASSERT_TRUE(healthy.ok()) << healthy.status();
  EXPECT_THAT((*healthy)->warnings(), IsEmpty());

  RemoveManifest(4);
  Result<std::shared_ptr<Table>> opened = Open();
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ((*opened)->version(), 3u);
  ASSERT_THAT((*opened)->warnings(), SizeIs(1));
  EXPECT_THAT((*opened)->warnings()[0], HasSubstr("hint names version 4"));
  EXPECT_THAT((*opened)->warnings()[0], HasSubstr("reading version 3"));
}

// --- Rolling back corrupt newest manifests -------------------------------------------------

TEST_F(DamagedVersionsTest, CorruptNewestManifestsAreRolledBackOnlyWhenAsked) {
  AppendUpTo(5);
  const std::set<std::string> data_files = Keys(internal::kDataDir);
  CorruptManifest(4);
  CorruptManifest(5);
  Result<std::shared_ptr<Table>> opened = Open();
  ASSERT_FALSE(opened.ok());
  EXPECT_TRUE(opened.status().IsCorruption()) << opened.status();

  // By default only a report: nothing is written.
  const std::set<std::string> manifests = Keys(internal::kVersionsDir);
  Result<RollbackReport> report = Table::RollBackCorruptVersions(store_, std::string(kPrefix));
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->newest_version, 5u);
  EXPECT_EQ(report->intact_version, 3u);
  ASSERT_THAT(report->corrupt, SizeIs(2));
  EXPECT_EQ(report->corrupt[0].version, 4u);
  EXPECT_EQ(report->corrupt[1].version, 5u);
  EXPECT_THAT(report->corrupt[1].problem, HasSubstr("checksum"));
  EXPECT_FALSE(report->committed_version.has_value());
  EXPECT_EQ(Keys(internal::kVersionsDir), manifests);

  // Applied: a new version with version 3's content; no version number is reused and the
  // corrupt manifests stay (the chain has no gap), no data file is deleted.
  report = Table::RollBackCorruptVersions(store_, std::string(kPrefix), {.apply = true});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_TRUE(report->committed_version.has_value());
  EXPECT_EQ(*report->committed_version, 6u);
  EXPECT_EQ(Keys(internal::kDataDir), data_files);
  opened = Open();
  ASSERT_TRUE(opened.ok()) << opened.status();
  Table& table = **opened;
  EXPECT_EQ(table.version(), 6u);
  EXPECT_THAT(table.warnings(), IsEmpty());
  EXPECT_EQ(Ids(table), Ids(**table.Checkout(3)));
  EXPECT_THAT(Ids(table), SizeIs(20));
  Result<std::vector<VersionInfo>> versions = table.ListVersions();
  ASSERT_TRUE(versions.ok()) << versions.status();
  EXPECT_EQ(versions->back().operation, "rollback");
  EXPECT_THAT(Versions(table), ElementsAre(1, 2, 3, 6));  // the rolled-back ones are skipped
  Result<VerifyReport> verified = table.Verify(VerifyOptions{.all_versions = true});
  ASSERT_TRUE(verified.ok()) << verified.status();
  EXPECT_THAT(verified->problems, IsEmpty());

  // Nothing left to roll back; the table takes changes again, and cleanup can remove the
  // rolled-back versions with the rest of the history.
  report = Table::RollBackCorruptVersions(store_, std::string(kPrefix), {.apply = true});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->corrupt, IsEmpty());
  EXPECT_FALSE(report->committed_version.has_value());
  Result<AppendResult> appended = table.Append({KeyedRows(1000, 5)});
  ASSERT_TRUE(appended.ok()) << appended.status();
  EXPECT_EQ(table.version(), 7u);
  CleanupOptions cleanup;
  cleanup.older_than_micros = 0;
  Result<CleanupResult> cleaned = table.CleanupOldVersions(cleanup);
  ASSERT_TRUE(cleaned.ok()) << cleaned.status();
  EXPECT_EQ(cleaned->versions_removed, 6);
  EXPECT_THAT(Versions(table), ElementsAre(7));
  EXPECT_THAT(Ids(table), SizeIs(25));
}

TEST_F(DamagedVersionsTest, WriterThatReadARolledBackVersionCannotCommitOnTheRollback) {
  AppendUpTo(4);
  // `table_` still holds version 4 in memory after its manifest is damaged.
  CorruptManifest(4);
  Result<RollbackReport> report =
      Table::RollBackCorruptVersions(store_, std::string(kPrefix), {.apply = true});
  ASSERT_TRUE(report.ok()) << report.status();
  ASSERT_EQ(report->committed_version, std::optional<uint64_t>(5));

  Result<AppendResult> appended = table_->Append({KeyedRows(1000, 5)});
  ASSERT_FALSE(appended.ok());
  EXPECT_TRUE(appended.status().IsBusy()) << appended.status();
  EXPECT_THAT(appended.status().message(), HasSubstr("rolled the table back to version 3"));
  EXPECT_EQ(*table_->LatestVersion(), 5u);
}

TEST_F(DamagedVersionsTest, VerifyAcceptsAGapARollbackReplaced) {
  AppendUpTo(5);
  RemoveManifest(4);
  CorruptManifest(5);
  Result<RollbackReport> report =
      Table::RollBackCorruptVersions(store_, std::string(kPrefix), {.apply = true});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->intact_version, 3u);
  ASSERT_EQ(report->committed_version, std::optional<uint64_t>(6));
  Result<std::shared_ptr<Table>> opened = Open();
  ASSERT_TRUE(opened.ok()) << opened.status();
  Result<VerifyReport> verified = (*opened)->Verify(VerifyOptions{.all_versions = true});
  ASSERT_TRUE(verified.ok()) << verified.status();
  EXPECT_THAT(verified->problems, IsEmpty());
}

using strata::testing::HookedStore;

TEST_F(DamagedVersionsTest, RollbackRacingACommitOfTheSameVersionCommitsNothing) {
  AppendUpTo(4);
  CorruptManifest(4);
  // `table_` still holds version 4 and commits version 5 on it while the rollback is between
  // reading the chain and its put of version 5.
  auto hooked = std::make_shared<HookedStore>(store_, ManifestKey(5), [this] {
    Result<AppendResult> appended = table_->Append({KeyedRows(1000, 5)});
    ASSERT_TRUE(appended.ok()) << appended.status();
  });
  Result<RollbackReport> report =
      Table::RollBackCorruptVersions(hooked, std::string(kPrefix), {.apply = true});
  ASSERT_FALSE(report.ok());
  EXPECT_TRUE(report.status().IsBusy()) << report.status();
  Result<std::shared_ptr<Table>> opened = Open();
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ((*opened)->version(), 5u);
  EXPECT_THAT(Ids(**opened), SizeIs(35));  // the append's rows, on top of version 4's
}

TEST_F(DamagedVersionsTest, RollbackOfAHealthyTableChangesNothing) {
  AppendUpTo(3);
  Result<RollbackReport> report =
      Table::RollBackCorruptVersions(store_, std::string(kPrefix), {.apply = true});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->newest_version, 3u);
  EXPECT_EQ(report->intact_version, 3u);
  EXPECT_THAT(report->corrupt, IsEmpty());
  EXPECT_FALSE(report->committed_version.has_value());
  EXPECT_EQ(*table_->LatestVersion(), 3u);
}

TEST_F(DamagedVersionsTest, RollbackWithoutAnyIntactVersionIsCorruption) {
  AppendUpTo(2);
  CorruptManifest(1);
  CorruptManifest(2);
  Result<RollbackReport> report =
      Table::RollBackCorruptVersions(store_, std::string(kPrefix), {.apply = true});
  ASSERT_FALSE(report.ok());
  EXPECT_TRUE(report.status().IsCorruption()) << report.status();
  EXPECT_THAT(Keys(internal::kVersionsDir), SizeIs(2));
}

}  // namespace
}  // namespace strata::table
