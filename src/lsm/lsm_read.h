// Newest-wins reads over the sources of an LSM tree: the writer's own memtables, pending
// generations (every shard) and the base table.
//
// Precedence per key: memtable (newest snapshot first) > generations (newest first) >
// base. A tombstone hides its key from every older source. A row that fails the filter
// still hides every older row of its key: de-duplication happens before filtering, so a
// filter never resurrects an overwritten row. Projection, offset and limit apply after
// de-duplication and filtering.
//
// How: every newer source (memtables, generations) is read — only key column, tombstone
// column and the columns needed — and its keys collected; their surviving rows (newest per
// key, not tombstoned, passing the filter) come first in the output (memtables first, then
// generations newest first); then the base table is scanned with the filter pushed down
// (zone maps, key index) and every row whose key appeared in a newer source is dropped.
// Memtables, and generations when there is no filter, are read whole in one pass; with a
// filter a generation is read twice: its rows with the filter pushed down, then only its
// keys (every key hides older rows, whether its row passed the filter or not). When no base
// rows follow a filtered scan (and the caller does not want the keys), the key pass is
// skipped instead: each generation's rows passing the filter are checked against the newer
// generations' bloom filters and key indexes (when the view has at most 16 generations);
// then no generation depends on another, and a scan without a limit reads them on several
// threads (LsmScanOptions::threads), emitting in the same order.
// Order: newer-source rows, then base rows in base scan order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lsm/generation.h"
#include "lsm/memtable.h"
#include "strata/array.h"
#include "strata/expr.h"
#include "strata/record_batch.h"
#include "strata/status.h"
#include "strata/table.h"

namespace strata::lsm {

// What one read sees. Sources may be empty; base may be null (generations only).
struct LsmView {
  SchemaPtr schema;  // the store schema (base table schema)
  int key_column = 0;
  std::shared_ptr<table::Table> base;
  // Newest first. Generations at or below their shard's merge watermark are already
  // excluded by whoever built the view.
  std::vector<std::shared_ptr<Generation>> generations;
  std::vector<std::shared_ptr<const MemTableSnapshot>> memtables;  // newest first
};

struct LsmScanOptions {
  std::vector<std::string> columns;  // empty = every store column
  std::string filter;                // expression language; empty = all rows
  int64_t offset = 0;
  std::optional<int64_t> limit;
  // Threads that read generations at once when a filtered scan checks rows against the newer
  // generations instead of remembering keys (no base rows follow), at most one per
  // generation: 0 = one per core (at most kMaxScanThreads) once the generations hold enough
  // rows to pay for starting threads; 1 = the calling thread alone. The output, and its
  // order, are the same either way. Scans with a limit use the calling thread alone.
  int threads = 0;
  // With threads: bytes of output read but not yet handed on that the generations' queues
  // may hold together before their threads wait (the queue being handed on always takes a
  // batch when it is empty).
  int64_t max_queued_bytes = int64_t{32} << 20;
};
inline constexpr int kMaxScanThreads = 4;

// Batches in the store schema projected to options.columns. InvalidArgument for an unknown
// column or a bad filter (before anything is read). NotFound when a generation's files
// vanished mid-read (a concurrent merge; the caller retries with a fresh view).
Result<std::vector<RecordBatch>> LsmScan(const LsmView& view, const LsmScanOptions& options);
// The batches LsmScan returns, in the same order, handed to `consume` one at a time as they
// are read instead of collected (an error from `consume` stops the scan and is returned).
Status LsmScanEach(const LsmView& view, const LsmScanOptions& options,
                   const std::function<Status(RecordBatch)>& consume);

namespace internal {
class KeySet;
}  // namespace internal

// The rows LsmScan returns from the newer sources only (memtables, generations; the base is
// not read), and into `keys` the encoded key of every row those sources hold, tombstones
// included: the keys whose base rows the view hides.
Result<std::vector<RecordBatch>> LsmScanPending(const LsmView& view, const LsmScanOptions& options,
                                                internal::KeySet* keys);

// Live rows whose key is one of `keys` (at most kMaxGetKeys), newest version of each, in
// the order of `keys` (missing and duplicate keys skipped). Newest-first per key with bloom
// filters: memtables, then generations whose bloom may contain the key, then the base key
// index for keys still unresolved. One pass per source for all keys.
inline constexpr size_t kMaxGetKeys = 1024;
Result<RecordBatch> LsmGet(const LsmView& view, const std::vector<expr::Scalar>& keys,
                           const std::vector<std::string>& columns = {});

// Logical row count (live keys) of the view, optionally filtered. Reads the same data as
// LsmScan with only the key column projected.
Result<int64_t> LsmCount(const LsmView& view, const std::string& filter = {});

namespace internal {

class KeyColumnView;

// Encoded keys (lsm/key.h) a read has met, for newest-wins de-duplication: an open-addressing
// set of (64-bit hash, key bytes) that copies key bytes into blocks of its own, so adding a
// key allocates nothing per key. A hash only picks the slot; keys are always compared in
// full, so different keys with equal hashes stay distinct. Not thread safe.
class KeySet {
 public:
  // The most keys a caller reserves room for from row counts, which overcount keys that
  // repeat (96 MiB of slots); a larger set grows as it fills.
  static constexpr int64_t kMaxReserve = int64_t{1} << 21;

  using HashFunction = uint64_t (*)(std::string_view key);
  // XxHash3_64 of the key.
  static uint64_t DefaultHash(std::string_view key);

  // `hash` is replaceable so tests can force collisions.
  explicit KeySet(HashFunction hash = &DefaultHash)
      : hash_(hash), slots_(nullptr, SlotsDeleter{0}) {}
  KeySet(const KeySet&) = delete;
  KeySet& operator=(const KeySet&) = delete;

  // Adds a copy of `key`; false (and nothing added) when the set already holds it.
  bool Insert(std::string_view key);
  bool Contains(std::string_view key) const;
  // Insert and Contains of every key of `keys`, row by row, the answers in `out` (one per
  // row, 1 = added / held). Hashes the keys first and fetches each slot ahead of its probe,
  // so a large set costs about one memory round trip per batch of keys rather than per key.
  void InsertAll(const KeyColumnView& keys, std::vector<uint8_t>* out);
  void ContainsAll(const KeyColumnView& keys, std::vector<uint8_t>* out) const;
  // Makes room for `keys` keys in all, so adding up to that many rehashes nothing.
  void Reserve(size_t keys);
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  struct Slot {
    uint64_t hash = 0;
    const char* data = nullptr;  // nullptr: the slot is empty
    size_t size = 0;
  };
  // Zeroed slots; a large array asks for transparent huge pages (one TLB entry per 2 MiB of
  // randomly probed slots).
  struct SlotsDeleter {
    size_t mapped_bytes;  // 0: from calloc
    void operator()(Slot* slots) const;
  };
  using Slots = std::unique_ptr<Slot[], SlotsDeleter>;
  static Slots AllocateSlots(size_t count);

  // The slot holding `key`, or the empty slot where it would go. REQUIRES num_slots_ > 0.
  size_t FindSlot(std::string_view key, uint64_t hash) const;
  bool InsertHashed(std::string_view key, uint64_t hash);
  void Grow();
  void Rehash(size_t slots);  // slots: a power of two, at least twice size_
  const char* CopyKey(std::string_view key);

  HashFunction hash_;
  Slots slots_;  // num_slots_ of them: 0, or a power of two and at most half full
  size_t num_slots_ = 0;
  size_t size_ = 0;
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* free_ = nullptr;  // the unused tail of the newest shared block
  size_t free_size_ = 0;
};

// The encoded keys of a key column, row by row, equal to what EncodeKeys returns but without
// a string per row: a utf8 key is its own bytes in the column; other key types are encoded
// by EncodeKeys (8 bytes each, kept inline by std::string). Views stay valid while this
// object lives.
class KeyColumnView {
 public:
  // The errors of EncodeKeys: InvalidArgument naming `column_name` for a null key or an
  // unsupported type.
  static Result<KeyColumnView> Make(const Array& column, std::string_view column_name);
  int64_t size() const { return size_; }
  // REQUIRES 0 <= row < size().
  std::string_view operator[](int64_t row) const {
    return direct_ ? strings_.StringValue(row) : std::string_view(encoded_[row]);
  }

 private:
  bool direct_ = false;
  int64_t size_ = 0;
  Array strings_;                     // direct_: the utf8 / large_utf8 column
  std::vector<std::string> encoded_;  // otherwise: EncodeKeys of the column
};

}  // namespace internal

}  // namespace strata::lsm
