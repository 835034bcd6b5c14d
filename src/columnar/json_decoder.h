// RowDecoder: parses JSON rows straight into the builders of a schema (no DOM in between).
// Shared by the one-shot functions and the streaming JsonLinesReader of strata/json.h.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "strata/json.h"
#include "strata/record_batch.h"
#include "strata/status.h"
#include "strata/type.h"

namespace strata::json::internal {

class RowDecoder {
 public:
  static Result<std::unique_ptr<RowDecoder>> Make(SchemaPtr schema, const JsonReadOptions& options);
  ~RowDecoder();
  RowDecoder(const RowDecoder&) = delete;
  RowDecoder& operator=(const RowDecoder&) = delete;
  RowDecoder(RowDecoder&&) = delete;
  RowDecoder& operator=(RowDecoder&&) = delete;

  // Appends the single JSON object in `line` as one row; `row_number` is used in messages.
  // After an error the decoder is unusable: every later call returns that error.
  Status AppendLine(std::string_view line, int64_t row_number);
  // Appends every object of a JSON array of objects.
  Status AppendArrayOfRows(std::string_view text);

  int64_t num_rows() const;
  // The rows appended since the last Finish(), as a batch; the decoder is then empty.
  Result<RecordBatch> Finish();

  // Defined in json_decoder.cc; construct through Make().
  class Handler;
  explicit RowDecoder(std::unique_ptr<Handler> handler);

 private:
  std::unique_ptr<Handler> handler_;
};

}  // namespace strata::json::internal
