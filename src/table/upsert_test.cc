// Table::Upsert: replacing rows by key, delete keys, metadata and its guard in one version,
// validation before any write, and rebasing on concurrent appends, upserts and compaction.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "strata/table.h"
#include "support/temp_dir.h"
#include "table/table_test_util.h"

namespace strata::table {
namespace {

using testing_util::Int64Column;
using testing_util::KeyedRows;
using testing_util::KeyedSchema;
using testing_util::PrimaryKey;
using testing_util::ReadAll;

// Rows with the given ids, every name "<tag><id>" and score 1.
RecordBatch TaggedRows(const std::vector<int64_t>& ids, const std::string& tag) {
  Int64Builder id_builder(int64());
  BinaryBuilder names(utf8());
  Float64Builder scores(float64());
  for (int64_t id : ids) {
    id_builder.Append(id);
    EXPECT_TRUE(names.Append(tag + std::to_string(id)).ok());
    scores.Append(1);
  }
  Result<RecordBatch> batch =
      RecordBatch::Make(KeyedSchema(), static_cast<int64_t>(ids.size()),
                        {*id_builder.Finish(), *names.Finish(), *scores.Finish()});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

// The name of the live row with key `id`, "" when there is none; fails on two.
std::string NameOf(const Table& table, int64_t id) {
  Result<RecordBatch> found = table.LookupKeys({expr::Scalar::Int64(id)}, {"name"});
  EXPECT_TRUE(found.ok()) << found.status();
  if (!found.ok() || found->num_rows() == 0) return "";
  EXPECT_EQ(found->num_rows(), 1) << "two live rows with key " << id;
  Array names = found->GetColumnByName("name");
  return names.IsNull(0) ? "<null>" : std::string(names.StringValue(0));
}

// Sorted ids of every live row; the test fails when one appears twice.
std::vector<int64_t> LiveIdsUnique(const Table& table) {
  Result<RecordBatch> all = ReadAll(table, ScanOptions{.columns = {"id"}});
  EXPECT_TRUE(all.ok()) << all.status();
  if (!all.ok()) return {};
  std::vector<int64_t> ids = Int64Column(*all, "id");
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::adjacent_find(ids.begin(), ids.end()), ids.end()) << "a key has two live rows";
  return ids;
}

std::vector<int64_t> Range(int64_t begin, int64_t end) {
  std::vector<int64_t> out;
  for (int64_t i = begin; i < end; ++i) out.push_back(i);
  return out;
}

void ExpectVerifies(const Table& table) {
  Result<VerifyReport> report = table.Verify();
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->ok()) << (report->problems.empty() ? "" : report->problems.front());
}

class UpsertTest : public ::testing::Test {
 protected:
  int64_t ObjectCount(const std::string& dir) {
    Result<std::vector<ObjectMeta>> objects = store_->List("t/" + dir);
    EXPECT_TRUE(objects.ok()) << objects.status();
    return objects.ok() ? static_cast<int64_t>(objects->size()) : -1;
  }

  std::shared_ptr<ObjectStore> store_ = NewMemoryObjectStore();
};

TEST_F(UpsertTest, ReplacesExistingKeysAndAppendsNewOnes) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema()));
  ASSERT_OK(table->Append({KeyedRows(0, 10)}).status());
  ASSERT_OK_AND_ASSIGN(UpsertResult r, table->Upsert({TaggedRows({3, 4, 20, 21}, "new")}));
  EXPECT_EQ(r.version, 3u);
  EXPECT_EQ(table->version(), 3u);
  EXPECT_EQ(r.rows_appended, 4);
  EXPECT_EQ(r.rows_deleted, 2);
  EXPECT_EQ(r.fragments, 1);
  std::vector<int64_t> expected = Range(0, 10);
  expected.push_back(20);
  expected.push_back(21);
  EXPECT_EQ(LiveIdsUnique(*table), expected);
  EXPECT_EQ(NameOf(*table, 3), "new3");
  EXPECT_EQ(NameOf(*table, 20), "new20");
  EXPECT_EQ(NameOf(*table, 5), "n5");

  // Replacing every key again keeps the count: each old row is deleted once.
  ASSERT_OK_AND_ASSIGN(r, table->Upsert({TaggedRows({3, 4, 20, 21}, "newer")}));
  EXPECT_EQ(r.rows_deleted, 4);
  ASSERT_OK_AND_ASSIGN(int64_t rows, table->CountRows());
  EXPECT_EQ(rows, 12);
  EXPECT_EQ(NameOf(*table, 21), "newer21");

  ASSERT_OK_AND_ASSIGN(std::vector<VersionInfo> versions, table->ListVersions());
  ASSERT_EQ(versions.size(), 4u);
  EXPECT_EQ(versions[2].operation, "upsert");
  EXPECT_EQ(versions[3].operation, "upsert");
  EXPECT_EQ(versions[3].num_rows, 12);
  ExpectVerifies(*table);
}

TEST_F(UpsertTest, DeleteKeysOnlyDeleteAndNoMatchCommitsNothing) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema()));
  ASSERT_OK(table->Append({KeyedRows(0, 10)}).status());
  UpsertOptions options;
  options.delete_keys = {expr::Scalar::Int64(1), expr::Scalar::Int64(2), expr::Scalar::Int64(99)};
  ASSERT_OK_AND_ASSIGN(UpsertResult r, table->Upsert({}, options));
  EXPECT_EQ(r.version, 3u);
  EXPECT_EQ(r.rows_deleted, 2);
  EXPECT_EQ(r.rows_appended, 0);
  EXPECT_EQ(r.fragments, 0);
  std::vector<int64_t> expected = Range(0, 10);
  expected.erase(expected.begin() + 1, expected.begin() + 3);
  EXPECT_EQ(LiveIdsUnique(*table), expected);

  // Nothing left to delete, nothing to append, no metadata: no commit.
  ASSERT_OK_AND_ASSIGN(r, table->Upsert({}, options));
  EXPECT_EQ(r.version, 3u);
  EXPECT_EQ(r.rows_deleted, 0);
  EXPECT_EQ(table->version(), 3u);
  ASSERT_OK_AND_ASSIGN(uint64_t latest, table->LatestVersion());
  EXPECT_EQ(latest, 3u);

  // A delete key that is also a batch key is simply replaced.
  options.delete_keys = {expr::Scalar::Int64(5), expr::Scalar::Int64(6)};
  ASSERT_OK_AND_ASSIGN(r, table->Upsert({TaggedRows({5}, "x")}, options));
  EXPECT_EQ(r.rows_deleted, 2);
  EXPECT_EQ(NameOf(*table, 5), "x5");
  EXPECT_EQ(NameOf(*table, 6), "");
  ExpectVerifies(*table);
}

// String keys are sorted and checked as views into the batches, delete keys merged in.
TEST_F(UpsertTest, StringKeysRepeatedRejectedDeleteKeysMergedIn) {
  SchemaPtr s = schema({field("id", utf8(), false, PrimaryKey()), field("v", int64())});
  auto rows = [&](const std::vector<std::string>& ids, int64_t v) {
    BinaryBuilder id_builder(utf8());
    Int64Builder values(int64());
    for (const std::string& id : ids) {
      EXPECT_TRUE(id_builder.Append(id).ok());
      values.Append(v);
    }
    Result<RecordBatch> batch = RecordBatch::Make(s, static_cast<int64_t>(ids.size()),
                                                  {*id_builder.Finish(), *values.Finish()});
    EXPECT_TRUE(batch.ok()) << batch.status();
    return *batch;
  };
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", s));
  ASSERT_OK(table->Append({rows({"a", "b", "c"}, 1)}).status());

  // Repeated across batches, the second copy out of order.
  Result<UpsertResult> r = table->Upsert({rows({"z", "key-7"}, 2), rows({"m", "key-7"}, 2)});
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status();
  EXPECT_NE(r.status().message().find("key-7"), std::string::npos) << r.status();

  // Delete keys that repeat and that name a written key.
  UpsertOptions options;
  options.delete_keys = {expr::Scalar::String("a"), expr::Scalar::String("d"),
                         expr::Scalar::String("a")};
  ASSERT_OK_AND_ASSIGN(UpsertResult done, table->Upsert({rows({"d", "b"}, 3)}, options));
  EXPECT_EQ(done.rows_deleted, 2);  // a, and the old b
  EXPECT_EQ(done.rows_appended, 2);
  ASSERT_OK_AND_ASSIGN(RecordBatch all, ReadAll(*table, ScanOptions{}));
  std::map<std::string, int64_t> live;
  for (int64_t i = 0; i < all.num_rows(); ++i) {
    const std::string id(all.GetColumnByName("id").StringValue(i));
    EXPECT_TRUE(live.emplace(id, all.GetColumnByName("v").Value<int64_t>(i)).second) << id;
  }
  EXPECT_EQ(live, (std::map<std::string, int64_t>{{"b", 3}, {"c", 1}, {"d", 3}}));
  ExpectVerifies(*table);
}

TEST_F(UpsertTest, EmptyUpsertCommitsNothing) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema()));
  ASSERT_OK_AND_ASSIGN(UpsertResult r, table->Upsert({}));
  EXPECT_EQ(r.version, 1u);
  ASSERT_OK_AND_ASSIGN(r, table->Upsert({TaggedRows({}, "x")}));
  EXPECT_EQ(r.version, 1u);
  ASSERT_OK_AND_ASSIGN(uint64_t latest, table->LatestVersion());
  EXPECT_EQ(latest, 1u);
}

TEST_F(UpsertTest, MetadataLandsInTheSameVersionAsTheRows) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema()));
  ASSERT_OK(table->Append({KeyedRows(0, 5)}).status());
  ASSERT_OK(table->UpdateMetadata(KeyValueMetadata({{"drop", "me"}})).status());
  UpsertOptions options;
  options.metadata_updates = KeyValueMetadata({{"lsm.generation", "7"}, {"drop", ""}});
  ASSERT_OK_AND_ASSIGN(UpsertResult r, table->Upsert({TaggedRows({1, 9}, "m")}, options));
  EXPECT_EQ(r.version, 4u);
  EXPECT_EQ(table->metadata().Get("lsm.generation").value_or(""), "7");
  EXPECT_FALSE(table->metadata().Get("drop").has_value());
  EXPECT_EQ(NameOf(*table, 9), "m9");

  ASSERT_OK_AND_ASSIGN(auto before, table->Checkout(3));
  EXPECT_FALSE(before->metadata().Get("lsm.generation").has_value());
  EXPECT_EQ(before->metadata().Get("drop").value_or(""), "me");
  EXPECT_EQ(LiveIdsUnique(*before), Range(0, 5));
  EXPECT_EQ(NameOf(*before, 1), "n1");

  // Metadata alone commits too.
  options.metadata_updates = KeyValueMetadata({{"lsm.generation", "8"}});
  ASSERT_OK_AND_ASSIGN(r, table->Upsert({}, options));
  EXPECT_EQ(r.version, 5u);
  EXPECT_EQ(table->metadata().Get("lsm.generation").value_or(""), "8");
  ExpectVerifies(*table);
}

TEST_F(UpsertTest, GuardMismatchIsAbortedAndCommitsNothing) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema()));
  ASSERT_OK(table->Append({KeyedRows(0, 5)}).status());
  ASSERT_OK(table->UpdateMetadata(KeyValueMetadata({{"gen", "1"}})).status());
  const int64_t data_files = ObjectCount("data/");
  const int64_t index_files = ObjectCount("_indices/");
  const int64_t deletion_files = ObjectCount("_deletions/");

  UpsertOptions options;
  options.expected_metadata = KeyValueMetadata({{"gen", "2"}});
  options.metadata_updates = KeyValueMetadata({{"gen", "3"}});
  Result<UpsertResult> r = table->Upsert({TaggedRows({1, 7}, "g")}, options);
  EXPECT_TRUE(r.status().IsAborted()) << r.status();
  EXPECT_NE(r.status().message().find("gen"), std::string::npos) << r.status();
  EXPECT_EQ(table->version(), 3u);
  ASSERT_OK_AND_ASSIGN(uint64_t latest, table->LatestVersion());
  EXPECT_EQ(latest, 3u);
  EXPECT_EQ(NameOf(*table, 1), "n1");
  EXPECT_EQ(table->metadata().Get("gen").value_or(""), "1");
  // What the aborted call wrote was removed again.
  EXPECT_EQ(ObjectCount("data/"), data_files);
  EXPECT_EQ(ObjectCount("_indices/"), index_files);
  EXPECT_EQ(ObjectCount("_deletions/"), deletion_files);

  // An absent key is expected as "".
  options.expected_metadata = KeyValueMetadata({{"gen", "1"}, {"absent", ""}});
  ASSERT_OK_AND_ASSIGN(UpsertResult ok, table->Upsert({TaggedRows({1, 7}, "g")}, options));
  EXPECT_EQ(ok.version, 4u);
  EXPECT_EQ(NameOf(*table, 1), "g1");
  EXPECT_EQ(table->metadata().Get("gen").value_or(""), "3");
  ExpectVerifies(*table);
}

TEST_F(UpsertTest, GuardIsCheckedAgainstTheVersionTheCommitLandsOn) {
  ASSERT_OK_AND_ASSIGN(auto a, Table::Create(store_, "t/", KeyedSchema()));
  ASSERT_OK(a->Append({KeyedRows(0, 5)}).status());
  ASSERT_OK(a->UpdateMetadata(KeyValueMetadata({{"gen", "1"}})).status());
  ASSERT_OK_AND_ASSIGN(auto b, Table::Open(store_, "t/"));
  // b still reads version 3 (gen 1); a concurrent merge moves gen on.
  ASSERT_OK(a->UpdateMetadata(KeyValueMetadata({{"gen", "2"}})).status());
  UpsertOptions options;
  options.expected_metadata = KeyValueMetadata({{"gen", "1"}});
  options.metadata_updates = KeyValueMetadata({{"gen", "2"}});
  Result<UpsertResult> r = b->Upsert({TaggedRows({0}, "b")}, options);
  EXPECT_TRUE(r.status().IsAborted()) << r.status();
  EXPECT_EQ(b->version(), 3u);
  ASSERT_OK_AND_ASSIGN(uint64_t latest, b->LatestVersion());
  EXPECT_EQ(latest, 4u);
  ASSERT_OK(b->Refresh());
  EXPECT_EQ(NameOf(*b, 0), "n0");
  ExpectVerifies(*b);
}

TEST_F(UpsertTest, InvalidInputIsRejectedBeforeAnyWrite) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema()));
  ASSERT_OK(table->Append({KeyedRows(0, 5)}).status());
  const int64_t data_files = ObjectCount("data/");

  // A key repeated within the batches, across two batches.
  Result<UpsertResult> r = table->Upsert({TaggedRows({10, 11}, "a"), TaggedRows({12, 11}, "b")});
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status();
  EXPECT_NE(r.status().message().find("11"), std::string::npos) << r.status();
  // A delete key of the wrong type.
  UpsertOptions options;
  options.delete_keys = {expr::Scalar::String("1")};
  r = table->Upsert({TaggedRows({10}, "a")}, options);
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status();
  options.delete_keys = {expr::Scalar::Null()};
  r = table->Upsert({}, options);
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status();
  // A batch that does not match the schema.
  Int64Builder wrong(int64());
  wrong.Append(1);
  ASSERT_OK_AND_ASSIGN(RecordBatch bad,
                       RecordBatch::Make(schema({field("other", int64())}), 1, {*wrong.Finish()}));
  r = table->Upsert({bad});
  EXPECT_TRUE(r.status().IsInvalidArgument()) << r.status();

  EXPECT_EQ(ObjectCount("data/"), data_files);
  ASSERT_OK_AND_ASSIGN(uint64_t latest, table->LatestVersion());
  EXPECT_EQ(latest, 2u);
  EXPECT_EQ(LiveIdsUnique(*table), Range(0, 5));

  // No primary key; a read-only handle.
  ASSERT_OK_AND_ASSIGN(auto unkeyed, Table::Create(store_, "u/", schema({field("a", int64())})));
  EXPECT_TRUE(unkeyed->Upsert({}).status().IsInvalidArgument());
  ASSERT_OK_AND_ASSIGN(auto old, table->Checkout(2));
  EXPECT_TRUE(old->Upsert({TaggedRows({1}, "r")}).status().IsInvalidArgument());
  ExpectVerifies(*table);
}

TEST_F(UpsertTest, RebasedUpsertDeletesRowsAnAppendCommittedMeanwhile) {
  ASSERT_OK_AND_ASSIGN(auto a, Table::Create(store_, "t/", KeyedSchema()));
  ASSERT_OK(a->Append({KeyedRows(0, 10)}).status());
  ASSERT_OK_AND_ASSIGN(auto b, Table::Open(store_, "t/"));
  // After b's read version: a second row with key 3 and a first one with key 50.
  ASSERT_OK(a->Append({TaggedRows({3, 50}, "appended")}).status());
  ASSERT_OK_AND_ASSIGN(UpsertResult r, b->Upsert({TaggedRows({3, 50, 60}, "b")}));
  EXPECT_EQ(r.version, 4u);
  EXPECT_EQ(r.rows_deleted, 3);  // 3 from the read version, 3 and 50 appended meanwhile
  std::vector<int64_t> expected = Range(0, 10);
  expected.push_back(50);
  expected.push_back(60);
  EXPECT_EQ(LiveIdsUnique(*b), expected);
  EXPECT_EQ(NameOf(*b, 3), "b3");
  EXPECT_EQ(NameOf(*b, 50), "b50");
  ExpectVerifies(*b);

  // The same when the concurrent rows were appended and then compacted into new fragments.
  ASSERT_OK_AND_ASSIGN(auto c, Table::Open(store_, "t/"));
  ASSERT_OK(a->Refresh());
  ASSERT_OK(a->Append({TaggedRows({70}, "x")}).status());
  ASSERT_OK(a->Append({TaggedRows({71}, "x")}).status());
  ASSERT_OK_AND_ASSIGN(CompactionResult compacted, a->Compact());
  ASSERT_GT(compacted.fragments_removed, 0);
  UpsertOptions options;
  options.delete_keys = {expr::Scalar::Int64(70), expr::Scalar::Int64(71)};
  ASSERT_OK_AND_ASSIGN(r, c->Upsert({TaggedRows({80}, "c")}, options));
  EXPECT_EQ(r.rows_deleted, 2);
  EXPECT_EQ(NameOf(*c, 70), "");
  EXPECT_EQ(NameOf(*c, 71), "");
  EXPECT_EQ(NameOf(*c, 80), "c80");
  ExpectVerifies(*c);

  // With nothing to commit at its read version, an upsert makes no commit: it took effect
  // before the concurrent append, which stays.
  ASSERT_OK_AND_ASSIGN(auto d, Table::Open(store_, "t/"));
  ASSERT_OK(c->Append({TaggedRows({90}, "x")}).status());
  options.delete_keys = {expr::Scalar::Int64(90)};
  ASSERT_OK_AND_ASSIGN(r, d->Upsert({}, options));
  EXPECT_EQ(r.rows_deleted, 0);
  EXPECT_EQ(r.version, d->version());
  EXPECT_EQ(NameOf(*c, 90), "x90");
}

// An upsert read at a version without fragments skips the row selection there, yet still
// deletes what an append committed meanwhile.
TEST_F(UpsertTest, RebasedUpsertFromAnEmptyVersionDeletesRowsAppendedMeanwhile) {
  ASSERT_OK_AND_ASSIGN(auto a, Table::Create(store_, "t/", KeyedSchema()));
  ASSERT_OK_AND_ASSIGN(auto b, Table::Open(store_, "t/"));
  ASSERT_OK(a->Append({TaggedRows({3, 4}, "appended")}).status());
  ASSERT_OK_AND_ASSIGN(UpsertResult r, b->Upsert({TaggedRows({3, 5}, "b")}));
  EXPECT_EQ(r.rows_deleted, 1);
  EXPECT_EQ(LiveIdsUnique(*b), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_EQ(NameOf(*b, 3), "b3");
  EXPECT_EQ(NameOf(*b, 4), "appended4");
  ExpectVerifies(*b);
}

TEST_F(UpsertTest, RebasedUpsertMergesWithAConcurrentDelete) {
  ASSERT_OK_AND_ASSIGN(auto a, Table::Create(store_, "t/", KeyedSchema()));
  ASSERT_OK(a->Append({KeyedRows(0, 10)}).status());
  ASSERT_OK_AND_ASSIGN(auto b, Table::Open(store_, "t/"));
  ASSERT_OK(a->DeleteKeys({expr::Scalar::Int64(0), expr::Scalar::Int64(1)}).status());
  ASSERT_OK_AND_ASSIGN(UpsertResult r, b->Upsert({TaggedRows({1, 2}, "b")}));
  EXPECT_EQ(r.rows_deleted, 1);  // 1 was deleted already
  std::vector<int64_t> expected = Range(1, 10);
  EXPECT_EQ(LiveIdsUnique(*b), expected);
  EXPECT_EQ(NameOf(*b, 1), "b1");
  EXPECT_EQ(NameOf(*b, 2), "b2");
  ExpectVerifies(*b);
}

TEST_F(UpsertTest, DeleteRebasedOnAnUpsertThatEmptiedAFragmentIsNotAConflict) {
  ASSERT_OK_AND_ASSIGN(auto a, Table::Create(store_, "t/", KeyedSchema()));
  ASSERT_OK(a->Append({KeyedRows(0, 3)}).status());
  ASSERT_OK(a->Append({KeyedRows(3, 3)}).status());
  ASSERT_OK_AND_ASSIGN(auto b, Table::Open(store_, "t/"));
  // a replaces every row of fragment 0, which leaves it with no live row: it is removed.
  ASSERT_OK(a->Upsert({TaggedRows({0, 1, 2}, "a")}).status());
  ASSERT_OK_AND_ASSIGN(TableDescription described, a->Describe());
  for (const FragmentInfo& fragment : described.fragments) EXPECT_NE(fragment.id, 0u);
  // b still reads fragment 0 and deletes rows of it and of fragment 1.
  ASSERT_OK_AND_ASSIGN(DeleteResult d, b->Delete("id IN (1, 4)"));
  EXPECT_EQ(d.rows_deleted, 1);  // only 4: b's row 1 was replaced already
  EXPECT_EQ(LiveIdsUnique(*b), (std::vector<int64_t>{0, 1, 2, 3, 5}));
  EXPECT_EQ(NameOf(*b, 1), "a1");
  ExpectVerifies(*b);
}

TEST_F(UpsertTest, ConcurrentUpsertsOfOverlappingKeysLeaveOneRowPerKey) {
  ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store_, "t/", KeyedSchema()));
  ASSERT_OK(table->Append({KeyedRows(0, 20)}).status());
  // Deterministic first: b's read version predates a's upsert of the same keys.
  ASSERT_OK_AND_ASSIGN(auto a, Table::Open(store_, "t/"));
  ASSERT_OK_AND_ASSIGN(auto b, Table::Open(store_, "t/"));
  ASSERT_OK(a->Upsert({TaggedRows({1, 2, 3}, "a")}).status());
  ASSERT_OK_AND_ASSIGN(UpsertResult rb, b->Upsert({TaggedRows({2, 3, 4}, "b")}));
  EXPECT_EQ(rb.rows_deleted, 3);  // a's 2 and 3, the original 4
  EXPECT_EQ(LiveIdsUnique(*b), Range(0, 20));
  EXPECT_EQ(NameOf(*b, 1), "a1");
  EXPECT_EQ(NameOf(*b, 3), "b3");

  // Then from threads, each with its own handle, round after round.
  constexpr int kThreads = 2;
  constexpr int kRounds = 4;
  std::vector<std::shared_ptr<Table>> handles;
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_OK_AND_ASSIGN(auto h, Table::Open(store_, "t/"));
    handles.push_back(h);
  }
  std::atomic<int> committed{0};
  std::vector<std::string> failures(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        Result<UpsertResult> r =
            handles[t]->Upsert({TaggedRows({5, 6, 7, int64_t{8} + t}, "t" + std::to_string(t))});
        if (!r.ok()) {
          failures[t] = r.status().ToString();
          return;
        }
        ++committed;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::string& failure : failures) EXPECT_EQ(failure, "");
  EXPECT_EQ(committed.load(), kThreads * kRounds);
  ASSERT_OK(table->Refresh());
  EXPECT_EQ(LiveIdsUnique(*table), Range(0, 20));
  ASSERT_OK_AND_ASSIGN(std::vector<VersionInfo> versions, table->ListVersions());
  int upserts = 0;
  for (const VersionInfo& v : versions) upserts += v.operation == "upsert" ? 1 : 0;
  EXPECT_EQ(upserts, 2 + kThreads * kRounds);
  ExpectVerifies(*table);
}

TEST_F(UpsertTest, UpsertRacingCompactionIsBusyOrCorrect) {
  ASSERT_OK_AND_ASSIGN(auto a, Table::Create(store_, "t/", KeyedSchema()));
  ASSERT_OK(a->Append({KeyedRows(0, 5)}).status());
  ASSERT_OK(a->Append({KeyedRows(5, 5)}).status());
  ASSERT_OK_AND_ASSIGN(auto b, Table::Open(store_, "t/"));
  ASSERT_OK_AND_ASSIGN(CompactionResult compacted, a->Compact());
  ASSERT_EQ(compacted.fragments_removed, 2);
  // b read before the compaction and replaces a row of a rewritten fragment.
  Result<UpsertResult> r = b->Upsert({TaggedRows({1, 30}, "b")});
  if (r.ok()) {
    EXPECT_EQ(NameOf(*b, 1), "b1");
  } else {
    EXPECT_TRUE(r.status().IsBusy()) << r.status();
    EXPECT_EQ(b->version(), 3u);
    ASSERT_OK(b->Refresh());
    ASSERT_OK(b->Upsert({TaggedRows({1, 30}, "b")}).status());
  }
  std::vector<int64_t> expected = Range(0, 10);
  expected.push_back(30);
  EXPECT_EQ(LiveIdsUnique(*b), expected);
  EXPECT_EQ(NameOf(*b, 1), "b1");
  ExpectVerifies(*b);

  // A compaction racing upserts from threads: never two live rows of one key.
  ASSERT_OK(a->Refresh());
  ASSERT_OK_AND_ASSIGN(auto c, Table::Open(store_, "t/"));
  std::thread compactor([&] {
    for (int i = 0; i < 3; ++i) {
      Status s = a->Compact().status();
      EXPECT_TRUE(s.ok() || s.IsBusy()) << s;
      (void)a->Refresh();
    }
  });
  for (int round = 0; round < 4; ++round) {
    Result<UpsertResult> u = c->Upsert({TaggedRows({2, 3, 31}, "r" + std::to_string(round))});
    EXPECT_TRUE(u.ok() || u.status().IsBusy()) << u.status();
    if (!u.ok()) ASSERT_OK(c->Refresh());
  }
  compactor.join();
  ASSERT_OK(c->Refresh());
  ASSERT_OK(c->Upsert({TaggedRows({2, 31}, "last")}).status());
  EXPECT_EQ(NameOf(*c, 2), "last2");
  expected.insert(std::upper_bound(expected.begin(), expected.end(), 31), 31);
  EXPECT_EQ(LiveIdsUnique(*c), expected);
  ExpectVerifies(*c);
}

TEST(UpsertLocalStoreTest, ReopenSeesTheUpsert) {
  testing::TempDir dir("upsert");
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ObjectStore> store, OpenLocalObjectStore(dir.str()));
  {
    ASSERT_OK_AND_ASSIGN(auto table, Table::Create(store, "t/", KeyedSchema()));
    ASSERT_OK(table->Append({KeyedRows(0, 4)}).status());
    UpsertOptions options;
    options.metadata_updates = KeyValueMetadata({{"gen", "1"}});
    ASSERT_OK(table->Upsert({TaggedRows({2}, "disk")}, options).status());
  }
  ASSERT_OK_AND_ASSIGN(store, OpenLocalObjectStore(dir.str()));
  ASSERT_OK_AND_ASSIGN(auto table, Table::Open(store, "t/"));
  EXPECT_EQ(LiveIdsUnique(*table), Range(0, 4));
  EXPECT_EQ(NameOf(*table, 2), "disk2");
  EXPECT_EQ(table->metadata().Get("gen").value_or(""), "1");
  ExpectVerifies(*table);
}

}  // namespace
}  // namespace strata::table
