// The framing around an IPC file's messages (magic, schema message, end-of-stream marker,
// footer, trailer), written by FileWriter and by the Encode* functions that let a file be
// assembled around messages written elsewhere (the LSM write-ahead log), and the scan that
// locates the messages of a stream so that a footer can name them.
#include <fmt/format.h>

#include <cstring>
#include <limits>

#include "columnar/ipc_internal.h"

namespace strata::ipc {

using internal::LayoutPlan;
namespace fb = internal::fb;

namespace internal {

Status CheckAlignment(int alignment) {
  if (alignment < 8 || alignment > 4096 || (alignment & (alignment - 1)) != 0) {
    return Status::InvalidArgument(
        fmt::format("IPC alignment must be a power of two from 8 to 4096, not {}", alignment));
  }
  return Status::OK();
}

Status WriteSchemaMessage(OutputStream* out, const Schema& schema, const LayoutPlan& plan,
                          int alignment) {
  flatbuffers::FlatBufferBuilder fbb(1024);
  auto fb_schema = SchemaToFlatbuffer(fbb, schema, plan);
  fbb.Finish(fb::CreateMessage(fbb, fb::MetadataVersion::V5, fb::MessageHeader::Schema,
                               fb_schema.Union(), 0));
  return WriteMessageMetadata(out, fbb, alignment).status();
}

Status WriteFileHeader(OutputStream* out, const Schema& schema, const LayoutPlan& plan,
                       int alignment) {
  // The magic padded to 8 bytes, so that the schema message starts aligned.
  char magic[kFileHeaderLength] = {};
  std::memcpy(magic, kMagic, kMagicLength);
  STRATA_RETURN_IF_ERROR(out->Write(std::string_view(magic, sizeof(magic))));
  return WriteSchemaMessage(out, schema, plan, alignment);
}

Status WriteEndOfStream(OutputStream* out) {
  const uint32_t eos[2] = {kContinuation, 0};
  return out->Write(std::string_view(reinterpret_cast<const char*>(eos), sizeof(eos)));
}

Status WriteFooter(OutputStream* out, const Schema& schema, const LayoutPlan& plan,
                   const std::vector<FileBlock>& dictionaries,
                   const std::vector<FileBlock>& record_batches, const KeyValueMetadata& metadata) {
  flatbuffers::FlatBufferBuilder fbb(1024);
  auto fb_schema = SchemaToFlatbuffer(fbb, schema, plan);
  auto to_blocks = [](const std::vector<FileBlock>& blocks) {
    std::vector<fb::Block> out;
    out.reserve(blocks.size());
    for (const FileBlock& b : blocks) out.emplace_back(b.offset, b.metadata_length, b.body_length);
    return out;
  };
  auto fb_dictionaries = fbb.CreateVectorOfStructs(to_blocks(dictionaries));
  auto fb_batches = fbb.CreateVectorOfStructs(to_blocks(record_batches));
  auto fb_metadata = MetadataToFlatbuffer(fbb, metadata);
  fbb.Finish(fb::CreateFooter(fbb, fb::MetadataVersion::V5, fb_schema, fb_dictionaries, fb_batches,
                              fb_metadata));
  const int64_t size = fbb.GetSize();
  if (size > std::numeric_limits<int32_t>::max()) {
    return Status::InvalidArgument(
        fmt::format("IPC file footer of {} bytes exceeds the int32 limit", size));
  }
  const int32_t size32 = static_cast<int32_t>(size);
  char trailer[kFileTrailerLength];
  std::memcpy(trailer, &size32, 4);
  std::memcpy(trailer + 4, kMagic, kMagicLength);
  STRATA_RETURN_IF_ERROR(
      out->Write(std::string_view(reinterpret_cast<const char*>(fbb.GetBufferPointer()), size)));
  return out->Write(std::string_view(trailer, sizeof(trailer)));
}

}  // namespace internal

namespace {

// Collects what is written in a string (the Encode* results).
class StringOutputStream final : public OutputStream {
 public:
  Status Write(std::string_view bytes) override {
    bytes_.append(bytes);
    return Status::OK();
  }
  int64_t Tell() const override { return static_cast<int64_t>(bytes_.size()); }
  Status Flush() override { return Status::OK(); }
  Status Close() override { return Status::OK(); }
  std::string Finish() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

// InvalidArgument unless every block can name a message of an IPC file: `what` and the
// block's index name it in the message.
Status CheckBlocks(const std::vector<FileBlock>& blocks, std::string_view what) {
  for (size_t i = 0; i < blocks.size(); ++i) {
    const FileBlock& b = blocks[i];
    // A message starts after the leading magic and its metadata holds at least the
    // continuation marker and the length. Arrow requires offsets and both lengths to be
    // multiples of 8 (Arrow C++, hence pyarrow, refuses other blocks).
    if (b.offset < internal::kFileHeaderLength || b.offset % 8 != 0 || b.metadata_length < 8 ||
        b.metadata_length % 8 != 0 || b.body_length < 0 || b.body_length % 8 != 0) {
      return Status::InvalidArgument(fmt::format(
          "IPC file footer: {} block {} [offset {}, metadata {}, body {}] needs an offset past "
          "the {}-byte magic, metadata of at least 8 bytes and a non-negative body length, all "
          "multiples of 8",
          what, i, b.offset, b.metadata_length, b.body_length, internal::kFileHeaderLength));
    }
  }
  return Status::OK();
}

}  // namespace

Result<std::string> EncodeFileHeader(const Schema& schema, const WriteOptions& options) {
  STRATA_RETURN_IF_ERROR(internal::CheckAlignment(options.alignment));
  // Dictionary ids are numbered as every writer numbers them, so they match the ids of
  // dictionary batches in streams of this schema.
  STRATA_ASSIGN_OR_RETURN(LayoutPlan plan, internal::PlanSchema(schema));
  StringOutputStream out;
  STRATA_RETURN_IF_ERROR(internal::WriteFileHeader(&out, schema, plan, options.alignment));
  return out.Finish();
}

Result<std::string> EncodeFileFooter(const Schema& schema,
                                     const std::vector<FileBlock>& dictionaries,
                                     const std::vector<FileBlock>& record_batches) {
  STRATA_RETURN_IF_ERROR(CheckBlocks(dictionaries, "dictionary"));
  STRATA_RETURN_IF_ERROR(CheckBlocks(record_batches, "record batch"));
  STRATA_ASSIGN_OR_RETURN(LayoutPlan plan, internal::PlanSchema(schema));
  StringOutputStream out;
  STRATA_RETURN_IF_ERROR(internal::WriteEndOfStream(&out));
  STRATA_RETURN_IF_ERROR(internal::WriteFooter(&out, schema, plan, dictionaries, record_batches,
                                               /*metadata=*/{}));
  return out.Finish();
}

Result<std::vector<MessageLayout>> ScanStreamLayout(std::string_view stream) {
  internal::BufferInput input(Buffer::Unowned(stream.data(), static_cast<int64_t>(stream.size())));
  const ReadOptions options;
  std::vector<MessageLayout> out;
  while (true) {
    const int64_t index = static_cast<int64_t>(out.size());
    STRATA_ASSIGN_OR_RETURN(std::optional<internal::RawMessage> raw,
                            internal::ReadMessage(&input, options, index));
    if (!raw.has_value()) break;
    const std::string where = fmt::format("stream message {} (offset {})", index, raw->offset);
    const fb::Message* message = raw->view.message;
    MessageLayout layout;
    layout.offset = raw->offset;
    layout.metadata_length = static_cast<int32_t>(raw->metadata_length);
    layout.body_length = raw->body.size();
    // A stream is its schema message, then dictionary and record batches (as StreamReader
    // requires).
    const fb::MessageHeader type = message->header_type();
    if ((index == 0) != (type == fb::MessageHeader::Schema)) {
      return Status::Corruption(
          index == 0 ? fmt::format("{}: stream starts with a {} message instead of a schema", where,
                                   fb::EnumNameMessageHeader(type))
                     : fmt::format("{}: a second schema message", where));
    }
    switch (type) {
      case fb::MessageHeader::Schema:
        if (message->header_as_Schema() == nullptr) {
          return Status::Corruption(fmt::format("{}: schema message without a schema", where));
        }
        layout.kind = MessageLayout::Kind::kSchema;
        break;
      case fb::MessageHeader::DictionaryBatch: {
        const fb::DictionaryBatch* dictionary = message->header_as_DictionaryBatch();
        if (dictionary == nullptr || dictionary->data() == nullptr) {
          return Status::Corruption(
              fmt::format("{}: dictionary batch message without a header", where));
        }
        const int64_t length = dictionary->data()->length();
        if (length < 0 || length > internal::kMaxNodeLength) {
          return Status::Corruption(fmt::format("{}: dictionary {} length {} is out of range",
                                                where, dictionary->id(), length));
        }
        layout.kind = MessageLayout::Kind::kDictionaryBatch;
        layout.num_rows = length;
        layout.dictionary_id = dictionary->id();
        layout.is_delta = dictionary->is_delta();
        break;
      }
      case fb::MessageHeader::RecordBatch: {
        const fb::RecordBatch* batch = message->header_as_RecordBatch();
        if (batch == nullptr) {
          return Status::Corruption(
              fmt::format("{}: record batch message without a header", where));
        }
        if (batch->length() < 0 || batch->length() > internal::kMaxNodeLength) {
          return Status::Corruption(
              fmt::format("{}: record batch length {} is out of range", where, batch->length()));
        }
        layout.kind = MessageLayout::Kind::kRecordBatch;
        layout.num_rows = batch->length();
        break;
      }
      case fb::MessageHeader::NONE:
        return Status::Corruption(fmt::format("{}: message without a header", where));
      default:
        return Status::NotSupported(fmt::format("{}: {} messages are not supported", where,
                                                fb::EnumNameMessageHeader(type)));
    }
    out.push_back(layout);
  }
  if (out.empty()) {
    return Status::Corruption(
        "stream message 0 (offset 0): the stream is empty or starts with the end-of-stream "
        "marker, without a schema message");
  }
  return out;
}

}  // namespace strata::ipc
