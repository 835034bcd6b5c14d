// Array: an immutable column of values in Arrow's memory layout.
//
// ArrayData holds the raw layout: type, length, an element offset, the null count, the
// buffers and child arrays. Buffer slots per type (as in the Arrow columnar spec):
//   bool, integers, floats, timestamp  [validity, values]
//   utf8, binary                        [validity, int32 offsets, bytes]
//   large_utf8, large_binary            [validity, int64 offsets, bytes]
//   list / large_list                   [validity, int32 / int64 offsets]  children[0]
//   fixed_size_list                     [validity]                         children[0]
//   struct                              [validity]                         children[i]
//   dictionary                          [validity, indices]                dictionary
// The validity buffer may be empty (is_null()) when null_count == 0. `offset` applies to the
// validity, values and offsets buffers; list children are indexed through the offsets,
// struct children are sliced by the parent's offset, fixed-size-list children by
// offset * list_size.
//
// Array wraps a shared ArrayData with accessors; copying an Array is cheap. Arrays built by
// builders or read by the IPC readers are validated; Array::Validate() checks any other.
// Thread safety: immutable, safe to share.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/buffer.h"
#include "strata/status.h"
#include "strata/type.h"

namespace strata {

struct ArrayData;
using ArrayDataPtr = std::shared_ptr<const ArrayData>;

struct ArrayData {
  DataTypePtr type;
  int64_t length = 0;
  int64_t offset = 0;
  int64_t null_count = 0;
  std::vector<Buffer> buffers;
  std::vector<ArrayDataPtr> children;
  ArrayDataPtr dictionary;  // dictionary type only
};

// Bytes of every buffer `data` holds, children and dictionary included. A slice counts the
// whole buffers it shares.
int64_t BufferBytes(const ArrayData& data);

class Array {
 public:
  Array() = default;
  explicit Array(ArrayDataPtr data) : data_(std::move(data)) {}

  // Validates the layout (Validate()) before wrapping it. Computes null_count when it is
  // passed as -1.
  static Result<Array> Make(ArrayData data);
  // An array of `length` nulls of any type (nested children are empty or null-filled).
  static Array MakeNull(DataTypePtr type, int64_t length);
  // An empty array of the type.
  static Array MakeEmpty(DataTypePtr type) { return MakeNull(std::move(type), 0); }

  bool is_valid_handle() const { return data_ != nullptr; }
  const ArrayDataPtr& data() const { return data_; }
  const DataTypePtr& type() const { return data_->type; }
  TypeId type_id() const { return data_->type->id(); }
  int64_t length() const { return data_->length; }
  int64_t offset() const { return data_->offset; }
  int64_t null_count() const { return data_->null_count; }

  bool IsNull(int64_t i) const {
    const Buffer& v = data_->buffers[0];
    return data_->null_count != 0 && !v.is_null() && !bit_util::GetBit(v.data(), data_->offset + i);
  }
  bool IsValid(int64_t i) const { return !IsNull(i); }

  // Fixed-width values (integers, floats, timestamps as int64), already offset-adjusted.
  template <typename T>
  const T* values() const {
    return data_->buffers[1].data_as<T>() + data_->offset;
  }
  template <typename T>
  T Value(int64_t i) const {
    return values<T>()[i];
  }
  bool BoolValue(int64_t i) const {
    return bit_util::GetBit(data_->buffers[1].data(), data_->offset + i);
  }
  // utf8 / binary / large variants.
  std::string_view StringValue(int64_t i) const;
  // List, large list and fixed size list: element range [begin, end) in values_array().
  std::pair<int64_t, int64_t> ValueRange(int64_t i) const;
  // The unsliced element array of a list-like array.
  Array values_array() const { return Array(data_->children[0]); }
  // Struct: child k restricted to this array's rows (same length as this array).
  Array field(int k) const;
  int num_fields() const { return static_cast<int>(data_->children.size()); }
  // Dictionary: the dictionary values, and the index at row i.
  Array dictionary() const { return Array(data_->dictionary); }
  int64_t DictionaryIndex(int64_t i) const;

  // Zero-copy view of rows [offset, offset + length), clamped to the array.
  Array Slice(int64_t offset, int64_t length) const;
  Array Slice(int64_t offset) const { return Slice(offset, length() - offset); }

  // Logical equality: same type, length, nulls and values (dictionaries compared by the
  // values they decode to; offsets and padding do not matter). Bytes under null slots are
  // ignored, NaN equals NaN, and a dictionary row whose entry is null counts as null.
  bool Equals(const Array& other) const;
  // Checks every buffer size, offset, child length and dictionary index against the layout
  // above; Corruption naming the problem otherwise. Never reads out of bounds. Also requires
  // exactly the buffer and child counts listed above, offsets / multi-byte values / indices
  // buffers aligned to their element size, and at most 64 levels of type nesting.
  Status Validate() const;
  // Validate() plus UTF-8 validity of utf8 / large_utf8 values.
  Status ValidateFull() const;

  // "[1, null, 3]" (long arrays are elided in the middle).
  std::string ToString() const;
  // One value as text: strings quoted, binary as base64, timestamps as RFC 3339 (UTC),
  // floats shortest round-trip, nested values JSON-like with long lists elided.
  std::string ValueToString(int64_t i) const;

 private:
  ArrayDataPtr data_;
};

}  // namespace strata
