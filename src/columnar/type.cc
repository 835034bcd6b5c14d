// DataType, Field and Schema: construction, equality and formatting.
#include "strata/type.h"

#include <fmt/format.h>

namespace strata {

std::optional<std::string_view> KeyValueMetadata::Get(std::string_view key) const {
  for (const auto& [k, v] : entries_) {
    if (k == key) return std::string_view(v);
  }
  return std::nullopt;
}

void KeyValueMetadata::Set(std::string key, std::string value) {
  for (auto& [k, v] : entries_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

DataType::DataType(TypeId id, Params params)
    : id_(id),
      timezone_(std::move(params.timezone)),
      fields_(std::move(params.fields)),
      list_size_(params.list_size),
      index_type_(std::move(params.index_type)),
      dict_value_type_(std::move(params.dict_value_type)),
      ordered_(params.ordered) {}

bool DataType::is_primitive() const {
  switch (id_) {
    case TypeId::kBool:
    case TypeId::kInt8:
    case TypeId::kInt16:
    case TypeId::kInt32:
    case TypeId::kInt64:
    case TypeId::kUInt8:
    case TypeId::kUInt16:
    case TypeId::kUInt32:
    case TypeId::kUInt64:
    case TypeId::kFloat32:
    case TypeId::kFloat64:
    case TypeId::kTimestamp:
      return true;
    default:
      return false;
  }
}

bool DataType::is_integer() const { return id_ >= TypeId::kInt8 && id_ <= TypeId::kUInt64; }

bool DataType::is_signed_integer() const { return id_ >= TypeId::kInt8 && id_ <= TypeId::kInt64; }

bool DataType::is_floating() const { return id_ == TypeId::kFloat32 || id_ == TypeId::kFloat64; }

bool DataType::is_binary_like() const {
  return id_ == TypeId::kUtf8 || id_ == TypeId::kLargeUtf8 || id_ == TypeId::kBinary ||
         id_ == TypeId::kLargeBinary;
}

bool DataType::is_nested() const {
  return id_ == TypeId::kFixedSizeList || id_ == TypeId::kList || id_ == TypeId::kLargeList ||
         id_ == TypeId::kStruct;
}

int DataType::bit_width() const {
  switch (id_) {
    case TypeId::kBool:
      return 1;
    case TypeId::kInt8:
    case TypeId::kUInt8:
      return 8;
    case TypeId::kInt16:
    case TypeId::kUInt16:
      return 16;
    case TypeId::kInt32:
    case TypeId::kUInt32:
    case TypeId::kFloat32:
      return 32;
    case TypeId::kInt64:
    case TypeId::kUInt64:
    case TypeId::kFloat64:
    case TypeId::kTimestamp:
      return 64;
    default:
      return 0;
  }
}

const DataTypePtr& DataType::value_type() const { return fields_.at(0)->type(); }

bool DataType::Equals(const DataType& other) const {
  if (this == &other) return true;
  if (id_ != other.id_) return false;
  switch (id_) {
    case TypeId::kTimestamp:
      return timezone_ == other.timezone_;
    case TypeId::kFixedSizeList:
      if (list_size_ != other.list_size_) return false;
      [[fallthrough]];
    case TypeId::kList:
    case TypeId::kLargeList:
    case TypeId::kStruct:
      if (fields_.size() != other.fields_.size()) return false;
      for (size_t i = 0; i < fields_.size(); ++i) {
        if (!fields_[i]->Equals(*other.fields_[i])) return false;
      }
      return true;
    case TypeId::kDictionary:
      return ordered_ == other.ordered_ && index_type_->Equals(*other.index_type_) &&
             dict_value_type_->Equals(*other.dict_value_type_);
    default:
      return true;
  }
}

std::string DataType::ToString() const {
  switch (id_) {
    case TypeId::kBool:
      return "bool";
    case TypeId::kInt8:
      return "int8";
    case TypeId::kInt16:
      return "int16";
    case TypeId::kInt32:
      return "int32";
    case TypeId::kInt64:
      return "int64";
    case TypeId::kUInt8:
      return "uint8";
    case TypeId::kUInt16:
      return "uint16";
    case TypeId::kUInt32:
      return "uint32";
    case TypeId::kUInt64:
      return "uint64";
    case TypeId::kFloat32:
      return "float32";
    case TypeId::kFloat64:
      return "float64";
    case TypeId::kUtf8:
      return "utf8";
    case TypeId::kLargeUtf8:
      return "large_utf8";
    case TypeId::kBinary:
      return "binary";
    case TypeId::kLargeBinary:
      return "large_binary";
    case TypeId::kTimestamp:
      return timezone_.empty() ? "timestamp[us]" : fmt::format("timestamp[us, tz={}]", timezone_);
    case TypeId::kFixedSizeList:
      return fmt::format("fixed_size_list<{}>[{}]", fields_[0]->ToString(), list_size_);
    case TypeId::kList:
      return fmt::format("list<{}>", fields_[0]->ToString());
    case TypeId::kLargeList:
      return fmt::format("large_list<{}>", fields_[0]->ToString());
    case TypeId::kStruct: {
      std::string out = "struct<";
      for (size_t i = 0; i < fields_.size(); ++i) {
        if (i) out += ", ";
        out += fields_[i]->ToString();
      }
      return out + ">";
    }
    case TypeId::kDictionary:
      return fmt::format("dictionary<values={}, indices={}{}>", dict_value_type_->ToString(),
                         index_type_->ToString(), ordered_ ? ", ordered" : "");
  }
  return "unknown";
}

namespace {

DataTypePtr Singleton(TypeId id) { return std::make_shared<const DataType>(id); }

// False when a type below `type` (at nesting level `depth`) is deeper than the limit.
bool NestingWithinLimit(const DataType& type, int depth) {
  if (!type.is_nested() && type.id() != TypeId::kDictionary) return true;
  if (depth + 1 > kMaxTypeNestingDepth) return false;
  if (type.id() == TypeId::kDictionary) {
    return type.dictionary_value_type() == nullptr ||
           NestingWithinLimit(*type.dictionary_value_type(), depth + 1);
  }
  for (const FieldPtr& f : type.fields()) {
    if (f != nullptr && f->type() != nullptr && !NestingWithinLimit(*f->type(), depth + 1)) {
      return false;
    }
  }
  return true;
}

}  // namespace

Status CheckTypeNesting(const DataType& type) {
  if (NestingWithinLimit(type, 0)) return Status::OK();
  return Status::InvalidArgument(
      fmt::format("type nests deeper than {} levels, the most supported", kMaxTypeNestingDepth));
}

#define STRATA_SINGLETON_TYPE(fn, id)               \
  DataTypePtr fn() {                                \
    static const DataTypePtr kType = Singleton(id); \
    return kType;                                   \
  }
STRATA_SINGLETON_TYPE(boolean, TypeId::kBool)
STRATA_SINGLETON_TYPE(int8, TypeId::kInt8)
STRATA_SINGLETON_TYPE(int16, TypeId::kInt16)
STRATA_SINGLETON_TYPE(int32, TypeId::kInt32)
STRATA_SINGLETON_TYPE(int64, TypeId::kInt64)
STRATA_SINGLETON_TYPE(uint8, TypeId::kUInt8)
STRATA_SINGLETON_TYPE(uint16, TypeId::kUInt16)
STRATA_SINGLETON_TYPE(uint32, TypeId::kUInt32)
STRATA_SINGLETON_TYPE(uint64, TypeId::kUInt64)
STRATA_SINGLETON_TYPE(float32, TypeId::kFloat32)
STRATA_SINGLETON_TYPE(float64, TypeId::kFloat64)
STRATA_SINGLETON_TYPE(utf8, TypeId::kUtf8)
STRATA_SINGLETON_TYPE(large_utf8, TypeId::kLargeUtf8)
STRATA_SINGLETON_TYPE(binary, TypeId::kBinary)
STRATA_SINGLETON_TYPE(large_binary, TypeId::kLargeBinary)
#undef STRATA_SINGLETON_TYPE

DataTypePtr timestamp_us(std::string timezone) {
  if (timezone.empty()) {
    static const DataTypePtr kNoZone = Singleton(TypeId::kTimestamp);
    return kNoZone;
  }
  return std::make_shared<const DataType>(TypeId::kTimestamp,
                                          DataType::Params{.timezone = std::move(timezone)});
}

DataTypePtr fixed_size_list(FieldPtr value_field, int32_t list_size) {
  return std::make_shared<const DataType>(
      TypeId::kFixedSizeList,
      DataType::Params{.fields = {std::move(value_field)}, .list_size = list_size});
}

DataTypePtr fixed_size_list(DataTypePtr value_type, int32_t list_size) {
  return fixed_size_list(field("item", std::move(value_type)), list_size);
}

DataTypePtr list(FieldPtr value_field) {
  return std::make_shared<const DataType>(TypeId::kList,
                                          DataType::Params{.fields = {std::move(value_field)}});
}

DataTypePtr list(DataTypePtr value_type) { return list(field("item", std::move(value_type))); }

DataTypePtr large_list(FieldPtr value_field) {
  return std::make_shared<const DataType>(TypeId::kLargeList,
                                          DataType::Params{.fields = {std::move(value_field)}});
}

DataTypePtr large_list(DataTypePtr value_type) {
  return large_list(field("item", std::move(value_type)));
}

DataTypePtr struct_(std::vector<FieldPtr> fields) {
  return std::make_shared<const DataType>(TypeId::kStruct,
                                          DataType::Params{.fields = std::move(fields)});
}

DataTypePtr dictionary(DataTypePtr index_type, DataTypePtr value_type, bool ordered) {
  return std::make_shared<const DataType>(TypeId::kDictionary,
                                          DataType::Params{.index_type = std::move(index_type),
                                                           .dict_value_type = std::move(value_type),
                                                           .ordered = ordered});
}

DataTypePtr TypeForId(TypeId id) {
  switch (id) {
    case TypeId::kBool:
      return boolean();
    case TypeId::kInt8:
      return int8();
    case TypeId::kInt16:
      return int16();
    case TypeId::kInt32:
      return int32();
    case TypeId::kInt64:
      return int64();
    case TypeId::kUInt8:
      return uint8();
    case TypeId::kUInt16:
      return uint16();
    case TypeId::kUInt32:
      return uint32();
    case TypeId::kUInt64:
      return uint64();
    case TypeId::kFloat32:
      return float32();
    case TypeId::kFloat64:
      return float64();
    case TypeId::kUtf8:
      return utf8();
    case TypeId::kLargeUtf8:
      return large_utf8();
    case TypeId::kBinary:
      return binary();
    case TypeId::kLargeBinary:
      return large_binary();
    case TypeId::kTimestamp:
      return timestamp_us();
    default:
      return nullptr;
  }
}

FieldPtr Field::WithName(std::string name) const {
  return std::make_shared<const Field>(std::move(name), type_, nullable_, metadata_);
}

FieldPtr Field::WithNullable(bool nullable) const {
  return std::make_shared<const Field>(name_, type_, nullable, metadata_);
}

FieldPtr Field::WithMetadata(KeyValueMetadata metadata) const {
  return std::make_shared<const Field>(name_, type_, nullable_, std::move(metadata));
}

bool Field::Equals(const Field& other, bool check_metadata) const {
  if (this == &other) return true;
  return name_ == other.name_ && nullable_ == other.nullable_ && type_->Equals(*other.type_) &&
         (!check_metadata || metadata_.Equals(other.metadata_));
}

std::string Field::ToString() const {
  return fmt::format("{}: {}{}", name_, type_->ToString(), nullable_ ? "" : " not null");
}

FieldPtr field(std::string name, DataTypePtr type, bool nullable, KeyValueMetadata metadata) {
  return std::make_shared<const Field>(std::move(name), std::move(type), nullable,
                                       std::move(metadata));
}

Schema::Schema(std::vector<FieldPtr> fields, KeyValueMetadata metadata)
    : fields_(std::move(fields)), metadata_(std::move(metadata)) {}

int Schema::GetFieldIndex(std::string_view name) const {
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (fields_[i]->name() == name) return static_cast<int>(i);
  }
  return -1;
}

FieldPtr Schema::GetFieldByName(std::string_view name) const {
  int i = GetFieldIndex(name);
  return i < 0 ? nullptr : fields_[i];
}

Result<SchemaPtr> Schema::Project(const std::vector<int>& indices) const {
  std::vector<FieldPtr> out;
  out.reserve(indices.size());
  for (int i : indices) {
    if (i < 0 || i >= num_fields()) {
      return Status::InvalidArgument(
          fmt::format("column index {} out of range for a schema of {} fields", i, num_fields()));
    }
    out.push_back(fields_[i]);
  }
  return std::make_shared<const Schema>(std::move(out), metadata_);
}

Result<std::vector<int>> Schema::FieldIndices(const std::vector<std::string>& names) const {
  std::vector<int> out;
  out.reserve(names.size());
  for (const auto& name : names) {
    int i = GetFieldIndex(name);
    if (i < 0) return Status::InvalidArgument(fmt::format("no column named '{}'", name));
    out.push_back(i);
  }
  return out;
}

SchemaPtr Schema::WithMetadata(KeyValueMetadata metadata) const {
  return std::make_shared<const Schema>(fields_, std::move(metadata));
}

bool Schema::Equals(const Schema& other, bool check_metadata) const {
  if (this == &other) return true;
  if (fields_.size() != other.fields_.size()) return false;
  for (size_t i = 0; i < fields_.size(); ++i) {
    if (!fields_[i]->Equals(*other.fields_[i], check_metadata)) return false;
  }
  return !check_metadata || metadata_.Equals(other.metadata_);
}

std::string Schema::ToString() const {
  std::string out;
  for (const auto& f : fields_) {
    out += f->ToString();
    out += '\n';
  }
  for (const auto& [k, v] : metadata_.entries()) out += fmt::format("-- metadata: {} = {}\n", k, v);
  return out;
}

SchemaPtr schema(std::vector<FieldPtr> fields, KeyValueMetadata metadata) {
  return std::make_shared<const Schema>(std::move(fields), std::move(metadata));
}

}  // namespace strata
