// Generations: sealing a memtable snapshot into a small keyed table plus a bloom filter,
// opening them again, and a cache of opened generations (see generation.h).
#include "lsm/generation.h"

#include <algorithm>
#include <list>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "fmt/format.h"
#include "lsm/layout.h"
#include "strata/builder.h"
#include "strata/table.h"
#include "table/linked_fragments.h"

namespace strata::lsm {

namespace {

struct DedupOutput {
  std::vector<RecordBatch> batches;
  std::vector<std::string> keys;  // encoded keys of the surviving rows, in output order
  int64_t rows = 0;
  int64_t tombstones = 0;
};

Result<Array> ConstantBools(bool value, int64_t length) {
  BooleanBuilder builder;
  builder.Reserve(length);
  for (int64_t i = 0; i < length; ++i) builder.Append(value);
  return builder.Finish();
}

// The newest row per key: per snapshot batch, the rows that survive, ascending. Walks the
// snapshot from its newest row back, keeping the first row seen of every key (full encoded
// keys compared).
std::vector<std::vector<int64_t>> Survivors(const MemTableSnapshot& snapshot) {
  const auto& batches = snapshot.batches();
  std::vector<std::vector<int64_t>> keep(batches.size());
  std::unordered_set<std::string_view> seen;
  seen.reserve(static_cast<size_t>(snapshot.rows()));
  for (size_t b = batches.size(); b-- > 0;) {
    const std::vector<std::string>& keys = batches[b]->keys;
    for (size_t r = keys.size(); r-- > 0;) {
      if (seen.insert(keys[r]).second) keep[b].push_back(static_cast<int64_t>(r));
    }
    std::reverse(keep[b].begin(), keep[b].end());
  }
  return keep;
}

// The survivors emitted in append order.
Result<DedupOutput> Dedup(const MemTableSnapshot& snapshot) {
  const SchemaPtr& shard_schema = snapshot.schema();
  if (shard_schema == nullptr) {
    return Status::InvalidArgument("memtable snapshot has no memtable");
  }
  const int key_column = snapshot.key_column();
  SchemaPtr out_schema = GenerationSchema(*shard_schema, key_column);
  const auto& batches = snapshot.batches();
  std::vector<std::vector<int64_t>> keep = Survivors(snapshot);

  DedupOutput out;
  for (size_t b = 0; b < batches.size(); ++b) {
    std::vector<int64_t>& rows = keep[b];
    if (rows.empty()) continue;
    const MemTableBatch& source = *batches[b];
    const auto n = static_cast<int64_t>(rows.size());
    // Usually no key repeats within a memtable: a batch whose every row survives is used
    // as it is (its arrays are immutable and shared), only the schema changes.
    const bool whole = n == source.batch.num_rows();
    std::vector<Array> columns;
    columns.reserve(static_cast<size_t>(out_schema->num_fields()));
    for (int c = 0; c < shard_schema->num_fields(); ++c) {
      if (source.tombstone && c != key_column) {
        columns.push_back(Array::MakeNull(out_schema->field(c)->type(), n));
      } else if (whole) {
        columns.push_back(source.batch.column(c));
      } else {
        STRATA_ASSIGN_OR_RETURN(Array column, Take(source.batch.column(c), rows));
        columns.push_back(std::move(column));
      }
    }
    STRATA_ASSIGN_OR_RETURN(Array tombstone, ConstantBools(source.tombstone, n));
    columns.push_back(std::move(tombstone));
    STRATA_ASSIGN_OR_RETURN(RecordBatch batch,
                            RecordBatch::Make(out_schema, n, std::move(columns)));
    out.batches.push_back(std::move(batch));
    for (int64_t r : rows) out.keys.push_back(source.keys[static_cast<size_t>(r)]);
    out.rows += n;
    if (source.tombstone) out.tombstones += n;
  }
  return out;
}

std::string GenerationPrefix(const std::string& store_prefix, const Uuid& shard,
                             const std::string& path) {
  return ShardDir(store_prefix, shard) + path;
}

// The snapshot's batches that came from one WAL segment, in WAL order.
struct SegmentBatches {
  uint64_t epoch = 0;
  uint64_t segment = 0;
  int64_t first_record = 0;     // offset of the first record's first byte
  int64_t end = 0;              // offset just past the last record
  std::vector<size_t> batches;  // snapshot batch indices
};

std::vector<SegmentBatches> GroupBySegment(const MemTableSnapshot& snapshot) {
  std::vector<SegmentBatches> groups;
  const auto& batches = snapshot.batches();
  for (size_t b = 0; b < batches.size(); ++b) {
    const MemTableBatch& batch = *batches[b];
    const pb::WalPosition& end = batch.wal_end;
    if (groups.empty() || groups.back().epoch != end.epoch() ||
        groups.back().segment != end.segment()) {
      groups.push_back({end.epoch(), end.segment(), batch.wal_record_offset, 0, {}});
    }
    groups.back().end = static_cast<int64_t>(end.offset());
    groups.back().batches.push_back(b);
  }
  return groups;
}

// One segment of the snapshot linked into the generation table being written by `writer`
// as its next fragment: the data file, the rows to leave out, the keys. `keep` and
// `live_keys` as in WriteLinkedGeneration.
Status LinkSegment(ObjectStore& store, const std::string& store_prefix, const Uuid& shard,
                   const std::string& prefix, const MemTableSnapshot& snapshot,
                   const SegmentBatches& group, const std::vector<std::vector<int64_t>>& keep,
                   table::LinkedFragmentWriter& writer, std::vector<std::string>& live_keys) {
  const std::string segment_key = WalSegmentKey(store_prefix, shard, group.epoch, group.segment);
  const std::string data_path =
      fmt::format("data/wal-{:020}-{:010}.arrow", group.epoch, group.segment);
  STRATA_RETURN_IF_ERROR(store.Copy(segment_key, prefix + data_path)
                             .WithContext("linking WAL segment " + segment_key));
  STRATA_ASSIGN_OR_RETURN(std::vector<table::LinkedFragmentWriter::FileBatch> file_batches,
                          writer.AddFile(data_path, *snapshot.schema()));
  // The segment's batches are the non-empty batches of its rows records in order; those of
  // the snapshot are the ones whose message ends inside the snapshot's records.
  int64_t row = 0;
  size_t next = 0;
  for (const table::LinkedFragmentWriter::FileBatch& info : file_batches) {
    const int64_t message_end = info.message_end;
    const int64_t n = info.rows;
    if (message_end > group.first_record && message_end <= group.end) {
      if (next == group.batches.size()) {
        return Status::Internal(
            fmt::format("WAL segment {} holds more batches in [{}, {}) than "
                        "the memtable ({})",
                        segment_key, group.first_record, group.end, next));
      }
      const size_t b = group.batches[next++];
      const MemTableBatch& batch = *snapshot.batches()[b];
      if (batch.batch.num_rows() != n) {
        return Status::Internal(
            fmt::format("WAL segment {}: a batch ending at {} has {} rows, the memtable's {}",
                        segment_key, message_end, n, batch.batch.num_rows()));
      }
      STRATA_RETURN_IF_ERROR(writer.AddKeys(row, batch.batch.column(snapshot.key_column())));
      size_t k = 0;
      for (int64_t r = 0; r < n; ++r) {
        if (k < keep[b].size() && keep[b][k] == r) {
          live_keys.push_back(batch.keys[static_cast<size_t>(r)]);
          ++k;
        } else {
          STRATA_RETURN_IF_ERROR(writer.DeleteRows(row + r, 1));
        }
      }
    } else {
      STRATA_RETURN_IF_ERROR(writer.DeleteRows(row, n));
    }
    row += n;
  }
  if (next != group.batches.size()) {
    return Status::Internal(fmt::format("WAL segment {} holds {} of the memtable's {} batches",
                                        segment_key, next, group.batches.size()));
  }
  return Status::OK();
}

// Bytes of the generation at `prefix`: everything under its directory is its files
// (manifests, data, index, bloom filter).
Result<int64_t> GenerationBytes(ObjectStore& store, const std::string& prefix) {
  STRATA_ASSIGN_OR_RETURN(std::vector<ObjectMeta> objects, store.List(prefix));
  int64_t bytes = 0;
  for (const ObjectMeta& object : objects) bytes += object.size;
  return bytes;
}

// bloom.bin and the manifest entry, once the generation table is complete.
Result<pb::Generation> FinishGeneration(ObjectStore& store, const std::string& prefix,
                                        const std::string& path, uint64_t generation,
                                        const std::vector<std::string>& keys, int64_t rows,
                                        int64_t tombstones, Clock* clock) {
  BloomFilter bloom = BloomFilter::Build(keys);
  STRATA_RETURN_IF_ERROR(store.Put(prefix + std::string(kBloomObject), bloom.Serialize()));

  STRATA_ASSIGN_OR_RETURN(const int64_t bytes, GenerationBytes(store, prefix));

  pb::Generation entry;
  entry.set_generation(generation);
  entry.set_path(path);
  entry.set_rows(rows);
  entry.set_tombstones(tombstones);
  entry.set_bytes(bytes);
  entry.set_sealed_at_micros(clock->NowMicros());
  return entry;
}

}  // namespace

SchemaPtr GenerationSchema(const Schema& shard_schema, int key_column) {
  std::vector<FieldPtr> fields;
  fields.reserve(static_cast<size_t>(shard_schema.num_fields()) + 1);
  for (int i = 0; i < shard_schema.num_fields(); ++i) {
    const FieldPtr& f = shard_schema.field(i);
    if (i == key_column) {
      // The key index of the generation table needs the primary-key marker.
      KeyValueMetadata metadata = f->metadata();
      metadata.Set(std::string(table::kPrimaryKeyMetadata), "true");
      fields.push_back(
          std::make_shared<Field>(f->name(), f->type(), /*nullable=*/false, std::move(metadata)));
    } else {
      fields.push_back(f->nullable() ? f : f->WithNullable(true));
    }
  }
  // Nullable: linked generations (§6.3) lack the column in their data files.
  fields.push_back(field(std::string(kTombstoneColumn), boolean(), /*nullable=*/true));
  return schema(std::move(fields), shard_schema.metadata());
}

Result<std::vector<RecordBatch>> DedupMemTable(const MemTableSnapshot& snapshot) {
  STRATA_ASSIGN_OR_RETURN(DedupOutput out, Dedup(snapshot));
  return std::move(out.batches);
}

Result<pb::Generation> WriteGeneration(const std::shared_ptr<ObjectStore>& store,
                                       const std::string& store_prefix, const Uuid& shard,
                                       uint64_t generation, const MemTableSnapshot& snapshot,
                                       const table::TableOptions& options, Clock* clock) {
  if (snapshot.rows() == 0) {
    return Status::InvalidArgument(fmt::format(
        "generation {} of shard {}: the memtable snapshot is empty", generation, shard.ToString()));
  }
  STRATA_ASSIGN_OR_RETURN(DedupOutput dedup, Dedup(snapshot));
  const std::string path = NewGenerationPath(generation, options.random);
  const std::string prefix = GenerationPrefix(store_prefix, shard, path);

  SchemaPtr gen_schema = GenerationSchema(*snapshot.schema(), snapshot.key_column());
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> table,
                          table::Table::Create(store, prefix, gen_schema, options));
  STRATA_ASSIGN_OR_RETURN(table::AppendResult appended, table->Append(dedup.batches));
  if (appended.rows != dedup.rows) {
    return Status::Internal(fmt::format("generation {}: appended {} rows, expected {}", path,
                                        appended.rows, dedup.rows));
  }
  return FinishGeneration(*store, prefix, path, generation, dedup.keys, dedup.rows,
                          dedup.tombstones, clock);
}

bool CanLinkWal(const MemTableSnapshot& snapshot) {
  if (snapshot.rows() == 0 || snapshot.schema() == nullptr) return false;
  for (const auto& batch : snapshot.batches()) {
    if (batch->tombstone || batch->wal_record_offset < 0) return false;
  }
  return true;
}

Result<pb::Generation> WriteLinkedGeneration(const std::shared_ptr<ObjectStore>& store,
                                             const std::string& store_prefix, const Uuid& shard,
                                             uint64_t generation, const MemTableSnapshot& snapshot,
                                             const table::TableOptions& options, Clock* clock) {
  if (!CanLinkWal(snapshot)) {
    return Status::InvalidArgument(fmt::format(
        "generation {} of shard {}: the memtable holds tombstones or replayed rows and cannot "
        "be linked from the WAL",
        generation, shard.ToString()));
  }
  const std::vector<std::vector<int64_t>> keep = Survivors(snapshot);
  const std::string path = NewGenerationPath(generation, options.random);
  const std::string prefix = GenerationPrefix(store_prefix, shard, path);
  const SchemaPtr& shard_schema = snapshot.schema();
  const int key_column = snapshot.key_column();
  STRATA_ASSIGN_OR_RETURN(
      std::shared_ptr<table::Table> table,
      table::Table::Create(store, prefix, GenerationSchema(*shard_schema, key_column), options));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<table::LinkedFragmentWriter> writer,
                          table::LinkedFragmentWriter::Make(store, prefix, table));
  std::vector<std::string> live_keys;
  live_keys.reserve(static_cast<size_t>(snapshot.rows()));
  for (const SegmentBatches& group : GroupBySegment(snapshot)) {
    STRATA_RETURN_IF_ERROR(LinkSegment(*store, store_prefix, shard, prefix, snapshot, group, keep,
                                       *writer, live_keys));
  }
  STRATA_ASSIGN_OR_RETURN(table::AppendResult appended, writer->Commit());
  if (appended.rows != static_cast<int64_t>(live_keys.size())) {
    return Status::Internal(fmt::format("generation {}: linked {} live rows, expected {}", path,
                                        appended.rows, live_keys.size()));
  }
  STRATA_ASSIGN_OR_RETURN(pb::Generation entry,
                          FinishGeneration(*store, prefix, path, generation, live_keys,
                                           static_cast<int64_t>(live_keys.size()), 0, clock));
  entry.set_linked(true);
  return entry;
}

Result<pb::Generation> RecodeGeneration(const std::shared_ptr<ObjectStore>& store,
                                        const std::string& store_prefix, const Generation& source,
                                        const std::string& path, const table::TableOptions& options,
                                        const std::function<bool()>& cancelled) {
  const pb::Generation& from = source.entry();
  if (ParseGenerationPath(path) != from.generation()) {
    return Status::InvalidArgument(
        fmt::format("recoding generation {}: '{}' is not a path of it", from.generation(), path));
  }
  const std::string prefix = GenerationPrefix(store_prefix, source.shard(), path);
  const std::string what = fmt::format("recoding generation {} of shard {}", from.generation(),
                                       source.shard().ToString());
  const std::shared_ptr<table::Table>& read = source.table();
  const SchemaPtr& gen_schema = read->schema();
  const int tombstone_index = gen_schema->GetFieldIndex(std::string(kTombstoneColumn));
  if (tombstone_index < 0) {
    return Status::Corruption(
        fmt::format("{}: its table lacks the column '{}'", what, kTombstoneColumn));
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> written,
                          table::Table::Create(store, prefix, gen_schema, options));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<table::BatchIterator> scan, read->Scan());
  // Linked data files lack the tombstone column, which reads as null ("not deleted"); the
  // recoded table holds it as false, as WriteGeneration writes it (§6.1).
  auto next = [&]() -> Result<std::optional<RecordBatch>> {
    if (cancelled && cancelled()) return Status::Aborted(what + ": cancelled");
    STRATA_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, scan->Next());
    if (!batch.has_value()) return batch;
    const Array& tombstones = batch->column(tombstone_index);
    if (tombstones.null_count() == 0) return batch;
    if (tombstones.null_count() != batch->num_rows()) {
      return Status::Corruption(fmt::format("{}: a linked generation has tombstone values", what));
    }
    std::vector<Array> columns = batch->columns();
    STRATA_ASSIGN_OR_RETURN(columns[static_cast<size_t>(tombstone_index)],
                            ConstantBools(false, batch->num_rows()));
    STRATA_ASSIGN_OR_RETURN(RecordBatch fixed, RecordBatch::Make(batch->schema(), batch->num_rows(),
                                                                 std::move(columns)));
    return std::optional<RecordBatch>(std::move(fixed));
  };
  STRATA_ASSIGN_OR_RETURN(table::AppendResult appended, written->AppendStream(next));
  if (appended.rows != from.rows()) {
    return Status::Internal(fmt::format("{}: wrote {} rows, the generation holds {}", what,
                                        appended.rows, from.rows()));
  }
  // The same keys: the same filter.
  const std::string source_prefix = GenerationPrefix(store_prefix, source.shard(), from.path());
  STRATA_RETURN_IF_ERROR(
      store->Copy(source_prefix + std::string(kBloomObject), prefix + std::string(kBloomObject)));
  STRATA_ASSIGN_OR_RETURN(const int64_t bytes, GenerationBytes(*store, prefix));
  pb::Generation entry = from;
  entry.set_path(path);
  entry.set_bytes(bytes);
  entry.set_linked(false);
  return entry;
}

// --- Generation ------------------------------------------------------------------------

Generation::Generation(Uuid shard, pb::Generation entry, std::shared_ptr<table::Table> table,
                       BloomFilter bloom)
    : shard_(shard), entry_(std::move(entry)), table_(std::move(table)), bloom_(std::move(bloom)) {}

Result<std::shared_ptr<Generation>> Generation::Open(const std::shared_ptr<ObjectStore>& store,
                                                     const std::string& store_prefix,
                                                     const Uuid& shard, const pb::Generation& entry,
                                                     const table::TableOptions& options) {
  const std::string prefix = GenerationPrefix(store_prefix, shard, entry.path());
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> table,
                          table::Table::Open(store, prefix, options));
  // A generation table is written once, so its newest version must hold what the shard
  // manifest recorded; fewer rows means a manifest of it was lost (the table then reads an
  // older version) and the generation's rows would vanish without a word.
  STRATA_ASSIGN_OR_RETURN(int64_t rows, table->CountRows());
  if (rows != entry.rows()) {
    return Status::Corruption(fmt::format(
        "generation table {} (version {}) holds {} rows, its shard manifest records {}: a "
        "manifest of the generation is missing or damaged",
        prefix, table->version(), rows, entry.rows()));
  }
  const std::string bloom_key = prefix + std::string(kBloomObject);
  STRATA_ASSIGN_OR_RETURN(Buffer bytes, store->Get(bloom_key));
  STRATA_ASSIGN_OR_RETURN(BloomFilter bloom, BloomFilter::Parse(bytes.view(), bloom_key));
  return std::shared_ptr<Generation>(
      new Generation(shard, entry, std::move(table), std::move(bloom)));
}

// --- GenerationCache -------------------------------------------------------------------

namespace {
// A cached generation's key, the shard and the generation's path, looked up without a copy.
struct KeyRef {
  const Uuid& shard;
  std::string_view path;
};
struct Key {
  Uuid shard;
  std::string path;
  operator KeyRef() const { return KeyRef{shard, path}; }  // NOLINT(google-explicit-constructor)
};
struct KeyHash {
  using is_transparent = void;
  size_t operator()(KeyRef key) const {
    return std::hash<Uuid>()(key.shard) * 31 + std::hash<std::string_view>()(key.path);
  }
};
struct KeyEqual {
  using is_transparent = void;
  bool operator()(KeyRef a, KeyRef b) const { return a.shard == b.shard && a.path == b.path; }
};
}  // namespace

struct GenerationCache::State {
  using Entry = std::pair<Key, std::shared_ptr<Generation>>;
  std::list<Entry> lru;  // most recently used first
  std::unordered_map<Key, std::list<Entry>::iterator, KeyHash, KeyEqual> by_key;
};

GenerationCache::GenerationCache(std::shared_ptr<ObjectStore> store, std::string store_prefix,
                                 table::TableOptions options, size_t capacity)
    : store_(std::move(store)),
      prefix_(std::move(store_prefix)),
      options_(options),
      capacity_(capacity == 0 ? 1 : capacity),
      state_(std::make_shared<State>()) {}

Result<std::shared_ptr<Generation>> GenerationCache::Get(const Uuid& shard,
                                                         const pb::Generation& entry) {
  const KeyRef key{shard, entry.path()};
  {
    MutexLock lock(mutex_);
    auto it = state_->by_key.find(key);
    if (it != state_->by_key.end()) {
      state_->lru.splice(state_->lru.begin(), state_->lru, it->second);
      return it->second->second;
    }
  }
  // Open without the lock (it reads objects); a concurrent Get of the same generation may
  // open it too, and the first one cached wins so callers share one object.
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<Generation> opened,
                          Generation::Open(store_, prefix_, shard, entry, options_));
  MutexLock lock(mutex_);
  auto it = state_->by_key.find(key);
  if (it != state_->by_key.end()) {
    state_->lru.splice(state_->lru.begin(), state_->lru, it->second);
    return it->second->second;
  }
  state_->lru.emplace_front(Key{shard, entry.path()}, opened);
  state_->by_key.emplace(state_->lru.front().first, state_->lru.begin());
  while (state_->lru.size() > capacity_) {
    state_->by_key.erase(state_->lru.back().first);
    state_->lru.pop_back();
  }
  return opened;
}

void GenerationCache::Forget(const Uuid& shard, const std::string& path) {
  MutexLock lock(mutex_);
  auto it = state_->by_key.find(KeyRef{shard, path});
  if (it == state_->by_key.end()) return;
  state_->lru.erase(it->second);
  state_->by_key.erase(it);
}

}  // namespace strata::lsm
