// RecordBatch: a schema plus equal-length columns; the unit of reads, writes and IPC.
//
// Value type: copying is cheap (shared columns). Thread safety: immutable, safe to share.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/array.h"
#include "strata/status.h"
#include "strata/type.h"

namespace strata {

class RecordBatch {
 public:
  RecordBatch() = default;

  // InvalidArgument unless there is one column per field, each of the field's type and of
  // length num_rows, and non-nullable fields hold no nulls.
  static Result<RecordBatch> Make(SchemaPtr schema, int64_t num_rows, std::vector<Array> columns);
  // A batch with no rows.
  static RecordBatch MakeEmpty(SchemaPtr schema);

  const SchemaPtr& schema() const { return schema_; }
  int64_t num_rows() const { return num_rows_; }
  int num_columns() const { return static_cast<int>(columns_.size()); }
  const Array& column(int i) const { return columns_.at(i); }
  const std::vector<Array>& columns() const { return columns_; }
  // Null handle (is_valid_handle() == false) when absent.
  Array GetColumnByName(std::string_view name) const;

  RecordBatch Slice(int64_t offset, int64_t length) const;
  // Bytes of every buffer the columns hold (BufferBytes of each column's data).
  int64_t BufferBytes() const;
  Result<RecordBatch> Project(const std::vector<int>& indices) const;

  // Same schema (metadata optional) and equal columns.
  bool Equals(const RecordBatch& other, bool check_metadata = false) const;
  Status Validate() const;
  Status ValidateFull() const;
  // Schema then one line per row, as JSON-like text.
  std::string ToString() const;

 private:
  RecordBatch(SchemaPtr schema, int64_t num_rows, std::vector<Array> columns)
      : schema_(std::move(schema)), num_rows_(num_rows), columns_(std::move(columns)) {}

  SchemaPtr schema_;
  int64_t num_rows_ = 0;
  std::vector<Array> columns_;
};

// `batch` with the columns of `target`, matched by name and in `target`'s order; a column
// `batch` lacks becomes all null when `target` lets it be null. InvalidArgument naming the
// column when `batch` has a column `target` does not, and otherwise as RecordBatch::Make
// checks the result (a missing non-nullable column, a type that differs from the target
// field's, nulls in a non-nullable column).
Result<RecordBatch> AlignBatchToSchema(const RecordBatch& batch, const SchemaPtr& target);

}  // namespace strata
