// Store columns as SQLite columns and values (column_values.h).
#include "sql/column_values.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "strata/generic_store.h"
#include "strata/json.h"

namespace strata::sql {
namespace {

bool IsNested(TypeId id) {
  return id == TypeId::kList || id == TypeId::kLargeList || id == TypeId::kFixedSizeList ||
         id == TypeId::kStruct;
}

void SetText(sqlite3_context* context, std::string_view text) {
  // A null pointer would make the result NULL; "" is an empty text.
  sqlite3_result_text64(context, text.empty() ? "" : text.data(), text.size(), SQLITE_TRANSIENT,
                        SQLITE_UTF8);
}

void SetDouble(sqlite3_context* context, double value) {
  if (std::isnan(value)) {
    sqlite3_result_null(context);  // SQLite has no NaN (it would make it NULL itself)
  } else {
    sqlite3_result_double(context, value);
  }
}

// Sets the value at `row` of a column of a type without nested JSON (also dictionary values).
void SetScalar(sqlite3_context* context, const Array& array, int64_t row) {
  if (array.IsNull(row)) {
    sqlite3_result_null(context);
    return;
  }
  switch (array.type_id()) {
    case TypeId::kBool:
      sqlite3_result_int64(context, array.BoolValue(row) ? 1 : 0);
      return;
    case TypeId::kInt8:
      sqlite3_result_int64(context, array.Value<int8_t>(row));
      return;
    case TypeId::kInt16:
      sqlite3_result_int64(context, array.Value<int16_t>(row));
      return;
    case TypeId::kInt32:
      sqlite3_result_int64(context, array.Value<int32_t>(row));
      return;
    case TypeId::kInt64:
      sqlite3_result_int64(context, array.Value<int64_t>(row));
      return;
    case TypeId::kUInt8:
      sqlite3_result_int64(context, array.Value<uint8_t>(row));
      return;
    case TypeId::kUInt16:
      sqlite3_result_int64(context, array.Value<uint16_t>(row));
      return;
    case TypeId::kUInt32:
      sqlite3_result_int64(context, array.Value<uint32_t>(row));
      return;
    case TypeId::kUInt64: {
      const auto value = array.Value<uint64_t>(row);
      if (value <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        sqlite3_result_int64(context, static_cast<int64_t>(value));
      } else {
        sqlite3_result_double(context, static_cast<double>(value));
      }
      return;
    }
    case TypeId::kFloat32:
      SetDouble(context, Float32AsShownDouble(array.Value<float>(row)));
      return;
    case TypeId::kFloat64:
      SetDouble(context, array.Value<double>(row));
      return;
    case TypeId::kUtf8:
    case TypeId::kLargeUtf8:
      SetText(context, array.StringValue(row));
      return;
    case TypeId::kBinary:
    case TypeId::kLargeBinary: {
      std::string_view bytes = array.StringValue(row);
      if (bytes.empty()) {
        sqlite3_result_zeroblob(context, 0);
      } else {
        sqlite3_result_blob64(context, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
      }
      return;
    }
    case TypeId::kTimestamp:
      SetText(context, json::FormatTimestamp(array.Value<int64_t>(row)));
      return;
    case TypeId::kDictionary:
      SetScalar(context, array.dictionary(), array.DictionaryIndex(row));
      return;
    default:
      SetText(context, array.ValueToString(row));
      return;
  }
}

}  // namespace

double Float32AsShownDouble(float value) {
  if (!std::isfinite(value)) return static_cast<double>(value);
  char buffer[32];
  const auto written = std::to_chars(buffer, buffer + sizeof(buffer), value);
  double shown = 0;
  const auto read = std::from_chars(buffer, written.ptr, shown);
  if (read.ec != std::errc()) return static_cast<double>(value);
  return shown;
}

std::string_view SqlTypeOf(const DataType& type) {
  switch (type.id()) {
    case TypeId::kBool:
    case TypeId::kInt8:
    case TypeId::kInt16:
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kUInt8:
    case TypeId::kUInt16:
    case TypeId::kUInt32:
    case TypeId::kUInt64:
      return "INTEGER";
    case TypeId::kFloat32:
    case TypeId::kFloat64:
      return "REAL";
    case TypeId::kBinary:
    case TypeId::kLargeBinary:
      return "BLOB";
    case TypeId::kDictionary:
      return SqlTypeOf(*type.dictionary_value_type());
    default:
      return "TEXT";
  }
}

bool IsBlobColumn(const Field& field) {
  std::optional<std::string_view> blob = field.metadata().Get(store::kBlobColumnMetadata);
  return blob.has_value() && *blob == "true";
}

std::string QuoteSqlIdentifier(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

std::string RecordsTableDeclaration(const Schema& schema, int key_column, std::string_view table) {
  std::string out = "CREATE TABLE " + QuoteSqlIdentifier(table) + "(";
  for (int i = 0; i < schema.num_fields(); ++i) {
    const Field& field = *schema.field(i);
    if (i > 0) out += ", ";
    out += QuoteSqlIdentifier(field.name());
    out += ' ';
    out += SqlTypeOf(*field.type());
    if (IsBlobColumn(field)) out += " HIDDEN";
    if (i == key_column) out += " PRIMARY KEY";
  }
  out += key_column >= 0 ? ") WITHOUT ROWID" : ")";
  return out;
}

ColumnCells::ColumnCells(Array array) : array_(std::move(array)) {
  if (IsNested(array_.type_id())) {
    Result<RecordBatch> batch =
        RecordBatch::Make(schema({field("v", array_.type())}), array_.length(), {array_});
    if (batch.ok()) json_batch_ = *std::move(batch);
  }
}

void ColumnCells::SetResult(sqlite3_context* context, int64_t row) const {
  if (!array_.is_valid_handle() || array_.IsNull(row)) {
    sqlite3_result_null(context);
    return;
  }
  if (!IsNested(array_.type_id())) {
    SetScalar(context, array_, row);
    return;
  }
  // The codec writes {"v":<value>}\n for the one-row slice; the value is the middle.
  std::string line;
  constexpr std::string_view kPrefix = "{\"v\":";
  if (json_batch_.num_columns() == 1 &&
      json::AppendRowsToJsonLines(json_batch_.Slice(row, 1), &line).ok() &&
      line.size() > kPrefix.size() + 2 && line.starts_with(kPrefix)) {
    SetText(context,
            std::string_view(line).substr(kPrefix.size(), line.size() - kPrefix.size() - 2));
    return;
  }
  SetText(context, array_.ValueToString(row));  // not reached for validated batches
}

}  // namespace strata::sql
