// Tests of newest-wins reads (LsmScan, LsmGet, LsmCount) over real memtables, generations
// and a base table, including a randomized comparison against a std::map model.
#include "lsm/lsm_read.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "lsm/key.h"
#include "lsm/layout.h"
#include "strata/builder.h"
#include "support/status_assertions.h"
#include "support/temp_dir.h"
#include "table/table_test_util.h"

namespace strata::lsm {
namespace {

using table::testing_util::PrimaryKey;

// id int64 (key), status utf8 NOT NULL, n int64 nullable.
SchemaPtr StoreSchema() {
  return schema({field("id", int64(), false, PrimaryKey()), field("status", utf8(), false),
                 field("n", int64(), true)});
}

// The store schema with every non-key column nullable (tombstone batches).
SchemaPtr TombstoneSchema() {
  return schema({field("id", int64(), false, PrimaryKey()), field("status", utf8(), true),
                 field("n", int64(), true)});
}

struct Row {
  int64_t id = -1;
  std::string status;
  std::optional<int64_t> n;
  friend bool operator==(const Row&, const Row&) = default;
};

std::ostream& operator<<(std::ostream& os, const Row& r) {
  os << "{" << r.id << ", '" << r.status << "', ";
  if (r.n) {
    os << *r.n;
  } else {
    os << "null";
  }
  return os << "}";
}

// A put (tombstone = false) or a deletion of `row.id`.
struct Op {
  Row row;
  bool tombstone = false;
};

Op Put(int64_t id, std::string status, std::optional<int64_t> n = std::nullopt) {
  return Op{Row{id, std::move(status), n}, false};
}
Op Del(int64_t id) { return Op{Row{id, "", std::nullopt}, true}; }

RecordBatch MakeBatch(const std::vector<Op>& ops, bool tombstone) {
  Int64Builder ids(int64());
  BinaryBuilder statuses(utf8());
  Int64Builder ns(int64());
  for (const Op& op : ops) {
    ids.Append(op.row.id);
    if (tombstone) {
      statuses.AppendNull();
      ns.AppendNull();
      continue;
    }
    EXPECT_TRUE(statuses.Append(op.row.status).ok());
    if (op.row.n) {
      ns.Append(*op.row.n);
    } else {
      ns.AppendNull();
    }
  }
  Result<RecordBatch> batch = RecordBatch::Make(tombstone ? TombstoneSchema() : StoreSchema(),
                                                static_cast<int64_t>(ops.size()),
                                                {*ids.Finish(), *statuses.Finish(), *ns.Finish()});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

// Rows of the batches; a column the batches lack reads as the Row default.
std::vector<Row> RowsOf(const std::vector<RecordBatch>& batches) {
  std::vector<Row> out;
  for (const RecordBatch& b : batches) {
    Array id = b.GetColumnByName("id");
    Array status = b.GetColumnByName("status");
    Array n = b.GetColumnByName("n");
    for (int64_t i = 0; i < b.num_rows(); ++i) {
      Row r;
      if (id.is_valid_handle()) r.id = id.Value<int64_t>(i);
      if (status.is_valid_handle()) r.status = std::string(status.StringValue(i));
      if (n.is_valid_handle() && !n.IsNull(i)) r.n = n.Value<int64_t>(i);
      out.push_back(r);
    }
  }
  return out;
}

std::vector<Row> SortedById(std::vector<Row> rows) {
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) { return a.id < b.id; });
  return rows;
}

class LsmReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = NewMemoryObjectStore();
    table::TableOptions options;
    options.max_rows_per_batch = 4;  // several base batches even for small tables
    ASSERT_OK_AND_ASSIGN(base_, table::Table::Create(store_, prefix_, StoreSchema(), options));
    ASSERT_OK_AND_ASSIGN(shard_, Uuid::Parse("6f1c0a52-3b7e-4d0e-9a55-0c1d2e3f4a5b"));
  }

  // Appends runs of puts and of tombstones as separate memtable batches, in order.
  std::shared_ptr<MemTable> FillMemTable(const std::vector<Op>& ops) {
    auto memtable = MemTable::Make(StoreSchema(), 0);
    size_t i = 0;
    uint64_t offset = 0;
    while (i < ops.size()) {
      size_t j = i;
      while (j < ops.size() && ops[j].tombstone == ops[i].tombstone) ++j;
      std::vector<Op> run(ops.begin() + static_cast<std::ptrdiff_t>(i),
                          ops.begin() + static_cast<std::ptrdiff_t>(j));
      Status st = memtable->Append(MakeBatch(run, ops[i].tombstone), ops[i].tombstone,
                                   MakeWalPosition(1, 1, ++offset));
      EXPECT_TRUE(st.ok()) << st;
      i = j;
    }
    return memtable;
  }

  std::shared_ptr<const MemTableSnapshot> Mem(const std::vector<Op>& ops) {
    return FillMemTable(ops)->Snapshot();
  }

  Result<std::shared_ptr<Generation>> Gen(const std::vector<Op>& ops) {
    std::shared_ptr<MemTable> memtable = FillMemTable(ops);
    STRATA_ASSIGN_OR_RETURN(
        pb::Generation entry,
        WriteGeneration(store_, prefix_, shard_, ++next_generation_, *memtable->Snapshot(), {}));
    return Generation::Open(store_, prefix_, shard_, entry, {});
  }

  // Newest-wins upsert of the puts, then deletion of the tombstoned keys.
  void BaseApply(const std::vector<Op>& ops) {
    std::map<int64_t, Op> last;
    for (const Op& op : ops) last[op.row.id] = op;
    std::vector<Op> puts;
    std::vector<expr::Scalar> deletes;
    for (const auto& [id, op] : last) {
      if (op.tombstone) {
        deletes.push_back(expr::Scalar::Int64(id));
      } else {
        puts.push_back(op);
      }
    }
    if (!puts.empty()) {
      table::UpsertOptions options;
      options.delete_keys = deletes;
      Result<table::UpsertResult> r = base_->Upsert({MakeBatch(puts, false)}, options);
      ASSERT_TRUE(r.ok()) << r.status();
    } else if (!deletes.empty()) {
      ASSERT_TRUE(base_->DeleteKeys(deletes).ok());
    }
  }

  LsmView View(std::vector<std::shared_ptr<Generation>> generations = {},
               std::vector<std::shared_ptr<const MemTableSnapshot>> memtables = {},
               bool with_base = true) {
    LsmView view;
    view.schema = StoreSchema();
    view.key_column = 0;
    if (with_base) view.base = base_;
    view.generations = std::move(generations);
    view.memtables = std::move(memtables);
    return view;
  }

  // Scans, checks the batches (non-empty, store fields of the projection) and returns rows.
  std::vector<Row> Scan(const LsmView& view, const LsmScanOptions& options = {}) {
    Result<std::vector<RecordBatch>> batches = LsmScan(view, options);
    EXPECT_TRUE(batches.ok()) << batches.status();
    if (!batches.ok()) return {};
    std::vector<std::string> names = options.columns;
    if (names.empty()) names = {"id", "status", "n"};
    for (const RecordBatch& b : *batches) {
      EXPECT_GT(b.num_rows(), 0);
      EXPECT_EQ(b.num_columns(), static_cast<int>(names.size()));
      for (int c = 0; c < b.num_columns() && c < static_cast<int>(names.size()); ++c) {
        EXPECT_TRUE(b.schema()->field(c)->Equals(*StoreSchema()->GetFieldByName(names[c]), false))
            << b.schema()->field(c)->ToString();
      }
    }
    return RowsOf(*batches);
  }

  std::vector<Row> Get(const LsmView& view, const std::vector<int64_t>& ids,
                       const std::vector<std::string>& columns = {}) {
    std::vector<expr::Scalar> keys;
    for (int64_t id : ids) keys.push_back(expr::Scalar::Int64(id));
    Result<RecordBatch> batch = LsmGet(view, keys, columns);
    EXPECT_TRUE(batch.ok()) << batch.status();
    if (!batch.ok()) return {};
    const int expected_columns = columns.empty() ? 3 : static_cast<int>(columns.size());
    EXPECT_EQ(batch->num_columns(), expected_columns);
    EXPECT_TRUE(batch->ValidateFull().ok());
    return RowsOf({*batch});
  }

  int64_t Count(const LsmView& view, const std::string& filter = {}) {
    Result<int64_t> count = LsmCount(view, filter);
    EXPECT_TRUE(count.ok()) << count.status();
    return count.ok() ? *count : -1;
  }

  std::shared_ptr<ObjectStore> store_;
  std::string prefix_ = "db/";
  std::shared_ptr<table::Table> base_;
  Uuid shard_;
  uint64_t next_generation_ = 0;
};

TEST_F(LsmReadTest, NewestSourceWinsForOneKey) {
  BaseApply({Put(1, "base", 10), Put(2, "base2", 20), Put(3, "base3", 30)});
  ASSERT_OK_AND_ASSIGN(auto g1, Gen({Put(1, "g1", 11), Put(3, "g1-3", 31)}));
  ASSERT_OK_AND_ASSIGN(auto g2, Gen({Put(1, "g2", 12)}));
  auto mem = Mem({Put(1, "mem-old", 13), Put(1, "mem", 14)});

  EXPECT_EQ(SortedById(Scan(View({g2, g1}, {mem}))),
            (std::vector<Row>{{1, "mem", 14}, {2, "base2", 20}, {3, "g1-3", 31}}));
  EXPECT_EQ(SortedById(Scan(View({g2, g1}))),
            (std::vector<Row>{{1, "g2", 12}, {2, "base2", 20}, {3, "g1-3", 31}}));
  EXPECT_EQ(SortedById(Scan(View({g1}))),
            (std::vector<Row>{{1, "g1", 11}, {2, "base2", 20}, {3, "g1-3", 31}}));
  EXPECT_EQ(Get(View({g2, g1}, {mem}), {1, 2, 3}),
            (std::vector<Row>{{1, "mem", 14}, {2, "base2", 20}, {3, "g1-3", 31}}));
  EXPECT_EQ(Get(View({g2, g1}), {3, 1}), (std::vector<Row>{{3, "g1-3", 31}, {1, "g2", 12}}));
  // Newer memtable snapshot first.
  auto newer_mem = Mem({Put(1, "newest", 15)});
  EXPECT_EQ(Get(View({g2, g1}, {newer_mem, mem}), {1}), (std::vector<Row>{{1, "newest", 15}}));
  EXPECT_EQ(Count(View({g2, g1}, {newer_mem, mem})), 3);
}

TEST_F(LsmReadTest, NewerRowsComeBeforeBaseRows) {
  BaseApply({Put(1, "b"), Put(2, "b"), Put(3, "b")});
  ASSERT_OK_AND_ASSIGN(auto g1, Gen({Put(2, "g")}));
  auto mem = Mem({Put(3, "m")});
  std::vector<Row> rows = Scan(View({g1}, {mem}));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0], (Row{3, "m", std::nullopt}));
  EXPECT_EQ(rows[1], (Row{2, "g", std::nullopt}));
  EXPECT_EQ(rows[2], (Row{1, "b", std::nullopt}));
}

TEST_F(LsmReadTest, TombstoneHidesOlderSourcesAndNewerPutResurrects) {
  BaseApply({Put(1, "base", 1), Put(2, "base", 2)});
  ASSERT_OK_AND_ASSIGN(auto g1, Gen({Put(1, "g1", 3), Put(2, "g1", 4)}));
  ASSERT_OK_AND_ASSIGN(auto g2, Gen({Del(1)}));

  EXPECT_EQ(Scan(View({g2, g1})), (std::vector<Row>{{2, "g1", 4}}));
  EXPECT_EQ(Get(View({g2, g1}), {1, 2}), (std::vector<Row>{{2, "g1", 4}}));
  EXPECT_EQ(Count(View({g2, g1})), 1);

  auto mem = Mem({Put(1, "back", 5)});
  EXPECT_EQ(SortedById(Scan(View({g2, g1}, {mem}))),
            (std::vector<Row>{{1, "back", 5}, {2, "g1", 4}}));
  EXPECT_EQ(Get(View({g2, g1}, {mem}), {1}), (std::vector<Row>{{1, "back", 5}}));

  // A memtable tombstone hides the generations and the base; a later put in the same
  // memtable brings the key back.
  auto mem_del = Mem({Del(2)});
  EXPECT_EQ(Scan(View({g2, g1}, {mem_del})), std::vector<Row>{});
  EXPECT_EQ(Get(View({g2, g1}, {mem_del}), {2, 1}), std::vector<Row>{});
  auto mem_del_put = Mem({Del(2), Put(2, "again", 6)});
  EXPECT_EQ(Scan(View({g2, g1}, {mem_del_put})), (std::vector<Row>{{2, "again", 6}}));
  auto mem_put_del = Mem({Put(2, "gone", 6), Del(2)});
  EXPECT_EQ(Scan(View({g2, g1}, {mem_put_del})), std::vector<Row>{});
  EXPECT_EQ(Get(View({g2, g1}, {mem_put_del}), {2}), std::vector<Row>{});
}

// With no base rows, a filtered scan checks each generation's rows passing the filter
// against the newer generations' key indexes instead of collecting keys: rows that newer
// generations overwrite (passing the filter or not) or delete stay hidden, and so do those a
// memtable overwrites or deletes.
TEST_F(LsmReadTest, FilteredScansWithNoBaseRowsStillHideOlderVersions) {
  ASSERT_OK_AND_ASSIGN(
      auto g1, Gen({Put(1, "ok", 11), Put(2, "ok", 12), Put(5, "ok", 15), Put(6, "ok", 16)}));
  ASSERT_OK_AND_ASSIGN(auto g2, Gen({Put(1, "bad", 21), Del(2), Put(3, "ok", 23)}));
  ASSERT_OK_AND_ASSIGN(auto g3, Gen({Put(3, "bad", 33), Put(7, "ok", 37)}));
  for (bool with_base : {true, false}) {  // an empty base table, or none
    SCOPED_TRACE(with_base ? "empty base" : "no base");
    const LsmView view = View({g3, g2, g1}, {}, with_base);
    LsmScanOptions ok_only;
    ok_only.filter = "status = 'ok'";
    EXPECT_EQ(Scan(view, ok_only), (std::vector<Row>{{7, "ok", 37}, {5, "ok", 15}, {6, "ok", 16}}));
    EXPECT_EQ(Count(view, ok_only.filter), 3);
    ok_only.offset = 1;
    ok_only.limit = 1;
    EXPECT_EQ(Scan(view, ok_only), (std::vector<Row>{{5, "ok", 15}}));
    LsmScanOptions big_n;
    big_n.filter = "n > 20";
    EXPECT_EQ(Scan(view, big_n), (std::vector<Row>{{3, "bad", 33}, {7, "ok", 37}, {1, "bad", 21}}));
    LsmScanOptions hidden;
    hidden.filter = "n < 20";
    EXPECT_EQ(Scan(view, hidden), (std::vector<Row>{{5, "ok", 15}, {6, "ok", 16}}));
    const LsmView with_mem = View({g3, g2, g1}, {Mem({Del(5), Put(6, "mem", 6)})}, with_base);
    EXPECT_EQ(Scan(with_mem, hidden), (std::vector<Row>{{6, "mem", 6}}));
  }
}

TEST_F(LsmReadTest, GenerationsScannedOnSeveralThreadsKeepTheOneThreadOutput) {
  // Six generations, each overwriting or deleting some keys of the older ones; no base rows,
  // so a filtered scan probes newer generations and may read them on several threads.
  std::vector<std::shared_ptr<Generation>> generations;  // newest first
  for (int64_t g = 0; g < 6; ++g) {
    std::vector<Op> ops;
    for (int64_t id = g * 7; id < g * 7 + 30; ++id) {
      if (id % 11 == g) {
        ops.push_back(Del(id));
      } else {
        ops.push_back(Put(id, id % 3 == 0 ? "ok" : "bad", g * 100 + id));
      }
    }
    ASSERT_OK_AND_ASSIGN(auto gen, Gen(ops));
    generations.insert(generations.begin(), gen);
  }
  const LsmView view = View(generations, {Mem({Put(40, "ok", -1), Del(41)})});
  for (const std::string filter : {"status = 'ok'", "n > 150", "id < 1000"}) {
    SCOPED_TRACE(filter);
    LsmScanOptions options;
    options.filter = filter;
    options.threads = 1;
    const std::vector<Row> one = Scan(view, options);
    ASSERT_FALSE(one.empty());
    for (int threads : {2, 3, 6, 50}) {
      options.threads = threads;
      options.max_queued_bytes = LsmScanOptions().max_queued_bytes;
      EXPECT_EQ(Scan(view, options), one) << threads << " threads";
      options.max_queued_bytes = 1;  // every thread ahead waits after one batch
      EXPECT_EQ(Scan(view, options), one) << threads << " threads, one batch queued ahead";
      options.offset = 3;  // applied by the caller's sink, in the one-thread order
      EXPECT_EQ(Scan(view, options), std::vector<Row>(one.begin() + 3, one.end()))
          << threads << " threads, offset 3";
      options.offset = 0;
      std::vector<Row> each;
      ASSERT_OK(LsmScanEach(view, options, [&](RecordBatch batch) {
        for (const Row& row : RowsOf({batch})) each.push_back(row);
        return Status::OK();
      }));
      EXPECT_EQ(each, one) << threads << " threads, one batch at a time";
    }
    // A consumer's error stops the scan and is returned, whichever thread read the batch.
    options.threads = 3;
    int calls = 0;
    const Status stopped = LsmScanEach(view, options, [&](RecordBatch) {
      ++calls;
      return Status::Aborted("enough");
    });
    EXPECT_TRUE(stopped.IsAborted()) << stopped;
    EXPECT_EQ(calls, 1);
  }

  // A generation whose files vanished fails the scan as it does on one thread.
  const std::string dir = ShardDir(prefix_, shard_) + generations[3]->entry().path();
  ASSERT_OK_AND_ASSIGN(std::vector<ObjectMeta> objects, store_->List(dir + "data/"));
  ASSERT_FALSE(objects.empty());
  for (const ObjectMeta& o : objects) ASSERT_OK(store_->Delete(o.key));
  std::vector<std::shared_ptr<Generation>> reopened;  // nothing of the files cached
  for (const auto& generation : generations) {
    ASSERT_OK_AND_ASSIGN(auto gen,
                         Generation::Open(store_, prefix_, shard_, generation->entry(), {}));
    reopened.push_back(gen);
  }
  for (int threads : {1, 2, 4}) {
    LsmScanOptions options;
    options.filter = "n > 150";
    options.threads = threads;
    const Status st = LsmScan(View(reopened), options).status();
    EXPECT_TRUE(st.IsNotFound()) << threads << " threads: " << st;
  }
}

TEST_F(LsmReadTest, FilterNeverResurrectsAnOverwrittenRow) {
  BaseApply({Put(1, "ok", 1), Put(2, "ok", 2)});
  ASSERT_OK_AND_ASSIGN(auto g1, Gen({Put(1, "bad", 3)}));

  LsmScanOptions ok_only;
  ok_only.filter = "status = 'ok'";
  EXPECT_EQ(Scan(View({g1}), ok_only), (std::vector<Row>{{2, "ok", 2}}));
  EXPECT_EQ(Count(View({g1}), "status = 'ok'"), 1);
  EXPECT_EQ(SortedById(Scan(View({g1}))), (std::vector<Row>{{1, "bad", 3}, {2, "ok", 2}}));
  LsmScanOptions bad_only;
  bad_only.filter = "status = 'bad'";
  EXPECT_EQ(Scan(View({g1}), bad_only), (std::vector<Row>{{1, "bad", 3}}));

  // The same with the newer row in a memtable, and with a key-equality filter (which the
  // base answers through its key index).
  auto mem = Mem({Put(2, "bad", 4)});
  EXPECT_EQ(Scan(View({g1}, {mem}), ok_only), std::vector<Row>{});
  LsmScanOptions key_and_ok;
  key_and_ok.filter = "id = 2 AND status = 'ok'";
  EXPECT_EQ(Scan(View({g1}, {mem}), key_and_ok), std::vector<Row>{});
  EXPECT_EQ(Scan(View({g1}), key_and_ok), (std::vector<Row>{{2, "ok", 2}}));

  // A filter on a nullable column over generation rows.
  LsmScanOptions n_filter;
  n_filter.filter = "n >= 3";
  EXPECT_EQ(SortedById(Scan(View({g1}, {mem}), n_filter)),
            (std::vector<Row>{{1, "bad", 3}, {2, "bad", 4}}));
}

TEST_F(LsmReadTest, FilteredGenerationRowsStillHideOlderVersions) {
  BaseApply({Put(1, "ok", 1), Put(2, "ok", 2), Put(3, "ok", 3), Put(4, "ok", 4)});
  ASSERT_OK_AND_ASSIGN(auto g1, Gen({Put(1, "ok", 11), Put(2, "ok", 12), Put(5, "ok", 15)}));
  ASSERT_OK_AND_ASSIGN(auto g2, Gen({Put(1, "bad", 21), Del(2), Put(3, "bad", 23)}));
  const LsmView view = View({g2, g1});

  LsmScanOptions ok_only;
  ok_only.filter = "status = 'ok'";
  // g2's rows fail the filter (or are tombstones) but hide g1's and the base's rows of 1-3.
  EXPECT_EQ(Scan(view, ok_only), (std::vector<Row>{{5, "ok", 15}, {4, "ok", 4}}));
  EXPECT_EQ(Count(view, ok_only.filter), 2);
  ok_only.limit = 1;
  EXPECT_EQ(Scan(view, ok_only), (std::vector<Row>{{5, "ok", 15}}));
  ok_only.limit.reset();
  ok_only.offset = 1;
  EXPECT_EQ(Scan(view, ok_only), (std::vector<Row>{{4, "ok", 4}}));

  LsmScanOptions big_n;
  big_n.filter = "n > 10";
  EXPECT_EQ(Scan(view, big_n), (std::vector<Row>{{1, "bad", 21}, {3, "bad", 23}, {5, "ok", 15}}));
  for (const char* hidden : {"id = 2", "id = 1 AND status = 'ok'", "n = 12", "n < 4"}) {
    LsmScanOptions options;
    options.filter = hidden;
    EXPECT_EQ(Scan(view, options), std::vector<Row>{}) << hidden;
    EXPECT_EQ(Count(view, hidden), 0) << hidden;
  }
  // Projection without the filter's column.
  LsmScanOptions ids_only;
  ids_only.filter = "status = 'ok'";
  ids_only.columns = {"id"};
  EXPECT_EQ(Scan(view, ids_only), (std::vector<Row>{{5, "", std::nullopt}, {4, "", std::nullopt}}));
}

TEST_F(LsmReadTest, OffsetAndLimitPageTheDeduplicatedResult) {
  std::vector<Op> base_ops;
  for (int64_t i = 0; i < 30; ++i) base_ops.push_back(Put(i, "b", i));
  BaseApply(base_ops);
  ASSERT_OK_AND_ASSIGN(auto g1,
                       Gen({Put(3, "g1", 103), Put(4, "g1", 104), Del(5), Put(40, "g1", 140)}));
  ASSERT_OK_AND_ASSIGN(auto g2, Gen({Put(4, "g2", 204), Put(7, "g2", 207), Del(8)}));
  auto mem =
      Mem({Put(7, "m", 307), Put(9, "m", 309), Del(10), Put(41, "m", 341), Put(9, "m", 310)});
  const LsmView view = View({g2, g1}, {mem});

  for (const std::string& filter :
       {std::string(), std::string("n > 5"), std::string("status != 'b' OR n < 20")}) {
    SCOPED_TRACE(filter);
    LsmScanOptions all;
    all.filter = filter;
    const std::vector<Row> full = Scan(view, all);
    std::set<int64_t> ids;
    for (const Row& r : full) EXPECT_TRUE(ids.insert(r.id).second) << r;
    EXPECT_EQ(Count(view, filter), static_cast<int64_t>(full.size()));
    for (int64_t page : {1, 3, 4, 7}) {
      std::vector<Row> joined;
      for (int64_t offset = 0; offset < static_cast<int64_t>(full.size()) + page; offset += page) {
        LsmScanOptions options = all;
        options.offset = offset;
        options.limit = page;
        std::vector<Row> rows = Scan(view, options);
        EXPECT_LE(static_cast<int64_t>(rows.size()), page);
        std::set<int64_t> page_ids;
        for (const Row& r : rows) EXPECT_TRUE(page_ids.insert(r.id).second) << r;
        joined.insert(joined.end(), rows.begin(), rows.end());
      }
      EXPECT_EQ(joined, full) << "page " << page;
    }
    LsmScanOptions offset_only = all;
    offset_only.offset = 5;
    EXPECT_EQ(Scan(view, offset_only),
              std::vector<Row>(full.begin() + std::min<size_t>(5, full.size()), full.end()));
    LsmScanOptions zero = all;
    zero.limit = 0;
    EXPECT_EQ(Scan(view, zero), std::vector<Row>{});
  }
  // Base-only pages (offset and limit handed to the base scan).
  LsmScanOptions base_page;
  base_page.offset = 28;
  base_page.limit = 5;
  EXPECT_EQ(Scan(View(), base_page), (std::vector<Row>{{28, "b", 28}, {29, "b", 29}}));
}

TEST_F(LsmReadTest, ProjectionWithoutKeyStillDeduplicates) {
  BaseApply({Put(1, "old", 1), Put(2, "two", 2)});
  ASSERT_OK_AND_ASSIGN(auto g1, Gen({Put(1, "new", std::nullopt)}));
  auto mem = Mem({Put(2, "mem", 22)});

  LsmScanOptions status_only;
  status_only.columns = {"status"};
  std::vector<Row> rows = Scan(View({g1}, {mem}), status_only);
  std::vector<std::string> statuses;
  for (const Row& r : rows) statuses.push_back(r.status);
  std::sort(statuses.begin(), statuses.end());
  EXPECT_EQ(statuses, (std::vector<std::string>{"mem", "new"}));

  // Reordered projection, filtered on a column it does not return.
  LsmScanOptions n_status;
  n_status.columns = {"n", "status"};
  n_status.filter = "id = 1";
  EXPECT_EQ(Scan(View({g1}, {mem}), n_status), (std::vector<Row>{{-1, "new", std::nullopt}}));
  n_status.filter = "id >= 0";
  EXPECT_EQ(Scan(View({g1}, {mem}), n_status).size(), 2u);

  EXPECT_EQ(Get(View({g1}, {mem}), {1, 2}, {"status"}),
            (std::vector<Row>{{-1, "new", std::nullopt}, {-1, "mem", std::nullopt}}));
  ASSERT_OK_AND_ASSIGN(RecordBatch got,
                       LsmGet(View({g1}, {mem}), {expr::Scalar::Int64(1)}, {"n", "status"}));
  ASSERT_EQ(got.num_columns(), 2);
  EXPECT_TRUE(got.schema()->field(0)->Equals(*field("n", int64(), true), false));
  // status comes from a generation (nullable there) but keeps the store's NOT NULL.
  EXPECT_TRUE(got.schema()->field(1)->Equals(*field("status", utf8(), false), false));
}

TEST_F(LsmReadTest, EmptySources) {
  LsmView nothing = View({}, {}, /*with_base=*/false);
  EXPECT_EQ(Scan(nothing), std::vector<Row>{});
  EXPECT_EQ(Count(nothing), 0);
  ASSERT_OK_AND_ASSIGN(RecordBatch none, LsmGet(nothing, {expr::Scalar::Int64(1)}));
  EXPECT_EQ(none.num_rows(), 0);
  EXPECT_TRUE(none.schema()->Equals(*StoreSchema(), false));

  auto empty_mem = MemTable::Make(StoreSchema(), 0)->Snapshot();
  EXPECT_EQ(Scan(View({}, {empty_mem})), std::vector<Row>{});
  EXPECT_EQ(Get(View({}, {empty_mem}), {1}), std::vector<Row>{});
  ASSERT_OK_AND_ASSIGN(RecordBatch no_keys, LsmGet(View(), {}));
  EXPECT_EQ(no_keys.num_rows(), 0);

  // Generations only (no base).
  ASSERT_OK_AND_ASSIGN(auto g1, Gen({Put(1, "g"), Del(2)}));
  EXPECT_EQ(Scan(View({g1}, {empty_mem}, /*with_base=*/false)),
            (std::vector<Row>{{1, "g", std::nullopt}}));
  EXPECT_EQ(Get(View({g1}, {}, /*with_base=*/false), {2, 1}),
            (std::vector<Row>{{1, "g", std::nullopt}}));
}

TEST_F(LsmReadTest, BadColumnsAndFiltersAreInvalidArgument) {
  BaseApply({Put(1, "a")});
  const LsmView view = View();
  auto scan_status = [&](LsmScanOptions options) { return LsmScan(view, options).status(); };
  LsmScanOptions o;
  o.columns = {"id", "nope"};
  EXPECT_TRUE(scan_status(o).IsInvalidArgument()) << scan_status(o);
  EXPECT_NE(scan_status(o).message().find("nope"), std::string::npos) << scan_status(o);
  o = {};
  o.filter = "status = ";
  EXPECT_TRUE(scan_status(o).IsInvalidArgument()) << scan_status(o);
  o.filter = "missing_column > 1";
  EXPECT_TRUE(scan_status(o).IsInvalidArgument()) << scan_status(o);
  o.filter = "n = 'text'";
  EXPECT_TRUE(scan_status(o).IsInvalidArgument()) << scan_status(o);
  o = {};
  o.offset = -1;
  EXPECT_TRUE(scan_status(o).IsInvalidArgument()) << scan_status(o);
  o = {};
  o.limit = -1;
  EXPECT_TRUE(scan_status(o).IsInvalidArgument()) << scan_status(o);
  EXPECT_TRUE(LsmCount(view, "id >").status().IsInvalidArgument());
  EXPECT_TRUE(LsmGet(view, {expr::Scalar::Int64(1)}, {"nope"}).status().IsInvalidArgument());
  EXPECT_TRUE(LsmGet(view, {expr::Scalar::Null()}).status().IsInvalidArgument());
  EXPECT_TRUE(LsmGet(view, {expr::Scalar::String("x")}).status().IsInvalidArgument());
}

TEST_F(LsmReadTest, GetKeepsRequestOrderAndSkipsDuplicatesAndMissing) {
  BaseApply({Put(1, "b1"), Put(3, "b3"), Put(5, "b5")});
  ASSERT_OK_AND_ASSIGN(auto g1, Gen({Put(3, "g3"), Put(6, "g6")}));
  auto mem = Mem({Put(5, "m5")});
  EXPECT_EQ(Get(View({g1}, {mem}), {5, 1, 5, 99, 3, 6, 1}),
            (std::vector<Row>{{5, "m5", std::nullopt},
                              {1, "b1", std::nullopt},
                              {3, "g3", std::nullopt},
                              {6, "g6", std::nullopt}}));
}

TEST_F(LsmReadTest, GetOfMoreThanMaxKeysIsInvalidArgument) {
  std::vector<expr::Scalar> keys;
  for (size_t i = 0; i <= kMaxGetKeys; ++i) keys.push_back(expr::Scalar::Int64(int64_t(i)));
  Status st = LsmGet(View(), keys).status();
  EXPECT_TRUE(st.IsInvalidArgument()) << st;
  keys.pop_back();
  ASSERT_OK_AND_ASSIGN(RecordBatch ok, LsmGet(View(), keys));
  EXPECT_EQ(ok.num_rows(), 0);
}

TEST_F(LsmReadTest, GetReadsOnlyGenerationsWhoseBloomMayHoldTheKey) {
  std::vector<Op> base_ops;
  for (int64_t i = 1000; i < 1200; ++i) base_ops.push_back(Put(i, "base"));
  BaseApply(base_ops);
  ASSERT_OK_AND_ASSIGN(auto g1, Gen({Put(1, "g"), Put(2, "g")}));
  // A base key the generation's bloom filter rules out, and one it may hold.
  std::optional<int64_t> excluded;
  std::optional<int64_t> maybe;
  for (int64_t i = 1000; i < 1200; ++i) {
    ASSERT_OK_AND_ASSIGN(std::string key, EncodeKeyScalar(expr::Scalar::Int64(i), *int64()));
    if (!excluded && !g1->MayContain(key)) excluded = i;
  }
  ASSERT_TRUE(excluded.has_value());
  ASSERT_OK_AND_ASSIGN(std::string key1, EncodeKeyScalar(expr::Scalar::Int64(1), *int64()));
  ASSERT_TRUE(g1->MayContain(key1));
  maybe = 1;

  // Remove the generation's data files: only reads that skip it can still succeed.
  const std::string dir = ShardDir(prefix_, shard_) + g1->entry().path();
  ASSERT_OK_AND_ASSIGN(std::vector<ObjectMeta> objects, store_->List(dir + "data/"));
  ASSERT_FALSE(objects.empty());
  for (const ObjectMeta& o : objects) ASSERT_OK(store_->Delete(o.key));

  EXPECT_EQ(Get(View({g1}), {*excluded}), (std::vector<Row>{{*excluded, "base", std::nullopt}}));
  Status st = LsmGet(View({g1}), {expr::Scalar::Int64(*maybe)}).status();
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(st.IsNotFound()) << st;
  EXPECT_TRUE(LsmScan(View({g1}), {}).status().IsNotFound());
}

TEST_F(LsmReadTest, CountEqualsScanRows) {
  BaseApply({Put(1, "a", 1), Put(2, "b", 2), Put(3, "a", 3), Put(4, "c", std::nullopt)});
  ASSERT_OK_AND_ASSIGN(auto g1, Gen({Put(2, "a", 20), Del(3)}));
  auto mem = Mem({Put(5, "a", 50), Put(4, "b", 40)});
  const LsmView view = View({g1}, {mem});
  for (const char* filter : {"", "status = 'a'", "n IS NULL", "n > 10", "id IN (1, 3, 4)"}) {
    LsmScanOptions options;
    options.filter = filter;
    EXPECT_EQ(Count(view, filter), static_cast<int64_t>(Scan(view, options).size())) << filter;
  }
  EXPECT_EQ(Count(view), 4);
  EXPECT_EQ(Count(view, "status = 'a'"), 3);
}

// Random puts and tombstones across the base, generations and memtables, checked against a
// std::map applying the same operations oldest source first.
TEST_F(LsmReadTest, RandomizedMatchesModel) {
  const unsigned long long seed = testing::TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::printf("LsmReadTest.RandomizedMatchesModel seed %llu\n", seed);
  std::mt19937_64 rng(seed);
  auto uniform = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  constexpr int64_t kKeys = 60;
  auto random_ops = [&](int count, int tombstone_percent) {
    std::vector<Op> ops;
    for (int i = 0; i < count; ++i) {
      const int64_t id = uniform(0, kKeys - 1);
      if (uniform(0, 99) < tombstone_percent) {
        ops.push_back(Del(id));
      } else {
        std::optional<int64_t> n;
        if (uniform(0, 5) != 0) n = uniform(-20, 20);
        ops.push_back(Put(id, "s" + std::to_string(uniform(0, 3)), n));
      }
    }
    return ops;
  };
  std::map<int64_t, Row> model;
  auto apply = [&](const std::vector<Op>& ops) {
    for (const Op& op : ops) {
      if (op.tombstone) {
        model.erase(op.row.id);
      } else {
        model[op.row.id] = op.row;
      }
    }
  };

  // An empty base in a third of the runs: a filtered scan then checks generations' rows
  // against the newer generations' key indexes instead of collecting their keys.
  const std::vector<Op> base_ops = random_ops(uniform(0, 2) == 0 ? 0 : 40, 0);
  BaseApply(base_ops);
  apply(base_ops);
  std::vector<std::shared_ptr<Generation>> generations;  // newest first
  const int num_generations = static_cast<int>(uniform(0, 4));
  for (int g = 0; g < num_generations; ++g) {
    std::vector<Op> ops = random_ops(static_cast<int>(uniform(1, 25)), 30);
    ASSERT_OK_AND_ASSIGN(auto gen, Gen(ops));
    generations.insert(generations.begin(), gen);
    apply(ops);
  }
  std::vector<std::shared_ptr<const MemTableSnapshot>> memtables;  // newest first
  const int num_memtables = static_cast<int>(uniform(0, 2));
  for (int m = 0; m < num_memtables; ++m) {
    std::vector<Op> ops = random_ops(static_cast<int>(uniform(1, 25)), 30);
    memtables.insert(memtables.begin(), Mem(ops));
    apply(ops);
  }
  const LsmView view = View(generations, memtables);

  struct Filter {
    std::string text;
    std::function<bool(const Row&)> matches;
  };
  for (int round = 0; round < 12; ++round) {
    const int64_t x = uniform(-20, 20);
    const std::string s = "s" + std::to_string(uniform(0, 3));
    std::vector<Filter> filters = {
        {"", [](const Row&) { return true; }},
        {"n > " + std::to_string(x), [x](const Row& r) { return r.n && *r.n > x; }},
        {"n <= " + std::to_string(x) + " OR n IS NULL",
         [x](const Row& r) { return !r.n || *r.n <= x; }},
        {"status = '" + s + "' AND id < " + std::to_string(x + 30),
         [s, x](const Row& r) { return r.status == s && r.id < x + 30; }},
        {"id = " + std::to_string(x + 20), [x](const Row& r) { return r.id == x + 20; }},
    };
    const Filter& filter = filters[static_cast<size_t>(uniform(0, 4))];
    SCOPED_TRACE("filter: " + filter.text);
    std::vector<Row> expected;
    for (const auto& [id, row] : model) {
      if (filter.matches(row)) expected.push_back(row);
    }
    LsmScanOptions options;
    options.filter = filter.text;
    const std::vector<Row> full = Scan(view, options);
    EXPECT_EQ(SortedById(full), expected);
    // Generations read on several threads (where the scan probes them) change nothing.
    options.threads = static_cast<int>(uniform(2, 4));
    EXPECT_EQ(Scan(view, options), full) << options.threads << " threads";
    options.threads = 0;
    EXPECT_EQ(Count(view, filter.text), static_cast<int64_t>(expected.size()));

    options.offset = uniform(0, 10);
    options.limit = uniform(0, 15);
    const size_t begin = std::min<size_t>(static_cast<size_t>(options.offset), full.size());
    const size_t end = std::min<size_t>(begin + static_cast<size_t>(*options.limit), full.size());
    EXPECT_EQ(Scan(view, options), std::vector<Row>(full.begin() + begin, full.begin() + end));

    std::vector<int64_t> keys;
    for (int i = static_cast<int>(uniform(0, 12)); i > 0; --i)
      keys.push_back(uniform(0, kKeys + 5));
    std::vector<Row> expected_get;
    std::set<int64_t> requested;
    for (int64_t k : keys) {
      if (!requested.insert(k).second) continue;
      auto it = model.find(k);
      if (it != model.end()) expected_get.push_back(it->second);
    }
    EXPECT_EQ(Get(view, keys), expected_get);
  }
}

}  // namespace
}  // namespace strata::lsm

namespace strata::lsm::internal {
namespace {

// Sets of strings built from a few letters (so prefixes and near-duplicates abound) plus a
// few long keys that get blocks of their own.
std::vector<std::string> AwkwardKeys(std::mt19937_64& rng, int count) {
  std::vector<std::string> keys = {"",
                                   "a",
                                   "aa",
                                   "ab",
                                   "ba",
                                   std::string(1, '\0'),
                                   std::string(2, '\0'),
                                   std::string(40 << 10, 'x'),
                                   std::string(40 << 10, 'x') + "y"};
  while (static_cast<int>(keys.size()) < count) {
    std::string key(rng() % 24, ' ');
    for (char& c : key) c = "ab\0z"[rng() % 4];
    keys.push_back(std::move(key));
  }
  return keys;
}

// `reserve_at`: after that many insertions of the first round, Reserve(count) (keys already
// in the set are rehashed); never when negative.
void ExpectMatchesStdSet(KeySet::HashFunction hash, uint64_t seed, int count, int reserve_at = -1) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> keys = AwkwardKeys(rng, count);
  KeySet set(hash);
  std::set<std::string> model;
  for (int round = 0; round < 2; ++round) {
    for (size_t i = 0; i < keys.size(); ++i) {
      const std::string& key = keys[i];
      if (round == 0 && static_cast<int>(i) == reserve_at) {
        set.Reserve(static_cast<size_t>(count));
        for (size_t j = 0; j < i; ++j) EXPECT_TRUE(set.Contains(keys[j])) << j;
      }
      EXPECT_EQ(set.Contains(key), model.contains(key)) << "round " << round;
      EXPECT_EQ(set.Insert(key), model.insert(key).second) << "round " << round;
      EXPECT_TRUE(set.Contains(key));
    }
    std::shuffle(keys.begin(), keys.end(), rng);
  }
  EXPECT_EQ(set.size(), model.size());
  // Keys never inserted, including extensions and truncations of inserted ones.
  for (const std::string& key : model) {
    for (std::string other : {key + "q", key.empty() ? std::string("q") : key.substr(1)}) {
      EXPECT_EQ(set.Contains(other), model.contains(other)) << other.size();
    }
  }
}

TEST(KeySetTest, MatchesStdSet) {
  const uint64_t seed = strata::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  ExpectMatchesStdSet(&KeySet::DefaultHash, seed, 3000);
}

TEST(KeySetTest, ReserveKeepsEveryKeyAndMatchesStdSet) {
  const uint64_t seed = strata::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  for (int reserve_at : {0, 1, 700, 2999}) {
    SCOPED_TRACE(::testing::Message() << "reserve at " << reserve_at);
    ExpectMatchesStdSet(&KeySet::DefaultHash, seed, 3000, reserve_at);
  }
  // Colliding hashes: the rehash keeps every probe chain intact.
  ExpectMatchesStdSet([](std::string_view key) { return uint64_t{key.size() % 2}; }, seed, 300,
                      150);
  KeySet small;
  small.Reserve(0);  // nothing to make room for
  EXPECT_TRUE(small.Insert("a"));
  EXPECT_FALSE(small.Insert("a"));
}

// InsertAll / ContainsAll against Insert / Contains on a std::set, batch by batch, keys
// repeating within and across batches; large enough for the huge-page slot array.
TEST(KeySetTest, BatchedInsertAndContainsMatchStdSet) {
  const uint64_t seed = strata::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  for (KeySet::HashFunction hash :
       {&KeySet::DefaultHash, +[](std::string_view key) { return uint64_t{key.size() % 3}; }}) {
    const bool colliding = hash != &KeySet::DefaultHash;
    KeySet set(hash);
    std::set<std::string> model;
    const int batches = colliding ? 4 : 12;
    for (int b = 0; b < batches; ++b) {
      BinaryBuilder builder(utf8());
      const int rows = colliding ? 60 : 1 + static_cast<int>(rng() % 40000);
      for (int r = 0; r < rows; ++r) {
        ASSERT_OK(builder.Append(fmt::format("k{}", rng() % (colliding ? 200 : 150000))));
      }
      ASSERT_OK_AND_ASSIGN(Array column, builder.Finish());
      ASSERT_OK_AND_ASSIGN(KeyColumnView keys, KeyColumnView::Make(column, "k"));
      std::vector<uint8_t> found;
      set.ContainsAll(keys, &found);
      ASSERT_EQ(found.size(), static_cast<size_t>(rows));
      for (int r = 0; r < rows; ++r) {
        ASSERT_EQ(found[r] != 0, model.contains(std::string(keys[r]))) << b << " " << r;
      }
      std::vector<uint8_t> added;
      set.InsertAll(keys, &added);
      ASSERT_EQ(added.size(), static_cast<size_t>(rows));
      for (int r = 0; r < rows; ++r) {
        ASSERT_EQ(added[r] != 0, model.insert(std::string(keys[r])).second) << b << " " << r;
      }
      ASSERT_EQ(set.size(), model.size());
    }
    for (const std::string& key : model) EXPECT_TRUE(set.Contains(key)) << key;
    EXPECT_FALSE(set.Contains("k-1"));
  }
}

TEST(KeySetTest, DifferentKeysWithEqualHashesStayDistinct) {
  const uint64_t seed = strata::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  // Every key in one probe chain, starting at the last slot so probing wraps around.
  ExpectMatchesStdSet([](std::string_view) { return ~uint64_t{0}; }, seed, 300);
  // Two hashes only: chains interleave.
  ExpectMatchesStdSet([](std::string_view key) { return uint64_t{key.size() % 2}; }, seed, 300);
}

TEST(KeySetTest, EmptySetContainsNothing) {
  KeySet set;
  EXPECT_TRUE(set.empty());
  EXPECT_FALSE(set.Contains(""));
  EXPECT_FALSE(set.Contains("a"));
  EXPECT_TRUE(set.Insert(""));
  EXPECT_FALSE(set.empty());
  EXPECT_TRUE(set.Contains(""));
  EXPECT_FALSE(set.Contains(std::string(1, '\0')));
}

void ExpectViewsEqualEncodeKeys(const Array& column) {
  SCOPED_TRACE(column.type()->ToString());
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> want, EncodeKeys(column, "k"));
  ASSERT_OK_AND_ASSIGN(KeyColumnView got, KeyColumnView::Make(column, "k"));
  ASSERT_EQ(got.size(), static_cast<int64_t>(want.size()));
  for (int64_t r = 0; r < got.size(); ++r) EXPECT_EQ(got[r], want[r]) << "row " << r;
}

TEST(KeyColumnViewTest, EqualsEncodeKeysForEveryKeyType) {
  BinaryBuilder strings(utf8());
  LargeBinaryBuilder large_strings(large_utf8());
  Int64Builder int64s(int64());
  Int32Builder int32s(int32());
  UInt32Builder uint32s(uint32());
  TimestampBuilder timestamps(timestamp_us());
  const std::vector<std::string> texts = {"", "b", "a", "0123456789abcdef0123", "b"};
  const std::vector<int64_t> numbers = {0, -1, 1, -2147483648LL, 2147483647};
  for (size_t i = 0; i < texts.size(); ++i) {
    ASSERT_TRUE(strings.Append(texts[i]).ok());
    ASSERT_TRUE(large_strings.Append(texts[i]).ok());
    int64s.Append(numbers[i] * 4294967296LL);
    int32s.Append(static_cast<int32_t>(numbers[i]));
    uint32s.Append(static_cast<uint32_t>(numbers[i]));
    timestamps.Append(numbers[i] * 1000);
  }
  std::vector<Array> columns = {*strings.Finish(), *large_strings.Finish(), *int64s.Finish(),
                                *int32s.Finish(),  *uint32s.Finish(),       *timestamps.Finish()};
  for (const Array& column : columns) {
    ExpectViewsEqualEncodeKeys(column);
    ExpectViewsEqualEncodeKeys(column.Slice(2, 3));  // honours the slice offset
  }
}

TEST(KeyColumnViewTest, NullsAndUnsupportedTypesFailAsEncodeKeys) {
  BinaryBuilder strings(utf8());
  ASSERT_TRUE(strings.Append("a").ok());
  strings.AppendNull();
  Float64Builder doubles(float64());
  doubles.Append(1.5);
  for (const Array& column : {*strings.Finish(), *doubles.Finish()}) {
    SCOPED_TRACE(column.type()->ToString());
    Result<KeyColumnView> got = KeyColumnView::Make(column, "k");
    Result<std::vector<std::string>> want = EncodeKeys(column, "k");
    ASSERT_FALSE(want.ok());
    ASSERT_FALSE(got.ok());
    EXPECT_TRUE(got.status().IsInvalidArgument()) << got.status();
    EXPECT_EQ(got.status().message(), want.status().message());
  }
}

}  // namespace
}  // namespace strata::lsm::internal
