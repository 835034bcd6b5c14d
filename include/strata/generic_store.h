// GenericStore: a store for any user-declared schema with a required string `id`, on a
// StorageBase (include/strata/storage_base.h) keyed by `id`.
//
// The schema is declared once as a SchemaSpec (below) when the store is created; the spec
// and the seal mode are persisted in the base table's schema metadata and every later open
// checks against them. Rows come in as JSON (the codec below) or as record batches of the
// store schema, and go out as record batches that RowsToJson turns back into JSON.
//
// Writes are deferred-seal by default (seal_on_add false): Add is durable on return and
// visible after the next Flush (or Close, Cleanup, a full memtable, a maintenance flush
// pass); with seal_on_add every Add seals and is visible on return. Re-adding an id is
// allowed: the newest row wins. Reads are StorageBase's consistent LSM reads.
//
// Thread safety and errors: as StorageBase. InvalidArgument for a bad spec, bad rows or a
// bad request (nothing written), NotFound for OpenExisting of a missing store.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/object_store.h"
#include "strata/record_batch.h"
#include "strata/status.h"
#include "strata/storage_base.h"
#include "strata/table.h"
#include "strata/type.h"

namespace strata::store {

// --- Schema spec -----------------------------------------------------------------------

// Distance metric of a vector column. Parse accepts l2, euclidean (= l2), cosine, dot and
// dot_product (= dot); Name returns the canonical "l2", "cosine" or "dot".
enum class VectorMetric { kL2, kCosine, kDot };
Result<VectorMetric> ParseVectorMetric(std::string_view name);
std::string_view VectorMetricName(VectorMetric metric);

enum class ColumnKind {
  kString,     // utf8, or large_utf8 with `large`
  kInt32,      // int32
  kInt64,      // int64
  kFloat32,    // float32
  kFloat64,    // float64
  kBool,       // bool
  kTimestamp,  // timestamp[us] without a zone, UTC semantics
  kBinary,     // large_binary, stored inline; `blob` excludes it from default projections
  kVector,     // fixed_size_list<float32 (nullable)>[dim]
  kList,       // list<item (nullable)>; the item is neither a list nor a vector
};

struct ColumnType {
  ColumnKind kind = ColumnKind::kString;
  bool large = false;                       // kString
  bool blob = false;                        // kBinary
  int32_t dim = 0;                          // kVector, > 0
  VectorMetric metric = VectorMetric::kL2;  // kVector
  std::shared_ptr<const ColumnType> item;   // kList
  friend bool operator==(const ColumnType& a, const ColumnType& b);
};

struct ColumnSpec {
  std::string name;
  ColumnType type;
  bool nullable = true;
  friend bool operator==(const ColumnSpec&, const ColumnSpec&) = default;
};

// Schema metadata keys of a generic store's base table.
inline constexpr std::string_view kSchemaSpecMetadata = "strata:generic:schema_spec";
inline constexpr std::string_view kSealOnAddMetadata = "strata:generic:seal_on_add";
// Field metadata of a blob column ("true").
inline constexpr std::string_view kBlobColumnMetadata = "strata:blob";
// Schema metadata key prefix of a vector column's metric: "<prefix><column>" = "l2" | ...
inline constexpr std::string_view kDistanceMetricMetadataPrefix = "strata:distance_metric:";
// The most columns a spec may declare.
inline constexpr int kMaxSpecColumns = 1024;

// The declared columns of a generic store, in declaration order.
//
// JSON forms (FromJson accepts both; ToJson writes the first):
//   lance-context's: {"columns": [["id", {"type": "string", "nullable": false}],
//                                 ["score", {"type": "float32"}],
//                                 ["video", {"type": "binary", "blob": true}],
//                                 ["embedding", {"type": "vector", "dim": 4,
//                                                "metric": "cosine"}],
//                                 ["tags", {"type": "list", "item": {"type": "string"}}]]}
//   strata's schema JSON (include/strata/schema_json.h, what `strata table create --schema`
//   takes), for the types that map: utf8 / large_utf8, int32, int64, float32, float64, bool,
//   timestamp[us] (without a zone or with tz=UTC), binary / large_binary (field metadata
//   "strata:blob": "true" marks a blob), fixed_size_list<float32>[N] (a vector; metric
//   from field metadata "strata:distance_metric", default l2) and list<T> / large_list<T>
//   of those scalars. Any other type is InvalidArgument naming the column.
struct SchemaSpec {
  std::vector<ColumnSpec> columns;

  static Result<SchemaSpec> FromJson(std::string_view json);
  std::string ToJson() const;
  // The rules of lance-context §3.4 (first failure reported, naming the column): at least
  // one and at most kMaxSpecColumns columns, non-empty unique names, no name starting with
  // '_', vector dim > 0, no list of lists or of vectors, an `id` column of kind string
  // (not large) that is not nullable.
  Status Validate() const;
  // The base table schema: `id` first (with the primary-key marker), then the other
  // columns in declaration order, with the blob and metric metadata and the spec itself
  // (kSchemaSpecMetadata). Validates first.
  Result<SchemaPtr> ToArrowSchema() const;
  // The spec persisted in a base schema's metadata. InvalidArgument when there is none:
  // "dataset has no stored schema spec: it was not created as a generic store".
  static Result<SchemaSpec> FromStoredSchema(const Schema& schema);
  // Names of the non-blob columns in base schema order (what List and Get return).
  std::vector<std::string> NonBlobColumns() const;

  friend bool operator==(const SchemaSpec&, const SchemaSpec&) = default;
};

// --- Codec -----------------------------------------------------------------------------

// JSON rows -> one batch of `schema` (a generic store's base schema). `json` is a JSON
// array of objects or JSON Lines (one object per line). Rules (lance-context §3.4): a key
// not declared -> "row I: column 'K' is not declared in the store schema"; a non-nullable
// column missing or null -> "row I: column 'X' is not nullable and was not supplied"; a
// value of the wrong type -> "row I: column 'X' expects <what>, got <value>"; int32 range
// checked; floats from any JSON number; timestamps from integer microseconds or an RFC
// 3339 string; binary from a base64 string or an array of integers 0..255; a vector of
// exactly dim numbers ("row I: column 'X' expects a vector of D values, got N"; a null
// element -> "row I: column 'X[J]' expects a number, got null"); lists
// element-wise. Rows are numbered from 0. A failing call returns no batch.
Result<RecordBatch> EncodeJsonRows(const SchemaPtr& schema, std::string_view json);

// Rows -> JSON Lines (one object per row, each followed by '\n') appended to *out: only the
// batch's columns, nulls omitted, binary as base64, timestamps as integer microseconds,
// non-finite floats as null, vectors and lists as arrays (null list elements as null).
Status AppendRowsAsJson(const RecordBatch& batch, std::string* out);

// --- Store -----------------------------------------------------------------------------

struct GenericStoreOptions {
  // Every StorageBase knob except schema, key_column, store_kind, latest_schema and
  // seal_on_put (the store sets them from the spec and the seal mode).
  StorageBaseOptions base;
  // Seal mode used when the store is created; an existing store keeps its persisted one.
  bool seal_on_add = false;
};

struct GenericListRequest {
  ListSource source = ListSource::kAll;
  std::vector<std::string> columns;  // empty = every non-blob column
  std::string filter;                // expression language (docs/expressions.md)
  int64_t offset = 0;
  std::optional<int64_t> limit;
};

class GenericStore {
 public:
  // Opens the store at `prefix`, creating it from `spec` when missing. With a spec, an
  // existing store must have been created with an equal one ("store at 'P' was created with
  // a different schema; open it without a schema to use the persisted one"); without one,
  // the persisted spec is used, and a missing store is InvalidArgument ("a schema is
  // required to create a store").
  static Result<std::unique_ptr<GenericStore>> Open(std::shared_ptr<ObjectStore> store,
                                                    std::string prefix,
                                                    std::optional<SchemaSpec> spec,
                                                    GenericStoreOptions options = {});
  // Opens an existing store with its persisted spec; never creates (NotFound).
  static Result<std::unique_ptr<GenericStore>> OpenExisting(std::shared_ptr<ObjectStore> store,
                                                            std::string prefix,
                                                            GenericStoreOptions options = {});

  const SchemaSpec& spec() const;
  SchemaPtr schema() const;
  bool seal_on_add() const;

  // --- Writes (return the base version; appends do not advance it) ---------------------
  // JSON rows as EncodeJsonRows takes them. Nothing is written on error.
  Result<uint64_t> Add(std::string_view json_rows);
  // Batches whose schema equals the store schema (field names, types, nullability;
  // metadata ignored): "record batch schema does not match the store schema" otherwise.
  Result<uint64_t> AddBatches(const std::vector<RecordBatch>& batches);

  // --- Reads ---------------------------------------------------------------------------
  // Live rows ordered by id, filtered, then offset/limit.
  Result<std::vector<RecordBatch>> List(const GenericListRequest& request = {}) const;
  // The row of `id` (0 or 1 rows) from `source`. `columns` empty = every non-blob column;
  // blob columns are read only when named; `id` is always included (first when not named).
  Result<RecordBatch> Get(std::string_view id, const std::vector<std::string>& columns = {},
                          ListSource source = ListSource::kAll) const;
  // Rows of up to 1,024 ids in request order, missing ids skipped; columns as Get.
  Result<RecordBatch> GetMany(const std::vector<std::string>& ids,
                              const std::vector<std::string>& columns = {},
                              ListSource source = ListSource::kAll) const;
  Result<int64_t> Count(ListSource source = ListSource::kAll, std::string_view filter = {}) const;
  Result<StoreObservation> Observe() const;

  // --- Passthroughs ----------------------------------------------------------------------
  Result<FlushOutcome> Flush();
  Status Close();
  Result<MergeReport> MaybeMerge();
  Result<MergeReport> Cleanup();
  Result<bool> CountMergeDue() const;
  Result<table::CompactionResult> Compact(const table::CompactionOptions& options = {});
  Result<int64_t> PendingGenerations() const;
  uint64_t version() const;
  Status Checkout(uint64_t version);
  Status RefreshLatest();
  Result<std::optional<PreparedMerge>> PrepareCountMerge();
  Result<std::optional<PreparedMerge>> PrepareCleanupMerge();
  Result<MergeReport> CommitPreparedMerge(PreparedMerge prepared);
  Result<bool> ShouldCompact(int64_t min_fragments,
                             const std::vector<QuietHours>& quiet_hours = {}) const;
  Result<bool> ShouldCompact(const CompactionPolicy& policy) const;
  Result<CompactionStats> GetCompactionStats() const;
  // Removes every object of the store; later calls on any handle fail (StorageBase).
  Status DeleteData();

  StorageBase& base() { return *base_; }
  const StorageBase& base() const { return *base_; }

 private:
  GenericStore(std::unique_ptr<StorageBase> base, SchemaSpec spec, bool seal_on_add);
  std::unique_ptr<StorageBase> base_;
  SchemaSpec spec_;
  bool seal_on_add_;
};

}  // namespace strata::store
