// The golden LSM objects in tests/data/lsm-v1 (README.md there says how they were made):
// every later build must read WAL segments of formats 1 and 2, shard manifests, bloom
// filters and generations (rewritten and linked) exactly as they were written. The same
// checks also run on a store this build writes with WriteGoldenStore, which keeps the
// generator and the expectations in step; STRATA_WRITE_GOLDEN=<dir> writes it to <dir>.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lsm/bloom.h"
#include "lsm/generation.h"
#include "lsm/layout.h"
#include "lsm/memtable.h"
#include "lsm/shard_manifest.h"
#include "lsm/wal.h"
#include "strata/builder.h"
#include "strata/ipc.h"
#include "strata/json.h"
#include "strata/object_store.h"
#include "strata/table.h"
#include "support/status_assertions.h"
#include "support/temp_dir.h"
#include "util/clock.h"

namespace strata::lsm {
namespace {

using ::testing::ElementsAre;

// ---------------------------------------------------------------------------------------
// What the golden store holds (keep in sync with WriteGoldenStore).
//
// Shard DeriveShardId("golden") at store prefix "". Manifest chain:
//   v1 init | v2 claim (epoch 1) | v3 seal: replay_after (1,0,0), nothing replayed |
//   v4 seal: generation 1 | v5 claim (epoch 2) | v6 seal: replay_after (2,0,0) |
//   v7 seal: generation 2 (linked from WAL segment (2,0))
// WAL segments:
//   (1,0) format 1: rows {a,b,c} | tombstones {b} | rows {c,d}
//   (2,0) format 2, ended with a footer: rows {e,a} | rows {e,f}
//   (2,1) format 2, no footer (the writer stopped file segments): tombstones {d}
// Generation 1 (rewritten) holds a, b (tombstone), c, d; generation 2 (linked) a, e, f.
// bloom-1000.bin: BloomFilter::Build over "key-0" .. "key-999", 10 bits per key.

constexpr const char* kShardName = "golden";
constexpr int64_t kClockStart = 1'700'000'000'000'000;  // 2023-11-14T22:13:20Z
constexpr int kBloomKeys = 1000;

// Positions ("epoch/segment/offset") and sizes as written; a format 2 segment's records
// start after its header.
constexpr const char* kGen1WalEnd = "1/0/2640";
constexpr const char* kGen2WalEnd = "2/0/2400";
constexpr const char* kLastRecordEnd = "2/1/880";
const std::vector<std::string> kRecordEnds = {"1/0/1072", "1/0/1632", "1/0/2640",
                                              "2/0/1328", "2/0/2400", "2/1/880"};
constexpr int64_t kSegment10Size = 2640;  // records only
constexpr int64_t kSegment20Size = 2778;  // header, records, footer
constexpr int64_t kSegment21Size = 880;   // header, one record
constexpr int64_t kBloomFileSize = 1304;
// Which of "other-0" .. "other-999" the 1000-key filter reports as maybe present.
const std::vector<int> kBloomFalsePositives = {20, 46, 105, 231, 348, 351, 440, 694, 792, 896, 906};
// The payload of each record as JSON lines (tombstone payloads hold the key column alone).
const std::vector<std::string> kRecordRows = {
    R"({"id":"a","n":1,"s":"alpha"}
{"id":"b","n":2,"s":"beta"}
{"id":"c","n":3,"s":null}
)",
    R"({"id":"b"}
)",
    R"({"id":"c","n":30,"s":"gamma"}
{"id":"d","n":4,"s":"delta"}
)",
    R"({"id":"e","n":5,"s":"epsilon"}
{"id":"a","n":10,"s":"alpha-2"}
)",
    R"({"id":"e","n":50,"s":null}
{"id":"f","n":6,"s":"zeta"}
)",
    R"({"id":"d"}
)"};

KeyValueMetadata PrimaryKey() { return KeyValueMetadata({{"strata:primary-key", "true"}}); }

SchemaPtr ShardSchema() {
  return schema(
      {field("id", utf8(), false, PrimaryKey()), field("n", int64()), field("s", utf8())});
}

struct Row {
  std::string id;
  std::optional<int64_t> n;
  std::optional<std::string> s;
};

RecordBatch Rows(const std::vector<Row>& rows) {
  BinaryBuilder ids(utf8());
  Int64Builder ns(int64());
  BinaryBuilder ss(utf8());
  for (const Row& row : rows) {
    EXPECT_TRUE(ids.Append(row.id).ok());
    if (row.n) {
      ns.Append(*row.n);
    } else {
      ns.AppendNull();
    }
    if (row.s) {
      EXPECT_TRUE(ss.Append(*row.s).ok());
    } else {
      ss.AppendNull();
    }
  }
  Result<RecordBatch> batch = RecordBatch::Make(ShardSchema(), static_cast<int64_t>(rows.size()),
                                                {*ids.Finish(), *ns.Finish(), *ss.Finish()});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

// A WAL tombstones payload holds the key column alone.
RecordBatch Keys(const std::vector<std::string>& keys) {
  BinaryBuilder ids(utf8());
  for (const std::string& key : keys) EXPECT_TRUE(ids.Append(key).ok());
  Result<RecordBatch> batch = RecordBatch::Make(schema({ShardSchema()->field(0)}),
                                                static_cast<int64_t>(keys.size()), {*ids.Finish()});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

std::string Encode(const RecordBatch& batch) {
  Result<Buffer> stream = ipc::WriteStreamToBuffer(batch.schema(), {batch});
  EXPECT_TRUE(stream.ok()) << stream.status();
  return stream.ok() ? std::string(stream->view()) : std::string();
}

std::vector<std::string> BloomKeys() {
  std::vector<std::string> keys;
  for (int i = 0; i < kBloomKeys; ++i) keys.push_back("key-" + std::to_string(i));
  return keys;
}

// ---------------------------------------------------------------------------------------
// The generator.

// Appends one record to `wal` and, as the shard writer does, its rows to `mem` (tombstones
// as shard-schema rows with nulls beside the key).
Result<pb::WalPosition> Put(WalWriter& wal, MemTable* mem, const std::vector<Row>& rows,
                            bool tombstone) {
  std::vector<std::string> keys;
  for (const Row& row : rows) keys.push_back(row.id);
  const std::string payload = tombstone ? Encode(Keys(keys)) : Encode(Rows(rows));
  STRATA_ASSIGN_OR_RETURN(
      pb::WalPosition end,
      wal.Append(tombstone ? WalRecordKind::kTombstones : WalRecordKind::kRows, payload));
  if (mem != nullptr) {
    const auto start =
        static_cast<int64_t>(end.offset() - kWalHeaderSize - payload.size() - kWalTrailerSize);
    STRATA_RETURN_IF_ERROR(mem->Append(Rows(rows), tombstone, end, start));
  }
  return end;
}

Status Seal(ShardManifestStore& manifests, uint64_t epoch, const pb::WalPosition& replay_after,
            std::optional<pb::Generation> entry) {
  return manifests
      .Update(epoch, "seal",
              [&](pb::ShardManifest& m) {
                if (entry) {
                  *m.add_generations() = *entry;
                  m.set_current_generation(entry->generation() + 1);
                }
                *m.mutable_replay_after() = replay_after;
                return Status::OK();
              })
      .status();
}

// Writes the golden objects into the local store at `dir` (which should be empty), using
// the public steps of the shard writer one at a time so that every object kind and both
// WAL formats appear.
Status WriteGoldenStore(const std::filesystem::path& dir) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> store, OpenLocalObjectStore(dir.string()));
  const Uuid shard = DeriveShardId(kShardName);
  ManualClock clock(kClockStart);
  ShardManifestStore manifests(store, "", shard, &clock);
  table::TableOptions table_options;

  // Epoch 1: a format 1 WAL segment and a rewritten generation with a tombstone.
  STRATA_ASSIGN_OR_RETURN(pb::ShardManifest claimed, manifests.Claim());
  if (claimed.writer_epoch() != 1) return Status::Internal("the golden store is not empty");
  clock.Advance(std::chrono::seconds(1));
  STRATA_RETURN_IF_ERROR(Seal(manifests, 1, MakeWalPosition(1, 0, 0), std::nullopt));
  {
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<WalWriter> wal,
                            WalWriter::Open(store, "", shard, 1, 0, WalWriterOptions{}));
    auto mem = MemTable::Make(ShardSchema(), 0);
    STRATA_RETURN_IF_ERROR(
        Put(*wal, mem.get(), {{"a", 1, "alpha"}, {"b", 2, "beta"}, {"c", 3, std::nullopt}}, false)
            .status());
    STRATA_RETURN_IF_ERROR(Put(*wal, mem.get(), {{"b", {}, {}}}, true).status());
    STRATA_ASSIGN_OR_RETURN(pb::WalPosition end,
                            Put(*wal, mem.get(), {{"c", 30, "gamma"}, {"d", 4, "delta"}}, false));
    STRATA_RETURN_IF_ERROR(wal->Close());
    clock.Advance(std::chrono::seconds(1));
    STRATA_ASSIGN_OR_RETURN(
        pb::Generation entry,
        WriteGeneration(store, "", shard, 1, *mem->Snapshot(), table_options, &clock));
    *entry.mutable_wal_end() = end;
    STRATA_RETURN_IF_ERROR(Seal(manifests, 1, end, entry));
  }

  // Epoch 2: format 2 segments, one ended with a footer and linked as generation 2, one
  // left without a footer.
  clock.Advance(std::chrono::seconds(1));
  STRATA_RETURN_IF_ERROR(manifests.Claim().status());
  STRATA_RETURN_IF_ERROR(Seal(manifests, 2, MakeWalPosition(2, 0, 0), std::nullopt));
  WalWriterOptions file_options;
  file_options.file_schema = ShardSchema();
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<WalWriter> wal,
                          WalWriter::Open(store, "", shard, 2, 0, file_options));
  auto mem = MemTable::Make(ShardSchema(), 0);
  STRATA_RETURN_IF_ERROR(
      Put(*wal, mem.get(), {{"e", 5, "epsilon"}, {"a", 10, "alpha-2"}}, false).status());
  STRATA_ASSIGN_OR_RETURN(pb::WalPosition end,
                          Put(*wal, mem.get(), {{"e", 50, std::nullopt}, {"f", 6, "zeta"}}, false));
  STRATA_RETURN_IF_ERROR(wal->RollSegment().status());
  if (!wal->SegmentHasFooter(0)) return Status::Internal("segment (2,0) has no footer");
  STRATA_RETURN_IF_ERROR(Put(*wal, nullptr, {{"d", {}, {}}}, true).status());
  wal->StopFileSegments();
  STRATA_RETURN_IF_ERROR(wal->Close());
  clock.Advance(std::chrono::seconds(1));
  if (!CanLinkWal(*mem->Snapshot())) return Status::Internal("cannot link the WAL");
  STRATA_ASSIGN_OR_RETURN(
      pb::Generation entry,
      WriteLinkedGeneration(store, "", shard, 2, *mem->Snapshot(), table_options, &clock));
  *entry.mutable_wal_end() = end;
  STRATA_RETURN_IF_ERROR(Seal(manifests, 2, end, entry));

  return store->Put("bloom-1000.bin", BloomFilter::Build(BloomKeys()).Serialize());
}

// ---------------------------------------------------------------------------------------
// The checks, on the golden copy and on a freshly written store.

enum class Source { kGolden, kFresh };

class LsmGoldenTest : public ::testing::TestWithParam<Source> {
 protected:
  void SetUp() override {
    const std::filesystem::path root = dir_.path() / "store";
    if (GetParam() == Source::kGolden) {
      const std::filesystem::path source = STRATA_LSM_GOLDEN_DIR;
      ASSERT_TRUE(std::filesystem::is_directory(source / "_lsm"))
          << source << " is missing; see tests/data/lsm-v1/README.md";
      std::filesystem::copy(source, root, std::filesystem::copy_options::recursive);
    } else {
      std::filesystem::create_directories(root);
      ASSERT_OK(WriteGoldenStore(root));
    }
    ASSERT_OK_AND_ASSIGN(store_, OpenLocalObjectStore(root.string()));
    ASSERT_OK_AND_ASSIGN(latest_, ShardManifestStore(store_, "", shard_).ReadLatest());
  }

  std::string SegmentBytes(uint64_t epoch, uint64_t segment) {
    Result<Buffer> bytes = store_->Get(WalSegmentKey("", shard_, epoch, segment));
    EXPECT_TRUE(bytes.ok()) << bytes.status();
    return bytes.ok() ? std::string(bytes->view()) : std::string();
  }

  // The size of every object under a generation's directory.
  int64_t StoredBytes(const pb::Generation& entry) {
    Result<std::vector<ObjectMeta>> objects = store_->List(ShardDir("", shard_) + entry.path());
    EXPECT_TRUE(objects.ok()) << objects.status();
    int64_t bytes = 0;
    if (objects.ok()) {
      for (const ObjectMeta& object : *objects) bytes += object.size;
    }
    return bytes;
  }

  // The rows of a generation's table in scan order, as JSON lines.
  Result<std::string> GenerationRows(const pb::Generation& entry) {
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<Generation> generation,
                            Generation::Open(store_, "", shard_, entry, table::TableOptions{}));
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<table::BatchIterator> it,
                            generation->table()->Scan(table::ScanOptions{}));
    STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> batches, it->ToBatches());
    std::string out;
    for (const RecordBatch& batch : batches) out += json::BatchToJsonLines(batch);
    return out;
  }

  strata::testing::TempDir dir_{"lsm-golden"};
  std::shared_ptr<ObjectStore> store_;
  const Uuid shard_ = DeriveShardId(kShardName);
  pb::ShardManifest latest_;
};

std::string PositionText(const pb::WalPosition& p) {
  return std::to_string(p.epoch()) + "/" + std::to_string(p.segment()) + "/" +
         std::to_string(p.offset());
}

TEST_P(LsmGoldenTest, ShardIsRegisteredUnderItsDerivedId) {
  ASSERT_OK_AND_ASSIGN(std::vector<Uuid> shards, ListShards(*store_, ""));
  ASSERT_EQ(shards.size(), 1u);
  // Shard ids are derived, never stored elsewhere: the derivation must not change.
  EXPECT_EQ(shards[0].ToString(), "bcdc3604-585e-5987-ae26-8cc84443b1e5");
  EXPECT_EQ(shard_.ToString(), shards[0].ToString());
  ASSERT_OK_AND_ASSIGN(Buffer hint, store_->Get(ShardLatestHintKey("", shard_)));
  EXPECT_EQ(hint.view(), "7");
}

TEST_P(LsmGoldenTest, ManifestChainDecodesVersionByVersion) {
  const std::vector<std::string> operations = {"init",  "claim", "seal", "seal",
                                               "claim", "seal",  "seal"};
  const std::vector<uint64_t> epochs = {0, 1, 1, 1, 2, 2, 2};
  const std::vector<int> pending = {0, 0, 0, 1, 1, 1, 2};
  const std::vector<std::string> replay_after = {"0/0/0",     "0/0/0", "1/0/0",    kGen1WalEnd,
                                                 kGen1WalEnd, "2/0/0", kGen2WalEnd};
  for (uint64_t v = 1; v <= 7; ++v) {
    SCOPED_TRACE("version " + std::to_string(v));
    const std::string key = ShardManifestKey("", shard_, v);
    ASSERT_OK_AND_ASSIGN(Buffer bytes, store_->Get(key));
    ASSERT_OK_AND_ASSIGN(pb::ShardManifest m, DecodeShardManifest(bytes.view(), key, v, shard_));
    EXPECT_EQ(m.version(), v);
    EXPECT_EQ(m.operation(), operations[v - 1]);
    EXPECT_EQ(m.writer_epoch(), epochs[v - 1]);
    EXPECT_EQ(m.generations_size(), pending[v - 1]);
    EXPECT_EQ(PositionText(m.replay_after()), replay_after[v - 1]);
    EXPECT_GE(m.created_micros(), kClockStart);
    // A version decoded under another number is refused: the check reads the payload.
    if (v > 1) {
      EXPECT_FALSE(DecodeShardManifest(bytes.view(), key, v - 1, shard_).ok());
    }
  }
  EXPECT_FALSE(store_->Head(ShardManifestKey("", shard_, 8)).ok());
}

TEST_P(LsmGoldenTest, LatestManifestListsBothGenerations) {
  EXPECT_EQ(latest_.version(), 7u);
  EXPECT_EQ(latest_.writer_epoch(), 2u);
  EXPECT_EQ(latest_.current_generation(), 3u);
  EXPECT_EQ(latest_.created_micros(), kClockStart + 4'000'000);
  ASSERT_EQ(latest_.generations_size(), 2);
  const pb::Generation& first = latest_.generations(0);
  EXPECT_EQ(first.generation(), 1u);
  EXPECT_THAT(first.path(), ::testing::MatchesRegex("gen/00000000000000000001-[0-9a-f]{8}/"));
  EXPECT_EQ(first.rows(), 4);
  EXPECT_EQ(first.tombstones(), 1);
  EXPECT_EQ(first.bytes(), StoredBytes(first));
  EXPECT_EQ(first.sealed_at_micros(), kClockStart + 2'000'000);
  EXPECT_EQ(PositionText(first.wal_end()), kGen1WalEnd);
  const pb::Generation& second = latest_.generations(1);
  EXPECT_EQ(second.generation(), 2u);
  EXPECT_THAT(second.path(), ::testing::MatchesRegex("gen/00000000000000000002-[0-9a-f]{8}/"));
  EXPECT_EQ(second.rows(), 3);
  EXPECT_EQ(second.tombstones(), 0);
  // A linked generation counts its whole WAL segment among its objects.
  EXPECT_EQ(second.bytes(), StoredBytes(second));
  EXPECT_GT(second.bytes(), kSegment20Size);
  EXPECT_EQ(second.sealed_at_micros(), kClockStart + 4'000'000);
  EXPECT_EQ(PositionText(second.wal_end()), kGen2WalEnd);
}

TEST_P(LsmGoldenTest, SegmentsStartWithTheirFormatsMagic) {
  ASSERT_OK_AND_ASSIGN(std::vector<WalSegment> segments, ListWalSegments(*store_, "", shard_));
  ASSERT_EQ(segments.size(), 3u);
  const std::vector<std::pair<uint64_t, uint64_t>> ids = {{1, 0}, {2, 0}, {2, 1}};
  for (size_t i = 0; i < segments.size(); ++i) {
    EXPECT_EQ(segments[i].epoch, ids[i].first);
    EXPECT_EQ(segments[i].segment, ids[i].second);
  }
  EXPECT_EQ(segments[0].size, kSegment10Size);
  EXPECT_EQ(segments[1].size, kSegment20Size);
  EXPECT_EQ(segments[2].size, kSegment21Size);
  EXPECT_EQ(SegmentBytes(1, 0).substr(0, 4), "SWAL");
  EXPECT_EQ(SegmentBytes(2, 0).substr(0, 8), std::string("ARROW1\0\0", 8));
  EXPECT_EQ(SegmentBytes(2, 1).substr(0, 8), std::string("ARROW1\0\0", 8));
  // Only the segment ended cleanly has the trailing file magic.
  const std::string ended = SegmentBytes(2, 0);
  EXPECT_EQ(ended.substr(ended.size() - 6), "ARROW1");
  const std::string open = SegmentBytes(2, 1);
  EXPECT_NE(open.substr(open.size() - 6), "ARROW1");
}

// Every record of every segment: kind, end position and decoded payload.
TEST_P(LsmGoldenTest, ReplayReadsEveryRecordOfBothFormats) {
  struct Seen {
    WalRecordKind kind;
    std::string end;
    std::string rows;
  };
  std::vector<Seen> seen;
  ASSERT_OK_AND_ASSIGN(ReplayStats stats,
                       ReplayWal(*store_, "", shard_, MakeWalPosition(0, 0, 0), 2,
                                 [&](const WalRecord& record) -> Status {
                                   STRATA_ASSIGN_OR_RETURN(
                                       std::vector<RecordBatch> batches,
                                       ipc::ReadStream(Buffer::Copy(record.payload)));
                                   std::string rows;
                                   for (const RecordBatch& b : batches) {
                                     rows += json::BatchToJsonLines(b);
                                   }
                                   seen.push_back({record.kind, PositionText(record.end), rows});
                                   return Status::OK();
                                 }));
  EXPECT_EQ(stats.records, 6);
  EXPECT_EQ(stats.segments, 3);
  EXPECT_EQ(stats.torn_tails, 0);
  EXPECT_EQ(PositionText(stats.end), kLastRecordEnd);
  ASSERT_EQ(seen.size(), 6u);
  const std::vector<WalRecordKind> kinds = {WalRecordKind::kRows, WalRecordKind::kTombstones,
                                            WalRecordKind::kRows, WalRecordKind::kRows,
                                            WalRecordKind::kRows, WalRecordKind::kTombstones};
  for (size_t i = 0; i < seen.size(); ++i) {
    SCOPED_TRACE("record " + std::to_string(i));
    EXPECT_EQ(seen[i].kind, kinds[i]);
    EXPECT_EQ(seen[i].end, kRecordEnds[i]);
    EXPECT_EQ(seen[i].rows, kRecordRows[i]);
  }
}

// The manifest's replay_after leaves exactly the record no generation holds.
TEST_P(LsmGoldenTest, ReplayAfterTheManifestFindsTheUnsealedTombstone) {
  std::vector<std::string> ends;
  ASSERT_OK_AND_ASSIGN(ReplayStats stats, ReplayWal(*store_, "", shard_, latest_.replay_after(), 2,
                                                    [&](const WalRecord& record) -> Status {
                                                      EXPECT_EQ(record.kind,
                                                                WalRecordKind::kTombstones);
                                                      ends.push_back(PositionText(record.end));
                                                      return Status::OK();
                                                    }));
  EXPECT_THAT(ends, ElementsAre(kLastRecordEnd));
  EXPECT_EQ(stats.records, 1);
}

TEST_P(LsmGoldenTest, EndedFormat2SegmentIsAnIpcFileOfItsRows) {
  ASSERT_OK_AND_ASSIGN(std::vector<RecordBatch> batches,
                       ipc::ReadFile(Buffer::Copy(SegmentBytes(2, 0))));
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_TRUE(batches[0].schema()->Equals(*ShardSchema()));
  EXPECT_EQ(json::BatchToJsonLines(batches[0]), kRecordRows[3]);
  EXPECT_EQ(json::BatchToJsonLines(batches[1]), kRecordRows[4]);
  // The segment left without a footer is not a complete file.
  EXPECT_FALSE(ipc::ReadFile(Buffer::Copy(SegmentBytes(2, 1))).ok());
}

TEST_P(LsmGoldenTest, RewrittenGenerationHoldsTheNewestRowOfEachKey) {
  ASSERT_OK_AND_ASSIGN(std::string rows, GenerationRows(latest_.generations(0)));
  EXPECT_EQ(rows,
            R"({"id":"a","n":1,"s":"alpha","_strata_tombstone":false}
{"id":"b","n":null,"s":null,"_strata_tombstone":true}
{"id":"c","n":30,"s":"gamma","_strata_tombstone":false}
{"id":"d","n":4,"s":"delta","_strata_tombstone":false}
)");
}

TEST_P(LsmGoldenTest, LinkedGenerationReadsTheWalSegmentThroughItsDeletions) {
  const pb::Generation& entry = latest_.generations(1);
  ASSERT_OK_AND_ASSIGN(std::string rows, GenerationRows(entry));
  EXPECT_EQ(rows,
            R"({"id":"a","n":10,"s":"alpha-2","_strata_tombstone":null}
{"id":"e","n":50,"s":null,"_strata_tombstone":null}
{"id":"f","n":6,"s":"zeta","_strata_tombstone":null}
)");
  // Its data file is the WAL segment, byte for byte.
  const std::string data =
      ShardDir("", shard_) + entry.path() + "data/wal-00000000000000000002-0000000000.arrow";
  ASSERT_OK_AND_ASSIGN(Buffer linked, store_->Get(data));
  EXPECT_EQ(linked.view(), SegmentBytes(2, 0));
  ASSERT_OK_AND_ASSIGN(std::shared_ptr<Generation> generation,
                       Generation::Open(store_, "", shard_, entry, table::TableOptions{}));
  ASSERT_OK_AND_ASSIGN(table::TableDescription description, generation->table()->Describe());
  ASSERT_EQ(description.fragments.size(), 1u);
  EXPECT_EQ(description.fragments[0].physical_rows, 4);
  EXPECT_EQ(description.fragments[0].deleted_rows, 1);  // e's older row
}

TEST_P(LsmGoldenTest, GenerationBloomFiltersHoldTheirKeys) {
  const std::vector<std::vector<std::string>> keys = {{"a", "b", "c", "d"}, {"a", "e", "f"}};
  for (int g = 0; g < 2; ++g) {
    SCOPED_TRACE("generation " + std::to_string(g + 1));
    const std::string key = ShardDir("", shard_) + latest_.generations(g).path() + "bloom.bin";
    ASSERT_OK_AND_ASSIGN(Buffer bytes, store_->Get(key));
    ASSERT_OK_AND_ASSIGN(BloomFilter bloom, BloomFilter::Parse(bytes.view(), key));
    EXPECT_EQ(bloom.bit_count(), 64);
    EXPECT_EQ(bloom.probes(), 7);
    for (const std::string& k : keys[g]) EXPECT_TRUE(bloom.MayContain(k)) << k;
    ASSERT_OK_AND_ASSIGN(
        std::shared_ptr<Generation> generation,
        Generation::Open(store_, "", shard_, latest_.generations(g), table::TableOptions{}));
    for (const std::string& k : keys[g]) EXPECT_TRUE(generation->MayContain(k)) << k;
  }
}

// A larger filter: every key is present, and the false positives among 1000 other keys are
// exactly those of the filter as written (the hashing and probing must never change, or old
// filters would report keys they hold as absent).
TEST_P(LsmGoldenTest, BloomFilterAnswersAsWritten) {
  ASSERT_OK_AND_ASSIGN(Buffer bytes, store_->Get("bloom-1000.bin"));
  EXPECT_EQ(bytes.size(), kBloomFileSize);
  ASSERT_OK_AND_ASSIGN(BloomFilter bloom, BloomFilter::Parse(bytes.view(), "bloom-1000.bin"));
  EXPECT_EQ(bloom.bit_count(), 10048);
  EXPECT_EQ(bloom.probes(), 7);
  for (const std::string& key : BloomKeys()) ASSERT_TRUE(bloom.MayContain(key)) << key;
  std::vector<int> false_positives;
  for (int i = 0; i < kBloomKeys; ++i) {
    if (bloom.MayContain("other-" + std::to_string(i))) false_positives.push_back(i);
  }
  EXPECT_EQ(false_positives, kBloomFalsePositives);
}

INSTANTIATE_TEST_SUITE_P(, LsmGoldenTest, ::testing::Values(Source::kGolden, Source::kFresh),
                         [](const ::testing::TestParamInfo<Source>& info) {
                           return info.param == Source::kGolden ? "Golden" : "Fresh";
                         });

// Writes the golden store to $STRATA_WRITE_GOLDEN (an empty or missing directory).
TEST(LsmGoldenWriter, WritesTheGoldenStoreWhenAsked) {
  const char* out = std::getenv("STRATA_WRITE_GOLDEN");
  if (out == nullptr || *out == '\0') GTEST_SKIP() << "set STRATA_WRITE_GOLDEN=<dir> to write";
  std::filesystem::create_directories(out);
  ASSERT_TRUE(std::filesystem::is_empty(out)) << out << " is not empty";
  ASSERT_OK(WriteGoldenStore(out));
}

}  // namespace
}  // namespace strata::lsm
