// ContextStore: agent memory on a StorageBase (include/strata/context_store.h; reference
// shared/reference/lance-context.md §3.2).
#include "strata/context_store.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "store/context_ann.h"
#include "store/filter_text.h"
#include "strata/table.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/mutex.h"
#include "util/uuid.h"

namespace strata::store {
namespace {

// Values per `col IN (...)` filter.
constexpr size_t kInChunk = 256;

using internal::QuoteLiteral;

// `column IN ('a', 'b', ...)` over values[begin, end).
std::string InFilter(std::string_view column, const std::vector<std::string>& values, size_t begin,
                     size_t end) {
  std::string out = fmt::format("{} IN (", column);
  for (size_t i = begin; i < end; ++i) {
    if (i > begin) out += ", ";
    out += QuoteLiteral(values[i]);
  }
  out += ")";
  return out;
}

bool ByCreatedThenId(const ContextRecord& a, const ContextRecord& b) {
  if (a.created_at_micros != b.created_at_micros) return a.created_at_micros < b.created_at_micros;
  return a.id < b.id;
}

std::string Names(const std::set<std::string>& names) {
  return fmt::format("[{}]", fmt::join(names, ", "));
}

// The options a store persisted: embedding dimension, metric, blob columns.
struct Persisted {
  int32_t dim = kDefaultEmbeddingDim;
  DistanceMetric metric = DistanceMetric::kL2;
  std::set<std::string> blob_columns;
};

Result<Persisted> ReadPersisted(const Schema& schema) {
  Persisted out;
  const int embedding = schema.GetFieldIndex("embedding");
  if (embedding >= 0) out.dim = schema.field(embedding)->type()->list_size();
  const KeyValueMetadata& metadata = schema.metadata();
  if (std::optional<std::string_view> metric = metadata.Get(kDistanceMetricMetadata)) {
    STRATA_ASSIGN_OR_RETURN(out.metric, ParseDistanceMetric(*metric));
  }
  for (const FieldPtr& f : schema.fields()) {
    if (f->metadata().Get(kBlobColumnMetadata) == "true") out.blob_columns.insert(f->name());
  }
  return out;
}

}  // namespace

struct ContextStore::WriteLock {
  Mutex mu;
};

bool ContextPatch::empty() const {
  return !bot_id && !session_id && !tenant && !source && !state_metadata && !metadata &&
         !relationships && !expires_at_micros && !retention_policy && !lifecycle_status &&
         !retired_at_micros && !retired_reason && !embedding && !payload_uri && !payload_size &&
         !payload_checksum;
}

ContextStore::ContextStore(std::unique_ptr<StorageBase> base, int32_t dim, DistanceMetric metric,
                           std::set<std::string> blob_columns, Clock* clock, RandomSource* random,
                           VectorIndexOptions vector_index, TextIndexOptions text_index)
    : base_(std::move(base)),
      embedding_dim_(dim),
      metric_(metric),
      blob_columns_(std::move(blob_columns)),
      clock_(clock),
      random_(random),
      write_lock_(std::make_unique<WriteLock>()),
      vector_index_(vector_index),
      text_index_(text_index),
      ann_(NewAnnCache()) {
  if (vector_index_.enabled || text_index_.enabled) {
    // The store owns base_, so `this` outlives every call of the listener.
    base_->SetBaseChangeListener([this] {
      if (vector_index_.enabled) {
        Result<int> indexed = IndexVectors();
        if (!indexed.ok()) {
          LogWarning("context store {}: building the vector index failed: {}", base_->prefix(),
                     indexed.status().ToString());
        }
      }
      if (text_index_.enabled) {
        Result<int> indexed = IndexText();
        if (!indexed.ok()) {
          LogWarning("context store {}: building the text index failed: {}", base_->prefix(),
                     indexed.status().ToString());
        }
      }
    });
  }
}

ContextStore::~ContextStore() { base_->SetBaseChangeListener({}); }

Result<std::unique_ptr<ContextStore>> ContextStore::Open(std::shared_ptr<ObjectStore> store,
                                                         std::string prefix,
                                                         ContextStoreOptions options,
                                                         bool create_if_missing) {
  if (store == nullptr) return Status::InvalidArgument("ContextStore::Open: no object store");
  StorageBaseOptions base_options = std::move(options.base);
  STRATA_ASSIGN_OR_RETURN(bool exists, table::Table::Exists(*store, prefix));
  SchemaPtr schema;
  Persisted persisted;
  if (exists) {
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> table,
                            table::Table::Open(store, prefix, base_options.table_options));
    schema = table->schema();
    const std::string kind(
        schema->metadata().Get(kStoreKindMetadata).value_or(kUnrecordedStoreKind));
    if (kind != kContextStoreKind) {
      return Status::InvalidArgument(
          fmt::format("store at '{}{}' is a {} store, not a context store", store->Describe(),
                      prefix.empty() ? "" : "/" + prefix, kind));
    }
    STRATA_ASSIGN_OR_RETURN(persisted, ReadPersisted(*schema));
    if (!options.blob_columns.empty() && options.blob_columns != persisted.blob_columns) {
      return Status::InvalidArgument(
          fmt::format("existing context blob columns {} do not match requested columns {}",
                      Names(persisted.blob_columns), Names(options.blob_columns)));
    }
    if (options.embedding_dim && *options.embedding_dim != persisted.dim) {
      return Status::InvalidArgument(fmt::format(
          "existing context embedding dimension {} does not match requested dimension {}",
          persisted.dim, *options.embedding_dim));
    }
    if (options.distance_metric && *options.distance_metric != persisted.metric) {
      return Status::InvalidArgument(fmt::format(
          "existing context distance metric '{}' does not match requested metric '{}'",
          DistanceMetricName(persisted.metric), DistanceMetricName(*options.distance_metric)));
    }
  } else {
    ContextSchemaOptions schema_options;
    schema_options.embedding_dim = options.embedding_dim.value_or(kDefaultEmbeddingDim);
    schema_options.blob_columns = options.blob_columns;
    schema_options.distance_metric = options.distance_metric.value_or(DistanceMetric::kL2);
    STRATA_ASSIGN_OR_RETURN(schema, ContextSchema(schema_options));
    persisted = Persisted{schema_options.embedding_dim, schema_options.distance_metric,
                          schema_options.blob_columns};
  }
  base_options.schema = schema;
  base_options.key_column = "id";
  base_options.store_kind = std::string(kContextStoreKind);
  base_options.seal_on_put = options.seal_on_add;
  // A deferred-seal handle must see its own unsealed rows, or its validations (ids taken,
  // the record an upsert supersedes) would miss them.
  if (!options.seal_on_add) base_options.read_own_writes = true;
  if (base_options.shard_id.empty()) base_options.shard_id = "default";
  Clock* clock = base_options.clock != nullptr ? base_options.clock : SystemClock();
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<StorageBase> base,
                          StorageBase::Open(std::move(store), std::move(prefix),
                                            std::move(base_options), create_if_missing));
  return std::unique_ptr<ContextStore>(new ContextStore(
      std::move(base), persisted.dim, persisted.metric, std::move(persisted.blob_columns), clock,
      SystemRandom(), options.vector_index, options.text_index));
}

int64_t ContextStore::Now() const { return clock_->NowMicros(); }

std::string ContextStore::NewId() const { return UuidV4(*random_).ToString(); }

// --- Reading helpers ------------------------------------------------------------------

Result<std::vector<ContextRecord>> ContextStore::ScanRecords(
    const std::string& filter, const std::vector<std::string>& columns, ListSource source) const {
  ScanRequest request;
  request.source = source;
  request.filter = filter;
  request.columns = columns;
  STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> batches, base_->Scan(request));
  std::vector<ContextRecord> out;
  for (const RecordBatch& batch : batches) {
    STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> records, DecodeContextRecords(batch));
    for (ContextRecord& r : records) out.push_back(std::move(r));
  }
  return out;
}

Result<std::vector<std::string>> ContextStore::ExistingKeys(
    std::string_view column, const std::vector<std::string>& values) const {
  std::set<std::string> held;
  if (base_->schema()->GetFieldIndex(std::string(column)) < 0) return std::vector<std::string>();
  for (size_t at = 0; at < values.size(); at += kInChunk) {
    const size_t end = std::min(values.size(), at + kInChunk);
    STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> rows,
                            ScanRecords(InFilter(column, values, at, end),
                                        {"id", std::string(column), "content_type"}));
    for (const ContextRecord& r : rows) {
      if (r.is_tombstone()) continue;
      held.insert(column == "id" ? r.id : r.external_id.value_or(""));
    }
  }
  std::vector<std::string> out;
  for (const std::string& v : values) {
    if (held.count(v) > 0) out.push_back(v);
  }
  return out;
}

Result<std::set<std::string>> ContextStore::SupersededAmong(
    const std::vector<std::string>& ids) const {
  std::set<std::string> out;
  if (base_->schema()->GetFieldIndex("supersedes_id") < 0) return out;
  for (size_t at = 0; at < ids.size(); at += kInChunk) {
    const size_t end = std::min(ids.size(), at + kInChunk);
    STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> rows,
                            ScanRecords(InFilter("supersedes_id", ids, at, end),
                                        {"id", "supersedes_id", "content_type"}));
    for (const ContextRecord& r : rows) {
      if (r.supersedes_id && *r.supersedes_id != r.id) out.insert(*r.supersedes_id);
    }
  }
  return out;
}

Result<std::vector<ContextRecord>> ContextStore::VisibleBy(
    std::string_view column, std::string_view value,
    const std::vector<std::string>& columns) const {
  if (base_->schema()->GetFieldIndex(std::string(column)) < 0) {
    return std::vector<ContextRecord>();
  }
  STRATA_ASSIGN_OR_RETURN(
      std::vector<ContextRecord> rows,
      ScanRecords(fmt::format("{} = {}", column, QuoteLiteral(value)), columns));
  const int64_t now = Now();
  std::vector<ContextRecord> candidates;
  for (ContextRecord& r : rows) {
    if (VisibleByLifecycle(r, {}, now)) candidates.push_back(std::move(r));
  }
  std::vector<std::string> ids;
  ids.reserve(candidates.size());
  for (const ContextRecord& r : candidates) ids.push_back(r.id);
  STRATA_ASSIGN_OR_RETURN(std::set<std::string> superseded, SupersededAmong(ids));
  std::erase_if(candidates, [&](const ContextRecord& r) { return superseded.count(r.id) > 0; });
  std::sort(candidates.begin(), candidates.end(), ByCreatedThenId);
  return candidates;
}

Result<std::optional<ContextRecord>> ContextStore::VisibleRecord(
    std::string_view column, std::string_view value, bool require_unique,
    const std::vector<std::string>& columns) const {
  STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> visible, VisibleBy(column, value, columns));
  if (visible.empty()) return std::optional<ContextRecord>();
  if (require_unique && visible.size() > 1) {
    return Status::InvalidArgument(
        fmt::format("external_id '{}' matches multiple visible records", value));
  }
  return std::optional<ContextRecord>(std::move(visible.front()));
}

std::vector<std::string> ContextStore::DefaultColumns(
    const std::optional<ReadProjection>& p) const {
  std::vector<std::string> out;
  for (const FieldPtr& f : base_->schema()->fields()) {
    const std::string& name = f->name();
    const bool text = name == "text_payload";
    const bool binary = name == "binary_payload";
    const bool embedding = name == "embedding";
    if (p.has_value()) {
      if ((text && !p->text) || (binary && !p->binary) || (embedding && !p->embedding)) continue;
    } else if (blob_columns_.count(name) > 0) {
      continue;  // configured blobs are left out unless asked for
    }
    out.push_back(name);
  }
  return out;
}

// --- Writes ---------------------------------------------------------------------------

Status ContextStore::ValidateNew(const std::vector<ContextRecord>& records,
                                 bool check_external_ids) const {
  std::set<std::string> ids;
  std::set<std::string> external_ids;
  std::vector<std::string> id_list;
  std::vector<std::string> external_list;
  for (const ContextRecord& r : records) {
    if (r.id.empty()) return Status::InvalidArgument("a context record needs a non-empty id");
    if (r.is_tombstone()) {
      return Status::InvalidArgument(fmt::format(
          "content_type '{}' is reserved for internal tombstones", kContentTypeTombstone));
    }
    if (!ids.insert(r.id).second) {
      return Status::InvalidArgument(fmt::format("duplicate id '{}' in batch", r.id));
    }
    id_list.push_back(r.id);
    if (r.metadata && !nlohmann::json::accept(*r.metadata)) {
      return Status::InvalidArgument(
          fmt::format("invalid metadata JSON for record {}: not valid JSON", r.id));
    }
    if (r.external_id) {
      if (!external_ids.insert(*r.external_id).second) {
        return Status::InvalidArgument(
            fmt::format("duplicate external_id '{}' in batch", *r.external_id));
      }
      external_list.push_back(*r.external_id);
    }
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> held, ExistingKeys("id", id_list));
  if (!held.empty()) {
    return Status::InvalidArgument(fmt::format("id '{}' already exists", held.front()));
  }
  if (check_external_ids && !external_list.empty()) {
    STRATA_ASSIGN_OR_RETURN(held, ExistingKeys("external_id", external_list));
    if (!held.empty()) {
      return Status::InvalidArgument(fmt::format("external_id '{}' already exists", held.front()));
    }
  }
  return Status::OK();
}

Result<uint64_t> ContextStore::Write(const std::vector<ContextRecord>& records) {
  STRATA_ASSIGN_OR_RETURN(RecordBatch batch, EncodeContextRecords(records, base_->schema()));
  STRATA_RETURN_IF_ERROR(base_->Put({batch}));
  return base_->version();
}

Result<std::unique_ptr<ContextStore>> ContextStore::Fork(std::string_view name,
                                                         ContextStoreOptions options) {
  STRATA_ASSIGN_OR_RETURN(std::string prefix, base_->Fork(name));
  return Open(base_->object_store(), std::move(prefix), std::move(options),
              /*create_if_missing=*/false);
}

Result<std::unique_ptr<ContextStore>> ContextStore::OpenBranch(std::string_view name,
                                                               ContextStoreOptions options) const {
  STRATA_RETURN_IF_ERROR(table::CheckRefName("branch name", name));
  const std::string prefix = StorageBase::BranchPrefix(base_->prefix(), name);
  STRATA_ASSIGN_OR_RETURN(bool exists, table::Table::Exists(*base_->object_store(), prefix));
  if (!exists) {
    return Status::NotFound(fmt::format("no branch '{}' of the context store at {}", name,
                                        base_->prefix().empty() ? "the root" : base_->prefix()));
  }
  return Open(base_->object_store(), prefix, std::move(options), /*create_if_missing=*/false);
}

Result<uint64_t> ContextStore::Add(std::vector<ContextRecord> records) {
  if (records.empty()) return base_->version();
  const std::string run_id = NewId();
  const int64_t now = Now();
  for (ContextRecord& r : records) {
    if (r.run_id.empty()) r.run_id = run_id;
    if (r.created_at_micros == 0) r.created_at_micros = now;
  }
  MutexLock lock(write_lock_->mu);
  STRATA_RETURN_IF_ERROR(ValidateNew(records, /*check_external_ids=*/true));
  return Write(records);
}

Result<bool> ContextStore::Delete(const std::optional<ContextRecord>& visible) {
  if (!visible) return false;
  ContextRecord tombstone;
  tombstone.id = visible->id;
  tombstone.external_id = visible->external_id;
  tombstone.run_id = visible->run_id;
  tombstone.bot_id = visible->bot_id;
  tombstone.session_id = visible->session_id;
  tombstone.tenant = visible->tenant;
  tombstone.source = visible->source;
  tombstone.role = visible->role;
  tombstone.created_at_micros = Now();
  tombstone.content_type = std::string(kContentTypeTombstone);
  STRATA_RETURN_IF_ERROR(Write({tombstone}).status());
  return true;
}

Result<bool> ContextStore::DeleteById(std::string_view id) {
  MutexLock lock(write_lock_->mu);
  STRATA_ASSIGN_OR_RETURN(std::optional<ContextRecord> visible,
                          VisibleRecord("id", id, false, DefaultColumns(std::nullopt)));
  return Delete(visible);
}

Result<bool> ContextStore::DeleteByExternalId(std::string_view external_id) {
  MutexLock lock(write_lock_->mu);
  STRATA_ASSIGN_OR_RETURN(std::optional<ContextRecord> visible,
                          VisibleRecord("external_id", external_id, /*require_unique=*/true,
                                        DefaultColumns(std::nullopt)));
  return Delete(visible);
}

Result<UpsertResult> ContextStore::UpsertByExternalId(ContextRecord record) {
  if (!record.external_id) {
    return Status::InvalidArgument("upsert_by_external_id requires external_id");
  }
  if (record.external_id->empty()) {
    return Status::InvalidArgument("upsert_by_external_id requires a non-empty external_id");
  }
  if (record.is_tombstone()) {
    return Status::InvalidArgument(fmt::format(
        "content_type '{}' is reserved for internal tombstones", kContentTypeTombstone));
  }
  record.supersedes_id.reset();
  record.superseded_by_id.reset();
  if (record.id.empty()) record.id = NewId();
  if (record.run_id.empty()) record.run_id = NewId();
  if (record.created_at_micros == 0) record.created_at_micros = Now();
  MutexLock lock(write_lock_->mu);
  STRATA_ASSIGN_OR_RETURN(
      std::vector<ContextRecord> visible,
      VisibleBy("external_id", *record.external_id, DefaultColumns(std::nullopt)));
  if (visible.size() > 1) {
    return Status::InvalidArgument(
        fmt::format("external_id '{}' matches multiple visible records", *record.external_id));
  }
  UpsertResult result;
  if (visible.empty()) {
    STRATA_RETURN_IF_ERROR(ValidateNew({record}, /*check_external_ids=*/true));
    result.inserted = true;
  } else {
    record.supersedes_id = visible.front().id;
    STRATA_RETURN_IF_ERROR(ValidateNew({record}, /*check_external_ids=*/false));
    result.replaced_id = visible.front().id;
  }
  STRATA_ASSIGN_OR_RETURN(result.version, Write({record}));
  result.record = std::move(record);
  return result;
}

Result<std::vector<UpsertResult>> ContextStore::UpsertManyByExternalId(
    std::vector<ContextRecord> records) {
  if (records.empty()) return std::vector<UpsertResult>();
  const std::string run_id = NewId();
  const int64_t now = Now();
  std::vector<std::string> external_ids;
  for (ContextRecord& r : records) {
    if (!r.external_id) {
      return Status::InvalidArgument(
          "upsert_many_by_external_id requires external_id on every "
          "record");
    }
    if (r.external_id->empty()) {
      return Status::InvalidArgument(
          "upsert_many_by_external_id requires a non-empty external_id on every record");
    }
    r.supersedes_id.reset();
    r.superseded_by_id.reset();
    if (r.id.empty()) r.id = NewId();
    if (r.run_id.empty()) r.run_id = run_id;
    if (r.created_at_micros == 0) r.created_at_micros = now;
    external_ids.push_back(*r.external_id);
  }
  if (base_->schema()->GetFieldIndex("external_id") < 0) {
    return Status::InvalidArgument(
        "external_id requires a context dataset created with external_id support");
  }
  MutexLock lock(write_lock_->mu);
  // Ids and in-batch duplicates as for an add; external ids are resolved below.
  STRATA_RETURN_IF_ERROR(ValidateNew(records, /*check_external_ids=*/false));
  // Every row of these external ids: the visible ones, and whether any non-tombstone row is
  // left (only retired / expired / superseded ones reserve the external id).
  std::map<std::string, std::vector<ContextRecord>> visible;
  std::set<std::string> any_row;
  const int64_t read_now = Now();
  std::vector<std::string> candidate_ids;
  for (size_t at = 0; at < external_ids.size(); at += kInChunk) {
    const size_t end = std::min(external_ids.size(), at + kInChunk);
    STRATA_ASSIGN_OR_RETURN(
        std::vector<ContextRecord> rows,
        ScanRecords(InFilter("external_id", external_ids, at, end), DefaultColumns(std::nullopt)));
    for (ContextRecord& r : rows) {
      if (r.is_tombstone() || !r.external_id) continue;
      any_row.insert(*r.external_id);
      if (VisibleByLifecycle(r, {}, read_now)) {
        candidate_ids.push_back(r.id);
        visible[*r.external_id].push_back(std::move(r));
      }
    }
  }
  STRATA_ASSIGN_OR_RETURN(std::set<std::string> superseded, SupersededAmong(candidate_ids));
  std::vector<UpsertResult> results;
  for (ContextRecord& r : records) {
    std::vector<ContextRecord> live;
    for (ContextRecord& v : visible[*r.external_id]) {
      if (superseded.count(v.id) == 0) live.push_back(v);
    }
    UpsertResult result;
    if (live.size() > 1) {
      return Status::InvalidArgument(
          fmt::format("external_id '{}' matches multiple visible records", *r.external_id));
    }
    if (live.size() == 1) {
      r.supersedes_id = live.front().id;
      result.replaced_id = live.front().id;
    } else if (any_row.count(*r.external_id) > 0) {
      return Status::InvalidArgument(
          fmt::format("external_id '{}' already exists", *r.external_id));
    } else {
      result.inserted = true;
    }
    results.push_back(std::move(result));
  }
  STRATA_ASSIGN_OR_RETURN(const uint64_t version, Write(records));
  for (size_t i = 0; i < records.size(); ++i) {
    results[i].record = std::move(records[i]);
    results[i].version = version;
  }
  return results;
}

Result<std::optional<UpdateResult>> ContextStore::Update(std::optional<ContextRecord> visible,
                                                         const ContextPatch& patch) {
  if (!visible) return std::optional<UpdateResult>();
  if (patch.empty()) return Status::InvalidArgument("update requires at least one patch field");
  ContextRecord next = *visible;
  next.id = NewId();
  next.run_id = NewId();
  next.created_at_micros = Now();
  next.supersedes_id = visible->id;
  next.superseded_by_id.reset();
  auto set = [](auto& field, const auto& value) {
    if (value) field = *value;
  };
  set(next.bot_id, patch.bot_id);
  set(next.session_id, patch.session_id);
  set(next.tenant, patch.tenant);
  set(next.source, patch.source);
  set(next.state_metadata, patch.state_metadata);
  set(next.metadata, patch.metadata);
  set(next.relationships, patch.relationships);
  set(next.expires_at_micros, patch.expires_at_micros);
  set(next.retention_policy, patch.retention_policy);
  set(next.lifecycle_status, patch.lifecycle_status);
  set(next.retired_at_micros, patch.retired_at_micros);
  set(next.retired_reason, patch.retired_reason);
  set(next.embedding, patch.embedding);
  set(next.payload_uri, patch.payload_uri);
  set(next.payload_size, patch.payload_size);
  set(next.payload_checksum, patch.payload_checksum);
  STRATA_RETURN_IF_ERROR(ValidateNew({next}, /*check_external_ids=*/false));
  UpdateResult result;
  STRATA_ASSIGN_OR_RETURN(result.version, Write({next}));
  result.replaced_id = visible->id;
  result.record = std::move(next);
  return std::optional<UpdateResult>(std::move(result));
}

Result<std::optional<UpdateResult>> ContextStore::UpdateById(std::string_view id,
                                                             const ContextPatch& patch) {
  if (id.empty()) return Status::InvalidArgument("update_by_id requires a non-empty id");
  MutexLock lock(write_lock_->mu);
  // The full row (blobs included): the new record carries the old one's content.
  STRATA_ASSIGN_OR_RETURN(std::optional<ContextRecord> visible,
                          VisibleRecord("id", id, /*require_unique=*/false, {}));
  return Update(std::move(visible), patch);
}

Result<std::optional<UpdateResult>> ContextStore::UpdateByExternalId(std::string_view external_id,
                                                                     const ContextPatch& patch) {
  if (external_id.empty()) {
    return Status::InvalidArgument("update_by_external_id requires a non-empty external_id");
  }
  MutexLock lock(write_lock_->mu);
  STRATA_ASSIGN_OR_RETURN(std::optional<ContextRecord> visible,
                          VisibleRecord("external_id", external_id, /*require_unique=*/true, {}));
  return Update(std::move(visible), patch);
}

Result<bool> ContextStore::MigrateRelationshipsColumn() {
  if (base_->pinned()) {
    return Status::InvalidArgument(
        "checked-out store is read-only; call RefreshLatest before migrating it");
  }
  // The column as a new store has it (its type does not depend on the options).
  ContextSchemaOptions options;
  options.embedding_dim = embedding_dim_;
  STRATA_ASSIGN_OR_RETURN(SchemaPtr full, ContextSchema(options));
  FieldPtr relationships = full->GetFieldByName("relationships");
  if (relationships == nullptr) return Status::Internal("the context schema has no relationships");
  // No write of this handle runs meanwhile: AddColumns closes the writer they use.
  MutexLock lock(write_lock_->mu);
  return base_->AddColumns({relationships});
}

// --- External payloads ----------------------------------------------------------------

Result<std::string> ContextStore::PayloadKey(std::string_view uri) const {
  if (uri.find("://") != std::string_view::npos) {
    return Status::InvalidArgument(
        fmt::format("payload uri '{}' names another store: a payload uri is a key relative to "
                    "the store's payload area, such as 'docs/report.pdf'",
                    uri));
  }
  if (Status valid = ValidateObjectKey(uri); !valid.ok()) {
    return Status::InvalidArgument(
        fmt::format("invalid payload uri '{}': {}", uri, valid.message()));
  }
  return fmt::format("{}{}{}", base_->prefix(), kPayloadDir, uri);
}

Result<int64_t> ContextStore::PutPayload(std::string_view uri, std::string_view bytes) {
  STRATA_ASSIGN_OR_RETURN(const std::string key, PayloadKey(uri));
  if (base_->pinned()) {
    return Status::InvalidArgument(
        "checked-out store is read-only; call RefreshLatest before writing");
  }
  if (base_->deleted()) {
    return Status::NotFound(fmt::format("context store at '{}' was deleted", base_->prefix()));
  }
  ObjectStore& store = *base_->object_store();
  // Immutable, so a record's payload never changes under it; a retried put is idempotent.
  Status put = store.PutIfAbsent(key, bytes);
  if (put.IsAlreadyExists()) {
    STRATA_ASSIGN_OR_RETURN(Buffer existing, store.Get(key));
    if (existing.view() != bytes) {
      return Status::AlreadyExists(
          fmt::format("payload '{}' already exists with other content ({} bytes); payloads are "
                      "immutable: put the new content under another uri",
                      uri, existing.size()));
    }
  } else {
    STRATA_RETURN_IF_ERROR(put);
  }
  return static_cast<int64_t>(bytes.size());
}

Result<std::optional<std::string>> ContextStore::FetchPayload(std::string_view id) const {
  STRATA_ASSIGN_OR_RETURN(std::optional<ContextRecord> visible,
                          VisibleRecord("id", id, /*require_unique=*/false,
                                        DefaultColumns(ReadProjection{
                                            .text = false, .binary = false, .embedding = false})));
  if (!visible) return std::optional<std::string>();
  if (!visible->payload_uri) {
    return Status::InvalidArgument(
        fmt::format("record '{}' has no external payload reference to fetch", id));
  }
  const std::string& uri = *visible->payload_uri;
  Result<std::string> key = PayloadKey(uri);
  if (!key.ok()) return key.status().WithContext(fmt::format("record '{}'", id));
  Result<Buffer> got = base_->object_store()->Get(*key);
  if (got.status().IsNotFound()) {
    return Status::NotFound(
        fmt::format("payload '{}' of record '{}' is not in the store", uri, id));
  }
  STRATA_RETURN_IF_ERROR(got.status());
  if (visible->payload_size && *visible->payload_size != got->size()) {
    return Status::Corruption(
        fmt::format("payload '{}' of record '{}' has {} bytes, the record "
                    "says {}",
                    uri, id, got->size(), *visible->payload_size));
  }
  return std::optional<std::string>(std::string(got->view()));
}

// --- Reads ----------------------------------------------------------------------------

Result<std::vector<ContextRecord>> ContextStore::List(std::optional<int64_t> limit,
                                                      int64_t offset) const {
  return ListFiltered({}, limit, offset);
}

Result<std::vector<ContextRecord>> ContextStore::ListFiltered(
    const RecordFilters& filters, std::optional<int64_t> limit, int64_t offset,
    const LifecycleQueryOptions& lifecycle, std::optional<ReadProjection> projection) const {
  if (offset < 0 || (limit && *limit < 0)) {
    return Status::InvalidArgument("limit and offset must not be negative");
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> rows,
                          ScanRecords("", DefaultColumns(projection)));
  const int64_t now = lifecycle.reference_time_micros.value_or(Now());
  std::set<std::string> superseded;
  if (!lifecycle.include_retired) {
    for (const ContextRecord& r : rows) {
      if (r.supersedes_id && *r.supersedes_id != r.id) superseded.insert(*r.supersedes_id);
    }
  }
  std::vector<ContextRecord> out;
  for (ContextRecord& r : rows) {
    if (!VisibleByLifecycle(r, lifecycle, now) || superseded.count(r.id) > 0) continue;
    if (!filters.Matches(r)) continue;
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), ByCreatedThenId);
  const size_t begin = std::min(out.size(), static_cast<size_t>(offset));
  const size_t end = limit ? std::min(out.size(), begin + static_cast<size_t>(*limit)) : out.size();
  return std::vector<ContextRecord>(std::make_move_iterator(out.begin() + begin),
                                    std::make_move_iterator(out.begin() + end));
}

Result<std::optional<ContextRecord>> ContextStore::Get(std::string_view id) const {
  STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> rows,
                          ScanRecords(fmt::format("id = {}", QuoteLiteral(id)),
                                      DefaultColumns(std::nullopt), ListSource::kFragments));
  if (rows.empty()) return std::optional<ContextRecord>();
  return std::optional<ContextRecord>(std::move(rows.front()));
}

Result<std::optional<ContextRecord>> ContextStore::GetById(std::string_view id) const {
  return VisibleRecord("id", id, /*require_unique=*/false, DefaultColumns(std::nullopt));
}

Result<std::optional<ContextRecord>> ContextStore::GetByExternalId(
    std::string_view external_id) const {
  return VisibleRecord("external_id", external_id, /*require_unique=*/true,
                       DefaultColumns(std::nullopt));
}

Result<std::vector<ContextRecord>> ContextStore::ListRelated(std::string_view target_id,
                                                             std::optional<std::string> relation,
                                                             std::optional<int64_t> limit) const {
  if (base_->schema()->GetFieldIndex("relationships") < 0) {
    return std::vector<ContextRecord>();
  }
  if (limit && *limit < 0) return Status::InvalidArgument("limit must not be negative");
  std::vector<ContextRecord> out;
  if (limit && *limit == 0) return out;
  STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> visible, ListFiltered({}, std::nullopt, 0));
  for (ContextRecord& r : visible) {
    if (!r.relationships) continue;
    const bool related = std::any_of(
        r.relationships->begin(), r.relationships->end(), [&](const ContextRelationship& rel) {
          return rel.target_id == target_id && (!relation || rel.relation == *relation);
        });
    if (!related) continue;
    out.push_back(std::move(r));
    if (limit && static_cast<int64_t>(out.size()) >= *limit) break;
  }
  return out;
}

Result<std::optional<std::string>> ContextStore::GetBlob(std::string_view id) const {
  STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> rows,
                          ScanRecords(fmt::format("id = {}", QuoteLiteral(id)),
                                      {"id", "content_type", "binary_payload"}));
  if (rows.empty() || rows.front().is_tombstone()) return std::optional<std::string>();
  return rows.front().binary_payload;
}

}  // namespace strata::store
