// SQLite constraints on `records` as strata filter terms and key lookups (pushdown.h states the
// rules).
#include "sql/pushdown.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "strata/json.h"

namespace strata::sql {
namespace {

// How the table shows a column to SQLite, as far as pushdown cares.
enum class Family {
  kSignedInteger,  // int8..int64, uint8..uint32: INTEGER
  kUInt64,         // INTEGER, or REAL past INT64_MAX
  kFloat64,        // REAL
  kFloat32,        // REAL: the shortest decimal of the float32
  kBool,           // INTEGER 0 / 1
  kString,         // TEXT: utf8, large_utf8, dictionary<_, utf8 | large_utf8>
  kBinary,         // BLOB: binary, large_binary
  kTimestamp,      // TEXT: RFC 3339
  kOther,          // TEXT JSON or other: nothing but IS [NOT] NULL is pushed
};

Family FamilyOf(const DataType& type) {
  switch (type.id()) {
    case TypeId::kInt8:
    case TypeId::kInt16:
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kUInt8:
    case TypeId::kUInt16:
    case TypeId::kUInt32:
      return Family::kSignedInteger;
    case TypeId::kUInt64:
      return Family::kUInt64;
    case TypeId::kFloat64:
      return Family::kFloat64;
    case TypeId::kFloat32:
      return Family::kFloat32;
    case TypeId::kBool:
      return Family::kBool;
    case TypeId::kUtf8:
    case TypeId::kLargeUtf8:
      return Family::kString;
    case TypeId::kBinary:
    case TypeId::kLargeBinary:
      return Family::kBinary;
    case TypeId::kTimestamp:
      return Family::kTimestamp;
    case TypeId::kDictionary:
      return type.dictionary_value_type()->is_string() ? Family::kString : Family::kOther;
    default:
      return Family::kOther;
  }
}

// The range of an integer column type.
std::pair<int64_t, int64_t> IntegerRange(TypeId id) {
  switch (id) {
    case TypeId::kInt8:
      return {std::numeric_limits<int8_t>::min(), std::numeric_limits<int8_t>::max()};
    case TypeId::kInt16:
      return {std::numeric_limits<int16_t>::min(), std::numeric_limits<int16_t>::max()};
    case TypeId::kInt32:
      return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case TypeId::kUInt8:
      return {0, std::numeric_limits<uint8_t>::max()};
    case TypeId::kUInt16:
      return {0, std::numeric_limits<uint16_t>::max()};
    case TypeId::kUInt32:
      return {0, std::numeric_limits<uint32_t>::max()};
    default:
      return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  }
}

// Integers a double holds exactly, and that strata converts to float64 without rounding.
constexpr int64_t kExactDoubleIntegers = int64_t{1} << 53;

// The latest instant whose RFC 3339 text has a four-digit year: 9999-12-31T23:59:59.999999Z.
constexpr int64_t kLastFourDigitYearMicros = 253402300799999999;

bool IsComparison(ConstraintOp op) {
  switch (op) {
    case ConstraintOp::kEq:
    case ConstraintOp::kNe:
    case ConstraintOp::kLt:
    case ConstraintOp::kLe:
    case ConstraintOp::kGt:
    case ConstraintOp::kGe:
      return true;
    default:
      return false;
  }
}

std::string_view Symbol(ConstraintOp op) {
  switch (op) {
    case ConstraintOp::kEq:
      return "=";
    case ConstraintOp::kNe:
      return "!=";
    case ConstraintOp::kLt:
      return "<";
    case ConstraintOp::kLe:
      return "<=";
    case ConstraintOp::kGt:
      return ">";
    case ConstraintOp::kGe:
      return ">=";
    default:
      return "?";
  }
}

// The instant `text` names when it is exactly the canonical RFC 3339 text of one with a
// four-digit year (what the table shows for it); nullopt otherwise.
std::optional<int64_t> CanonicalTimestamp(std::string_view text) {
  if (text.empty() || text.front() < '0' || text.front() > '9') return std::nullopt;
  Result<int64_t> micros = json::ParseTimestamp(text);
  if (!micros.ok() || json::FormatTimestamp(*micros) != text) return std::nullopt;
  return *micros;
}

// The numeric operand of a comparison as a double, for float columns.
std::optional<double> AsDouble(const Value& value) {
  if (const auto* d = std::get_if<double>(&value)) {
    if (!std::isfinite(*d)) return std::nullopt;
    return *d;
  }
  if (const auto* i = std::get_if<int64_t>(&value)) return static_cast<double>(*i);
  return std::nullopt;
}

// The term for a comparison of an integer column (int8..int64, uint8..uint32).
std::optional<std::string> IntegerComparison(const Field& column, ConstraintOp op,
                                             const Value& value) {
  const auto [min, max] = IntegerRange(column.type()->id());
  std::string literal;
  if (const auto* i = std::get_if<int64_t>(&value)) {
    if (*i < min || *i > max) return std::nullopt;
    literal = expr::Scalar::Int64(*i).ToString();
  } else if (const auto* d = std::get_if<double>(&value)) {
    // Strata refuses literals outside the column type's range; compare exactly within it.
    if (!std::isfinite(*d) || *d < static_cast<double>(min) || *d > static_cast<double>(max)) {
      return std::nullopt;
    }
    // static_cast<double>(INT64_MAX) is 2^63, which no int64 reaches.
    if (column.type()->id() == TypeId::kInt64 && *d >= 9223372036854775808.0) return std::nullopt;
    literal = expr::Scalar::Double(*d).ToString();
  } else {
    return std::nullopt;
  }
  return fmt::format("{} {} {}", QuoteColumn(column.name()), Symbol(op), literal);
}

// The float32 that `d` rounds to, as a literal; nullopt when it overflows.
std::optional<std::string> Float32Literal(double d) {
  const auto f = static_cast<float>(d);
  if (!std::isfinite(f)) return std::nullopt;
  return expr::Scalar::Double(static_cast<double>(f)).ToString();
}

std::optional<std::string> FloatComparison(const Field& column, Family family, ConstraintOp op,
                                           const Value& value) {
  if (const auto* i = std::get_if<int64_t>(&value);
      family == Family::kFloat64 && i != nullptr &&
      (*i > kExactDoubleIntegers || *i < -kExactDoubleIntegers)) {
    return std::nullopt;
  }
  std::optional<double> d = AsDouble(value);
  if (!d) return std::nullopt;
  const std::string name = QuoteColumn(column.name());
  if (family == Family::kFloat64) {
    return fmt::format("{} {} {}", name, Symbol(op), expr::Scalar::Double(*d).ToString());
  }
  // float32: SQLite compares w(v) with d; rounding to float32 is monotone and takes w(v) back
  // to v, so w(v) <= d implies v <= float(d), and so on (pushdown.h).
  std::optional<std::string> literal = Float32Literal(*d);
  if (!literal) return std::nullopt;
  switch (op) {
    case ConstraintOp::kEq:
      return fmt::format("{} = {}", name, *literal);
    case ConstraintOp::kLt:
    case ConstraintOp::kLe:
      return fmt::format("{} <= {}", name, *literal);
    case ConstraintOp::kGt:
    case ConstraintOp::kGe:
      return fmt::format("{} >= {}", name, *literal);
    default:
      return std::nullopt;
  }
}

std::optional<std::string> TimestampComparison(const Field& column, ConstraintOp op,
                                               const Value& value) {
  const auto* text = std::get_if<std::string>(&value);
  if (text == nullptr) return std::nullopt;
  const std::string name = QuoteColumn(column.name());
  // Years past 9999 show as "+10000-...", below every canonical text: SQLite finds them less
  // than any bound, strata greater.
  const std::string late =
      fmt::format("{} > {}", name, expr::Scalar::Timestamp(kLastFourDigitYearMicros).ToString());
  if (std::optional<int64_t> micros = CanonicalTimestamp(*text)) {
    const std::string literal = expr::Scalar::Timestamp(*micros).ToString();
    if (op == ConstraintOp::kLt || op == ConstraintOp::kLe) {
      return fmt::format("({} {} {} OR {})", name, Symbol(op), literal, late);
    }
    return fmt::format("{} {} {}", name, Symbol(op), literal);
  }
  // A date or a date and time without fraction: every shown text that starts with it sorts
  // after it, so ranges compare with the first instant it starts.
  std::string first;
  if (text->size() == 10) {
    first = *text + "T00:00:00.000000Z";
  } else if (text->size() == 19 && (*text)[10] == 'T') {
    first = *text + ".000000Z";
  } else {
    return std::nullopt;
  }
  std::optional<int64_t> micros = CanonicalTimestamp(first);
  if (!micros) return std::nullopt;
  const std::string literal = expr::Scalar::Timestamp(*micros).ToString();
  switch (op) {
    case ConstraintOp::kLt:
    case ConstraintOp::kLe:
      return fmt::format("({} < {} OR {})", name, literal, late);
    case ConstraintOp::kGt:
    case ConstraintOp::kGe:
      return fmt::format("{} >= {}", name, literal);
    default:
      return std::nullopt;
  }
}

std::optional<std::string> Comparison(const Field& column, ConstraintOp op, const Value& value) {
  const Family family = FamilyOf(*column.type());
  switch (family) {
    case Family::kSignedInteger:
      return IntegerComparison(column, op, value);
    case Family::kFloat64:
    case Family::kFloat32:
      return FloatComparison(column, family, op, value);
    case Family::kBool: {
      const auto* i = std::get_if<int64_t>(&value);
      if (i == nullptr || (*i != 0 && *i != 1)) return std::nullopt;
      if (op != ConstraintOp::kEq && op != ConstraintOp::kNe) return std::nullopt;
      return fmt::format("{} {} {}", QuoteColumn(column.name()), Symbol(op),
                         *i != 0 ? "TRUE" : "FALSE");
    }
    case Family::kString: {
      const auto* text = std::get_if<std::string>(&value);
      if (text == nullptr) return std::nullopt;
      return fmt::format("{} {} {}", QuoteColumn(column.name()), Symbol(op),
                         expr::Scalar::String(*text).ToString());
    }
    case Family::kBinary: {
      const auto* blob = std::get_if<Blob>(&value);
      if (blob == nullptr) return std::nullopt;
      return fmt::format("{} {} {}", QuoteColumn(column.name()), Symbol(op),
                         expr::Scalar::String(blob->bytes).ToString());
    }
    case Family::kTimestamp:
      return TimestampComparison(column, op, value);
    case Family::kUInt64:
    case Family::kOther:
      return std::nullopt;
  }
  return std::nullopt;
}

// The strata LIKE pattern matching what SQLite's LIKE `pattern` matches, when one exists.
std::optional<std::string> LikePattern(std::string_view pattern) {
  std::string out;
  for (char c : pattern) {
    // SQLite folds the case of ASCII letters; strata does not.
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return std::nullopt;
    if (c == '\\') out += '\\';  // a plain character in SQLite, strata's escape
    out += c;
  }
  return out;
}

// The strata LIKE pattern matching what SQLite's GLOB `pattern` matches, when one exists.
std::optional<std::string> GlobPattern(std::string_view pattern) {
  std::string out;
  for (char c : pattern) {
    switch (c) {
      case '[':
        return std::nullopt;  // character classes have no LIKE form
      case '*':
        out += '%';
        break;
      case '?':
        out += '_';
        break;
      case '%':
      case '_':
      case '\\':
        out += '\\';
        out += c;
        break;
      default:
        out += c;
    }
  }
  return out;
}

// The literal that `column IN (..., value, ...)` compares with, for an IN list.
std::optional<std::string> EqualityLiteral(const Field& column, const Value& value) {
  // The term for `column = value` is `<name> = <literal>`: reuse its literal.
  std::optional<std::string> term = Comparison(column, ConstraintOp::kEq, value);
  if (!term) return std::nullopt;
  const std::string prefix = QuoteColumn(column.name()) + " = ";
  if (term->compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  return term->substr(prefix.size());
}

// IN lists longer than this are left to SQLite (a filter text of that size gains little).
constexpr size_t kMaxPushedInValues = 4096;

}  // namespace

bool HasOperand(ConstraintOp op) {
  return op != ConstraintOp::kIsNull && op != ConstraintOp::kIsNotNull;
}

std::string_view ConstraintOpName(ConstraintOp op) {
  switch (op) {
    case ConstraintOp::kIsNull:
      return "IS NULL";
    case ConstraintOp::kIsNotNull:
      return "IS NOT NULL";
    case ConstraintOp::kLike:
      return "LIKE";
    case ConstraintOp::kGlob:
      return "GLOB";
    case ConstraintOp::kIn:
      return "IN";
    default:
      return Symbol(op);
  }
}

bool MayPush(const Field& column, ConstraintOp op) {
  const Family family = FamilyOf(*column.type());
  switch (op) {
    case ConstraintOp::kIsNull:
      // NaN reads as NULL in SQLite and as a number in strata.
      return family != Family::kFloat32 && family != Family::kFloat64;
    case ConstraintOp::kIsNotNull:
      return true;
    case ConstraintOp::kLike:
    case ConstraintOp::kGlob:
      return family == Family::kString;
    case ConstraintOp::kNe:
      return family != Family::kFloat32 && family != Family::kUInt64 && family != Family::kOther;
    default:
      return family != Family::kUInt64 && family != Family::kOther;
  }
}

std::optional<PushedTerm> PushTerm(const Field& column, ConstraintOp op, const Value& value) {
  if (!MayPush(column, op) || op == ConstraintOp::kIn) return std::nullopt;
  const std::string name = QuoteColumn(column.name());
  if (op == ConstraintOp::kIsNull) return PushedTerm{.text = name + " IS NULL"};
  if (op == ConstraintOp::kIsNotNull) return PushedTerm{.text = name + " IS NOT NULL"};
  // A comparison, LIKE or GLOB with NULL is never TRUE.
  if (std::holds_alternative<std::monostate>(value)) return PushedTerm{.never_true = true};
  if (IsComparison(op)) {
    std::optional<std::string> term = Comparison(column, op, value);
    if (!term) return std::nullopt;
    return PushedTerm{.text = *std::move(term)};
  }
  const auto* pattern = std::get_if<std::string>(&value);
  if (pattern == nullptr) return std::nullopt;
  std::optional<std::string> like =
      op == ConstraintOp::kLike ? LikePattern(*pattern) : GlobPattern(*pattern);
  if (!like) return std::nullopt;
  return PushedTerm{.text =
                        fmt::format("{} LIKE {}", name, expr::Scalar::String(*like).ToString())};
}

std::optional<PushedTerm> PushIn(const Field& column, const std::vector<Value>& values) {
  if (!MayPush(column, ConstraintOp::kEq) || values.size() > kMaxPushedInValues) {
    return std::nullopt;
  }
  std::string list;
  for (const Value& value : values) {
    // A NULL in the list makes no row TRUE that the other values do not.
    if (std::holds_alternative<std::monostate>(value)) continue;
    std::optional<std::string> literal = EqualityLiteral(column, value);
    if (!literal) return std::nullopt;
    if (!list.empty()) list += ", ";
    list += *literal;
  }
  if (list.empty()) return PushedTerm{.never_true = true};
  return PushedTerm{.text = fmt::format("{} IN ({})", QuoteColumn(column.name()), list)};
}

std::optional<expr::Scalar> KeyForLookup(const Field& key_column, const Value& value) {
  const DataType& type = *key_column.type();
  if (type.is_string()) {
    const auto* text = std::get_if<std::string>(&value);
    if (text == nullptr) return std::nullopt;
    return expr::Scalar::String(*text);
  }
  if (type.id() == TypeId::kTimestamp) {
    const auto* text = std::get_if<std::string>(&value);
    if (text == nullptr) return std::nullopt;
    std::optional<int64_t> micros = CanonicalTimestamp(*text);
    if (!micros) return std::nullopt;
    return expr::Scalar::Timestamp(*micros);
  }
  if (FamilyOf(type) != Family::kSignedInteger) return std::nullopt;
  int64_t key = 0;
  if (const auto* i = std::get_if<int64_t>(&value)) {
    key = *i;
  } else if (const auto* d = std::get_if<double>(&value)) {
    // SQLite finds 5 = 5.0; the key is 5. Non-integral doubles match no integer key.
    if (!std::isfinite(*d) || std::trunc(*d) != *d || *d < -9223372036854775808.0 ||
        *d >= 9223372036854775808.0) {
      return std::nullopt;
    }
    key = static_cast<int64_t>(*d);
  } else {
    return std::nullopt;
  }
  const auto [min, max] = IntegerRange(type.id());
  if (key < min || key > max) return std::nullopt;
  return expr::Scalar::Int64(key);
}

std::string QuoteColumn(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

}  // namespace strata::sql
