// RowDecoder: JsonParser's events drive the builders directly, guided by the BuilderNode tree
// of the schema. A stack of Frames tracks the open objects and arrays, which also
// gives the column path ("meta.tags[2]") for error messages.
#include "columnar/json_decoder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cfloat>
#include <charconv>
#include <cmath>
#include <exception>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "columnar/json_builder_tree.h"
#include "columnar/json_parser.h"
#include "columnar/json_text.h"
#include "strata/builder.h"
#include "util/text_codec.h"

namespace strata::json::internal {
namespace {

using Json = nlohmann::json;

// An open object (struct or row) or array (list) and where in it the parser is.
struct Frame {
  BuilderNode* node;
  bool is_list;
  int field;           // object: index of the current key's field, -1 for an ignored key
  int64_t count;       // array: elements started so far; the current one is count - 1
  bool bytes = false;  // a binary value given as an array of byte values
};

// "[json.exception.parse_error.101] parse error at line 1, column 8: syntax error ..." ->
// "syntax error ...".
std::string ParserMessage(const std::string& what) {
  std::string_view text = what;
  if (!text.empty() && text.front() == '[') {
    const size_t end = text.find("] ");
    if (end != std::string_view::npos) text.remove_prefix(end + 2);
  }
  if (text.starts_with("parse error")) {
    const size_t colon = text.find(": ");
    if (colon != std::string_view::npos) text.remove_prefix(colon + 2);
  }
  return std::string(text);
}

// An nlohmann SAX handler that only records the first syntax error, to describe text that
// JsonParser rejected.
struct MalformedTextReporter {
  bool null() { return true; }
  bool boolean(bool /*value*/) { return true; }
  bool number_integer(Json::number_integer_t /*value*/) { return true; }
  bool number_unsigned(Json::number_unsigned_t /*value*/) { return true; }
  bool number_float(Json::number_float_t /*value*/, const std::string& /*text*/) { return true; }
  bool string(std::string& /*value*/) { return true; }
  bool binary(Json::binary_t& /*value*/) { return true; }
  bool start_object(std::size_t /*size*/) { return true; }
  bool key(std::string& /*name*/) { return true; }
  bool end_object() { return true; }
  bool start_array(std::size_t /*size*/) { return true; }
  bool end_array() { return true; }
  bool parse_error(std::size_t at, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& ex) {
    failed = true;
    position = at;
    message = ParserMessage(ex.what());
    return false;
  }

  bool failed = false;
  size_t position = 0;  // bytes read including the offending one
  std::string message;
};

int64_t SignedValue(bool negative, uint64_t magnitude) {
  return static_cast<int64_t>(negative ? uint64_t{0} - magnitude : magnitude);
}

}  // namespace

class RowDecoder::Handler {
 public:
  Handler(SchemaPtr schema, const JsonReadOptions& options,
          std::unique_ptr<RecordBatchBuilder> builder)
      : schema_(std::move(schema)), options_(options), batch_builder_(std::move(builder)) {}

  Status Init() { return BuildRowTree(*schema_, *batch_builder_, &root_); }

  Status Parse(std::string_view text, bool array_mode, int64_t row_number) {
    if (!failed_.ok()) return failed_;
    frames_.clear();
    skip_depth_ = 0;
    array_mode_ = array_mode;
    outer_open_ = false;
    row_ = row_number;
    text_ = text;
    error_ = Status::OK();
    ParseOutcome outcome = ParseOutcome::kMalformed;
    try {
      outcome = parser_.Parse(text, this);
      if (outcome == ParseOutcome::kMalformed) DescribeMalformed();
    } catch (const std::exception& e) {  // std::bad_alloc, from nlohmann or the builders
      error_ = Status::Internal(fmt::format("JSON decoder failed: {}", e.what()));
      outcome = ParseOutcome::kStopped;
    }
    if (outcome != ParseOutcome::kOk) {
      if (error_.ok()) error_ = Status::Internal("JSON decoder stopped without an error");
      failed_ = error_;
      return error_;
    }
    return Status::OK();
  }

  int64_t num_rows() const { return rows_; }

  Result<RecordBatch> Finish() {
    if (!failed_.ok()) return failed_;
    const int64_t rows = std::exchange(rows_, 0);
    if (schema_->num_fields() == 0) return RecordBatch::Make(schema_, rows, {});
    return batch_builder_->Finish();
  }

  // --- JsonParser handler interface ---

  bool null() {
    BuilderNode* node = nullptr;
    if (!Slot(&node, "null")) return error_.ok();
    if (!node->nullable()) {
      return ValueError(JsonValueError::Kind::kNull, node->field, Path(frames_.size()), "null", {},
                        0,
                        fmt::format("row {}, column '{}': expected {}, found null (column is not "
                                    "nullable)",
                                    row_, Path(frames_.size()), node->type_name));
    }
    node->builder->AppendNull();
    return true;
  }

  bool boolean(bool value) {
    BuilderNode* node = nullptr;
    const char* found = value ? "boolean true" : "boolean false";
    if (!Slot(&node, found)) return error_.ok();
    if (node->kind != ValueKind::kBool) return Fail(*node, found);
    static_cast<BooleanBuilder*>(node->builder)->Append(value);
    return true;
  }

  bool number_integer(int64_t value) {
    const auto describe = [value] { return fmt::format("number {}", value); };
    if (InBytes()) {
      return AppendByte(value >= 0 && value <= 255 ? static_cast<int>(value) : -1, describe);
    }
    BuilderNode* node = nullptr;
    if (!Slot(&node, describe)) return error_.ok();
    const bool negative = value < 0;
    const uint64_t magnitude =
        negative ? uint64_t{0} - static_cast<uint64_t>(value) : static_cast<uint64_t>(value);
    return AppendInteger(*node, negative, magnitude, describe);
  }

  bool number_unsigned(uint64_t value) {
    const auto describe = [value] { return fmt::format("number {}", value); };
    if (InBytes()) return AppendByte(value <= 255 ? static_cast<int>(value) : -1, describe);
    BuilderNode* node = nullptr;
    if (!Slot(&node, describe)) return error_.ok();
    return AppendInteger(*node, false, value, describe);
  }

  bool number_float(std::string_view text) {
    const auto describe = [text] { return fmt::format("number {}", text); };
    BuilderNode* node = nullptr;
    if (!Slot(&node, describe)) return error_.ok();
    return AppendNumberText(*node, text, describe);
  }

  bool string(std::string_view value) {
    const auto describe = [value] { return DescribeString(value); };
    BuilderNode* node = nullptr;
    if (!Slot(&node, describe)) return error_.ok();
    return AppendString(*node, value, describe);
  }

  bool start_object() {
    if (skip_depth_ > 0) {
      ++skip_depth_;
      return true;
    }
    if (frames_.empty()) {
      if (array_mode_) {
        if (!outer_open_) return TopLevelError("object");
        ++row_;
      }
      return OpenObject(&root_);
    }
    if (InBytes()) return AppendByte(-1, [] { return std::string("object"); });
    BuilderNode* node = Target();
    if (node == nullptr) {
      skip_depth_ = 1;
      return true;
    }
    if (node->kind != ValueKind::kStruct) return Fail(*node, "object");
    static_cast<StructBuilder*>(node->builder)->Append();
    return OpenObject(node);
  }

  bool key(std::string_view name) {
    if (skip_depth_ > 0) return true;
    Frame& frame = frames_.back();
    BuilderNode& node = *frame.node;
    int index = -1;
    const auto num_children = static_cast<int>(node.children.size());
    if (node.next_field < num_children && node.children[node.next_field].field->name() == name) {
      index = node.next_field;
    } else if (auto it = node.field_index.find(name); it != node.field_index.end()) {
      index = it->second;
    }
    if (index < 0) {
      frame.field = -1;
      if (options_.ignore_unknown_fields) return true;
      const std::string path = ChildPath(frames_.size() - 1, name);
      return ValueError(JsonValueError::Kind::kUnknownKey, nullptr, path, {}, {}, 0,
                        fmt::format("row {}: unknown column '{}' (not in the schema)", row_, path));
    }
    frame.field = index;
    if (node.seen[index] != 0) {
      const std::string path = Path(frames_.size());
      return ValueError(JsonValueError::Kind::kDuplicateKey, node.children[index].field, path, {},
                        {}, 0, fmt::format("row {}, column '{}': duplicate key", row_, path));
    }
    node.seen[index] = 1;
    ++node.num_seen;
    node.next_field = index + 1;
    return true;
  }

  bool end_object() {
    if (skip_depth_ > 0) {
      --skip_depth_;
      return true;
    }
    BuilderNode& node = *frames_.back().node;
    if (node.num_seen < static_cast<int>(node.children.size())) {
      for (size_t i = 0; i < node.children.size(); ++i) {
        if (node.seen[i] != 0) continue;
        BuilderNode& child = node.children[i];
        if (!child.nullable()) {
          const std::string path = ChildPath(frames_.size() - 1, child.field->name());
          return ValueError(
              JsonValueError::Kind::kMissing, child.field, path, {}, {}, 0,
              fmt::format("row {}, column '{}': expected {}, key is missing (column is not "
                          "nullable)",
                          row_, path, child.type_name));
        }
        child.builder->AppendNull();
      }
    }
    frames_.pop_back();
    if (frames_.empty()) {
      ++rows_;
      ++rows_total_;
    }
    return true;
  }

  bool start_array() {
    if (skip_depth_ > 0) {
      ++skip_depth_;
      return true;
    }
    if (frames_.empty()) {
      if (array_mode_ && !outer_open_) {
        outer_open_ = true;
        return true;
      }
      return TopLevelError("array");
    }
    if (InBytes()) return AppendByte(-1, [] { return std::string("array"); });
    BuilderNode* node = Target();
    if (node == nullptr) {
      skip_depth_ = 1;
      return true;
    }
    switch (node->kind) {
      case ValueKind::kList:
        static_cast<ListBuilder*>(node->builder)->Append();
        break;
      case ValueKind::kLargeList:
        static_cast<LargeListBuilder*>(node->builder)->Append();
        break;
      case ValueKind::kFixedSizeList:
        static_cast<FixedSizeListBuilder*>(node->builder)->Append();
        break;
      case ValueKind::kBinary:
      case ValueKind::kLargeBinary:
        if (!options_.binary_as_byte_arrays) return Fail(*node, "array");
        bytes_.clear();
        frames_.push_back(Frame{node, /*is_list=*/true, /*field=*/-1, /*count=*/0, /*bytes=*/true});
        return true;
      default:
        return Fail(*node, "array");
    }
    frames_.push_back(Frame{node, /*is_list=*/true, /*field=*/-1, /*count=*/0});
    return true;
  }

  bool end_array() {
    if (skip_depth_ > 0) {
      --skip_depth_;
      return true;
    }
    if (frames_.empty()) {  // the outer array of AppendArrayOfRows
      outer_open_ = false;
      return true;
    }
    const Frame& frame = frames_.back();
    const BuilderNode& node = *frame.node;
    if (frame.bytes) {
      const Status status = node.kind == ValueKind::kBinary
                                ? static_cast<BinaryBuilder*>(node.builder)->Append(bytes_)
                                : static_cast<LargeBinaryBuilder*>(node.builder)->Append(bytes_);
      frames_.pop_back();
      return status.ok() || ColumnError(status);
    }
    if (node.kind == ValueKind::kFixedSizeList && frame.count != node.list_size) {
      const std::string path = Path(frames_.size() - 1);
      JsonValueError::Kind kind = JsonValueError::Kind::kWrongLength;
      return ValueError(kind, node.field, path, {}, {}, frame.count,
                        fmt::format("row {}, column '{}': expected {}, found array of {} elements",
                                    row_, path, node.type_name, frame.count));
    }
    frames_.pop_back();
    return true;
  }

 private:
  // Sets error_ for text that JsonParser found malformed, with nlohmann's description.
  void DescribeMalformed() {
    MalformedTextReporter reporter;
    Json::sax_parse(text_.begin(), text_.end(), &reporter, Json::input_format_t::json,
                    /*strict=*/true, /*ignore_comments=*/false);
    const std::string& detail = reporter.message;
    if (!reporter.failed) {  // nlohmann accepted it: the parsers disagree
      error_ = Status::InvalidArgument(array_mode_ ? std::string("malformed JSON")
                                                   : fmt::format("row {}: malformed JSON", row_));
      return;
    }
    const size_t position = reporter.position;
    if (!array_mode_) {
      error_ = Status::InvalidArgument(
          fmt::format("row {}: malformed JSON at column {}: {}", row_, position, detail));
      return;
    }
    // `position` counts the bytes read including the offending one (or the end of input).
    const size_t at = std::min(position > 0 ? position - 1 : 0, text_.size());
    const std::string_view before = text_.substr(0, at);
    const size_t line = 1 + static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
    const size_t line_start = before.rfind('\n');
    const size_t column = at - (line_start == std::string_view::npos ? 0 : line_start + 1) + 1;
    error_ = Status::InvalidArgument(
        fmt::format("malformed JSON at line {}, column {}: {}", line, column, detail));
  }

  // Whether the next value is an element of a byte array.
  bool InBytes() const { return skip_depth_ == 0 && !frames_.empty() && frames_.back().bytes; }

  // An element of a byte array: `byte` 0..255, or -1 for anything else (described by
  // `describe`).
  template <typename Describe>
  bool AppendByte(int byte, const Describe& describe) {
    Frame& frame = frames_.back();
    ++frame.count;
    if (byte >= 0) {
      bytes_.push_back(static_cast<char>(byte));
      return true;
    }
    const std::string path = Path(frames_.size());
    const std::string found = describe();
    return ValueError(JsonValueError::Kind::kWrongType, frame.node->field, path, found,
                      "not a byte: an integer 0..255", 0,
                      fmt::format("row {}, column '{}': expected a byte (an integer 0..255) of "
                                  "{}, found {}",
                                  row_, path, frame.node->type_name, found));
  }

  // Sets error_ to a value error, through options_.describe_value_error when set; false.
  bool ValueError(JsonValueError::Kind kind, const Field* field, std::string column,
                  std::string found, std::string detail, int64_t length, std::string message) {
    if (options_.describe_value_error) {
      JsonValueError e;
      e.kind = kind;
      e.row = row_;
      e.row_index = rows_total_;
      e.column = std::move(column);
      e.field = field;
      e.found = std::move(found);
      e.detail = std::move(detail);
      e.length = length;
      e.message = std::move(message);
      message = options_.describe_value_error(e);
    }
    error_ = Status::InvalidArgument(std::move(message));
    return false;
  }

  // The node the next value goes to, or nullptr when it belongs to an ignored key.
  BuilderNode* Target() {
    Frame& frame = frames_.back();
    if (frame.is_list) {
      ++frame.count;
      return &frame.node->children[0];
    }
    return frame.field < 0 ? nullptr : &frame.node->children[frame.field];
  }

  // For scalar events: sets *node and returns true when the value is to be stored. Returns
  // false with error_ OK when it is skipped, or with error_ set for a scalar outside a row.
  template <typename Describe>
  bool Slot(BuilderNode** node, const Describe& describe) {
    if (skip_depth_ > 0) return false;
    if (frames_.empty()) {
      if constexpr (std::is_invocable_v<Describe>) {
        TopLevelError(describe());
      } else {
        TopLevelError(describe);
      }
      return false;
    }
    if (frames_.back().bytes) {
      if constexpr (std::is_invocable_v<Describe>) {
        AppendByte(-1, describe);
      } else {
        AppendByte(-1, [&describe] { return std::string(describe); });
      }
      return false;
    }
    *node = Target();
    return *node != nullptr;
  }

  bool TopLevelError(std::string_view found) {
    if (array_mode_ && !outer_open_) {
      error_ =
          Status::InvalidArgument(fmt::format("expected a JSON array of objects, found {}", found));
    } else {
      error_ = Status::InvalidArgument(fmt::format("row {}: expected a JSON object, found {}",
                                                   array_mode_ ? row_ + 1 : row_, found));
    }
    return false;
  }

  bool OpenObject(BuilderNode* node) {
    std::fill(node->seen.begin(), node->seen.end(), 0);
    node->num_seen = 0;
    node->next_field = 0;
    frames_.push_back(Frame{node, /*is_list=*/false, /*field=*/-1, /*count=*/0});
    return true;
  }

  // Column path of the value inside the first `depth` frames: "meta.tags[2]".
  std::string Path(size_t depth) const {
    std::string path;
    for (size_t i = 0; i < depth; ++i) {
      const Frame& frame = frames_[i];
      if (frame.is_list) {
        fmt::format_to(std::back_inserter(path), "[{}]", frame.count - 1);
      } else {
        if (!path.empty()) path.push_back('.');
        path += frame.node->children[frame.field].field->name();
      }
    }
    return path;
  }

  std::string ChildPath(size_t depth, std::string_view name) const {
    std::string path = Path(depth);
    if (!path.empty()) path.push_back('.');
    path.append(name);
    return path;
  }

  // `detail` is empty or " (why)".
  bool Fail(const BuilderNode& node, std::string_view found, std::string_view detail = {}) {
    const std::string path = Path(frames_.size());
    std::string_view why = detail;
    if (why.starts_with(" (") && why.ends_with(")")) why = why.substr(2, why.size() - 3);
    return ValueError(JsonValueError::Kind::kWrongType, node.field, path, std::string(found),
                      std::string(why), 0,
                      fmt::format("row {}, column '{}': expected {}, found {}{}", row_, path,
                                  node.type_name, found, detail));
  }

  bool ColumnError(const Status& status) {
    const std::string path = Path(frames_.size());
    const BuilderNode* node = frames_.empty() ? nullptr : frames_.back().node;
    const Field* field = nullptr;
    if (node != nullptr && !frames_.back().bytes) {
      const Frame& frame = frames_.back();
      field = frame.is_list ? node->children[0].field
                            : (frame.field >= 0 ? node->children[frame.field].field : nullptr);
    } else if (node != nullptr) {
      field = node->field;
    }
    return ValueError(JsonValueError::Kind::kWrongType, field, path, "a value",
                      std::string(status.message()), 0,
                      fmt::format("row {}, column '{}': {}", row_, path, status.message()));
  }

  template <typename Describe>
  bool AppendInteger(BuilderNode& node, bool negative, uint64_t magnitude,
                     const Describe& describe) {
    switch (node.kind) {
      case ValueKind::kFloat32: {
        const auto value = static_cast<float>(magnitude);
        static_cast<Float32Builder*>(node.builder)->Append(negative ? -value : value);
        return true;
      }
      case ValueKind::kFloat64: {
        const auto value = static_cast<double>(magnitude);
        static_cast<Float64Builder*>(node.builder)->Append(negative ? -value : value);
        return true;
      }
      case ValueKind::kInt8:
      case ValueKind::kInt16:
      case ValueKind::kInt32:
      case ValueKind::kInt64:
      case ValueKind::kTimestamp:
      case ValueKind::kUInt8:
      case ValueKind::kUInt16:
      case ValueKind::kUInt32:
      case ValueKind::kUInt64:
        break;
      default:
        return Fail(node, describe());
    }
    if (negative ? magnitude > node.max_negative : magnitude > node.max_positive) {
      return Fail(node, describe(), " (out of range)");
    }
    const int64_t value = SignedValue(negative, magnitude);
    switch (node.kind) {
      case ValueKind::kInt8:
        static_cast<Int8Builder*>(node.builder)->Append(static_cast<int8_t>(value));
        break;
      case ValueKind::kInt16:
        static_cast<Int16Builder*>(node.builder)->Append(static_cast<int16_t>(value));
        break;
      case ValueKind::kInt32:
        static_cast<Int32Builder*>(node.builder)->Append(static_cast<int32_t>(value));
        break;
      case ValueKind::kInt64:
      case ValueKind::kTimestamp:
        static_cast<Int64Builder*>(node.builder)->Append(value);
        break;
      case ValueKind::kUInt8:
        static_cast<UInt8Builder*>(node.builder)->Append(static_cast<uint8_t>(magnitude));
        break;
      case ValueKind::kUInt16:
        static_cast<UInt16Builder*>(node.builder)->Append(static_cast<uint16_t>(magnitude));
        break;
      case ValueKind::kUInt32:
        static_cast<UInt32Builder*>(node.builder)->Append(static_cast<uint32_t>(magnitude));
        break;
      default:  // kUInt64
        static_cast<UInt64Builder*>(node.builder)->Append(magnitude);
        break;
    }
    return true;
  }

  // A number given as text (a JSON float token, or a string under strings_as_numbers).
  template <typename Describe>
  bool AppendNumberText(BuilderNode& node, std::string_view text, const Describe& describe) {
    switch (node.kind) {
      case ValueKind::kFloat64: {
        double value = 0;
        if (!ParseJsonDouble(text, &value)) return Fail(node, describe(), " (out of range)");
        static_cast<Float64Builder*>(node.builder)->Append(value);
        return true;
      }
      case ValueKind::kFloat32: {
        // Parse as float directly: rounding via a double could round twice.
        float f = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), f);
        if (ec != std::errc() || end != text.data() + text.size()) {
          double value = 0;
          if (!ParseJsonDouble(text, &value) || std::fabs(value) > FLT_MAX) {
            return Fail(node, describe(), " (out of range)");
          }
          f = static_cast<float>(value);  // underflow: zero or a subnormal
        }
        static_cast<Float32Builder*>(node.builder)->Append(f);
        return true;
      }
      case ValueKind::kInt8:
      case ValueKind::kInt16:
      case ValueKind::kInt32:
      case ValueKind::kInt64:
      case ValueKind::kTimestamp:
      case ValueKind::kUInt8:
      case ValueKind::kUInt16:
      case ValueKind::kUInt32:
      case ValueKind::kUInt64: {
        bool negative = false;
        uint64_t magnitude = 0;
        switch (ParseExactInteger(text, &negative, &magnitude)) {
          case IntegerParse::kOk:
            return AppendInteger(node, negative, magnitude, describe);
          case IntegerParse::kNotAnInteger:
            return Fail(node, describe(), " (not an integer)");
          case IntegerParse::kOutOfRange:
            return Fail(node, describe(), " (out of range)");
          case IntegerParse::kNotANumber:
            break;
        }
        return Fail(node, describe(), " (not a number)");
      }
      default:
        return Fail(node, describe());
    }
  }

  template <typename Describe>
  bool AppendString(BuilderNode& node, std::string_view value, const Describe& describe) {
    switch (node.kind) {
      case ValueKind::kString:
      case ValueKind::kBinary:
      case ValueKind::kLargeString:
      case ValueKind::kLargeBinary: {
        std::string decoded;
        std::string_view bytes = value;
        if (node.kind == ValueKind::kBinary || node.kind == ValueKind::kLargeBinary) {
          auto result = Base64Decode(value);
          if (!result.ok()) {
            return Fail(node, describe(),
                        fmt::format(" (not base64: {})", result.status().message()));
          }
          decoded = std::move(result).value();
          bytes = decoded;
        }
        const Status status = node.kind == ValueKind::kString || node.kind == ValueKind::kBinary
                                  ? static_cast<BinaryBuilder*>(node.builder)->Append(bytes)
                                  : static_cast<LargeBinaryBuilder*>(node.builder)->Append(bytes);
        return status.ok() || ColumnError(status);
      }
      case ValueKind::kTimestamp: {
        auto micros = ParseTimestampMicros(value);
        if (!micros.ok()) {
          return Fail(node, describe(), fmt::format(" ({})", micros.status().message()));
        }
        static_cast<TimestampBuilder*>(node.builder)->Append(*micros);
        return true;
      }
      case ValueKind::kFloat32:
      case ValueKind::kFloat64: {
        double special = 0;
        if (value == "NaN") {
          special = std::numeric_limits<double>::quiet_NaN();
        } else if (value == "Infinity") {
          special = std::numeric_limits<double>::infinity();
        } else if (value == "-Infinity") {
          special = -std::numeric_limits<double>::infinity();
        } else {
          return AppendNumberString(node, value, describe);
        }
        if (node.kind == ValueKind::kFloat32) {
          static_cast<Float32Builder*>(node.builder)->Append(static_cast<float>(special));
        } else {
          static_cast<Float64Builder*>(node.builder)->Append(special);
        }
        return true;
      }
      case ValueKind::kInt8:
      case ValueKind::kInt16:
      case ValueKind::kInt32:
      case ValueKind::kInt64:
      case ValueKind::kUInt8:
      case ValueKind::kUInt16:
      case ValueKind::kUInt32:
      case ValueKind::kUInt64:
        return AppendNumberString(node, value, describe);
      case ValueKind::kDictionary:
      case ValueKind::kDictionaryBinary: {
        std::string decoded;
        std::string_view bytes = value;
        if (node.kind == ValueKind::kDictionaryBinary) {
          auto result = Base64Decode(value);
          if (!result.ok()) {
            return Fail(node, describe(),
                        fmt::format(" (not base64: {})", result.status().message()));
          }
          decoded = std::move(result).value();
          bytes = decoded;
        }
        const Status status = static_cast<DictionaryBuilder*>(node.builder)->Append(bytes);
        return status.ok() || ColumnError(status);
      }
      default:
        return Fail(node, describe());
    }
  }

  // A string holding a number, for integer and float columns.
  template <typename Describe>
  bool AppendNumberString(BuilderNode& node, std::string_view value, const Describe& describe) {
    if (!options_.strings_as_numbers) return Fail(node, describe());
    if (!IsJsonNumber(value)) return Fail(node, describe(), " (not a number)");
    return AppendNumberText(node, value, describe);
  }

  SchemaPtr schema_;
  JsonReadOptions options_;
  std::unique_ptr<RecordBatchBuilder> batch_builder_;
  BuilderNode root_;
  JsonParser parser_;

  // Per parse.
  std::vector<Frame> frames_;
  int64_t skip_depth_ = 0;  // > 0 inside the object or array value of an ignored key
  bool array_mode_ = false;
  bool outer_open_ = false;
  int64_t row_ = 0;
  std::string_view text_;
  Status error_;

  int64_t rows_ = 0;
  int64_t rows_total_ = 0;  // rows decoded over the decoder's life
  std::string bytes_;       // the open byte array's bytes
  Status failed_;           // sticky: builders may hold a partial row
};

RowDecoder::RowDecoder(std::unique_ptr<Handler> handler) : handler_(std::move(handler)) {}
RowDecoder::~RowDecoder() = default;

Result<std::unique_ptr<RowDecoder>> RowDecoder::Make(SchemaPtr schema,
                                                     const JsonReadOptions& options) {
  if (schema == nullptr) return Status::InvalidArgument("JSON: no schema");
  STRATA_ASSIGN_OR_RETURN(auto builder, RecordBatchBuilder::Make(schema));
  auto handler = std::make_unique<Handler>(std::move(schema), options, std::move(builder));
  STRATA_RETURN_IF_ERROR(handler->Init());
  return std::make_unique<RowDecoder>(std::move(handler));
}

Status RowDecoder::AppendLine(std::string_view line, int64_t row_number) {
  return handler_->Parse(line, /*array_mode=*/false, row_number);
}

Status RowDecoder::AppendArrayOfRows(std::string_view text) {
  return handler_->Parse(text, /*array_mode=*/true, 0);
}

int64_t RowDecoder::num_rows() const { return handler_->num_rows(); }

Result<RecordBatch> RowDecoder::Finish() { return handler_->Finish(); }

}  // namespace strata::json::internal
