// GenericStore's JSON codec: every column kind in both directions and the message of every
// kind of bad row, which names the row (from 0) and the column.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "strata/builder.h"
#include "strata/generic_store.h"
#include "support/status_assertions.h"

namespace strata::store {
namespace {

SchemaPtr TestSchema() {
  auto spec = SchemaSpec::FromJson(R"({"columns": [
    ["id", {"type": "string", "nullable": false}],
    ["score", {"type": "float32"}],
    ["d", {"type": "float64"}],
    ["n", {"type": "int32"}],
    ["big", {"type": "int64"}],
    ["ok", {"type": "bool"}],
    ["at", {"type": "timestamp"}],
    ["video", {"type": "binary", "blob": true}],
    ["embedding", {"type": "vector", "dim": 3}],
    ["tags", {"type": "list", "item": {"type": "string"}}],
    ["counts", {"type": "list", "item": {"type": "int32"}}],
    ["req", {"type": "int64", "nullable": false}]]})");
  EXPECT_TRUE(spec.ok()) << spec.status();
  auto schema = spec->ToArrowSchema();
  EXPECT_TRUE(schema.ok()) << schema.status();
  return *schema;
}

std::string RoundTrip(std::string_view rows) {
  auto batch = EncodeJsonRows(TestSchema(), rows);
  EXPECT_TRUE(batch.ok()) << batch.status();
  if (!batch.ok()) return "";
  std::string out;
  EXPECT_TRUE(AppendRowsAsJson(*batch, &out).ok());
  return out;
}

std::string EncodeError(std::string_view rows) {
  auto batch = EncodeJsonRows(TestSchema(), rows);
  EXPECT_FALSE(batch.ok()) << rows;
  if (batch.ok()) return "";
  EXPECT_TRUE(batch.status().IsInvalidArgument()) << batch.status();
  return std::string(batch.status().message());
}

TEST(GenericCodecTest, EveryColumnKindRoundTrips) {
  EXPECT_EQ(
      RoundTrip(R"({"id": "a", "score": 1.5, "d": 0.1, "n": -7, "big": 9007199254740993,)"
                R"( "ok": true, "at": "2024-05-01T00:00:00Z", "video": [1, 2, 3],)"
                R"( "embedding": [1, 2.5, -3], "tags": ["x", null, "z"], "counts": [], "req": 1})"),
      R"({"id":"a","score":1.5,"d":0.1,"n":-7,"big":9007199254740993,"ok":true,)"
      R"("at":1714521600000000,"video":"AQID","embedding":[1,2.5,-3],"tags":["x",null,"z"],)"
      R"("counts":[],"req":1})"
      "\n");
  // Nulls are left out; integers for floats; timestamps from microseconds; base64 binary.
  EXPECT_EQ(RoundTrip(R"({"id": "b", "score": 2, "d": null, "at": 12, "video": "AQID", "req": 0})"),
            "{\"id\":\"b\",\"score\":2,\"at\":12,\"video\":\"AQID\",\"req\":0}\n");
}

TEST(GenericCodecTest, ArraysAndJsonLinesBothWork) {
  EXPECT_EQ(RoundTrip("\n{\"id\": \"a\", \"req\": 1}\r\n\n{\"id\": \"b\", \"req\": 2}\n"),
            "{\"id\":\"a\",\"req\":1}\n{\"id\":\"b\",\"req\":2}\n");
  EXPECT_EQ(RoundTrip(" [{\"id\": \"a\", \"req\": 1},\n {\"id\": \"b\", \"req\": 2}]"),
            "{\"id\":\"a\",\"req\":1}\n{\"id\":\"b\",\"req\":2}\n");
  EXPECT_EQ(RoundTrip(""), "");
  EXPECT_EQ(RoundTrip("[]"), "");
}

TEST(GenericCodecTest, NonFiniteFloatsAreWrittenAsNull) {
  EXPECT_EQ(
      RoundTrip(
          R"({"id": "a", "score": "NaN", "d": "-Infinity", "embedding": [1, "Infinity", 2], "req": 1})"),
      "{\"id\":\"a\",\"score\":null,\"d\":null,\"embedding\":[1,null,2],\"req\":1}\n");
}

TEST(GenericCodecTest, BadRowsNameTheRowAndTheColumn) {
  // Rows count from 0 in both forms; blank lines do not count.
  EXPECT_EQ(EncodeError("{\"id\": \"a\", \"req\": 1}\n\n{\"id\": \"b\", \"req\": 1, \"x\": 2}"),
            "row 1: column 'x' is not declared in the store schema");
  EXPECT_EQ(EncodeError(R"([{"id": "a", "req": 1}, {"id": "b", "req": 1, "x": 2}])"),
            "row 1: column 'x' is not declared in the store schema");
  EXPECT_EQ(EncodeError(R"({"id": "a"})"),
            "row 0: column 'req' is not nullable and was not supplied");
  EXPECT_EQ(EncodeError(R"({"id": null, "req": 1})"),
            "row 0: column 'id' is not nullable and was not supplied");
  EXPECT_EQ(EncodeError(R"({"id": 5, "req": 1})"),
            "row 0: column 'id' expects a string, got number 5");
  EXPECT_EQ(EncodeError(R"({"id": "a", "req": 1, "n": 2147483648})"),
            "row 0: column 'n' expects an int32 integer, got number 2147483648 (out of range)");
  EXPECT_EQ(EncodeError(R"({"id": "a", "req": 1, "n": 1.5})"),
            "row 0: column 'n' expects an int32 integer, got number 1.5 (not an integer)");
  EXPECT_EQ(EncodeError(R"({"id": "a", "req": 1, "score": "abc"})"),
            "row 0: column 'score' expects a number, got string \"abc\"");
  EXPECT_EQ(EncodeError(R"({"id": "a", "req": 1, "ok": 1})"),
            "row 0: column 'ok' expects true or false, got number 1");
  EXPECT_EQ(EncodeError(R"({"id": "a", "req": 1, "at": "yesterday"})").substr(0, 100),
            std::string("row 0: column 'at' expects a timestamp (integer microseconds or an RFC "
                        "3339 string), got string \"yesterday\" (")
                .substr(0, 100));
  EXPECT_TRUE(EncodeError(R"({"id": "a", "req": 1, "video": "!!"})")
                  .starts_with("row 0: column 'video' expects bytes (a base64 string or an array "
                               "of integers 0..255), got string \"!!\" (not base64"));
  EXPECT_EQ(EncodeError(R"({"id": "a", "req": 1, "video": [1, 256]})"),
            "row 0: column 'video[1]' expects bytes (a base64 string or an array of integers "
            "0..255), got number 256 (not a byte: an integer 0..255)");
  EXPECT_EQ(EncodeError(R"({"id": "a", "req": 1, "embedding": [1, 2]})"),
            "row 0: column 'embedding' expects a vector of 3 values, got 2");
  EXPECT_EQ(EncodeError(R"({"id": "a", "req": 1, "embedding": "x"})"),
            "row 0: column 'embedding' expects a vector of 3 numbers, got string \"x\"");
  EXPECT_EQ(EncodeError(R"({"id": "a", "req": 1, "embedding": [1, "x", 2]})"),
            "row 0: column 'embedding[1]' expects a number, got string \"x\"");
  // A vector is exactly dim numbers: a null element is refused (a null vector is not).
  EXPECT_EQ(EncodeError("{\"id\": \"a\", \"req\": 1, \"embedding\": null}\n"
                        "{\"id\": \"b\", \"req\": 1, \"embedding\": [1, 2, null]}"),
            "row 1: column 'embedding[2]' expects a number, got null");
  EXPECT_EQ(EncodeError(R"({"id": "a", "req": 1, "tags": "x"})"),
            "row 0: column 'tags' expects a list (a JSON array), got string \"x\"");
  EXPECT_EQ(EncodeError(R"({"id": "a", "req": 1, "counts": [1, "2"]})"),
            "row 0: column 'counts[1]' expects an int32 integer, got string \"2\"");
  EXPECT_EQ(EncodeError(R"({"id": "a", "id": "b", "req": 1})"),
            "row 0: column 'id' is given twice");
  // Not rows at all.
  EXPECT_EQ(EncodeError("{\"id\": \"a\", \"req\": 1}\n{\"id\": "),
            "line 2: malformed JSON at column 8: syntax error while parsing value - unexpected "
            "end of input; expected '[', '{', or a literal");
  // An array element that is not an object is numbered from 0 too, as its value errors are.
  EXPECT_EQ(EncodeError("[1]"), "row 0: expected a JSON object, found number 1");
  EXPECT_EQ(EncodeError(R"([{"id": "a", "req": 1}, null])"),
            "row 1: expected a JSON object, found null");
  EXPECT_EQ(EncodeError(R"([{"id": "a", "req": 1}, {"id": "b"}])"),
            "row 1: column 'req' is not nullable and was not supplied");
  EXPECT_EQ(EncodeError("5"), "line 1: expected a JSON object, found number 5");
}

TEST(GenericCodecTest, OnlyTheBatchColumnsAreWritten) {
  ASSERT_OK_AND_ASSIGN(RecordBatch batch,
                       EncodeJsonRows(TestSchema(), R"({"id": "a", "n": 3, "req": 4})"));
  ASSERT_OK_AND_ASSIGN(SchemaPtr projected, batch.schema()->Project({3, 0}));
  ASSERT_OK_AND_ASSIGN(RecordBatch two,
                       RecordBatch::Make(projected, 1, {batch.column(3), batch.column(0)}));
  std::string out = "keep\n";
  ASSERT_OK(AppendRowsAsJson(two, &out));
  EXPECT_EQ(out, "keep\n{\"n\":3,\"id\":\"a\"}\n");
}

}  // namespace
}  // namespace strata::store
