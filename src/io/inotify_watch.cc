// ChangeWatch over one process-wide inotify instance (see inotify_watch.h).
#include "io/inotify_watch.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "io/watch_batch.h"
#include "util/mutex.h"

namespace strata::io {
namespace {

// What a watched directory reports: every change to its entries or to a file's bytes in it,
// and its own end. Not opens, reads or closes: they change nothing.
constexpr uint32_t kWatchedMask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MODIFY |
                                  IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF;
// What its parent reports: entries made, removed or moved, among them the watched one.
constexpr uint32_t kEntryEvents = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO;
constexpr uint32_t kParentMask = kEntryEvents | IN_DELETE_SELF | IN_MOVE_SELF;
// What the directories above the parent report: their own move or removal.
constexpr uint32_t kAncestorMask = IN_DELETE_SELF | IN_MOVE_SELF;
// Events after which a watch no longer watches the directory its path names.
constexpr uint32_t kEnded = IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT;

// File systems on which every change is made by this kernel, so inotify sees it.
bool Watchable(int64_t type) {
  switch (type) {
    case EXT4_SUPER_MAGIC:  // also ext2 and ext3
    case XFS_SUPER_MAGIC:
    case BTRFS_SUPER_MAGIC:
    case TMPFS_MAGIC:
      return true;
    default:
      return false;
  }
}

Status NotSupported(const std::string& path, std::string_view why) {
  return Status::NotSupported(fmt::format("cannot watch '{}': {}", path, why));
}

// One directory's inotify watch, shared by every ChangeWatch that needs it: as the directory
// it watches, or as that directory's parent or another ancestor.
struct DirWatch {
  // An entry of this directory that a watch was made on, with how many watches were and the
  // count of events naming it.
  struct Entry {
    int refs = 0;
    uint64_t events = 0;
  };
  std::string path;
  int wd = -1;
  uint64_t changes = 0;
  bool ended = false;
  int refs = 0;
  std::unordered_map<std::string, Entry> entries;
};

class Hub {
 public:
  // The process's instance, made on first use; null when the kernel refuses one, and in a
  // child forked after it was made.
  static Hub* Get() {
    static Hub* const hub = [] {
      const int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
      if (fd < 0) return static_cast<Hub*>(nullptr);
      // A forked child shares the instance's queue: reading it there would take events the
      // parent's watches need. The child's watches end instead (re-checks by requests).
      ::pthread_atfork(nullptr, nullptr, [] { forked.store(true); });
      return new Hub(fd);  // never freed: watches may outlive statics
    }();
    return forked.load(std::memory_order_relaxed) ? nullptr : hub;
  }

  // Set in a child forked after the instance was made.
  static inline std::atomic<bool> forked{false};

  // Adds `mask` to the watch of the directory open at `dir_fd` (or makes it), and counts one
  // more user of it; with `entry`, one more user of the events naming that entry of it.
  Result<std::shared_ptr<DirWatch>> Add(int dir_fd, const std::string& path, uint32_t mask,
                                        const std::string* entry = nullptr) {
    MutexLock lock(mu_);
    Drain();  // ends of earlier watches first, so a reused descriptor is not taken for one
    const std::string proc = fmt::format("/proc/self/fd/{}", dir_fd);
    // Masks only grow while a watch is shared: each user gets at least what it asked for.
    const int wd = ::inotify_add_watch(fd_, proc.c_str(), mask | IN_ONLYDIR | IN_MASK_ADD);
    if (wd < 0) {
      const int err = errno;
      return NotSupported(path, fmt::format("inotify_add_watch: {}", strerrordesc_np(err)));
    }
    std::shared_ptr<DirWatch>& slot = by_wd_[wd];
    if (slot == nullptr) {
      slot = std::make_shared<DirWatch>();
      slot->path = path;
      slot->wd = wd;
    }
    ++slot->refs;
    if (entry != nullptr) ++slot->entries[*entry].refs;
    return slot;
  }

  void Release(const std::shared_ptr<DirWatch>& watch, const std::string* entry = nullptr) {
    if (forked.load(std::memory_order_relaxed)) return;  // the watch is the parent's
    MutexLock lock(mu_);
    if (entry != nullptr) {
      auto it = watch->entries.find(*entry);
      if (it != watch->entries.end() && --it->second.refs == 0) watch->entries.erase(it);
    }
    if (--watch->refs > 0 || watch->ended) return;
    ::inotify_rm_watch(fd_, watch->wd);
    by_wd_.erase(watch->wd);
  }

  // The count of events naming `entry` in `parent` (which a watch holds).
  uint64_t EntryEvents(const DirWatch& parent, const std::string& entry) {
    MutexLock lock(mu_);
    Drain();
    auto it = parent.entries.find(entry);
    return it == parent.entries.end() ? 0 : it->second.events;
  }

  // The count of changes to `watch`'s directory, after every queued event. NotFound when its
  // path no longer names that directory as far as the events tell: it, its parent or another
  // ancestor in `ancestors` ended, or `parent` saw an entry named `entry` come or go since it
  // counted `entry_events`.
  Result<uint64_t> Poll(const DirWatch& watch,
                        const std::vector<std::shared_ptr<DirWatch>>& ancestors,
                        const std::string& entry, uint64_t entry_events) {
    if (forked.load(std::memory_order_relaxed)) {
      return Status::NotFound(
          fmt::format("watch of '{}' ended: this process was forked from its owner", watch.path));
    }
    // Within a batch, the first poll of this thread drains the queue for the rest.
    thread_local uint64_t drained_in_batch = 0;
    const uint64_t batch = ChangeWatchBatch::Current();
    MutexLock lock(mu_);
    if (batch == 0 || batch != drained_in_batch) {
      Drain();
      drained_in_batch = batch;
    }
    if (watch.ended) {
      return Status::NotFound(
          fmt::format("watched directory '{}' was removed or moved", watch.path));
    }
    for (const std::shared_ptr<DirWatch>& ancestor : ancestors) {
      if (ancestor->ended) {
        return Status::NotFound(
            fmt::format("a directory above '{}' was removed or moved", watch.path));
      }
    }
    if (!ancestors.empty()) {
      auto it = ancestors.front()->entries.find(entry);
      if (it == ancestors.front()->entries.end() || it->second.events != entry_events) {
        return Status::NotFound(
            fmt::format("watched directory '{}' was removed or replaced", watch.path));
      }
    }
    return watch.changes;
  }

 private:
  explicit Hub(int fd) : fd_(fd) {}

  // Reads every queued event and counts it against its directory (and the entry it names).
  void Drain() STRATA_REQUIRES(mu_) {
    alignas(struct inotify_event) char buffer[16384];
    for (;;) {
      const ssize_t n = ::read(fd_, buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) return;
      if (n <= 0) {  // cannot tell what happened
        EndAll();
        return;
      }
      for (ssize_t at = 0; at < n;) {
        struct inotify_event event;
        std::memcpy(&event, buffer + at, sizeof(event));
        const char* name = buffer + at + sizeof(event);
        at += static_cast<ssize_t>(sizeof(event) + event.len);
        if ((event.mask & IN_Q_OVERFLOW) != 0) {
          EndAll();
          continue;
        }
        auto it = by_wd_.find(event.wd);
        if (it == by_wd_.end()) continue;  // a watch released since
        DirWatch& watch = *it->second;
        ++watch.changes;
        if (event.len > 0 && (event.mask & kEntryEvents) != 0 && !watch.entries.empty()) {
          auto entry = watch.entries.find(std::string(name, ::strnlen(name, event.len)));
          if (entry != watch.entries.end()) ++entry->second.events;
        }
        if ((event.mask & kEnded) != 0) {
          watch.ended = true;
          if ((event.mask & IN_IGNORED) == 0) ::inotify_rm_watch(fd_, watch.wd);
          by_wd_.erase(it);
        }
      }
    }
  }

  // Events were lost, an end among them perhaps: every watch ends, and its owner makes a new
  // one by path.
  void EndAll() STRATA_REQUIRES(mu_) {
    for (auto& [wd, watch] : by_wd_) {
      ::inotify_rm_watch(fd_, wd);
      watch->ended = true;
    }
    by_wd_.clear();
  }

  const int fd_;
  Mutex mu_;
  std::unordered_map<int, std::shared_ptr<DirWatch>> by_wd_ STRATA_GUARDED_BY(mu_);
};

// The directory a watch was made on, to tell when its path names another one.
struct DirIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const DirIdentity&) const = default;
};

std::optional<DirIdentity> IdentityAt(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return DirIdentity{st.st_dev, st.st_ino};
}

// A directory's identity, the mount it was reached through, and whether it is that mount's
// root; nullopt when the kernel cannot tell the last two (statx without STATX_MNT_ID and
// STATX_ATTR_MOUNT_ROOT, before Linux 5.8).
struct DirStat {
  DirIdentity identity;
  uint64_t mount_id = 0;
  bool mount_root = false;
};
std::optional<DirStat> StatDir(int fd) {
  struct statx stx {};
  if (::statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT, STATX_INO | STATX_MNT_ID, &stx) != 0 ||
      (stx.stx_mask & STATX_MNT_ID) == 0 ||
      (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) == 0) {
    return std::nullopt;
  }
  return DirStat{DirIdentity{makedev(stx.stx_dev_major, stx.stx_dev_minor), stx.stx_ino},
                 stx.stx_mnt_id, (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0};
}

// The last component of `path` when the path is absolute and plain (no empty, "." or ".."
// component; one trailing slash allowed), so that its components are the directories the
// ".." links lead up through; else nullopt.
std::optional<std::string> PlainEntryName(std::string_view path) {
  if (!path.starts_with('/')) return std::nullopt;
  if (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  std::string_view name;
  for (std::string_view rest = path.substr(1); !rest.empty();) {
    const size_t slash = rest.find('/');
    name = rest.substr(0, slash);
    if (name.empty() || name == "." || name == "..") return std::nullopt;
    rest = slash == std::string_view::npos ? std::string_view() : rest.substr(slash + 1);
  }
  if (name.empty()) return std::nullopt;  // the root itself
  return std::string(name);
}

// The identity of the directory `path` names, resolved with no symbolic link on the way
// (openat2 RESOLVE_NO_SYMLINKS, as the store opens it); nullopt when it cannot be.
std::optional<DirIdentity> IdentityWithoutLinks(const std::string& path) {
  struct open_how how {};
  how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS;
  const long fd = ::syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof(how));
  if (fd < 0) return std::nullopt;
  struct stat st {};
  const bool ok = ::fstat(static_cast<int>(fd), &st) == 0;
  ::close(static_cast<int>(fd));
  if (!ok) return std::nullopt;
  return DirIdentity{st.st_dev, st.st_ino};
}

class InotifyChangeWatch final : public ChangeWatch {
 public:
  // With `ancestors` (parent first; `entry` is the directory's name in it), their events tell
  // whether `path` still names the directory; without, each poll stats the path.
  InotifyChangeWatch(Hub* hub, std::shared_ptr<DirWatch> watch, std::string path,
                     DirIdentity identity,
                     std::optional<std::vector<std::shared_ptr<DirWatch>>> ancestors,
                     std::string entry, uint64_t entry_events)
      : hub_(hub),
        watch_(std::move(watch)),
        path_(std::move(path)),
        identity_(identity),
        by_events_(ancestors.has_value()),
        ancestors_(std::move(ancestors).value_or(std::vector<std::shared_ptr<DirWatch>>())),
        entry_(std::move(entry)),
        entry_events_(entry_events) {}
  ~InotifyChangeWatch() override {
    hub_->Release(watch_);
    for (size_t i = 0; i < ancestors_.size(); ++i) {
      hub_->Release(ancestors_[i], i == 0 ? &entry_ : nullptr);
    }
  }
  InotifyChangeWatch(const InotifyChangeWatch&) = delete;
  InotifyChangeWatch& operator=(const InotifyChangeWatch&) = delete;

  bool by_events() const { return by_events_; }

  Result<uint64_t> Poll() override {
    if (!by_events_ && IdentityAt(path_) != identity_) {
      return Status::NotFound(fmt::format("watched directory '{}' was removed or replaced", path_));
    }
    return hub_->Poll(*watch_, ancestors_, entry_, entry_events_);
  }

 private:
  Hub* const hub_;
  const std::shared_ptr<DirWatch> watch_;
  const std::string path_;
  const DirIdentity identity_;
  const bool by_events_;
  const std::vector<std::shared_ptr<DirWatch>> ancestors_;
  const std::string entry_;
  const uint64_t entry_events_;
};

// Watches the directories above the one open at `dir_fd` (named `entry` in its parent), up
// to the process's root, parent first, so that their events tell when its path stops naming
// it: the parent for the entry made, removed or moved, every other one for its own move or
// removal. The root itself cannot be moved. nullopt (and each poll checks the path instead)
// when this cannot be set up, and when the way up crosses the root of a mount other than the
// process's root: mounts move and unmount with no event.
std::optional<std::vector<std::shared_ptr<DirWatch>>> WatchAncestors(Hub& hub, int dir_fd,
                                                                     const std::string& path,
                                                                     const std::string& entry) {
  std::vector<std::shared_ptr<DirWatch>> ancestors;
  std::optional<DirStat> at = StatDir(dir_fd);
  int fd = dir_fd;
  bool complete = false;
  std::string name = path;
  constexpr int kMaxDepth = 256;
  for (int depth = 0; at.has_value() && depth < kMaxDepth; ++depth) {
    const int up = ::openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd != dir_fd) ::close(fd);
    fd = up;
    if (fd < 0) break;
    const std::optional<DirStat> above = StatDir(fd);
    if (!above.has_value()) break;
    // Only the process's root is its own parent; a bind mount of it elsewhere has the same
    // inode but another mount.
    if (above->identity == at->identity && above->mount_id == at->mount_id) {
      complete = depth > 0;  // the watched directory itself is not
      break;
    }
    if (at->mount_root) break;
    at = above;
    name += "/..";
    Result<std::shared_ptr<DirWatch>> added =
        hub.Add(fd, name, depth == 0 ? kParentMask : kAncestorMask, depth == 0 ? &entry : nullptr);
    if (!added.ok()) break;
    ancestors.push_back(std::move(*added));
  }
  if (fd >= 0 && fd != dir_fd) ::close(fd);
  if (complete) return ancestors;
  for (size_t i = 0; i < ancestors.size(); ++i) {
    hub.Release(ancestors[i], i == 0 ? &entry : nullptr);
  }
  return std::nullopt;
}

}  // namespace

namespace {
std::atomic<uint64_t> last_batch{0};
thread_local uint64_t current_batch = 0;
}  // namespace

ChangeWatchBatch::ChangeWatchBatch() : outermost_(current_batch == 0) {
  if (outermost_) current_batch = last_batch.fetch_add(1, std::memory_order_relaxed) + 1;
}

ChangeWatchBatch::~ChangeWatchBatch() {
  if (outermost_) current_batch = 0;
}

uint64_t ChangeWatchBatch::Current() { return current_batch; }

Result<std::unique_ptr<ChangeWatch>> WatchDirectory(int dir_fd, const std::string& path) {
  struct statfs fs {};
  struct stat st {};
  const bool watchable =
      ::fstatfs(dir_fd, &fs) == 0 && Watchable(fs.f_type) && ::fstat(dir_fd, &st) == 0;
  Hub* hub = watchable ? Hub::Get() : nullptr;
  if (hub == nullptr) {
    return NotSupported(path, watchable ? "no inotify instance" : "not a local file system");
  }
  const DirIdentity identity{st.st_dev, st.st_ino};
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<DirWatch> watch, hub->Add(dir_fd, path, kWatchedMask));
  // Events tell whether the path still names the directory when it is absolute and plain and
  // every directory above it is watched (see WatchAncestors); else each poll stats the path.
  std::optional<std::vector<std::shared_ptr<DirWatch>>> ancestors;
  const std::optional<std::string> name = PlainEntryName(path);
  if (name.has_value()) ancestors = WatchAncestors(*hub, dir_fd, path, *name);
  const bool by_events = ancestors.has_value();
  const std::string entry = by_events ? *name : std::string();
  const uint64_t entry_events = by_events ? hub->EntryEvents(*ancestors->front(), entry) : 0;
  auto made = std::make_unique<InotifyChangeWatch>(hub, std::move(watch), path, identity,
                                                   std::move(ancestors), entry, entry_events);
  // Everything is watched from here on; the path must name the directory now (through the
  // directories watched: no symbolic link on the way), or the events that would have told
  // otherwise may have come before their watches.
  if ((by_events ? IdentityWithoutLinks(path) : IdentityAt(path)) != identity) {
    return Status::NotFound(fmt::format("directory '{}' was replaced while being watched", path));
  }
  return std::unique_ptr<ChangeWatch>(std::move(made));
}

bool WatchesPathByEvents(const ChangeWatch& watch) {
  const auto* inotify = dynamic_cast<const InotifyChangeWatch*>(&watch);
  return inotify != nullptr && inotify->by_events();
}

}  // namespace strata::io
