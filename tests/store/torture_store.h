// The kinds of store the store torture tests (store_process_test.cc, store_worker.cc) run
// on, behind one small interface: the rollout store, and a generic store declared with a
// user schema that has vector, list and blob columns besides id and scalars. Every value of
// a user-schema row derives from its id, so a checker recomputes what it reads and finds a
// row whose values were damaged, not only a lost or duplicated id.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "strata/object_store.h"
#include "strata/record_batch.h"
#include "strata/status.h"
#include "strata/storage_base.h"

namespace strata::store::torture {

enum class StoreKind {
  kRollout,  // RolloutStore
  kGeneric,  // GenericStore with UserSchemaSpecJson()
};

// "rollout" | "generic".
Result<StoreKind> ParseStoreKind(std::string_view name);
std::string_view StoreKindName(StoreKind kind);

// The user schema of the generic kind as SchemaSpec JSON (lance-context's form): id, seq
// (int64), score (float64, null for some rows), label (string), embedding (vector of 8,
// cosine), tags (list of string, sometimes empty) and payload (binary blob, 1-4 KiB).
std::string UserSchemaSpecJson();

// Rows of the user schema with these ids as JSON Lines, every value derived from the id;
// payloads alternate between base64 strings and arrays of byte values.
std::string UserRowsJson(const std::vector<std::string>& ids);
// The same rows as one batch of `schema` (the store schema), built column by column.
Result<RecordBatch> UserRowsBatch(const SchemaPtr& schema, const std::vector<std::string>& ids);
// Checks every row of `batch` against the values its id derives for each user-schema column
// the batch has; Corruption naming the id and the column on the first difference.
Status CheckUserRows(const RecordBatch& batch);

// Options of the torture tests' stores: small batches, small WAL segments (so seals link
// them), no pending-generation cap.
StorageBaseOptions TortureBaseOptions(const std::string& shard);

class TortureStore {
 public:
  // Opens (creating when missing) the store of `kind` at the root of `objects` as `shard`.
  static Result<std::unique_ptr<TortureStore>> Open(StoreKind kind,
                                                    std::shared_ptr<ObjectStore> objects,
                                                    const std::string& shard);
  virtual ~TortureStore() = default;

  // Adds one row per id, durable on return. The generic kind writes JSON through Add, and
  // one call in four (decided by the first id) a built batch through AddBatches.
  virtual Status Add(const std::vector<std::string>& ids) = 0;
  virtual Result<FlushOutcome> Flush() = 0;
  virtual Result<MergeReport> Cleanup() = 0;
  virtual Status Compact() = 0;
  virtual Status Close() = 0;
  virtual StorageBase& base() = 0;

  // Every live row's id -> times listed. With check_values (generic kind), every listed
  // row's non-blob values are checked (CheckUserRows) and the blobs of up to `blob_sample`
  // rows are fetched by id (GetMany naming the blob column) and checked too; a difference,
  // or a listing that carries the blob column, is Corruption.
  virtual Result<std::map<std::string, int>> ListIds(bool check_values, int blob_sample) = 0;
};

}  // namespace strata::store::torture
