// Human-readable text for record batches and schemas: aligned tables for the CLI and logs.
//
// Array::ToString, Array::ValueToString and RecordBatch::ToString (declared with their classes)
// render JSON-like text; the functions here lay out whole tables. All functions are pure and
// thread safe. Output is for people, not for parsing (use the JSON codec for that).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "strata/record_batch.h"
#include "strata/type.h"

namespace strata {

struct TableFormatOptions {
  // Longer cells are cut to this many characters (code points), the last one being "…".
  int max_cell_width = 40;
  // At most this many rows are printed (a "… N more rows" line follows); -1 prints all.
  int64_t max_rows = -1;
};

// An aligned text table of the batches' rows (all batches must share the first one's
// columns):
//
//    id | name  | score
//   ----+-------+-------
//     1 | alice |   3.5
//     2 | null  |  null
//   (2 rows)
//
// A header row of column names, column widths from the content, numbers right-aligned, other
// values left-aligned (strings unquoted, control characters escaped), nested values as
// JSON-like text, and a footer with the total row count.
std::string FormatTable(const std::vector<RecordBatch>& batches,
                        const TableFormatOptions& options = {});

// One line per field ("name: type", " not null" when required), field metadata indented
// below its field, then the schema metadata.
std::string FormatSchema(const Schema& schema);

}  // namespace strata
