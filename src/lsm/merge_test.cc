// Tests of merging generations into the base table (merge.h): newest-wins folding, the
// watermark recorded with the rows, draining, concurrent and crashed merges, pass bounds
// and the merge memory budget.
#include "lsm/merge.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "lsm/generation.h"
#include "lsm/layout.h"
#include "lsm/memtable.h"
#include "lsm/shard_manifest.h"
#include "strata/builder.h"
#include "strata/object_store.h"
#include "support/status_assertions.h"
#include "support/temp_dir.h"
#include "table/table_test_util.h"
#include "util/mutex.h"

namespace strata::lsm {
namespace {

using table::testing_util::Int64Column;
using table::testing_util::KeyedSchema;
using table::testing_util::ReadAll;
using ::testing::HasSubstr;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr const char* kPrefix = "db/";

// Rows of KeyedSchema with the given ids, every name `name` and score = id.
RecordBatch Rows(const std::vector<int64_t>& ids, const std::string& name) {
  Int64Builder id_builder(int64());
  BinaryBuilder names(utf8());
  Float64Builder scores(float64());
  for (int64_t id : ids) {
    id_builder.Append(id);
    EXPECT_TRUE(names.Append(name).ok());
    scores.Append(static_cast<double>(id));
  }
  Result<RecordBatch> batch =
      RecordBatch::Make(KeyedSchema(), static_cast<int64_t>(ids.size()),
                        {*id_builder.Finish(), *names.Finish(), *scores.Finish()});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

// Tombstone rows: the ids, every other column null.
RecordBatch Tombstones(const std::vector<int64_t>& ids) {
  Int64Builder id_builder(int64());
  for (int64_t id : ids) id_builder.Append(id);
  auto n = static_cast<int64_t>(ids.size());
  Result<RecordBatch> batch = RecordBatch::Make(
      KeyedSchema(), n,
      {*id_builder.Finish(), Array::MakeNull(utf8(), n), Array::MakeNull(float64(), n)});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

#define EXPECT_OK(expr)                            \
  do {                                             \
    const ::strata::Status st_ = (expr);           \
    EXPECT_TRUE(st_.ok()) << #expr << ": " << st_; \
  } while (0)

struct Op {
  RecordBatch batch;
  bool tombstone = false;
};

// A store holding a keyed base table and one shard with a claimed manifest.
class MergeEnv {
 public:
  explicit MergeEnv(std::shared_ptr<ObjectStore> store) : store_(std::move(store)) {}

  void SetUp() {
    shard_ = DeriveShardId("merge-test");
    ASSERT_OK_AND_ASSIGN(base_, table::Table::Create(store_, kPrefix, KeyedSchema()));
    manifests_ = std::make_unique<ShardManifestStore>(store_, kPrefix, shard_);
    ASSERT_OK_AND_ASSIGN(pb::ShardManifest claimed, manifests_->Claim());
    epoch_ = claimed.writer_epoch();
    cache_ = std::make_unique<GenerationCache>(store_, kPrefix, table::TableOptions{});
  }

  // Writes the ops as the next generation and publishes it in the shard manifest.
  pb::Generation Publish(const std::vector<Op>& ops) {
    std::shared_ptr<MemTable> memtable = MemTable::Make(KeyedSchema(), 0);
    uint64_t offset = 0;
    for (const Op& op : ops) {
      EXPECT_OK(memtable->Append(op.batch, op.tombstone, MakeWalPosition(epoch_, 1, ++offset)));
    }
    uint64_t number = next_generation_++;
    Result<pb::Generation> entry =
        WriteGeneration(store_, kPrefix, shard_, number, *memtable->Snapshot(), {});
    EXPECT_TRUE(entry.ok()) << entry.status();
    if (!entry.ok()) return {};
    pb::Generation written = *entry;
    Result<pb::ShardManifest> updated =
        manifests_->Update(epoch_, "seal", [&](pb::ShardManifest& m) {
          *m.add_generations() = written;
          m.set_current_generation(number + 1);
          return Status::OK();
        });
    EXPECT_TRUE(updated.ok()) << updated.status();
    return written;
  }

  std::vector<uint64_t> Pending() const {
    std::vector<uint64_t> out;
    Result<pb::ShardManifest> m = manifests_->ReadLatest();
    EXPECT_TRUE(m.ok()) << m.status();
    if (!m.ok()) return out;
    for (const pb::Generation& g : m->generations()) out.push_back(g.generation());
    return out;
  }

  Result<std::optional<PreparedMerge>> Prepare(const MergeOptions& options = {},
                                               int min_generations = 1) {
    return PrepareMerge(base_, *manifests_, *cache_, options, min_generations);
  }

  Result<MergeCommitResult> Commit(PreparedMerge prepared) {
    return CommitMerge(base_, *manifests_, std::move(prepared),
                       [this](const Uuid& shard, std::vector<std::string> paths) {
                         EXPECT_EQ(shard, shard_);
                         for (std::string& p : paths) deleted_.push_back(std::move(p));
                       });
  }

  // Bytes of a generation's rows as a merge reads them (every column, tombstone included).
  int64_t GenerationMemoryBytes(const pb::Generation& entry) {
    Result<std::shared_ptr<Generation>> gen = cache_->Get(shard_, entry);
    EXPECT_TRUE(gen.ok()) << gen.status();
    if (!gen.ok()) return -1;
    Result<std::unique_ptr<table::BatchIterator>> it = (*gen)->table()->Scan();
    EXPECT_TRUE(it.ok());
    Result<std::vector<RecordBatch>> batches = (*it)->ToBatches();
    EXPECT_TRUE(batches.ok());
    int64_t total = 0;
    for (const RecordBatch& b : *batches) total += b.BufferBytes();
    return total;
  }

  // The live (id -> name) rows of the base at its latest version.
  std::map<int64_t, std::string> BaseRows() {
    EXPECT_OK(base_->Refresh());
    return RowsOf(*base_);
  }
  static std::map<int64_t, std::string> RowsOf(const table::Table& t) {
    std::map<int64_t, std::string> out;
    Result<RecordBatch> all = ReadAll(t);
    EXPECT_TRUE(all.ok()) << all.status();
    if (!all.ok()) return out;
    std::vector<int64_t> ids = Int64Column(*all, "id");
    Array names = all->GetColumnByName("name");
    for (size_t i = 0; i < ids.size(); ++i) {
      std::string name = names.IsNull(static_cast<int64_t>(i))
                             ? "<null>"
                             : std::string(names.StringValue(static_cast<int64_t>(i)));
      EXPECT_TRUE(out.emplace(ids[i], name).second) << "key " << ids[i] << " is live twice";
    }
    return out;
  }

  std::shared_ptr<ObjectStore> store_;
  Uuid shard_;
  std::shared_ptr<table::Table> base_;
  std::unique_ptr<ShardManifestStore> manifests_;
  std::unique_ptr<GenerationCache> cache_;
  uint64_t epoch_ = 0;
  uint64_t next_generation_ = 1;
  std::vector<std::string> deleted_;
};

std::string WatermarkOf(const table::Table& t, const Uuid& shard) {
  KeyValueMetadata metadata = t.metadata();
  std::optional<std::string_view> v = metadata.Get(MergedWatermarkKey(shard));
  return v.has_value() ? std::string(*v) : std::string();
}

std::vector<size_t> PassSizes(MergeEnv& env, const MergeOptions& options) {
  std::vector<size_t> sizes;
  for (int pass = 0; pass < 50; ++pass) {
    Result<std::optional<PreparedMerge>> prepared = env.Prepare(options);
    EXPECT_TRUE(prepared.ok()) << prepared.status();
    if (!prepared.ok() || !prepared->has_value()) break;
    sizes.push_back((*prepared)->generations.size());
    Result<MergeCommitResult> committed = env.Commit(std::move(**prepared));
    EXPECT_TRUE(committed.ok()) << committed.status();
    if (!committed.ok()) break;
  }
  return sizes;
}

// --- Tests over both a memory and a local store ------------------------------------------

class MergeStoreTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::shared_ptr<ObjectStore> store;
    if (GetParam() == "memory") {
      store = NewMemoryObjectStore();
    } else {
      dir_ = std::make_unique<testing::TempDir>("merge");
      ASSERT_OK_AND_ASSIGN(store, OpenLocalObjectStore(dir_->str()));
    }
    env_ = std::make_unique<MergeEnv>(store);
    ASSERT_NO_FATAL_FAILURE(env_->SetUp());
  }
  std::unique_ptr<testing::TempDir> dir_;
  std::unique_ptr<MergeEnv> env_;
};

TEST_P(MergeStoreTest, FoldsNewestWinsAndTombstonesWithWatermarkInSameVersion) {
  MergeEnv& env = *env_;
  ASSERT_OK(env.base_->Append({Rows({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, "base")}).status());
  uint64_t before_version = env.base_->version();
  // Generation 1: 5..14 as "g1" (7 written twice: the newer "g1" wins inside the memtable).
  pb::Generation g1 =
      env.Publish({{Rows({7}, "stale")}, {Rows({5, 6, 7, 8, 9, 10, 11, 12, 13, 14}, "g1")}});
  // Generation 2: 8..11 as "g2", deletes 0, 1 (base rows) and 12 (a generation-1 row).
  pb::Generation g2 = env.Publish({{Rows({8, 9, 10, 11}, "g2")}, {Tombstones({0, 1, 12}), true}});
  // Generation 3: revives 1 after its deletion and deletes 13.
  pb::Generation g3 = env.Publish({{Rows({1}, "g3")}, {Tombstones({13}), true}});

  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> prepared, env.Prepare());
  ASSERT_TRUE(prepared.has_value());
  EXPECT_EQ(prepared->generations.size(), 3u);
  EXPECT_EQ(prepared->max_generation, 3u);
  EXPECT_EQ(prepared->watermark_before, 0u);
  EXPECT_EQ(prepared->deleted_keys.size(), 3u);  // 0, 12, 13
  int64_t prepared_rows = 0;
  for (const RecordBatch& b : prepared->rows) {
    EXPECT_TRUE(b.schema()->Equals(*env.base_->schema(), false)) << b.schema()->ToString();
    prepared_rows += b.num_rows();
  }
  EXPECT_EQ(prepared_rows, 9);  // 1, 5..11 and 14
  ASSERT_OK_AND_ASSIGN(MergeCommitResult result, env.Commit(std::move(*prepared)));
  EXPECT_EQ(result.generations_reclaimed, 3);
  EXPECT_GT(result.base_version, before_version);
  EXPECT_EQ(result.rows_merged, 9);
  EXPECT_EQ(result.keys_deleted, 3);

  std::map<int64_t, std::string> expected = {{1, "g3"}, {2, "base"}, {3, "base"}, {4, "base"},
                                             {5, "g1"}, {6, "g1"},   {7, "g1"},   {8, "g2"},
                                             {9, "g2"}, {10, "g2"},  {11, "g2"},  {14, "g1"}};
  EXPECT_EQ(env.BaseRows(), expected);
  ASSERT_OK_AND_ASSIGN(int64_t count, env.base_->CountRows());
  EXPECT_EQ(count, static_cast<int64_t>(expected.size()));

  // The merged version holds the rows and the watermark; the version before it neither.
  ASSERT_OK_AND_ASSIGN(auto merged, env.base_->Checkout(result.base_version));
  EXPECT_EQ(WatermarkOf(*merged, env.shard_), "3");
  EXPECT_EQ(MergeEnv::RowsOf(*merged), expected);
  ASSERT_OK_AND_ASSIGN(auto previous, env.base_->Checkout(result.base_version - 1));
  EXPECT_EQ(WatermarkOf(*previous, env.shard_), "");
  ASSERT_OK_AND_ASSIGN(int64_t previous_count, previous->CountRows());
  EXPECT_EQ(previous_count, 10);
  EXPECT_EQ(MergeEnv::RowsOf(*previous).at(0), "base");

  EXPECT_TRUE(env.Pending().empty());
  EXPECT_THAT(env.deleted_, ::testing::UnorderedElementsAre(g1.path(), g2.path(), g3.path()));
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> again, env.Prepare());
  EXPECT_FALSE(again.has_value());
}

TEST_P(MergeStoreTest, DrainKeepsGenerationPublishedAfterPrepare) {
  MergeEnv& env = *env_;
  env.Publish({{Rows({1, 2}, "g1")}});
  env.Publish({{Rows({2, 3}, "g2")}});
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> prepared, env.Prepare());
  ASSERT_TRUE(prepared.has_value());
  pb::Generation late = env.Publish({{Rows({3, 4}, "g3")}});
  ASSERT_OK_AND_ASSIGN(MergeCommitResult result, env.Commit(std::move(*prepared)));
  EXPECT_EQ(result.generations_reclaimed, 2);
  EXPECT_EQ(env.Pending(), std::vector<uint64_t>{3});
  EXPECT_EQ(env.deleted_.size(), 2u);
  EXPECT_EQ(WatermarkOf(*env.base_, env.shard_), "2");
  EXPECT_EQ(env.BaseRows(), (std::map<int64_t, std::string>{{1, "g1"}, {2, "g2"}, {3, "g2"}}));

  // The late generation is merged by the next pass.
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> next, env.Prepare());
  ASSERT_TRUE(next.has_value());
  ASSERT_EQ(next->generations.size(), 1u);
  EXPECT_EQ(next->generations[0].path(), late.path());
  EXPECT_EQ(next->watermark_before, 2u);
  ASSERT_OK_AND_ASSIGN(MergeCommitResult second, env.Commit(std::move(*next)));
  EXPECT_EQ(second.generations_reclaimed, 1);
  EXPECT_EQ(env.BaseRows(),
            (std::map<int64_t, std::string>{{1, "g1"}, {2, "g2"}, {3, "g3"}, {4, "g3"}}));
  EXPECT_EQ(WatermarkOf(*env.base_, env.shard_), "3");
  EXPECT_TRUE(env.Pending().empty());
}

TEST_P(MergeStoreTest, ConcurrentMergesOfOneShardCommitTheBaseOnce) {
  MergeEnv& env = *env_;
  ASSERT_OK(env.base_->Append({Rows({0, 1, 2, 3}, "base")}).status());
  env.Publish({{Rows({2, 3, 4, 5}, "g1")}});
  env.Publish({{Rows({5, 6}, "g2")}, {Tombstones({0}), true}});
  uint64_t start_version = env.base_->version();

  // Two merges, each with its own handles, prepared on the same generations.
  ASSERT_OK_AND_ASSIGN(auto base_b, table::Table::Open(env.store_, kPrefix));
  ShardManifestStore manifests_b(env.store_, kPrefix, env.shard_);
  GenerationCache cache_b(env.store_, kPrefix, {});
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> a, env.Prepare());
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> b,
                       PrepareMerge(base_b, manifests_b, cache_b, {}));
  ASSERT_TRUE(a.has_value() && b.has_value());
  ASSERT_EQ(a->generations.size(), 2u);
  ASSERT_EQ(b->generations.size(), 2u);

  Result<MergeCommitResult> result_a = Status::Internal("not run");
  Result<MergeCommitResult> result_b = Status::Internal("not run");
  std::atomic<bool> go{false};
  std::thread ta([&] {
    while (!go.load()) std::this_thread::yield();
    result_a = CommitMerge(env.base_, *env.manifests_, std::move(*a), {});
  });
  std::thread tb([&] {
    while (!go.load()) std::this_thread::yield();
    result_b = CommitMerge(base_b, manifests_b, std::move(*b), {});
  });
  go = true;
  ta.join();
  tb.join();
  ASSERT_TRUE(result_a.ok()) << result_a.status();
  ASSERT_TRUE(result_b.ok()) << result_b.status();
  EXPECT_EQ((result_a->base_version != 0) + (result_b->base_version != 0), 1)
      << result_a->base_version << " " << result_b->base_version;
  for (const auto* r : {&*result_a, &*result_b}) {
    EXPECT_TRUE(r->generations_reclaimed == 0 || r->generations_reclaimed == 2)
        << r->generations_reclaimed;
  }
  EXPECT_GE(result_a->generations_reclaimed + result_b->generations_reclaimed, 2);

  ASSERT_OK(env.base_->Refresh());
  EXPECT_EQ(env.base_->version(), start_version + 1);  // exactly one base commit
  std::map<int64_t, std::string> expected = {{1, "base"}, {2, "g1"}, {3, "g1"},
                                             {4, "g1"},   {5, "g2"}, {6, "g2"}};
  EXPECT_EQ(env.BaseRows(), expected);
  ASSERT_OK_AND_ASSIGN(int64_t count, env.base_->CountRows());
  EXPECT_EQ(count, static_cast<int64_t>(expected.size()));
  EXPECT_TRUE(env.Pending().empty());
}

TEST_P(MergeStoreTest, CrashAfterBaseCommitIsDrainedWithoutSecondCommit) {
  MergeEnv& env = *env_;
  env.Publish({{Rows({1, 2}, "g1")}});
  env.Publish({{Rows({2, 3}, "g2")}});
  // The crashed merge committed the base (rows + watermark 2) but never drained.
  table::UpsertOptions crashed;
  crashed.metadata_updates.Set(MergedWatermarkKey(env.shard_), "2");
  ASSERT_OK(env.base_->Upsert({Rows({1}, "g1"), Rows({2, 3}, "g2")}, crashed).status());
  uint64_t version = env.base_->version();

  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> prepared, env.Prepare());
  ASSERT_TRUE(prepared.has_value());
  EXPECT_EQ(prepared->generations.size(), 2u);
  EXPECT_EQ(prepared->watermark_before, 2u);
  EXPECT_TRUE(prepared->rows.empty());
  EXPECT_TRUE(prepared->deleted_keys.empty());
  ASSERT_OK_AND_ASSIGN(MergeCommitResult result, env.Commit(std::move(*prepared)));
  EXPECT_EQ(result.base_version, 0u);
  EXPECT_EQ(result.generations_reclaimed, 2);
  EXPECT_EQ(env.deleted_.size(), 2u);
  ASSERT_OK(env.base_->Refresh());
  EXPECT_EQ(env.base_->version(), version);
  EXPECT_TRUE(env.Pending().empty());
  ASSERT_OK_AND_ASSIGN(int64_t count, env.base_->CountRows());
  EXPECT_EQ(count, 3);
}

INSTANTIATE_TEST_SUITE_P(Stores, MergeStoreTest, ::testing::Values("memory", "local"),
                         [](const auto& info) { return info.param; });

// --- Memory-store tests ------------------------------------------------------------------

class MergeTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NO_FATAL_FAILURE(env_.SetUp()); }
  MergeEnv env_{NewMemoryObjectStore()};
};

TEST_F(MergeTest, NothingPendingOrBelowMinGenerationsPreparesNothing) {
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> none, env_.Prepare());
  EXPECT_FALSE(none.has_value());
  env_.Publish({{Rows({1}, "a")}});
  env_.Publish({{Rows({2}, "b")}});
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> too_few, env_.Prepare({}, 3));
  EXPECT_FALSE(too_few.has_value());
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> enough, env_.Prepare({}, 2));
  ASSERT_TRUE(enough.has_value());
  EXPECT_EQ(enough->generations.size(), 2u);
}

TEST_F(MergeTest, MaxGenerationsBoundsEachPass) {
  for (int64_t i = 0; i < 10; ++i) env_.Publish({{Rows({i, i + 100}, "g" + std::to_string(i))}});
  MergeOptions options;
  options.max_generations = 3;
  EXPECT_EQ(PassSizes(env_, options), (std::vector<size_t>{3, 3, 3, 1}));
  EXPECT_TRUE(env_.Pending().empty());
  EXPECT_EQ(WatermarkOf(*env_.base_, env_.shard_), "10");
  ASSERT_OK_AND_ASSIGN(int64_t count, env_.base_->CountRows());
  EXPECT_EQ(count, 20);
}

TEST_F(MergeTest, MaxBytesBoundsEachPassByWholeGenerations) {
  std::vector<pb::Generation> gens;
  for (int64_t i = 0; i < 5; ++i)
    gens.push_back(env_.Publish({{Rows({i * 10, i * 10 + 1}, "xx")}}));
  int64_t size = env_.GenerationMemoryBytes(gens[0]);
  ASSERT_GT(size, 0);
  for (const pb::Generation& g : gens) ASSERT_EQ(env_.GenerationMemoryBytes(g), size);
  MergeOptions options;
  options.max_generations = 0;
  // A pass stops once its generations reach max_bytes: two of them here.
  options.max_bytes = 2 * size;
  EXPECT_EQ(PassSizes(env_, options), (std::vector<size_t>{2, 2, 1}));
  ASSERT_OK_AND_ASSIGN(int64_t count, env_.base_->CountRows());
  EXPECT_EQ(count, 10);
}

TEST_F(MergeTest, OversizedFirstGenerationIsMergedAlone) {
  std::vector<int64_t> many;
  for (int64_t i = 0; i < 200; ++i) many.push_back(i);
  pb::Generation big = env_.Publish({{Rows(many, "big")}});
  pb::Generation small1 = env_.Publish({{Rows({1000}, "s")}});
  env_.Publish({{Rows({1001}, "s")}});
  int64_t small_size = env_.GenerationMemoryBytes(small1);
  ASSERT_GT(env_.GenerationMemoryBytes(big), 3 * small_size);
  MergeOptions options;
  options.max_generations = 0;
  options.max_bytes = 3 * small_size;
  EXPECT_EQ(PassSizes(env_, options), (std::vector<size_t>{1, 2}));
  ASSERT_OK_AND_ASSIGN(int64_t count, env_.base_->CountRows());
  EXPECT_EQ(count, 202);
}

TEST_F(MergeTest, BudgetBusyForFirstGenerationAndStopsBeforeLaterOnes) {
  // Names of 24 KiB make a generation of 64 rows read as > 1 MiB, i.e. two permits.
  std::string wide(24 << 10, 'w');
  std::vector<int64_t> ids;
  for (int64_t i = 0; i < 64; ++i) ids.push_back(i);
  pb::Generation big = env_.Publish({{Rows(ids, wide)}});
  ASSERT_GT(env_.GenerationMemoryBytes(big), kMiB);

  MergeBudget budget(2 * kMiB);
  MergeOptions options;
  options.budget = &budget;
  options.max_bytes = kMiB;  // one permit up front
  {
    MergeBudget::Reservation other = budget.Reserve(kMiB);
    Result<std::optional<PreparedMerge>> busy = env_.Prepare(options);
    ASSERT_FALSE(busy.ok());
    EXPECT_TRUE(busy.status().IsBusy()) << busy.status();
    EXPECT_THAT(busy.status().message(), HasSubstr("merge memory budget busy"));
    EXPECT_EQ(budget.reserved_bytes(), kMiB);  // the failed pass released its reservation
  }
  // With the budget free the big generation is merged (alone: it reaches max_bytes).
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> prepared, env_.Prepare(options));
  ASSERT_TRUE(prepared.has_value());
  EXPECT_EQ(prepared->generations.size(), 1u);
  EXPECT_GT(budget.reserved_bytes(), kMiB);
  ASSERT_OK(env_.Commit(std::move(*prepared)).status());
  EXPECT_EQ(budget.reserved_bytes(), 0);

  // A small generation followed by a big one that does not fit: the pass stops before it.
  env_.Publish({{Rows({1000}, "s")}});
  env_.Publish({{Rows(ids, wide)}});
  {
    MergeBudget::Reservation other = budget.Reserve(kMiB);
    ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> first, env_.Prepare(options));
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->generations.size(), 1u);
    ASSERT_OK(env_.Commit(std::move(*first)).status());
  }
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> second, env_.Prepare(options));
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->generations.size(), 1u);
  ASSERT_OK(env_.Commit(std::move(*second)).status());
  EXPECT_TRUE(env_.Pending().empty());
}

TEST_F(MergeTest, StaleDrainAfterNewClaimIsFencedAndReportedBesideTheBaseCommit) {
  env_.Publish({{Rows({1}, "a")}});
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> prepared, env_.Prepare());
  ASSERT_TRUE(prepared.has_value());
  uint64_t old_epoch = prepared->epoch;
  // A new writer claims the shard.
  ShardManifestStore other(env_.store_, kPrefix, env_.shard_);
  ASSERT_OK_AND_ASSIGN(pb::ShardManifest claimed, other.Claim());
  ASSERT_GT(claimed.writer_epoch(), old_epoch);

  Result<pb::ShardManifest> stale = env_.manifests_->Drain(old_epoch, {1});
  ASSERT_FALSE(stale.ok());
  EXPECT_TRUE(stale.status().IsFenced()) << stale.status();

  // The base commit is made before the drain is fenced: the result says so, with the
  // fenced drain beside it, instead of failing as if nothing had changed.
  Result<MergeCommitResult> result = env_.Commit(std::move(*prepared));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_NE(result->base_version, 0u);
  EXPECT_EQ(result->generations_reclaimed, 0);
  EXPECT_TRUE(result->drain_status.IsFenced()) << result->drain_status;
  EXPECT_THAT(result->drain_status.message(), HasSubstr("merge writer epoch changed before drain"));
  EXPECT_EQ(env_.Pending(), std::vector<uint64_t>{1});
  EXPECT_TRUE(env_.deleted_.empty());
}

// --- MergeBudget --------------------------------------------------------------------------

TEST(MergeBudgetTest, ReservationReleasesOnDropAndMove) {
  MergeBudget budget(5 * kMiB);  // 3 MiB + 5 bytes takes four permits
  {
    MergeBudget::Reservation r = budget.Reserve(3 * kMiB + 5);
    EXPECT_EQ(r.bytes(), 3 * kMiB + 5);
    EXPECT_EQ(budget.reserved_bytes(), 3 * kMiB + 5);
    MergeBudget::Reservation moved(std::move(r));
    EXPECT_EQ(budget.reserved_bytes(), 3 * kMiB + 5);
    EXPECT_EQ(moved.bytes(), 3 * kMiB + 5);
    MergeBudget::Reservation small = budget.Reserve(10);
    EXPECT_EQ(budget.reserved_bytes(), 3 * kMiB + 15);
    small = std::move(moved);  // releases the small one
    EXPECT_EQ(budget.reserved_bytes(), 3 * kMiB + 5);
  }
  EXPECT_EQ(budget.reserved_bytes(), 0);
}

TEST(MergeBudgetTest, ExhaustedBudgetBlocksReserveUntilRelease) {
  MergeBudget budget(2 * kMiB);
  auto held = std::make_unique<MergeBudget::Reservation>(budget.Reserve(2 * kMiB));
  std::atomic<bool> acquired{false};
  std::thread waiter([&] {
    MergeBudget::Reservation r = budget.Reserve(1);
    acquired = true;
  });
  budget.WaitForWaiters(1);
  EXPECT_FALSE(acquired.load());
  held.reset();
  waiter.join();
  EXPECT_TRUE(acquired.load());
  EXPECT_EQ(budget.reserved_bytes(), 0);
}

TEST(MergeBudgetTest, OversizedRequestWaitsForIdleBudgetAndRunsAlone) {
  MergeBudget budget(2 * kMiB);
  auto small = std::make_unique<MergeBudget::Reservation>(budget.Reserve(1));
  std::atomic<bool> big_acquired{false};
  std::latch big_holds(1);    // the big reservation is made
  std::latch release_big(1);  // the big thread may drop it
  std::thread big([&] {
    MergeBudget::Reservation r = budget.Reserve(10 * kMiB);
    EXPECT_EQ(r.bytes(), 10 * kMiB);
    big_acquired = true;
    big_holds.count_down();
    release_big.wait();
  });
  budget.WaitForWaiters(1);
  EXPECT_FALSE(big_acquired.load());
  small.reset();
  big_holds.wait();
  EXPECT_EQ(budget.reserved_bytes(), 10 * kMiB);
  // Nothing else fits while the oversized reservation holds the whole budget.
  std::atomic<bool> other_acquired{false};
  std::thread other([&] {
    MergeBudget::Reservation r = budget.Reserve(1);
    other_acquired = true;
  });
  budget.WaitForWaiters(1);
  EXPECT_FALSE(other_acquired.load());
  release_big.count_down();
  big.join();
  other.join();
  EXPECT_TRUE(other_acquired.load());
  EXPECT_EQ(budget.reserved_bytes(), 0);
}

TEST(MergeBudgetTest, SmallRequestsDoNotOvertakeAWaitingWholeBudgetRequest) {
  MergeBudget budget(4 * kMiB);
  auto held = std::make_unique<MergeBudget::Reservation>(budget.Reserve(kMiB));
  Mutex mu;
  std::vector<std::string> granted;  // guarded by mu
  auto grant = [&](std::string name) {
    MutexLock lock(mu);
    granted.push_back(std::move(name));
  };
  std::latch whole_holds(1);
  std::latch release_whole(1);
  std::thread whole([&] {
    MergeBudget::Reservation r = budget.Reserve(4 * kMiB);
    grant("whole");
    whole_holds.count_down();
    release_whole.wait();
  });
  budget.WaitForWaiters(1);
  // Three permits are free: before, a 1 MiB request took one at once, and a stream of them
  // kept the whole-budget request waiting for ever.
  std::thread small([&] {
    MergeBudget::Reservation r = budget.Reserve(kMiB);
    grant("small");
  });
  budget.WaitForWaiters(2);
  {
    MutexLock lock(mu);
    EXPECT_TRUE(granted.empty());
  }
  held.reset();
  whole_holds.wait();
  EXPECT_EQ(budget.reserved_bytes(), 4 * kMiB);
  release_whole.count_down();
  whole.join();
  small.join();
  MutexLock lock(mu);
  EXPECT_EQ(granted, (std::vector<std::string>{"whole", "small"}));
  EXPECT_EQ(budget.reserved_bytes(), 0);
}

TEST(MergeBudgetTest, TryGrowToTakesFreePermitsOnlyAndNeverShrinks) {
  MergeBudget budget(3 * kMiB);
  MergeBudget::Reservation r = budget.Reserve(100);
  EXPECT_TRUE(r.TryGrowTo(kMiB));      // same permit
  EXPECT_TRUE(r.TryGrowTo(kMiB + 1));  // a second permit
  EXPECT_EQ(r.bytes(), kMiB + 1);
  EXPECT_EQ(budget.reserved_bytes(), kMiB + 1);
  MergeBudget::Reservation other = budget.Reserve(kMiB);
  EXPECT_FALSE(r.TryGrowTo(2 * kMiB + 1));  // would need a fourth permit
  EXPECT_EQ(r.bytes(), kMiB + 1);
  EXPECT_TRUE(r.TryGrowTo(2 * kMiB));  // still two permits
  EXPECT_TRUE(r.TryGrowTo(10));        // never shrinks
  EXPECT_EQ(r.bytes(), 2 * kMiB);
  EXPECT_EQ(budget.reserved_bytes(), 3 * kMiB);
  MergeBudget::Reservation detached;
  EXPECT_FALSE(detached.TryGrowTo(1));
}

}  // namespace
}  // namespace strata::lsm
