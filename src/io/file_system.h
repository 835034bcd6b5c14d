// FileSystem: the internal interface every strata file access goes through (LevelDB's Env,
// RocksDB's FileSystem, reduced to what strata needs), so tests can swap in an in-memory
// file system, inject faults and simulate crashes.
//
// Paths are plain strings handed to the implementation unchanged (absolute paths in
// practice). Errors:
// - NotFound: the path (or a parent directory) does not exist, or names a directory where
//   a file is expected (reads, FileSize, DeleteFile).
// - AlreadyExists: LinkFile / kCreateNew onto an existing name.
// - InvalidArgument: a negative or out-of-range offset, a call on a closed file.
// - IOError: anything else; the message names the operation, the path and the errno text.
//   Out of space is IOError whose message contains kNoSpaceMessage (see IsNoSpace()).
// Symbolic links: ListFiles and RemoveTree never descend through one, and LinkStat tells a
// link from what it points at; opening a path follows links (a user's input file may be
// one). The FileObjectStore refuses links inside a store itself (file_object_store.h).
// Durability follows POSIX: data is durable after WritableFile::Sync(); a new, renamed,
// linked or removed directory entry is durable after SyncDir() of the directory holding it.
// Thread safety: a FileSystem may be used from many threads; a WritableFile from one at a
// time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/buffer.h"
#include "strata/object_store.h"
#include "strata/status.h"

namespace strata::io {

// Text in every out-of-space error, real (ENOSPC) or injected.
inline constexpr std::string_view kNoSpaceMessage = "no space left on device";
// True for an IOError that reports a full device.
bool IsNoSpace(const Status& status);

// A file open for appending. Writes are unbuffered: each Append reaches the OS.
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  WritableFile(const WritableFile&) = delete;
  WritableFile& operator=(const WritableFile&) = delete;

  virtual Status Append(std::string_view data) = 0;
  // Makes the appended data durable (fdatasync). Does not make the file's name durable.
  virtual Status Sync() = 0;
  // Releases the handle; later calls fail. The destructor closes too, dropping errors.
  virtual Status Close() = 0;
  virtual const std::string& path() const = 0;

 protected:
  WritableFile() = default;
};

enum class OpenMode {
  kCreateOrTruncate,  // create, or empty an existing file
  kCreateNew,         // create; AlreadyExists if the name exists (O_EXCL)
  kAppend,            // create, or append to an existing file
};

struct FileStatus {
  bool is_directory = false;
  bool is_symlink = false;  // set only by LinkStat, for a symbolic link itself
  int64_t size = 0;         // bytes, for regular files
};

// A regular file found by ListFiles: its path relative to the listed directory.
struct FileEntry {
  std::string relative_path;
  int64_t size = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // The parent directory must exist (NotFound otherwise).
  virtual Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                                OpenMode mode) = 0;

  // The whole file.
  virtual Result<Buffer> ReadFile(const std::string& path) = 0;
  // Up to `length` bytes from `offset`: fewer at the end of the file, none when offset is
  // the size. InvalidArgument when offset or length is negative or offset > size.
  virtual Result<Buffer> ReadRange(const std::string& path, int64_t offset, int64_t length) = 0;
  // The whole file, mapped (or, without mmap, read): the Buffer's owner unmaps. The caller
  // must not let the file be truncated or rewritten in place while the Buffer lives.
  virtual Result<Buffer> MapFile(const std::string& path) = 0;

  // Follows a symbolic link at `path` (stat(2)).
  virtual Result<FileStatus> Stat(const std::string& path) = 0;
  // Describes `path` itself, not what a symbolic link there points at (lstat(2)). File
  // systems without links answer like Stat.
  virtual Result<FileStatus> LinkStat(const std::string& path) { return Stat(path); }
  // `path`'s status in one lookup that refuses symbolic links in every component of it
  // (openat2 RESOLVE_NO_SYMLINKS), or nullopt when that cannot be told this way — a link on
  // the way, or a system without the call — and the caller must walk the path with
  // LinkStat. NotFound when a component is missing. The default always answers nullopt.
  virtual Result<std::optional<FileStatus>> StatWithoutLinks(const std::string& path) {
    (void)path;
    return std::optional<FileStatus>();
  }
  // The whole file at `path`, opened in one lookup that refuses symbolic links in every
  // component of it (as StatWithoutLinks) and read, or mapped when it is larger than
  // `map_above` bytes (as MapFile). nullopt when that cannot be told this way, and the caller
  // must walk the path with LinkStat. NotFound when a component is missing or `path` is not a
  // regular file (a directory, a FIFO, a device). The default always answers nullopt.
  virtual Result<std::optional<Buffer>> ReadFileWithoutLinks(const std::string& path,
                                                             int64_t map_above) {
    (void)path;
    (void)map_above;
    return std::optional<Buffer>();
  }
  // Size of a regular file.
  Result<int64_t> FileSize(const std::string& path);
  // True when something (file or directory) exists at `path`.
  Result<bool> Exists(const std::string& path);

  // Atomically points `to` at `from`'s file, replacing any file at `to` (rename(2)).
  virtual Status RenameFile(const std::string& from, const std::string& to) = 0;
  // Makes `to` a second name of `from`'s file; AlreadyExists if `to` exists (link(2)).
  virtual Status LinkFile(const std::string& from, const std::string& to) = 0;
  virtual Status DeleteFile(const std::string& path) = 0;

  // mkdir -p. OK when the directory exists. Appends each directory it created, parents
  // first, to `created` when given.
  virtual Status CreateDirs(const std::string& path,
                            std::vector<std::string>* created = nullptr) = 0;
  // Removes an empty directory (IOError "Directory not empty" otherwise).
  virtual Status DeleteDir(const std::string& path) = 0;
  // rm -rf: removes `path` and everything below it. OK when nothing is there.
  virtual Status RemoveTree(const std::string& path) = 0;
  // Makes the directory's entries (creates, renames, links, unlinks) durable.
  virtual Status SyncDir(const std::string& path) = 0;
  // Every regular file below `dir`, recursively, sorted by relative path. NotFound when
  // `dir` does not exist. Entries removed while listing are skipped. Symbolic links below
  // `dir` are neither listed nor followed (`dir` itself may be one).
  virtual Result<std::vector<FileEntry>> ListFiles(const std::string& dir) = 0;
  // ListFiles of `dir` opened in one lookup that refuses symbolic links in every component of
  // it (as StatWithoutLinks), or nullopt when that cannot be told this way and the caller
  // must walk the path with LinkStat. The default always answers nullopt.
  virtual Result<std::optional<std::vector<FileEntry>>> ListFilesWithoutLinks(
      const std::string& dir) {
    (void)dir;
    return std::optional<std::vector<FileEntry>>();
  }

  // Watches the entries of the directory at `path` (ObjectStore::Watch, ChangeWatch::Poll),
  // opened without following symbolic links. NotFound when it is missing; NotSupported when
  // this file system cannot tell every change (the default).
  virtual Result<std::unique_ptr<ChangeWatch>> WatchDir(const std::string& path) {
    return Status::NotSupported("cannot watch '" + path + "' for changes on this file system");
  }

  // Replaces the contents of the file at `path` with `data` (not atomically: create or
  // truncate, append, Sync when `sync`, close).
  Status WriteFile(const std::string& path, std::string_view data, bool sync);
};

// The real file system (POSIX syscalls). Shared, stateless.
std::shared_ptr<FileSystem> PosixFileSystem();

// Advice only: asks the kernel to start reading, in the background, the file pages behind
// bytes [offset, offset + length) of `buffer` when the buffer is a file mapping (MapFile), so
// that touching them later finds them in memory. A reader that knows which scattered ranges
// of a mapped file it will touch next issues their reads together instead of waiting for
// each page fault in turn. The call submits the reads and does not wait for them (it may
// wait for the file system's block map); for other memory it does nothing useful. Returns
// whether the kernel took the advice (false for an empty range; callers may ignore it).
// REQUIRES: 0 <= offset <= offset + length <= buffer.size().
bool AdviseWillNeed(const Buffer& buffer, int64_t offset, int64_t length);

// "dir/name"; `name` must be relative. No '/' is doubled.
std::string JoinPath(std::string_view dir, std::string_view name);
// Everything before the last '/': "/a/b" -> "/a", "/a" -> "/", "a" -> "".
std::string_view ParentDir(std::string_view path);

}  // namespace strata::io
