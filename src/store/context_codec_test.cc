// The context record model (include/strata/context_store.h): schema and column groups,
// record <-> batch round trips and the reference's messages, distance metrics, the
// lifecycle part of visibility, and RecordFilters.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "strata/context_store.h"
#include "strata/json.h"
#include "strata/table.h"
#include "support/status_assertions.h"
#include "util/text_codec.h"

namespace strata::store {
namespace {

using ::testing::HasSubstr;

ContextSchemaOptions Small(int32_t dim = 3) {
  ContextSchemaOptions options;
  options.embedding_dim = dim;
  return options;
}

ContextRecord Full() {
  ContextRecord r;
  r.id = "r-1";
  r.external_id = "ext-1";
  r.run_id = "run-1";
  r.bot_id = "bot";
  r.session_id = "s-1";
  r.tenant = "acme";
  r.source = "chat";
  r.created_at_micros = 1'700'000'000'000'000;
  r.role = "assistant";
  r.state_metadata = ContextStateMetadata{
      .step = 3, .active_plan_id = "p", .tokens_used = 9, .custom = std::nullopt};
  r.metadata = R"({"topic":"db","tags":["a","b"]})";
  r.relationships =
      std::vector<ContextRelationship>{{"r-0", "follows", 0.5F}, {"r-9", "cites", std::nullopt}};
  r.expires_at_micros = 1'800'000'000'000'000;
  r.retention_policy = "30d";
  r.lifecycle_status = "contradicted";
  r.retired_reason = "why";
  r.supersedes_id = "r-0";
  r.content_type = "text/plain";
  r.text_payload = "hello";
  r.binary_payload = std::string("\x00\x01\xff", 3);
  r.payload_uri = "mem://x";
  r.payload_size = 3;
  r.payload_checksum = "abc";
  r.embedding = std::vector<float>{1, 2, 3};
  return r;
}

TEST(ContextSchemaTest, HasTheReferenceColumnsInOrderWithTheMetricAndKey) {
  ASSERT_OK_AND_ASSIGN(SchemaPtr s, ContextSchema(Small()));
  std::vector<std::string> names;
  for (const FieldPtr& f : s->fields()) names.push_back(f->name());
  EXPECT_EQ(names, (std::vector<std::string>{"id",
                                             "external_id",
                                             "run_id",
                                             "bot_id",
                                             "session_id",
                                             "tenant",
                                             "source",
                                             "created_at",
                                             "role",
                                             "state_metadata",
                                             "metadata",
                                             "relationships",
                                             "expires_at",
                                             "retention_policy",
                                             "lifecycle_status",
                                             "retired_at",
                                             "retired_reason",
                                             "supersedes_id",
                                             "superseded_by_id",
                                             "content_type",
                                             "text_payload",
                                             "binary_payload",
                                             "payload_uri",
                                             "payload_size",
                                             "payload_checksum",
                                             "embedding"}));
  EXPECT_EQ(s->metadata().Get(kDistanceMetricMetadata), "l2");
  EXPECT_EQ(s->field(0)->metadata().Get(table::kPrimaryKeyMetadata), "true");
  EXPECT_FALSE(s->field(0)->nullable());
  EXPECT_FALSE(s->field(s->GetFieldIndex("lifecycle_status"))->nullable());
  EXPECT_EQ(s->field(s->GetFieldIndex("embedding"))->type()->ToString(),
            fixed_size_list(float32(), 3)->ToString());
  EXPECT_EQ(s->field(s->GetFieldIndex("text_payload"))->type()->id(), TypeId::kLargeUtf8);

  ContextSchemaOptions blob = Small();
  blob.blob_columns = {"text_payload"};
  blob.distance_metric = DistanceMetric::kCosine;
  ASSERT_OK_AND_ASSIGN(SchemaPtr b, ContextSchema(blob));
  const FieldPtr& text = b->field(b->GetFieldIndex("text_payload"));
  EXPECT_EQ(text->type()->id(), TypeId::kLargeBinary);
  EXPECT_EQ(text->metadata().Get(kBlobColumnMetadata), "true");
  EXPECT_EQ(b->metadata().Get(kDistanceMetricMetadata), "cosine");

  ContextSchemaOptions old = Small();
  old.groups.lifecycle = false;
  old.groups.external_id = false;
  ASSERT_OK_AND_ASSIGN(SchemaPtr o, ContextSchema(old));
  EXPECT_EQ(o->GetFieldIndex("external_id"), -1);
  EXPECT_EQ(o->GetFieldIndex("superseded_by_id"), -1);
  EXPECT_EQ(o->num_fields(), 26 - 1 - 7);
}

TEST(ContextSchemaTest, RejectsABadDimensionOrBlobColumnWithTheReferenceMessages) {
  EXPECT_THAT(ContextSchema(Small(0)).status().message(),
              HasSubstr("embedding_dim must be positive, got 0"));
  ContextSchemaOptions bad = Small();
  bad.blob_columns = {"embedding"};
  EXPECT_THAT(ContextSchema(bad).status().message(),
              HasSubstr("invalid blob column 'embedding': valid columns are [binary_payload, "
                        "text_payload]"));
}

TEST(ContextCodecTest, EveryFieldRoundTrips) {
  ASSERT_OK_AND_ASSIGN(SchemaPtr s, ContextSchema(Small()));
  ContextRecord minimal;
  minimal.id = "r-2";
  minimal.run_id = "run-1";
  ASSERT_OK_AND_ASSIGN(RecordBatch batch, EncodeContextRecords({Full(), minimal}, s));
  ASSERT_OK_AND_ASSIGN(std::vector<ContextRecord> back, DecodeContextRecords(batch));
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0], Full());
  EXPECT_EQ(back[1], minimal);
  // The blob form of text_payload decodes the same.
  ContextSchemaOptions blob = Small();
  blob.blob_columns = {"text_payload", "binary_payload"};
  ASSERT_OK_AND_ASSIGN(SchemaPtr b, ContextSchema(blob));
  ASSERT_OK_AND_ASSIGN(RecordBatch blob_batch, EncodeContextRecords({Full()}, b));
  ASSERT_OK_AND_ASSIGN(back, DecodeContextRecords(blob_batch));
  EXPECT_EQ(back[0], Full());
}

TEST(ContextCodecTest, BinaryTextPayloadDecodesAsLossyUtf8) {
  ContextSchemaOptions blob = Small();
  blob.blob_columns = {"text_payload"};
  ASSERT_OK_AND_ASSIGN(SchemaPtr b, ContextSchema(blob));
  ContextRecord r = Full();
  r.text_payload = std::string("ok \xff\xc3(\xe2\x82\xac", 9);  // bad, truncated, then a euro
  ASSERT_OK_AND_ASSIGN(RecordBatch batch, EncodeContextRecords({r}, b));
  ASSERT_OK_AND_ASSIGN(std::vector<ContextRecord> back, DecodeContextRecords(batch));
  EXPECT_EQ(*back[0].text_payload, "ok \xEF\xBF\xBD\xEF\xBF\xBD(\xE2\x82\xAC");
}

TEST(ContextCodecTest, ValuesForMissingGroupsAndBadEmbeddingsUseTheReferenceMessages) {
  ContextSchemaOptions none = Small();
  none.groups = ContextColumnGroups{false, false, false, false, false, false};
  ASSERT_OK_AND_ASSIGN(SchemaPtr s, ContextSchema(none));
  auto message = [&](const ContextRecord& r) {
    return EncodeContextRecords({r}, s).status().message();
  };
  ContextRecord base;
  base.id = "x";
  base.run_id = "run";
  ASSERT_OK(EncodeContextRecords({base}, s).status());
  ContextRecord r = base;
  r.external_id = "e";
  EXPECT_EQ(message(r), "external_id requires a context dataset created with external_id support");
  r = base;
  r.tenant = "t";
  EXPECT_EQ(message(r),
            "tenant requires a context dataset created with partition-key column support");
  r = base;
  r.source = "s";
  EXPECT_EQ(message(r),
            "source requires a context dataset created with partition-key column support");
  r = base;
  r.metadata = "{}";
  EXPECT_EQ(message(r), "metadata requires a context dataset created with metadata support");
  r = base;
  r.relationships = std::vector<ContextRelationship>{};
  EXPECT_THAT(message(r), HasSubstr("run migrate_relationships_column() on older datasets"));
  r = base;
  r.retired_reason = "x";
  EXPECT_EQ(message(r),
            "lifecycle fields require a context dataset created with lifecycle support");
  r = base;
  r.lifecycle_status = "retired";
  EXPECT_EQ(message(r),
            "lifecycle fields require a context dataset created with lifecycle support");
  r = base;
  r.payload_uri = "u";
  EXPECT_THAT(message(r), HasSubstr("external payload references require"));

  ASSERT_OK_AND_ASSIGN(SchemaPtr full, ContextSchema(Small()));
  r = base;
  r.embedding = std::vector<float>{1, 2};
  EXPECT_EQ(EncodeContextRecords({r}, full).status().message(),
            "embedding length 2 does not match expected dimension 3");
  SchemaPtr extra = schema({field("id", utf8(), false), field("mood", utf8())});
  EXPECT_EQ(EncodeContextRecords({base}, extra).status().message(),
            "unsupported dataset column 'mood'");
}

// A null lifecycle_status (rows of older stores) decodes without error, as "active".
TEST(ContextCodecTest, ANullLifecycleStatusReadsAsActive) {
  SchemaPtr s = schema({field("id", utf8(), false), field("lifecycle_status", utf8())});
  ASSERT_OK_AND_ASSIGN(RecordBatch batch,
                       json::RowsToBatch(s, R"({"id":"a"})"
                                            "\n"
                                            R"({"id":"b","lifecycle_status":"retired"})"));
  ASSERT_OK_AND_ASSIGN(std::vector<ContextRecord> back, DecodeContextRecords(batch));
  EXPECT_EQ(back[0].lifecycle_status, "active");
  EXPECT_EQ(back[1].lifecycle_status, "retired");
}

TEST(ContextCodecTest, ARelationshipWithANullTargetIsAnError) {
  ASSERT_OK_AND_ASSIGN(SchemaPtr full, ContextSchema(Small()));
  SchemaPtr s = schema(
      {full->field(full->GetFieldIndex("id")), full->field(full->GetFieldIndex("relationships"))});
  ASSERT_OK_AND_ASSIGN(
      RecordBatch batch,
      json::RowsToBatch(s, R"({"id":"a","relationships":[null,{"target_id":"t","relation":"r"}]})"
                           "\n"
                           R"({"id":"b","relationships":[{"target_id":null,"relation":"r"}]})"));
  Result<std::vector<ContextRecord>> back = DecodeContextRecords(batch.Slice(0, 1));
  ASSERT_OK(back.status());
  ASSERT_EQ(back->at(0).relationships->size(), 1u);  // the null entry is skipped
  EXPECT_THAT(DecodeContextRecords(batch).status().message(), HasSubstr("null target_id"));
}

TEST(ContextMetricTest, ParsesEveryAliasAndComputesTheReferenceDistances) {
  for (const char* s : {"l2", "L2", "euclidean", "Euclidean"}) {
    EXPECT_EQ(*ParseDistanceMetric(s), DistanceMetric::kL2) << s;
  }
  EXPECT_EQ(*ParseDistanceMetric("COSINE"), DistanceMetric::kCosine);
  EXPECT_EQ(*ParseDistanceMetric("dot"), DistanceMetric::kDot);
  EXPECT_EQ(*ParseDistanceMetric("dot_product"), DistanceMetric::kDot);
  EXPECT_EQ(ParseDistanceMetric("manhattan").status().message(),
            "invalid distance metric 'manhattan': valid values are 'l2', 'cosine', 'dot'");
  const std::vector<float> a{1, 0, 0};
  const std::vector<float> b{0, 3, 4};
  const std::vector<float> zero{0, 0, 0};
  EXPECT_DOUBLE_EQ(Distance(DistanceMetric::kL2, a, b), std::sqrt(26.0));
  EXPECT_DOUBLE_EQ(Distance(DistanceMetric::kCosine, a, b), 1.0);
  EXPECT_DOUBLE_EQ(Distance(DistanceMetric::kCosine, a, a), 0.0);
  EXPECT_DOUBLE_EQ(Distance(DistanceMetric::kCosine, a, zero), 1.0);
  EXPECT_DOUBLE_EQ(Distance(DistanceMetric::kDot, b, b), -25.0);
}

TEST(ContextVisibilityTest, TheLifecycleRules) {
  const int64_t now = 1'000'000;
  LifecycleQueryOptions def;
  ContextRecord r;
  r.id = "a";
  EXPECT_TRUE(VisibleByLifecycle(r, def, now));
  ContextRecord tomb = r;
  tomb.content_type = std::string(kContentTypeTombstone);
  EXPECT_FALSE(VisibleByLifecycle(tomb, def, now));
  EXPECT_FALSE(VisibleByLifecycle(tomb, {.include_expired = true, .include_retired = true}, now));
  ContextRecord expired = r;
  expired.expires_at_micros = now;  // expires_at <= now is expired
  EXPECT_FALSE(VisibleByLifecycle(expired, def, now));
  EXPECT_TRUE(VisibleByLifecycle(expired, {.include_expired = true}, now));
  expired.expires_at_micros = now + 1;
  EXPECT_TRUE(VisibleByLifecycle(expired, def, now));
  ContextRecord contradicted = r;
  contradicted.lifecycle_status = "contradicted";
  EXPECT_TRUE(VisibleByLifecycle(contradicted, def, now));
  contradicted.retired_at_micros = 5;
  EXPECT_FALSE(VisibleByLifecycle(contradicted, def, now));
  EXPECT_TRUE(VisibleByLifecycle(contradicted, {.include_retired = true}, now));
  ContextRecord superseded_by = r;
  superseded_by.superseded_by_id = "b";
  EXPECT_FALSE(VisibleByLifecycle(superseded_by, def, now));
  for (const char* status : {"retired", "superseded", "archived"}) {
    ContextRecord other = r;
    other.lifecycle_status = status;
    EXPECT_FALSE(VisibleByLifecycle(other, def, now)) << status;
    EXPECT_TRUE(VisibleByLifecycle(other, {.include_retired = true}, now)) << status;
  }
}

TEST(RecordFiltersTest, ParsesEveryKeyAndAlias) {
  ASSERT_OK_AND_ASSIGN(RecordFilters f,
                       RecordFilters::FromJson(R"({"bot_id":"b","session_id":null,"role":"user",
        "content_type":"text/plain","tenant":"t","source":"s",
        "created_at":{"gte":"2024-01-01T00:00:00Z","before":"2024-02-01T00:00:00Z"},
        "topic":"db","tags":{"contains":"a"},"n":{"a":1,"b":2}})"));
  EXPECT_EQ(f.bot_id, "b");
  EXPECT_FALSE(f.session_id.has_value());
  EXPECT_EQ(f.role, "user");
  EXPECT_EQ(f.tenant, "t");
  EXPECT_EQ(f.created_at_start_micros, *ParseTimestampMicros("2024-01-01T00:00:00Z"));
  EXPECT_EQ(f.created_at_end_micros, *ParseTimestampMicros("2024-02-01T00:00:00Z"));
  ASSERT_EQ(f.metadata.size(), 3u);
  EXPECT_EQ(f.metadata["topic"].kind, RecordFilters::MetadataMatch::Kind::kEquals);
  EXPECT_EQ(f.metadata["tags"].kind, RecordFilters::MetadataMatch::Kind::kContains);
  EXPECT_EQ(f.metadata["tags"].json, R"("a")");
  EXPECT_EQ(f.metadata["n"].kind, RecordFilters::MetadataMatch::Kind::kEquals);
  for (const char* key : {"created_at_start", "created_after", "created_at_gte"}) {
    ASSERT_OK_AND_ASSIGN(RecordFilters g,
                         RecordFilters::FromJson(fmt::format(R"({{"{}":"2024-01-01"}})", key)));
    EXPECT_TRUE(g.created_at_start_micros.has_value()) << key;
  }
  for (const char* key : {"created_at_end", "created_before", "created_at_lte"}) {
    ASSERT_OK_AND_ASSIGN(RecordFilters g,
                         RecordFilters::FromJson(fmt::format(R"({{"{}":"2024-01-01"}})", key)));
    EXPECT_TRUE(g.created_at_end_micros.has_value()) << key;
  }
  ASSERT_OK_AND_ASSIGN(RecordFilters empty, RecordFilters::FromJson("{}"));
  EXPECT_TRUE(empty.empty());
}

TEST(RecordFiltersTest, ErrorsCarryTheReferenceMessages) {
  auto message = [](std::string_view json) {
    return std::string(RecordFilters::FromJson(json).status().message());
  };
  EXPECT_EQ(message("[1]"), "filters must be a JSON object");
  EXPECT_EQ(message(R"({"bot_id":1})"), "filter 'bot_id' must be a string or null");
  EXPECT_EQ(message(R"({"created_at":"2024-01-01"})"),
            "filter 'created_at' must be an object with gte/lte bounds");
  EXPECT_EQ(message(R"({"created_at":{"gt":"2024-01-01"}})"),
            "unsupported created_at filter operator 'gt'");
  EXPECT_EQ(message(R"({"created_after":"yesterday"})"),
            "filter 'created_after' must be an ISO-8601 timestamp string");
  EXPECT_EQ(message(R"({"created_at":{"lte":5}})"),
            "filter 'created_at' must be an ISO-8601 timestamp string");
}

TEST(RecordFiltersTest, MatchesAsTheReferenceDefines) {
  ContextRecord r = Full();
  auto matches = [&](std::string_view json) {
    Result<RecordFilters> f = RecordFilters::FromJson(json);
    EXPECT_TRUE(f.ok()) << f.status();
    return f.ok() && f->Matches(r);
  };
  EXPECT_TRUE(matches("{}"));
  EXPECT_TRUE(matches(R"({"bot_id":"bot","role":"assistant","tenant":"acme"})"));
  EXPECT_FALSE(matches(R"({"bot_id":"other"})"));
  EXPECT_FALSE(matches(R"({"content_type":"image/png"})"));
  const std::string at = FormatTimestampMicros(r.created_at_micros);
  EXPECT_TRUE(matches(fmt::format(R"({{"created_at":{{"gte":"{0}","lte":"{0}"}}}})", at)));
  EXPECT_FALSE(matches(
      fmt::format(R"({{"created_after":"{}"}})", FormatTimestampMicros(r.created_at_micros + 1))));
  EXPECT_TRUE(matches(R"({"topic":"db"})"));
  EXPECT_FALSE(matches(R"({"topic":"d"})"));
  EXPECT_TRUE(matches(R"({"topic":{"contains":"d"}})"));  // substring of a string
  EXPECT_TRUE(matches(R"({"tags":{"contains":"b"}})"));   // element of an array
  EXPECT_FALSE(matches(R"({"tags":{"contains":"c"}})"));
  EXPECT_TRUE(matches(R"({"tags":["a","b"]})"));
  EXPECT_FALSE(matches(R"({"missing":null})"));
  r.metadata = "not json";
  EXPECT_FALSE(matches(R"({"topic":"db"})"));
  r.metadata.reset();
  EXPECT_FALSE(matches(R"({"topic":"db"})"));
}

}  // namespace
}  // namespace strata::store
