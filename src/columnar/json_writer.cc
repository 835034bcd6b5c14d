// Writes RecordBatch rows as JSON Lines. Values are formatted directly into the output
// string (no DOM): integers exactly, floats in their shortest round-trip form.
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "columnar/json_text.h"
#include "strata/json.h"
#include "util/text_codec.h"

namespace strata::json {
namespace {

class RowWriter {
 public:
  RowWriter(const JsonWriteOptions& options, bool replace_invalid, std::string* out)
      : options_(options), replace_invalid_(replace_invalid), out_(out) {}

  // Writes rows [0, num_rows) of the batch. On invalid UTF-8 (only when !replace_invalid)
  // returns InvalidArgument; *out then holds a partial row.
  Status WriteRows(const RecordBatch& batch) {
    const SchemaPtr& schema = batch.schema();
    if (schema == nullptr) return Status::OK();  // a default-constructed batch has no rows
    std::vector<std::string> keys;
    keys.reserve(schema->fields().size());
    for (const FieldPtr& field : schema->fields()) {
      std::string key;
      internal::AppendQuoted(field->name(), /*replace_invalid=*/true, &key);
      key.push_back(':');
      keys.push_back(std::move(key));
    }
    const size_t start = out_->size();
    for (int64_t row = 0; row < batch.num_rows(); ++row) {
      out_->push_back('{');
      bool first = true;
      for (int c = 0; c < batch.num_columns(); ++c) {
        if (options_.omit_nulls && batch.column(c).IsNull(row)) continue;
        if (!first) out_->push_back(',');
        first = false;
        out_->append(keys[c]);
        if (!WriteValue(batch.column(c), row)) {
          std::string path = schema->field(c)->name();
          for (auto it = error_path_.rbegin(); it != error_path_.rend(); ++it) path += *it;
          return Status::InvalidArgument(
              fmt::format("row {}, column '{}': invalid UTF-8 in a string value", row + 1, path));
        }
      }
      out_->append("}\n");
      if (row == 0 && batch.num_rows() > 1) {
        // Rows tend to be alike: size the output from the first one, plus some slack.
        const size_t row_bytes = out_->size() - start;
        out_->reserve(out_->size() + row_bytes * static_cast<size_t>(batch.num_rows() - 1) * 9 / 8);
      }
    }
    return Status::OK();
  }

 private:
  template <typename T>
  void AppendNumber(T value) {
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
    out_->append(buffer, result.ptr);
  }

  template <typename F>
  void AppendFloat(F value) {
    if (options_.non_finite_as_null && !std::isfinite(value)) {
      out_->append("null");
    } else if (std::isnan(value)) {
      out_->append("\"NaN\"");
    } else if (std::isinf(value)) {
      out_->append(value > 0 ? "\"Infinity\"" : "\"-Infinity\"");
    } else if (value == 0 && std::signbit(value)) {
      out_->append("-0.0");  // "-0" would read back as the integer 0
    } else {
      AppendNumber(value);  // shortest form that reads back to the same value
    }
  }

  // Writes value i of `array`; false on invalid UTF-8, with error_path_ holding the path
  // below `array`, innermost segment first.
  bool WriteValue(const Array& array, int64_t i) {
    if (array.IsNull(i)) {
      out_->append("null");
      return true;
    }
    switch (array.type_id()) {
      case TypeId::kBool:
        out_->append(array.BoolValue(i) ? "true" : "false");
        return true;
      case TypeId::kInt8:
        AppendNumber(array.Value<int8_t>(i));
        return true;
      case TypeId::kInt16:
        AppendNumber(array.Value<int16_t>(i));
        return true;
      case TypeId::kInt32:
        AppendNumber(array.Value<int32_t>(i));
        return true;
      case TypeId::kInt64:
        AppendNumber(array.Value<int64_t>(i));
        return true;
      case TypeId::kUInt8:
        AppendNumber(array.Value<uint8_t>(i));
        return true;
      case TypeId::kUInt16:
        AppendNumber(array.Value<uint16_t>(i));
        return true;
      case TypeId::kUInt32:
        AppendNumber(array.Value<uint32_t>(i));
        return true;
      case TypeId::kUInt64:
        AppendNumber(array.Value<uint64_t>(i));
        return true;
      case TypeId::kFloat32:
        AppendFloat(array.Value<float>(i));
        return true;
      case TypeId::kFloat64:
        AppendFloat(array.Value<double>(i));
        return true;
      case TypeId::kUtf8:
      case TypeId::kLargeUtf8:
        return internal::AppendQuoted(array.StringValue(i), replace_invalid_, out_);
      case TypeId::kBinary:
      case TypeId::kLargeBinary:
        out_->push_back('"');
        out_->append(Base64Encode(array.StringValue(i)));
        out_->push_back('"');
        return true;
      case TypeId::kTimestamp: {
        const auto micros = array.Value<int64_t>(i);
        if (options_.timestamps_as_micros) {
          AppendNumber(micros);
        } else {
          out_->push_back('"');
          out_->append(FormatTimestampMicros(micros));
          out_->push_back('"');
        }
        return true;
      }
      case TypeId::kList:
      case TypeId::kLargeList:
      case TypeId::kFixedSizeList: {
        const auto [begin, end] = array.ValueRange(i);
        const Array values = array.values_array();
        out_->push_back('[');
        for (int64_t j = begin; j < end; ++j) {
          if (j > begin) out_->push_back(',');
          if (!WriteValue(values, j)) {
            error_path_.push_back(fmt::format("[{}]", j - begin));
            return false;
          }
        }
        out_->push_back(']');
        return true;
      }
      case TypeId::kStruct: {
        const auto& fields = array.type()->fields();
        out_->push_back('{');
        for (size_t k = 0; k < fields.size(); ++k) {
          if (k > 0) out_->push_back(',');
          internal::AppendQuoted(fields[k]->name(), /*replace_invalid=*/true, out_);
          out_->push_back(':');
          // Struct children are indexed by the parent's offset (see array.h).
          const Array child(array.data()->children[k]);
          if (!WriteValue(child, array.offset() + i)) {
            error_path_.push_back("." + fields[k]->name());
            return false;
          }
        }
        out_->push_back('}');
        return true;
      }
      case TypeId::kDictionary:
        return WriteValue(array.dictionary(), array.DictionaryIndex(i));
    }
    return true;
  }

  const JsonWriteOptions& options_;
  const bool replace_invalid_;
  std::string* out_;
  std::vector<std::string> error_path_;
};

}  // namespace

Status AppendRowsToJsonLines(const RecordBatch& batch, std::string* out,
                             const JsonWriteOptions& options) {
  const size_t original_size = out->size();
  RowWriter writer(options, /*replace_invalid=*/false, out);
  Status status = writer.WriteRows(batch);
  if (!status.ok()) out->resize(original_size);
  return status;
}

std::string BatchToJsonLines(const RecordBatch& batch) {
  std::string out;
  const JsonWriteOptions options;
  RowWriter writer(options, /*replace_invalid=*/true, &out);
  writer.WriteRows(batch).IgnoreError();  // cannot fail when replacing invalid UTF-8
  return out;
}

}  // namespace strata::json
