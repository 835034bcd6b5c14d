// The two steps of EncodeBundle, for an exporter that stages each part's rows section before
// it knows the rest of the header (src/replication/export.cc).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/bundle.h"

namespace strata::replication::internal {

// The order of chain positions: by cursor, and within a cursor the parts 1, 2, ... of a split
// export before part 0 (the export's end).
inline std::pair<uint64_t, uint64_t> StateOrder(uint64_t cursor, uint32_t part) {
  return {cursor, part == 0 ? uint64_t{1} << 32 : part};
}

// The rows section of a bundle: an Arrow IPC stream of `rows` (batches of `schema`), zstd.
Result<std::string> WriteRowsSection(const SchemaPtr& schema, const std::vector<RecordBatch>& rows);

// The bundle of a rows section made by WriteRowsSection from `row_count` rows of `schema`,
// and `deletions`; otherwise as EncodeBundle.
Result<std::string> AssembleBundle(BundleHeader header, const Schema& schema,
                                   std::string_view rows_section, int64_t row_count,
                                   const RecordBatch& deletions, const BundleWriteOptions& options);

}  // namespace strata::replication::internal
