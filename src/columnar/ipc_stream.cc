// Byte sinks and sources for the IPC readers and writers: in-memory and file output
// streams, and random-access sources over buffers, object stores and mapped files.
#include <fmt/format.h>

#include <optional>

#include "io/file_system.h"
#include "strata/ipc.h"
#include "util/mutex.h"

namespace strata::ipc {

// ---------------------------------------------------------------------------------------
// Output streams

Status BufferOutputStream::Write(std::string_view bytes) {
  if (closed_) return Status::InvalidArgument("write to a closed BufferOutputStream");
  builder_.Append(bytes.data(), static_cast<int64_t>(bytes.size()));
  return Status::OK();
}

Status BufferOutputStream::Close() {
  closed_ = true;
  return Status::OK();
}

namespace {

// Buffers small writes so that each Append to the file is at least kChunk bytes.
class FileOutputStream final : public OutputStream {
 public:
  static constexpr size_t kChunk = 256 << 10;

  FileOutputStream(std::unique_ptr<io::WritableFile> file, FileOutputOptions options)
      : file_(std::move(file)), options_(options) {
    pending_.reserve(kChunk);
  }

  Status Write(std::string_view bytes) override {
    if (file_ == nullptr) return Status::InvalidArgument("write to a closed file output stream");
    position_ += static_cast<int64_t>(bytes.size());
    if (pending_.size() + bytes.size() < kChunk) {
      pending_.append(bytes);
      return Status::OK();
    }
    STRATA_RETURN_IF_ERROR(Flush());
    if (bytes.size() >= kChunk) return file_->Append(bytes);
    pending_.append(bytes);
    return Status::OK();
  }

  int64_t Tell() const override { return position_; }

  Status Flush() override {
    if (file_ == nullptr) return Status::InvalidArgument("flush of a closed file output stream");
    if (pending_.empty()) return Status::OK();
    Status st = file_->Append(pending_);
    pending_.clear();
    return st;
  }

  Status Close() override {
    if (file_ == nullptr) return Status::OK();
    Status st = Flush();
    if (st.ok() && options_.sync_on_close) st = file_->Sync();
    Status closed = file_->Close();
    file_.reset();
    return st.ok() ? closed : st;
  }

 private:
  std::unique_ptr<io::WritableFile> file_;
  FileOutputOptions options_;
  std::string pending_;
  int64_t position_ = 0;
};

}  // namespace

Result<std::unique_ptr<OutputStream>> OpenFileOutputStream(const std::string& path,
                                                           FileOutputOptions options,
                                                           std::shared_ptr<io::FileSystem> fs) {
  if (fs == nullptr) fs = io::PosixFileSystem();
  STRATA_ASSIGN_OR_RETURN(auto file, fs->NewWritableFile(path, io::OpenMode::kCreateOrTruncate));
  return std::unique_ptr<OutputStream>(new FileOutputStream(std::move(file), options));
}

// ---------------------------------------------------------------------------------------
// Sources

namespace {

Status CheckRange(int64_t offset, int64_t length) {
  if (offset < 0 || length < 0) {
    return Status::InvalidArgument(
        fmt::format("read at offset {} of length {}: negative offset or length", offset, length));
  }
  return Status::OK();
}

class BufferSource final : public RandomAccessSource {
 public:
  explicit BufferSource(Buffer buffer) : buffer_(std::move(buffer)) {}

  Result<int64_t> Size() override { return buffer_.size(); }

  Result<Buffer> ReadAt(int64_t offset, int64_t length) override {
    STRATA_RETURN_IF_ERROR(CheckRange(offset, length));
    if (offset >= buffer_.size()) return Buffer();
    return buffer_.Slice(offset, std::min(length, buffer_.size() - offset));
  }

 private:
  Buffer buffer_;
};

class ObjectStoreSource final : public RandomAccessSource {
 public:
  ObjectStoreSource(std::shared_ptr<ObjectStore> store, std::string key)
      : store_(std::move(store)), key_(std::move(key)) {}

  Result<int64_t> Size() override {
    {
      MutexLock lock(mu_);
      if (size_.has_value()) return *size_;
    }
    // Looked up without the lock (no lock across I/O); racing lookups agree.
    STRATA_ASSIGN_OR_RETURN(int64_t size, store_->Size(key_));
    MutexLock lock(mu_);
    size_ = size;
    return size;
  }

  Result<Buffer> ReadAt(int64_t offset, int64_t length) override {
    STRATA_RETURN_IF_ERROR(CheckRange(offset, length));
    if (length == 0) return Buffer();
    STRATA_ASSIGN_OR_RETURN(int64_t size, Size());
    if (offset >= size) return Buffer();
    return store_->GetRange(key_, offset, std::min(length, size - offset));
  }

 private:
  std::shared_ptr<ObjectStore> store_;
  std::string key_;
  Mutex mu_;
  std::optional<int64_t> size_ STRATA_GUARDED_BY(mu_);
};

}  // namespace

std::shared_ptr<RandomAccessSource> SourceFromBuffer(Buffer buffer) {
  return std::make_shared<BufferSource>(std::move(buffer));
}

std::shared_ptr<RandomAccessSource> SourceFromObjectStore(std::shared_ptr<ObjectStore> store,
                                                          std::string key) {
  return std::make_shared<ObjectStoreSource>(std::move(store), std::move(key));
}

Result<std::shared_ptr<RandomAccessSource>> SourceFromFile(const std::string& path,
                                                           std::shared_ptr<io::FileSystem> fs) {
  if (fs == nullptr) fs = io::PosixFileSystem();
  STRATA_ASSIGN_OR_RETURN(Buffer mapped, fs->MapFile(path));
  return SourceFromBuffer(std::move(mapped));
}

}  // namespace strata::ipc
