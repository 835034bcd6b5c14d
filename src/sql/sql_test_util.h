// Shared by the sql tests: a store with one column of each kind the SQL table maps, rows
// written as the test knows them, and results as comparable text.
#pragma once

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/generic_store.h"
#include "strata/json.h"
#include "strata/object_store.h"
#include "strata/sql.h"
#include "strata/storage_base.h"
#include "support/status_assertions.h"
#include "support/temp_dir.h"

namespace strata::sql::testing {

// One row of the test store, as the test writes it.
struct Row {
  std::string id;
  std::optional<std::string> name;
  std::optional<int64_t> n;
  std::optional<int8_t> small;
  std::optional<float> score;
  std::optional<double> weight;
  std::optional<bool> flag;
  std::optional<int64_t> ts;  // microseconds
  std::optional<std::vector<std::string>> tags;
  std::optional<std::string> payload;  // blob column
};

inline SchemaPtr TestSchema() {
  return schema({field("id", utf8(), false), field("name", utf8()), field("n", int64()),
                 field("small", int8()), field("score", float32()), field("weight", float64()),
                 field("flag", boolean()), field("ts", timestamp_us()), field("tags", list(utf8())),
                 field("payload", large_binary(), true,
                       KeyValueMetadata({{std::string(store::kBlobColumnMetadata), "true"}}))});
}

// The JSON codec's input for a double (NaN and the infinities as strings).
inline nlohmann::json JsonNumber(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return d;
}

inline std::string JsonLine(const Row& r) {
  nlohmann::json j;
  j["id"] = r.id;
  if (r.name) j["name"] = *r.name;
  if (r.n) j["n"] = *r.n;
  if (r.small) j["small"] = *r.small;
  if (r.score) j["score"] = JsonNumber(static_cast<double>(*r.score));
  if (r.weight) j["weight"] = JsonNumber(*r.weight);
  if (r.flag) j["flag"] = *r.flag;
  if (r.ts) j["ts"] = *r.ts;
  if (r.tags) j["tags"] = *r.tags;
  if (r.payload) j["payload"] = json::Base64Encode(*r.payload);
  return j.dump() + "\n";
}

inline RecordBatch Batch(const std::vector<Row>& rows) {
  std::string lines;
  for (const Row& r : rows) lines += JsonLine(r);
  Result<RecordBatch> batch = json::RowsToBatch(TestSchema(), lines);
  EXPECT_TRUE(batch.ok()) << batch.status();
  return batch.ok() ? *batch : RecordBatch::MakeEmpty(TestSchema());
}

// A result row as comparable text: each value typed and JSON-encoded.
inline std::string RowText(const std::vector<Value>& row) {
  std::string out;
  for (const Value& v : row) {
    out += "nifsb"[v.index()];
    AppendJson(v, &out);
    out += '|';
  }
  return out;
}

inline std::vector<std::string> SortedRows(const std::vector<std::vector<Value>>& rows) {
  std::vector<std::string> out;
  out.reserve(rows.size());
  for (const auto& r : rows) out.push_back(RowText(r));
  std::sort(out.begin(), out.end());
  return out;
}

class SqlStoreTest : public ::testing::Test {
 public:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(objects_, OpenLocalObjectStore(dir_.str(), {.sync = false}));
    store::StorageBaseOptions options;
    options.schema = TestSchema();
    options.key_column = "id";
    options.generation_delete_delay_seconds = 0;
    ASSERT_OK_AND_ASSIGN(base_, store::StorageBase::Open(objects_, "", std::move(options)));
  }

  // Writes `rows` and makes them visible (one pending generation).
  void Put(const std::vector<Row>& rows) {
    ASSERT_OK(base_->Put({Batch(rows)}));
    ASSERT_OK(base_->Flush().status());
  }

  Result<QueryResult> Run(std::string_view sql, QueryOptions options = {},
                          QueryStats* stats = nullptr) {
    return Query(*base_, sql, options, stats);
  }

  std::vector<std::string> Column0(std::string_view sql) {
    Result<QueryResult> result = Run(sql);
    EXPECT_TRUE(result.ok()) << sql << ": " << result.status();
    std::vector<std::string> out;
    if (!result.ok()) return out;
    for (const auto& row : result->rows) {
      std::string text;
      AppendJson(row.at(0), &text);
      out.push_back(text);
    }
    return out;
  }

  void ExpectRefused(std::string_view sql, std::string_view why) {
    Result<QueryResult> result = Run(sql);
    ASSERT_FALSE(result.ok()) << sql;
    EXPECT_EQ(result.status().code(), StatusCode::kInvalidArgument)
        << sql << ": " << result.status();
    EXPECT_THAT(result.status().message(), ::testing::HasSubstr(why)) << sql;
  }

  strata::testing::TempDir dir_{"sql"};
  std::shared_ptr<ObjectStore> objects_;
  std::unique_ptr<store::StorageBase> base_;
};

}  // namespace strata::sql::testing
