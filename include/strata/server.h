// The strata HTTP server (`strata serve`): lance-context's /api/v1 REST API
// (shared/reference/lance-context.md §4; docs/server.md) over the context, rollout, datagen and
// generic stores of one data directory, plus replication, stats and SQL routes.
//
// Stores live under the data directory as `<name>.<kind>/` (kind: context, rollout, datagen,
// generic), each registered in a durable registry (`_registry/<kind>/<name>`, created with
// put-if-absent, so two servers creating one name race safely). Open handles are kept in an
// LRU per kind (cache_capacity); every handle writes shard `instance_id`, so several servers
// with distinct instance ids write disjoint shards of the same stores without coordination.
// Background flush / cleanup sweeps run through the process's maintenance component.
//
// Thread safety: Start, port, BeginDrain and Shutdown may be called from any thread; Shutdown
// once. Errors: Start fails with IOError when the address cannot be bound or the data
// directory cannot be created, InvalidArgument for bad options.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "strata/status.h"
#include "strata/storage_base.h"

namespace strata::server {

struct ServerOptions {
  std::string data_dir = "./strata-data";
  // Loopback by default; binding beyond it without auth_token logs a warning.
  std::string host = "127.0.0.1";
  uint16_t port = 3000;  // 0: any free port (Server::port tells which)
  // Writer identity: the shard every store handle of this server writes. "" = "default".
  std::string instance_id;
  // When set, every route but the health check needs "Authorization: Bearer <token>".
  std::string auth_token;

  // Stores (§4.6; the reference's environment names in docs/server.md).
  int merge_after_generations = 0;  // count trigger of rollout, datagen, generic; 0 = off
  // Count trigger of context stores (0 = off), checked after each context write: every add
  // seals a generation, so without it reads slow down and are refused past
  // pending_generations_max (4096 adds) unless a sweeper merges in time.
  int context_merge_after_generations = 8;
  int merge_max_generations = 8;  // per merge pass, 0 = no bound
  int64_t merge_max_bytes = int64_t{1} << 30;
  int pending_generations_warn = 256;
  int pending_generations_max = 4096;             // reads refused (503) past it
  int64_t merge_memory_bytes = int64_t{3} << 30;  // process merge budget, 0 = off
  int merge_concurrency = 4;                      // concurrent merge-wal requests, 0 = no limit
  double cleanup_interval_seconds = 0;            // time-trigger sweeper, 0 = off
  double flush_interval_seconds = 30;             // flush sweeper, 0 = off
  // Generations published linked to the WAL are recoded in the background once writes pause
  // (StorageBaseOptions::recode_linked_generations). Off: they stay linked, keeping the WAL's
  // bytes, until a merge.
  bool recode_linked_generations = true;
  // Compaction policy of every open store (what the reference's master schedules): every
  // compaction_interval_seconds (0 = off), a store whose base table has at least
  // compaction_min_fragments fragments is compacted.
  double compaction_interval_seconds = 600;
  int64_t compaction_min_fragments = 16;
  int64_t cache_capacity = 2000;        // resident handles per kind
  int64_t max_inflight_blob_bytes = 0;  // blob admission budget, 0 = unlimited
  int64_t large_blob_log_bytes = int64_t{16} << 20;
  // fsync every write (off: "process" durability, survives kill -9 but not power loss).
  bool sync = true;

  // HTTP.
  double body_idle_timeout_seconds = 120;
  int io_threads = 2;
  int worker_threads = 32;
  bool access_log = true;
  int64_t default_sql_max_rows = 10000;

  // Wall time for record defaults (created_at, event_ts), microseconds since the epoch;
  // null = the system clock.
  std::function<int64_t()> now_micros;
};

// Reads every option the environment sets (INSTANCE_ID, falling back to HOSTNAME;
// STRATA_AUTH_TOKEN; ROLLOUT_* and REQUEST_BODY_IDLE_TIMEOUT_SECS as the reference names them;
// STRATA_DATA_DIR, STRATA_HOST, STRATA_PORT, STRATA_CONTEXT_MERGE_AFTER_GENERATIONS) into
// `options`. `getenv` returns null for an unset variable. InvalidArgument naming the variable
// for a value that does not parse.
Status ApplyEnvironment(ServerOptions* options,
                        const std::function<const char*(const char*)>& getenv);

// The StorageBase options the server derives from `options` for a handle of a context store
// (`context_store`) or of the other kinds: shard instance_id ("default" when empty), the count
// trigger (context_merge_after_generations for contexts, merge_after_generations otherwise),
// the merge bounds, the pending-generation bounds and whether linked generations are recoded.
// The server adds its merge budget, its maintenance component and a display name. Programs
// that open stores beside a server with the server's settings (strata-server-bench's embedded
// side) start from it.
store::StorageBaseOptions ServerStoreOptions(const ServerOptions& options, bool context_store);

class Server {
 public:
  // Creates the data directory if needed, opens the registries and starts serving.
  static Result<std::unique_ptr<Server>> Start(ServerOptions options);
  // Shuts down (as Shutdown) if that has not happened.
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t port() const;
  // Starts the drain: new requests get 503 "worker is draining". Returns at once.
  void BeginDrain();
  // Drains (requests already admitted finish and are answered), stops the HTTP server, stops
  // the sweepers and closes every open store (sealing buffered rows). The first error closing
  // a store is returned; the others are logged.
  Status Shutdown();

  struct State;

 private:
  explicit Server(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace strata::server
