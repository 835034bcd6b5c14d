// Nested builders (list, large list, fixed size list, struct), MakeBuilder for any type and
// RecordBatchBuilder.
#include <fmt/format.h>

#include <limits>

#include "columnar/columnar_internal.h"
#include "strata/builder.h"

namespace strata {

using columnar_internal::CheckSameType;
using columnar_internal::CheckSliceBounds;

namespace {

Result<Array> MakeNested(DataTypePtr type, int64_t length, int64_t null_count,
                         std::vector<Buffer> buffers, std::vector<ArrayDataPtr> children) {
  ArrayData data;
  data.type = std::move(type);
  data.length = length;
  data.null_count = null_count;
  data.buffers = std::move(buffers);
  data.children = std::move(children);
  return Array::Make(std::move(data));
}

}  // namespace

// ---- BaseListBuilder ----
//
// offsets_ holds the start offset of every row appended so far; Finish() adds the end offset.

template <typename OffsetT>
BaseListBuilder<OffsetT>::BaseListBuilder(DataTypePtr type,
                                          std::unique_ptr<ArrayBuilder> value_builder)
    : ArrayBuilder(std::move(type)), values_(std::move(value_builder)) {}

template <typename OffsetT>
void BaseListBuilder<OffsetT>::Append() {
  offsets_.AppendValue(static_cast<OffsetT>(values_->length()));
  AppendValidity(true);
}

template <typename OffsetT>
void BaseListBuilder<OffsetT>::AppendNull() {
  offsets_.AppendValue(static_cast<OffsetT>(values_->length()));
  AppendValidity(false);
}

template <typename OffsetT>
Status BaseListBuilder<OffsetT>::AppendArraySlice(const Array& array, int64_t offset,
                                                  int64_t length) {
  STRATA_RETURN_IF_ERROR(CheckSameType(array, *type_, "ListBuilder::AppendArraySlice"));
  STRATA_RETURN_IF_ERROR(CheckSliceBounds(array, offset, length));
  if (length == 0) return Status::OK();
  const int64_t first = array.ValueRange(offset).first;
  const int64_t last = array.ValueRange(offset + length - 1).second;
  const int64_t base = values_->length();
  if (base + (last - first) > std::numeric_limits<OffsetT>::max()) {
    return Status::InvalidArgument(
        fmt::format("list of {} + {} elements exceeds the {}-bit offset range", base, last - first,
                    8 * sizeof(OffsetT)));
  }
  // Null rows may cover elements; they are copied along, which keeps this one contiguous copy.
  STRATA_RETURN_IF_ERROR(values_->AppendArraySlice(array.values_array(), first, last - first));
  offsets_.Reserve(length * static_cast<int64_t>(sizeof(OffsetT)));
  for (int64_t i = 0; i < length; ++i) {
    offsets_.AppendValue(static_cast<OffsetT>(base + array.ValueRange(offset + i).first - first));
  }
  AppendValidityFrom(array, offset, length);
  return Status::OK();
}

template <typename OffsetT>
Result<Array> BaseListBuilder<OffsetT>::Finish() {
  const TypeId want = sizeof(OffsetT) == 4 ? TypeId::kList : TypeId::kLargeList;
  if (type_->id() != want) {
    return Status::InvalidArgument(fmt::format("a list builder with {}-bit offsets cannot build {}",
                                               8 * sizeof(OffsetT), type_->ToString()));
  }
  const int64_t elements = values_->length();
  Result<Array> values = values_->Finish();
  offsets_.AppendValue(static_cast<OffsetT>(elements));
  const int64_t length = length_, null_count = null_count_;
  Buffer validity = FinishValidity();
  Buffer offsets = offsets_.Finish();
  if (elements > std::numeric_limits<OffsetT>::max()) {
    return Status::InvalidArgument(
        fmt::format("list of {} elements exceeds the offset range", elements));
  }
  if (!values.ok()) return values.status().WithContext("list values");
  return MakeNested(type_, length, null_count, {std::move(validity), std::move(offsets)},
                    {values->data()});
}

template class BaseListBuilder<int32_t>;
template class BaseListBuilder<int64_t>;

// ---- FixedSizeListBuilder ----

FixedSizeListBuilder::FixedSizeListBuilder(DataTypePtr type,
                                           std::unique_ptr<ArrayBuilder> value_builder)
    : ArrayBuilder(std::move(type)), values_(std::move(value_builder)) {}

void FixedSizeListBuilder::Append() { AppendValidity(true); }

void FixedSizeListBuilder::AppendNull() {
  values_->AppendNulls(type_->list_size());
  AppendValidity(false);
}

Status FixedSizeListBuilder::AppendArraySlice(const Array& array, int64_t offset, int64_t length) {
  STRATA_RETURN_IF_ERROR(CheckSameType(array, *type_, "FixedSizeListBuilder::AppendArraySlice"));
  STRATA_RETURN_IF_ERROR(CheckSliceBounds(array, offset, length));
  const int64_t n = type_->list_size();
  STRATA_RETURN_IF_ERROR(
      values_->AppendArraySlice(array.values_array(), (array.offset() + offset) * n, length * n));
  AppendValidityFrom(array, offset, length);
  return Status::OK();
}

Result<Array> FixedSizeListBuilder::Finish() {
  const int64_t n = type_->list_size();
  if (values_->length() != length_ * n) {
    return Status::InvalidArgument(fmt::format(
        "fixed_size_list builder has {} rows of {} elements but {} elements were appended", length_,
        n, values_->length()));
  }
  Result<Array> values = values_->Finish();
  const int64_t length = length_, null_count = null_count_;
  Buffer validity = FinishValidity();
  if (!values.ok()) return values.status().WithContext("fixed_size_list values");
  return MakeNested(type_, length, null_count, {std::move(validity)}, {values->data()});
}

// ---- StructBuilder ----

StructBuilder::StructBuilder(DataTypePtr type,
                             std::vector<std::unique_ptr<ArrayBuilder>> field_builders)
    : ArrayBuilder(std::move(type)), fields_(std::move(field_builders)) {}

void StructBuilder::Append() { AppendValidity(true); }

void StructBuilder::AppendNull() {
  for (auto& f : fields_) f->AppendNull();
  AppendValidity(false);
}

Status StructBuilder::AppendArraySlice(const Array& array, int64_t offset, int64_t length) {
  STRATA_RETURN_IF_ERROR(CheckSameType(array, *type_, "StructBuilder::AppendArraySlice"));
  STRATA_RETURN_IF_ERROR(CheckSliceBounds(array, offset, length));
  for (int k = 0; k < num_fields(); ++k) {
    Status s = fields_[k]->AppendArraySlice(Array(array.data()->children[k]),
                                            array.offset() + offset, length);
    if (!s.ok()) return s.WithContext(fmt::format("field '{}'", type_->fields()[k]->name()));
  }
  AppendValidityFrom(array, offset, length);
  return Status::OK();
}

Result<Array> StructBuilder::Finish() {
  for (int k = 0; k < num_fields(); ++k) {
    if (fields_[k]->length() != length_) {
      return Status::InvalidArgument(fmt::format("struct builder has {} rows but field '{}' has {}",
                                                 length_, type_->fields()[k]->name(),
                                                 fields_[k]->length()));
    }
  }
  std::vector<ArrayDataPtr> children;
  children.reserve(fields_.size());
  Status first_error;
  for (int k = 0; k < num_fields(); ++k) {
    // Every field builder is finished (and so reset) even after an error.
    Result<Array> child = fields_[k]->Finish();
    if (child.ok()) {
      children.push_back(child->data());
    } else if (first_error.ok()) {
      first_error =
          child.status().WithContext(fmt::format("struct field '{}'", type_->fields()[k]->name()));
    }
  }
  const int64_t length = length_, null_count = null_count_;
  Buffer validity = FinishValidity();
  if (!first_error.ok()) return first_error;
  return MakeNested(type_, length, null_count, {std::move(validity)}, std::move(children));
}

// ---- MakeBuilder ----

Result<std::unique_ptr<ArrayBuilder>> MakeBuilder(const DataTypePtr& type) {
  if (type == nullptr) return Status::InvalidArgument("MakeBuilder: null type");
  switch (type->id()) {
    case TypeId::kBool:
      return std::unique_ptr<ArrayBuilder>(std::make_unique<BooleanBuilder>());
    case TypeId::kInt8:
      return std::unique_ptr<ArrayBuilder>(std::make_unique<Int8Builder>(type));
    case TypeId::kInt16:
      return std::unique_ptr<ArrayBuilder>(std::make_unique<Int16Builder>(type));
    case TypeId::kInt32:
      return std::unique_ptr<ArrayBuilder>(std::make_unique<Int32Builder>(type));
    case TypeId::kInt64:
    case TypeId::kTimestamp:
      return std::unique_ptr<ArrayBuilder>(std::make_unique<Int64Builder>(type));
    case TypeId::kUInt8:
      return std::unique_ptr<ArrayBuilder>(std::make_unique<UInt8Builder>(type));
    case TypeId::kUInt16:
      return std::unique_ptr<ArrayBuilder>(std::make_unique<UInt16Builder>(type));
    case TypeId::kUInt32:
      return std::unique_ptr<ArrayBuilder>(std::make_unique<UInt32Builder>(type));
    case TypeId::kUInt64:
      return std::unique_ptr<ArrayBuilder>(std::make_unique<UInt64Builder>(type));
    case TypeId::kFloat32:
      return std::unique_ptr<ArrayBuilder>(std::make_unique<Float32Builder>(type));
    case TypeId::kFloat64:
      return std::unique_ptr<ArrayBuilder>(std::make_unique<Float64Builder>(type));
    case TypeId::kUtf8:
    case TypeId::kBinary:
      return std::unique_ptr<ArrayBuilder>(std::make_unique<BinaryBuilder>(type));
    case TypeId::kLargeUtf8:
    case TypeId::kLargeBinary:
      return std::unique_ptr<ArrayBuilder>(std::make_unique<LargeBinaryBuilder>(type));
    case TypeId::kList:
    case TypeId::kLargeList:
    case TypeId::kFixedSizeList: {
      if (type->fields().size() != 1 || type->fields()[0] == nullptr) {
        return Status::InvalidArgument(
            fmt::format("MakeBuilder: {} needs exactly one value field", type->ToString()));
      }
      STRATA_ASSIGN_OR_RETURN(auto values, MakeBuilder(type->value_type()));
      if (type->id() == TypeId::kList) {
        return std::unique_ptr<ArrayBuilder>(
            std::make_unique<ListBuilder>(type, std::move(values)));
      }
      if (type->id() == TypeId::kLargeList) {
        return std::unique_ptr<ArrayBuilder>(
            std::make_unique<LargeListBuilder>(type, std::move(values)));
      }
      if (type->list_size() < 0) {
        return Status::InvalidArgument(
            fmt::format("MakeBuilder: negative list size {}", type->list_size()));
      }
      return std::unique_ptr<ArrayBuilder>(
          std::make_unique<FixedSizeListBuilder>(type, std::move(values)));
    }
    case TypeId::kStruct: {
      std::vector<std::unique_ptr<ArrayBuilder>> fields;
      for (const FieldPtr& f : type->fields()) {
        if (f == nullptr) return Status::InvalidArgument("MakeBuilder: struct has a null field");
        STRATA_ASSIGN_OR_RETURN(auto b, MakeBuilder(f->type()));
        fields.push_back(std::move(b));
      }
      return std::unique_ptr<ArrayBuilder>(
          std::make_unique<StructBuilder>(type, std::move(fields)));
    }
    case TypeId::kDictionary: {
      const DataTypePtr& index = type->index_type();
      const DataTypePtr& value = type->dictionary_value_type();
      if (index == nullptr || !index->is_integer()) {
        return Status::InvalidArgument(
            fmt::format("MakeBuilder: dictionary index type must be an integer type, not {}",
                        index ? index->ToString() : "null"));
      }
      if (value == nullptr || !value->is_binary_like()) {
        return Status::InvalidArgument(fmt::format(
            "MakeBuilder: dictionary values must be utf8, large_utf8, binary or large_binary, "
            "not {}",
            value ? value->ToString() : "null"));
      }
      return std::unique_ptr<ArrayBuilder>(std::make_unique<DictionaryBuilder>(type));
    }
  }
  return Status::InvalidArgument(
      fmt::format("MakeBuilder: unsupported type id {}", static_cast<int>(type->id())));
}

// ---- RecordBatchBuilder ----

Result<std::unique_ptr<RecordBatchBuilder>> RecordBatchBuilder::Make(SchemaPtr schema) {
  if (schema == nullptr) return Status::InvalidArgument("RecordBatchBuilder: null schema");
  std::vector<std::unique_ptr<ArrayBuilder>> builders;
  for (const FieldPtr& f : schema->fields()) {
    auto b = MakeBuilder(f->type());
    if (!b.ok()) return b.status().WithContext(fmt::format("column '{}'", f->name()));
    builders.push_back(std::move(b).value());
  }
  return std::unique_ptr<RecordBatchBuilder>(
      new RecordBatchBuilder(std::move(schema), std::move(builders)));
}

Result<RecordBatch> RecordBatchBuilder::Finish() {
  const int64_t rows = num_rows();
  for (size_t i = 0; i < builders_.size(); ++i) {
    if (builders_[i]->length() != rows) {
      return Status::InvalidArgument(fmt::format("column '{}' has {} rows but column '{}' has {}",
                                                 schema_->field(i)->name(), builders_[i]->length(),
                                                 schema_->field(0)->name(), rows));
    }
  }
  std::vector<Array> columns;
  columns.reserve(builders_.size());
  Status first_error;
  for (size_t i = 0; i < builders_.size(); ++i) {
    // Every builder is finished (and so reset) even after an error.
    Result<Array> column = builders_[i]->Finish();
    if (!column.ok()) {
      if (first_error.ok()) {
        first_error =
            column.status().WithContext(fmt::format("column '{}'", schema_->field(i)->name()));
      }
      continue;
    }
    columns.push_back(std::move(column).value());
  }
  if (!first_error.ok()) return first_error;
  // RecordBatch::Make enforces non-nullable fields.
  return RecordBatch::Make(schema_, rows, std::move(columns));
}

}  // namespace strata
