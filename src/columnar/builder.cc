// Builders for flat types: the shared validity bookkeeping, booleans, fixed-width numbers,
// binary / string and dictionary-encoded strings. Nested builders are in builder_nested.cc.
#include "strata/builder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "columnar/columnar_internal.h"

namespace strata {

namespace columnar_internal {

void AppendBits(BufferBuilder* out, int64_t dst_length, const uint8_t* src, int64_t src_offset,
                int64_t n) {
  if (n <= 0) return;
  out->Resize(bit_util::BytesForBits(dst_length + n));
  uint8_t* dst = out->mutable_data();
  if ((dst_length & 7) == 0 && (src_offset & 7) == 0) {
    const int64_t bytes = bit_util::BytesForBits(n);
    std::memcpy(dst + (dst_length >> 3), src + (src_offset >> 3), bytes);
    // Keep the bits past the new end zero (the source may have anything there).
    if (n & 7) dst[(dst_length + n) >> 3] &= static_cast<uint8_t>((1u << (n & 7)) - 1);
    return;
  }
  int64_t i = 0;
  // Bit by bit up to a destination byte boundary, then whole destination bytes.
  for (; i < n && ((dst_length + i) & 7) != 0; ++i) {
    if (bit_util::GetBit(src, src_offset + i)) bit_util::SetBit(dst, dst_length + i);
  }
  for (; i + 8 <= n; i += 8) {
    const int64_t s = src_offset + i;
    const int shift = static_cast<int>(s & 7);
    uint8_t byte = static_cast<uint8_t>(src[s >> 3] >> shift);
    if (shift != 0) byte |= static_cast<uint8_t>(src[(s >> 3) + 1] << (8 - shift));
    dst[(dst_length + i) >> 3] = byte;
  }
  for (; i < n; ++i) {
    if (bit_util::GetBit(src, src_offset + i)) bit_util::SetBit(dst, dst_length + i);
  }
}

void AppendSetBits(BufferBuilder* out, int64_t dst_length, int64_t n) {
  if (n <= 0) return;
  out->Resize(bit_util::BytesForBits(dst_length + n));
  uint8_t* dst = out->mutable_data();
  int64_t i = dst_length;
  const int64_t end = dst_length + n;
  for (; i < end && (i & 7) != 0; ++i) bit_util::SetBit(dst, i);
  if (end - i >= 8) {
    std::memset(dst + (i >> 3), 0xFF, static_cast<size_t>((end - i) >> 3));
    i += (end - i) & ~int64_t{7};
  }
  for (; i < end; ++i) bit_util::SetBit(dst, i);
}

Status CheckSliceBounds(const Array& array, int64_t offset, int64_t length) {
  if (offset < 0 || length < 0 || offset > array.length() - length) {
    return Status::InvalidArgument(fmt::format("rows [{}, {}+{}) are outside an array of {} rows",
                                               offset, offset, length, array.length()));
  }
  return Status::OK();
}

Status CheckSameType(const Array& array, const DataType& expected, std::string_view what) {
  if (!array.is_valid_handle()) return Status::InvalidArgument(fmt::format("{}: null array", what));
  if (!array.type()->Equals(expected)) {
    return Status::InvalidArgument(fmt::format("{}: array of type {} where {} is expected", what,
                                               array.type()->ToString(), expected.ToString()));
  }
  return Status::OK();
}

int64_t MaxIndex(const DataType& index_type) {
  switch (index_type.id()) {
    case TypeId::kInt8:
      return std::numeric_limits<int8_t>::max();
    case TypeId::kUInt8:
      return std::numeric_limits<uint8_t>::max();
    case TypeId::kInt16:
      return std::numeric_limits<int16_t>::max();
    case TypeId::kUInt16:
      return std::numeric_limits<uint16_t>::max();
    case TypeId::kInt32:
      return std::numeric_limits<int32_t>::max();
    case TypeId::kUInt32:
      return std::numeric_limits<uint32_t>::max();
    default:
      return std::numeric_limits<int64_t>::max();
  }
}

Array DictionaryIndices(const Array& dictionary_array) {
  const ArrayData& d = *dictionary_array.data();
  auto out = std::make_shared<ArrayData>();
  out->type = d.type->index_type();
  out->length = d.length;
  out->offset = d.offset;
  out->null_count = d.null_count;
  out->buffers = d.buffers;
  return Array(std::move(out));
}

Result<Array> MakeArray(DataTypePtr type, int64_t length, int64_t null_count,
                        std::vector<Buffer> buffers, std::vector<ArrayDataPtr> children,
                        ArrayDataPtr dictionary) {
  ArrayData data;
  data.type = std::move(type);
  data.length = length;
  data.null_count = null_count;
  data.buffers = std::move(buffers);
  data.children = std::move(children);
  data.dictionary = std::move(dictionary);
  return Array::Make(std::move(data));
}

}  // namespace columnar_internal

using columnar_internal::AppendBits;
using columnar_internal::AppendSetBits;
using columnar_internal::CheckSameType;
using columnar_internal::CheckSliceBounds;
using columnar_internal::MakeArray;
using columnar_internal::MaxIndex;

// ---- ArrayBuilder ----

void ArrayBuilder::AppendNulls(int64_t n) {
  for (int64_t i = 0; i < n; ++i) AppendNull();
}

void ArrayBuilder::Reserve(int64_t additional) {
  validity_.Reserve(bit_util::BytesForBits(length_ + additional) - validity_.size());
}

void ArrayBuilder::AppendValidity(bool valid) {
  const int64_t bytes = bit_util::BytesForBits(length_ + 1);
  if (bytes > validity_.size()) validity_.Resize(bytes);
  if (valid) {
    bit_util::SetBit(validity_.mutable_data(), length_);
  } else {
    ++null_count_;
  }
  ++length_;
}

void ArrayBuilder::AppendValidityFrom(const Array& array, int64_t offset, int64_t length) {
  const Buffer& bitmap = array.data()->buffers[0];
  if (array.null_count() == 0 || bitmap.is_null()) {
    AppendSetBits(&validity_, length_, length);
  } else {
    const int64_t start = array.offset() + offset;
    AppendBits(&validity_, length_, bitmap.data(), start, length);
    null_count_ += length - bit_util::CountSetBits(bitmap.data(), start, length);
  }
  length_ += length;
}

Buffer ArrayBuilder::FinishValidity() {
  Buffer out;
  if (null_count_ > 0) {
    validity_.Resize(bit_util::BytesForBits(length_));
    out = validity_.Finish();
  } else {
    validity_.Reset();
  }
  length_ = 0;
  null_count_ = 0;
  return out;
}

// ---- BooleanBuilder ----

void BooleanBuilder::Append(bool value) {
  if (value) {
    AppendSetBits(&values_, length_, 1);
  } else {
    values_.Resize(bit_util::BytesForBits(length_ + 1));
  }
  AppendValidity(true);
}

void BooleanBuilder::AppendNull() {
  values_.Resize(bit_util::BytesForBits(length_ + 1));
  AppendValidity(false);
}

Status BooleanBuilder::AppendArraySlice(const Array& array, int64_t offset, int64_t length) {
  STRATA_RETURN_IF_ERROR(CheckSameType(array, *type_, "BooleanBuilder::AppendArraySlice"));
  STRATA_RETURN_IF_ERROR(CheckSliceBounds(array, offset, length));
  AppendBits(&values_, length_, array.data()->buffers[1].data(), array.offset() + offset, length);
  AppendValidityFrom(array, offset, length);
  return Status::OK();
}

Result<Array> BooleanBuilder::Finish() {
  const int64_t length = length_, null_count = null_count_;
  values_.Resize(bit_util::BytesForBits(length));
  Buffer validity = FinishValidity();
  return MakeArray(type_, length, null_count, {std::move(validity), values_.Finish()});
}

// ---- NumericBuilder ----

template <typename T>
NumericBuilder<T>::NumericBuilder(DataTypePtr type) : ArrayBuilder(std::move(type)) {}

template <typename T>
void NumericBuilder<T>::Append(T value) {
  values_.AppendValue(value);
  AppendValidity(true);
}

template <typename T>
void NumericBuilder<T>::AppendValues(const T* values, int64_t n) {
  if (n <= 0) return;
  values_.Append(values, n * static_cast<int64_t>(sizeof(T)));
  AppendSetBits(&validity_, length_, n);
  length_ += n;
}

template <typename T>
void NumericBuilder<T>::AppendNull() {
  values_.AppendZeros(sizeof(T));
  AppendValidity(false);
}

template <typename T>
Status NumericBuilder<T>::AppendArraySlice(const Array& array, int64_t offset, int64_t length) {
  STRATA_RETURN_IF_ERROR(CheckSameType(array, *type_, "NumericBuilder::AppendArraySlice"));
  STRATA_RETURN_IF_ERROR(CheckSliceBounds(array, offset, length));
  values_.Append(array.values<T>() + offset, length * static_cast<int64_t>(sizeof(T)));
  AppendValidityFrom(array, offset, length);
  return Status::OK();
}

template <typename T>
void NumericBuilder<T>::Reserve(int64_t additional) {
  ArrayBuilder::Reserve(additional);
  values_.Reserve(additional * static_cast<int64_t>(sizeof(T)));
}

template <typename T>
Result<Array> NumericBuilder<T>::Finish() {
  const bool floating = std::is_floating_point_v<T>;
  if (type_->bit_width() != static_cast<int>(8 * sizeof(T)) || type_->is_floating() != floating ||
      type_->id() == TypeId::kBool) {
    return Status::InvalidArgument(fmt::format("a builder of {}-byte {} values cannot build {}",
                                               sizeof(T), floating ? "floating" : "integer",
                                               type_->ToString()));
  }
  const int64_t length = length_, null_count = null_count_;
  Buffer validity = FinishValidity();
  return MakeArray(type_, length, null_count, {std::move(validity), values_.Finish()});
}

template class NumericBuilder<int8_t>;
template class NumericBuilder<int16_t>;
template class NumericBuilder<int32_t>;
template class NumericBuilder<int64_t>;
template class NumericBuilder<uint8_t>;
template class NumericBuilder<uint16_t>;
template class NumericBuilder<uint32_t>;
template class NumericBuilder<uint64_t>;
template class NumericBuilder<float>;
template class NumericBuilder<double>;

// ---- BaseBinaryBuilder ----

template <typename OffsetT>
BaseBinaryBuilder<OffsetT>::BaseBinaryBuilder(DataTypePtr type) : ArrayBuilder(std::move(type)) {
  offsets_.AppendValue<OffsetT>(0);
}

namespace {
template <typename OffsetT>
Status CheckDataSize(int64_t current, int64_t additional) {
  if (additional > std::numeric_limits<OffsetT>::max() - current) {
    return Status::InvalidArgument(
        fmt::format("binary data of {} + {} bytes exceeds the {}-bit offset range", current,
                    additional, 8 * sizeof(OffsetT)));
  }
  return Status::OK();
}
}  // namespace

template <typename OffsetT>
Status BaseBinaryBuilder<OffsetT>::Append(std::string_view value) {
  const auto size = static_cast<int64_t>(value.size());
  STRATA_RETURN_IF_ERROR(CheckDataSize<OffsetT>(data_.size(), size));
  data_.Append(value.data(), size);
  offsets_.AppendValue(static_cast<OffsetT>(data_.size()));
  AppendValidity(true);
  return Status::OK();
}

template <typename OffsetT>
void BaseBinaryBuilder<OffsetT>::AppendNull() {
  offsets_.AppendValue(static_cast<OffsetT>(data_.size()));
  AppendValidity(false);
}

template <typename OffsetT>
Status BaseBinaryBuilder<OffsetT>::AppendArraySlice(const Array& array, int64_t offset,
                                                    int64_t length) {
  STRATA_RETURN_IF_ERROR(CheckSameType(array, *type_, "BinaryBuilder::AppendArraySlice"));
  STRATA_RETURN_IF_ERROR(CheckSliceBounds(array, offset, length));
  if (length == 0) return Status::OK();
  const OffsetT* src =
      array.data()->buffers[1].template data_as<OffsetT>() + array.offset() + offset;
  const int64_t first = src[0], last = src[length];
  STRATA_RETURN_IF_ERROR(CheckDataSize<OffsetT>(data_.size(), last - first));
  const int64_t base = data_.size();
  data_.Append(array.data()->buffers[2].data() + first, last - first);
  offsets_.Reserve(length * static_cast<int64_t>(sizeof(OffsetT)));
  for (int64_t i = 1; i <= length; ++i) {
    offsets_.AppendValue(static_cast<OffsetT>(base + (src[i] - first)));
  }
  AppendValidityFrom(array, offset, length);
  return Status::OK();
}

template <typename OffsetT>
void BaseBinaryBuilder<OffsetT>::Reserve(int64_t additional) {
  ArrayBuilder::Reserve(additional);
  offsets_.Reserve(additional * static_cast<int64_t>(sizeof(OffsetT)));
}

template <typename OffsetT>
Result<Array> BaseBinaryBuilder<OffsetT>::Finish() {
  const bool large = sizeof(OffsetT) == 8;
  const TypeId id = type_->id();
  if (!type_->is_binary_like() ||
      large != (id == TypeId::kLargeUtf8 || id == TypeId::kLargeBinary)) {
    return Status::InvalidArgument(fmt::format(
        "a {} builder cannot build {}", large ? "large binary" : "binary", type_->ToString()));
  }
  const int64_t length = length_, null_count = null_count_;
  Buffer offsets = offsets_.Finish();
  Buffer data = data_.Finish();
  Buffer validity = FinishValidity();
  offsets_.AppendValue<OffsetT>(0);
  if (type_->is_string()) {
    const OffsetT* o = offsets.data_as<OffsetT>();
    for (int64_t i = 0; i < length; ++i) {
      if (!validity.is_null() && !bit_util::GetBit(validity.data(), i)) continue;
      std::string_view value(data.data_as<char>() + o[i], static_cast<size_t>(o[i + 1] - o[i]));
      if (!columnar_internal::IsValidUtf8(value)) {
        return Status::InvalidArgument(
            fmt::format("row {} of a {} array is not valid UTF-8", i, type_->ToString()));
      }
    }
  }
  return MakeArray(type_, length, null_count,
                   {std::move(validity), std::move(offsets), std::move(data)});
}

template class BaseBinaryBuilder<int32_t>;
template class BaseBinaryBuilder<int64_t>;

// ---- DictionaryBuilder ----

namespace {

// Writes `index` in the index type's width (it fits: checked when it was assigned).
void AppendIndex(BufferBuilder* out, int width, int64_t index) {
  switch (width) {
    case 1:
      out->AppendValue(static_cast<uint8_t>(index));
      break;
    case 2:
      out->AppendValue(static_cast<uint16_t>(index));
      break;
    case 4:
      out->AppendValue(static_cast<uint32_t>(index));
      break;
    default:
      out->AppendValue(index);
      break;
  }
}

}  // namespace

DictionaryBuilder::DictionaryBuilder(DataTypePtr type) : ArrayBuilder(std::move(type)) {}

Status DictionaryBuilder::Append(std::string_view value) {
  auto it = memo_.find(std::string(value));
  int64_t index;
  if (it != memo_.end()) {
    index = it->second;
  } else {
    index = static_cast<int64_t>(order_.size());
    const DataTypePtr& index_type = type_->index_type();
    if (index_type == nullptr || index > MaxIndex(*index_type)) {
      return Status::InvalidArgument(
          fmt::format("dictionary of {} distinct values outgrows index type {}", index + 1,
                      index_type ? index_type->ToString() : "null"));
    }
    it = memo_.emplace(std::string(value), index).first;
    order_.push_back(it->first);
  }
  indices_.push_back(index);
  AppendValidity(true);
  return Status::OK();
}

void DictionaryBuilder::AppendNull() {
  indices_.push_back(0);
  AppendValidity(false);
}

Status DictionaryBuilder::AppendArraySlice(const Array& array, int64_t offset, int64_t length) {
  if (!array.is_valid_handle()) {
    return Status::InvalidArgument("DictionaryBuilder::AppendArraySlice: null array");
  }
  const DataTypePtr& value_type = type_->dictionary_value_type();
  const bool encoded = array.type()->Equals(*type_);
  if (!encoded) {
    // Plain values of the dictionary's value type are accepted and encoded.
    STRATA_RETURN_IF_ERROR(
        CheckSameType(array, *value_type, "DictionaryBuilder::AppendArraySlice"));
  } else if (!array.type()->dictionary_value_type()->is_binary_like()) {
    return Status::InvalidArgument(fmt::format(
        "DictionaryBuilder supports string and binary values, not {}", value_type->ToString()));
  }
  STRATA_RETURN_IF_ERROR(CheckSliceBounds(array, offset, length));
  const Array values = encoded ? array.dictionary() : array;
  for (int64_t i = offset; i < offset + length; ++i) {
    if (array.IsNull(i)) {
      AppendNull();
      continue;
    }
    const int64_t j = encoded ? array.DictionaryIndex(i) : i;
    if (values.IsNull(j)) {
      AppendNull();  // an index pointing at a null dictionary entry decodes to null
    } else {
      STRATA_RETURN_IF_ERROR(Append(values.StringValue(j)));
    }
  }
  return Status::OK();
}

Result<Array> DictionaryBuilder::Finish() {
  const DataTypePtr& index_type = type_->index_type();
  const DataTypePtr& value_type = type_->dictionary_value_type();
  if (type_->id() != TypeId::kDictionary || index_type == nullptr || !index_type->is_integer() ||
      value_type == nullptr || !value_type->is_binary_like()) {
    return Status::InvalidArgument(
        fmt::format("DictionaryBuilder cannot build {}", type_->ToString()));
  }
  const int width = index_type->bit_width() / 8;
  BufferBuilder indices;
  indices.Reserve(static_cast<int64_t>(indices_.size()) * width);
  for (int64_t index : indices_) AppendIndex(&indices, width, index);

  Result<Array> dictionary = [&]() -> Result<Array> {
    const bool large =
        value_type->id() == TypeId::kLargeUtf8 || value_type->id() == TypeId::kLargeBinary;
    if (large) {
      LargeBinaryBuilder values(value_type);
      for (std::string_view v : order_) STRATA_RETURN_IF_ERROR(values.Append(v));
      return values.Finish();
    }
    BinaryBuilder values(value_type);
    for (std::string_view v : order_) STRATA_RETURN_IF_ERROR(values.Append(v));
    return values.Finish();
  }();

  const int64_t length = length_, null_count = null_count_;
  Buffer validity = FinishValidity();
  indices_.clear();
  order_.clear();
  memo_.clear();
  if (!dictionary.ok()) return dictionary.status().WithContext("dictionary values");
  return MakeArray(type_, length, null_count, {std::move(validity), indices.Finish()}, {},
                   dictionary->data());
}

}  // namespace strata
