// Scalar: literal and statistic values, their SQL text and their cross-kind ordering.
#include <charconv>
#include <cmath>
#include <string>

#include "expr/numeric.h"
#include "strata/expr.h"
#include "util/text_codec.h"

namespace strata::expr {

Scalar Scalar::Bool(bool value) {
  Scalar s;
  s.kind_ = Kind::kBool;
  s.int_ = value ? 1 : 0;
  return s;
}

Scalar Scalar::Int64(int64_t value) {
  Scalar s;
  s.kind_ = Kind::kInt64;
  s.int_ = value;
  return s;
}

Scalar Scalar::UInt64(uint64_t value) {
  Scalar s;
  s.kind_ = Kind::kUInt64;
  s.int_ = static_cast<int64_t>(value);
  return s;
}

Scalar Scalar::Double(double value) {
  Scalar s;
  s.kind_ = Kind::kDouble;
  s.double_ = value;
  return s;
}

Scalar Scalar::String(std::string value) {
  Scalar s;
  s.kind_ = Kind::kString;
  s.string_ = std::move(value);
  return s;
}

Scalar Scalar::Timestamp(int64_t micros) {
  Scalar s;
  s.kind_ = Kind::kTimestamp;
  s.int_ = micros;
  return s;
}

namespace {

std::string QuoteString(std::string_view text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += '\'';
    out += c;
  }
  out += '\'';
  return out;
}

std::string DoubleText(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  std::string text(buffer, end);
  // Keep it a float literal when read back: "1" -> "1.0".
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

}  // namespace

std::string Scalar::ToString() const {
  switch (kind_) {
    case Kind::kNull:
      return "NULL";
    case Kind::kBool:
      return int_ != 0 ? "TRUE" : "FALSE";
    case Kind::kInt64:
      return std::to_string(int_);
    case Kind::kUInt64:
      return std::to_string(static_cast<uint64_t>(int_));
    case Kind::kDouble:
      return DoubleText(double_);
    case Kind::kString:
      return QuoteString(string_);
    case Kind::kTimestamp:
      return "TIMESTAMP '" + FormatTimestampMicros(int_) + "'";
  }
  return "?";
}

bool operator==(const Scalar& a, const Scalar& b) {
  if (a.kind_ != b.kind_) return false;
  switch (a.kind_) {
    case Scalar::Kind::kNull:
      return true;
    case Scalar::Kind::kDouble:
      return internal::Cmp3(a.double_, b.double_) == 0;
    case Scalar::Kind::kString:
      return a.string_ == b.string_;
    default:
      return a.int_ == b.int_;
  }
}

std::optional<int> CompareScalars(const Scalar& a, const Scalar& b) {
  using Kind = Scalar::Kind;
  using internal::Cmp3;
  const auto numeric = [](Kind k) {
    return k == Kind::kInt64 || k == Kind::kUInt64 || k == Kind::kDouble;
  };
  const auto integer = [](Kind k) { return k == Kind::kInt64 || k == Kind::kUInt64; };
  Kind ka = a.kind();
  Kind kb = b.kind();
  if (ka == Kind::kNull || kb == Kind::kNull) return std::nullopt;
  // Timestamps compare with timestamps and with integers (microseconds).
  if (ka == Kind::kTimestamp && (kb == Kind::kTimestamp || integer(kb))) ka = Kind::kInt64;
  if (kb == Kind::kTimestamp && (ka == Kind::kInt64 || integer(ka))) kb = Kind::kInt64;
  if (numeric(ka) && numeric(kb)) {
    auto with = [&](auto x) -> int {
      switch (kb) {
        case Kind::kInt64:
          return Cmp3(x, b.int64_value());
        case Kind::kUInt64:
          return Cmp3(x, b.uint64_value());
        default:
          return Cmp3(x, b.double_value());
      }
    };
    switch (ka) {
      case Kind::kInt64:
        return with(a.int64_value());
      case Kind::kUInt64:
        return with(a.uint64_value());
      default:
        return with(a.double_value());
    }
  }
  if (ka != kb) return std::nullopt;
  if (ka == Kind::kString) {
    const int c = a.string_value().compare(b.string_value());
    return (c > 0) - (c < 0);
  }
  if (ka == Kind::kBool) return Cmp3(int64_t{a.bool_value()}, int64_t{b.bool_value()});
  return std::nullopt;
}

std::string_view CompareOpSymbol(CompareOp op) {
  switch (op) {
    case CompareOp::kEq:
      return "=";
    case CompareOp::kNe:
      return "!=";
    case CompareOp::kLt:
      return "<";
    case CompareOp::kLe:
      return "<=";
    case CompareOp::kGt:
      return ">";
    case CompareOp::kGe:
      return ">=";
  }
  return "?";
}

std::string_view PruneResultName(PruneResult result) {
  switch (result) {
    case PruneResult::kNone:
      return "none";
    case PruneResult::kMaybe:
      return "maybe";
    case PruneResult::kAll:
      return "all";
  }
  return "?";
}

}  // namespace strata::expr
