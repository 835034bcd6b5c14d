// Model-based test of Table: random sequences of appends, deletes, compactions, schema
// changes, cleanups, reopens, time travel and reads, each checked against an in-memory oracle (the
// live rows by id, and the rows of every committed version).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "strata/json.h"
#include "strata/object_store.h"
#include "strata/table.h"
#include "support/temp_dir.h"
#include "table/torture_util.h"

namespace strata::table::torture {
namespace {

struct ModelParam {
  std::string name;
  bool local = false;
  bool int_key = false;
};
void PrintTo(const ModelParam& param, std::ostream* os) { *os << param.name; }

// One version as the oracle sees it.
struct OracleVersion {
  Rows rows;
  std::vector<std::string> extra_columns;
};

class ModelRunner {
 public:
  ModelRunner(uint64_t seed, bool int_key, std::shared_ptr<ObjectStore> store)
      : rng_(seed), int_key_(int_key), store_(std::move(store)) {}

  void Run(int operations) {
    auto created = Table::Create(store_, kPrefix, BaseSchema(int_key_), SmallOptions());
    ASSERT_TRUE(created.ok()) << created.status();
    table_ = *created;
    ASSERT_EQ(table_->version(), 1u);
    version_ = 1;
    history_[1] = {rows_, extra_};
    for (step_ = 0; step_ < operations; ++step_) {
      Step();
      if (::testing::Test::HasFatalFailure() || ::testing::Test::HasNonfatalFailure()) {
        ADD_FAILURE() << "failed at operation #" << step_ << "; recent operations:\n"
                      << RecentLog();
        return;
      }
    }
    // Finally some versions once more, from a fresh handle.
    Reopen();
    for (int i = 0; i < 8 && !::testing::Test::HasFailure(); ++i) {
      CheckCheckout(RandomKeptVersion());
    }
  }

 private:
  static constexpr const char* kPrefix = "tables/t/";

  std::string RecentLog() const {
    std::string out;
    for (const std::string& line : log_) out += "  " + line + "\n";
    return out;
  }
  void Log(std::string line) {
    log_.push_back(fmt::format("#{} v{}: {}", step_, version_, std::move(line)));
    if (log_.size() > 12) log_.pop_front();
  }

  Row NewId() {
    const int64_t n = next_id_++;
    Row id = int_key_ ? Row(n * 3) : Row(fmt::format("k{:05}", n));
    all_ids_.push_back(id);
    return id;
  }
  // Ids to look up or delete: live, deleted and never used ones.
  std::vector<Row> SomeIds(int count) {
    std::vector<Row> ids;
    for (int i = 0; i < count; ++i) {
      const int kind = static_cast<int>(rng_() % 10);
      if (kind < 6 && !rows_.empty()) {
        auto it = rows_.begin();
        std::advance(it, rng_() % rows_.size());
        ids.push_back(it->second["id"]);
      } else if (kind < 9 && !all_ids_.empty()) {
        ids.push_back(all_ids_[rng_() % all_ids_.size()]);
      } else {
        const int64_t n = next_id_ + 1000 + static_cast<int64_t>(rng_() % 100);
        ids.push_back(int_key_ ? Row(n * 3) : Row(fmt::format("k{:05}", n)));
      }
    }
    return ids;
  }

  // The table's version moved by `commits` (0 or 1) and its content is the oracle's.
  void ExpectCommitted(int commits, uint64_t reported_version) {
    ASSERT_EQ(table_->version(), version_ + commits) << "version after the operation";
    if (commits) {
      EXPECT_EQ(reported_version, table_->version()) << "reported version";
    }
    version_ += commits;
    history_[version_] = {rows_, extra_};
    auto scanned = ScanRows(*table_);
    ASSERT_TRUE(scanned.ok()) << scanned.status();
    std::string diff = DiffRows(rows_, *scanned);
    ASSERT_TRUE(diff.empty()) << "full scan: " << diff;
  }

  void Step() {
    const int roll = static_cast<int>(rng_() % 100);
    if (roll < 30) return Append();
    if (roll < 42) return DeleteWhere();
    if (roll < 50) return DeleteKeys();
    if (roll < 56) return Compact();
    if (roll < 59) return AddColumn();
    if (roll < 66) return CheckCheckout(RandomKeptVersion());
    if (roll < 70) return Reopen();
    if (roll < 80) return Count();
    if (roll < 90) return Lookup();
    if (roll < 95) return FilteredScan();
    if (roll < 97) return Cleanup();
    return VerifyAndStats();
  }

  void Append() {
    const int n =
        rng_() % 8 == 0 ? 1 + static_cast<int>(rng_() % 150) : 1 + static_cast<int>(rng_() % 40);
    // Now and then only the required columns: the rest read as null.
    const bool narrow = rng_() % 10 == 0;
    std::vector<Row> rows;
    for (int i = 0; i < n; ++i) {
      Row row = RandomRow(rng_, NewId(), extra_);
      if (narrow) {
        for (auto it = row.begin(); it != row.end(); ++it) {
          if (it.key() != "id" && it.key() != "v") *it = nullptr;
        }
      }
      rows.push_back(std::move(row));
    }
    std::shuffle(rows.begin(), rows.end(), rng_);
    SchemaPtr schema = table_->schema();
    if (narrow) {
      auto projected = schema->Project({0, 1});
      ASSERT_TRUE(projected.ok());
      schema = *projected;
    }
    std::vector<RecordBatch> batches;
    const int parts = 1 + static_cast<int>(rng_() % 3);
    for (int p = 0; p < parts; ++p) {
      const size_t begin = rows.size() * p / parts;
      const size_t end = rows.size() * (p + 1) / parts;
      if (begin == end) continue;
      std::vector<Row> part(rows.begin() + begin, rows.begin() + end);
      if (narrow) {
        for (Row& row : part) row = Row{{"id", row["id"]}, {"v", row["v"]}};
      }
      auto batch = MakeBatch(schema, part);
      ASSERT_TRUE(batch.ok()) << batch.status();
      batches.push_back(*batch);
    }
    Log(fmt::format("append {} rows in {} batches{}", n, batches.size(),
                    narrow ? " (narrow)" : ""));
    auto result = table_->Append(batches);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->rows, n);
    for (const Row& row : rows) rows_[IdKey(row["id"])] = row;
    ExpectCommitted(1, result->version);
  }

  void DeleteWhere() {
    Predicate predicate = RandomPredicate(rng_, int_key_, SomeIds(6));
    Log("delete where " + predicate.text);
    int64_t expected = 0;
    for (auto it = rows_.begin(); it != rows_.end();) {
      if (predicate.Matches(it->second)) {
        it = rows_.erase(it);
        ++expected;
      } else {
        ++it;
      }
    }
    auto result = table_->Delete(predicate.text);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->rows_deleted, expected) << "rows deleted by " << predicate.text;
    ExpectCommitted(expected > 0 ? 1 : 0, result->version);
  }

  void DeleteKeys() {
    std::vector<Row> ids = SomeIds(1 + static_cast<int>(rng_() % 5));
    std::vector<expr::Scalar> keys;
    std::string text;
    int64_t expected = 0;
    for (const Row& id : ids) {
      keys.push_back(IdScalar(id));
      text += " " + id.dump();
      expected += static_cast<int64_t>(rows_.erase(IdKey(id)));
    }
    Log("delete keys" + text);
    auto result = table_->DeleteKeys(keys);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->rows_deleted, expected) << "rows deleted by keys" << text;
    ExpectCommitted(expected > 0 ? 1 : 0, result->version);
  }

  void Compact() {
    static const int64_t kTargets[] = {16, 48, 100};
    static const int kSources[] = {0, 2, 8};
    CompactionOptions options;
    options.target_rows_per_fragment = kTargets[rng_() % 3];
    options.max_source_fragments = kSources[rng_() % 3];
    options.materialize_deletions_threshold = rng_() % 2 ? 0.1 : 0.5;
    options.materialize_deletions = rng_() % 4 != 0;
    Log(fmt::format("compact target {} sources {} threshold {}", options.target_rows_per_fragment,
                    options.max_source_fragments, options.materialize_deletions_threshold));
    auto result = table_->Compact(options);
    ASSERT_TRUE(result.ok()) << result.status();
    ExpectCommitted(result->version != 0 ? 1 : 0, result->version);
  }

  void AddColumn() {
    if (extra_.size() >= 4) return;
    const std::string name = fmt::format("x{}", extra_.size() + 1);
    Log("add column " + name);
    auto result = table_->AddColumns({field(name, int64())});
    ASSERT_TRUE(result.ok()) << result.status();
    extra_.push_back(name);
    for (auto& [key, row] : rows_) row[name] = nullptr;
    ASSERT_EQ(table_->schema()->num_fields(), 4 + static_cast<int>(extra_.size()));
    ExpectCommitted(1, *result);
  }

  void CheckCheckout(uint64_t version) {
    Log(fmt::format("checkout {}", version));
    auto old = table_->Checkout(version);
    ASSERT_TRUE(old.ok()) << old.status();
    EXPECT_TRUE((*old)->read_only());
    EXPECT_EQ((*old)->version(), version);
    const OracleVersion& expected = history_.at(version);
    EXPECT_EQ((*old)->schema()->num_fields(), 4 + static_cast<int>(expected.extra_columns.size()));
    auto scanned = ScanRows(**old);
    ASSERT_TRUE(scanned.ok()) << scanned.status();
    std::string diff = DiffRows(expected.rows, *scanned);
    ASSERT_TRUE(diff.empty()) << "checkout of version " << version << ": " << diff;
    auto count = (*old)->CountRows();
    ASSERT_TRUE(count.ok()) << count.status();
    EXPECT_EQ(*count, static_cast<int64_t>(expected.rows.size()));
    if (rng_() % 4 == 0) {
      auto refused = (*old)->Delete("true");
      EXPECT_FALSE(refused.ok()) << "a read-only handle accepted a delete";
    }
  }

  void Reopen() {
    Log("reopen");
    auto opened = Table::Open(store_, kPrefix, SmallOptions());
    ASSERT_TRUE(opened.ok()) << opened.status();
    table_ = *opened;
    ASSERT_EQ(table_->version(), version_);
    auto latest = table_->LatestVersion();
    ASSERT_TRUE(latest.ok()) << latest.status();
    EXPECT_EQ(*latest, version_);
    ExpectCommitted(0, 0);
  }

  void Count() {
    Predicate predicate = RandomPredicate(rng_, int_key_, SomeIds(4));
    Log("count where " + predicate.text);
    int64_t expected = 0;
    for (const auto& [key, row] : rows_) expected += predicate.Matches(row) ? 1 : 0;
    auto count = table_->CountRows(predicate.text);
    ASSERT_TRUE(count.ok()) << count.status();
    EXPECT_EQ(*count, expected) << "count where " << predicate.text;
    auto all = table_->CountRows();
    ASSERT_TRUE(all.ok()) << all.status();
    EXPECT_EQ(*all, static_cast<int64_t>(rows_.size()));
  }

  void Lookup() {
    std::vector<Row> ids = SomeIds(1 + static_cast<int>(rng_() % 6));
    std::vector<expr::Scalar> keys;
    Rows expected;
    std::string text;
    for (const Row& id : ids) {
      keys.push_back(IdScalar(id));
      text += " " + id.dump();
      auto it = rows_.find(IdKey(id));
      if (it != rows_.end()) expected.insert(*it);
    }
    Log("lookup" + text);
    const bool with_address = rng_() % 2 == 0;
    auto batch = table_->LookupKeys(keys, {}, with_address);
    ASSERT_TRUE(batch.ok()) << batch.status();
    auto rows = BatchesToRows({*batch});
    ASSERT_TRUE(rows.ok()) << rows.status();
    std::vector<uint64_t> addresses;
    if (with_address) {
      const std::string address_column(kRowAddressColumn);
      for (Row& row : *rows) {
        ASSERT_TRUE(row.contains(address_column)) << row.dump();
        addresses.push_back(row[address_column].get<uint64_t>());
        row.erase(address_column);
      }
      EXPECT_TRUE(std::is_sorted(addresses.begin(), addresses.end()))
          << "LookupKeys rows are not in row-address order";
    }
    auto found = IndexRows(*rows);
    ASSERT_TRUE(found.ok()) << found.status();
    std::string diff = DiffRows(expected, *found);
    ASSERT_TRUE(diff.empty()) << "lookup of" << text << ": " << diff;
    if (!addresses.empty()) {
      auto taken = table_->Take(addresses);
      ASSERT_TRUE(taken.ok()) << taken.status();
      auto taken_rows = BatchesToRows({*taken});
      ASSERT_TRUE(taken_rows.ok());
      auto taken_index = IndexRows(*taken_rows);
      ASSERT_TRUE(taken_index.ok()) << taken_index.status();
      diff = DiffRows(expected, *taken_index);
      ASSERT_TRUE(diff.empty()) << "take of the looked-up addresses: " << diff;
    }
  }

  void FilteredScan() {
    Predicate predicate = RandomPredicate(rng_, int_key_, SomeIds(4));
    Log("scan id, v where " + predicate.text);
    ScanOptions options;
    options.filter = predicate.text;
    options.columns = {"v", "id"};
    auto it = table_->Scan(options);
    ASSERT_TRUE(it.ok()) << it.status();
    auto batches = (*it)->ToBatches();
    ASSERT_TRUE(batches.ok()) << batches.status();
    auto rows = BatchesToRows(*batches);
    ASSERT_TRUE(rows.ok());
    auto found = IndexRows(*rows);
    ASSERT_TRUE(found.ok()) << found.status();
    Rows expected;
    for (const auto& [key, row] : rows_) {
      if (predicate.Matches(row)) expected[key] = Row{{"v", row["v"]}, {"id", row["id"]}};
    }
    std::string diff = DiffRows(expected, *found);
    ASSERT_TRUE(diff.empty()) << "scan where " << predicate.text << ": " << diff;
  }

  uint64_t RandomKeptVersion() { return oldest_ + rng_() % (version_ - oldest_ + 1); }

  // Removes all but the newest few versions (all are older than "now"); the kept ones must
  // read as before, the removed ones be NotFound, and every kept version verify.
  void Cleanup() {
    CleanupOptions options;
    options.older_than_micros = 0;
    options.keep_at_least = 1 + static_cast<int>(rng_() % 6);
    options.delete_unreferenced = rng_() % 2 == 0;  // safe: no commit is in flight
    const uint64_t kept = std::min<uint64_t>(version_ - oldest_ + 1, options.keep_at_least);
    const uint64_t new_oldest = version_ - kept + 1;
    Log(fmt::format("cleanup keeping {}{}", options.keep_at_least,
                    options.delete_unreferenced ? ", deleting unreferenced files" : ""));
    auto result = table_->CleanupOldVersions(options);
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->versions_removed, static_cast<int64_t>(new_oldest - oldest_));
    for (uint64_t v = oldest_; v < new_oldest; ++v) history_.erase(v);
    const uint64_t removed = new_oldest > 1 ? new_oldest - 1 : 0;
    oldest_ = new_oldest;
    if (removed > 0) {
      auto gone = table_->Checkout(removed);
      EXPECT_TRUE(!gone.ok() && gone.status().IsNotFound())
          << "checkout of cleaned-up version " << removed << ": "
          << (gone.ok() ? "succeeded" : gone.status().ToString());
    }
    VerifyOptions verify;
    verify.all_versions = true;
    auto report = table_->Verify(verify);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_TRUE(report->ok()) << fmt::format("{}", fmt::join(report->problems, "\n"));
    CheckCheckout(RandomKeptVersion());
  }

  void VerifyAndStats() {
    Log("verify, stats, list versions");
    auto report = table_->Verify();
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_TRUE(report->ok()) << fmt::format("{}", fmt::join(report->problems, "\n"));
    auto stats = table_->Stats();
    ASSERT_TRUE(stats.ok()) << stats.status();
    EXPECT_EQ(stats->num_rows, static_cast<int64_t>(rows_.size()));
    EXPECT_EQ(stats->version, version_);
    auto versions = table_->ListVersions();
    ASSERT_TRUE(versions.ok()) << versions.status();
    ASSERT_EQ(versions->size(), version_ - oldest_ + 1);
    for (size_t i = 0; i < versions->size(); ++i) {
      const VersionInfo& info = (*versions)[i];
      EXPECT_EQ(info.version, oldest_ + i);
      EXPECT_EQ(info.num_rows, static_cast<int64_t>(history_.at(oldest_ + i).rows.size()))
          << "version " << info.version << " (" << info.operation << ")";
    }
  }

  std::mt19937_64 rng_;
  const bool int_key_;
  std::shared_ptr<ObjectStore> store_;
  std::shared_ptr<Table> table_;
  uint64_t version_ = 0;
  uint64_t oldest_ = 1;  // the oldest version cleanup kept
  Rows rows_;
  std::vector<std::string> extra_;
  std::map<uint64_t, OracleVersion> history_;
  int64_t next_id_ = 0;
  std::vector<Row> all_ids_;
  int step_ = 0;
  std::deque<std::string> log_;
};

class TableModelTest : public ::testing::TestWithParam<ModelParam> {};

TEST_P(TableModelTest, RandomOperationsMatchTheOracle) {
  const int kOperations = 200 * strata::testing::StressScale();
  const uint64_t seed = strata::testing::TestSeed();
  SCOPED_TRACE(fmt::format("seed {} (STRATA_TEST_SEED={})", seed, seed));
  strata::testing::TempDir dir("table-model");
  std::shared_ptr<ObjectStore> store;
  if (GetParam().local) {
    LocalObjectStoreOptions options;
    options.sync = false;  // process durability is enough here; the crash test syncs
    auto local = OpenLocalObjectStore(dir.str(), options);
    ASSERT_TRUE(local.ok()) << local.status();
    store = *local;
  } else {
    store = NewMemoryObjectStore();
  }
  ModelRunner runner(seed, GetParam().int_key, store);
  runner.Run(kOperations);
}

INSTANTIATE_TEST_SUITE_P(Stores, TableModelTest,
                         ::testing::Values(ModelParam{"memory_utf8_key", false, false},
                                           ModelParam{"memory_int64_key", false, true},
                                           ModelParam{"local_utf8_key", true, false}),
                         [](const auto& info) { return info.param.name; });

// A focused case of what the model test exercises: after a compaction that merges several
// appended fragments (and cuts the output at max_rows_per_fragment), every key still looks
// up exactly its own row.
TEST(TableKeyIndexTest, EveryKeyLooksUpItsOwnRowAfterCompaction) {
  const uint64_t seed = strata::testing::TestSeed();
  SCOPED_TRACE(fmt::format("seed {} (STRATA_TEST_SEED={})", seed, seed));
  std::mt19937_64 rng(seed);
  std::shared_ptr<ObjectStore> store = NewMemoryObjectStore();
  auto table = Table::Create(store, "", BaseSchema(false), SmallOptions());
  ASSERT_TRUE(table.ok()) << table.status();
  Rows rows;
  int next = 0;
  for (int a = 0; a < 6; ++a) {
    Op op;
    op.kind = Op::Kind::kAppend;
    const int n = 5 + static_cast<int>(rng() % 26);
    for (int i = 0; i < n; ++i)
      op.rows.push_back(RandomRow(rng, fmt::format("r{:04}", next++), {}));
    std::shuffle(op.rows.begin(), op.rows.end(), rng);
    ApplyOp(op, &rows);
    Status status = RunOp(**table, op);
    ASSERT_TRUE(status.ok()) << status;
  }
  // A fresh handle compacts (as a new process would), another one looks up.
  table = Table::Open(store, "", SmallOptions());
  ASSERT_TRUE(table.ok()) << table.status();
  CompactionOptions options;
  options.target_rows_per_fragment = 128;
  auto compacted = (*table)->Compact(options);
  ASSERT_TRUE(compacted.ok()) << compacted.status();
  ASSERT_NE(compacted->version, 0u) << "nothing was compacted";
  table = Table::Open(store, "", SmallOptions());
  ASSERT_TRUE(table.ok()) << table.status();
  auto scanned = ScanRows(**table);
  ASSERT_TRUE(scanned.ok()) << scanned.status();
  ASSERT_EQ(DiffRows(rows, *scanned), "");
  int wrong = 0;
  for (const auto& [key, row] : rows) {
    auto batch = (*table)->LookupKeys({IdScalar(row["id"])}, {}, /*with_row_address=*/true);
    ASSERT_TRUE(batch.ok()) << batch.status();
    auto found = BatchesToRows({*batch});
    ASSERT_TRUE(found.ok());
    if (found->size() != 1 || (*found)[0]["id"] != row["id"]) {
      if (++wrong <= 5) {
        ADD_FAILURE() << "LookupKeys(" << row["id"].dump() << ") after compaction returned "
                      << json::BatchToJsonLines(*batch);
      }
    }
  }
  EXPECT_EQ(wrong, 0) << "of " << rows.size() << " keys";
}

}  // namespace
}  // namespace strata::table::torture
