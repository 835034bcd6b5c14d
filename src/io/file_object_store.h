// FileObjectStore: the ObjectStore whose objects are files under a root directory of a
// FileSystem. OpenLocalObjectStore() is this over PosixFileSystem(); tests put a
// MemoryFileSystem or a FaultInjectionFileSystem underneath.
//
// Key "a/b/c" is the file <root>/a/b/c. How each operation keeps the ObjectStore contract:
// - Put writes a temporary file beside the object (".strata-tmp-<random>"), syncs it,
//   renames it over the key and syncs the directory, so readers see the old or the whole
//   new object and an acknowledged Put survives a power loss.
// - PutIfAbsent writes and syncs a temporary file, then link(2)s it to the key: link fails
//   with EEXIST when the key exists, so of any number of racing creators, threads or
//   processes, exactly one wins (the others get AlreadyExists); it then unlinks the temp
//   file and syncs the directory, also when losing, so AlreadyExists names a durable object.
// - CreateAppendable creates the file in place with O_EXCL (so of racing creators exactly
//   one wins) and syncs its directory, also when losing; appends go straight to the file
//   (readers see them at once), Sync fdatasyncs it (a no-op with options.sync == false).
// - Directories are created as keys need them; the first Put into a directory also syncs
//   every parent directory whose entry is not yet known to be durable. DeletePrefix removes
//   directories it empties.
// - With options.sync == false no file or directory is synced: "process" durability, the
//   objects survive the process's death but not the machine's.
// - Symbolic links inside the root are never followed: List skips them (and lists nothing
//   below a linked directory), and every other operation on a key whose path below the root
//   passes through a link fails with an IOError naming it. Delete and Put may replace or
//   remove a link that is the object itself, never what it points at. (The root itself may
//   be a link.) This guards against links placed in a store, not against someone swapping a
//   directory for a link between the check and the system call.
// Keys are checked by ValidateObjectKey before any file is touched; segments beginning
// with kTempFilePrefix are reserved (InvalidArgument). A key cannot be both an object and
// the directory of other objects ("a" and "a/b"): the second Put fails with an IOError.
// Temporary files left by a crash are never listed; nothing removes them yet.
// Errors: NotFound for missing objects; IOError from the file system (its message names the
// path and the errno text) prefixed with the operation and key.
// Thread safety: all methods may be called concurrently, and several processes may share
// one root.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "io/file_system.h"
#include "strata/object_store.h"

namespace strata::io {

inline constexpr std::string_view kTempFilePrefix = ".strata-tmp-";

// An ObjectStore over `fs` rooted at `root` (created, and made durable when options.sync).
// After a simulated crash of `fs`, open a new store: a store caches which directories are
// durable.
Result<std::shared_ptr<ObjectStore>> NewFileObjectStore(std::shared_ptr<FileSystem> fs,
                                                        std::string root,
                                                        LocalObjectStoreOptions options = {});

}  // namespace strata::io
