// Evaluation tests: every operator on every column type, SQL three-valued logic, nulls,
// sliced batches, dictionaries (including null entries), struct fields and lists.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "expr/expr_test_util.h"
#include "strata/builder.h"
#include "strata/expr.h"

namespace strata::expr {
namespace {

using testing::BatchFromJson;
using ::testing::ElementsAre;
using testing::Results;

// Five rows; every numeric column holds 1, 5, null, <small>, 100 where <small> is -3 for
// signed and float columns and 0 for unsigned ones, so most expectations are shared.
RecordBatch NumericBatch() {
  SchemaPtr s = schema({field("i8", int8()), field("i16", int16()), field("i32", int32()),
                        field("i64", int64()), field("u8", uint8()), field("u16", uint16()),
                        field("u32", uint32()), field("u64", uint64()), field("f32", float32()),
                        field("f64", float64())});
  std::string rows;
  for (const char* v : {"1", "5", "null", "S", "100"}) {
    std::string row = "{";
    for (const char* name : {"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64"}) {
      std::string value = v;
      if (value == "S") value = name[0] == 'u' ? "0" : "-3";
      row += std::string(row.size() > 1 ? ", " : "") + "\"" + name + "\": " + value;
    }
    rows += row + "}\n";
  }
  return BatchFromJson(s, rows);
}

TEST(EvaluatorTest, NumericComparisonsOnEveryNumericType) {
  const RecordBatch batch = NumericBatch();
  struct Case {
    const char* predicate;  // "$" stands for the column
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"$ > 3", "FTNFT"},
      {"$ >= 5", "FTNFT"},
      {"$ < 5", "TFNTF"},
      {"$ <= 1", "TFNTF"},
      {"$ = 5", "FTNFF"},
      {"$ != 5", "TFNTT"},
      {"$ <> 5", "TFNTT"},
      {"5 = $", "FTNFF"},
      {"3 < $", "FTNFT"},
      {"$ IN (1, 100)", "TFNFT"},
      {"$ NOT IN (1, 100)", "FTNTF"},
      {"$ IN (1, NULL)", "TNNNN"},
      {"$ NOT IN (1, NULL)", "FNNNN"},
      {"$ IS NULL", "FFTFF"},
      {"$ IS NOT NULL", "TTFTT"},
      {"$ BETWEEN 1 AND 5", "TTNFF"},
      {"$ NOT BETWEEN 1 AND 5", "FFNTT"},
      {"$ > 2.5", "FTNFT"},
      {"$ = 1.0", "TFNFF"},
      {"$ = 1.5", "FFNFF"},
      {"$ != 1.5", "TTNTT"},
      {"$ < 1.5", "TFNTF"},
      {"$ >= 4.5", "FTNFT"},
      {"$ = NULL", "NNNNN"},
      {"$ IN (5, 5, 1.5)", "FTNFF"},
      {"$ IN (1, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22)", "TTNFF"},
  };
  for (const char* column : {"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "f32", "f64"}) {
    for (const Case& c : cases) {
      std::string predicate = c.predicate;
      predicate.replace(predicate.find('$'), 1, column);
      EXPECT_EQ(Results(batch, predicate), c.expected) << predicate;
    }
  }
}

TEST(EvaluatorTest, MixedNumericColumnsCompareExactly) {
  const RecordBatch batch = NumericBatch();
  EXPECT_EQ(Results(batch, "i8 = u64"), "TTNFT");
  EXPECT_EQ(Results(batch, "i8 < u64"), "FFNTF");
  EXPECT_EQ(Results(batch, "f32 = i64"), "TTNTT");
  EXPECT_EQ(Results(batch, "f64 >= u8"), "TTNFT");
  EXPECT_EQ(Results(batch, "i16 != i32"), "FFNFF");
}

TEST(EvaluatorTest, ExtremeIntegersAndFloats) {
  SchemaPtr s = schema({field("i", int64()), field("u", uint64()), field("f", float64())});
  const RecordBatch batch = BatchFromJson(
      s,
      "{\"i\": -9223372036854775808, \"u\": 18446744073709551615, \"f\": \"NaN\"}\n"
      "{\"i\": 9223372036854775807, \"u\": 9223372036854775808, \"f\": \"Infinity\"}\n"
      "{\"i\": 0, \"u\": 0, \"f\": -0.0}\n"
      "{\"i\": 9007199254740993, \"u\": 9007199254740993, \"f\": 9007199254740992}\n");
  EXPECT_EQ(Results(batch, "i = -9223372036854775808"), "TFFF");
  EXPECT_EQ(Results(batch, "u > 9223372036854775807"), "TTFF");
  EXPECT_EQ(Results(batch, "u = 18446744073709551615"), "TFFF");
  EXPECT_EQ(Results(batch, "i < u"), "TTFF");
  EXPECT_EQ(Results(batch, "i > f"), "FFFT");  // 2^53 + 1 > 2^53 exactly
  EXPECT_EQ(Results(batch, "u = f"), "FFTF");
  // NaN orders above every number and equals itself; -0.0 equals 0.
  EXPECT_EQ(Results(batch, "f > 1e308"), "TTFF");
  EXPECT_EQ(Results(batch, "f = 0"), "FFTF");
  EXPECT_EQ(Results(batch, "f < 0"), "FFFF");
  EXPECT_EQ(Results(batch, "f = f"), "TTTT");
  EXPECT_EQ(Results(batch, "f IN (0, 1)"), "FFTF");
  EXPECT_EQ(Results(batch, "i > 9007199254740992.0"), "FTFT");
}

TEST(EvaluatorTest, StringsAndDictionariesAndBinary) {
  SchemaPtr s =
      schema({field("s", utf8()), field("ls", large_utf8()), field("d", dictionary(int8(), utf8())),
              field("ld", dictionary(uint16(), large_utf8())), field("bin", binary())});
  std::string rows;
  for (const char* v : {"\"apple\"", "\"banana\"", "null", "\"\"", "\"cherry\""}) {
    rows += "{";
    for (const char* name : {"s", "ls", "d", "ld"}) rows += fmt::format("\"{}\": {}, ", name, v);
    rows += "\"bin\": null}\n";
  }
  RecordBatch batch = BatchFromJson(s, rows);
  // binary gets the same bytes, base64-encoded in JSON.
  std::string bin_rows;
  for (const char* v : {"\"YXBwbGU=\"", "\"YmFuYW5h\"", "null", "\"\"", "\"Y2hlcnJ5\""}) {
    bin_rows += fmt::format("{{\"bin\": {}}}\n", v);
  }
  const RecordBatch bin = BatchFromJson(schema({field("bin", binary())}), bin_rows);
  struct Case {
    const char* predicate;
    const char* expected;
  };
  const std::vector<Case> cases = {
      {"$ = 'banana'", "FTNFF"},
      {"$ != 'banana'", "TFNTT"},
      {"$ > 'b'", "FTNFT"},
      {"$ <= 'banana'", "TTNTF"},
      {"$ < 'b'", "TFNTF"},
      {"$ >= ''", "TTNTT"},
      {"$ IN ('apple', 'cherry', 'zzz')", "TFNFT"},
      {"$ NOT IN ('apple', NULL)", "FNNNN"},
      {"$ LIKE 'a%'", "TFNFF"},
      {"$ LIKE '%an%'", "FTNFF"},
      {"$ LIKE '%y'", "FFNFT"},
      {"$ NOT LIKE '_____'", "FTNTT"},
      {"$ LIKE ''", "FFNTF"},
      {"$ LIKE '%'", "TTNTT"},
      {"$ LIKE 'b_n%n_'", "FTNFF"},
      {"$ IS NULL", "FFTFF"},
      {"$ = NULL", "NNNNN"},
  };
  for (const Case& c : cases) {
    for (const char* column : {"s", "ls", "d", "ld"}) {
      std::string predicate = c.predicate;
      predicate.replace(predicate.find('$'), 1, column);
      EXPECT_EQ(Results(batch, predicate), c.expected) << predicate;
    }
    std::string predicate = c.predicate;
    predicate.replace(predicate.find('$'), 1, "bin");
    EXPECT_EQ(Results(bin, predicate), c.expected) << predicate;
  }
  EXPECT_EQ(Results(batch, "s = d"), "TTNTT");
  EXPECT_EQ(Results(batch, "ld < s"), "FFNFF");
  EXPECT_EQ(Results(batch, "s = 'apple' OR d = 'cherry'"), "TFNFT");
}

TEST(EvaluatorTest, Booleans) {
  SchemaPtr s = schema({field("b", boolean())});
  const RecordBatch batch =
      BatchFromJson(s, "{\"b\": true}\n{\"b\": false}\n{\"b\": null}\n{\"b\": false}\n");
  EXPECT_EQ(Results(batch, "b"), "TFNF");
  EXPECT_EQ(Results(batch, "NOT b"), "FTNT");
  EXPECT_EQ(Results(batch, "b = TRUE"), "TFNF");
  EXPECT_EQ(Results(batch, "b = FALSE"), "FTNT");
  EXPECT_EQ(Results(batch, "b != TRUE"), "FTNT");
  EXPECT_EQ(Results(batch, "b != FALSE"), "TFNF");
  EXPECT_EQ(Results(batch, "b < TRUE"), "FTNT");
  EXPECT_EQ(Results(batch, "b <= TRUE"), "TTNT");
  EXPECT_EQ(Results(batch, "b > FALSE"), "TFNF");
  EXPECT_EQ(Results(batch, "b >= FALSE"), "TTNT");
  EXPECT_EQ(Results(batch, "b < FALSE"), "FFNF");
  EXPECT_EQ(Results(batch, "b > TRUE"), "FFNF");
  EXPECT_EQ(Results(batch, "b IN (TRUE)"), "TFNF");
  EXPECT_EQ(Results(batch, "b IN (TRUE, FALSE)"), "TTNT");
  EXPECT_EQ(Results(batch, "b NOT IN (FALSE, NULL)"), "NFNF");
  EXPECT_EQ(Results(batch, "b = b"), "TTNT");
  EXPECT_EQ(Results(batch, "b IS NOT NULL"), "TTFT");
}

TEST(EvaluatorTest, KleeneLogic) {
  SchemaPtr s = schema({field("p", boolean()), field("q", boolean())});
  const RecordBatch batch = BatchFromJson(
      s,
      "{\"p\": true, \"q\": true}\n{\"p\": true, \"q\": false}\n{\"p\": true, \"q\": null}\n"
      "{\"p\": false, \"q\": true}\n{\"p\": false, \"q\": false}\n{\"p\": false, \"q\": null}\n"
      "{\"p\": null, \"q\": true}\n{\"p\": null, \"q\": false}\n{\"p\": null, \"q\": null}\n");
  EXPECT_EQ(Results(batch, "p AND q"), "TFNFFFNFN");
  EXPECT_EQ(Results(batch, "p OR q"), "TTTTFNTNN");
  EXPECT_EQ(Results(batch, "NOT p"), "FFFTTTNNN");
  EXPECT_EQ(Results(batch, "NOT (p AND q)"), "FTNTTTNTN");
  EXPECT_EQ(Results(batch, "NOT p OR NOT q"), "FTNTTTNTN");
  EXPECT_EQ(Results(batch, "p AND TRUE"), "TTTFFFNNN");
  EXPECT_EQ(Results(batch, "p AND NULL"), "NNNFFFNNN");
  EXPECT_EQ(Results(batch, "p OR NULL"), "TTTNNNNNN");
  EXPECT_EQ(Results(batch, "FALSE OR NULL"), "NNNNNNNNN");
  EXPECT_EQ(Results(batch, "p IS NULL OR q IS NULL"), "FFTFFTTTT");
  EXPECT_EQ(Results(batch, "p AND q OR NOT p AND NOT q"), "TFNFTNNNN");
}

TEST(EvaluatorTest, Timestamps) {
  SchemaPtr s = schema({field("ts", timestamp_us("UTC")), field("t2", timestamp_us())});
  const RecordBatch batch =
      BatchFromJson(s,
                    "{\"ts\": \"2024-05-01T12:00:00Z\", \"t2\": \"2024-05-01T12:00:00Z\"}\n"
                    "{\"ts\": \"2024-05-02T00:00:00Z\", \"t2\": \"2024-05-01T00:00:00Z\"}\n"
                    "{\"ts\": null, \"t2\": null}\n"
                    "{\"ts\": \"1969-12-31T23:59:59.999999Z\", \"t2\": 0}\n");
  EXPECT_EQ(Results(batch, "ts > '2024-05-01'"), "TTNF");
  EXPECT_EQ(Results(batch, "ts = TIMESTAMP '2024-05-01T14:00:00+02:00'"), "TFNF");
  EXPECT_EQ(Results(batch, "ts < TIMESTAMP '1970-01-01T00:00:00Z'"), "FFNT");
  EXPECT_EQ(Results(batch, "ts IN ('2024-05-02T00:00:00Z', '2000-01-01')"), "FTNF");
  EXPECT_EQ(Results(batch, "ts BETWEEN '2024-05-01' AND '2024-05-01T23:59:59Z'"), "TFNF");
  EXPECT_EQ(Results(batch, "ts >= t2"), "TTNF");
}

TEST(EvaluatorTest, StructFieldsAreNullUnderNullParents) {
  SchemaPtr s =
      schema({field("usage", struct_({field("prompt_tokens", int64()), field("model", utf8()),
                                      field("inner", struct_({field("deep", int32())}))}))});
  const RecordBatch batch = BatchFromJson(
      s,
      "{\"usage\": {\"prompt_tokens\": 10, \"model\": \"m1\", \"inner\": {\"deep\": 1}}}\n"
      "{\"usage\": {\"prompt_tokens\": null, \"model\": \"m2\", \"inner\": null}}\n"
      "{\"usage\": null}\n"
      "{\"usage\": {\"prompt_tokens\": 30, \"model\": null, \"inner\": {\"deep\": null}}}\n"
      "{\"usage\": {\"prompt_tokens\": 5, \"model\": \"m1\", \"inner\": {\"deep\": 7}}}\n");
  EXPECT_EQ(Results(batch, "usage.prompt_tokens > 8"), "TNNTF");
  EXPECT_EQ(Results(batch, "usage.prompt_tokens IS NULL"), "FTTFF");
  EXPECT_EQ(Results(batch, "usage.model = 'm1'"), "TFNNT");
  EXPECT_EQ(Results(batch, "usage.inner.deep >= 1"), "TNNNT");
  EXPECT_EQ(Results(batch, "usage.inner.deep IS NULL"), "FTTTF");
  EXPECT_EQ(Results(batch, "usage IS NULL"), "FFTFF");
  EXPECT_EQ(Results(batch, "usage.prompt_tokens < usage.inner.deep"), "FNNNT");
  // Sliced: the struct's offset applies to its fields.
  EXPECT_EQ(Results(batch.Slice(1, 4), "usage.prompt_tokens > 8"), "NNTF");
  EXPECT_EQ(Results(batch.Slice(2, 3), "usage.inner.deep IS NULL"), "TTF");
}

TEST(EvaluatorTest, ArrayHas) {
  SchemaPtr s = schema({field("tags", list(utf8())), field("nums", large_list(int32())),
                        field("vec", fixed_size_list(float32(), 2)),
                        field("dtags", list(dictionary(int32(), utf8())))});
  const RecordBatch batch = BatchFromJson(
      s,
      "{\"tags\": [\"a\", \"b\"], \"nums\": [1, 2], \"vec\": [1, 2], \"dtags\": [\"a\"]}\n"
      "{\"tags\": [], \"nums\": [], \"vec\": [3, 4], \"dtags\": []}\n"
      "{\"tags\": null, \"nums\": null, \"vec\": null, \"dtags\": null}\n"
      "{\"tags\": [null, \"c\"], \"nums\": [null, 3], \"vec\": [null, 1.5], \"dtags\": [null, "
      "\"b\"]}\n"
      "{\"tags\": [\"b\"], \"nums\": [7], \"vec\": [2, 2], \"dtags\": [\"b\", \"a\"]}\n");
  EXPECT_EQ(Results(batch, "array_has(tags, 'b')"), "TFNFT");
  EXPECT_EQ(Results(batch, "array_contains(tags, 'c')"), "FFNTF");
  EXPECT_EQ(Results(batch, "NOT array_has(tags, 'a')"), "FTNTT");
  EXPECT_EQ(Results(batch, "array_has(nums, 3)"), "FFNTF");
  EXPECT_EQ(Results(batch, "array_has(nums, 3.5)"), "FFNFF");
  EXPECT_EQ(Results(batch, "array_has(vec, 2)"), "TFNFT");
  EXPECT_EQ(Results(batch, "array_has(vec, 1.5)"), "FFNTF");
  EXPECT_EQ(Results(batch, "array_has(dtags, 'a')"), "TFNFT");
  EXPECT_EQ(Results(batch, "array_has(tags, NULL)"), "NNNNN");
  EXPECT_EQ(Results(batch.Slice(3, 2), "array_has(tags, 'b')"), "FT");
  EXPECT_EQ(Results(batch.Slice(1, 3), "array_has(vec, 1.5)"), "FNT");
  EXPECT_EQ(Results(batch.Slice(4, 1), "array_has(dtags, 'a')"), "T");
}

TEST(EvaluatorTest, SlicedBatchesMatchTheUnslicedRows) {
  SchemaPtr s = schema({field("x", int32()), field("s", utf8()), field("b", boolean()),
                        field("d", dictionary(int32(), utf8()))});
  std::string rows;
  for (int i = 0; i < 150; ++i) {
    if (i % 7 == 3) {
      rows += "{\"x\": null, \"s\": null, \"b\": null, \"d\": null}\n";
    } else {
      rows += fmt::format("{{\"x\": {}, \"s\": \"v{}\", \"b\": {}, \"d\": \"k{}\"}}\n", i % 11,
                          i % 5, i % 3 == 0 ? "true" : "false", i % 4);
    }
  }
  const RecordBatch batch = BatchFromJson(s, rows);
  for (const char* predicate :
       {"x > 4", "x IN (1, 2, 3)", "s LIKE 'v1%' OR s = 'v3'", "b", "NOT b AND x < 9", "d = 'k2'",
        "d IN ('k1', 'k3') OR x IS NULL", "s IS NOT NULL AND d != 'k0'"}) {
    const std::string whole = Results(batch, predicate);
    ASSERT_EQ(whole.size(), 150u);
    for (int64_t offset : {0, 1, 7, 8, 63, 64, 65, 100, 149, 150}) {
      for (int64_t length : {0, 1, 5, 64, 70, 150}) {
        const RecordBatch part = batch.Slice(offset, length);
        EXPECT_EQ(Results(part, predicate), whole.substr(offset, part.num_rows()))
            << predicate << " offset " << offset << " length " << length;
      }
    }
  }
}

TEST(EvaluatorTest, DictionaryEntriesThatAreNullMakeRowsNull) {
  // dictionary ["x", null, "y"], indices [0, 1, 2, null, 1, 2]
  Result<Array> dictionary_values = [] {
    BinaryBuilder b(utf8());
    b.Append("x").IgnoreError();
    b.AppendNull();
    b.Append("y").IgnoreError();
    return b.Finish();
  }();
  ASSERT_TRUE(dictionary_values.ok());
  Int16Builder indices(int16());
  for (int16_t v : {0, 1, 2}) indices.Append(v);
  indices.AppendNull();
  for (int16_t v : {1, 2}) indices.Append(v);
  Result<Array> index_array = indices.Finish();
  ASSERT_TRUE(index_array.ok());
  ArrayData data = *index_array->data();
  data.type = dictionary(int16(), utf8());
  data.dictionary = dictionary_values->data();
  Result<Array> column = Array::Make(std::move(data));
  ASSERT_TRUE(column.ok()) << column.status();
  SchemaPtr s = schema({field("d", dictionary(int16(), utf8()))});
  Result<RecordBatch> batch = RecordBatch::Make(s, 6, {*column});
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ(Results(*batch, "d IS NULL"), "FTFTTF");
  EXPECT_EQ(Results(*batch, "d = 'y'"), "FNTNNT");
  EXPECT_EQ(Results(*batch, "d != 'y'"), "TNFNNF");
  EXPECT_EQ(Results(*batch, "d LIKE '%'"), "TNTNNT");
  EXPECT_EQ(Results(*batch, "d = d"), "TNTNNT");
  EXPECT_EQ(Results(batch->Slice(1, 4), "d IS NOT NULL"), "FTFF");
  Result<ColumnStatistics> stats = ComputeStatistics(*column);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->null_count, 3);
  EXPECT_EQ(stats->min, Scalar::String("x"));
  EXPECT_EQ(stats->max, Scalar::String("y"));
}

TEST(EvaluatorTest, EmptyBatchesAndConstants) {
  SchemaPtr s = schema({field("x", int32())});
  const RecordBatch empty = RecordBatch::MakeEmpty(s);
  EXPECT_EQ(Results(empty, "x > 1"), "");
  EXPECT_EQ(Results(empty, "TRUE"), "");
  const RecordBatch batch = BatchFromJson(s, "{\"x\": 1}\n{\"x\": null}\n");
  EXPECT_EQ(Results(batch, "TRUE"), "TT");
  EXPECT_EQ(Results(batch, "FALSE"), "FF");
  EXPECT_EQ(Results(batch, "NULL"), "NN");
  EXPECT_EQ(Results(batch, "NULL OR x = 1"), "TN");
  EXPECT_EQ(Results(batch, "1 IN (2, NULL)"), "NN");
}

TEST(EvaluatorTest, SelectReturnsTrueRowsInOrder) {
  SchemaPtr s = schema({field("x", int32())});
  std::string rows;
  for (int i = 0; i < 200; ++i) rows += fmt::format("{{\"x\": {}}}\n", i);
  const RecordBatch batch = BatchFromJson(s, rows);
  Result<BoundExpr> bound = ParseAndBind("x % 2 = 0", s);
  EXPECT_FALSE(bound.ok());  // no arithmetic
  bound = ParseAndBind("x IN (0, 63, 64, 65, 127, 128, 199) OR x > 300", s);
  ASSERT_TRUE(bound.ok());
  Result<std::vector<int64_t>> selected = Select(*bound, batch);
  ASSERT_TRUE(selected.ok());
  EXPECT_THAT(*selected, ElementsAre(0, 63, 64, 65, 127, 128, 199));
  EXPECT_EQ(*CountMatches(*bound, batch), 7);
  Result<std::vector<int64_t>> sliced = Select(*bound, batch.Slice(60, 70));
  ASSERT_TRUE(sliced.ok());
  EXPECT_THAT(*sliced, ElementsAre(3, 4, 5, 67, 68));
}

TEST(EvaluatorTest, BatchesOfAnotherSchemaAreRefused) {
  SchemaPtr s = schema({field("x", int32()), field("y", utf8())});
  Result<BoundExpr> bound = ParseAndBind("y = 'a'", s);
  ASSERT_TRUE(bound.ok());
  const RecordBatch other =
      BatchFromJson(schema({field("x", int32()), field("y", int32())}), "{\"x\": 1, \"y\": 2}\n");
  Result<Array> result = Evaluate(*bound, other);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "batch column 1 is int32; the expression was bound to column 'y' of type utf8");
  const RecordBatch narrow = BatchFromJson(schema({field("x", int32())}), "{\"x\": 1}\n");
  result = Evaluate(*bound, narrow);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().message(),
            "the batch has 1 columns; the expression reads column 1 ('y')");
}

}  // namespace
}  // namespace strata::expr
