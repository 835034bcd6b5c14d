// The interop data spec (README.md) in C++: cases, schema and expected batches, built with
// strata's builders. spec.mjs implements the same spec independently; change both together.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/record_batch.h"
#include "strata/status.h"
#include "strata/type.h"

namespace strata::interop {

struct Case {
  std::string name;
  int64_t first_row = 0;
  std::vector<int64_t> batch_rows;
  std::string compression;  // "none", "lz4" or "zstd"
  // Batches are slices of one batch built from row 0 (odd offsets, shared dictionaries).
  bool sliced = false;
  // Body alignment strata writes with (8 or 64); the spec's values do not depend on it.
  int alignment = 64;
};

const std::vector<Case>& Cases();

SchemaPtr SpecSchema();

// The spec's rows [first, first + count) as one batch.
Result<RecordBatch> BuildBatch(int64_t first, int64_t count);

// The batches of a case as strata writes them: built one by one, or sliced out of a larger
// batch for a sliced case.
Result<std::vector<RecordBatch>> CaseBatches(const Case& c);

// Empty when `got` holds the same values as `want` at every row (children of null rows are
// not compared; NaN equals NaN); otherwise where and how they first differ. Rows are
// reported as first_row + index.
std::string DiffArrays(const Array& want, const Array& got, int64_t first_row = 0);

}  // namespace strata::interop
