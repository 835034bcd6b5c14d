// The `strata table` commands that change a table refuse the base table of a typed store
// (include/strata/storage_base.h: OwningStoreKind, CheckBaseTableChange) and name the
// command to use instead.
#include <fmt/format.h>

#include <memory>
#include <optional>
#include <string>

#include "strata/object_store.h"
#include "strata/rollout_store.h"
#include "strata/storage_base.h"
#include "table_cli.h"

namespace strata::cli {
namespace {

// The command of a store of `kind` that does what `change` was meant to do; "" when none.
std::string Instead(std::string_view kind, store::BaseTableChange change) {
  using store::BaseTableChange;
  const bool rollout = kind == store::kRolloutStoreKind;
  switch (change) {
    case BaseTableChange::kAppend:
      return rollout ? "use `strata rollout add`" : "add rows through the store";
    case BaseTableChange::kAddColumns:
    case BaseTableChange::kDeleteRows:
      return rollout ? "change it with the `strata rollout` commands" : "";
    case BaseTableChange::kCompactKeepingDeletions:
      return rollout ? "use `strata rollout compact`"
                     : "compact without --no-materialize-deletions";
    case BaseTableChange::kCompact:
    case BaseTableChange::kRepair:
    case BaseTableChange::kRemoveOldVersions:
    case BaseTableChange::kDeleteUnreferencedFiles:
    case BaseTableChange::kRollBackCorruptVersions:
      break;
  }
  return "";
}

}  // namespace

Status CheckTableChangeAllowed(const std::string& dir, const table::Table& t,
                               store::BaseTableChange change) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> objects, OpenLocalObjectStore(dir));
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> kind,
                          store::OwningStoreKind(*objects, "", *t.schema()));
  if (!kind.has_value()) return Status::OK();
  Status allowed = store::CheckBaseTableChange(*kind, change);
  if (allowed.ok()) return Status::OK();
  std::string instead = Instead(*kind, change);
  // A store made before kinds were recorded is named without one.
  std::string store =
      *kind == store::kUnrecordedStoreKind ? "a store" : fmt::format("a {} store", *kind);
  return Status(allowed.code(),
                fmt::format("'{}' is {}, not a plain table: {}{}", dir, store, allowed.message(),
                            instead.empty() ? "" : "; " + instead));
}

}  // namespace strata::cli
