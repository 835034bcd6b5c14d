// GenericStore's JSON codec (include/strata/generic_store.h): the columnar layer's
// schema-driven JSON reader and writer (strata/json.h, no per-value DOM) with the generic
// store's value rules and error messages.
#include <fmt/format.h>

#include <string>

#include "strata/generic_store.h"
#include "strata/json.h"

namespace strata::store {
namespace {

// What a value of `type` looks like in JSON, for "expects <what>".
std::string Expected(const DataType& type) {
  switch (type.id()) {
    case TypeId::kUtf8:
    case TypeId::kLargeUtf8:
      return "a string";
    case TypeId::kInt32:
      return "an int32 integer";
    case TypeId::kInt64:
      return "an int64 integer";
    case TypeId::kFloat32:
    case TypeId::kFloat64:
      return "a number";
    case TypeId::kBool:
      return "true or false";
    case TypeId::kTimestamp:
      return "a timestamp (integer microseconds or an RFC 3339 string)";
    case TypeId::kBinary:
    case TypeId::kLargeBinary:
      return "bytes (a base64 string or an array of integers 0..255)";
    case TypeId::kFixedSizeList:
      return fmt::format("a vector of {} numbers", type.list_size());
    case TypeId::kList:
    case TypeId::kLargeList:
      return "a list (a JSON array)";
    default:
      return type.ToString();
  }
}

std::string DescribeValueError(const json::JsonValueError& e) {
  using Kind = json::JsonValueError::Kind;
  switch (e.kind) {
    case Kind::kUnknownKey:
      return fmt::format("row {}: column '{}' is not declared in the store schema", e.row_index,
                         e.column);
    case Kind::kDuplicateKey:
      return fmt::format("row {}: column '{}' is given twice", e.row_index, e.column);
    case Kind::kMissing:
    case Kind::kNull:
      return fmt::format("row {}: column '{}' is not nullable and was not supplied", e.row_index,
                         e.column);
    case Kind::kWrongLength:
      return fmt::format("row {}: column '{}' expects a vector of {} values, got {}", e.row_index,
                         e.column, e.field != nullptr ? e.field->type()->list_size() : 0, e.length);
    case Kind::kWrongType:
      break;
  }
  const std::string what = e.field != nullptr ? Expected(*e.field->type()) : "another value";
  return fmt::format("row {}: column '{}' expects {}, got {}{}", e.row_index, e.column, what,
                     e.found, e.detail.empty() ? "" : fmt::format(" ({})", e.detail));
}

// "row 3: malformed JSON ..." from the reader numbers JSON Lines by line: say so.
Status LineNumbered(const Status& status) {
  std::string_view message = status.message();
  if (!message.starts_with("row ")) return status;
  return Status::InvalidArgument(fmt::format("line {}", message.substr(4)));
}

// "row 2: expected a JSON object ..." from the reader numbers array elements from 1, but the
// codec numbers rows from 0 (as its value errors do): renumber.
Status ZeroBasedRow(const Status& status) {
  std::string_view message = status.message();
  if (!message.starts_with("row ")) return status;
  std::string_view rest = message.substr(4);
  const size_t digits = rest.find_first_not_of("0123456789");
  if (digits == 0 || digits == std::string_view::npos) return status;
  int64_t row = 0;
  for (char c : rest.substr(0, digits)) row = row * 10 + (c - '0');
  if (row < 1) return status;
  return Status::InvalidArgument(fmt::format("row {}{}", row - 1, rest.substr(digits)));
}

// The parser accepts null elements in a vector (the element field is nullable, as in the
// reference's Arrow mapping), but a vector is exactly `dim` numbers: refuse the first row
// holding a null element.
Status CheckVectorElements(const RecordBatch& batch) {
  for (int c = 0; c < batch.num_columns(); ++c) {
    const Array& column = batch.column(c);
    if (column.type()->id() != TypeId::kFixedSizeList) continue;
    const Array values = column.values_array();
    if (values.null_count() == 0) continue;
    for (int64_t row = 0; row < column.length(); ++row) {
      if (column.IsNull(row)) continue;
      const auto [begin, end] = column.ValueRange(row);
      for (int64_t i = begin; i < end; ++i) {
        if (!values.IsNull(i)) continue;
        return Status::InvalidArgument(
            fmt::format("row {}: column '{}[{}]' expects a number, got null", row,
                        batch.schema()->field(c)->name(), i - begin));
      }
    }
  }
  return Status::OK();
}

}  // namespace

Result<RecordBatch> EncodeJsonRows(const SchemaPtr& schema, std::string_view json_rows) {
  if (schema == nullptr) return Status::InvalidArgument("EncodeJsonRows: no schema");
  json::JsonReadOptions options;
  options.binary_as_byte_arrays = true;
  bool value_error = false;
  options.describe_value_error = [&value_error](const json::JsonValueError& e) {
    value_error = true;
    return DescribeValueError(e);
  };
  std::string_view rest = json_rows;
  if (rest.starts_with("\xEF\xBB\xBF")) rest.remove_prefix(3);
  const size_t first = rest.find_first_not_of(" \t\r\n");
  const bool array = first != std::string_view::npos && rest[first] == '[';
  Result<RecordBatch> batch = array ? json::ArrayOfRowsToBatch(schema, json_rows, options)
                                    : json::RowsToBatch(schema, json_rows, options);
  if (!batch.ok() && !value_error) {
    return array ? ZeroBasedRow(batch.status()) : LineNumbered(batch.status());
  }
  if (batch.ok()) STRATA_RETURN_IF_ERROR(CheckVectorElements(*batch));
  return batch;
}

Status AppendRowsAsJson(const RecordBatch& batch, std::string* out) {
  json::JsonWriteOptions options;
  options.timestamps_as_micros = true;
  options.omit_nulls = true;
  options.non_finite_as_null = true;
  return json::AppendRowsToJsonLines(batch, out, options);
}

}  // namespace strata::store
