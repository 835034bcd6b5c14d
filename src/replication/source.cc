// The source side of replication: MarkBase, ExportChanges, GetSourceStatus, Trim, Unmark
// (include/strata/replication.h, docs/replication.md).
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "lsm/key.h"
#include "replication/bundle_internal.h"
#include "replication/refusal.h"
#include "replication/source_state.h"
#include "replication/store_access.h"
#include "strata/builder.h"
#include "strata/replication.h"
#include "util/checksum.h"
#include "util/clock.h"
#include "util/uuid.h"

namespace strata::replication {
namespace {

using internal::ChainRecord;

constexpr std::string_view kRefusedPrefix = "refused (";

Status Refused(Refusal refusal, std::string_view message) {
  StatusCode code = StatusCode::kAborted;
  switch (refusal) {
    case Refusal::kDigest:
      code = StatusCode::kCorruption;
      break;
    case Refusal::kSchema:
      code = StatusCode::kInvalidArgument;
      break;
    case Refusal::kExists:
      code = StatusCode::kAlreadyExists;
      break;
    case Refusal::kBusy:
      code = StatusCode::kBusy;
      break;
    case Refusal::kNotMarked:
      code = StatusCode::kNotFound;
      break;
    case Refusal::kCursor:
    case Refusal::kDiverged:
    case Refusal::kTooOld:
      break;
  }
  return Status(code, fmt::format("{}{}): {}", kRefusedPrefix, RefusalName(refusal), message));
}

Result<ChainRecord> RequireChain(const StoreLocation& source) {
  STRATA_ASSIGN_OR_RETURN(std::optional<ChainRecord> chain, internal::ReadChain(source));
  if (!chain) {
    return Refused(Refusal::kNotMarked,
                   fmt::format("the store at '{}' has no replication chain; mark a base first "
                               "(strata replicate mark-base)",
                               source.prefix));
  }
  return std::move(*chain);
}

// ---------------------------------------------------------------------------------------
// Staging: a private local directory per export, removed when the export ends. A killed
// export's directory is removed by the next export that stages in the same place.

constexpr std::string_view kStagingPrefix = "strata-export-";

void SweepDeadStaging(const std::filesystem::path& dir) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(kStagingPrefix)) continue;
    const std::string rest = name.substr(kStagingPrefix.size());
    const pid_t pid = static_cast<pid_t>(std::strtol(rest.c_str(), nullptr, 10));
    if (pid <= 0 || pid == getpid()) continue;
    if (kill(pid, 0) == -1 && errno == ESRCH) std::filesystem::remove_all(entry.path(), ec);
  }
}

class Staging {
 public:
  static Result<std::unique_ptr<Staging>> Make(const std::string& configured) {
    std::error_code ec;
    std::filesystem::path dir = configured.empty() ? std::filesystem::temp_directory_path(ec)
                                                   : std::filesystem::path(configured);
    if (ec) return Status::IOError(fmt::format("no temporary directory: {}", ec.message()));
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return Status::IOError(
          fmt::format("cannot create staging directory '{}': {}", dir.string(), ec.message()));
    }
    SweepDeadStaging(dir);
    const std::string name = fmt::format("{}{}-{}", kStagingPrefix, getpid(),
                                         UuidV4(*SystemRandom()).ToString().substr(0, 8));
    std::filesystem::path path = dir / name;
    LocalObjectStoreOptions options;
    options.sync = false;  // published bundles are synced; staging never needs to survive
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> store,
                            OpenLocalObjectStore(path.string(), options));
    return std::unique_ptr<Staging>(new Staging(std::move(path), std::move(store)));
  }
  ~Staging() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ObjectStore& store() { return *store_; }
  // Drops everything staged so far (a scan that restarts).
  Status Clear() { return store_->DeletePrefix("").status(); }

 private:
  Staging(std::filesystem::path path, std::shared_ptr<ObjectStore> store)
      : path_(std::move(path)), store_(std::move(store)) {}
  std::filesystem::path path_;
  std::shared_ptr<ObjectStore> store_;
};

// ---------------------------------------------------------------------------------------
// The export's scan: compares every row with the from-state's index and cuts the changes
// into parts.

// The from-state's index as an open-addressing table over views of its batches: one hash
// and a short probe per scanned row, no allocation per key.
class OldIndex {
 public:
  Status Load(const std::vector<RecordBatch>& batches) {
    batches_ = batches;
    size_t total = 0;
    for (const RecordBatch& b : batches_) total += static_cast<size_t>(b.num_rows());
    if (total >= (size_t{1} << 31)) {
      return Status::InvalidArgument("replication state index over 2^31 keys");
    }
    entries_.clear();
    entries_.reserve(total);
    size_t slots = 16;
    while (slots < 2 * total) slots *= 2;
    slots_.assign(slots, 0);
    for (const RecordBatch& b : batches_) {
      const Array& keys = b.column(0);
      const uint64_t* lo = b.column(1).values<uint64_t>();
      const uint64_t* hi = b.column(2).values<uint64_t>();
      for (int64_t r = 0; r < b.num_rows(); ++r) {
        const std::string_view key = keys.StringValue(r);
        const uint64_t key_hash = XxHash3_64(key);
        uint32_t& slot = slots_[Probe(key, key_hash)];
        if (slot != 0) return Status::Corruption("replication state index repeats a key");
        entries_.push_back(Entry{key, key_hash, RowHash{lo[r], hi[r]}});
        slot = static_cast<uint32_t>(entries_.size());
      }
    }
    seen_.assign(entries_.size(), 0);
    return Status::OK();
  }

  // The entry holding `key`, or -1.
  int64_t Find(std::string_view key) const {
    if (entries_.empty()) return -1;
    const uint32_t slot = slots_[Probe(key, XxHash3_64(key))];
    return static_cast<int64_t>(slot) - 1;
  }
  size_t size() const { return entries_.size(); }
  std::string_view key(int64_t e) const { return entries_[static_cast<size_t>(e)].key; }
  const RowHash& hash(int64_t e) const { return entries_[static_cast<size_t>(e)].hash; }
  bool seen(int64_t e) const { return seen_[static_cast<size_t>(e)] != 0; }
  void MarkSeen(int64_t e) { seen_[static_cast<size_t>(e)] = 1; }
  void ClearSeen() { std::fill(seen_.begin(), seen_.end(), 0); }

 private:
  struct Entry {
    std::string_view key;
    uint64_t key_hash;
    RowHash hash;
  };
  // The slot holding `key`, or the empty slot where it goes (linear probing, at most half
  // full).
  size_t Probe(std::string_view key, uint64_t key_hash) const {
    const size_t mask = slots_.size() - 1;
    for (size_t i = key_hash & mask;; i = (i + 1) & mask) {
      const uint32_t slot = slots_[i];
      if (slot == 0) return i;
      const Entry& e = entries_[slot - 1];
      if (e.key_hash == key_hash && e.key == key) return i;
    }
  }

  std::vector<RecordBatch> batches_;  // the keys' storage
  std::vector<Entry> entries_;
  std::vector<uint32_t> slots_;  // entry index + 1; 0 = empty
  std::vector<uint8_t> seen_;
};

struct Part {
  std::string staged_rows;  // staging key of the rows section ("" = no rows)
  int64_t rows = 0;
  std::vector<std::string_view> deleted;  // encoded keys (views into the old index)
  ContentChecksum content;                // after this part
};

class ChangeCollector {
 public:
  ChangeCollector(SchemaPtr schema, const ExportOptions& options, Staging& staging,
                  const ContentChecksum& from)
      : schema_(std::move(schema)),
        options_(options),
        staging_(staging),
        from_(from),
        running_(from) {}

  // The old index: keys that exist at the from-state.
  Status Load(const std::vector<RecordBatch>& batches) { return old_.Load(batches); }

  Status Consume(const internal::HashedBatch& b) {
    std::vector<int64_t> changed;
    // Per changed row: the hash it replaces (if the key existed) and its own.
    std::vector<std::pair<std::optional<RowHash>, RowHash>> deltas;
    for (size_t r = 0; r < b.hashes->size(); ++r) {
      const std::string_view key = (*b.keys)[r];
      const RowHash& hash = (*b.hashes)[r];
      STRATA_RETURN_IF_ERROR(index_.Add(key, hash));
      scanned_content_.Add(hash);
      ++scanned_;
      std::optional<RowHash> replaced;
      const int64_t entry = old_.Find(key);
      if (entry >= 0) {
        old_.MarkSeen(entry);
        if (old_.hash(entry) == hash) continue;
        replaced = old_.hash(entry);
      }
      deltas.emplace_back(replaced, hash);
      changed.push_back(static_cast<int64_t>(r));
    }
    if (changed.empty()) return Status::OK();
    std::vector<Array> columns;
    for (const Array& column : b.rows->columns()) {
      STRATA_ASSIGN_OR_RETURN(Array taken, Take(column, changed));
      columns.push_back(std::move(taken));
    }
    STRATA_ASSIGN_OR_RETURN(
        RecordBatch rows,
        RecordBatch::Make(schema_, static_cast<int64_t>(changed.size()), std::move(columns)));
    // Cut at max_rows exactly; max_bytes is checked per batch added.
    int64_t at = 0;
    while (at < rows.num_rows()) {
      const int64_t room = options_.max_rows - pending_rows_;
      const int64_t take = std::min(room, rows.num_rows() - at);
      RecordBatch piece = rows.Slice(at, take);
      // A part's to-state content counts exactly the rows cut into it so far.
      for (int64_t r = at; r < at + take; ++r) {
        const auto& [replaced, hash] = deltas[static_cast<size_t>(r)];
        if (replaced) running_.Remove(*replaced);
        running_.Add(hash);
      }
      pending_bytes_ += piece.BufferBytes();
      pending_rows_ += take;
      pending_.push_back(std::move(piece));
      at += take;
      if (pending_rows_ >= options_.max_rows || pending_bytes_ >= options_.max_bytes) {
        STRATA_RETURN_IF_ERROR(CloseRowPart());
      }
    }
    total_rows_ += rows.num_rows();
    return Status::OK();
  }

  Status Restart() {
    old_.ClearSeen();
    index_.Reset();
    scanned_content_ = ContentChecksum{};
    scanned_ = 0;
    running_ = from_;
    parts_.clear();
    pending_.clear();
    pending_rows_ = 0;
    pending_bytes_ = 0;
    total_rows_ = 0;
    return staging_.Clear();
  }

  // After the scan: keys of the old index it did not meet are deletions.
  Status Finish() {
    std::vector<std::pair<std::string_view, RowHash>> gone;
    for (size_t e = 0; e < old_.size(); ++e) {
      const auto entry = static_cast<int64_t>(e);
      if (!old_.seen(entry)) gone.emplace_back(old_.key(entry), old_.hash(entry));
    }
    // Deterministic order (the index's is the scan order of its export).
    std::sort(gone.begin(), gone.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    deletions_ = static_cast<int64_t>(gone.size());
    // The open part takes deletions up to max_rows in all, then parts of deletions only.
    Part part;
    STRATA_RETURN_IF_ERROR(StagePending(&part));
    for (const auto& [key, hash] : gone) {
      if (part.rows + static_cast<int64_t>(part.deleted.size()) >= options_.max_rows) {
        part.content = running_;
        parts_.push_back(std::move(part));
        part = Part{};
      }
      part.deleted.push_back(key);
      running_.Remove(hash);
    }
    if (part.rows > 0 || !part.deleted.empty()) {
      part.content = running_;
      parts_.push_back(std::move(part));
    }
    if (!(running_ == scanned_content_)) {
      return Status::Internal(fmt::format(
          "export: the change's checksum ({}) does not lead to the scanned content ({})",
          running_.ToString(), scanned_content_.ToString()));
    }
    return Status::OK();
  }

  std::vector<Part>& parts() { return parts_; }
  internal::IndexBuilder& index() { return index_; }
  const ContentChecksum& content() const { return scanned_content_; }
  int64_t rows() const { return total_rows_; }
  int64_t deletions() const { return deletions_; }
  int64_t scanned() const { return scanned_; }

 private:
  Status StagePending(Part* part) {
    if (pending_rows_ == 0) return Status::OK();
    STRATA_ASSIGN_OR_RETURN(std::string section, internal::WriteRowsSection(schema_, pending_));
    part->staged_rows = fmt::format("rows-{:06}", staged_++);
    STRATA_RETURN_IF_ERROR(staging_.store().Put(part->staged_rows, section));
    part->rows = pending_rows_;
    pending_.clear();
    pending_rows_ = 0;
    pending_bytes_ = 0;
    return Status::OK();
  }

  Status CloseRowPart() {
    Part part;
    STRATA_RETURN_IF_ERROR(StagePending(&part));
    part.content = running_;
    parts_.push_back(std::move(part));
    return Status::OK();
  }

  const SchemaPtr schema_;
  const ExportOptions& options_;
  Staging& staging_;
  const ContentChecksum from_;

  OldIndex old_;

  internal::IndexBuilder index_;
  ContentChecksum scanned_content_;
  int64_t scanned_ = 0;
  ContentChecksum running_;
  std::vector<Part> parts_;
  std::vector<RecordBatch> pending_;
  int64_t pending_rows_ = 0;
  int64_t pending_bytes_ = 0;
  int64_t total_rows_ = 0;
  int64_t deletions_ = 0;
  int staged_ = 0;
};

Result<RecordBatch> DeletionBatch(const std::vector<std::string_view>& encoded,
                                  const Field& key_field) {
  std::vector<expr::Scalar> keys;
  keys.reserve(encoded.size());
  for (std::string_view e : encoded) {
    STRATA_ASSIGN_OR_RETURN(expr::Scalar k, lsm::DecodeKey(e, *key_field.type()));
    keys.push_back(std::move(k));
  }
  STRATA_ASSIGN_OR_RETURN(Array column, lsm::KeysToArray(keys, key_field.type()));
  auto schema = std::make_shared<Schema>(
      std::vector<FieldPtr>{field(key_field.name(), key_field.type(), /*nullable=*/false)});
  return RecordBatch::Make(schema, column.length(), {column});
}

Hash256 TrailerDigest(std::string_view bundle) {
  Hash256 digest{};
  std::memcpy(digest.data(), bundle.data() + bundle.size() - 36, digest.size());
  return digest;
}

}  // namespace

std::string_view RefusalName(Refusal refusal) {
  switch (refusal) {
    case Refusal::kCursor:
      return "Cursor";
    case Refusal::kDiverged:
      return "Diverged";
    case Refusal::kDigest:
      return "Digest";
    case Refusal::kSchema:
      return "Schema";
    case Refusal::kTooOld:
      return "TooOld";
    case Refusal::kExists:
      return "Exists";
    case Refusal::kBusy:
      return "Busy";
    case Refusal::kNotMarked:
      return "NotMarked";
  }
  return "?";
}

std::optional<Refusal> RefusalOf(const Status& status) {
  std::string_view message = status.message();
  if (status.ok() || !message.starts_with(kRefusedPrefix)) return std::nullopt;
  message.remove_prefix(kRefusedPrefix.size());
  for (Refusal r : {Refusal::kCursor, Refusal::kDiverged, Refusal::kDigest, Refusal::kSchema,
                    Refusal::kTooOld, Refusal::kExists, Refusal::kBusy, Refusal::kNotMarked}) {
    const std::string_view name = RefusalName(r);
    if (message.starts_with(name) && message.substr(name.size()).starts_with("):")) return r;
  }
  return std::nullopt;
}

namespace internal {
Status MakeRefusal(Refusal refusal, std::string_view message) { return Refused(refusal, message); }
}  // namespace internal

std::string BundleKey(const BundleHeader& header, bool full) {
  return fmt::format("{}{:020}.{}-{:020}.{}.bundle", full ? "full-" : "", header.from.cursor,
                     header.from.part, header.to.cursor, header.to.part);
}

Result<MarkReport> MarkBase(const StoreLocation& source, std::string_view token,
                            const MarkOptions& options) {
  Clock* clock = options.clock != nullptr ? options.clock : SystemClock();
  const int64_t start = clock->MonotonicNanos();
  RandomSource* random = options.random != nullptr ? options.random : SystemRandom();
  STRATA_ASSIGN_OR_RETURN(std::optional<ChainRecord> existing, internal::ReadChain(source));
  if (existing && !options.replace) {
    return Status::AlreadyExists(fmt::format(
        "the store at '{}' is already marked (chain {}, token '{}'); re-marking starts a new "
        "chain whose bundles no replica of this one accepts (--replace)",
        source.prefix, existing->chain_id, existing->token));
  }
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<store::StorageBase> store, internal::OpenStore(source));
  STRATA_ASSIGN_OR_RETURN(internal::FullScan scan, internal::ScanAll(*store));
  if (existing) STRATA_RETURN_IF_ERROR(Unmark(source));

  ChainRecord chain;
  chain.chain_id = UuidV4(*random).ToString();
  chain.token = std::string(token);
  chain.store_kind = internal::StoreKindOf(*store);
  chain.key_column = store->key_column();
  chain.schema_hash = internal::SchemaHashOf(*store);
  chain.base.content = scan.content;
  chain.base.id = BaseStateId(chain.chain_id, chain.token, chain.schema_hash, scan.content);
  chain.created_at_micros = clock->NowMicros();
  // The index first: a chain record always names a base whose index exists.
  STRATA_RETURN_IF_ERROR(internal::WriteState(source, chain.base, scan.index));
  STRATA_RETURN_IF_ERROR(internal::WriteChain(source, chain));

  MarkReport report;
  report.chain_id = chain.chain_id;
  report.token = chain.token;
  report.store_kind = chain.store_kind;
  report.schema_hash = chain.schema_hash;
  report.base = chain.base;
  report.source_version = scan.version;
  report.seconds = internal::SecondsSince(*clock, start);
  return report;
}

Result<ExportReport> ExportChanges(const StoreLocation& source, ObjectStore& destination,
                                   std::string_view destination_prefix,
                                   const ExportOptions& options) {
  Clock* clock = options.clock != nullptr ? options.clock : SystemClock();
  const int64_t start = clock->MonotonicNanos();
  if (options.max_rows <= 0 || options.max_bytes <= 0) {
    return Status::InvalidArgument(fmt::format("max_rows ({}) and max_bytes ({}) must be > 0",
                                               options.max_rows, options.max_bytes));
  }
  if (options.full && options.since) {
    return Status::InvalidArgument("a full export starts at the empty state: no `since`");
  }
  STRATA_RETURN_IF_ERROR(ValidateObjectPrefix(destination_prefix));
  STRATA_ASSIGN_OR_RETURN(ChainRecord chain, RequireChain(source));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<store::StorageBase> store, internal::OpenStore(source));
  if (internal::SchemaHashOf(*store) != chain.schema_hash) {
    return Refused(Refusal::kSchema,
                   "the source's schema changed since its base was marked; re-mark it "
                   "(mark-base --replace) and re-seed the replicas");
  }

  // The state to start from, and its index.
  ExportReport report;
  report.chain_id = chain.chain_id;
  std::vector<RecordBatch> old_index;
  if (options.full) {
    report.from = internal::EmptyState(chain);
  } else {
    STRATA_ASSIGN_OR_RETURN(std::vector<internal::KeptState> kept, internal::ListStates(source));
    const uint64_t head = internal::NewestCursor(kept);
    const uint64_t since = options.since.value_or(head);
    STRATA_ASSIGN_OR_RETURN(std::optional<internal::StateIndex> state,
                            internal::ReadState(source, since));
    if (!state) {
      if (since > head) {
        return Refused(Refusal::kCursor,
                       fmt::format("cursor {} was never exported (the newest is {})", since, head));
      }
      return Refused(Refusal::kTooOld,
                     fmt::format("cursor {} is no longer kept (trim floor {}); re-seed the "
                                 "replica from a full export",
                                 since, chain.trim_floor));
    }
    report.from = state->state;
    old_index = std::move(state->batches);
  }
  if (!options.consumer.empty() && !options.full) {
    STRATA_RETURN_IF_ERROR(
        internal::WriteConsumer(source, Consumer{.id = options.consumer,
                                                 .cursor = report.from.cursor,
                                                 .last_seen_micros = clock->NowMicros()}));
  }

  // Scan and stage.
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<Staging> staging, Staging::Make(options.staging_dir));
  const SchemaPtr schema = store->schema();
  ChangeCollector changes(schema, options, *staging, report.from.content);
  STRATA_RETURN_IF_ERROR(changes.Load(old_index));
  STRATA_ASSIGN_OR_RETURN(
      report.source_version,
      internal::ScanHashed(
          *store, [&](const internal::HashedBatch& b) { return changes.Consume(b); },
          [&] { return changes.Restart(); }));
  STRATA_RETURN_IF_ERROR(changes.Finish());
  report.rows_scanned = changes.scanned();
  report.scan_seconds = internal::SecondsSince(*clock, start);
  std::vector<Part>& parts = changes.parts();
  if (parts.empty() && !options.full) {
    report.to = report.from;
    report.seconds = internal::SecondsSince(*clock, start);
    return report;
  }
  if (parts.empty()) parts.push_back(Part{.content = changes.content()});

  // A cursor for the new state, then every bundle (staged), then the state's index, then
  // the bundles, last part first.
  STRATA_ASSIGN_OR_RETURN(const uint64_t cursor, internal::ReserveCursor(source));
  const FieldPtr key_field = schema->field(schema->GetFieldIndex(store->key_column()));
  BundleWriteOptions write_options;
  write_options.hmac_secret = options.hmac_secret;
  ChainState at = report.from;
  const auto n = static_cast<uint32_t>(parts.size());
  for (uint32_t k = 1; k <= n; ++k) {
    Part& part = parts[k - 1];
    BundleHeader header;
    header.store_id = chain.chain_id;
    header.store_kind = chain.store_kind;
    header.key_column = chain.key_column;
    header.token = chain.token;
    header.from = at;
    header.to.cursor = cursor;
    header.to.part = k == n ? 0 : k;
    header.to.content = part.content;
    header.part = k;
    header.parts = n;
    header.created_at_micros = clock->NowMicros();
    header.source_version = report.source_version;
    header.trim_floor = chain.trim_floor;
    std::string rows_section;
    if (part.staged_rows.empty()) {
      STRATA_ASSIGN_OR_RETURN(rows_section, internal::WriteRowsSection(schema, {}));
    } else {
      STRATA_ASSIGN_OR_RETURN(Buffer staged, staging->store().Get(part.staged_rows));
      rows_section = std::string(staged.view());
      STRATA_RETURN_IF_ERROR(staging->store().Delete(part.staged_rows));
    }
    STRATA_ASSIGN_OR_RETURN(RecordBatch deletions, DeletionBatch(part.deleted, *key_field));
    STRATA_ASSIGN_OR_RETURN(std::string bytes,
                            internal::AssembleBundle(header, *schema, rows_section, part.rows,
                                                     deletions, write_options));
    PublishedBundle published;
    published.digest = TrailerDigest(bytes);
    header.row_count = part.rows;
    header.deletion_count = deletions.num_rows();
    header.schema_hash = chain.schema_hash;
    header.digest_kind =
        write_options.hmac_secret.empty() ? DigestKind::kSha256 : DigestKind::kHmacSha256;
    header.to.id = NextStateId(header.from, header.to.cursor, header.to.part, header.to.content,
                               published.digest);
    published.key = std::string(destination_prefix) + BundleKey(header, options.full);
    published.bytes = static_cast<int64_t>(bytes.size());
    published.header = header;
    at = header.to;
    STRATA_RETURN_IF_ERROR(staging->store().Put(fmt::format("bundle-{:06}", k), bytes));
    report.bundles.push_back(std::move(published));
    report.bytes += static_cast<int64_t>(bytes.size());
  }
  report.to = at;
  report.rows = changes.rows();
  report.deletions = changes.deletions();

  // Never over an existing bundle: checked before the state is recorded, and again by
  // every PutIfAbsent.
  for (const PublishedBundle& b : report.bundles) {
    STRATA_ASSIGN_OR_RETURN(bool exists, destination.Exists(b.key));
    if (exists) {
      // Best effort: a reservation left behind is skipped by exports and removed by Trim.
      source.store->Delete(internal::StateKey(source, cursor)).IgnoreError();
      return Refused(Refusal::kExists,
                     fmt::format("'{}' is already published in {}; nothing was published", b.key,
                                 destination.Describe()));
    }
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> index, changes.index().Finish());
  STRATA_RETURN_IF_ERROR(internal::WriteState(source, report.to, index));

  const int64_t publish_start = clock->MonotonicNanos();
  for (uint32_t k = n; k >= 1; --k) {
    const PublishedBundle& b = report.bundles[k - 1];
    STRATA_ASSIGN_OR_RETURN(Buffer bytes, staging->store().Get(fmt::format("bundle-{:06}", k)));
    Status put = destination.PutIfAbsent(b.key, bytes.view());
    if (put.IsAlreadyExists()) {
      return Refused(Refusal::kExists,
                     fmt::format("'{}' was published by someone else meanwhile in {}", b.key,
                                 destination.Describe()));
    }
    STRATA_RETURN_IF_ERROR(put.WithContext(fmt::format("publish '{}'", b.key)));
    if (options.progress) options.progress(static_cast<int>(n - k + 1), static_cast<int>(n));
  }
  report.publish_seconds = internal::SecondsSince(*clock, publish_start);
  report.seconds = internal::SecondsSince(*clock, start);
  return report;
}

Result<SourceStatus> GetSourceStatus(const StoreLocation& source) {
  SourceStatus out;
  STRATA_ASSIGN_OR_RETURN(std::optional<ChainRecord> chain, internal::ReadChain(source));
  if (!chain) return out;
  out.marked = true;
  out.chain_id = chain->chain_id;
  out.token = chain->token;
  out.store_kind = chain->store_kind;
  out.schema_hash = chain->schema_hash;
  out.base = chain->base;
  out.trim_floor = chain->trim_floor;
  STRATA_ASSIGN_OR_RETURN(std::vector<internal::KeptState> kept, internal::ListStates(source));
  for (const internal::KeptState& k : kept) {
    out.kept_bytes += k.bytes;
    if (k.reserved) continue;
    STRATA_ASSIGN_OR_RETURN(std::optional<internal::StateIndex> state,
                            internal::ReadState(source, k.cursor));
    if (state) out.states.push_back(state->state);
  }
  STRATA_ASSIGN_OR_RETURN(out.consumers, internal::ReadConsumers(source));
  std::sort(out.consumers.begin(), out.consumers.end(),
            [](const Consumer& a, const Consumer& b) { return a.id < b.id; });
  return out;
}

Result<TrimReport> Trim(const StoreLocation& source) {
  STRATA_ASSIGN_OR_RETURN(ChainRecord chain, RequireChain(source));
  STRATA_ASSIGN_OR_RETURN(std::vector<internal::KeptState> kept, internal::ListStates(source));
  STRATA_ASSIGN_OR_RETURN(std::vector<Consumer> consumers, internal::ReadConsumers(source));
  uint64_t floor = internal::NewestCursor(kept);
  for (const Consumer& c : consumers) floor = std::min(floor, c.cursor);
  TrimReport report;
  report.floor = std::max(floor, chain.trim_floor);
  // The floor first: an export that reads the chain after this sees why a cursor is gone.
  if (report.floor != chain.trim_floor) {
    chain.trim_floor = report.floor;
    STRATA_RETURN_IF_ERROR(internal::WriteChain(source, chain));
  }
  for (const internal::KeptState& k : kept) {
    if (k.cursor >= report.floor) continue;
    Status deleted = source.store->Delete(internal::StateKey(source, k.cursor));
    if (!deleted.ok() && !deleted.IsNotFound()) return deleted;
    report.removed.push_back(k.cursor);
    report.bytes_removed += k.bytes;
  }
  return report;
}

Status Unmark(const StoreLocation& source) {
  return source.store->DeletePrefix(internal::ReplicationPrefix(source)).status();
}

}  // namespace strata::replication
