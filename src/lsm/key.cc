// Order-preserving byte encoding of primary keys (see key.h): the one representation every
// lsm structure compares, hashes and stores.
#include "lsm/key.h"

#include <cstdint>
#include <limits>

#include "fmt/format.h"
#include "strata/builder.h"
#include "strata/table.h"

namespace strata::lsm {
namespace {

constexpr uint64_t kSignBit = uint64_t{1} << 63;

void PutBigEndian64(std::string* out, uint64_t value) {
  char bytes[8];
  for (int i = 7; i >= 0; --i) {
    bytes[i] = static_cast<char>(value & 0xff);
    value >>= 8;
  }
  out->append(bytes, 8);
}

uint64_t GetBigEndian64(std::string_view bytes) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value = (value << 8) | static_cast<uint8_t>(bytes[i]);
  return value;
}

std::string EncodeSigned(int64_t value) {
  std::string out;
  PutBigEndian64(&out, static_cast<uint64_t>(value) ^ kSignBit);
  return out;
}

std::string EncodeUnsigned(uint64_t value) {
  std::string out;
  PutBigEndian64(&out, value);
  return out;
}

bool IsUnsignedInteger(TypeId id) {
  return id == TypeId::kUInt8 || id == TypeId::kUInt16 || id == TypeId::kUInt32;
}

// The inclusive value range of an integer key type.
std::pair<int64_t, int64_t> IntegerRange(TypeId id) {
  switch (id) {
    case TypeId::kInt8:
      return {std::numeric_limits<int8_t>::min(), std::numeric_limits<int8_t>::max()};
    case TypeId::kInt16:
      return {std::numeric_limits<int16_t>::min(), std::numeric_limits<int16_t>::max()};
    case TypeId::kInt32:
      return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    case TypeId::kUInt8:
      return {0, std::numeric_limits<uint8_t>::max()};
    case TypeId::kUInt16:
      return {0, std::numeric_limits<uint16_t>::max()};
    case TypeId::kUInt32:
      return {0, std::numeric_limits<uint32_t>::max()};
    default:  // int64, timestamp
      return {std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()};
  }
}

Status CheckSupported(const DataType& type) {
  if (IsSupportedKeyType(type)) return Status::OK();
  return Status::InvalidArgument(fmt::format(
      "type {} cannot be a key; expected utf8, large_utf8, an integer up to uint32/int64, or "
      "timestamp",
      type.ToString()));
}

// The value of row `row` as a signed 64-bit integer (every integer key type fits).
int64_t IntegerAt(const Array& column, int64_t row) {
  switch (column.type_id()) {
    case TypeId::kInt8:
      return column.Value<int8_t>(row);
    case TypeId::kInt16:
      return column.Value<int16_t>(row);
    case TypeId::kInt32:
      return column.Value<int32_t>(row);
    case TypeId::kUInt8:
      return column.Value<uint8_t>(row);
    case TypeId::kUInt16:
      return column.Value<uint16_t>(row);
    case TypeId::kUInt32:
      return column.Value<uint32_t>(row);
    default:  // int64, timestamp
      return column.Value<int64_t>(row);
  }
}

// Encodes row `row`, which the caller checked is in range, non-null and of a supported type.
std::string EncodeRow(const Array& column, int64_t row) {
  const TypeId id = column.type_id();
  if (id == TypeId::kUtf8 || id == TypeId::kLargeUtf8) {
    return std::string(column.StringValue(row));
  }
  const int64_t value = IntegerAt(column, row);
  if (IsUnsignedInteger(id)) return EncodeUnsigned(static_cast<uint64_t>(value));
  return EncodeSigned(value);
}

}  // namespace

bool IsSupportedKeyType(const DataType& type) { return table::IsPrimaryKeyType(type); }

Result<std::vector<std::string>> EncodeKeys(const Array& column, std::string_view column_name) {
  if (!IsSupportedKeyType(*column.type())) {
    return Status::InvalidArgument(fmt::format(
        "key column '{}' has type {}; expected utf8, large_utf8, an integer up to uint32/int64, "
        "or timestamp",
        column_name, column.type()->ToString()));
  }
  std::vector<std::string> keys;
  keys.reserve(static_cast<size_t>(column.length()));
  for (int64_t row = 0; row < column.length(); ++row) {
    if (column.IsNull(row)) {
      return Status::InvalidArgument(fmt::format(
          "key column '{}' is null at row {}; keys must not be null", column_name, row));
    }
    keys.push_back(EncodeRow(column, row));
  }
  return keys;
}

Result<expr::Scalar> KeyScalar(const Array& column, int64_t row) {
  STRATA_RETURN_IF_ERROR(CheckSupported(*column.type()));
  if (row < 0 || row >= column.length()) {
    return Status::InvalidArgument(
        fmt::format("key row {} is out of range for a column of {} rows", row, column.length()));
  }
  if (column.IsNull(row)) {
    return Status::InvalidArgument(fmt::format("key at row {} is null", row));
  }
  const TypeId id = column.type_id();
  if (id == TypeId::kUtf8 || id == TypeId::kLargeUtf8) {
    return expr::Scalar::String(std::string(column.StringValue(row)));
  }
  const int64_t value = IntegerAt(column, row);
  if (id == TypeId::kTimestamp) return expr::Scalar::Timestamp(value);
  if (IsUnsignedInteger(id)) return expr::Scalar::UInt64(static_cast<uint64_t>(value));
  return expr::Scalar::Int64(value);
}

Result<std::string> EncodeKeyScalar(const expr::Scalar& key, const DataType& type) {
  STRATA_RETURN_IF_ERROR(CheckSupported(type));
  using Kind = expr::Scalar::Kind;
  const TypeId id = type.id();
  if (key.is_null()) {
    return Status::InvalidArgument(
        fmt::format("a null key cannot be encoded (key type {})", type.ToString()));
  }
  if (id == TypeId::kUtf8 || id == TypeId::kLargeUtf8) {
    if (key.kind() != Kind::kString) {
      return Status::InvalidArgument(
          fmt::format("key {} does not match key type {}", key.ToString(), type.ToString()));
    }
    return key.string_value();
  }
  // Integer key types (and timestamps) take any integral scalar within their range.
  bool in_int64 = true;
  int64_t value = 0;
  switch (key.kind()) {
    case Kind::kInt64:
      value = key.int64_value();
      break;
    case Kind::kTimestamp:
      value = key.timestamp_micros();
      break;
    case Kind::kUInt64:
      in_int64 = key.uint64_value() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
      value = static_cast<int64_t>(key.uint64_value());
      break;
    default:
      return Status::InvalidArgument(
          fmt::format("key {} does not match key type {}", key.ToString(), type.ToString()));
  }
  const auto [lo, hi] = IntegerRange(id);
  if (!in_int64 || value < lo || value > hi) {
    return Status::InvalidArgument(
        fmt::format("key {} is out of range for key type {}", key.ToString(), type.ToString()));
  }
  if (IsUnsignedInteger(id)) return EncodeUnsigned(static_cast<uint64_t>(value));
  return EncodeSigned(value);
}

Result<expr::Scalar> DecodeKey(std::string_view encoded, const DataType& type) {
  STRATA_RETURN_IF_ERROR(CheckSupported(type));
  const TypeId id = type.id();
  if (id == TypeId::kUtf8 || id == TypeId::kLargeUtf8) {
    return expr::Scalar::String(std::string(encoded));
  }
  if (encoded.size() != 8) {
    return Status::Corruption(
        fmt::format("encoded {} key has {} bytes; expected 8", type.ToString(), encoded.size()));
  }
  const uint64_t raw = GetBigEndian64(encoded);
  const int64_t value =
      IsUnsignedInteger(id) ? static_cast<int64_t>(raw) : static_cast<int64_t>(raw ^ kSignBit);
  const auto [lo, hi] = IntegerRange(id);
  if ((IsUnsignedInteger(id) && raw > static_cast<uint64_t>(hi)) || value < lo || value > hi) {
    return Status::Corruption(
        fmt::format("encoded key decodes to {}, out of range for {}", value, type.ToString()));
  }
  if (id == TypeId::kTimestamp) return expr::Scalar::Timestamp(value);
  if (IsUnsignedInteger(id)) return expr::Scalar::UInt64(static_cast<uint64_t>(value));
  return expr::Scalar::Int64(value);
}

Result<Array> KeysToArray(const std::vector<expr::Scalar>& keys, const DataTypePtr& type) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ArrayBuilder> builder, MakeBuilder(type));
  for (size_t i = 0; i < keys.size(); ++i) {
    const expr::Scalar& key = keys[i];
    auto mismatch = [&] {
      return Status::InvalidArgument(fmt::format("key {} ({}) does not fit the key column type {}",
                                                 i, key.ToString(), type->ToString()));
    };
    switch (type->id()) {
      case TypeId::kUtf8:
      case TypeId::kBinary:
        if (key.kind() != expr::Scalar::Kind::kString) return mismatch();
        STRATA_RETURN_IF_ERROR(static_cast<BinaryBuilder&>(*builder).Append(key.string_value()));
        break;
      case TypeId::kLargeUtf8:
      case TypeId::kLargeBinary:
        if (key.kind() != expr::Scalar::Kind::kString) return mismatch();
        STRATA_RETURN_IF_ERROR(
            static_cast<LargeBinaryBuilder&>(*builder).Append(key.string_value()));
        break;
      default: {
        // Integer and timestamp keys go through their encoded form, which checks the range.
        STRATA_RETURN_IF_ERROR(EncodeKeyScalar(key, *type).status());
        int64_t value = key.kind() == expr::Scalar::Kind::kUInt64
                            ? static_cast<int64_t>(key.uint64_value())
                            : key.int64_value();
        switch (type->id()) {
          case TypeId::kInt8:
            static_cast<NumericBuilder<int8_t>&>(*builder).Append(static_cast<int8_t>(value));
            break;
          case TypeId::kInt16:
            static_cast<NumericBuilder<int16_t>&>(*builder).Append(static_cast<int16_t>(value));
            break;
          case TypeId::kInt32:
            static_cast<NumericBuilder<int32_t>&>(*builder).Append(static_cast<int32_t>(value));
            break;
          case TypeId::kInt64:
          case TypeId::kTimestamp:
            static_cast<NumericBuilder<int64_t>&>(*builder).Append(value);
            break;
          case TypeId::kUInt8:
            static_cast<NumericBuilder<uint8_t>&>(*builder).Append(static_cast<uint8_t>(value));
            break;
          case TypeId::kUInt16:
            static_cast<NumericBuilder<uint16_t>&>(*builder).Append(static_cast<uint16_t>(value));
            break;
          case TypeId::kUInt32:
            static_cast<NumericBuilder<uint32_t>&>(*builder).Append(static_cast<uint32_t>(value));
            break;
          default:
            return mismatch();
        }
      }
    }
  }
  return builder->Finish();
}

}  // namespace strata::lsm
