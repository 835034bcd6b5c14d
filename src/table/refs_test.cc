// Tags and branches (docs/format/table.md §13): naming rules, what each one reads, and that no
// cleanup — of the table, of a branch, after a tag or branch is deleted — removes a file that
// a version, tag or branch still reads. The last test checks that against a model over random
// sequences of writes, forks, tags, compactions, cleanups and deletions.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "strata/builder.h"
#include "strata/object_store.h"
#include "strata/table.h"
#include "support/temp_dir.h"

namespace strata::table {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr std::string_view kPrefix = "t/";

using Rows = std::map<int64_t, std::string>;  // id -> name

SchemaPtr TestSchema() {
  return schema(
      {field("id", int64(), /*nullable=*/false, KeyValueMetadata({{"strata:primary-key", "true"}})),
       field("name", utf8())});
}

RecordBatch MakeRows(const Rows& rows) {
  Int64Builder ids(int64());
  BinaryBuilder names(utf8());
  for (const auto& [id, name] : rows) {
    ids.Append(id);
    EXPECT_TRUE(names.Append(name).ok());
  }
  Result<RecordBatch> batch = RecordBatch::Make(TestSchema(), static_cast<int64_t>(rows.size()),
                                                {*ids.Finish(), *names.Finish()});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

Rows RowRange(int64_t first, int64_t n, const std::string& name) {
  Rows rows;
  for (int64_t i = first; i < first + n; ++i) rows[i] = name;
  return rows;
}

Result<Rows> ReadRows(const Table& table) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<BatchIterator> it, table.Scan());
  STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> batches, it->ToBatches());
  Rows rows;
  for (const RecordBatch& batch : batches) {
    for (int64_t i = 0; i < batch.num_rows(); ++i) {
      const int64_t id = batch.column(0).Value<int64_t>(i);
      if (!rows.emplace(id, std::string(batch.column(1).StringValue(i))).second) {
        return Status::Internal(fmt::format("id {} read twice", id));
      }
    }
  }
  return rows;
}

CleanupOptions RemoveAllOld() {
  CleanupOptions options;
  options.older_than_micros = 0;
  options.keep_at_least = 1;
  return options;
}

class RefsTest : public ::testing::Test {
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

  static void Write(Table& table, const Rows& rows) {
    Result<UpsertResult> written = table.Upsert({MakeRows(rows)});
    ASSERT_TRUE(written.ok()) << written.status();
  }

  static Rows Read(const Table& table) {
    Result<Rows> rows = ReadRows(table);
    EXPECT_TRUE(rows.ok()) << rows.status();
    return rows.ok() ? *rows : Rows{};
  }

  int64_t CountObjects(const std::string& prefix) {
    Result<std::vector<ObjectMeta>> listed = store_->List(prefix);
    EXPECT_TRUE(listed.ok()) << listed.status();
    return listed.ok() ? static_cast<int64_t>(listed->size()) : -1;
  }

  testing::TempDir dir_{"refs"};
  std::shared_ptr<ObjectStore> store_;
  std::shared_ptr<Table> table_;
};

TEST_F(RefsTest, NamesAreChecked) {
  for (std::string_view bad : {"", ".hidden", "a/b", "a b", "..", "ä"}) {
    EXPECT_TRUE(table_->CreateTag(bad).status().IsInvalidArgument()) << bad;
    EXPECT_TRUE(table_->CreateBranch(bad).status().IsInvalidArgument()) << bad;
  }
  EXPECT_TRUE(table_->CreateTag(std::string(129, 'a')).status().IsInvalidArgument());
  Result<TagInfo> tag = table_->CreateTag(std::string(128, 'a'));
  EXPECT_TRUE(tag.ok()) << tag.status();
  EXPECT_THAT(table_->CreateTag("x/y").status().message(),
              HasSubstr("must be 1 to 128 characters"));
}

TEST_F(RefsTest, TagKeepsAVersionReadableAfterCleanup) {
  Write(*table_, RowRange(0, 10, "a"));  // version 2
  Result<TagInfo> tag = table_->CreateTag("v2");
  ASSERT_TRUE(tag.ok()) << tag.status();
  EXPECT_EQ(tag->version, 2u);
  EXPECT_TRUE(table_->CreateTag("v2").status().IsAlreadyExists());
  EXPECT_THAT(table_->CreateTag("v2").status().message(), HasSubstr("version 2"));
  EXPECT_TRUE(table_->CreateTag("v9", 9).status().IsNotFound());
  Result<TagInfo> first = table_->CreateTag("empty", 1);
  ASSERT_TRUE(first.ok()) << first.status();

  // Rewrite every row, compact, and remove every old version.
  Write(*table_, RowRange(0, 10, "b"));
  ASSERT_TRUE(table_->Delete("id >= 5").ok());
  ASSERT_TRUE(table_->Compact().ok());
  Result<CleanupResult> cleaned = table_->CleanupOldVersions(RemoveAllOld());
  ASSERT_TRUE(cleaned.ok()) << cleaned.status();
  EXPECT_GT(cleaned->versions_removed, 0);
  EXPECT_TRUE(table_->Checkout(2).status().IsNotFound());

  Result<std::shared_ptr<Table>> tagged = table_->CheckoutTag("v2");
  ASSERT_TRUE(tagged.ok()) << tagged.status();
  EXPECT_EQ((*tagged)->version(), 2u);
  EXPECT_TRUE((*tagged)->read_only());
  EXPECT_EQ(Read(**tagged), RowRange(0, 10, "a"));
  EXPECT_TRUE((*tagged)->Append({MakeRows(RowRange(50, 1, "x"))}).status().IsInvalidArgument());
  EXPECT_EQ(Read(*table_), RowRange(0, 5, "b"));

  Result<std::vector<TagInfo>> tags = table_->ListTags();
  ASSERT_TRUE(tags.ok()) << tags.status();
  ASSERT_EQ(tags->size(), 2u);
  EXPECT_EQ((*tags)[0].label, "empty");
  EXPECT_EQ((*tags)[0].version, 1u);
  EXPECT_EQ((*tags)[1].label, "v2");

  // Deleting the tag deletes the files only it kept: the data is the latest version's.
  const int64_t before = CountObjects(std::string(kPrefix) + "data/");
  ASSERT_TRUE(table_->DeleteTag("v2").ok());
  EXPECT_LT(CountObjects(std::string(kPrefix) + "data/"), before);
  EXPECT_TRUE(table_->CheckoutTag("v2").status().IsNotFound());
  EXPECT_TRUE(table_->DeleteTag("v2").IsNotFound());
  EXPECT_EQ(Read(*table_), RowRange(0, 5, "b"));
  Result<VerifyReport> report = table_->Verify({.all_versions = true});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->problems, IsEmpty());
}

TEST_F(RefsTest, BranchesShareFilesAndDivergeIndependently) {
  Write(*table_, RowRange(0, 10, "a"));
  ASSERT_TRUE(table_->Delete("id = 3").ok());
  Result<std::shared_ptr<Table>> branch = table_->CreateBranch("exp");
  ASSERT_TRUE(branch.ok()) << branch.status();
  EXPECT_EQ((*branch)->version(), 1u);
  EXPECT_TRUE(table_->CreateBranch("exp").status().IsAlreadyExists());
  Rows expected = RowRange(0, 10, "a");
  expected.erase(3);
  EXPECT_EQ(Read(**branch), expected);
  // No data file was copied: the branch has no data directory yet.
  const std::string branch_prefix = Table::BranchPrefix(kPrefix, "exp");
  EXPECT_EQ(branch_prefix, "t/_branches/exp/");
  EXPECT_EQ(CountObjects(branch_prefix + "data/"), 0);

  // Writes on either side stay there; key lookups use the shared key index.
  Write(**branch, RowRange(5, 10, "b"));
  Write(*table_, RowRange(100, 2, "p"));
  Rows branch_rows = expected;
  for (const auto& [id, name] : RowRange(5, 10, "b")) branch_rows[id] = name;
  Rows parent_rows = expected;
  for (const auto& [id, name] : RowRange(100, 2, "p")) parent_rows[id] = name;
  EXPECT_EQ(Read(**branch), branch_rows);
  EXPECT_EQ(Read(*table_), parent_rows);
  Result<RecordBatch> found = (*branch)->LookupKeys({expr::Scalar::Int64(1)});
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_EQ(found->num_rows(), 1);

  // A branch of the branch, opened by prefix.
  Result<std::shared_ptr<Table>> nested = (*branch)->CreateBranch("deeper");
  ASSERT_TRUE(nested.ok()) << nested.status();
  Result<std::shared_ptr<Table>> reopened =
      Table::Open(store_, Table::BranchPrefix(branch_prefix, "deeper"));
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  EXPECT_EQ(Read(**reopened), branch_rows);

  // Compaction and cleanup everywhere delete nothing another table reads.
  for (const std::shared_ptr<Table>& t : {table_, *branch, *nested}) {
    CompactionOptions compact;
    compact.materialize_deletions_threshold = 0;
    ASSERT_TRUE(t->Compact(compact).ok());
    CleanupOptions cleanup = RemoveAllOld();
    cleanup.delete_unreferenced = true;
    Result<CleanupResult> cleaned = t->CleanupOldVersions(cleanup);
    ASSERT_TRUE(cleaned.ok()) << cleaned.status();
  }
  EXPECT_EQ(Read(*table_), parent_rows);
  EXPECT_EQ(Read(**branch), branch_rows);
  EXPECT_EQ(Read(**reopened), branch_rows);

  Result<std::vector<BranchInfo>> branches = table_->ListBranches();
  ASSERT_TRUE(branches.ok()) << branches.status();
  ASSERT_EQ(branches->size(), 1u);
  EXPECT_EQ((*branches)[0].name, "exp");
  EXPECT_EQ((*branches)[0].forked_from, 3u);
  EXPECT_EQ((*branches)[0].prefix, branch_prefix);

  // Deleting the branch removes its objects (and its branch) and then the parent's files
  // only it used.
  ASSERT_TRUE(table_->DeleteBranch("exp").ok());
  EXPECT_EQ(CountObjects(branch_prefix), 0);
  EXPECT_TRUE(table_->DeleteBranch("exp").IsNotFound());
  EXPECT_THAT(*table_->ListBranches(), IsEmpty());
  EXPECT_EQ(Read(*table_), parent_rows);
  Result<VerifyReport> report = table_->Verify({.all_versions = true});
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->problems, IsEmpty());
}

TEST_F(RefsTest, BranchFromAnOlderVersionAndFromATag) {
  Write(*table_, RowRange(0, 3, "a"));  // version 2
  Write(*table_, RowRange(0, 3, "b"));  // version 3
  Result<std::shared_ptr<Table>> old = table_->CreateBranch("old", 2);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ(Read(**old), RowRange(0, 3, "a"));
  EXPECT_TRUE(table_->CreateBranch("none", 42).status().IsNotFound());
  EXPECT_TRUE(store_->Exists("t/_refs/branches/none").ok());
  EXPECT_FALSE(*store_->Exists("t/_refs/branches/none"));

  ASSERT_TRUE(table_->CreateTag("b").ok());
  Write(*table_, RowRange(0, 3, "c"));
  ASSERT_TRUE(table_->CleanupOldVersions(RemoveAllOld()).ok());
  Result<std::shared_ptr<Table>> tagged = table_->CheckoutTag("b");
  ASSERT_TRUE(tagged.ok()) << tagged.status();
  Result<std::shared_ptr<Table>> from_tag = (*tagged)->CreateBranch("from-tag");
  ASSERT_TRUE(from_tag.ok()) << from_tag.status();
  EXPECT_FALSE((*from_tag)->read_only());
  EXPECT_EQ(Read(**from_tag), RowRange(0, 3, "b"));
  EXPECT_EQ(Read(**old), RowRange(0, 3, "a"));
}

// The model: every table's rows and every tag's rows. Random steps on random tables; after
// each, every table and tag reads back exactly its model, from fresh handles.
TEST_F(RefsTest, RandomForkWriteCompactCleanupKeepsEveryRefReadable) {
  struct Node {
    std::string prefix;
    std::shared_ptr<Table> table;
    Rows rows;
  };
  std::map<std::string, Node> nodes;  // by prefix
  nodes[std::string(kPrefix)] = Node{std::string(kPrefix), table_, {}};
  std::map<std::pair<std::string, std::string>, Rows> tags;  // (prefix, label) -> rows
  std::mt19937_64 random(20261204);
  auto pick = [&](auto& map) {
    auto it = map.begin();
    std::advance(it, static_cast<long>(random() % map.size()));
    return it;
  };
  int64_t next_id = 0;
  int names = 0;
  constexpr int kSteps = 150;
  for (int step = 0; step < kSteps; ++step) {
    SCOPED_TRACE("step " + std::to_string(step));
    Node& node = pick(nodes)->second;
    const int op = static_cast<int>(random() % 10);
    if (op <= 2) {  // insert new rows and rewrite a few old ones
      Rows rows =
          RowRange(next_id, 1 + static_cast<int64_t>(random() % 20), "s" + std::to_string(step));
      next_id += static_cast<int64_t>(rows.size());
      for (int i = 0; i < 3 && !node.rows.empty(); ++i) {
        rows[pick(node.rows)->first] = "u" + std::to_string(step);
      }
      Write(*node.table, rows);
      for (const auto& [id, name] : rows) node.rows[id] = name;
    } else if (op == 3 && !node.rows.empty()) {  // delete a few rows
      std::vector<expr::Scalar> keys;
      for (int i = 0; i < 4 && !node.rows.empty(); ++i) {
        auto it = pick(node.rows);
        keys.push_back(expr::Scalar::Int64(it->first));
        node.rows.erase(it);
      }
      ASSERT_TRUE(node.table->DeleteKeys(keys).ok());
    } else if (op == 4) {  // compact
      CompactionOptions compact;
      compact.materialize_deletions_threshold = 0;
      ASSERT_TRUE(node.table->Compact(compact).ok());
    } else if (op == 5) {  // cleanup
      CleanupOptions cleanup = RemoveAllOld();
      cleanup.delete_unreferenced = random() % 2 == 0;
      Result<CleanupResult> cleaned = node.table->CleanupOldVersions(cleanup);
      ASSERT_TRUE(cleaned.ok()) << cleaned.status();
    } else if (op == 6 && nodes.size() < 8) {  // fork
      const std::string name = "b" + std::to_string(names++);
      Result<std::shared_ptr<Table>> branch = node.table->CreateBranch(name);
      ASSERT_TRUE(branch.ok()) << branch.status();
      const std::string prefix = Table::BranchPrefix(node.prefix, name);
      Rows rows = node.rows;
      nodes[prefix] = Node{prefix, *branch, std::move(rows)};
    } else if (op == 7) {  // tag
      const std::string label = "tag" + std::to_string(names++);
      ASSERT_TRUE(node.table->CreateTag(label).ok());
      tags[{node.prefix, label}] = node.rows;
    } else if (op == 8 && !tags.empty()) {  // delete a tag
      auto it = pick(tags);
      ASSERT_TRUE(nodes.at(it->first.first).table->DeleteTag(it->first.second).ok());
      tags.erase(it);
    } else if (op == 9 && nodes.size() > 1) {  // delete a branch (and everything under it)
      auto it = pick(nodes);
      if (it->first == kPrefix) continue;
      const std::string doomed = it->first;
      // "<parent>_branches/<name>/"
      const size_t at = doomed.rfind("_branches/");
      const std::string parent = doomed.substr(0, at);
      const std::string name = doomed.substr(at + 10, doomed.size() - at - 11);
      ASSERT_TRUE(nodes.at(parent).table->DeleteBranch(name).ok());
      std::erase_if(nodes, [&](const auto& entry) { return entry.first.starts_with(doomed); });
      std::erase_if(tags, [&](const auto& entry) { return entry.first.first.starts_with(doomed); });
    }
    for (const auto& [prefix, n] : nodes) {
      Result<std::shared_ptr<Table>> fresh = Table::Open(store_, prefix);
      ASSERT_TRUE(fresh.ok()) << prefix << ": " << fresh.status();
      Result<Rows> rows = ReadRows(**fresh);
      ASSERT_TRUE(rows.ok()) << prefix << ": " << rows.status();
      ASSERT_EQ(*rows, n.rows) << prefix;
    }
    for (const auto& [key, expected] : tags) {
      // From a fresh handle: a handle's file cache would still serve a deleted file.
      Result<std::shared_ptr<Table>> owner = Table::Open(store_, key.first);
      ASSERT_TRUE(owner.ok()) << key.first << ": " << owner.status();
      Result<std::shared_ptr<Table>> tagged = (*owner)->CheckoutTag(key.second);
      ASSERT_TRUE(tagged.ok()) << key.first << " " << key.second << ": " << tagged.status();
      Result<Rows> rows = ReadRows(**tagged);
      ASSERT_TRUE(rows.ok()) << key.first << " " << key.second << ": " << rows.status();
      ASSERT_EQ(*rows, expected) << key.first << " " << key.second;
    }
  }
  EXPECT_GT(nodes.size(), 1u);
  for (const auto& [prefix, n] : nodes) {
    Result<VerifyReport> report = n.table->Verify({.all_versions = true});
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_THAT(report->problems, IsEmpty()) << prefix;
  }
}

}  // namespace
}  // namespace strata::table
