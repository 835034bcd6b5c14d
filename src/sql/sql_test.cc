// SQL over a store: which statements run and which are refused, what reaches strata (pushed
// filters, projections, key lookups), row caps, callbacks and cancellation.
#include "strata/sql.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "sql/records_table.h"
#include "sql/sql_test_util.h"
#include "strata/expr.h"
#include "support/status_assertions.h"

namespace strata::sql {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::Row;
using testing::RowText;
using testing::SortedRows;
using testing::TestSchema;
using SqlTest = testing::SqlStoreTest;

std::vector<Row> ThreeRows() {
  return {
      Row{.id = "a",
          .name = "alpha",
          .n = 1,
          .score = 0.92f,
          .flag = true,
          .ts = 0,
          .tags = std::vector<std::string>{"x", "y"},
          .payload = std::string("\x01\x02", 2)},
      Row{.id = "b", .name = "beta", .n = 2, .score = 0.5f, .flag = false},
      Row{.id = "c", .n = 2, .weight = 2.5},
  };
}

// --- Statements that run -----------------------------------------------------------------

TEST_F(SqlTest, SelectShowsEveryColumnButBlobsWithTheirSqlTypes) {
  Put(ThreeRows());
  ASSERT_OK_AND_ASSIGN(QueryResult result, Run("SELECT * FROM records ORDER BY id"));
  EXPECT_THAT(result.columns,
              ElementsAre("id", "name", "n", "small", "score", "weight", "flag", "ts", "tags"));
  ASSERT_EQ(result.row_count, 3);
  EXPECT_FALSE(result.truncated);
  const std::vector<Value>& a = result.rows[0];
  EXPECT_EQ(a[0], Value(std::string("a")));
  EXPECT_EQ(a[2], Value(int64_t{1}));
  EXPECT_EQ(a[3], Value());
  EXPECT_EQ(a[4], Value(0.92));  // the float32's shortest decimal, not 0.9200000166893005
  EXPECT_EQ(a[6], Value(int64_t{1}));
  EXPECT_EQ(a[7], Value(std::string("1970-01-01T00:00:00.000000Z")));
  EXPECT_EQ(a[8], Value(std::string(R"(["x","y"])")));
  // Named, the blob column reads as a BLOB.
  ASSERT_OK_AND_ASSIGN(QueryResult blob, Run("SELECT payload FROM records WHERE id = 'a'"));
  ASSERT_EQ(blob.row_count, 1);
  EXPECT_EQ(blob.rows[0][0], Value(Blob{std::string("\x01\x02", 2)}));
  EXPECT_EQ(DescribeRecordsTable(*TestSchema(), "id"),
            "CREATE TABLE \"records\"(\"id\" TEXT PRIMARY KEY, \"name\" TEXT, \"n\" INTEGER, "
            "\"small\" INTEGER, \"score\" REAL, \"weight\" REAL, \"flag\" INTEGER, \"ts\" "
            "TEXT, \"tags\" TEXT, \"payload\" BLOB HIDDEN) WITHOUT ROWID");
}

TEST_F(SqlTest, AcceptsLowercaseCteGroupByJoinAndTrailingComments) {
  Put(ThreeRows());
  EXPECT_THAT(Column0("select id from records where n = 2 order by id"),
              ElementsAre("\"b\"", "\"c\""));
  EXPECT_THAT(Column0("WITH two AS (SELECT id, n FROM records WHERE n > 1) "
                      "SELECT count(*) FROM two"),
              ElementsAre("2"));
  ASSERT_OK_AND_ASSIGN(QueryResult grouped,
                       Run("SELECT n, count(*) AS c FROM records GROUP BY n ORDER BY n"));
  EXPECT_THAT(grouped.columns, ElementsAre("n", "c"));
  ASSERT_EQ(grouped.row_count, 2);
  EXPECT_EQ(RowText(grouped.rows[1]), "i2|i2|");
  EXPECT_THAT(Column0("SELECT a.id || '-' || b.id FROM records a JOIN records b "
                      "ON a.n = b.n AND a.id < b.id"),
              ElementsAre("\"b-c\""));
  EXPECT_THAT(Column0("SELECT column1 FROM (VALUES (1), (2)) ORDER BY 1; -- done\n ;"),
              ElementsAre("1", "2"));
  // SQLite's JSON table functions take list columns apart.
  EXPECT_THAT(
      Column0("SELECT group_concat(j.value, '+') FROM records, json_each(records.tags) AS j"),
      ElementsAre("\"x+y\""));
  EXPECT_THAT(Column0("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
                      "SELECT x FROM c LIMIT 3"),
              ElementsAre("1", "2", "3"));
}

TEST_F(SqlTest, ASelfJoinOnTheKeyLooksUpEachKey) {
  Put(ThreeRows());
  QueryStats stats;
  ASSERT_OK_AND_ASSIGN(QueryResult result,
                       Run("SELECT a.id, b.name FROM records a JOIN records b ON b.id = a.id "
                           "ORDER BY a.id",
                           {}, &stats));
  EXPECT_EQ(SortedRows(result.rows),
            (std::vector<std::string>{"s\"a\"|s\"alpha\"|", "s\"b\"|s\"beta\"|", "s\"c\"|nnull|"}));
  EXPECT_EQ(stats.scans, 1);
  EXPECT_EQ(stats.key_lookups, 3);
}

// --- Statements that are refused --------------------------------------------------------

TEST_F(SqlTest, RefusesWritesSchemaChangesAndOtherStatements) {
  Put(ThreeRows());
  ExpectRefused("INSERT INTO records(id) VALUES ('z')", "INSERT is not allowed");
  ExpectRefused("UPDATE records SET n = 5", "may not be modified");
  ExpectRefused("DELETE FROM records", "may not be modified");
  ExpectRefused("CREATE TABLE t(x)", "schema changes");
  ExpectRefused("CREATE TEMP VIEW v AS SELECT 1", "schema changes");
  ExpectRefused("DROP TABLE records", "not allowed");
  ExpectRefused("PRAGMA table_info(records)", "PRAGMA is not allowed");
  ExpectRefused("SELECT * FROM pragma_table_info('records')",
                "tables other than 'records' are not allowed");
  ExpectRefused("ATTACH DATABASE ':memory:' AS other", "ATTACH is not allowed");
  ExpectRefused("BEGIN", "transaction statement is not allowed");
  ExpectRefused("SELECT * FROM sqlite_schema", "reading table 'sqlite_master' is not allowed");
  ExpectRefused("EXPLAIN SELECT * FROM records", "EXPLAIN is not allowed");
  ExpectRefused("VACUUM", "not");
  ExpectRefused("SELECT 1; SELECT 2", "several statements");
  ExpectRefused("SELECT 1; DELETE FROM records", "several statements");
  ExpectRefused("", "no statement");
  ExpectRefused("  -- only a comment", "no statement");
  ExpectRefused("SELEC 1", "SQL error: near \"SELEC\": syntax error");
  ExpectRefused("SELECT nope FROM records", "no such column: nope");
  // Nothing was changed.
  EXPECT_THAT(Column0("SELECT count(*) FROM records"), ElementsAre("3"));
}

TEST_F(SqlTest, RowCapTruncatesAndZeroMeansNoCap) {
  std::vector<Row> rows;
  rows.reserve(30);
  for (int i = 0; i < 30; ++i) rows.push_back(Row{.id = fmt::format("k{:02}", i), .n = i});
  Put(rows);
  ASSERT_OK_AND_ASSIGN(QueryResult capped, Run("SELECT id FROM records", {.max_rows = 7}));
  EXPECT_EQ(capped.row_count, 7);
  EXPECT_EQ(capped.rows.size(), 7u);
  EXPECT_TRUE(capped.truncated);
  ASSERT_OK_AND_ASSIGN(QueryResult exact, Run("SELECT id FROM records", {.max_rows = 30}));
  EXPECT_EQ(exact.row_count, 30);
  EXPECT_FALSE(exact.truncated);
  ASSERT_OK_AND_ASSIGN(QueryResult all, Run("SELECT id FROM records", {.max_rows = 0}));
  EXPECT_EQ(all.row_count, 30);
  EXPECT_FALSE(all.truncated);
  Result<QueryResult> negative = Run("SELECT id FROM records", {.max_rows = -1});
  EXPECT_EQ(negative.status().code(), StatusCode::kInvalidArgument);
}

TEST_F(SqlTest, CallbackErrorsAndCancellationStopTheQuery) {
  Put(ThreeRows());
  int rows = 0;
  Result<QuerySummary> stopped = QueryEach(
      *base_, "SELECT id FROM records", {},
      [](const std::vector<std::string>&) { return Status::OK(); },
      [&](std::vector<Value>) {
        ++rows;
        return Status::IOError("client went away");
      });
  EXPECT_EQ(stopped.status(), Status::IOError("client went away"));
  EXPECT_EQ(rows, 1);
  Result<QueryResult> cancelled =
      Run("SELECT count(*) FROM records", {.cancelled = [] { return true; }});
  EXPECT_EQ(cancelled.status().code(), StatusCode::kAborted);
  // A statement that never ends without a cap is stopped by the caller.
  int polls = 0;
  Result<QueryResult> endless =
      Run("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c",
          {.cancelled = [&] { return ++polls > 3; }});
  EXPECT_EQ(endless.status().code(), StatusCode::kAborted);
}

// --- What reaches strata ------------------------------------------------------------------

TEST_F(SqlTest, FiltersAndProjectionsArePushedToTheScan) {
  Put(ThreeRows());
  QueryStats stats;
  ASSERT_OK_AND_ASSIGN(
      QueryResult result,
      Run("SELECT name FROM records WHERE n >= 2 AND name IS NOT NULL", {}, &stats));
  EXPECT_EQ(SortedRows(result.rows), std::vector<std::string>{"s\"beta\"|"});
  EXPECT_EQ(stats.scans, 1);
  EXPECT_EQ(stats.key_lookups, 0);
  ASSERT_EQ(stats.pushed_filters.size(), 1u);
  EXPECT_THAT(stats.pushed_filters[0], HasSubstr("\"n\" >= 2"));
  EXPECT_THAT(stats.pushed_filters[0], HasSubstr("\"name\" IS NOT NULL"));
  EXPECT_THAT(stats.columns_read, ElementsAre("name", "n"));
  EXPECT_EQ(stats.rows_scanned, 1);  // strata filtered the rest

  ASSERT_OK(Run("SELECT count(*) FROM records", {}, &stats).status());
  EXPECT_THAT(stats.columns_read, ElementsAre("id"));
  EXPECT_THAT(stats.pushed_filters, ElementsAre(""));
  EXPECT_EQ(stats.rows_scanned, 3);

  ASSERT_OK(Run("SELECT id FROM records WHERE name IN ('alpha', 'beta', NULL) AND score < 0.7", {},
                &stats)
                .status());
  ASSERT_EQ(stats.pushed_filters.size(), 1u);
  EXPECT_THAT(stats.pushed_filters[0], HasSubstr("\"name\" IN ('alpha', 'beta')"));
  EXPECT_THAT(stats.pushed_filters[0], HasSubstr("\"score\" <= 0.699999988079071"));
  EXPECT_EQ(stats.rows_scanned, 1);
}

TEST_F(SqlTest, KeyEqualityAndInAreLookupsNotScans) {
  Put(ThreeRows());
  QueryStats stats;
  EXPECT_THAT(Column0("SELECT name FROM records WHERE id = 'b'"), ElementsAre("\"beta\""));
  ASSERT_OK_AND_ASSIGN(QueryResult one, Run("SELECT name FROM records WHERE id = 'b'", {}, &stats));
  EXPECT_EQ(stats.scans, 0);
  EXPECT_EQ(stats.key_lookups, 1);
  EXPECT_EQ(stats.rows_scanned, 1);
  ASSERT_OK_AND_ASSIGN(
      QueryResult some,
      Run("SELECT id FROM records WHERE id IN ('a', 'c', 'zz', 'a', NULL)", {}, &stats));
  EXPECT_EQ(SortedRows(some.rows), (std::vector<std::string>{"s\"a\"|", "s\"c\"|"}));
  EXPECT_EQ(stats.scans, 0);
  EXPECT_EQ(stats.key_lookups, 3);
  // A value that is no key of a text key column (SQLite's affinity would compare it as text)
  // is left to a scan.
  ASSERT_OK_AND_ASSIGN(QueryResult number, Run("SELECT id FROM records WHERE id = 5", {}, &stats));
  EXPECT_EQ(number.row_count, 0);
  EXPECT_EQ(stats.key_lookups, 0);
  EXPECT_EQ(stats.scans, 1);
  // = NULL matches nothing and reads nothing.
  ASSERT_OK_AND_ASSIGN(QueryResult null, Run("SELECT id FROM records WHERE id = NULL", {}, &stats));
  EXPECT_EQ(null.row_count, 0);
  EXPECT_EQ(stats.rows_scanned, 0);
}

TEST_F(SqlTest, OrBranchesPlannedSeparatelyKeepEveryRowOnce) {
  // Enough rows that SQLite runs each branch of the OR as its own scan or lookup and unites
  // the rows by key (the table's PRIMARY KEY; it has no rowids).
  std::vector<Row> rows;
  rows.reserve(300);
  for (int i = 0; i < 300; ++i) {
    rows.push_back(
        Row{.id = fmt::format("k{:03}", i), .name = i % 100 == 0 ? "hit" : "miss", .n = i});
  }
  Put(rows);
  QueryStats stats;
  ASSERT_OK_AND_ASSIGN(
      QueryResult result,
      Run("SELECT n FROM records WHERE name = 'hit' OR id = 'k000' OR id = 'k007'", {}, &stats));
  EXPECT_EQ(SortedRows(result.rows), (std::vector<std::string>{"i0|", "i100|", "i200|", "i7|"}));
  EXPECT_EQ(stats.scans, 1);
  EXPECT_EQ(stats.key_lookups, 2);
  ASSERT_OK_AND_ASSIGN(
      result,
      Run("SELECT count(*) FROM records WHERE name = 'hit' OR id IN ('k000', 'k001')", {}, &stats));
  EXPECT_EQ(SortedRows(result.rows), std::vector<std::string>{"i4|"});
  EXPECT_EQ(stats.key_lookups, 2);
}

// Six pending generations of 50 rows each, read newest first, one batch each.
void PutGenerations(SqlTest& test) {
  for (int g = 0; g < 6; ++g) {
    std::vector<Row> rows;
    rows.reserve(50);
    for (int i = 0; i < 50; ++i) rows.push_back(Row{.id = fmt::format("g{}-{:02}", g, i), .n = g});
    test.Put(rows);
  }
}

// A query whose first scan starts over (as ScanEach does when a merge deleted files it was
// about to read) after delivering two batches.
struct RestartingQuery {
  explicit RestartingQuery(const store::StorageBase& base) {
    context.base = &base;
    context.stats = &stats;
    context.scan = [this, &base](const store::ScanRequest& request,
                                 const std::function<Status(RecordBatch)>& consume,
                                 const std::function<Status()>& restart) -> Result<uint64_t> {
      if (++scans == 1) {
        int delivered = 0;
        Result<uint64_t> first = base.ScanEach(
            request,
            [&](RecordBatch batch) -> Status {
              STRATA_RETURN_IF_ERROR(consume(std::move(batch)));
              return ++delivered == 2 ? Status::NotFound("files deleted") : Status::OK();
            },
            restart);
        if (first.status() != Status::NotFound("files deleted")) return first;
        STRATA_RETURN_IF_ERROR(restart());
      }
      return base.ScanEach(request, consume, restart);
    };
  }

  QueryStats stats;
  QueryContext context;
  int scans = 0;
};

TEST_F(SqlTest, AScanThatStartsOverIsRunAgainWhenNoRowWasReturned) {
  PutGenerations(*this);
  RestartingQuery query(*base_);
  std::vector<std::vector<Value>> rows;
  ASSERT_OK_AND_ASSIGN(QuerySummary summary,
                       RunQuery(
                           &query.context, "SELECT count(*), count(DISTINCT id) FROM records", {},
                           [](const std::vector<std::string>&) { return Status::OK(); },
                           [&](std::vector<Value> row) {
                             rows.push_back(std::move(row));
                             return Status::OK();
                           }));
  EXPECT_EQ(summary.row_count, 1);
  // The first run failed at the restart (its count had seen two batches already); the second
  // counted every row once.
  EXPECT_EQ(query.scans, 2);
  EXPECT_EQ(SortedRows(rows), std::vector<std::string>{"i300|i300|"});
}

TEST_F(SqlTest, AScanThatStartsOverAfterReturningRowsFailsWithBusy) {
  PutGenerations(*this);
  RestartingQuery query(*base_);
  int64_t rows = 0;
  Result<QuerySummary> summary = RunQuery(
      &query.context, "SELECT id FROM records", {.max_rows = 0},
      [](const std::vector<std::string>&) { return Status::OK(); },
      [&](std::vector<Value>) {
        ++rows;
        return Status::OK();
      });
  EXPECT_EQ(summary.status().code(), StatusCode::kBusy) << summary.status();
  EXPECT_EQ(rows, 100);  // the two batches before the restart
  EXPECT_EQ(query.scans, 1);
}

TEST_F(SqlTest, NewestRowsAndTombstonesAreWhatSqlSees) {
  Put(ThreeRows());
  ASSERT_OK(base_->Cleanup().status());  // into the base table
  Put({Row{.id = "a", .name = "alpha-2", .n = 10}});
  ASSERT_OK(base_->DeleteKeys({expr::Scalar::String("b")}));
  ASSERT_OK(base_->Flush().status());
  ASSERT_OK_AND_ASSIGN(QueryResult result, Run("SELECT id, name, n FROM records ORDER BY id"));
  EXPECT_EQ(SortedRows(result.rows),
            (std::vector<std::string>{"s\"a\"|s\"alpha-2\"|i10|", "s\"c\"|nnull|i2|"}));
  // A newer row failing the pushed filter still hides the older one that passes it.
  EXPECT_THAT(Column0("SELECT id FROM records WHERE n = 1"), ElementsAre());
  EXPECT_THAT(Column0("SELECT id FROM records WHERE id = 'b'"), ElementsAre());
}

}  // namespace
}  // namespace strata::sql
