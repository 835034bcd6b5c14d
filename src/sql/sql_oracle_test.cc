// Answers of random statements over a random store (rows in the base table, in pending
// generations, overwritten and deleted) compared with plain SQLite running the same statement
// over an ordinary table holding the store's live rows as the records table shows them — an
// independent oracle for pushdown, key lookups and the newest-wins view. Then a 200,000-row
// store answered under a row cap without reading it all.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <system_error>
#include <vector>

#include "sql/sql_test_util.h"
#include "strata/builder.h"
#include "strata/json.h"
#include "strata/sql.h"
#include "support/status_assertions.h"
#include "support/temp_dir.h"

namespace strata::sql {
namespace {

using testing::Row;
using testing::SortedRows;

// The double SQLite should see for a float32, computed here independently of the code under
// test: the shortest decimal that reads back as the float, read as a double.
double ShownFloat32(float f) {
  char buffer[32];
  auto written = std::to_chars(buffer, buffer + sizeof(buffer), f);
  double d = 0;
  std::from_chars(buffer, written.ptr, d);
  return d;
}

// Plain SQLite over an ordinary table with the records table's columns and values.
class Oracle {
 public:
  Oracle() {
    sqlite3_open(":memory:", &db_);
    Exec(
        "CREATE TABLE records(id TEXT, name TEXT, n INTEGER, small INTEGER, score REAL, "
        "weight REAL, flag INTEGER, ts TEXT, tags TEXT, payload BLOB)");
  }
  ~Oracle() { sqlite3_close(db_); }
  Oracle(const Oracle&) = delete;
  Oracle& operator=(const Oracle&) = delete;

  void Exec(const std::string& sql) {
    char* error = nullptr;
    ASSERT_EQ(sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK) << error;
  }

  void Insert(const Row& r) {
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db_, "INSERT INTO records VALUES (?,?,?,?,?,?,?,?,?,?)", -1, &s,
                                 nullptr),
              SQLITE_OK);
    sqlite3_bind_text(s, 1, r.id.c_str(), -1, SQLITE_TRANSIENT);
    if (r.name)
      sqlite3_bind_text(s, 2, r.name->data(), static_cast<int>(r.name->size()), SQLITE_TRANSIENT);
    if (r.n) sqlite3_bind_int64(s, 3, *r.n);
    if (r.small) sqlite3_bind_int64(s, 4, *r.small);
    if (r.score && !std::isnan(*r.score)) sqlite3_bind_double(s, 5, ShownFloat32(*r.score));
    if (r.weight && !std::isnan(*r.weight)) sqlite3_bind_double(s, 6, *r.weight);
    if (r.flag) sqlite3_bind_int64(s, 7, *r.flag ? 1 : 0);
    if (r.ts) {
      std::string text = json::FormatTimestamp(*r.ts);
      sqlite3_bind_text(s, 8, text.c_str(), -1, SQLITE_TRANSIENT);
    }
    if (r.tags) {
      std::string text = nlohmann::json(*r.tags).dump();
      sqlite3_bind_text(s, 9, text.c_str(), -1, SQLITE_TRANSIENT);
    }
    if (r.payload) {
      sqlite3_bind_blob(s, 10, r.payload->empty() ? "" : r.payload->data(),
                        static_cast<int>(r.payload->size()), SQLITE_TRANSIENT);
    }
    EXPECT_EQ(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
  }

  // The rows, or the error message.
  Result<std::vector<std::vector<Value>>> Query(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      return Status::InvalidArgument(sqlite3_errmsg(db_));
    }
    std::vector<std::vector<Value>> rows;
    int rc = SQLITE_ROW;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      std::vector<Value> row;
      for (int i = 0; i < sqlite3_column_count(s); ++i) {
        switch (sqlite3_column_type(s, i)) {
          case SQLITE_INTEGER:
            row.emplace_back(static_cast<int64_t>(sqlite3_column_int64(s, i)));
            break;
          case SQLITE_FLOAT:
            row.emplace_back(sqlite3_column_double(s, i));
            break;
          case SQLITE_TEXT:
            row.emplace_back(std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, i)),
                                         static_cast<size_t>(sqlite3_column_bytes(s, i))));
            break;
          case SQLITE_BLOB: {
            const auto* bytes = static_cast<const char*>(sqlite3_column_blob(s, i));
            row.emplace_back(Blob{std::string(bytes == nullptr ? "" : bytes,
                                              static_cast<size_t>(sqlite3_column_bytes(s, i)))});
            break;
          }
          default:
            row.emplace_back();
        }
      }
      rows.push_back(std::move(row));
    }
    Status status;
    if (rc != SQLITE_DONE) status = Status::InvalidArgument(sqlite3_errmsg(db_));
    sqlite3_finalize(s);
    if (!status.ok()) return status;
    return rows;
  }

 private:
  sqlite3* db_ = nullptr;
};

template <typename T>
const T& Pick(std::mt19937_64& rng, const std::vector<T>& options) {
  return options[std::uniform_int_distribution<size_t>(0, options.size() - 1)(rng)];
}

bool Chance(std::mt19937_64& rng, double p) {
  return std::uniform_real_distribution<double>(0, 1)(rng) < p;
}

// Micros of 10000-01-01 (shown as "+10000-..."), of 0000-01-01 and of a day in year -1.
constexpr int64_t kYear10000 = 253402300800000000;
constexpr int64_t kYear0 = -62167219200000000;
constexpr int64_t kYearMinus1 = -62190000000000000;
constexpr int64_t kMay1 = 1714521600000000;  // 2024-05-01T00:00:00Z

Row RandomRow(std::mt19937_64& rng, std::string id) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  Row r;
  r.id = std::move(id);
  if (Chance(rng, 0.85)) {
    r.name = Pick<std::string>(rng, {"apple", "Apple", "APPLE", "a_b", "a%b", "x\\y", "",
                                     "\xe6\x97\xa5\xe6\x9c\xac", "banana", "12-34", "1_5"});
  }
  if (Chance(rng, 0.85)) {
    r.n = Chance(rng, 0.85) ? std::uniform_int_distribution<int64_t>(-3, 3)(rng)
                            : Pick<int64_t>(rng, {std::numeric_limits<int64_t>::max(),
                                                  std::numeric_limits<int64_t>::min(),
                                                  int64_t{1} << 53, (int64_t{1} << 53) + 1});
  }
  if (Chance(rng, 0.85)) r.small = Pick<int8_t>(rng, {-128, -1, 0, 1, 5, 127});
  if (Chance(rng, 0.85)) {
    r.score = Pick<float>(rng, {0.1f, 0.5f, 0.92f, -1.5f, 3.0f, 1e-3f, 16777216.0f,
                                static_cast<float>(nan), static_cast<float>(inf)});
  }
  if (Chance(rng, 0.85)) {
    r.weight = Pick<double>(rng, {0.1, 2.5, 1e300, nan, 9007199254740992.0, -7.25, 3.0, -inf});
  }
  if (Chance(rng, 0.85)) r.flag = Chance(rng, 0.5);
  if (Chance(rng, 0.85)) {
    r.ts = Pick<int64_t>(rng, {0, kMay1, kMay1 + 36000000000, kMay1 + 36000500000, kMay1 - 1,
                               kYear10000, kYear0, kYearMinus1});
  }
  if (Chance(rng, 0.7)) {
    r.tags =
        Pick<std::vector<std::string>>(rng, {{}, {"a"}, {"a", "b"}, {"\xe6\x97\xa5"}, {"x\"y"}});
  }
  if (Chance(rng, 0.6)) {
    r.payload = Pick<std::string>(rng, {"", std::string("\x01\x02", 2), "ab", "abc"});
  }
  return r;
}

std::string RandomAtom(std::mt19937_64& rng) {
  const std::vector<std::string> ops = {"=", "!=", "<", "<=", ">", ">=", "==", "<>"};
  const std::string op = Pick(rng, ops);
  switch (std::uniform_int_distribution<int>(0, 19)(rng)) {
    case 0:
      return "n " + op + " " +
             Pick<std::string>(rng, {"0", "1", "-2", "2.5", "'1'", "NULL", "9223372036854775807",
                                     "9007199254740993", "1e300", "-9223372036854775808"});
    case 1:
      return "small " + op + " " +
             Pick<std::string>(rng, {"0", "-128", "127", "300", "-200", "1.5", "'5'", "5.0"});
    case 2:
      return "score " + op + " " +
             Pick<std::string>(rng, {"0.92", "0.1", "0.5", "3", "-1.5", "0.9200000166893005",
                                     "1e300", "0", "16777217", "0.001"});
    case 3:
      return "weight " + op + " " +
             Pick<std::string>(rng, {"2.5", "0.1", "0", "9007199254740993", "9007199254740992",
                                     "1e300", "3", "-7.25"});
    case 4:
      return Pick<std::string>(rng, {"flag = 0", "flag = 1", "flag = 2", "flag = TRUE", "flag",
                                     "NOT flag", "flag != 1", "flag < 1"});
    case 5:
      return "name " + op + " " +
             Pick<std::string>(rng,
                               {"'apple'", "'Apple'", "''", "'b'", "'\xe6\x97\xa5'", "5", "'a_b'"});
    case 6:
      return "name LIKE " + Pick<std::string>(rng, {"'%p%'", "'a\\_b'", "'1_%'", "'12-34'", "'%'",
                                                    "'_'", "'%-%'", "'%\\%'", "'A%'"});
    case 7:
      return "name GLOB " + Pick<std::string>(rng, {"'a*'", "'A?PLE'", "'[ab]*'", "'*_*'", "'*%*'",
                                                    "'x\\y'", "'?'", "'*'"});
    case 8:
      return "ts " + op + " " +
             Pick<std::string>(
                 rng, {"'2024-05-01'", "'2024-05-01T10:00:00'", "'2024-05-01T10:00:00.000000Z'",
                       "'2024-05-01 10:00:00'", "'+10000'", "'1970-01-01T00:00:00.000000Z'",
                       "'0000-01-01T00:00:00.000000Z'", "5", "'2024-04-30T23:59:59.999999Z'",
                       "'9999-12-31T23:59:59.999999Z'"});
    case 9:
      return "id " + op + " " + Pick<std::string>(rng, {"'k005'", "'k1'", "'k'", "5", "'k099'"});
    case 10:
      return Pick<std::string>(
          rng, {"id IN ('k001', 'k002', NULL, 'zz')", "id IN (SELECT id FROM records WHERE n = 1)",
                "n IN (1, 2.0, '3', NULL)", "name IN ('apple', 'APPLE')", "score IN (0.92, 0.5)",
                "ts IN ('2024-05-01T10:00:00.000000Z', '2024-05-01')", "small NOT IN (0, 1)",
                "flag IN (1)", "weight IN (2.5, 3)"});
    case 11:
    case 12:
      return Pick<std::string>(rng, {"id", "name", "n", "small", "score", "weight", "flag", "ts",
                                     "tags", "payload"}) +
             (Chance(rng, 0.5) ? " IS NULL" : " IS NOT NULL");
    case 13:
      return Pick<std::string>(rng, {"payload = x'0102'", "payload > x''", "payload < 'ab'",
                                     "payload = 'ab'", "payload >= x'6162'"});
    case 14:
      return Pick<std::string>(
          rng, {"name = 'apple' COLLATE NOCASE", "name > 'b' COLLATE NOCASE", "tags = '[\"a\"]'",
                "tags LIKE '%a%'", "n BETWEEN -1 AND 2", "score BETWEEN 0 AND 1", "id = 'k003'",
                "abs(small) = 1", "n + 1 > 2"});
    case 15:
      return "n IS " + Pick<std::string>(rng, {"NULL", "1", "NOT NULL", "NOT 2"});
    case 16:
      return "ts " + op + " " +
             Pick<std::string>(rng, {"'2024-05-01'", "'2024-05-02'", "'1970-01-01T00:00:00'"});
    case 17:
      return "score " + op + " " + Pick<std::string>(rng, {"0.92", "0.5", "3.0"});
    default:
      return "n " + op + " " + Pick<std::string>(rng, {"0", "1", "-1", "3"});
  }
}

std::string RandomPredicate(std::mt19937_64& rng, int depth = 0) {
  if (depth >= 2 || Chance(rng, 0.45)) return RandomAtom(rng);
  switch (std::uniform_int_distribution<int>(0, 2)(rng)) {
    case 0:
      return "(" + RandomPredicate(rng, depth + 1) + " AND " + RandomPredicate(rng, depth + 1) +
             ")";
    case 1:
      return "(" + RandomPredicate(rng, depth + 1) + " OR " + RandomPredicate(rng, depth + 1) + ")";
    default:
      return "NOT (" + RandomPredicate(rng, depth + 1) + ")";
  }
}

std::string RandomStatement(std::mt19937_64& rng) {
  const std::string where = RandomPredicate(rng);
  switch (std::uniform_int_distribution<int>(0, 9)(rng)) {
    case 0:
    case 1:
    case 2:
    case 3:
    case 4:
      return "SELECT id, name, n, small, score, weight, flag, ts, tags, payload FROM records "
             "WHERE " +
             where;
    case 5:
    case 6:
      return "SELECT count(*), sum(small), min(name), max(score), min(weight), max(ts), "
             "count(DISTINCT tags) FROM records WHERE " +
             where;
    case 7:
    case 8:
      return "SELECT flag, count(*), max(id) FROM records WHERE " + where + " GROUP BY flag";
    default:
      return "SELECT a.id, b.id FROM records a JOIN records b ON a.small = b.small AND "
             "a.id <= b.id WHERE a.id IN (SELECT id FROM records WHERE " +
             where + ")";
  }
}

class SqlOracleTest : public testing::SqlStoreTest {};

TEST_F(SqlOracleTest, RandomStatementsAnswerAsPlainSqliteOnTheSameRows) {
  const uint64_t seed = strata::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  std::mt19937_64 rng(seed);
  std::map<std::string, Row> live;
  auto put = [&](const std::vector<Row>& rows) {
    Put(rows);
    for (const Row& r : rows) live[r.id] = r;
  };
  // The base table, then overwrites and deletes in pending generations.
  std::vector<Row> rows;
  rows.reserve(120);
  for (int i = 0; i < 120; ++i) rows.push_back(RandomRow(rng, fmt::format("k{:03}", i)));
  put(rows);
  ASSERT_OK(base_->Cleanup().status());
  for (int round = 0; round < 2; ++round) {
    rows.clear();
    std::vector<expr::Scalar> deleted;
    for (int i = 0; i < 30; ++i) {
      const std::string id = fmt::format("k{:03}", std::uniform_int_distribution<int>(0, 139)(rng));
      if (Chance(rng, 0.25)) {
        deleted.push_back(expr::Scalar::String(id));
        live.erase(id);
        std::erase_if(rows, [&](const Row& r) { return r.id == id; });
      } else {
        std::erase_if(rows, [&](const Row& r) { return r.id == id; });
        rows.push_back(RandomRow(rng, id));
      }
    }
    ASSERT_OK(base_->DeleteKeys(deleted));
    put(rows);
  }
  Oracle oracle;
  for (const auto& [id, row] : live) oracle.Insert(row);

  int pushed = 0;
  int lookups = 0;
  for (int i = 0; i < 400; ++i) {
    const std::string sql = RandomStatement(rng);
    SCOPED_TRACE(sql);
    Result<std::vector<std::vector<Value>>> want = oracle.Query(sql);
    QueryStats stats;
    Result<QueryResult> got = Query(*base_, sql, {.max_rows = 0}, &stats);
    ASSERT_EQ(got.ok(), want.ok()) << (got.ok() ? want.status() : got.status());
    if (!got.ok()) continue;
    EXPECT_EQ(SortedRows(got->rows), SortedRows(*want));
    for (const std::string& f : stats.pushed_filters) pushed += f.empty() ? 0 : 1;
    lookups += stats.key_lookups > 0 ? 1 : 0;
  }
  // The statements exercised pushdown and lookups, not only SQLite's own filtering.
  EXPECT_GT(pushed, 100);
  EXPECT_GT(lookups, 10);
}

// A store of `rows` rows (id "r<i>", n = i) in the base table.
void FillLarge(store::StorageBase& base, int64_t rows) {
  constexpr int64_t kBatch = 20000;
  for (int64_t start = 0; start < rows; start += kBatch) {
    const int64_t count = std::min(kBatch, rows - start);
    BinaryBuilder ids(utf8());
    Int64Builder n(int64());
    for (int64_t i = start; i < start + count; ++i) {
      ASSERT_OK(ids.Append(fmt::format("r{:07}", i)));
      n.Append(i);
    }
    ASSERT_OK_AND_ASSIGN(Array id_array, ids.Finish());
    ASSERT_OK_AND_ASSIGN(Array n_array, n.Finish());
    ASSERT_OK_AND_ASSIGN(
        RecordBatch batch,
        RecordBatch::Make(schema({field("id", utf8(), false), field("n", int64())}), count,
                          {id_array, n_array}));
    ASSERT_OK(base.Put({batch}));
  }
  ASSERT_OK(base.Cleanup().status());
}

TEST_F(SqlOracleTest, ALargeStoreIsCappedAndStoppedEarlyNotMaterialised) {
  constexpr int64_t kRows = 200000;
  ASSERT_NO_FATAL_FAILURE(FillLarge(*base_, kRows));
  QueryStats stats;
  ASSERT_OK_AND_ASSIGN(QueryResult capped, Query(*base_, "SELECT id, n FROM records", {}, &stats));
  EXPECT_EQ(capped.row_count, kDefaultMaxRows);
  EXPECT_TRUE(capped.truncated);
  // The scan stopped a few batches past the cap instead of reading the store.
  EXPECT_LT(stats.rows_scanned, kRows / 2);
  ASSERT_OK_AND_ASSIGN(QueryResult limited,
                       Query(*base_, "SELECT id FROM records LIMIT 5", {}, &stats));
  EXPECT_EQ(limited.row_count, 5);
  EXPECT_FALSE(limited.truncated);
  EXPECT_LT(stats.rows_scanned, kRows / 2);
  // Aggregates read everything, a batch at a time.
  ASSERT_OK_AND_ASSIGN(
      QueryResult grouped,
      Query(*base_, "SELECT n % 4 AS k, count(*), sum(n) FROM records GROUP BY k ORDER BY k", {},
            &stats));
  EXPECT_EQ(stats.rows_scanned, kRows);
  ASSERT_EQ(grouped.row_count, 4);
  for (int64_t k = 0; k < 4; ++k) {
    // n = k, k + 4, ...: 50,000 values summing to 4 * (0 + ... + 49,999) + 50,000 k.
    const int64_t count = kRows / 4;
    EXPECT_EQ(grouped.rows[k][1], Value(count));
    EXPECT_EQ(grouped.rows[k][2], Value(4 * (count * (count - 1) / 2) + count * k));
  }
  // Keys from a subquery are looked up 1,024 at a time.
  ASSERT_OK_AND_ASSIGN(QueryResult looked_up,
                       Query(*base_,
                             "SELECT count(*), sum(n) FROM records WHERE id IN "
                             "(SELECT id FROM records WHERE n < 3000)",
                             {}, &stats));
  EXPECT_EQ(SortedRows(looked_up.rows), std::vector<std::string>{"i3000|i4498500|"});
  EXPECT_EQ(stats.key_lookups, 3000);
  EXPECT_EQ(stats.scans, 1);
  EXPECT_EQ(stats.rows_scanned, 6000);
  // A selective filter: strata returns only the matching rows.
  ASSERT_OK_AND_ASSIGN(QueryResult range,
                       Query(*base_, "SELECT count(*) FROM records WHERE n >= 199990", {}, &stats));
  EXPECT_EQ(range.rows[0][0], Value(int64_t{10}));
  EXPECT_EQ(stats.rows_scanned, 10);
}

}  // namespace
}  // namespace strata::sql
