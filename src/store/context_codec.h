// The context store's record codec beyond the public DecodeContextRecords
// (include/strata/context_store.h), for the store's own readers.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/context_store.h"
#include "strata/record_batch.h"
#include "strata/status.h"

namespace strata::store {

// `bytes` as UTF-8, each invalid sequence replaced by U+FFFD: how a binary text_payload (a blob
// column) reads as text, as the reference's lossy decoding does.
std::string LossyUtf8(std::string_view bytes);

// As DecodeContextRecords, for rows `rows` of `batch` only, in that order: a scan that keeps
// a few rows of each batch decodes only those. REQUIRES every row < batch.num_rows().
Result<std::vector<ContextRecord>> DecodeContextRecordRows(const RecordBatch& batch,
                                                           std::span<const int64_t> rows);

}  // namespace strata::store
