// ChangeWatch over inotify(7): the local object store's ObjectStore::Watch.
//
// One inotify instance serves the whole process (Linux allows a user only 128 of them by
// default), with one watch per directory shared by every ChangeWatch on it. Poll drains the
// instance without blocking and moves the count of each directory an event names; the kernel
// queues an event before the system call that made the change returns (fsnotify runs inside
// it), so a change that completed before Poll began is always counted.
//
// A watch ends (Poll answers NotFound from then on, and its owner makes a new one) when
// - its path no longer names the directory it was made on. The kernel reports a removed
//   directory only once nothing holds it any more, and a directory moved away and replaced
//   by another reports nothing, so the directories above it are watched too, up to the root
//   of its mount: its parent for an entry of its name made, removed or moved, every other
//   one for its own move or removal (a mount's root cannot be moved). A path that is not
//   absolute, or a kernel that cannot tell a mount's root (before 5.8), falls back to one
//   stat(2) of the path per poll. Events do not tell of a file system mounted over the
//   directory or one above it while it is watched.
// - the kernel ends it (IN_IGNORED, IN_DELETE_SELF, IN_MOVE_SELF, IN_UNMOUNT),
// - the queue overflowed (IN_Q_OVERFLOW: events were lost, so every watch ends), or
// - the process is a child forked after the instance was made (it shares the parent's queue
//   and must not read it; it makes no watches either).
//
// Only file systems whose every change passes through this kernel are watched: ext2/3/4, XFS,
// Btrfs and tmpfs. Anything else (NFS, CIFS, FUSE, Ceph, overlay, ...) is NotSupported.
#pragma once

#include <memory>
#include <string>

#include "strata/object_store.h"
#include "strata/status.h"

namespace strata::io {

// Watches the entries of the directory open at `dir_fd` (any descriptor of it, O_PATH will
// do; the caller keeps and closes it), whose path is `path`. NotSupported on other file
// systems, when /proc is unavailable, or when the kernel refuses another inotify instance or
// watch.
Result<std::unique_ptr<ChangeWatch>> WatchDirectory(int dir_fd, const std::string& path);

}  // namespace strata::io
