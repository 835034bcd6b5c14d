// Arrow IPC: read and write record batches in Apache Arrow's stream and file formats.
//
// The bytes follow the Arrow columnar spec (IPC section, metadata version V5, little endian),
// so files and streams are exchangeable with any Arrow implementation; docs/format/
// arrow-ipc.md lists what strata writes, what it accepts and every check its readers make.
//
// Writers take an OutputStream they do not own; readers take a Buffer, an input callback or
// a RandomAccessSource. Readers treat their input as untrusted: malformed bytes give
// Corruption (naming the message, buffer and offset), unsupported features NotSupported,
// and no input makes them read out of bounds or allocate more than ReadOptions allows.
// Every array they return has passed Array::Validate().
//
// Thread safety: writers and StreamReader are used from one thread at a time. A FileReader
// may serve ReadBatch / InspectBatch from many threads at once when its source allows it
// (every source made here does). Output streams are not thread safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/buffer.h"
#include "strata/object_store.h"
#include "strata/record_batch.h"
#include "strata/status.h"
#include "strata/type.h"

namespace strata::io {
class FileSystem;
}  // namespace strata::io

namespace strata::ipc {

// ---------------------------------------------------------------------------------------
// Options

enum class Compression { kNone, kLz4Frame, kZstd };

// "none", "lz4_frame", "zstd".
std::string_view CompressionName(Compression compression);

struct WriteOptions {
  // Per-buffer body compression (Arrow BodyCompression, method BUFFER). A buffer that does
  // not get smaller by min_space_savings is stored raw (length prefix -1); empty buffers stay
  // empty.
  Compression compression = Compression::kNone;
  // zstd level, -7..22; the default 1 favours write speed.
  int zstd_level = 1;
  // A compressed buffer is kept only when it is at least this fraction smaller than the raw
  // bytes (0 to 1; 0: whenever it is smaller at all), as Arrow's min_space_savings. A buffer
  // that barely shrinks (float vectors, hashes, random bytes) costs every later read a
  // decompression of all of it for a few percent of space: exact vector search over zstd
  // float32 columns spent half its time in zstd for ~8% smaller files.
  double min_space_savings = 0.1;
  // Buffers smaller than this many bytes are stored raw without trying to compress them
  // (0: try every buffer). Decompressing a small buffer saves a few KiB of disk and costs
  // every read of it a codec call: a point read that decodes the key and a number column of
  // one batch pays for both.
  int64_t min_compressed_buffer_bytes = 0;
  // Alignment, in bytes, of message starts and body buffers within the output: a power of
  // two from 8 (the minimum Arrow allows) to 4096. The default 64 leaves every buffer of a
  // mapped file cache-line aligned.
  int alignment = 64;
  // Threads that compress body buffers, the caller's included (1 to 64). With more than one
  // (and compression on), WriteBatch encodes the batch and returns while helper threads
  // compress it; its bytes reach the output stream during a later WriteBatch (see
  // max_pending_batches) or Close(), and a compression failure is returned by that call.
  // The bytes written are the same as with one thread.
  int compression_threads = 1;
  // With helper threads: when a WriteBatch leaves this many batches queued, it compresses
  // (helping the helpers) and writes the oldest before returning, so at most one fewer stay
  // queued between calls (0 = compression_threads, 1 to 64). A deeper queue keeps the helpers
  // busy while the caller prepares the next batches (a merge does much else between them),
  // at the cost of holding that many encoded batches in memory.
  int max_pending_batches = 0;
};

struct ReadOptions {
  // Also check that utf8 / large_utf8 values are valid UTF-8 (Array::ValidateFull()).
  bool validate_full = false;
  // Upper bound on the bytes one message (record or dictionary batch) may decompress to;
  // a larger declared length is Corruption before anything is allocated.
  int64_t max_decompressed_bytes = int64_t{2} << 30;
  // Upper bound on one message's flatbuffer metadata (and on a file's footer).
  int64_t max_metadata_bytes = int64_t{64} << 20;
  // Flatbuffer verifier limits applied to every message and footer.
  int max_flatbuffer_depth = 64;
  int max_flatbuffer_tables = 1000000;
};

// ---------------------------------------------------------------------------------------
// Output

class OutputStream {
 public:
  virtual ~OutputStream() = default;
  virtual Status Write(std::string_view bytes) = 0;
  // Bytes written so far (the position of the next Write).
  virtual int64_t Tell() const = 0;
  // Hands buffered bytes to the underlying sink.
  virtual Status Flush() = 0;
  // Flushes and releases the sink; writes after Close fail.
  virtual Status Close() = 0;
};

// Collects everything written in memory (64-byte aligned).
class BufferOutputStream final : public OutputStream {
 public:
  BufferOutputStream() = default;
  // Reserves `capacity_hint` bytes up front, so a stream of about that size is written
  // without regrowing (and copying) its buffer.
  explicit BufferOutputStream(int64_t capacity_hint) { builder_.Reserve(capacity_hint); }
  Status Write(std::string_view bytes) override;
  int64_t Tell() const override { return builder_.size(); }
  Status Flush() override { return Status::OK(); }
  Status Close() override;
  // The bytes written; the stream is left empty and reusable.
  Buffer Finish() { return builder_.Finish(); }

 private:
  BufferBuilder builder_;
  bool closed_ = false;
};

struct FileOutputOptions {
  // fdatasync on Close() so the file's contents are durable (its name is not: sync the
  // directory for that).
  bool sync_on_close = true;
};

// Creates or truncates the file at `path` and writes to it with buffering. Through the
// given FileSystem when one is passed (fault injection), else the POSIX one.
Result<std::unique_ptr<OutputStream>> OpenFileOutputStream(
    const std::string& path, FileOutputOptions options = {},
    std::shared_ptr<io::FileSystem> fs = nullptr);

// ---------------------------------------------------------------------------------------
// Input

// Positional reads of an immutable byte sequence. Implementations must allow concurrent
// calls.
class RandomAccessSource {
 public:
  virtual ~RandomAccessSource() = default;
  virtual Result<int64_t> Size() = 0;
  // Bytes [offset, offset + length): fewer only when the range passes the end.
  // InvalidArgument for a negative offset or length.
  virtual Result<Buffer> ReadAt(int64_t offset, int64_t length) = 0;
};

// Zero-copy slices of `buffer`.
std::shared_ptr<RandomAccessSource> SourceFromBuffer(Buffer buffer);
// GetRange() calls on the object (its size is looked up once, on first use). For reading a
// whole object, SourceFromBuffer(store->Get(key)) is cheaper: local stores map large files.
std::shared_ptr<RandomAccessSource> SourceFromObjectStore(std::shared_ptr<ObjectStore> store,
                                                          std::string key);
// Maps the file (through `fs` when given). The file must not be truncated or rewritten in
// place while the source or any batch read from it lives.
Result<std::shared_ptr<RandomAccessSource>> SourceFromFile(
    const std::string& path, std::shared_ptr<io::FileSystem> fs = nullptr);

// Reads up to `max_bytes` into `out`; returns how many were read, 0 only at the end.
using InputCallback = std::function<Result<int64_t>(uint8_t* out, int64_t max_bytes)>;

// ---------------------------------------------------------------------------------------
// Stream format: schema message, then dictionary and record batch messages, then the
// end-of-stream marker.

class StreamWriter {
 public:
  // Writes the schema message. `out` must outlive the writer.
  static Result<std::unique_ptr<StreamWriter>> Make(OutputStream* out, SchemaPtr schema,
                                                    WriteOptions options = {});
  ~StreamWriter();
  StreamWriter(const StreamWriter&) = delete;
  StreamWriter& operator=(const StreamWriter&) = delete;

  // InvalidArgument unless the batch has the writer's schema (field metadata aside). Writes
  // the dictionary batches the batch needs first: none while its dictionaries match what was
  // sent, a delta when they extend it, a replacement otherwise. `batch_metadata` becomes the
  // message's custom_metadata.
  Status WriteBatch(const RecordBatch& batch, const KeyValueMetadata& batch_metadata = {});
  // Writes the end-of-stream marker and flushes `out` (which stays open).
  Status Close();

 private:
  struct Impl;
  explicit StreamWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class StreamReader {
 public:
  // Reads the schema message. The buffer is referenced, not copied: batches are zero-copy
  // slices of it where alignment allows.
  static Result<std::unique_ptr<StreamReader>> Open(Buffer stream, ReadOptions options = {});
  static Result<std::unique_ptr<StreamReader>> Open(InputCallback input, ReadOptions options = {});
  ~StreamReader();
  StreamReader(const StreamReader&) = delete;
  StreamReader& operator=(const StreamReader&) = delete;

  const SchemaPtr& schema() const;
  // The next record batch, after applying any dictionary batches before it; std::nullopt
  // at the end-of-stream marker or when the input ends cleanly between messages. After an
  // error every later call returns that error.
  Result<std::optional<RecordBatch>> Next();

 private:
  struct Impl;
  explicit StreamReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------------------
// File format: "ARROW1\0\0", the stream format, a footer indexing every message, its length
// and "ARROW1".

class FileWriter {
 public:
  // Writes the magic and the schema message. `out` must outlive the writer.
  static Result<std::unique_ptr<FileWriter>> Make(OutputStream* out, SchemaPtr schema,
                                                  WriteOptions options = {});
  ~FileWriter();
  FileWriter(const FileWriter&) = delete;
  FileWriter& operator=(const FileWriter&) = delete;

  // As StreamWriter::WriteBatch, except that dictionaries are never replaced (the file
  // format forbids it): each dictionary is the union of the values of all batches so far,
  // new values are sent as deltas and indices are rewritten when a batch's dictionary
  // orders its values differently. InvalidArgument when the union outgrows the index type.
  Status WriteBatch(const RecordBatch& batch, const KeyValueMetadata& batch_metadata = {});
  // Writes the end-of-stream marker, the footer (with `footer_metadata` as its
  // custom_metadata) and the trailing magic, then flushes `out` (which stays open).
  Status Close(const KeyValueMetadata& footer_metadata = {});

  int num_batches() const;

 private:
  struct Impl;
  explicit FileWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// What a file says about one of its record batches, without decoding it.
struct ColumnInfo {
  // Body bytes of the column's buffers as stored (compressed, with length prefixes).
  int64_t stored_bytes = 0;
  // The same buffers after decompression, as their length prefixes declare (not verified,
  // since nothing is decompressed; sums saturate at INT64_MAX); -1 when not read
  // (FileReader::InspectBatch without uncompressed_sizes).
  int64_t uncompressed_bytes = 0;
  // Where those buffers lie in the message body: [body_begin, body_end) relative to the body
  // start (offset + metadata_length), spanning every buffer of the column that has bytes;
  // both -1 when none has.
  int64_t body_begin = -1;
  int64_t body_end = -1;
};

struct BatchInfo {
  int64_t offset = 0;  // of the message in the file
  int64_t metadata_length = 0;
  int64_t body_length = 0;
  int64_t num_rows = 0;
  Compression compression = Compression::kNone;
  std::vector<ColumnInfo> columns;  // one per schema field
  KeyValueMetadata custom_metadata;
};

class FileReader {
 public:
  // Reads and verifies the trailer, the footer and every dictionary batch.
  static Result<std::unique_ptr<FileReader>> Open(std::shared_ptr<RandomAccessSource> source,
                                                  ReadOptions options = {});
  ~FileReader();
  FileReader(const FileReader&) = delete;
  FileReader& operator=(const FileReader&) = delete;

  const SchemaPtr& schema() const;
  int num_batches() const;
  int num_dictionaries() const;
  const KeyValueMetadata& footer_metadata() const;

  // Batch i (0 <= i < num_batches(), InvalidArgument otherwise).
  Result<RecordBatch> ReadBatch(int i) const;
  // Batch i restricted to `columns` (schema field indices, in the order given; the batch's
  // schema is schema()->Project(columns)). Reads and decompresses only those columns'
  // buffers.
  Result<RecordBatch> ReadBatch(int i, const std::vector<int>& columns) const;
  Result<std::vector<RecordBatch>> ReadAll() const;
  // Sizes and compression of batch i, from its metadata and its buffers' length prefixes.
  // Without `uncompressed_sizes` only the metadata is read: the body is not touched and a
  // compressed column's uncompressed_bytes is -1.
  Result<BatchInfo> InspectBatch(int i, bool uncompressed_sizes = true) const;

 private:
  struct Impl;
  explicit FileReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------------------
// Assembling a file around messages written elsewhere
//
// The LSM write-ahead log writes each put as an IPC stream inside its own record framing;
// a log segment that starts with EncodeFileHeader and ends with EncodeFileFooter naming
// those record batch messages (and one dictionary batch message per dictionary id) is also
// a valid IPC file (a file reader finds messages through the footer's blocks, so bytes
// between the messages it names are never read).

// "ARROW1\0\0" and the schema message, as FileWriter writes them (`options.alignment`
// applies; compression does not). Its length is a multiple of 8. Dictionary fields get the
// ids every writer of this schema gives them (0, 1, ... in pre-order over the fields and
// their children), so the dictionary batches of streams of the schema fit the file.
Result<std::string> EncodeFileHeader(const Schema& schema, const WriteOptions& options = {});

// One message of a stream held in memory.
struct MessageLayout {
  enum class Kind { kSchema, kDictionaryBatch, kRecordBatch };
  Kind kind = Kind::kSchema;
  int64_t offset = 0;           // of the message's continuation marker, from the stream start
  int32_t metadata_length = 0;  // marker + length prefix + flatbuffer + padding
  int64_t body_length = 0;
  int64_t num_rows = 0;        // record batches: the batch's length; dictionary batches: the
                               // dictionary's length (0 for the schema)
  int64_t dictionary_id = -1;  // dictionary batches only
  bool is_delta = false;       // dictionary batches only
};

// The messages of the stream in `stream`, in order, up to its end-of-stream marker (or the
// end of the bytes). Verifies each message's framing and flatbuffer (not the bodies):
// Corruption naming the offset when a message is malformed or runs past the end, and when
// the stream does not start with its one schema message.
Result<std::vector<MessageLayout>> ScanStreamLayout(std::string_view stream);

// A message's place in a file (the Arrow footer's Block).
struct FileBlock {
  int64_t offset = 0;  // of the message's continuation marker, from the file start
  int32_t metadata_length = 0;
  int64_t body_length = 0;
};

// What follows a file's last message: the end-of-stream marker, the footer flatbuffer
// naming `schema`, the `dictionaries` and the `record_batches`, its int32 length and
// "ARROW1". A file reader applies the dictionary batches in the order given, before any
// record batch, and then decodes every record batch against the result; the file format
// allows at most one non-delta batch per dictionary id (a second one is Corruption when
// the file is opened), and a record batch's indices must be valid in the dictionaries so
// named. Neither is checked here (the bodies are not at hand). InvalidArgument for a block
// (of either list) whose offset is not a multiple of 8 (or lies within the leading 8-byte
// magic) or whose lengths are negative; also when a length is not a multiple of 8 or the
// metadata is shorter than its 8-byte prefix (Arrow C++ and pyarrow refuse such blocks).
Result<std::string> EncodeFileFooter(const Schema& schema,
                                     const std::vector<FileBlock>& dictionaries,
                                     const std::vector<FileBlock>& record_batches);

// ---------------------------------------------------------------------------------------
// Convenience

Result<Buffer> WriteStreamToBuffer(const SchemaPtr& schema, const std::vector<RecordBatch>& batches,
                                   const WriteOptions& options = {});
Result<Buffer> WriteFileToBuffer(const SchemaPtr& schema, const std::vector<RecordBatch>& batches,
                                 const WriteOptions& options = {});
// Every batch of a stream (zero-copy where alignment allows).
Result<std::vector<RecordBatch>> ReadStream(Buffer stream, const ReadOptions& options = {});
// Every batch of a file held in memory.
Result<std::vector<RecordBatch>> ReadFile(Buffer file, const ReadOptions& options = {});

}  // namespace strata::ipc
