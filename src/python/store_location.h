// Where a store lives: the URIs lance-context's Python API takes, resolved to an ObjectStore.
//
//   /path/to/store, relative/path   a local directory (created when the store is)
//   file:///path/to/store           the same (percent-escapes decoded; host empty or localhost)
//   memory://NAME                   a process-local in-memory store: every open of the same
//                                   NAME in this process shares it, distinct names are
//                                   isolated; it lives until the process exits
// Any other scheme ("s3://...") is InvalidArgument naming the schemes strata opens.
//
// storage_options: a local store takes "sync" (true, the default: every write is fsynced;
// false: "process" durability, the page cache only — survives the process, not the machine);
// a memory store takes none. An unknown option is InvalidArgument naming it.
//
// A store is created only where nothing else is: at a new location, or in an empty directory
// (or memory store). A location holding a table owned by another kind of store is refused
// before the typed store opens it, so that a store's schema evolution never touches another
// kind's table (as the CLI does).
//
// Thread safety: every function may be called from any thread (the memory registry has its
// own lock); none needs the GIL.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "strata/object_store.h"
#include "strata/status.h"

namespace strata::python {

struct StoreLocation {
  std::shared_ptr<ObjectStore> objects;
  std::string prefix;   // of the store within `objects` ("" today)
  bool exists = false;  // a table is there
};

enum class OpenMode {
  kCreateIfMissing,
  kExisting,  // NotFound, and nothing created, when there is no store
};

// The object store at `uri`, a directory of any content (bundles, say): NotFound, and nothing
// created, when it does not exist and !create_if_missing. `empty`: it holds no object.
struct ResolvedObjects {
  std::shared_ptr<ObjectStore> objects;
  bool empty = true;
};
Result<ResolvedObjects> ResolveObjects(std::string_view uri,
                                       const std::map<std::string, std::string>& storage_options,
                                       bool create_if_missing, std::string_view noun);

// Resolves `uri` for a store of kind `kind` ("" = any kind) (store::kRolloutStoreKind, ...; `noun`
// is how messages name it: "rollout store"). With kExisting, a location without a table is
// NotFound; with kCreateIfMissing, a location that holds anything but a table is InvalidArgument.
Result<StoreLocation> ResolveStore(std::string_view uri,
                                   const std::map<std::string, std::string>& storage_options,
                                   std::string_view kind, std::string_view noun, OpenMode mode);

}  // namespace strata::python
