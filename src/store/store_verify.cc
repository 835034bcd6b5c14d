// VerifyStore (storage_base.h): the base table's verifier followed by the LSM side's
// (lsm/verify.h), into one report.
#include <fmt/format.h>

#include "lsm/layout.h"
#include "lsm/verify.h"
#include "strata/storage_base.h"

namespace strata::store {

Result<table::VerifyReport> VerifyStore(std::shared_ptr<ObjectStore> store, std::string prefix,
                                        const table::VerifyOptions& options) {
  if (store == nullptr) return Status::InvalidArgument("verify: no object store");
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> base, table::Table::Open(store, prefix));
  STRATA_ASSIGN_OR_RETURN(table::VerifyReport report, base->Verify(options));
  if (Result<lsm::Watermarks> watermarks = lsm::ReadWatermarks(base->metadata());
      !watermarks.ok()) {
    report.problems.push_back(fmt::format("version {}: merge watermarks: {} ({})", base->version(),
                                          watermarks.status().message(),
                                          StatusCodeName(watermarks.status().code())));
  }
  STRATA_RETURN_IF_ERROR(lsm::VerifyShards(store, prefix, &report));
  return report;
}

}  // namespace strata::store
