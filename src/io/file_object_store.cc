// FileObjectStore: objects as files (temp file + fsync + rename/link + directory fsync).
#include "io/file_object_store.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <utility>
#include <vector>

#include "util/clock.h"
#include "util/mutex.h"

namespace strata::io {
namespace {

// Attempts at creating a temporary file before giving up; a retry happens when another
// process removed the directory meanwhile or a random name collided.
constexpr int kTempFileAttempts = 8;

bool IsTempName(std::string_view relative_path) {
  size_t slash = relative_path.rfind('/');
  std::string_view name =
      slash == std::string_view::npos ? relative_path : relative_path.substr(slash + 1);
  return name.substr(0, kTempFilePrefix.size()) == kTempFilePrefix;
}

// An object being appended to: the file created in place, written through one handle.
class FileAppendableObject final : public AppendableObject {
 public:
  FileAppendableObject(std::unique_ptr<WritableFile> file, std::string key, bool sync)
      : file_(std::move(file)), key_(std::move(key)), sync_(sync) {}
  ~FileAppendableObject() override { Close().IgnoreError(); }

  Status Append(std::string_view data) override {
    STRATA_RETURN_IF_ERROR(CheckOpen("append to"));
    if (failed_) {
      return Status::IOError(
          fmt::format("append to '{}': an earlier append failed, the object may end in a part "
                      "of it",
                      key_));
    }
    Status s = file_->Append(data);
    if (!s.ok()) {
      failed_ = true;
      return s.WithContext(fmt::format("append to '{}'", key_));
    }
    size_.fetch_add(static_cast<int64_t>(data.size()), std::memory_order_relaxed);
    return Status::OK();
  }

  Status Sync() override {
    STRATA_RETURN_IF_ERROR(CheckOpen("sync"));
    if (!sync_) return Status::OK();
    Status s = file_->Sync();
    return s.ok() ? s : s.WithContext(fmt::format("sync '{}'", key_));
  }

  Status Close() override {
    if (file_ == nullptr) return Status::OK();
    Status s = file_->Close();
    file_.reset();
    return s.ok() ? s : s.WithContext(fmt::format("close '{}'", key_));
  }

  int64_t size() const override { return size_.load(std::memory_order_relaxed); }

 private:
  Status CheckOpen(std::string_view op) const {
    if (file_ != nullptr) return Status::OK();
    return Status::InvalidArgument(fmt::format("{} '{}': the object is closed", op, key_));
  }

  std::unique_ptr<WritableFile> file_;  // null once closed
  const std::string key_;
  const bool sync_;
  bool failed_ = false;
  std::atomic<int64_t> size_{0};
};

class FileObjectStore final : public ObjectStore {
 public:
  FileObjectStore(std::shared_ptr<FileSystem> fs, std::string root, LocalObjectStoreOptions options)
      : fs_(std::move(fs)), root_(std::move(root)), options_(options) {
    RandomSource* random = options_.random != nullptr ? options_.random : SystemRandom();
    nonce_ = random->Next();
  }

  // Creates the root and makes its entry durable.
  Status Init() {
    std::vector<std::string> created;
    STRATA_RETURN_IF_ERROR(fs_->CreateDirs(root_, &created));
    if (options_.sync) {
      std::set<std::string> dirs = {root_, std::string(ParentDir(root_))};
      for (const std::string& dir : created) dirs.emplace(ParentDir(dir));
      for (const std::string& dir : dirs) {
        if (!dir.empty()) STRATA_RETURN_IF_ERROR(fs_->SyncDir(dir));
      }
    }
    MutexLock lock(durable_mu_);
    durable_dirs_.insert("");
    return Status::OK();
  }

  Result<Buffer> Get(std::string_view key) override {
    STRATA_RETURN_IF_ERROR(CheckKey(key));
    const std::string path = PathOf(key);
    // One open that refuses links on the way (as StatObject), when the file system can.
    if (one_lookup_.load(std::memory_order_relaxed)) {
      Result<std::optional<Buffer>> read = fs_->ReadFileWithoutLinks(path, options_.mmap_threshold);
      if (!read.ok()) return ReadError("get", key, read.status());
      if (read->has_value()) return std::move(**read);
    }
    Result<FileStatus> st = StatObject("get", key);
    if (!st.ok()) return st.status();
    if (st->is_directory) return NotFound(key);
    Result<Buffer> data =
        st->size > options_.mmap_threshold ? fs_->MapFile(path) : fs_->ReadFile(path);
    if (!data.ok()) return ReadError("get", key, data.status());
    return data;
  }

  Result<Buffer> GetRange(std::string_view key, int64_t offset, int64_t length) override {
    STRATA_RETURN_IF_ERROR(CheckKeyAndPath("get range of", key));
    if (offset < 0 || length < 0) {
      return Status::InvalidArgument(
          fmt::format("get range of '{}': negative offset {} or length {}", key, offset, length));
    }
    Result<Buffer> data = fs_->ReadRange(PathOf(key), offset, length);
    if (!data.ok()) return ReadError("get range of", key, data.status());
    return data;
  }

  Result<ObjectMeta> Head(std::string_view key) override {
    Result<FileStatus> st = StatObject("head", key);
    if (!st.ok()) return st.status();
    if (st->is_directory) return NotFound(key);
    return ObjectMeta{std::string(key), st->size};
  }

  Status Put(std::string_view key, std::string_view data) override {
    // The object itself may be a link: rename(2) replaces the link, never its target.
    STRATA_RETURN_IF_ERROR(CheckKeyAndPath("put", key, /*whole_key=*/false));
    const std::string path = PathOf(key);
    ReaderLock namespace_lock(namespace_mu_);
    Result<std::string> temp = WriteTempFile(key, data);
    if (!temp.ok()) return WriteError("put", key, temp.status());
    Status s = fs_->RenameFile(*temp, path);
    if (!s.ok()) {
      fs_->DeleteFile(*temp).IgnoreError();  // best effort; temp files are never listed
      return WriteError("put", key, s);
    }
    return WriteError("put", key, MakeDurable(std::string(ParentDir(key))));
  }

  Status PutIfAbsent(std::string_view key, std::string_view data) override {
    STRATA_RETURN_IF_ERROR(CheckKeyAndPath("put-if-absent", key, /*whole_key=*/false));
    const std::string path = PathOf(key);
    ReaderLock namespace_lock(namespace_mu_);
    Result<std::string> temp = WriteTempFile(key, data);
    if (!temp.ok()) return WriteError("put-if-absent", key, temp.status());
    Status linked = fs_->LinkFile(*temp, path);
    // A leftover temp file (if this fails) is harmless: it is never listed.
    fs_->DeleteFile(*temp).IgnoreError();
    if (!linked.ok() && !linked.IsAlreadyExists()) return WriteError("put-if-absent", key, linked);
    // Also when losing: the winner may not have synced the directory yet, and a caller
    // told AlreadyExists may rely on that object surviving a crash.
    STRATA_RETURN_IF_ERROR(
        WriteError("put-if-absent", key, MakeDurable(std::string(ParentDir(key)))));
    if (linked.IsAlreadyExists()) {
      return Status::AlreadyExists(
          fmt::format("object '{}' already exists in {}", key, Describe()));
    }
    return Status::OK();
  }

  // A hard link: no bytes are written, so the cost does not depend on the object's size.
  Status Copy(std::string_view from, std::string_view to) override {
    STRATA_RETURN_IF_ERROR(CheckKeyAndPath("copy", from));
    STRATA_RETURN_IF_ERROR(CheckKeyAndPath("copy", to, /*whole_key=*/false));
    const std::string source = PathOf(from);
    const std::string path = PathOf(to);
    const std::string dir = AbsoluteDir(ParentDir(to));
    ReaderLock namespace_lock(namespace_mu_);
    Status linked = Status::Internal("unset");
    // NotFound is either a missing source or a target directory another process removed
    // between the two calls (then retry).
    for (int attempt = 0; attempt < kTempFileAttempts; ++attempt) {
      STRATA_RETURN_IF_ERROR(WriteError("copy", to, fs_->CreateDirs(dir)));
      linked = fs_->LinkFile(source, path);
      if (!linked.IsNotFound()) break;
      Result<FileStatus> exists = fs_->Stat(source);
      if (!exists.ok()) {
        if (exists.status().IsNotFound()) return NotFound(from);
        return WriteError("copy", to, exists.status());
      }
    }
    if (!linked.ok() && !linked.IsAlreadyExists()) return WriteError("copy", to, linked);
    // Also when losing, as in PutIfAbsent: AlreadyExists then names a durable object.
    STRATA_RETURN_IF_ERROR(WriteError("copy", to, MakeDurable(std::string(ParentDir(to)))));
    if (linked.IsAlreadyExists()) {
      return Status::AlreadyExists(fmt::format("object '{}' already exists in {}", to, Describe()));
    }
    return Status::OK();
  }

  Result<std::unique_ptr<AppendableObject>> CreateAppendable(std::string_view key) override {
    STRATA_RETURN_IF_ERROR(CheckKeyAndPath("create appendable", key, /*whole_key=*/false));
    const std::string path = PathOf(key);
    const std::string dir = AbsoluteDir(ParentDir(key));
    ReaderLock namespace_lock(namespace_mu_);
    Result<std::unique_ptr<WritableFile>> file = Status::Internal("unset");
    // Retry when another process removed the (empty) directory between the two calls.
    for (int attempt = 0; attempt < kTempFileAttempts; ++attempt) {
      STRATA_RETURN_IF_ERROR(WriteError("create appendable", key, fs_->CreateDirs(dir)));
      file = fs_->NewWritableFile(path, OpenMode::kCreateNew);
      if (!file.status().IsNotFound()) break;
    }
    if (!file.ok() && !file.status().IsAlreadyExists()) {
      return WriteError("create appendable", key, file.status());
    }
    // Also when losing, as in PutIfAbsent: AlreadyExists then names a durable object.
    Status durable = WriteError("create appendable", key, MakeDurable(std::string(ParentDir(key))));
    if (!file.ok()) {
      STRATA_RETURN_IF_ERROR(durable);
      return Status::AlreadyExists(
          fmt::format("object '{}' already exists in {}", key, Describe()));
    }
    if (!durable.ok()) {
      // Nothing was appended yet and the name may not survive a crash: take it back.
      (*file)->Close().IgnoreError();
      fs_->DeleteFile(path).IgnoreError();
      return durable;
    }
    return std::unique_ptr<AppendableObject>(
        std::make_unique<FileAppendableObject>(std::move(*file), std::string(key), options_.sync));
  }

  Result<std::vector<ObjectMeta>> List(std::string_view prefix) override {
    STRATA_RETURN_IF_ERROR(ValidateObjectPrefix(prefix));
    // List the deepest directory that holds every match, then filter by the full prefix.
    size_t slash = prefix.rfind('/');
    std::string_view dir = slash == std::string_view::npos ? "" : prefix.substr(0, slash);
    // A link on the way to `dir` lists as nothing, like a link below it (ListFiles): in one
    // lookup when the store can (as StatObject), else by a walk.
    Result<std::vector<FileEntry>> entries = ListWithoutLinks(dir);
    if (!entries.ok()) {
      if (entries.status().IsNotFound()) return std::vector<ObjectMeta>{};
      return entries.status().WithContext(fmt::format("list '{}'", prefix));
    }
    std::vector<ObjectMeta> out;
    for (FileEntry& entry : *entries) {
      if (IsTempName(entry.relative_path)) continue;
      std::string key =
          dir.empty() ? std::move(entry.relative_path) : JoinPath(dir, entry.relative_path);
      if (key.compare(0, prefix.size(), prefix) != 0) continue;
      out.push_back({std::move(key), entry.size});
    }
    // ListFiles sorts by relative path and every key shares `dir`, so `out` is sorted.
    return out;
  }

  Status Delete(std::string_view key) override {
    // unlink(2) removes a link itself, never its target: only the directories matter.
    STRATA_RETURN_IF_ERROR(CheckKeyAndPath("delete", key, /*whole_key=*/false));
    Status s = fs_->DeleteFile(PathOf(key));
    if (!s.ok()) return ReadError("delete", key, s);
    if (!options_.sync) return Status::OK();
    return WriteError("delete", key, fs_->SyncDir(AbsoluteDir(ParentDir(key))));
  }

  Result<int64_t> DeletePrefix(std::string_view prefix) override {
    STRATA_ASSIGN_OR_RETURN(std::vector<ObjectMeta> objects, List(prefix));
    int64_t deleted = 0;
    std::set<std::string> dirs;  // relative directories that lost an entry
    for (const ObjectMeta& object : objects) {
      Status s = fs_->DeleteFile(PathOf(object.key));
      if (s.IsNotFound()) continue;  // deleted concurrently
      if (!s.ok()) return WriteError("delete", object.key, s);
      ++deleted;
      dirs.emplace(ParentDir(object.key));
    }
    STRATA_RETURN_IF_ERROR(RemoveEmptyDirs(prefix, &dirs));
    if (options_.sync) {
      for (const std::string& dir : dirs) {
        Status s = fs_->SyncDir(AbsoluteDir(dir));
        if (!s.ok() && !s.IsNotFound()) return s.WithContext(fmt::format("delete '{}'", prefix));
      }
    }
    return deleted;
  }

  Result<std::unique_ptr<ChangeWatch>> Watch(std::string_view prefix) override {
    STRATA_RETURN_IF_ERROR(ValidateWatchPrefix(prefix));
    if (!options_.watch_changes) {
      return Status::NotSupported(
          fmt::format("{}: watching for changes is off (watch_changes)", Describe()));
    }
    if (prefix.empty()) return fs_->WatchDir(root_);
    const std::string_view dir = prefix.substr(0, prefix.size() - 1);
    STRATA_RETURN_IF_ERROR(CheckKey(dir));
    return fs_->WatchDir(PathOf(dir));
  }

  std::string Describe() const override { return "file://" + root_; }

 private:
  Status CheckKey(std::string_view key) const {
    STRATA_RETURN_IF_ERROR(ValidateObjectKey(key));
    for (size_t pos = 0; pos < key.size();) {
      size_t end = std::min(key.find('/', pos), key.size());
      if (key.substr(pos, kTempFilePrefix.size()) == kTempFilePrefix) {
        return Status::InvalidArgument(fmt::format(
            "object key '{}' uses the reserved name prefix '{}'", key, kTempFilePrefix));
      }
      pos = end + 1;
    }
    return Status::OK();
  }

  // The first component of `relative` (a key or a directory below the root) that is a
  // symbolic link, or "" when there is none. Stops at the first missing component: nothing
  // below it can be a link. One lstat per level per call and no cache, so a link placed
  // while the store is open is found as well.
  Result<std::string> FirstLink(std::string_view relative) const {
    for (size_t end = 0; end < relative.size();) {
      end = std::min(relative.find('/', end + 1), relative.size());
      std::string_view part = relative.substr(0, end);
      Result<FileStatus> st = fs_->LinkStat(PathOf(part));
      if (!st.ok()) {
        if (st.status().IsNotFound()) break;
        return st.status();
      }
      if (st->is_symlink) return std::string(part);
    }
    return std::string();
  }
  // The files below the directory `relative` (ListFiles), none when it or a directory on the
  // way to it is a symbolic link; NotFound when it is missing.
  Result<std::vector<FileEntry>> ListWithoutLinks(std::string_view relative) const {
    const bool fast = one_lookup_.load(std::memory_order_relaxed);
    if (fast) {
      STRATA_ASSIGN_OR_RETURN(std::optional<std::vector<FileEntry>> listed,
                              fs_->ListFilesWithoutLinks(AbsoluteDir(relative)));
      if (listed.has_value()) return std::move(*listed);
    }
    STRATA_ASSIGN_OR_RETURN(std::string link, FirstLink(relative));
    if (!link.empty()) return std::vector<FileEntry>{};
    if (fast) one_lookup_.store(false, std::memory_order_relaxed);
    return fs_->ListFiles(AbsoluteDir(relative));
  }
  // Refuses a key whose path below the root passes through a symbolic link (in any
  // directory, and in the object itself when `whole_key`): strata never reads, writes or
  // deletes outside the root through a link someone placed inside it.
  Status CheckNoLinks(std::string_view op, std::string_view key, bool whole_key) const {
    Result<std::string> link = FirstLink(whole_key ? key : ParentDir(key));
    if (!link.ok()) return WriteError(op, key, link.status());
    if (link->empty()) return Status::OK();
    return LinkRefused(op, key, *link);
  }
  Status LinkRefused(std::string_view op, std::string_view key, std::string_view link) const {
    return Status::IOError(fmt::format(
        "{} '{}': '{}' in {} is a symbolic link; strata never follows links inside a store", op,
        key, link, Describe()));
  }
  // CheckKeyAndPath and the object's own status. First in one lookup that refuses links
  // anywhere on the path (FileSystem::StatWithoutLinks); when that cannot tell, by the walk,
  // whose last lstat is also the object's status. A walk that then finds no link below the
  // root means the one lookup cannot work for this store (a link above the root, or no
  // openat2): it is not tried again. Errors carry `op` and the key.
  Result<FileStatus> StatObject(std::string_view op, std::string_view key) const {
    STRATA_RETURN_IF_ERROR(CheckKey(key));
    const bool fast = one_lookup_.load(std::memory_order_relaxed);
    if (fast) {
      Result<std::optional<FileStatus>> st = fs_->StatWithoutLinks(PathOf(key));
      if (!st.ok()) return ReadError(op, key, st.status());
      if (st->has_value()) return **st;
    }
    STRATA_RETURN_IF_ERROR(CheckNoLinks(op, key, /*whole_key=*/false));
    Result<FileStatus> st = fs_->LinkStat(PathOf(key));
    if (!st.ok()) return ReadError(op, key, st.status());
    if (st->is_symlink) return LinkRefused(op, key, key);
    if (fast) one_lookup_.store(false, std::memory_order_relaxed);
    return st;
  }
  // CheckKey, then CheckNoLinks.
  Status CheckKeyAndPath(std::string_view op, std::string_view key, bool whole_key = true) const {
    STRATA_RETURN_IF_ERROR(CheckKey(key));
    return CheckNoLinks(op, key, whole_key);
  }

  std::string PathOf(std::string_view key) const { return JoinPath(root_, key); }
  std::string AbsoluteDir(std::string_view relative) const {
    return relative.empty() ? root_ : JoinPath(root_, relative);
  }

  Status NotFound(std::string_view key) const {
    return Status::NotFound(fmt::format("object '{}' not found in {}", key, Describe()));
  }
  // For reads: NotFound from the file system becomes "object not found", other errors
  // get the operation and key in front.
  Status ReadError(std::string_view op, std::string_view key, const Status& s) const {
    if (s.IsNotFound()) return NotFound(key);
    return WriteError(op, key, s);
  }
  Status WriteError(std::string_view op, std::string_view key, const Status& s) const {
    if (s.ok()) return s;
    return s.WithContext(fmt::format("{} '{}'", op, key));
  }

  // Writes `data` to a new temporary file in the key's directory (creating directories),
  // synced when options.sync, and returns its path. Removes it again on failure.
  Result<std::string> WriteTempFile(std::string_view key, std::string_view data)
      STRATA_REQUIRES_SHARED(namespace_mu_) {
    const std::string dir = AbsoluteDir(ParentDir(key));
    for (int attempt = 0; attempt < kTempFileAttempts; ++attempt) {
      STRATA_RETURN_IF_ERROR(fs_->CreateDirs(dir));
      std::string temp = JoinPath(
          dir, fmt::format("{}{:016x}-{}-{}", kTempFilePrefix, nonce_, ::getpid(), ++counter_));
      Result<std::unique_ptr<WritableFile>> file = fs_->NewWritableFile(temp, OpenMode::kCreateNew);
      if (!file.ok()) {
        if (file.status().IsNotFound() || file.status().IsAlreadyExists()) continue;
        return file.status();
      }
      Status s = (*file)->Append(data);
      if (s.ok() && options_.sync) s = (*file)->Sync();
      Status closed = (*file)->Close();
      if (s.ok()) s = closed;
      if (!s.ok()) {
        fs_->DeleteFile(temp).IgnoreError();
        return s;
      }
      return temp;
    }
    return Status::IOError(fmt::format("could not create a temporary file in '{}'", dir));
  }

  // Syncs the key directory `relative_dir`, and the parent of each directory above it
  // whose own entry is not yet known durable. No-op without options.sync.
  Status MakeDurable(const std::string& relative_dir) STRATA_REQUIRES_SHARED(namespace_mu_) {
    if (!options_.sync) return Status::OK();
    std::vector<std::string> chain;
    for (std::string_view dir = relative_dir; !dir.empty(); dir = ParentDir(dir)) {
      chain.emplace_back(dir);
    }
    std::set<std::string> to_sync = {relative_dir};
    {
      MutexLock lock(durable_mu_);
      for (const std::string& dir : chain) {
        if (durable_dirs_.count(dir) == 0) to_sync.emplace(ParentDir(dir));
      }
    }
    for (const std::string& dir : to_sync) STRATA_RETURN_IF_ERROR(fs_->SyncDir(AbsoluteDir(dir)));
    MutexLock lock(durable_mu_);
    durable_dirs_.insert(chain.begin(), chain.end());
    return Status::OK();
  }

  // Removes the directories under `prefix` that held a deleted object (and their
  // ancestors under the prefix) if they are empty now; adds their parents to `dirs`.
  Status RemoveEmptyDirs(std::string_view prefix, std::set<std::string>* dirs)
      STRATA_EXCLUDES(namespace_mu_) {
    std::set<std::string> candidates;
    for (const std::string& dir : *dirs) {
      for (std::string_view d = dir; !d.empty(); d = ParentDir(d)) {
        std::string with_slash = std::string(d) + "/";
        if (with_slash.compare(0, prefix.size(), prefix) == 0) candidates.emplace(d);
      }
    }
    // Deepest first, so a parent is tried after its children are gone.
    std::vector<std::string> order(candidates.begin(), candidates.end());
    std::sort(order.begin(), order.end(), [](const std::string& a, const std::string& b) {
      return std::count(a.begin(), a.end(), '/') > std::count(b.begin(), b.end(), '/');
    });
    // Exclusive: no Put may sit between creating a directory and renaming into it.
    WriterLock namespace_lock(namespace_mu_);
    for (const std::string& dir : order) {
      {
        MutexLock lock(durable_mu_);
        durable_dirs_.erase(dir);
      }
      if (fs_->DeleteDir(AbsoluteDir(dir)).ok()) {
        dirs->erase(dir);
        dirs->emplace(ParentDir(dir));
      }
    }
    return Status::OK();
  }

  const std::shared_ptr<FileSystem> fs_;
  const std::string root_;
  const LocalObjectStoreOptions options_;
  mutable std::atomic<bool> one_lookup_{true};  // StatObject tries StatWithoutLinks first
  uint64_t nonce_ = 0;                          // random per store, names temp files
  std::atomic<uint64_t> counter_{0};

  // Shared by Put/PutIfAbsent from directory creation to durability; exclusive while
  // removing directories, so a directory cannot vanish under a Put.
  SharedMutex namespace_mu_;

  Mutex durable_mu_;
  // Directories (relative to the root, "" = root) whose entry in their parent is durable.
  std::set<std::string> durable_dirs_ STRATA_GUARDED_BY(durable_mu_);
};

}  // namespace

Result<std::shared_ptr<ObjectStore>> NewFileObjectStore(std::shared_ptr<FileSystem> fs,
                                                        std::string root,
                                                        LocalObjectStoreOptions options) {
  if (root.empty()) return Status::InvalidArgument("object store root is empty");
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  auto store = std::make_shared<FileObjectStore>(std::move(fs), std::move(root), options);
  STRATA_RETURN_IF_ERROR(store->Init().WithContext("open object store"));
  return std::shared_ptr<ObjectStore>(std::move(store));
}

}  // namespace strata::io

namespace strata {

Result<std::shared_ptr<ObjectStore>> OpenLocalObjectStore(const std::string& root,
                                                          LocalObjectStoreOptions options) {
  return io::NewFileObjectStore(io::PosixFileSystem(), root, options);
}

}  // namespace strata
