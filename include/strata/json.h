// JSON codec: rows as JSON objects (JSON Lines or a JSON array) <-> RecordBatch of a schema.
//
// Everything lives in namespace strata::json. The schema drives the conversion; nothing is
// inferred. Value mapping (reading accepts, writing produces):
//   bool                      true / false
//   int8 .. uint64            JSON integers, exactly over the type's full range (int64 and
//                             uint64 never pass through a double). A number with a zero
//                             fraction or an exponent ("3.0", "1e3") is accepted when it is an
//                             exact integer; "1.5", out-of-range values and strings are errors
//                             (strings are accepted with JsonReadOptions::strings_as_numbers).
//   float32 / float64         JSON numbers, correctly rounded; written in the shortest form
//                             that reads back to the same value. NaN and the infinities have
//                             no JSON number, so they are written as the strings "NaN",
//                             "Infinity", "-Infinity", which reading always accepts. -0.0 is
//                             written as "-0.0". Numbers beyond float32's range are errors;
//                             tiny ones become 0. (Numbers beyond a double's range are
//                             malformed JSON for any column, as in nlohmann-json.)
//   utf8 / large_utf8         JSON strings (invalid UTF-8 in the input is an error).
//   binary / large_binary     Base64 strings (RFC 4648, padded, strict); reading also takes
//                             arrays of integers 0..255 with binary_as_byte_arrays.
//   timestamp[us]             Reading: integer microseconds since the epoch or an RFC 3339
//                             string ("2024-05-01T12:34:56.5+02:00", "2024-05-01"; see
//                             ParseTimestampMicros in util/text_codec.h). Writing:
//                             RFC 3339 in UTC with six fraction digits ("...56.500000Z"), or
//                             integer microseconds with JsonWriteOptions::timestamps_as_micros.
//   list / large_list         JSON arrays.
//   fixed_size_list<_>[n]     JSON arrays of exactly n elements.
//   struct                    JSON objects (same rules as rows, recursively).
//   dictionary<_, utf8>       JSON strings (dictionary<_, binary>: base64 strings).
// A missing key or null reads as null; for a non-nullable field (or list element) that is an
// error. Keys not in the schema are errors unless ignore_unknown_fields; duplicate keys are
// errors. Writing emits every field, nulls as null, keys in schema order, one compact object
// per line. The JSON syntax accepted is strict RFC 8259 (no comments, no trailing commas),
// plus a UTF-8 byte order mark before a row.
//
// Errors are InvalidArgument and name the row, the column path and what was expected and
// found, e.g. `row 3, column 'reward': expected float64, found string "abc"` or
// `row 7, column 'meta.tags[2]': expected utf8, found number 5`. Rows are 1-based: for JSON
// Lines the row number is the line number (blank lines count), for a JSON array it is the
// element's position; list indexes in paths are 0-based. A call that fails returns no data.
// Thread safety: the free functions are reentrant; a JsonLinesReader is not thread safe.
#pragma once

#include <cstdint>
#include <functional>
#include <istream>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "strata/record_batch.h"
#include "strata/status.h"
#include "strata/type.h"

namespace strata::json {

// The first value error of a read, for JsonReadOptions::describe_value_error. Malformed JSON
// and a top-level value that is not a row are not value errors.
struct JsonValueError {
  enum class Kind {
    kUnknownKey,    // a key not in the schema (without ignore_unknown_fields)
    kDuplicateKey,  // a key given twice in one object
    kMissing,       // a non-nullable field's key is missing
    kNull,          // null for a non-nullable field or list element
    kWrongType,     // a value the field's type does not take (wrong kind, out of range, bad
                    // base64 or timestamp text, a byte array element that is not 0..255)
    kWrongLength,   // a fixed_size_list array with the wrong number of elements
  };
  Kind kind = Kind::kWrongType;
  int64_t row = 0;               // as in the default messages: 1-based line or array element
  int64_t row_index = 0;         // 0-based among the rows the reader decoded (blank lines skipped)
  std::string column;            // column path, e.g. "meta.tags[2]" (the key for kUnknownKey)
  const Field* field = nullptr;  // the value's field (a list's element field); null for
                                 // kUnknownKey; valid only during the call
  std::string found;             // kWrongType, kNull: the value, e.g. `string "abc"`
  std::string detail;            // kWrongType: why, e.g. "out of range" (may be empty)
  int64_t length = 0;            // kWrongLength: the elements found
  std::string message;           // the default message
};

struct JsonReadOptions {
  // Skip keys that are not in the schema (their values must still be well-formed JSON).
  bool ignore_unknown_fields = false;
  // binary / large_binary also accept a JSON array of integers 0..255, one per byte.
  bool binary_as_byte_arrays = false;
  // When set, the message of a value error is what this returns for it (the error stays
  // InvalidArgument and the call still returns no data).
  std::function<std::string(const JsonValueError&)> describe_value_error;
  // Accept strings holding a JSON number ("42", "-1.5e3") for integer and float columns, with
  // the same exactness and range rules as numbers.
  bool strings_as_numbers = false;
  // JsonLinesReader only: the most rows per batch (> 0).
  int64_t batch_rows = 8192;
};

struct JsonWriteOptions {
  // Write timestamps as integer microseconds instead of RFC 3339 strings.
  bool timestamps_as_micros = false;
  // Leave the keys of null columns out of the row objects (null list elements and struct
  // fields are still written as null).
  bool omit_nulls = false;
  // Write NaN and the infinities as null instead of the strings "NaN", "Infinity",
  // "-Infinity".
  bool non_finite_as_null = false;
};

// Parses JSON Lines text (one object per line; blank or whitespace-only lines are skipped;
// "\r\n" line ends are fine) into one batch. InvalidArgument for malformed JSON (naming the
// line) or a value that does not fit the schema.
Result<RecordBatch> RowsToBatch(const SchemaPtr& schema, std::string_view json_lines,
                                const JsonReadOptions& options = {});

// Parses a JSON array of objects, e.g. `[{"a": 1}, {"a": 2}]`, into one batch.
Result<RecordBatch> ArrayOfRowsToBatch(const SchemaPtr& schema, std::string_view json_array_text,
                                       const JsonReadOptions& options = {});

// Streams JSON Lines from an input too large to hold in memory, as batches of at most
// options.batch_rows rows. Memory use is bounded by one batch plus the longest line.
// Row numbers in errors are line numbers counted from the start of the input. After an error,
// Next() keeps returning that error. Not thread safe.
class JsonLinesReader {
 public:
  // Fills dst with up to `capacity` bytes and returns how many; 0 means end of input.
  using ChunkSource = std::function<Result<size_t>(char* dst, size_t capacity)>;

  // Reads from `input`, which must outlive the reader. A stream error (badbit) is IOError.
  static Result<std::unique_ptr<JsonLinesReader>> Make(SchemaPtr schema, std::istream* input,
                                                       const JsonReadOptions& options = {});
  // Reads from any byte source (e.g. a file of the io layer).
  static Result<std::unique_ptr<JsonLinesReader>> Make(SchemaPtr schema, ChunkSource source,
                                                       const JsonReadOptions& options = {});
  ~JsonLinesReader();
  JsonLinesReader(const JsonLinesReader&) = delete;
  JsonLinesReader& operator=(const JsonLinesReader&) = delete;
  JsonLinesReader(JsonLinesReader&&) = delete;
  JsonLinesReader& operator=(JsonLinesReader&&) = delete;

  // The next batch of 1..batch_rows rows, or std::nullopt at the end of the input.
  Result<std::optional<RecordBatch>> Next();

  const SchemaPtr& schema() const;
  // Lines consumed so far (including blank ones).
  int64_t lines_read() const;

  // Use Make(); Impl is defined in json_reader.cc.
  class Impl;
  explicit JsonLinesReader(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

// Appends one JSON object per row of `batch` (only the rows of a sliced batch), each followed
// by '\n', to *out. InvalidArgument (and *out unchanged) if a utf8 value is not valid UTF-8.
Status AppendRowsToJsonLines(const RecordBatch& batch, std::string* out,
                             const JsonWriteOptions& options = {});

// The text forms the codec uses for single values, for callers that build JSON themselves (the
// server's request and response bodies): strict padded Base64 (RFC 4648) for bytes, and RFC
// 3339 for timestamps (FormatTimestamp writes UTC with six fraction digits; ParseTimestamp
// reads what the codec reads for a timestamp[us] column). Parse errors are InvalidArgument
// quoting the text.
std::string Base64Encode(std::string_view bytes);
Result<std::string> Base64Decode(std::string_view text);
// Appends `text` to *out as a JSON string: quoted, with quotes, backslashes and control
// characters escaped (\n, \t, ... or \u00XX), other UTF-8 as is and each byte of invalid
// UTF-8 as U+FFFD. For valid UTF-8, the bytes nlohmann-json's dump writes for the string.
void AppendQuotedString(std::string_view text, std::string* out);
std::string FormatTimestamp(int64_t micros_since_epoch);
Result<int64_t> ParseTimestamp(std::string_view text);

// The batch as JSON Lines with default options. Invalid UTF-8 in utf8 values (which a
// validated batch cannot hold) is written as U+FFFD instead of failing.
std::string BatchToJsonLines(const RecordBatch& batch);

}  // namespace strata::json
