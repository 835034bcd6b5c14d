// Shared by the table torture tests and their child process (table_worker): the test schema,
// rows as JSON objects, an oracle evaluator for the random predicates the tests generate,
// and the state-independent workload operations the crash test replays in both processes.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "strata/record_batch.h"
#include "strata/status.h"
#include "strata/table.h"
#include "strata/type.h"

namespace strata::table::torture {

// One row: a JSON object with every column of the schema (null for missing values), in the
// form strata::json reads and writes (floats as numbers, timestamps as RFC 3339 text).
using Row = nlohmann::json;
// Live rows by IdKey(row["id"]), so iteration order is id order.
using Rows = std::map<std::string, Row>;

// id (primary key: utf8, or int64 when `int_key`), v int64, f float64, tag utf8; all but id
// nullable.
SchemaPtr BaseSchema(bool int_key);
// Tiny batches and fragments, so a few hundred rows make many of both.
TableOptions SmallOptions();

// A sortable map key for an id value (zero-padded digits for integers).
std::string IdKey(const Row& id);
// The id as a scalar for LookupKeys / DeleteKeys.
expr::Scalar IdScalar(const Row& id);

// Rows (objects with a subset of `schema`'s columns) as one batch of `schema`'s columns.
Result<RecordBatch> MakeBatch(const SchemaPtr& schema, const std::vector<Row>& rows);
// Every row of the batches, as objects.
Result<std::vector<Row>> BatchesToRows(const std::vector<RecordBatch>& batches);
// Rows by id; Corruption naming the id when one appears twice.
Result<Rows> IndexRows(const std::vector<Row>& rows);
// A full scan (every column) of the handle's version, by id.
Result<Rows> ScanRows(const Table& table);
// "" when equal, else a description of (up to 5) differences.
std::string DiffRows(const Rows& expected, const Rows& actual);

// A random predicate over the base columns, with its text for the expression language and
// an evaluator with SQL's three-valued logic (a row is selected only when TRUE).
struct Clause {
  std::string column;
  std::string op;  // = != < <= > >= "IS NULL" "IS NOT NULL" IN
  std::vector<Row> literals;
  bool negated = false;
};
struct Predicate {
  std::vector<Clause> clauses;
  bool conjunction = true;
  std::string text;
  bool Matches(const Row& row) const;
};
// `ids` are candidates for id clauses (may be empty).
Predicate RandomPredicate(std::mt19937_64& rng, bool int_key, const std::vector<Row>& ids);

// A random value row for id `id` with the base columns plus `extra_columns` (int64, nullable).
Row RandomRow(std::mt19937_64& rng, Row id, const std::vector<std::string>& extra_columns);

// A workload operation, generated from (seed, op id) alone so a parent can replay what its
// child ran. Used by the crash test (base schema, utf8 key).
struct Op {
  enum class Kind { kAppend, kDelete, kDeleteKeys, kCompact };
  Kind kind = Kind::kAppend;
  int64_t id = 0;
  std::vector<Row> rows;  // kAppend
  Predicate predicate;    // kDelete
  std::vector<Row> keys;  // kDeleteKeys
  CompactionOptions compaction;
  std::string Describe() const;
};
Op MakeOp(uint64_t seed, int64_t op_id);
// Applies `op` to the oracle; returns the rows it deletes.
int64_t ApplyOp(const Op& op, Rows* rows);
// Runs `op` on the table; for deletes checks rows_deleted against `expected_deleted` when
// given.
Status RunOp(Table& table, const Op& op, std::optional<int64_t> expected_deleted = {});

}  // namespace strata::table::torture
