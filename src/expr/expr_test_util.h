// Helpers shared by the expr tests: evaluate a predicate over a batch as a compact string.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "strata/expr.h"
#include "strata/json.h"

namespace strata::expr::testing {

inline RecordBatch BatchFromJson(const SchemaPtr& schema, std::string_view json_lines) {
  Result<RecordBatch> batch = json::RowsToBatch(schema, json_lines);
  EXPECT_TRUE(batch.ok()) << batch.status();
  return batch.ok() ? *batch : RecordBatch::MakeEmpty(schema);
}

// One character per row: T (true), F (false), N (null); or "error: <status>".
inline std::string Results(const RecordBatch& batch, std::string_view predicate) {
  Result<BoundExpr> bound = ParseAndBind(predicate, batch.schema());
  if (!bound.ok()) return "error: " + bound.status().ToString();
  Result<Array> values = Evaluate(*bound, batch);
  if (!values.ok()) return "error: " + values.status().ToString();
  EXPECT_TRUE(values->Validate().ok());
  std::string out;
  for (int64_t i = 0; i < values->length(); ++i) {
    out += values->IsNull(i) ? 'N' : (values->BoolValue(i) ? 'T' : 'F');
  }
  // Select, SelectBitmap and CountMatches must agree with Evaluate.
  Result<std::vector<int64_t>> rows = Select(*bound, batch);
  EXPECT_TRUE(rows.ok());
  std::string selected(out.size(), '.');
  if (rows.ok()) {
    for (int64_t r : *rows) selected[r] = 'T';
    EXPECT_EQ(static_cast<int64_t>(rows->size()), *CountMatches(*bound, batch));
  }
  std::string expected_selected = out;
  for (char& c : expected_selected) c = c == 'T' ? 'T' : '.';
  EXPECT_EQ(selected, expected_selected) << predicate;
  Result<Buffer> bitmap = SelectBitmap(*bound, batch);
  EXPECT_TRUE(bitmap.ok());
  if (bitmap.ok()) {
    EXPECT_EQ(bitmap->size(), bit_util::BytesForBits(batch.num_rows()));
    for (int64_t i = 0; i < batch.num_rows(); ++i) {
      EXPECT_EQ(bit_util::GetBit(bitmap->data(), i), out[i] == 'T') << predicate << " row " << i;
    }
  }
  return out;
}

// The error message of binding `predicate`, or "" if it binds.
inline std::string BindError(const SchemaPtr& schema, std::string_view predicate) {
  Result<BoundExpr> bound = ParseAndBind(predicate, schema);
  if (bound.ok()) return "";
  EXPECT_TRUE(bound.status().IsInvalidArgument()) << bound.status();
  return bound.status().message();
}

}  // namespace strata::expr::testing
