// Array::Equals: logical equality that ignores offsets, padding and the bytes under null
// slots, compares floats with NaN equal to NaN, and compares dictionary arrays by the values
// their indices decode to.
#include <cmath>
#include <cstring>

#include "strata/array.h"

namespace strata {
namespace {

bool RangeEquals(const Array& a, int64_t a_start, const Array& b, int64_t b_start, int64_t length);

// A dictionary row decodes to null when the row is null or its entry in the dictionary is;
// such rows equal each other however they are encoded.
bool DictionaryRangeEquals(const Array& a, int64_t a_start, const Array& b, int64_t b_start,
                           int64_t length) {
  const Array da = a.dictionary(), db = b.dictionary();
  for (int64_t k = 0; k < length; ++k) {
    const int64_t i = a_start + k, j = b_start + k;
    const bool a_null = a.IsNull(i) || da.IsNull(a.DictionaryIndex(i));
    const bool b_null = b.IsNull(j) || db.IsNull(b.DictionaryIndex(j));
    if (a_null != b_null) return false;
    if (!a_null && !RangeEquals(da, a.DictionaryIndex(i), db, b.DictionaryIndex(j), 1)) {
      return false;
    }
  }
  return true;
}

template <typename T>
bool FloatEquals(T x, T y) {
  return x == y || (std::isnan(x) && std::isnan(y));
}

// Both rows are valid.
bool ValueEquals(const Array& a, int64_t i, const Array& b, int64_t j) {
  switch (a.type_id()) {
    case TypeId::kBool:
      return a.BoolValue(i) == b.BoolValue(j);
    case TypeId::kInt8:
    case TypeId::kUInt8:
      return a.Value<uint8_t>(i) == b.Value<uint8_t>(j);
    case TypeId::kInt16:
    case TypeId::kUInt16:
      return a.Value<uint16_t>(i) == b.Value<uint16_t>(j);
    case TypeId::kInt32:
    case TypeId::kUInt32:
      return a.Value<uint32_t>(i) == b.Value<uint32_t>(j);
    case TypeId::kInt64:
    case TypeId::kUInt64:
    case TypeId::kTimestamp:
      return a.Value<uint64_t>(i) == b.Value<uint64_t>(j);
    case TypeId::kFloat32:
      return FloatEquals(a.Value<float>(i), b.Value<float>(j));
    case TypeId::kFloat64:
      return FloatEquals(a.Value<double>(i), b.Value<double>(j));
    case TypeId::kUtf8:
    case TypeId::kLargeUtf8:
    case TypeId::kBinary:
    case TypeId::kLargeBinary:
      return a.StringValue(i) == b.StringValue(j);
    case TypeId::kList:
    case TypeId::kLargeList:
    case TypeId::kFixedSizeList: {
      const auto [ab, ae] = a.ValueRange(i);
      const auto [bb, be] = b.ValueRange(j);
      return ae - ab == be - bb && RangeEquals(a.values_array(), ab, b.values_array(), bb, ae - ab);
    }
    case TypeId::kStruct:
      for (int k = 0; k < a.num_fields(); ++k) {
        if (!RangeEquals(Array(a.data()->children[k]), a.offset() + i, Array(b.data()->children[k]),
                         b.offset() + j, 1)) {
          return false;
        }
      }
      return true;
    case TypeId::kDictionary:
      return DictionaryRangeEquals(a, i, b, j, 1);
  }
  return false;
}

bool RangeEquals(const Array& a, int64_t a_start, const Array& b, int64_t b_start, int64_t length) {
  if (length == 0) return true;
  if (a.type_id() == TypeId::kDictionary) {
    return DictionaryRangeEquals(a, a_start, b, b_start, length);
  }
  const bool no_nulls = a.null_count() == 0 && b.null_count() == 0;
  // Fast path: integers without nulls compare as bytes.
  if (no_nulls && a.type()->is_integer()) {
    const int width = a.type()->bit_width() / 8;
    return std::memcmp(a.data()->buffers[1].data() + (a.offset() + a_start) * width,
                       b.data()->buffers[1].data() + (b.offset() + b_start) * width,
                       static_cast<size_t>(length * width)) == 0;
  }
  if (a.type_id() == TypeId::kStruct && no_nulls) {
    for (int k = 0; k < a.num_fields(); ++k) {
      if (!RangeEquals(Array(a.data()->children[k]), a.offset() + a_start,
                       Array(b.data()->children[k]), b.offset() + b_start, length)) {
        return false;
      }
    }
    return true;
  }
  for (int64_t k = 0; k < length; ++k) {
    const bool a_null = a.IsNull(a_start + k), b_null = b.IsNull(b_start + k);
    if (a_null != b_null) return false;
    if (!a_null && !ValueEquals(a, a_start + k, b, b_start + k)) return false;
  }
  return true;
}

}  // namespace

bool Array::Equals(const Array& other) const {
  if (!is_valid_handle() || !other.is_valid_handle()) {
    return is_valid_handle() == other.is_valid_handle();
  }
  if (data_ == other.data_) return true;
  if (!type()->Equals(*other.type()) || length() != other.length()) return false;
  return RangeEquals(*this, 0, other, 0, length());
}

}  // namespace strata
