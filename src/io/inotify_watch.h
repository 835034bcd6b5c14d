// ChangeWatch over inotify(7): the local object store's ObjectStore::Watch.
//
// One inotify instance serves the whole process (Linux allows a user only 128 of them by
// default), with one watch per directory shared by every ChangeWatch on it. Poll drains the
// instance without blocking and moves the count of each directory an event names; the kernel
// queues an event before the system call that made the change returns (fsnotify runs inside
// it), so a change that completed before Poll began is always counted (before the batch
// began, inside a ChangeWatchBatch: io/watch_batch.h).
//
// A watch ends (Poll answers NotFound from then on, and its owner makes a new one) when
// - its path no longer names the directory it was made on. The kernel reports a removed
//   directory only once nothing holds it any more, and a directory moved away and replaced
//   by another reports nothing, so the directories above it are watched too, up to the
//   process's root: its parent for an entry of its name made, removed or moved, every other
//   one for its own move or removal. Where that cannot tell (a path that is not absolute or
//   has ".", ".." or empty components, a directory that is the root of a mount other than
//   the process's root or lies below one, as mounts move and unmount with no event, a kernel
//   before 5.8), each poll stats the path instead.
//   Events do not tell of a file system mounted over the directory or one above it.
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

// Whether `watch` (made by WatchDirectory) tells from events alone that its path still names
// its directory, rather than by a stat(2) per poll. For tests.
bool WatchesPathByEvents(const ChangeWatch& watch);

}  // namespace strata::io
