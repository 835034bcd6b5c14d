// One engine under comparison: strata, or a peer (SQLite, RocksDB, and LanceDB / DuckDB
// through a Node process). The driver (main.cc) calls the workloads in order, rotating the
// engine order per workload so machine drift hits every engine alike. Each call times only
// its own work and returns the answer the driver compares across engines.
//
// Answers (identical definitions in C++ and in bench/compare/node/*.mjs; digest = lowercase
// hex SHA-256 of the lines, each ending in '\n'):
//   W3 scan:      one line "id\tsequence_order\treward_k" per matching row, sorted by id,
//                 where reward_k = round(reward * 1024); count = matching rows.
//   W4 lookup:    per requested id in order, "id\tsequence_order" or "id\t-" when absent;
//                 count = ids found.
//   W5 get_many:  per batch, per id in request order, as W4; count = ids found.
//   W6 overwrite: after writing overwrite_rows, read them back; per overwrite row in order,
//                 "id\tsequence_order" as read; count = rows read back with the new
//                 sequence_order; total_rows = the engine's count of all rows afterwards
//                 (must equal sizes.rows: an overwrite never adds a row).
//   W8 vector:    per query q, "q\tid1,id2,...,id10" ids by ascending L2 distance;
//                 count = queries answered.
//   W9 hybrid:    no digest: engines score text differently (tokenizers, BM25 statistics,
//                 fusion of truncated or whole channels), so results cannot be identical.
//                 Each engine returns its top_k ids per query (result_ids); the driver
//                 checks that every id matches the query's filter and measures recall@k
//                 against an exact reference (answers.h ExpectedHybrid).
//   W10 sql:      the queries of data.sql (dataset.h SqlSpec) over the table of W1's rows,
//                 each run sizes.sql_runs times; per query q (1-based) in order, per result
//                 row in the query's ORDER BY order, "q<q>\t<value>\t<value>..." with
//                 integers in decimal, text as is, NULL as "NULL" (Q1 gives
//                 "q1\tpolicy_version\trole\tcount", Q2 "q2\trole\tcount\tmax_rollout_id");
//                 count = lines. Every run must return the same rows. latencies_us holds
//                 query 1's runs, then query 2's (sql_runs each); ops = queries x runs.
//                 Neither query reads sequence_order or text, the columns W6 changes, so
//                 the answer is the same whether or not W6 ran.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dataset.h"
#include "strata/status.h"

namespace strata::bench::compare {

enum class Workload {
  kIngest,
  kPuts,
  kScan,
  kLookup,
  kGetMany,
  kOverwrite,
  kCompact,
  kScanMerged,  // W3's scan again, after W7 (and W6 when it ran)
  kVector,
  kHybrid,
  kSql
};
const char* WorkloadName(Workload w);  // "W1 ingest", ...

struct Answer {
  int64_t count = 0;
  std::string digest;  // hex SHA-256 (see above)
  friend bool operator==(const Answer&, const Answer&) = default;
};

// W9: an engine's results against the data set (answers.h CheckHybrid).
struct HybridQuality {
  int64_t queries = 0;         // queries with a result list
  int64_t ids = 0;             // ids returned over every query
  int64_t outside_filter = 0;  // ids that are unknown or not of the query's topic
  double recall = 0;           // mean over queries of |returned ∩ reference| / |reference|
};

struct StepResult {
  bool supported = true;
  std::string unsupported_reason;    // when !supported: why (shown in the table cell)
  double seconds = 0;                // wall time of the timed part
  std::vector<double> latencies_us;  // per operation, when the workload has operations
  int64_t ops = 0;                   // operations timed (batches, puts, lookups, queries)
  int64_t rows = 0;                  // rows written or returned
  int64_t bytes = 0;                 // logical bytes written (W1, W2, W6)
  std::optional<Answer> answer;      // W3-W6, W8, W10
  int64_t total_rows = -1;           // W6
  std::string note;                  // anything the report should show beside the figure
  std::vector<std::vector<std::string>> result_ids;  // W9: ids returned, per query
  std::optional<HybridQuality> hybrid;               // W9: set by the driver

  static StepResult Unsupported(std::string reason) {
    StepResult r;
    r.supported = false;
    r.unsupported_reason = std::move(reason);
    return r;
  }
};

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string name() const = 0;        // column header: "strata", "sqlite", ...
  virtual std::string durability() const = 0;  // "fdatasync per commit", "no fsync (...)"
  virtual std::string settings() const = 0;    // the exact configuration, printed
  virtual std::string version() const = 0;     // library / package version

  // Creates the engine's store(s) in `dir` (an empty directory owned by this engine; the
  // driver measures its size on disk for W7).
  virtual Status Open(const std::string& dir, const Dataset& data) = 0;
  // W1: every batch durable (at this engine's durability level) before the next.
  virtual Result<StepResult> Ingest(const Dataset& data) = 0;
  // W2: `writers` threads (or async writers) each put their puts_per_writer rows one at a
  // time, each durable before that writer's next; latencies per put. Uses a table of its
  // own per call so W3-W6 see only `rows`.
  virtual Result<StepResult> Puts(const Dataset& data, int writers) = 0;
  virtual Result<StepResult> Scan(const Dataset& data) = 0;       // W3
  virtual Result<StepResult> Lookup(const Dataset& data) = 0;     // W4
  virtual Result<StepResult> GetMany(const Dataset& data) = 0;    // W5
  virtual Result<StepResult> Overwrite(const Dataset& data) = 0;  // W6
  // W7: the engine's own merge / compaction / vacuum until its files are steady; the
  // driver measures bytes on disk before and after.
  virtual Result<StepResult> Compact() = 0;
  virtual Result<StepResult> VectorSearch(const Dataset& data) = 0;  // W8
  // W9: data.hybrid loaded untimed, then one hybrid query (text + vector + topic filter,
  // top_k) per query, timed each; result_ids filled.
  virtual Result<StepResult> HybridRetrieve(const Dataset& data) = 0;
  // W10: the SQL queries of data.sql over the table holding W1's rows (after W7), each run
  // sizes.sql_runs times and timed per run (parse, plan, execute, every result row read).
  virtual Result<StepResult> Sql(const Dataset& data) = 0;
  virtual Status Close() = 0;
};

// Factories (each in its own file). `fsync` false gives strata's process-crash durability
// (the level Lance runs at on a local filesystem).
std::unique_ptr<Engine> MakeStrataEngine(bool fsync);
// strata with recode_linked_generations off: the generations W1 links from the WAL keep the
// WAL's bytes until merged (what the recode buys and costs, beside `strata` in the same run).
std::unique_ptr<Engine> MakeStrataLinkedEngine();
// "strata" marked for replication, with a follower (export, publish, apply every second)
// running during W1 and W2; it runs those two only.
std::unique_ptr<Engine> MakeStrataReplicatedEngine();
// strata through a GenericStore declared with the suite's schema: Arrow batches through
// AddBatches for the writes, or with `json` JSON Lines through Add (its codec's parse timed
// with the writes); its List / Get / GetMany for the reads (fdatasync per write, as "strata").
std::unique_ptr<Engine> MakeStrataGenericEngine(bool json);
std::unique_ptr<Engine> MakeSqliteEngine();
std::unique_ptr<Engine> MakeRocksDbEngine();
struct NodePeerOptions {
  std::string node = "node";  // executable
  std::string script;         // bench/compare/node/peer.mjs
  std::string data_dir;       // where WriteDatasetFiles wrote the files
};
// engine: "lancedb", "lancedb-lsm" or "duckdb". Open fails with a clear message (naming
// bench/compare/node/install) when node or the npm package is missing.
std::unique_ptr<Engine> MakeNodeEngine(std::string engine, NodePeerOptions options);

// Lines -> lowercase hex SHA-256 (OpenSSL), shared by the C++ engines.
std::string Sha256Hex(const std::string& text);

}  // namespace strata::bench::compare
