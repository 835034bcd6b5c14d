// Helpers shared by table_test.cc and scan_test.cc: status assertions, a small keyed schema
// with deterministic rows, and reading a whole scan into one batch.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "strata/builder.h"
#include "strata/json.h"
#include "strata/object_store.h"
#include "strata/table.h"
#include "support/status_assertions.h"

namespace strata::table::testing_util {

inline KeyValueMetadata PrimaryKey() { return KeyValueMetadata({{"strata:primary-key", "true"}}); }

// id int64 (primary key), name utf8, score float64.
inline SchemaPtr KeyedSchema() {
  return schema({field("id", int64(), false, PrimaryKey()), field("name", utf8()),
                 field("score", float64())});
}

// Rows first..first+n-1: name "n<i>" (null when i % 5 == 4), score i / 2 (null when
// i % 7 == 6).
inline RecordBatch KeyedRows(int64_t first, int64_t n, const SchemaPtr& s = KeyedSchema()) {
  Int64Builder ids(int64());
  BinaryBuilder names(utf8());
  Float64Builder scores(float64());
  for (int64_t i = first; i < first + n; ++i) {
    ids.Append(i);
    if (i % 5 == 4) {
      names.AppendNull();
    } else {
      EXPECT_TRUE(names.Append("n" + std::to_string(i)).ok());
    }
    if (i % 7 == 6) {
      scores.AppendNull();
    } else {
      scores.Append(static_cast<double>(i) / 2);
    }
  }
  Result<RecordBatch> batch =
      RecordBatch::Make(s, n, {*ids.Finish(), *names.Finish(), *scores.Finish()});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

// Every batch of a scan concatenated (an empty batch of the scan's schema when none).
inline Result<RecordBatch> ReadAll(const Table& table, const ScanOptions& options = {}) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<BatchIterator> it, table.Scan(options));
  STRATA_ASSIGN_OR_RETURN(std::vector<RecordBatch> batches, it->ToBatches());
  for (const RecordBatch& b : batches) {
    if (b.num_rows() == 0) return Status::Internal("scan returned an empty batch");
  }
  if (batches.empty()) return RecordBatch::MakeEmpty(it->schema());
  return ConcatenateBatches(batches);
}

// "id IN (...)" over the ids in [begin, end) for which `keep` holds.
template <typename Pred>
std::string IdsWhere(int64_t begin, int64_t end, Pred keep) {
  std::string list;
  for (int64_t i = begin; i < end; ++i) {
    if (keep(i)) list += (list.empty() ? "" : ", ") + std::to_string(i);
  }
  return "id IN (" + list + ")";
}

// The int64 values of column `name`.
inline std::vector<int64_t> Int64Column(const RecordBatch& batch, std::string_view name) {
  std::vector<int64_t> out;
  Array a = batch.GetColumnByName(name);
  EXPECT_TRUE(a.is_valid_handle()) << name;
  if (!a.is_valid_handle()) return out;
  for (int64_t i = 0; i < a.length(); ++i) out.push_back(a.IsNull(i) ? -1 : a.Value<int64_t>(i));
  return out;
}

inline std::vector<uint64_t> UInt64Column(const RecordBatch& batch, std::string_view name) {
  std::vector<uint64_t> out;
  Array a = batch.GetColumnByName(name);
  EXPECT_TRUE(a.is_valid_handle()) << name;
  if (!a.is_valid_handle()) return out;
  for (int64_t i = 0; i < a.length(); ++i) out.push_back(a.Value<uint64_t>(i));
  return out;
}

}  // namespace strata::table::testing_util
