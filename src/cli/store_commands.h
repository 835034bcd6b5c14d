// `strata <store> flush | merge | compact`: the maintenance commands every typed store
// (rollout, generic, datagen) shares. They act on the store's StorageBase, so one
// implementation serves every kind and each kind's group only says how to open its store.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "strata/status.h"
#include "strata/storage_base.h"

namespace strata::cli {

// "default" for the empty shard name, the name itself otherwise.
std::string ShardName(const std::string& shard);

// Opens the store in local directory `dir` writing as `shard` ("" for the default) and
// returns its StorageBase; the pointer keeps the typed store that owns it alive.
using StoreOpener = std::function<Result<std::shared_ptr<store::StorageBase>>(
    const std::string& dir, const std::string& shard)>;

// The store-kind specific words of the shared commands.
struct StoreCommandTerms {
  std::string rows = "rows";  // what the store holds: "rows", "events"
  std::string dir_help;       // help of the DIR argument
  std::string shard_help;     // help of --shard
};

// Exit status of a merge that committed a base version and then failed (a later step of
// that pass, or a later pass with --all): distinct from 1, which means nothing changed.
inline constexpr int kExitMergeCommittedThenFailed = 3;

// Registers `flush`, `merge` and `compact` on `group`; the chosen command's exit status is
// stored in *exit_code when it runs.
void AddStoreMaintenanceCommands(CLI::App& group, int* exit_code, StoreOpener open,
                                 const StoreCommandTerms& terms);

// OK when the table in `objects` (prefix "") belongs to a store of `kind`; otherwise
// InvalidArgument "<dir>: not a <kind> store: it is a <other> store (use `strata <other>
// ...`)" or "... it holds a plain table (use `strata table ...`)". Nothing is changed.
Status CheckStoreKind(const std::shared_ptr<ObjectStore>& objects, const std::string& dir,
                      std::string_view kind);

// The StorageBase of a typed store held by `store`, sharing its ownership.
template <typename TypedStore>
std::shared_ptr<store::StorageBase> BaseOf(std::unique_ptr<TypedStore> store) {
  std::shared_ptr<TypedStore> owner = std::move(store);
  store::StorageBase* base = &owner->base();
  return std::shared_ptr<store::StorageBase>(std::move(owner), base);
}

}  // namespace strata::cli
