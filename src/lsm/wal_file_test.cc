// The shard WAL's format 2 segments (WalWriterOptions::file_schema), also Arrow IPC files:
// header, footer, dictionaries, SegmentHasFooter, StopFileSegments, payload checks, replay
// whole, torn or damaged, and after I/O errors. Fixtures in wal_test_util.h.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "lsm/layout.h"
#include "lsm/wal.h"
#include "lsm/wal_test_util.h"
#include "strata/builder.h"
#include "strata/ipc.h"
#include "strata/record_batch.h"
#include "strata/type.h"
#include "support/status_assertions.h"
#include "util/mutex.h"

namespace strata::lsm {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::kPrefix;
using testing::PositionText;
using testing::Replayed;
using testing::SamePosition;
using testing::SegmentId;
using testing::WalFaultTest;
using testing::WalTest;

SchemaPtr FileSchema() { return schema({field("id", int64(), false), field("name", utf8())}); }

// Rows [first, first + n) of FileSchema(); n may be 0.
RecordBatch Rows(int64_t first, int64_t n) {
  Int64Builder ids(int64());
  BinaryBuilder names(utf8());
  for (int64_t id = first; id < first + n; ++id) {
    ids.Append(id);
    EXPECT_TRUE(names.Append("name-" + std::to_string(id * 7)).ok());
  }
  Result<RecordBatch> batch = RecordBatch::Make(FileSchema(), n, {*ids.Finish(), *names.Finish()});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

std::string Stream(const SchemaPtr& s, const std::vector<RecordBatch>& batches) {
  Result<Buffer> stream = ipc::WriteStreamToBuffer(s, batches);
  EXPECT_TRUE(stream.ok()) << stream.status();
  return stream.ok() ? std::string(stream->view()) : std::string();
}

// A tombstones payload: one-column batches of keys.
std::string TombstonePayload(int64_t id) {
  Int64Builder ids(int64());
  ids.Append(id);
  SchemaPtr s = schema({field("id", int64(), false)});
  Result<RecordBatch> batch = RecordBatch::Make(s, 1, {*ids.Finish()});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return Stream(s, {*batch});
}

// What a test appended: payloads in WAL order and the batches with rows in file order.
struct Appended {
  std::vector<std::pair<WalRecordKind, std::string>> records;
  std::vector<RecordBatch> batches;
};

// Appends `count` records starting with number `first`: every third a tombstone record,
// the others rows payloads of one to three batches (some of them empty).
Status AppendMixed(WalWriter& writer, int first, int count, Appended& out) {
  for (int i = first; i < first + count; ++i) {
    if (i % 3 == 2) {
      std::string payload = TombstonePayload(i);
      STRATA_RETURN_IF_ERROR(writer.Append(WalRecordKind::kTombstones, payload).status());
      out.records.emplace_back(WalRecordKind::kTombstones, std::move(payload));
      continue;
    }
    std::vector<RecordBatch> batches;
    for (int b = 0; b < 1 + i % 3; ++b) batches.push_back(Rows(i * 100 + b * 10, (i + b) % 4));
    std::string payload = Stream(FileSchema(), batches);
    STRATA_RETURN_IF_ERROR(writer.Append(WalRecordKind::kRows, payload).status());
    out.records.emplace_back(WalRecordKind::kRows, std::move(payload));
    for (RecordBatch& batch : batches) {
      if (batch.num_rows() > 0) out.batches.push_back(std::move(batch));
    }
  }
  return Status::OK();
}

// The batches of the IPC file in object `key`.
Result<std::vector<RecordBatch>> ReadSegmentFile(ObjectStore& store, const std::string& key) {
  STRATA_ASSIGN_OR_RETURN(Buffer bytes, store.Get(key));
  return ipc::ReadFile(std::move(bytes));
}

void ExpectSameBatches(const std::vector<RecordBatch>& got, const std::vector<RecordBatch>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_TRUE(got[i].Equals(want[i])) << "batch " << i << ":\n"
                                        << got[i].ToString() << "\nwant\n"
                                        << want[i].ToString();
  }
}

WalWriterOptions FileOptions() {
  WalWriterOptions options;
  options.file_schema = FileSchema();
  return options;
}

TEST_P(WalTest, ARolledFileSegmentIsAnIpcFileOfItsRowBatches) {
  std::unique_ptr<WalWriter> writer = OpenWriter(2, 1, FileOptions());
  ASSERT_NE(writer, nullptr);
  ASSERT_OK_AND_ASSIGN(std::string header, ipc::EncodeFileHeader(*FileSchema()));
  const std::string first = Stream(FileSchema(), {Rows(0, 3)});
  ASSERT_OK_AND_ASSIGN(pb::WalPosition end, writer->Append(WalRecordKind::kRows, first));
  // Positions are byte offsets in the object, header included.
  EXPECT_EQ(end.offset(), header.size() + kWalHeaderSize + first.size() + kWalTrailerSize);
  Appended appended;
  appended.records.emplace_back(WalRecordKind::kRows, first);
  appended.batches.push_back(Rows(0, 3));
  ASSERT_OK(AppendMixed(*writer, 0, 12, appended));
  EXPECT_FALSE(writer->SegmentHasFooter(1));  // open

  const std::string key = WalSegmentKey(kPrefix, shard_, 2, 1);
  ASSERT_OK_AND_ASSIGN(Buffer open_bytes, store_->Get(key));
  EXPECT_EQ(open_bytes.view().substr(0, header.size()), header);
  EXPECT_FALSE(ipc::ReadFile(open_bytes).ok());  // no footer yet

  ASSERT_OK_AND_ASSIGN(pb::WalPosition rolled, writer->RollSegment());
  EXPECT_TRUE(SamePosition(rolled, writer->last_position())) << PositionText(rolled);
  EXPECT_TRUE(writer->SegmentHasFooter(1));
  EXPECT_FALSE(writer->SegmentHasFooter(2));
  ASSERT_OK_AND_ASSIGN(std::vector<RecordBatch> batches, ReadSegmentFile(*store_, key));
  ExpectSameBatches(batches, appended.batches);

  // The next segment is a file too once the writer closes.
  Appended later;
  ASSERT_OK(AppendMixed(*writer, 20, 5, later));
  ASSERT_OK(writer->Close());
  EXPECT_TRUE(writer->SegmentHasFooter(2));
  ASSERT_OK_AND_ASSIGN(batches, ReadSegmentFile(*store_, WalSegmentKey(kPrefix, shard_, 2, 2)));
  ExpectSameBatches(batches, later.batches);

  // Replay returns every record of both, tombstones included, and stops at the footers.
  ReplayStats stats;
  std::vector<Replayed> replayed = ReplayAll(MakeWalPosition(2, 0, 0), 2, &stats);
  ASSERT_EQ(replayed.size(), appended.records.size() + later.records.size());
  for (size_t i = 0; i < replayed.size(); ++i) {
    const auto& [kind, payload] = i < appended.records.size()
                                      ? appended.records[i]
                                      : later.records[i - appended.records.size()];
    EXPECT_EQ(replayed[i].kind, kind) << i;
    EXPECT_EQ(replayed[i].payload, payload) << i;
  }
  EXPECT_TRUE(SamePosition(replayed[appended.records.size() - 1].end, rolled));
  EXPECT_EQ(stats.torn_tails, 0);
  EXPECT_EQ(stats.segments, 2);
  // Replay from the start of a segment begins after its header; from a record's end
  // position, with the record after it.
  EXPECT_EQ(ReplayAll(MakeWalPosition(2, 2, 0), 2).size(), later.records.size());
  std::vector<Replayed> tail = ReplayAll(replayed[2].end, 2);
  ASSERT_EQ(tail.size(), replayed.size() - 3);
  EXPECT_EQ(tail[0].payload, replayed[3].payload);
}

TEST_P(WalTest, AnEmptyFileSegmentEndsAsAFileWithoutBatches) {
  std::unique_ptr<WalWriter> writer = OpenWriter(1, 1, FileOptions());
  ASSERT_NE(writer, nullptr);
  ASSERT_OK_AND_ASSIGN(pb::WalPosition rolled, writer->RollSegment());
  EXPECT_TRUE(SamePosition(rolled, MakeWalPosition(1, 1, 0))) << PositionText(rolled);
  EXPECT_TRUE(writer->SegmentHasFooter(1));
  ASSERT_OK_AND_ASSIGN(std::vector<RecordBatch> batches,
                       ReadSegmentFile(*store_, WalSegmentKey(kPrefix, shard_, 1, 1)));
  EXPECT_TRUE(batches.empty());
  // Only zero-row batches: a file without batches too.
  ASSERT_OK(writer->Append(WalRecordKind::kRows, Stream(FileSchema(), {Rows(0, 0)})).status());
  ASSERT_OK(writer->Close());
  ASSERT_OK_AND_ASSIGN(batches, ReadSegmentFile(*store_, WalSegmentKey(kPrefix, shard_, 1, 2)));
  EXPECT_TRUE(batches.empty());
  ReplayStats stats;
  EXPECT_EQ(ReplayAll(MakeWalPosition(1, 0, 0), 1, &stats).size(), 1u);
  EXPECT_EQ(stats.torn_tails, 0);
}

TEST_P(WalTest, SizeLimitRollsEndFileSegmentsWithFooters) {
  WalWriterOptions options = FileOptions();
  options.max_segment_bytes = 4096;
  std::unique_ptr<WalWriter> writer = OpenWriter(1, 1, options);
  ASSERT_NE(writer, nullptr);
  Appended appended;
  ASSERT_OK(AppendMixed(*writer, 0, 40, appended));
  const std::vector<SegmentId> ids = SegmentIds();
  ASSERT_GT(ids.size(), 2u);
  for (size_t i = 0; i + 1 < ids.size(); ++i) {
    EXPECT_TRUE(writer->SegmentHasFooter(ids[i].second)) << ids[i].second;
  }
  EXPECT_FALSE(writer->SegmentHasFooter(ids.back().second));
  ASSERT_OK(writer->Close());
  std::vector<RecordBatch> all;
  for (const auto& [epoch, segment] : ids) {
    SCOPED_TRACE("segment " + std::to_string(segment));
    EXPECT_TRUE(writer->SegmentHasFooter(segment));
    ASSERT_OK_AND_ASSIGN(std::vector<RecordBatch> batches,
                         ReadSegmentFile(*store_, WalSegmentKey(kPrefix, shard_, epoch, segment)));
    for (RecordBatch& batch : batches) all.push_back(std::move(batch));
  }
  ExpectSameBatches(all, appended.batches);
  ReplayStats stats;
  EXPECT_EQ(ReplayAll(MakeWalPosition(1, 0, 0), 1, &stats).size(), appended.records.size());
  EXPECT_EQ(stats.torn_tails, 0);
}

TEST_P(WalTest, ConcurrentAppendsToFileSegmentsNameEveryBatch) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 40;
  WalWriterOptions options = FileOptions();
  options.max_segment_bytes = 16 << 10;
  std::unique_ptr<WalWriter> writer = OpenWriter(1, 1, options);
  ASSERT_NE(writer, nullptr);
  std::vector<Status> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread && errors[t].ok(); ++i) {
        const int64_t id = t * 1000 + i;
        errors[t] =
            writer->Append(WalRecordKind::kRows, Stream(FileSchema(), {Rows(id, 1)})).status();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const Status& error : errors) ASSERT_OK(error);
  ASSERT_OK(writer->Close());
  // Each file holds the batches of its segment's records, in WAL order.
  std::vector<int64_t> from_files;
  for (const auto& [epoch, segment] : SegmentIds()) {
    ASSERT_OK_AND_ASSIGN(std::vector<RecordBatch> batches,
                         ReadSegmentFile(*store_, WalSegmentKey(kPrefix, shard_, epoch, segment)));
    for (const RecordBatch& batch : batches) {
      ASSERT_EQ(batch.num_rows(), 1);
      from_files.push_back(batch.column(0).Value<int64_t>(0));
    }
  }
  std::vector<int64_t> from_replay;
  for (const Replayed& r : ReplayAll(MakeWalPosition(1, 0, 0), 1)) {
    ASSERT_OK_AND_ASSIGN(std::vector<RecordBatch> batches,
                         ipc::ReadStream(Buffer::Copy(r.payload)));
    ASSERT_EQ(batches.size(), 1u);
    from_replay.push_back(batches[0].column(0).Value<int64_t>(0));
  }
  EXPECT_EQ(from_files.size(), static_cast<size_t>(kThreads * kPerThread));
  EXPECT_EQ(from_files, from_replay);
}

TEST_P(WalTest, ReplayOfAFileSegmentStopsAtItsFooterWholeOrTorn) {
  std::unique_ptr<WalWriter> writer = OpenWriter(1, 1, FileOptions());
  ASSERT_NE(writer, nullptr);
  Appended appended;
  ASSERT_OK(AppendMixed(*writer, 0, 6, appended));
  ASSERT_OK_AND_ASSIGN(pb::WalPosition rolled, writer->RollSegment());
  ASSERT_OK(writer->Append(WalRecordKind::kRows, Stream(FileSchema(), {Rows(50, 2)})).status());
  ASSERT_OK(writer->Close());
  const std::string key = WalSegmentKey(kPrefix, shard_, 1, 1);
  ASSERT_OK_AND_ASSIGN(Buffer whole, store_->Get(key));
  const std::string bytes(whole.view());
  ASSERT_GT(bytes.size(), rolled.offset());
  for (size_t cut = rolled.offset(); cut <= bytes.size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    ASSERT_OK(store_->Put(key, std::string_view(bytes).substr(0, cut)));
    ReplayStats stats;
    std::vector<Replayed> replayed = ReplayAll(MakeWalPosition(1, 0, 0), 1, &stats);
    ASSERT_EQ(replayed.size(), appended.records.size() + 1);
    EXPECT_EQ(replayed[appended.records.size() - 1].payload, appended.records.back().second);
    EXPECT_TRUE(SamePosition(replayed[appended.records.size() - 1].end, rolled));
    EXPECT_EQ(stats.torn_tails, 0);
    // From the segment's last record on, nothing of it is replayed.
    EXPECT_EQ(ReplayAll(rolled, 1).size(), 1u);
  }
}

TEST_P(WalTest, ATornLastRecordOfAFileSegmentIsDropped) {
  std::unique_ptr<WalWriter> writer = OpenWriter(1, 1, FileOptions());
  ASSERT_NE(writer, nullptr);
  std::vector<pb::WalPosition> positions;
  std::vector<std::string> payloads;
  for (int i = 0; i < 4; ++i) {
    payloads.push_back(Stream(FileSchema(), {Rows(i * 10, i + 1)}));
    ASSERT_OK_AND_ASSIGN(pb::WalPosition end, writer->Append(WalRecordKind::kRows, payloads[i]));
    positions.push_back(end);
  }
  // The open segment has no footer: what a crash leaves.
  const std::string key = WalSegmentKey(kPrefix, shard_, 1, 1);
  ASSERT_OK_AND_ASSIGN(Buffer whole, store_->Get(key));
  const std::string bytes(whole.view());
  ASSERT_EQ(bytes.size(), positions.back().offset());
  for (size_t cut = positions[2].offset(); cut < bytes.size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    ASSERT_OK(store_->Put(key, std::string_view(bytes).substr(0, cut)));
    ReplayStats stats;
    std::vector<Replayed> replayed = ReplayAll(MakeWalPosition(1, 0, 0), 1, &stats);
    ASSERT_EQ(replayed.size(), 3u);
    EXPECT_EQ(replayed.back().payload, payloads[2]);
    EXPECT_EQ(stats.torn_tails, cut == positions[2].offset() ? 0 : 1);
  }
  // A crash during the segment's first append may cut its header short: nothing of it was
  // acknowledged, so that is a torn tail too.
  ASSERT_OK_AND_ASSIGN(std::string header, ipc::EncodeFileHeader(*FileSchema()));
  const size_t first_end = positions[0].offset();
  for (size_t cut = 1; cut < first_end; ++cut) {
    SCOPED_TRACE("first record cut at " + std::to_string(cut));
    ASSERT_OK(store_->Put(key, std::string_view(bytes).substr(0, cut)));
    ReplayStats stats;
    EXPECT_TRUE(ReplayAll(MakeWalPosition(1, 0, 0), 1, &stats).empty());
    EXPECT_EQ(stats.torn_tails, cut == header.size() ? 0 : 1);
  }
}

TEST_P(WalTest, DamageInAFileSegmentIsCorruptionNamingTheKeyAndOffset) {
  std::unique_ptr<WalWriter> writer = OpenWriter(1, 1, FileOptions());
  ASSERT_NE(writer, nullptr);
  std::vector<pb::WalPosition> positions;
  for (int i = 0; i < 4; ++i) {
    ASSERT_OK_AND_ASSIGN(pb::WalPosition end,
                         writer->Append(WalRecordKind::kRows, Stream(FileSchema(), {Rows(i, 2)})));
    positions.push_back(end);
  }
  ASSERT_OK(writer->RollSegment().status());
  const std::string key = WalSegmentKey(kPrefix, shard_, 1, 1);
  ASSERT_OK_AND_ASSIGN(Buffer whole, store_->Get(key));
  const std::string bytes(whole.view());
  auto expect_corruption = [&](const std::string& damaged, std::optional<uint64_t> offset,
                               int delivered) {
    ASSERT_OK(store_->Put(key, damaged));
    int seen = 0;
    Result<ReplayStats> stats =
        ReplayWal(*store_, kPrefix, shard_, MakeWalPosition(1, 0, 0), 1, [&](const WalRecord&) {
          ++seen;
          return Status::OK();
        });
    ASSERT_TRUE(stats.status().IsCorruption()) << stats.status();
    EXPECT_THAT(stats.status().message(), HasSubstr(key));
    if (offset.has_value()) {
      EXPECT_THAT(stats.status().message(), HasSubstr("offset " + std::to_string(*offset)));
    }
    EXPECT_EQ(seen, delivered);
  };
  // Every byte of record 1 (of 0..3), and of the last record, which the footer follows.
  for (int record : {1, 3}) {
    const uint64_t start = positions[record - 1].offset();
    for (size_t at = start; at < positions[record].offset(); ++at) {
      SCOPED_TRACE("byte " + std::to_string(at));
      std::string damaged = bytes;
      damaged[at] = static_cast<char>(damaged[at] ^ 0x21);
      expect_corruption(damaged, start, record);
    }
  }
  // The header: its magic (read as a format 1 record), the schema message's marker and
  // its length (too long for the object; a little off, so records are sought elsewhere).
  const std::vector<std::pair<size_t, std::optional<uint64_t>>> header_damage = {
      {3, 0}, {8, 8}, {11, 8}, {13, 8}, {15, 8}, {12, std::nullopt}};
  for (const auto& [at, offset] : header_damage) {
    SCOPED_TRACE("header byte " + std::to_string(at));
    std::string damaged = bytes;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x40);
    expect_corruption(damaged, offset, 0);
  }
}

TEST_P(WalTest, FileSegmentsRejectPayloadsTheyCannotIndex) {
  std::unique_ptr<WalWriter> writer = OpenWriter(1, 1, FileOptions());
  ASSERT_NE(writer, nullptr);
  const std::string good = Stream(FileSchema(), {Rows(0, 2)});
  const SchemaPtr other = schema({field("id", int64(), false), field("name", int64())});
  Int64Builder a(int64());
  Int64Builder b(int64());
  a.Append(1);
  b.Append(2);
  ASSERT_OK_AND_ASSIGN(RecordBatch other_batch,
                       RecordBatch::Make(other, 1, {*a.Finish(), *b.Finish()}));
  const std::vector<std::pair<WalRecordKind, std::string>> bad = {
      {WalRecordKind::kRows, good + "x"},                        // length not a multiple of 8
      {WalRecordKind::kRows, good.substr(0, good.size() - 16)},  // cut inside a message
      {WalRecordKind::kRows, std::string(64, 'z')},              // not a stream
      {WalRecordKind::kRows, Stream(other, {other_batch})},      // another schema
      {WalRecordKind::kTombstones, "odd"},                       // length not a multiple of 8
  };
  for (const auto& [kind, payload] : bad) {
    SCOPED_TRACE(payload.size());
    Result<pb::WalPosition> end = writer->Append(kind, payload);
    EXPECT_TRUE(end.status().IsInvalidArgument()) << end.status();
  }
  ASSERT_OK_AND_ASSIGN(Buffer empty, store_->Get(WalSegmentKey(kPrefix, shard_, 1, 1)));
  EXPECT_EQ(empty.size(), 0);  // nothing written
  ASSERT_OK(writer->Append(WalRecordKind::kRows, good).status());
  ASSERT_OK(writer->Close());
  EXPECT_EQ(ReplayAll(MakeWalPosition(1, 0, 0), 1).size(), 1u);
}

// ---------------------------------------------------------------------------------------
// File segments of a schema with dictionary columns

// role: dictionary<int8, utf8> (dictionary id 0); tags: list of dictionary<int16, utf8>
// (id 1).
SchemaPtr DictionarySchema() {
  return schema({field("id", int64(), false), field("role", dictionary(int8(), utf8())),
                 field("tags", list(field("item", dictionary(int16(), utf8()))))});
}

// A dictionary that only grows by appending values, in the order they are first seen (what
// the shard writer keeps per dictionary column).
class CanonicalDictionary {
 public:
  int64_t IndexOf(const std::string& value) {
    auto [it, inserted] = index_.try_emplace(value, static_cast<int64_t>(values_.size()));
    if (inserted) values_.push_back(value);
    return it->second;
  }
  int64_t size() const { return static_cast<int64_t>(values_.size()); }
  // The first `n` values.
  Array Prefix(int64_t n) const {
    BinaryBuilder out(utf8());
    for (int64_t i = 0; i < n; ++i) EXPECT_TRUE(out.Append(values_[i]).ok());
    Result<Array> array = out.Finish();
    EXPECT_TRUE(array.ok()) << array.status();
    return *array;
  }

 private:
  std::vector<std::string> values_;
  std::map<std::string, int64_t> index_;
};

// Indices (-1: null) into the first `known` values of a canonical dictionary, as an array
// of dictionary `type`.
Array DictionaryColumn(const DataTypePtr& type, const CanonicalDictionary& canonical, int64_t known,
                       const std::vector<int64_t>& rows) {
  Result<Array> indices = Array();
  if (type->index_type()->id() == TypeId::kInt8) {
    Int8Builder b(int8());
    for (int64_t r : rows) r < 0 ? b.AppendNull() : b.Append(static_cast<int8_t>(r));
    indices = b.Finish();
  } else {
    Int16Builder b(int16());
    for (int64_t r : rows) r < 0 ? b.AppendNull() : b.Append(static_cast<int16_t>(r));
    indices = b.Finish();
  }
  EXPECT_TRUE(indices.ok()) << indices.status();
  ArrayData data = *indices->data();
  data.type = type;
  data.dictionary = canonical.Prefix(known).data();
  Result<Array> out = Array::Make(std::move(data));
  EXPECT_TRUE(out.ok()) << out.status();
  return *out;
}

// The dictionaries as one writer knew them when it encoded a payload.
struct DictionaryState {
  CanonicalDictionary roles;
  CanonicalDictionary tags;
};

// Rows [first, first + n) of DictionarySchema() for each of `counts`, encoded against the
// canonical dictionaries (adding the values they see first), then made into batches that
// all carry the dictionaries as they stand after the last row: a payload whose batches
// share their dictionaries, so its stream sends each one once and whole.
std::vector<RecordBatch> DictionaryBatches(DictionaryState& state, int64_t first,
                                           const std::vector<int64_t>& counts) {
  const SchemaPtr s = DictionarySchema();
  struct Rows {
    std::vector<int64_t> ids;
    std::vector<int64_t> roles;
    std::vector<int32_t> offsets = {0};
    std::vector<int64_t> tags;
  };
  std::vector<Rows> encoded;
  int64_t id = first;
  for (int64_t n : counts) {
    Rows& rows = encoded.emplace_back();
    for (int64_t r = 0; r < n; ++r, ++id) {
      rows.ids.push_back(id);
      rows.roles.push_back(
          id % 6 == 5 ? -1 : state.roles.IndexOf("role-" + std::to_string(id * 5 % (3 + id / 8))));
      for (int64_t k = 0; k < id % 4; ++k) {
        rows.tags.push_back(k == 2 ? -1
                                   : state.tags.IndexOf("tag-" + std::to_string((id + k) / 3)));
      }
      rows.offsets.push_back(static_cast<int32_t>(rows.tags.size()));
    }
  }
  const int64_t known_roles = state.roles.size();
  const int64_t known_tags = state.tags.size();
  std::vector<RecordBatch> batches;
  for (const Rows& rows : encoded) {
    const auto n = static_cast<int64_t>(rows.ids.size());
    Int64Builder ids(int64());
    for (int64_t v : rows.ids) ids.Append(v);
    Int32Builder offsets(int32());
    for (int32_t v : rows.offsets) offsets.Append(v);
    const DataTypePtr& list_type = s->field(2)->type();
    ArrayData list;
    list.type = list_type;
    list.length = n;
    list.buffers = {Buffer(), (*offsets.Finish()).data()->buffers[1]};
    list.children = {
        DictionaryColumn(list_type->fields()[0]->type(), state.tags, known_tags, rows.tags).data()};
    Result<Array> tags = Array::Make(std::move(list));
    EXPECT_TRUE(tags.ok()) << tags.status();
    Result<RecordBatch> batch = RecordBatch::Make(
        s, n,
        {*ids.Finish(), DictionaryColumn(s->field(1)->type(), state.roles, known_roles, rows.roles),
         *tags});
    EXPECT_TRUE(batch.ok()) << batch.status();
    batches.push_back(*batch);
  }
  return batches;
}

WalWriterOptions DictionaryFileOptions() {
  WalWriterOptions options;
  options.file_schema = DictionarySchema();
  return options;
}

// The batches of each segment file, concatenated in segment order, and how long the
// dictionaries of each file are.
struct SegmentFiles {
  std::vector<RecordBatch> batches;
  std::vector<std::pair<int64_t, int64_t>> dictionary_lengths;  // (roles, tags) per file
};

Result<SegmentFiles> ReadSegmentFiles(ObjectStore& store, const std::vector<WalSegment>& segments) {
  SegmentFiles out;
  for (const WalSegment& segment : segments) {
    STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> batches, ReadSegmentFile(store, segment.key));
    if (!batches.empty()) {
      out.dictionary_lengths.emplace_back(
          batches[0].column(1).dictionary().length(),
          batches[0].column(2).values_array().dictionary().length());
    }
    for (RecordBatch& batch : batches) out.batches.push_back(std::move(batch));
  }
  return out;
}

TEST_P(WalTest, ADictionaryFileSegmentNamesTheLongestDictionaryOfEachId) {
  std::unique_ptr<WalWriter> writer = OpenWriter(1, 1, DictionaryFileOptions());
  ASSERT_NE(writer, nullptr);
  // A segment ended before any record is a file without batches or dictionaries.
  ASSERT_OK(writer->RollSegment().status());
  ASSERT_OK_AND_ASSIGN(std::vector<RecordBatch> none,
                       ReadSegmentFile(*store_, WalSegmentKey(kPrefix, shard_, 1, 1)));
  EXPECT_TRUE(none.empty());

  // Payloads are encoded in pairs (a, b), b after a, so b's dictionaries extend a's; the
  // pairs are appended b first, as two concurrent writers may: every second record then
  // carries shorter dictionaries than the one before it.
  DictionaryState state;
  Appended appended;
  std::vector<std::pair<int64_t, int64_t>> dictionary_lengths;  // of segments 2 and 3
  int64_t id = 0;
  int shorter_after_longer = 0;  // rows records with shorter dictionaries than one before
  for (int segment = 2; segment <= 3; ++segment) {
    int64_t longest = 0;
    for (int pair = 0; pair < 4; ++pair) {
      std::vector<std::vector<RecordBatch>> payloads;
      for (const std::vector<int64_t>& counts :
           {std::vector<int64_t>{3}, std::vector<int64_t>{2, 0, pair + 1}}) {
        payloads.push_back(DictionaryBatches(state, id, counts));
        for (int64_t n : counts) id += n;
      }
      for (int k : {1, 0}) {
        const int64_t tags = payloads[k][0].column(2).values_array().dictionary().length();
        if (tags < longest) ++shorter_after_longer;
        longest = std::max(longest, tags);
        std::string payload = Stream(DictionarySchema(), payloads[k]);
        ASSERT_OK(writer->Append(WalRecordKind::kRows, payload).status());
        appended.records.emplace_back(WalRecordKind::kRows, std::move(payload));
        for (const RecordBatch& batch : payloads[k]) {
          if (batch.num_rows() > 0) appended.batches.push_back(batch);
        }
      }
      std::string tombstones = TombstonePayload(id);
      ASSERT_OK(writer->Append(WalRecordKind::kTombstones, tombstones).status());
      appended.records.emplace_back(WalRecordKind::kTombstones, std::move(tombstones));
    }
    dictionary_lengths.emplace_back(state.roles.size(), state.tags.size());
    if (segment == 2) ASSERT_OK(writer->RollSegment().status());
  }
  ASSERT_OK(writer->Close());
  EXPECT_TRUE(writer->SegmentHasFooter(2));
  EXPECT_TRUE(writer->SegmentHasFooter(3));
  // The data must exercise both dictionaries growing in each segment, and records that
  // follow one with a longer dictionary.
  ASSERT_GT(dictionary_lengths[0].first, 1);
  ASSERT_GT(dictionary_lengths[1].first, dictionary_lengths[0].first);
  ASSERT_GT(dictionary_lengths[1].second, dictionary_lengths[0].second);
  ASSERT_GE(shorter_after_longer, 6);

  ASSERT_OK_AND_ASSIGN(std::vector<WalSegment> segments, ListWalSegments(*store_, kPrefix, shard_));
  ASSERT_EQ(segments.size(), 3u);
  ASSERT_OK_AND_ASSIGN(SegmentFiles files, ReadSegmentFiles(*store_, segments));
  // Every batch decodes to the values appended (Equals compares decoded dictionary
  // values), through the dictionaries as they stood at the end of its segment.
  ExpectSameBatches(files.batches, appended.batches);
  EXPECT_EQ(files.dictionary_lengths, dictionary_lengths);
  for (const WalSegment& segment : segments) {
    ASSERT_OK_AND_ASSIGN(Buffer bytes, store_->Get(segment.key));
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<ipc::FileReader> reader,
                         ipc::FileReader::Open(ipc::SourceFromBuffer(bytes)));
    EXPECT_EQ(reader->num_dictionaries(), segment.segment == 1 ? 0 : 2) << segment.key;
  }

  // Replay hands back every record, each payload decoding with its own dictionaries.
  ReplayStats stats;
  std::vector<Replayed> replayed = ReplayAll(MakeWalPosition(1, 0, 0), 1, &stats);
  ASSERT_EQ(replayed.size(), appended.records.size());
  std::vector<RecordBatch> from_replay;
  for (size_t i = 0; i < replayed.size(); ++i) {
    EXPECT_EQ(replayed[i].kind, appended.records[i].first) << i;
    EXPECT_EQ(replayed[i].payload, appended.records[i].second) << i;
    if (replayed[i].kind != WalRecordKind::kRows) continue;
    ASSERT_OK_AND_ASSIGN(std::vector<RecordBatch> batches,
                         ipc::ReadStream(Buffer::Copy(replayed[i].payload)));
    for (RecordBatch& batch : batches) {
      if (batch.num_rows() > 0) from_replay.push_back(std::move(batch));
    }
  }
  ExpectSameBatches(from_replay, appended.batches);
  EXPECT_EQ(stats.torn_tails, 0);
}

TEST_P(WalTest, ConcurrentAppendsWithGrowingDictionariesReadBackFromTheFiles) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 15;
  WalWriterOptions options = DictionaryFileOptions();
  options.max_segment_bytes = 16 << 10;
  std::unique_ptr<WalWriter> writer = OpenWriter(1, 1, options);
  ASSERT_NE(writer, nullptr);
  // Each thread encodes its payload against the shared canonical dictionaries under a
  // lock, then appends outside it: records land in the WAL in any order of their
  // dictionaries' growth.
  Mutex mu;
  DictionaryState state;
  int64_t next_id = 0;
  std::vector<Status> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread && errors[t].ok(); ++i) {
        std::string payload;
        {
          MutexLock lock(mu);
          payload = Stream(DictionarySchema(), DictionaryBatches(state, next_id, {1 + i % 2}));
          next_id += 1 + i % 2;
        }
        errors[t] = writer->Append(WalRecordKind::kRows, payload).status();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const Status& error : errors) ASSERT_OK(error);
  ASSERT_OK(writer->Close());
  ASSERT_OK_AND_ASSIGN(std::vector<WalSegment> segments, ListWalSegments(*store_, kPrefix, shard_));
  ASSERT_GT(segments.size(), 1u);
  ASSERT_OK_AND_ASSIGN(SegmentFiles files, ReadSegmentFiles(*store_, segments));
  std::vector<RecordBatch> from_replay;
  for (const Replayed& r : ReplayAll(MakeWalPosition(1, 0, 0), 1)) {
    ASSERT_OK_AND_ASSIGN(std::vector<RecordBatch> batches,
                         ipc::ReadStream(Buffer::Copy(r.payload)));
    for (RecordBatch& batch : batches) from_replay.push_back(std::move(batch));
  }
  EXPECT_EQ(from_replay.size(), files.batches.size());
  ExpectSameBatches(files.batches, from_replay);
}

TEST_P(WalTest, DictionaryFileSegmentsRejectDeltasAndMissingDictionaries) {
  std::unique_ptr<WalWriter> writer = OpenWriter(1, 1, DictionaryFileOptions());
  ASSERT_NE(writer, nullptr);
  DictionaryState state;
  // Two batches encoded one after the other: the second's dictionaries extend the first's,
  // so the stream sends them as deltas.
  std::vector<RecordBatch> first = DictionaryBatches(state, 0, {4});
  std::vector<RecordBatch> second = DictionaryBatches(state, 4, {6});
  const std::string delta = Stream(DictionarySchema(), {first[0], second[0]});
  ASSERT_OK_AND_ASSIGN(std::vector<ipc::MessageLayout> delta_layout, ipc::ScanStreamLayout(delta));
  ASSERT_TRUE(std::any_of(delta_layout.begin(), delta_layout.end(),
                          [](const ipc::MessageLayout& m) { return m.is_delta; }));
  Result<pb::WalPosition> end = writer->Append(WalRecordKind::kRows, delta);
  EXPECT_TRUE(end.status().IsInvalidArgument()) << end.status();
  EXPECT_THAT(end.status().message(), HasSubstr("delta"));

  // A stream whose dictionary batches were cut out: its batch has nothing to decode with.
  const std::string whole = Stream(DictionarySchema(), second);
  ASSERT_OK_AND_ASSIGN(std::vector<ipc::MessageLayout> layout, ipc::ScanStreamLayout(whole));
  std::string stripped;
  for (const ipc::MessageLayout& m : layout) {
    if (m.kind == ipc::MessageLayout::Kind::kDictionaryBatch) continue;
    stripped += whole.substr(m.offset, m.metadata_length + m.body_length);
  }
  stripped += std::string("\xFF\xFF\xFF\xFF\0\0\0\0", 8);
  ASSERT_LT(stripped.size(), whole.size());
  end = writer->Append(WalRecordKind::kRows, stripped);
  EXPECT_TRUE(end.status().IsInvalidArgument()) << end.status();
  EXPECT_THAT(end.status().message(), HasSubstr("dictionary 0"));

  ASSERT_OK_AND_ASSIGN(Buffer empty, store_->Get(WalSegmentKey(kPrefix, shard_, 1, 1)));
  EXPECT_EQ(empty.size(), 0);  // nothing written
  ASSERT_OK(writer->Append(WalRecordKind::kRows, whole).status());
  ASSERT_OK(writer->Close());
  ASSERT_OK_AND_ASSIGN(std::vector<RecordBatch> batches,
                       ReadSegmentFile(*store_, WalSegmentKey(kPrefix, shard_, 1, 1)));
  ExpectSameBatches(batches, second);
  EXPECT_EQ(ReplayAll(MakeWalPosition(1, 0, 0), 1).size(), 1u);
}

TEST_P(WalTest, AfterStopFileSegmentsNoSegmentGetsAFooterAndPayloadsAreNotChecked) {
  std::unique_ptr<WalWriter> writer = OpenWriter(1, 1, DictionaryFileOptions());
  ASSERT_NE(writer, nullptr);
  DictionaryState state;
  std::vector<RecordBatch> first = DictionaryBatches(state, 0, {3});
  std::vector<RecordBatch> second = DictionaryBatches(state, 3, {5});
  std::vector<std::string> payloads = {Stream(DictionarySchema(), first)};
  ASSERT_OK(writer->Append(WalRecordKind::kRows, payloads[0]).status());
  writer->StopFileSegments();
  // A payload with delta dictionaries, refused before, is now just a record.
  payloads.push_back(Stream(DictionarySchema(), {first[0], second[0]}));
  ASSERT_OK(writer->Append(WalRecordKind::kRows, payloads[1]).status());
  ASSERT_OK(writer->RollSegment().status());
  EXPECT_FALSE(writer->SegmentHasFooter(1));
  ASSERT_OK_AND_ASSIGN(Buffer open_bytes, store_->Get(WalSegmentKey(kPrefix, shard_, 1, 1)));
  EXPECT_EQ(open_bytes.view().substr(0, 6), "ARROW1");  // it had started as a file
  EXPECT_FALSE(ipc::ReadFile(open_bytes).ok());

  payloads.push_back(Stream(DictionarySchema(), second));
  ASSERT_OK(writer->Append(WalRecordKind::kRows, payloads[2]).status());
  ASSERT_OK(writer->Close());
  EXPECT_FALSE(writer->SegmentHasFooter(2));
  ASSERT_OK_AND_ASSIGN(Buffer later, store_->Get(WalSegmentKey(kPrefix, shard_, 1, 2)));
  EXPECT_EQ(later.size(), kWalHeaderSize + payloads[2].size() + kWalTrailerSize);  // format 1

  ReplayStats stats;
  std::vector<Replayed> replayed = ReplayAll(MakeWalPosition(1, 0, 0), 1, &stats);
  ASSERT_EQ(replayed.size(), payloads.size());
  for (size_t i = 0; i < payloads.size(); ++i) EXPECT_EQ(replayed[i].payload, payloads[i]) << i;
  EXPECT_EQ(stats.torn_tails, 0);
}

TEST_P(WalFaultTest, ASegmentAbandonedAfterAWriteErrorGetsNoFooter) {
  WalWriterOptions options;
  options.file_schema = FileSchema();
  Result<std::unique_ptr<WalWriter>> opened =
      WalWriter::Open(store_, std::string(kPrefix), shard_, 1, 1, options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<WalWriter> writer = std::move(*opened);
  const std::string a = Stream(FileSchema(), {Rows(0, 2)});
  ASSERT_OK(writer->Append(WalRecordKind::kRows, a).status());
  fault_->FailNth(io::FaultOp::kWrite, 1);
  EXPECT_TRUE(writer->Append(WalRecordKind::kRows, Stream(FileSchema(), {Rows(5, 1)}))
                  .status()
                  .IsIOError());
  EXPECT_FALSE(writer->SegmentHasFooter(1));
  // The next segment starts with a header of its own and ends with a footer.
  const std::string b = Stream(FileSchema(), {Rows(10, 3)});
  ASSERT_OK_AND_ASSIGN(pb::WalPosition next, writer->Append(WalRecordKind::kRows, b));
  EXPECT_EQ(next.segment(), 2u);
  ASSERT_OK(writer->RollSegment().status());
  EXPECT_FALSE(writer->SegmentHasFooter(1));
  EXPECT_TRUE(writer->SegmentHasFooter(2));
  ASSERT_OK_AND_ASSIGN(Buffer abandoned, store_->Get(WalSegmentKey(kPrefix, shard_, 1, 1)));
  EXPECT_FALSE(ipc::ReadFile(abandoned).ok());
  ASSERT_OK_AND_ASSIGN(Buffer second, store_->Get(WalSegmentKey(kPrefix, shard_, 1, 2)));
  ASSERT_OK_AND_ASSIGN(std::vector<RecordBatch> batches, ipc::ReadFile(second));
  ExpectSameBatches(batches, {Rows(10, 3)});

  // A footer that cannot be written: the roll fails, the segment has no footer, and the
  // next append starts the next segment.
  ASSERT_OK(writer->Append(WalRecordKind::kRows, a).status());
  fault_->FailNth(io::FaultOp::kWrite, 1);
  EXPECT_TRUE(writer->RollSegment().status().IsIOError());
  EXPECT_FALSE(writer->SegmentHasFooter(3));
  ASSERT_OK_AND_ASSIGN(next, writer->Append(WalRecordKind::kRows, b));
  EXPECT_EQ(next.segment(), 4u);
  // A failed sync of the footer, at Close.
  fault_->FailNth(io::FaultOp::kSync, 1);
  EXPECT_TRUE(writer->Close().IsIOError());
  EXPECT_FALSE(writer->SegmentHasFooter(4));
  EXPECT_EQ(fault_->injected_faults(), 3);
  EXPECT_THAT(ReplayPayloads(), ElementsAre(a, b, a, b));
}

}  // namespace
}  // namespace strata::lsm
