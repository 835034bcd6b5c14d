// Data files: Arrow IPC files written into memory, cut into checksummed regions (header, one
// per batch, footer) and put whole; readers verify each region before decoding from it.
#include "table/data_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <set>
#include <utility>

#include "io/file_system.h"
#include "strata/builder.h"
#include "strata/expr.h"
#include "table/format.h"
#include "util/checksum.h"

namespace strata::table::internal {
namespace {

// Whether rows [first, last) (physical positions, offset applied) hold a null. Decided by
// the rows themselves, not the array's null count: a slice, or a nested child shared with
// rows outside the range, must measure as the same rows decoded from a file do.
bool RangeHasNulls(const ArrayData& data, int64_t first, int64_t last) {
  if (data.null_count == 0) return false;
  if (data.buffers.empty() || data.buffers[0].is_null()) return data.null_count > 0;
  if (data.null_count == data.length) return true;
  return bit_util::CountSetBits(data.buffers[0].data(), first, last - first) < last - first;
}

// Uncompressed bytes of rows [begin, end) of `array` (offsets relative to the array's
// logical start): values, offsets and validity (when the range holds a null). Dictionary
// columns count their indices only; the dictionary values are written once per file as
// deltas. Depends only on the rows' values, not on how the array is sliced, and is
// non-decreasing in `end`, which the batch cutting below relies on.
int64_t RangeBytes(const ArrayData& data, int64_t begin, int64_t end) {
  const int64_t n = end - begin;
  if (n <= 0) return 0;
  const DataType& type = *data.type;
  const int64_t first = data.offset + begin;
  const int64_t last = data.offset + end;  // exclusive
  int64_t bytes = RangeHasNulls(data, first, last) ? (n + 7) / 8 : 0;
  switch (type.id()) {
    case TypeId::kUtf8:
    case TypeId::kBinary: {
      const int32_t* offsets = data.buffers[1].data_as<int32_t>();
      return bytes + 4 * n + (int64_t{offsets[last]} - offsets[first]);
    }
    case TypeId::kLargeUtf8:
    case TypeId::kLargeBinary: {
      const int64_t* offsets = data.buffers[1].data_as<int64_t>();
      return bytes + 8 * n + (offsets[last] - offsets[first]);
    }
    case TypeId::kList: {
      const int32_t* offsets = data.buffers[1].data_as<int32_t>();
      return bytes + 4 * n + RangeBytes(*data.children[0], offsets[first], offsets[last]);
    }
    case TypeId::kLargeList: {
      const int64_t* offsets = data.buffers[1].data_as<int64_t>();
      return bytes + 8 * n + RangeBytes(*data.children[0], offsets[first], offsets[last]);
    }
    case TypeId::kFixedSizeList: {
      const int64_t size = type.list_size();
      return bytes + RangeBytes(*data.children[0], first * size, last * size);
    }
    case TypeId::kStruct:
      for (const ArrayDataPtr& child : data.children) bytes += RangeBytes(*child, first, last);
      return bytes;
    case TypeId::kDictionary:
      return bytes + n * (type.index_type()->bit_width() / 8);
    default:
      return bytes + (n * type.bit_width() + 7) / 8;
  }
}

int64_t BatchRangeBytes(const RecordBatch& batch, int64_t begin, int64_t end) {
  int64_t bytes = 0;
  for (const Array& column : batch.columns()) bytes += RangeBytes(*column.data(), begin, end);
  return bytes;
}

// What the manifest records of one written batch (row count and per-column statistics; the
// region is cut once the file is complete) and the batch's uncompressed bytes. The writer
// and DescribeDataFile both use it, so a file described after the fact records exactly what
// the writer would have.
struct BatchSummary {
  pb::BatchInfo info;
  int64_t bytes = 0;
};

Result<BatchSummary> SummarizeBatch(const RecordBatch& batch) {
  BatchSummary summary;
  summary.info.set_num_rows(batch.num_rows());
  for (const Array& column : batch.columns()) {
    STRATA_ASSIGN_OR_RETURN(expr::ColumnStatistics stats, expr::ComputeStatistics(column));
    *summary.info.add_stats() = StatsToProto(stats);
  }
  summary.bytes = BatchRangeBytes(batch, 0, batch.num_rows());
  return summary;
}

// InvalidArgument unless there is one non-negative, distinct field id per column.
Status CheckFieldIds(const std::vector<int32_t>& field_ids, int num_columns, std::string_view who) {
  if (static_cast<int>(field_ids.size()) != num_columns) {
    return Status::InvalidArgument(
        fmt::format("{} got {} field ids for {} columns", who, field_ids.size(), num_columns));
  }
  std::set<int32_t> seen;
  for (int32_t id : field_ids) {
    if (id < 0 || !seen.insert(id).second) {
      return Status::InvalidArgument(
          fmt::format("{}: field id {} is negative or repeated", who, id));
    }
  }
  return Status::OK();
}

// Checksums batch region [start, end) of `bytes`, whose record batch message `info`
// describes, and cuts it into pieces (one before the first column's buffers, then one per
// column up to the next column's), checksumming each. False, and nothing set, when the
// columns' buffers are not in column order (an IPC writer other than strata's may order them
// otherwise): the region then gets its whole checksum only.
bool CutPieces(std::string_view bytes, const ipc::BatchInfo& info, int64_t start, int64_t end,
               pb::BatchInfo* batch) {
  const int64_t body = info.offset + info.metadata_length;
  const int num_columns = static_cast<int>(info.columns.size());
  std::vector<int64_t> starts(num_columns);
  int64_t next = end;
  for (int c = num_columns - 1; c >= 0; --c) {
    const ipc::ColumnInfo& column = info.columns[c];
    if (column.body_begin >= 0) {
      if (body + column.body_end > next) return false;
      next = body + column.body_begin;
    }
    starts[c] = next;  // a column without bytes gets an empty piece where the next one starts
  }
  if (num_columns == 0 || starts[0] < start) return false;
  auto hash = [&](int64_t from, int64_t to) {
    return XxHash3_64(bytes.substr(static_cast<size_t>(from), static_cast<size_t>(to - from)));
  };
  // The region keeps its own checksum, for readers that predate pieces.
  pb::Region* region = batch->mutable_region();
  region->set_offset(start);
  region->set_length(end - start);
  region->set_xxh3(hash(start, end));
  batch->add_piece_xxh3(hash(start, starts[0]));
  for (int c = 0; c < num_columns; ++c) {
    batch->add_piece_starts(starts[c] - start);
    batch->add_piece_xxh3(hash(starts[c], c + 1 < num_columns ? starts[c + 1] : end));
  }
  return true;
}

// Cuts the complete file `bytes` (read by `reader`) into the entry's regions and checksums
// them: the header is [0, header_end), batch i runs from the end of the previous region to
// the end of its record batch message (so dictionary messages, or any other bytes, before
// it belong to it), the footer is the rest. `entry` already has one BatchInfo per batch of
// the file. Corruption when the footer's batches are not in file order after the header or
// leave no footer.
Status CutRegions(std::string_view bytes, const ipc::FileReader& reader, int64_t header_end,
                  pb::DataFile* entry) {
  const auto size = static_cast<int64_t>(bytes.size());
  auto fill = [&](pb::Region* region, int64_t offset, int64_t length) {
    region->set_offset(offset);
    region->set_length(length);
    region->set_xxh3(XxHash3_64(bytes.substr(offset, length)));
  };
  if (header_end <= 0 || header_end >= size) {
    return Status::Corruption(
        fmt::format("the file's header ends at {}, the file at {}", header_end, size));
  }
  fill(entry->mutable_header(), 0, header_end);
  int64_t start = header_end;
  for (int i = 0; i < reader.num_batches(); ++i) {
    STRATA_ASSIGN_OR_RETURN(ipc::BatchInfo info,
                            reader.InspectBatch(i, /*uncompressed_sizes=*/false));
    const int64_t end = info.offset + info.metadata_length + info.body_length;
    if (info.offset < start || end <= info.offset || end >= size) {
      return Status::Corruption(fmt::format(
          "record batch {} message [{}, {}) does not follow the previous region (ending at {}) "
          "inside the file ({} bytes)",
          i, info.offset, end, start, size));
    }
    pb::BatchInfo* batch = entry->mutable_batches(i);
    if (!CutPieces(bytes, info, start, end, batch)) {
      fill(batch->mutable_region(), start, end - start);
    }
    start = end;
  }
  fill(entry->mutable_footer(), start, size - start);
  entry->set_size(size);
  return Status::OK();
}

// Why `actual` is not `expected` (field metadata aside), for error messages.
std::string DescribeSchemaMismatch(const Schema& actual, const Schema& expected) {
  if (actual.num_fields() != expected.num_fields()) {
    return fmt::format("batch has {} columns, the data file {}", actual.num_fields(),
                       expected.num_fields());
  }
  for (int i = 0; i < actual.num_fields(); ++i) {
    if (!actual.field(i)->Equals(*expected.field(i), /*check_metadata=*/false)) {
      return fmt::format("batch column {} is '{}', the data file's is '{}'", i,
                         actual.field(i)->ToString(), expected.field(i)->ToString());
    }
  }
  return "schemas differ";
}

// `result`, with `context` prefixed to its error.
template <typename T>
Result<T> WithContext(Result<T> result, std::string_view context) {
  if (!result.ok()) return result.status().WithContext(context);
  return result;
}

std::string RegionName(int batch) {
  if (batch == -1) return "header";
  if (batch == -2) return "footer";
  return fmt::format("batch {}", batch);
}

// A checksummed byte range of a data file: a region, or a piece of a batch region.
struct CheckedRange {
  int64_t offset = 0;
  int64_t length = 0;
  uint64_t xxh3 = 0;
};

CheckedRange RangeOf(const pb::Region& region) {
  return {region.offset(), region.length(), region.xxh3()};
}

Status VerifyRegion(const Buffer& data, const CheckedRange& range, std::string_view key,
                    const std::string& name) {
  // Bounds were checked by CheckTiling (regions) and CheckPieces (pieces).
  const uint64_t computed = XxHash3_64(
      data.view().substr(static_cast<size_t>(range.offset), static_cast<size_t>(range.length)));
  if (computed != range.xxh3) {
    return Status::Corruption(fmt::format(
        "data file {}: checksum mismatch in {} (bytes [{}, {})): stored {:016x}, computed {:016x}",
        key, name, range.offset, range.offset + range.length, range.xxh3, computed));
  }
  return Status::OK();
}

// The regions must cover [0, size) in order: header, batches, footer.
Status CheckTiling(const pb::DataFile& entry, std::string_view key) {
  int64_t position = 0;
  auto check = [&](const pb::Region& region, const std::string& name) -> Status {
    if (region.offset() != position || region.length() <= 0 ||
        region.length() > entry.size() - position) {
      return Status::Corruption(fmt::format(
          "data file {}: {} region [{}, +{}) does not continue the file at offset {} (size {})",
          key, name, region.offset(), region.length(), position, entry.size()));
    }
    position += region.length();
    return Status::OK();
  };
  STRATA_RETURN_IF_ERROR(check(entry.header(), RegionName(-1)));
  for (int i = 0; i < entry.batches_size(); ++i) {
    STRATA_RETURN_IF_ERROR(check(entry.batches(i).region(), RegionName(i)));
  }
  STRATA_RETURN_IF_ERROR(check(entry.footer(), RegionName(-2)));
  if (position != entry.size()) {
    return Status::Corruption(fmt::format("data file {}: regions end at {}, the file at {}", key,
                                          position, entry.size()));
  }
  return Status::OK();
}

// Where the schema message after the file's leading magic ends (the header region ends
// there): the message is a continuation marker, the length of its metadata (padding
// included) and the metadata, with no body.
Result<int64_t> SchemaMessageEnd(std::string_view file) {
  constexpr int64_t kMagicBytes = 8;  // "ARROW1" and two bytes of padding
  auto read_u32 = [&](int64_t offset) {
    uint32_t value = 0;
    for (int b = 3; b >= 0; --b) value = value << 8 | static_cast<uint8_t>(file[offset + b]);
    return value;
  };
  const auto size = static_cast<int64_t>(file.size());
  if (size < kMagicBytes + 8 || read_u32(kMagicBytes) != 0xFFFFFFFFu) {
    return Status::Corruption("no schema message with a continuation marker after the magic");
  }
  const int64_t length = static_cast<int32_t>(read_u32(kMagicBytes + 4));
  if (length <= 0 || length > size - kMagicBytes - 8) {
    return Status::Corruption(fmt::format(
        "the schema message declares {} bytes of metadata in a file of {} bytes", length, size));
  }
  return kMagicBytes + 8 + length;
}

// ---------------------------------------------------------------------------------------
// Writer

// Collects a data file in memory before its put. Unlike ipc::BufferOutputStream it does not
// zero what it reserves, and it grows with realloc (which moves large blocks by remapping
// them rather than copying).
class FileBytesStream final : public ipc::OutputStream {
 public:
  FileBytesStream() = default;
  FileBytesStream(const FileBytesStream&) = delete;
  FileBytesStream& operator=(const FileBytesStream&) = delete;
  ~FileBytesStream() override { std::free(data_); }

  Status Write(std::string_view bytes) override {
    if (closed_) return Status::InvalidArgument("write to a closed data file stream");
    const auto n = static_cast<int64_t>(bytes.size());
    if (n == 0) return Status::OK();
    if (size_ + n > capacity_) {
      const int64_t capacity = std::max(size_ + n, std::max(capacity_ * 2, int64_t{1} << 20));
      void* grown = std::realloc(data_, static_cast<size_t>(capacity));
      if (grown == nullptr) throw std::bad_alloc();  // as BufferBuilder: not a Status
      data_ = static_cast<uint8_t*>(grown);
      capacity_ = capacity;
    }
    std::memcpy(data_ + size_, bytes.data(), bytes.size());
    size_ += n;
    return Status::OK();
  }
  int64_t Tell() const override { return size_; }
  Status Flush() override { return Status::OK(); }
  Status Close() override {
    closed_ = true;
    return Status::OK();
  }
  // The bytes written; the stream is left empty.
  Buffer Finish() {
    uint8_t* data = std::exchange(data_, nullptr);
    const int64_t size = std::exchange(size_, 0);
    capacity_ = 0;
    if (data == nullptr) return Buffer();
    return Buffer(data, size, std::shared_ptr<uint8_t>(data, [](uint8_t* p) { std::free(p); }));
  }

 private:
  uint8_t* data_ = nullptr;
  int64_t size_ = 0;
  int64_t capacity_ = 0;
  bool closed_ = false;
};

class DataFileWriterImpl final : public DataFileWriter {
 public:
  DataFileWriterImpl(std::shared_ptr<ObjectStore> store, std::string prefix, SchemaPtr schema,
                     std::vector<int32_t> field_ids, DataFileWriteOptions options)
      : store_(std::move(store)),
        prefix_(std::move(prefix)),
        schema_(std::move(schema)),
        field_ids_(std::move(field_ids)),
        options_(options) {}

  Status Start() {
    ipc::WriteOptions write_options;
    write_options.compression = options_.compression;
    write_options.min_compressed_buffer_bytes = options_.min_compressed_buffer_bytes;
    write_options.compression_threads = std::max(1, options_.compression_threads);
    write_options.max_pending_batches = options_.max_pending_batches;
    STRATA_ASSIGN_OR_RETURN(writer_, ipc::FileWriter::Make(&out_, schema_, write_options));
    header_end_ = out_.Tell();
    return Status::OK();
  }

  Status Write(const RecordBatch& batch) override {
    STRATA_RETURN_IF_ERROR(Usable());
    if (batch.schema() == nullptr || !batch.schema()->Equals(*schema_, /*check_metadata=*/false)) {
      return Status::InvalidArgument(fmt::format(
          "data file writer: {}", batch.schema() == nullptr
                                      ? std::string("batch has no schema")
                                      : DescribeSchemaMismatch(*batch.schema(), *schema_)));
    }
    // Relabelled with the writer's fields (the batch's may carry other metadata).
    STRATA_ASSIGN_OR_RETURN(
        const RecordBatch rows,
        WithContext(RecordBatch::Make(schema_, batch.num_rows(), batch.columns()),
                    "data file writer"));
    const int64_t n = rows.num_rows();
    int64_t position = 0;
    while (position < n) {
      // When the pending rows already make at least half a batch and the rest of this input
      // does not fit beside them, write them as they are instead of splitting the input:
      // inputs of about a batch each (a memtable's puts) then go out without being cut and
      // concatenated again.
      if (pending_rows_ > 0 && 2 * pending_bytes_ >= options_.max_bytes_per_batch &&
          (pending_rows_ + (n - position) > options_.max_rows_per_batch ||
           pending_bytes_ + BatchRangeBytes(rows, position, n) > options_.max_bytes_per_batch)) {
        STRATA_RETURN_IF_ERROR(Track(FlushPending()));
        continue;
      }
      const int64_t limit = std::min(options_.max_rows_per_batch - pending_rows_, n - position);
      // The most rows from `position` that keep the pending batch within the byte limit.
      int64_t lo = 0;
      int64_t hi = limit;
      while (lo < hi) {
        const int64_t mid = lo + (hi - lo + 1) / 2;
        if (pending_bytes_ + BatchRangeBytes(rows, position, position + mid) <=
            options_.max_bytes_per_batch) {
          lo = mid;
        } else {
          hi = mid - 1;
        }
      }
      int64_t take = lo;
      if (take == 0) {
        if (pending_rows_ > 0) {
          STRATA_RETURN_IF_ERROR(Track(FlushPending()));
          continue;
        }
        take = 1;  // a row larger than the byte limit makes a batch of its own
      }
      const int64_t bytes = BatchRangeBytes(rows, position, position + take);
      pending_.push_back(rows.Slice(position, take));
      pending_rows_ += take;
      pending_bytes_ += bytes;
      bytes_buffered_ += bytes;
      position += take;
      if (pending_rows_ >= options_.max_rows_per_batch || take < limit) {
        STRATA_RETURN_IF_ERROR(Track(FlushPending()));
      }
    }
    return Status::OK();
  }

  int64_t rows_written() const override { return rows_written_; }
  int64_t bytes_buffered() const override { return bytes_buffered_; }

  Result<pb::DataFile> Finish() override {
    STRATA_RETURN_IF_ERROR(Usable());
    finished_ = true;
    STRATA_RETURN_IF_ERROR(Track(FlushPending()));
    STRATA_RETURN_IF_ERROR(Track(writer_->Close()));
    STRATA_RETURN_IF_ERROR(Track(out_.Close()));
    const Buffer bytes = out_.Finish();
    const std::string_view view = bytes.view();
    // Regions are found in the finished file: the IPC writer may write a batch after later
    // ones are given.
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ipc::FileReader> reader,
                            Track(ipc::FileReader::Open(ipc::SourceFromBuffer(bytes))));
    if (reader->num_batches() != static_cast<int>(batches_.size())) {
      return Track(
          Status::Internal(fmt::format("data file writer wrote {} batches, the file holds {}",
                                       batches_.size(), reader->num_batches())));
    }

    pb::DataFile entry;
    entry.set_path(NewDataFileKey(options_.clock, options_.random));
    for (int32_t id : field_ids_) entry.add_field_ids(id);
    for (pb::BatchInfo& info : batches_) *entry.add_batches() = std::move(info);
    batches_.clear();
    entry.set_uncompressed_bytes(uncompressed_bytes_);
    STRATA_RETURN_IF_ERROR(Track(CutRegions(view, *reader, header_end_, &entry)));
    STRATA_RETURN_IF_ERROR(
        store_->Put(prefix_ + entry.path(), view).WithContext("putting data file"));
    return entry;
  }

 private:
  Status Usable() const {
    if (!error_.ok()) return error_.WithContext("data file writer failed earlier");
    if (finished_) return Status::InvalidArgument("data file writer is finished");
    return Status::OK();
  }
  Status Track(Status st) {
    if (!st.ok() && error_.ok()) error_ = st;
    return st;
  }
  template <typename T>
  Result<T> Track(Result<T> result) {
    if (!result.ok() && error_.ok()) error_ = result.status();
    return result;
  }

  // Writes the pending rows as one batch and records its statistics.
  Status FlushPending() {
    if (pending_rows_ == 0) return Status::OK();
    std::vector<Array> columns;
    columns.reserve(schema_->num_fields());
    for (int c = 0; c < schema_->num_fields(); ++c) {
      if (pending_.size() == 1) {
        columns.push_back(pending_[0].column(c));
        continue;
      }
      std::vector<Array> pieces;
      pieces.reserve(pending_.size());
      for (const RecordBatch& piece : pending_) pieces.push_back(piece.column(c));
      STRATA_ASSIGN_OR_RETURN(Array column, Concatenate(pieces));
      columns.push_back(std::move(column));
    }
    STRATA_ASSIGN_OR_RETURN(RecordBatch batch,
                            RecordBatch::Make(schema_, pending_rows_, std::move(columns)));
    STRATA_ASSIGN_OR_RETURN(BatchSummary summary, SummarizeBatch(batch));
    STRATA_RETURN_IF_ERROR(writer_->WriteBatch(batch));
    batches_.push_back(std::move(summary.info));
    uncompressed_bytes_ += summary.bytes;
    rows_written_ += pending_rows_;
    pending_.clear();
    pending_rows_ = 0;
    pending_bytes_ = 0;
    return Status::OK();
  }

  std::shared_ptr<ObjectStore> store_;
  std::string prefix_;
  SchemaPtr schema_;
  std::vector<int32_t> field_ids_;
  DataFileWriteOptions options_;
  FileBytesStream out_;
  std::unique_ptr<ipc::FileWriter> writer_;
  int64_t header_end_ = 0;
  std::vector<RecordBatch> pending_;  // slices of input batches, not yet written
  int64_t pending_rows_ = 0;
  int64_t pending_bytes_ = 0;
  std::vector<pb::BatchInfo> batches_;  // regions are filled in by Finish()
  int64_t uncompressed_bytes_ = 0;      // of the batches written
  int64_t rows_written_ = 0;
  int64_t bytes_buffered_ = 0;
  bool finished_ = false;
  Status error_;
};

// ---------------------------------------------------------------------------------------
// Reader

class DataFileReaderImpl final : public DataFileReader {
 public:
  DataFileReaderImpl(std::string key, Buffer data) : key_(std::move(key)), data_(std::move(data)) {}

  // Size, tiling, pieces and header/footer checksums, then the IPC footer. `verify_all`
  // checks every batch up front as well; otherwise a batch's bytes are checked when first
  // read, and only the pieces the read decodes, so one bad batch or column does not keep the
  // others from being read. Keeps of `entry` only what reads check (not its statistics).
  Status Init(const pb::DataFile& entry, const ipc::ReadOptions& options, bool verify_all) {
    if (data_.size() != entry.size()) {
      return Status::Corruption(fmt::format("data file {} has {} bytes, its manifest entry says {}",
                                            key_, data_.size(), entry.size()));
    }
    STRATA_RETURN_IF_ERROR(CheckTiling(entry, key_));
    // Touching a page of a mapping that is not in memory makes the kernel read around it (as
    // much as the device's read-ahead setting, often megabytes); pages asked for first are
    // read alone (see Prefetch).
    io::AdviseWillNeed(data_, entry.header().offset(), entry.header().length());
    io::AdviseWillNeed(data_, entry.footer().offset(), entry.footer().length());
    STRATA_RETURN_IF_ERROR(VerifyRegion(data_, RangeOf(entry.header()), key_, RegionName(-1)));
    STRATA_RETURN_IF_ERROR(VerifyRegion(data_, RangeOf(entry.footer()), key_, RegionName(-2)));
    STRATA_RETURN_IF_ERROR(LayOut(entry));
    if (verify_all) {
      for (int i = 0; i < num_batches(); ++i) STRATA_RETURN_IF_ERROR(VerifyBatch(i));
    }
    Result<std::unique_ptr<ipc::FileReader>> reader =
        ipc::FileReader::Open(ipc::SourceFromBuffer(data_), options);
    if (!reader.ok()) {
      // Dictionaries are read at open, from batch regions: name a bad region if there is one.
      for (int i = 0; i < num_batches(); ++i) STRATA_RETURN_IF_ERROR(VerifyBatch(i));
      return reader.status().WithContext(fmt::format("data file {}", key_));
    }
    reader_ = std::move(*reader);
    if (reader_->num_dictionaries() > 0) {
      for (int i = 0; i < num_batches(); ++i) STRATA_RETURN_IF_ERROR(VerifyBatch(i));
    }
    const SchemaPtr& schema = reader_->schema();
    if (schema->num_fields() != num_columns_) {
      return Status::Corruption(fmt::format("data file {} has {} columns, its manifest entry {}",
                                            key_, schema->num_fields(), num_columns_));
    }
    if (reader_->num_batches() != num_batches()) {
      return Status::Corruption(fmt::format("data file {} has {} batches, its manifest entry {}",
                                            key_, reader_->num_batches(), num_batches()));
    }
    if (verify_all) {
      for (int i = 0; i < num_batches(); ++i) STRATA_RETURN_IF_ERROR(CheckBatch(i));
    }
    return Status::OK();
  }

  const SchemaPtr& schema() const override { return reader_->schema(); }
  int num_batches() const override { return static_cast<int>(batches_.size()); }

  Result<RecordBatch> ReadBatch(int i, const std::vector<int>& columns) const override {
    if (i < 0 || i >= num_batches()) {
      return Status::InvalidArgument(
          fmt::format("data file {}: no batch {} (it has {})", key_, i, num_batches()));
    }
    // The first read of a batch, or of one of its columns, asks for its pieces at once (a
    // scan asked already, ahead of its reads; a point read has not).
    if (!AllChecked(i, columns)) Prefetch(i, columns);
    STRATA_RETURN_IF_ERROR(CheckBatch(i));
    if (batches_[i].pieces) {
      for (int c : columns) {
        if (c < 0 || c >= num_columns_) {
          return Status::InvalidArgument(
              fmt::format("data file {}: no column {} (it has {})", key_, c, num_columns_));
        }
        STRATA_RETURN_IF_ERROR(VerifyCheck(i, 1 + c));
      }
    }
    STRATA_ASSIGN_OR_RETURN(
        RecordBatch batch,
        WithContext(reader_->ReadBatch(i, columns), fmt::format("data file {} batch {}", key_, i)));
    if (batch.num_rows() != batches_[i].num_rows) {
      return Status::Corruption(fmt::format("data file {}: batch {} has {} rows, the entry {}",
                                            key_, i, batch.num_rows(), batches_[i].num_rows));
    }
    return batch;
  }

  int64_t Prefetch(int i, const std::vector<int>& columns) const override {
    if (i < 0 || i >= num_batches()) return 0;
    const BatchLayout& batch = batches_[i];
    if (!batch.pieces) {
      io::AdviseWillNeed(data_, batch.region_begin, batch.region_end - batch.region_begin);
      return batch.region_end - batch.region_begin;
    }
    // The message, then the columns' pieces in file order; pieces at most 16 KiB apart are
    // asked for as one range (reading the gap costs less than another request).
    constexpr int64_t kJoinGapBytes = int64_t{16} << 10;
    std::vector<size_t> pieces{batch.first_check};
    for (int c : columns) {
      if (c >= 0 && c < num_columns_) pieces.push_back(batch.first_check + 1 + c);
    }
    std::sort(pieces.begin() + 1, pieces.end());
    int64_t asked = 0, begin = -1, end = -1;
    for (size_t index : pieces) {
      const CheckedRange& piece = checks_[index];
      if (begin >= 0 && piece.offset <= end + kJoinGapBytes) {
        end = std::max(end, piece.offset + piece.length);
        continue;
      }
      if (begin >= 0) {
        io::AdviseWillNeed(data_, begin, end - begin);
        asked += end - begin;
      }
      begin = piece.offset;
      end = piece.offset + piece.length;
    }
    io::AdviseWillNeed(data_, begin, end - begin);
    return asked + (end - begin);
  }

  int64_t memory_bytes() const override {
    const SchemaPtr& schema = reader_->schema();
    return static_cast<int64_t>(sizeof(*this) + key_.size() +
                                batches_.capacity() * sizeof(BatchLayout) +
                                checks_.capacity() * (sizeof(CheckedRange) + 1)) +
           schema->num_fields() * int64_t{256};
  }

 private:
  struct BatchLayout {
    int64_t num_rows = 0;
    int64_t region_begin = 0;
    int64_t region_end = 0;
    size_t first_check = 0;  // its checks in checks_: the region, or its 1 + columns pieces
    bool pieces = false;
  };

  // The checked ranges of every batch from the entry. Corruption when a batch's pieces are
  // malformed: counts other than one start per column and one more checksum, or starts that
  // decrease or leave the region.
  Status LayOut(const pb::DataFile& entry) {
    num_columns_ = entry.field_ids_size();
    batches_.reserve(entry.batches_size());
    for (int i = 0; i < entry.batches_size(); ++i) {
      const pb::BatchInfo& info = entry.batches(i);
      const pb::Region& region = info.region();
      BatchLayout layout{info.num_rows(), region.offset(), region.offset() + region.length(),
                         checks_.size(), false};
      if (info.piece_starts_size() == 0 && info.piece_xxh3_size() == 0) {
        checks_.push_back(RangeOf(region));
      } else {
        if (num_columns_ == 0 || info.piece_starts_size() != num_columns_ ||
            info.piece_xxh3_size() != num_columns_ + 1) {
          return Status::Corruption(fmt::format(
              "data file {}: {} has {} piece starts and {} piece checksums for {} columns", key_,
              RegionName(i), info.piece_starts_size(), info.piece_xxh3_size(), num_columns_));
        }
        int64_t from = 0;
        for (int p = 0; p <= num_columns_; ++p) {
          const int64_t to = p < num_columns_ ? info.piece_starts(p) : region.length();
          if (to < from || to > region.length()) {
            return Status::Corruption(fmt::format(
                "data file {}: {} piece {} runs from {} to {}, outside its region of {} bytes",
                key_, RegionName(i), p, from, to, region.length()));
          }
          checks_.push_back({region.offset() + from, to - from, info.piece_xxh3(p)});
          from = to;
        }
        layout.pieces = true;
      }
      batches_.push_back(layout);
    }
    checked_ = std::make_unique<std::atomic<bool>[]>(checks_.size());
    message_checked_ = std::make_unique<std::atomic<bool>[]>(batches_.size());
    return Status::OK();
  }

  std::string CheckName(int i, int check) const {
    if (!batches_[i].pieces) return RegionName(i);
    if (check == 0) return fmt::format("{} message", RegionName(i));
    return fmt::format("{} column {}", RegionName(i), check - 1);
  }

  // Whether batch i's message and every one of `columns` were checked by an earlier read.
  bool AllChecked(int i, const std::vector<int>& columns) const {
    if (!message_checked_[i].load(std::memory_order_acquire)) return false;
    if (!batches_[i].pieces) return true;
    const size_t first = batches_[i].first_check;
    for (int c : columns) {
      if (c >= 0 && c < num_columns_ &&
          !checked_[first + 1 + static_cast<size_t>(c)].load(std::memory_order_acquire)) {
        return false;
      }
    }
    return true;
  }

  // Checksum `check` of batch i (hashed once per reader; threads racing on the first read
  // may both hash, which is harmless).
  Status VerifyCheck(int i, int check) const {
    const size_t index = batches_[i].first_check + static_cast<size_t>(check);
    std::atomic<bool>& verified = checked_[index];
    if (verified.load(std::memory_order_acquire)) return Status::OK();
    STRATA_RETURN_IF_ERROR(VerifyRegion(data_, checks_[index], key_, CheckName(i, check)));
    verified.store(true, std::memory_order_release);
    return Status::OK();
  }

  // Every byte of batch i's region.
  Status VerifyBatch(int i) const {
    const int checks = batches_[i].pieces ? 1 + num_columns_ : 1;
    for (int check = 0; check < checks; ++check) STRATA_RETURN_IF_ERROR(VerifyCheck(i, check));
    return Status::OK();
  }

  // The bytes of batch i's message (its whole region when it has no pieces), then that the
  // footer places the message inside the region with the row count the entry records.
  // Needs reader_.
  Status CheckBatch(int i) const {
    std::atomic<bool>& checked = message_checked_[i];
    if (checked.load(std::memory_order_acquire)) return Status::OK();
    STRATA_RETURN_IF_ERROR(VerifyCheck(i, 0));
    STRATA_ASSIGN_OR_RETURN(ipc::BatchInfo info,
                            WithContext(reader_->InspectBatch(i, /*uncompressed_sizes=*/false),
                                        fmt::format("data file {} batch {}", key_, i)));
    const BatchLayout& expected = batches_[i];
    if (info.num_rows != expected.num_rows) {
      return Status::Corruption(fmt::format("data file {}: batch {} has {} rows, the entry {}",
                                            key_, i, info.num_rows, expected.num_rows));
    }
    const int64_t end = info.offset + info.metadata_length + info.body_length;
    if (info.offset < expected.region_begin || end > expected.region_end) {
      return Status::Corruption(
          fmt::format("data file {}: batch {} message [{}, {}) lies outside its region [{}, {})",
                      key_, i, info.offset, end, expected.region_begin, expected.region_end));
    }
    if (expected.pieces) STRATA_RETURN_IF_ERROR(CheckPieces(i, info));
    checked.store(true, std::memory_order_release);
    return Status::OK();
  }

  // A read of column c verifies pieces 0 and c + 1 only, so the message metadata must lie in
  // piece 0 and each column's buffers in its own piece.
  Status CheckPieces(int i, const ipc::BatchInfo& info) const {
    const size_t first = batches_[i].first_check;
    const int64_t body = info.offset + info.metadata_length;
    if (static_cast<int>(info.columns.size()) != num_columns_ || body > checks_[first + 1].offset) {
      return Status::Corruption(fmt::format(
          "data file {}: batch {} message ({} columns, metadata ending at {}) does not match "
          "its pieces ({} columns, the first starting at {})",
          key_, i, info.columns.size(), body, num_columns_, checks_[first + 1].offset));
    }
    for (int c = 0; c < num_columns_; ++c) {
      const ipc::ColumnInfo& column = info.columns[c];
      const CheckedRange& piece = checks_[first + 1 + c];
      if (column.body_begin >= 0 && (body + column.body_begin < piece.offset ||
                                     body + column.body_end > piece.offset + piece.length)) {
        return Status::Corruption(fmt::format(
            "data file {}: batch {} column {} bytes [{}, {}) lie outside its piece [{}, {})", key_,
            i, c, body + column.body_begin, body + column.body_end, piece.offset,
            piece.offset + piece.length));
      }
    }
    return Status::OK();
  }

  const std::string key_;
  const Buffer data_;
  int num_columns_ = 0;
  std::vector<BatchLayout> batches_;
  std::vector<CheckedRange> checks_;
  std::unique_ptr<std::atomic<bool>[]> checked_;          // per check: checksum matched
  std::unique_ptr<std::atomic<bool>[]> message_checked_;  // per batch: CheckBatch passed
  std::unique_ptr<ipc::FileReader> reader_;
};

Result<std::unique_ptr<DataFileReaderImpl>> OpenImpl(ObjectStore& store, const std::string& prefix,
                                                     const pb::DataFile& entry,
                                                     const ipc::ReadOptions& options,
                                                     bool verify_all) {
  const std::string key = FileKey(prefix, entry.path());
  STRATA_ASSIGN_OR_RETURN(Buffer data,
                          WithContext(store.Get(key), fmt::format("reading data file {}", key)));
  auto reader = std::make_unique<DataFileReaderImpl>(key, std::move(data));
  STRATA_RETURN_IF_ERROR(reader->Init(entry, options, verify_all));
  return reader;
}

}  // namespace

Result<std::unique_ptr<DataFileWriter>> DataFileWriter::Make(std::shared_ptr<ObjectStore> store,
                                                             std::string table_prefix,
                                                             SchemaPtr schema,
                                                             std::vector<int32_t> field_ids,
                                                             DataFileWriteOptions options) {
  if (store == nullptr) return Status::InvalidArgument("data file writer needs an object store");
  STRATA_RETURN_IF_ERROR(ValidateObjectPrefix(table_prefix));
  if (schema == nullptr || schema->num_fields() == 0) {
    return Status::InvalidArgument("data file writer needs a schema with at least one column");
  }
  STRATA_RETURN_IF_ERROR(CheckFieldIds(field_ids, schema->num_fields(), "data file writer"));
  if (options.max_rows_per_batch <= 0 || options.max_bytes_per_batch <= 0) {
    return Status::InvalidArgument(
        fmt::format("data file batch limits must be positive, not {} rows / {} bytes",
                    options.max_rows_per_batch, options.max_bytes_per_batch));
  }
  auto writer = std::make_unique<DataFileWriterImpl>(
      std::move(store), std::move(table_prefix), std::move(schema), std::move(field_ids), options);
  STRATA_RETURN_IF_ERROR(writer->Start());
  return std::unique_ptr<DataFileWriter>(std::move(writer));
}

Result<std::shared_ptr<DataFileReader>> DataFileReader::Open(std::shared_ptr<ObjectStore> store,
                                                             const std::string& table_prefix,
                                                             const pb::DataFile& entry) {
  if (store == nullptr) return Status::InvalidArgument("data file reader needs an object store");
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DataFileReaderImpl> reader,
                          OpenImpl(*store, table_prefix, entry, ipc::ReadOptions{},
                                   /*verify_all=*/false));
  return std::shared_ptr<DataFileReader>(std::move(reader));
}

Result<pb::DataFile> DescribeDataFile(ObjectStore& store, const std::string& table_prefix,
                                      const std::string& path, const Schema& schema,
                                      std::vector<int32_t> field_ids) {
  STRATA_RETURN_IF_ERROR(ValidateObjectPrefix(table_prefix));
  if (path.empty()) return Status::InvalidArgument("DescribeDataFile needs a path");
  if (schema.num_fields() == 0) {
    return Status::InvalidArgument("DescribeDataFile needs a schema with at least one column");
  }
  STRATA_RETURN_IF_ERROR(CheckFieldIds(field_ids, schema.num_fields(), "DescribeDataFile"));
  const std::string key = FileKey(table_prefix, path);
  STRATA_ASSIGN_OR_RETURN(const Buffer bytes,
                          WithContext(store.Get(key), fmt::format("describing data file {}", key)));
  const std::string_view view = bytes.view();
  // Whatever the IPC layer finds wrong with the bytes, the object is not a usable data file.
  auto unreadable = [&](const Status& status) {
    return Status::Corruption(
        fmt::format("data file {} is not a readable Arrow IPC file: {}", key, status.ToString()));
  };
  ipc::ReadOptions options;
  options.validate_full = true;  // written by something else: check everything once
  Result<std::unique_ptr<ipc::FileReader>> opened =
      ipc::FileReader::Open(ipc::SourceFromBuffer(bytes), options);
  if (!opened.ok()) return unreadable(opened.status());
  const ipc::FileReader& reader = **opened;
  const Schema& actual = *reader.schema();
  if (actual.num_fields() != schema.num_fields()) {
    return Status::InvalidArgument(fmt::format("data file {} has {} columns, {} were expected", key,
                                               actual.num_fields(), schema.num_fields()));
  }
  for (int i = 0; i < schema.num_fields(); ++i) {
    const Field& got = *actual.field(i);
    const Field& want = *schema.field(i);
    if (got.name() != want.name() || !got.type()->Equals(*want.type())) {
      return Status::InvalidArgument(fmt::format("data file {}: column {} is '{}', expected '{}'",
                                                 key, i, got.ToString(), want.ToString()));
    }
  }
  Result<int64_t> header_end = SchemaMessageEnd(view);
  if (!header_end.ok()) return unreadable(header_end.status());

  pb::DataFile entry;
  entry.set_path(path);
  for (int32_t id : field_ids) entry.add_field_ids(id);
  int64_t uncompressed_bytes = 0;
  for (int i = 0; i < reader.num_batches(); ++i) {
    Result<RecordBatch> batch = reader.ReadBatch(i);
    if (!batch.ok()) return unreadable(batch.status().WithContext(fmt::format("batch {}", i)));
    if (batch->num_rows() == 0) {
      return Status::Corruption(fmt::format("data file {}: batch {} has no rows", key, i));
    }
    STRATA_ASSIGN_OR_RETURN(BatchSummary summary, SummarizeBatch(*batch));
    *entry.add_batches() = std::move(summary.info);
    uncompressed_bytes += summary.bytes;
  }
  entry.set_uncompressed_bytes(uncompressed_bytes);
  Status cut = CutRegions(view, reader, *header_end, &entry);
  if (!cut.ok()) return unreadable(cut);
  return entry;
}

Status VerifyDataFile(ObjectStore& store, const std::string& table_prefix,
                      const pb::DataFile& entry) {
  ipc::ReadOptions options;
  options.validate_full = true;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DataFileReaderImpl> reader,
                          OpenImpl(store, table_prefix, entry, options, /*verify_all=*/true));
  std::vector<int> all_columns(reader->schema()->num_fields());
  for (size_t c = 0; c < all_columns.size(); ++c) all_columns[c] = static_cast<int>(c);
  for (int i = 0; i < reader->num_batches(); ++i) {
    STRATA_ASSIGN_OR_RETURN(RecordBatch batch, reader->ReadBatch(i, all_columns));
    STRATA_RETURN_IF_ERROR(batch.ValidateFull().WithContext(
        fmt::format("data file {}{} batch {}", table_prefix, entry.path(), i)));
  }
  return Status::OK();
}

}  // namespace strata::table::internal
