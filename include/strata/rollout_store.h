// RolloutStore: reinforcement-learning rollouts — immutable rows of trajectories — on a
// StorageBase (include/strata/storage_base.h) with the 36-column rollout schema and key
// `id`.
//
// Writes are deferred-seal: Add is durable on return and visible after the next Flush (or
// Close, Cleanup, a full memtable) — unless the store is opened with read_own_writes, in
// which case this handle sees its own rows at once. Re-adding an id is tolerated: the
// newest row wins. Reads go through StorageBase's consistent LSM reads (base table +
// pending generations, newest wins per id).
//
// Thread safety: as StorageBase (include/strata/storage_base.h), which holds all the state:
// one handle may be shared by any number of threads and every method but the destructor may
// be called concurrently; the passthroughs (Flush, merges, Compact, Checkout, ...) keep
// StorageBase's serialisation and pinning rules, and two handles or processes with the same
// shard_id fence each other's writes. Add is StorageBase::Put. List and GetTrajectory are
// one consistent StorageBase read each. ListFiltered reads the page's ids, then their rows:
// two reads, retried (3 attempts, then Busy) when a merge moved rows between them. GetById
// and GetBlob with ListSource::kAll read the base table first and, on a miss, the whole tree
// in one consistent read, so a merge between the two cannot hide the row.
//
// Errors as StorageBase: InvalidArgument for bad input (nothing written), Fenced, Unavailable
// past the pending-generation cap, Busy for a read that kept racing merges.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/object_store.h"
#include "strata/status.h"
#include "strata/storage_base.h"
#include "strata/table.h"
#include "strata/type.h"

namespace strata::store {

// The store kind a rollout store records in its base table (StorageBaseOptions::store_kind).
inline constexpr std::string_view kRolloutStoreKind = "rollout";

// Role values the reference uses (not enforced).
inline constexpr std::string_view kRoleAssistant = "assistant";
inline constexpr std::string_view kRoleTool = "tool";
inline constexpr std::string_view kRoleGrade = "grade";
inline constexpr std::string_view kRoleArtifact = "artifact";

struct RolloutRelationship {
  std::string target_id;
  std::string relation;
  std::optional<float> weight;
  friend bool operator==(const RolloutRelationship&, const RolloutRelationship&) = default;
};

// One row. Required columns are plain values; nullable ones are optionals.
struct RolloutRecord {
  std::string id;
  std::string rollout_id;
  std::string problem_id;
  std::optional<std::string> dataset;
  int32_t sequence_order = 0;
  std::string role{kRoleAssistant};  // dictionary<int8, utf8> column
  int64_t created_at_micros = 0;     // timestamp(us), UTC
  std::optional<std::string> content;
  std::string content_type = "text/plain";
  // The "claim-check" large text columns.
  std::optional<std::string> model_input_string;
  std::optional<std::string> model_output_string;
  std::optional<std::string> rationale;
  std::optional<std::string> problem_text;
  std::optional<std::string> user_metadata;
  std::optional<std::vector<int32_t>> input_tokens;
  std::optional<std::vector<int32_t>> output_tokens;
  std::optional<int32_t> num_input_tokens;
  std::optional<int32_t> num_output_tokens;
  std::optional<std::vector<float>> output_logprobs;
  std::optional<std::vector<float>> input_logprobs;
  std::optional<std::vector<float>> ref_logprobs;
  std::optional<std::vector<int8_t>> loss_mask;
  std::optional<float> advantage;
  std::optional<float> reward;
  std::optional<float> raw_reward;
  std::optional<std::string> grader_id;
  std::optional<float> score;
  std::optional<bool> include_in_training;
  std::optional<std::string> exclude_reason;
  std::optional<std::string> policy_version;
  std::optional<std::vector<RolloutRelationship>> relationships;
  std::optional<std::string> binary_payload;  // inline bytes; never read by list/page reads
  std::optional<int64_t> payload_size;
  std::optional<std::string> payload_checksum;
  std::optional<std::string> artifact_type;
  std::optional<std::string> metadata;  // JSON text

  bool is_artifact() const { return role == kRoleArtifact; }
  friend bool operator==(const RolloutRecord&, const RolloutRecord&) = default;
};

// The rollout schema, 36 columns in the reference's order; `id` carries the primary-key
// marker.
SchemaPtr RolloutSchema();
// Every column but binary_payload (what list and page reads return).
std::vector<std::string> RolloutNonBlobColumns();

// Equality filters over the indexed string columns plus include_in_training. An empty
// string means "no filter" for that field.
struct RolloutFilters {
  std::optional<std::string> id;
  std::optional<std::string> rollout_id;
  std::optional<std::string> problem_id;
  std::optional<std::string> dataset;
  std::optional<std::string> role;
  std::optional<std::string> content_type;
  std::optional<std::string> policy_version;
  std::optional<std::string> artifact_type;
  std::optional<bool> include_in_training;

  // From a JSON object with the keys rollout_id, problem_id, dataset, policy_version, role,
  // content_type, artifact_type (strings) and include_in_training (bool). Any other key
  // ("unsupported rollout filter 'K'"), a value of the wrong type (naming the key) or a
  // non-object is InvalidArgument.
  static Result<RolloutFilters> FromJson(std::string_view json);
  // The conjunction in the fixed order id, rollout_id, problem_id, dataset, role,
  // content_type, policy_version, artifact_type, include_in_training: `col = 'v'` with '
  // doubled, joined by " AND "; "" when there is no clause.
  std::string Expression() const;
  // The same predicate evaluated on a record.
  bool Matches(const RolloutRecord& record) const;
};

struct RolloutPage {
  std::vector<RolloutRecord> records;
  bool has_more = false;
};

struct RolloutObservation {
  int64_t row_count = 0;  // base live rows + pending generation rows (excludes memtables)
  int64_t fragment_count = 0;
  uint64_t version = 0;
  int64_t last_updated_micros = 0;
  int64_t pending_generations = 0;
  int64_t unflushed_rows = 0;
};

struct RolloutStoreOptions {
  // Every StorageBase knob except schema, key_column and seal_on_put (the store sets them:
  // the rollout schema, "id", deferred seal). latest_schema defaults to the rollout schema
  // so older stores gain new columns at open and before merges.
  StorageBaseOptions base;
};

class RolloutStore {
 public:
  static Result<std::unique_ptr<RolloutStore>> Open(std::shared_ptr<ObjectStore> store,
                                                    std::string prefix,
                                                    RolloutStoreOptions options = {},
                                                    bool create_if_missing = true);

  // Durable on return. InvalidArgument (nothing written) for an empty id, rollout_id or
  // problem_id. Returns the base version (appends do not advance it).
  Result<uint64_t> Add(const std::vector<RolloutRecord>& records);

  // Every live row (no blobs), filtered in memory, then offset/limit. Order: by id.
  Result<std::vector<RolloutRecord>> List(std::optional<int64_t> limit = std::nullopt,
                                          int64_t offset = 0,
                                          const RolloutFilters& filters = {}) const;
  // One page of rows matching `filters`, in id order, from `source`; has_more tells whether
  // rows follow the page.
  Result<RolloutPage> ListFiltered(const RolloutFilters& filters, int64_t limit, int64_t offset = 0,
                                   ListSource source = ListSource::kAll) const;
  // Rows of one trajectory ordered by sequence_order then id. InvalidArgument for "".
  Result<std::vector<RolloutRecord>> GetTrajectory(std::string_view rollout_id) const;
  // The newest row of `id` with every column but the blob; kAll looks in the base first,
  // then in pending generations.
  Result<std::optional<RolloutRecord>> GetById(std::string_view id,
                                               ListSource source = ListSource::kAll) const;
  // The binary_payload of `id`, if the row exists and has one.
  Result<std::optional<std::string>> GetBlob(std::string_view id) const;
  // Counts over the base table, every shard's pending generations and this handle's
  // memtable. Fails (Corruption naming the object) when a shard manifest or the base's
  // watermarks are damaged, as reads do.
  Result<RolloutObservation> Observe() const;

  // Passthroughs.
  Result<FlushOutcome> Flush();
  Status Close();
  Result<MergeReport> MaybeMerge();
  Result<MergeReport> Cleanup();
  Result<bool> CountMergeDue() const;
  Result<table::CompactionResult> Compact(const table::CompactionOptions& options = {});
  Result<table::RepairReport> Repair();
  // The merge steps, compaction bookkeeping and deletion of StorageBase (storage_base.h).
  Result<std::optional<PreparedMerge>> PrepareCountMerge();
  Result<std::optional<PreparedMerge>> PrepareCleanupMerge();
  Result<MergeReport> CommitPreparedMerge(PreparedMerge prepared);
  Result<bool> ShouldCompact(int64_t min_fragments,
                             const std::vector<QuietHours>& quiet_hours = {}) const;
  Result<bool> ShouldCompact(const CompactionPolicy& policy) const;
  Result<CompactionStats> GetCompactionStats() const;
  Status DeleteData();
  Result<int64_t> PendingGenerations() const;
  uint64_t version() const;
  // Pins reads to base version `version`; the handle is read-only until RefreshLatest.
  Status Checkout(uint64_t version);
  Status RefreshLatest();
  bool pinned() const;

  StorageBase& base() { return *base_; }
  const StorageBase& base() const { return *base_; }

 private:
  explicit RolloutStore(std::unique_ptr<StorageBase> base);
  std::unique_ptr<StorageBase> base_;
};

// Records <-> batches in the rollout schema (columns by name, so a store with fewer
// columns — an older schema — is handled: encoding a value for a missing column is
// InvalidArgument naming it; decoding a missing column leaves the field empty).
Result<RecordBatch> EncodeRolloutRecords(const std::vector<RolloutRecord>& records,
                                         const SchemaPtr& schema);
Result<std::vector<RolloutRecord>> DecodeRolloutRecords(const RecordBatch& batch);

}  // namespace strata::store
