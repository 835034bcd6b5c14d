// MemoryFileSystem: in-memory files and directories with durable state for crash tests.
#include "io/memory_file_system.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace strata::io {
namespace {

// "/a//b/./c/" -> "/a/b/c". Relative paths and ".." are InvalidArgument.
Result<std::string> Normalize(std::string_view op, std::string_view path) {
  if (path.empty() || path.front() != '/') {
    return Status::InvalidArgument(
        fmt::format("{} '{}': memory file system paths must be absolute", op, path));
  }
  std::string out;
  size_t pos = 0;
  while (pos < path.size()) {
    size_t end = path.find('/', pos);
    if (end == std::string_view::npos) end = path.size();
    std::string_view seg = path.substr(pos, end - pos);
    pos = end + 1;
    if (seg.empty() || seg == ".") continue;
    if (seg == "..") {
      return Status::InvalidArgument(fmt::format("{} '{}': '..' is not supported", op, path));
    }
    out.push_back('/');
    out.append(seg);
  }
  if (out.empty()) out = "/";
  return out;
}

const std::string& KeyOf(const std::string& dir) { return dir; }
template <typename V>
const std::string& KeyOf(const std::pair<const std::string, V>& entry) {
  return entry.first;
}

// The paths in `container` (a set of paths or a map keyed by path) that sit directly inside
// directory `dir`.
template <typename Container>
std::vector<std::string> ChildrenOf(const Container& container, const std::string& dir) {
  std::vector<std::string> out;
  std::string prefix = dir == "/" ? dir : dir + "/";
  for (auto it = container.lower_bound(prefix); it != container.end(); ++it) {
    const std::string& path = KeyOf(*it);
    if (path.compare(0, prefix.size(), prefix) != 0) break;
    if (path.size() > prefix.size() && ParentDir(path) == dir) out.push_back(path);
  }
  return out;
}

bool IsBelow(const std::string& path, const std::string& dir) {
  if (dir == "/") return path != "/";
  return path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
         path[dir.size()] == '/';
}

}  // namespace

class MemoryFileSystem::File final : public WritableFile {
 public:
  File(MemoryFileSystem* fs, std::shared_ptr<Inode> inode, std::string path)
      : fs_(fs), inode_(std::move(inode)), path_(std::move(path)) {}

  Status Append(std::string_view data) override {
    MutexLock lock(fs_->mu_);
    if (closed_) return Closed("append");
    inode_->data.append(data);
    return Status::OK();
  }

  Status Sync() override {
    MutexLock lock(fs_->mu_);
    if (closed_) return Closed("sync");
    inode_->synced = inode_->data;
    ++fs_->file_syncs_;
    return Status::OK();
  }

  Status Close() override {
    MutexLock lock(fs_->mu_);
    if (closed_) return Closed("close");
    closed_ = true;
    return Status::OK();
  }

  const std::string& path() const override { return path_; }

 private:
  Status Closed(std::string_view op) const {
    return Status::InvalidArgument(fmt::format("{} '{}': file is closed", op, path_));
  }

  MemoryFileSystem* const fs_;
  const std::shared_ptr<Inode> inode_;
  const std::string path_;
  bool closed_ = false;  // guarded by fs_->mu_
};

MemoryFileSystem::MemoryFileSystem() {
  MutexLock lock(mu_);
  dirs_.insert("/");
  durable_dirs_.insert("/");
}

MemoryFileSystem::~MemoryFileSystem() = default;

Status MemoryFileSystem::CheckParentDir(const std::string& op, const std::string& path) {
  if (path == "/") return Status::InvalidArgument(fmt::format("{} '/': is the root", op));
  if (dirs_.count(std::string(ParentDir(path))) == 0) {
    return Status::NotFound(fmt::format("{} '{}': No such file or directory", op, path));
  }
  return Status::OK();
}

Result<std::shared_ptr<MemoryFileSystem::Inode>> MemoryFileSystem::FindFile(
    const std::string& op, const std::string& path) {
  auto it = files_.find(path);
  if (it != files_.end()) return it->second;
  if (dirs_.count(path) != 0) return Status::NotFound(fmt::format("'{}' is a directory", path));
  return Status::NotFound(fmt::format("{} '{}': No such file or directory", op, path));
}

Result<std::string> MemoryFileSystem::FileContents(const std::string& op, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string p, Normalize(op, path));
  MutexLock lock(mu_);
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<Inode> inode, FindFile(op, p));
  return inode->data;
}

Result<std::unique_ptr<WritableFile>> MemoryFileSystem::NewWritableFile(const std::string& path,
                                                                        OpenMode mode) {
  STRATA_ASSIGN_OR_RETURN(std::string p, Normalize("open for write", path));
  MutexLock lock(mu_);
  STRATA_RETURN_IF_ERROR(CheckParentDir("open for write", p));
  if (dirs_.count(p) != 0) {
    return Status::IOError(fmt::format("open for write '{}': Is a directory", p));
  }
  std::shared_ptr<Inode>& inode = files_[p];
  if (inode != nullptr) {
    if (mode == OpenMode::kCreateNew) {
      return Status::AlreadyExists(fmt::format("open for write '{}': File exists", p));
    }
    if (mode == OpenMode::kCreateOrTruncate) {
      inode->data.clear();
      inode->synced.clear();  // the model: truncation loses the old contents at once
    }
  } else {
    inode = std::make_shared<Inode>();
  }
  return std::unique_ptr<WritableFile>(std::make_unique<File>(this, inode, p));
}

Result<Buffer> MemoryFileSystem::ReadFile(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string data, FileContents("read", path));
  return Buffer::Copy(data);
}

Result<Buffer> MemoryFileSystem::ReadRange(const std::string& path, int64_t offset,
                                           int64_t length) {
  if (offset < 0 || length < 0) {
    return Status::InvalidArgument(
        fmt::format("read '{}': negative offset {} or length {}", path, offset, length));
  }
  STRATA_ASSIGN_OR_RETURN(std::string data, FileContents("read", path));
  const auto size = static_cast<int64_t>(data.size());
  if (offset > size) {
    return Status::InvalidArgument(
        fmt::format("read '{}': offset {} is past the end ({} bytes)", path, offset, size));
  }
  return Buffer::Copy(data.data() + offset, std::min(length, size - offset));
}

Result<Buffer> MemoryFileSystem::MapFile(const std::string& path) { return ReadFile(path); }

Result<FileStatus> MemoryFileSystem::Stat(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string p, Normalize("stat", path));
  MutexLock lock(mu_);
  FileStatus st;
  if (dirs_.count(p) != 0) {
    st.is_directory = true;
    return st;
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<Inode> inode, FindFile("stat", p));
  st.size = static_cast<int64_t>(inode->data.size());
  return st;
}

Status MemoryFileSystem::RenameFile(const std::string& from, const std::string& to) {
  STRATA_ASSIGN_OR_RETURN(std::string f, Normalize("rename", from));
  STRATA_ASSIGN_OR_RETURN(std::string t, Normalize("rename", to));
  MutexLock lock(mu_);
  if (dirs_.count(f) != 0) {
    return Status::NotSupported(fmt::format("rename '{}': directories cannot be renamed", f));
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<Inode> inode, FindFile("rename", f));
  STRATA_RETURN_IF_ERROR(CheckParentDir("rename", t));
  if (dirs_.count(t) != 0) return Status::IOError(fmt::format("rename to '{}': Is a directory", t));
  if (f == t) return Status::OK();
  files_[t] = std::move(inode);
  files_.erase(f);
  return Status::OK();
}

Status MemoryFileSystem::LinkFile(const std::string& from, const std::string& to) {
  STRATA_ASSIGN_OR_RETURN(std::string f, Normalize("link", from));
  STRATA_ASSIGN_OR_RETURN(std::string t, Normalize("link", to));
  MutexLock lock(mu_);
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<Inode> inode, FindFile("link", f));
  STRATA_RETURN_IF_ERROR(CheckParentDir("link", t));
  if (files_.count(t) != 0 || dirs_.count(t) != 0) {
    return Status::AlreadyExists(fmt::format("link '{}' to '{}': File exists", f, t));
  }
  files_[t] = std::move(inode);
  return Status::OK();
}

Status MemoryFileSystem::DeleteFile(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string p, Normalize("unlink", path));
  MutexLock lock(mu_);
  STRATA_RETURN_IF_ERROR(FindFile("unlink", p).status());
  files_.erase(p);
  return Status::OK();
}

Status MemoryFileSystem::CreateDirs(const std::string& path, std::vector<std::string>* created) {
  STRATA_ASSIGN_OR_RETURN(std::string p, Normalize("mkdir", path));
  MutexLock lock(mu_);
  size_t pos = 1;
  while (pos <= p.size()) {
    size_t end = p.find('/', pos);
    if (end == std::string::npos) end = p.size();
    std::string dir = p.substr(0, end);
    pos = end + 1;
    if (files_.count(dir) != 0) {
      return Status::IOError(fmt::format("mkdir '{}': Not a directory", dir));
    }
    if (dirs_.insert(dir).second && created != nullptr) created->push_back(dir);
  }
  return Status::OK();
}

Status MemoryFileSystem::DeleteDir(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string p, Normalize("rmdir", path));
  MutexLock lock(mu_);
  if (p == "/") return Status::InvalidArgument("rmdir '/': is the root");
  if (dirs_.count(p) == 0) {
    if (files_.count(p) != 0) {
      return Status::NotFound(fmt::format("rmdir '{}': Not a directory", p));
    }
    return Status::NotFound(fmt::format("rmdir '{}': No such file or directory", p));
  }
  if (!ChildrenOf(files_, p).empty() || !ChildrenOf(dirs_, p).empty()) {
    return Status::IOError(fmt::format("rmdir '{}': Directory not empty", p));
  }
  dirs_.erase(p);
  return Status::OK();
}

Status MemoryFileSystem::RemoveTree(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string p, Normalize("remove", path));
  MutexLock lock(mu_);
  std::erase_if(files_,
                [&](const auto& entry) { return entry.first == p || IsBelow(entry.first, p); });
  std::erase_if(
      dirs_, [&](const std::string& dir) { return dir != "/" && (dir == p || IsBelow(dir, p)); });
  return Status::OK();
}

Status MemoryFileSystem::SyncDir(const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(std::string p, Normalize("fsync directory", path));
  MutexLock lock(mu_);
  if (dirs_.count(p) == 0) {
    return Status::NotFound(fmt::format("open directory '{}': No such file or directory", p));
  }
  // The directory's durable entries become exactly its current entries.
  for (const std::string& name : ChildrenOf(durable_files_, p)) durable_files_.erase(name);
  for (const std::string& name : ChildrenOf(files_, p)) durable_files_[name] = files_.at(name);
  for (const std::string& name : ChildrenOf(durable_dirs_, p)) durable_dirs_.erase(name);
  for (const std::string& name : ChildrenOf(dirs_, p)) durable_dirs_.insert(name);
  ++dir_syncs_;
  return Status::OK();
}

Result<std::vector<FileEntry>> MemoryFileSystem::ListFiles(const std::string& dir) {
  STRATA_ASSIGN_OR_RETURN(std::string p, Normalize("list", dir));
  MutexLock lock(mu_);
  if (dirs_.count(p) == 0) {
    return Status::NotFound(fmt::format("list '{}': No such file or directory", p));
  }
  std::vector<FileEntry> out;
  const std::string prefix = p == "/" ? p : p + "/";
  for (auto it = files_.lower_bound(prefix);
       it != files_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    out.push_back({it->first.substr(prefix.size()), static_cast<int64_t>(it->second->data.size())});
  }
  // Every path shares the prefix, so map order is relative-path order.
  return out;
}

void MemoryFileSystem::SimulateCrash() {
  MutexLock lock(mu_);
  // A directory survives if its entry is durable and so is every directory above it; the
  // set is sorted, so parents are decided before their children.
  std::set<std::string> dirs;
  for (const std::string& dir : durable_dirs_) {
    if (dir == "/" || dirs.count(std::string(ParentDir(dir))) != 0) dirs.insert(dir);
  }
  FileMap files;
  for (const auto& [path, inode] : durable_files_) {
    if (dirs.count(std::string(ParentDir(path))) != 0) files.emplace(path, inode);
  }
  for (auto& [path, inode] : files) inode->data = inode->synced;
  dirs_ = dirs;
  durable_dirs_ = std::move(dirs);
  files_ = files;
  durable_files_ = std::move(files);
}

int64_t MemoryFileSystem::file_syncs() const {
  MutexLock lock(mu_);
  return file_syncs_;
}

int64_t MemoryFileSystem::dir_syncs() const {
  MutexLock lock(mu_);
  return dir_syncs_;
}

}  // namespace strata::io
