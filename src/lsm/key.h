// Primary keys as bytes: every LSM structure (memtable index, dedup, bloom filters, merge)
// compares full encoded keys, never hashes alone (docs/format/lsm.md §4).
//
// Encoding (order-preserving within one key type): utf8 / large_utf8 / binary: the raw
// bytes; signed integers and timestamps: 8 bytes big-endian with the sign bit flipped;
// unsigned integers: 8 bytes big-endian. Null keys are not allowed (InvalidArgument).
#pragma once

#include <string>
#include <vector>

#include "strata/array.h"
#include "strata/expr.h"
#include "strata/status.h"
#include "strata/type.h"

namespace strata::lsm {

// True for the key types strata accepts (the table layer's primary-key types).
bool IsSupportedKeyType(const DataType& type);

// One encoded key per row of `column`. InvalidArgument naming `column_name` and the row
// for a null, or for an unsupported type.
Result<std::vector<std::string>> EncodeKeys(const Array& column, std::string_view column_name);

// The key of one row as a Scalar of the column's type (for table::Table::LookupKeys /
// DeleteKeys and for filters).
Result<expr::Scalar> KeyScalar(const Array& column, int64_t row);
// Encodes a Scalar the same way EncodeKeys encodes a value of `type`.
Result<std::string> EncodeKeyScalar(const expr::Scalar& key, const DataType& type);
// An array of `type` holding `keys` (tombstones); InvalidArgument naming the key for one that
// does not fit the type (a string for an integer key, an integer out of range).
Result<Array> KeysToArray(const std::vector<expr::Scalar>& keys, const DataTypePtr& type);
// The inverse of EncodeKeys for one value.
Result<expr::Scalar> DecodeKey(std::string_view encoded, const DataType& type);

}  // namespace strata::lsm
