// Canonical row encoding and its 128-bit hash, and the order-independent content checksum
// (docs/format/bundle.md, "Canonical row encoding").
#include <fmt/format.h>
#include <xxhash.h>

#include <string>
#include <vector>

#include "strata/bundle.h"
#include "util/little_endian.h"

namespace strata::replication {
namespace {

// 8- and 16-bit values beside util/little_endian.h's 32- and 64-bit ones.
void PutFixed8(std::string* out, uint8_t v) { out->push_back(static_cast<char>(v)); }
void PutFixed16(std::string* out, uint16_t v) {
  out->push_back(static_cast<char>(v));
  out->push_back(static_cast<char>(v >> 8));
}

Status Unsupported(const DataType& type) {
  return Status::InvalidArgument(
      fmt::format("cannot hash a value of type {} for a content checksum", type.ToString()));
}

// Appends the canonical encoding of a.value(i) (null byte, then the value).
Status AppendValue(const Array& a, int64_t i, std::string* out) {
  if (a.IsNull(i)) {
    out->push_back('\0');
    return Status::OK();
  }
  out->push_back('\1');
  const DataType& type = *a.type();
  switch (type.id()) {
    case TypeId::kBool:
      out->push_back(a.BoolValue(i) ? '\1' : '\0');
      return Status::OK();
    case TypeId::kInt8:
      PutFixed8(out, static_cast<uint8_t>(a.Value<int8_t>(i)));
      return Status::OK();
    case TypeId::kInt16:
      PutFixed16(out, static_cast<uint16_t>(a.Value<int16_t>(i)));
      return Status::OK();
    case TypeId::kInt32:
      PutFixed32(out, static_cast<uint32_t>(a.Value<int32_t>(i)));
      return Status::OK();
    case TypeId::kInt64:
    case TypeId::kTimestamp:
      PutFixed64(out, static_cast<uint64_t>(a.Value<int64_t>(i)));
      return Status::OK();
    case TypeId::kUInt8:
      PutFixed8(out, a.Value<uint8_t>(i));
      return Status::OK();
    case TypeId::kUInt16:
      PutFixed16(out, a.Value<uint16_t>(i));
      return Status::OK();
    case TypeId::kUInt32:
      PutFixed32(out, a.Value<uint32_t>(i));
      return Status::OK();
    case TypeId::kUInt64:
      PutFixed64(out, a.Value<uint64_t>(i));
      return Status::OK();
    case TypeId::kFloat32:
      PutFixed32(out, a.Value<uint32_t>(i));  // the bit pattern
      return Status::OK();
    case TypeId::kFloat64:
      PutFixed64(out, a.Value<uint64_t>(i));
      return Status::OK();
    case TypeId::kUtf8:
    case TypeId::kLargeUtf8:
    case TypeId::kBinary:
    case TypeId::kLargeBinary: {
      const std::string_view v = a.StringValue(i);
      PutFixed64(out, v.size());
      out->append(v);
      return Status::OK();
    }
    case TypeId::kList:
    case TypeId::kLargeList:
    case TypeId::kFixedSizeList: {
      const auto [begin, end] = a.ValueRange(i);
      if (type.id() != TypeId::kFixedSizeList) {
        PutFixed64(out, static_cast<uint64_t>(end - begin));
      }
      const Array values = a.values_array();
      for (int64_t k = begin; k < end; ++k) STRATA_RETURN_IF_ERROR(AppendValue(values, k, out));
      return Status::OK();
    }
    case TypeId::kStruct:
      for (int f = 0; f < a.num_fields(); ++f) {
        STRATA_RETURN_IF_ERROR(AppendValue(a.field(f), i, out));
      }
      return Status::OK();
    case TypeId::kDictionary: {
      // The decoded value: a dictionary-encoded column hashes like its plain form, minus the
      // null byte already written (a row whose entry is null is null).
      out->pop_back();
      return AppendValue(a.dictionary(), a.DictionaryIndex(i), out);
    }
    default:
      return Unsupported(type);
  }
}

}  // namespace

Result<std::vector<RowHash>> HashRows(const RecordBatch& batch) {
  std::vector<RowHash> out;
  out.reserve(static_cast<size_t>(batch.num_rows()));
  std::string row;
  for (int64_t i = 0; i < batch.num_rows(); ++i) {
    row.clear();
    for (int c = 0; c < batch.num_columns(); ++c) {
      Status st = AppendValue(batch.column(c), i, &row);
      if (!st.ok())
        return st.WithContext(fmt::format("column '{}'", batch.schema()->field(c)->name()));
    }
    const XXH128_hash_t h = XXH3_128bits(row.data(), row.size());
    out.push_back(RowHash{h.low64, h.high64});
  }
  return out;
}

void ContentChecksum::Add(const RowHash& h) {
  ++rows;
  const uint64_t before = lo;
  lo += h.lo;
  hi += h.hi + (lo < before ? 1 : 0);
}

void ContentChecksum::Remove(const RowHash& h) {
  --rows;
  const uint64_t before = lo;
  lo -= h.lo;
  hi -= h.hi + (lo > before ? 1 : 0);
}

std::string ContentChecksum::ToString() const {
  return fmt::format("{} rows, sum {:016x}{:016x}", rows, hi, lo);
}

}  // namespace strata::replication
