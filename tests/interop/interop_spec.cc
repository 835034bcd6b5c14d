// The interop spec's schema and values (see README.md), and a row-by-row array comparison
// that reports where two arrays differ.
#include "interop/interop_spec.h"

#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string_view>

#include "strata/builder.h"

namespace strata::interop {
namespace {

constexpr std::string_view kSuffix[] = {"", "é", "日本語", "🙂"};
constexpr std::string_view kWords[] = {"red", "green", "blue", "ünïcødé", ""};

KeyValueMetadata Metadata(std::vector<std::pair<std::string, std::string>> entries) {
  return KeyValueMetadata(std::move(entries));
}

template <typename T>
T SignedRule(int64_t i) {
  switch (i % 8) {
    case 0:
      return std::numeric_limits<T>::min();
    case 1:
      return std::numeric_limits<T>::max();
    case 2:
      return 0;
    case 3:
      return -1;
    default:
      return static_cast<T>((7 * i) % 200 - 100);
  }
}

template <typename T>
T UnsignedRule(int64_t i) {
  switch (i % 8) {
    case 0:
      return 0;
    case 1:
      return std::numeric_limits<T>::max();
    case 2:
      return 1;
    case 3:
      return std::numeric_limits<T>::max() - 1;
    default:
      return static_cast<T>((7 * i) % 200);
  }
}

template <typename T>
T FloatRule(int64_t i) {
  switch (i % 8) {
    case 0:
      return std::numeric_limits<T>::infinity();
    case 1:
      return -std::numeric_limits<T>::infinity();
    case 2:
      return std::numeric_limits<T>::quiet_NaN();
    case 3:
      return std::numeric_limits<T>::max();
    default:
      return static_cast<T>(static_cast<double>(i - 10) / 3);
  }
}

std::string Bytes(int64_t n, const std::function<int64_t(int64_t)>& byte_at) {
  std::string out;
  for (int64_t j = 0; j < n; ++j) out.push_back(static_cast<char>(byte_at(j) % 256));
  return out;
}

// Appends the spec value of one column at row i (the column null rule is applied by the
// caller).
using AppendFn = std::function<Status(ArrayBuilder*, int64_t)>;

template <typename T>
AppendFn Numeric(T (*rule)(int64_t)) {
  return [rule](ArrayBuilder* b, int64_t i) {
    static_cast<NumericBuilder<T>*>(b)->Append(rule(i));
    return Status::OK();
  };
}

template <typename B>
AppendFn Text(std::function<std::string(int64_t)> text) {
  return [text](ArrayBuilder* b, int64_t i) { return static_cast<B*>(b)->Append(text(i)); };
}

Status AppendStruct(ArrayBuilder* builder, int64_t i) {
  auto* st = static_cast<StructBuilder*>(builder);
  st->Append();
  static_cast<Int32Builder*>(st->field_builder(0))->Append(static_cast<int32_t>(3 * i - 7));
  auto* b = static_cast<BinaryBuilder*>(st->field_builder(1));
  if (i % 4 == 1) {
    b->AppendNull();
  } else {
    STRATA_RETURN_IF_ERROR(b->Append(fmt::format("b{}", i)));
  }
  auto* c = static_cast<ListBuilder*>(st->field_builder(2));
  if (i % 5 == 2) {
    c->AppendNull();
    return Status::OK();
  }
  c->Append();
  auto* xy = static_cast<StructBuilder*>(c->value_builder());
  for (int64_t j = 0; j < i % 3; ++j) {
    if ((i + j) % 4 == 3) {
      xy->AppendNull();
      continue;
    }
    xy->Append();
    static_cast<Int64Builder*>(xy->field_builder(0))->Append(100 * i + j);
    static_cast<BooleanBuilder*>(xy->field_builder(1))->Append(j % 2 == 0);
  }
  return Status::OK();
}

struct Column {
  FieldPtr field;
  AppendFn append;
};

const std::vector<Column>& Columns() {
  static const auto* columns = new std::vector<Column>{
      {field("b", boolean()),
       [](ArrayBuilder* b, int64_t i) {
         static_cast<BooleanBuilder*>(b)->Append(i % 3 == 0);
         return Status::OK();
       }},
      {field("i8", int8()), Numeric<int8_t>(SignedRule<int8_t>)},
      {field("i16", int16()), Numeric<int16_t>(SignedRule<int16_t>)},
      {field("i32", int32(), /*nullable=*/false), Numeric<int32_t>(SignedRule<int32_t>)},
      {field("i64", int64()), Numeric<int64_t>(SignedRule<int64_t>)},
      {field("u8", uint8()), Numeric<uint8_t>(UnsignedRule<uint8_t>)},
      {field("u16", uint16()), Numeric<uint16_t>(UnsignedRule<uint16_t>)},
      {field("u32", uint32()), Numeric<uint32_t>(UnsignedRule<uint32_t>)},
      {field("u64", uint64()), Numeric<uint64_t>(UnsignedRule<uint64_t>)},
      {field("f32", float32()), Numeric<float>(FloatRule<float>)},
      {field("f64", float64()), Numeric<double>(FloatRule<double>)},
      {field("s", utf8(), true, Metadata({{"role", "label"}})), Text<BinaryBuilder>([](int64_t i) {
         return i % 11 == 5 ? std::string() : fmt::format("s{}{}", i, kSuffix[i % 4]);
       })},
      {field("ls", large_utf8()), Text<LargeBinaryBuilder>([](int64_t i) {
         return fmt::format("L{}{}", 3 * i, kSuffix[(i + 1) % 4]);
       })},
      {field("bin", binary()), Text<BinaryBuilder>([](int64_t i) {
         return Bytes(i % 6, [i](int64_t j) { return 31 * i + 17 * j; });
       })},
      {field("lbin", large_binary()), Text<LargeBinaryBuilder>([](int64_t i) {
         return Bytes(2 * (i % 4), [i](int64_t j) { return i + 101 * j; });
       })},
      {field("ts", timestamp_us()),
       [](ArrayBuilder* b, int64_t i) {
         static_cast<TimestampBuilder*>(b)->Append((i % 2 == 0 ? 1 : -1) *
                                                   (1700000000000000 + 1000003 * i));
         return Status::OK();
       }},
      {field("ts_tz", timestamp_us("America/New_York")),
       [](ArrayBuilder* b, int64_t i) {
         static_cast<TimestampBuilder*>(b)->Append(86400000000 * i + 123);
         return Status::OK();
       }},
      {field("emb", fixed_size_list(float32(), 4)),
       [](ArrayBuilder* b, int64_t i) {
         auto* list = static_cast<FixedSizeListBuilder*>(b);
         list->Append();
         auto* values = static_cast<Float32Builder*>(list->value_builder());
         for (int64_t j = 0; j < 4; ++j) {
           if ((i + j) % 13 == 0) {
             values->AppendNull();
           } else {
             values->Append(static_cast<float>(static_cast<double>(i) + 0.5 * j));
           }
         }
         return Status::OK();
       }},
      {field("li", list(int32())),
       [](ArrayBuilder* b, int64_t i) {
         auto* list = static_cast<ListBuilder*>(b);
         list->Append();
         auto* values = static_cast<Int32Builder*>(list->value_builder());
         for (int64_t j = 0; j < i % 4; ++j) {
           if ((i + j) % 5 == 4) {
             values->AppendNull();
           } else {
             values->Append(static_cast<int32_t>(10 * i + j));
           }
         }
         return Status::OK();
       }},
      {field("lls", large_list(utf8())),
       [](ArrayBuilder* b, int64_t i) {
         auto* list = static_cast<LargeListBuilder*>(b);
         list->Append();
         auto* values = static_cast<BinaryBuilder*>(list->value_builder());
         for (int64_t j = 0; j < i % 3; ++j) {
           STRATA_RETURN_IF_ERROR(values->Append(fmt::format("e{}_{}", i, j)));
         }
         return Status::OK();
       }},
      {field("st",
             struct_({field("a", int32(), /*nullable=*/false), field("b", utf8()),
                      field("c", list(struct_({field("x", int64()), field("y", boolean())})))})),
       AppendStruct},
      {field("dict", dictionary(int32(), utf8())),
       [](ArrayBuilder* b,
          int64_t i) { return static_cast<DictionaryBuilder*>(b)->Append(kWords[i % 5]); }},
      {field("dict8", dictionary(int8(), utf8(), /*ordered=*/true)),
       [](ArrayBuilder* b, int64_t i) {
         return static_cast<DictionaryBuilder*>(b)->Append(kWords[(2 * i) % 5]);
       }},
  };
  return *columns;
}

}  // namespace

const std::vector<Case>& Cases() {
  static const auto* cases = new std::vector<Case>{
      {"basic", 0, {17, 0, 40, 3}, "none", false},
      {"lz4", 100, {50, 21}, "lz4", false},
      {"zstd", 200, {64, 1}, "zstd", false},
      {"sliced", 5, {13, 0, 31}, "none", true},
      {"empty", 0, {}, "none", false},
      {"align8", 300, {9, 33}, "lz4", false, 8},
      {"large_lz4", 1000, {20000}, "lz4", false},
      {"large_zstd", 50000, {12000, 8000}, "zstd", false},
  };
  return *cases;
}

SchemaPtr SpecSchema() {
  static const SchemaPtr spec_schema = [] {
    std::vector<FieldPtr> fields;
    for (const Column& c : Columns()) fields.push_back(c.field);
    return schema(std::move(fields), Metadata({{"interop.spec", "1"}, {"note", "ünïcödé ✓"}}));
  }();
  return spec_schema;
}

Result<RecordBatch> BuildBatch(int64_t first, int64_t count) {
  STRATA_ASSIGN_OR_RETURN(auto builder, RecordBatchBuilder::Make(SpecSchema()));
  const std::vector<Column>& columns = Columns();
  for (int64_t i = first; i < first + count; ++i) {
    for (size_t k = 0; k < columns.size(); ++k) {
      ArrayBuilder* b = builder->builder(static_cast<int>(k));
      if (columns[k].field->nullable() && (i + static_cast<int64_t>(k)) % 7 == 0) {
        b->AppendNull();
      } else {
        STRATA_RETURN_IF_ERROR(columns[k].append(b, i));
      }
    }
  }
  return builder->Finish();
}

Result<std::vector<RecordBatch>> CaseBatches(const Case& c) {
  std::vector<RecordBatch> batches;
  if (!c.sliced) {
    int64_t first = c.first_row;
    for (int64_t n : c.batch_rows) {
      STRATA_ASSIGN_OR_RETURN(RecordBatch batch, BuildBatch(first, n));
      batches.push_back(std::move(batch));
      first += n;
    }
    return batches;
  }
  int64_t end = c.first_row;
  for (int64_t n : c.batch_rows) end += n;
  STRATA_ASSIGN_OR_RETURN(RecordBatch whole, BuildBatch(0, end + 7));
  int64_t first = c.first_row;
  for (int64_t n : c.batch_rows) {
    batches.push_back(whole.Slice(first, n));
    first += n;
  }
  return batches;
}

namespace {

template <typename T>
std::string DiffValues(T want, T got) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(want) && std::isnan(got)) return {};
    if (want == got && std::signbit(want) == std::signbit(got)) return {};
  } else {
    if (want == got) return {};
  }
  return fmt::format("{} instead of {}", +got, +want);
}

// Compares row `w` of `want` with row `g` of `got` (same type).
std::string DiffRow(const Array& want, int64_t w, const Array& got, int64_t g) {
  if (want.IsNull(w) != got.IsNull(g)) {
    return fmt::format("{} instead of {}", got.ValueToString(g), want.ValueToString(w));
  }
  if (want.IsNull(w)) return {};
  switch (want.type_id()) {
    case TypeId::kBool:
      return DiffValues(want.BoolValue(w), got.BoolValue(g));
    case TypeId::kInt8:
      return DiffValues(want.Value<int8_t>(w), got.Value<int8_t>(g));
    case TypeId::kInt16:
      return DiffValues(want.Value<int16_t>(w), got.Value<int16_t>(g));
    case TypeId::kInt32:
      return DiffValues(want.Value<int32_t>(w), got.Value<int32_t>(g));
    case TypeId::kInt64:
    case TypeId::kTimestamp:
      return DiffValues(want.Value<int64_t>(w), got.Value<int64_t>(g));
    case TypeId::kUInt8:
      return DiffValues(want.Value<uint8_t>(w), got.Value<uint8_t>(g));
    case TypeId::kUInt16:
      return DiffValues(want.Value<uint16_t>(w), got.Value<uint16_t>(g));
    case TypeId::kUInt32:
      return DiffValues(want.Value<uint32_t>(w), got.Value<uint32_t>(g));
    case TypeId::kUInt64:
      return DiffValues(want.Value<uint64_t>(w), got.Value<uint64_t>(g));
    case TypeId::kFloat32:
      return DiffValues(want.Value<float>(w), got.Value<float>(g));
    case TypeId::kFloat64:
      return DiffValues(want.Value<double>(w), got.Value<double>(g));
    case TypeId::kUtf8:
    case TypeId::kLargeUtf8:
    case TypeId::kBinary:
    case TypeId::kLargeBinary:
      if (want.StringValue(w) == got.StringValue(g)) return {};
      return fmt::format("{} instead of {}", got.ValueToString(g), want.ValueToString(w));
    case TypeId::kFixedSizeList:
    case TypeId::kList:
    case TypeId::kLargeList: {
      auto [wb, we] = want.ValueRange(w);
      auto [gb, ge] = got.ValueRange(g);
      if (we - wb != ge - gb) return fmt::format("{} elements instead of {}", ge - gb, we - wb);
      for (int64_t e = 0; e < we - wb; ++e) {
        std::string diff = DiffRow(want.values_array(), wb + e, got.values_array(), gb + e);
        if (!diff.empty()) return fmt::format("[{}] {}", e, diff);
      }
      return {};
    }
    case TypeId::kStruct:
      for (int k = 0; k < want.num_fields(); ++k) {
        std::string diff = DiffRow(want.field(k), w, got.field(k), g);
        if (!diff.empty()) {
          return fmt::format(".{} {}", want.type()->fields()[k]->name(), diff);
        }
      }
      return {};
    case TypeId::kDictionary:
      return DiffRow(want.dictionary(), want.DictionaryIndex(w), got.dictionary(),
                     got.DictionaryIndex(g));
  }
  return "unknown type";
}

}  // namespace

std::string DiffArrays(const Array& want, const Array& got, int64_t first_row) {
  if (!want.type()->Equals(*got.type())) {
    return fmt::format("type {} instead of {}", got.type()->ToString(), want.type()->ToString());
  }
  if (want.length() != got.length()) {
    return fmt::format("{} rows instead of {}", got.length(), want.length());
  }
  for (int64_t r = 0; r < want.length(); ++r) {
    std::string diff = DiffRow(want, r, got, r);
    if (!diff.empty()) return fmt::format("row {}: {}", first_row + r, diff);
  }
  return {};
}

}  // namespace strata::interop
