// Builders: append values one at a time (or from other arrays) and Finish() into an Array.
//
// Every builder is created for one DataType; MakeBuilder() returns the right builder for any
// type (nested types get nested builders). Finish() returns a validated Array and resets the
// builder for reuse. When Finish() fails because rows are incomplete (struct field lengths,
// fixed-size-list element counts, RecordBatchBuilder column lengths) the builder is left as
// it was, so the caller can complete it; after any other Finish() error (e.g. invalid UTF-8)
// the builder is reset. Builders are not thread safe.
//
// Nested builders: ListBuilder / LargeList / FixedSizeList — call Append() to start a row,
// then append its elements to value_builder(). StructBuilder — Append() a row, then append
// exactly one value (or null) to every field_builder(i). AppendNull() on a nested builder
// appends the null row and keeps children consistent (fixed-size lists and structs append
// placeholder child values).
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "strata/array.h"
#include "strata/buffer.h"
#include "strata/record_batch.h"
#include "strata/status.h"
#include "strata/type.h"

namespace strata {

class ArrayBuilder {
 public:
  explicit ArrayBuilder(DataTypePtr type) : type_(std::move(type)) {}
  virtual ~ArrayBuilder() = default;
  ArrayBuilder(const ArrayBuilder&) = delete;
  ArrayBuilder& operator=(const ArrayBuilder&) = delete;

  const DataTypePtr& type() const { return type_; }
  int64_t length() const { return length_; }
  int64_t null_count() const { return null_count_; }

  virtual void AppendNull() = 0;
  virtual void AppendNulls(int64_t n);
  // Appends rows [offset, offset + length) of `array`, which must have this builder's type
  // (InvalidArgument otherwise).
  virtual Status AppendArraySlice(const Array& array, int64_t offset, int64_t length) = 0;
  // Capacity hint for `additional` more rows.
  virtual void Reserve(int64_t additional);
  virtual Result<Array> Finish() = 0;

 protected:
  // Validity bookkeeping shared by all builders.
  void AppendValidity(bool valid);
  void AppendValidityFrom(const Array& array, int64_t offset, int64_t length);
  // Moves the validity bitmap out (empty Buffer when there were no nulls) and resets counts.
  Buffer FinishValidity();

  DataTypePtr type_;
  int64_t length_ = 0;
  int64_t null_count_ = 0;
  BufferBuilder validity_;
};

class BooleanBuilder final : public ArrayBuilder {
 public:
  BooleanBuilder() : ArrayBuilder(boolean()) {}
  void Append(bool value);
  void AppendNull() override;
  Status AppendArraySlice(const Array& array, int64_t offset, int64_t length) override;
  Result<Array> Finish() override;

 private:
  BufferBuilder values_;
};

// int8 .. uint64, float32/64 and timestamp (T = int64_t with a timestamp type).
template <typename T>
class NumericBuilder final : public ArrayBuilder {
 public:
  explicit NumericBuilder(DataTypePtr type);
  void Append(T value);
  void AppendValues(const T* values, int64_t n);
  void AppendNull() override;
  Status AppendArraySlice(const Array& array, int64_t offset, int64_t length) override;
  void Reserve(int64_t additional) override;
  Result<Array> Finish() override;

 private:
  BufferBuilder values_;
};

using Int8Builder = NumericBuilder<int8_t>;
using Int16Builder = NumericBuilder<int16_t>;
using Int32Builder = NumericBuilder<int32_t>;
using Int64Builder = NumericBuilder<int64_t>;
using UInt8Builder = NumericBuilder<uint8_t>;
using UInt16Builder = NumericBuilder<uint16_t>;
using UInt32Builder = NumericBuilder<uint32_t>;
using UInt64Builder = NumericBuilder<uint64_t>;
using Float32Builder = NumericBuilder<float>;
using Float64Builder = NumericBuilder<double>;
using TimestampBuilder = NumericBuilder<int64_t>;  // construct with timestamp_us(tz)

// utf8 / binary (OffsetT = int32_t) and large_utf8 / large_binary (int64_t). Append() does
// not check UTF-8; Finish() does for utf8 types (InvalidArgument naming the row).
template <typename OffsetT>
class BaseBinaryBuilder final : public ArrayBuilder {
 public:
  explicit BaseBinaryBuilder(DataTypePtr type);
  // InvalidArgument when the data would exceed the offset type's range.
  Status Append(std::string_view value);
  void AppendNull() override;
  Status AppendArraySlice(const Array& array, int64_t offset, int64_t length) override;
  void Reserve(int64_t additional) override;
  // Ensures room for `additional` more bytes of values (on top of Reserve's rows).
  void ReserveData(int64_t additional) { data_.Reserve(additional); }
  Result<Array> Finish() override;

 private:
  BufferBuilder offsets_;
  BufferBuilder data_;
};

using BinaryBuilder = BaseBinaryBuilder<int32_t>;       // utf8 or binary
using LargeBinaryBuilder = BaseBinaryBuilder<int64_t>;  // large_utf8 or large_binary

// list (OffsetT = int32_t) and large_list (int64_t).
template <typename OffsetT>
class BaseListBuilder final : public ArrayBuilder {
 public:
  BaseListBuilder(DataTypePtr type, std::unique_ptr<ArrayBuilder> value_builder);
  // Starts a new (valid) list row; its elements go to value_builder().
  void Append();
  void AppendNull() override;
  Status AppendArraySlice(const Array& array, int64_t offset, int64_t length) override;
  ArrayBuilder* value_builder() const { return values_.get(); }
  Result<Array> Finish() override;

 private:
  BufferBuilder offsets_;
  std::unique_ptr<ArrayBuilder> values_;
};

using ListBuilder = BaseListBuilder<int32_t>;
using LargeListBuilder = BaseListBuilder<int64_t>;

class FixedSizeListBuilder final : public ArrayBuilder {
 public:
  FixedSizeListBuilder(DataTypePtr type, std::unique_ptr<ArrayBuilder> value_builder);
  // Starts a valid row; exactly list_size elements must follow on value_builder().
  void Append();
  // Appends a null row and list_size null elements.
  void AppendNull() override;
  Status AppendArraySlice(const Array& array, int64_t offset, int64_t length) override;
  ArrayBuilder* value_builder() const { return values_.get(); }
  // InvalidArgument when the element count is not length() * list_size.
  Result<Array> Finish() override;

 private:
  std::unique_ptr<ArrayBuilder> values_;
};

class StructBuilder final : public ArrayBuilder {
 public:
  StructBuilder(DataTypePtr type, std::vector<std::unique_ptr<ArrayBuilder>> field_builders);
  // Marks the row valid; append one value to each field builder.
  void Append();
  // A null row; appends a null to every field builder.
  void AppendNull() override;
  Status AppendArraySlice(const Array& array, int64_t offset, int64_t length) override;
  int num_fields() const { return static_cast<int>(fields_.size()); }
  ArrayBuilder* field_builder(int i) const { return fields_.at(i).get(); }
  // InvalidArgument when a field builder's length differs from length().
  Result<Array> Finish() override;

 private:
  std::vector<std::unique_ptr<ArrayBuilder>> fields_;
};

// dictionary<index type, utf8 / large_utf8 / binary / large_binary values>: de-duplicates
// values. AppendArraySlice() takes dictionary arrays of this type (decoding them, whatever
// their dictionary) or plain arrays of the value type; a row whose index points at a null
// dictionary entry is appended as null.
class DictionaryBuilder final : public ArrayBuilder {
 public:
  explicit DictionaryBuilder(DataTypePtr type);
  // InvalidArgument when the dictionary outgrows the index type.
  Status Append(std::string_view value);
  void AppendNull() override;
  Status AppendArraySlice(const Array& array, int64_t offset, int64_t length) override;
  Result<Array> Finish() override;

 private:
  std::unordered_map<std::string, int64_t> memo_;
  std::vector<std::string_view> order_;  // points into memo_ keys
  std::vector<int64_t> indices_;
};

// A builder for any supported type. InvalidArgument for an unsupported dictionary value or
// index type.
Result<std::unique_ptr<ArrayBuilder>> MakeBuilder(const DataTypePtr& type);

// One builder per field of a schema.
class RecordBatchBuilder {
 public:
  static Result<std::unique_ptr<RecordBatchBuilder>> Make(SchemaPtr schema);

  const SchemaPtr& schema() const { return schema_; }
  ArrayBuilder* builder(int i) const { return builders_.at(i).get(); }
  template <typename B>
  B* GetAs(int i) const {
    return static_cast<B*>(builders_.at(i).get());
  }
  // Rows in the first column's builder.
  int64_t num_rows() const { return builders_.empty() ? 0 : builders_[0]->length(); }
  // InvalidArgument when columns have different lengths. Resets the builders.
  Result<RecordBatch> Finish();

 private:
  RecordBatchBuilder(SchemaPtr schema, std::vector<std::unique_ptr<ArrayBuilder>> builders)
      : schema_(std::move(schema)), builders_(std::move(builders)) {}

  SchemaPtr schema_;
  std::vector<std::unique_ptr<ArrayBuilder>> builders_;
};

// Concatenates arrays of one type into a new array (InvalidArgument on a type mismatch or
// an empty input). Dictionary arrays: when all inputs share one (equal) dictionary it is
// kept and only indices are concatenated; otherwise string/binary dictionaries are unified
// (decoded and re-encoded, de-duplicated) and other value types get their dictionaries
// appended back to back. InvalidArgument when the result outgrows the index type.
Result<Array> Concatenate(const std::vector<Array>& arrays);
// Concatenates batches of one schema (metadata may differ; the first batch's schema is used).
Result<RecordBatch> ConcatenateBatches(const std::vector<RecordBatch>& batches);
// Rows at `indices` (each in [0, array.length())) as a new array. Dictionary arrays keep
// their dictionary.
Result<Array> Take(const Array& array, const std::vector<int64_t>& indices);

}  // namespace strata
