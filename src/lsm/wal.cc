// The shard write-ahead log (see wal.h): record framing, the group-committing writer
// (optionally writing segments that are also Arrow IPC files; their specifics are in
// wal_file.cc), and replay with torn-tail detection.
#include "lsm/wal.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "lsm/layout.h"
#include "lsm/wal_internal.h"
#include "util/checksum.h"
#include "util/little_endian.h"
#include "util/mutex.h"

namespace strata::lsm {
namespace {

// Header field offsets.
constexpr size_t kMagicOffset = 0;
constexpr size_t kKindOffset = 4;
constexpr size_t kEpochOffset = 8;
constexpr size_t kSequenceOffset = 16;
constexpr size_t kLengthOffset = 24;
constexpr size_t kReservedOffset = 28;

std::string WalDir(std::string_view store_prefix, const Uuid& shard) {
  return ShardDir(store_prefix, shard) + "wal/";
}

}  // namespace

namespace internal {

bool IsKnownKind(uint32_t kind) {
  return kind == static_cast<uint32_t>(WalRecordKind::kRows) ||
         kind == static_cast<uint32_t>(WalRecordKind::kTombstones);
}

ParsedHeader ParseHeader(const char* p) {
  ParsedHeader h;
  h.magic = DecodeFixed32(p + kMagicOffset);
  h.kind = DecodeFixed32(p + kKindOffset);
  h.epoch = DecodeFixed64(p + kEpochOffset);
  h.sequence = DecodeFixed64(p + kSequenceOffset);
  h.length = DecodeFixed32(p + kLengthOffset);
  h.reserved = DecodeFixed32(p + kReservedOffset);
  return h;
}

bool ChecksumMatches(std::string_view data, size_t offset, const ParsedHeader& h) {
  if (h.extent() > data.size() - offset) return false;
  const size_t covered = kWalHeaderSize + h.length;
  return XxHash3_64(data.substr(offset, covered)) == DecodeFixed64(data.data() + offset + covered);
}

bool IntactRecordFollows(std::string_view data, size_t from, uint64_t epoch,
                         std::optional<uint64_t> sequence) {
  char magic[4];
  for (int i = 0; i < 4; ++i) magic[i] = static_cast<char>(kWalMagic >> (8 * i));
  const std::string_view needle(magic, 4);
  for (size_t at = data.find(needle, from);
       at != std::string_view::npos && data.size() - at >= kWalHeaderSize;
       at = data.find(needle, at + 1)) {
    ParsedHeader h = ParseHeader(data.data() + at);
    if (h.epoch != epoch || !IsKnownKind(h.kind) || h.reserved != 0) continue;
    if (sequence.has_value() && h.sequence != *sequence) continue;
    if (ChecksumMatches(data, at, h)) return true;
  }
  return false;
}

}  // namespace internal

using internal::ChecksumMatches;
using internal::IntactRecordFollows;
using internal::IsKnownKind;
using internal::kEndOfStream;
using internal::ParsedHeader;
using internal::ParseHeader;

namespace {

// Appends the framed bytes of one record to `out` (a group is framed straight into one
// buffer, without a copy of each record on the way).
void AppendWalRecord(std::string* out, WalRecordKind kind, uint64_t epoch, uint64_t sequence,
                     std::string_view payload) {
  const size_t start = out->size();
  PutFixed32(out, kWalMagic);
  PutFixed32(out, static_cast<uint32_t>(kind));
  PutFixed64(out, epoch);
  PutFixed64(out, sequence);
  PutFixed32(out, static_cast<uint32_t>(payload.size()));
  PutFixed32(out, 0);
  out->append(payload);
  PutFixed64(out, XxHash3_64(std::string_view(*out).substr(start)));
}

}  // namespace

std::string EncodeWalRecord(WalRecordKind kind, uint64_t epoch, uint64_t sequence,
                            std::string_view payload) {
  std::string out;
  out.reserve(kWalHeaderSize + payload.size() + kWalTrailerSize);
  AppendWalRecord(&out, kind, epoch, sequence, payload);
  return out;
}

// ---------------------------------------------------------------------------------------
// WalWriter

namespace {

// One Append call waiting in the queue; lives on its caller's stack until it is done (so
// does the payload it views).
constexpr int kQueued = 0;
constexpr int kDone = 1;
constexpr int kLead = 2;

struct PendingRecord {
  WalRecordKind kind;
  std::string_view payload;
  const std::function<void(const pb::WalPosition&)>* on_durable;
  // kQueued until the leader that wrote (or failed) it sets kDone, or the leader that ends
  // hands it the lead (kLead). Set and notified under the writer's mutex, which the waiter
  // takes again before it returns, so the record outlives the notification.
  std::atomic<int> state{kQueued};
  Status status;
  pb::WalPosition end;
  // With a file schema: the record batch messages (with rows) and the dictionary batch
  // messages of a kRows payload, offsets from the payload's start.
  internal::ScannedPayload messages;
};

}  // namespace

struct WalWriter::Impl {
  Impl(std::shared_ptr<ObjectStore> store_in, std::string prefix_in, Uuid shard_in,
       uint64_t epoch_in, uint64_t first_segment, WalWriterOptions options_in,
       std::string file_header_in)
      : store(std::move(store_in)),
        prefix(std::move(prefix_in)),
        shard(shard_in),
        epoch(epoch_in),
        options(std::move(options_in)),
        file_header(std::move(file_header_in)),
        checker(options.file_schema),
        last_position(MakeWalPosition(epoch_in, first_segment, 0)),
        segment_number(first_segment) {}

  std::string SegmentKey(uint64_t segment) const {
    return WalSegmentKey(prefix, shard, epoch, segment);
  }

  // True while segments are written as IPC files: with a file schema, until
  // StopFileSegments.
  bool WritesFiles() const {
    return options.file_schema != nullptr && !files_stopped.load(std::memory_order_acquire);
  }

  // Creates segment `segment_number`. Leader only.
  Status StartSegment() {
    const std::string key = SegmentKey(segment_number);
    Result<std::unique_ptr<AppendableObject>> created = store->CreateAppendable(key);
    if (!created.ok()) {
      // Never reuse a name that may exist in part; but a name not shown to be taken is
      // retried, so that the segment numbers of an epoch have no holes (a hole in them is
      // evidence of a segment deleted from outside: CheckWalSegmentsComplete). Retrying is
      // safe because creation is exclusive: if the failed attempt did take the name, the
      // retry gets AlreadyExists and moves past it then.
      const bool failed_before = create_failed_for == segment_number;
      create_failed_for = segment_number;
      if (created.status().IsAlreadyExists()) {
        // Our own earlier failed attempt may have left it (in part): move past it.
        if (failed_before) ++segment_number;
      } else if (Result<bool> exists = store->Exists(key); exists.ok() && *exists) {
        ++segment_number;
      }
      return created.status().WithContext(fmt::format("start WAL segment '{}'", key));
    }
    segment = std::move(*created);
    next_sequence = 0;
    header_pending = WritesFiles();
    file_index.Clear();
    return Status::OK();
  }

  // With a file schema, appends the footer naming file_index (and the header first when the
  // segment is still empty, so it becomes a file without batches) and syncs; the segment
  // then counts as having a footer. Leader only.
  Status WriteFooter() {
    const std::string key = SegmentKey(segment_number);
    std::string bytes;
    if (header_pending) bytes = file_header;
    Result<std::string> footer = file_index.EncodeFooter(*options.file_schema);
    if (!footer.ok()) {
      return footer.status().WithContext(fmt::format("footer of WAL segment '{}'", key));
    }
    bytes += *footer;
    Status s = segment->Append(bytes);
    if (s.ok()) s = segment->Sync();
    if (!s.ok()) return s.WithContext(fmt::format("footer of WAL segment '{}'", key));
    header_pending = false;
    MutexLock lock(mu);
    segments_with_footer.insert(segment_number);
    return Status::OK();
  }

  // Closes the open segment (if any) and moves on to the next number. `clean`: the segment
  // holds no half-written record, so with a file schema it gets its footer; the footer's
  // error is returned (the segment is ended either way). Leader only.
  Status EndSegment(bool clean) {
    if (segment == nullptr) return Status::OK();
    Status s;
    if (clean && WritesFiles()) s = WriteFooter();
    // The data is synced (or the segment is abandoned): a close error changes nothing.
    segment->Close().IgnoreError();
    segment.reset();
    file_index.Clear();
    ++segment_number;
    return s;
  }

  // Writes `group` with one Append and one Sync, checks the fence and runs on_durable.
  // Sets each record's end position. Leader only (mu not held).
  Status WriteGroup(const std::vector<PendingRecord*>& group) {
    if (segment == nullptr) STRATA_RETURN_IF_ERROR(StartSegment());
    const std::string key = SegmentKey(segment_number);
    std::string bytes;
    size_t total = header_pending ? file_header.size() : 0;
    for (const PendingRecord* record : group) {
      total += kWalHeaderSize + record->payload.size() + kWalTrailerSize;
    }
    bytes.reserve(total);
    // The header goes out with the segment's first records, so one sync covers both.
    if (header_pending) bytes = file_header;
    const uint64_t base = static_cast<uint64_t>(segment->size());
    uint64_t sequence = next_sequence;
    const size_t blocks_before = file_index.blocks.size();
    for (PendingRecord* record : group) {
      const uint64_t start = base + bytes.size();
      const auto payload_start = static_cast<int64_t>(start + kWalHeaderSize);
      file_index.Add(payload_start, record->messages);
      AppendWalRecord(&bytes, record->kind, epoch, sequence++, record->payload);
      record->end = MakeWalPosition(epoch, segment_number, base + bytes.size());
    }
    Status s = segment->Append(bytes);
    if (s.ok()) s = segment->Sync();
    if (!s.ok()) {
      // A part of the group may sit at the segment's end: never append after it (nor a
      // footer: the segment is abandoned, and EndSegment forgets its dictionaries too).
      file_index.blocks.resize(blocks_before);
      EndSegment(/*clean=*/false).IgnoreError();
      return s.WithContext(fmt::format("WAL segment '{}'", key));
    }
    header_pending = false;
    next_sequence = sequence;
    if (options.check_fence) STRATA_RETURN_IF_ERROR(options.check_fence());
    for (PendingRecord* record : group) {
      if (record->on_durable != nullptr && *record->on_durable) (*record->on_durable)(record->end);
    }
    if (segment->size() > options.max_segment_bytes) {
      // The group is durable and acknowledged from here on; a segment whose footer fails
      // simply has none (SegmentHasFooter says so).
      EndSegment(/*clean=*/true).IgnoreError();
    }
    return Status::OK();
  }

  // A new leader's wait for its group to fill (WalWriterOptions::group_commit_wait): a
  // real-time wait in CondVar, not a clock's (it bounds a wait that only groups records,
  // like a lock's spin, and must never hang on a test's manual clock). Arrivals that fill
  // the queue, RollSegment and Close signal it; a spurious wakeup waits once more.
  void GatherGroup() STRATA_REQUIRES(mu) {
    if (options.group_commit_wait.count() <= 0) return;
    gathering = true;
    while (queue.size() < last_group_size && lead_waiters == 0 && !closed) {
      if (!gather_cv.WaitFor(mu, options.group_commit_wait)) break;  // timed out
    }
    gathering = false;
  }

  // Waits until no leader runs and takes the role.
  void BecomeLeader() STRATA_REQUIRES(mu) {
    ++lead_waiters;
    if (gathering) gather_cv.Signal();  // a gathering leader writes now
    while (leader_active) cv.Wait(mu);
    --lead_waiters;
    leader_active = true;
  }
  // Hands the lead to the oldest queued Append, which alone wakes (waking every waiter to
  // race for the mutex cost ~10 futex calls per group under load), unless a RollSegment
  // waits for it: then the roll leads next and hands over to the queue when it ends.
  void EndLeadership() STRATA_REQUIRES(mu) {
    if (lead_waiters == 0 && !queue.empty()) {
      PendingRecord* next = queue.front();
      next->state.store(kLead, std::memory_order_release);
      next->state.notify_one();
      return;  // leader_active stays set: the lead passed on
    }
    leader_active = false;
    cv.SignalAll();  // RollSegment and Close wait on the condition variable
  }

  const std::shared_ptr<ObjectStore> store;
  const std::string prefix;
  const Uuid shard;
  const uint64_t epoch;
  const WalWriterOptions options;
  // EncodeFileHeader(*options.file_schema); empty without a file schema.
  const std::string file_header;
  // With a file schema: checks payloads (wal_file.cc).
  internal::FilePayloadChecker checker;

  Mutex mu;
  CondVar cv;
  std::deque<PendingRecord*> queue STRATA_GUARDED_BY(mu);
  // True while one thread (an Append leader, RollSegment or Close) owns the segment state.
  bool leader_active STRATA_GUARDED_BY(mu) = false;
  // Threads in BecomeLeader waiting for the lead.
  int lead_waiters STRATA_GUARDED_BY(mu) = 0;
  // Records in the last group written, and whether a leader waits for its queue to grow that
  // long (GatherGroup; signalled by gather_cv).
  size_t last_group_size STRATA_GUARDED_BY(mu) = 0;
  bool gathering STRATA_GUARDED_BY(mu) = false;
  CondVar gather_cv;
  bool closed STRATA_GUARDED_BY(mu) = false;
  pb::WalPosition last_position STRATA_GUARDED_BY(mu);
  // Segments this writer ended with a footer.
  std::set<uint64_t> segments_with_footer STRATA_GUARDED_BY(mu);

  // Set by StopFileSegments: payloads are no longer checked, no footer is written any more
  // and later segments are format 1 (an open segment keeps its header, without a footer).
  std::atomic<bool> files_stopped{false};

  // Owned by the thread with leader_active set.
  std::unique_ptr<AppendableObject> segment;  // null: the next group starts segment_number
  uint64_t segment_number;
  // The segment number whose creation last failed (UINT64_MAX: none).
  uint64_t create_failed_for = UINT64_MAX;
  uint64_t next_sequence = 0;
  // With a file schema: the open segment has no bytes yet (its header is still to come),
  // and the messages written to it so far that its footer names.
  bool header_pending = false;
  internal::SegmentFileIndex file_index;
};

WalWriter::WalWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

WalWriter::~WalWriter() {
  if (impl_ != nullptr) Close().IgnoreError();
}

Result<std::unique_ptr<WalWriter>> WalWriter::Open(std::shared_ptr<ObjectStore> store,
                                                   std::string store_prefix, Uuid shard,
                                                   uint64_t epoch, uint64_t first_segment,
                                                   WalWriterOptions options) {
  if (store == nullptr) return Status::InvalidArgument("WAL writer needs an object store");
  if (options.max_segment_bytes <= 0) {
    return Status::InvalidArgument(
        fmt::format("WAL max_segment_bytes must be positive, got {}", options.max_segment_bytes));
  }
  std::string file_header;
  if (options.file_schema != nullptr) {
    STRATA_ASSIGN_OR_RETURN(file_header, internal::EncodeSegmentFileHeader(*options.file_schema));
  }
  auto impl = std::make_unique<Impl>(std::move(store), std::move(store_prefix), shard, epoch,
                                     first_segment, std::move(options), std::move(file_header));
  STRATA_RETURN_IF_ERROR(impl->StartSegment());
  return std::unique_ptr<WalWriter>(new WalWriter(std::move(impl)));
}

Result<pb::WalPosition> WalWriter::Append(
    WalRecordKind kind, std::string payload,
    const std::function<void(const pb::WalPosition& end)>& on_durable) {
  return AppendView(kind, payload, on_durable);
}

Result<pb::WalPosition> WalWriter::AppendView(
    WalRecordKind kind, std::string_view payload,
    const std::function<void(const pb::WalPosition& end)>& on_durable) {
  if (!IsKnownKind(static_cast<uint32_t>(kind))) {
    return Status::InvalidArgument(
        fmt::format("unknown WAL record kind {}", static_cast<uint32_t>(kind)));
  }
  if (static_cast<int64_t>(payload.size()) > kMaxWalPayload) {
    return Status::InvalidArgument(fmt::format(
        "WAL record payload of {} bytes exceeds the limit {}", payload.size(), kMaxWalPayload));
  }
  Impl& w = *impl_;
  PendingRecord record{kind, payload, &on_durable};
  if (w.WritesFiles()) {
    STRATA_ASSIGN_OR_RETURN(record.messages, w.checker.Scan(kind, payload));
  }
  w.mu.Lock();
  if (w.closed) {
    w.mu.Unlock();
    return Status::InvalidArgument(fmt::format("WAL writer of epoch {} is closed", w.epoch));
  }
  w.queue.push_back(&record);
  if (w.gathering && w.queue.size() >= w.last_group_size) w.gather_cv.Signal();
  if (w.leader_active) {
    // Another thread leads: wait until it wrote this record or handed this thread the lead.
    w.mu.Unlock();
    record.state.wait(kQueued, std::memory_order_acquire);
    w.mu.Lock();
  } else {
    w.leader_active = true;
  }
  if (record.state.load(std::memory_order_relaxed) != kDone) {
    // Leader: the queue holds this record and everything that arrived since.
    w.GatherGroup();
    std::vector<PendingRecord*> group(w.queue.begin(), w.queue.end());
    w.queue.clear();
    w.last_group_size = group.size();
    w.mu.Unlock();
    Status s = w.WriteGroup(group);
    w.mu.Lock();
    for (PendingRecord* member : group) {
      member->status = s;
      member->state.store(kDone, std::memory_order_release);
      member->state.notify_one();
    }
    if (s.ok()) w.last_position = group.back()->end;
    w.EndLeadership();
  }
  w.mu.Unlock();
  if (!record.status.ok()) return record.status;
  return record.end;
}

Result<pb::WalPosition> WalWriter::RollSegment() {
  Impl& w = *impl_;
  w.mu.Lock();
  if (w.closed) {
    w.mu.Unlock();
    return Status::InvalidArgument(fmt::format("WAL writer of epoch {} is closed", w.epoch));
  }
  w.BecomeLeader();
  w.mu.Unlock();
  pb::WalPosition end;
  Status s;
  if (w.segment != nullptr) {
    // Past the last record (before the footer the roll adds).
    end = MakeWalPosition(w.epoch, w.segment_number, static_cast<uint64_t>(w.segment->size()));
    s = w.EndSegment(/*clean=*/true);
  } else {
    // Nothing is open (rolled already, or abandoned after an error): every record written
    // so far lies before the start of the segment the next Append creates.
    end = MakeWalPosition(w.epoch, w.segment_number, 0);
  }
  w.mu.Lock();
  w.EndLeadership();
  w.mu.Unlock();
  if (!s.ok()) return s;
  return end;
}

void WalWriter::StopFileSegments() { impl_->files_stopped.store(true, std::memory_order_release); }

bool WalWriter::SegmentHasFooter(uint64_t segment) const {
  MutexLock lock(impl_->mu);
  return impl_->segments_with_footer.count(segment) != 0;
}

pb::WalPosition WalWriter::last_position() const {
  MutexLock lock(impl_->mu);
  return impl_->last_position;
}

uint64_t WalWriter::epoch() const { return impl_->epoch; }

Status WalWriter::Close() {
  Impl& w = *impl_;
  w.mu.Lock();
  // Pending Appends finish first: their waiters lead groups until the queue is empty.
  if (w.gathering) w.gather_cv.Signal();
  while (w.leader_active || !w.queue.empty()) w.cv.Wait(w.mu);
  if (w.closed) {
    w.mu.Unlock();
    return Status::OK();
  }
  w.closed = true;
  w.leader_active = true;
  w.mu.Unlock();
  Status s;
  if (w.segment != nullptr) {
    if (w.WritesFiles()) s = w.WriteFooter();
    Status closed = w.segment->Close();
    if (s.ok()) s = closed;
    w.segment.reset();
  }
  w.mu.Lock();
  w.EndLeadership();
  w.mu.Unlock();
  return s;
}

// ---------------------------------------------------------------------------------------
// Reading

Result<std::vector<WalSegment>> ListWalSegments(ObjectStore& store, std::string_view store_prefix,
                                                const Uuid& shard) {
  const std::string dir = WalDir(store_prefix, shard);
  STRATA_ASSIGN_OR_RETURN(std::vector<ObjectMeta> objects, store.List(dir));
  std::vector<WalSegment> segments;
  for (ObjectMeta& object : objects) {
    std::string_view name = std::string_view(object.key).substr(dir.size());
    std::optional<std::pair<uint64_t, uint64_t>> parsed = ParseWalSegmentName(name);
    if (!parsed.has_value()) continue;  // not a segment (nothing else is written here)
    segments.push_back({std::move(object.key), parsed->first, parsed->second, object.size});
  }
  std::sort(segments.begin(), segments.end(), [](const WalSegment& a, const WalSegment& b) {
    return std::make_pair(a.epoch, a.segment) < std::make_pair(b.epoch, b.segment);
  });
  return segments;
}

Status ReadWalSegment(const WalSegment& segment, std::string_view data, uint64_t start,
                      ReplayStats& stats, const std::function<Status(const WalRecord&)>& fn) {
  auto corruption = [&](uint64_t offset, std::string_view what) {
    return Status::Corruption(
        fmt::format("WAL segment '{}': record at offset {}: {}", segment.key, offset, what));
  };
  if (start > data.size()) {
    return Status::Corruption(fmt::format(
        "WAL segment '{}' has {} bytes, fewer than the replay start offset {}: records are lost",
        segment.key, data.size(), start));
  }
  STRATA_ASSIGN_OR_RETURN(std::optional<uint64_t> records_start,
                          internal::RecordsStart(segment, data));
  if (!records_start.has_value()) {
    ++stats.torn_tails;  // the header (and with it the first record) is torn
    return Status::OK();
  }
  // Format 2: the IPC end-of-stream marker at a record boundary starts the footer. With a
  // complete footer the records end exactly where it starts, and none of them is torn.
  const bool has_header = *records_start > 0;
  std::optional<uint64_t> footer_start;
  if (has_header) footer_start = internal::CompleteFooterStart(data, *records_start);
  if (footer_start.has_value()) {
    if (start > *footer_start) {
      return Status::Corruption(fmt::format(
          "WAL segment '{}': replay start offset {} lies past its records, which end at {}",
          segment.key, start, *footer_start));
    }
    data = data.substr(0, *footer_start);
  }
  // A record that looks torn is corruption when the segment was ended cleanly.
  auto torn = [&](uint64_t offset, std::string_view what) {
    if (footer_start.has_value()) {
      return corruption(offset, fmt::format("{} in a segment ended by a footer", what));
    }
    ++stats.torn_tails;
    return Status::OK();
  };
  if (start == 0) {
    start = *records_start;
  } else if (start < *records_start) {
    return Status::Corruption(fmt::format(
        "WAL segment '{}': replay start offset {} lies inside its {}-byte IPC file header",
        segment.key, start, *records_start));
  }
  // The sequence of the next record; unknown when replay starts inside the segment.
  std::optional<uint64_t> sequence;
  if (start == *records_start) sequence = 0;
  uint64_t offset = start;
  while (offset < data.size()) {
    const uint64_t remaining = data.size() - offset;
    if (has_header && !footer_start.has_value()) {
      // A torn footer (any prefix of it): not WAL data.
      const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining, kEndOfStream.size()));
      if (data.substr(offset, n) == kEndOfStream.substr(0, n)) break;
    }
    if (remaining < kWalHeaderSize) {
      STRATA_RETURN_IF_ERROR(torn(offset, "its header runs past the end"));
      break;
    }
    const ParsedHeader h = ParseHeader(data.data() + offset);
    if (h.extent() > remaining) {
      // Torn, unless the length field is damaged and intact records follow.
      if (IntactRecordFollows(
              data, offset + 1, segment.epoch,
              sequence.has_value() ? std::optional<uint64_t>(*sequence + 1) : std::nullopt)) {
        return corruption(offset, fmt::format("its length {} runs past the end ({} bytes), yet "
                                              "intact records follow",
                                              h.length, data.size()));
      }
      STRATA_RETURN_IF_ERROR(
          torn(offset, fmt::format("its length {} runs past the end of the records", h.length)));
      break;
    }
    const bool last = h.extent() == remaining;
    if (!ChecksumMatches(data, offset, h)) {
      if (last) {
        STRATA_RETURN_IF_ERROR(torn(offset, "checksum mismatch"));
        break;
      }
      return corruption(offset, "checksum mismatch");
    }
    if (h.magic != kWalMagic) {
      return corruption(offset, fmt::format("bad magic {:#010x}", h.magic));
    }
    if (!IsKnownKind(h.kind)) return corruption(offset, fmt::format("unknown kind {}", h.kind));
    if (h.reserved != 0) {
      return corruption(offset, fmt::format("reserved field is {}, not 0", h.reserved));
    }
    if (h.epoch != segment.epoch) {
      return corruption(offset,
                        fmt::format("epoch {} in a segment of epoch {}", h.epoch, segment.epoch));
    }
    if (sequence.has_value() && h.sequence != *sequence) {
      return corruption(offset,
                        fmt::format("sequence {} where {} was expected", h.sequence, *sequence));
    }
    sequence = h.sequence + 1;
    const uint64_t end = offset + h.extent();
    WalRecord record;
    record.kind = static_cast<WalRecordKind>(h.kind);
    record.end = MakeWalPosition(segment.epoch, segment.segment, end);
    record.payload = data.substr(offset + kWalHeaderSize, h.length);
    STRATA_RETURN_IF_ERROR(fn(record));
    ++stats.records;
    stats.bytes += static_cast<int64_t>(h.extent());
    stats.end = record.end;
    offset = end;
  }
  return Status::OK();
}

Result<ReplayStats> ReplayWal(ObjectStore& store, std::string_view store_prefix, const Uuid& shard,
                              const pb::WalPosition& after, uint64_t max_epoch,
                              const std::function<Status(const WalRecord&)>& fn) {
  STRATA_ASSIGN_OR_RETURN(std::vector<WalSegment> segments,
                          ListWalSegments(store, store_prefix, shard));
  ReplayStats stats;
  stats.end = after;
  for (const WalSegment& segment : segments) {
    if (segment.epoch > max_epoch) break;  // sorted: every later segment is newer too
    if (segment.epoch < after.epoch()) continue;
    if (segment.epoch == after.epoch() && segment.segment < after.segment()) continue;
    const bool own = segment.epoch == after.epoch() && segment.segment == after.segment();
    STRATA_ASSIGN_OR_RETURN(Buffer data, store.Get(segment.key));
    ++stats.segments;
    STRATA_RETURN_IF_ERROR(
        ReadWalSegment(segment, data.view(), own ? after.offset() : 0, stats, fn));
  }
  return stats;
}

Status CheckWalSegmentsComplete(const std::vector<WalSegment>& segments,
                                std::string_view store_prefix, const Uuid& shard,
                                const pb::WalPosition& after, uint64_t max_epoch) {
  auto missing = [&](uint64_t epoch, uint64_t segment, std::string_view evidence) {
    return Status::Corruption(
        fmt::format("WAL segment '{}' is missing ({}): acknowledged records written to it are "
                    "lost",
                    WalSegmentKey(store_prefix, shard, epoch, segment), evidence));
  };
  // The numbers of each epoch's segments that replay would read, ascending (`segments` is
  // sorted).
  std::map<uint64_t, std::vector<uint64_t>> numbers;
  for (const WalSegment& segment : segments) {
    if (segment.epoch == 0 || segment.epoch < after.epoch() || segment.epoch > max_epoch) continue;
    if (segment.epoch == after.epoch() && segment.segment < after.segment()) continue;
    numbers[segment.epoch].push_back(segment.segment);
  }
  if (after.epoch() > 0 && after.offset() == 0) {
    // The writer creates this segment before it publishes a replay position at its start,
    // and never deletes the segment a replay position names at offset 0.
    const auto it = numbers.find(after.epoch());
    if (it == numbers.end() || it->second.front() != after.segment()) {
      return missing(after.epoch(), after.segment(),
                     fmt::format("the shard manifest's replay position ({}, {}, 0) names it",
                                 after.epoch(), after.segment()));
    }
  }
  for (const auto& [epoch, list] : numbers) {
    // The first segment replay may find: an epoch's writer starts at 0; in the replay
    // position's own epoch, replay starts in its segment, which may be gone when a
    // generation covers it up to its very end (the segment after it comes next).
    uint64_t latest_first = 0;
    if (epoch == after.epoch()) {
      latest_first = after.offset() > 0 ? after.segment() + 1 : after.segment();
    }
    if (list.front() > latest_first) {
      return missing(epoch, latest_first,
                     fmt::format("segment {} of epoch {} exists", list.front(), epoch));
    }
    for (size_t i = 1; i < list.size(); ++i) {
      if (list[i] != list[i - 1] + 1) {
        return missing(
            epoch, list[i - 1] + 1,
            fmt::format("segments {} and {} of epoch {} exist", list[i - 1], list[i], epoch));
      }
    }
  }
  return Status::OK();
}

Result<int64_t> DeleteCoveredWalSegments(ObjectStore& store, std::string_view store_prefix,
                                         const Uuid& shard, const pb::WalPosition& covered) {
  STRATA_ASSIGN_OR_RETURN(std::vector<WalSegment> segments,
                          ListWalSegments(store, store_prefix, shard));
  int64_t deleted = 0;
  for (const WalSegment& segment : segments) {
    const bool is_covered =
        segment.epoch < covered.epoch() ||
        (segment.epoch == covered.epoch() && segment.segment < covered.segment());
    if (!is_covered) continue;
    Status s = store.Delete(segment.key);
    if (s.IsNotFound()) continue;  // deleted concurrently
    STRATA_RETURN_IF_ERROR(s.WithContext("delete covered WAL segment"));
    ++deleted;
  }
  return deleted;
}

}  // namespace strata::lsm
