// Logical types, fields and schemas of strata's Arrow-layout columnar core.
//
// A DataType is immutable and shared (DataTypePtr); build them with the factory functions
// below (int64(), utf8(), list(field), ...). Types compare structurally with Equals().
// Thread safety: all objects here are immutable after construction and safe to share.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/status.h"

namespace strata {

enum class TypeId : uint8_t {
  kBool,
  kInt8,
  kInt16,
  kInt32,
  kInt64,
  kUInt8,
  kUInt16,
  kUInt32,
  kUInt64,
  kFloat32,
  kFloat64,
  kUtf8,
  kLargeUtf8,
  kBinary,
  kLargeBinary,
  kTimestamp,      // int64 microseconds since the Unix epoch, optional time zone
  kFixedSizeList,  // e.g. embedding vectors: fixed_size_list<float32>[1536]
  kList,           // int32 offsets
  kLargeList,      // int64 offsets
  kStruct,
  kDictionary,  // integer indices into a dictionary of (utf8) values
};

class DataType;
class Field;
using DataTypePtr = std::shared_ptr<const DataType>;
using FieldPtr = std::shared_ptr<const Field>;

// Ordered string key/value pairs (Arrow custom_metadata). Keys are unique.
class KeyValueMetadata {
 public:
  KeyValueMetadata() = default;
  explicit KeyValueMetadata(std::vector<std::pair<std::string, std::string>> entries)
      : entries_(std::move(entries)) {}
  // KeyValueMetadata({{"k", "v"}}) (without it that call is ambiguous with the copy ctor).
  // NOLINTNEXTLINE(google-explicit-constructor): implicit, so `{{"k", "v"}}` converts.
  KeyValueMetadata(std::initializer_list<std::pair<std::string, std::string>> entries)
      : entries_(entries) {}

  const std::vector<std::pair<std::string, std::string>>& entries() const { return entries_; }
  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  std::optional<std::string_view> Get(std::string_view key) const;
  // Replaces an existing value.
  void Set(std::string key, std::string value);
  bool Equals(const KeyValueMetadata& other) const { return entries_ == other.entries_; }

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
};

class DataType {
 public:
  TypeId id() const { return id_; }

  // Fixed-width primitive (bool counts as 1 bit, see bit_width()).
  bool is_primitive() const;
  bool is_integer() const;
  bool is_signed_integer() const;
  bool is_floating() const;
  bool is_numeric() const { return is_integer() || is_floating(); }
  // utf8, large_utf8, binary, large_binary.
  bool is_binary_like() const;
  bool is_string() const { return id_ == TypeId::kUtf8 || id_ == TypeId::kLargeUtf8; }
  bool is_nested() const;
  // Width of one value in bits for fixed-width types (bool: 1, timestamp: 64); 0 otherwise.
  int bit_width() const;

  // Timestamp: time zone, empty when none.
  const std::string& timezone() const { return timezone_; }
  // List, large list, fixed size list: the element field. Struct: the fields.
  const std::vector<FieldPtr>& fields() const { return fields_; }
  const FieldPtr& value_field() const { return fields_.at(0); }
  const DataTypePtr& value_type() const;
  // Fixed size list: elements per list.
  int32_t list_size() const { return list_size_; }
  // Dictionary: index type (a signed/unsigned integer) and dictionary value type.
  const DataTypePtr& index_type() const { return index_type_; }
  const DataTypePtr& dictionary_value_type() const { return dict_value_type_; }
  bool ordered() const { return ordered_; }

  // Structural equality (field names, nullability and metadata of children included).
  bool Equals(const DataType& other) const;
  // "int64", "list<item: utf8>", "timestamp[us, tz=UTC]", ...
  std::string ToString() const;

  // Factories live in free functions below; this is the general constructor.
  struct Params {
    std::string timezone;
    std::vector<FieldPtr> fields;
    int32_t list_size = 0;
    DataTypePtr index_type;
    DataTypePtr dict_value_type;
    bool ordered = false;
  };
  DataType(TypeId id, Params params);
  explicit DataType(TypeId id) : DataType(id, Params{}) {}

 private:
  TypeId id_;
  std::string timezone_;
  std::vector<FieldPtr> fields_;
  int32_t list_size_ = 0;
  DataTypePtr index_type_;
  DataTypePtr dict_value_type_;
  bool ordered_ = false;
};

inline bool operator==(const DataType& a, const DataType& b) { return a.Equals(b); }

// Parameter-free types are singletons.
DataTypePtr boolean();
DataTypePtr int8();
DataTypePtr int16();
DataTypePtr int32();
DataTypePtr int64();
DataTypePtr uint8();
DataTypePtr uint16();
DataTypePtr uint32();
DataTypePtr uint64();
DataTypePtr float32();
DataTypePtr float64();
DataTypePtr utf8();
DataTypePtr large_utf8();
DataTypePtr binary();
DataTypePtr large_binary();
DataTypePtr timestamp_us(std::string timezone = "");
DataTypePtr fixed_size_list(FieldPtr value_field, int32_t list_size);
DataTypePtr fixed_size_list(DataTypePtr value_type, int32_t list_size);  // item, nullable
DataTypePtr list(FieldPtr value_field);
DataTypePtr list(DataTypePtr value_type);  // element named "item", nullable
DataTypePtr large_list(FieldPtr value_field);
DataTypePtr large_list(DataTypePtr value_type);
DataTypePtr struct_(std::vector<FieldPtr> fields);
DataTypePtr dictionary(DataTypePtr index_type, DataTypePtr value_type, bool ordered = false);
// The parameter-free type for an id; nullptr for parametric ids.
DataTypePtr TypeForId(TypeId id);

// How deeply types may nest: list, large_list, fixed_size_list, struct and dictionary each add
// one level (int64: 0, list<int64>: 1, list<struct<a: dictionary<utf8>>>: 3). The one limit
// for the type parser (schema_json.h), the IPC writer and reader (ipc.h) and
// Array::Validate. It is what Arrow IPC metadata can carry under the reader's default
// flatbuffer depth limit (ipc::ReadOptions::max_flatbuffer_depth = 64: the footer or message,
// the schema, then one table per nesting level and one for the leaf's type), and it bounds
// every recursion over a type.
inline constexpr int kMaxTypeNestingDepth = 60;

// InvalidArgument when `type` nests deeper than kMaxTypeNestingDepth. Stops descending at the
// limit, so a hostile type cannot exhaust the stack.
Status CheckTypeNesting(const DataType& type);

class Field {
 public:
  Field(std::string name, DataTypePtr type, bool nullable = true, KeyValueMetadata metadata = {})
      : name_(std::move(name)),
        type_(std::move(type)),
        nullable_(nullable),
        metadata_(std::move(metadata)) {}

  const std::string& name() const { return name_; }
  const DataTypePtr& type() const { return type_; }
  bool nullable() const { return nullable_; }
  const KeyValueMetadata& metadata() const { return metadata_; }

  FieldPtr WithName(std::string name) const;
  FieldPtr WithNullable(bool nullable) const;
  FieldPtr WithMetadata(KeyValueMetadata metadata) const;

  bool Equals(const Field& other, bool check_metadata = true) const;
  // "name: type" plus " not null" when not nullable.
  std::string ToString() const;

 private:
  std::string name_;
  DataTypePtr type_;
  bool nullable_;
  KeyValueMetadata metadata_;
};

FieldPtr field(std::string name, DataTypePtr type, bool nullable = true,
               KeyValueMetadata metadata = {});

class Schema;
using SchemaPtr = std::shared_ptr<const Schema>;

class Schema {
 public:
  explicit Schema(std::vector<FieldPtr> fields, KeyValueMetadata metadata = {});

  const std::vector<FieldPtr>& fields() const { return fields_; }
  int num_fields() const { return static_cast<int>(fields_.size()); }
  const FieldPtr& field(int i) const { return fields_.at(i); }
  const KeyValueMetadata& metadata() const { return metadata_; }

  // Index of the first field with this name, or -1.
  int GetFieldIndex(std::string_view name) const;
  FieldPtr GetFieldByName(std::string_view name) const;

  // Schema of the given columns in the given order. InvalidArgument for a bad index.
  Result<SchemaPtr> Project(const std::vector<int>& indices) const;
  // Indices of named columns; InvalidArgument naming the first unknown one.
  Result<std::vector<int>> FieldIndices(const std::vector<std::string>& names) const;
  SchemaPtr WithMetadata(KeyValueMetadata metadata) const;

  bool Equals(const Schema& other, bool check_metadata = true) const;
  // One field per line.
  std::string ToString() const;

 private:
  std::vector<FieldPtr> fields_;
  KeyValueMetadata metadata_;
};

SchemaPtr schema(std::vector<FieldPtr> fields, KeyValueMetadata metadata = {});

}  // namespace strata
