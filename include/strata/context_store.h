// ContextStore: agent memory — text, binary and embedding records with a lifecycle,
// supersession and tombstones — on a StorageBase, as lance-context defines it
// (shared/reference/lance-context.md §3.2): the schema and its optional column groups, the
// record, the distance metrics, the visibility predicate, the record filters, and the store's
// writes (add, delete, upsert, update) and reads (list, get, related, blobs).
//
// Visibility: a record shows when it is not a tombstone, not expired, not hidden by its
// lifecycle (VisibleByLifecycle) and — for list, related and the by-id / by-external-id
// reads — no other row's supersedes_id names it. The key is `id` and the newest row of an id
// wins, so a delete's tombstone row hides the record and frees its id and external id.
//
// Thread safety: as StorageBase. Writes on one handle are serialised (validation and write
// happen under one lock, so two adds of the same id on one handle cannot both pass — a
// deferred-seal handle reads its own unsealed rows for that); two handles with the same
// shard_id fence each other, and two handles of different shards validate against what is
// sealed, as in the reference. Reads are consistent StorageBase reads;
// a read that combines several (get_by_external_id, upserts) is not one snapshot.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "strata/generic_store.h"  // kBlobColumnMetadata, as generic stores mark blobs
#include "strata/object_store.h"
#include "strata/record_batch.h"
#include "strata/status.h"
#include "strata/storage_base.h"
#include "strata/table.h"
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

// Where a store keeps its external payloads, under its prefix (ContextStore::PutPayload).
inline constexpr std::string_view kPayloadDir = "_payloads/";

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

// The approximate vector index (IVF-Flat per base fragment; docs/format/stores.md §5.4).
struct VectorIndexOptions {
  // Build indexes after merges and compactions of this handle (IndexVectors). Search uses
  // whatever segments exist either way.
  bool enabled = true;
  // Fragments with fewer live rows are searched exactly (a small fragment is cheap to scan
  // and is usually merged into a bigger one by the next compaction).
  int64_t min_fragment_rows = 16384;
  // k-means lists per fragment (0: the square root of its rows; at most one per 39 rows).
  int lists = 0;
  // Lists a search scores (more when they hold fewer than the rows asked for): the
  // recall / speed knob.
  int probes = 4;
};

// The full-text index (an inverted index of text_payload tokens per base fragment;
// docs/format/stores.md §5.5). Retrieve's text channel reads an indexed fragment's token
// counts from it instead of tokenizing the fragment's text: the same scores either way.
struct TextIndexOptions {
  // Build indexes after merges and compactions of this handle (IndexText). Retrieve uses
  // whatever segments exist either way.
  bool enabled = true;
  // Fragments with fewer live rows are tokenized per call.
  int64_t min_fragment_rows = 16384;
};

struct ContextStoreOptions {
  // Every StorageBase knob except schema, key_column, store_kind and seal_on_put (the store
  // sets them); an empty shard_id is "default".
  StorageBaseOptions base;
  // nullopt: 1536 for a new store, the persisted one otherwise; a value must match it.
  std::optional<int32_t> embedding_dim;
  // Empty: none for a new store, the persisted set otherwise; non-empty must equal it.
  std::set<std::string> blob_columns;
  // nullopt: l2 for a new store, the persisted one otherwise; a value must match it.
  std::optional<DistanceMetric> distance_metric;
  // Adds are sealed at once (visible to every reader on return); false defers to Flush.
  bool seal_on_add = true;
  VectorIndexOptions vector_index;
  TextIndexOptions text_index;
};

struct UpsertResult {
  ContextRecord record;
  bool inserted = false;
  std::optional<std::string> replaced_id;
  uint64_t version = 0;
};

// The fields an update may change (content may not); at least one must be set.
struct ContextPatch {
  std::optional<std::string> bot_id;
  std::optional<std::string> session_id;
  std::optional<std::string> tenant;
  std::optional<std::string> source;
  std::optional<ContextStateMetadata> state_metadata;
  std::optional<std::string> metadata;
  std::optional<std::vector<ContextRelationship>> relationships;
  std::optional<int64_t> expires_at_micros;
  std::optional<std::string> retention_policy;
  std::optional<std::string> lifecycle_status;
  std::optional<int64_t> retired_at_micros;
  std::optional<std::string> retired_reason;
  std::optional<std::vector<float>> embedding;
  std::optional<std::string> payload_uri;
  std::optional<int64_t> payload_size;
  std::optional<std::string> payload_checksum;

  bool empty() const;
};

struct UpdateResult {
  ContextRecord record;
  std::string replaced_id;
  uint64_t version = 0;
};

// --- Search and retrieval -------------------------------------------------------------

inline constexpr int64_t kDefaultSearchLimit = 10;
// Reciprocal-rank fusion: a channel's rank r (1-based) adds 1 / (kRrfK + r).
inline constexpr int kRrfK = 60;

struct SearchResult {
  ContextRecord record;
  double distance = 0;
};

// How retrieve scores the text channel: BM25 (k1 = 1.2, b = 0.75) over the candidate records'
// text_payload tokens, or lance-context's token overlap (matched distinct query tokens /
// distinct query tokens).
enum class TextScoring { kBm25, kOverlap };

struct RetrieveOptions {
  std::optional<std::string> text;
  std::optional<std::vector<float>> vector;
  std::optional<int64_t> limit;  // default kDefaultSearchLimit
  RecordFilters filters;
  LifecycleQueryOptions lifecycle;
  TextScoring text_scoring = TextScoring::kBm25;
};

struct RetrieveResult {
  ContextRecord record;
  double score = 0;  // the fused RRF score
  std::optional<double> vector_distance;
  std::optional<double> text_score;
  std::vector<std::string> matched_channels;  // "vector" and / or "text"
};

// The tokens of `text`: maximal runs of Unicode letters and numbers (categories L* and N*),
// each with the combining marks (M*) that follow its characters, lowercased and in Unicode
// normalization form C (so a decomposed "e\u0301" and a precomposed "\u00e9" are one token),
// in order, repeats kept. On NFC text (almost all text) this is the reference's tokenizer
// (lowercase alphanumeric runs); on decomposed text the reference splits at each mark.
std::vector<std::string> TextTokens(std::string_view text);

enum class SearchMode {
  kAuto,   // use the vector index where fragments have one
  kExact,  // score every candidate
};

// Which payload columns a list returns (configured blob columns are left out by default).
struct ReadProjection {
  bool text = true;
  bool binary = true;
  bool embedding = true;
};

class ContextStore {
 public:
  ~ContextStore();
  // Creates the store when missing (create_if_missing) with every column group. On an
  // existing store, requested options must match the persisted ones (the reference's
  // messages); a store of another kind is InvalidArgument.
  static Result<std::unique_ptr<ContextStore>> Open(std::shared_ptr<ObjectStore> store,
                                                    std::string prefix,
                                                    ContextStoreOptions options = {},
                                                    bool create_if_missing = true);

  // --- Writes (InvalidArgument, nothing written, for bad input) ---------------------
  // Validates every record (non-empty id; the tombstone content type is reserved; no id or
  // external_id twice in the batch or already in the store — superseded, retired and
  // expired rows keep theirs, a tombstoned key is free), fills an empty run_id (one UUIDv4
  // per call) and a zero created_at (now), and writes them in one put. Returns the base
  // version.
  Result<uint64_t> Add(std::vector<ContextRecord> records);
  // Writes a tombstone for the visible record; false when there is none (by external id:
  // more than one visible is an error, as for GetByExternalId).
  Result<bool> DeleteById(std::string_view id);
  Result<bool> DeleteByExternalId(std::string_view external_id);
  // Inserts, or supersedes the one visible record with the same external_id (its
  // supersedes_id names the old one, which rule 4 then hides); more than one visible is an
  // error. An empty id gets a UUIDv4.
  Result<UpsertResult> UpsertByExternalId(ContextRecord record);
  // All or nothing, one write; results in input order.
  Result<std::vector<UpsertResult>> UpsertManyByExternalId(std::vector<ContextRecord> records);
  // A new record (new UUIDv4 id and run_id, created_at now, supersedes_id = the old id) with
  // the patch applied; nullopt when no record is visible.
  Result<std::optional<UpdateResult>> UpdateById(std::string_view id, const ContextPatch& patch);
  Result<std::optional<UpdateResult>> UpdateByExternalId(std::string_view external_id,
                                                         const ContextPatch& patch);

  // Adds the relationships column (all null) to a store created without it — the
  // reference's migrate_relationships_column(); true when it added it, false when it was
  // there. Records written before read with no relationships; this handle writes them at once
  // (its unsealed rows are sealed first, as StorageBase::AddColumns does), other open handles
  // once reopened. InvalidArgument on a checked-out handle.
  Result<bool> MigrateRelationshipsColumn();

  // --- External payloads -------------------------------------------------------------
  // A record's payload_uri may name an object of the store's payload area: a relative key
  // ("docs/report.pdf"; '/'-separated, no empty, "." or ".." segments, no scheme) stored at
  // `<store prefix>_payloads/<uri>`, beside the base table and the LSM objects, so deleting
  // the store deletes its payloads. A branch (Fork) has a payload area of its own and does not
  // see its parent's payloads.
  //
  // Writes `bytes` as the payload `uri` and returns its length. Payloads are immutable: a put
  // of a uri that holds the same bytes succeeds (a retried put), one holding other bytes is
  // AlreadyExists. InvalidArgument for a bad uri or a checked-out handle.
  Result<int64_t> PutPayload(std::string_view uri, std::string_view bytes);
  // The payload of the visible record `id`; nullopt when no record is visible. InvalidArgument
  // "record 'X' has no external payload reference to fetch" when it has no payload_uri, and
  // for a uri that is not a payload key; NotFound when the payload is missing; Corruption when
  // the record's payload_size differs from the payload's length (payload_checksum is not
  // checked: its algorithm is the writer's).
  Result<std::optional<std::string>> FetchPayload(std::string_view id) const;

  // --- Reads -------------------------------------------------------------------------
  // Visible records matching `filters`, ordered by (created_at, id), then offset / limit.
  Result<std::vector<ContextRecord>> List(std::optional<int64_t> limit = std::nullopt,
                                          int64_t offset = 0) const;
  Result<std::vector<ContextRecord>> ListFiltered(
      const RecordFilters& filters, std::optional<int64_t> limit, int64_t offset,
      const LifecycleQueryOptions& lifecycle = {},
      std::optional<ReadProjection> projection = std::nullopt) const;
  // The base table's row of `id` (no pending rows, no visibility: the reference's legacy
  // point read).
  Result<std::optional<ContextRecord>> Get(std::string_view id) const;
  // The visible record; for an external id the smallest (created_at, id), and more than one
  // visible is an error.
  Result<std::optional<ContextRecord>> GetById(std::string_view id) const;
  Result<std::optional<ContextRecord>> GetByExternalId(std::string_view external_id) const;
  // Visible records with a relationship to `target_id` (and `relation`, if given).
  Result<std::vector<ContextRecord>> ListRelated(std::string_view target_id,
                                                 std::optional<std::string> relation = {},
                                                 std::optional<int64_t> limit = {}) const;
  // The binary_payload of the newest row of `id`, if any.
  Result<std::optional<std::string>> GetBlob(std::string_view id) const;

  // The `limit` (default 10; 0: none) visible records matching `filters` nearest to `query`
  // by the store's metric, ascending, ties by id; records without an embedding are skipped.
  // kExact scores every candidate. kAuto searches base fragments that have a vector index
  // (IndexVectors) through it — approximate: a true neighbour may be missed, every result is
  // a visible matching record with its exact distance, and the result has min(limit, visible
  // matches) records — and everything else (other fragments, pending rows) exactly.
  // InvalidArgument "query length N does not match embedding dimension D".
  Result<std::vector<SearchResult>> Search(const std::vector<float>& query,
                                           std::optional<int64_t> limit = std::nullopt,
                                           const RecordFilters& filters = {},
                                           const LifecycleQueryOptions& lifecycle = {},
                                           SearchMode mode = SearchMode::kAuto) const;
  // Builds the vector index of every base fragment with at least
  // vector_index.min_fragment_rows live rows that has none, one segment per fragment, and
  // commits them in one base-table version. Returns how many fragments it indexed. Runs by
  // itself after every merge and compaction of this handle when vector_index.enabled.
  Result<int> IndexVectors();
  // Builds the text index of every base fragment with at least text_index.min_fragment_rows
  // live rows that has none, as IndexVectors does (one segment per fragment, one commit).
  // Runs by itself after every merge and compaction of this handle when text_index.enabled.
  Result<int> IndexText();
  // Hybrid retrieval over the visible records matching the filters: a vector channel (every
  // record with an embedding, by distance, ties by id) and a text channel (records whose
  // text_payload shares a token with the query, by text score descending, ties by id) fused
  // by reciprocal rank; ordered by score desc, then vector_distance asc (present first), then
  // text_score desc (present first), then id. "retrieve requires text or vector" without
  // either; a query without tokens has no text channel.
  Result<std::vector<RetrieveResult>> Retrieve(const RetrieveOptions& options) const;

  int32_t embedding_dim() const { return embedding_dim_; }
  DistanceMetric distance_metric() const { return metric_; }
  const std::set<std::string>& blob_columns() const { return blob_columns_; }
  uint64_t version() const { return base_->version(); }
  Result<FlushOutcome> Flush() { return base_->Flush(); }
  Status Close() { return base_->Close(); }
  // Pins reads to base version `version`; writes fail until RefreshLatest.
  Status Checkout(uint64_t version) { return base_->Checkout(version); }
  Status RefreshLatest() { return base_->RefreshLatest(); }
  // --- Snapshots and branches (StorageBase's; docs/format/lsm.md §11) ----------------
  // Tags what a reader of the store sees now, pending rows included, as `label` (the
  // reference's snapshot(label)); the snapshot stays readable until DeleteSnapshot.
  Result<table::TagInfo> Snapshot(std::string_view label) { return base_->CreateSnapshot(label); }
  Result<std::vector<table::TagInfo>> ListSnapshots() const { return base_->ListSnapshots(); }
  Status DeleteSnapshot(std::string_view label) { return base_->DeleteSnapshot(label); }
  // Pins reads to the snapshot; writes fail until RefreshLatest.
  Status CheckoutSnapshot(std::string_view label) { return base_->CheckoutSnapshot(label); }
  // Forks branch `name` from what a reader sees now (a pinned handle: its version) and opens
  // it: a context store of its own sharing this one's files; `options` as for Open (the
  // persisted dim, metric and blob columns apply when unset).
  Result<std::unique_ptr<ContextStore>> Fork(std::string_view name,
                                             ContextStoreOptions options = {});
  // Opens branch `name` made by Fork (checkout of a branch). NotFound when there is none.
  Result<std::unique_ptr<ContextStore>> OpenBranch(std::string_view name,
                                                   ContextStoreOptions options = {}) const;
  Result<std::vector<table::BranchInfo>> ListBranches() const { return base_->ListBranches(); }
  Status DeleteBranch(std::string_view name) { return base_->DeleteBranch(name); }

  StorageBase& base() { return *base_; }
  const StorageBase& base() const { return *base_; }
  // Retrieve calls of this handle that read the store again because a winner changed between
  // their scan and their read of its record (a concurrent write), or whose indexed figures
  // differed from the record's (which would be a defect).
  int64_t retrieve_rereads() const;

 private:
  ContextStore(std::unique_ptr<StorageBase> base, int32_t dim, DistanceMetric metric,
               std::set<std::string> blob_columns, Clock* clock, RandomSource* random,
               VectorIndexOptions vector_index, TextIndexOptions text_index);
  int64_t Now() const;
  std::string NewId() const;
  // Every row of the view (newest per id, tombstones included) in `columns` (empty: all).
  Result<std::vector<ContextRecord>> ScanRecords(const std::string& filter,
                                                 const std::vector<std::string>& columns,
                                                 ListSource source = ListSource::kAll) const;
  // Of `values` of `column`, those some non-tombstone row holds, in input order.
  Result<std::vector<std::string>> ExistingKeys(std::string_view column,
                                                const std::vector<std::string>& values) const;
  // Ids some row (other than themselves) supersedes, among `ids`.
  Result<std::set<std::string>> SupersededAmong(const std::vector<std::string>& ids) const;
  // Visible (rules 1-4) rows whose `column` equals `value`, by (created_at, id), read in
  // `columns` (empty: all; they must include what visibility needs).
  Result<std::vector<ContextRecord>> VisibleBy(std::string_view column, std::string_view value,
                                               const std::vector<std::string>& columns) const;
  Result<std::optional<ContextRecord>> VisibleRecord(std::string_view column,
                                                     std::string_view value, bool require_unique,
                                                     const std::vector<std::string>& columns) const;
  Status ValidateNew(const std::vector<ContextRecord>& records, bool check_external_ids) const;
  Result<uint64_t> Write(const std::vector<ContextRecord>& records);
  Result<bool> Delete(const std::optional<ContextRecord>& visible);
  Result<std::optional<UpdateResult>> Update(std::optional<ContextRecord> visible,
                                             const ContextPatch& patch);
  std::vector<std::string> DefaultColumns(const std::optional<ReadProjection>& p) const;
  Status CheckQuery(const std::vector<float>& query) const;
  // The search through the vector index (context_ann.cc); nullopt when no base fragment of
  // the read has an index (the caller searches exactly).
  Result<std::optional<std::vector<SearchResult>>> SearchIndexed(
      const std::vector<float>& query, size_t k, const RecordFilters& filters,
      const LifecycleQueryOptions& lifecycle, const ReadProjection& projection) const;
  // The object key of payload `uri` (InvalidArgument for a bad uri).
  Result<std::string> PayloadKey(std::string_view uri) const;

  std::unique_ptr<StorageBase> base_;
  const int32_t embedding_dim_;
  const DistanceMetric metric_;
  const std::set<std::string> blob_columns_;
  Clock* const clock_;
  RandomSource* const random_;
  struct WriteLock;  // validation + write of one call at a time on this handle
  std::unique_ptr<WriteLock> write_lock_;
  VectorIndexOptions vector_index_;
  TextIndexOptions text_index_;
  // Per base version: the rows the index search checks; loaded vector and text indexes.
  struct AnnCache;
  static std::unique_ptr<AnnCache> NewAnnCache();
  std::unique_ptr<AnnCache> ann_;
};

}  // namespace strata::store
