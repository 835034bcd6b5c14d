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

// Newest row per key: walk the snapshot from its newest row back, keeping the first row
// seen of every key (full encoded keys compared), then emit survivors in append order.
Result<DedupOutput> Dedup(const MemTableSnapshot& snapshot) {
  const SchemaPtr& shard_schema = snapshot.schema();
  if (shard_schema == nullptr) {
    return Status::InvalidArgument("memtable snapshot has no memtable");
  }
  const int key_column = snapshot.key_column();
  SchemaPtr out_schema = GenerationSchema(*shard_schema, key_column);
  const auto& batches = snapshot.batches();

  std::vector<std::vector<int64_t>> keep(batches.size());
  std::unordered_set<std::string_view> seen;
  seen.reserve(static_cast<size_t>(snapshot.rows()));
  for (size_t b = batches.size(); b-- > 0;) {
    const std::vector<std::string>& keys = batches[b]->keys;
    for (size_t r = keys.size(); r-- > 0;) {
      if (seen.insert(keys[r]).second) keep[b].push_back(static_cast<int64_t>(r));
    }
  }

  DedupOutput out;
  for (size_t b = 0; b < batches.size(); ++b) {
    std::vector<int64_t>& rows = keep[b];
    if (rows.empty()) continue;
    std::reverse(rows.begin(), rows.end());
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
  fields.push_back(field(std::string(kTombstoneColumn), boolean(), /*nullable=*/false));
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
  const std::string path = NewGenerationPath(generation);
  const std::string prefix = GenerationPrefix(store_prefix, shard, path);

  SchemaPtr gen_schema = GenerationSchema(*snapshot.schema(), snapshot.key_column());
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> table,
                          table::Table::Create(store, prefix, gen_schema, options));
  STRATA_ASSIGN_OR_RETURN(table::AppendResult appended, table->Append(dedup.batches));
  if (appended.rows != dedup.rows) {
    return Status::Internal(fmt::format("generation {}: appended {} rows, expected {}", path,
                                        appended.rows, dedup.rows));
  }
  BloomFilter bloom = BloomFilter::Build(dedup.keys);
  STRATA_RETURN_IF_ERROR(store->Put(prefix + std::string(kBloomObject), bloom.Serialize()));

  // Everything under the generation's directory is its files (manifests, data, index,
  // bloom filter).
  STRATA_ASSIGN_OR_RETURN(std::vector<ObjectMeta> objects, store->List(prefix));
  int64_t bytes = 0;
  for (const ObjectMeta& object : objects) bytes += object.size;

  pb::Generation entry;
  entry.set_generation(generation);
  entry.set_path(path);
  entry.set_rows(dedup.rows);
  entry.set_tombstones(dedup.tombstones);
  entry.set_bytes(bytes);
  entry.set_sealed_at_micros(clock->NowMicros());
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
  const std::string bloom_key = prefix + std::string(kBloomObject);
  STRATA_ASSIGN_OR_RETURN(Buffer bytes, store->Get(bloom_key));
  STRATA_ASSIGN_OR_RETURN(BloomFilter bloom, BloomFilter::Parse(bytes.view(), bloom_key));
  return std::shared_ptr<Generation>(
      new Generation(shard, entry, std::move(table), std::move(bloom)));
}

// --- GenerationCache -------------------------------------------------------------------

struct GenerationCache::State {
  using Entry = std::pair<std::string, std::shared_ptr<Generation>>;
  std::list<Entry> lru;  // most recently used first
  std::unordered_map<std::string, std::list<Entry>::iterator> by_key;
};

namespace {
std::string CacheKey(const Uuid& shard, std::string_view path) {
  return shard.ToString() + "/" + std::string(path);
}
}  // namespace

GenerationCache::GenerationCache(std::shared_ptr<ObjectStore> store, std::string store_prefix,
                                 table::TableOptions options, size_t capacity)
    : store_(std::move(store)),
      prefix_(std::move(store_prefix)),
      options_(std::move(options)),
      capacity_(capacity == 0 ? 1 : capacity),
      state_(std::make_shared<State>()) {}

Result<std::shared_ptr<Generation>> GenerationCache::Get(const Uuid& shard,
                                                         const pb::Generation& entry) {
  const std::string key = CacheKey(shard, entry.path());
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
  state_->lru.emplace_front(key, opened);
  state_->by_key.emplace(key, state_->lru.begin());
  while (state_->lru.size() > capacity_) {
    state_->by_key.erase(state_->lru.back().first);
    state_->lru.pop_back();
  }
  return opened;
}

void GenerationCache::Forget(const Uuid& shard, const std::string& path) {
  MutexLock lock(mutex_);
  auto it = state_->by_key.find(CacheKey(shard, path));
  if (it == state_->by_key.end()) return;
  state_->lru.erase(it->second);
  state_->by_key.erase(it);
}

}  // namespace strata::lsm
