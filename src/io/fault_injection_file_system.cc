// FaultInjectionFileSystem: injected failures and crash rollback over any FileSystem.
#include "io/fault_injection_file_system.h"

#include <fmt/format.h>

#include <set>
#include <utility>

namespace strata::io {
namespace {

// Drops repeated and trailing '/' so one name has one spelling in the bookkeeping maps.
std::string Clean(std::string_view path) {
  std::string out;
  for (char c : path) {
    if (c == '/' && !out.empty() && out.back() == '/') continue;
    out.push_back(c);
  }
  if (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

std::string_view OpName(FaultOp op) {
  switch (op) {
    case FaultOp::kWrite:
      return "write";
    case FaultOp::kSync:
      return "sync";
    case FaultOp::kRename:
      return "rename";
    case FaultOp::kLink:
      return "link";
  }
  return "?";
}

}  // namespace

class FaultInjectionFileSystem::File final : public WritableFile {
 public:
  File(FaultInjectionFileSystem* fs, std::unique_ptr<WritableFile> base,
       std::shared_ptr<FileState> state)
      : fs_(fs), base_(std::move(base)), state_(std::move(state)) {}

  Status Append(std::string_view data) override {
    {
      MutexLock lock(fs_->mu_);
      if (fs_->no_space_) {
        ++fs_->injected_;
        return Status::IOError(
            fmt::format("write '{}': {} (injected)", base_->path(), kNoSpaceMessage));
      }
      STRATA_RETURN_IF_ERROR(fs_->MaybeFail(FaultOp::kWrite, base_->path()));
    }
    STRATA_RETURN_IF_ERROR(base_->Append(data));
    MutexLock lock(fs_->mu_);
    state_->size += static_cast<int64_t>(data.size());
    return Status::OK();
  }

  Status Sync() override {
    {
      MutexLock lock(fs_->mu_);
      STRATA_RETURN_IF_ERROR(fs_->MaybeFail(FaultOp::kSync, base_->path()));
    }
    STRATA_RETURN_IF_ERROR(base_->Sync());
    MutexLock lock(fs_->mu_);
    state_->synced_size = state_->size;
    return Status::OK();
  }

  Status Close() override { return base_->Close(); }
  const std::string& path() const override { return base_->path(); }

 private:
  FaultInjectionFileSystem* const fs_;
  const std::unique_ptr<WritableFile> base_;
  const std::shared_ptr<FileState> state_;  // fields guarded by fs_->mu_
};

FaultInjectionFileSystem::FaultInjectionFileSystem(std::shared_ptr<FileSystem> base)
    : base_(std::move(base)) {}

FaultInjectionFileSystem::~FaultInjectionFileSystem() = default;

void FaultInjectionFileSystem::FailNth(FaultOp op, int64_t n) {
  MutexLock lock(mu_);
  countdown_[static_cast<size_t>(op)] = n > 0 ? n : 0;
}

void FaultInjectionFileSystem::SetNoSpace(bool on) {
  MutexLock lock(mu_);
  no_space_ = on;
}

void FaultInjectionFileSystem::ClearFaults() {
  MutexLock lock(mu_);
  countdown_.fill(0);
  no_space_ = false;
}

int64_t FaultInjectionFileSystem::injected_faults() const {
  MutexLock lock(mu_);
  return injected_;
}

Status FaultInjectionFileSystem::MaybeFail(FaultOp op, std::string_view path) {
  int64_t& countdown = countdown_[static_cast<size_t>(op)];
  if (countdown == 0 || --countdown > 0) return Status::OK();
  ++injected_;
  return Status::IOError(fmt::format("{} '{}': injected failure", OpName(op), path));
}

Result<bool> FaultInjectionFileSystem::RecordPrior(const std::string& path) {
  if (prior_.count(path) != 0) return false;
  PriorEntry prior;
  Result<FileStatus> st = base_->Stat(path);
  if (!st.ok()) {
    if (!st.status().IsNotFound()) return st.status();
    prior.kind = PriorEntry::Kind::kAbsent;
  } else if (st->is_directory) {
    prior.kind = PriorEntry::Kind::kDirectory;
  } else {
    prior.kind = PriorEntry::Kind::kFile;
    STRATA_ASSIGN_OR_RETURN(Buffer contents, base_->ReadFile(path));
    prior.contents = contents.view();
    auto it = files_.find(path);
    if (it != files_.end() && it->second->synced_size < static_cast<int64_t>(contents.size())) {
      prior.contents.resize(static_cast<size_t>(it->second->synced_size));
    }
  }
  prior_.emplace(path, std::move(prior));
  return true;
}

void FaultInjectionFileSystem::ForgetPrior(const std::string& path, bool added) {
  if (added) prior_.erase(path);
}

Result<std::unique_ptr<WritableFile>> FaultInjectionFileSystem::NewWritableFile(
    const std::string& path, OpenMode mode) {
  const std::string p = Clean(path);
  MutexLock lock(mu_);
  STRATA_ASSIGN_OR_RETURN(bool existed, base_->Exists(p));
  bool added = false;
  if (!existed) {
    STRATA_ASSIGN_OR_RETURN(added, RecordPrior(p));
  }
  Result<std::unique_ptr<WritableFile>> file = base_->NewWritableFile(p, mode);
  if (!file.ok()) {
    ForgetPrior(p, added);
    return file.status();
  }
  std::shared_ptr<FileState>& state = files_[p];
  if (state == nullptr) {
    state = std::make_shared<FileState>();
    if (existed && mode == OpenMode::kAppend) {
      STRATA_ASSIGN_OR_RETURN(state->size, base_->FileSize(p));
      state->synced_size = state->size;  // it was there before we saw it: durable
    }
  } else if (mode == OpenMode::kCreateOrTruncate) {
    state->size = state->synced_size = 0;
  }
  return std::unique_ptr<WritableFile>(
      std::make_unique<File>(this, std::move(file).value(), state));
}

Result<Buffer> FaultInjectionFileSystem::ReadFile(const std::string& path) {
  return base_->ReadFile(path);
}

Result<Buffer> FaultInjectionFileSystem::ReadRange(const std::string& path, int64_t offset,
                                                   int64_t length) {
  return base_->ReadRange(path, offset, length);
}

Result<Buffer> FaultInjectionFileSystem::MapFile(const std::string& path) {
  return base_->MapFile(path);
}

Result<FileStatus> FaultInjectionFileSystem::Stat(const std::string& path) {
  return base_->Stat(path);
}

Result<FileStatus> FaultInjectionFileSystem::LinkStat(const std::string& path) {
  return base_->LinkStat(path);
}

Result<std::optional<FileStatus>> FaultInjectionFileSystem::StatWithoutLinks(
    const std::string& path) {
  return base_->StatWithoutLinks(path);
}

Result<std::optional<Buffer>> FaultInjectionFileSystem::ReadFileWithoutLinks(
    const std::string& path, int64_t map_above) {
  return base_->ReadFileWithoutLinks(path, map_above);
}

Result<std::optional<std::vector<FileEntry>>> FaultInjectionFileSystem::ListFilesWithoutLinks(
    const std::string& dir) {
  return base_->ListFilesWithoutLinks(dir);
}

Result<std::vector<FileEntry>> FaultInjectionFileSystem::ListFiles(const std::string& dir) {
  return base_->ListFiles(dir);
}

Status FaultInjectionFileSystem::RenameFile(const std::string& from, const std::string& to) {
  const std::string f = Clean(from);
  const std::string t = Clean(to);
  MutexLock lock(mu_);
  STRATA_RETURN_IF_ERROR(MaybeFail(FaultOp::kRename, f));
  STRATA_ASSIGN_OR_RETURN(bool added_to, RecordPrior(t));
  Result<bool> added_from = RecordPrior(f);
  if (!added_from.ok()) {
    ForgetPrior(t, added_to);
    return added_from.status();
  }
  Status s = base_->RenameFile(f, t);
  if (!s.ok()) {
    ForgetPrior(t, added_to);
    ForgetPrior(f, *added_from);
    return s;
  }
  if (f == t) return Status::OK();
  auto it = files_.find(f);
  if (it != files_.end()) {
    files_[t] = std::move(it->second);
    files_.erase(f);
  } else {
    files_.erase(t);
  }
  return Status::OK();
}

Status FaultInjectionFileSystem::LinkFile(const std::string& from, const std::string& to) {
  const std::string f = Clean(from);
  const std::string t = Clean(to);
  MutexLock lock(mu_);
  STRATA_RETURN_IF_ERROR(MaybeFail(FaultOp::kLink, f));
  STRATA_ASSIGN_OR_RETURN(bool added, RecordPrior(t));
  Status s = base_->LinkFile(f, t);
  if (!s.ok()) {
    ForgetPrior(t, added);
    return s;
  }
  auto it = files_.find(f);
  if (it != files_.end()) files_[t] = it->second;  // one inode, one write state
  return Status::OK();
}

Status FaultInjectionFileSystem::DeleteFile(const std::string& path) {
  const std::string p = Clean(path);
  MutexLock lock(mu_);
  STRATA_ASSIGN_OR_RETURN(bool added, RecordPrior(p));
  Status s = base_->DeleteFile(p);
  if (!s.ok()) {
    ForgetPrior(p, added);
    return s;
  }
  files_.erase(p);
  return Status::OK();
}

Status FaultInjectionFileSystem::CreateDirs(const std::string& path,
                                            std::vector<std::string>* created) {
  const std::string p = Clean(path);
  MutexLock lock(mu_);
  std::vector<std::string> made;
  Status s = base_->CreateDirs(p, &made);
  for (const std::string& dir : made) {
    prior_.try_emplace(Clean(dir));  // kAbsent: it did not exist before
    if (created != nullptr) created->push_back(dir);
  }
  return s;
}

Status FaultInjectionFileSystem::DeleteDir(const std::string& path) {
  const std::string p = Clean(path);
  MutexLock lock(mu_);
  STRATA_ASSIGN_OR_RETURN(bool added, RecordPrior(p));
  Status s = base_->DeleteDir(p);
  if (!s.ok()) ForgetPrior(p, added);
  return s;
}

Status FaultInjectionFileSystem::RemoveTree(const std::string& path) {
  const std::string p = Clean(path);
  MutexLock lock(mu_);
  Result<FileStatus> st = base_->Stat(p);
  if (!st.ok()) return st.status().IsNotFound() ? Status::OK() : st.status();
  if (st->is_directory) {
    STRATA_ASSIGN_OR_RETURN(std::vector<FileEntry> entries, base_->ListFiles(p));
    for (const FileEntry& entry : entries) {
      STRATA_RETURN_IF_ERROR(RecordPrior(JoinPath(p, entry.relative_path)).status());
    }
  }
  STRATA_RETURN_IF_ERROR(RecordPrior(p).status());
  STRATA_RETURN_IF_ERROR(base_->RemoveTree(p));
  std::erase_if(files_, [&](const auto& entry) {
    const std::string& name = entry.first;
    return name == p ||
           (name.size() > p.size() && name.compare(0, p.size(), p) == 0 && name[p.size()] == '/');
  });
  return Status::OK();
}

Status FaultInjectionFileSystem::SyncDir(const std::string& path) {
  const std::string p = Clean(path);
  MutexLock lock(mu_);
  STRATA_RETURN_IF_ERROR(MaybeFail(FaultOp::kSync, p));
  STRATA_RETURN_IF_ERROR(base_->SyncDir(p));
  std::erase_if(prior_, [&](const auto& entry) { return ParentDir(entry.first) == p; });
  return Status::OK();
}

Status FaultInjectionFileSystem::SimulateCrash() {
  MutexLock lock(mu_);
  Status s = RollBack();
  files_.clear();
  prior_.clear();
  return s;
}

Status FaultInjectionFileSystem::RollBack() {
  std::set<std::string> touched_dirs;
  // Bytes appended after the last Sync are lost.
  for (const auto& [path, state] : files_) {
    Result<Buffer> data = base_->ReadFile(path);
    if (!data.ok()) {
      if (data.status().IsNotFound()) continue;
      return data.status();
    }
    if (data->size() > state->synced_size) {
      STRATA_RETURN_IF_ERROR(
          base_->WriteFile(path, data->view().substr(0, state->synced_size), /*sync=*/true));
    }
  }
  // Names that existed come back, parents first (the map is sorted).
  for (const auto& [path, prior] : prior_) {
    if (prior.kind == PriorEntry::Kind::kAbsent) continue;
    if (prior.kind == PriorEntry::Kind::kDirectory) {
      STRATA_RETURN_IF_ERROR(base_->CreateDirs(path));
    } else {
      STRATA_ASSIGN_OR_RETURN(bool exists, base_->Exists(path));
      if (exists) {
        STRATA_ASSIGN_OR_RETURN(FileStatus st, base_->Stat(path));
        if (st.is_directory) STRATA_RETURN_IF_ERROR(base_->RemoveTree(path));
      }
      STRATA_RETURN_IF_ERROR(base_->CreateDirs(std::string(ParentDir(path))));
      STRATA_RETURN_IF_ERROR(base_->WriteFile(path, prior.contents, /*sync=*/true));
    }
    touched_dirs.emplace(ParentDir(path));
  }
  // Names that did not exist go, children first; with a directory goes all below it.
  for (auto it = prior_.rbegin(); it != prior_.rend(); ++it) {
    if (it->second.kind != PriorEntry::Kind::kAbsent) continue;
    STRATA_RETURN_IF_ERROR(base_->RemoveTree(it->first));
    touched_dirs.emplace(ParentDir(it->first));
  }
  for (const std::string& dir : touched_dirs) {
    STRATA_ASSIGN_OR_RETURN(bool exists, base_->Exists(dir));
    if (exists) STRATA_RETURN_IF_ERROR(base_->SyncDir(dir));
  }
  return Status::OK();
}

}  // namespace strata::io
