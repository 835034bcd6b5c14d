// Tests of record batch helpers (record_batch.h): aligning a batch to a target schema by
// column name.
#include "strata/record_batch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "strata/builder.h"
#include "support/status_assertions.h"

namespace strata {
namespace {

using ::testing::HasSubstr;

// id int64 (not null), name utf8, score float64.
SchemaPtr KeyedSchema() {
  return schema({field("id", int64(), false), field("name", utf8()), field("score", float64())});
}

// Rows first..first+n-1 of KeyedSchema: name "n<i>", score i / 2.
RecordBatch KeyedRows(int64_t first, int64_t n) {
  Int64Builder ids(int64());
  BinaryBuilder names(utf8());
  Float64Builder scores(float64());
  for (int64_t i = first; i < first + n; ++i) {
    ids.Append(i);
    EXPECT_TRUE(names.Append("n" + std::to_string(i)).ok());
    scores.Append(static_cast<double>(i) / 2);
  }
  Result<RecordBatch> batch =
      RecordBatch::Make(KeyedSchema(), n, {*ids.Finish(), *names.Finish(), *scores.Finish()});
  EXPECT_TRUE(batch.ok()) << batch.status();
  return *batch;
}

// The int64 values of column `name` (-1 for null).
std::vector<int64_t> Int64Column(const RecordBatch& batch, std::string_view name) {
  std::vector<int64_t> out;
  Array a = batch.GetColumnByName(name);
  EXPECT_TRUE(a.is_valid_handle()) << name;
  if (!a.is_valid_handle()) return out;
  for (int64_t i = 0; i < a.length(); ++i) out.push_back(a.IsNull(i) ? -1 : a.Value<int64_t>(i));
  return out;
}

TEST(AlignBatchToSchemaTest, MissingNullableColumnBecomesNullAndOrderFollowsTarget) {
  SchemaPtr target = KeyedSchema();
  Int64Builder ids(int64());
  ids.Append(1);
  ids.Append(2);
  Float64Builder scores(float64());
  scores.Append(0.5);
  scores.Append(1.5);
  SchemaPtr partial = schema({field("score", float64()), field("id", int64(), false)});
  ASSERT_OK_AND_ASSIGN(RecordBatch batch,
                       RecordBatch::Make(partial, 2, {*scores.Finish(), *ids.Finish()}));
  ASSERT_OK_AND_ASSIGN(RecordBatch aligned, AlignBatchToSchema(batch, target));
  EXPECT_TRUE(aligned.schema()->Equals(*target));
  EXPECT_EQ(Int64Column(aligned, "id"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(aligned.GetColumnByName("name").null_count(), 2);
  EXPECT_EQ(aligned.GetColumnByName("score").Value<double>(1), 1.5);
}

TEST(AlignBatchToSchemaTest, MissingRequiredExtraOrMistypedColumnIsInvalidArgument) {
  SchemaPtr target = KeyedSchema();
  // Missing the non-nullable key.
  RecordBatch full = KeyedRows(0, 3);
  ASSERT_OK_AND_ASSIGN(RecordBatch no_key, full.Project({1, 2}));
  Result<RecordBatch> missing = AlignBatchToSchema(no_key, target);
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(missing.status().IsInvalidArgument());
  EXPECT_THAT(missing.status().message(), HasSubstr("'id'"));

  // An extra column.
  SchemaPtr extra_schema = schema({field("id", int64(), false), field("name", utf8()),
                                   field("score", float64()), field("extra", int64())});
  ASSERT_OK_AND_ASSIGN(RecordBatch extra,
                       RecordBatch::Make(extra_schema, 3,
                                         {full.column(0), full.column(1), full.column(2),
                                          Array::MakeNull(int64(), 3)}));
  Result<RecordBatch> extra_result = AlignBatchToSchema(extra, target);
  ASSERT_FALSE(extra_result.ok());
  EXPECT_TRUE(extra_result.status().IsInvalidArgument());
  EXPECT_THAT(extra_result.status().message(), HasSubstr("'extra'"));

  // A type mismatch names the column and both types.
  SchemaPtr mistyped = schema({field("id", int64(), false), field("name", int64())});
  ASSERT_OK_AND_ASSIGN(RecordBatch wrong,
                       RecordBatch::Make(mistyped, 3, {full.column(0), full.column(0)}));
  Result<RecordBatch> wrong_result = AlignBatchToSchema(wrong, target);
  ASSERT_FALSE(wrong_result.ok());
  EXPECT_TRUE(wrong_result.status().IsInvalidArgument());
  EXPECT_THAT(wrong_result.status().message(), HasSubstr("'name'"));
  EXPECT_THAT(wrong_result.status().message(), HasSubstr(int64()->ToString()));
  EXPECT_THAT(wrong_result.status().message(), HasSubstr(utf8()->ToString()));
}

}  // namespace
}  // namespace strata
