// SchemaSpec: both JSON forms, every validation rule with its message, and the base table
// schema it maps to.
#include <gtest/gtest.h>

#include <string>

#include "strata/generic_store.h"
#include "strata/table.h"
#include "support/status_assertions.h"

namespace strata::store {
namespace {

constexpr std::string_view kSpecJson = R"({"columns": [
  ["score", {"type": "float32"}],
  ["id", {"type": "string", "nullable": false}],
  ["video", {"type": "binary", "blob": true}],
  ["embedding", {"type": "vector", "dim": 4, "metric": "cosine"}],
  ["tags", {"type": "list", "item": {"type": "string"}}],
  ["at", {"type": "timestamp", "nullable": false}],
  ["body", {"type": "string", "large": true}],
  ["n", "int32"]]})";

ColumnSpec Column(std::string name, ColumnKind kind, bool nullable = true) {
  ColumnSpec c;
  c.name = std::move(name);
  c.type.kind = kind;
  c.nullable = nullable;
  return c;
}

SchemaSpec WithId(std::vector<ColumnSpec> more) {
  SchemaSpec spec;
  spec.columns.push_back(Column("id", ColumnKind::kString, /*nullable=*/false));
  for (ColumnSpec& c : more) spec.columns.push_back(std::move(c));
  return spec;
}

std::string ValidationError(const SchemaSpec& spec) {
  Status status = spec.Validate();
  EXPECT_TRUE(status.IsInvalidArgument()) << status;
  return std::string(status.message());
}

std::string ParseError(std::string_view json) {
  Result<SchemaSpec> spec = SchemaSpec::FromJson(json);
  EXPECT_FALSE(spec.ok());
  if (spec.ok()) return "";
  EXPECT_TRUE(spec.status().IsInvalidArgument()) << spec.status();
  return std::string(spec.status().message());
}

TEST(SchemaSpecTest, ParsesTheColumnsFormAndRoundTripsThroughJson) {
  ASSERT_OK_AND_ASSIGN(SchemaSpec spec, SchemaSpec::FromJson(kSpecJson));
  ASSERT_EQ(spec.columns.size(), 8u);
  EXPECT_EQ(spec.columns[0].name, "score");
  EXPECT_EQ(spec.columns[0].type.kind, ColumnKind::kFloat32);
  EXPECT_TRUE(spec.columns[0].nullable);
  EXPECT_FALSE(spec.columns[1].nullable);
  EXPECT_TRUE(spec.columns[2].type.blob);
  EXPECT_EQ(spec.columns[3].type.dim, 4);
  EXPECT_EQ(spec.columns[3].type.metric, VectorMetric::kCosine);
  ASSERT_NE(spec.columns[4].type.item, nullptr);
  EXPECT_EQ(spec.columns[4].type.item->kind, ColumnKind::kString);
  EXPECT_TRUE(spec.columns[6].type.large);
  EXPECT_EQ(spec.columns[7].type.kind, ColumnKind::kInt32);
  ASSERT_OK(spec.Validate());

  ASSERT_OK_AND_ASSIGN(SchemaSpec again, SchemaSpec::FromJson(spec.ToJson()));
  EXPECT_EQ(again, spec);
  // Equality looks inside list items.
  SchemaSpec other = spec;
  auto item = std::make_shared<ColumnType>();
  item->kind = ColumnKind::kInt64;
  other.columns[4].type.item = item;
  EXPECT_FALSE(other == spec);
}

TEST(SchemaSpecTest, MetricNames) {
  EXPECT_EQ(*ParseVectorMetric("euclidean"), VectorMetric::kL2);
  EXPECT_EQ(*ParseVectorMetric("l2"), VectorMetric::kL2);
  EXPECT_EQ(*ParseVectorMetric("dot_product"), VectorMetric::kDot);
  EXPECT_EQ(*ParseVectorMetric("dot"), VectorMetric::kDot);
  EXPECT_EQ(*ParseVectorMetric("cosine"), VectorMetric::kCosine);
  EXPECT_EQ(VectorMetricName(VectorMetric::kDot), "dot");
  EXPECT_EQ(ParseVectorMetric("hamming").status().message(),
            "unknown vector metric 'hamming': expected l2, euclidean, cosine, dot or dot_product");
  EXPECT_EQ(ParseError(R"({"columns": [["id", {"type": "string", "nullable": false}],
                                       ["v", {"type": "vector", "dim": 2, "metric": "manhattan"}]]})"),
            "column 'v': unknown vector metric 'manhattan': expected l2, euclidean, cosine, dot "
            "or dot_product");
}

TEST(SchemaSpecTest, EveryValidationRuleNamesTheColumn) {
  EXPECT_EQ(ValidationError(SchemaSpec{}), "schema must declare at least one column");
  SchemaSpec many = WithId({});
  for (int i = 0; i < kMaxSpecColumns; ++i) {
    many.columns.push_back(Column("c" + std::to_string(i), ColumnKind::kInt32));
  }
  EXPECT_EQ(ValidationError(many), "schema declares 1025 columns, the maximum is 1024");
  many.columns.pop_back();
  EXPECT_TRUE((many.Validate()).ok());

  EXPECT_EQ(ValidationError(WithId({Column("", ColumnKind::kInt32)})),
            "column #1 has an empty name");
  EXPECT_EQ(
      ValidationError(WithId({Column("a", ColumnKind::kInt32), Column("a", ColumnKind::kBool)})),
      "column 'a' is declared more than once");
  EXPECT_EQ(ValidationError(WithId({Column("id", ColumnKind::kString, false)})),
            "column 'id' is declared more than once");
  for (std::string reserved : {"_rowid", "_rowaddr", "_distance", "_x"}) {
    EXPECT_EQ(ValidationError(WithId({Column(reserved, ColumnKind::kInt32)})),
              "column '" + reserved +
                  "' is reserved: names starting with '_' are used by strata internals");
  }
  ColumnSpec vector = Column("v", ColumnKind::kVector);
  EXPECT_EQ(ValidationError(WithId({vector})), "column 'v': vector dim must be positive, got 0");
  ColumnSpec nested = Column("l", ColumnKind::kList);
  auto inner = std::make_shared<ColumnType>();
  inner->kind = ColumnKind::kList;
  inner->item = std::make_shared<ColumnType>();
  nested.type.item = inner;
  EXPECT_EQ(ValidationError(WithId({nested})), "column 'l': nested lists are not supported");
  auto vector_item = std::make_shared<ColumnType>();
  vector_item->kind = ColumnKind::kVector;
  vector_item->dim = 2;
  nested.type.item = vector_item;
  EXPECT_EQ(ValidationError(WithId({nested})),
            "column 'l': a list of vectors is not supported; declare a vector column");

  SchemaSpec no_id;
  no_id.columns.push_back(Column("a", ColumnKind::kInt32));
  EXPECT_EQ(ValidationError(no_id),
            "schema must declare an 'id' column: it is the primary key and the LSM merge key");
  SchemaSpec int_id;
  int_id.columns.push_back(Column("id", ColumnKind::kInt64, false));
  EXPECT_EQ(ValidationError(int_id),
            "column 'id' must be of type string (not large), got int64: it is the primary key");
  SchemaSpec large_id;
  large_id.columns.push_back(Column("id", ColumnKind::kString, false));
  large_id.columns[0].type.large = true;
  EXPECT_EQ(
      ValidationError(large_id),
      "column 'id' must be of type string (not large), got large string: it is the primary key");
  SchemaSpec nullable_id;
  nullable_id.columns.push_back(Column("id", ColumnKind::kString, true));
  EXPECT_EQ(ValidationError(nullable_id),
            "column 'id' must not be nullable: it is the primary key (declare \"nullable\": "
            "false)");
  // ToArrowSchema validates first.
  EXPECT_EQ(nullable_id.ToArrowSchema().status(), nullable_id.Validate());
}

TEST(SchemaSpecTest, MalformedSpecJsonIsRejectedNamingTheColumn) {
  EXPECT_EQ(ParseError("[1]"),
            "schema spec must be a JSON object with \"columns\" (or strata's schema JSON with "
            "\"fields\")");
  EXPECT_NE(ParseError("{").find("schema spec is not valid JSON"), std::string::npos);
  EXPECT_EQ(ParseError(R"({"columns": [["id"]]})"),
            "schema spec: column #0 must be a [name, type] pair, got [\"id\"]");
  EXPECT_EQ(ParseError(R"({"columns": [["id", {"type": "uuid"}]]})"),
            "column 'id': unknown type 'uuid'");
  EXPECT_EQ(ParseError(R"({"columns": [["x", {"type": "int32", "blob": true}]]})"),
            "column 'x': unexpected key \"blob\" in a int32 type");
  EXPECT_EQ(ParseError(R"({"columns": [["x", {"type": "vector"}]]})"),
            "column 'x': a vector type needs \"dim\" (its length)");
  EXPECT_EQ(ParseError(R"({"columns": [["x", {"type": "vector", "dim": 0}]]})"),
            "column 'x': vector dim must be positive, got 0");
  EXPECT_EQ(ParseError(R"({"columns": [["x", {"type": "vector", "dim": 3000000000}]]})"),
            "column 'x': vector dim must be at most 2147483647, got 3000000000");
  EXPECT_EQ(ParseError(R"({"columns": [["x", {"type": "list"}]]})"),
            "column 'x': a list type needs \"item\" (its element type)");
  EXPECT_EQ(ParseError(R"({"columns": [["x", {"type": "bool", "nullable": "no"}]]})"),
            "column 'x': \"nullable\" must be true or false, got \"no\"");
  EXPECT_EQ(ParseError(R"({"columns": [], "extra": 1})"),
            "schema spec: unexpected key \"extra\" (expected only \"columns\")");
}

TEST(SchemaSpecTest, AcceptsStrataSchemaJson) {
  ASSERT_OK_AND_ASSIGN(SchemaSpec spec, SchemaSpec::FromJson(R"({"fields": [
    {"name": "id", "type": "utf8", "nullable": false},
    {"name": "body", "type": "large_utf8"},
    {"name": "n", "type": "int32"}, {"name": "big", "type": "int64"},
    {"name": "f", "type": "float32"}, {"name": "d", "type": "float64"},
    {"name": "ok", "type": "bool"}, {"name": "at", "type": "timestamp[us, tz=UTC]"},
    {"name": "raw", "type": "binary"},
    {"name": "video", "type": "large_binary", "metadata": {"strata:blob": "true"}},
    {"name": "emb", "type": "fixed_size_list<float32>[3]",
     "metadata": {"strata:distance_metric": "dot_product"}},
    {"name": "tags", "type": "large_list<utf8>"}]})"));
  ASSERT_EQ(spec.columns.size(), 12u);
  EXPECT_FALSE(spec.columns[0].nullable);
  EXPECT_TRUE(spec.columns[1].type.large);
  EXPECT_EQ(spec.columns[7].type.kind, ColumnKind::kTimestamp);
  EXPECT_EQ(spec.columns[8].type.kind, ColumnKind::kBinary);
  EXPECT_FALSE(spec.columns[8].type.blob);
  EXPECT_TRUE(spec.columns[9].type.blob);
  EXPECT_EQ(spec.columns[10].type.kind, ColumnKind::kVector);
  EXPECT_EQ(spec.columns[10].type.dim, 3);
  EXPECT_EQ(spec.columns[10].type.metric, VectorMetric::kDot);
  EXPECT_EQ(spec.columns[11].type.kind, ColumnKind::kList);
  EXPECT_EQ(spec.columns[11].type.item->kind, ColumnKind::kString);
  EXPECT_TRUE((spec.Validate()).ok());

  EXPECT_EQ(ParseError(R"({"fields": [{"name": "id", "type": "utf8", "nullable": false},
                                      {"name": "u", "type": "uint8"}]})"),
            "column 'u': type uint8 is not supported by a generic store");
  EXPECT_EQ(ParseError(R"({"fields": [{"name": "at", "type": "timestamp[us, tz=Europe/Paris]"}]})"),
            "column 'at': type timestamp[us, tz=Europe/Paris] is not supported by a generic store");
  // Lists of lists map, and Validate names them.
  ASSERT_OK_AND_ASSIGN(SchemaSpec nested, SchemaSpec::FromJson(R"({"fields": [
    {"name": "id", "type": "utf8", "nullable": false},
    {"name": "m", "type": "list<list<int32>>"}]})"));
  EXPECT_EQ(ValidationError(nested), "column 'm': nested lists are not supported");
}

TEST(SchemaSpecTest, ArrowMappingPutsIdFirstWithTheMetadata) {
  ASSERT_OK_AND_ASSIGN(SchemaSpec spec, SchemaSpec::FromJson(kSpecJson));
  ASSERT_OK_AND_ASSIGN(SchemaPtr schema, spec.ToArrowSchema());
  ASSERT_EQ(schema->num_fields(), 8);
  EXPECT_EQ(schema->field(0)->ToString(), "id: utf8 not null");
  EXPECT_EQ(schema->field(0)->metadata().Get(table::kPrimaryKeyMetadata), "true");
  EXPECT_EQ(schema->field(1)->ToString(), "score: float32");
  EXPECT_EQ(schema->field(2)->ToString(), "video: large_binary");
  EXPECT_EQ(schema->field(2)->metadata().Get(kBlobColumnMetadata), "true");
  EXPECT_TRUE(schema->field(3)->type()->Equals(*fixed_size_list(float32(), 4)));
  EXPECT_TRUE(schema->field(4)->type()->Equals(*list(utf8())));
  EXPECT_EQ(schema->field(5)->ToString(), "at: timestamp[us] not null");
  EXPECT_EQ(schema->field(6)->ToString(), "body: large_utf8");
  EXPECT_EQ(schema->field(7)->ToString(), "n: int32");
  EXPECT_EQ(schema->metadata().Get("strata:distance_metric:embedding"), "cosine");
  ASSERT_OK_AND_ASSIGN(SchemaSpec stored, SchemaSpec::FromStoredSchema(*schema));
  EXPECT_EQ(stored, spec);
  EXPECT_EQ(spec.NonBlobColumns(),
            (std::vector<std::string>{"id", "score", "embedding", "tags", "at", "body", "n"}));

  EXPECT_EQ(SchemaSpec::FromStoredSchema(*schema->WithMetadata({})).status().message(),
            "dataset has no stored schema spec: it was not created as a generic store");
}

}  // namespace
}  // namespace strata::store
