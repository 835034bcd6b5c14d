// MemoryFileSystem: a FileSystem kept in memory that knows which bytes and which directory
// entries are durable, so tests can simulate a power loss with SimulateCrash().
//
// Model (what a careful POSIX file system guarantees, and no more):
// - A file is an inode shared by its names (hard links). Its data is durable up to the
//   last WritableFile::Sync(); bytes appended later are lost on a crash, and a file
//   truncated by kCreateOrTruncate loses its old contents.
// - A directory entry (a file's or a subdirectory's name) is durable once SyncDir() of
//   the directory holding it ran after the entry was created, renamed, linked or unlinked.
//   Until then a crash restores the entry as of the last SyncDir: a rename is undone, an
//   unlinked name comes back, a new name disappears. An entry also disappears when any
//   directory above it is not durable.
// Paths must be absolute; "." segments and repeated '/' are ignored, ".." is rejected.
// "/" always exists. Directories cannot be renamed (NotSupported).
// Thread safety: every method may be called concurrently (one mutex). WritableFiles must
// not outlive the MemoryFileSystem; after SimulateCrash() discard the ones still open.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "io/file_system.h"
#include "util/mutex.h"

namespace strata::io {

class MemoryFileSystem final : public FileSystem {
 public:
  MemoryFileSystem();
  MemoryFileSystem(const MemoryFileSystem&) = delete;
  MemoryFileSystem& operator=(const MemoryFileSystem&) = delete;
  ~MemoryFileSystem() override;

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                        OpenMode mode) override;
  Result<Buffer> ReadFile(const std::string& path) override;
  Result<Buffer> ReadRange(const std::string& path, int64_t offset, int64_t length) override;
  // A copy of the contents (there is nothing to map).
  Result<Buffer> MapFile(const std::string& path) override;
  Result<FileStatus> Stat(const std::string& path) override;
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status LinkFile(const std::string& from, const std::string& to) override;
  Status DeleteFile(const std::string& path) override;
  Status CreateDirs(const std::string& path, std::vector<std::string>* created) override;
  Status DeleteDir(const std::string& path) override;
  Status RemoveTree(const std::string& path) override;
  Status SyncDir(const std::string& path) override;
  Result<std::vector<FileEntry>> ListFiles(const std::string& dir) override;

  // Power loss: keeps only durable entries and durable bytes (see the model above).
  void SimulateCrash() STRATA_EXCLUDES(mu_);

  // Operation counts since construction, for tests that check what a caller did.
  int64_t file_syncs() const STRATA_EXCLUDES(mu_);
  int64_t dir_syncs() const STRATA_EXCLUDES(mu_);

 private:
  class File;
  // Contents of one file; every field is guarded by the file system's mu_.
  struct Inode {
    std::string data;
    std::string synced;  // the durable prefix of an earlier `data`
  };
  using FileMap = std::map<std::string, std::shared_ptr<Inode>>;

  Result<std::shared_ptr<Inode>> FindFile(const std::string& op, const std::string& path)
      STRATA_REQUIRES(mu_);
  Result<std::string> FileContents(const std::string& op, const std::string& path)
      STRATA_EXCLUDES(mu_);
  Status CheckParentDir(const std::string& op, const std::string& path) STRATA_REQUIRES(mu_);

  mutable Mutex mu_;
  // The namespace as the running system sees it: normalized path -> inode, and directories.
  FileMap files_ STRATA_GUARDED_BY(mu_);
  std::set<std::string> dirs_ STRATA_GUARDED_BY(mu_);
  // The namespace as a crash would leave it (entries made durable by SyncDir).
  FileMap durable_files_ STRATA_GUARDED_BY(mu_);
  std::set<std::string> durable_dirs_ STRATA_GUARDED_BY(mu_);
  int64_t file_syncs_ STRATA_GUARDED_BY(mu_) = 0;
  int64_t dir_syncs_ STRATA_GUARDED_BY(mu_) = 0;
};

}  // namespace strata::io
