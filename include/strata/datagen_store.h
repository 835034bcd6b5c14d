// DatagenStore: the append-only checkpoint event log of data-generation pipelines, on a
// StorageBase (include/strata/storage_base.h) with the v2 event schema and key `event_id`.
// An item's state is never stored: it is a fold over the item's events (FoldDatagenEvents),
// used to resume after a crash, to inspect failures and to summarise runs (Overview).
//
// Event ids are derived, not drawn (DatagenEventId): a writer that retries a checkpoint
// re-derives the same ids, so a checkpoint written twice collapses to one copy under the
// store's newest-wins dedup by key. DatagenStreamWriter is the client that derives them.
//
// Writes seal on put: Append and AppendCheckpoint are durable and visible on return. A
// checkpoint (one step's field events and its STEP_COMPLETED) is one put, so readers see all
// of it or none of it. After every append the own shard's count-triggered merge runs
// (StorageBase::MaybeMerge; a no-op unless merge_after_generations > 0). There is no
// periodic cleanup here: a process-wide maintenance component runs cleanup timers for every
// store, so the reference's cleanup_interval_secs option is deliberately absent.
//
// Reads are consistent StorageBase reads over the whole tree (base table + pending
// generations, newest wins per event_id) without the inline blob bytes, sorted by
// (item_id, item_seq, event_id). GetBlob fetches one event's bytes.
//
// Thread safety: as StorageBase, which holds all the state: a handle may be shared by any
// number of threads and every method but the destructor may be called concurrently.
// DatagenStreamWriter is a value owned by one thread; several writers (one per item) may
// share a store.
//
// Errors: InvalidArgument for bad events (nothing written; the messages are listed at the
// functions), Corruption for stored rows that do not decode into valid events, otherwise as
// StorageBase (Fenced, Unavailable past the pending-generation cap, Busy).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
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

// The store kind a datagen store records in its base table (StorageBaseOptions::store_kind).
inline constexpr std::string_view kDatagenStoreKind = "datagen";
// The schema_version written into new events.
inline constexpr int32_t kDatagenSchemaVersion = 2;
// Overview: at most this many sample root ids per run with failures.
inline constexpr size_t kDatagenFailureSampleLimit = 5;

// --- Vocabulary ----------------------------------------------------------------------------

enum class DatagenEventType {
  kItemCreated,    // ITEM_CREATED
  kStepStarted,    // STEP_STARTED
  kFieldSet,       // FIELD_SET
  kFieldAppend,    // FIELD_APPEND
  kStepCompleted,  // STEP_COMPLETED
  kFailed,         // FAILED
  kTerminal,       // TERMINAL
};
std::string_view DatagenEventTypeName(DatagenEventType type);
// InvalidArgument "unsupported datagen event type 'X'" for any other string.
Result<DatagenEventType> ParseDatagenEventType(std::string_view text);

// Kinds of pipeline step; only drivers (sequence, loop) emit STEP_STARTED.
enum class DatagenStepKind {
  kRoot,
  kLeaf,
  kSequence,
  kLoop,
  kMapReduce,
  kBranch,
  kSubPipeline,
  kConditional,
  kRouter,
};
std::string_view DatagenStepKindName(DatagenStepKind kind);  // "root", ..., "map_reduce", ...
// InvalidArgument "unsupported datagen step kind 'X'".
Result<DatagenStepKind> ParseDatagenStepKind(std::string_view text);
bool IsDriverStep(DatagenStepKind kind);

enum class DatagenItemStatus { kRunning, kCompleted, kFiltered, kFailed };
std::string_view DatagenItemStatusName(DatagenItemStatus status);  // "running", ...
// InvalidArgument "unsupported datagen item status 'X'".
Result<DatagenItemStatus> ParseDatagenItemStatus(std::string_view text);
// completed and filtered are terminal.
bool IsTerminalStatus(DatagenItemStatus status);

// A field value. Blob bytes are optional in memory: reads without blobs (every read but
// GetBlob and an eager fold) carry only size and checksum.
struct DatagenBlob {
  std::optional<std::string> bytes;
  int64_t size = 0;
  std::optional<std::string> checksum;
  friend bool operator==(const DatagenBlob&, const DatagenBlob&) = default;
};

class DatagenValue {
 public:
  enum class Kind { kInt, kFloat, kBool, kStr, kJson, kBlob };

  static DatagenValue Int(int64_t v);
  static DatagenValue Float(double v);
  static DatagenValue Bool(bool v);
  static DatagenValue Str(std::string v);
  // JSON text; validated when written ("event 'X' contains invalid value_json: ...").
  static DatagenValue Json(std::string v);
  // A blob of `bytes` (size = its length).
  static DatagenValue Blob(std::string bytes, std::optional<std::string> checksum = std::nullopt);
  static DatagenValue Blob(DatagenBlob blob);

  Kind kind() const { return kind_; }
  int64_t int_value() const { return int_; }
  double float_value() const { return float_; }
  bool bool_value() const { return bool_; }
  // Str and Json.
  const std::string& text() const { return text_; }
  const DatagenBlob& blob() const { return blob_; }
  DatagenBlob& mutable_blob() { return blob_; }

  // Floats compare by bit pattern, so an identical duplicate holding NaN is still identical.
  friend bool operator==(const DatagenValue& a, const DatagenValue& b);

 private:
  Kind kind_ = Kind::kInt;
  int64_t int_ = 0;
  double float_ = 0;
  bool bool_ = false;
  std::string text_;
  DatagenBlob blob_;
};
// The value_kind column's strings: "int", "float", "bool", "str", "json", "blob".
std::string_view DatagenValueKindName(DatagenValue::Kind kind);

// Where in the pipeline an event happened (step provenance).
struct DatagenStepPosition {
  std::string step_name;
  DatagenStepKind step_kind = DatagenStepKind::kLeaf;
  int64_t step_index = 0;
  std::optional<std::string> enclosing_step;
  std::optional<std::string> selector_step;
  friend auto operator<=>(const DatagenStepPosition&, const DatagenStepPosition&) = default;
};

// --- Item ids ------------------------------------------------------------------------------

// A materialised path "root_key/step:idx/step:idx...": the root item's source key, then one
// segment per fan-out (the step that created the child and the child's branch index).
class DatagenItemId {
 public:
  // Errors (InvalidArgument): "empty datagen item id"; "malformed item id segment 'S' in
  // 'ID'" (an empty segment, or one without a step name before ':' or without ':');
  // "non-integer branch index 'I' in 'ID'" (the text after the last ':' of a segment is not
  // a non-negative decimal integer).
  static Result<DatagenItemId> Parse(std::string_view text);
  // A root id from a source key: "empty datagen item id" for "", and a key containing '/'
  // is "malformed item id segment".
  static Result<DatagenItemId> FromSourceKey(std::string_view key);

  // The child created by `step` with branch index `index`. InvalidArgument when `step` is
  // empty or contains '/' or ':' (it would not parse back), or `index` is negative.
  Result<DatagenItemId> Child(std::string_view step, int64_t index) const;
  // nullopt for a root.
  std::optional<DatagenItemId> Parent() const;
  DatagenItemId Root() const;
  // The step and branch index of the last segment; nullopt for a root.
  std::optional<std::string> OriginStep() const;
  std::optional<int64_t> BranchIdx() const;
  bool IsRoot() const;

  const std::string& str() const { return text_; }
  friend auto operator<=>(const DatagenItemId&, const DatagenItemId&) = default;

 private:
  explicit DatagenItemId(std::string text) : text_(std::move(text)) {}
  std::string text_;
};

// UUIDv5(NAMESPACE_OID, item_id + "\0" + checkpoint_id + "\0" + decimal(ordinal)), hyphenated
// lower case: the same inputs always give the same id.
std::string DatagenEventId(std::string_view item_id, std::string_view checkpoint_id,
                           uint64_t ordinal);

// A fresh time-ordered id (UUIDv7, hyphenated lower case) from the process-wide generator, so
// the ids one process draws strictly increase. The reference's generate_id, which pipelines
// use for run ids and writer epochs. Thread safe.
std::string NewTimeOrderedId();

// --- Events --------------------------------------------------------------------------------

// One row of the log. The optionals are the schema's nullable columns; the blob value's
// size and checksum are the payload_size and payload_checksum columns.
struct DatagenEvent {
  std::string event_id;
  std::string item_id;
  std::string root_item_id;
  std::optional<std::string> parent_item_id;
  int64_t item_seq = 0;
  std::string checkpoint_id;
  DatagenEventType event_type = DatagenEventType::kItemCreated;
  std::optional<std::string> step_name;
  std::optional<DatagenStepKind> step_kind;
  std::optional<int64_t> step_index;
  std::optional<std::string> enclosing_step;
  std::optional<std::string> selector_step;
  int32_t attempt = 0;
  std::string run_id;
  std::string writer_epoch;
  std::optional<std::string> field_name;
  std::optional<std::string> field_type;
  std::optional<int32_t> codec_version;
  std::optional<DatagenValue> value;
  std::optional<std::string> query_tags_json;  // a JSON text
  std::optional<DatagenItemStatus> status;
  std::optional<std::string> error_type;
  std::optional<std::string> error_dump;
  std::optional<std::string> traceback;
  int64_t event_ts_micros = 0;  // UTC
  int32_t schema_version = kDatagenSchemaVersion;

  // The step provenance, when step_name, step_kind and step_index are all set.
  std::optional<DatagenStepPosition> position() const;
  void set_position(const DatagenStepPosition& position);

  // The event on its own. InvalidArgument "event 'E': X must not be empty" for event_id,
  // item_id, root_item_id, checkpoint_id, run_id, writer_epoch; "item_seq must not be
  // negative", "attempt must not be negative", "schema_version must be positive"; FIELD_SET
  // and FIELD_APPEND need field_name, field_type, codec_version, a value and the step
  // provenance; STEP_STARTED and STEP_COMPLETED the provenance; FAILED error_type and the
  // provenance ("E requires X" naming the missing column); TERMINAL "requires status
  // completed or filtered"; ITEM_CREATED nothing more. A FIELD event's JSON value and
  // query_tags_json must parse ("event 'E' contains invalid value_json: ...").
  Status Validate() const;

  friend bool operator==(const DatagenEvent&, const DatagenEvent&) = default;
};

// The v2 schema (31 columns, `event_id` carries the primary-key marker).
SchemaPtr DatagenSchema();
// Every column but value_blob: what reads project.
std::vector<std::string> DatagenNonBlobColumns();

// A batch as Append writes it: every event valid; one event_id twice with different content
// is "event_id 'E' was reused with different content" (identical duplicates are allowed);
// two different events with one (item_id, item_seq) "item 'I' has duplicate item_seq N in
// one batch"; a blob value must carry its bytes ("blob event 'E' has no bytes on the write
// path") of its declared size ("blob event 'E' declares N bytes but contains M").
Status ValidateDatagenWriteBatch(const std::vector<DatagenEvent>& events);
// A checkpoint as AppendCheckpoint writes it: "checkpoint batch must not be empty"; one
// item_id, checkpoint_id, run_id, writer_epoch and attempt ("checkpoint batch mixes X values
// 'A' and 'B'"); only FIELD_SET, FIELD_APPEND and STEP_COMPLETED ("checkpoint batch may
// contain only FIELD_SET, FIELD_APPEND, and STEP_COMPLETED events"); "checkpoint batch
// requires exactly one STEP_COMPLETED event, found N"; "all field events must share the
// STEP_COMPLETED step identity" (step_name, step_index, step_kind, enclosing_step,
// selector_step); then ValidateDatagenWriteBatch.
Status ValidateDatagenCheckpoint(const std::vector<DatagenEvent>& events);

// Events <-> batches in `schema` (the store's, columns by name): value_kind and exactly its
// companion column (value_i64, value_f64, value_bool, value_str, value_json, or
// value_blob + payload_size + payload_checksum). Decoding validates every event and reports
// rows that do not make one as InvalidArgument: "event 'E': value_i64 must not be null"
// (likewise value_f64, value_bool), "value_kind=str requires value_str", "value_kind=json
// requires value_json", "event 'E' contains invalid value_json: ...", "event 'E' has
// unsupported value_kind 'K'", a blob without payload_size; a batch without value_blob
// decodes blobs without bytes.
Result<RecordBatch> EncodeDatagenEvents(const std::vector<DatagenEvent>& events,
                                        const SchemaPtr& schema);
Result<std::vector<DatagenEvent>> DecodeDatagenEvents(const RecordBatch& batch);

// --- Folds ---------------------------------------------------------------------------------

struct DatagenCursor {
  DatagenStepPosition position;
  int64_t item_seq = 0;
  friend bool operator==(const DatagenCursor&, const DatagenCursor&) = default;
};

// A folded field: FIELD_SET keeps the last value (values has one element), FIELD_APPEND
// accumulates every value in item_seq order.
struct DatagenFieldState {
  bool appended = false;
  std::vector<DatagenValue> values;
  friend bool operator==(const DatagenFieldState&, const DatagenFieldState&) = default;
};

struct DatagenFoldedItem {
  std::string item_id;
  std::string root_item_id;
  std::optional<std::string> parent_item_id;
  DatagenItemStatus status = DatagenItemStatus::kRunning;
  int64_t last_item_seq = 0;
  int32_t last_attempt = 0;
  std::map<std::string, DatagenFieldState> fields;
  std::vector<DatagenCursor> trajectory;  // STEP_COMPLETED in item_seq order
  std::set<DatagenStepPosition> started;
  std::set<DatagenStepPosition> completed;
  std::optional<std::string> query_tags_json;
  std::map<std::string, std::string> blob_event_ids;  // field -> latest blob event
  friend bool operator==(const DatagenFoldedItem&, const DatagenFoldedItem&) = default;
};

enum class DatagenFoldMode {
  kLazy,   // blob values without bytes (GetBlob / LoadBlob fetch them)
  kEager,  // blob bytes loaded
};

// The fold of one item's events (any order, duplicates allowed). Normalises first: each
// event validated, duplicates by event_id collapsed (different content: "event_id 'E' was
// reused with different content"), sorted by (item_seq, event_id); "all events in a fold
// must belong to one item"; two events at one item_seq "item 'I' has conflicting events at
// item_seq N". nullopt (never started) when there are no events or the first is not
// ITEM_CREATED. Then in order: last_item_seq and last_attempt are maxima; ITEM_CREATED sets
// status running and the query tags; STEP_STARTED adds to started; FIELD_SET replaces the
// value but may not change its kind ("field 'F' changes value kind from A to B"),
// FIELD_APPEND accumulates (kind fixed by the first element, same message), one field
// mixing the two is "field 'F' mixes FIELD_SET and FIELD_APPEND"; a blob-valued field
// records its event in blob_event_ids; STEP_COMPLETED adds to completed and to the
// trajectory; FAILED changes nothing (failures are read separately); TERMINAL sets the
// status. All errors are InvalidArgument. Blob bytes are kept as given.
Result<std::optional<DatagenFoldedItem>> FoldDatagenEvents(std::vector<DatagenEvent> events);

// --- Read results --------------------------------------------------------------------------

struct DatagenItemTreeNode {
  DatagenFoldedItem item;
  std::vector<std::string> children;  // sorted
};
struct DatagenItemTree {
  std::vector<std::string> roots;  // sorted
  std::map<std::string, DatagenItemTreeNode> nodes;
};

struct DatagenItemFailure {
  DatagenCursor at;
  std::string run_id;
  int32_t attempt = 0;
  std::string error_type;
  std::optional<std::string> error_dump;
  std::optional<std::string> traceback;
  friend bool operator==(const DatagenItemFailure&, const DatagenItemFailure&) = default;
};

struct DatagenRunFailures {
  int64_t failures = 0;
  std::map<std::string, int64_t> failures_by_error_type;
  // The smallest (at most kDatagenFailureSampleLimit) distinct root ids with failures.
  std::vector<std::string> sample_root_item_ids;
  friend bool operator==(const DatagenRunFailures&, const DatagenRunFailures&) = default;
};

struct DatagenOverview {
  // Root items that started (ITEM_CREATED), by folded status; a root whose fold says failed
  // counts as running.
  int64_t items = 0;
  int64_t running = 0;
  int64_t completed = 0;
  int64_t filtered = 0;
  // FAILED events of every item.
  int64_t failures = 0;
  std::map<std::string, int64_t> failures_by_error_type;
  std::map<std::string, DatagenRunFailures> failures_by_run;
  // STEP_COMPLETED events of every item, by step_name.
  std::map<std::string, int64_t> completed_steps;
  friend bool operator==(const DatagenOverview&, const DatagenOverview&) = default;
};

struct DatagenStoreOptions {
  // Every StorageBase knob except schema, key_column, store_kind and seal_on_put (the store
  // sets them: the datagen schema, "event_id", "datagen", seal on put). base.clock also
  // stamps the event_ts of stream writers' events. No periodic cleanup option (the
  // reference's cleanup_interval_secs): the process-wide maintenance component schedules
  // cleanups for every store.
  StorageBaseOptions base;
};

// Who writes: a run and the writer's epoch (both non-empty).
struct DatagenWriteContext {
  std::string run_id;
  std::string writer_epoch;
};

class DatagenStreamWriter;

// One field written by DatagenStreamWriter::StepCompleted.
struct DatagenFieldWrite {
  std::string name;
  DatagenValue value;
  bool append = false;     // FIELD_APPEND instead of FIELD_SET
  std::string field_type;  // "" = the value kind's name
  int32_t codec_version = 1;
};

class DatagenStore {
 public:
  static Result<std::unique_ptr<DatagenStore>> Open(std::shared_ptr<ObjectStore> store,
                                                    std::string prefix,
                                                    DatagenStoreOptions options = {},
                                                    bool create_if_missing = true);

  // --- Writes ----------------------------------------------------------------------------
  // ValidateDatagenWriteBatch, one put (durable and visible on return), then MaybeMerge.
  // Nothing is written on a validation error. An empty batch writes nothing. Returns the
  // base version after the merge.
  Result<uint64_t> Append(const std::vector<DatagenEvent>& events);
  // ValidateDatagenCheckpoint, then as Append: one put, so the checkpoint is visible whole.
  Result<uint64_t> AppendCheckpoint(const std::vector<DatagenEvent>& events);

  // Writes ITEM_CREATED (item_seq 1, checkpoint "<item>\0created", status running) and
  // returns a writer at item_seq 2, attempt 0. parent_item_id defaults to the id's path
  // parent; root_item_id is the path root. InvalidArgument for an empty run_id or
  // writer_epoch, or query tags that are not JSON.
  Result<DatagenStreamWriter> OpenStream(const DatagenItemId& item, DatagenWriteContext context,
                                         std::optional<std::string> parent_item_id = std::nullopt,
                                         std::optional<std::string> query_tags_json = std::nullopt);
  // A writer continuing the item after its last event: item_seq last + 1, attempt last + 1,
  // checkpoint ordinals from 0. nullopt when the item never started. Writes nothing.
  Result<std::optional<DatagenStreamWriter>> ResumeStream(const DatagenItemId& item,
                                                          DatagenWriteContext context);

  // --- Reads (no blob bytes; sorted by item_id, item_seq, event_id) --------------------------
  Result<std::vector<DatagenEvent>> EventsForItem(std::string_view item_id) const;
  Result<std::vector<DatagenEvent>> EventsForRoot(std::string_view root_item_id) const;
  // Every started item of the root, folded; an item whose parent_item_id names an item of
  // the tree is its child, any other is a root.
  Result<DatagenItemTree> ItemTree(std::string_view root_item_id) const;
  // FAILED events, of one run or all.
  Result<std::vector<DatagenEvent>> Failures(
      const std::optional<std::string>& run_id = std::nullopt) const;
  // The item's FAILED events in item_seq order.
  Result<std::vector<DatagenItemFailure>> ItemFailures(std::string_view item_id) const;
  // The folded trajectory; empty for an item that never started.
  Result<std::vector<DatagenCursor>> Trajectory(std::string_view item_id) const;
  // FoldDatagenEvents over the item's events; kEager loads blob bytes (GetBlob each).
  Result<std::optional<DatagenFoldedItem>> FoldItem(
      std::string_view item_id, DatagenFoldMode mode = DatagenFoldMode::kLazy) const;
  // Folded status of each root item; nullopt when it never started.
  Result<std::map<std::string, std::optional<DatagenItemStatus>>> RootItemStatuses(
      const std::vector<std::string>& root_item_ids) const;
  // Counts over the whole log (one read).
  Result<DatagenOverview> Overview() const;
  // The bytes of blob event `event_id`; nullopt when there is no such event or it holds no
  // blob. The reference reads the pending generations newest first, then the base; one
  // StorageBase::GetMany over the whole tree answers the same (newest wins per key) in one
  // consistent read, so a merge between two lookups cannot hide the row.
  Result<std::optional<std::string>> GetBlob(std::string_view event_id) const;
  // The bytes of `field` of a folded item (through blob_event_ids). InvalidArgument when the
  // field holds no blob; NotFound when its event is gone.
  Result<std::string> LoadBlob(const DatagenFoldedItem& item, std::string_view field) const;

  // --- Passthroughs ------------------------------------------------------------------------
  Result<FlushOutcome> Flush();  // normally a no-op: puts seal
  Status Close();
  Result<MergeReport> MaybeMerge();
  Result<MergeReport> Cleanup();
  Result<table::CompactionResult> Compact(const table::CompactionOptions& options = {});
  Result<int64_t> PendingGenerations() const;
  Result<StoreObservation> Observe() const;
  uint64_t version() const;
  // Pins reads to base version `version`; the handle is read-only until RefreshLatest.
  Status Checkout(uint64_t version);
  Status RefreshLatest();
  Result<bool> CountMergeDue() const;
  // The merge steps, compaction bookkeeping and deletion of StorageBase (storage_base.h).
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
  explicit DatagenStore(std::unique_ptr<StorageBase> base, Clock* clock);
  Result<std::vector<DatagenEvent>> Read(const std::string& filter) const;
  Result<uint64_t> Write(const std::vector<DatagenEvent>& events);

  std::unique_ptr<StorageBase> base_;
  Clock* clock_;  // event timestamps of stream writers
  friend class DatagenStreamWriter;
};

// Emits one item's events through a DatagenStore, deriving checkpoint and event ids so that
// a call retried after an error writes exactly the events the first try would have (same
// ids, same item_seq): the copies collapse. A call that fails leaves the writer unchanged;
// one that succeeds advances item_seq by the events written and, for the step calls
// (STEP_STARTED, StepCompleted, FAILED), the checkpoint ordinal by one. Checkpoint ids:
// "<item>\0<attempt>\0<step>\0<index>\0<ordinal>" for the step calls,
// "<item>\0terminal\0<item_seq>" for TERMINAL. Event ordinals: 0 for the step event, i + 1
// for the i-th field.
//
// Each writing call has a Build twin that returns the events instead of appending them: the
// reference's client-side writer, whose caller appends what it builds (Append for one event,
// AppendCheckpoint for a step checkpoint; through this handle, another one or the HTTP API).
// A build checks its events as that append would (ValidateDatagenCheckpoint /
// ValidateDatagenWriteBatch); one that fails leaves the writer unchanged, one that succeeds
// advances it as the writing call's success would, so the next build continues after these
// events whether or not they were appended yet. Appending built events more than once is
// harmless (same ids).
//
// The writing calls need the store alive; the builds touch only its clock (event_ts; the
// StorageBaseOptions::clock it was opened with, which must outlive the writer). Not thread
// safe.
class DatagenStreamWriter {
 public:
  const DatagenItemId& item_id() const { return item_; }
  int32_t attempt() const { return attempt_; }
  int64_t next_seq() const { return next_seq_; }
  uint64_t next_ordinal() const { return ordinal_; }

  // One STEP_STARTED.
  Status StepStarted(const DatagenStepPosition& position);
  // FIELD_SET / FIELD_APPEND per field, then STEP_COMPLETED, as one AppendCheckpoint.
  Status StepCompleted(const DatagenStepPosition& position,
                       const std::vector<DatagenFieldWrite>& fields);
  // TERMINAL with `status` completed or filtered (else InvalidArgument).
  Status ItemTerminal(DatagenItemStatus status);
  // FAILED (status failed).
  Status ItemFailed(const DatagenStepPosition& position, std::string error_type,
                    std::optional<std::string> error_dump = std::nullopt,
                    std::optional<std::string> traceback = std::nullopt);

  // The events of the calls above, built and not written (see the class comment).
  Result<DatagenEvent> BuildStepStarted(const DatagenStepPosition& position);
  Result<std::vector<DatagenEvent>> BuildStepCompleted(
      const DatagenStepPosition& position, const std::vector<DatagenFieldWrite>& fields);
  Result<DatagenEvent> BuildItemTerminal(DatagenItemStatus status);
  Result<DatagenEvent> BuildItemFailed(const DatagenStepPosition& position, std::string error_type,
                                       std::optional<std::string> error_dump = std::nullopt,
                                       std::optional<std::string> traceback = std::nullopt);

 private:
  friend class DatagenStore;
  DatagenStreamWriter(DatagenStore* store, DatagenItemId item, std::string root,
                      std::optional<std::string> parent, DatagenWriteContext context,
                      int64_t next_seq, int32_t attempt);
  DatagenEvent NewEvent(DatagenEventType type, std::string checkpoint_id, uint64_t ordinal,
                        int64_t item_seq) const;
  std::string StepCheckpointId(const DatagenStepPosition& position) const;

  DatagenStore* store_;  // the writing calls only
  Clock* clock_;         // the store's: event_ts
  DatagenItemId item_;
  std::string root_;
  std::optional<std::string> parent_;
  DatagenWriteContext context_;
  int64_t next_seq_;
  int32_t attempt_;
  uint64_t ordinal_ = 0;
};

}  // namespace strata::store
