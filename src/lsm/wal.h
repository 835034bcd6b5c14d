// The write-ahead log of one shard: framed, checksummed records in append-only segment
// objects, one writer (the epoch holder) at a time, group commit (docs/format/lsm.md).
//
// Segment key: <shard dir>/wal/<epoch:020>-<segment:010>.wal (layout.h). A writer creates
// its segments with CreateAppendable (exclusive), starting a new segment when it opens,
// after each seal that asks for it (RollSegment) and after any write or sync error (so a
// half-written record is only ever at the end of a segment).
//
// Segment layout. Format 1: records back to back from offset 0. Format 2 (a writer with
// WalWriterOptions::file_schema), a segment that is also an Arrow IPC file:
//   "ARROW1\0\0" | schema message (u32 0xFFFFFFFF, i32 length M, M bytes) | records |
//   footer, once the writer ended the segment cleanly: IPC end-of-stream marker
//   FF FF FF FF 00 00 00 00, footer flatbuffer naming the record batch messages (with rows)
//   inside the kRows payloads and, per dictionary id, the longest dictionary batch message
//   among them, i32 footer length, "ARROW1".
// The header is a multiple of 8 bytes and so is every payload, so records and the messages
// in them start at multiples of 8 as the IPC footer requires. Positions are byte offsets in
// the object in both formats (a format 2 segment's first record starts after the header).
//
// Record (little endian), 32-byte header then payload then checksum:
//   u32 magic "SWAL" | u32 kind | u64 epoch | u64 sequence (0,1,... within the segment) |
//   u32 payload length | u32 reserved (0) | payload | u64 XXH3-64 of header and payload
// Kinds: kRows (payload = Arrow IPC stream of row batches in the shard schema), kTombstones
// (payload = Arrow IPC stream of one-column batches of deleted keys).
//
// Replay reads segments in (epoch, segment) order from a position, stopping at each
// segment's end; in a format 2 segment it skips the header and also stops at the
// end-of-stream marker (or a prefix of it ending the object) at a record boundary, which
// starts the footer. A segment's last record may be torn (its header or payload runs past
// the end of the object, or it is the last record and its checksum fails): it is dropped
// and reported in ReplayStats — unless a complete footer follows it, which the writer only
// writes after every record was synced. A record that fails its checksum, has a bad magic,
// kind, epoch or sequence and is followed by more bytes is Corruption naming the key and
// offset — never skipped.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lsm/lsm.pb.h"
#include "strata/object_store.h"
#include "strata/status.h"
#include "strata/type.h"
#include "util/uuid.h"

namespace strata::lsm {

enum class WalRecordKind : uint32_t { kRows = 1, kTombstones = 2 };

inline constexpr uint32_t kWalMagic = 0x4C415753;  // "SWAL" little endian
inline constexpr size_t kWalHeaderSize = 32;
inline constexpr size_t kWalTrailerSize = 8;
// A record's payload is at most this large (InvalidArgument beyond).
inline constexpr int64_t kMaxWalPayload = int64_t{1} << 31;

// The framed bytes of one record.
std::string EncodeWalRecord(WalRecordKind kind, uint64_t epoch, uint64_t sequence,
                            std::string_view payload);

struct WalWriterOptions {
  // A segment is closed and the next one started when it grows past this.
  int64_t max_segment_bytes = int64_t{64} << 20;
  // Called by the group leader after its records are written and synced, before any of
  // them is acknowledged. A non-OK status (Fenced) fails every record of the group, so a
  // writer that lost its epoch never acknowledges a write. Must be thread safe.
  std::function<Status()> check_fence;
  // Group commit gathering. A leader whose queue holds fewer records than the last group had
  // waits up to this long (real time) for more before it writes, so that writers who just
  // returned from a group join the next one: with N writers putting back to back, groups
  // otherwise alternate between k and N - k records, about N / 2 per sync. The wait ends as
  // soon as the queue is as long as the last group, or when RollSegment or Close waits for
  // the lead; a group that timed out sets the smaller size to wait for next time, so a lone
  // writer, or writers that slowed down, wait at most once. Zero: never wait.
  std::chrono::microseconds group_commit_wait{0};
  // When set, every segment this writer starts is also an Arrow IPC file (segment format 2,
  // docs/format/lsm.md §5.1): it begins with ipc::EncodeFileHeader(*file_schema), and when
  // the writer ends it cleanly (RollSegment, the size limit, Close) it appends
  // ipc::EncodeFileFooter naming the record batch messages of its kRows records (zero-row
  // batches left out) and, for each dictionary id of file_schema, the longest dictionary
  // batch message of that id in the segment's kRows records, and syncs before the call that
  // ended it returns. kRows payloads must then be IPC streams of batches in file_schema
  // whose length is a multiple of 8 (InvalidArgument otherwise; ipc writers pad streams so);
  // kTombstones payloads are not in the footer. A segment abandoned after a write or sync
  // error gets no footer. Null: format 1 segments (records only).
  // Also checked on Append (InvalidArgument, nothing written): a kRows payload must scan
  // as a stream whose schema equals file_schema (metadata aside), whose dictionary batches
  // (file_schema may have dictionary fields, nested ones too) are whole dictionaries, not
  // deltas (ipc::StreamWriter sends a delta only when a later batch of the stream extends
  // a dictionary), with the ids ipc writers give file_schema's dictionaries, and which
  // sends every dictionary id before its first batch with rows; kTombstones payloads too
  // must be multiples of 8 bytes (records must keep starting at multiples of 8). A segment
  // ended before its first record gets the header and the footer: a file without batches.
  // The caller's obligation, not verified here: within one segment, all dictionaries of
  // one id (across records, and within a record) are prefixes of one growing sequence of
  // values, so that the longest holds every entry that any batch of the segment refers to
  // at the same index (the file reader decodes every batch against it). A writer keeping
  // one canonical dictionary per column that only grows by appending, and sending its
  // current value with every payload, satisfies it even when concurrent appends land in
  // the segment out of the order their dictionaries grew. Replay is unaffected either way:
  // it hands back each payload, a stream that carries its own dictionaries.
  SchemaPtr file_schema;
};

// Appends records for one epoch. Append may be called from many threads: one caller (the
// leader) writes every queued record with one AppendableObject::Append and one Sync, then
// runs check_fence, and wakes the others (group commit). Records are written in the order
// their Append calls entered the queue.
class WalWriter {
 public:
  // Starts segment `first_segment` of `epoch` (AlreadyExists if that segment exists).
  static Result<std::unique_ptr<WalWriter>> Open(std::shared_ptr<ObjectStore> store,
                                                 std::string store_prefix, Uuid shard,
                                                 uint64_t epoch, uint64_t first_segment,
                                                 WalWriterOptions options);
  ~WalWriter();

  // Returns once the record is durable and the fence check passed: the position just past
  // it. After a write/sync error the error is returned to every record of that group and
  // the next Append starts a new segment.
  // `on_durable` (optional) is run by the group leader for each record of a successful
  // group, in WAL order, after the sync and fence check and before any record of the group
  // is acknowledged; leaders run one at a time, so on_durable calls never overlap and
  // follow WAL order exactly (the shard writer inserts into its memtable there, which keeps
  // memtable order == WAL order). It must not fail.
  Result<pb::WalPosition> Append(
      WalRecordKind kind, std::string payload,
      const std::function<void(const pb::WalPosition& end)>& on_durable = {});
  // Append of a payload the caller owns (it only needs to live until the call returns):
  // saves copying it into a string first.
  Result<pb::WalPosition> AppendView(
      WalRecordKind kind, std::string_view payload,
      const std::function<void(const pb::WalPosition& end)>& on_durable = {});
  // Ends the current segment; the next Append starts segment+1. Returns the position at
  // which the closed segment ends (records before it are in that segment; with a file
  // schema, the position before the footer). When the footer cannot be written or synced
  // the segment is ended all the same, without a footer, and that error is returned.
  Result<pb::WalPosition> RollSegment();
  // True when this writer ended `segment` (of its epoch) with a footer: the segment object
  // is a complete IPC file and will not change again. False for the open segment, for
  // segments abandoned after an error and without file_schema.
  bool SegmentHasFooter(uint64_t segment) const;
  // From now on no segment gets a footer: neither the open one nor any later one
  // (SegmentHasFooter stays false for them). The shard writer calls it before the first
  // record whose payload breaks the format-2 dictionary rule.
  void StopFileSegments();
  // The position just past the last acknowledged record.
  pb::WalPosition last_position() const;
  uint64_t epoch() const;
  // Closes the open segment (with a file schema, after writing its footer). Pending
  // Appends finish first.
  Status Close();

  struct Impl;

 private:
  explicit WalWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct WalRecord {
  WalRecordKind kind = WalRecordKind::kRows;
  pb::WalPosition end;       // the position just past this record
  std::string_view payload;  // valid during the callback only
};

struct ReplayStats {
  int64_t records = 0;
  int64_t bytes = 0;
  int64_t segments = 0;
  int64_t torn_tails = 0;  // segments whose last record was dropped as torn
  pb::WalPosition end;     // the position past the last replayed record (`after` if none)
};

// Every segment key of a shard with its (epoch, segment), in order.
struct WalSegment {
  std::string key;
  uint64_t epoch = 0;
  uint64_t segment = 0;
  int64_t size = 0;
};
Result<std::vector<WalSegment>> ListWalSegments(ObjectStore& store, std::string_view store_prefix,
                                                const Uuid& shard);

// Reads the records of one segment whose bytes are `data`, from offset `start` (0: its
// first record), as replay reads them: `fn` for each record; a torn last record is dropped
// and counted; damage is Corruption naming the key and offset, as is a `start` past the
// records' end. Adds to `stats`.
Status ReadWalSegment(const WalSegment& segment, std::string_view data, uint64_t start,
                      ReplayStats& stats, const std::function<Status(const WalRecord&)>& fn);

// Calls `fn` for every record after `after` in segments with epoch <= max_epoch, in order.
// Segments of epochs below after.epoch() are skipped entirely (a newer epoch's published
// generation covers them); within after's own segment replay starts at after.offset().
Result<ReplayStats> ReplayWal(ObjectStore& store, std::string_view store_prefix, const Uuid& shard,
                              const pb::WalPosition& after, uint64_t max_epoch,
                              const std::function<Status(const WalRecord&)>& fn);

// Corruption naming a missing segment when `segments` (ListWalSegments) prove that one of
// the segments a replay from `after` up to `max_epoch` must read is gone: a hole in an
// epoch's segment numbers (a writer numbers its segments 0, 1, ... without holes), an
// epoch after `after`'s that does not start at segment 0, or a replay position at offset
// 0 whose segment does not exist (the writer creates it before publishing the position).
// Deletion or truncation of the newest segment's unsealed tail leaves no such evidence
// (docs/format/lsm.md §5.4).
Status CheckWalSegmentsComplete(const std::vector<WalSegment>& segments,
                                std::string_view store_prefix, const Uuid& shard,
                                const pb::WalPosition& after, uint64_t max_epoch);

// Deletes every segment whose records all lie at or before `covered` (segments of an
// older epoch, or of covered's epoch with a lower number and ending before it). Returns
// how many were deleted. Best effort callers may ignore errors.
Result<int64_t> DeleteCoveredWalSegments(ObjectStore& store, std::string_view store_prefix,
                                         const Uuid& shard, const pb::WalPosition& covered);

}  // namespace strata::lsm
