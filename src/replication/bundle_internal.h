// The two steps of EncodeBundle, for an exporter that stages each part's rows section before
// it knows the rest of the header (src/replication/export.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strata/bundle.h"

namespace strata::replication::internal {

// The rows section of a bundle: an Arrow IPC stream of `rows` (batches of `schema`), zstd.
Result<std::string> WriteRowsSection(const SchemaPtr& schema, const std::vector<RecordBatch>& rows);

// The bundle of a rows section made by WriteRowsSection from `row_count` rows of `schema`,
// and `deletions`; otherwise as EncodeBundle.
Result<std::string> AssembleBundle(BundleHeader header, const Schema& schema,
                                   std::string_view rows_section, int64_t row_count,
                                   const RecordBatch& deletions, const BundleWriteOptions& options);

}  // namespace strata::replication::internal
