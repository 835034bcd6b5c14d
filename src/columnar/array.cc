// Array construction, accessors and slicing.
#include "strata/array.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace strata {

Result<Array> Array::Make(ArrayData data) {
  if (data.type == nullptr) return Status::InvalidArgument("array has no type");
  if (data.null_count < 0) {
    const Buffer& validity = data.buffers.empty() ? Buffer() : data.buffers[0];
    if (validity.is_null()) {
      data.null_count = 0;
    } else if (data.offset < 0 || data.length < 0 ||
               data.offset > std::numeric_limits<int64_t>::max() - data.length ||
               validity.size() <
                   (data.offset + data.length) / 8 + ((data.offset + data.length) % 8 != 0)) {
      // Checked here because null_count is computed before Validate() runs.
      return Status::Corruption(
          fmt::format("validity bitmap of {} bytes does not cover {} rows at offset {}",
                      validity.size(), data.length, data.offset));
    } else {
      data.null_count =
          data.length - bit_util::CountSetBits(validity.data(), data.offset, data.length);
    }
  }
  Array out(std::make_shared<const ArrayData>(std::move(data)));
  STRATA_RETURN_IF_ERROR(out.Validate());
  return out;
}

int64_t BufferBytes(const ArrayData& data) {
  int64_t bytes = 0;
  for (const Buffer& buffer : data.buffers) bytes += buffer.size();
  for (const ArrayDataPtr& child : data.children) {
    if (child != nullptr) bytes += BufferBytes(*child);
  }
  if (data.dictionary != nullptr) bytes += BufferBytes(*data.dictionary);
  return bytes;
}

Array Array::MakeNull(DataTypePtr type, int64_t length) {
  ArrayData data;
  data.type = type;
  data.length = length;
  data.null_count = length;
  BufferBuilder validity;
  validity.Resize(bit_util::BytesForBits(length));  // all zero: every slot null
  data.buffers.push_back(validity.Finish());
  auto zeros = [](int64_t bytes) {
    BufferBuilder b;
    b.Resize(bytes);
    return b.Finish();
  };
  switch (type->id()) {
    case TypeId::kUtf8:
    case TypeId::kBinary:
      data.buffers.push_back(zeros((length + 1) * 4));
      data.buffers.push_back(zeros(0));
      break;
    case TypeId::kLargeUtf8:
    case TypeId::kLargeBinary:
      data.buffers.push_back(zeros((length + 1) * 8));
      data.buffers.push_back(zeros(0));
      break;
    case TypeId::kList:
      data.buffers.push_back(zeros((length + 1) * 4));
      data.children.push_back(MakeEmpty(type->value_type()).data());
      break;
    case TypeId::kLargeList:
      data.buffers.push_back(zeros((length + 1) * 8));
      data.children.push_back(MakeEmpty(type->value_type()).data());
      break;
    case TypeId::kFixedSizeList:
      data.children.push_back(MakeNull(type->value_type(), length * type->list_size()).data());
      break;
    case TypeId::kStruct:
      for (const auto& f : type->fields())
        data.children.push_back(MakeNull(f->type(), length).data());
      break;
    case TypeId::kDictionary:
      data.buffers.push_back(zeros(length * (type->index_type()->bit_width() / 8)));
      data.dictionary = MakeEmpty(type->dictionary_value_type()).data();
      break;
    default:  // fixed width
      data.buffers.push_back(zeros(bit_util::BytesForBits(length * type->bit_width())));
      break;
  }
  if (length == 0) data.null_count = 0;
  return Array(std::make_shared<const ArrayData>(std::move(data)));
}

std::string_view Array::StringValue(int64_t i) const {
  const auto& bufs = data_->buffers;
  const char* bytes = bufs[2].data_as<char>();
  int64_t begin, end;
  if (type_id() == TypeId::kLargeUtf8 || type_id() == TypeId::kLargeBinary) {
    const int64_t* offsets = bufs[1].data_as<int64_t>() + data_->offset;
    begin = offsets[i];
    end = offsets[i + 1];
  } else {
    const int32_t* offsets = bufs[1].data_as<int32_t>() + data_->offset;
    begin = offsets[i];
    end = offsets[i + 1];
  }
  return {bytes + begin, static_cast<size_t>(end - begin)};
}

std::pair<int64_t, int64_t> Array::ValueRange(int64_t i) const {
  switch (type_id()) {
    case TypeId::kList: {
      const int32_t* offsets = data_->buffers[1].data_as<int32_t>() + data_->offset;
      return {offsets[i], offsets[i + 1]};
    }
    case TypeId::kLargeList: {
      const int64_t* offsets = data_->buffers[1].data_as<int64_t>() + data_->offset;
      return {offsets[i], offsets[i + 1]};
    }
    default: {  // fixed size list
      const int64_t n = type()->list_size();
      return {(data_->offset + i) * n, (data_->offset + i + 1) * n};
    }
  }
}

Array Array::field(int k) const {
  Array child(data_->children.at(k));
  if (data_->offset == 0 && child.length() == length()) return child;
  return child.Slice(data_->offset, length());
}

int64_t Array::DictionaryIndex(int64_t i) const {
  const uint8_t* p = data_->buffers[1].data();
  const int64_t j = data_->offset + i;
  switch (type()->index_type()->id()) {
    case TypeId::kInt8:
      return reinterpret_cast<const int8_t*>(p)[j];
    case TypeId::kUInt8:
      return p[j];
    case TypeId::kInt16:
      return reinterpret_cast<const int16_t*>(p)[j];
    case TypeId::kUInt16:
      return reinterpret_cast<const uint16_t*>(p)[j];
    case TypeId::kInt32:
      return reinterpret_cast<const int32_t*>(p)[j];
    case TypeId::kUInt32:
      return reinterpret_cast<const uint32_t*>(p)[j];
    case TypeId::kUInt64:
      return static_cast<int64_t>(reinterpret_cast<const uint64_t*>(p)[j]);
    default:
      return reinterpret_cast<const int64_t*>(p)[j];
  }
}

Array Array::Slice(int64_t offset, int64_t length) const {
  offset = std::clamp<int64_t>(offset, 0, this->length());
  length = std::clamp<int64_t>(length, 0, this->length() - offset);
  auto out = std::make_shared<ArrayData>(*data_);
  out->offset = data_->offset + offset;
  out->length = length;
  if (data_->null_count == 0 || data_->buffers.empty() || data_->buffers[0].is_null()) {
    out->null_count = 0;
  } else if (data_->null_count == data_->length) {
    out->null_count = length;
  } else {
    out->null_count =
        length - bit_util::CountSetBits(data_->buffers[0].data(), out->offset, length);
  }
  return Array(std::move(out));
}

}  // namespace strata
