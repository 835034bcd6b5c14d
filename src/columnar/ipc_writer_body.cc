// Arrow IPC writing below the message level: arrays -> field nodes and body buffers (sliced
// arrays rebased to offset 0), and batch messages.
#include <fmt/format.h>

#include <cstring>

#include "columnar/ipc_internal.h"

namespace strata::ipc::internal {
namespace {

alignas(64) const uint8_t kZeroBytes[64] = {};

// A buffer of one zero offset, for empty arrays without an offsets buffer.
Buffer ZeroOffset(int64_t width) { return Buffer::Unowned(kZeroBytes, width); }

Status Short(const char* what, int64_t have, int64_t need) {
  return Status::InvalidArgument(fmt::format(
      "cannot write array: {} buffer has {} bytes, the layout needs {}", what, have, need));
}

// Offsets [offset, offset + length] rebased to start at zero, and the value range they
// cover in the child / data.
struct RebasedOffsets {
  Buffer offsets;
  int64_t begin = 0;
  int64_t end = 0;
};

template <typename T>
Result<RebasedOffsets> RebaseOffsets(const Buffer& offsets, int64_t offset, int64_t length) {
  const int64_t need = (offset + length + 1) * static_cast<int64_t>(sizeof(T));
  RebasedOffsets out;
  if (offsets.size() < need) {
    if (length == 0) {
      out.offsets = ZeroOffset(sizeof(T));
      return out;
    }
    return Short("offsets", offsets.size(), need);
  }
  const T* p = offsets.data_as<T>() + offset;
  out.begin = p[0];
  out.end = p[length];
  if (out.begin < 0 || out.end < out.begin) {
    return Status::InvalidArgument(
        fmt::format("cannot write array: offsets run from {} to {}", out.begin, out.end));
  }
  if (out.begin == 0) {
    out.offsets = offsets.Slice(offset * sizeof(T), (length + 1) * sizeof(T));
    return out;
  }
  BufferBuilder rebased;
  rebased.Resize((length + 1) * sizeof(T));
  T* q = rebased.mutable_data_as<T>();
  for (int64_t i = 0; i <= length; ++i) q[i] = p[i] - p[0];
  out.offsets = rebased.Finish();
  return out;
}

class BodyEncoder {
 public:
  BodyEncoder(const LayoutPlan& plan, const WriterDictionaries::Prepared* dictionaries)
      : plan_(plan), dictionaries_(dictionaries) {}

  Status Visit(const Array& array) {
    const int node = node_++;
    if (node >= static_cast<int>(plan_.nodes.size())) {
      return Status::Internal("array has more nodes than its schema");
    }
    const ArrayData& d = *array.data();
    body_.nodes.emplace_back(d.length, d.null_count);
    STRATA_RETURN_IF_ERROR(Validity(d));
    switch (d.type->id()) {
      case TypeId::kBool: {
        const int64_t need = bit_util::BytesForBits(d.offset + d.length);
        if (d.buffers.size() < 2 || d.buffers[1].size() < need) {
          return Short("values", d.buffers.size() < 2 ? 0 : d.buffers[1].size(), need);
        }
        body_.buffers.push_back(SliceBitmap(d.buffers[1], d.offset, d.length));
        return Status::OK();
      }
      case TypeId::kUtf8:
      case TypeId::kBinary:
        return Binary<int32_t>(d);
      case TypeId::kLargeUtf8:
      case TypeId::kLargeBinary:
        return Binary<int64_t>(d);
      case TypeId::kList:
        return List<int32_t>(array);
      case TypeId::kLargeList:
        return List<int64_t>(array);
      case TypeId::kFixedSizeList: {
        if (d.children.empty()) return Status::InvalidArgument("fixed size list without child");
        const int64_t size = d.type->list_size();
        return Visit(array.values_array().Slice(d.offset * size, d.length * size));
      }
      case TypeId::kStruct:
        if (static_cast<int>(d.children.size()) != static_cast<int>(d.type->fields().size())) {
          return Status::InvalidArgument("struct array with a wrong number of children");
        }
        for (int k = 0; k < array.num_fields(); ++k) STRATA_RETURN_IF_ERROR(Visit(array.field(k)));
        return Status::OK();
      case TypeId::kDictionary: {
        STRATA_ASSIGN_OR_RETURN(Buffer indices, DictionaryIndices(dictionaries_, node, array));
        body_.buffers.push_back(std::move(indices));
        return Status::OK();
      }
      default:
        return FixedWidth(d);
    }
  }

  EncodedBody Finish() { return std::move(body_); }

 private:
  Status Validity(const ArrayData& d) {
    if (d.null_count == 0) {
      body_.buffers.emplace_back();  // omitted: no nulls
      return Status::OK();
    }
    if (d.null_count < 0 || d.buffers.empty() || d.buffers[0].is_null()) {
      return Status::InvalidArgument(
          fmt::format("cannot write array of {} with null count {} and no validity bitmap",
                      d.type->ToString(), d.null_count));
    }
    const int64_t need = bit_util::BytesForBits(d.offset + d.length);
    if (d.buffers[0].size() < need) return Short("validity", d.buffers[0].size(), need);
    body_.buffers.push_back(SliceBitmap(d.buffers[0], d.offset, d.length));
    return Status::OK();
  }

  Status FixedWidth(const ArrayData& d) {
    const int64_t width = d.type->bit_width() / 8;
    const int64_t need = (d.offset + d.length) * width;
    if (d.buffers.size() < 2 || d.buffers[1].size() < need) {
      return Short("values", d.buffers.size() < 2 ? 0 : d.buffers[1].size(), need);
    }
    body_.buffers.push_back(d.buffers[1].Slice(d.offset * width, d.length * width));
    return Status::OK();
  }

  template <typename T>
  Status Binary(const ArrayData& d) {
    if (d.buffers.size() < 3) return Short("data", 0, 1);
    STRATA_ASSIGN_OR_RETURN(RebasedOffsets r, RebaseOffsets<T>(d.buffers[1], d.offset, d.length));
    if (d.buffers[2].size() < r.end) return Short("data", d.buffers[2].size(), r.end);
    body_.buffers.push_back(r.offsets);
    body_.buffers.push_back(d.buffers[2].Slice(r.begin, r.end - r.begin));
    return Status::OK();
  }

  template <typename T>
  Status List(const Array& array) {
    const ArrayData& d = *array.data();
    if (d.buffers.size() < 2 || d.children.empty()) return Short("offsets", 0, 1);
    STRATA_ASSIGN_OR_RETURN(RebasedOffsets r, RebaseOffsets<T>(d.buffers[1], d.offset, d.length));
    Array values = array.values_array();
    if (values.length() < r.end) {
      return Status::InvalidArgument(
          fmt::format("cannot write list array: offsets reach {} but the child has {} values",
                      r.end, values.length()));
    }
    body_.buffers.push_back(r.offsets);
    return Visit(values.Slice(r.begin, r.end - r.begin));
  }

  const LayoutPlan& plan_;
  const WriterDictionaries::Prepared* dictionaries_;
  EncodedBody body_;
  int node_ = 0;
};

}  // namespace

Buffer SliceBitmap(const Buffer& bitmap, int64_t offset, int64_t length) {
  if (length == 0) return Buffer();
  if (offset % 8 == 0) return bitmap.Slice(offset / 8, bit_util::BytesForBits(length));
  return bit_util::CopyBitmap(bitmap.data(), offset, length);
}

Result<EncodedBody> EncodeBody(const std::vector<Array>& columns, const LayoutPlan& plan,
                               const WriterDictionaries::Prepared* dictionaries,
                               const WriteOptions& options) {
  BodyEncoder encoder(plan, dictionaries);
  for (const Array& column : columns) STRATA_RETURN_IF_ERROR(encoder.Visit(column));
  EncodedBody body = encoder.Finish();
  if (body.nodes.size() != plan.nodes.size() ||
      static_cast<int>(body.buffers.size()) != plan.num_buffers) {
    return Status::Internal(fmt::format("encoded {} nodes and {} buffers, the schema has {} and {}",
                                        body.nodes.size(), body.buffers.size(), plan.nodes.size(),
                                        plan.num_buffers));
  }
  if (options.compression != Compression::kNone) {
    for (Buffer& buffer : body.buffers) {
      STRATA_ASSIGN_OR_RETURN(
          buffer, CompressBuffer(options.compression, options.zstd_level, buffer,
                                 options.min_space_savings, options.min_compressed_buffer_bytes));
    }
  }
  return body;
}

Result<WrittenBlock> WriteBatchMessage(OutputStream* out, int64_t num_rows, const EncodedBody& body,
                                       const WriteOptions& options,
                                       std::optional<int64_t> dictionary_id, bool is_delta,
                                       const KeyValueMetadata& custom_metadata) {
  std::vector<fb::Buffer> specs;
  specs.reserve(body.buffers.size());
  int64_t body_length = 0;
  for (const Buffer& b : body.buffers) {
    specs.emplace_back(body_length, b.size());
    body_length += AlignUp(b.size(), options.alignment);
  }
  flatbuffers::FlatBufferBuilder fbb(1024);
  auto nodes = fbb.CreateVectorOfStructs(body.nodes);
  auto buffers = fbb.CreateVectorOfStructs(specs);
  flatbuffers::Offset<fb::BodyCompression> compression;
  if (options.compression != Compression::kNone) {
    compression = fb::CreateBodyCompression(fbb,
                                            options.compression == Compression::kZstd
                                                ? fb::CompressionType::ZSTD
                                                : fb::CompressionType::LZ4_FRAME,
                                            fb::BodyCompressionMethod::BUFFER);
  }
  auto batch = fb::CreateRecordBatch(fbb, num_rows, nodes, buffers, compression);
  fb::MessageHeader header_type = fb::MessageHeader::RecordBatch;
  flatbuffers::Offset<void> header = batch.Union();
  if (dictionary_id.has_value()) {
    header_type = fb::MessageHeader::DictionaryBatch;
    header = fb::CreateDictionaryBatch(fbb, *dictionary_id, batch, is_delta).Union();
  }
  auto metadata = MetadataToFlatbuffer(fbb, custom_metadata);
  fbb.Finish(
      fb::CreateMessage(fbb, fb::MetadataVersion::V5, header_type, header, body_length, metadata));

  WrittenBlock block;
  block.offset = out->Tell();
  STRATA_ASSIGN_OR_RETURN(int64_t metadata_length,
                          WriteMessageMetadata(out, fbb, options.alignment));
  block.metadata_length = static_cast<int32_t>(metadata_length);
  block.body_length = body_length;
  for (const Buffer& b : body.buffers) {
    STRATA_RETURN_IF_ERROR(out->Write(b.view()));
    STRATA_RETURN_IF_ERROR(WriteZeros(out, AlignUp(b.size(), options.alignment) - b.size()));
  }
  return block;
}

}  // namespace strata::ipc::internal
