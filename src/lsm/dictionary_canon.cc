// Re-indexing dictionary columns onto grow-only canonical dictionaries (see
// dictionary_canon.h).
#include "lsm/dictionary_canon.h"

#include <fmt/format.h>

#include <cstring>
#include <utility>

#include "strata/builder.h"

namespace strata::lsm {
namespace {

bool ContainsDictionary(const DataType& type) {
  if (type.id() == TypeId::kDictionary) return true;
  for (const FieldPtr& child : type.fields()) {
    if (ContainsDictionary(*child->type())) return true;
  }
  return false;
}

// Entries an index of `type` can address.
int64_t Capacity(const DataType& type) {
  const int bits = type.bit_width();
  if (bits >= 63) return INT64_MAX;
  return type.is_signed_integer() ? (int64_t{1} << (bits - 1)) : (int64_t{1} << bits);
}

// Writes `value` as little-endian integer of `bytes` bytes at `out`.
void StoreIndex(uint8_t* out, int bytes, int64_t value) {
  const auto v = static_cast<uint64_t>(value);
  std::memcpy(out, &v, static_cast<size_t>(bytes));  // little endian
}

Result<ArrayDataPtr> BuildValues(const DataTypePtr& type, const std::vector<std::string>& values) {
  std::unique_ptr<ArrayBuilder> builder;
  if (type->id() == TypeId::kLargeUtf8 || type->id() == TypeId::kLargeBinary) {
    auto b = std::make_unique<LargeBinaryBuilder>(type);
    for (const std::string& v : values) STRATA_RETURN_IF_ERROR(b->Append(v));
    builder = std::move(b);
  } else {
    auto b = std::make_unique<BinaryBuilder>(type);
    for (const std::string& v : values) STRATA_RETURN_IF_ERROR(b->Append(v));
    builder = std::move(b);
  }
  STRATA_ASSIGN_OR_RETURN(Array array, builder->Finish());
  return array.data();
}

}  // namespace

DictionaryCanon::DictionaryCanon(const Schema& schema) {
  MutexLock lock(mu_);
  for (int i = 0; i < schema.num_fields(); ++i) {
    const DataTypePtr& type = schema.field(i)->type();
    if (type->id() != TypeId::kDictionary) continue;
    Column column;
    column.index = i;
    column.value_type = type->dictionary_value_type();
    column.capacity = Capacity(*type->index_type());
    columns_.push_back(std::move(column));
  }
  empty_ = columns_.empty();
}

bool DictionaryCanon::HasNestedDictionary(const Schema& schema) {
  for (const FieldPtr& field : schema.fields()) {
    if (field->type()->id() == TypeId::kDictionary) continue;
    if (ContainsDictionary(*field->type())) return true;
  }
  return false;
}

bool DictionaryCanon::usable() const {
  MutexLock lock(mu_);
  return usable_;
}

Result<std::optional<std::vector<RecordBatch>>> DictionaryCanon::Apply(
    const std::vector<RecordBatch>& batches) {
  if (empty_) return std::optional<std::vector<RecordBatch>>(batches);
  // Per batch and dictionary column: the canonical position of each of the batch's
  // dictionary entries. Then one shared dictionary array per column.
  std::vector<std::vector<std::vector<int64_t>>> remap(batches.size());
  std::vector<ArrayDataPtr> dictionaries;
  std::vector<int> indexes;  // schema column of each dictionary column
  {
    MutexLock lock(mu_);
    if (!usable_) return std::nullopt;
    for (size_t b = 0; b < batches.size(); ++b) {
      remap[b].resize(columns_.size());
      for (size_t c = 0; c < columns_.size(); ++c) {
        Column& column = columns_[c];
        const Array dictionary = batches[b].column(column.index).dictionary();
        std::vector<int64_t>& positions = remap[b][c];
        positions.reserve(static_cast<size_t>(dictionary.length()));
        for (int64_t e = 0; e < dictionary.length(); ++e) {
          if (dictionary.IsNull(e)) {
            usable_ = false;
            return std::nullopt;
          }
          std::string value(dictionary.StringValue(e));
          auto it = column.position.find(value);
          if (it == column.position.end()) {
            if (static_cast<int64_t>(column.values.size()) >= column.capacity) {
              usable_ = false;
              return std::nullopt;
            }
            it = column.position.emplace(value, static_cast<int64_t>(column.values.size())).first;
            column.values.push_back(std::move(value));
            column.array = nullptr;
          }
          positions.push_back(it->second);
        }
      }
    }
    for (Column& column : columns_) {
      if (column.array == nullptr) {
        STRATA_ASSIGN_OR_RETURN(column.array, BuildValues(column.value_type, column.values));
      }
      dictionaries.push_back(column.array);
      indexes.push_back(column.index);
    }
  }
  std::vector<RecordBatch> out;
  out.reserve(batches.size());
  for (size_t b = 0; b < batches.size(); ++b) {
    std::vector<Array> columns = batches[b].columns();
    for (size_t c = 0; c < dictionaries.size(); ++c) {
      const int index = indexes[c];
      const Array& source = columns[static_cast<size_t>(index)];
      const ArrayData& data = *source.data();
      const int bytes = source.type()->index_type()->bit_width() / 8;
      // Same offset and validity bitmap as the source; indices rewritten.
      std::vector<uint8_t> indices(static_cast<size_t>((data.offset + data.length) * bytes), 0);
      const std::vector<int64_t>& positions = remap[b][c];
      for (int64_t r = 0; r < data.length; ++r) {
        if (source.IsNull(r)) continue;
        const int64_t old = source.DictionaryIndex(r);
        if (old < 0 || old >= static_cast<int64_t>(positions.size())) {
          return Status::InvalidArgument(
              fmt::format("column {}: row {} has dictionary index {} of a dictionary of {} entries",
                          index, r, old, positions.size()));
        }
        StoreIndex(indices.data() + (data.offset + r) * bytes, bytes,
                   positions[static_cast<size_t>(old)]);
      }
      ArrayData rewritten;
      rewritten.type = data.type;
      rewritten.length = data.length;
      rewritten.offset = data.offset;
      rewritten.null_count = data.null_count;
      rewritten.buffers = {data.buffers[0], Buffer::FromVector(std::move(indices))};
      rewritten.dictionary = dictionaries[c];
      columns[static_cast<size_t>(index)] =
          Array(std::make_shared<ArrayData>(std::move(rewritten)));
    }
    STRATA_ASSIGN_OR_RETURN(
        RecordBatch batch,
        RecordBatch::Make(batches[b].schema(), batches[b].num_rows(), std::move(columns)));
    out.push_back(std::move(batch));
  }
  return std::optional<std::vector<RecordBatch>>(std::move(out));
}

}  // namespace strata::lsm
