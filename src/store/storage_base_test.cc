// StorageBase over a small generic schema: newest-wins reads with tombstones and filters,
// input alignment, open rules, seal_on_put, metrics and batched point reads.
#include "strata/storage_base.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <optional>
#include <random>
#include <thread>

#include "lsm/layout.h"
#include "store/store_test_util.h"
#include "strata/builder.h"
#include "support/forwarding_object_store.h"
#include "util/clock.h"
#include "util/mutex.h"

namespace strata::store {
namespace {

class StorageBaseTest : public testing::StoreFixture {
 protected:
  static SchemaPtr ItemSchema() {
    return std::make_shared<Schema>(std::vector<FieldPtr>{
        field("id", utf8(), false), field("status", utf8(), true), field("n", int64(), true)});
  }

  // On `store` (the fixture's when null).
  Result<std::unique_ptr<StorageBase>> OpenBase(StorageBaseOptions options = {},
                                                std::shared_ptr<ObjectStore> store = nullptr) {
    options.schema = ItemSchema();
    options.key_column = "id";
    if (options.shard_id.empty()) options.shard_id = "items";
    return StorageBase::Open(store != nullptr ? std::move(store) : store_, prefix_,
                             std::move(options));
  }

  static RecordBatch Items(const std::vector<std::tuple<std::string, std::string, int64_t>>& rows,
                           SchemaPtr schema = ItemSchema()) {
    auto builder = RecordBatchBuilder::Make(schema);
    EXPECT_TRUE(builder.ok());
    for (const auto& [id, status, n] : rows) {
      EXPECT_TRUE((*builder)->GetAs<BinaryBuilder>(0)->Append(id).ok());
      EXPECT_TRUE((*builder)->GetAs<BinaryBuilder>(1)->Append(status).ok());
      (*builder)->GetAs<Int64Builder>(2)->Append(n);
    }
    auto batch = (*builder)->Finish();
    EXPECT_TRUE(batch.ok()) << batch.status();
    return *batch;
  }

  // id -> (status, n) of every row a scan returns; fails on a duplicate id.
  static std::map<std::string, std::pair<std::string, int64_t>> Rows(
      const std::vector<RecordBatch>& batches) {
    std::map<std::string, std::pair<std::string, int64_t>> out;
    for (const RecordBatch& b : batches) {
      int id = b.schema()->GetFieldIndex("id");
      int status = b.schema()->GetFieldIndex("status");
      int n = b.schema()->GetFieldIndex("n");
      for (int64_t i = 0; i < b.num_rows(); ++i) {
        std::string key(b.column(id).StringValue(i));
        EXPECT_FALSE(out.count(key)) << "duplicate row for " << key;
        out[key] = {status >= 0 ? std::string(b.column(status).StringValue(i)) : "",
                    n >= 0 ? b.column(n).Value<int64_t>(i) : 0};
      }
    }
    return out;
  }

  static std::vector<std::string> Keys(
      const std::map<std::string, std::pair<std::string, int64_t>>& m) {
    std::vector<std::string> out;
    for (const auto& [k, v] : m) out.push_back(k);
    return out;
  }

  // strata_wal_generations_recoded_total in `registry`.
  static int64_t RecodedGenerations(MetricsRegistry& registry) {
    const std::string text = registry.ExposePrometheus();
    const std::string sample = "\nstrata_wal_generations_recoded_total ";
    const size_t at = text.find(sample);
    EXPECT_NE(at, std::string::npos) << text;
    return at == std::string::npos ? -1 : std::stoll(text.substr(at + sample.size()));
  }

  // Two writers put, delete, flush and merge at random while a long-lived reader's scans,
  // counts and point reads are checked against a model of what was published. `tune`
  // adjusts the writers' options.
  void RunReaderModel(const std::function<void(StorageBaseOptions&)>& tune);
};

TEST_F(StorageBaseTest, OpenWarnsWhenTheBaseTablesNewestManifestIsMissing) {
  {
    ASSERT_OK_AND_ASSIGN(auto base, OpenBase());
    ASSERT_OK(base->Put({Items({{"a", "new", 1}})}));
    ASSERT_OK_AND_ASSIGN(MergeReport merged, base->Cleanup());
    ASSERT_EQ(merged.base_version, 2u);
  }
  ASSERT_OK(store_->Delete(prefix_ + "_versions/00000000000000000002.manifest"));
  ::testing::internal::CaptureStderr();
  Result<std::unique_ptr<StorageBase>> reopened = OpenBase();
  const std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_OK(reopened.status());
  EXPECT_THAT(err, ::testing::HasSubstr("hint names version 2")) << err;
  EXPECT_THAT(err, ::testing::HasSubstr(prefix_)) << err;
}

TEST_F(StorageBaseTest, NewerRowThatFailsTheFilterStillHidesOlderRows) {
  ASSERT_OK_AND_ASSIGN(auto base, OpenBase());
  ASSERT_OK(base->Put({Items({{"k", "ok", 1}, {"j", "ok", 2}})}));
  ASSERT_OK(base->Cleanup().status());  // k = ok in the base table
  ASSERT_OK(base->Put({Items({{"k", "bad", 3}})}));
  ASSERT_OK(base->Flush().status());  // k = bad in a pending generation
  ScanRequest ok;
  ok.filter = "status = 'ok'";
  ASSERT_OK_AND_ASSIGN(auto filtered, base->Scan(ok));
  EXPECT_EQ(Keys(Rows(filtered)), std::vector<std::string>{"j"});
  ASSERT_OK_AND_ASSIGN(auto all, base->Scan({}));
  auto rows = Rows(all);
  EXPECT_EQ(rows["k"], std::make_pair(std::string("bad"), int64_t{3}));
  ASSERT_OK_AND_ASSIGN(int64_t count_ok, base->Count(ListSource::kAll, "status = 'ok'"));
  EXPECT_EQ(count_ok, 1);
  // After the merge the base holds the newer row only.
  ASSERT_OK(base->Cleanup().status());
  ASSERT_OK_AND_ASSIGN(filtered, base->Scan(ok));
  EXPECT_EQ(Keys(Rows(filtered)), std::vector<std::string>{"j"});
  int64_t raw = base->Observe()->base_rows;
  EXPECT_EQ(raw, 2);
}

TEST_F(StorageBaseTest, GenerationCompressionAppliesToGenerationsAndRowsReadBack) {
  // 200 rows of repetitive text: compressed generations are clearly smaller than raw ones.
  std::vector<std::tuple<std::string, std::string, int64_t>> rows;
  for (int i = 0; i < 200; ++i) {
    std::string status;
    for (int w = 0; w < 40; ++w) status += (w + i) % 3 == 0 ? "pending " : "complete ";
    rows.emplace_back(fmt::format("k{:04d}", i), status, i);
  }
  std::map<ipc::Compression, int64_t> bytes;
  for (ipc::Compression c :
       {ipc::Compression::kNone, ipc::Compression::kLz4Frame, ipc::Compression::kZstd}) {
    SCOPED_TRACE(std::string(ipc::CompressionName(c)));
    StorageBaseOptions options;
    options.shard_id = fmt::format("gen-{}", ipc::CompressionName(c));
    options.generation_compression = c;
    prefix_ = options.shard_id + "/";
    ASSERT_OK_AND_ASSIGN(auto base, OpenBase(options));
    ASSERT_OK(base->Put({Items(rows)}));
    ASSERT_OK(base->Flush().status());
    lsm::pb::ShardManifest manifest = Manifest(options.shard_id);
    ASSERT_EQ(manifest.generations_size(), 1);
    bytes[c] = manifest.generations(0).bytes();
    ASSERT_OK_AND_ASSIGN(auto scanned, base->Scan({}));
    ASSERT_EQ(Rows(scanned).size(), rows.size());
    EXPECT_EQ(Rows(scanned)["k0007"], std::make_pair(std::get<1>(rows[7]), int64_t{7}));
    ASSERT_OK(base->Cleanup().status());  // merged into the (zstd) base: still the same rows
    ASSERT_OK_AND_ASSIGN(auto merged, base->Scan({}));
    EXPECT_EQ(Rows(merged), Rows(scanned));
  }
  EXPECT_LT(bytes[ipc::Compression::kLz4Frame], bytes[ipc::Compression::kNone]);
  EXPECT_LT(bytes[ipc::Compression::kZstd], bytes[ipc::Compression::kNone]);
}

// Two writers on one store whose clocks disagree: B's runs 10 minutes behind A's. B's write,
// made after A's was published, must win, although B's seal time reads earlier.
TEST_F(StorageBaseTest, LaterWriteWinsAcrossShardsWhenItsWriterClockIsBehind) {
  constexpr int64_t kNow = 1'760'000'000'000'000;
  constexpr int64_t kTenMinutes = int64_t{600} * 1'000'000;
  ManualClock clock_a(kNow);
  ManualClock clock_b(kNow - kTenMinutes);
  StorageBaseOptions a_options;
  a_options.shard_id = "writer-a";
  a_options.clock = &clock_a;
  StorageBaseOptions b_options;
  b_options.shard_id = "writer-b";
  b_options.clock = &clock_b;
  ASSERT_OK_AND_ASSIGN(auto a, OpenBase(a_options));
  ASSERT_OK_AND_ASSIGN(auto b, OpenBase(b_options));

  ASSERT_OK(a->Put({Items({{"k", "from-a", 1}, {"only-a", "a", 1}})}));
  ASSERT_OK(a->Flush().status());
  clock_a.Advance(std::chrono::seconds(1));
  clock_b.Advance(std::chrono::seconds(1));
  ASSERT_OK(b->Put({Items({{"k", "from-b", 2}})}));
  ASSERT_OK(b->Flush().status());

  ASSERT_OK_AND_ASSIGN(auto reader, OpenBase());
  ASSERT_OK_AND_ASSIGN(auto scanned, reader->Scan({}));
  auto rows = Rows(scanned);
  EXPECT_EQ(rows["k"].first, "from-b");
  EXPECT_EQ(rows["only-a"].first, "a");
  ASSERT_OK_AND_ASSIGN(RecordBatch got, reader->GetMany({expr::Scalar::String("k")}));
  ASSERT_EQ(got.num_rows(), 1);
  EXPECT_EQ(got.column(1).StringValue(0), "from-b");
  ASSERT_OK_AND_ASSIGN(int64_t from_b, reader->Count(ListSource::kAll, "status = 'from-b'"));
  EXPECT_EQ(from_b, 1);

  // And again the other way round: A writes after B, with the clock that is ahead.
  ASSERT_OK(a->Put({Items({{"k", "from-a-again", 3}})}));
  ASSERT_OK(a->Flush().status());
  ASSERT_OK_AND_ASSIGN(RecordBatch again, reader->GetMany({expr::Scalar::String("k")}));
  ASSERT_EQ(again.num_rows(), 1);
  EXPECT_EQ(again.column(1).StringValue(0), "from-a-again");
}

TEST_F(StorageBaseTest, TombstonesHideKeysUntilANewerPut) {
  ASSERT_OK_AND_ASSIGN(auto base, OpenBase());
  ASSERT_OK(base->Put({Items({{"a", "x", 1}, {"b", "x", 2}, {"c", "x", 3}})}));
  ASSERT_OK(base->Cleanup().status());
  ASSERT_OK(base->DeleteKeys({expr::Scalar::String("a"), expr::Scalar::String("b")}));
  ASSERT_OK(base->Flush().status());
  ASSERT_OK_AND_ASSIGN(auto after_delete, base->Scan({}));
  EXPECT_EQ(Keys(Rows(after_delete)), std::vector<std::string>{"c"});
  ASSERT_OK_AND_ASSIGN(RecordBatch got, base->GetMany({expr::Scalar::String("a")}));
  EXPECT_EQ(got.num_rows(), 0);
  ASSERT_OK(base->Put({Items({{"b", "back", 4}})}));
  ASSERT_OK(base->Flush().status());
  ASSERT_OK_AND_ASSIGN(auto resurrected, base->Scan({}));
  EXPECT_EQ(Keys(Rows(resurrected)), (std::vector<std::string>{"b", "c"}));
  ASSERT_OK(base->Cleanup().status());
  ASSERT_OK_AND_ASSIGN(auto merged, base->Scan({}));
  EXPECT_EQ(Keys(Rows(merged)), (std::vector<std::string>{"b", "c"}));
  int64_t raw = base->Observe()->base_rows;
  EXPECT_EQ(raw, 2) << "the merge deleted a's base row";
}

TEST_F(StorageBaseTest, ProjectionLimitAndOffsetApplyAfterDeduplication) {
  ASSERT_OK_AND_ASSIGN(auto base, OpenBase());
  ASSERT_OK(base->Put({Items({{"a", "old", 1}, {"b", "old", 2}, {"c", "old", 3}})}));
  ASSERT_OK(base->Cleanup().status());
  ASSERT_OK(base->Put({Items({{"a", "new", 10}, {"b", "new", 20}})}));
  ASSERT_OK(base->Flush().status());
  std::set<std::string> seen;
  for (int64_t offset = 0; offset < 4; ++offset) {
    ScanRequest page;
    page.columns = {"n"};
    page.offset = offset;
    page.limit = 1;
    ASSERT_OK_AND_ASSIGN(auto batches, base->Scan(page));
    int64_t rows = 0;
    for (const auto& b : batches) {
      EXPECT_EQ(b.num_columns(), 1);
      for (int64_t i = 0; i < b.num_rows(); ++i)
        seen.insert(std::to_string(b.column(0).Value<int64_t>(i)));
      rows += b.num_rows();
    }
    EXPECT_EQ(rows, offset < 3 ? 1 : 0);
  }
  EXPECT_EQ(seen, (std::set<std::string>{"10", "20", "3"}));
}

TEST_F(StorageBaseTest, ScanEachDeliversWhatScanReturnsOneBatchAtATime) {
  ASSERT_OK_AND_ASSIGN(auto base, OpenBase());
  ASSERT_OK(base->Put({Items({{"a", "old", 1}, {"b", "old", 2}, {"c", "old", 3}})}));
  ASSERT_OK(base->Cleanup().status());
  ASSERT_OK(base->Put({Items({{"a", "new", 10}})}));
  ASSERT_OK(base->DeleteKeys({expr::Scalar::String("b")}));
  ASSERT_OK(base->Flush().status());
  ScanRequest request;
  request.filter = "n > 2";
  ASSERT_OK_AND_ASSIGN(auto whole, base->Scan(request));
  std::vector<RecordBatch> streamed;
  int restarts = 0;
  ASSERT_OK_AND_ASSIGN(uint64_t version, base->ScanEach(
                                             request,
                                             [&](RecordBatch b) {
                                               streamed.push_back(std::move(b));
                                               return Status::OK();
                                             },
                                             [&] {
                                               ++restarts;
                                               streamed.clear();
                                               return Status::OK();
                                             }));
  EXPECT_EQ(version, base->version());
  EXPECT_EQ(restarts, 0);
  EXPECT_EQ(Rows(streamed), Rows(whole));
  EXPECT_EQ(Keys(Rows(streamed)), (std::vector<std::string>{"a", "c"}));
  // A consumer's error stops the scan and is returned.
  Status stopped = base->ScanEach(
                           request, [](RecordBatch) { return Status::Aborted("enough"); },
                           [] { return Status::OK(); })
                       .status();
  EXPECT_TRUE(stopped.IsAborted()) << stopped;
}

TEST_F(StorageBaseTest, ALongScanFinishesOnItsSnapshotWhileMergesCommitBesideIt) {
  StorageBaseOptions options;
  options.generation_delete_delay_seconds = 600;  // merged files outlive the scan
  ASSERT_OK_AND_ASSIGN(auto base, OpenBase(options));
  ASSERT_OK(base->Put({Items({{"a", "old", 1}, {"b", "old", 2}})}));
  ASSERT_OK(base->Cleanup().status());
  ASSERT_OK(base->Put({Items({{"a", "new", 10}})}));
  ASSERT_OK(base->Put({Items({{"c", "new", 3}})}));
  ASSERT_OK(base->Flush().status());
  ASSERT_OK_AND_ASSIGN(auto before, base->Scan({}));
  // Every batch the scan delivers, a merge through the same handle commits a new base
  // version: the scan keeps reading the version and generations it started with.
  std::vector<RecordBatch> streamed;
  int restarts = 0;
  int merges = 0;
  ASSERT_OK_AND_ASSIGN(
      uint64_t version,
      base->ScanEach(
          {},
          [&](RecordBatch b) -> Status {
            streamed.push_back(std::move(b));
            STRATA_RETURN_IF_ERROR(base->Put({Items({{fmt::format("x{}", merges), "late", 0}})}));
            STRATA_ASSIGN_OR_RETURN(MergeReport merged, base->Cleanup());
            merges += merged.base_version > 0 ? 1 : 0;
            return Status::OK();
          },
          [&] {
            ++restarts;
            streamed.clear();
            return Status::OK();
          }));
  EXPECT_GE(merges, 2);
  EXPECT_EQ(restarts, 0);
  EXPECT_LT(version, base->version());
  EXPECT_EQ(Rows(streamed), Rows(before));
  EXPECT_EQ(Keys(Rows(streamed)), (std::vector<std::string>{"a", "b", "c"}));
}

TEST_F(StorageBaseTest, AReplicaMarkerRefusesWritersUntilRemoved) {
  ASSERT_OK_AND_ASSIGN(auto base, OpenBase());
  ASSERT_OK(base->Put({Items({{"a", "x", 1}})}));
  ASSERT_OK(base->Close());
  ASSERT_OK_AND_ASSIGN(auto table, table::Table::Open(store_, prefix_));
  ASSERT_OK(table->UpdateMetadata({{std::string(kReplicaMetadata), "chain-1"}}).status());
  ASSERT_OK_AND_ASSIGN(auto replica, OpenBase());
  Status refused = replica->Put({Items({{"b", "x", 2}})});
  EXPECT_TRUE(refused.IsInvalidArgument()) << refused;
  EXPECT_NE(refused.ToString().find("is a replica (chain chain-1)"), std::string::npos) << refused;
  EXPECT_TRUE(replica->DeleteKeys({expr::Scalar::String("a")}).IsInvalidArgument());
  ASSERT_OK_AND_ASSIGN(int64_t rows, replica->Count());
  EXPECT_EQ(rows, 1);  // reads are not affected
  ASSERT_OK(table->UpdateMetadata({{std::string(kReplicaMetadata), ""}}).status());
  ASSERT_OK(replica->Put({Items({{"b", "x", 2}})}));
}

TEST_F(StorageBaseTest, GetManyKeepsTheOrderAskedSkippingMissingAndRepeatedKeys) {
  ASSERT_OK_AND_ASSIGN(auto base, OpenBase());
  ASSERT_OK(base->Put({Items({{"a", "x", 1}, {"b", "x", 2}})}));
  ASSERT_OK(base->Cleanup().status());
  ASSERT_OK(base->Put({Items({{"c", "x", 3}, {"a", "y", 4}})}));
  ASSERT_OK(base->Flush().status());
  ASSERT_OK_AND_ASSIGN(RecordBatch got,
                       base->GetMany({expr::Scalar::String("c"), expr::Scalar::String("zz"),
                                      expr::Scalar::String("a"), expr::Scalar::String("c"),
                                      expr::Scalar::String("b")},
                                     {"id", "n"}));
  ASSERT_EQ(got.num_rows(), 3);
  EXPECT_EQ(got.column(0).StringValue(0), "c");
  EXPECT_EQ(got.column(0).StringValue(1), "a");
  EXPECT_EQ(got.column(1).Value<int64_t>(1), 4);
  EXPECT_EQ(got.column(0).StringValue(2), "b");
  std::vector<expr::Scalar> too_many(1025, expr::Scalar::String("a"));
  auto refused = base->GetMany(too_many);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(StorageBaseTest, PutAlignsBatchesAndRejectsBadOnesWritingNothing) {
  ASSERT_OK_AND_ASSIGN(auto base, OpenBase());
  // Missing nullable columns become null.
  auto id_only = std::make_shared<Schema>(std::vector<FieldPtr>{field("id", utf8(), false)});
  auto builder = RecordBatchBuilder::Make(id_only);
  ASSERT_OK((*builder)->GetAs<BinaryBuilder>(0)->Append("partial"));
  ASSERT_OK_AND_ASSIGN(RecordBatch partial, (*builder)->Finish());
  ASSERT_OK(base->Put({partial}));
  // A type mismatch names the column.
  auto wrong = std::make_shared<Schema>(
      std::vector<FieldPtr>{field("id", utf8(), false), field("n", utf8(), true)});
  auto wb = RecordBatchBuilder::Make(wrong);
  ASSERT_OK((*wb)->GetAs<BinaryBuilder>(0)->Append("w"));
  ASSERT_OK((*wb)->GetAs<BinaryBuilder>(1)->Append("not a number"));
  ASSERT_OK_AND_ASSIGN(RecordBatch mismatched, (*wb)->Finish());
  Status bad = base->Put({Items({{"good", "x", 1}}), mismatched});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.message().find("'n'"), std::string::npos) << bad;
  // A missing required column.
  auto no_id = std::make_shared<Schema>(std::vector<FieldPtr>{field("n", int64(), true)});
  auto nb = RecordBatchBuilder::Make(no_id);
  (*nb)->GetAs<Int64Builder>(0)->Append(1);
  ASSERT_OK_AND_ASSIGN(RecordBatch keyless, (*nb)->Finish());
  Status missing = base->Put({keyless});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.message().find("'id'"), std::string::npos) << missing;
  ASSERT_OK(base->Flush().status());
  ASSERT_OK_AND_ASSIGN(auto rows, base->Scan({}));
  EXPECT_EQ(Keys(Rows(rows)), std::vector<std::string>{"partial"}) << "a rejected put wrote rows";
}

TEST_F(StorageBaseTest, OpenValidatesTheKeyColumnAndCreateIfMissing) {
  StorageBaseOptions options;
  options.schema = ItemSchema();
  options.key_column = "missing";
  auto bad = StorageBase::Open(store_, prefix_, options);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("key column 'missing' is not present"), std::string::npos);
  options.key_column = "id";
  auto absent = StorageBase::Open(store_, prefix_, options, /*create_if_missing=*/false);
  ASSERT_FALSE(absent.ok());
  EXPECT_EQ(absent.status().code(), StatusCode::kNotFound);
  ASSERT_OK(StorageBase::Open(store_, prefix_, options).status());
  ASSERT_OK(StorageBase::Open(store_, prefix_, options, false).status());
  options.key_column = "status";
  auto not_key = StorageBase::Open(store_, prefix_, options);
  ASSERT_FALSE(not_key.ok());
  EXPECT_EQ(not_key.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(StorageBaseTest, SealOnPutMakesRowsVisibleOnReturn) {
  StorageBaseOptions options;
  options.seal_on_put = true;
  ASSERT_OK_AND_ASSIGN(auto writer, OpenBase(options));
  ASSERT_OK_AND_ASSIGN(auto reader, OpenBase({.shard_id = "reader"}));
  ASSERT_OK(writer->Put({Items({{"v", "x", 1}})}));
  ASSERT_OK_AND_ASSIGN(auto rows, reader->Scan({}));
  EXPECT_EQ(Keys(Rows(rows)), std::vector<std::string>{"v"});
}

TEST_F(StorageBaseTest, WithoutSealOnCloseRowsWaitInTheWalForTheNextWriter) {
  {
    StorageBaseOptions options;
    options.seal_on_close = false;
    ASSERT_OK_AND_ASSIGN(auto writer, OpenBase(options));
    ASSERT_OK(writer->Put({Items({{"w", "x", 1}})}));
    ASSERT_OK(writer->Close());
  }
  ASSERT_OK_AND_ASSIGN(auto reader, OpenBase({.shard_id = "reader"}));
  ASSERT_OK_AND_ASSIGN(int64_t before, reader->Count());
  EXPECT_EQ(before, 0) << "closing without a seal must not publish the rows";
  ASSERT_OK_AND_ASSIGN(auto next, OpenBase());
  ASSERT_OK(next->OpenWriter());  // replays the WAL and publishes what it replayed
  ASSERT_OK_AND_ASSIGN(int64_t after, reader->Count());
  EXPECT_EQ(after, 1);
}

TEST_F(StorageBaseTest, MetricsRecordPutsAndFlushOutcomes) {
  MetricsRegistry registry;
  StorageBaseOptions options;
  options.metrics = &registry;
  ASSERT_OK_AND_ASSIGN(auto base, OpenBase(options));
  ASSERT_OK(base->Flush().status());
  ASSERT_OK(base->Put({Items({{"m", "x", 1}})}));
  ASSERT_OK(base->Flush().status());
  std::string text = registry.ExposePrometheus();
  EXPECT_NE(text.find("strata_add_duration_seconds_count 1"), std::string::npos) << text;
  EXPECT_NE(text.find("strata_flush_duration_seconds_count{outcome=\"noop\"} 1"), std::string::npos)
      << text;
  EXPECT_NE(text.find("strata_flush_duration_seconds_count{outcome=\"sealed\"} 1"),
            std::string::npos)
      << text;
  ASSERT_OK(base->Cleanup().status());
  text = registry.ExposePrometheus();
  EXPECT_NE(text.find("strata_wal_merge_duration_seconds_count{phase=\"commit\"} 1"),
            std::string::npos)
      << text;
}

TEST_F(StorageBaseTest, LogicalCountMatchesDistinctKeysAcrossMergesAndReappends) {
  StorageBaseOptions options;
  options.merge_after_generations = 10;
  ASSERT_OK_AND_ASSIGN(auto base, OpenBase(options));
  for (int i = 0; i < 30; ++i) {
    // Every third put re-appends an earlier key.
    std::string id = i % 3 == 2 ? fmt::format("k{:02}", i - 2) : fmt::format("k{:02}", i);
    ASSERT_OK(base->Put({Items({{id, "x", i}})}));
    ASSERT_OK(base->Flush().status());
    ASSERT_OK(base->MaybeMerge().status());
  }
  ASSERT_OK_AND_ASSIGN(int64_t logical, base->Count());
  EXPECT_EQ(logical, 20);
  ASSERT_OK(base->Cleanup().status());
  int64_t raw = base->Observe()->base_rows;
  EXPECT_EQ(raw, 20) << "the base table must never hold two live rows of one key";
}

TEST_F(StorageBaseTest, ConcurrentPutsThatSeeOneFenceReopenTheWriterOnce) {
  ASSERT_OK_AND_ASSIGN(auto first, OpenBase());
  ASSERT_OK(first->Put({Items({{"before", "x", 0}})}));
  ASSERT_OK_AND_ASSIGN(auto second, OpenBase());
  ASSERT_OK(second->OpenWriter());  // claims the shard: first's writer is fenced
  const uint64_t fenced_at = Manifest("items").writer_epoch();
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      if (!first->Put({Items({{fmt::format("t{}", i), "x", i}})}).ok()) ++failures;
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(Manifest("items").writer_epoch(), fenced_at + 1)
      << "eight puts that saw one fence must reopen the writer exactly once";
  ASSERT_OK(first->Close());
  ASSERT_OK(second->Close());
  ASSERT_OK_AND_ASSIGN(auto reader, OpenBase({.shard_id = "reader"}));
  ASSERT_OK_AND_ASSIGN(auto rows, reader->Scan({}));
  EXPECT_EQ(Rows(rows).size(), 9u);
}

TEST_F(StorageBaseTest, AVanishedGenerationFailsTheReadInsteadOfReturningPartialRows) {
  ASSERT_OK_AND_ASSIGN(auto base, OpenBase());
  ASSERT_OK(base->Put({Items({{"a", "x", 1}})}));
  ASSERT_OK(base->Flush().status());
  ASSERT_OK(base->Put({Items({{"b", "x", 2}})}));
  ASSERT_OK(base->Flush().status());
  // Remove the first generation's data behind the store's back (never drained).
  lsm::pb::ShardManifest manifest = Manifest("items");
  ASSERT_EQ(manifest.generations_size(), 2);
  std::filesystem::remove_all(dir_.path() / (lsm::ShardDir(prefix_, lsm::DeriveShardId("items")) +
                                             manifest.generations(0).path() + "data"));
  ASSERT_OK_AND_ASSIGN(auto fresh, OpenBase({.shard_id = "reader"}));
  auto scanned = fresh->Scan({});
  ASSERT_FALSE(scanned.ok()) << "a read returned " << scanned->size() << " batches";
  EXPECT_EQ(scanned.status().code(), StatusCode::kNotFound);
}

// Fails every write of shard manifest objects once a put of the base table's versions has
// succeeded after Arm(): a merge's base commit goes through, its drain does not.
class FailDrainAfterBaseCommit final : public strata::testing::ForwardingObjectStore {
 public:
  FailDrainAfterBaseCommit(std::shared_ptr<ObjectStore> base, std::string prefix)
      : ForwardingObjectStore(std::move(base)), prefix_(std::move(prefix)) {}
  void Arm() { armed_ = true; }
  void Disarm() { armed_ = tripped_ = false; }
  Status Put(std::string_view key, std::string_view data) override {
    STRATA_RETURN_IF_ERROR(Check(key));
    return Note(key, ForwardingObjectStore::Put(key, data));
  }
  Status PutIfAbsent(std::string_view key, std::string_view data) override {
    STRATA_RETURN_IF_ERROR(Check(key));
    return Note(key, ForwardingObjectStore::PutIfAbsent(key, data));
  }
  // The WAL appends to the local store's files.
  Result<std::unique_ptr<AppendableObject>> CreateAppendable(std::string_view key) override {
    return base_store()->CreateAppendable(key);
  }

 private:
  Status Check(std::string_view key) const {
    if (tripped_ && key.starts_with(prefix_ + "_lsm/") &&
        key.find("/manifest/") != std::string_view::npos) {
      return Status::IOError(fmt::format("injected: writing '{}' failed", key));
    }
    return Status::OK();
  }
  Status Note(std::string_view key, Status status) {
    if (armed_ && status.ok() && key.starts_with(prefix_ + "_versions/")) tripped_ = true;
    return status;
  }
  std::string prefix_;
  std::atomic<bool> armed_{false};
  std::atomic<bool> tripped_{false};
};

// A reader handle that lives through every change keeps its view cache (the base version
// and each shard's manifest, re-checked by probes): against a model of what is published,
// its reads must never miss a published generation, a committed merge or a base cleanup,
// including manifest chains that moved past their retained versions between two reads.
TEST_F(StorageBaseTest, ALongLivedReaderSeesEveryPublishedChangeAgainstAModel) {
  RunReaderModel([](StorageBaseOptions&) {});
}

// The same on a local store that offers no change watches (watch_changes off): every view
// re-checks its cache by requests, as on object stores that cannot watch.
TEST_F(StorageBaseTest, ALongLivedReaderSeesEveryPublishedChangeWithoutChangeWatches) {
  LocalObjectStoreOptions local;
  local.watch_changes = false;
  ASSERT_OK_AND_ASSIGN(store_, OpenLocalObjectStore(dir_.str(), local));
  RunReaderModel([](StorageBaseOptions&) {});
}

// The same with WAL segments so small that most seals link them, and the writers recoding
// those generations in the background while the reader reads (and their old directories
// deleted at once).
TEST_F(StorageBaseTest, ALongLivedReaderSeesEveryChangeWhileLinkedGenerationsAreRecoded) {
  MetricsRegistry registry;
  RunReaderModel([&](StorageBaseOptions& options) {
    options.max_wal_segment_bytes = 1024;
    options.recode_linked_generations = true;
    options.recode_quiet_seconds = 0;  // recode between the puts, while the reader reads
    // Retired directories outlive the reads that listed them (a read retries three times).
    options.generation_delete_delay_seconds = 1;
    options.metrics = &registry;
  });
  EXPECT_GT(RecodedGenerations(registry), 0);
}

// A merge prepared from a linked generation and committed after the generation was recoded:
// the drain takes the generation at its new path, whose directory the merge then deletes;
// the recode deleted the old one. Nothing is left behind, every row is read once.
TEST_F(StorageBaseTest, ARecodeBetweenAMergesPrepareAndCommitLeavesNoDirectoryBehind) {
  Mutex mu;
  CondVar cv;
  bool at_publish = false;
  bool prepared = false;
  auto hooked = std::make_shared<strata::testing::CopyHookedStore>(store_, "/bloom.bin", [&] {
    MutexLock lock(mu);
    at_publish = true;
    cv.SignalAll();
    while (!prepared) cv.Wait(mu);
  });
  StorageBaseOptions options;
  options.max_wal_segment_bytes = 1024;
  options.recode_linked_generations = true;
  options.recode_quiet_seconds = 0;
  options.generation_delete_delay_seconds = 0;
  ASSERT_OK_AND_ASSIGN(auto base, OpenBase(options, hooked));
  std::vector<std::tuple<std::string, std::string, int64_t>> rows;
  for (int i = 0; i < 40; ++i) rows.emplace_back(fmt::format("k{:02d}", i), "linked", i);
  ASSERT_OK(base->Put({Items(rows)}));
  ASSERT_OK(base->Flush().status());
  {
    // The recoder has written its copy (bounded: a seal that did not link never gets here).
    MutexLock lock(mu);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!at_publish && std::chrono::steady_clock::now() < deadline) {
      cv.WaitFor(mu, std::chrono::seconds(1));
    }
    if (!at_publish) prepared = true;  // a late recode must not block the handle's close
    ASSERT_TRUE(at_publish) << "the flush did not link the WAL, or no recode ran";
  }
  ASSERT_OK_AND_ASSIGN(std::optional<PreparedMerge> merge, base->PrepareCleanupMerge());
  ASSERT_TRUE(merge.has_value());
  {
    MutexLock lock(mu);
    prepared = true;
    cv.SignalAll();
  }
  base->WaitForRecodes();
  base->WaitForPendingDeletions();  // the linked directory is gone
  ASSERT_OK_AND_ASSIGN(MergeReport report, base->CommitPreparedMerge(std::move(*merge)));
  EXPECT_EQ(report.generations_reclaimed, 1);
  EXPECT_EQ(report.rows_merged, 40);
  base->WaitForPendingDeletions();
  const std::string gen_dir = lsm::ShardDir(prefix_, lsm::DeriveShardId("items")) + "gen/";
  ASSERT_OK_AND_ASSIGN(std::vector<ObjectMeta> left, store_->List(gen_dir));
  EXPECT_TRUE(left.empty()) << left.front().key;
  ASSERT_OK_AND_ASSIGN(std::vector<RecordBatch> scanned, base->Scan({}));
  EXPECT_EQ(Rows(scanned).size(), 40u);
}

// After its recodes and the deletion of the linked directories, a store holds compressed
// generations and no WAL segment linked into one; reads do not change.
TEST_F(StorageBaseTest, RecodedGenerationsReadTheSameAndFreeTheLinkedBytes) {
  MetricsRegistry registry;
  StorageBaseOptions options;
  options.metrics = &registry;
  options.max_wal_segment_bytes = 4096;
  options.recode_linked_generations = true;
  options.recode_quiet_seconds = 0;
  options.generation_delete_delay_seconds = 0;
  ASSERT_OK_AND_ASSIGN(auto base, OpenBase(options));
  std::map<std::string, std::pair<std::string, int64_t>> expected;
  for (int flush = 0; flush < 4; ++flush) {
    std::vector<std::tuple<std::string, std::string, int64_t>> rows;
    for (int i = 0; i < 60; ++i) {
      const std::string key = fmt::format("k{:03d}", (flush * 37 + i * 7) % 150);
      const std::string status = std::string(30, static_cast<char>('a' + flush));
      rows.emplace_back(key, status, flush * 100 + i);
      expected[key] = {status, flush * 100 + i};
    }
    ASSERT_OK(base->Put({Items(rows)}));
    ASSERT_OK(base->Flush().status());
  }
  base->WaitForRecodes();
  base->WaitForPendingDeletions();
  EXPECT_EQ(RecodedGenerations(registry), 4);  // every flush linked, every link recoded
  const std::string gen_dir = lsm::ShardDir(prefix_, lsm::DeriveShardId("items")) + "gen/";
  ASSERT_OK_AND_ASSIGN(std::vector<ObjectMeta> files, store_->List(gen_dir));
  ASSERT_FALSE(files.empty());
  for (const ObjectMeta& file : files) {
    EXPECT_EQ(file.key.find("/data/wal-"), std::string::npos) << file.key;
  }
  ASSERT_OK_AND_ASSIGN(std::vector<RecordBatch> scanned, base->Scan({}));
  EXPECT_EQ(Rows(scanned), expected);
  ASSERT_OK_AND_ASSIGN(int64_t pending, base->PendingGenerations());
  EXPECT_EQ(pending, 4);
  std::vector<expr::Scalar> keys;
  for (const auto& [key, row] : expected) keys.push_back(expr::Scalar::String(key));
  keys.resize(std::min<size_t>(keys.size(), 100));
  ASSERT_OK_AND_ASSIGN(RecordBatch got, base->GetMany(keys));
  EXPECT_EQ(got.num_rows(), static_cast<int64_t>(keys.size()));
  ASSERT_OK(base->Cleanup().status());
  ASSERT_OK_AND_ASSIGN(scanned, base->Scan({}));
  EXPECT_EQ(Rows(scanned), expected);
}

void StorageBaseTest::RunReaderModel(const std::function<void(StorageBaseOptions&)>& tune) {
  using Row = std::pair<std::string, int64_t>;
  std::map<std::string, Row> published;  // what a reader must see
  struct Writer {
    std::unique_ptr<StorageBase> handle;
    std::vector<std::pair<std::string, std::optional<Row>>> unsealed;  // nullopt = delete
  };
  std::vector<Writer> writers(2);
  for (size_t w = 0; w < writers.size(); ++w) {
    StorageBaseOptions options;
    options.shard_id = fmt::format("w{}", w);
    options.generation_delete_delay_seconds = 0;
    tune(options);
    ASSERT_OK_AND_ASSIGN(writers[w].handle, OpenBase(options));
  }
  ASSERT_OK_AND_ASSIGN(auto reader, OpenBase({.shard_id = "reader"}));
  ASSERT_OK_AND_ASSIGN(auto table, table::Table::Open(store_, prefix_));
  std::mt19937 random(20261205);
  auto pick = [&](int n) { return static_cast<int>(random() % static_cast<uint32_t>(n)); };
  auto publish = [&](Writer& w) {
    for (auto& [key, row] : w.unsealed) {
      if (row) {
        published[key] = *row;
      } else {
        published.erase(key);
      }
    }
    w.unsealed.clear();
  };
  int reads = 0;
  for (int step = 0; step < 600; ++step) {
    const size_t w = static_cast<size_t>(pick(2));
    Writer& writer = writers[w];
    // Writers keep to their own keys: the model need not order writes across shards.
    const std::string key = fmt::format("w{}-k{}", w, pick(12));
    const int op = pick(100);
    SCOPED_TRACE(fmt::format("step {} op {} writer {} key {}", step, op, w, key));
    if (op < 40) {
      Row row{fmt::format("s{}", step % 5), step};
      ASSERT_OK(writer.handle->Put({Items({{key, row.first, row.second}})}));
      writer.unsealed.emplace_back(key, row);
    } else if (op < 48) {
      ASSERT_OK(writer.handle->DeleteKeys({expr::Scalar::String(key)}));
      writer.unsealed.emplace_back(key, std::nullopt);
    } else if (op < 66) {
      ASSERT_OK(writer.handle->Flush().status());
      publish(writer);
    } else if (op < 76) {
      ASSERT_OK(writer.handle->Cleanup().status());  // seals, then merges into the base
      publish(writer);
    } else if (op < 80) {
      table::CleanupOptions cleanup;
      cleanup.older_than_micros = 0;
      ASSERT_OK(table->Refresh());
      ASSERT_OK(table->CleanupOldVersions(cleanup).status());
    } else {
      ++reads;
      ASSERT_OK_AND_ASSIGN(std::vector<RecordBatch> scanned, reader->Scan({}));
      std::map<std::string, Row> seen = Rows(scanned);
      ASSERT_EQ(seen, published);
      ASSERT_OK_AND_ASSIGN(int64_t count, reader->Count());
      ASSERT_EQ(count, static_cast<int64_t>(published.size()));
      std::vector<expr::Scalar> keys;
      for (int i = 0; i < 4; ++i) {
        keys.push_back(expr::Scalar::String(fmt::format("w{}-k{}", pick(2), pick(12))));
      }
      ASSERT_OK_AND_ASSIGN(RecordBatch got, reader->GetMany(keys));
      std::map<std::string, Row> expected;
      for (const expr::Scalar& k : keys) {
        auto it = published.find(k.string_value());
        if (it != published.end()) expected.insert(*it);
      }
      ASSERT_EQ(Rows({got}), expected);
    }
  }
  EXPECT_GT(reads, 50);
  for (Writer& writer : writers) writer.handle->WaitForRecodes();
}

// Forwards change watches too, and counts the requests a view's re-check would send.
class WatchingCountingStore final : public strata::testing::ForwardingObjectStore {
 public:
  using ForwardingObjectStore::ForwardingObjectStore;
  Result<ObjectMeta> Head(std::string_view key) override {
    ++requests;
    return ForwardingObjectStore::Head(key);
  }
  Result<std::vector<ObjectMeta>> List(std::string_view prefix) override {
    ++requests;
    return ForwardingObjectStore::List(prefix);
  }
  Result<Buffer> Get(std::string_view key) override {
    if (key.find("hint") != std::string_view::npos) ++requests;
    return ForwardingObjectStore::Get(key);
  }
  Result<std::unique_ptr<ChangeWatch>> Watch(std::string_view prefix) override {
    return base().Watch(prefix);
  }
  std::atomic<int> requests{0};
};

// While the change watches say nothing changed, a reader's cached view costs no request (no
// probe of the base chain, no listing of the shard registry, no probe of a shard's chain);
// a publication by another handle is seen by the very next read.
TEST_F(StorageBaseTest, ACachedViewSendsNoRequestWhileItsWatchesSeeNoChange) {
  if (store_->Watch("").status().IsNotSupported()) GTEST_SKIP() << "no change watches here";
  auto counting = std::make_shared<WatchingCountingStore>(store_);
  ASSERT_OK_AND_ASSIGN(auto writer, OpenBase());
  ASSERT_OK(writer->Put({Items({{"k0", "x", 0}})}));
  ASSERT_OK(writer->Flush().status());
  ASSERT_OK_AND_ASSIGN(auto reader, OpenBase({.shard_id = "reader"}, counting));
  for (int i = 1; i <= 3; ++i) {
    ASSERT_OK_AND_ASSIGN(int64_t count, reader->Count());  // sees the publication, caches
    EXPECT_EQ(count, i);
    counting->requests = 0;
    ASSERT_OK_AND_ASSIGN(count, reader->Count());
    EXPECT_EQ(count, i);
    ASSERT_OK_AND_ASSIGN(RecordBatch got, reader->GetMany({expr::Scalar::String("k0")}));
    EXPECT_EQ(got.num_rows(), 1);
    EXPECT_EQ(counting->requests.load(), 0);
    // Published through the other handle: the next read sees it.
    ASSERT_OK(writer->Put({Items({{fmt::format("k{}", i), "x", i}})}));
    ASSERT_OK(writer->Flush().status());
  }
  ASSERT_OK(writer->Cleanup().status());  // a merge: a new base version
  ASSERT_OK_AND_ASSIGN(int64_t count, reader->Count());
  EXPECT_EQ(count, 4);
  // A shard registered after the reader cached the registry's listing.
  ASSERT_OK_AND_ASSIGN(auto late, OpenBase({.shard_id = "late"}));
  ASSERT_OK(late->Put({Items({{"late-k", "x", 9}})}));
  ASSERT_OK(late->Flush().status());
  ASSERT_OK_AND_ASSIGN(count, reader->Count());
  EXPECT_EQ(count, 5);
}

// The cached view's re-check when both version chains moved on past what the reader last
// read and cleanup deleted those versions and their successors: the reader must notice.
TEST_F(StorageBaseTest, AReaderCatchesUpWhenTheChainsItCachedWereCleanedUpPastIt) {
  StorageBaseOptions options;
  options.generation_delete_delay_seconds = 0;
  ASSERT_OK_AND_ASSIGN(auto writer, OpenBase(options));
  ASSERT_OK_AND_ASSIGN(auto reader, OpenBase({.shard_id = "reader"}));
  ASSERT_OK(writer->Put({Items({{"k0", "x", 0}})}));
  ASSERT_OK(writer->Flush().status());
  ASSERT_OK_AND_ASSIGN(int64_t count, reader->Count());
  ASSERT_EQ(count, 1);

  // The shard's manifest chain: more seals than it retains versions.
  lsm::ShardManifestStore manifests(store_, prefix_, lsm::DeriveShardId("items"));
  const uint64_t cached = Manifest("items").version();
  for (int i = 1; i <= static_cast<int>(lsm::kRetainedShardManifestVersions) + 2; ++i) {
    ASSERT_OK(writer->Put({Items({{fmt::format("k{}", i), "x", i}})}));
    ASSERT_OK(writer->Flush().status());
  }
  ASSERT_OK_AND_ASSIGN(std::vector<uint64_t> kept, manifests.ListVersions());
  ASSERT_FALSE(kept.empty());
  ASSERT_GT(kept.front(), cached + 1) << "the reader's version and its successor must be gone";
  ASSERT_OK_AND_ASSIGN(count, reader->Count());
  EXPECT_EQ(count, lsm::kRetainedShardManifestVersions + 3);

  // The base chain: two merges, then a cleanup of every version but the newest.
  const uint64_t base_before = reader->version();
  ASSERT_OK(writer->Cleanup().status());
  ASSERT_OK(writer->Put({Items({{"k0", "y", 100}})}));
  ASSERT_OK(writer->Cleanup().status());
  ASSERT_OK_AND_ASSIGN(auto table, table::Table::Open(store_, prefix_));
  table::CleanupOptions cleanup;
  cleanup.older_than_micros = 0;
  ASSERT_OK_AND_ASSIGN(table::CleanupResult cleaned, table->CleanupOldVersions(cleanup));
  ASSERT_GT(table->version(), base_before + 1);
  ASSERT_GE(cleaned.versions_removed, 2);
  ASSERT_OK_AND_ASSIGN(std::vector<RecordBatch> rows, reader->Scan({}));
  auto seen = Rows(rows);
  EXPECT_EQ(seen.size(), lsm::kRetainedShardManifestVersions + 3);
  EXPECT_EQ(seen["k0"], std::make_pair(std::string("y"), int64_t{100}));
  EXPECT_EQ(reader->version(), table->version());
}

// Runs `hook` once, just before the first shard-manifest publication after Arm (a writer
// being opened claims its shard there, with the handle's open under way).
class HookOnManifestPublish final : public strata::testing::ForwardingObjectStore {
 public:
  using ForwardingObjectStore::ForwardingObjectStore;
  void Arm(std::function<void()> hook) { hook_ = std::move(hook); }
  Status PutIfAbsent(std::string_view key, std::string_view data) override {
    if (hook_ && key.find("/manifest/") != std::string_view::npos) std::exchange(hook_, nullptr)();
    return ForwardingObjectStore::PutIfAbsent(key, data);
  }
  Result<std::unique_ptr<AppendableObject>> CreateAppendable(std::string_view key) override {
    return base_store()->CreateAppendable(key);
  }

 private:
  std::function<void()> hook_;
};

TEST_F(StorageBaseTest, AReadOwnWritesReadDoesNotWaitForAWriterBeingOpened) {
  auto hooked = std::make_shared<HookOnManifestPublish>(store_);
  {
    ASSERT_OK_AND_ASSIGN(auto seed, OpenBase({.shard_id = "seed"}));
    ASSERT_OK(seed->Put({Items({{"a", "x", 1}})}));
  }
  StorageBaseOptions options;
  options.schema = ItemSchema();
  options.key_column = "id";
  options.shard_id = "items";
  options.read_own_writes = true;
  ASSERT_OK_AND_ASSIGN(auto base, StorageBase::Open(hooked, prefix_, options));
  std::future<Result<int64_t>> read;
  bool read_done_during_open = false;
  hooked->Arm([&] {
    // The open holds the handle's writer-open lock here; a read of the same handle used to
    // wait for the whole open (the WAL replay) behind the writer slot's lock.
    read = std::async(std::launch::async, [&] { return base->Count(); });
    read_done_during_open = read.wait_for(std::chrono::seconds(60)) == std::future_status::ready;
  });
  ASSERT_OK(base->OpenWriter());
  ASSERT_TRUE(read.valid()) << "the writer's open published no shard manifest";
  EXPECT_TRUE(read_done_during_open);
  ASSERT_OK_AND_ASSIGN(int64_t during, read.get());
  EXPECT_EQ(during, 1);
  ASSERT_OK(base->Put({Items({{"b", "y", 2}})}));
  ASSERT_OK_AND_ASSIGN(int64_t after, base->Count());
  EXPECT_EQ(after, 2);  // its own unsealed row
}

// Runs the armed hook once, just before the next listing of the shard registry: a read view
// lists it after pinning its base version and before reading the shard manifests. Counts the
// requests for one key.
class HookOnShardListing final : public strata::testing::ForwardingObjectStore {
 public:
  using ForwardingObjectStore::ForwardingObjectStore;
  void Arm(std::function<void()> hook) { hook_ = std::move(hook); }
  bool armed() const { return hook_ != nullptr; }
  void Count(std::string key) {
    counted_key_ = std::move(key);
    counted_ = 0;
  }
  int counted() const { return counted_; }

  Result<std::vector<ObjectMeta>> List(std::string_view prefix) override {
    if (hook_ && prefix.ends_with(lsm::kShardRegistryDir)) std::exchange(hook_, nullptr)();
    return ForwardingObjectStore::List(prefix);
  }
  Result<ObjectMeta> Head(std::string_view key) override {
    if (key == counted_key_) ++counted_;
    return ForwardingObjectStore::Head(key);
  }
  Result<Buffer> Get(std::string_view key) override {
    if (key == counted_key_) ++counted_;
    return ForwardingObjectStore::Get(key);
  }
  Result<std::unique_ptr<AppendableObject>> CreateAppendable(std::string_view key) override {
    return base_store()->CreateAppendable(key);
  }

 private:
  std::function<void()> hook_;
  std::string counted_key_;
  int counted_ = 0;
};

TEST_F(StorageBaseTest, AReadWhoseGenerationsAreDrainedUnderItReadsEveryRowOnce) {
  StorageBaseOptions options;
  options.generation_delete_delay_seconds = 0;
  ASSERT_OK_AND_ASSIGN(auto writer, OpenBase(options));
  ASSERT_OK(writer->Put({Items({{"a", "x", 1}, {"b", "x", 2}})}));
  ASSERT_OK(writer->Flush().status());
  ASSERT_OK(writer->Put({Items({{"c", "x", 3}, {"a", "y", 4}})}));
  ASSERT_OK(writer->Flush().status());

  auto hooked = std::make_shared<HookOnShardListing>(store_);
  ASSERT_OK_AND_ASSIGN(auto reader, OpenBase({.shard_id = "reader"}, hooked));
  ASSERT_OK_AND_ASSIGN(int64_t count, reader->Count());
  ASSERT_EQ(count, 3);

  // The view pins the base version without the merged rows, then the merge commits and
  // drains both generations before the view reads the shard manifest: the view lacks them
  // and must be built again on the merged base version.
  hooked->Arm([&] {
    Result<MergeReport> merged = writer->Cleanup();
    ASSERT_TRUE(merged.ok()) << merged.status();
    EXPECT_EQ(merged->generations_reclaimed, 2);
  });
  ASSERT_OK_AND_ASSIGN(std::vector<RecordBatch> rows, reader->Scan({}));
  ASSERT_FALSE(hooked->armed());
  std::map<std::string, std::pair<std::string, int64_t>> expected = {
      {"a", {"y", 4}}, {"b", {"x", 2}}, {"c", {"x", 3}}};
  EXPECT_EQ(Rows(rows), expected);

  // Again with a point read: new rows in one generation, merged and drained mid-read.
  ASSERT_OK(writer->Put({Items({{"d", "x", 5}, {"b", "z", 6}})}));
  ASSERT_OK(writer->Flush().status());
  hooked->Arm([&] { ASSERT_OK(writer->Cleanup().status()); });
  ASSERT_OK_AND_ASSIGN(RecordBatch got,
                       reader->GetMany({expr::Scalar::String("d"), expr::Scalar::String("b"),
                                        expr::Scalar::String("a")}));
  ASSERT_FALSE(hooked->armed());
  expected = {{"a", {"y", 4}}, {"b", {"z", 6}}, {"d", {"x", 5}}};
  EXPECT_EQ(Rows({got}), expected);
}

TEST_F(StorageBaseTest, AReadBesideAMergeThatCommittedButDidNotDrainReadsEveryRowOnce) {
  // Two writer shards; between the view's base pin and its manifest reads, a merge of one
  // shard commits its rows to the base and then fails to drain its manifest. The view keeps
  // the older base version and reads both shards' generations, which its manifests still
  // list in full: no re-check is needed, and every row shows once.
  auto faulty = std::make_shared<FailDrainAfterBaseCommit>(store_, prefix_);
  ASSERT_OK_AND_ASSIGN(auto items, OpenBase({}, faulty));
  ASSERT_OK_AND_ASSIGN(auto other, OpenBase({.shard_id = "other"}));
  // Keys do not repeat across the shards (docs/format/lsm.md §8.1: merges are per shard).
  ASSERT_OK(items->Put({Items({{"a", "x", 1}, {"b", "x", 2}})}));
  ASSERT_OK(items->Flush().status());
  ASSERT_OK(other->Put({Items({{"c", "o", 3}, {"d", "o", 4}})}));
  ASSERT_OK(other->Flush().status());
  ASSERT_OK(items->Put({Items({{"b", "y", 5}})}));
  ASSERT_OK(items->Flush().status());

  auto hooked = std::make_shared<HookOnShardListing>(store_);
  ASSERT_OK_AND_ASSIGN(auto reader, OpenBase({.shard_id = "reader"}, hooked));
  ASSERT_OK_AND_ASSIGN(int64_t count, reader->Count());
  ASSERT_EQ(count, 4);
  const uint64_t before = reader->version();

  hooked->Arm([&] {
    faulty->Arm();
    Result<MergeReport> merged = items->Cleanup();
    ASSERT_TRUE(merged.ok()) << merged.status();
    EXPECT_GT(merged->base_version, before);
    EXPECT_FALSE(merged->complete()) << "the drain was to fail";
  });
  ASSERT_OK_AND_ASSIGN(std::vector<RecordBatch> rows, reader->Scan({}));
  ASSERT_FALSE(hooked->armed());
  std::map<std::string, std::pair<std::string, int64_t>> expected = {
      {"a", {"x", 1}}, {"b", {"y", 5}}, {"c", {"o", 3}}, {"d", {"o", 4}}};
  EXPECT_EQ(Rows(rows), expected);
  EXPECT_EQ(Manifest("items").generations_size(), 2) << "still listed: the drain failed";
  EXPECT_EQ(Manifest("other").generations_size(), 1);
  // The next read sees the merged base version, and the same rows once.
  ASSERT_OK_AND_ASSIGN(rows, reader->Scan({}));
  EXPECT_EQ(Rows(rows), expected);
  EXPECT_GT(reader->version(), before);
}

TEST_F(StorageBaseTest, AReadOfAnUnchangedStoreProbesTheBaseChainOnce) {
  ASSERT_OK_AND_ASSIGN(auto writer, OpenBase());
  ASSERT_OK(writer->Put({Items({{"a", "x", 1}})}));
  ASSERT_OK(writer->Cleanup().status());  // a base version with a watermark
  ASSERT_OK(writer->Put({Items({{"b", "x", 2}})}));
  ASSERT_OK(writer->Flush().status());  // and a pending generation above it

  auto hooked = std::make_shared<HookOnShardListing>(store_);
  ASSERT_OK_AND_ASSIGN(auto reader, OpenBase({.shard_id = "reader"}, hooked));
  ASSERT_OK_AND_ASSIGN(RecordBatch got,
                       reader->GetMany({expr::Scalar::String("a"), expr::Scalar::String("b")}));
  ASSERT_EQ(got.num_rows(), 2);

  // A view of a store nothing changed in asks whether the base version after its own exists
  // once, building the view; the manifests it read list every pending generation, so it is
  // not asked again to re-check the view.
  // The base table's version key (docs/format/table.md).
  hooked->Count(fmt::format("{}_versions/{:020}.manifest", prefix_, reader->version() + 1));
  ASSERT_OK_AND_ASSIGN(got, reader->GetMany({expr::Scalar::String("b")}));
  ASSERT_EQ(got.num_rows(), 1);
  EXPECT_EQ(hooked->counted(), 1);
}

TEST_F(StorageBaseTest, MergeThatCommittedThenFailedItsDrainReportsTheCommittedVersion) {
  auto faulty = std::make_shared<FailDrainAfterBaseCommit>(store_, prefix_);
  StorageBaseOptions options;
  options.schema = ItemSchema();
  options.key_column = "id";
  options.shard_id = "items";
  ASSERT_OK_AND_ASSIGN(auto base, StorageBase::Open(faulty, prefix_, options));
  ASSERT_OK(base->Put({Items({{"a", "x", 1}, {"b", "y", 2}})}));
  ASSERT_OK(base->Flush().status());
  const uint64_t before = base->version();

  faulty->Arm();
  Result<MergeReport> merged = base->Cleanup();
  ASSERT_TRUE(merged.ok()) << "a merge whose base commit was made must not report a failure "
                              "that hides the commit: "
                           << merged.status();
  EXPECT_GT(merged->base_version, before);
  EXPECT_EQ(merged->rows_merged, 2);
  EXPECT_EQ(merged->generations_reclaimed, 0);
  EXPECT_FALSE(merged->complete());
  EXPECT_EQ(merged->follow_up.code(), StatusCode::kIOError) << merged->follow_up;
  EXPECT_EQ(Manifest("items").generations_size(), 1) << "the drain failed: still listed";

  // The rows are read once (the watermark hides the undrained generation) ...
  ASSERT_OK_AND_ASSIGN(auto reader, OpenBase({.shard_id = "reader"}));
  ASSERT_OK_AND_ASSIGN(auto rows, reader->Scan({}));
  EXPECT_EQ(Keys(Rows(rows)), (std::vector<std::string>{"a", "b"}));
  // ... and the next merge drains without committing again.
  faulty->Disarm();
  ASSERT_OK_AND_ASSIGN(MergeReport next, base->Cleanup());
  EXPECT_TRUE(next.complete()) << next.follow_up;
  EXPECT_EQ(next.base_version, 0u);
  EXPECT_EQ(next.generations_reclaimed, 1);
  EXPECT_EQ(Manifest("items").generations_size(), 0);
}

TEST_F(StorageBaseTest, MergeOfOneShardSucceedsWhenAnotherShardsManifestIsDamaged) {
  ASSERT_OK_AND_ASSIGN(auto other, OpenBase({.shard_id = "other"}));
  ASSERT_OK(other->Put({Items({{"o", "x", 1}})}));
  ASSERT_OK(other->Flush().status());
  ASSERT_OK(other->Close());
  ASSERT_OK_AND_ASSIGN(auto base, OpenBase());
  ASSERT_OK(base->Put({Items({{"a", "x", 1}})}));
  ASSERT_OK(base->Flush().status());
  // Flip bytes in every manifest version of the other shard.
  std::filesystem::path dir =
      dir_.path() / lsm::ShardManifestDir(prefix_, lsm::DeriveShardId("other"));
  int damaged = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".shard") continue;
    std::fstream f(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(20);
    f.write("XXXX", 4);
    ++damaged;
  }
  ASSERT_GT(damaged, 0);
  ASSERT_OK_AND_ASSIGN(MergeReport merged, base->Cleanup());
  EXPECT_TRUE(merged.complete()) << merged.follow_up;
  EXPECT_EQ(merged.generations_reclaimed, 1);
  EXPECT_GT(merged.base_version, 0u);
}

TEST_F(StorageBaseTest, MergeSweepsItsLeftoversWhenAnotherShardsWatermarkIsDamaged) {
  ASSERT_OK_AND_ASSIGN(auto base, OpenBase());
  ASSERT_OK(base->Put({Items({{"a", "x", 1}})}));
  ASSERT_OK(base->Flush().status());
  // A merger that died left a directory of generation 1 behind, and another shard's
  // watermark in the base metadata is damaged.
  std::filesystem::path leftover =
      dir_.path() /
      (lsm::ShardDir(prefix_, lsm::DeriveShardId("items")) + "gen/00000000000000000001-deadbeef");
  std::filesystem::create_directories(leftover);
  std::ofstream(leftover / "data").put('x');
  ASSERT_OK_AND_ASSIGN(auto table, table::Table::Open(store_, prefix_));
  KeyValueMetadata damaged;
  damaged.Set(lsm::MergedWatermarkKey(lsm::DeriveShardId("other")), "not a number");
  ASSERT_OK(table->UpdateMetadata(damaged).status());

  ASSERT_OK_AND_ASSIGN(MergeReport merged, base->Cleanup());
  EXPECT_TRUE(merged.complete()) << merged.follow_up;
  EXPECT_EQ(merged.generations_reclaimed, 1);
  EXPECT_FALSE(std::filesystem::exists(leftover))
      << "the merge's sweep of its own shard must not depend on other shards' watermarks";
}

TEST_F(StorageBaseTest, WalRowsReplayAfterTheBaseTableGainedANullableColumn) {
  {
    StorageBaseOptions options;
    options.seal_on_close = false;
    ASSERT_OK_AND_ASSIGN(auto writer, OpenBase(options));
    ASSERT_OK(writer->Put({Items({{"w", "x", 1}})}));
    ASSERT_OK(writer->Close());
  }
  // The acknowledged row is only in the WAL when the base table gains a column.
  ASSERT_OK_AND_ASSIGN(auto table, table::Table::Open(store_, prefix_));
  ASSERT_OK(table->AddColumns({field("extra", utf8(), true)}).status());

  ASSERT_OK_AND_ASSIGN(auto next, OpenBase());
  ASSERT_OK(next->OpenWriter());  // replays the WAL in the old schema
  ASSERT_OK_AND_ASSIGN(auto rows, next->Scan({}));
  EXPECT_EQ(Keys(Rows(rows)), std::vector<std::string>{"w"});
  ASSERT_OK_AND_ASSIGN(MergeReport merged, next->Cleanup());
  EXPECT_EQ(merged.rows_merged, 1);
  ASSERT_OK_AND_ASSIGN(RecordBatch got,
                       next->GetMany({expr::Scalar::String("w")}, {"id", "extra"}));
  ASSERT_EQ(got.num_rows(), 1);
  EXPECT_FALSE(got.column(1).IsValid(0));
}

TEST_F(StorageBaseTest, OwningStoreKindNamesTheStoreThatCreatedTheTable) {
  ASSERT_OK_AND_ASSIGN(auto base, OpenBase({.store_kind = "items"}));
  ASSERT_OK_AND_ASSIGN(auto table, table::Table::Open(store_, prefix_));
  ASSERT_OK_AND_ASSIGN(std::optional<std::string> kind,
                       OwningStoreKind(*store_, prefix_, *table->schema()));
  EXPECT_EQ(kind, std::optional<std::string>("items"));

  // A plain table is owned by no store, until objects of a store appear beside it (a store
  // made before kinds were recorded).
  ASSERT_OK_AND_ASSIGN(auto plain, table::Table::Create(store_, "plain/", ItemSchema()));
  ASSERT_OK_AND_ASSIGN(kind, OwningStoreKind(*store_, "plain/", *plain->schema()));
  EXPECT_EQ(kind, std::nullopt);
  ASSERT_OK(store_->Put("plain/_lsm/shards/x", ""));
  ASSERT_OK_AND_ASSIGN(kind, OwningStoreKind(*store_, "plain/", *plain->schema()));
  EXPECT_EQ(kind, std::optional<std::string>(kUnrecordedStoreKind));

  EXPECT_TRUE(CheckBaseTableChange("items", BaseTableChange::kCompact).ok());
  EXPECT_TRUE(CheckBaseTableChange("items", BaseTableChange::kRemoveOldVersions).ok());
  EXPECT_TRUE(CheckBaseTableChange("items", BaseTableChange::kRollBackCorruptVersions).ok());
  for (BaseTableChange change :
       {BaseTableChange::kAppend, BaseTableChange::kAddColumns, BaseTableChange::kDeleteRows,
        BaseTableChange::kCompactKeepingDeletions, BaseTableChange::kDeleteUnreferencedFiles}) {
    Status status = CheckBaseTableChange("items", change);
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument) << status;
    EXPECT_FALSE(status.message().empty());
  }
}

TEST_F(StorageBaseTest, ObserveFailsLikeReadsWhenTheNewestShardManifestIsDamaged) {
  ASSERT_OK_AND_ASSIGN(auto base, OpenBase());
  ASSERT_OK(base->Put({Items({{"a", "x", 1}})}));
  ASSERT_OK(base->Flush().status());
  ASSERT_OK(base->Close());
  const lsm::pb::ShardManifest manifest = Manifest("items");
  const std::string key =
      lsm::ShardManifestKey(prefix_, lsm::DeriveShardId("items"), manifest.version());
  {
    std::fstream file(dir_.path() / key, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(20);
    file.put('X');
  }
  ASSERT_OK_AND_ASSIGN(auto fresh, OpenBase({.shard_id = "reader"}));
  auto scanned = fresh->Scan({});
  ASSERT_FALSE(scanned.ok());
  auto observed = fresh->Observe();
  ASSERT_FALSE(observed.ok()) << "Observe counted " << observed->pending_generations
                              << " pending generations over a damaged shard manifest";
  EXPECT_EQ(observed.status().code(), StatusCode::kCorruption);
  EXPECT_NE(observed.status().message().find(key), std::string::npos) << observed.status();
  EXPECT_EQ(observed.status().ToString(), scanned.status().ToString());
  EXPECT_EQ(fresh->PendingGenerations().status().ToString(), scanned.status().ToString());
}

// --- Snapshots and branches --------------------------------------------------------------

// Two writers (shards) with rows in the base, in pending generations of both shards (a
// tombstone among them) and in one writer's memtable: what a snapshot and a fork hold is what
// a reader saw, and neither changes afterwards.
TEST_F(StorageBaseTest, SnapshotAndForkHoldWhatAReaderSawIncludingPendingGenerations) {
  StorageBaseOptions a_options;
  a_options.shard_id = "writer-a";
  ASSERT_OK_AND_ASSIGN(auto a, OpenBase(a_options));
  StorageBaseOptions b_options;
  b_options.shard_id = "writer-b";
  ASSERT_OK_AND_ASSIGN(auto b, OpenBase(b_options));
  ASSERT_OK(a->Put({Items({{"k1", "base", 1}, {"k2", "base", 2}, {"k3", "base", 3}})}));
  ASSERT_OK(a->Cleanup().status());  // k1..k3 in the base
  ASSERT_OK(b->Put({Items({{"k1", "b", 10}, {"k4", "b", 40}})}));
  ASSERT_OK(b->Flush().status());  // pending in shard b
  ASSERT_OK(a->DeleteKeys({expr::Scalar::String("k2")}));
  ASSERT_OK(a->Flush().status());                        // a tombstone pending in shard a
  ASSERT_OK(a->Put({Items({{"k3", "memtable", 30}})}));  // unsealed in a's memtable
  ASSERT_OK_AND_ASSIGN(int64_t pending, a->PendingGenerations());
  ASSERT_EQ(pending, 2);

  const std::map<std::string, std::pair<std::string, int64_t>> seen = {
      {"k1", {"b", 10}}, {"k3", {"memtable", 30}}, {"k4", {"b", 40}}};
  ASSERT_OK_AND_ASSIGN(table::TagInfo tag, a->CreateSnapshot("before"));
  EXPECT_EQ(tag.label, "before");
  EXPECT_TRUE(a->CreateSnapshot("before").status().IsAlreadyExists());
  EXPECT_TRUE(a->CreateSnapshot("no/slash").status().IsInvalidArgument());
  ASSERT_OK_AND_ASSIGN(auto now, a->Scan({}));
  EXPECT_EQ(Rows(now), seen);  // folding changed nothing a reader sees
  ASSERT_OK_AND_ASSIGN(auto from_b, b->Scan({}));
  EXPECT_EQ(Rows(from_b), seen);

  ASSERT_OK_AND_ASSIGN(std::string branch_prefix, a->Fork("exp"));
  EXPECT_EQ(branch_prefix, prefix_ + "_branches/exp/");
  EXPECT_TRUE(a->Fork("exp").status().IsAlreadyExists());

  // Writes on both sides after the fork; the parent's pending generations merge.
  ASSERT_OK(b->Put({Items({{"k5", "after", 5}})}));
  ASSERT_OK(b->Flush().status());
  ASSERT_OK(b->Cleanup().status());
  ASSERT_OK(a->Cleanup().status());
  ASSERT_OK(a->Compact().status());
  StorageBaseOptions branch_options;
  branch_options.shard_id = "branch-writer";
  branch_options.schema = ItemSchema();
  branch_options.key_column = "id";
  ASSERT_OK_AND_ASSIGN(auto branch, StorageBase::Open(store_, branch_prefix, branch_options,
                                                      /*create_if_missing=*/false));
  ASSERT_OK_AND_ASSIGN(auto in_branch, branch->Scan({}));
  EXPECT_EQ(Rows(in_branch), seen);
  ASSERT_OK(branch->Put({Items({{"k1", "branch", 100}})}));
  ASSERT_OK(branch->DeleteKeys({expr::Scalar::String("k4")}));
  ASSERT_OK(branch->Flush().status());
  ASSERT_OK_AND_ASSIGN(in_branch, branch->Scan({}));
  EXPECT_EQ(Rows(in_branch), (std::map<std::string, std::pair<std::string, int64_t>>{
                                 {"k1", {"branch", 100}}, {"k3", {"memtable", 30}}}));
  ASSERT_OK_AND_ASSIGN(now, a->Scan({}));
  auto parent_now = seen;
  parent_now["k5"] = {"after", 5};
  EXPECT_EQ(Rows(now), parent_now);
  // The branch starts without the parent's watermarks: its own shard merges from 0.
  ASSERT_OK(branch->Cleanup().status());
  ASSERT_OK_AND_ASSIGN(in_branch, branch->Scan({}));
  EXPECT_EQ(Rows(in_branch).size(), 2u);

  // The snapshot reads what it held, from a fresh handle, whatever happened since.
  ASSERT_OK_AND_ASSIGN(auto reader, OpenBase());
  ASSERT_OK(reader->CheckoutSnapshot("before"));
  EXPECT_TRUE(reader->pinned());
  ASSERT_OK_AND_ASSIGN(auto tagged, reader->Scan({}));
  EXPECT_EQ(Rows(tagged), seen);
  EXPECT_TRUE(reader->Put({Items({{"x", "y", 1}})}).IsInvalidArgument());
  EXPECT_TRUE(reader->CheckoutSnapshot("nope").IsNotFound());
  // A pinned handle snapshots and forks the version it reads.
  ASSERT_OK(reader->CreateSnapshot("again").status());
  ASSERT_OK_AND_ASSIGN(std::string again_prefix, reader->Fork("from-snapshot"));
  ASSERT_OK_AND_ASSIGN(auto again, StorageBase::Open(store_, again_prefix, branch_options, false));
  ASSERT_OK_AND_ASSIGN(auto again_rows, again->Scan({}));
  EXPECT_EQ(Rows(again_rows), seen);

  ASSERT_OK_AND_ASSIGN(std::vector<table::TagInfo> snapshots, a->ListSnapshots());
  ASSERT_EQ(snapshots.size(), 2u);
  EXPECT_EQ(snapshots[0].label, "again");
  EXPECT_EQ(snapshots[1].label, "before");
  ASSERT_OK_AND_ASSIGN(std::vector<table::BranchInfo> branches, a->ListBranches());
  ASSERT_EQ(branches.size(), 2u);
  EXPECT_EQ(branches[0].name, "exp");
  ASSERT_OK(a->DeleteSnapshot("again"));
  ASSERT_OK(branch->Close());
  ASSERT_OK(a->DeleteBranch("exp"));
  ASSERT_OK_AND_ASSIGN(branches, a->ListBranches());
  EXPECT_EQ(branches.size(), 1u);
  ASSERT_OK_AND_ASSIGN(table::VerifyReport report,
                       VerifyStore(store_, prefix_, {.all_versions = true}));
  EXPECT_TRUE(report.ok()) << ::testing::PrintToString(report.problems);
}

}  // namespace
}  // namespace strata::store
