// Generations: a sealed memtable written as a small table of its own (one fragment, key
// index included) under the shard directory, plus a bloom filter of its keys. Immutable
// once written; listed in the shard manifest until merged into the base table
// (docs/format/lsm.md §6).
//
// A generation table's schema is the shard schema with every non-key column nullable and
// one more column, kTombstoneColumn (bool), true for a deletion (null, in generations linked
// from the WAL, is not a deletion). It holds at most
// one row per key: the newest (full keys compared, not hashes), tombstones included.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "lsm/bloom.h"
#include "lsm/lsm.pb.h"
#include "lsm/memtable.h"
#include "strata/object_store.h"
#include "strata/status.h"
#include "strata/table.h"
#include "util/clock.h"
#include "util/mutex.h"
#include "util/uuid.h"

namespace strata::lsm {

SchemaPtr GenerationSchema(const Schema& shard_schema, int key_column);

// The newest row of every key in `snapshot`, in the generation schema, in append order of
// the surviving rows. Tombstone rows have nulls except the key.
Result<std::vector<RecordBatch>> DedupMemTable(const MemTableSnapshot& snapshot);

// Writes `snapshot` as generation number `generation` of `shard` (a new random path, see
// layout.h): the generation table and bloom.bin. Does not publish it (the shard writer
// records it in the shard manifest). The returned entry has every field but wal_end set.
// InvalidArgument for an empty snapshot.
Result<pb::Generation> WriteGeneration(const std::shared_ptr<ObjectStore>& store,
                                       const std::string& store_prefix, const Uuid& shard,
                                       uint64_t generation, const MemTableSnapshot& snapshot,
                                       const table::TableOptions& options,
                                       Clock* clock = SystemClock());

// True when WriteLinkedGeneration can write `snapshot`: every batch came from a WAL rows
// record appended by this writer (its record offset is known), none is a tombstone.
bool CanLinkWal(const MemTableSnapshot& snapshot);

// Writes `snapshot` as generation `generation` like WriteGeneration, but without rewriting
// its rows: every WAL segment holding its records — format 2 segments ended with a footer,
// which the caller made sure of — is copied into the generation table (a hard link on a
// local store) as the data file of one fragment, with a deletion file for the rows of the
// segment that are not in the generation (rows of other memtables, and rows a newer row of
// the same key in the snapshot replaces). Readers see the same rows as from WriteGeneration;
// the data files lack kTombstoneColumn, which reads as null (not a tombstone).
// REQUIRES: CanLinkWal(snapshot).
Result<pb::Generation> WriteLinkedGeneration(const std::shared_ptr<ObjectStore>& store,
                                             const std::string& store_prefix, const Uuid& shard,
                                             uint64_t generation, const MemTableSnapshot& snapshot,
                                             const table::TableOptions& options,
                                             Clock* clock = SystemClock());

class Generation;

// Writes the rows of `source` — a generation linked from the WAL (§6.3) — again as a
// generation of the same number at `path` (a fresh NewGenerationPath of its number), the way
// WriteGeneration writes one: data files in `options`' compression and batch sizes, a key
// index over the new row positions, the same bloom filter. Streams (a few batches in memory
// at a time). `cancelled` is checked between batches; when it returns true the recode stops
// with Aborted. The returned entry is `source`'s (generation number, order stamp, WAL end,
// row counts) with the new path and bytes and `linked` false; nothing is published
// (ShardManifestStore::ReplaceGeneration does that). On an error `path` may be partly
// written; the caller deletes it.
Result<pb::Generation> RecodeGeneration(const std::shared_ptr<ObjectStore>& store,
                                        const std::string& store_prefix, const Generation& source,
                                        const std::string& path, const table::TableOptions& options,
                                        const std::function<bool()>& cancelled = {});

// An opened generation.
class Generation {
 public:
  // NotFound when the generation's objects are gone (merged and deleted meanwhile).
  static Result<std::shared_ptr<Generation>> Open(const std::shared_ptr<ObjectStore>& store,
                                                  const std::string& store_prefix,
                                                  const Uuid& shard, const pb::Generation& entry,
                                                  const table::TableOptions& options);
  const Uuid& shard() const { return shard_; }
  const pb::Generation& entry() const { return entry_; }
  const std::shared_ptr<table::Table>& table() const { return table_; }
  bool MayContain(std::string_view encoded_key) const { return bloom_.MayContain(encoded_key); }

 private:
  Generation(Uuid shard, pb::Generation entry, std::shared_ptr<table::Table> table,
             BloomFilter bloom);
  Uuid shard_;
  pb::Generation entry_;
  std::shared_ptr<table::Table> table_;
  BloomFilter bloom_;
};

// Opened generations keyed by shard and path (generations never change), least recently
// used dropped beyond `capacity` entries. Thread safe.
class GenerationCache {
 public:
  GenerationCache(std::shared_ptr<ObjectStore> store, std::string store_prefix,
                  table::TableOptions options, size_t capacity = 1024);
  Result<std::shared_ptr<Generation>> Get(const Uuid& shard, const pb::Generation& entry);
  // Drops the entries of generations that were merged and deleted.
  void Forget(const Uuid& shard, const std::string& path);

 private:
  struct State;
  std::shared_ptr<ObjectStore> store_;
  std::string prefix_;
  table::TableOptions options_;
  size_t capacity_;
  Mutex mutex_;
  std::shared_ptr<State> state_ STRATA_GUARDED_BY(mutex_);
};

}  // namespace strata::lsm
