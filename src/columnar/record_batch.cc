// RecordBatch construction, slicing, projection, comparison and alignment to a schema.
#include "strata/record_batch.h"

#include <fmt/format.h>

#include <algorithm>

namespace strata {

Result<RecordBatch> RecordBatch::Make(SchemaPtr schema, int64_t num_rows,
                                      std::vector<Array> columns) {
  if (schema == nullptr) return Status::InvalidArgument("record batch has no schema");
  if (static_cast<int>(columns.size()) != schema->num_fields()) {
    return Status::InvalidArgument(fmt::format("record batch has {} columns but its schema has {}",
                                               columns.size(), schema->num_fields()));
  }
  for (int i = 0; i < schema->num_fields(); ++i) {
    const auto& f = schema->field(i);
    const Array& col = columns[i];
    if (!col.is_valid_handle()) {
      return Status::InvalidArgument(fmt::format("column '{}' is missing", f->name()));
    }
    if (!col.type()->Equals(*f->type())) {
      return Status::InvalidArgument(fmt::format("column '{}' has type {} but the schema says {}",
                                                 f->name(), col.type()->ToString(),
                                                 f->type()->ToString()));
    }
    if (col.length() != num_rows) {
      return Status::InvalidArgument(
          fmt::format("column '{}' has {} rows, expected {}", f->name(), col.length(), num_rows));
    }
    if (!f->nullable() && col.null_count() > 0) {
      return Status::InvalidArgument(fmt::format("column '{}' is not nullable but holds {} nulls",
                                                 f->name(), col.null_count()));
    }
  }
  return RecordBatch(std::move(schema), num_rows, std::move(columns));
}

RecordBatch RecordBatch::MakeEmpty(SchemaPtr schema) {
  std::vector<Array> columns;
  for (const auto& f : schema->fields()) columns.push_back(Array::MakeEmpty(f->type()));
  return RecordBatch(std::move(schema), 0, std::move(columns));
}

Array RecordBatch::GetColumnByName(std::string_view name) const {
  int i = schema_ ? schema_->GetFieldIndex(name) : -1;
  return i < 0 ? Array() : columns_[i];
}

int64_t RecordBatch::BufferBytes() const {
  int64_t bytes = 0;
  for (const Array& column : columns_) {
    if (column.is_valid_handle()) bytes += strata::BufferBytes(*column.data());
  }
  return bytes;
}

RecordBatch RecordBatch::Slice(int64_t offset, int64_t length) const {
  std::vector<Array> cols;
  cols.reserve(columns_.size());
  for (const auto& c : columns_) cols.push_back(c.Slice(offset, length));
  int64_t n = cols.empty()
                  ? std::clamp<int64_t>(length, 0, std::max<int64_t>(num_rows_ - offset, 0))
                  : cols[0].length();
  return RecordBatch(schema_, n, std::move(cols));
}

Result<RecordBatch> RecordBatch::Project(const std::vector<int>& indices) const {
  STRATA_ASSIGN_OR_RETURN(auto projected, schema_->Project(indices));
  std::vector<Array> cols;
  cols.reserve(indices.size());
  for (int i : indices) cols.push_back(columns_[i]);
  return RecordBatch(std::move(projected), num_rows_, std::move(cols));
}

bool RecordBatch::Equals(const RecordBatch& other, bool check_metadata) const {
  if (num_rows_ != other.num_rows_) return false;
  if ((schema_ == nullptr) != (other.schema_ == nullptr)) return false;
  if (schema_ && !schema_->Equals(*other.schema_, check_metadata)) return false;
  for (size_t i = 0; i < columns_.size(); ++i) {
    if (!columns_[i].Equals(other.columns_[i])) return false;
  }
  return true;
}

Status RecordBatch::Validate() const {
  for (int i = 0; i < num_columns(); ++i) {
    Status s = columns_[i].Validate();
    if (!s.ok()) return s.WithContext(fmt::format("column '{}'", schema_->field(i)->name()));
    if (columns_[i].length() != num_rows_) {
      return Status::Corruption(fmt::format("column '{}' has {} rows, batch has {}",
                                            schema_->field(i)->name(), columns_[i].length(),
                                            num_rows_));
    }
  }
  return Status::OK();
}

Status RecordBatch::ValidateFull() const {
  STRATA_RETURN_IF_ERROR(Validate());
  for (int i = 0; i < num_columns(); ++i) {
    Status s = columns_[i].ValidateFull();
    if (!s.ok()) return s.WithContext(fmt::format("column '{}'", schema_->field(i)->name()));
  }
  return Status::OK();
}

Result<RecordBatch> AlignBatchToSchema(const RecordBatch& batch, const SchemaPtr& target) {
  const Schema& source = *batch.schema();
  for (const FieldPtr& field : source.fields()) {
    if (target->GetFieldIndex(field->name()) < 0) {
      return Status::InvalidArgument(fmt::format("column '{}' ({}) is not in the target schema",
                                                 field->name(), field->type()->ToString()));
    }
  }
  // Make checks each column against its target field: a missing non-nullable column is left
  // as a null handle for it to report, as are mismatched types and nulls where none may be.
  std::vector<Array> columns;
  columns.reserve(target->num_fields());
  for (const FieldPtr& field : target->fields()) {
    int index = source.GetFieldIndex(field->name());
    if (index >= 0) {
      columns.push_back(batch.column(index));
    } else if (field->nullable()) {
      columns.push_back(Array::MakeNull(field->type(), batch.num_rows()));
    } else {
      columns.emplace_back();
    }
  }
  return RecordBatch::Make(target, batch.num_rows(), std::move(columns));
}

}  // namespace strata
