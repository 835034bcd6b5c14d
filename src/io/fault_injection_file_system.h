// FaultInjectionFileSystem: wraps any FileSystem (posix or memory) to fail chosen
// operations, fill the disk, and simulate a power loss (LevelDB's FaultInjectionTestEnv).
//
// Faults: FailNth(op, n) makes the n-th matching operation counted from the call fail with
// an injected IOError (nothing reaches the base file system). SetNoSpace(true) makes every
// Append fail with an IOError saying kNoSpaceMessage until SetNoSpace(false).
//
// Crash simulation: the wrapper records what is not yet durable in the base file system:
// - bytes appended through it since the file's last Sync();
// - directory entries changed through it (files created, renamed, linked, deleted,
//   directories created or removed) since the last SyncDir() of their directory, with the
//   state each name had before its first unsynced change (the old contents of a replaced
//   or deleted file are read and kept in memory).
// SimulateCrash() rolls the base file system back to the durable state: truncates files to
// their synced size, restores replaced and deleted names, removes new ones. Files and
// directories that existed before the wrapper saw them are taken as durable. Removing a
// tree restores its files but not its empty subdirectories. After a crash, discard open
// WritableFiles and reopen whatever sits on top (it may cache durable state).
//
// Thread safety: all methods may be called concurrently; metadata operations hold one
// mutex across the base call (it is a test tool; ordering matters more than speed).
// WritableFiles must not outlive the wrapper.
#pragma once

#include <array>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "io/file_system.h"
#include "util/mutex.h"

namespace strata::io {

enum class FaultOp {
  kWrite,   // WritableFile::Append
  kSync,    // WritableFile::Sync and FileSystem::SyncDir
  kRename,  // RenameFile
  kLink,    // LinkFile
};

class FaultInjectionFileSystem final : public FileSystem {
 public:
  explicit FaultInjectionFileSystem(std::shared_ptr<FileSystem> base);
  FaultInjectionFileSystem(const FaultInjectionFileSystem&) = delete;
  FaultInjectionFileSystem& operator=(const FaultInjectionFileSystem&) = delete;
  ~FaultInjectionFileSystem() override;

  // The n-th (1-based) `op` from now fails; n <= 0 disarms `op`.
  void FailNth(FaultOp op, int64_t n) STRATA_EXCLUDES(mu_);
  void SetNoSpace(bool on) STRATA_EXCLUDES(mu_);
  // Disarms every FailNth and the no-space mode.
  void ClearFaults() STRATA_EXCLUDES(mu_);
  // How many operations failed by injection so far.
  int64_t injected_faults() const STRATA_EXCLUDES(mu_);

  // Rolls the base file system back to its durable state (see above); then everything in
  // it counts as durable. An error means the base file system could not be repaired.
  Status SimulateCrash() STRATA_EXCLUDES(mu_);

  Result<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                        OpenMode mode) override;
  Result<Buffer> ReadFile(const std::string& path) override;
  Result<Buffer> ReadRange(const std::string& path, int64_t offset, int64_t length) override;
  Result<Buffer> MapFile(const std::string& path) override;
  Result<FileStatus> Stat(const std::string& path) override;
  Result<FileStatus> LinkStat(const std::string& path) override;
  Result<std::optional<FileStatus>> StatWithoutLinks(const std::string& path) override;
  Result<std::optional<Buffer>> ReadFileWithoutLinks(const std::string& path,
                                                     int64_t map_above) override;
  Result<std::optional<std::vector<FileEntry>>> ListFilesWithoutLinks(
      const std::string& dir) override;
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status LinkFile(const std::string& from, const std::string& to) override;
  Status DeleteFile(const std::string& path) override;
  Status CreateDirs(const std::string& path, std::vector<std::string>* created) override;
  Status DeleteDir(const std::string& path) override;
  Status RemoveTree(const std::string& path) override;
  Status SyncDir(const std::string& path) override;
  Result<std::vector<FileEntry>> ListFiles(const std::string& dir) override;

 private:
  class File;
  // Write progress of one file opened through the wrapper; shared by its names (links) and
  // open handles. Guarded by mu_.
  struct FileState {
    int64_t size = 0;
    int64_t synced_size = 0;
  };
  // A name's state before its first change since the last SyncDir of its directory.
  struct PriorEntry {
    enum class Kind { kAbsent, kFile, kDirectory } kind = Kind::kAbsent;
    std::string contents;  // for kFile: the durable bytes
  };

  // The injected error when `op` is armed and due, else OK.
  Status MaybeFail(FaultOp op, std::string_view path) STRATA_REQUIRES(mu_);
  // Remembers `path`'s current durable state unless a change is already pending for it.
  // Returns whether it added an entry (so a failed operation can forget it).
  Result<bool> RecordPrior(const std::string& path) STRATA_REQUIRES(mu_);
  void ForgetPrior(const std::string& path, bool added) STRATA_REQUIRES(mu_);
  Status RollBack() STRATA_REQUIRES(mu_);

  const std::shared_ptr<FileSystem> base_;

  mutable Mutex mu_;
  std::array<int64_t, 4> countdown_ STRATA_GUARDED_BY(mu_) = {};
  bool no_space_ STRATA_GUARDED_BY(mu_) = false;
  int64_t injected_ STRATA_GUARDED_BY(mu_) = 0;
  // Files written through the wrapper, by current name.
  std::map<std::string, std::shared_ptr<FileState>> files_ STRATA_GUARDED_BY(mu_);
  // Names with a change not yet made durable by SyncDir of their directory.
  std::map<std::string, PriorEntry> prior_ STRATA_GUARDED_BY(mu_);
};

}  // namespace strata::io
