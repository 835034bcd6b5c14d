// Arrow IPC stream and file readers: message framing over buffers, input callbacks and
// random-access sources, the file trailer and footer, and projected batch reads.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "columnar/ipc_internal.h"

namespace strata::ipc {

using internal::DecodedSchema;
using internal::DictionaryMap;
using internal::MessageInput;
using internal::MessageView;
using internal::RawMessage;
namespace fb = internal::fb;

namespace {

// ---------------------------------------------------------------------------------------
// Sequential message input

class CallbackInput final : public MessageInput {
 public:
  // Memory grows with the bytes that actually arrive, never with a declared length.
  static constexpr int64_t kChunk = 1 << 20;

  explicit CallbackInput(InputCallback callback) : callback_(std::move(callback)) {}
  Result<Buffer> Read(int64_t n) override {
    BufferBuilder out;
    int64_t got = 0;
    while (got < n && !at_end_) {
      const int64_t want = std::min(n - got, kChunk);
      out.Resize(got + want);
      STRATA_ASSIGN_OR_RETURN(int64_t r, callback_(out.mutable_data() + got, want));
      if (r < 0 || r > want) {
        return Status::InvalidArgument(
            fmt::format("input callback returned {} for a read of at most {} bytes", r, want));
      }
      if (r == 0) at_end_ = true;
      got += r;
      out.Resize(got);
    }
    position_ += got;
    return out.Finish();
  }

 private:
  InputCallback callback_;
  bool at_end_ = false;
};

int32_t LoadInt32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

int64_t SaturatingAdd(int64_t a, int64_t b) {
  int64_t sum;
  return __builtin_add_overflow(a, b, &sum) ? std::numeric_limits<int64_t>::max() : sum;
}

std::vector<int> AllColumns(const Schema& schema) {
  std::vector<int> out(schema.num_fields());
  for (int i = 0; i < schema.num_fields(); ++i) out[i] = i;
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Message framing (shared with ScanStreamLayout)

namespace internal {

Result<Buffer> BufferInput::Read(int64_t n) {
  const int64_t m = std::min(n, buffer_.size() - position_);
  Buffer out = buffer_.Slice(position_, m);
  position_ += m;
  return out;
}

Result<std::optional<RawMessage>> ReadMessage(MessageInput* input, const ReadOptions& options,
                                              int64_t index) {
  RawMessage raw;
  raw.offset = input->position();
  const std::string where = fmt::format("stream message {} (offset {})", index, raw.offset);
  STRATA_ASSIGN_OR_RETURN(Buffer head, input->Read(4));
  if (head.size() == 0) return std::optional<RawMessage>();
  if (head.size() < 4) {
    return Status::Corruption(fmt::format("{}: stream ends inside the message prefix", where));
  }
  int32_t length = LoadInt32(head.data());
  if (static_cast<uint32_t>(length) == kContinuation) {
    STRATA_ASSIGN_OR_RETURN(Buffer prefix, input->Read(4));
    if (prefix.size() < 4) {
      return Status::Corruption(fmt::format("{}: stream ends inside the message length", where));
    }
    length = LoadInt32(prefix.data());
  }  // else: pre-1.0 framing without the continuation marker
  if (length == 0) return std::optional<RawMessage>();
  if (length < 0 || length > options.max_metadata_bytes) {
    return Status::Corruption(
        fmt::format("{}: metadata length {} is negative or above max_metadata_bytes ({})", where,
                    length, options.max_metadata_bytes));
  }
  STRATA_ASSIGN_OR_RETURN(Buffer metadata, input->Read(length));
  if (metadata.size() < length) {
    return Status::Corruption(fmt::format("{}: stream ends after {} of {} metadata bytes", where,
                                          metadata.size(), length));
  }
  raw.metadata_length = input->position() - raw.offset;
  STRATA_ASSIGN_OR_RETURN(raw.view, VerifyMessage(metadata, options, where));
  const int64_t body_length = raw.view.message->body_length();
  STRATA_ASSIGN_OR_RETURN(raw.body, input->Read(body_length));
  if (raw.body.size() < body_length) {
    return Status::Corruption(fmt::format("{}: stream ends after {} of {} body bytes", where,
                                          raw.body.size(), body_length));
  }
  return std::optional<RawMessage>(std::move(raw));
}

}  // namespace internal

// ---------------------------------------------------------------------------------------
// StreamReader

struct StreamReader::Impl {
  std::unique_ptr<MessageInput> input;
  ReadOptions options;
  DecodedSchema schema;
  std::vector<int> all_columns;
  DictionaryMap dictionaries;
  int64_t next_message = 0;
  bool finished = false;
  Status error;

  Status ReadSchema() {
    STRATA_ASSIGN_OR_RETURN(std::optional<RawMessage> raw,
                            internal::ReadMessage(input.get(), options, next_message++));
    if (!raw.has_value()) return Status::Corruption("Arrow stream has no schema message");
    if (raw->view.message->header_type() != fb::MessageHeader::Schema) {
      return Status::Corruption(
          fmt::format("Arrow stream starts with a {} message instead of a schema",
                      fb::EnumNameMessageHeader(raw->view.message->header_type())));
    }
    Result<DecodedSchema> decoded =
        internal::SchemaFromFlatbuffer(raw->view.message->header_as_Schema());
    if (!decoded.ok()) return decoded.status().WithContext("stream schema");
    schema = std::move(*decoded);
    all_columns = AllColumns(*schema.schema);
    return Status::OK();
  }

  Result<std::optional<RecordBatch>> Next() {
    while (true) {
      const int64_t index = next_message++;
      STRATA_ASSIGN_OR_RETURN(std::optional<RawMessage> raw,
                              internal::ReadMessage(input.get(), options, index));
      if (!raw.has_value()) {
        finished = true;
        return std::optional<RecordBatch>();
      }
      const fb::Message* message = raw->view.message;
      const std::string where = fmt::format("stream message {} (offset {})", index, raw->offset);
      switch (message->header_type()) {
        case fb::MessageHeader::DictionaryBatch:
          STRATA_RETURN_IF_ERROR(internal::ApplyDictionaryBatch(
              message->header_as_DictionaryBatch(), raw->body, raw->body.size(), schema.plan,
              options, /*allow_replacement=*/true, &dictionaries, where));
          continue;
        case fb::MessageHeader::RecordBatch: {
          const fb::RecordBatch* batch = message->header_as_RecordBatch();
          STRATA_RETURN_IF_ERROR(
              internal::CheckBatchHeader(batch, schema.plan, raw->body.size(), where));
          std::vector<Buffer> stored = internal::SliceBody(batch, raw->body);
          STRATA_ASSIGN_OR_RETURN(RecordBatch out,
                                  internal::DecodeRecordBatch(batch, schema, stored, all_columns,
                                                              dictionaries, options, where));
          return std::optional<RecordBatch>(std::move(out));
        }
        case fb::MessageHeader::Schema:
          return Status::Corruption(fmt::format("{}: a second schema message", where));
        case fb::MessageHeader::NONE:
          return Status::Corruption(fmt::format("{}: message without a header", where));
        default:
          return Status::NotSupported(
              fmt::format("{}: {} messages are not supported", where,
                          fb::EnumNameMessageHeader(message->header_type())));
      }
    }
  }
};

StreamReader::StreamReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StreamReader::~StreamReader() = default;

Result<std::unique_ptr<StreamReader>> StreamReader::Open(Buffer stream, ReadOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->input = std::make_unique<internal::BufferInput>(std::move(stream));
  impl->options = options;
  STRATA_RETURN_IF_ERROR(impl->ReadSchema());
  return std::unique_ptr<StreamReader>(new StreamReader(std::move(impl)));
}

Result<std::unique_ptr<StreamReader>> StreamReader::Open(InputCallback input, ReadOptions options) {
  if (!input) return Status::InvalidArgument("StreamReader needs an input callback");
  auto impl = std::make_unique<Impl>();
  impl->input = std::make_unique<CallbackInput>(std::move(input));
  impl->options = options;
  STRATA_RETURN_IF_ERROR(impl->ReadSchema());
  return std::unique_ptr<StreamReader>(new StreamReader(std::move(impl)));
}

const SchemaPtr& StreamReader::schema() const { return impl_->schema.schema; }

Result<std::optional<RecordBatch>> StreamReader::Next() {
  if (!impl_->error.ok()) return impl_->error;
  if (impl_->finished) return std::optional<RecordBatch>();
  Result<std::optional<RecordBatch>> out = impl_->Next();
  if (!out.ok()) impl_->error = out.status();
  return out;
}

Result<std::vector<RecordBatch>> ReadStream(Buffer stream, const ReadOptions& options) {
  STRATA_ASSIGN_OR_RETURN(auto reader, StreamReader::Open(std::move(stream), options));
  std::vector<RecordBatch> out;
  while (true) {
    STRATA_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, reader->Next());
    if (!batch.has_value()) return out;
    out.push_back(std::move(*batch));
  }
}

// ---------------------------------------------------------------------------------------
// FileReader

namespace {

// Ranges closer than this are fetched with one read in projected reads.
constexpr int64_t kCoalesceGap = 8 << 10;

struct Block {
  int64_t offset = 0;
  int64_t metadata_length = 0;
  int64_t body_length = 0;
};

}  // namespace

struct FileReader::Impl {
  std::shared_ptr<RandomAccessSource> source;
  ReadOptions options;
  DecodedSchema schema;
  std::vector<int> all_columns;
  DictionaryMap dictionaries;
  std::vector<Block> batches;
  int num_dictionaries = 0;
  KeyValueMetadata footer_metadata;

  // Exactly `length` bytes at `offset` (checked against the size at open).
  Result<Buffer> ReadExact(int64_t offset, int64_t length, const std::string& where) const {
    STRATA_ASSIGN_OR_RETURN(Buffer b, source->ReadAt(offset, length));
    if (b.size() != length) {
      return Status::Corruption(fmt::format("{}: read {} of {} bytes at file offset {}", where,
                                            b.size(), length, offset));
    }
    return b;
  }

  // The verified metadata of the message at `block`.
  Result<MessageView> ReadMetadata(const Block& block, const std::string& where) const {
    STRATA_ASSIGN_OR_RETURN(Buffer bytes, ReadExact(block.offset, block.metadata_length, where));
    int64_t prefix = 4;
    int32_t length = LoadInt32(bytes.data());
    if (static_cast<uint32_t>(length) == internal::kContinuation) {
      if (bytes.size() < 8) {
        return Status::Corruption(
            fmt::format("{}: block metadata length {} is too short", where, bytes.size()));
      }
      prefix = 8;
      length = LoadInt32(bytes.data() + 4);
    }
    if (length <= 0 || length > bytes.size() - prefix) {
      return Status::Corruption(
          fmt::format("{}: flatbuffer length {} does not fit the block's {} metadata bytes", where,
                      length, block.metadata_length));
    }
    STRATA_ASSIGN_OR_RETURN(MessageView view,
                            internal::VerifyMessage(bytes.Slice(prefix, length), options, where));
    if (view.message->body_length() != block.body_length) {
      return Status::Corruption(
          fmt::format("{}: message body length {} differs from the "
                      "footer's {}",
                      where, view.message->body_length(), block.body_length));
    }
    return view;
  }

  Status Open() {
    STRATA_ASSIGN_OR_RETURN(int64_t size, source->Size());
    constexpr int64_t kMinSize = internal::kFileHeaderLength + internal::kFileTrailerLength;
    if (size < kMinSize) {
      return Status::Corruption(
          fmt::format("Arrow file of {} bytes is shorter than the {} bytes of magic and trailer",
                      size, kMinSize));
    }
    STRATA_ASSIGN_OR_RETURN(Buffer head, ReadExact(0, internal::kMagicLength, "file header"));
    if (std::memcmp(head.data(), internal::kMagic, internal::kMagicLength) != 0) {
      return Status::Corruption("file does not start with the Arrow magic \"ARROW1\"");
    }
    const int64_t trailer_offset = size - internal::kFileTrailerLength;
    STRATA_ASSIGN_OR_RETURN(
        Buffer trailer, ReadExact(trailer_offset, internal::kFileTrailerLength, "file trailer"));
    if (std::memcmp(trailer.data() + 4, internal::kMagic, internal::kMagicLength) != 0) {
      return Status::Corruption(
          "file does not end with the Arrow magic \"ARROW1\" (truncated, or not an Arrow file)");
    }
    const int64_t footer_length = LoadInt32(trailer.data());
    if (footer_length <= 0 || footer_length > trailer_offset - internal::kFileHeaderLength ||
        footer_length > options.max_metadata_bytes) {
      return Status::Corruption(
          fmt::format("footer length {} does not fit a file of {} bytes (or max_metadata_bytes {})",
                      footer_length, size, options.max_metadata_bytes));
    }
    const int64_t footer_offset = trailer_offset - footer_length;
    STRATA_ASSIGN_OR_RETURN(Buffer footer_bytes,
                            ReadExact(footer_offset, footer_length, "file footer"));
    STRATA_ASSIGN_OR_RETURN(internal::FooterView footer,
                            internal::VerifyFooter(footer_bytes, options));
    if (footer.footer->schema() == nullptr) {
      return Status::Corruption("file footer has no schema");
    }
    Result<DecodedSchema> decoded = internal::SchemaFromFlatbuffer(footer.footer->schema());
    if (!decoded.ok()) return decoded.status().WithContext("file schema");
    schema = std::move(*decoded);
    all_columns = AllColumns(*schema.schema);
    footer_metadata = internal::MetadataFromFlatbuffer(footer.footer->custom_metadata());

    std::vector<Block> dictionary_blocks;
    STRATA_RETURN_IF_ERROR(
        Blocks(footer.footer->dictionaries(), footer_offset, "dictionary", &dictionary_blocks));
    STRATA_RETURN_IF_ERROR(
        Blocks(footer.footer->record_batches(), footer_offset, "record batch", &batches));
    num_dictionaries = static_cast<int>(dictionary_blocks.size());
    for (size_t i = 0; i < dictionary_blocks.size(); ++i) {
      const Block& block = dictionary_blocks[i];
      const std::string where =
          fmt::format("dictionary batch {} (file offset {})", i, block.offset);
      STRATA_ASSIGN_OR_RETURN(MessageView view, ReadMetadata(block, where));
      if (view.message->header_type() != fb::MessageHeader::DictionaryBatch) {
        return Status::Corruption(
            fmt::format("{}: footer points at a {} message", where,
                        fb::EnumNameMessageHeader(view.message->header_type())));
      }
      STRATA_ASSIGN_OR_RETURN(
          Buffer body, ReadExact(block.offset + block.metadata_length, block.body_length, where));
      STRATA_RETURN_IF_ERROR(internal::ApplyDictionaryBatch(
          view.message->header_as_DictionaryBatch(), body, block.body_length, schema.plan, options,
          /*allow_replacement=*/false, &dictionaries, where));
    }
    return Status::OK();
  }

  Status Blocks(const flatbuffers::Vector<const fb::Block*>* blocks, int64_t footer_offset,
                const char* kind, std::vector<Block>* out) {
    if (blocks == nullptr) return Status::OK();
    if (blocks->size() > 0 && reinterpret_cast<uintptr_t>(blocks->data()) % 8 != 0) {
      return Status::Corruption(fmt::format("file footer: misaligned {} block vector", kind));
    }
    for (flatbuffers::uoffset_t i = 0; i < blocks->size(); ++i) {
      const fb::Block* b = blocks->Get(i);
      Block block{b->offset(), b->meta_data_length(), b->body_length()};
      // Every message lies between the leading magic and the footer.
      if (block.offset < internal::kFileHeaderLength || block.offset > footer_offset ||
          block.metadata_length < 8 || block.metadata_length > footer_offset - block.offset ||
          block.body_length < 0 ||
          block.body_length > footer_offset - block.offset - block.metadata_length) {
        return Status::Corruption(fmt::format(
            "file footer: {} block {} [offset {}, metadata {}, body {}] lies outside the "
            "{} bytes before the footer",
            kind, i, block.offset, block.metadata_length, block.body_length, footer_offset));
      }
      out->push_back(block);
    }
    return Status::OK();
  }

  Result<RecordBatch> Read(int i, const std::vector<int>& columns) const {
    if (i < 0 || i >= static_cast<int>(batches.size())) {
      return Status::InvalidArgument(
          fmt::format("record batch {} requested from a file of {}", i, batches.size()));
    }
    for (int c : columns) {
      if (c < 0 || c >= schema.schema->num_fields()) {
        return Status::InvalidArgument(fmt::format("column {} requested from a schema of {} fields",
                                                   c, schema.schema->num_fields()));
      }
    }
    const Block& block = batches[i];
    const std::string where = fmt::format("record batch {} (file offset {})", i, block.offset);
    STRATA_ASSIGN_OR_RETURN(MessageView view, ReadMetadata(block, where));
    if (view.message->header_type() != fb::MessageHeader::RecordBatch) {
      return Status::Corruption(
          fmt::format("{}: footer points at a {} message", where,
                      fb::EnumNameMessageHeader(view.message->header_type())));
    }
    const fb::RecordBatch* batch = view.message->header_as_RecordBatch();
    STRATA_RETURN_IF_ERROR(
        internal::CheckBatchHeader(batch, schema.plan, block.body_length, where));
    const int64_t body_offset = block.offset + block.metadata_length;
    std::vector<Buffer> stored;
    if (columns == all_columns) {
      STRATA_ASSIGN_OR_RETURN(Buffer body, ReadExact(body_offset, block.body_length, where));
      stored = internal::SliceBody(batch, body);
    } else {
      STRATA_ASSIGN_OR_RETURN(stored, ReadProjected(batch, columns, body_offset, where));
    }
    return internal::DecodeRecordBatch(batch, schema, stored, columns, dictionaries, options,
                                       where);
  }

  // The stored bytes of the buffers of `columns` only, fetched in coalesced ranges.
  Result<std::vector<Buffer>> ReadProjected(const fb::RecordBatch* batch,
                                            const std::vector<int>& columns, int64_t body_offset,
                                            const std::string& where) const {
    struct Range {
      int64_t begin;
      int64_t end;
      int buffer;
    };
    std::vector<Range> wanted;
    for (int c : columns) {
      const internal::ColumnSpan& span = schema.plan.columns[c];
      for (int b = span.buffer_begin; b < span.buffer_end; ++b) {
        const fb::Buffer* spec = batch->buffers()->Get(b);
        if (spec->length() > 0) {
          wanted.push_back({spec->offset(), spec->offset() + spec->length(), b});
        }
      }
    }
    std::sort(wanted.begin(), wanted.end(),
              [](const Range& a, const Range& b) { return a.begin < b.begin; });
    std::vector<Buffer> stored(batch->buffers()->size());
    size_t first = 0;
    while (first < wanted.size()) {
      int64_t begin = wanted[first].begin;
      int64_t end = wanted[first].end;
      size_t last = first + 1;
      while (last < wanted.size() && wanted[last].begin <= end + kCoalesceGap) {
        end = std::max(end, wanted[last].end);
        ++last;
      }
      STRATA_ASSIGN_OR_RETURN(Buffer chunk, ReadExact(body_offset + begin, end - begin, where));
      for (size_t k = first; k < last; ++k) {
        stored[wanted[k].buffer] =
            chunk.Slice(wanted[k].begin - begin, wanted[k].end - wanted[k].begin);
      }
      first = last;
    }
    return stored;
  }

  Result<BatchInfo> Inspect(int i, bool uncompressed_sizes) const {
    if (i < 0 || i >= static_cast<int>(batches.size())) {
      return Status::InvalidArgument(
          fmt::format("record batch {} requested from a file of {}", i, batches.size()));
    }
    const Block& block = batches[i];
    const std::string where = fmt::format("record batch {} (file offset {})", i, block.offset);
    STRATA_ASSIGN_OR_RETURN(MessageView view, ReadMetadata(block, where));
    const fb::RecordBatch* batch = view.message->header_as_RecordBatch();
    if (batch == nullptr) {
      return Status::Corruption(fmt::format("{}: not a record batch message", where));
    }
    STRATA_RETURN_IF_ERROR(
        internal::CheckBatchHeader(batch, schema.plan, block.body_length, where));
    BatchInfo info;
    info.offset = block.offset;
    info.metadata_length = block.metadata_length;
    info.body_length = block.body_length;
    info.num_rows = batch->length();
    STRATA_ASSIGN_OR_RETURN(info.compression,
                            internal::CompressionFromFlatbuffer(batch->compression(), where));
    info.custom_metadata = internal::MetadataFromFlatbuffer(view.message->custom_metadata());
    Buffer body;
    const bool sizes_from_body = info.compression != Compression::kNone && uncompressed_sizes;
    if (sizes_from_body) {
      STRATA_ASSIGN_OR_RETURN(
          body, ReadExact(block.offset + block.metadata_length, block.body_length, where));
    }
    for (const internal::ColumnSpan& span : schema.plan.columns) {
      ColumnInfo column;
      for (int b = span.buffer_begin; b < span.buffer_end; ++b) {
        const fb::Buffer* spec = batch->buffers()->Get(b);
        column.stored_bytes = SaturatingAdd(column.stored_bytes, spec->length());
        if (spec->length() > 0) {
          // CheckBatchHeader placed every buffer inside the body.
          const int64_t end = spec->offset() + spec->length();
          column.body_begin =
              column.body_begin < 0 ? spec->offset() : std::min(column.body_begin, spec->offset());
          column.body_end = std::max(column.body_end, end);
        }
        if (info.compression == Compression::kNone) {
          column.uncompressed_bytes = SaturatingAdd(column.uncompressed_bytes, spec->length());
        } else if (!sizes_from_body) {
          column.uncompressed_bytes = -1;
        } else {
          STRATA_ASSIGN_OR_RETURN(
              int64_t n, internal::UncompressedLength(body.Slice(spec->offset(), spec->length()),
                                                      fmt::format("{}, buffer {}", where, b)));
          // Declared lengths are not checked here (nothing is decompressed): may be absurd.
          column.uncompressed_bytes = SaturatingAdd(column.uncompressed_bytes, n);
        }
      }
      info.columns.push_back(column);
    }
    return info;
  }
};

FileReader::FileReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FileReader::~FileReader() = default;

Result<std::unique_ptr<FileReader>> FileReader::Open(std::shared_ptr<RandomAccessSource> source,
                                                     ReadOptions options) {
  if (source == nullptr) return Status::InvalidArgument("FileReader needs a source");
  auto impl = std::make_unique<Impl>();
  impl->source = std::move(source);
  impl->options = options;
  STRATA_RETURN_IF_ERROR(impl->Open());
  return std::unique_ptr<FileReader>(new FileReader(std::move(impl)));
}

const SchemaPtr& FileReader::schema() const { return impl_->schema.schema; }
int FileReader::num_batches() const { return static_cast<int>(impl_->batches.size()); }
int FileReader::num_dictionaries() const { return impl_->num_dictionaries; }
const KeyValueMetadata& FileReader::footer_metadata() const { return impl_->footer_metadata; }

Result<RecordBatch> FileReader::ReadBatch(int i) const {
  return impl_->Read(i, impl_->all_columns);
}

Result<RecordBatch> FileReader::ReadBatch(int i, const std::vector<int>& columns) const {
  return impl_->Read(i, columns);
}

Result<std::vector<RecordBatch>> FileReader::ReadAll() const {
  std::vector<RecordBatch> out;
  out.reserve(impl_->batches.size());
  for (int i = 0; i < num_batches(); ++i) {
    STRATA_ASSIGN_OR_RETURN(RecordBatch batch, ReadBatch(i));
    out.push_back(std::move(batch));
  }
  return out;
}

Result<BatchInfo> FileReader::InspectBatch(int i, bool uncompressed_sizes) const {
  return impl_->Inspect(i, uncompressed_sizes);
}

Result<std::vector<RecordBatch>> ReadFile(Buffer file, const ReadOptions& options) {
  STRATA_ASSIGN_OR_RETURN(auto reader,
                          FileReader::Open(SourceFromBuffer(std::move(file)), options));
  return reader->ReadAll();
}

}  // namespace strata::ipc
