// The replica side of replication: ApplyChanges, GetReplicaStatus, Promote, and Verify for
// either side (include/strata/replication.h, docs/replication.md).
//
// A replica's chain state lives in its base table's metadata (kReplicaStateMetadata, JSON)
// beside kReplicaMetadata (the chain id, which makes StorageBase refuse writers). An apply is
// one Table::Upsert whose expected_metadata is the state it checked, so of two applies racing
// on one replica exactly one commits, and whatever a reader sees is a bundle boundary.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "lsm/key.h"
#include "lsm/lsm_read.h"
#include "replication/bundle_internal.h"
#include "replication/refusal.h"
#include "replication/source_state.h"
#include "replication/store_access.h"
#include "strata/replication.h"
#include "strata/table.h"
#include "util/clock.h"

namespace strata::replication {
namespace {

using internal::MakeRefusal;
using nlohmann::json;

constexpr std::string_view kReplicaStateMetadata = "strata:replica:state";

struct ReplicaRecord {
  std::string chain_id;
  std::string token;
  std::string store_kind;
  ChainState state;
  int64_t applied_at_micros = 0;
};

std::string RecordToJson(const ReplicaRecord& r) {
  return json{{"chain_id", r.chain_id},
              {"token", r.token},
              {"store_kind", r.store_kind},
              {"state", json::parse(internal::StateToJson(r.state))},
              {"applied_at_micros", r.applied_at_micros}}
      .dump();
}

Result<std::optional<ReplicaRecord>> ReadRecord(const table::Table& table) {
  const KeyValueMetadata metadata = table.metadata();
  std::optional<std::string_view> text = metadata.Get(kReplicaStateMetadata);
  if (!text || text->empty()) return std::optional<ReplicaRecord>();
  const std::string what = fmt::format("replica state ({})", kReplicaStateMetadata);
  json j = json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::Corruption(fmt::format("{}: not a JSON object", what));
  }
  try {
    ReplicaRecord r;
    r.chain_id = j.at("chain_id").get<std::string>();
    r.token = j.at("token").get<std::string>();
    r.store_kind = j.at("store_kind").get<std::string>();
    STRATA_ASSIGN_OR_RETURN(r.state, internal::StateFromJson(j.at("state").dump(), what));
    r.applied_at_micros = j.at("applied_at_micros").get<int64_t>();
    return std::optional<ReplicaRecord>(std::move(r));
  } catch (const json::exception& e) {
    return Status::Corruption(fmt::format("{}: {}", what, e.what()));
  }
}

std::string Position(const ChainState& s) { return fmt::format("{}.{}", s.cursor, s.part); }

bool Before(const ChainState& a, const ChainState& b) {
  return internal::StateOrder(a.cursor, a.part) < internal::StateOrder(b.cursor, b.part);
}

bool FromEmptyState(const BundleHeader& h) {
  return h.from.cursor == 0 && h.from.part == 0 && h.from.content == ContentChecksum{} &&
         h.from.id == BaseStateId(h.store_id, h.token, h.schema_hash, ContentChecksum{});
}

// The scalar keys of column `key` of `batches`, and a check that none repeats.
Status CollectKeys(const std::vector<RecordBatch>& batches, int key, std::string_view key_name,
                   lsm::internal::KeySet& seen, std::vector<expr::Scalar>* out) {
  for (const RecordBatch& b : batches) {
    STRATA_ASSIGN_OR_RETURN(lsm::internal::KeyColumnView view,
                            lsm::internal::KeyColumnView::Make(b.column(key), key_name));
    for (int64_t r = 0; r < b.num_rows(); ++r) {
      if (!seen.Insert(view[r])) {
        return Status::Corruption(
            fmt::format("bundle: key column '{}' repeats a key (row {})", key_name, r));
      }
      STRATA_ASSIGN_OR_RETURN(expr::Scalar scalar, lsm::KeyScalar(b.column(key), r));
      out->push_back(std::move(scalar));
    }
  }
  return Status::OK();
}

Status CreateReplica(const StoreLocation& replica, const Bundle& bundle) {
  store::StorageBaseOptions options;
  options.schema = bundle.rows_schema;
  options.key_column = bundle.header.key_column;
  options.store_kind = bundle.header.store_kind;
  options.seal_on_close = false;
  Result<std::unique_ptr<store::StorageBase>> created =
      store::StorageBase::Open(replica.store, replica.prefix, std::move(options));
  if (!created.ok()) return created.status().WithContext("create the replica");
  return Status::OK();
}

}  // namespace

Result<ApplyReport> ApplyChanges(const StoreLocation& replica, std::string_view bytes,
                                 const ApplyOptions& options) {
  Clock* clock = options.clock != nullptr ? options.clock : SystemClock();
  const int64_t start = clock->MonotonicNanos();
  BundleReadOptions read_options;
  read_options.hmac_secret = options.hmac_secret;
  Result<Bundle> decoded = DecodeBundle(bytes, read_options);
  if (!decoded.ok()) {
    const Status& st = decoded.status();
    if (st.IsCorruption() || st.IsInvalidArgument()) {
      return MakeRefusal(Refusal::kDigest, st.message());
    }
    return st;
  }
  Bundle& bundle = *decoded;
  const BundleHeader& h = bundle.header;
  const bool from_empty = FromEmptyState(h);

  STRATA_ASSIGN_OR_RETURN(bool exists, table::Table::Exists(*replica.store, replica.prefix));
  if (!exists) {
    if (!options.create_if_missing) {
      return Status::NotFound(fmt::format("no store at '{}'", replica.prefix));
    }
    if (!from_empty) {
      return MakeRefusal(Refusal::kCursor,
                         fmt::format("there is no replica at '{}' and bundle {} -> {} does not "
                                     "start at the chain's empty state: create the replica from "
                                     "a full export (export --full)",
                                     replica.prefix, Position(h.from), Position(h.to)));
    }
    STRATA_RETURN_IF_ERROR(CreateReplica(replica, bundle));
  }
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<store::StorageBase> store, internal::OpenStore(replica));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> table,
                          table::Table::Open(replica.store, replica.prefix));
  if (internal::SchemaHashOf(*store) != h.schema_hash) {
    return MakeRefusal(
        Refusal::kSchema,
        fmt::format("the bundle's schema hash {} is not the replica's {} (its columns, types, "
                    "key or kind differ)",
                    ToHex(h.schema_hash).substr(0, 16),
                    ToHex(internal::SchemaHashOf(*store)).substr(0, 16)));
  }

  // Where the replica is in the chain.
  STRATA_ASSIGN_OR_RETURN(std::optional<ReplicaRecord> record, ReadRecord(*table));
  ChainState current;
  std::string expected_state;  // the metadata value the commit is guarded by
  if (!record) {
    STRATA_ASSIGN_OR_RETURN(int64_t rows, store->Count());
    if (rows != 0) {
      return MakeRefusal(Refusal::kDiverged,
                         fmt::format("the store at '{}' holds {} rows but no chain state: it is "
                                     "not a replica (only an empty store becomes one)",
                                     replica.prefix, rows));
    }
    if (!from_empty) {
      return MakeRefusal(Refusal::kCursor,
                         fmt::format("the replica is empty and follows no chain yet; bundle {} "
                                     "-> {} needs its predecessors: start with a full export",
                                     Position(h.from), Position(h.to)));
    }
    current = h.from;
  } else {
    if (record->chain_id != h.store_id || record->token != h.token) {
      return MakeRefusal(Refusal::kDiverged,
                         fmt::format("the bundle belongs to chain {} (token '{}'); the replica "
                                     "follows chain {} (token '{}')",
                                     h.store_id, h.token, record->chain_id, record->token));
    }
    current = record->state;
    expected_state = std::string(*table->metadata().Get(kReplicaStateMetadata));
    if (h.from.cursor != current.cursor || h.from.part != current.part) {
      if (Before(h.from, current)) {
        return MakeRefusal(Refusal::kCursor,
                           fmt::format("bundle {} -> {} is already applied or out of order: the "
                                       "replica is at {}",
                                       Position(h.from), Position(h.to), Position(current)));
      }
      if (current.cursor < h.trim_floor) {
        return MakeRefusal(Refusal::kTooOld,
                           fmt::format("the replica is at {}, below the source's trim floor {}: "
                                       "re-seed it from a full export",
                                       Position(current), h.trim_floor));
      }
      return MakeRefusal(Refusal::kCursor,
                         fmt::format("bundle {} -> {} skips ahead: the replica is at {}; apply "
                                     "the bundles in between first",
                                     Position(h.from), Position(h.to), Position(current)));
    }
    if (h.from.id != current.id) {
      return MakeRefusal(Refusal::kDiverged,
                         fmt::format("the bundle continues another state {} at cursor {} (the "
                                     "replica's is {}): another export or a re-marked base",
                                     ToHex(h.from.id).substr(0, 16), Position(current),
                                     ToHex(current.id).substr(0, 16)));
    }
  }

  // Changes made outside apply: rows pending in the replica's shards, or a base that does
  // not hold the rows its state counts.
  STRATA_ASSIGN_OR_RETURN(int64_t pending, store->PendingGenerations());
  if (pending > 0) {
    return MakeRefusal(Refusal::kDiverged,
                       fmt::format("{} generations of rows written to the replica outside apply "
                                   "are pending in its shards",
                                   pending));
  }
  STRATA_ASSIGN_OR_RETURN(table::TableStats stats, table->Stats());
  if (stats.num_rows != current.content.rows) {
    return MakeRefusal(Refusal::kDiverged,
                       fmt::format("the replica holds {} rows but its state counts {}: it was "
                                   "changed outside apply",
                                   stats.num_rows, current.content.rows));
  }

  // The content the replica will hold: its state's, without the rows this bundle replaces
  // or deletes (read from the replica itself), with the bundle's rows.
  const SchemaPtr schema = store->schema();
  lsm::internal::KeySet seen;
  std::vector<expr::Scalar> row_keys;
  STRATA_RETURN_IF_ERROR(CollectKeys(bundle.rows, bundle.rows_schema->GetFieldIndex(h.key_column),
                                     h.key_column, seen, &row_keys));
  std::vector<expr::Scalar> deleted_keys;
  if (bundle.deletions.num_rows() > 0) {
    STRATA_RETURN_IF_ERROR(CollectKeys({bundle.deletions}, 0, h.key_column, seen, &deleted_keys));
  }
  // The replaced rows are read at the base version the state was read from (no generation is
  // pending, checked above), so a concurrent apply shows up as the commit guard failing (Busy),
  // not as rows that do not match the state.
  STRATA_RETURN_IF_ERROR(store->Checkout(table->version()));
  ContentChecksum next = current.content;
  std::vector<expr::Scalar> touched = row_keys;
  touched.insert(touched.end(), deleted_keys.begin(), deleted_keys.end());
  for (size_t at = 0; at < touched.size(); at += lsm::kMaxGetKeys) {
    const size_t n = std::min(lsm::kMaxGetKeys, touched.size() - at);
    std::vector<expr::Scalar> chunk(touched.begin() + static_cast<ptrdiff_t>(at),
                                    touched.begin() + static_cast<ptrdiff_t>(at + n));
    STRATA_ASSIGN_OR_RETURN(RecordBatch old_rows, store->GetMany(chunk));
    STRATA_ASSIGN_OR_RETURN(RecordBatch rebound,
                            RecordBatch::Make(schema, old_rows.num_rows(), old_rows.columns()));
    STRATA_ASSIGN_OR_RETURN(std::vector<RowHash> hashes, HashRows(rebound));
    for (const RowHash& hash : hashes) next.Remove(hash);
  }
  for (const RecordBatch& b : bundle.rows) {
    STRATA_ASSIGN_OR_RETURN(std::vector<RowHash> hashes, HashRows(b));
    for (const RowHash& hash : hashes) next.Add(hash);
  }
  if (!(next == h.to.content)) {
    return MakeRefusal(Refusal::kDiverged,
                       fmt::format("the replica's rows would sum to {} after this bundle, the "
                                   "source's to {}: the replica's rows for the keys it touches "
                                   "differ from the source's",
                                   next.ToString(), h.to.content.ToString()));
  }

  // One commit, guarded by the state checked above.
  ReplicaRecord updated;
  updated.chain_id = h.store_id;
  updated.token = h.token;
  updated.store_kind = h.store_kind;
  updated.state = h.to;
  updated.applied_at_micros = clock->NowMicros();
  table::UpsertOptions upsert;
  upsert.delete_keys = std::move(deleted_keys);
  upsert.metadata_updates.Set(std::string(store::kReplicaMetadata), h.store_id);
  upsert.metadata_updates.Set(std::string(kReplicaStateMetadata), RecordToJson(updated));
  upsert.expected_metadata.Set(std::string(kReplicaStateMetadata), expected_state);
  Result<table::UpsertResult> committed = table->Upsert(bundle.rows, upsert);
  if (!committed.ok()) {
    if (committed.status().IsAborted() || committed.status().IsBusy()) {
      return MakeRefusal(Refusal::kBusy,
                         fmt::format("another apply changed the replica meanwhile; nothing was "
                                     "installed ({})",
                                     committed.status().message()));
    }
    return committed.status();
  }

  ApplyReport report;
  report.from = h.from;
  report.to = h.to;
  report.rows = h.row_count;
  report.deletions = h.deletion_count;
  report.bytes = static_cast<int64_t>(bytes.size());
  report.replica_version = committed->version;
  report.seconds = internal::SecondsSince(*clock, start);
  return report;
}

Result<ReplicaStatus> GetReplicaStatus(const StoreLocation& replica) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> table,
                          table::Table::Open(replica.store, replica.prefix));
  ReplicaStatus out;
  out.version = table->version();
  STRATA_ASSIGN_OR_RETURN(std::optional<ReplicaRecord> record, ReadRecord(*table));
  if (!record) return out;
  out.replica = true;
  out.chain_id = record->chain_id;
  out.token = record->token;
  out.store_kind = record->store_kind;
  out.state = record->state;
  out.applied_at_micros = record->applied_at_micros;
  return out;
}

Status Promote(const StoreLocation& replica) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> table,
                          table::Table::Open(replica.store, replica.prefix));
  STRATA_ASSIGN_OR_RETURN(std::optional<ReplicaRecord> record, ReadRecord(*table));
  if (!record) {
    return Status::InvalidArgument(
        fmt::format("the store at '{}' is not a replica", replica.prefix));
  }
  KeyValueMetadata updates;
  updates.Set(std::string(store::kReplicaMetadata), "");
  updates.Set(std::string(kReplicaStateMetadata), "");
  return table->UpdateMetadata(updates).status();
}

Result<VerifyResult> Verify(const StoreLocation& location) {
  Clock* clock = SystemClock();
  const int64_t start = clock->MonotonicNanos();
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<store::StorageBase> store, internal::OpenStore(location));
  STRATA_ASSIGN_OR_RETURN(internal::FullScan scan, internal::ScanAll(*store));
  VerifyResult out;
  out.computed = scan.content;
  out.version = scan.version;
  out.rows = scan.rows;
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> table,
                          table::Table::Open(location.store, location.prefix));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> at, table->Checkout(scan.version));
  STRATA_ASSIGN_OR_RETURN(std::optional<ReplicaRecord> record, ReadRecord(*at));
  if (record) {
    out.state = record->state;
  } else {
    STRATA_ASSIGN_OR_RETURN(std::vector<internal::KeptState> kept, internal::ListStates(location));
    for (auto it = kept.rbegin(); it != kept.rend(); ++it) {
      if (it->reserved) continue;
      STRATA_ASSIGN_OR_RETURN(std::optional<internal::StateIndex> state,
                              internal::ReadState(location, it->cursor));
      if (state) {
        out.state = state->state;
        break;
      }
    }
  }
  if (out.state) out.recorded = out.state->content;
  out.seconds = internal::SecondsSince(*clock, start);
  return out;
}

}  // namespace strata::replication
