// SQLite as a peer in bench/compare: one rowid table keyed by a TEXT PRIMARY KEY, WAL mode with
// synchronous=FULL, reused prepared statements. settings() states every choice and why.
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <latch>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "../floor.h"
#include "engine.h"
#include "row_codec.h"

namespace strata::bench::compare {
namespace {

constexpr int kPageSize = 4096;
constexpr int kCacheKiB = 256 * 1024;  // cache_size is per connection
// SQLite's busy handler polls with sleeps of up to 100 ms and is not FIFO: with 8 writers a
// waiting writer can be passed over for seconds (a 10 s timeout failed here), so the timeout
// is longer than a whole W2 run and waits show up as latency, not as errors.
constexpr int kBusyTimeoutMs = 120'000;
constexpr size_t kVectorLoadRows = 1000;  // rows per transaction of the untimed W8 load

// The rows table; W2 tables use the same columns.
constexpr const char* kColumnsDdl =
    "(id TEXT PRIMARY KEY, rollout_id TEXT, policy_version TEXT, role TEXT, "
    "sequence_order INTEGER, reward REAL, input_tokens BLOB, output_tokens BLOB, text TEXT)";
constexpr const char* kColumns =
    "id, rollout_id, policy_version, role, sequence_order, reward, input_tokens, output_tokens, "
    "text";
constexpr const char* kValues = "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";

Status SqliteError(sqlite3* db, int rc, std::string_view what) {
  std::string message = std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc)) +
                        " (sqlite result code " + std::to_string(rc) + ")";
  const int primary = rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) return Status::Busy(std::move(message));
  return Status::IOError(std::move(message));
}

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using DbPtr = std::unique_ptr<sqlite3, DbCloser>;
struct StmtFinalizer {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

Status Exec(sqlite3* db, const std::string& sql) {
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  if (rc == SQLITE_OK) return Status::OK();
  std::string message = "'" + sql + "': " + (error ? error : sqlite3_errstr(rc));
  sqlite3_free(error);
  return SqliteError(nullptr, rc, message);
}

Result<StmtPtr> Prepare(sqlite3* db, const std::string& sql) {
  sqlite3_stmt* raw = nullptr;
  const int rc = sqlite3_prepare_v3(db, sql.c_str(), -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
  StmtPtr stmt(raw);
  if (rc != SQLITE_OK) return SqliteError(db, rc, "prepare '" + sql + "'");
  return stmt;
}

// Steps a statement that returns no rows, then resets it for reuse.
Status StepDone(sqlite3* db, sqlite3_stmt* stmt, std::string_view what) {
  const int rc = sqlite3_step(stmt);
  Status status = rc == SQLITE_DONE ? Status::OK() : SqliteError(db, rc, what);
  sqlite3_reset(stmt);
  return status;
}

// The first column of the first row of `sql`, as text.
Result<std::string> QueryText(sqlite3* db, const std::string& sql) {
  STRATA_ASSIGN_OR_RETURN(StmtPtr stmt, Prepare(db, sql));
  const int rc = sqlite3_step(stmt.get());
  if (rc != SQLITE_ROW) return SqliteError(db, rc, "'" + sql + "' returned no row");
  const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt.get(), 0));
  return std::string(text ? text : "");
}

// PRAGMA wal_checkpoint(TRUNCATE), failing when a reader or writer blocked it.
Status CheckpointTruncate(sqlite3* db) {
  STRATA_ASSIGN_OR_RETURN(StmtPtr stmt, Prepare(db, "PRAGMA wal_checkpoint(TRUNCATE)"));
  const int rc = sqlite3_step(stmt.get());
  if (rc != SQLITE_ROW) return SqliteError(db, rc, "wal_checkpoint(TRUNCATE)");
  if (sqlite3_column_int(stmt.get(), 0) != 0) {
    return Status::Busy("wal_checkpoint(TRUNCATE) could not complete: the database was busy");
  }
  return Status::OK();
}

// Opens `path` with the per-connection settings every connection of this engine uses.
Result<DbPtr> OpenConnection(const std::string& path) {
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  DbPtr db(raw);
  if (rc != SQLITE_OK) return SqliteError(raw, rc, "open " + path);
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, kBusyTimeoutMs);
  STRATA_RETURN_IF_ERROR(Exec(raw, "PRAGMA synchronous=FULL"));
  STRATA_RETURN_IF_ERROR(Exec(raw, "PRAGMA cache_size=-" + std::to_string(kCacheKiB)));
  return db;
}

Status BindRow(sqlite3* db, sqlite3_stmt* stmt, const BenchRow& row) {
  int rc = SQLITE_OK;
  auto text = [&](int i, const std::string& v) {
    if (rc == SQLITE_OK) {
      rc = sqlite3_bind_text(stmt, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    }
  };
  // A null pointer would bind NULL: an empty list binds an empty blob instead.
  auto tokens = [&](int i, const std::vector<int32_t>& v) {
    if (rc != SQLITE_OK) return;
    rc = v.empty()
             ? sqlite3_bind_zeroblob(stmt, i, 0)
             : sqlite3_bind_blob(stmt, i, v.data(), static_cast<int>(v.size() * 4), SQLITE_STATIC);
  };
  text(1, row.id);
  text(2, row.rollout_id);
  text(3, row.policy_version);
  text(4, row.role);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(stmt, 5, row.sequence_order);
  if (rc == SQLITE_OK) rc = sqlite3_bind_double(stmt, 6, row.reward);
  tokens(7, row.input_tokens);
  tokens(8, row.output_tokens);
  text(9, row.text);
  if (rc != SQLITE_OK) return SqliteError(db, rc, "bind row " + row.id);
  return Status::OK();
}

std::string ColumnText(sqlite3_stmt* stmt, int i) {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt, i));
  return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt, i))) : std::string();
}

// Reads a row selected as kColumns: what a caller that fetches the row holds afterwards.
Status ReadRow(sqlite3_stmt* stmt, BenchRow* row) {
  row->id = ColumnText(stmt, 0);
  row->rollout_id = ColumnText(stmt, 1);
  row->policy_version = ColumnText(stmt, 2);
  row->role = ColumnText(stmt, 3);
  row->sequence_order = static_cast<int32_t>(sqlite3_column_int64(stmt, 4));
  row->reward = static_cast<float>(sqlite3_column_double(stmt, 5));
  const void* in = sqlite3_column_blob(stmt, 6);
  STRATA_RETURN_IF_ERROR(row_codec::TokensFromBlob(in, sqlite3_column_bytes(stmt, 6),
                                                   "input_tokens", &row->input_tokens));
  const void* out = sqlite3_column_blob(stmt, 7);
  STRATA_RETURN_IF_ERROR(row_codec::TokensFromBlob(out, sqlite3_column_bytes(stmt, 7),
                                                   "output_tokens", &row->output_tokens));
  row->text = ColumnText(stmt, 8);
  return Status::OK();
}

template <typename F>
auto Guarded(std::string_view what, F&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::exception& e) {
    return Status::Internal(std::string(what) + ": " + e.what());
  }
}

class SqliteEngine final : public Engine {
 public:
  std::string name() const override { return "sqlite"; }
  std::string durability() const override { return "fdatasync per commit (synchronous=FULL)"; }
  std::string settings() const override {
    return "journal_mode=WAL, synchronous=FULL (the WAL is synced at every commit), "
           "page_size=" +
           std::to_string(kPageSize) + ", cache_size=-" + std::to_string(kCacheKiB) +
           " (256 MiB per connection), busy_timeout=" + std::to_string(kBusyTimeoutMs) +
           " ms (W2 waits in SQLite's sleep-and-retry busy handler, which is not FIFO); rows" +
           kColumnsDdl +
           " as a rowid table, not WITHOUT ROWID: SQLite's docs (withoutrowid.html, 'When To "
           "Use WITHOUT ROWID') advise it only for rows under ~1/20 of a page (~200 B at 4 KiB "
           "pages), and these rows are ~1.2-2.6 KB; prepared statements reused; "
           "W1/W6 BEGIN IMMEDIATE..COMMIT per 256 rows; W2 one connection per writer, one "
           "autocommit INSERT per row, a table puts_<call>_w<N> per call; W3 SELECT id, "
           "sequence_order, reward WHERE policy_version = ? AND reward > ? (no secondary "
           "index); W4 point SELECT of the whole row by id; W5 one SELECT of whole rows "
           "WHERE id IN (?1..?512) per batch (bound parameters; Debian's libsqlite3 has no "
           "carray); W6 INSERT .. ON CONFLICT(id) DO UPDATE (an upsert keeps the rowid; INSERT "
           "OR REPLACE would delete and reinsert) then read back with IN (256 ids); W7 "
           "wal_checkpoint(TRUNCATE), VACUUM, wal_checkpoint(TRUNCATE); W8 vectors(id TEXT "
           "PRIMARY KEY, v BLOB float32), full scan per query with L2 in C++ (no extension); W10 "
           "the suite's GROUP BY queries over rows (table name substituted), each prepared and "
           "stepped per run";
  }
  std::string version() const override { return std::string("SQLite ") + sqlite3_libversion(); }

  Status Open(const std::string& dir, const Dataset&) override {
    return Guarded("sqlite open", [&]() -> Status {
      path_ = dir + "/rows.sqlite";
      STRATA_ASSIGN_OR_RETURN(db_, OpenConnection(path_));
      // page_size only takes effect before the first table exists.
      STRATA_RETURN_IF_ERROR(Exec(db(), "PRAGMA page_size=" + std::to_string(kPageSize)));
      STRATA_ASSIGN_OR_RETURN(std::string mode, QueryText(db(), "PRAGMA journal_mode=WAL"));
      if (mode != "wal") {
        return Status::IOError(path_ + ": journal_mode=WAL left the journal in mode " + mode);
      }
      STRATA_RETURN_IF_ERROR(Exec(db(), std::string("CREATE TABLE rows") + kColumnsDdl));
      STRATA_ASSIGN_OR_RETURN(begin_, Prepare(db(), "BEGIN IMMEDIATE"));
      STRATA_ASSIGN_OR_RETURN(commit_, Prepare(db(), "COMMIT"));
      STRATA_ASSIGN_OR_RETURN(insert_, Prepare(db(), std::string("INSERT INTO rows(") + kColumns +
                                                         ") VALUES " + kValues));
      STRATA_ASSIGN_OR_RETURN(
          upsert_,
          Prepare(db(), std::string("INSERT INTO rows(") + kColumns + ") VALUES " + kValues +
                            " ON CONFLICT(id) DO UPDATE SET rollout_id=excluded.rollout_id, "
                            "policy_version=excluded.policy_version, role=excluded.role, "
                            "sequence_order=excluded.sequence_order, reward=excluded.reward, "
                            "input_tokens=excluded.input_tokens, "
                            "output_tokens=excluded.output_tokens, text=excluded.text"));
      STRATA_ASSIGN_OR_RETURN(
          point_, Prepare(db(), std::string("SELECT ") + kColumns + " FROM rows WHERE id = ?1"));
      return Status::OK();
    });
  }

  Result<StepResult> Ingest(const Dataset& data) override {
    return Guarded("sqlite W1 ingest", [&]() -> Result<StepResult> {
      StepResult r;
      const size_t batch = static_cast<size_t>(data.sizes.batch_rows);
      const auto start = Clock::now();
      for (size_t b = 0; b < data.rows.size(); b += batch) {
        const auto t0 = Clock::now();
        STRATA_RETURN_IF_ERROR(
            WriteTransaction(insert_.get(), data.rows, b, std::min(b + batch, data.rows.size())));
        r.latencies_us.push_back(row_codec::MicrosSince(t0));
        ++r.ops;
      }
      r.seconds = Seconds(start);
      r.rows = static_cast<int64_t>(data.rows.size());
      r.bytes = row_codec::LogicalBytes(data.rows, 0, data.rows.size());
      r.note = "one BEGIN IMMEDIATE..COMMIT of " + std::to_string(batch) + " INSERTs per batch";
      return r;
    });
  }

  Result<StepResult> Puts(const Dataset& data, int writers) override {
    return Guarded("sqlite W2 puts", [&]() -> Result<StepResult> { return DoPuts(data, writers); });
  }

  Result<StepResult> Scan(const Dataset& data) override {
    return Guarded("sqlite W3 scan", [&]() -> Result<StepResult> {
      STRATA_ASSIGN_OR_RETURN(StmtPtr stmt, Prepare(db(),
                                                    "SELECT id, sequence_order, reward FROM rows "
                                                    "WHERE policy_version = ?1 AND reward > ?2"));
      const std::string& policy = data.scan.policy_version;
      sqlite3_bind_text(stmt.get(), 1, policy.data(), static_cast<int>(policy.size()),
                        SQLITE_STATIC);
      sqlite3_bind_double(stmt.get(), 2, data.scan.reward_gt);
      std::vector<row_codec::ScanHit> hits;
      const auto start = Clock::now();
      int rc;
      while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
        hits.push_back({ColumnText(stmt.get(), 0), sqlite3_column_int64(stmt.get(), 1),
                        sqlite3_column_double(stmt.get(), 2)});
      }
      StepResult r;
      r.seconds = Seconds(start);
      if (rc != SQLITE_DONE) return SqliteError(db(), rc, "W3 scan");
      r.ops = 1;
      r.rows = static_cast<int64_t>(hits.size());
      r.answer = row_codec::ScanAnswer(hits);
      r.note =
          "full table scan (no index on policy_version/reward); sort by id for the answer "
          "untimed";
      return r;
    });
  }

  Result<StepResult> Lookup(const Dataset& data) override {
    return Guarded("sqlite W4 lookup", [&]() -> Result<StepResult> {
      BenchRow row;
      return row_codec::TimedLookups(
          data.lookup_ids, [&](const std::string& id) { return PointGet(id, &row); },
          "prepared SELECT of the whole row WHERE id = ?1");
    });
  }

  Result<StepResult> GetMany(const Dataset& data) override {
    return Guarded("sqlite W5 get_many", [&]() -> Result<StepResult> {
      return row_codec::TimedGetMany(
          data.get_many_ids, [&](const std::vector<std::string>& ids) { return GetIn(ids); },
          "one prepared SELECT .. WHERE id IN (?1..?N) per batch, rows mapped back to request "
          "order");
    });
  }

  Result<StepResult> Overwrite(const Dataset& data) override {
    return Guarded("sqlite W6 overwrite", [&]() -> Result<StepResult> {
      const std::vector<BenchRow>& rows = data.overwrite_rows;
      const size_t batch = static_cast<size_t>(data.sizes.batch_rows);
      STRATA_ASSIGN_OR_RETURN(
          StepResult r,
          row_codec::TimedOverwrite(
              rows, batch,
              [&](size_t begin, size_t end) {
                return WriteTransaction(upsert_.get(), rows, begin, end);
              },
              [&](auto first, auto last) { return GetIn(std::vector<std::string>(first, last)); },
              "upsert in " + std::to_string(batch) + "-row transactions",
              "read back with IN (" + std::to_string(batch) + " ids)"));
      STRATA_ASSIGN_OR_RETURN(std::string count, QueryText(db(), "SELECT COUNT(*) FROM rows"));
      r.total_rows = std::stoll(count);
      return r;
    });
  }

  Result<StepResult> Compact() override {
    return Guarded("sqlite W7 compact", [&]() -> Result<StepResult> {
      StepResult r;
      const auto start = Clock::now();
      STRATA_RETURN_IF_ERROR(CheckpointTruncate(db()));
      STRATA_RETURN_IF_ERROR(Exec(db(), "VACUUM"));
      // VACUUM in WAL mode writes the rebuilt file through the WAL: fold it back in.
      STRATA_RETURN_IF_ERROR(CheckpointTruncate(db()));
      r.seconds = Seconds(start);
      r.ops = 1;
      r.note = "wal_checkpoint(TRUNCATE), VACUUM, wal_checkpoint(TRUNCATE)";
      return r;
    });
  }

  Result<StepResult> VectorSearch(const Dataset& data) override {
    return Guarded("sqlite W8 vector", [&]() -> Result<StepResult> { return DoVector(data); });
  }

  Result<StepResult> HybridRetrieve(const Dataset&) override {
    return StepResult::Unsupported(
        "no hybrid retrieval: no vector search to fuse with FTS5 (no vector extension loaded)");
  }

  Result<StepResult> Sql(const Dataset& data) override {
    return Guarded("sqlite W10 sql", [&]() -> Result<StepResult> {
      STRATA_ASSIGN_OR_RETURN(
          StepResult r, row_codec::TimedSql(
                            data, "rows", [&](const std::string& sql) { return QueryRows(sql); }));
      r.note =
          "each statement prepared, stepped to the end and finalized per run, over the rowid "
          "table rows (full scan: no index on policy_version, role or reward)";
      return r;
    });
  }

  Status Close() override {
    return Guarded("sqlite close", [&]() -> Status {
      in_lists_.clear();
      begin_.reset();
      commit_.reset();
      insert_.reset();
      upsert_.reset();
      point_.reset();
      if (!db_) return Status::OK();
      sqlite3* raw = db_.release();
      const int rc = sqlite3_close(raw);
      if (rc != SQLITE_OK) {
        Status status = SqliteError(raw, rc, "close " + path_);
        sqlite3_close_v2(raw);
        return status;
      }
      return Status::OK();
    });
  }

 private:
  sqlite3* db() const { return db_.get(); }

  // Runs `body` inside BEGIN IMMEDIATE..COMMIT (durable at COMMIT); rolls back on error.
  template <typename F>
  Status InTransaction(F&& body) {
    STRATA_RETURN_IF_ERROR(StepDone(db(), begin_.get(), "BEGIN IMMEDIATE"));
    Status status = body();
    if (status.ok()) status = StepDone(db(), commit_.get(), "COMMIT");
    if (!status.ok()) Exec(db(), "ROLLBACK").IgnoreError();  // fails harmlessly when none open
    return status;
  }

  // rows[begin, end) through `stmt` (insert or upsert) in one durable transaction.
  Status WriteTransaction(sqlite3_stmt* stmt, const std::vector<BenchRow>& rows, size_t begin,
                          size_t end) {
    return InTransaction([&]() -> Status {
      for (size_t i = begin; i < end; ++i) {
        STRATA_RETURN_IF_ERROR(BindRow(db(), stmt, rows[i]));
        STRATA_RETURN_IF_ERROR(StepDone(db(), stmt, "write row " + rows[i].id));
      }
      return Status::OK();
    });
  }

  // W10: every row of `sql`, each value as text (engine.h: NULL as "NULL", integers in
  // decimal).
  Result<std::vector<std::vector<std::string>>> QueryRows(const std::string& sql) {
    STRATA_ASSIGN_OR_RETURN(StmtPtr stmt, Prepare(db(), sql));
    const int columns = sqlite3_column_count(stmt.get());
    std::vector<std::vector<std::string>> rows;
    int rc;
    while ((rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
      std::vector<std::string>& row = rows.emplace_back();
      for (int i = 0; i < columns; ++i) {
        const int type = sqlite3_column_type(stmt.get(), i);
        if (type == SQLITE_BLOB) {
          return Status::Internal("W10: '" + sql +
                                  "' returned a BLOB; its answer has no text form");
        }
        row.push_back(type == SQLITE_NULL ? std::string("NULL") : ColumnText(stmt.get(), i));
      }
    }
    if (rc != SQLITE_DONE) return SqliteError(db(), rc, "W10 '" + sql + "'");
    return rows;
  }

  // The sequence_order of `id` (the whole row is read into *row), or nullopt when absent.
  Result<std::optional<int64_t>> PointGet(const std::string& id, BenchRow* row) {
    sqlite3_stmt* stmt = point_.get();
    sqlite3_bind_text(stmt, 1, id.data(), static_cast<int>(id.size()), SQLITE_STATIC);
    const int rc = sqlite3_step(stmt);
    std::optional<int64_t> found;
    Status status;
    if (rc == SQLITE_ROW) {
      status = ReadRow(stmt, row);
      found = row->sequence_order;
    } else if (rc != SQLITE_DONE) {
      status = SqliteError(db(), rc, "point SELECT of id " + id);
    }
    sqlite3_reset(stmt);
    if (!status.ok()) return status;
    return found;
  }

  // Whole rows for `ids` in one SELECT .. IN; per id in request order, its sequence_order.
  Result<std::vector<std::optional<int64_t>>> GetIn(const std::vector<std::string>& ids) {
    StmtPtr& stmt = in_lists_[ids.size()];
    if (!stmt) {
      std::string sql = std::string("SELECT ") + kColumns + " FROM rows WHERE id IN (";
      for (size_t i = 0; i < ids.size(); ++i) sql += (i ? ",?" : "?") + std::to_string(i + 1);
      sql += ")";
      STRATA_ASSIGN_OR_RETURN(stmt, Prepare(db(), sql));
    }
    for (size_t i = 0; i < ids.size(); ++i) {
      sqlite3_bind_text(stmt.get(), static_cast<int>(i + 1), ids[i].data(),
                        static_cast<int>(ids[i].size()), SQLITE_STATIC);
    }
    std::unordered_map<std::string, BenchRow> rows;
    rows.reserve(ids.size());
    int rc = SQLITE_OK;
    Status status;
    BenchRow row;
    while (status.ok() && (rc = sqlite3_step(stmt.get())) == SQLITE_ROW) {
      status = ReadRow(stmt.get(), &row);
      std::string id = row.id;
      rows.emplace(std::move(id), std::move(row));
    }
    if (status.ok() && rc != SQLITE_DONE) status = SqliteError(db(), rc, "SELECT .. IN");
    sqlite3_reset(stmt.get());
    if (!status.ok()) return status;
    std::vector<std::optional<int64_t>> found(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) {
      auto it = rows.find(ids[i]);
      if (it != rows.end()) found[i] = it->second.sequence_order;
    }
    return found;
  }

  Result<StepResult> DoPuts(const Dataset& data, int writers) {
    const size_t per_writer = static_cast<size_t>(data.sizes.puts_per_writer);
    if (writers < 1 || data.put_rows.size() < per_writer * static_cast<size_t>(writers)) {
      return Status::InvalidArgument("W2 with " + std::to_string(writers) + " writers needs " +
                                     std::to_string(per_writer * std::max(writers, 0)) +
                                     " put rows, the data set has " +
                                     std::to_string(data.put_rows.size()));
    }
    const std::string table =
        "puts_" + std::to_string(++puts_calls_) + "_w" + std::to_string(writers);
    STRATA_RETURN_IF_ERROR(Exec(db(), "CREATE TABLE " + table + kColumnsDdl));
    const std::string sql =
        "INSERT INTO " + table + "(" + kColumns + ") VALUES " + std::string(kValues);

    std::vector<Status> statuses(static_cast<size_t>(writers));
    std::vector<std::vector<double>> latencies(static_cast<size_t>(writers));
    std::latch ready(writers);
    std::latch go(1);
    std::vector<std::thread> threads;
    Status spawn;
    for (int w = 0; w < writers && spawn.ok(); ++w) {
      spawn = Guarded("sqlite W2 start writer", [&]() -> Status {
        threads.emplace_back([&, w] {
          // Each writer has its own connection, opened before the clock starts.
          Result<DbPtr> conn =
              Guarded("sqlite W2 open", [&]() -> Result<DbPtr> { return OpenConnection(path_); });
          Result<StmtPtr> insert =
              conn.ok() ? Guarded("sqlite W2 prepare",
                                  [&]() -> Result<StmtPtr> { return Prepare(conn->get(), sql); })
                        : Result<StmtPtr>(conn.status());
          ready.count_down();
          go.wait();
          statuses[static_cast<size_t>(w)] = Guarded("sqlite W2 writer", [&]() -> Status {
            if (!insert.ok()) return insert.status();
            std::vector<double>& lat = latencies[static_cast<size_t>(w)];
            lat.reserve(per_writer);
            const size_t first = static_cast<size_t>(w) * per_writer;
            const auto until = row_codec::PutsDeadline(data.sizes.puts_seconds);
            for (size_t i = first; i < first + per_writer && Clock::now() < until; ++i) {
              const auto t0 = Clock::now();
              STRATA_RETURN_IF_ERROR(BindRow(conn->get(), insert->get(), data.put_rows[i]));
              STRATA_RETURN_IF_ERROR(StepDone(conn->get(), insert->get(), "W2 INSERT"));
              lat.push_back(row_codec::MicrosSince(t0));
            }
            return Status::OK();
          });
        });
        return Status::OK();
      });
    }
    // Writers that never started still count as ready, so the started ones are released.
    ready.count_down(writers - static_cast<int>(threads.size()));
    ready.wait();
    const auto start = Clock::now();
    go.count_down();
    for (std::thread& t : threads) t.join();
    StepResult r;
    r.seconds = Seconds(start);
    STRATA_RETURN_IF_ERROR(spawn);
    for (Status& status : statuses) STRATA_RETURN_IF_ERROR(status);
    for (const auto& lat : latencies)
      r.latencies_us.insert(r.latencies_us.end(), lat.begin(), lat.end());
    r.ops = static_cast<int64_t>(r.latencies_us.size());
    r.rows = r.ops;
    r.bytes = row_codec::PutBytes(data.put_rows, per_writer, latencies);
    r.note = std::to_string(writers) + " connection(s), one autocommit INSERT per put into " +
             table +
             (writers > 1 ? "; WAL admits one writer at a time, the others wait in "
                            "SQLite's sleep-and-retry busy handler"
                          : "");
    return r;
  }

  Result<StepResult> DoVector(const Dataset& data) {
    const int dim = data.sizes.vector_dim;
    const size_t n = data.vector_ids.size();
    const size_t queries = data.queries.size() / static_cast<size_t>(std::max(dim, 1));
    if (dim < 1 || data.vectors.size() != n * static_cast<size_t>(dim) ||
        data.queries.size() != queries * static_cast<size_t>(dim)) {
      return Status::InvalidArgument("W8: " + std::to_string(data.vectors.size()) +
                                     " vector floats and " + std::to_string(data.queries.size()) +
                                     " query floats do not fit " + std::to_string(n) +
                                     " ids of dimension " + std::to_string(dim));
    }
    const int blob_bytes = dim * static_cast<int>(sizeof(float));
    // The load is untimed: durable in 1000-row transactions, then folded into the file.
    STRATA_RETURN_IF_ERROR(Exec(db(), "DROP TABLE IF EXISTS vectors"));
    STRATA_RETURN_IF_ERROR(Exec(db(), "CREATE TABLE vectors(id TEXT PRIMARY KEY, v BLOB)"));
    {
      STRATA_ASSIGN_OR_RETURN(StmtPtr insert,
                              Prepare(db(), "INSERT INTO vectors(id, v) VALUES (?1, ?2)"));
      for (size_t b = 0; b < n; b += kVectorLoadRows) {
        STRATA_RETURN_IF_ERROR(InTransaction([&]() -> Status {
          for (size_t i = b; i < std::min(b + kVectorLoadRows, n); ++i) {
            const std::string& id = data.vector_ids[i];
            sqlite3_bind_text(insert.get(), 1, id.data(), static_cast<int>(id.size()),
                              SQLITE_STATIC);
            sqlite3_bind_blob(insert.get(), 2, data.vectors.data() + i * static_cast<size_t>(dim),
                              blob_bytes, SQLITE_STATIC);
            STRATA_RETURN_IF_ERROR(StepDone(db(), insert.get(), "W8 load vector " + id));
          }
          return Status::OK();
        }));
      }
    }
    STRATA_RETURN_IF_ERROR(CheckpointTruncate(db()));

    STRATA_ASSIGN_OR_RETURN(StmtPtr scan, Prepare(db(), "SELECT id, v FROM vectors"));
    StepResult r;
    std::vector<std::vector<std::string>> results(queries);
    const auto start = Clock::now();
    for (size_t q = 0; q < queries; ++q) {
      const auto t0 = Clock::now();
      const float* query = data.queries.data() + q * static_cast<size_t>(dim);
      row_codec::TopK top(data.sizes.top_k);
      row_codec::L2Scorer scorer(dim);
      int rc;
      while ((rc = sqlite3_step(scan.get())) == SQLITE_ROW) {
        const auto* v = static_cast<const char*>(sqlite3_column_blob(scan.get(), 1));
        if (sqlite3_column_bytes(scan.get(), 1) != blob_bytes || v == nullptr) {
          sqlite3_reset(scan.get());
          return Status::Corruption("W8: a vector blob is not " + std::to_string(blob_bytes) +
                                    " bytes");
        }
        const auto* id = reinterpret_cast<const char*>(sqlite3_column_text(scan.get(), 0));
        top.Offer(scorer.Distance(query, v),
                  std::string_view(id, static_cast<size_t>(sqlite3_column_bytes(scan.get(), 0))));
      }
      Status status = rc == SQLITE_DONE ? Status::OK() : SqliteError(db(), rc, "W8 scan");
      sqlite3_reset(scan.get());
      STRATA_RETURN_IF_ERROR(status);
      results[q] = top.Take();
      r.latencies_us.push_back(row_codec::MicrosSince(t0));
    }
    r.seconds = Seconds(start);
    r.ops = static_cast<int64_t>(queries);
    r.rows = static_cast<int64_t>(queries) * data.sizes.top_k;
    r.answer = row_codec::VectorAnswer(results);
    r.note =
        "no vector extension: each query is a full scan of vectors(id, v BLOB float32) "
        "with L2 computed in C++ over the blobs, what a SQLite user without an extension "
        "does (load untimed)";
    return r;
  }

  std::string path_;
  DbPtr db_;
  StmtPtr begin_, commit_, insert_, upsert_, point_;
  std::map<size_t, StmtPtr> in_lists_;  // SELECT .. IN (?1..?N) by N
  int puts_calls_ = 0;
};

}  // namespace

std::unique_ptr<Engine> MakeSqliteEngine() { return std::make_unique<SqliteEngine>(); }

}  // namespace strata::bench::compare
