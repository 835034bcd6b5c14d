// The write-ahead log of one shard: framed, checksummed records in append-only segment
// objects, one writer (the epoch holder) at a time, group commit (docs/format/lsm.md).
//
// Segment key: <shard dir>/wal/<epoch:020>-<segment:010>.wal (layout.h). A writer creates
// its segments with CreateAppendable (exclusive), starting a new segment when it opens,
// after each seal that asks for it (RollSegment) and after any write or sync error (so a
// half-written record is only ever at the end of a segment).
//
// Record (little endian), 32-byte header then payload then checksum:
//   u32 magic "SWAL" | u32 kind | u64 epoch | u64 sequence (0,1,... within the segment) |
//   u32 payload length | u32 reserved (0) | payload | u64 XXH3-64 of header and payload
// Kinds: kRows (payload = Arrow IPC stream of row batches in the shard schema), kTombstones
// (payload = Arrow IPC stream of one-column batches of deleted keys).
//
// Replay reads segments in (epoch, segment) order from a position, stopping at each
// segment's end. A segment's last record may be torn (its header or payload runs past the
// end of the object, or it is the last record and its checksum fails): it is dropped and
// reported in ReplayStats. A record that fails its checksum, has a bad magic, kind, epoch
// or sequence and is followed by more bytes is Corruption naming the key and offset —
// never skipped.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "lsm/lsm.pb.h"
#include "strata/object_store.h"
#include "strata/status.h"
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
  // which the closed segment ends (records before it are in that segment).
  Result<pb::WalPosition> RollSegment();
  // The position just past the last acknowledged record.
  pb::WalPosition last_position() const;
  uint64_t epoch() const;
  // Closes the open segment. Pending Appends finish first.
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

// Calls `fn` for every record after `after` in segments with epoch <= max_epoch, in order.
// Segments of epochs below after.epoch() are skipped entirely (a newer epoch's published
// generation covers them); within after's own segment replay starts at after.offset().
Result<ReplayStats> ReplayWal(ObjectStore& store, std::string_view store_prefix, const Uuid& shard,
                              const pb::WalPosition& after, uint64_t max_epoch,
                              const std::function<Status(const WalRecord&)>& fn);

// Deletes every segment whose records all lie at or before `covered` (segments of an
// older epoch, or of covered's epoch with a lower number and ending before it). Returns
// how many were deleted. Best effort callers may ignore errors.
Result<int64_t> DeleteCoveredWalSegments(ObjectStore& store, std::string_view store_prefix,
                                         const Uuid& shard, const pb::WalPosition& covered);

}  // namespace strata::lsm
