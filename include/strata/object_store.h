// ObjectStore: the one interface through which strata reads and writes persistent data.
//
// Keys are relative, '/'-separated paths ("tables/t1/_versions/5.manifest"). A key that is
// empty, absolute, contains "." / ".." segments, empty segments or NUL is rejected with
// InvalidArgument, so no key can escape the store's root.
//
// Contract for every implementation:
// - put() is atomic (readers see the old object or the whole new one, never a part) and,
//   on success, durable (for the local store: file and directory fsynced).
// - put_if_absent() creates the object only if no object has the key; of N concurrent
//   creators (threads or processes) exactly one succeeds, the others get AlreadyExists.
// - get_range() past the end returns the bytes that exist; a range starting past the end
//   is InvalidArgument. Missing objects are NotFound.
// - list(prefix) returns every key starting with `prefix`, sorted, with sizes.
// Thread safety: all methods may be called concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "strata/buffer.h"
#include "strata/status.h"

namespace strata {

struct ObjectMeta {
  std::string key;
  int64_t size = 0;
};

// An object written by appending: a log. Made by ObjectStore::CreateAppendable; one writer
// appends while readers may Get it at any time and see a prefix of what was appended (the
// last append possibly cut short: readers of logs must tolerate a torn tail).
class AppendableObject {
 public:
  virtual ~AppendableObject() = default;
  // Appends `data`. After an error the object must not be appended to again (its end may
  // hold part of `data`); Sync and Close still may be called.
  virtual Status Append(std::string_view data) = 0;
  // Makes every appended byte durable (fdatasync for the local store; a no-op for stores
  // without sync, such as memory or a local store with sync == false).
  virtual Status Sync() = 0;
  // Releases the handle; later calls fail with InvalidArgument. Idempotent.
  virtual Status Close() = 0;
  // Bytes appended so far through this handle.
  virtual int64_t size() const = 0;
};

// A cheap signal that the objects directly under one prefix of a store (its "directory";
// not the ones in deeper directories) may have changed: made by ObjectStore::Watch.
// Readers that cache what they read under a prefix (a version chain, a listing) poll it before
// they trust their copy, instead of sending requests to re-check it.
class ChangeWatch {
 public:
  virtual ~ChangeWatch() = default;
  // A number that moves whenever an object directly under the prefix may have been created,
  // replaced, appended to or deleted. Every such change that completed before the call began,
  // by any thread or process, has moved it when the call returns, so an answer read under the
  // prefix after an earlier Poll returned the same number is still current. It may move with
  // no change (false alarms), never stay with one. An error (the directory itself was removed
  // or replaced) means the watch is of no more use: make a new one, or re-check by requests.
  // Thread safe.
  virtual Result<uint64_t> Poll() = 0;
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;

  virtual Result<Buffer> Get(std::string_view key) = 0;
  virtual Result<Buffer> GetRange(std::string_view key, int64_t offset, int64_t length) = 0;
  virtual Result<ObjectMeta> Head(std::string_view key) = 0;
  virtual Status Put(std::string_view key, std::string_view data) = 0;
  virtual Status PutIfAbsent(std::string_view key, std::string_view data) = 0;
  virtual Result<std::vector<ObjectMeta>> List(std::string_view prefix) = 0;
  // NotFound when the key does not exist.
  virtual Status Delete(std::string_view key) = 0;
  // Deletes every key under the prefix; returns how many were removed.
  virtual Result<int64_t> DeletePrefix(std::string_view prefix) = 0;

  // Size of an object, via Head().
  Result<int64_t> Size(std::string_view key);
  // True when the key exists.
  Result<bool> Exists(std::string_view key);
  // Creates an empty object for appending; AlreadyExists when the key exists (of N
  // concurrent creators exactly one succeeds). The new object's name is durable on return.
  // Stores that cannot append (object stores without append) return NotSupported.
  virtual Result<std::unique_ptr<AppendableObject>> CreateAppendable(std::string_view key);

  // Makes `to` a new object holding the bytes of `from` (both keys of this store):
  // AlreadyExists when `to` exists, NotFound when `from` does not. Durable on return when
  // the store syncs. The local store hard-links (constant cost, no bytes written) and needs
  // `from` to be immutable from now on; the default implementation reads `from` and puts
  // `to` with PutIfAbsent.
  virtual Status Copy(std::string_view from, std::string_view to);

  // Watches the objects directly under `prefix` (ending with '/'; empty for the keys without
  // a '/'). NotSupported
  // when this store cannot tell every change as ChangeWatch::Poll promises (the default, and
  // object stores reached over a network); NotFound when nothing is under the prefix yet on a
  // store with directories. Callers fall back to re-checking by requests.
  virtual Result<std::unique_ptr<ChangeWatch>> Watch(std::string_view prefix);

  // A human-readable location, e.g. "file:///data/strata" or "memory://".
  virtual std::string Describe() const = 0;
};

// InvalidArgument unless `key` is a safe relative key (see above).
Status ValidateObjectKey(std::string_view key);
// Prefixes may be empty (everything) or end with '/'; otherwise validated like keys.
Status ValidateObjectPrefix(std::string_view prefix);
// InvalidArgument unless `prefix` is one ObjectStore::Watch accepts: empty or ending with '/'.
Status ValidateWatchPrefix(std::string_view prefix);
// The prefix ObjectStore::Watch takes for the directory holding `key`: everything up to and
// including its last '/' ("a/b/" for "a/b/c", "" for "c").
std::string_view WatchPrefixOf(std::string_view key);

class RandomSource;  // src/util/clock.h

struct LocalObjectStoreOptions {
  // fsync files and directories on every put. Off = "process" durability (page cache only).
  bool sync = true;
  // Map objects larger than this into memory on Get instead of reading them.
  int64_t mmap_threshold = 1 << 20;
  // Draws the store's temporary-file nonce; null = SystemRandom(). Used only while opening.
  RandomSource* random = nullptr;
  // Offer ObjectStore::Watch through inotify(7) where the file system reports every change
  // made on this machine (ext4, XFS, Btrfs, tmpfs); other file systems (NFS, FUSE, overlay
  // and any other) answer NotSupported, so readers re-check by requests. A watch follows a
  // directory, not its path: moving or replacing a store's directories (or one above them)
  // under a running process is not seen; reopen the store after doing that.
  bool watch_changes = true;
};

// Objects are files under `root` (created if missing): a put writes a temporary file
// (".strata-tmp-*": never listed, and keys with a segment of that prefix are InvalidArgument),
// syncs it, renames or links it into place and syncs the directory. A key cannot be both an
// object and a directory of objects ("a" and "a/b"). Symbolic links inside the root are never
// followed: listings skip them, and reads, writes and deletes through one fail with an
// IOError naming the link, so nothing outside the root is read or removed through a link
// placed in a store. See src/io/file_object_store.h.
Result<std::shared_ptr<ObjectStore>> OpenLocalObjectStore(const std::string& root,
                                                          LocalObjectStoreOptions options = {});
// Objects live in memory (tests, scratch).
std::shared_ptr<ObjectStore> NewMemoryObjectStore();

}  // namespace strata
