// Predicates: strata's SQL WHERE subset. Parse text into an Expr, Bind it to a schema (type
// check and literal coercion), then Evaluate / Select it over record batches, prune batches
// with column statistics (CanMatch) or route key lookups (ExtractKeyEqualities).
//
// Grammar, types, coercions, three-valued logic and pruning rules: docs/expressions.md.
//
//   auto expr = expr::Parse("reward > 0.5 AND name LIKE 'run-%' AND tag IS NOT NULL");
//   auto bound = expr::Bind(*expr, schema);
//   auto rows = expr::Select(*bound, batch);  // row indices where the predicate is TRUE
//
// Errors: Parse and Bind return InvalidArgument with a message naming the position (parse)
// or the column, types and literal (bind). Evaluation fails only when a batch does not match
// the schema the expression was bound to. Thread safety: Expr, BoundExpr and Scalar are
// immutable values, safe to share; the free functions are reentrant.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/array.h"
#include "strata/buffer.h"
#include "strata/record_batch.h"
#include "strata/status.h"
#include "strata/type.h"

namespace strata::expr {

// A literal in an expression or a column statistic.
class Scalar {
 public:
  enum class Kind : uint8_t { kNull, kBool, kInt64, kUInt64, kDouble, kString, kTimestamp };

  Scalar() = default;  // NULL
  static Scalar Null() { return Scalar(); }
  static Scalar Bool(bool value);
  static Scalar Int64(int64_t value);
  static Scalar UInt64(uint64_t value);
  static Scalar Double(double value);
  // Any bytes: utf8 and binary values alike.
  static Scalar String(std::string value);
  // Microseconds since the Unix epoch, UTC.
  static Scalar Timestamp(int64_t micros);

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_numeric() const {
    return kind_ == Kind::kInt64 || kind_ == Kind::kUInt64 || kind_ == Kind::kDouble;
  }
  // Each REQUIRES the matching kind.
  bool bool_value() const { return int_ != 0; }
  int64_t int64_value() const { return int_; }
  uint64_t uint64_value() const { return static_cast<uint64_t>(int_); }
  double double_value() const { return double_; }
  const std::string& string_value() const { return string_; }
  int64_t timestamp_micros() const { return int_; }

  // SQL literal text that Parse() reads back as an equal value: 42, 1.5, 1e+300, 'it''s',
  // TIMESTAMP '2024-05-01T12:00:00.000000Z', TRUE, NULL.
  std::string ToString() const;

  // Same kind and value; doubles compare by value with NaN equal to NaN (+0.0 == -0.0).
  friend bool operator==(const Scalar& a, const Scalar& b);

 private:
  Kind kind_ = Kind::kNull;
  int64_t int_ = 0;  // bool, int64, uint64 (bit pattern), timestamp
  double double_ = 0;
  std::string string_;
};

// Orders two scalars: <0, 0 or >0; std::nullopt when they are not comparable (a NULL, or
// kinds of different families). Families: numbers (int64, uint64 and double compared exactly,
// NaN above every other number and equal to itself), strings (bytewise), bools (false < true),
// timestamps (with each other and with integers as microseconds).
std::optional<int> CompareScalars(const Scalar& a, const Scalar& b);

enum class CompareOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
// "=", "!=", "<", "<=", ">", ">=".
std::string_view CompareOpSymbol(CompareOp op);

// A parsed, not yet type-checked expression (an immutable tree; copies share nodes).
class Expr {
 public:
  enum class Kind : uint8_t {
    kLiteral,   // literal()
    kColumn,    // column_path()
    kCompare,   // operands()[0] op() operands()[1]
    kIn,        // operands()[0] [NOT] IN (values())
    kIsNull,    // operands()[0] IS [NOT] NULL
    kLike,      // operands()[0] [NOT] LIKE pattern()
    kArrayHas,  // array_has(operands()[0], operands()[1])
    kAnd,       // operands()[0] AND operands()[1] AND ...
    kOr,        // operands()[0] OR ...
    kNot,       // NOT operands()[0]
  };

  static Expr Literal(Scalar value);
  // A top-level column.
  static Expr Column(std::string name) { return ColumnPath({std::move(name)}); }
  // A top-level column or a struct field below it: {"usage", "prompt_tokens"}.
  static Expr ColumnPath(std::vector<std::string> path);
  static Expr Compare(CompareOp op, Expr left, Expr right);
  static Expr In(Expr operand, std::vector<Scalar> values, bool negated = false);
  static Expr IsNull(Expr operand, bool negated = false);
  // `pattern`: % matches any sequence, _ one character, a backslash escapes the next one.
  static Expr Like(Expr operand, std::string pattern, bool negated = false);
  static Expr ArrayHas(Expr list, Expr value);
  // REQUIRES: at least one operand.
  static Expr And(std::vector<Expr> operands);
  static Expr Or(std::vector<Expr> operands);
  static Expr Not(Expr operand);

  Kind kind() const;
  const Scalar& literal() const;
  const std::vector<std::string>& column_path() const;
  CompareOp op() const;
  bool negated() const;
  const std::vector<Expr>& operands() const;
  const std::vector<Scalar>& values() const;
  const std::string& pattern() const;

  // Text that Parse() reads back as an equal expression (BETWEEN comes back as its AND). The
  // text may nest one level deeper than the input did, so an expression at Parse()'s nesting
  // limit can print beyond it.
  std::string ToString() const;
  // Structural equality.
  bool Equals(const Expr& other) const;

  struct Node;  // defined in src/expr/ast.cc

 private:
  explicit Expr(std::shared_ptr<const Node> node) : node_(std::move(node)) {}
  std::shared_ptr<const Node> node_;
};

// Parses a predicate. InvalidArgument naming the 1-based byte position of the problem, e.g.
// `syntax error at position 9: expected a literal after IN (, found 'x'`.
Result<Expr> Parse(std::string_view text);

namespace internal {
struct BoundNode;  // src/expr/bound.h
}  // namespace internal

// An expression type-checked against a schema, ready to evaluate over its batches.
class BoundExpr {
 public:
  const SchemaPtr& schema() const { return schema_; }
  // The bound form: literals coerced to their columns' types, e.g. `level <= 1` for
  // `level < 1.5` over an integer column. For messages and logs; not meant to re-parse.
  std::string ToString() const;
  // Top-level columns the expression reads, ascending.
  std::vector<int> ReferencedColumns() const;

  const internal::BoundNode& root() const { return *root_; }
  BoundExpr(SchemaPtr schema, std::shared_ptr<const internal::BoundNode> root)
      : schema_(std::move(schema)), root_(std::move(root)) {}

 private:
  SchemaPtr schema_;
  std::shared_ptr<const internal::BoundNode> root_;
};

// Type-checks `expr` against `schema`. InvalidArgument naming the column, its type and the
// literal, e.g. `column 'reward' is float64; cannot compare it with string 'abc'`; unknown
// columns list similar names. Integer literals outside the column type's range are errors
// (`int8_col = 300`), not "always false".
Result<BoundExpr> Bind(const Expr& expr, const SchemaPtr& schema);
// Parse then Bind.
Result<BoundExpr> ParseAndBind(std::string_view text, const SchemaPtr& schema);

// The predicate's value for every row of `batch`: a boolean array of batch.num_rows() with
// SQL three-valued logic (null where the result is unknown). `batch` must have the bound
// schema's columns (InvalidArgument naming the first referenced column whose type differs).
Result<Array> Evaluate(const BoundExpr& expr, const RecordBatch& batch);
// Ascending indices of the rows where the predicate is TRUE (not FALSE, not NULL).
Result<std::vector<int64_t>> Select(const BoundExpr& expr, const RecordBatch& batch);
// The same rows as a bitmap of BytesForBits(num_rows) bytes: bit i (LSB order) is set iff row
// i is TRUE; bits past num_rows are zero.
Result<Buffer> SelectBitmap(const BoundExpr& expr, const RecordBatch& batch);
// The number of rows where the predicate is TRUE.
Result<int64_t> CountMatches(const BoundExpr& expr, const RecordBatch& batch);

// Column statistics for pruning. min and max bound the column's non-null values (inclusive);
// nullopt means unknown (or no non-null values). Counts are exact.
struct ColumnStatistics {
  std::optional<Scalar> min;
  std::optional<Scalar> max;
  int64_t null_count = 0;
  int64_t row_count = 0;
};

// Statistics of an array (honouring its slice offset): bool -> Bool, signed integers ->
// Int64, unsigned -> UInt64, floats -> Double, timestamps -> Timestamp, strings, binary and
// dictionaries of them -> String (dictionaries over the entries rows use). NaN orders above
// every number, so max is NaN when any value is NaN. Strings longer than
// kMaxStatisticsStringBytes get a truncated min (still a lower bound) and a truncated max
// with its last byte incremented (still an upper bound; omitted when every kept byte is
// 0xFF). Other types get counts only. A dictionary row whose entry is null counts as null.
inline constexpr size_t kMaxStatisticsStringBytes = 64;
Result<ColumnStatistics> ComputeStatistics(const Array& array);

enum class PruneResult : uint8_t {
  kNone,   // no row can be TRUE: skip the batch
  kMaybe,  // some rows may be TRUE
  kAll,    // every row is TRUE
};
std::string_view PruneResultName(PruneResult result);

// The statistics of top-level column `column` of the bound schema, or nullptr when unknown.
using StatisticsLookup = std::function<const ColumnStatistics*(int column)>;

// What `expr` can evaluate to over a batch whose columns have the given statistics. Sound:
// never kNone when some row is TRUE, never kAll when some row is not TRUE. Struct field paths,
// column-to-column comparisons and array_has are not pruned (kMaybe unless their nulls
// decide).
PruneResult CanMatch(const BoundExpr& expr, const StatisticsLookup& statistics);

// When every row for which `expr` is TRUE must have top-level column `key_column` equal to one
// of a few literals — `key = x`, `key IN (...)`, an AND with such a term (sets intersected) or
// an OR of such terms (sets united) — those literals, distinct, in ascending order and in the
// column's statistics kind (see ComputeStatistics). An empty vector means no row can match.
// std::nullopt when the predicate does not restrict the key that way. The caller must still
// apply `expr` to the rows it finds.
std::optional<std::vector<Scalar>> ExtractKeyEqualities(const BoundExpr& expr, int key_column);

}  // namespace strata::expr
