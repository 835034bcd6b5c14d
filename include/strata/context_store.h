// ContextStore's record model: agent memory — text, binary and embedding records with a
// lifecycle, supersession and tombstones — as lance-context defines it
// (shared/reference/lance-context.md §3.2): the schema and its optional column groups, the
// record, the distance metrics, the visibility predicate and the record filters. The store
// itself (writes, reads, search over a StorageBase) builds on these.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "strata/generic_store.h"  // kBlobColumnMetadata, as generic stores mark blobs
#include "strata/record_batch.h"
#include "strata/status.h"
#include "strata/type.h"

namespace strata::store {

// The store kind a context store records in its base table.
inline constexpr std::string_view kContextStoreKind = "context";

// Lifecycle statuses with a meaning of their own (any other status hides a record).
inline constexpr std::string_view kLifecycleActive = "active";
inline constexpr std::string_view kLifecycleContradicted = "contradicted";
// The content type of the rows a delete writes. Reserved: adding a record with it is
// InvalidArgument.
inline constexpr std::string_view kContentTypeTombstone = "application/vnd.strata.tombstone";
inline constexpr std::string_view kContentTypeText = "text/plain";
// DataFrames are stored as Arrow IPC stream bytes with this content type.
inline constexpr std::string_view kContentTypeArrowStream = "application/vnd.apache.arrow.stream";

// Schema metadata key holding the distance metric ("l2", "cosine", "dot").
inline constexpr std::string_view kDistanceMetricMetadata = "strata:context:distance_metric";

inline constexpr int32_t kDefaultEmbeddingDim = 1536;

enum class DistanceMetric { kL2, kCosine, kDot };

// "l2", "cosine", "dot".
std::string_view DistanceMetricName(DistanceMetric metric);
// Case-insensitive; accepts l2, euclidean, cosine, dot, dot_product. Otherwise
// InvalidArgument "invalid distance metric 'X': valid values are 'l2', 'cosine', 'dot'".
Result<DistanceMetric> ParseDistanceMetric(std::string_view text);
// L2: sqrt(sum (a-b)^2); cosine: 1 - a.b / (|a| |b|), 1.0 when either norm is 0; dot: -(a.b).
// Smaller is closer for all three. REQUIRES a.size() == b.size().
double Distance(DistanceMetric metric, const std::vector<float>& a, const std::vector<float>& b);

struct ContextRelationship {
  std::string target_id;
  std::string relation;
  std::optional<float> weight;
  friend bool operator==(const ContextRelationship&, const ContextRelationship&) = default;
};

struct ContextStateMetadata {
  std::optional<int32_t> step;
  std::optional<std::string> active_plan_id;
  std::optional<int32_t> tokens_used;
  std::optional<std::string> custom;
  friend bool operator==(const ContextStateMetadata&, const ContextStateMetadata&) = default;
};

// One row. Required columns are plain values; nullable ones are optionals. Timestamps are
// microseconds since the epoch, UTC.
struct ContextRecord {
  std::string id;
  std::optional<std::string> external_id;
  std::string run_id;
  std::optional<std::string> bot_id;
  std::optional<std::string> session_id;
  std::optional<std::string> tenant;
  std::optional<std::string> source;
  int64_t created_at_micros = 0;
  std::string role = "user";  // dictionary<int8, utf8> column
  std::optional<ContextStateMetadata> state_metadata;
  std::optional<std::string> metadata;  // JSON text
  std::optional<std::vector<ContextRelationship>> relationships;
  std::optional<int64_t> expires_at_micros;
  std::optional<std::string> retention_policy;
  std::string lifecycle_status{kLifecycleActive};  // a null in the store reads as "active"
  std::optional<int64_t> retired_at_micros;
  std::optional<std::string> retired_reason;
  std::optional<std::string> supersedes_id;
  std::optional<std::string> superseded_by_id;
  std::string content_type{kContentTypeText};
  std::optional<std::string> text_payload;
  std::optional<std::string> binary_payload;
  std::optional<std::string> payload_uri;
  std::optional<int64_t> payload_size;
  std::optional<std::string> payload_checksum;
  std::optional<std::vector<float>> embedding;

  bool is_tombstone() const { return content_type == kContentTypeTombstone; }
  friend bool operator==(const ContextRecord&, const ContextRecord&) = default;
};

// The optional column groups (every group is on in a newly created store; older stores may
// lack some, and a value for a missing group is InvalidArgument with the group's message).
struct ContextColumnGroups {
  bool external_id = true;         // external_id
  bool partition_keys = true;      // tenant, source
  bool metadata = true;            // metadata
  bool relationships = true;       // relationships
  bool lifecycle = true;           // expires_at .. superseded_by_id
  bool external_reference = true;  // payload_uri, payload_size, payload_checksum
};

struct ContextSchemaOptions {
  int32_t embedding_dim = kDefaultEmbeddingDim;
  // A subset of {"text_payload", "binary_payload"}: marked with kBlobColumnMetadata
  // ("strata:blob", as a generic store's blobs), left out of default list projections;
  // text_payload is then large_binary.
  std::set<std::string> blob_columns;
  DistanceMetric distance_metric = DistanceMetric::kL2;
  ContextColumnGroups groups;
};

// The context schema in the reference's field order; `id` carries the primary-key marker,
// the schema the distance metric. InvalidArgument "embedding_dim must be positive, got N"
// and "invalid blob column 'X': valid columns are [binary_payload, text_payload]".
Result<SchemaPtr> ContextSchema(const ContextSchemaOptions& options = {});

// Records <-> batches in a context schema (columns by name; a store lacking a group refuses
// a value for it with the group's message; an embedding whose length is not the schema's
// dimension is InvalidArgument; text_payload stored as binary decodes as lossy UTF-8).
Result<RecordBatch> EncodeContextRecords(const std::vector<ContextRecord>& records,
                                         const SchemaPtr& schema);
Result<std::vector<ContextRecord>> DecodeContextRecords(const RecordBatch& batch);

// Which records a read shows (the reference's LifecycleQueryOptions).
struct LifecycleQueryOptions {
  bool include_expired = false;
  bool include_retired = false;
  // "now" for expiry; nullopt: the reader's clock.
  std::optional<int64_t> reference_time_micros;
};

// Rules 1-3 of the visibility predicate at `now_micros`: not a tombstone; not expired
// (expires_at <= now) unless include_expired; unless include_retired, not hidden by its
// lifecycle (active / contradicted are hidden only with retired_at or superseded_by_id set;
// any other status is hidden). Rule 4 (no other row supersedes it) needs the other rows: the
// store applies it.
bool VisibleByLifecycle(const ContextRecord& record, const LifecycleQueryOptions& options,
                        int64_t now_micros);

// Filters of list, search and retrieve (the reference's RecordFilters).
struct RecordFilters {
  struct MetadataMatch {
    enum class Kind { kEquals, kContains };
    Kind kind = Kind::kEquals;
    std::string json;  // the value, as compact JSON
    friend bool operator==(const MetadataMatch&, const MetadataMatch&) = default;
  };
  std::optional<std::string> bot_id;
  std::optional<std::string> session_id;
  std::optional<std::string> role;
  std::optional<std::string> content_type;
  std::optional<std::string> tenant;
  std::optional<std::string> source;
  std::optional<int64_t> created_at_start_micros;  // inclusive
  std::optional<int64_t> created_at_end_micros;    // inclusive
  std::map<std::string, MetadataMatch> metadata;

  // From a JSON object: bot_id, session_id, role, content_type, tenant, source (string or
  // null); created_at {gte|start|after, lte|end|before} and the flat created_at_start /
  // created_after / created_at_gte, created_at_end / created_before / created_at_lte (RFC
  // 3339 strings); any other key is a metadata filter — {"contains": v} alone is Contains,
  // anything else Equals. The reference's messages for every error.
  static Result<RecordFilters> FromJson(std::string_view json);
  bool empty() const;
  // Both bounds inclusive. Metadata: the record's metadata must be a JSON object holding the
  // key; Equals is JSON equality; Contains is an array holding an equal element or a string
  // holding the substring; otherwise no match.
  bool Matches(const ContextRecord& record) const;
};

}  // namespace strata::store
