// Replication (include/strata/replication.h): the change-export test matrix of
// shared/reference/replication.md §1.11 (cases 1-10, 13, 15, 16; 14 is crash_test.cc), each
// named for the promise it proves, plus the promises strata adds: layout-independent tracking,
// split exports, keyed bundles, consumer registry and trim, content proofs, every store kind,
// and a model-based property test against an independent listing.
#include "strata/replication.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "replication/replication_test_util.h"
#include "strata/generic_store.h"
#include "strata/json.h"
#include "strata/rollout_store.h"
#include "strata/storage_base.h"
#include "strata/table.h"
#include "support/status_assertions.h"
#include "support/temp_dir.h"

namespace strata::replication {
namespace {

using store::StorageBase;
using store::StorageBaseOptions;

using testing::Listing;
using testing::TestSchema;

class ReplicationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    StorageBaseOptions options;
    options.schema = TestSchema();
    options.key_column = "id";
    options.seal_on_put = true;
    ASSERT_OK_AND_ASSIGN(writer_, StorageBase::Open(objects_, source_.prefix, options));
  }

  void Put(std::string_view json_lines) {
    ASSERT_OK_AND_ASSIGN(RecordBatch batch, json::RowsToBatch(TestSchema(), json_lines));
    ASSERT_OK(writer_->Put({batch}));
  }
  void Delete(const std::vector<std::string>& ids) {
    std::vector<expr::Scalar> keys;
    keys.reserve(ids.size());
    for (const std::string& id : ids) keys.push_back(expr::Scalar::String(id));
    ASSERT_OK(writer_->DeleteKeys(keys));
  }

  Result<ExportReport> Export(ExportOptions options = {}) {
    return ExportChanges(source_, *bundles_, "b/", options);
  }
  std::string BytesOf(const PublishedBundle& b) {
    Result<Buffer> bytes = bundles_->Get(b.key);
    EXPECT_TRUE(bytes.ok()) << bytes.status();
    return bytes.ok() ? std::string(bytes->view()) : std::string();
  }
  // Applies every bundle of `report` in order.
  void ApplyAll(const ExportReport& report, const StoreLocation& replica) {
    for (const PublishedBundle& b : report.bundles) {
      Status applied = ApplyChanges(replica, BytesOf(b)).status();
      ASSERT_TRUE(applied.ok()) << b.key << ": " << applied;
    }
  }
  // Marks the source, seeds the replica with a full export.
  void Seed() {
    ASSERT_OK(MarkBase(source_, "nightly").status());
    ExportOptions full;
    full.full = true;
    ASSERT_OK_AND_ASSIGN(ExportReport seed, Export(full));
    ApplyAll(seed, replica_);
  }
  uint64_t ReplicaVersion() {
    Result<ReplicaStatus> status = GetReplicaStatus(replica_);
    EXPECT_TRUE(status.ok()) << status.status();
    return status.ok() ? status->version : 0;
  }

  std::shared_ptr<ObjectStore> objects_ = NewMemoryObjectStore();
  std::shared_ptr<ObjectStore> bundles_ = NewMemoryObjectStore();
  StoreLocation source_{objects_, "src/"};
  StoreLocation replica_{objects_, "rep/"};
  std::unique_ptr<StorageBase> writer_;
};

// --- §1.11 case 1: the basic round trip ----------------------------------------------------

TEST_F(ReplicationTest, RoundTripCarriesInsertsUpdatesAndDeletions) {
  Put(R"({"id":"a","n":1,"text":"x"}
{"id":"b","n":2}
{"id":"c","n":3})");
  Seed();
  EXPECT_EQ(Listing(replica_), Listing(source_));

  Put(R"({"id":"a","n":10,"text":"updated"}
{"id":"d","n":4})");
  Delete({"b"});
  ASSERT_OK_AND_ASSIGN(ExportReport report, Export());
  EXPECT_EQ(report.rows, 2);  // a (updated) and d (new); c unchanged is not sent
  EXPECT_EQ(report.deletions, 1);
  ASSERT_EQ(report.bundles.size(), 1u);
  ApplyAll(report, replica_);
  EXPECT_EQ(Listing(replica_), Listing(source_));
  ASSERT_OK_AND_ASSIGN(VerifyResult verify, Verify(replica_));
  EXPECT_TRUE(verify.matches()) << verify.computed.ToString();
  EXPECT_EQ(verify.rows, 3);
}

// --- case 2: insert then delete between two exports ------------------------------------------

TEST_F(ReplicationTest, InsertThenDeleteCarriesNoPhantomRow) {
  Put(R"({"id":"old","n":1})");
  Seed();
  Put(R"({"id":"ghost","n":9})");
  Delete({"ghost"});
  Put(R"({"id":"old2","n":1})");
  Delete({"old"});
  ASSERT_OK_AND_ASSIGN(ExportReport report, Export());
  ASSERT_EQ(report.bundles.size(), 1u);
  ASSERT_OK_AND_ASSIGN(Bundle bundle, DecodeBundle(BytesOf(report.bundles[0])));
  // "ghost" never existed at either state: neither a row nor a deletion.
  EXPECT_EQ(bundle.header.row_count, 1);
  EXPECT_EQ(bundle.header.deletion_count, 1);
  EXPECT_EQ(json::BatchToJsonLines(bundle.deletions), "{\"id\":\"old\"}\n");
  ApplyAll(report, replica_);
  EXPECT_EQ(Listing(replica_), Listing(source_));
}

// --- case 3: a key-changing update -------------------------------------------------------------

TEST_F(ReplicationTest, KeyChangeExportsOldKeyAsDeletionAndNewKeyAsRow) {
  Put(R"({"id":"before","n":7,"text":"same"})");
  Seed();
  Delete({"before"});
  Put(R"({"id":"after","n":7,"text":"same"})");
  ASSERT_OK_AND_ASSIGN(ExportReport report, Export());
  EXPECT_EQ(report.rows, 1);
  EXPECT_EQ(report.deletions, 1);
  ApplyAll(report, replica_);
  EXPECT_EQ(Listing(replica_), Listing(source_));
}

// --- case 4: export while a writer commits ------------------------------------------------------

TEST_F(ReplicationTest, ExportReadsOneSnapshotWithoutBlockingWritersOrMerges) {
  Put(R"({"id":"k-000000","n":0})");
  Seed();
  std::atomic<bool> stop{false};
  std::atomic<int> written{1};
  // The writer merges every 10 puts: exports finish on their snapshot while merges commit.
  std::thread writer([&] {
    for (int i = 1; i < 400 && !stop; ++i) {
      ASSERT_OK_AND_ASSIGN(
          RecordBatch batch,
          json::RowsToBatch(TestSchema(), fmt::format(R"({{"id":"k-{:06}","n":{}}})", i, i)));
      ASSERT_OK(writer_->Put({batch}));
      if (i % 10 == 0) ASSERT_OK(writer_->Cleanup().status());
      written = i + 1;
    }
  });
  std::vector<ExportReport> exports;
  while (written < 400) {
    ASSERT_OK_AND_ASSIGN(ExportReport r, Export());
    ApplyAll(r, replica_);
    // Puts are sequential: a snapshot holds a prefix of them, never a gap.
    std::vector<std::string> rows = Listing(replica_);
    for (size_t i = 0; i < rows.size(); ++i) {
      EXPECT_NE(rows[i].find(fmt::format("k-{:06}", i)), std::string::npos) << rows[i];
    }
    exports.push_back(std::move(r));
  }
  writer.join();
  // What was committed after the last snapshot arrives with the next export.
  ASSERT_OK_AND_ASSIGN(ExportReport last, Export());
  ApplyAll(last, replica_);
  EXPECT_EQ(Listing(replica_).size(), 400u);
  EXPECT_EQ(Listing(replica_), Listing(source_));
  int64_t rows = 0;
  for (const ExportReport& r : exports) rows += r.rows;
  EXPECT_EQ(rows + last.rows, 399);  // every row exactly once after the seed
}

// --- case 5: chaining ------------------------------------------------------------------------

TEST_F(ReplicationTest, ConsecutiveExportsChainToStateToFromState) {
  Seed();
  Put(R"({"id":"a","n":1})");
  ASSERT_OK_AND_ASSIGN(ExportReport first, Export());
  Put(R"({"id":"b","n":2})");
  ASSERT_OK_AND_ASSIGN(ExportReport second, Export());
  ASSERT_EQ(first.bundles.size(), 1u);
  ASSERT_EQ(second.bundles.size(), 1u);
  ASSERT_OK_AND_ASSIGN(Bundle b1, DecodeBundle(BytesOf(first.bundles[0])));
  ASSERT_OK_AND_ASSIGN(Bundle b2, DecodeBundle(BytesOf(second.bundles[0])));
  EXPECT_EQ(b1.header.to, b2.header.from);
  EXPECT_EQ(b1.header.to, first.to);
  ApplyAll(first, replica_);
  ApplyAll(second, replica_);
  ASSERT_OK_AND_ASSIGN(ReplicaStatus status, GetReplicaStatus(replica_));
  EXPECT_EQ(status.state, second.to);
  EXPECT_EQ(Listing(replica_), Listing(source_));
}

// --- cases 6 and 7: out of order, replayed ------------------------------------------------------

TEST_F(ReplicationTest, OutOfOrderBundleIsRefusedAsCursorAndChangesNothing) {
  Seed();
  Put(R"({"id":"a","n":1})");
  ASSERT_OK_AND_ASSIGN(ExportReport first, Export());
  Put(R"({"id":"b","n":2})");
  ASSERT_OK_AND_ASSIGN(ExportReport second, Export());
  const std::vector<std::string> before = Listing(replica_);
  const uint64_t version = ReplicaVersion();
  Status refused = ApplyChanges(replica_, BytesOf(second.bundles[0])).status();
  EXPECT_EQ(RefusalOf(refused), Refusal::kCursor) << refused;
  EXPECT_EQ(Listing(replica_), before);
  EXPECT_EQ(ReplicaVersion(), version);
  ApplyAll(first, replica_);
  ApplyAll(second, replica_);
  EXPECT_EQ(Listing(replica_), Listing(source_));
}

TEST_F(ReplicationTest, ReplayedBundleIsRefusedAsCursor) {
  Seed();
  Put(R"({"id":"a","n":1})");
  ASSERT_OK_AND_ASSIGN(ExportReport first, Export());
  ApplyAll(first, replica_);
  const uint64_t version = ReplicaVersion();
  Status replay = ApplyChanges(replica_, BytesOf(first.bundles[0])).status();
  EXPECT_EQ(RefusalOf(replay), Refusal::kCursor) << replay;
  EXPECT_TRUE(replay.IsAborted());
  EXPECT_EQ(ReplicaVersion(), version);
}

// --- case 8: altered bytes -----------------------------------------------------------------------

TEST_F(ReplicationTest, AlteredByteIsRefusedAsDigestBeforeAnyInstall) {
  Seed();
  Put(R"({"id":"a","n":1,"text":"payload"})");
  ASSERT_OK_AND_ASSIGN(ExportReport report, Export());
  const std::string good = BytesOf(report.bundles[0]);
  const uint64_t version = ReplicaVersion();
  for (size_t at : {size_t{20}, good.size() / 2, good.size() - 45}) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x01);
    Status refused = ApplyChanges(replica_, bad).status();
    EXPECT_EQ(RefusalOf(refused), Refusal::kDigest) << at << ": " << refused;
  }
  EXPECT_EQ(ReplicaVersion(), version);
  ASSERT_OK(ApplyChanges(replica_, good).status());
}

// --- case 9: another chain -------------------------------------------------------------------

TEST_F(ReplicationTest, BundleOfReMarkedBaseIsRefusedAsDiverged) {
  Seed();
  Put(R"({"id":"a","n":1})");
  MarkOptions replace;
  replace.replace = true;
  ASSERT_OK(MarkBase(source_, "nightly", replace).status());  // same token, new chain
  Put(R"({"id":"b","n":2})");
  ASSERT_OK_AND_ASSIGN(ExportReport report, Export());
  ASSERT_FALSE(report.bundles.empty());
  Status refused = ApplyChanges(replica_, BytesOf(report.bundles[0])).status();
  EXPECT_EQ(RefusalOf(refused), Refusal::kDiverged) << refused;
}

TEST_F(ReplicationTest, BundleOfSecondStoreIsRefusedAsDiverged) {
  Seed();
  StoreLocation other{objects_, "other/"};
  StorageBaseOptions options;
  options.schema = TestSchema();
  options.key_column = "id";
  options.seal_on_put = true;
  ASSERT_OK_AND_ASSIGN(auto other_writer, StorageBase::Open(objects_, other.prefix, options));
  ASSERT_OK(MarkBase(other, "nightly").status());
  ASSERT_OK_AND_ASSIGN(RecordBatch batch, json::RowsToBatch(TestSchema(), R"({"id":"z"})"));
  ASSERT_OK(other_writer->Put({batch}));
  ASSERT_OK_AND_ASSIGN(ExportReport report, ExportChanges(other, *bundles_, "other/"));
  Status refused = ApplyChanges(replica_, BytesOf(report.bundles[0])).status();
  EXPECT_EQ(RefusalOf(refused), Refusal::kDiverged) << refused;
}

// --- case 10: local writes on the replica ------------------------------------------------------

TEST_F(ReplicationTest, ReplicaRefusesLocalWritersUntilPromoted) {
  Seed();
  StorageBaseOptions options;
  options.key_column = "id";
  ASSERT_OK_AND_ASSIGN(auto local, StorageBase::Open(objects_, replica_.prefix, options, false));
  ASSERT_OK_AND_ASSIGN(RecordBatch batch, json::RowsToBatch(TestSchema(), R"({"id":"local"})"));
  Status refused = local->Put({batch});
  EXPECT_TRUE(refused.IsInvalidArgument()) << refused;
  EXPECT_NE(refused.ToString().find("is a replica"), std::string::npos) << refused;
  ASSERT_OK(Promote(replica_));
  ASSERT_OK(local->Put({batch}));
  ASSERT_OK_AND_ASSIGN(ReplicaStatus status, GetReplicaStatus(replica_));
  EXPECT_FALSE(status.replica);
}

TEST_F(ReplicationTest, LocalWriteOutsideApplyIsRefusedAsDiverged) {
  ASSERT_OK(MarkBase(source_, "nightly").status());
  // A writer that opened before the store became a replica is not stopped by the marker.
  StorageBaseOptions options;
  options.schema = TestSchema();
  options.key_column = "id";
  ASSERT_OK_AND_ASSIGN(auto early, StorageBase::Open(objects_, replica_.prefix, options));
  ASSERT_OK(early->OpenWriter());
  ExportOptions full;
  full.full = true;
  ASSERT_OK_AND_ASSIGN(ExportReport seed, Export(full));
  ApplyAll(seed, replica_);

  ASSERT_OK_AND_ASSIGN(RecordBatch batch, json::RowsToBatch(TestSchema(), R"({"id":"local"})"));
  ASSERT_OK(early->Put({batch}));
  ASSERT_OK(early->Flush().status());
  Put(R"({"id":"a","n":1})");
  ASSERT_OK_AND_ASSIGN(ExportReport report, Export());
  Status pending = ApplyChanges(replica_, BytesOf(report.bundles[0])).status();
  EXPECT_EQ(RefusalOf(pending), Refusal::kDiverged) << pending;
  // Merged into the base, the local row is still caught (the base counts a row too many).
  ASSERT_OK(early->Cleanup().status());
  Status merged = ApplyChanges(replica_, BytesOf(report.bundles[0])).status();
  EXPECT_EQ(RefusalOf(merged), Refusal::kDiverged) << merged;
}

// --- case 13: never over an existing bundle ------------------------------------------------------

TEST_F(ReplicationTest, ExportOverExistingBundleNameIsRefusedAsExists) {
  strata::testing::TempDir dir("replication");
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<ObjectStore> local,
                       OpenLocalObjectStore((dir / "bundles").string()));
  ASSERT_OK(MarkBase(source_, "nightly").status());
  Put(R"({"id":"a","n":1})");
  // The next export goes from cursor 0 to cursor 1.
  BundleHeader header;
  header.from.cursor = 0;
  header.to.cursor = 1;
  const std::string key = BundleKey(header, false);
  ASSERT_OK(local->Put(key, "precious"));
  ExportOptions options;
  options.staging_dir = (dir / "staging").string();
  Status refused = ExportChanges(source_, *local, "", options).status();
  EXPECT_EQ(RefusalOf(refused), Refusal::kExists) << refused;
  ASSERT_OK_AND_ASSIGN(Buffer kept, local->Get(key));
  EXPECT_EQ(kept.view(), "precious");
  // No temporary or staged file is left behind, and the next export publishes normally.
  EXPECT_TRUE(std::filesystem::is_empty(dir / "staging"));
  ASSERT_OK(local->Delete(key));
  ASSERT_OK_AND_ASSIGN(ExportReport report, ExportChanges(source_, *local, "", options));
  ASSERT_EQ(report.bundles.size(), 1u);
  for (const auto& entry : std::filesystem::directory_iterator(dir / "bundles")) {
    EXPECT_TRUE(entry.path().filename().string().ends_with(".bundle")) << entry.path();
  }
}

// --- case 15: schema drift -----------------------------------------------------------------------

TEST_F(ReplicationTest, ReplicaWithAnotherSchemaRefusesAsSchema) {
  Seed();
  ASSERT_OK_AND_ASSIGN(auto table, table::Table::Open(objects_, replica_.prefix));
  ASSERT_OK(table->AddColumns({field("extra", int64())}).status());
  Put(R"({"id":"a","n":1})");
  ASSERT_OK_AND_ASSIGN(ExportReport report, Export());
  Status refused = ApplyChanges(replica_, BytesOf(report.bundles[0])).status();
  EXPECT_EQ(RefusalOf(refused), Refusal::kSchema) << refused;
}

// --- case 16: below the trim floor -------------------------------------------------------------

TEST_F(ReplicationTest, CursorBelowTrimFloorIsTooOldAndFullExportReSeeds) {
  Seed();
  ExportOptions fast;
  fast.consumer = "fast";
  ExportOptions slow;
  slow.consumer = "slow";
  Put(R"({"id":"a","n":1})");
  ASSERT_OK_AND_ASSIGN(ExportReport r1, Export(slow));  // slow acknowledges the seed state
  Put(R"({"id":"b","n":2})");
  fast.since = r1.to.cursor;
  ASSERT_OK_AND_ASSIGN(ExportReport r2, Export(fast));
  Put(R"({"id":"c","n":3})");
  fast.since = r2.to.cursor;
  ASSERT_OK_AND_ASSIGN(ExportReport r3, Export(fast));

  // The floor is the slowest consumer's cursor, strictly: its state stays.
  ASSERT_OK_AND_ASSIGN(TrimReport trim, Trim(source_));
  EXPECT_EQ(trim.floor, r1.from.cursor);
  ASSERT_OK_AND_ASSIGN(SourceStatus status, GetSourceStatus(source_));
  ASSERT_FALSE(status.states.empty());
  EXPECT_EQ(status.states.front().cursor, r1.from.cursor);

  // The slow consumer moves on; the next trim drops what only it needed.
  slow.since = r1.to.cursor;
  ASSERT_OK(Export(slow).status());
  fast.since = r3.to.cursor;
  ASSERT_OK(Export(fast).status());
  ASSERT_OK_AND_ASSIGN(trim, Trim(source_));
  EXPECT_EQ(trim.floor, r1.to.cursor);
  EXPECT_FALSE(trim.removed.empty());
  ExportOptions stale;
  stale.since = r1.from.cursor;
  Status too_old = Export(stale).status();
  EXPECT_EQ(RefusalOf(too_old), Refusal::kTooOld) << too_old;

  // A replica still at the seed state cannot catch up through a newer bundle: TooOld.
  ExportOptions from_floor;
  from_floor.since = r1.to.cursor;
  Put(R"({"id":"d","n":4})");
  ASSERT_OK_AND_ASSIGN(ExportReport late, Export(from_floor));
  Status refused = ApplyChanges(replica_, BytesOf(late.bundles[0])).status();
  EXPECT_EQ(RefusalOf(refused), Refusal::kTooOld) << refused;

  // Re-seed: a full export into a fresh replica.
  StoreLocation fresh{objects_, "fresh/"};
  ExportOptions full;
  full.full = true;
  ASSERT_OK_AND_ASSIGN(ExportReport reseed, Export(full));
  ApplyAll(reseed, fresh);
  EXPECT_EQ(Listing(fresh), Listing(source_));
}

// --- strata's promises beyond the matrix ------------------------------------------------------

TEST_F(ReplicationTest, MergesCompactionAndCleanupAddNothingToTheNextBundle) {
  for (int i = 0; i < 5; ++i) Put(fmt::format(R"({{"id":"r{}","n":{}}})", i, i));
  Seed();
  ASSERT_OK(writer_->Cleanup().status());  // merges every pending generation into the base
  ASSERT_OK(writer_->Compact().status());
  ASSERT_OK_AND_ASSIGN(ExportReport report, Export());
  EXPECT_TRUE(report.bundles.empty());
  EXPECT_EQ(report.to, report.from);
  EXPECT_EQ(report.rows_scanned, 5);
}

TEST_F(ReplicationTest, PendingGenerationsAreExportedAsReadersSeeThem) {
  Seed();
  Put(R"({"id":"pending","n":1})");  // sealed, not merged
  ASSERT_OK_AND_ASSIGN(int64_t pending, writer_->PendingGenerations());
  EXPECT_GT(pending, 0);
  ASSERT_OK_AND_ASSIGN(ExportReport report, Export());
  EXPECT_EQ(report.rows, 1);
}

TEST_F(ReplicationTest, LargeChangeIsSplitIntoChainedParts) {
  Seed();
  std::string rows;
  for (int i = 0; i < 25; ++i) rows += fmt::format(R"({{"id":"k{:02}","n":{}}})", i, i) + "\n";
  Put(rows);
  ASSERT_OK_AND_ASSIGN(ExportReport first, Export());
  ApplyAll(first, replica_);
  Delete({"k00", "k01", "k02", "k03", "k04", "k05", "k06"});
  Put(R"({"id":"k10","n":100})");
  ExportOptions small;
  small.max_rows = 3;
  ASSERT_OK_AND_ASSIGN(ExportReport split, Export(small));
  ASSERT_EQ(split.bundles.size(), 3u);  // 1 row + 2 deletions, 3 deletions, 2 deletions
  for (size_t k = 0; k < split.bundles.size(); ++k) {
    const BundleHeader& h = split.bundles[k].header;
    EXPECT_EQ(h.part, k + 1);
    EXPECT_EQ(h.parts, 3u);
    EXPECT_LE(h.row_count + h.deletion_count, 3);
    if (k > 0) {
      EXPECT_EQ(h.from, split.bundles[k - 1].header.to);
    }
  }
  EXPECT_EQ(split.bundles.back().header.to.part, 0u);
  // A later part before an earlier one is out of order.
  Status refused = ApplyChanges(replica_, BytesOf(split.bundles[1])).status();
  EXPECT_EQ(RefusalOf(refused), Refusal::kCursor) << refused;
  ApplyAll(split, replica_);
  EXPECT_EQ(Listing(replica_), Listing(source_));
  ASSERT_OK_AND_ASSIGN(VerifyResult verify, Verify(replica_));
  EXPECT_TRUE(verify.matches());
}

TEST_F(ReplicationTest, KeyedBundlesNeedTheSecret) {
  ASSERT_OK(MarkBase(source_, "nightly").status());
  Put(R"({"id":"a","n":1})");
  ExportOptions keyed;
  keyed.full = true;
  keyed.hmac_secret = "s3cret";
  ASSERT_OK_AND_ASSIGN(ExportReport report, Export(keyed));
  const std::string bytes = BytesOf(report.bundles[0]);
  EXPECT_EQ(RefusalOf(ApplyChanges(replica_, bytes).status()), Refusal::kDigest);
  ApplyOptions wrong;
  wrong.hmac_secret = "guess";
  EXPECT_EQ(RefusalOf(ApplyChanges(replica_, bytes, wrong).status()), Refusal::kDigest);
  ApplyOptions right;
  right.hmac_secret = "s3cret";
  ASSERT_OK(ApplyChanges(replica_, bytes, right).status());
  EXPECT_EQ(Listing(replica_), Listing(source_));
}

TEST_F(ReplicationTest, ConcurrentAppliesOfOneBundleInstallItOnce) {
  Seed();
  Put(R"({"id":"a","n":1})");
  ASSERT_OK_AND_ASSIGN(ExportReport report, Export());
  const std::string bytes = BytesOf(report.bundles[0]);
  const uint64_t before = ReplicaVersion();
  std::vector<Status> results(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = ApplyChanges(replica_, bytes).status(); });
  }
  for (std::thread& t : threads) t.join();
  int ok = 0;
  for (const Status& st : results) {
    if (st.ok()) {
      ++ok;
    } else {
      std::optional<Refusal> r = RefusalOf(st);
      EXPECT_TRUE(r == Refusal::kBusy || r == Refusal::kCursor) << st;
    }
  }
  EXPECT_EQ(ok, 1);
  EXPECT_EQ(ReplicaVersion(), before + 1);
  EXPECT_EQ(Listing(replica_), Listing(source_));
}

TEST_F(ReplicationTest, VerifyCatchesAReplicaChangedBehindItsState) {
  Put(R"({"id":"a","n":1})");
  Seed();
  ASSERT_OK_AND_ASSIGN(VerifyResult clean, Verify(replica_));
  EXPECT_TRUE(clean.matches());
  // Change a row in place through the table, bypassing the store and apply.
  ASSERT_OK_AND_ASSIGN(auto table, table::Table::Open(objects_, replica_.prefix));
  ASSERT_OK_AND_ASSIGN(RecordBatch changed, json::RowsToBatch(TestSchema(), R"({"id":"a","n":2})"));
  ASSERT_OK(table->Upsert({changed}).status());
  ASSERT_OK_AND_ASSIGN(VerifyResult tampered, Verify(replica_));
  EXPECT_FALSE(tampered.matches());
  // And apply will not advance over it when the next bundle touches the key.
  Put(R"({"id":"a","n":3})");
  ASSERT_OK_AND_ASSIGN(ExportReport report, Export());
  Status refused = ApplyChanges(replica_, BytesOf(report.bundles[0])).status();
  EXPECT_EQ(RefusalOf(refused), Refusal::kDiverged) << refused;
}

TEST_F(ReplicationTest, NotMarkedAndUnmarked) {
  EXPECT_EQ(RefusalOf(Export().status()), Refusal::kNotMarked);
  ASSERT_OK(MarkBase(source_, "t").status());
  EXPECT_TRUE(MarkBase(source_, "t").status().IsAlreadyExists());
  ASSERT_OK(Unmark(source_));
  ASSERT_OK_AND_ASSIGN(SourceStatus status, GetSourceStatus(source_));
  EXPECT_FALSE(status.marked);
  ASSERT_OK_AND_ASSIGN(std::vector<ObjectMeta> left,
                       objects_->List(source_.prefix + std::string(kReplicationDirectory)));
  EXPECT_TRUE(left.empty());
}

TEST_F(ReplicationTest, KeptStateIsBoundedByTableSizeNotHistory) {
  Seed();
  ExportOptions follower;
  follower.consumer = "f";
  ASSERT_OK_AND_ASSIGN(ReplicaStatus seeded, GetReplicaStatus(replica_));
  uint64_t cursor = seeded.state.cursor;
  for (int round = 0; round < 20; ++round) {
    Put(fmt::format(R"({{"id":"same","n":{}}})", round));
    follower.since = cursor;
    ASSERT_OK_AND_ASSIGN(ExportReport r, Export(follower));
    ApplyAll(r, replica_);
    cursor = r.to.cursor;
    ASSERT_OK(Trim(source_).status());
  }
  ASSERT_OK_AND_ASSIGN(SourceStatus status, GetSourceStatus(source_));
  EXPECT_LE(status.states.size(), 2u);  // the consumer's state and the newest
}

// --- follow: continuous export, publish, apply ------------------------------------------------

TEST_F(ReplicationTest, FollowRoundsKeepTheReplicaCaughtUpAndResumeAfterAnInterruption) {
  ASSERT_OK(MarkBase(source_, "nightly").status());
  Put(R"({"id":"a","n":1})");
  MetricsRegistry metrics;
  FollowOptions options;
  options.consumer = "rep-1";
  options.metrics = &metrics;
  ASSERT_OK_AND_ASSIGN(FollowReport first, FollowOnce(source_, replica_, *bundles_, "b/", options));
  EXPECT_EQ(first.applied.applied.size(), 1u);  // the full export that created the replica
  EXPECT_EQ(Listing(replica_), Listing(source_));

  Put(R"({"id":"b","n":2})");
  Delete({"a"});
  ASSERT_OK_AND_ASSIGN(FollowReport second,
                       FollowOnce(source_, replica_, *bundles_, "b/", options));
  EXPECT_EQ(second.rows_behind, 2);
  EXPECT_EQ(Listing(replica_), Listing(source_));
  EXPECT_NE(metrics.ExposePrometheus().find("strata_replication_lag_rows{replica=\"rep-1\"} 2"),
            std::string::npos)
      << metrics.ExposePrometheus();

  // A round killed after publishing and before applying: the next one applies that first.
  ASSERT_OK_AND_ASSIGN(ReplicaStatus at, GetReplicaStatus(replica_));
  Put(R"({"id":"c","n":3})");
  ExportOptions interrupted;
  interrupted.since = at.state.cursor;
  ASSERT_OK(Export(interrupted).status());
  Put(R"({"id":"d","n":4})");
  ASSERT_OK_AND_ASSIGN(FollowReport third, FollowOnce(source_, replica_, *bundles_, "b/", options));
  EXPECT_EQ(third.applied.applied.size(), 2u);
  EXPECT_EQ(Listing(replica_), Listing(source_));
  ASSERT_OK_AND_ASSIGN(VerifyResult verify, Verify(replica_));
  EXPECT_TRUE(verify.matches());

  // Nothing changed: nothing is published, the replica stays where it is.
  ASSERT_OK_AND_ASSIGN(FollowReport idle, FollowOnce(source_, replica_, *bundles_, "b/", options));
  EXPECT_TRUE(idle.exported.bundles.empty());
  EXPECT_EQ(idle.rows_behind, 0);
  ASSERT_OK_AND_ASSIGN(SourceStatus status, GetSourceStatus(source_));
  ASSERT_EQ(status.consumers.size(), 1u);
  EXPECT_EQ(status.consumers[0].id, "rep-1");
}

TEST_F(ReplicationTest, ApplyPublishedCreatesAReplicaFromASplitFullExport) {
  ASSERT_OK(MarkBase(source_, "nightly").status());
  std::string rows;
  for (int i = 0; i < 10; ++i) rows += fmt::format(R"({{"id":"k{:02}","n":{}}})", i, i) + "\n";
  Put(rows);
  ExportOptions full;
  full.full = true;
  full.max_rows = 3;
  ASSERT_OK_AND_ASSIGN(ExportReport seed, Export(full));
  ASSERT_EQ(seed.bundles.size(), 4u);
  ASSERT_OK_AND_ASSIGN(ApplyPublishedReport applied, ApplyPublished(replica_, *bundles_, "b/"));
  EXPECT_EQ(applied.applied.size(), 4u);
  ASSERT_TRUE(applied.state.has_value());
  EXPECT_EQ(*applied.state, seed.to);
  EXPECT_EQ(Listing(replica_), Listing(source_));
  ASSERT_OK_AND_ASSIGN(ApplyPublishedReport again, ApplyPublished(replica_, *bundles_, "b/"));
  EXPECT_TRUE(again.applied.empty());
}

// --- every store kind --------------------------------------------------------------------------

TEST(ReplicationKinds, RolloutStoreReplicaReadsLikeItsSource) {
  auto objects = NewMemoryObjectStore();
  auto bundles = NewMemoryObjectStore();
  ASSERT_OK_AND_ASSIGN(auto source, store::RolloutStore::Open(objects, "src/"));
  store::RolloutRecord r;
  r.id = "t1";
  r.rollout_id = "r1";
  r.problem_id = "p1";
  r.content = "hello";
  r.reward = 0.5f;
  ASSERT_OK(source->Add({r}).status());
  ASSERT_OK(source->Flush().status());  // what other readers see is what is exported
  StoreLocation src{objects, "src/"};
  StoreLocation rep{objects, "rep/"};
  ASSERT_OK(MarkBase(src, "t").status());
  ExportOptions full;
  full.full = true;
  ASSERT_OK_AND_ASSIGN(ExportReport report, ExportChanges(src, *bundles, "", full));
  for (const PublishedBundle& b : report.bundles) {
    ASSERT_OK_AND_ASSIGN(Buffer bytes, bundles->Get(b.key));
    ASSERT_OK(ApplyChanges(rep, bytes.view()).status());
  }
  EXPECT_EQ(Listing(rep), Listing(src));
  ASSERT_OK_AND_ASSIGN(auto replica, store::RolloutStore::Open(objects, "rep/", {}, false));
  ASSERT_OK_AND_ASSIGN(std::vector<store::RolloutRecord> a, source->List());
  ASSERT_OK_AND_ASSIGN(std::vector<store::RolloutRecord> b, replica->List());
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].content, "hello");
  EXPECT_EQ(b[0].reward, 0.5f);
  EXPECT_FALSE(replica->Add({r}).ok());  // a replica refuses local writes
}

TEST(ReplicationKinds, GenericStoreReplicaKeepsItsSpec) {
  auto objects = NewMemoryObjectStore();
  auto bundles = NewMemoryObjectStore();
  ASSERT_OK_AND_ASSIGN(store::SchemaSpec spec, store::SchemaSpec::FromJson(R"({"columns": [
      ["id", {"type": "string", "nullable": false}],
      ["v", {"type": "vector", "dim": 2}],
      ["score", {"type": "float64"}]]})"));
  store::GenericStoreOptions options;
  options.seal_on_add = true;
  ASSERT_OK_AND_ASSIGN(auto source, store::GenericStore::Open(objects, "src/", spec, options));
  ASSERT_OK(source->Add(R"([{"id":"x","v":[1,2],"score":0.5}])").status());
  StoreLocation src{objects, "src/"};
  StoreLocation rep{objects, "rep/"};
  ASSERT_OK(MarkBase(src, "t").status());
  ExportOptions full;
  full.full = true;
  ASSERT_OK_AND_ASSIGN(ExportReport report, ExportChanges(src, *bundles, "", full));
  for (const PublishedBundle& b : report.bundles) {
    ASSERT_OK_AND_ASSIGN(Buffer bytes, bundles->Get(b.key));
    ASSERT_OK(ApplyChanges(rep, bytes.view()).status());
  }
  ASSERT_OK_AND_ASSIGN(auto replica, store::GenericStore::OpenExisting(objects, "rep/"));
  EXPECT_TRUE(replica->spec() == source->spec());
  ASSERT_OK_AND_ASSIGN(RecordBatch row, replica->Get("x"));
  EXPECT_EQ(row.num_rows(), 1);
  EXPECT_EQ(Listing(rep), Listing(src));
}

// --- property: random histories, exports at random points ------------------------------------

TEST_F(ReplicationTest, PropertyReplicaEqualsSourceAtEveryExportSnapshot) {
  const unsigned long long seed = strata::testing::TestSeed();
  SCOPED_TRACE(fmt::format("STRATA_TEST_SEED={}", seed));
  std::mt19937_64 rng(seed);
  Seed();
  std::map<std::string, int64_t> model;  // the oracle: key -> n
  int exports = 0;
  for (int step = 0; step < 300; ++step) {
    const int op = static_cast<int>(rng() % 100);
    const std::string key = fmt::format("k{:02}", rng() % 40);
    if (op < 50) {
      const auto n = static_cast<int64_t>(rng() % 5);
      Put(fmt::format(R"({{"id":"{}","n":{}}})", key, n));
      model[key] = n;
    } else if (op < 70) {
      Delete({key});
      model.erase(key);
    } else if (op < 76) {
      ASSERT_OK(writer_->Cleanup().status());
    } else if (op < 80) {
      ASSERT_OK(writer_->Compact().status());
    } else if (op < 83) {
      ASSERT_OK(writer_->MaybeMerge().status());
    } else {
      ExportOptions options;
      options.max_rows = 1 + static_cast<int64_t>(rng() % 12);
      ASSERT_OK_AND_ASSIGN(ExportReport report, Export(options));
      const std::vector<std::string> at_snapshot = Listing(source_);
      ApplyAll(report, replica_);
      ++exports;
      const std::vector<std::string> replica = Listing(replica_);
      ASSERT_EQ(replica, at_snapshot) << "step " << step;
      ASSERT_EQ(replica.size(), model.size()) << "step " << step;
      for (const auto& [k, n] : model) {
        const std::string want = fmt::format(R"("id":"{}","n":{})", k, n);
        EXPECT_TRUE(std::any_of(replica.begin(), replica.end(), [&](const std::string& line) {
          return line.find(want) != std::string::npos;
        })) << want;
      }
      ASSERT_OK_AND_ASSIGN(VerifyResult verify, Verify(replica_));
      ASSERT_TRUE(verify.matches()) << "step " << step;
    }
  }
  EXPECT_GT(exports, 20);
}

}  // namespace
}  // namespace strata::replication
