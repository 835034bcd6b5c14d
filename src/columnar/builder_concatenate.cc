// Concatenate, ConcatenateBatches and Take: whole-array operations built on the builders'
// layout knowledge.
//
// Dictionary arrays: Concatenate keeps the dictionary when every input shares an equal one
// (only the indices are concatenated). Otherwise string/binary dictionaries are decoded and
// re-encoded into one unified, de-duplicated dictionary; other value types get the inputs'
// dictionaries appended one after another with the indices shifted. Either way the result
// may fail with InvalidArgument when the dictionary outgrows the index type. Take keeps the
// input's dictionary and only gathers indices.
#include <fmt/format.h>

#include <cstring>
#include <limits>

#include "columnar/columnar_internal.h"
#include "strata/builder.h"

namespace strata {

using columnar_internal::DictionaryIndices;
using columnar_internal::MakeArray;
using columnar_internal::MaxIndex;

namespace {

// A dictionary array with `indices`' rows and validity.
Result<Array> Rewrap(const DataTypePtr& type, const Array& indices, ArrayDataPtr dictionary) {
  ArrayData data = *indices.data();
  data.type = type;
  data.dictionary = std::move(dictionary);
  return Array::Make(std::move(data));
}

// Reads index i of an integer array as int64 (uint64 beyond int64 becomes negative).
int64_t IntegerValue(const Array& a, int64_t i) {
  switch (a.type_id()) {
    case TypeId::kInt8:
      return a.Value<int8_t>(i);
    case TypeId::kUInt8:
      return a.Value<uint8_t>(i);
    case TypeId::kInt16:
      return a.Value<int16_t>(i);
    case TypeId::kUInt16:
      return a.Value<uint16_t>(i);
    case TypeId::kInt32:
      return a.Value<int32_t>(i);
    case TypeId::kUInt32:
      return a.Value<uint32_t>(i);
    case TypeId::kUInt64:
      return static_cast<int64_t>(a.Value<uint64_t>(i));
    default:
      return a.Value<int64_t>(i);
  }
}

Result<Array> ConcatenateDictionaries(const std::vector<Array>& arrays) {
  const DataTypePtr& type = arrays[0].type();
  const Array first_dictionary = arrays[0].dictionary();
  bool shared = true;
  for (const Array& a : arrays) {
    if (a.data()->dictionary != first_dictionary.data() &&
        !a.dictionary().Equals(first_dictionary)) {
      shared = false;
      break;
    }
  }
  if (shared) {
    std::vector<Array> indices;
    indices.reserve(arrays.size());
    for (const Array& a : arrays) indices.push_back(DictionaryIndices(a));
    STRATA_ASSIGN_OR_RETURN(Array joined, Concatenate(indices));
    return Rewrap(type, joined, first_dictionary.data());
  }
  if (type->dictionary_value_type()->is_binary_like()) {
    DictionaryBuilder builder(type);
    for (const Array& a : arrays) {
      STRATA_RETURN_IF_ERROR(builder.AppendArraySlice(a, 0, a.length()));
    }
    return builder.Finish();
  }
  // Other value types: dictionaries back to back, indices shifted by the preceding lengths.
  std::vector<Array> dictionaries;
  int64_t total_rows = 0;
  for (const Array& a : arrays) {
    dictionaries.push_back(a.dictionary());
    total_rows += a.length();
  }
  STRATA_ASSIGN_OR_RETURN(Array dictionary, Concatenate(dictionaries));
  const DataType& index_type = *type->index_type();
  if (dictionary.length() > 0 && dictionary.length() - 1 > MaxIndex(index_type)) {
    return Status::InvalidArgument(
        fmt::format("concatenated dictionary of {} values outgrows index type {}",
                    dictionary.length(), index_type.ToString()));
  }
  const int width = index_type.bit_width() / 8;
  BufferBuilder indices;
  indices.Reserve(total_rows * width);
  BufferBuilder validity;
  int64_t null_count = 0, row = 0, shift = 0;
  for (const Array& a : arrays) {
    const Array idx = DictionaryIndices(a);
    for (int64_t i = 0; i < a.length(); ++i, ++row) {
      const bool valid = a.IsValid(i);
      const int64_t v = valid ? IntegerValue(idx, i) + shift : 0;
      if (valid) {
        columnar_internal::AppendSetBits(&validity, row, 1);
      } else {
        validity.Resize(bit_util::BytesForBits(row + 1));
        ++null_count;
      }
      switch (width) {
        case 1:
          indices.AppendValue(static_cast<uint8_t>(v));
          break;
        case 2:
          indices.AppendValue(static_cast<uint16_t>(v));
          break;
        case 4:
          indices.AppendValue(static_cast<uint32_t>(v));
          break;
        default:
          indices.AppendValue(v);
          break;
      }
    }
    shift += a.dictionary().length();
  }
  return MakeArray(type, total_rows, null_count,
                   {null_count > 0 ? validity.Finish() : Buffer(), indices.Finish()}, {},
                   dictionary.data());
}

// ---- Take ----

// Gathers the validity bits of `indices`; an empty Buffer when there are no nulls.
Buffer TakeValidity(const Array& a, const std::vector<int64_t>& indices, int64_t* null_count) {
  *null_count = 0;
  if (a.null_count() == 0) return Buffer();
  BufferBuilder out;
  out.Resize(bit_util::BytesForBits(static_cast<int64_t>(indices.size())));
  for (size_t k = 0; k < indices.size(); ++k) {
    if (a.IsValid(indices[k])) {
      bit_util::SetBit(out.mutable_data(), static_cast<int64_t>(k));
    } else {
      ++*null_count;
    }
  }
  return *null_count > 0 ? out.Finish() : Buffer();
}

template <int kWidth>
Buffer GatherFixed(const Array& a, const std::vector<int64_t>& indices) {
  BufferBuilder out;
  out.Resize(static_cast<int64_t>(indices.size()) * kWidth);
  const uint8_t* src = a.data()->buffers[1].data() + a.offset() * kWidth;
  uint8_t* dst = out.mutable_data();
  for (size_t k = 0; k < indices.size(); ++k) {
    std::memcpy(dst + k * kWidth, src + indices[k] * kWidth, kWidth);
  }
  return out.Finish();
}

Result<Array> TakeImpl(const Array& a, const std::vector<int64_t>& indices);

template <typename OffsetT>
Result<Array> TakeBinary(const Array& a, const std::vector<int64_t>& indices, Buffer validity,
                         int64_t null_count) {
  BufferBuilder offsets, data;
  offsets.Reserve(static_cast<int64_t>(indices.size() + 1) * sizeof(OffsetT));
  offsets.AppendValue<OffsetT>(0);
  for (size_t k = 0; k < indices.size(); ++k) {
    if (a.IsValid(indices[k])) {
      std::string_view v = a.StringValue(indices[k]);
      if (static_cast<int64_t>(v.size()) > std::numeric_limits<OffsetT>::max() - data.size()) {
        return Status::InvalidArgument(
            fmt::format("Take: {} data exceeds the offset range", a.type()->ToString()));
      }
      data.Append(v.data(), static_cast<int64_t>(v.size()));
    }
    offsets.AppendValue(static_cast<OffsetT>(data.size()));
  }
  return MakeArray(a.type(), static_cast<int64_t>(indices.size()), null_count,
                   {std::move(validity), offsets.Finish(), data.Finish()});
}

template <typename OffsetT>
Result<Array> TakeList(const Array& a, const std::vector<int64_t>& indices, Buffer validity,
                       int64_t null_count) {
  BufferBuilder offsets;
  offsets.Reserve(static_cast<int64_t>(indices.size() + 1) * sizeof(OffsetT));
  offsets.AppendValue<OffsetT>(0);
  std::vector<int64_t> child_indices;
  for (size_t k = 0; k < indices.size(); ++k) {
    if (a.IsValid(indices[k])) {
      auto [begin, end] = a.ValueRange(indices[k]);
      if (static_cast<int64_t>(child_indices.size()) + (end - begin) >
          std::numeric_limits<OffsetT>::max()) {
        return Status::InvalidArgument("Take: list elements exceed the offset range");
      }
      for (int64_t j = begin; j < end; ++j) child_indices.push_back(j);
    }
    offsets.AppendValue(static_cast<OffsetT>(child_indices.size()));
  }
  STRATA_ASSIGN_OR_RETURN(Array values, TakeImpl(a.values_array(), child_indices));
  return MakeArray(a.type(), static_cast<int64_t>(indices.size()), null_count,
                   {std::move(validity), offsets.Finish()}, {values.data()});
}

Result<Array> TakeImpl(const Array& a, const std::vector<int64_t>& indices) {
  const auto n = static_cast<int64_t>(indices.size());
  int64_t null_count;
  Buffer validity = TakeValidity(a, indices, &null_count);
  switch (a.type_id()) {
    case TypeId::kBool: {
      BufferBuilder values;
      values.Resize(bit_util::BytesForBits(n));
      for (int64_t k = 0; k < n; ++k) {
        if (a.BoolValue(indices[k])) bit_util::SetBit(values.mutable_data(), k);
      }
      return MakeArray(a.type(), n, null_count, {std::move(validity), values.Finish()});
    }
    case TypeId::kUtf8:
    case TypeId::kBinary:
      return TakeBinary<int32_t>(a, indices, std::move(validity), null_count);
    case TypeId::kLargeUtf8:
    case TypeId::kLargeBinary:
      return TakeBinary<int64_t>(a, indices, std::move(validity), null_count);
    case TypeId::kList:
      return TakeList<int32_t>(a, indices, std::move(validity), null_count);
    case TypeId::kLargeList:
      return TakeList<int64_t>(a, indices, std::move(validity), null_count);
    case TypeId::kFixedSizeList: {
      const int64_t size = a.type()->list_size();
      std::vector<int64_t> child_indices;
      child_indices.reserve(static_cast<size_t>(n * size));
      for (int64_t k = 0; k < n; ++k) {
        const int64_t begin = a.ValueRange(indices[k]).first;
        for (int64_t j = 0; j < size; ++j) child_indices.push_back(begin + j);
      }
      STRATA_ASSIGN_OR_RETURN(Array values, TakeImpl(a.values_array(), child_indices));
      return MakeArray(a.type(), n, null_count, {std::move(validity)}, {values.data()});
    }
    case TypeId::kStruct: {
      std::vector<ArrayDataPtr> children;
      for (int k = 0; k < a.num_fields(); ++k) {
        STRATA_ASSIGN_OR_RETURN(Array child, TakeImpl(a.field(k), indices));
        children.push_back(child.data());
      }
      return MakeArray(a.type(), n, null_count, {std::move(validity)}, std::move(children));
    }
    case TypeId::kDictionary: {
      STRATA_ASSIGN_OR_RETURN(Array taken, TakeImpl(DictionaryIndices(a), indices));
      return Rewrap(a.type(), taken, a.data()->dictionary);
    }
    default:
      break;
  }
  Buffer values;
  switch (a.type()->bit_width()) {
    case 8:
      values = GatherFixed<1>(a, indices);
      break;
    case 16:
      values = GatherFixed<2>(a, indices);
      break;
    case 32:
      values = GatherFixed<4>(a, indices);
      break;
    default:
      values = GatherFixed<8>(a, indices);
      break;
  }
  return MakeArray(a.type(), n, null_count, {std::move(validity), std::move(values)});
}

}  // namespace

Result<Array> Concatenate(const std::vector<Array>& arrays) {
  if (arrays.empty()) return Status::InvalidArgument("Concatenate needs at least one array");
  int64_t total = 0;
  for (size_t i = 0; i < arrays.size(); ++i) {
    STRATA_RETURN_IF_ERROR(columnar_internal::CheckSameType(
        arrays[i], *arrays[0].type(), fmt::format("Concatenate input {}", i)));
    total += arrays[i].length();
  }
  if (arrays[0].type_id() == TypeId::kDictionary) return ConcatenateDictionaries(arrays);
  STRATA_ASSIGN_OR_RETURN(auto builder, MakeBuilder(arrays[0].type()));
  builder->Reserve(total);
  for (const Array& a : arrays) {
    STRATA_RETURN_IF_ERROR(builder->AppendArraySlice(a, 0, a.length()));
  }
  return builder->Finish();
}

Result<RecordBatch> ConcatenateBatches(const std::vector<RecordBatch>& batches) {
  if (batches.empty())
    return Status::InvalidArgument("ConcatenateBatches needs at least one batch");
  const SchemaPtr& schema = batches[0].schema();
  int64_t rows = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    if (batches[i].schema() == nullptr || !batches[i].schema()->Equals(*schema, false)) {
      return Status::InvalidArgument(
          fmt::format("ConcatenateBatches: batch {} has a different schema", i));
    }
    rows += batches[i].num_rows();
  }
  std::vector<Array> columns;
  for (int c = 0; c < schema->num_fields(); ++c) {
    std::vector<Array> parts;
    parts.reserve(batches.size());
    for (const RecordBatch& b : batches) parts.push_back(b.column(c));
    auto column = Concatenate(parts);
    if (!column.ok()) {
      return column.status().WithContext(fmt::format("column '{}'", schema->field(c)->name()));
    }
    columns.push_back(std::move(column).value());
  }
  return RecordBatch::Make(schema, rows, std::move(columns));
}

Result<Array> Take(const Array& array, const std::vector<int64_t>& indices) {
  if (!array.is_valid_handle()) return Status::InvalidArgument("Take: null array");
  for (size_t k = 0; k < indices.size(); ++k) {
    if (indices[k] < 0 || indices[k] >= array.length()) {
      return Status::InvalidArgument(
          fmt::format("Take: index {} at position {} is outside an array of {} rows", indices[k], k,
                      array.length()));
    }
  }
  return TakeImpl(array, indices);
}

}  // namespace strata
