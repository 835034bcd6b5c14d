// The shard WAL (wal.h): framing, group commit, segment rolls, replay with torn tails and
// corruption, fencing, injected I/O errors and covered-segment deletion, over the memory
// store and the local file store. Format 2 (IPC file) segments: wal_file_test.cc.
#include "lsm/wal.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "lsm/layout.h"
#include "lsm/wal_test_util.h"
#include "support/status_assertions.h"
#include "util/checksum.h"
#include "util/little_endian.h"
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

// Deterministic payloads of varied sizes with every byte value.
std::string Payload(int i) {
  std::string out = "record-" + std::to_string(i) + ":";
  const size_t size = out.size() + static_cast<size_t>(i * 37 % 211);
  for (size_t j = out.size(); j < size; ++j) out.push_back(static_cast<char>((i + j * 13) % 256));
  return out;
}

TEST(WalRecordTest, EncodingFollowsTheDocumentedLayout) {
  const std::string record = EncodeWalRecord(WalRecordKind::kTombstones, 7, 3, "payload");
  ASSERT_EQ(record.size(), kWalHeaderSize + 7 + kWalTrailerSize);
  EXPECT_EQ(record.substr(0, 4), "SWAL");
  EXPECT_EQ(DecodeFixed32(record.data() + 4), 2u);
  EXPECT_EQ(DecodeFixed64(record.data() + 8), 7u);
  EXPECT_EQ(DecodeFixed64(record.data() + 16), 3u);
  EXPECT_EQ(DecodeFixed32(record.data() + 24), 7u);
  EXPECT_EQ(DecodeFixed32(record.data() + 28), 0u);
  EXPECT_EQ(record.substr(kWalHeaderSize, 7), "payload");
  EXPECT_EQ(DecodeFixed64(record.data() + kWalHeaderSize + 7),
            XxHash3_64(std::string_view(record).substr(0, kWalHeaderSize + 7)));
}

TEST_P(WalTest, RecordsRoundTripAcrossSegmentsInOrder) {
  WalWriterOptions options;
  options.max_segment_bytes = 1500;
  std::unique_ptr<WalWriter> writer = OpenWriter(4, 1, options);
  ASSERT_NE(writer, nullptr);
  EXPECT_EQ(writer->epoch(), 4u);
  EXPECT_TRUE(SamePosition(writer->last_position(), MakeWalPosition(4, 1, 0)));
  std::vector<pb::WalPosition> positions;
  for (int i = 0; i < 120; ++i) {
    WalRecordKind kind = i % 3 == 0 ? WalRecordKind::kTombstones : WalRecordKind::kRows;
    ASSERT_OK_AND_ASSIGN(pb::WalPosition end, writer->Append(kind, Payload(i)));
    if (!positions.empty()) {
      EXPECT_LT(CompareWalPositions(positions.back(), end), 0) << PositionText(end);
    }
    positions.push_back(end);
    EXPECT_TRUE(SamePosition(writer->last_position(), end));
  }
  ASSERT_OK(writer->Close());
  EXPECT_TRUE(writer->Append(WalRecordKind::kRows, "late").status().IsInvalidArgument());
  EXPECT_GT(SegmentIds().size(), 5u);
  for (const auto& [epoch, segment] : SegmentIds()) EXPECT_EQ(epoch, 4u);

  ReplayStats stats;
  std::vector<Replayed> replayed = ReplayAll(MakeWalPosition(0, 0, 0), 4, &stats);
  ASSERT_EQ(replayed.size(), positions.size());
  for (size_t i = 0; i < replayed.size(); ++i) {
    EXPECT_EQ(replayed[i].payload, Payload(static_cast<int>(i))) << i;
    EXPECT_EQ(replayed[i].kind, i % 3 == 0 ? WalRecordKind::kTombstones : WalRecordKind::kRows);
    EXPECT_TRUE(SamePosition(replayed[i].end, positions[i])) << i;
  }
  EXPECT_EQ(stats.records, 120);
  EXPECT_EQ(stats.torn_tails, 0);
  EXPECT_EQ(stats.segments, static_cast<int64_t>(SegmentIds().size()));
  EXPECT_TRUE(SamePosition(stats.end, positions.back()));
  int64_t bytes = 0;
  for (int i = 0; i < 120; ++i) bytes += kWalHeaderSize + Payload(i).size() + kWalTrailerSize;
  EXPECT_EQ(stats.bytes, bytes);
}

TEST_P(WalTest, ReplayFromAPositionReturnsExactlyTheLaterRecords) {
  WalWriterOptions options;
  options.max_segment_bytes = 800;
  std::unique_ptr<WalWriter> writer = OpenWriter(2, 1, options);
  ASSERT_NE(writer, nullptr);
  std::vector<pb::WalPosition> positions;
  for (int i = 0; i < 40; ++i) {
    ASSERT_OK_AND_ASSIGN(pb::WalPosition end, writer->Append(WalRecordKind::kRows, Payload(i)));
    positions.push_back(end);
  }
  for (size_t k = 0; k < positions.size(); ++k) {
    SCOPED_TRACE(PositionText(positions[k]));
    ReplayStats stats;
    std::vector<Replayed> replayed = ReplayAll(positions[k], 2, &stats);
    ASSERT_EQ(replayed.size(), positions.size() - k - 1);
    for (size_t i = 0; i < replayed.size(); ++i) {
      EXPECT_EQ(replayed[i].payload, Payload(static_cast<int>(k + 1 + i)));
    }
    EXPECT_TRUE(SamePosition(stats.end, positions.back()));
  }
  ReplayStats stats;
  EXPECT_TRUE(ReplayAll(writer->last_position(), 2, &stats).empty());
  EXPECT_TRUE(SamePosition(stats.end, writer->last_position()));  // `after` when none
}

TEST_P(WalTest, RollSegmentEndsTheSegmentAndTheNextAppendStartsTheNext) {
  std::unique_ptr<WalWriter> writer = OpenWriter(1, 5);
  ASSERT_NE(writer, nullptr);
  ASSERT_OK_AND_ASSIGN(pb::WalPosition first, writer->Append(WalRecordKind::kRows, "a"));
  ASSERT_OK_AND_ASSIGN(pb::WalPosition rolled, writer->RollSegment());
  EXPECT_TRUE(SamePosition(rolled, first)) << PositionText(rolled);
  // Nothing open: the roll position lies before the next segment.
  ASSERT_OK_AND_ASSIGN(pb::WalPosition again, writer->RollSegment());
  EXPECT_TRUE(SamePosition(again, MakeWalPosition(1, 6, 0))) << PositionText(again);
  ASSERT_OK_AND_ASSIGN(pb::WalPosition second, writer->Append(WalRecordKind::kRows, "b"));
  EXPECT_TRUE(SamePosition(second, MakeWalPosition(1, 6, kWalHeaderSize + 1 + kWalTrailerSize)))
      << PositionText(second);
  EXPECT_THAT(SegmentIds(), ElementsAre(SegmentId{1, 5}, SegmentId{1, 6}));
  std::vector<Replayed> after_roll = ReplayAll(rolled, 1);
  ASSERT_EQ(after_roll.size(), 1u);
  EXPECT_EQ(after_roll[0].payload, "b");
  ASSERT_EQ(ReplayAll(again, 1).size(), 1u);
  // A writer cannot start on a segment that exists.
  Result<std::unique_ptr<WalWriter>> clash =
      WalWriter::Open(store_, std::string(kPrefix), shard_, 1, 6, {});
  EXPECT_TRUE(clash.status().IsAlreadyExists()) << clash.status();
}

TEST_P(WalTest, ReplaySkipsEpochsBelowAfterAndAboveMaxEpoch) {
  for (uint64_t epoch : {3u, 5u, 7u}) {
    std::unique_ptr<WalWriter> writer = OpenWriter(epoch, 1);
    ASSERT_NE(writer, nullptr);
    for (int i = 0; i < 3; ++i) {
      ASSERT_OK(
          writer
              ->Append(WalRecordKind::kRows, "e" + std::to_string(epoch) + "-" + std::to_string(i))
              .status());
    }
    ASSERT_OK(writer->RollSegment().status());
    ASSERT_OK(writer->Append(WalRecordKind::kRows, "e" + std::to_string(epoch) + "-3").status());
  }
  auto payloads = [](const std::vector<Replayed>& records) {
    std::vector<std::string> out;
    for (const Replayed& r : records) out.push_back(r.payload);
    return out;
  };
  EXPECT_THAT(payloads(ReplayAll(MakeWalPosition(5, 0, 0), 5)),
              ElementsAre("e5-0", "e5-1", "e5-2", "e5-3"));
  EXPECT_THAT(payloads(ReplayAll(MakeWalPosition(5, 2, 0), 7)),
              ElementsAre("e5-3", "e7-0", "e7-1", "e7-2", "e7-3"));
  EXPECT_EQ(ReplayAll(MakeWalPosition(0, 0, 0), 7).size(), 12u);
  EXPECT_EQ(ReplayAll(MakeWalPosition(0, 0, 0), 4).size(), 4u);
  EXPECT_TRUE(ReplayAll(MakeWalPosition(8, 0, 0), 9).empty());
  ReplayStats stats;
  ReplayAll(MakeWalPosition(4, 9, 9), 6, &stats);
  EXPECT_EQ(stats.records, 4);
  EXPECT_EQ(stats.segments, 2);
}

TEST_P(WalTest, ATornLastRecordIsDroppedAtEveryCutPoint) {
  std::unique_ptr<WalWriter> writer = OpenWriter(1, 1);
  ASSERT_NE(writer, nullptr);
  std::vector<pb::WalPosition> positions;
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK_AND_ASSIGN(pb::WalPosition end, writer->Append(WalRecordKind::kRows, Payload(i)));
    positions.push_back(end);
  }
  ASSERT_OK(writer->Close());
  const std::string key = WalSegmentKey(kPrefix, shard_, 1, 1);
  ASSERT_OK_AND_ASSIGN(Buffer whole, store_->Get(key));
  const std::string bytes(whole.view());
  const size_t last_start = positions[3].offset();
  ASSERT_EQ(bytes.size(), positions[4].offset());
  for (size_t cut = last_start; cut < bytes.size(); ++cut) {
    SCOPED_TRACE("cut at " + std::to_string(cut));
    ASSERT_OK(store_->Put(key, std::string_view(bytes).substr(0, cut)));
    ReplayStats stats;
    std::vector<Replayed> replayed = ReplayAll(MakeWalPosition(1, 0, 0), 1, &stats);
    ASSERT_EQ(replayed.size(), 4u);
    EXPECT_EQ(replayed.back().payload, Payload(3));
    EXPECT_EQ(stats.torn_tails, cut == last_start ? 0 : 1);
    EXPECT_TRUE(SamePosition(stats.end, positions[3]));
  }
  // A damaged checksum in the last record is a torn tail too.
  std::string flipped = bytes;
  flipped[last_start + kWalHeaderSize + 2] ^= 0x20;
  ASSERT_OK(store_->Put(key, flipped));
  ReplayStats stats;
  EXPECT_EQ(ReplayAll(MakeWalPosition(1, 0, 0), 1, &stats).size(), 4u);
  EXPECT_EQ(stats.torn_tails, 1);
}

TEST_P(WalTest, ATornTailDoesNotHideLaterSegments) {
  std::unique_ptr<WalWriter> writer = OpenWriter(1, 1);
  ASSERT_NE(writer, nullptr);
  ASSERT_OK(writer->Append(WalRecordKind::kRows, "one").status());
  ASSERT_OK(writer->Append(WalRecordKind::kRows, "two").status());
  ASSERT_OK(writer->RollSegment().status());
  ASSERT_OK(writer->Append(WalRecordKind::kRows, "three").status());
  ASSERT_OK(writer->Close());
  const std::string key = WalSegmentKey(kPrefix, shard_, 1, 1);
  ASSERT_OK_AND_ASSIGN(Buffer whole, store_->Get(key));
  ASSERT_OK(store_->Put(key, whole.view().substr(0, whole.size() - 3)));
  ReplayStats stats;
  std::vector<Replayed> replayed = ReplayAll(MakeWalPosition(1, 0, 0), 1, &stats);
  ASSERT_EQ(replayed.size(), 2u);
  EXPECT_EQ(replayed[0].payload, "one");
  EXPECT_EQ(replayed[1].payload, "three");
  EXPECT_EQ(stats.torn_tails, 1);
  EXPECT_EQ(stats.segments, 2);
}

TEST_P(WalTest, AFlippedByteInAnEarlierRecordIsCorruptionNamingTheKey) {
  std::unique_ptr<WalWriter> writer = OpenWriter(1, 1);
  ASSERT_NE(writer, nullptr);
  std::vector<pb::WalPosition> positions;
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK_AND_ASSIGN(pb::WalPosition end, writer->Append(WalRecordKind::kRows, Payload(i)));
    positions.push_back(end);
  }
  ASSERT_OK(writer->Close());
  const std::string key = WalSegmentKey(kPrefix, shard_, 1, 1);
  ASSERT_OK_AND_ASSIGN(Buffer whole, store_->Get(key));
  const std::string bytes(whole.view());
  // Every byte of record 1 (of 0..4), flipped in two ways.
  for (size_t at = positions[0].offset(); at < positions[1].offset(); ++at) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0xA5}}) {
      SCOPED_TRACE("byte " + std::to_string(at) + " mask " + std::to_string(mask));
      std::string damaged = bytes;
      damaged[at] = static_cast<char>(damaged[at] ^ mask);
      ASSERT_OK(store_->Put(key, damaged));
      int seen = 0;
      Result<ReplayStats> stats =
          ReplayWal(*store_, kPrefix, shard_, MakeWalPosition(1, 0, 0), 1, [&](const WalRecord&) {
            ++seen;
            return Status::OK();
          });
      ASSERT_TRUE(stats.status().IsCorruption()) << stats.status();
      EXPECT_THAT(stats.status().message(), HasSubstr(key));
      EXPECT_THAT(stats.status().message(),
                  HasSubstr("offset " + std::to_string(positions[0].offset())));
      EXPECT_EQ(seen, 1);  // the record before it was delivered, nothing after
    }
  }
}

TEST_P(WalTest, ConcurrentAppendsAreGroupCommittedAndReplayExactlyOnce) {
  constexpr int kThreads = 8;
  constexpr int kPerThread = 200;
  WalWriterOptions options;
  options.max_segment_bytes = 16 << 10;
  std::atomic<int> fence_checks{0};
  options.check_fence = [&] {
    ++fence_checks;
    return Status::OK();
  };
  std::unique_ptr<WalWriter> writer = OpenWriter(3, 1, options);
  ASSERT_NE(writer, nullptr);

  Mutex mu;
  std::vector<std::pair<std::string, pb::WalPosition>> durable_order;  // guarded by mu
  std::atomic<int> in_on_durable{0};
  std::atomic<int> overlaps{0};
  std::vector<std::vector<pb::WalPosition>> acked(kThreads);
  std::vector<Status> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        std::string payload = "t" + std::to_string(t) + "-" + std::to_string(i);
        Result<pb::WalPosition> end = writer->Append(
            WalRecordKind::kRows, payload, [&, payload](const pb::WalPosition& position) {
              if (in_on_durable.fetch_add(1) != 0) ++overlaps;
              {
                MutexLock lock(mu);
                durable_order.emplace_back(payload, position);
              }
              in_on_durable.fetch_sub(1);
            });
        if (!end.ok()) {
          errors[t] = end.status();
          return;
        }
        acked[t].push_back(*end);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const Status& error : errors) ASSERT_OK(error);
  EXPECT_EQ(overlaps.load(), 0);

  constexpr int kTotal = kThreads * kPerThread;
  std::map<std::tuple<uint64_t, uint64_t, uint64_t>, std::string> acknowledged;
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(acked[t].size(), static_cast<size_t>(kPerThread));
    for (int i = 0; i < kPerThread; ++i) {
      const pb::WalPosition& p = acked[t][i];
      if (i > 0) {
        EXPECT_LT(CompareWalPositions(acked[t][i - 1], p), 0);
      }
      acknowledged[{p.epoch(), p.segment(), p.offset()}] =
          "t" + std::to_string(t) + "-" + std::to_string(i);
    }
  }
  ASSERT_EQ(acknowledged.size(), static_cast<size_t>(kTotal));  // all positions distinct

  std::vector<Replayed> replayed = ReplayAll(MakeWalPosition(3, 0, 0), 3);
  ASSERT_EQ(replayed.size(), static_cast<size_t>(kTotal));
  std::map<std::tuple<uint64_t, uint64_t, uint64_t>, int> seen;
  for (size_t i = 0; i < replayed.size(); ++i) {
    const pb::WalPosition& p = replayed[i].end;
    if (i > 0) {
      EXPECT_LT(CompareWalPositions(replayed[i - 1].end, p), 0);
    }
    auto it = acknowledged.find({p.epoch(), p.segment(), p.offset()});
    ASSERT_NE(it, acknowledged.end()) << PositionText(p);
    EXPECT_EQ(it->second, replayed[i].payload);
    EXPECT_EQ(++seen[it->first], 1);
  }
  {
    MutexLock lock(mu);
    ASSERT_EQ(durable_order.size(), replayed.size());
    for (size_t i = 0; i < replayed.size(); ++i) {
      EXPECT_EQ(durable_order[i].first, replayed[i].payload) << i;
      EXPECT_TRUE(SamePosition(durable_order[i].second, replayed[i].end)) << i;
    }
  }
  // Group commit: one Append and one Sync (and one fence check) per group, fewer than the
  // records.
  EXPECT_LT(store_->syncs.load(), kTotal);
  EXPECT_EQ(store_->appends.load(), store_->syncs.load());
  EXPECT_EQ(fence_checks.load(), store_->syncs.load());
  EXPECT_GT(SegmentIds().size(), 1u);
  std::cout << "groups: " << store_->syncs.load() << " for " << kTotal << " records, "
            << SegmentIds().size() << " segments\n";
}

// Writers that append back to back: with gathering, a leader waits for the writers of the
// last group to come back, so groups hold (nearly) every writer's record instead of
// alternating between two partial groups; without it, about two groups per round.
TEST_P(WalTest, GatheringLetsWritersWhoJustReturnedJoinTheNextGroup) {
  constexpr int kThreads = 8;
  constexpr int kRounds = 60;
  auto run = [&](std::chrono::microseconds wait) -> int64_t {
    WalWriterOptions options;
    options.group_commit_wait = wait;
    const int64_t syncs_before = store_->syncs.load();
    std::unique_ptr<WalWriter> writer = OpenWriter(wait.count() > 0 ? 2 : 1, 0, options);
    EXPECT_NE(writer, nullptr);
    if (writer == nullptr) return -1;
    std::vector<std::thread> threads;
    threads.reserve(kThreads);
    std::atomic<int> failures{0};
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kRounds; ++i) {
          if (!writer->Append(WalRecordKind::kRows, fmt::format("t{}-{}", t, i)).ok()) ++failures;
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
    EXPECT_TRUE(writer->Close().ok());
    EXPECT_EQ(failures.load(), 0);
    return store_->syncs.load() - syncs_before;
  };
  // A wait far longer than any scheduling hiccup: groups fill whenever every writer comes
  // back, and only the rounds where writers finish pay for it.
  const int64_t gathered = run(std::chrono::milliseconds(50));
  const int64_t alternating = run(std::chrono::microseconds(0));
  RecordProperty("groups_gathered", static_cast<int>(gathered));
  RecordProperty("groups_alternating", static_cast<int>(alternating));
  EXPECT_LE(gathered, kRounds + kRounds / 4) << "alternating: " << alternating;
  EXPECT_GT(alternating, gathered);
  // Every record was written once, in both epochs.
  EXPECT_EQ(ReplayAll(MakeWalPosition(1, 0, 0), 2).size(), size_t{2 * kThreads * kRounds});
}

TEST_P(WalTest, AFencedGroupFailsEveryRecordAndRunsNoOnDurable) {
  std::atomic<bool> fenced{false};
  WalWriterOptions options;
  options.check_fence = [&] {
    return fenced ? Status::Fenced("epoch 2 was claimed by a newer writer") : Status::OK();
  };
  std::unique_ptr<WalWriter> writer = OpenWriter(2, 1, options);
  ASSERT_NE(writer, nullptr);
  std::atomic<int> durable_calls{0};
  auto on_durable = [&](const pb::WalPosition&) { ++durable_calls; };
  ASSERT_OK_AND_ASSIGN(pb::WalPosition before,
                       writer->Append(WalRecordKind::kRows, "ok", on_durable));
  EXPECT_EQ(durable_calls.load(), 1);

  fenced = true;
  constexpr int kThreads = 4;
  std::atomic<int> fenced_results{0};
  std::atomic<int> other_results{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10; ++i) {
        Result<pb::WalPosition> end = writer->Append(WalRecordKind::kRows, "x", on_durable);
        ++(end.status().IsFenced() ? fenced_results : other_results);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(fenced_results.load(), kThreads * 10);
  EXPECT_EQ(other_results.load(), 0);
  EXPECT_EQ(durable_calls.load(), 1);
  EXPECT_TRUE(SamePosition(writer->last_position(), before));
}

INSTANTIATE_TEST_SUITE_P(Stores, WalTest, ::testing::Values("memory", "local"),
                         [](const auto& info) { return info.param; });

// WalFaultTest (wal_test_util.h): over a FaultInjectionFileSystem, to inject write and
// sync errors.

TEST_P(WalFaultTest, AWriteErrorFailsTheGroupAndTheNextAppendStartsANewSegment) {
  Result<std::unique_ptr<WalWriter>> opened =
      WalWriter::Open(store_, std::string(kPrefix), shard_, 1, 1, {});
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<WalWriter> writer = std::move(*opened);
  for (const char* payload : {"a", "b", "c"}) {
    ASSERT_OK(writer->Append(WalRecordKind::kRows, payload).status());
  }
  bool ran = false;
  fault_->FailNth(io::FaultOp::kWrite, 1);
  Result<pb::WalPosition> failed =
      writer->Append(WalRecordKind::kRows, "lost", [&](const pb::WalPosition&) { ran = true; });
  EXPECT_TRUE(failed.status().IsIOError()) << failed.status();
  EXPECT_THAT(failed.status().message(), HasSubstr("injected"));
  EXPECT_FALSE(ran);
  ASSERT_OK_AND_ASSIGN(pb::WalPosition next, writer->Append(WalRecordKind::kRows, "d"));
  EXPECT_EQ(next.segment(), 2u);
  EXPECT_EQ(next.offset(), kWalHeaderSize + 1 + kWalTrailerSize);

  // A failed sync: the record may be in the segment, but the writer moves on again.
  fault_->FailNth(io::FaultOp::kSync, 1);
  EXPECT_TRUE(writer->Append(WalRecordKind::kRows, "unsynced").status().IsIOError());
  ASSERT_OK_AND_ASSIGN(pb::WalPosition last, writer->Append(WalRecordKind::kRows, "e"));
  EXPECT_EQ(last.segment(), 3u);
  EXPECT_EQ(fault_->injected_faults(), 2);
  ASSERT_OK(writer->Close());

  std::vector<std::string> payloads = ReplayPayloads();
  EXPECT_THAT(payloads, ElementsAre("a", "b", "c", "d", "unsynced", "e"));
  Result<std::vector<WalSegment>> segments = ListWalSegments(*store_, kPrefix, shard_);
  ASSERT_TRUE(segments.ok()) << segments.status();
  EXPECT_EQ(segments->size(), 3u);
}

TEST_P(WalFaultTest, SyncedRecordsSurviveACrash) {
  Result<std::unique_ptr<WalWriter>> opened =
      WalWriter::Open(store_, std::string(kPrefix), shard_, 1, 1, {});
  ASSERT_TRUE(opened.ok()) << opened.status();
  for (int i = 0; i < 10; ++i) {
    ASSERT_OK((*opened)->Append(WalRecordKind::kRows, Payload(i)).status());
  }
  opened->reset();
  store_.reset();
  ASSERT_OK(fault_->SimulateCrash());
  const std::string root = GetParam() == "memory_fs" ? "/store" : (temp_ / "store").string();
  ASSERT_OK_AND_ASSIGN(store_, io::NewFileObjectStore(fault_, root));
  std::vector<std::string> payloads = ReplayPayloads();
  ASSERT_EQ(payloads.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(payloads[i], Payload(i));
}

INSTANTIATE_TEST_SUITE_P(FaultInjection, WalFaultTest, ::testing::Values("memory_fs", "posix"),
                         [](const auto& info) { return info.param; });

TEST(WalSegmentsTest, DeleteCoveredWalSegmentsDeletesExactlyTheCoveredOnes) {
  std::shared_ptr<ObjectStore> store = NewMemoryObjectStore();
  const Uuid shard = DeriveShardId("delete");
  const Uuid other = DeriveShardId("other");
  for (auto [epoch, segment] :
       std::vector<SegmentId>{{1, 1}, {1, 2}, {2, 1}, {2, 2}, {2, 3}, {3, 1}}) {
    ASSERT_OK(store->Put(WalSegmentKey(kPrefix, shard, epoch, segment), "x"));
  }
  ASSERT_OK(store->Put(WalSegmentKey(kPrefix, other, 1, 1), "x"));
  ASSERT_OK_AND_ASSIGN(int64_t deleted,
                       DeleteCoveredWalSegments(*store, kPrefix, shard, MakeWalPosition(2, 2, 40)));
  EXPECT_EQ(deleted, 3);
  ASSERT_OK_AND_ASSIGN(std::vector<WalSegment> left, ListWalSegments(*store, kPrefix, shard));
  std::vector<SegmentId> ids;
  for (const WalSegment& s : left) ids.emplace_back(s.epoch, s.segment);
  EXPECT_THAT(ids, ElementsAre(SegmentId{2, 2}, SegmentId{2, 3}, SegmentId{3, 1}));
  EXPECT_EQ(left[0].key, WalSegmentKey(kPrefix, shard, 2, 2));
  EXPECT_EQ(left[0].size, 1);
  ASSERT_OK_AND_ASSIGN(deleted,
                       DeleteCoveredWalSegments(*store, kPrefix, shard, MakeWalPosition(2, 2, 40)));
  EXPECT_EQ(deleted, 0);
  ASSERT_OK_AND_ASSIGN(std::vector<WalSegment> others, ListWalSegments(*store, kPrefix, other));
  EXPECT_EQ(others.size(), 1u);  // another shard's segments are untouched
}

// Fails the next `fail` CreateAppendable calls; `leave_object` creates the object first (a
// creation that failed after the name was taken). Fails the next `fail_heads` Head calls
// (so Exists fails too).
class FailingCreateStore final : public strata::testing::ForwardingObjectStore {
 public:
  using ForwardingObjectStore::ForwardingObjectStore;
  Result<std::unique_ptr<AppendableObject>> CreateAppendable(std::string_view key) override {
    if (fail > 0) {
      --fail;
      if (leave_object) STRATA_RETURN_IF_ERROR(base().Put(key, ""));
      return Status::IOError("injected create failure");
    }
    return base().CreateAppendable(key);
  }
  Result<ObjectMeta> Head(std::string_view key) override {
    if (fail_heads > 0) {
      --fail_heads;
      return Status::IOError("injected head failure");
    }
    return base().Head(key);
  }
  int fail = 0;
  bool leave_object = false;
  int fail_heads = 0;
};

TEST(WalSegmentsTest, AFailedSegmentCreationLeavesNoHoleInTheSegmentNumbers) {
  for (bool leave_object : {false, true}) {
    SCOPED_TRACE(leave_object ? "object left behind" : "nothing created");
    auto store = std::make_shared<FailingCreateStore>(NewMemoryObjectStore());
    const Uuid shard = DeriveShardId("create");
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalWriter> writer,
                         WalWriter::Open(store, std::string(kPrefix), shard, 1, 0, {}));
    ASSERT_OK(writer->Append(WalRecordKind::kRows, "a").status());
    ASSERT_OK(writer->RollSegment().status());
    store->fail = 1;
    store->leave_object = leave_object;
    EXPECT_TRUE(writer->Append(WalRecordKind::kRows, "lost").status().IsIOError());
    ASSERT_OK_AND_ASSIGN(pb::WalPosition next, writer->Append(WalRecordKind::kRows, "b"));
    // A provably free name is reused; one that may exist in part is skipped, and stays.
    EXPECT_EQ(next.segment(), leave_object ? 2u : 1u);
    ASSERT_OK(writer->Close());
    ASSERT_OK_AND_ASSIGN(std::vector<WalSegment> segments, ListWalSegments(*store, kPrefix, shard));
    ASSERT_OK(CheckWalSegmentsComplete(segments, kPrefix, shard, MakeWalPosition(1, 0, 0), 1));
  }
}

// When the check whether a failed creation took the name fails too, the name is retried,
// not skipped: skipping a free name would leave a hole that reads as lost records forever.
TEST(WalSegmentsTest, AFailedCheckAfterAFailedCreationRetriesTheNameRatherThanSkipIt) {
  for (bool leave_object : {false, true}) {
    SCOPED_TRACE(leave_object ? "object left behind" : "nothing created");
    auto store = std::make_shared<FailingCreateStore>(NewMemoryObjectStore());
    const Uuid shard = DeriveShardId("create-unchecked");
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<WalWriter> writer,
                         WalWriter::Open(store, std::string(kPrefix), shard, 1, 0, {}));
    ASSERT_OK(writer->Append(WalRecordKind::kRows, "a").status());
    ASSERT_OK(writer->RollSegment().status());
    store->fail = 1;
    store->fail_heads = 1;
    store->leave_object = leave_object;
    EXPECT_TRUE(writer->Append(WalRecordKind::kRows, "lost").status().IsIOError());
    if (leave_object) {
      // The retry finds the name taken (by our own failed attempt) and moves past it.
      EXPECT_TRUE(writer->Append(WalRecordKind::kRows, "lost").status().IsAlreadyExists());
    }
    ASSERT_OK_AND_ASSIGN(pb::WalPosition next, writer->Append(WalRecordKind::kRows, "b"));
    EXPECT_EQ(next.segment(), leave_object ? 2u : 1u);
    ASSERT_OK(writer->Close());
    ASSERT_OK_AND_ASSIGN(std::vector<WalSegment> segments, ListWalSegments(*store, kPrefix, shard));
    ASSERT_OK(CheckWalSegmentsComplete(segments, kPrefix, shard, MakeWalPosition(1, 0, 0), 1));
  }
}

TEST(WalSegmentsTest, AMissingSegmentThatReplayMustReadIsCorruptionNamingIt) {
  std::shared_ptr<ObjectStore> store = NewMemoryObjectStore();
  const Uuid shard = DeriveShardId("holes");
  auto check = [&](const pb::WalPosition& after, uint64_t max_epoch) {
    Result<std::vector<WalSegment>> segments = ListWalSegments(*store, kPrefix, shard);
    EXPECT_TRUE(segments.ok()) << segments.status();
    return CheckWalSegmentsComplete(*segments, kPrefix, shard, after, max_epoch);
  };
  auto expect_missing = [&](const Status& status, uint64_t epoch, uint64_t segment) {
    EXPECT_TRUE(status.IsCorruption()) << status;
    EXPECT_THAT(status.message(), HasSubstr(WalSegmentKey(kPrefix, shard, epoch, segment)));
    EXPECT_THAT(status.message(), HasSubstr("is missing"));
  };
  // Nothing at all, and a replay position at the start of a segment that is gone.
  ASSERT_OK(check(MakeWalPosition(0, 0, 0), 3));
  expect_missing(check(MakeWalPosition(2, 0, 0), 3), 2, 0);
  for (uint64_t segment : {0, 1, 3}) {
    ASSERT_OK(store->Put(WalSegmentKey(kPrefix, shard, 2, segment), "x"));
  }
  // A hole in the numbers after the replay position.
  expect_missing(check(MakeWalPosition(2, 0, 0), 3), 2, 2);
  expect_missing(check(MakeWalPosition(2, 1, 40), 3), 2, 2);
  // The hole lies before the replay position: a generation covers it.
  ASSERT_OK(check(MakeWalPosition(2, 3, 0), 3));
  ASSERT_OK(store->Put(WalSegmentKey(kPrefix, shard, 2, 2), "x"));
  ASSERT_OK(check(MakeWalPosition(2, 0, 0), 3));
  // The replay position's own segment may be gone when a generation covers it to its end.
  ASSERT_OK(store->Delete(WalSegmentKey(kPrefix, shard, 2, 0)));
  ASSERT_OK(check(MakeWalPosition(2, 0, 40), 3));
  expect_missing(check(MakeWalPosition(2, 0, 0), 3), 2, 0);
  ASSERT_OK(store->Delete(WalSegmentKey(kPrefix, shard, 2, 1)));
  expect_missing(check(MakeWalPosition(2, 0, 40), 3), 2, 1);
  // A later epoch starts at segment 0; epochs past max_epoch are not looked at.
  ASSERT_OK(store->Put(WalSegmentKey(kPrefix, shard, 3, 1), "x"));
  ASSERT_OK(store->Put(WalSegmentKey(kPrefix, shard, 4, 5), "x"));
  expect_missing(check(MakeWalPosition(2, 2, 40), 3), 3, 0);
  ASSERT_OK(store->Put(WalSegmentKey(kPrefix, shard, 3, 0), "x"));
  ASSERT_OK(check(MakeWalPosition(2, 2, 40), 3));
}

TEST(WalSegmentsTest, ListWalSegmentsOrdersByEpochThenSegment) {
  std::shared_ptr<ObjectStore> store = NewMemoryObjectStore();
  const Uuid shard = DeriveShardId("list");
  ASSERT_OK(store->Put(WalSegmentKey(kPrefix, shard, 10, 2), "x"));
  ASSERT_OK(store->Put(WalSegmentKey(kPrefix, shard, 9, 30), "x"));
  ASSERT_OK(store->Put(WalSegmentKey(kPrefix, shard, 10, 1), "x"));
  ASSERT_OK(store->Put(ShardDir(kPrefix, shard) + "wal/not-a-segment", "x"));
  ASSERT_OK_AND_ASSIGN(std::vector<WalSegment> segments, ListWalSegments(*store, kPrefix, shard));
  std::vector<SegmentId> ids;
  for (const WalSegment& s : segments) ids.emplace_back(s.epoch, s.segment);
  EXPECT_THAT(ids, ElementsAre(SegmentId{9, 30}, SegmentId{10, 1}, SegmentId{10, 2}));
}

}  // namespace
}  // namespace strata::lsm
