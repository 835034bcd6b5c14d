// Internals shared by the Arrow IPC files: layout plans, schema <-> flatbuffer conversion,
// message framing, body compression and batch decoding (not part of the public API). The
// bytes they produce and accept: docs/format/arrow-ipc.md.
//
// A LayoutPlan flattens a schema the way IPC record batches do: one node per array in a
// pre-order walk over the columns and their children, with a fixed number of buffers per
// node type. Writers and readers both index nodes, buffers and dictionary ids through it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "columnar/format/File_generated.h"
#include "columnar/format/Message_generated.h"
#include "columnar/format/Schema_generated.h"
#include "strata/array.h"
#include "strata/buffer.h"
#include "strata/ipc.h"
#include "strata/status.h"
#include "strata/type.h"

namespace strata::ipc::internal {

namespace fb = ::strata::ipc::flatbuf;

inline constexpr uint32_t kContinuation = 0xFFFFFFFFu;
inline constexpr char kMagic[] = "ARROW1";  // 6 bytes, padded to 8 at the file start
inline constexpr int64_t kMagicLength = 6;
// Leading "ARROW1\0\0", trailing int32 footer length + "ARROW1".
inline constexpr int64_t kFileHeaderLength = 8;
inline constexpr int64_t kFileTrailerLength = 4 + kMagicLength;

// One node of the pre-order walk.
struct NodePlan {
  DataTypePtr type;
  int64_t dictionary_id = -1;  // dictionary nodes only
  // Readers convert foreign timestamp units to microseconds: value * mul / div.
  int64_t timestamp_multiplier = 1;
  int64_t timestamp_divisor = 1;
};

// Node and buffer index ranges [begin, end) of one top-level column.
struct ColumnSpan {
  int node_begin = 0;
  int node_end = 0;
  int buffer_begin = 0;
  int buffer_end = 0;
};

struct LayoutPlan {
  std::vector<NodePlan> nodes;
  std::vector<ColumnSpan> columns;
  int num_buffers = 0;
  // Dictionary id -> value type.
  std::map<int64_t, DataTypePtr> dictionaries;
};

// Buffers per node of this type (validity included).
int BufferCount(const DataType& type);
// The plan of a strata schema, dictionary ids numbered 0, 1, ... in pre-order. NotSupported
// for dictionaries whose values are not utf8 / large_utf8 / binary / large_binary.
Result<LayoutPlan> PlanSchema(const Schema& schema);
// The plan of a single column of `type` (dictionary values, which hold no dictionaries).
LayoutPlan PlanSingleType(const DataTypePtr& type);

// ---- ipc_metadata.cc: schema <-> flatbuffer

flatbuffers::Offset<fb::Schema> SchemaToFlatbuffer(flatbuffers::FlatBufferBuilder& fbb,
                                                   const Schema& schema, const LayoutPlan& plan);
flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::KeyValue>>> MetadataToFlatbuffer(
    flatbuffers::FlatBufferBuilder& fbb, const KeyValueMetadata& metadata);

struct DecodedSchema {
  SchemaPtr schema;
  LayoutPlan plan;
};
// Converts a verified flatbuffer schema. NotSupported for types strata lacks, Corruption for
// inconsistent metadata; messages name the field path.
Result<DecodedSchema> SchemaFromFlatbuffer(const fb::Schema* schema);
KeyValueMetadata MetadataFromFlatbuffer(
    const flatbuffers::Vector<flatbuffers::Offset<fb::KeyValue>>* entries);

// ---- ipc_metadata.cc: message framing

inline int64_t AlignUp(int64_t n, int64_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

// Writes continuation marker, length, the finished flatbuffer and zero padding so that the
// stream position after it is a multiple of `alignment`. Returns the bytes written.
Result<int64_t> WriteMessageMetadata(OutputStream* out, const flatbuffers::FlatBufferBuilder& fbb,
                                     int alignment);
Status WriteZeros(OutputStream* out, int64_t n);

// Metadata bytes copied to 8-byte aligned memory when they are not aligned already.
Buffer EnsureAligned(const Buffer& buffer, int64_t alignment = 8);

// A verified Message; `bytes` keeps the flatbuffer alive.
struct MessageView {
  Buffer bytes;
  const fb::Message* message = nullptr;
};
Result<MessageView> VerifyMessage(Buffer metadata, const ReadOptions& options,
                                  const std::string& where);
// A verified Footer; `bytes` keeps it alive.
struct FooterView {
  Buffer bytes;
  const fb::Footer* footer = nullptr;
};
Result<FooterView> VerifyFooter(Buffer footer, const ReadOptions& options);
// V4 and V5 are read; older versions are NotSupported.
Status CheckMetadataVersion(fb::MetadataVersion version, const std::string& where);

// ---- ipc_file_layout.cc: the framing around a file's messages (shared by FileWriter and
// the Encode* functions of ipc.h, so both write the same bytes)

// InvalidArgument unless `alignment` is a power of two from 8 to 4096.
Status CheckAlignment(int alignment);
// The schema message, padded so that the next message starts at a multiple of `alignment`.
Status WriteSchemaMessage(OutputStream* out, const Schema& schema, const LayoutPlan& plan,
                          int alignment);
// "ARROW1\0\0" and the schema message.
Status WriteFileHeader(OutputStream* out, const Schema& schema, const LayoutPlan& plan,
                       int alignment);
// The end-of-stream marker: continuation and a zero length.
Status WriteEndOfStream(OutputStream* out);
// The footer flatbuffer, its int32 length and "ARROW1" (InvalidArgument when the footer
// outgrows int32).
Status WriteFooter(OutputStream* out, const Schema& schema, const LayoutPlan& plan,
                   const std::vector<FileBlock>& dictionaries,
                   const std::vector<FileBlock>& record_batches, const KeyValueMetadata& metadata);

// ---- ipc_reader.cc: sequential message input

class MessageInput {
 public:
  virtual ~MessageInput() = default;
  // Up to n bytes; fewer only at the end of the input.
  virtual Result<Buffer> Read(int64_t n) = 0;
  int64_t position() const { return position_; }

 protected:
  int64_t position_ = 0;
};

// Zero-copy slices of a buffer.
class BufferInput final : public MessageInput {
 public:
  explicit BufferInput(Buffer buffer) : buffer_(std::move(buffer)) {}
  Result<Buffer> Read(int64_t n) override;

 private:
  Buffer buffer_;
};

struct RawMessage {
  MessageView view;
  Buffer body;
  int64_t offset = 0;           // of the message's first byte in the input
  int64_t metadata_length = 0;  // prefix, flatbuffer and padding
};

// The next message (framing and flatbuffer verified, the body read but not checked), or
// nullopt at the end-of-stream marker or a clean end of input. Errors name message `index`
// and its offset.
Result<std::optional<RawMessage>> ReadMessage(MessageInput* input, const ReadOptions& options,
                                              int64_t index);

// ---- ipc_compression.cc

// The stored form of one body buffer: empty stays empty; otherwise an int64 LE length prefix
// and the compressed bytes, or -1 and the raw bytes when compression saves less than
// `min_space_savings` of them (0: whenever it does not shrink them) or the buffer is smaller
// than `min_compressed_bytes` (not compressed at all).
Result<Buffer> CompressBuffer(Compression codec, int zstd_level, const Buffer& raw,
                              double min_space_savings = 0, int64_t min_compressed_bytes = 0);
// Inverse of CompressBuffer. `budget` is the decompressed bytes still allowed for the
// message; it shrinks by the declared length. Corruption (prefixed with `where`) for a
// truncated prefix, a declared length beyond the budget or beyond what the compressed size
// can expand to, a decoder error, or output of another length than declared.
Result<Buffer> DecompressBuffer(Compression codec, const Buffer& stored, int64_t* budget,
                                const std::string& where);
// The declared uncompressed length of a stored buffer (its size when raw); Corruption for a
// malformed prefix.
Result<int64_t> UncompressedLength(const Buffer& stored, const std::string& where);
Result<Compression> CompressionFromFlatbuffer(const fb::BodyCompression* compression,
                                              const std::string& where);

// ---- ipc_reader_batch.cc: decoding record batch bodies

using DictionaryMap = std::map<int64_t, ArrayDataPtr>;

// Largest node length accepted on read (2^50), far beyond real data, so that length
// arithmetic in later checks can never overflow.
inline constexpr int64_t kMaxNodeLength = int64_t{1} << 50;

// Checks a RecordBatch header against the plan: node and buffer counts, node lengths and
// null counts, buffer ranges within a body of `body_length` bytes, supported compression.
Status CheckBatchHeader(const fb::RecordBatch* batch, const LayoutPlan& plan, int64_t body_length,
                        const std::string& where);

struct DecodeRequest {
  const fb::RecordBatch* batch = nullptr;
  const LayoutPlan* plan = nullptr;
  // Stored bytes of every buffer of the requested columns (others may be empty).
  const std::vector<Buffer>* stored = nullptr;
  const DictionaryMap* dictionaries = nullptr;
  const ReadOptions* options = nullptr;
  std::string where;
};
// Decodes and validates the requested top-level columns. REQUIRES: CheckBatchHeader passed.
Result<std::vector<Array>> DecodeColumns(const DecodeRequest& request,
                                         const std::vector<int>& columns);

// Decodes the requested columns of a record batch (schema projected when `columns` is not
// every field in order) and makes the batch. REQUIRES: CheckBatchHeader passed.
Result<RecordBatch> DecodeRecordBatch(const fb::RecordBatch* batch, const DecodedSchema& schema,
                                      const std::vector<Buffer>& stored,
                                      const std::vector<int>& columns,
                                      const DictionaryMap& dictionaries, const ReadOptions& options,
                                      const std::string& where);

// Slices of `body` for every buffer of the batch.
std::vector<Buffer> SliceBody(const fb::RecordBatch* batch, const Buffer& body);

// Applies a verified DictionaryBatch (header checked here) whose body is `body`.
// `allow_replacement` is false for the file format, where a second non-delta batch for an
// id is Corruption.
Status ApplyDictionaryBatch(const fb::DictionaryBatch* batch, const Buffer& body,
                            int64_t body_length, const LayoutPlan& schema_plan,
                            const ReadOptions& options, bool allow_replacement,
                            DictionaryMap* dictionaries, const std::string& where);

// ---- ipc_writer_dictionaries.cc: what a writer has sent of each dictionary

// Per dictionary field (plan node) of a writer: the values sent so far. Prepare() decides
// which dictionary messages a batch needs and how its indices map, without changing
// anything; Commit() records the outcome once the messages are written, so a batch that
// fails to encode leaves the writer as it was.
class WriterDictionaries {
 public:
  WriterDictionaries(const LayoutPlan* plan, bool unify);
  ~WriterDictionaries();
  WriterDictionaries(const WriterDictionaries&) = delete;
  WriterDictionaries& operator=(const WriterDictionaries&) = delete;

  struct Message {
    int64_t id = 0;
    Array values;
    bool is_delta = false;
  };
  struct Update;
  struct Prepared {
    std::vector<Message> messages;
    // Plan node -> (batch dictionary index -> written index), for nodes whose indices change.
    std::map<int, std::shared_ptr<const std::vector<int64_t>>> remaps;
    std::vector<std::shared_ptr<const Update>> updates;
  };

  Result<Prepared> Prepare(const RecordBatch& batch) const;
  void Commit(const Prepared& prepared);

 private:
  struct State;
  const LayoutPlan* plan_;
  bool unify_;  // file format: one growing dictionary per id, never replaced
  std::map<int, std::unique_ptr<State>> states_;  // by plan node
};

// The indices buffer to write for dictionary array `array` at plan node `node`: a zero-copy
// slice, or its indices remapped through `prepared` (which may be null: no remapping).
Result<Buffer> DictionaryIndices(const WriterDictionaries::Prepared* prepared, int node,
                                 const Array& array);

// ---- ipc_writer_body.cc: encoding record batch bodies

struct EncodedBody {
  std::vector<fb::FieldNode> nodes;
  std::vector<Buffer> buffers;  // stored form (compressed when enabled)
};
// Nodes and buffers of `columns` laid out by `plan`; dictionary indices are remapped as
// `dictionaries` says (null when the plan has no dictionaries or nothing is remapped).
Result<EncodedBody> EncodeBody(const std::vector<Array>& columns, const LayoutPlan& plan,
                               const WriterDictionaries::Prepared* dictionaries,
                               const WriteOptions& options);

// Where a written message sits in the output (a footer Block).
using WrittenBlock = FileBlock;

// Writes a RecordBatch message or, when dictionary_id is set, a DictionaryBatch message.
Result<WrittenBlock> WriteBatchMessage(OutputStream* out, int64_t num_rows, const EncodedBody& body,
                                       const WriteOptions& options,
                                       std::optional<int64_t> dictionary_id, bool is_delta,
                                       const KeyValueMetadata& custom_metadata);

// Slices [offset, offset + length) of a fixed-width buffer, or rebased copies of a validity
// or boolean bitmap (helpers shared by writer files).
Buffer SliceBitmap(const Buffer& bitmap, int64_t offset, int64_t length);

}  // namespace strata::ipc::internal
