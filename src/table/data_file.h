// Fragment data files: Arrow IPC files whose every byte range (header, each batch, footer)
// is checksummed in the manifest, so a reader verifies exactly the bytes it uses
// (docs/format/table.md §5).
//
// DataFileWriter cuts incoming rows into batches bounded by rows and bytes and records
// per-batch column statistics; DataFileReader reads (projected) batches and verifies each
// region it touches before decoding it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "strata/ipc.h"
#include "strata/object_store.h"
#include "strata/record_batch.h"
#include "strata/status.h"
#include "table/manifest.pb.h"
#include "util/clock.h"

namespace strata::table::internal {

struct DataFileWriteOptions {
  ipc::Compression compression = ipc::Compression::kZstd;
  // ipc::WriteOptions::min_compressed_buffer_bytes.
  int64_t min_compressed_buffer_bytes = 0;
  int64_t max_rows_per_batch = 8192;
  int64_t max_bytes_per_batch = int64_t{1} << 20;
  // Threads compressing batches, the writer's caller included (ipc::WriteOptions::
  // compression_threads): the next batch is cut and its statistics computed while the
  // previous one is compressed. The file's bytes do not depend on it.
  int compression_threads = 2;
  // Batches that may wait for the helper before the writer's caller compresses one itself
  // (ipc::WriteOptions::max_pending_batches).
  int max_pending_batches = 4;
  // The file's name is drawn from these (null = the system sources).
  Clock* clock = nullptr;
  RandomSource* random = nullptr;
};

// Writes one data file. Rows are buffered and written as batches of at most
// max_rows_per_batch rows / max_bytes_per_batch uncompressed bytes (a single row larger than
// that makes a batch of its own). The object is put only by Finish(), so an abandoned writer
// leaves nothing behind.
class DataFileWriter {
 public:
  // `schema`: the file's columns; `field_ids`: their table field ids (same length).
  static Result<std::unique_ptr<DataFileWriter>> Make(std::shared_ptr<ObjectStore> store,
                                                      std::string table_prefix, SchemaPtr schema,
                                                      std::vector<int32_t> field_ids,
                                                      DataFileWriteOptions options = {});
  virtual ~DataFileWriter() = default;
  // InvalidArgument unless the batch has the writer's schema (field metadata aside).
  virtual Status Write(const RecordBatch& batch) = 0;
  // Rows in batches already written out (rows still buffered are not counted); exact after
  // Finish().
  virtual int64_t rows_written() const = 0;
  // Uncompressed bytes accepted so far (for fragment size limits).
  virtual int64_t bytes_buffered() const = 0;
  // Writes the remaining rows, puts the object at a new "data/<uuid>.arrow" key and returns
  // its manifest entry, whose uncompressed_bytes sums the uncompressed bytes of the batches
  // as written (bytes_buffered() measures the input pieces, which can differ by validity
  // bytes). The writer is unusable afterwards.
  virtual Result<pb::DataFile> Finish() = 0;
};

// Reads a data file described by a manifest entry. Thread safe.
class DataFileReader {
 public:
  // Fetches and verifies the header and footer regions. Corruption when the object's size
  // differs from the entry, a checksum fails, or the regions do not tile the file; NotFound
  // when the object is missing.
  static Result<std::shared_ptr<DataFileReader>> Open(std::shared_ptr<ObjectStore> store,
                                                      const std::string& table_prefix,
                                                      const pb::DataFile& entry);
  virtual ~DataFileReader() = default;
  virtual const SchemaPtr& schema() const = 0;  // the file's columns
  virtual int num_batches() const = 0;
  // Batch i restricted to `columns` (file column indices). Verifies batch i's region.
  virtual Result<RecordBatch> ReadBatch(int i, const std::vector<int>& columns) const = 0;
  // Asks the kernel to start reading, in the background, the bytes ReadBatch(i, columns)
  // will touch (its message and those columns' pieces; the whole region of a batch without
  // pieces), when the file is memory-mapped (io::AdviseWillNeed); returns the bytes asked
  // for. An out-of-range batch asks for nothing; out-of-range columns are ignored.
  virtual int64_t Prefetch(int i, const std::vector<int>& columns) const = 0;
  // Bytes of decoded metadata held (for cache accounting).
  virtual int64_t memory_bytes() const = 0;
};

// The manifest entry of an Arrow IPC file that something other than DataFileWriter wrote
// (the LSM links write-ahead-log segments into generation tables this way): the object at
// `table_prefix + path`, whose columns are `schema` (names and types must match the file's;
// nullability and metadata aside) and the table fields `field_ids`. Regions are cut as the
// writer cuts them: the header ends with the schema message, batch i runs from the end of
// the previous region to the end of its record batch message (so bytes between messages
// belong to the batch after them), and the footer is the rest. Statistics, row counts and
// uncompressed_bytes are computed from the decoded batches exactly as DataFileWriter
// computes them. Corruption when the object is not a readable IPC file or holds a batch of
// zero rows; InvalidArgument when its schema does not match; NotFound when it is missing.
Result<pb::DataFile> DescribeDataFile(ObjectStore& store, const std::string& table_prefix,
                                      const std::string& path, const Schema& schema,
                                      std::vector<int32_t> field_ids);

// Reads every region of the file and checks its checksum and that it decodes (verify).
Status VerifyDataFile(ObjectStore& store, const std::string& table_prefix,
                      const pb::DataFile& entry);

}  // namespace strata::table::internal
