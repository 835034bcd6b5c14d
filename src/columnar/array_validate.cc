// Array::Validate / ValidateFull: checks an ArrayData of unknown origin (e.g. read from an
// IPC file) against the layout documented in array.h before anything dereferences it.
//
// Invariant: nothing here reads a byte of a buffer before checking that the buffer is large
// enough, and all size arithmetic is overflow-checked, so malicious input yields Corruption.
#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>

#include "columnar/columnar_internal.h"
#include "strata/array.h"

namespace strata {
namespace {

Status Corrupt(std::string message) { return Status::Corruption(std::move(message)); }

bool CheckedAdd(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }
bool CheckedMul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }

// Bytes usable in a buffer: an absent buffer holds none.
int64_t Available(const Buffer& b) { return b.is_null() ? 0 : b.size(); }

bool IsAligned(const Buffer& b, size_t alignment) {
  return b.is_null() || reinterpret_cast<uintptr_t>(b.data()) % alignment == 0;
}

// Checks that a type tree is well-formed (no null pointers, right number of children)
// so that DataType::Equals and the accessors can walk it safely.
Status ValidateType(const DataTypePtr& type, int depth) {
  if (type == nullptr) return Corrupt("type is null");
  // Deeper nesting is rejected so that recursion over a hostile type cannot exhaust the stack.
  if (depth > kMaxTypeNestingDepth) {
    return Corrupt(fmt::format("type nesting deeper than {} levels", kMaxTypeNestingDepth));
  }
  switch (type->id()) {
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
    case TypeId::kUtf8:
    case TypeId::kLargeUtf8:
    case TypeId::kBinary:
    case TypeId::kLargeBinary:
    case TypeId::kTimestamp:
      return Status::OK();
    case TypeId::kFixedSizeList:
      if (type->list_size() < 0) {
        return Corrupt(fmt::format("fixed_size_list has negative list size {}", type->list_size()));
      }
      [[fallthrough]];
    case TypeId::kList:
    case TypeId::kLargeList:
      if (type->fields().size() != 1) {
        return Corrupt(
            fmt::format("list type has {} value fields, expected 1", type->fields().size()));
      }
      [[fallthrough]];
    case TypeId::kStruct:
      for (const FieldPtr& f : type->fields()) {
        if (f == nullptr) return Corrupt("type has a null field");
        Status s = ValidateType(f->type(), depth + 1);
        if (!s.ok()) return s.WithContext(fmt::format("field '{}'", f->name()));
      }
      return Status::OK();
    case TypeId::kDictionary:
      if (type->index_type() == nullptr || !type->index_type()->is_integer()) {
        return Corrupt(fmt::format("dictionary index type must be an integer type, got {}",
                                   type->index_type() ? type->index_type()->ToString() : "null"));
      }
      return ValidateType(type->dictionary_value_type(), depth + 1)
          .WithContext("dictionary value type");
  }
  return Corrupt(fmt::format("unknown type id {}", static_cast<int>(type->id())));
}

class Validator {
 public:
  explicit Validator(bool full) : full_(full) {}

  // REQUIRES: ValidateType(d.type) passed.
  Status Validate(const ArrayData& d, int depth) {
    STRATA_RETURN_IF_ERROR(ValidateCommon(d));
    const DataType& type = *d.type;
    switch (type.id()) {
      case TypeId::kUtf8:
      case TypeId::kBinary:
        return ValidateBinary<int32_t>(d);
      case TypeId::kLargeUtf8:
      case TypeId::kLargeBinary:
        return ValidateBinary<int64_t>(d);
      case TypeId::kList:
        return ValidateList<int32_t>(d, depth);
      case TypeId::kLargeList:
        return ValidateList<int64_t>(d, depth);
      case TypeId::kFixedSizeList:
        return ValidateFixedSizeList(d, depth);
      case TypeId::kStruct:
        return ValidateStruct(d, depth);
      case TypeId::kDictionary:
        return ValidateDictionary(d, depth);
      default:
        return ValidateFixedWidth(d);
    }
  }

 private:
  static size_t ExpectedBuffers(TypeId id) {
    switch (id) {
      case TypeId::kUtf8:
      case TypeId::kBinary:
      case TypeId::kLargeUtf8:
      case TypeId::kLargeBinary:
        return 3;
      case TypeId::kFixedSizeList:
      case TypeId::kStruct:
        return 1;
      default:
        return 2;
    }
  }

  static size_t ExpectedChildren(const DataType& type) {
    switch (type.id()) {
      case TypeId::kList:
      case TypeId::kLargeList:
      case TypeId::kFixedSizeList:
        return 1;
      case TypeId::kStruct:
        return type.fields().size();
      default:
        return 0;
    }
  }

  // Length, offset, buffer and child counts, and the validity bitmap with null_count.
  Status ValidateCommon(const ArrayData& d) {
    if (d.length < 0) return Corrupt(fmt::format("negative length {}", d.length));
    if (d.offset < 0) return Corrupt(fmt::format("negative offset {}", d.offset));
    if (!CheckedAdd(d.offset, d.length, &end_)) {
      return Corrupt(fmt::format("offset {} + length {} overflows", d.offset, d.length));
    }
    const size_t want_buffers = ExpectedBuffers(d.type->id());
    if (d.buffers.size() != want_buffers) {
      return Corrupt(fmt::format("{} array has {} buffers, expected {}", d.type->ToString(),
                                 d.buffers.size(), want_buffers));
    }
    for (size_t i = 0; i < d.buffers.size(); ++i) {
      if (d.buffers[i].size() < 0) {
        return Corrupt(fmt::format("buffer {} has negative size {}", i, d.buffers[i].size()));
      }
    }
    const size_t want_children = ExpectedChildren(*d.type);
    if (d.children.size() != want_children) {
      return Corrupt(fmt::format("{} array has {} children, expected {}", d.type->ToString(),
                                 d.children.size(), want_children));
    }
    for (size_t i = 0; i < d.children.size(); ++i) {
      if (d.children[i] == nullptr) return Corrupt(fmt::format("child {} is null", i));
    }
    if (d.type->id() != TypeId::kDictionary && d.dictionary != nullptr) {
      return Corrupt(fmt::format("{} array carries a dictionary", d.type->ToString()));
    }
    if (d.null_count < 0 || d.null_count > d.length) {
      return Corrupt(fmt::format("null_count {} outside [0, length {}]", d.null_count, d.length));
    }
    const Buffer& validity = d.buffers[0];
    if (validity.is_null()) {
      if (d.null_count != 0) {
        return Corrupt(
            fmt::format("null_count is {} but there is no validity bitmap", d.null_count));
      }
      return Status::OK();
    }
    const int64_t need = end_ / 8 + (end_ % 8 != 0);
    if (validity.size() < need) {
      return Corrupt(
          fmt::format("validity bitmap holds {} bytes, {} needed for {} rows at offset {}",
                      validity.size(), need, d.length, d.offset));
    }
    const int64_t nulls = d.length - bit_util::CountSetBits(validity.data(), d.offset, d.length);
    if (nulls != d.null_count) {
      return Corrupt(fmt::format("null_count is {} but the validity bitmap has {} nulls",
                                 d.null_count, nulls));
    }
    return Status::OK();
  }

  static bool RowIsNull(const ArrayData& d, int64_t i) {
    const Buffer& v = d.buffers[0];
    return d.null_count != 0 && !v.is_null() && !bit_util::GetBit(v.data(), d.offset + i);
  }

  Status ValidateFixedWidth(const ArrayData& d) const {
    const Buffer& values = d.buffers[1];
    const int width = d.type->bit_width();
    int64_t need;
    if (width == 1) {
      need = end_ / 8 + (end_ % 8 != 0);
    } else if (!CheckedMul(end_, width / 8, &need)) {
      return Corrupt(fmt::format("{} rows at offset {} of {} overflow the values buffer size",
                                 d.length, d.offset, d.type->ToString()));
    }
    if (Available(values) < need) {
      return Corrupt(fmt::format("{} values buffer holds {} bytes, {} needed", d.type->ToString(),
                                 Available(values), need));
    }
    if (width > 8 && !IsAligned(values, width / 8)) {
      return Corrupt(
          fmt::format("{} values buffer is not {}-byte aligned", d.type->ToString(), width / 8));
    }
    return Status::OK();
  }

  // Checks offsets [offset, offset + length] of `buf`: present, aligned, first >= 0,
  // non-decreasing, last <= limit. `what` names the thing the offsets index into.
  template <typename OffsetT>
  Status ValidateOffsets(const ArrayData& d, const Buffer& buf, int64_t limit,
                         const char* what) const {
    int64_t count, need;
    if (!CheckedAdd(end_, 1, &count) || !CheckedMul(count, sizeof(OffsetT), &need)) {
      return Corrupt(
          fmt::format("{} rows at offset {} overflow the offsets buffer size", d.length, d.offset));
    }
    if (Available(buf) < need) {
      return Corrupt(
          fmt::format("offsets buffer holds {} bytes, {} needed for {} rows at offset {}",
                      Available(buf), need, d.length, d.offset));
    }
    if (!IsAligned(buf, sizeof(OffsetT))) {
      return Corrupt(fmt::format("offsets buffer is not {}-byte aligned", sizeof(OffsetT)));
    }
    const OffsetT* offsets = buf.data_as<OffsetT>() + d.offset;
    int64_t prev = offsets[0];
    if (prev < 0) return Corrupt(fmt::format("first offset {} is negative", prev));
    for (int64_t i = 1; i <= d.length; ++i) {
      const int64_t cur = offsets[i];
      if (cur < prev) {
        return Corrupt(fmt::format("offsets decrease at row {}: {} then {}", i - 1, prev, cur));
      }
      prev = cur;
    }
    if (prev > limit) {
      return Corrupt(fmt::format("last offset {} exceeds the {} length {}", prev, what, limit));
    }
    return Status::OK();
  }

  template <typename OffsetT>
  Status ValidateBinary(const ArrayData& d) const {
    const Buffer& data = d.buffers[2];
    STRATA_RETURN_IF_ERROR(ValidateOffsets<OffsetT>(d, d.buffers[1], Available(data), "data"));
    if (!full_ || !d.type->is_string()) return Status::OK();
    const OffsetT* offsets = d.buffers[1].data_as<OffsetT>() + d.offset;
    const char* bytes = data.data_as<char>();
    for (int64_t i = 0; i < d.length; ++i) {
      if (RowIsNull(d, i) || offsets[i] == offsets[i + 1]) continue;
      std::string_view value(bytes + offsets[i], static_cast<size_t>(offsets[i + 1] - offsets[i]));
      if (!columnar_internal::IsValidUtf8(value)) {
        return Corrupt(fmt::format("row {} is not valid UTF-8", i));
      }
    }
    return Status::OK();
  }

  // The child's type must be the declared one (checked safely: the child type tree is
  // validated before DataType::Equals walks it), then the child is validated recursively.
  Status ValidateChild(const ArrayData& child, const DataTypePtr& declared, int depth,
                       const std::string& context) {
    Status s = ValidateType(child.type, depth + 1);
    if (s.ok() && !child.type->Equals(*declared)) {
      s = Corrupt(
          fmt::format("has type {}, expected {}", child.type->ToString(), declared->ToString()));
    }
    if (s.ok()) {
      Validator inner(full_);
      s = inner.Validate(child, depth + 1);
    }
    return s.ok() ? s : s.WithContext(context);
  }

  template <typename OffsetT>
  Status ValidateList(const ArrayData& d, int depth) {
    const ArrayData& child = *d.children[0];
    STRATA_RETURN_IF_ERROR(ValidateChild(child, d.type->value_type(), depth, "list values"));
    return ValidateOffsets<OffsetT>(d, d.buffers[1], child.length, "list values");
  }

  Status ValidateFixedSizeList(const ArrayData& d, int depth) {
    const ArrayData& child = *d.children[0];
    STRATA_RETURN_IF_ERROR(
        ValidateChild(child, d.type->value_type(), depth, "fixed_size_list values"));
    int64_t need;
    if (!CheckedMul(end_, d.type->list_size(), &need)) {
      return Corrupt(fmt::format("{} rows at offset {} of list size {} overflow", d.length,
                                 d.offset, d.type->list_size()));
    }
    if (child.length < need) {
      return Corrupt(
          fmt::format("fixed_size_list values have {} elements, {} needed", child.length, need));
    }
    return Status::OK();
  }

  Status ValidateStruct(const ArrayData& d, int depth) {
    const auto& fields = d.type->fields();
    for (size_t i = 0; i < fields.size(); ++i) {
      const ArrayData& child = *d.children[i];
      const std::string context = fmt::format("struct field '{}'", fields[i]->name());
      STRATA_RETURN_IF_ERROR(ValidateChild(child, fields[i]->type(), depth, context));
      if (child.length < end_) {
        return Corrupt(fmt::format("{} has {} rows, {} needed", context, child.length, end_));
      }
    }
    return Status::OK();
  }

  template <typename IndexT>
  Status CheckIndices(const ArrayData& d, int64_t dictionary_length) const {
    const IndexT* indices = d.buffers[1].data_as<IndexT>() + d.offset;
    for (int64_t i = 0; i < d.length; ++i) {
      if (RowIsNull(d, i)) continue;
      const IndexT index = indices[i];
      // Compare in the index type's own signedness; uint64 beyond int64 is out of range too.
      bool ok;
      if constexpr (std::is_signed_v<IndexT>) {
        ok = index >= 0 && static_cast<int64_t>(index) < dictionary_length;
      } else {
        ok = static_cast<uint64_t>(index) < static_cast<uint64_t>(dictionary_length);
      }
      if (!ok) {
        return Corrupt(fmt::format("dictionary index {} at row {} outside [0, {})", index, i,
                                   dictionary_length));
      }
    }
    return Status::OK();
  }

  Status ValidateDictionary(const ArrayData& d, int depth) {
    if (d.dictionary == nullptr) return Corrupt("dictionary array has no dictionary");
    STRATA_RETURN_IF_ERROR(
        ValidateChild(*d.dictionary, d.type->dictionary_value_type(), depth, "dictionary"));
    const DataType& index_type = *d.type->index_type();
    const int bytes = index_type.bit_width() / 8;
    const Buffer& indices = d.buffers[1];
    int64_t need;
    if (!CheckedMul(end_, bytes, &need)) {
      return Corrupt(
          fmt::format("{} rows at offset {} overflow the indices buffer size", d.length, d.offset));
    }
    if (Available(indices) < need) {
      return Corrupt(fmt::format("dictionary indices buffer holds {} bytes, {} needed",
                                 Available(indices), need));
    }
    if (!IsAligned(indices, bytes)) {
      return Corrupt(fmt::format("dictionary indices buffer is not {}-byte aligned", bytes));
    }
    const int64_t n = d.dictionary->length;
    switch (index_type.id()) {
      case TypeId::kInt8:
        return CheckIndices<int8_t>(d, n);
      case TypeId::kInt16:
        return CheckIndices<int16_t>(d, n);
      case TypeId::kInt32:
        return CheckIndices<int32_t>(d, n);
      case TypeId::kInt64:
        return CheckIndices<int64_t>(d, n);
      case TypeId::kUInt8:
        return CheckIndices<uint8_t>(d, n);
      case TypeId::kUInt16:
        return CheckIndices<uint16_t>(d, n);
      case TypeId::kUInt32:
        return CheckIndices<uint32_t>(d, n);
      default:
        return CheckIndices<uint64_t>(d, n);
    }
  }

  const bool full_;
  int64_t end_ = 0;  // offset + length of the array being validated
};

Status ValidateArray(const ArrayDataPtr& data, bool full) {
  if (data == nullptr) return Corrupt("array has no data");
  STRATA_RETURN_IF_ERROR(ValidateType(data->type, 0));
  Validator validator(full);
  return validator.Validate(*data, 0);
}

}  // namespace

namespace columnar_internal {

bool IsValidUtf8(std::string_view bytes) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const auto* const end = p + bytes.size();
  while (p < end) {
    // ASCII fast path: eight bytes at a time while no high bit is set.
    while (end - p >= 8) {
      uint64_t word;
      std::memcpy(&word, p, 8);
      if (word & 0x8080808080808080ULL) break;
      p += 8;
    }
    if (p == end) break;
    const uint8_t c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    // Multi-byte sequence; ranges from Unicode Table 3-7 (well-formed UTF-8 byte sequences).
    int extra;
    uint8_t lo = 0x80, hi = 0xBF;  // bounds of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      extra = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      extra = 2;
      if (c == 0xE0) lo = 0xA0;  // no overlongs
      if (c == 0xED) hi = 0x9F;  // no surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      extra = 3;
      if (c == 0xF0) lo = 0x90;  // no overlongs
      if (c == 0xF4) hi = 0x8F;  // nothing past U+10FFFF
    } else {
      return false;
    }
    if (end - p <= extra) return false;
    if (p[1] < lo || p[1] > hi) return false;
    for (int k = 2; k <= extra; ++k) {
      if ((p[k] & 0xC0) != 0x80) return false;
    }
    p += extra + 1;
  }
  return true;
}

}  // namespace columnar_internal

Status Array::Validate() const { return ValidateArray(data_, /*full=*/false); }

Status Array::ValidateFull() const { return ValidateArray(data_, /*full=*/true); }

}  // namespace strata
