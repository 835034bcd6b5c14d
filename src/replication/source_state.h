// What a replication source keeps under "<prefix>_replication/" (docs/replication.md):
//   chain.json                   the chain: id, token, kind, schema hash, base state, floor
//   states/<cursor, 20 digits>   a kept state's index: (encoded key, row hash) pairs as an
//                                Arrow IPC file, the state in its schema metadata; an empty
//                                object is a cursor reserved by an export still running (or
//                                killed)
//   consumers/<id>.json          a registered consumer: its acknowledged cursor, last seen
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/bundle.h"
#include "strata/record_batch.h"
#include "strata/replication.h"
#include "strata/status.h"

namespace strata::replication::internal {

struct ChainRecord {
  std::string chain_id;
  std::string token;
  std::string store_kind;
  std::string key_column;
  Hash256 schema_hash{};
  ChainState base;
  uint64_t trim_floor = 0;
  int64_t created_at_micros = 0;
};

// The chain's empty state: cursor 0, no rows (a full export starts here; it is the base
// when the store was empty at mark time).
ChainState EmptyState(const ChainRecord& chain);

std::string ReplicationPrefix(const StoreLocation& location);

// nullopt when the store is not marked.
Result<std::optional<ChainRecord>> ReadChain(const StoreLocation& source);
Status WriteChain(const StoreLocation& source, const ChainRecord& chain);

// The schema of index objects: key (large_binary, lsm key encoding), lo and hi (uint64).
SchemaPtr IndexSchema();

// Collects (encoded key, row hash) pairs into index batches of bounded size.
class IndexBuilder {
 public:
  IndexBuilder();
  ~IndexBuilder();
  Status Add(std::string_view key, const RowHash& hash);
  // Drops everything added (an export's scan restarted).
  void Reset();
  int64_t rows() const { return rows_; }
  Result<std::vector<RecordBatch>> Finish();

 private:
  Status Cut();
  struct Builders;
  std::unique_ptr<Builders> builders_;
  std::vector<RecordBatch> done_;
  int64_t rows_ = 0;
};

struct KeptState {
  uint64_t cursor = 0;
  bool reserved = false;  // an empty object: reserved, never completed
  int64_t bytes = 0;
};

// Every object under states/, by cursor.
Result<std::vector<KeptState>> ListStates(const StoreLocation& source);
// The newest exported (not only reserved) cursor of `kept`; 0 when there is none.
uint64_t NewestCursor(const std::vector<KeptState>& kept);

struct StateIndex {
  ChainState state;
  std::vector<RecordBatch> batches;  // IndexSchema()
};

// nullopt when the state is not kept (or only reserved).
Result<std::optional<StateIndex>> ReadState(const StoreLocation& source, uint64_t cursor);
// Writes (over a reservation) the index of `state`.
Status WriteState(const StoreLocation& source, const ChainState& state,
                  const std::vector<RecordBatch>& batches);
// Reserves the next cursor (one above every kept or reserved one) with PutIfAbsent.
Result<uint64_t> ReserveCursor(const StoreLocation& source);
std::string StateKey(const StoreLocation& source, uint64_t cursor);

Result<std::vector<Consumer>> ReadConsumers(const StoreLocation& source);
Status WriteConsumer(const StoreLocation& source, const Consumer& consumer);

// ChainState <-> JSON text (used by the source's records and the replica's state).
std::string StateToJson(const ChainState& state);
Result<ChainState> StateFromJson(std::string_view text, std::string_view what);
Result<Hash256> HashFromHex(std::string_view hex, std::string_view what);

}  // namespace strata::replication::internal
