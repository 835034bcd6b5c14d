// Arrow IPC reading below the message level: checks a batch header against the schema's
// layout, decompresses the buffers, builds and validates the arrays, applies dictionaries.
#include <fmt/format.h>

#include <cstring>

#include "columnar/ipc_internal.h"
#include "strata/builder.h"

namespace strata::ipc::internal {
namespace {

alignas(64) const uint8_t kZeroBytes[64] = {};

// Non-null empty (or small all-zero) buffers, so accessors never see a null data pointer.
Buffer Zeros(int64_t n) { return Buffer::Unowned(kZeroBytes, n); }

template <typename T>
bool IsAligned(const T* p) {
  return reinterpret_cast<uintptr_t>(p) % 8 == 0;
}

int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && (a < 0)) --q;
  return q;
}

class ColumnDecoder {
 public:
  ColumnDecoder(const DecodeRequest& request, Compression codec)
      : r_(request), codec_(codec), budget_(request.options->max_decompressed_bytes) {}

  Result<ArrayDataPtr> Node(int* node, int* buffer) {
    const int index = (*node)++;
    const NodePlan& plan = r_.plan->nodes[index];
    const fb::FieldNode* field_node = r_.batch->nodes()->Get(index);
    auto data = std::make_shared<ArrayData>();
    data->type = plan.type;
    data->length = field_node->length();
    data->null_count = field_node->null_count();

    const int validity_index = (*buffer)++;
    STRATA_ASSIGN_OR_RETURN(Buffer validity, Take(validity_index));
    if (data->null_count == 0) {
      validity = Buffer();  // a bitmap may be present even so; it carries nothing
    } else {
      const int64_t need = bit_util::BytesForBits(data->length);
      if (validity.size() < need) {
        return Status::Corruption(fmt::format(
            "{}: node {} has {} nulls but its validity buffer {} has {} bytes ({} needed)",
            r_.where, index, data->null_count, validity_index, validity.size(), need));
      }
      const int64_t nulls = data->length - bit_util::CountSetBits(validity.data(), 0, data->length);
      if (nulls != data->null_count) {
        return Status::Corruption(
            fmt::format("{}: node {} declares {} nulls but validity buffer {} has {}", r_.where,
                        index, data->null_count, validity_index, nulls));
      }
    }
    data->buffers.push_back(std::move(validity));

    const DataType& type = *plan.type;
    switch (type.id()) {
      case TypeId::kUtf8:
      case TypeId::kBinary:
      case TypeId::kLargeUtf8:
      case TypeId::kLargeBinary: {
        STRATA_ASSIGN_OR_RETURN(Buffer offsets, Offsets(*data, buffer));
        STRATA_ASSIGN_OR_RETURN(Buffer bytes, Take((*buffer)++));
        data->buffers.push_back(std::move(offsets));
        data->buffers.push_back(std::move(bytes));
        break;
      }
      case TypeId::kList:
      case TypeId::kLargeList: {
        STRATA_ASSIGN_OR_RETURN(Buffer offsets, Offsets(*data, buffer));
        data->buffers.push_back(std::move(offsets));
        STRATA_ASSIGN_OR_RETURN(ArrayDataPtr child, Node(node, buffer));
        data->children.push_back(std::move(child));
        break;
      }
      case TypeId::kFixedSizeList: {
        STRATA_ASSIGN_OR_RETURN(ArrayDataPtr child, Node(node, buffer));
        int64_t expected = 0;
        if (__builtin_mul_overflow(data->length, int64_t{type.list_size()}, &expected) ||
            child->length != expected) {
          return Status::Corruption(fmt::format(
              "{}: node {}: fixed size list of {} rows x {} needs {} child values, has {}",
              r_.where, index, data->length, type.list_size(), expected, child->length));
        }
        data->children.push_back(std::move(child));
        break;
      }
      case TypeId::kStruct:
        for (size_t k = 0; k < type.fields().size(); ++k) {
          STRATA_ASSIGN_OR_RETURN(ArrayDataPtr child, Node(node, buffer));
          data->children.push_back(std::move(child));
        }
        break;
      case TypeId::kDictionary: {
        STRATA_ASSIGN_OR_RETURN(Buffer indices, Take((*buffer)++));
        data->buffers.push_back(std::move(indices));
        STRATA_ASSIGN_OR_RETURN(data->dictionary, Dictionary(index, plan, *data));
        break;
      }
      default: {
        STRATA_ASSIGN_OR_RETURN(Buffer values, Take((*buffer)++));
        if (plan.timestamp_multiplier != 1 || plan.timestamp_divisor != 1) {
          STRATA_ASSIGN_OR_RETURN(values, ConvertTimestamps(values, plan, index));
        }
        data->buffers.push_back(std::move(values));
        break;
      }
    }
    return ArrayDataPtr(std::move(data));
  }

 private:
  // Buffer i, decompressed and 8-byte aligned (copied when its bytes are not).
  Result<Buffer> Take(int i) {
    const std::string where = fmt::format("{}, buffer {}", r_.where, i);
    STRATA_ASSIGN_OR_RETURN(Buffer b, DecompressBuffer(codec_, (*r_.stored)[i], &budget_, where));
    if (b.size() == 0) return Zeros(0);
    return EnsureAligned(b);
  }

  // Offsets of a binary or list node; an empty array may omit them.
  Result<Buffer> Offsets(const ArrayData& data, int* buffer) {
    STRATA_ASSIGN_OR_RETURN(Buffer offsets, Take((*buffer)++));
    if (offsets.size() == 0 && data.length == 0) {
      const bool large = data.type->id() == TypeId::kLargeUtf8 ||
                         data.type->id() == TypeId::kLargeBinary ||
                         data.type->id() == TypeId::kLargeList;
      return Zeros(large ? 8 : 4);
    }
    return offsets;
  }

  Result<ArrayDataPtr> Dictionary(int index, const NodePlan& plan, const ArrayData& data) {
    auto it = r_.dictionaries->find(plan.dictionary_id);
    if (it != r_.dictionaries->end()) return it->second;
    if (data.length - data.null_count > 0) {
      return Status::Corruption(fmt::format(
          "{}: node {} uses dictionary id {}, but no dictionary batch for it came before", r_.where,
          index, plan.dictionary_id));
    }
    return Array::MakeEmpty(plan.type->dictionary_value_type()).data();
  }

  Result<Buffer> ConvertTimestamps(const Buffer& values, const NodePlan& plan, int index) {
    const int64_t n = values.size() / 8;
    BufferBuilder out;
    out.Resize(n * 8);
    const int64_t* src = values.data_as<int64_t>();
    int64_t* dst = out.mutable_data_as<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      if (plan.timestamp_divisor != 1) {
        dst[i] = FloorDiv(src[i], plan.timestamp_divisor);
      } else if (__builtin_mul_overflow(src[i], plan.timestamp_multiplier, &dst[i])) {
        return Status::NotSupported(
            fmt::format("{}: node {}: timestamp {} at slot {} does not fit int64 microseconds",
                        r_.where, index, src[i], i));
      }
    }
    return out.Finish();
  }

  const DecodeRequest& r_;
  Compression codec_;
  int64_t budget_;
};

}  // namespace

Status CheckBatchHeader(const fb::RecordBatch* batch, const LayoutPlan& plan, int64_t body_length,
                        const std::string& where) {
  if (batch == nullptr)
    return Status::Corruption(fmt::format("{}: record batch header missing", where));
  if (batch->length() < 0) {
    return Status::Corruption(fmt::format("{}: negative row count {}", where, batch->length()));
  }
  const auto* nodes = batch->nodes();
  const auto* buffers = batch->buffers();
  const size_t num_nodes = nodes != nullptr ? nodes->size() : 0;
  const size_t num_buffers = buffers != nullptr ? buffers->size() : 0;
  if (num_nodes != plan.nodes.size()) {
    return Status::Corruption(
        fmt::format("{}: {} field nodes, the schema has {}", where, num_nodes, plan.nodes.size()));
  }
  if (num_buffers != static_cast<size_t>(plan.num_buffers)) {
    return Status::Corruption(
        fmt::format("{}: {} buffers, the schema has {}", where, num_buffers, plan.num_buffers));
  }
  // The verifier checks vector bounds, not the 8-byte alignment of the int64 structs.
  if ((num_nodes > 0 && !IsAligned(nodes->data())) ||
      (num_buffers > 0 && !IsAligned(buffers->data()))) {
    return Status::Corruption(fmt::format("{}: misaligned node or buffer vector", where));
  }
  for (size_t i = 0; i < num_nodes; ++i) {
    const fb::FieldNode* node = nodes->Get(static_cast<flatbuffers::uoffset_t>(i));
    if (node->length() < 0 || node->length() > kMaxNodeLength || node->null_count() < 0 ||
        node->null_count() > node->length()) {
      return Status::Corruption(fmt::format("{}: node {} has length {} and null count {}", where, i,
                                            node->length(), node->null_count()));
    }
  }
  for (size_t i = 0; i < num_buffers; ++i) {
    const fb::Buffer* b = buffers->Get(static_cast<flatbuffers::uoffset_t>(i));
    if (b->offset() < 0 || b->length() < 0 || b->offset() > body_length ||
        b->length() > body_length - b->offset()) {
      return Status::Corruption(
          fmt::format("{}: buffer {} [offset {}, length {}] lies outside the body of {} bytes",
                      where, i, b->offset(), b->length(), body_length));
    }
  }
  for (size_t c = 0; c < plan.columns.size(); ++c) {
    const fb::FieldNode* node = nodes->Get(plan.columns[c].node_begin);
    if (node->length() != batch->length()) {
      return Status::Corruption(fmt::format("{}: column {} has {} rows, the batch {}", where, c,
                                            node->length(), batch->length()));
    }
  }
  return CompressionFromFlatbuffer(batch->compression(), where).status();
}

std::vector<Buffer> SliceBody(const fb::RecordBatch* batch, const Buffer& body) {
  std::vector<Buffer> out;
  if (batch->buffers() == nullptr) return out;
  out.reserve(batch->buffers()->size());
  for (const fb::Buffer* b : *batch->buffers()) out.push_back(body.Slice(b->offset(), b->length()));
  return out;
}

Result<std::vector<Array>> DecodeColumns(const DecodeRequest& request,
                                         const std::vector<int>& columns) {
  STRATA_ASSIGN_OR_RETURN(Compression codec,
                          CompressionFromFlatbuffer(request.batch->compression(), request.where));
  ColumnDecoder decoder(request, codec);
  std::vector<Array> out;
  out.reserve(columns.size());
  for (int c : columns) {
    const ColumnSpan& span = request.plan->columns[c];
    int node = span.node_begin;
    int buffer = span.buffer_begin;
    STRATA_ASSIGN_OR_RETURN(ArrayDataPtr data, decoder.Node(&node, &buffer));
    if (node != span.node_end || buffer != span.buffer_end) {
      return Status::Internal(
          fmt::format("{}: column {} decoded nodes [{}, {}) buffers [{}, {}), "
                      "planned [{}, {}) and [{}, {})",
                      request.where, c, span.node_begin, node, span.buffer_begin, buffer,
                      span.node_begin, span.node_end, span.buffer_begin, span.buffer_end));
    }
    Array array(std::move(data));
    Status st = request.options->validate_full ? array.ValidateFull() : array.Validate();
    if (!st.ok()) {
      return Status::Corruption(
          fmt::format("{}, column {}: invalid array: {}", request.where, c, st.message()));
    }
    out.push_back(std::move(array));
  }
  return out;
}

Status ApplyDictionaryBatch(const fb::DictionaryBatch* batch, const Buffer& body,
                            int64_t body_length, const LayoutPlan& schema_plan,
                            const ReadOptions& options, bool allow_replacement,
                            DictionaryMap* dictionaries, const std::string& where) {
  if (batch == nullptr) {
    return Status::Corruption(fmt::format("{}: dictionary batch header missing", where));
  }
  const int64_t id = batch->id();
  auto type_it = schema_plan.dictionaries.find(id);
  if (type_it == schema_plan.dictionaries.end()) {
    return Status::Corruption(
        fmt::format("{}: dictionary batch for id {}, which no schema field uses", where, id));
  }
  const LayoutPlan plan = PlanSingleType(type_it->second);
  const std::string dict_where = fmt::format("{} (dictionary {})", where, id);
  STRATA_RETURN_IF_ERROR(CheckBatchHeader(batch->data(), plan, body_length, dict_where));
  std::vector<Buffer> stored = SliceBody(batch->data(), body);
  DecodeRequest request;
  request.batch = batch->data();
  request.plan = &plan;
  request.stored = &stored;
  request.dictionaries = dictionaries;
  request.options = &options;
  request.where = dict_where;
  STRATA_ASSIGN_OR_RETURN(std::vector<Array> columns, DecodeColumns(request, {0}));

  auto it = dictionaries->find(id);
  if (batch->is_delta() && it != dictionaries->end()) {
    Result<Array> merged = Concatenate({Array(it->second), columns[0]});
    if (!merged.ok()) {
      return Status::Corruption(
          fmt::format("{}: cannot append delta: {}", dict_where, merged.status().message()));
    }
    it->second = merged->data();
    return Status::OK();
  }
  if (!batch->is_delta() && it != dictionaries->end() && !allow_replacement) {
    return Status::Corruption(
        fmt::format("{}: replaces dictionary {}; the file format allows only deltas", where, id));
  }
  (*dictionaries)[id] = columns[0].data();
  return Status::OK();
}

Result<RecordBatch> DecodeRecordBatch(const fb::RecordBatch* batch, const DecodedSchema& schema,
                                      const std::vector<Buffer>& stored,
                                      const std::vector<int>& columns,
                                      const DictionaryMap& dictionaries, const ReadOptions& options,
                                      const std::string& where) {
  DecodeRequest request;
  request.batch = batch;
  request.plan = &schema.plan;
  request.stored = &stored;
  request.dictionaries = &dictionaries;
  request.options = &options;
  request.where = where;
  STRATA_ASSIGN_OR_RETURN(std::vector<Array> arrays, DecodeColumns(request, columns));
  SchemaPtr projected = schema.schema;
  if (static_cast<int>(columns.size()) != schema.schema->num_fields() || [&] {
        for (size_t i = 0; i < columns.size(); ++i) {
          if (columns[i] != static_cast<int>(i)) return true;
        }
        return false;
      }()) {
    STRATA_ASSIGN_OR_RETURN(projected, schema.schema->Project(columns));
  }
  Result<RecordBatch> out = RecordBatch::Make(projected, batch->length(), std::move(arrays));
  if (!out.ok()) {
    return Status::Corruption(fmt::format("{}: {}", where, out.status().message()));
  }
  return out;
}

}  // namespace strata::ipc::internal
