// How store columns appear in SQLite: the declared type of each column of `records`, which
// ones are HIDDEN, and the conversion of a cell to an SQLite value (include/strata/sql.h lists
// the mapping).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "strata/array.h"
#include "strata/record_batch.h"
#include "strata/type.h"

namespace strata::sql {

// "INTEGER", "REAL", "TEXT" or "BLOB".
std::string_view SqlTypeOf(const DataType& type);
// A blob column of a store (field metadata kBlobColumnMetadata = "true"): HIDDEN in `records`.
bool IsBlobColumn(const Field& field);
// `name` quoted as an SQLite identifier.
std::string QuoteSqlIdentifier(std::string_view name);
// CREATE TABLE <table>(...) WITHOUT ROWID with one column per field of `schema`; column
// `key_column` (-1: none) is the PRIMARY KEY. Without rowids SQLite tells rows apart by the
// key (e.g. to unite the rows of OR branches it plans as separate scans); the store holds one
// live row per key, so the key is unique as declared.
std::string RecordsTableDeclaration(const Schema& schema, int key_column, std::string_view table);

// The SQLite values of one column of one batch. Cheap to make once per batch and column.
class ColumnCells {
 public:
  ColumnCells() = default;
  explicit ColumnCells(Array array);

  // Whether the column was read (a default-made ColumnCells holds none).
  bool has_values() const { return array_.is_valid_handle(); }
  // Sets the result of an xColumn call to the value at `row`.
  void SetResult(sqlite3_context* context, int64_t row) const;

 private:
  Array array_;
  // Nested columns: the column as a one-column batch ("v"), for the JSON codec.
  RecordBatch json_batch_;
};

// The double SQLite shows for a float32: its shortest decimal form, read as a double.
double Float32AsShownDouble(float value);

}  // namespace strata::sql
