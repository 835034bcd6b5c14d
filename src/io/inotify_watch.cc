// ChangeWatch over one process-wide inotify instance (see inotify_watch.h).
#include "io/inotify_watch.h"

#include <fmt/format.h>
#include <linux/magic.h>
#include <pthread.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <utility>

#include "util/mutex.h"

namespace strata::io {
namespace {

// Every change to a directory's entries or to a file's bytes in it, and the directory's own
// end. Not opens, reads or closes: they change nothing.
constexpr uint32_t kMask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_MODIFY |
                           IN_ATTRIB | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;
// Events after which the watch no longer watches the directory its path names.
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

// One directory's inotify watch, shared by every ChangeWatch on it.
struct DirWatch {
  std::string path;
  int wd = -1;
  uint64_t changes = 0;
  bool ended = false;
  int refs = 0;
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

  // Adds (or shares) the watch of the directory open at `dir_fd`.
  Result<std::shared_ptr<DirWatch>> Add(int dir_fd, const std::string& path) {
    MutexLock lock(mu_);
    Drain();  // ends of earlier watches first, so a reused descriptor is not taken for one
    const std::string proc = fmt::format("/proc/self/fd/{}", dir_fd);
    const int wd = ::inotify_add_watch(fd_, proc.c_str(), kMask);
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
    return slot;
  }

  void Release(const std::shared_ptr<DirWatch>& watch) {
    if (forked.load(std::memory_order_relaxed)) return;  // the watch is the parent's
    MutexLock lock(mu_);
    if (--watch->refs > 0 || watch->ended) return;
    ::inotify_rm_watch(fd_, watch->wd);
    by_wd_.erase(watch->wd);
  }

  Result<uint64_t> Poll(DirWatch& watch) {
    if (forked.load(std::memory_order_relaxed)) {
      return Status::NotFound(
          fmt::format("watch of '{}' ended: this process was forked from its owner", watch.path));
    }
    MutexLock lock(mu_);
    Drain();
    if (watch.ended) {
      return Status::NotFound(
          fmt::format("watched directory '{}' was removed or moved", watch.path));
    }
    return watch.changes;
  }

 private:
  explicit Hub(int fd) : fd_(fd) {}

  // Reads every queued event and counts it against its directory.
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
        at += static_cast<ssize_t>(sizeof(event) + event.len);
        if ((event.mask & IN_Q_OVERFLOW) != 0) {
          EndAll();
          continue;
        }
        auto it = by_wd_.find(event.wd);
        if (it == by_wd_.end()) continue;  // a watch released since
        DirWatch& watch = *it->second;
        ++watch.changes;
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
};

class InotifyChangeWatch final : public ChangeWatch {
 public:
  InotifyChangeWatch(Hub* hub, std::shared_ptr<DirWatch> watch, std::string path,
                     DirIdentity identity)
      : hub_(hub), watch_(std::move(watch)), path_(std::move(path)), identity_(identity) {}
  ~InotifyChangeWatch() override { hub_->Release(watch_); }
  InotifyChangeWatch(const InotifyChangeWatch&) = delete;
  InotifyChangeWatch& operator=(const InotifyChangeWatch&) = delete;

  // The path must still name the watched directory: the kernel reports a directory's removal
  // only once nothing holds it any more (a shell's working directory delays it for as long as
  // it stays there), and a directory moved away and replaced reports nothing at all.
  Result<uint64_t> Poll() override {
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0 || st.st_dev != identity_.dev ||
        st.st_ino != identity_.ino) {
      return Status::NotFound(fmt::format("watched directory '{}' was removed or replaced", path_));
    }
    return hub_->Poll(*watch_);
  }

 private:
  Hub* const hub_;
  const std::shared_ptr<DirWatch> watch_;
  const std::string path_;
  const DirIdentity identity_;
};

}  // namespace

Result<std::unique_ptr<ChangeWatch>> WatchDirectory(int dir_fd, const std::string& path) {
  struct statfs fs {};
  struct stat st {};
  const bool watchable =
      ::fstatfs(dir_fd, &fs) == 0 && Watchable(fs.f_type) && ::fstat(dir_fd, &st) == 0;
  Hub* hub = watchable ? Hub::Get() : nullptr;
  if (hub == nullptr) {
    return NotSupported(path, watchable ? "no inotify instance" : "not a local file system");
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<DirWatch> watch, hub->Add(dir_fd, path));
  return std::unique_ptr<ChangeWatch>(std::make_unique<InotifyChangeWatch>(
      hub, std::move(watch), path, DirIdentity{st.st_dev, st.st_ino}));
}

}  // namespace strata::io
