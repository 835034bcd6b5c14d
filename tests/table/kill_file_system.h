// KillFileSystem: a FileSystem wrapper for crash tests that counts mutating operations
// (file creates, appends, syncs, renames, links, deletes, directory changes) and kills the
// process with SIGKILL when the count reaches a chosen number, before that operation takes
// effect. An append chosen as the kill point writes part of its bytes first, so torn files
// are left behind too. Used by table_worker's crash mode.
#pragma once

#include <signal.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "io/file_system.h"

namespace strata::table::torture {

class KillFileSystem final : public io::FileSystem {
 public:
  // kill_at <= 0: never kill, only count.
  KillFileSystem(std::shared_ptr<io::FileSystem> base, int64_t kill_at)
      : base_(std::move(base)), kill_at_(kill_at) {}

  int64_t operations() const { return count_.load(); }

  // Counts one operation; kills the process when it is the chosen one. Returns true when the
  // caller should tear its write (the kill comes right after).
  bool Count() {
    const int64_t n = ++count_;
    if (kill_at_ > 0 && n == kill_at_) return true;
    return false;
  }
  [[noreturn]] static void Die() {
    ::raise(SIGKILL);
    __builtin_unreachable();
  }

  Result<std::unique_ptr<io::WritableFile>> NewWritableFile(const std::string& path,
                                                            io::OpenMode mode) override {
    if (Count()) Die();
    STRATA_ASSIGN_OR_RETURN(std::unique_ptr<io::WritableFile> file,
                            base_->NewWritableFile(path, mode));
    return std::unique_ptr<io::WritableFile>(new File(this, std::move(file)));
  }
  Result<Buffer> ReadFile(const std::string& path) override { return base_->ReadFile(path); }
  Result<Buffer> ReadRange(const std::string& path, int64_t offset, int64_t length) override {
    return base_->ReadRange(path, offset, length);
  }
  Result<Buffer> MapFile(const std::string& path) override { return base_->MapFile(path); }
  Result<io::FileStatus> Stat(const std::string& path) override { return base_->Stat(path); }
  Result<io::FileStatus> LinkStat(const std::string& path) override {
    return base_->LinkStat(path);
  }
  Result<std::optional<io::FileStatus>> StatWithoutLinks(const std::string& path) override {
    return base_->StatWithoutLinks(path);
  }
  Result<std::optional<Buffer>> ReadFileWithoutLinks(const std::string& path,
                                                     int64_t map_above) override {
    return base_->ReadFileWithoutLinks(path, map_above);
  }
  Result<std::optional<std::vector<io::FileEntry>>> ListFilesWithoutLinks(
      const std::string& dir) override {
    return base_->ListFilesWithoutLinks(dir);
  }
  Status RenameFile(const std::string& from, const std::string& to) override {
    if (Count()) Die();
    return base_->RenameFile(from, to);
  }
  Status LinkFile(const std::string& from, const std::string& to) override {
    if (Count()) Die();
    return base_->LinkFile(from, to);
  }
  Status DeleteFile(const std::string& path) override {
    if (Count()) Die();
    return base_->DeleteFile(path);
  }
  Status CreateDirs(const std::string& path, std::vector<std::string>* created) override {
    if (Count()) Die();
    return base_->CreateDirs(path, created);
  }
  Status DeleteDir(const std::string& path) override {
    if (Count()) Die();
    return base_->DeleteDir(path);
  }
  Status RemoveTree(const std::string& path) override {
    if (Count()) Die();
    return base_->RemoveTree(path);
  }
  Status SyncDir(const std::string& path) override {
    if (Count()) Die();
    return base_->SyncDir(path);
  }
  Result<std::vector<io::FileEntry>> ListFiles(const std::string& dir) override {
    return base_->ListFiles(dir);
  }

 private:
  class File final : public io::WritableFile {
   public:
    File(KillFileSystem* fs, std::unique_ptr<io::WritableFile> base)
        : fs_(fs), base_(std::move(base)) {}
    Status Append(std::string_view data) override {
      if (fs_->Count()) {
        // A torn write: part of the bytes reach the file, then the process dies.
        (void)base_->Append(data.substr(0, data.size() / 2));
        Die();
      }
      return base_->Append(data);
    }
    Status Sync() override {
      if (fs_->Count()) Die();
      return base_->Sync();
    }
    Status Close() override { return base_->Close(); }
    const std::string& path() const override { return base_->path(); }

   private:
    KillFileSystem* fs_;
    std::unique_ptr<io::WritableFile> base_;
  };

  const std::shared_ptr<io::FileSystem> base_;
  const int64_t kill_at_;
  std::atomic<int64_t> count_{0};
};

}  // namespace strata::table::torture
