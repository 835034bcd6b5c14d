// Arrow IPC stream and file writers: schema message, dictionary and record batch messages,
// end-of-stream marker, and for files the magic and the footer. Body compression can run on
// helper threads (WriteOptions::compression_threads), with batches written in order.
#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <optional>
#include <thread>

#include "columnar/ipc_internal.h"
#include "util/mutex.h"

namespace strata::ipc {

using internal::EncodedBody;
using internal::LayoutPlan;
using internal::WriterDictionaries;
using internal::WrittenBlock;

namespace {

Status CheckOptions(const WriteOptions& options) {
  STRATA_RETURN_IF_ERROR(internal::CheckAlignment(options.alignment));
  if (options.compression == Compression::kZstd &&
      (options.zstd_level < -7 || options.zstd_level > 22)) {
    return Status::InvalidArgument(
        fmt::format("zstd level must be within -7..22, not {}", options.zstd_level));
  }
  if (options.min_compressed_buffer_bytes < 0) {
    return Status::InvalidArgument(
        fmt::format("IPC min_compressed_buffer_bytes must not be negative, not {}",
                    options.min_compressed_buffer_bytes));
  }
  if (!(options.min_space_savings >= 0 && options.min_space_savings <= 1)) {
    return Status::InvalidArgument(fmt::format("IPC min_space_savings must be within 0..1, not {}",
                                               options.min_space_savings));
  }
  if (options.compression_threads < 1 || options.compression_threads > 64) {
    return Status::InvalidArgument(fmt::format(
        "IPC compression_threads must be within 1..64, not {}", options.compression_threads));
  }
  if (options.max_pending_batches < 0 || options.max_pending_batches > 64) {
    return Status::InvalidArgument(fmt::format(
        "IPC max_pending_batches must be within 0..64, not {}", options.max_pending_batches));
  }
  return Status::OK();
}

// The writing shared by the stream and file formats.
class MessageWriter {
 public:
  MessageWriter(OutputStream* out, SchemaPtr schema, WriteOptions options, LayoutPlan plan,
                bool file_format)
      : out_(out),
        schema_(std::move(schema)),
        options_(options),
        plan_(std::move(plan)),
        dictionaries_(&plan_, /*unify=*/file_format) {}

  ~MessageWriter() { StopWorkers(); }
  MessageWriter(const MessageWriter&) = delete;
  MessageWriter& operator=(const MessageWriter&) = delete;

  static Result<std::unique_ptr<MessageWriter>> Make(OutputStream* out, SchemaPtr schema,
                                                     const WriteOptions& options,
                                                     bool file_format) {
    if (out == nullptr) return Status::InvalidArgument("IPC writer needs an output stream");
    if (schema == nullptr) return Status::InvalidArgument("IPC writer needs a schema");
    STRATA_RETURN_IF_ERROR(CheckOptions(options));
    // A deeper schema would be written, but no reader could open it again.
    for (const FieldPtr& f : schema->fields()) {
      Status nesting = CheckTypeNesting(*f->type());
      if (!nesting.ok()) return nesting.WithContext(fmt::format("column '{}'", f->name()));
    }
    STRATA_ASSIGN_OR_RETURN(LayoutPlan plan, internal::PlanSchema(*schema));
    return std::make_unique<MessageWriter>(out, std::move(schema), options, std::move(plan),
                                           file_format);
  }

  // The stream's first message.
  Status WriteSchema() {
    return Track(internal::WriteSchemaMessage(out_, *schema_, plan_, options_.alignment));
  }

  // The file's magic and schema message.
  Status WriteFileHeader() {
    return Track(internal::WriteFileHeader(out_, *schema_, plan_, options_.alignment));
  }

  Status WriteBatch(const RecordBatch& batch, const KeyValueMetadata& batch_metadata) {
    STRATA_RETURN_IF_ERROR(Usable());
    if (batch.schema() == nullptr || !batch.schema()->Equals(*schema_, /*check_metadata=*/false)) {
      return Status::InvalidArgument(
          fmt::format("record batch schema differs from the writer's:\n{}\nexpected:\n{}",
                      batch.schema() ? batch.schema()->ToString() : "(none)", schema_->ToString()));
    }
    // Encode everything first: a batch that cannot be encoded writes nothing. When helper
    // threads compress, the buffers are encoded raw here and compressed later.
    const bool deferred =
        options_.compression != Compression::kNone && options_.compression_threads > 1;
    WriteOptions encode_options = options_;
    if (deferred) encode_options.compression = Compression::kNone;
    STRATA_ASSIGN_OR_RETURN(WriterDictionaries::Prepared prepared, dictionaries_.Prepare(batch));
    auto pending = std::make_unique<PendingBatch>();
    for (const WriterDictionaries::Message& m : prepared.messages) {
      LayoutPlan value_plan = internal::PlanSingleType(m.values.type());
      STRATA_ASSIGN_OR_RETURN(
          EncodedBody body, internal::EncodeBody({m.values}, value_plan, nullptr, encode_options));
      pending->messages.push_back({std::move(body), m.values.length(), m.id, m.is_delta, {}});
    }
    STRATA_ASSIGN_OR_RETURN(
        EncodedBody body, internal::EncodeBody(batch.columns(), plan_, &prepared, encode_options));
    pending->messages.push_back(
        {std::move(body), batch.num_rows(), std::nullopt, false, batch_metadata});
    if (!deferred) {
      STRATA_RETURN_IF_ERROR(Track(WriteMessages(*pending)));
      dictionaries_.Commit(prepared);
      return Status::OK();
    }
    // The dictionaries' state moves on now: the next batch is encoded against it before
    // this one is written. A failure from here on leaves the writer failed.
    dictionaries_.Commit(prepared);
    Enqueue(std::move(pending));
    const int max_pending = options_.max_pending_batches > 0 ? options_.max_pending_batches
                                                             : options_.compression_threads;
    while (static_cast<int>(pending_.size()) >= max_pending) {
      STRATA_RETURN_IF_ERROR(Track(WriteOldest()));
    }
    return Status::OK();
  }

  Status WriteEndOfStream() {
    STRATA_RETURN_IF_ERROR(Usable());
    while (!pending_.empty()) STRATA_RETURN_IF_ERROR(Track(WriteOldest()));
    return Track(internal::WriteEndOfStream(out_));
  }

  Status WriteFooterAndMagic(const KeyValueMetadata& footer_metadata) {
    STRATA_RETURN_IF_ERROR(Usable());
    return Track(internal::WriteFooter(out_, *schema_, plan_, dictionary_blocks_, record_blocks_,
                                       footer_metadata));
  }

  Status Finish() {
    STRATA_RETURN_IF_ERROR(Usable());
    closed_ = true;
    return Track(out_->Flush());
  }

  OutputStream* out() const { return out_; }
  // Batches accepted, written or still being compressed.
  int num_batches() const { return static_cast<int>(record_blocks_.size() + pending_.size()); }

 private:
  // One message of a batch, in the order it is written.
  struct PendingMessage {
    EncodedBody body;
    int64_t length = 0;  // rows, or dictionary values
    std::optional<int64_t> dictionary_id;
    bool is_delta = false;
    KeyValueMetadata metadata;
  };
  // A batch's messages (dictionary deltas first, the record batch last), whose buffers are
  // compressed by tasks; `tasks_left` and `status` are guarded by mu_.
  struct PendingBatch {
    std::vector<PendingMessage> messages;
    int tasks_left = 0;
    Status status;  // the first compression failure
  };
  // Compress *buffer in place (each buffer belongs to exactly one task).
  struct Task {
    PendingBatch* batch = nullptr;
    Buffer* buffer = nullptr;
  };

  Status WriteMessages(const PendingBatch& batch) {
    for (const PendingMessage& m : batch.messages) {
      STRATA_ASSIGN_OR_RETURN(WrittenBlock block,
                              internal::WriteBatchMessage(out_, m.length, m.body, options_,
                                                          m.dictionary_id, m.is_delta, m.metadata));
      (m.dictionary_id.has_value() ? dictionary_blocks_ : record_blocks_).push_back(block);
    }
    return Status::OK();
  }

  // Queues the compression of `batch`'s non-empty buffers, largest first so that the long
  // tasks start early and the threads finish together.
  void Enqueue(std::unique_ptr<PendingBatch> batch) {
    std::vector<Task> tasks;
    for (PendingMessage& m : batch->messages) {
      for (Buffer& buffer : m.body.buffers) {
        if (buffer.size() > 0) tasks.push_back({batch.get(), &buffer});
      }
    }
    std::stable_sort(tasks.begin(), tasks.end(), [](const Task& a, const Task& b) {
      return a.buffer->size() > b.buffer->size();
    });
    {
      MutexLock lock(mu_);
      batch->tasks_left = static_cast<int>(tasks.size());
      tasks_.insert(tasks_.end(), tasks.begin(), tasks.end());
    }
    work_cv_.SignalAll();
    pending_.push_back(std::move(batch));
    while (static_cast<int>(workers_.size()) < options_.compression_threads - 1) {
      workers_.emplace_back([this] { WorkerLoop(); });
    }
  }

  // Compresses the oldest pending batch (helping the workers with any queued task meanwhile)
  // and writes it.
  Status WriteOldest() {
    PendingBatch* oldest = pending_.front().get();
    Status status;
    while (true) {
      std::optional<Task> task;
      {
        MutexLock lock(mu_);
        while (oldest->tasks_left > 0 && tasks_.empty()) done_cv_.Wait(mu_);
        if (oldest->tasks_left == 0) {
          status = oldest->status;
          break;
        }
        task = tasks_.front();
        tasks_.pop_front();
      }
      RunTask(*task);
    }
    std::unique_ptr<PendingBatch> batch = std::move(pending_.front());
    pending_.pop_front();
    STRATA_RETURN_IF_ERROR(status);
    return WriteMessages(*batch);
  }

  void RunTask(const Task& task) {
    Result<Buffer> compressed =
        internal::CompressBuffer(options_.compression, options_.zstd_level, *task.buffer,
                                 options_.min_space_savings, options_.min_compressed_buffer_bytes);
    if (compressed.ok()) *task.buffer = std::move(*compressed);
    MutexLock lock(mu_);
    if (!compressed.ok() && task.batch->status.ok()) task.batch->status = compressed.status();
    if (--task.batch->tasks_left == 0) done_cv_.SignalAll();
  }

  void WorkerLoop() {
    while (true) {
      Task task;
      {
        MutexLock lock(mu_);
        while (!stop_ && tasks_.empty()) work_cv_.Wait(mu_);
        if (stop_) return;
        task = tasks_.front();
        tasks_.pop_front();
      }
      RunTask(task);
    }
  }

  // Abandons queued tasks and joins the workers (a task in progress finishes first; the
  // batches it points into outlive the join).
  void StopWorkers() {
    {
      MutexLock lock(mu_);
      stop_ = true;
      tasks_.clear();
    }
    work_cv_.SignalAll();
    for (std::thread& worker : workers_) worker.join();
    workers_.clear();
  }

  // Any failed write leaves the output in an unknown state: later calls report it.
  Status Track(Status st) {
    if (!st.ok() && error_.ok()) error_ = st;
    return st;
  }
  Status Usable() const {
    if (!error_.ok()) return error_.WithContext("IPC writer failed earlier");
    if (closed_) return Status::InvalidArgument("IPC writer is closed");
    return Status::OK();
  }

  OutputStream* out_;
  SchemaPtr schema_;
  WriteOptions options_;
  LayoutPlan plan_;
  WriterDictionaries dictionaries_;
  std::vector<WrittenBlock> dictionary_blocks_;
  std::vector<WrittenBlock> record_blocks_;
  Status error_;
  bool closed_ = false;
  // Batches encoded but not yet written, oldest first (compression_threads > 1 only).
  std::deque<std::unique_ptr<PendingBatch>> pending_;
  std::vector<std::thread> workers_;
  Mutex mu_;
  CondVar work_cv_;  // a task was queued, or stop_
  CondVar done_cv_;  // a batch's last task finished
  std::deque<Task> tasks_ STRATA_GUARDED_BY(mu_);
  bool stop_ STRATA_GUARDED_BY(mu_) = false;
};

}  // namespace

// ---------------------------------------------------------------------------------------
// StreamWriter

struct StreamWriter::Impl {
  std::unique_ptr<MessageWriter> writer;
};

StreamWriter::StreamWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
StreamWriter::~StreamWriter() = default;

Result<std::unique_ptr<StreamWriter>> StreamWriter::Make(OutputStream* out, SchemaPtr schema,
                                                         WriteOptions options) {
  auto impl = std::make_unique<Impl>();
  STRATA_ASSIGN_OR_RETURN(impl->writer,
                          MessageWriter::Make(out, std::move(schema), options, false));
  STRATA_RETURN_IF_ERROR(impl->writer->WriteSchema());
  return std::unique_ptr<StreamWriter>(new StreamWriter(std::move(impl)));
}

Status StreamWriter::WriteBatch(const RecordBatch& batch, const KeyValueMetadata& batch_metadata) {
  return impl_->writer->WriteBatch(batch, batch_metadata);
}

Status StreamWriter::Close() {
  STRATA_RETURN_IF_ERROR(impl_->writer->WriteEndOfStream());
  return impl_->writer->Finish();
}

// ---------------------------------------------------------------------------------------
// FileWriter

struct FileWriter::Impl {
  std::unique_ptr<MessageWriter> writer;
};

FileWriter::FileWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
FileWriter::~FileWriter() = default;

Result<std::unique_ptr<FileWriter>> FileWriter::Make(OutputStream* out, SchemaPtr schema,
                                                     WriteOptions options) {
  auto impl = std::make_unique<Impl>();
  STRATA_ASSIGN_OR_RETURN(impl->writer, MessageWriter::Make(out, std::move(schema), options, true));
  STRATA_RETURN_IF_ERROR(impl->writer->WriteFileHeader());
  return std::unique_ptr<FileWriter>(new FileWriter(std::move(impl)));
}

Status FileWriter::WriteBatch(const RecordBatch& batch, const KeyValueMetadata& batch_metadata) {
  return impl_->writer->WriteBatch(batch, batch_metadata);
}

Status FileWriter::Close(const KeyValueMetadata& footer_metadata) {
  // The end-of-stream marker keeps the file readable by stream readers that skip the magic.
  STRATA_RETURN_IF_ERROR(impl_->writer->WriteEndOfStream());
  STRATA_RETURN_IF_ERROR(impl_->writer->WriteFooterAndMagic(footer_metadata));
  return impl_->writer->Finish();
}

int FileWriter::num_batches() const { return impl_->writer->num_batches(); }

// ---------------------------------------------------------------------------------------
// Convenience

namespace {

int64_t IpcBufferBytes(const ArrayData& data) {
  int64_t n = 0;
  for (const Buffer& buffer : data.buffers) n += buffer.size() + 64;  // + alignment padding
  for (const ArrayDataPtr& child : data.children) n += IpcBufferBytes(*child);
  if (data.dictionary != nullptr) n += IpcBufferBytes(*data.dictionary);
  return n;
}

// The uncompressed size of `batches` in IPC, roughly (slices count their whole buffers):
// the output buffer is reserved once instead of doubling and copying as it grows.
int64_t EstimateIpcBytes(const std::vector<RecordBatch>& batches) {
  int64_t n = 4096;
  for (const RecordBatch& batch : batches) {
    for (int i = 0; i < batch.num_columns(); ++i) n += IpcBufferBytes(*batch.column(i).data());
  }
  return n;
}

}  // namespace

Result<Buffer> WriteStreamToBuffer(const SchemaPtr& schema, const std::vector<RecordBatch>& batches,
                                   const WriteOptions& options) {
  BufferOutputStream out(EstimateIpcBytes(batches));
  STRATA_ASSIGN_OR_RETURN(auto writer, StreamWriter::Make(&out, schema, options));
  for (const RecordBatch& batch : batches) STRATA_RETURN_IF_ERROR(writer->WriteBatch(batch));
  STRATA_RETURN_IF_ERROR(writer->Close());
  return out.Finish();
}

Result<Buffer> WriteFileToBuffer(const SchemaPtr& schema, const std::vector<RecordBatch>& batches,
                                 const WriteOptions& options) {
  BufferOutputStream out(EstimateIpcBytes(batches));
  STRATA_ASSIGN_OR_RETURN(auto writer, FileWriter::Make(&out, schema, options));
  for (const RecordBatch& batch : batches) STRATA_RETURN_IF_ERROR(writer->WriteBatch(batch));
  STRATA_RETURN_IF_ERROR(writer->Close());
  return out.Finish();
}

}  // namespace strata::ipc
