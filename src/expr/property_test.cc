// Property tests with a seeded generator: random predicates over random (sliced) batches,
// evaluated vectorised and by a row-at-a-time reference interpreter written here from the
// SQL rules; pruning soundness against the real results; key extraction soundness; and the
// parser round trip of every generated predicate.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "strata/builder.h"
#include "strata/expr.h"
#include "support/temp_dir.h"
#include "util/text_codec.h"

namespace strata::expr {
namespace {

// ---------------------------------------------------------------------------------------------
// The reference interpreter: one row at a time, straight from the definitions.

enum class Tri { kFalse, kTrue, kNull };

Tri Not(Tri t) {
  return t == Tri::kNull ? Tri::kNull : (t == Tri::kTrue ? Tri::kFalse : Tri::kTrue);
}
Tri FromBool(bool b) { return b ? Tri::kTrue : Tri::kFalse; }

struct Value {
  enum class Kind { kNull, kBool, kNumber, kString, kTimestamp, kList } kind = Kind::kNull;
  bool boolean = false;
  long double number = 0;  // exact for every int64, uint64 and double
  bool nan = false;
  std::string string;
  int64_t micros = 0;
  std::vector<Value> list;
};

Value Number(long double v) {
  Value out;
  out.kind = Value::Kind::kNumber;
  out.number = v;
  out.nan = std::isnan(v);
  return out;
}

Value ValueAt(const Array& a, int64_t i) {
  Value v;
  if (a.IsNull(i)) return v;
  switch (a.type_id()) {
    case TypeId::kBool:
      v.kind = Value::Kind::kBool;
      v.boolean = a.BoolValue(i);
      return v;
    case TypeId::kInt8:
      return Number(a.Value<int8_t>(i));
    case TypeId::kInt16:
      return Number(a.Value<int16_t>(i));
    case TypeId::kInt32:
      return Number(a.Value<int32_t>(i));
    case TypeId::kInt64:
      return Number(a.Value<int64_t>(i));
    case TypeId::kUInt16:
      return Number(a.Value<uint16_t>(i));
    case TypeId::kUInt64:
      return Number(a.Value<uint64_t>(i));
    case TypeId::kFloat32:
    case TypeId::kFloat64: {
      const double d = a.type_id() == TypeId::kFloat32 ? a.Value<float>(i) : a.Value<double>(i);
      return Number(d);
    }
    case TypeId::kUtf8:
    case TypeId::kLargeUtf8:
    case TypeId::kBinary:
      v.kind = Value::Kind::kString;
      v.string = std::string(a.StringValue(i));
      return v;
    case TypeId::kTimestamp:
      v.kind = Value::Kind::kTimestamp;
      v.micros = a.Value<int64_t>(i);
      return v;
    case TypeId::kDictionary:
      return ValueAt(a.dictionary(), a.DictionaryIndex(i));
    case TypeId::kList:
    case TypeId::kLargeList: {
      v.kind = Value::Kind::kList;
      auto [begin, end] = a.ValueRange(i);
      for (int64_t k = begin; k < end; ++k) v.list.push_back(ValueAt(a.values_array(), k));
      return v;
    }
    case TypeId::kStruct:
      v.kind = Value::Kind::kList;  // only IS NULL reads a whole struct
      return v;
    default:
      ADD_FAILURE() << "reference: unexpected type " << a.type()->ToString();
      return v;
  }
}

Value ColumnValue(const RecordBatch& batch, const std::vector<std::string>& path, int64_t row) {
  Array a = batch.GetColumnByName(path[0]);
  for (size_t j = 1; j < path.size(); ++j) {
    if (a.IsNull(row)) return Value();
    const auto& fields = a.type()->fields();
    int k = 0;
    while (fields[k]->name() != path[j]) ++k;
    a = a.field(k);
  }
  return ValueAt(a, row);
}

Value LiteralValue(const Scalar& s) {
  Value v;
  switch (s.kind()) {
    case Scalar::Kind::kNull:
      return v;
    case Scalar::Kind::kBool:
      v.kind = Value::Kind::kBool;
      v.boolean = s.bool_value();
      return v;
    case Scalar::Kind::kInt64:
      return Number(s.int64_value());
    case Scalar::Kind::kUInt64:
      return Number(s.uint64_value());
    case Scalar::Kind::kDouble:
      return Number(s.double_value());
    case Scalar::Kind::kString:
      v.kind = Value::Kind::kString;
      v.string = s.string_value();
      return v;
    case Scalar::Kind::kTimestamp:
      v.kind = Value::Kind::kTimestamp;
      v.micros = s.timestamp_micros();
      return v;
  }
  return v;
}

Value OperandValue(const Expr& e, const RecordBatch& batch, int64_t row) {
  if (e.kind() == Expr::Kind::kLiteral) return LiteralValue(e.literal());
  return ColumnValue(batch, e.column_path(), row);
}

// Three-way comparison of two non-null values; NaN is above every number.
int CompareValues(Value a, Value b) {
  using Kind = Value::Kind;
  // A string meets a timestamp: it is read as one.
  if (a.kind == Kind::kTimestamp && b.kind == Kind::kString) {
    b.kind = Kind::kTimestamp;
    b.micros = *ParseTimestampMicros(b.string);
  }
  if (b.kind == Kind::kTimestamp && a.kind == Kind::kString) {
    a.kind = Kind::kTimestamp;
    a.micros = *ParseTimestampMicros(a.string);
  }
  switch (a.kind) {
    case Kind::kNumber:
      if (a.nan || b.nan) return a.nan == b.nan ? 0 : (a.nan ? 1 : -1);
      return (a.number > b.number) - (a.number < b.number);
    case Kind::kString:
      return a.string < b.string ? -1 : (a.string == b.string ? 0 : 1);
    case Kind::kBool:
      return static_cast<int>(a.boolean) - static_cast<int>(b.boolean);
    case Kind::kTimestamp:
      return (a.micros > b.micros) - (a.micros < b.micros);
    default:
      ADD_FAILURE() << "reference: cannot compare";
      return 0;
  }
}

bool Holds(CompareOp op, int c) {
  switch (op) {
    case CompareOp::kEq:
      return c == 0;
    case CompareOp::kNe:
      return c != 0;
    case CompareOp::kLt:
      return c < 0;
    case CompareOp::kLe:
      return c <= 0;
    case CompareOp::kGt:
      return c > 0;
    case CompareOp::kGe:
      return c >= 0;
  }
  return false;
}

size_t CharLen(std::string_view s, size_t i) {
  size_t n = 1;
  while (n < 4 && i + n < s.size() && (static_cast<unsigned char>(s[i + n]) & 0xC0) == 0x80) ++n;
  return n;
}

// LIKE by trying every split (characters as in like.h).
bool LikeMatch(std::string_view text, std::string_view pattern) {
  if (pattern.empty()) return text.empty();
  if (pattern[0] == '%') {
    for (size_t i = 0;; i += CharLen(text, i)) {
      if (LikeMatch(text.substr(i), pattern.substr(1))) return true;
      if (i >= text.size()) return false;
    }
  }
  if (pattern[0] == '_') {
    return !text.empty() && LikeMatch(text.substr(CharLen(text, 0)), pattern.substr(1));
  }
  const size_t skip = pattern[0] == '\\' ? 2 : 1;
  return !text.empty() && text[0] == pattern[skip - 1] &&
         LikeMatch(text.substr(1), pattern.substr(skip));
}

Tri Reference(const Expr& e, const RecordBatch& batch, int64_t row) {
  switch (e.kind()) {
    case Expr::Kind::kLiteral:
      return e.literal().is_null() ? Tri::kNull : FromBool(e.literal().bool_value());
    case Expr::Kind::kColumn: {
      const Value v = ColumnValue(batch, e.column_path(), row);
      return v.kind == Value::Kind::kNull ? Tri::kNull : FromBool(v.boolean);
    }
    case Expr::Kind::kCompare: {
      const Value a = OperandValue(e.operands()[0], batch, row);
      const Value b = OperandValue(e.operands()[1], batch, row);
      if (a.kind == Value::Kind::kNull || b.kind == Value::Kind::kNull) return Tri::kNull;
      return FromBool(Holds(e.op(), CompareValues(a, b)));
    }
    case Expr::Kind::kIn: {
      const Value v = OperandValue(e.operands()[0], batch, row);
      Tri out = Tri::kFalse;
      if (v.kind == Value::Kind::kNull) {
        out = Tri::kNull;
      } else {
        for (const Scalar& s : e.values()) {
          if (s.is_null()) {
            out = Tri::kNull;
          } else if (CompareValues(v, LiteralValue(s)) == 0) {
            out = Tri::kTrue;
            break;
          }
        }
      }
      return e.negated() ? Not(out) : out;
    }
    case Expr::Kind::kIsNull: {
      const bool is_null = OperandValue(e.operands()[0], batch, row).kind == Value::Kind::kNull;
      return FromBool(is_null != e.negated());
    }
    case Expr::Kind::kLike: {
      const Value v = OperandValue(e.operands()[0], batch, row);
      if (v.kind == Value::Kind::kNull) return Tri::kNull;
      const Tri out = FromBool(LikeMatch(v.string, e.pattern()));
      return e.negated() ? Not(out) : out;
    }
    case Expr::Kind::kArrayHas: {
      const Value list = OperandValue(e.operands()[0], batch, row);
      const Value x = OperandValue(e.operands()[1], batch, row);
      if (list.kind == Value::Kind::kNull || x.kind == Value::Kind::kNull) return Tri::kNull;
      for (const Value& element : list.list) {
        if (element.kind != Value::Kind::kNull && CompareValues(element, x) == 0) {
          return Tri::kTrue;
        }
      }
      return Tri::kFalse;
    }
    case Expr::Kind::kAnd: {
      Tri out = Tri::kTrue;
      for (const Expr& operand : e.operands()) {
        const Tri t = Reference(operand, batch, row);
        if (t == Tri::kFalse) return Tri::kFalse;
        if (t == Tri::kNull) out = Tri::kNull;
      }
      return out;
    }
    case Expr::Kind::kOr: {
      Tri out = Tri::kFalse;
      for (const Expr& operand : e.operands()) {
        const Tri t = Reference(operand, batch, row);
        if (t == Tri::kTrue) return Tri::kTrue;
        if (t == Tri::kNull) out = Tri::kNull;
      }
      return out;
    }
    case Expr::Kind::kNot:
      return Not(Reference(e.operands()[0], batch, row));
  }
  return Tri::kNull;
}

// ---------------------------------------------------------------------------------------------
// Random batches.

SchemaPtr RandomSchema() {
  return schema({
      field("b", boolean()),                                            // 0
      field("i8", int8()),                                              // 1
      field("i32", int32()),                                            // 2
      field("i64", int64()),                                            // 3
      field("u16", uint16()),                                           // 4
      field("u64", uint64()),                                           // 5
      field("f32", float32()),                                          // 6
      field("f64", float64()),                                          // 7
      field("s", utf8()),                                               // 8
      field("ls", large_utf8()),                                        // 9
      field("d", dictionary(int16(), utf8())),                          // 10
      field("bin", binary()),                                           // 11
      field("ts", timestamp_us()),                                      // 12
      field("tags", list(utf8())),                                      // 13
      field("nums", large_list(int32())),                               // 14
      field("st", struct_({field("x", int32()), field("y", utf8())})),  // 15
  });
}

const std::vector<std::string>& Strings() {
  static const std::vector<std::string> kStrings = {"",
                                                    "a",
                                                    "ab",
                                                    "abc",
                                                    "b",
                                                    "ba",
                                                    "é",
                                                    "a%b",
                                                    "a_b",
                                                    "it's",
                                                    std::string(70, 'a'),
                                                    "ab" + std::string(70, 'z'),
                                                    "a" + std::string(65, 'b')};
  return kStrings;
}
const std::vector<std::string>& Bytes() {
  static const std::vector<std::string> kBytes = {
      "", "a", "ab", "\xff", "a\xff", std::string(70, '\xff'), "ab" + std::string(70, '\xff'), "b"};
  return kBytes;
}
const std::vector<int64_t>& Micros() {
  static const std::vector<int64_t> kMicros = {-1, 0, 1, 1714521600000000, 1714521600000001};
  return kMicros;
}
const std::vector<double>& Doubles() {
  static const std::vector<double> kDoubles = {-1.5,
                                               -1,
                                               0,
                                               -0.0,
                                               0.5,
                                               1,
                                               2,
                                               3,
                                               std::numeric_limits<double>::quiet_NaN(),
                                               std::numeric_limits<double>::infinity(),
                                               -std::numeric_limits<double>::infinity()};
  return kDoubles;
}

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  uint64_t Next(uint64_t n) { return rng_() % n; }
  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Next(v.size())];
  }

  int64_t SmallInt() { return static_cast<int64_t>(Next(9)) - 4; }

  RecordBatch Batch(const SchemaPtr& schema, int64_t rows) {
    auto builder = *RecordBatchBuilder::Make(schema);
    const double null_rate = Pick(std::vector<double>{0, 0.1, 0.5, 1.0});
    auto null = [&] { return Chance(null_rate); };
    for (int64_t r = 0; r < rows; ++r) {
      for (int c = 0; c < schema->num_fields(); ++c) {
        ArrayBuilder* b = builder->builder(c);
        if (null()) {
          b->AppendNull();
          continue;
        }
        switch (c) {
          case 0:
            static_cast<BooleanBuilder*>(b)->Append(Chance(0.5));
            break;
          case 1:
            static_cast<Int8Builder*>(b)->Append(static_cast<int8_t>(
                Chance(0.1) ? Pick(std::vector<int64_t>{-128, 127}) : SmallInt()));
            break;
          case 2:
            static_cast<Int32Builder*>(b)->Append(static_cast<int32_t>(SmallInt()));
            break;
          case 3:
            static_cast<Int64Builder*>(b)->Append(
                Chance(0.1) ? Pick(std::vector<int64_t>{INT64_MIN, INT64_MAX}) : SmallInt());
            break;
          case 4:
            static_cast<UInt16Builder*>(b)->Append(
                static_cast<uint16_t>(Chance(0.1) ? 65535 : Next(5)));
            break;
          case 5:
            static_cast<UInt64Builder*>(b)->Append(
                Chance(0.2) ? Pick(std::vector<uint64_t>{uint64_t{1} << 63, UINT64_MAX}) : Next(5));
            break;
          case 6:
            static_cast<Float32Builder*>(b)->Append(static_cast<float>(Pick(Doubles())));
            break;
          case 7:
            static_cast<Float64Builder*>(b)->Append(Pick(Doubles()));
            break;
          case 8:
            EXPECT_TRUE(static_cast<BinaryBuilder*>(b)->Append(Pick(Strings())).ok());
            break;
          case 9:
            EXPECT_TRUE(static_cast<LargeBinaryBuilder*>(b)->Append(Pick(Strings())).ok());
            break;
          case 10:
            EXPECT_TRUE(static_cast<DictionaryBuilder*>(b)->Append(Pick(Strings())).ok());
            break;
          case 11:
            EXPECT_TRUE(static_cast<BinaryBuilder*>(b)->Append(Pick(Bytes())).ok());
            break;
          case 12:
            static_cast<TimestampBuilder*>(b)->Append(Pick(Micros()));
            break;
          case 13: {
            auto* list = static_cast<ListBuilder*>(b);
            list->Append();
            auto* values = static_cast<BinaryBuilder*>(list->value_builder());
            for (uint64_t k = Next(4); k > 0; --k) {
              if (Chance(0.2)) {
                values->AppendNull();
              } else {
                EXPECT_TRUE(values->Append(Pick(Strings())).ok());
              }
            }
            break;
          }
          case 14: {
            auto* list = static_cast<LargeListBuilder*>(b);
            list->Append();
            auto* values = static_cast<Int32Builder*>(list->value_builder());
            for (uint64_t k = Next(4); k > 0; --k) {
              if (Chance(0.2)) {
                values->AppendNull();
              } else {
                values->Append(static_cast<int32_t>(SmallInt() / 2));
              }
            }
            break;
          }
          case 15: {
            auto* st = static_cast<StructBuilder*>(b);
            st->Append();
            auto* x = static_cast<Int32Builder*>(st->field_builder(0));
            auto* y = static_cast<BinaryBuilder*>(st->field_builder(1));
            if (Chance(0.2)) {
              x->AppendNull();
            } else {
              x->Append(static_cast<int32_t>(SmallInt()));
            }
            if (Chance(0.2)) {
              y->AppendNull();
            } else {
              EXPECT_TRUE(y->Append(Pick(Strings())).ok());
            }
            break;
          }
        }
      }
    }
    Result<RecordBatch> batch = builder->Finish();
    EXPECT_TRUE(batch.ok()) << batch.status();
    return *batch;
  }

  // ---- random predicates, always bindable against RandomSchema()

  // A literal that binds against a column of `type`.
  Scalar LiteralFor(const DataType& type) {
    switch (type.id()) {
      case TypeId::kBool:
        return Scalar::Bool(Chance(0.5));
      case TypeId::kInt8:
      case TypeId::kInt32:
      case TypeId::kInt64:
        if (Chance(0.25)) return Scalar::Double(Pick(std::vector<double>{1.5, -0.5, 2.0, -3.5}));
        if (type.id() == TypeId::kInt8 && Chance(0.1)) return Scalar::Int64(-128);
        if (type.id() == TypeId::kInt64 && Chance(0.1)) return Scalar::Int64(INT64_MAX);
        return Scalar::Int64(SmallInt());
      case TypeId::kUInt16:
        if (Chance(0.2)) return Scalar::Double(Pick(std::vector<double>{0.5, 1.5, 3.0}));
        return Scalar::Int64(Chance(0.1) ? 65535 : static_cast<int64_t>(Next(5)));
      case TypeId::kUInt64:
        if (Chance(0.2)) return Scalar::UInt64(Chance(0.5) ? UINT64_MAX : uint64_t{1} << 63);
        if (Chance(0.1)) return Scalar::Double(Pick(std::vector<double>{0.5, 1e19}));
        return Scalar::Int64(static_cast<int64_t>(Next(5)));
      case TypeId::kFloat32:
      case TypeId::kFloat64: {
        if (Chance(0.3)) return Scalar::Int64(SmallInt());
        double d = Pick(Doubles());
        while (!std::isfinite(d)) d = Pick(Doubles());  // no NaN / infinity literal syntax
        return Scalar::Double(d);
      }
      case TypeId::kUtf8:
      case TypeId::kLargeUtf8:
      case TypeId::kDictionary:
        return Scalar::String(Pick(Strings()));
      case TypeId::kBinary:
        return Scalar::String(Pick(Bytes()));
      case TypeId::kTimestamp: {
        const int64_t micros = Pick(Micros());
        if (Chance(0.5)) return Scalar::String(FormatTimestampMicros(micros));
        return Scalar::Timestamp(micros);
      }
      default:
        ADD_FAILURE() << "no literal for " << type.ToString();
        return Scalar::Null();
    }
  }

  CompareOp Op() { return static_cast<CompareOp>(Next(6)); }

  // A comparable column: its path and type.
  std::pair<std::vector<std::string>, DataTypePtr> ScalarColumn(const Schema& schema) {
    static const std::vector<std::vector<std::string>> kPaths = {
        {"b"}, {"i8"}, {"i32"}, {"i64"}, {"u16"}, {"u64"},     {"f32"},    {"f64"},
        {"s"}, {"ls"}, {"d"},   {"bin"}, {"ts"},  {"st", "x"}, {"st", "y"}};
    const std::vector<std::string>& path = Pick(kPaths);
    DataTypePtr type = schema.GetFieldByName(path[0])->type();
    if (path.size() > 1) type = type->fields()[path[1] == "x" ? 0 : 1]->type();
    return {path, type};
  }

  std::string Pattern() {
    static const std::vector<std::string> kPieces = {"a",   "b",   "é",  "%", "_",
                                                     "\\%", "\\_", "ab", "'", "\xff"};
    std::string p;
    for (uint64_t n = Next(5); n > 0; --n) p += Pick(kPieces);
    return p;
  }

  Expr Leaf(const Schema& schema) {
    auto literal = [](Scalar s) { return Expr::Literal(std::move(s)); };
    switch (Next(10)) {
      case 0:
      case 1: {  // column op literal, either side
        auto [path, type] = ScalarColumn(schema);
        Expr column = Expr::ColumnPath(path);
        Expr value = Chance(0.05) ? literal(Scalar::Null()) : literal(LiteralFor(*type));
        return Chance(0.3) ? Expr::Compare(Op(), value, column)
                           : Expr::Compare(Op(), column, value);
      }
      case 2: {  // column op column
        static const std::vector<std::vector<std::vector<std::string>>> kGroups = {
            {{"i8"}, {"i32"}, {"i64"}, {"u16"}, {"u64"}, {"f32"}, {"f64"}, {"st", "x"}},
            {{"s"}, {"ls"}, {"d"}, {"st", "y"}},
            {{"b"}},
            {{"ts"}},
            {{"bin"}}};
        const auto& group = Pick(kGroups);
        return Expr::Compare(Op(), Expr::ColumnPath(Pick(group)), Expr::ColumnPath(Pick(group)));
      }
      case 3: {  // IN
        auto [path, type] = ScalarColumn(schema);
        std::vector<Scalar> values;
        for (uint64_t n = 1 + Next(Chance(0.2) ? 20 : 4); n > 0; --n) {
          values.push_back(Chance(0.1) ? Scalar::Null() : LiteralFor(*type));
        }
        return Expr::In(Expr::ColumnPath(path), std::move(values), Chance(0.3));
      }
      case 4: {  // IS [NOT] NULL, any column
        static const std::vector<std::vector<std::string>> kPaths = {
            {"b"}, {"i64"}, {"f64"}, {"d"}, {"tags"}, {"st"}, {"st", "x"}, {"nums"}, {"ts"}};
        return Expr::IsNull(Expr::ColumnPath(Pick(kPaths)), Chance(0.5));
      }
      case 5: {  // LIKE
        static const std::vector<std::vector<std::string>> kPaths = {
            {"s"}, {"ls"}, {"d"}, {"bin"}, {"st", "y"}};
        std::string pattern = Pattern();
        if (!pattern.empty() && pattern.back() == '\\') pattern.pop_back();
        return Expr::Like(Expr::ColumnPath(Pick(kPaths)), pattern, Chance(0.3));
      }
      case 6:  // array_has
        if (Chance(0.5)) {
          return Expr::ArrayHas(Expr::Column("tags"), literal(Scalar::String(Pick(Strings()))));
        }
        return Expr::ArrayHas(
            Expr::Column("nums"),
            literal(Chance(0.2) ? Scalar::Double(0.5) : Scalar::Int64(SmallInt() / 2)));
      case 7:
        return Expr::Column("b");
      case 8: {  // constants
        const uint64_t k = Next(3);
        return literal(k == 0 ? Scalar::Null() : Scalar::Bool(k == 1));
      }
      default: {  // BETWEEN, as the parser builds it
        auto [path, type] = ScalarColumn(schema);
        Expr column = Expr::ColumnPath(path);
        return Expr::And({Expr::Compare(CompareOp::kGe, column, literal(LiteralFor(*type))),
                          Expr::Compare(CompareOp::kLe, column, literal(LiteralFor(*type)))});
      }
    }
  }

  Expr Predicate(const Schema& schema, int depth) {
    if (depth == 0 || Chance(0.35)) return Leaf(schema);
    switch (Next(3)) {
      case 0:
        return Expr::Not(Predicate(schema, depth - 1));
      default: {
        std::vector<Expr> operands;
        for (uint64_t n = 2 + Next(2); n > 0; --n) operands.push_back(Predicate(schema, depth - 1));
        return Next(2) == 0 ? Expr::And(std::move(operands)) : Expr::Or(std::move(operands));
      }
    }
  }

 private:
  std::mt19937_64 rng_;
};

char TriChar(Tri t) { return t == Tri::kTrue ? 'T' : (t == Tri::kFalse ? 'F' : 'N'); }

TEST(PropertyTest, VectorisedEvaluationMatchesTheReference) {
  const unsigned long long seed = strata::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  Generator gen(seed);
  const SchemaPtr schema = RandomSchema();
  int64_t checked_rows = 0;
  for (int round = 0; round < 150 && !HasFailure(); ++round) {
    const int64_t rows = gen.Pick(std::vector<int64_t>{0, 1, 3, 8, 64, 65, 130, 300});
    RecordBatch batch = gen.Batch(schema, rows);
    if (gen.Chance(0.5) && rows > 0) {
      const auto offset = static_cast<int64_t>(gen.Next(static_cast<uint64_t>(rows)));
      batch = batch.Slice(offset, static_cast<int64_t>(gen.Next(rows - offset + 1)));
    }
    for (int p = 0; p < 25 && !HasFailure(); ++p) {
      const Expr e = gen.Predicate(*schema, 3);
      SCOPED_TRACE(e.ToString());
      // The text reads back as the same tree.
      Result<Expr> reparsed = Parse(e.ToString());
      ASSERT_TRUE(reparsed.ok()) << reparsed.status();
      EXPECT_TRUE(reparsed->Equals(e)) << reparsed->ToString();
      Result<BoundExpr> bound = Bind(e, schema);
      ASSERT_TRUE(bound.ok()) << bound.status();
      Result<Array> result = Evaluate(*bound, batch);
      ASSERT_TRUE(result.ok()) << result.status();
      ASSERT_EQ(result->length(), batch.num_rows());
      std::string expected;
      std::string actual;
      for (int64_t r = 0; r < batch.num_rows(); ++r) {
        expected += TriChar(Reference(e, batch, r));
        actual += result->IsNull(r) ? 'N' : (result->BoolValue(r) ? 'T' : 'F');
      }
      ASSERT_EQ(actual, expected) << "bound as " << bound->ToString();
      checked_rows += batch.num_rows();
    }
  }
  EXPECT_GT(checked_rows, 10000);
}

TEST(PropertyTest, PruningAndKeyExtractionAreSound) {
  const unsigned long long seed = strata::testing::TestSeed();
  SCOPED_TRACE(::testing::Message() << "seed " << seed);
  Generator gen(seed ^ 0x9E3779B97F4A7C15ull);
  const SchemaPtr schema = RandomSchema();
  int none = 0;
  int all = 0;
  int keyed = 0;
  for (int round = 0; round < 400 && !HasFailure(); ++round) {
    // Small batches make kNone and kAll common, so both claims get tested.
    const int64_t rows = gen.Pick(std::vector<int64_t>{1, 1, 2, 3, 5, 20, 100});
    RecordBatch batch = gen.Batch(schema, rows + 2).Slice(1, rows);
    std::vector<std::optional<ColumnStatistics>> stats(schema->num_fields());
    for (int c = 0; c < schema->num_fields(); ++c) {
      if (gen.Chance(0.1)) continue;  // unknown
      Result<ColumnStatistics> s = ComputeStatistics(batch.column(c));
      ASSERT_TRUE(s.ok()) << s.status();
      stats[c] = *s;
    }
    const StatisticsLookup lookup = [&](int column) -> const ColumnStatistics* {
      return stats[column].has_value() ? &*stats[column] : nullptr;
    };
    for (int p = 0; p < 40 && !HasFailure(); ++p) {
      const Expr e = gen.Predicate(*schema, 3);
      SCOPED_TRACE(e.ToString());
      Result<BoundExpr> bound = Bind(e, schema);
      ASSERT_TRUE(bound.ok()) << bound.status();
      Result<std::vector<int64_t>> selected = Select(*bound, batch);
      ASSERT_TRUE(selected.ok()) << selected.status();
      const PruneResult verdict = CanMatch(*bound, lookup);
      if (verdict == PruneResult::kNone) {
        ++none;
        EXPECT_TRUE(selected->empty()) << "kNone but " << selected->size() << " rows match";
      } else if (verdict == PruneResult::kAll) {
        ++all;
        EXPECT_EQ(static_cast<int64_t>(selected->size()), batch.num_rows()) << "kAll";
      }
      // Every matching row's key is among the extracted values.
      const int key = 3;  // i64
      std::optional<std::vector<Scalar>> keys = ExtractKeyEqualities(*bound, key);
      if (keys.has_value()) {
        ++keyed;
        for (int64_t r : *selected) {
          const Array& column = batch.column(key);
          ASSERT_FALSE(column.IsNull(r));
          const Scalar value = Scalar::Int64(column.Value<int64_t>(r));
          EXPECT_NE(std::find(keys->begin(), keys->end(), value), keys->end())
              << "row " << r << " key " << value.ToString() << " not extracted";
        }
      }
    }
  }
  EXPECT_GT(none, 100);
  EXPECT_GT(all, 100);
  EXPECT_GT(keyed, 10);
}

}  // namespace
}  // namespace strata::expr
