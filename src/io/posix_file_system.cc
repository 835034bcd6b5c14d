// PosixFileSystem: FileSystem over POSIX syscalls. Every call retries on EINTR, opens with
// O_CLOEXEC, and reports failures as Status naming the operation, path and errno text.
#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/openat2.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "io/file_system.h"
#include "io/inotify_watch.h"

namespace strata::io {
namespace {

std::string ErrnoText(int err) {
  const char* desc = strerrordesc_np(err);  // thread safe, unlike strerror
  return desc != nullptr ? std::string(desc) : fmt::format("errno {}", err);
}

// Maps errno to a Status: ENOENT/ENOTDIR -> NotFound, EEXIST -> AlreadyExists, ENOSPC ->
// IOError saying kNoSpaceMessage, anything else -> IOError.
Status ErrnoStatus(std::string_view op, std::string_view path, int err) {
  std::string what = fmt::format("{} '{}'", op, path);
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return Status::NotFound(fmt::format("{}: {}", what, ErrnoText(err)));
    case EEXIST:
      return Status::AlreadyExists(fmt::format("{}: {}", what, ErrnoText(err)));
    case ENOSPC:
    case EDQUOT:
      return Status::IOError(fmt::format("{}: {} ({})", what, kNoSpaceMessage, ErrnoText(err)));
    default:
      return Status::IOError(fmt::format("{}: {}", what, ErrnoText(err)));
  }
}

// Retries `call` while it fails with EINTR; returns its last result.
template <typename Call>
auto RetryOnEintr(Call call) {
  auto rc = call();
  while (rc == -1 && errno == EINTR) rc = call();
  return rc;
}

// Closes on scope exit; close(2) errors on read-only descriptors carry no information.
class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  ~ScopedFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// O_NONBLOCK: a FIFO in the way must not hang the open (RegularFileSize then refuses it).
Result<int> OpenForRead(const std::string& path) {
  int fd = RetryOnEintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK); });
  if (fd < 0) return ErrnoStatus("open", path, errno);
  return fd;
}

// Size of the regular file open at `fd`; NotFound for a directory, a FIFO, a device or a
// socket (none of them is a file to read).
Result<int64_t> RegularFileSize(int fd, const std::string& path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return ErrnoStatus("fstat", path, errno);
  if (S_ISDIR(st.st_mode)) return Status::NotFound(fmt::format("'{}' is a directory", path));
  if (!S_ISREG(st.st_mode)) {
    return Status::NotFound(fmt::format("'{}' is not a regular file", path));
  }
  return static_cast<int64_t>(st.st_size);
}

// Reads up to `length` bytes at `offset`; stops early at end of file.
Result<Buffer> PreadBuffer(int fd, const std::string& path, int64_t offset, int64_t length) {
  BufferBuilder builder;
  builder.ResizeForOverwrite(length);
  int64_t done = 0;
  while (done < length) {
    ssize_t n = RetryOnEintr([&] {
      return ::pread(fd, builder.mutable_data() + done, static_cast<size_t>(length - done),
                     static_cast<off_t>(offset + done));
    });
    if (n < 0) return ErrnoStatus("read", path, errno);
    if (n == 0) break;
    done += n;
  }
  builder.Resize(done);
  return builder.Finish();
}

// Maps `size` bytes of the file open at `fd`; the Buffer's owner unmaps (the mapping outlives
// the descriptor).
Result<Buffer> MapBuffer(int fd, const std::string& path, int64_t size) {
  if (size == 0) return Buffer::Copy("", 0);  // mmap rejects empty mappings
  void* addr = ::mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_SHARED, fd, 0);
  if (addr == MAP_FAILED) return ErrnoStatus("mmap", path, errno);
  std::shared_ptr<const void> owner(
      addr, [size](const void* p) { ::munmap(const_cast<void*>(p), static_cast<size_t>(size)); });
  return Buffer(static_cast<const uint8_t*>(addr), size, std::move(owner));
}

// openat2(2) of `path` with `flags`, refusing symbolic links in every component: the
// descriptor, or -1 when the call cannot tell — ELOOP (a link on the way), or no usable
// openat2 (ENOSYS; EPERM under seccomp; EINVAL or E2BIG from a kernel that does not know a
// flag). Any other failure (a missing component, EACCES, EMFILE, ...) is the caller's error.
Result<int> OpenWithoutLinks(const std::string& path, uint64_t flags) {
  struct open_how how {};
  how.flags = flags;
  how.resolve = RESOLVE_NO_SYMLINKS;
  const int fd = static_cast<int>(RetryOnEintr(
      [&] { return ::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof(how)); }));
  if (fd >= 0) return fd;
  const int err = errno;
  if (err == ELOOP || err == ENOSYS || err == EPERM || err == EINVAL || err == E2BIG) return -1;
  return ErrnoStatus("openat2", path, err);
}

class PosixWritableFile final : public WritableFile {
  static constexpr size_t kWritebackChunk = size_t{8} << 20;

 public:
  PosixWritableFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status Append(std::string_view data) override {
    if (fd_ < 0) return Closed("append");
    const char* p = data.data();
    size_t left = data.size();
    while (left > 0) {
      const size_t chunk = std::min(left, kWritebackChunk);
      size_t chunk_left = chunk;
      while (chunk_left > 0) {
        ssize_t n = RetryOnEintr([&] { return ::write(fd_, p, chunk_left); });
        if (n < 0) return ErrnoStatus("write", path_, errno);
        p += n;
        chunk_left -= static_cast<size_t>(n);
      }
      left -= chunk;
      // A large object (a data file, a generation) starts its writeback chunk by chunk
      // instead of leaving everything dirty for the final fdatasync: the disk works while
      // the rest is copied, and a concurrent WAL fdatasync (whose journal commit can wait
      // for other files' data on ext4) never queues behind hundreds of MiB. Advisory: an
      // error here changes nothing, the Sync that follows is what makes data durable.
      if (chunk == kWritebackChunk) {
        ::sync_file_range(fd_, 0, 0, SYNC_FILE_RANGE_WRITE);
      }
    }
    return Status::OK();
  }

  Status Sync() override {
    if (fd_ < 0) return Closed("sync");
    if (RetryOnEintr([&] { return ::fdatasync(fd_); }) != 0) {
      return ErrnoStatus("fdatasync", path_, errno);
    }
    return Status::OK();
  }

  Status Close() override {
    if (fd_ < 0) return Closed("close");
    int fd = std::exchange(fd_, -1);
    // Linux always releases the descriptor, even on EINTR, so close is never retried.
    if (::close(fd) != 0 && errno != EINTR) return ErrnoStatus("close", path_, errno);
    return Status::OK();
  }

  const std::string& path() const override { return path_; }

 private:
  Status Closed(std::string_view op) const {
    return Status::InvalidArgument(fmt::format("{} '{}': file is closed", op, path_));
  }

  int fd_;
  std::string path_;
};

class PosixFileSystemImpl final : public FileSystem {
 public:
  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                        OpenMode mode) override {
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC;
    switch (mode) {
      case OpenMode::kCreateOrTruncate:
        flags |= O_TRUNC;
        break;
      case OpenMode::kCreateNew:
        flags |= O_EXCL;
        break;
      case OpenMode::kAppend:
        flags |= O_APPEND;
        break;
    }
    int fd = RetryOnEintr([&] { return ::open(path.c_str(), flags, 0644); });
    if (fd < 0) return ErrnoStatus("open for write", path, errno);
    return std::unique_ptr<WritableFile>(std::make_unique<PosixWritableFile>(fd, path));
  }

  Result<Buffer> ReadFile(const std::string& path) override {
    STRATA_ASSIGN_OR_RETURN(int raw_fd, OpenForRead(path));
    ScopedFd fd(raw_fd);
    STRATA_ASSIGN_OR_RETURN(int64_t size, RegularFileSize(fd.get(), path));
    return PreadBuffer(fd.get(), path, 0, size);
  }

  Result<Buffer> ReadRange(const std::string& path, int64_t offset, int64_t length) override {
    if (offset < 0 || length < 0) {
      return Status::InvalidArgument(
          fmt::format("read '{}': negative offset {} or length {}", path, offset, length));
    }
    STRATA_ASSIGN_OR_RETURN(int raw_fd, OpenForRead(path));
    ScopedFd fd(raw_fd);
    STRATA_ASSIGN_OR_RETURN(int64_t size, RegularFileSize(fd.get(), path));
    if (offset > size) {
      return Status::InvalidArgument(
          fmt::format("read '{}': offset {} is past the end ({} bytes)", path, offset, size));
    }
    return PreadBuffer(fd.get(), path, offset, std::min(length, size - offset));
  }

  Result<Buffer> MapFile(const std::string& path) override {
    STRATA_ASSIGN_OR_RETURN(int raw_fd, OpenForRead(path));
    ScopedFd fd(raw_fd);
    STRATA_ASSIGN_OR_RETURN(int64_t size, RegularFileSize(fd.get(), path));
    return MapBuffer(fd.get(), path, size);
  }

  Result<std::optional<Buffer>> ReadFileWithoutLinks(const std::string& path,
                                                     int64_t map_above) override {
    // O_NONBLOCK: a FIFO in the way must not hang the open (RegularFileSize refuses it).
    STRATA_ASSIGN_OR_RETURN(int raw_fd, OpenWithoutLinks(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (raw_fd < 0) return std::optional<Buffer>();
    ScopedFd fd(raw_fd);
    STRATA_ASSIGN_OR_RETURN(int64_t size, RegularFileSize(fd.get(), path));
    Result<Buffer> data =
        size > map_above ? MapBuffer(fd.get(), path, size) : PreadBuffer(fd.get(), path, 0, size);
    if (!data.ok()) return data.status();
    return std::optional<Buffer>(std::move(*data));
  }

  Result<FileStatus> Stat(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) return ErrnoStatus("stat", path, errno);
    FileStatus out;
    out.is_directory = S_ISDIR(st.st_mode);
    out.size = static_cast<int64_t>(st.st_size);
    return out;
  }

  Result<std::optional<FileStatus>> StatWithoutLinks(const std::string& path) override {
    STRATA_ASSIGN_OR_RETURN(const int fd, OpenWithoutLinks(path, O_PATH | O_CLOEXEC));
    if (fd < 0) return std::optional<FileStatus>();
    struct stat st;
    const int rc = ::fstat(fd, &st);
    const int err = errno;
    ::close(fd);
    if (rc != 0) return ErrnoStatus("fstat", path, err);
    FileStatus out;
    out.is_directory = S_ISDIR(st.st_mode);
    out.size = static_cast<int64_t>(st.st_size);
    return std::optional<FileStatus>(out);
  }

  Result<FileStatus> LinkStat(const std::string& path) override {
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) return ErrnoStatus("lstat", path, errno);
    FileStatus out;
    out.is_directory = S_ISDIR(st.st_mode);
    out.is_symlink = S_ISLNK(st.st_mode);
    out.size = static_cast<int64_t>(st.st_size);
    return out;
  }

  Status RenameFile(const std::string& from, const std::string& to) override {
    if (RetryOnEintr([&] { return ::rename(from.c_str(), to.c_str()); }) != 0) {
      return ErrnoStatus("rename", fmt::format("{}' to '{}", from, to), errno);
    }
    return Status::OK();
  }

  Status LinkFile(const std::string& from, const std::string& to) override {
    if (RetryOnEintr([&] { return ::link(from.c_str(), to.c_str()); }) != 0) {
      return ErrnoStatus("link", fmt::format("{}' to '{}", from, to), errno);
    }
    return Status::OK();
  }

  Status DeleteFile(const std::string& path) override {
    if (RetryOnEintr([&] { return ::unlink(path.c_str()); }) != 0) {
      if (errno == EISDIR) return Status::NotFound(fmt::format("'{}' is a directory", path));
      return ErrnoStatus("unlink", path, errno);
    }
    return Status::OK();
  }

  Status CreateDirs(const std::string& path, std::vector<std::string>* created) override {
    struct stat st;
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return Status::OK();
    size_t pos = 0;
    while (pos < path.size()) {
      size_t slash = path.find('/', pos + 1);
      if (slash == std::string::npos) slash = path.size();
      std::string dir = path.substr(0, slash);
      pos = slash;
      if (dir.empty() || dir.back() == '/') continue;  // leading or doubled '/'
      if (RetryOnEintr([&] { return ::mkdir(dir.c_str(), 0755); }) == 0) {
        if (created != nullptr) created->push_back(dir);
        continue;
      }
      int err = errno;
      if (err != EEXIST) return ErrnoStatus("mkdir", dir, err);
      if (::stat(dir.c_str(), &st) != 0) return ErrnoStatus("stat", dir, errno);
      if (!S_ISDIR(st.st_mode)) {
        return Status::IOError(fmt::format("mkdir '{}': {}", dir, ErrnoText(ENOTDIR)));
      }
    }
    return Status::OK();
  }

  Status DeleteDir(const std::string& path) override {
    if (RetryOnEintr([&] { return ::rmdir(path.c_str()); }) != 0) {
      return ErrnoStatus("rmdir", path, errno);
    }
    return Status::OK();
  }

  Status RemoveTree(const std::string& path) override {
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) return Status::OK();
      return ErrnoStatus("lstat", path, errno);
    }
    if (!S_ISDIR(st.st_mode)) {
      if (::unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoStatus("unlink", path, errno);
      return Status::OK();
    }
    std::vector<std::string> children;
    STRATA_RETURN_IF_ERROR(ReadDirNames(path, &children));
    for (const std::string& child : children) {
      STRATA_RETURN_IF_ERROR(RemoveTree(JoinPath(path, child)));
    }
    if (::rmdir(path.c_str()) != 0 && errno != ENOENT) return ErrnoStatus("rmdir", path, errno);
    return Status::OK();
  }

  Status SyncDir(const std::string& path) override {
    int raw_fd =
        RetryOnEintr([&] { return ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); });
    if (raw_fd < 0) return ErrnoStatus("open directory", path, errno);
    ScopedFd fd(raw_fd);
    if (RetryOnEintr([&] { return ::fsync(fd.get()); }) != 0) {
      return ErrnoStatus("fsync directory", path, errno);
    }
    return Status::OK();
  }

  Result<std::vector<FileEntry>> ListFiles(const std::string& dir) override {
    // Follows a link at `dir` itself (open without O_NOFOLLOW), none below it.
    const int fd =
        RetryOnEintr([&] { return ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); });
    if (fd < 0) return ErrnoStatus("open directory", dir, errno);
    return ListOpenDirectory(fd, dir);
  }

  Result<std::unique_ptr<ChangeWatch>> WatchDir(const std::string& path) override {
    Result<int> fd = OpenWithoutLinks(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (!fd.ok() && !fd.status().IsNotFound()) {
      return Status::NotSupported(
          fmt::format("cannot watch '{}': {}", path, fd.status().message()));
    }
    if (!fd.ok()) return fd.status();
    if (*fd < 0) {
      return Status::NotSupported(
          fmt::format("cannot watch '{}': a symbolic link on the way, or no openat2", path));
    }
    const ScopedFd dir(*fd);
    return WatchDirectory(dir.get(), path);
  }

  Result<std::optional<std::vector<FileEntry>>> ListFilesWithoutLinks(
      const std::string& dir) override {
    STRATA_ASSIGN_OR_RETURN(int fd, OpenWithoutLinks(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd < 0) return std::optional<std::vector<FileEntry>>();
    STRATA_ASSIGN_OR_RETURN(std::vector<FileEntry> files, ListOpenDirectory(fd, dir));
    return std::optional<std::vector<FileEntry>>(std::move(files));
  }

 private:
  // ListFiles of the directory open at `fd` (owned).
  static Result<std::vector<FileEntry>> ListOpenDirectory(int fd, const std::string& dir) {
    std::vector<FileEntry> out;
    // One getdents64 buffer for the whole walk: a frame per level holds only its directory.
    std::vector<char> buffer(kDirentBufferBytes);
    STRATA_RETURN_IF_ERROR(ListInto(fd, dir, "", 0, buffer, &out));
    std::sort(out.begin(), out.end(), [](const FileEntry& a, const FileEntry& b) {
      return a.relative_path < b.relative_path;
    });
    return out;
  }

  // The names in `dir`, without "." and "..". A directory that vanished reads as empty.
  static Status ReadDirNames(const std::string& dir, std::vector<std::string>* names) {
    DIR* d = ::opendir(dir.c_str());  // glibc opens it O_CLOEXEC
    if (d == nullptr) {
      if (errno == ENOENT) return Status::OK();
      return ErrnoStatus("opendir", dir, errno);
    }
    errno = 0;
    // readdir is unsafe only for one stream shared between threads; this one is local.
    while (struct dirent* entry = ::readdir(d)) {  // NOLINT(concurrency-mt-unsafe)
      std::string_view name = entry->d_name;
      if (name != "." && name != "..") names->emplace_back(name);
      errno = 0;
    }
    int err = errno;
    ::closedir(d);
    if (err != 0) return ErrnoStatus("readdir", dir, err);
    return Status::OK();
  }

  static constexpr size_t kDirentBufferBytes = 8192;
  // A listing holds a descriptor per level; no store nests anywhere near this deep.
  static constexpr int kMaxListDepth = 64;

  // Appends the regular files below the directory open at `fd` (which this call owns and
  // closes; `path` names it in errors, `depth` counts levels below the listed directory) to
  // `out`, their paths prefixed by `relative`. Entries are read with getdents64 into the
  // caller's `buffer` (no DIR stream to allocate) and looked up relative to `fd` without
  // following a link: a symbolic link is neither a directory to descend into nor a file to
  // list, so nothing outside the listed directory is ever reached through one. Entries
  // removed while listing are skipped.
  static Status ListInto(int raw_fd, const std::string& path, const std::string& relative,
                         int depth, std::vector<char>& buffer, std::vector<FileEntry>* out) {
    ScopedFd fd(raw_fd);
    if (depth > kMaxListDepth) {
      return Status::IOError(
          fmt::format("list '{}': directories nested more than {} deep", path, kMaxListDepth));
    }
    std::vector<std::string> subdirs;  // listed once this directory is read
    constexpr size_t kNameOffset = offsetof(struct dirent64, d_name);
    for (;;) {
      const ssize_t n =
          RetryOnEintr([&] { return ::getdents64(fd.get(), buffer.data(), buffer.size()); });
      if (n < 0) return ErrnoStatus("getdents64", path, errno);
      if (n == 0) break;
      for (size_t pos = 0; pos < static_cast<size_t>(n);) {
        const char* record = buffer.data() + pos;
        uint16_t length = 0;
        unsigned char type = DT_UNKNOWN;
        std::memcpy(&length, record + offsetof(struct dirent64, d_reclen), sizeof length);
        std::memcpy(&type, record + offsetof(struct dirent64, d_type), sizeof type);
        pos += length;
        const char* name_z = record + kNameOffset;
        const std::string_view name(name_z);
        if (name == "." || name == ".." || type == DT_LNK) continue;
        if (type == DT_DIR) {
          subdirs.emplace_back(name);
          continue;
        }
        // A regular file's size, or what an entry of unknown type is.
        struct stat st;
        if (::fstatat(fd.get(), name_z, &st, AT_SYMLINK_NOFOLLOW) != 0) {
          const int err = errno;
          if (err == ENOENT) continue;
          return ErrnoStatus("lstat", JoinPath(path, name), err);
        }
        if (S_ISDIR(st.st_mode)) {
          subdirs.emplace_back(name);
        } else if (S_ISREG(st.st_mode)) {
          out->push_back({relative.empty() ? std::string(name) : JoinPath(relative, name),
                          static_cast<int64_t>(st.st_size)});
        }
      }
    }
    for (const std::string& name : subdirs) {
      const std::string child = JoinPath(path, name);
      const int child_fd = RetryOnEintr([&] {
        return ::openat(fd.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      });
      if (child_fd < 0) {
        const int err = errno;
        // Removed (or replaced by something else) since it was read: skipped.
        if (err == ENOENT || err == ENOTDIR || err == ELOOP) continue;
        return ErrnoStatus("open directory", child, err);
      }
      STRATA_RETURN_IF_ERROR(ListInto(child_fd, child,
                                      relative.empty() ? name : JoinPath(relative, name), depth + 1,
                                      buffer, out));
    }
    return Status::OK();
  }
};

}  // namespace

bool AdviseWillNeed(const Buffer& buffer, int64_t offset, int64_t length) {
  assert(offset >= 0 && length >= 0 && offset + length <= buffer.size());
  if (length <= 0) return false;
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uint8_t* start = buffer.data() + offset;
  const size_t misaligned = reinterpret_cast<uintptr_t>(start) & (page - 1);
  // A mapping starts on a page boundary, so the page of `start` lies inside it (madvise
  // rounds the end up itself).
  void* begin = const_cast<uint8_t*>(start - misaligned);
  return ::madvise(begin, misaligned + static_cast<size_t>(length), MADV_WILLNEED) == 0;
}

std::shared_ptr<FileSystem> PosixFileSystem() {
  static const std::shared_ptr<FileSystem> fs = std::make_shared<PosixFileSystemImpl>();
  return fs;
}

}  // namespace strata::io
