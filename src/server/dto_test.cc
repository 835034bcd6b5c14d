// The API's JSON bodies <-> store records (dto.h): round trips of every record kind through
// JSON text, the defaults, the JSON forms of metadata and datagen values, and one error per
// kind of bad field, each naming the field's path.
#include "server/dto.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace strata::server {
namespace {

using store::ContextRecord;
using store::DatagenEvent;
using store::DatagenValue;
using store::RolloutRecord;

constexpr int64_t kNow = 1735787045000000;      // 2025-01-02T03:04:05Z
constexpr int64_t kCreated = 1714566896123456;  // 2024-05-01T12:34:56.123456Z
constexpr char kCreatedText[] = "2024-05-01T12:34:56.123456Z";

// What a client sends: the JSON written, dumped to text and parsed again.
Json ThroughText(const Json& value) { return Json::parse(value.dump()); }

// The message of an InvalidArgument result (a failure, and "", for anything else).
template <typename T>
std::string InvalidMessage(const Result<T>& result) {
  EXPECT_FALSE(result.ok());
  if (result.ok()) return "";
  EXPECT_TRUE(result.status().IsInvalidArgument()) << result.status();
  return result.status().message();
}

// --- Context records --------------------------------------------------------------------------

ContextRecord FullContextRecord() {
  ContextRecord r;
  r.id = "rec-1";
  r.external_id = "ext-1";
  r.run_id = "run-1";
  r.bot_id = "bot";
  r.session_id = "session";
  r.tenant = "tenant";
  r.source = "source";
  r.created_at_micros = kCreated;
  r.role = "assistant";
  r.state_metadata = store::ContextStateMetadata{7, "plan-3", 1200, "custom text"};
  r.metadata = R"({"nested":{"k":[1,2.5,null]},"tags":["a","b"]})";
  r.relationships = std::vector<store::ContextRelationship>{{"rec-0", "follows", 0.25F},
                                                            {"rec-9", "cites", std::nullopt}};
  r.expires_at_micros = kNow;
  r.retention_policy = "30d";
  r.supersedes_id = "rec-0";
  r.content_type = "application/octet-stream";
  r.text_payload = "h\xC3\xA9llo \"quoted\"";
  r.binary_payload = std::string(
      "\x00\x01\xFE"
      "bin",
      6);
  r.payload_uri = "docs/a.pdf";
  r.payload_size = 123456789012;
  r.payload_checksum = "sha256:abc";
  r.embedding = std::vector<float>{0.1F, -2.5F, 1e-3F, 3.4e38F, 0.0F, 1.0F / 3.0F};
  return r;
}

TEST(ContextRecordDtoTest, EveryFieldRoundTripsThroughJsonText) {
  const ContextRecord original = FullContextRecord();
  Result<ContextRecord> parsed =
      ContextRecordFromJson(ThroughText(ContextRecordToJson(original)), "records[0]");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  // The route sets id and run_id; ContextStore::Add stamps created_at.
  EXPECT_EQ(parsed->id, "");
  EXPECT_EQ(parsed->run_id, "");
  EXPECT_EQ(parsed->created_at_micros, 0);
  parsed->id = original.id;
  parsed->run_id = original.run_id;
  parsed->created_at_micros = original.created_at_micros;
  EXPECT_EQ(*parsed, original);
}

TEST(ContextRecordDtoTest, EmptyBodyGetsTheDocumentedDefaultsAndRoundTrips) {
  Result<ContextRecord> parsed = ContextRecordFromJson(Json::object(), "records[0]");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ContextRecord expected;
  expected.role = "user";
  expected.content_type = "text/plain";
  expected.relationships.emplace();  // [] by default, not absent
  EXPECT_EQ(*parsed, expected);

  Result<ContextRecord> again =
      ContextRecordFromJson(ThroughText(ContextRecordToJson(*parsed)), "records[0]");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, expected);
}

TEST(ContextRecordDtoTest, ResponseHasEveryFieldWithAbsentOptionalsNull) {
  ContextRecord r;
  r.id = "rec-1";
  r.run_id = "run-1";
  r.created_at_micros = kCreated;
  const Json out = ContextRecordToJson(r);
  const Json expected = {{"id", "rec-1"},
                         {"external_id", nullptr},
                         {"run_id", "run-1"},
                         {"bot_id", nullptr},
                         {"session_id", nullptr},
                         {"tenant", nullptr},
                         {"source", nullptr},
                         {"created_at", kCreatedText},
                         {"role", "user"},
                         {"content_type", "text/plain"},
                         {"text_payload", nullptr},
                         {"binary_payload", nullptr},
                         {"payload_uri", nullptr},
                         {"payload_size", nullptr},
                         {"payload_checksum", nullptr},
                         {"embedding", nullptr},
                         {"state_metadata", nullptr},
                         {"metadata", nullptr},
                         {"relationships", Json::array()},
                         {"expires_at", nullptr},
                         {"retention_policy", nullptr},
                         {"lifecycle_status", "active"},
                         {"retired_at", nullptr},
                         {"retired_reason", nullptr},
                         {"supersedes_id", nullptr},
                         {"superseded_by_id", nullptr}};
  EXPECT_EQ(out, expected) << out.dump();
}

TEST(ContextRecordDtoTest, ResponseWritesBytesTimestampsFloatsAndLifecycle) {
  ContextRecord r = FullContextRecord();
  r.lifecycle_status = "retired";
  r.retired_at_micros = kCreated;
  r.retired_reason = "obsolete";
  r.superseded_by_id = "rec-2";
  const Json out = ContextRecordToJson(r);
  EXPECT_EQ(out["binary_payload"], "AAH+Ymlu");
  EXPECT_EQ(out["expires_at"], "2025-01-02T03:04:05.000000Z");
  EXPECT_EQ(out["retired_at"], kCreatedText);
  EXPECT_EQ(out["lifecycle_status"], "retired");
  EXPECT_EQ(out["retired_reason"], "obsolete");
  EXPECT_EQ(out["superseded_by_id"], "rec-2");
  // float32 values in their shortest form, not as widened doubles.
  EXPECT_EQ(out["embedding"].dump(), "[0.1,-2.5,0.001,3.4e+38,0.0,0.33333334]");
  EXPECT_EQ(out["relationships"].dump(),
            R"([{"relation":"follows","target_id":"rec-0","weight":0.25},)"
            R"({"relation":"cites","target_id":"rec-9","weight":null}])");
  EXPECT_EQ(out["state_metadata"].dump(),
            R"({"active_plan_id":"plan-3","custom":"custom text","step":7,"tokens_used":1200})");
  EXPECT_EQ(out["metadata"]["nested"]["k"][1], 2.5);
}

TEST(ContextRecordDtoTest, LifecycleAndRouteFieldsInARequestAreIgnored) {
  // As in the reference's AddRecordRequest: the route sets id and run_id, the store
  // created_at, and an added record is active.
  const Json body = {{"id", "client-id"},           {"run_id", "client-run"},
                     {"created_at", kCreatedText},  {"lifecycle_status", "retired"},
                     {"retired_at", kCreatedText},  {"retired_reason", "x"},
                     {"superseded_by_id", "rec-2"}, {"text_payload", "hello"}};
  Result<ContextRecord> parsed = ContextRecordFromJson(body, "records[0]");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->id, "");
  EXPECT_EQ(parsed->run_id, "");
  EXPECT_EQ(parsed->created_at_micros, 0);
  EXPECT_EQ(parsed->lifecycle_status, "active");
  EXPECT_FALSE(parsed->retired_at_micros.has_value());
  EXPECT_FALSE(parsed->retired_reason.has_value());
  EXPECT_FALSE(parsed->superseded_by_id.has_value());
  EXPECT_EQ(parsed->text_payload, "hello");
}

TEST(ContextRecordDtoTest, UnknownKeysAreIgnoredAndNullIsAbsent) {
  const Json body = Json::parse(R"({
      "role": null, "content_type": null, "relationships": null, "embedding": null,
      "metadata": null, "state_metadata": null, "expires_at": null,
      "no_such_field": {"deep": [1, "x"]}, "another": "y"})");
  Result<ContextRecord> parsed = ContextRecordFromJson(body, "records[0]");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->role, "user");
  EXPECT_EQ(parsed->content_type, "text/plain");
  ASSERT_TRUE(parsed->relationships.has_value());
  EXPECT_TRUE(parsed->relationships->empty());
  EXPECT_FALSE(parsed->embedding.has_value());
  EXPECT_FALSE(parsed->metadata.has_value());
  EXPECT_FALSE(parsed->state_metadata.has_value());
  EXPECT_FALSE(parsed->expires_at_micros.has_value());
}

TEST(ContextRecordDtoTest, MetadataIsStoredAsTheCompactDumpOfAnyJsonValue) {
  struct Case {
    const char* body_value;  // the JSON of "metadata" in the request
    const char* stored;      // the text the store gets
  };
  const Case cases[] = {
      {R"({"b": 1, "a": [true, null]})", R"({"a":[true,null],"b":1})"},  // keys sorted
      {R"([1, "two"])", R"([1,"two"])"},
      {"42", "42"},
      {"false", "false"},
      // A string is a JSON value like any other: stored as its dump, quotes included.
      {R"("plain text")", R"("plain text")"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body_value);
    Json body = Json::object();
    body["metadata"] = Json::parse(c.body_value);
    Result<ContextRecord> parsed = ContextRecordFromJson(body, "records[0]");
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->metadata, c.stored);
    // And back: the stored text parsed into the same JSON value.
    EXPECT_EQ(ContextRecordToJson(*parsed)["metadata"], Json::parse(c.body_value));
  }
}

TEST(ContextRecordDtoTest, StoredMetadataThatIsNotJsonIsReturnedAsAString) {
  ContextRecord r;
  r.metadata = "not json {";
  EXPECT_EQ(ContextRecordToJson(r)["metadata"], "not json {");
}

TEST(ContextRecordDtoTest, TimestampsAreReadAsRfc3339OrIntegerMicros) {
  Result<ContextRecord> text =
      ContextRecordFromJson({{"expires_at", "2024-05-01T14:34:56.123456+02:00"}}, "r");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(text->expires_at_micros, kCreated);
  Result<ContextRecord> micros = ContextRecordFromJson({{"expires_at", kCreated}}, "r");
  ASSERT_TRUE(micros.ok()) << micros.status();
  EXPECT_EQ(micros->expires_at_micros, kCreated);
}

struct BadBody {
  const char* body;
  const char* message;
};

void ExpectContextErrors(const std::vector<BadBody>& cases) {
  for (const BadBody& c : cases) {
    SCOPED_TRACE(c.body);
    EXPECT_EQ(InvalidMessage(ContextRecordFromJson(Json::parse(c.body), "records[2]")), c.message);
  }
}

TEST(ContextRecordDtoTest, TypeErrorsNameTheFieldPath) {
  ExpectContextErrors({
      {R"({"embedding": "abc"})",
       R"(records[2].embedding: expected an array of numbers, found string "abc")"},
      {R"({"embedding": [1, "x"]})",
       R"(records[2].embedding[1]: expected a number, found string "x")"},
      {R"({"embedding": [1e39]})",
       "records[2].embedding[0]: 1e+39 is out of range for a 32-bit float"},
      {R"({"role": 5})", "records[2].role: expected a string, found number 5"},
      {R"({"text_payload": ["a"]})", "records[2].text_payload: expected a string, found array"},
      {R"({"payload_size": 1.5})",
       "records[2].payload_size: expected an integer, found number 1.5"},
      {R"({"payload_size": 18446744073709551615})",
       "records[2].payload_size: 18446744073709551615 is out of range for an integer"},
      {R"({"state_metadata": "s"})",
       "records[2].state_metadata: expected an object {step?, active_plan_id?, tokens_used?, "
       "custom?}, found string \"s\""},
      {R"({"state_metadata": {"step": "one"}})",
       R"(records[2].state_metadata.step: expected a 32-bit integer, found string "one")"},
      {R"({"state_metadata": {"tokens_used": 4294967296}})",
       "records[2].state_metadata.tokens_used: 4294967296 is out of range for a 32-bit "
       "integer"},
      {R"({"state_metadata": {"custom": {"a": 1}}})",
       "records[2].state_metadata.custom: expected a string, found object"},
      {R"({"relationships": {"a": 1}})",
       "records[2].relationships: expected an array of relationship objects, found object"},
      {R"({"relationships": ["r"]})",
       "records[2].relationships[0]: expected a relationship object {target_id, relation, "
       "weight?}, found string \"r\""},
      {R"({"relationships": [{"target_id": "a", "relation": "r"}, {"target_id": "a"}]})",
       "records[2].relationships[1].relation is required"},
      {R"({"relationships": [{"target_id": "a", "relation": "r", "weight": "heavy"}]})",
       R"(records[2].relationships[0].weight: expected a number, found string "heavy")"},
      {R"({"expires_at": true})",
       "records[2].expires_at: expected an RFC 3339 timestamp string or integer "
       "microseconds, found boolean true"},
      {R"({"binary_payload": 5})",
       "records[2].binary_payload: expected a base64 string, found number 5"},
      {R"([1, 2])", "records[2]: expected an object, found array"},
  });
}

TEST(ContextRecordDtoTest, LongStringsAreCutInMessages) {
  const Json body = {{"embedding", std::string(100, 'x')}};
  EXPECT_EQ(InvalidMessage(ContextRecordFromJson(body, "records[0]")),
            "records[0].embedding: expected an array of numbers, found string \"" +
                std::string(40, 'x') + "\"...");
}

TEST(ContextRecordDtoTest, TheTopLevelIsCalledBodyWithoutAWhere) {
  EXPECT_EQ(InvalidMessage(ContextRecordFromJson(Json("x"), "")),
            R"(body: expected an object, found string "x")");
  EXPECT_EQ(InvalidMessage(ContextRecordFromJson({{"role", 1}}, "")),
            "role: expected a string, found number 1");
}

TEST(ContextRecordDtoTest, BadBase64IsRejectedNamingTheField) {
  for (const char* text : {"abc", "@@@@", "YQ=", "YQ==YQ=="}) {
    SCOPED_TRACE(text);
    const std::string message =
        InvalidMessage(ContextRecordFromJson({{"binary_payload", text}}, "records[1]"));
    EXPECT_EQ(message.rfind("records[1].binary_payload: invalid base64", 0), 0U) << message;
  }
  Result<ContextRecord> empty = ContextRecordFromJson({{"binary_payload", ""}}, "records[1]");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->binary_payload, "");
}

TEST(ContextRecordDtoTest, BadTimestampsAreRejectedNamingTheField) {
  for (const char* text :
       {"yesterday", "2024-13-01T00:00:00Z", "2024-05-01T25:00:00Z", "2024-05-01T12:00:00", ""}) {
    SCOPED_TRACE(text);
    const std::string message =
        InvalidMessage(ContextRecordFromJson({{"expires_at", text}}, "records[1]"));
    EXPECT_EQ(message.rfind("records[1].expires_at: ", 0), 0U) << message;
    EXPECT_GT(message.size(), std::string("records[1].expires_at: ").size());
  }
  EXPECT_EQ(InvalidMessage(ContextRecordFromJson({{"expires_at", 1.5}}, "records[1]")),
            "records[1].expires_at: expected an RFC 3339 timestamp string or integer "
            "microseconds, found number 1.5");
}

TEST(ContextRecordDtoTest, AValueNlohmannCannotDumpIsAnErrorNotAnException) {
  // Only a body built in code can hold invalid UTF-8 (the parser refuses it); dumping it for
  // the metadata text throws inside nlohmann, which the parser turns into a status.
  const Json body = {{"metadata", std::string("\xFF")}};
  const std::string message = InvalidMessage(ContextRecordFromJson(body, "records[0]"));
  EXPECT_EQ(message.rfind("records[0]: ", 0), 0U) << message;
  EXPECT_NE(message.find("UTF-8"), std::string::npos) << message;
}

// --- Context patches --------------------------------------------------------------------------

TEST(ContextPatchDtoTest, EveryFieldIsRead) {
  const Json body = Json::parse(R"({
      "bot_id": "b", "session_id": "s", "tenant": "t", "source": "src",
      "state_metadata": {"step": 2}, "metadata": {"k": "v"},
      "relationships": [{"target_id": "x", "relation": "r", "weight": 0.5}],
      "expires_at": "2025-01-02T03:04:05Z", "retention_policy": "7d",
      "lifecycle_status": "contradicted", "retired_at": 1714566896123456,
      "retired_reason": "why", "embedding": [0.5, 1], "payload_uri": "u",
      "payload_size": 9, "payload_checksum": "c", "id": "ignored"})");
  Result<store::ContextPatch> patch = ContextPatchFromJson(body, "patch");
  ASSERT_TRUE(patch.ok()) << patch.status();
  EXPECT_EQ(patch->bot_id, "b");
  EXPECT_EQ(patch->session_id, "s");
  EXPECT_EQ(patch->tenant, "t");
  EXPECT_EQ(patch->source, "src");
  EXPECT_EQ(patch->state_metadata,
            (store::ContextStateMetadata{2, std::nullopt, std::nullopt, std::nullopt}));
  EXPECT_EQ(patch->metadata, R"({"k":"v"})");
  EXPECT_EQ(patch->relationships, (std::vector<store::ContextRelationship>{{"x", "r", 0.5F}}));
  EXPECT_EQ(patch->expires_at_micros, kNow);
  EXPECT_EQ(patch->retention_policy, "7d");
  EXPECT_EQ(patch->lifecycle_status, "contradicted");
  EXPECT_EQ(patch->retired_at_micros, kCreated);
  EXPECT_EQ(patch->retired_reason, "why");
  EXPECT_EQ(patch->embedding, (std::vector<float>{0.5F, 1.0F}));
  EXPECT_EQ(patch->payload_uri, "u");
  EXPECT_EQ(patch->payload_size, 9);
  EXPECT_EQ(patch->payload_checksum, "c");
  EXPECT_FALSE(patch->empty());
}

TEST(ContextPatchDtoTest, NullAndAbsentFieldsAreNotPatched) {
  Result<store::ContextPatch> patch =
      ContextPatchFromJson(Json::parse(R"({"bot_id": null, "unknown": 1})"), "patch");
  ASSERT_TRUE(patch.ok()) << patch.status();
  EXPECT_TRUE(patch->empty());
  // An empty list is a value: it patches relationships to none.
  Result<store::ContextPatch> cleared =
      ContextPatchFromJson(Json::parse(R"({"relationships": []})"), "patch");
  ASSERT_TRUE(cleared.ok()) << cleared.status();
  ASSERT_TRUE(cleared->relationships.has_value());
  EXPECT_TRUE(cleared->relationships->empty());
}

TEST(ContextPatchDtoTest, TypeErrorsNameTheFieldPath) {
  EXPECT_EQ(InvalidMessage(ContextPatchFromJson({{"retired_at", "soon"}}, "patch"))
                .rfind("patch.retired_at: ", 0),
            0U);
  EXPECT_EQ(InvalidMessage(ContextPatchFromJson({{"lifecycle_status", false}}, "patch")),
            "patch.lifecycle_status: expected a string, found boolean false");
  EXPECT_EQ(InvalidMessage(ContextPatchFromJson({{"embedding", {1, true}}}, "patch")),
            "patch.embedding[1]: expected a number, found boolean true");
  EXPECT_EQ(InvalidMessage(ContextPatchFromJson(Json::array(), "patch")),
            "patch: expected an object, found array");
}

// --- Rollout records --------------------------------------------------------------------------

RolloutRecord FullRolloutRecord() {
  RolloutRecord r;
  r.id = "turn-1";
  r.rollout_id = "traj-1";
  r.problem_id = "prob-1";
  r.dataset = "gsm8k";
  r.sequence_order = 3;
  r.role = "tool";
  r.created_at_micros = kCreated;
  r.content = "the answer is 4";
  r.content_type = "application/json";
  r.model_input_string = "in";
  r.model_output_string = "out";
  r.rationale = "because";
  r.problem_text = "2 + 2";
  r.user_metadata = R"({"free": "text, kept verbatim"})";
  r.input_tokens = std::vector<int32_t>{1, -2, 2147483647, -2147483647 - 1};
  r.output_tokens = std::vector<int32_t>{};
  r.num_input_tokens = 4;
  r.num_output_tokens = 0;
  r.output_logprobs = std::vector<float>{-0.1F, -2.75F};
  r.input_logprobs = std::vector<float>{-1e-7F};
  r.ref_logprobs = std::vector<float>{-std::numeric_limits<float>::infinity(), 0.0F};
  r.loss_mask = std::vector<int8_t>{0, 1, -128, 127};
  r.advantage = -0.5F;
  r.reward = 1.0F;
  r.raw_reward = 0.3F;
  r.grader_id = "grader";
  r.score = 0.7F;
  r.include_in_training = false;
  r.exclude_reason = "dup";
  r.policy_version = "v3";
  r.relationships = std::vector<store::RolloutRelationship>{{"turn-0", "follows", 1.5F}};
  r.binary_payload = std::string("\x00png\xFF", 5);
  r.payload_size = 5;
  r.payload_checksum = "crc:1";
  r.artifact_type = "screenshot";
  r.metadata = R"({"a":1,"b":[false]})";
  return r;
}

TEST(RolloutRecordDtoTest, EveryFieldRoundTripsThroughJsonText) {
  const RolloutRecord original = FullRolloutRecord();
  Result<RolloutRecord> parsed =
      RolloutRecordFromJson(ThroughText(RolloutRecordToJson(original)), kNow, "records[0]");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, original);
}

TEST(RolloutRecordDtoTest, RequiredFieldsAloneGetTheDocumentedDefaultsAndRoundTrip) {
  Result<RolloutRecord> parsed =
      RolloutRecordFromJson({{"id", "turn-1"}, {"rollout_id", "traj-1"}}, kNow, "records[0]");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  RolloutRecord expected;
  expected.id = "turn-1";
  expected.rollout_id = "traj-1";
  expected.problem_id = "traj-1";  // defaults to rollout_id
  expected.sequence_order = 0;
  expected.role = "assistant";
  expected.created_at_micros = kNow;
  expected.content_type = "text/plain";
  expected.relationships.emplace();
  EXPECT_EQ(*parsed, expected);

  Result<RolloutRecord> again =
      RolloutRecordFromJson(ThroughText(RolloutRecordToJson(*parsed)), kNow + 1, "records[0]");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, expected);
}

TEST(RolloutRecordDtoTest, ResponseLeavesOutOnlyAnAbsentBinaryPayload) {
  RolloutRecord r;
  r.id = "turn-1";
  r.rollout_id = "traj-1";
  r.problem_id = "traj-1";
  r.created_at_micros = kCreated;
  const Json out = RolloutRecordToJson(r);
  EXPECT_FALSE(out.contains("binary_payload"));
  EXPECT_EQ(out.size(), 35U);  // the 36 columns less binary_payload
  for (const char* key : {"dataset", "content", "user_metadata", "input_tokens", "loss_mask",
                          "advantage", "include_in_training", "metadata", "payload_size"}) {
    ASSERT_TRUE(out.contains(key)) << key;
    EXPECT_TRUE(out[key].is_null()) << key;
  }
  EXPECT_EQ(out["created_at"], kCreatedText);
  EXPECT_EQ(out["relationships"], Json::array());

  r.binary_payload = "bin";
  const Json with_blob = RolloutRecordToJson(r);
  EXPECT_EQ(with_blob.size(), 36U);
  EXPECT_EQ(with_blob["binary_payload"], "Ymlu");
}

TEST(RolloutRecordDtoTest, CreatedAtAndProblemIdAreTakenWhenGiven) {
  Result<RolloutRecord> parsed = RolloutRecordFromJson(
      {{"id", "t"}, {"rollout_id", "r"}, {"problem_id", "p"}, {"created_at", kCreated}}, kNow,
      "records[0]");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->problem_id, "p");
  EXPECT_EQ(parsed->created_at_micros, kCreated);
}

TEST(RolloutRecordDtoTest, UserMetadataIsAStringKeptVerbatim) {
  // The reference's user_metadata is a string: kept as sent and returned as a string.
  Result<RolloutRecord> text = RolloutRecordFromJson(
      {{"id", "t"}, {"rollout_id", "r"}, {"user_metadata", "{ \"spaced\": 1 }"}}, kNow, "r");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(text->user_metadata, "{ \"spaced\": 1 }");
  EXPECT_EQ(RolloutRecordToJson(*text)["user_metadata"], "{ \"spaced\": 1 }");
  // Any other JSON value is taken as its compact dump, returned as that text.
  Result<RolloutRecord> object = RolloutRecordFromJson(
      {{"id", "t"}, {"rollout_id", "r"}, {"user_metadata", {{"k", 1}}}}, kNow, "r");
  ASSERT_TRUE(object.ok()) << object.status();
  EXPECT_EQ(object->user_metadata, R"({"k":1})");
  EXPECT_EQ(RolloutRecordToJson(*object)["user_metadata"], R"({"k":1})");
  // metadata, by contrast, is a JSON value both ways.
  Result<RolloutRecord> metadata =
      RolloutRecordFromJson({{"id", "t"}, {"rollout_id", "r"}, {"metadata", "note"}}, kNow, "r");
  ASSERT_TRUE(metadata.ok()) << metadata.status();
  EXPECT_EQ(metadata->metadata, R"("note")");
  EXPECT_EQ(RolloutRecordToJson(*metadata)["metadata"], "note");
}

TEST(RolloutRecordDtoTest, NonFiniteFloatsAreWrittenAsStringsAndReadBack) {
  RolloutRecord r = FullRolloutRecord();
  r.output_logprobs = std::vector<float>{std::numeric_limits<float>::quiet_NaN(),
                                         std::numeric_limits<float>::infinity(), -0.0F};
  r.reward = std::numeric_limits<float>::quiet_NaN();
  const Json out = ThroughText(RolloutRecordToJson(r));
  EXPECT_EQ(out["output_logprobs"].dump(), R"(["NaN","Infinity",-0.0])");
  EXPECT_EQ(out["reward"], "NaN");
  Result<RolloutRecord> parsed = RolloutRecordFromJson(out, kNow, "records[0]");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->output_logprobs->size(), 3U);
  EXPECT_TRUE(std::isnan((*parsed->output_logprobs)[0]));
  EXPECT_EQ((*parsed->output_logprobs)[1], std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::signbit((*parsed->output_logprobs)[2]));
  EXPECT_TRUE(std::isnan(*parsed->reward));
}

TEST(RolloutRecordDtoTest, IdAndRolloutIdAreRequired) {
  struct Case {
    Json body;
    const char* message;
  };
  const Case cases[] = {
      {{{"rollout_id", "r"}}, "records[3].id is required"},
      {{{"id", nullptr}, {"rollout_id", "r"}}, "records[3].id is required"},
      {{{"id", ""}, {"rollout_id", "r"}}, "records[3].id is required"},
      {{{"id", 7}, {"rollout_id", "r"}}, "records[3].id: expected a string, found number 7"},
      {{{"id", "t"}}, "records[3].rollout_id is required"},
      {{{"id", "t"}, {"rollout_id", ""}}, "records[3].rollout_id is required"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.body.dump());
    EXPECT_EQ(InvalidMessage(RolloutRecordFromJson(c.body, kNow, "records[3]")), c.message);
  }
}

TEST(RolloutRecordDtoTest, TypeErrorsNameTheFieldPath) {
  struct Case {
    const char* field;
    const char* value;
    const char* message;
  };
  const Case cases[] = {
      {"sequence_order", "\"1\"",
       R"(records[0].sequence_order: expected a 32-bit integer, found string "1")"},
      {"input_tokens", "[1, 2.5]",
       "records[0].input_tokens[1]: expected a 32-bit integer, found number 2.5"},
      {"output_tokens", "7",
       "records[0].output_tokens: expected an array of 32-bit integers, found number 7"},
      {"loss_mask", "[1, 200]",
       "records[0].loss_mask[1]: 200 is out of range for an 8-bit integer"},
      {"output_logprobs", "{}",
       "records[0].output_logprobs: expected an array of numbers, found object"},
      {"reward", "\"high\"", R"(records[0].reward: expected a number, found string "high")"},
      {"include_in_training", "1",
       "records[0].include_in_training: expected a boolean, found number 1"},
      {"created_at", "\"noon\"", nullptr},  // the timestamp parser's message, prefixed
      {"binary_payload", "\"!!!!\"", nullptr},
      {"relationships", "[{\"relation\": \"r\"}]",
       "records[0].relationships[0].target_id is required"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.field);
    Json body = {{"id", "t"}, {"rollout_id", "r"}};
    body[c.field] = Json::parse(c.value);
    const std::string message = InvalidMessage(RolloutRecordFromJson(body, kNow, "records[0]"));
    if (c.message != nullptr) {
      EXPECT_EQ(message, c.message);
    } else {
      EXPECT_EQ(message.rfind(std::string("records[0].") + c.field + ": ", 0), 0U) << message;
    }
  }
}

TEST(RolloutRecordDtoTest, IntegralFloatsAreTakenForIntegers) {
  Result<RolloutRecord> parsed =
      RolloutRecordFromJson(Json::parse(R"({"id": "t", "rollout_id": "r", "sequence_order": 2.0,
                      "payload_size": 1e3})"),
                            kNow, "records[0]");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->sequence_order, 2);
  EXPECT_EQ(parsed->payload_size, 1000);
}

// --- The fast path of rollout upload bodies ------------------------------------------------

// FastRolloutRecords' contract: records only when the tree path (parse, then
// RolloutRecordFromJson per element) gives the very same ones. Returns whether it took them.
bool FastPathIsExact(const std::string& body) {
  std::optional<std::vector<RolloutRecord>> fast = FastRolloutRecords(body, kNow);
  if (!fast) return false;
  Json tree;
  try {
    tree = Json::parse(body);
  } catch (const Json::exception& e) {
    ADD_FAILURE() << "the fast path took a body the tree path cannot parse: " << body;
    return true;
  }
  const Json& records = tree["records"];
  EXPECT_EQ(records.size(), fast->size()) << body;
  for (size_t i = 0; i < records.size() && i < fast->size(); ++i) {
    Result<RolloutRecord> slow = RolloutRecordFromJson(records[i], kNow, "records[0]");
    EXPECT_TRUE(slow.ok()) << "the fast path took a record the tree path refuses: " << body;
    if (slow.ok()) {
      EXPECT_TRUE(*slow == (*fast)[i]) << body;
      // == takes -0.0 for 0.0; the written form does not.
      EXPECT_EQ(RolloutRecordToJson(*slow).dump(), RolloutRecordToJson((*fast)[i]).dump());
    }
  }
  return true;
}

std::string Records(const std::string& record) { return R"({"records": [)" + record + "]}"; }

// One record with a value of each kind the fast path reads, unknown keys and nulls.
std::string EveryKindOfValue() {
  return R"({"id": "t", "rollout_id": "r", "unknown": [{}],
    "content": "caf\u00e9 \ud83d\ude00 \"q\" \\ \n\t\u0000 end", "role": null,
    "reward": 1, "advantage": 1e-3, "score": 3.4e38, "raw_reward": -0.1,
    "sequence_order": -5, "payload_size": 9007199254740993, "created_at": 17,
    "problem_id": null, "relationships": [], "metadata": null,
    "output_logprobs": [0, -1, 0.5, 12345678901234567890], "loss_mask": [-128, 127],
    "include_in_training": true, "user_metadata": "{\"kept\": \"verbatim\"}",
    "binary_payload": "AAH+"})";
}

TEST(FastRolloutRecordsTest, OrdinaryBodiesTakeTheFastPathAndEqualTheTreePath) {
  RolloutRecord r = FullRolloutRecord();
  r.relationships.emplace();  // relationships, non-finite floats and JSON metadata decline
  r.ref_logprobs = std::vector<float>{-1.5F, 0.0F};
  r.metadata.reset();
  const std::string full = RolloutRecordToJson(r).dump();
  EXPECT_TRUE(FastPathIsExact(Records(full)));
  EXPECT_TRUE(FastPathIsExact(Records(full + "," + full + ",{\"id\":\"x\",\"rollout_id\":\"y\"}")));
  EXPECT_TRUE(FastPathIsExact(Records(R"({"id": "t", "rollout_id": "r"})")));
  EXPECT_TRUE(
      FastPathIsExact(R"({"other": {"x": [1, 2]}, "records": [)" + EveryKindOfValue() + "]}"));
  EXPECT_TRUE(FastPathIsExact(
      Records(R"({"id": "t", "rollout_id": "r", "created_at": "2026-01-05T09:30:00+02:00"})")));
}

TEST(FastRolloutRecordsTest, EverythingElseDeclines) {
  const std::vector<std::string> bodies = {
      "",
      "[]",
      "{}",
      "null",
      R"({"records": null})",
      R"({"records": []})",
      R"({"records": {}})",
      R"({"records": [1]})",
      R"({"records": [{"id": "a", "rollout_id": "r"}], "records": [{"id": "b", "rollout_id": "r"}]})",
      Records(R"({"id": "a", "id": "b", "rollout_id": "r"})"),
      Records(EveryKindOfValue().substr(0, EveryKindOfValue().size() - 1) +
              R"(, "created_at": null})"),
      Records(R"({"id": "", "rollout_id": "r"})"),
      Records(R"({"id": "a"})"),
      Records(R"({"id": "a", "rollout_id": null})"),
      Records(R"({"id": 1, "rollout_id": "r"})"),
      Records(R"({"id": "a", "rollout_id": "r", "sequence_order": 2.0})"),
      Records(R"({"id": "a", "rollout_id": "r", "sequence_order": 2147483648})"),
      Records(R"({"id": "a", "rollout_id": "r", "payload_size": 9223372036854775808})"),
      Records(R"({"id": "a", "rollout_id": "r", "reward": "NaN"})"),
      Records(R"({"id": "a", "rollout_id": "r", "reward": -0.0})"),
      Records(R"({"id": "a", "rollout_id": "r", "reward": 1e39})"),
      Records(R"({"id": "a", "rollout_id": "r", "reward": true})"),
      Records(R"({"id": "a", "rollout_id": "r", "metadata": {"a": 1}})"),
      Records(R"({"id": "a", "rollout_id": "r", "user_metadata": {"a": 1}})"),
      Records(R"({"id": "a", "rollout_id": "r", "relationships": [{"target_id": "b"}]})"),
      Records(R"({"id": "a", "rollout_id": "r", "input_tokens": [1, null]})"),
      Records(R"({"id": "a", "rollout_id": "r", "input_tokens": [1.0]})"),
      Records(R"({"id": "a", "rollout_id": "r", "loss_mask": [128]})"),
      Records(R"({"id": "a", "rollout_id": "r", "output_logprobs": ["NaN"]})"),
      Records(R"({"id": "a", "rollout_id": "r", "binary_payload": "not base64!"})"),
      Records(R"({"id": "a", "rollout_id": "r", "created_at": "yesterday"})"),
      Records(R"({"id": "a", "rollout_id": "r", "created_at": 1.5})"),
      Records(R"({"id": "a", "rollout_id": "r", "include_in_training": 1})"),
      Records(R"({"id": "a", "rollout_id": "r"})") + " trailing",
      Records(R"({"id": "a", "rollout_id": "r", "content": "\ud800"})"),
      Records("{\"id\": \"a\", \"rollout_id\": \"r\", \"content\": \"\xC3\x28\"}"),
      Records(R"({"id": "a", "rollout_id": "r"})").substr(1),
      Records(R"({"id": "a", "rollout_id": "r", "n": 1e999})"),
  };
  for (const std::string& body : bodies) {
    EXPECT_FALSE(FastRolloutRecords(body, kNow).has_value()) << body;
  }
}

// Random records over values of every kind, valid and not: whatever the fast path takes, the
// tree path gives identically, and it takes the ordinary ones.
TEST(FastRolloutRecordsTest, RandomBodiesNeverDifferFromTheTreePath) {
  const std::vector<std::string> strings = {
      R"("")",       R"("x")",     R"("caf\u00e9")",
      R"("a\"b\\")", "null",       "1",
      "1.0",         "-0",         "[]",
      "{}",          "true",       R"("2026-01-05T09:30:00Z")",
      R"("AAH+")",   "2147483647", "-129",
      "3.5e38",      "-1e-45",     R"("NaN")"};
  const std::vector<std::string> arrays = {"[]",        "[1, 2, 3]", "[-128, 127]",  "[0.5, -1]",
                                           "[1, null]", "null",      "[2147483648]", "[1.0]"};
  const std::vector<std::string> keys = {
      "problem_id",   "dataset",  "sequence_order",      "role",
      "created_at",   "content",  "user_metadata",       "num_input_tokens",
      "advantage",    "reward",   "include_in_training", "binary_payload",
      "payload_size", "metadata", "relationships",       "unknown_key"};
  const std::vector<std::string> array_keys = {"input_tokens", "output_tokens", "loss_mask",
                                               "output_logprobs", "ref_logprobs"};
  std::mt19937_64 rng(20261204);
  auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
  int fast = 0;
  constexpr int kBodies = 3000;
  for (int b = 0; b < kBodies; ++b) {
    std::string records;
    const int n = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < n; ++i) {
      std::string record =
          rng() % 16 == 0 ? R"({"id": "")" : R"({"id": "t)" + std::to_string(i) + "\"";
      if (rng() % 16 != 0) record += R"(, "rollout_id": "r")";
      const int fields = static_cast<int>(rng() % 4);
      for (int f = 0; f < fields; ++f) {
        if (rng() % 2 == 0) {
          record += ", \"" + pick(keys) + "\": " + pick(strings);
        } else {
          record += ", \"" + pick(array_keys) + "\": " + pick(arrays);
        }
      }
      records += (i > 0 ? "," : "") + record + "}";
    }
    if (FastPathIsExact(R"({"records": [)" + records + "]}")) ++fast;
  }
  // Not vacuous: a good share of the bodies are ordinary enough for the fast path.
  EXPECT_GT(fast, kBodies / 20);
}

// --- Datagen events ---------------------------------------------------------------------------

DatagenEvent FieldEvent(DatagenValue value) {
  DatagenEvent e;
  e.event_id = "7f3c0b1e-0000-5000-8000-000000000001";
  e.item_id = "src-1/gen:2";
  e.root_item_id = "src-1";
  e.parent_item_id = "src-1";
  e.item_seq = 5;
  e.checkpoint_id = std::string(
      "src-1/gen:2\0"
      "0\0"
      "gen\0"
      "3\0"
      "1",
      21);
  e.event_type = store::DatagenEventType::kFieldSet;
  e.set_position({"gen", store::DatagenStepKind::kMapReduce, 3, "outer", "router-1"});
  e.attempt = 2;
  e.run_id = "run-1";
  e.writer_epoch = "1700000000123";
  e.field_name = "answer";
  e.field_type = "custom_type";
  e.codec_version = 1;
  e.value = std::move(value);
  e.query_tags_json = R"({"lang":"en","split":["train"]})";
  e.status = store::DatagenItemStatus::kRunning;
  e.error_type = "ValueError";
  e.error_dump = "dump";
  e.traceback = "Traceback (most recent call last):\n  ...";
  e.event_ts_micros = kCreated;
  e.schema_version = 2;
  return e;
}

std::vector<DatagenValue> ValuesOfEveryKind() {
  return {
      DatagenValue::Int(42),
      DatagenValue::Int(std::numeric_limits<int64_t>::min()),
      DatagenValue::Int(std::numeric_limits<int64_t>::max()),
      DatagenValue::Float(0.1),
      DatagenValue::Float(-0.0),
      DatagenValue::Float(1e300),
      DatagenValue::Float(std::numeric_limits<double>::quiet_NaN()),
      DatagenValue::Float(-std::numeric_limits<double>::infinity()),
      DatagenValue::Bool(true),
      DatagenValue::Bool(false),
      DatagenValue::Str(""),
      DatagenValue::Str("multi\nline \"text\" \xE2\x9C\x93"),
      DatagenValue::Json(R"({"a":[1,2.5,"x",null],"b":{"c":true}})"),
      DatagenValue::Json(R"("a json string")"),
      DatagenValue::Json("3"),
      DatagenValue::Blob(std::string("\x00\x01\x02\xFF", 4), "sha256:00"),
      DatagenValue::Blob(store::DatagenBlob{std::nullopt, 1024, "crc:9"}),  // read lazily
      DatagenValue::Blob(store::DatagenBlob{std::string(), 0, std::nullopt}),
  };
}

TEST(DatagenEventDtoTest, AnEventWithEveryFieldRoundTripsForEveryValueKind) {
  for (const DatagenValue& value : ValuesOfEveryKind()) {
    const DatagenEvent original = FieldEvent(value);
    const Json out = DatagenEventToJson(original);
    SCOPED_TRACE(out.dump());
    Result<DatagenEvent> parsed = DatagenEventFromJson(ThroughText(out), kNow, "events[0]");
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, original);  // floats by bit pattern: NaN and -0.0 included
  }
}

TEST(DatagenEventDtoTest, ValuesHaveTheDocumentedForm) {
  auto value_json = [](DatagenValue v) {
    return DatagenEventToJson(FieldEvent(std::move(v)))["value"];
  };
  EXPECT_EQ(value_json(DatagenValue::Int(-3)).dump(),
            R"({"bytes":null,"checksum":null,"kind":"int","size":null,"value":-3})");
  EXPECT_EQ(value_json(DatagenValue::Float(2.5)).dump(),
            R"({"bytes":null,"checksum":null,"kind":"float","size":null,"value":2.5})");
  EXPECT_EQ(value_json(DatagenValue::Float(std::numeric_limits<double>::infinity()))["value"],
            "Infinity");
  EXPECT_EQ(value_json(DatagenValue::Bool(true))["value"], true);
  EXPECT_EQ(value_json(DatagenValue::Str("s"))["value"], "s");
  EXPECT_EQ(value_json(DatagenValue::Json(R"({"k":[1]})"))["value"], Json::parse(R"({"k":[1]})"));
  EXPECT_EQ(value_json(DatagenValue::Blob(std::string("\x00\x01\xFE"
                                                      "bin",
                                                      6),
                                          "c"))
                .dump(),
            R"({"bytes":"AAH+Ymlu","checksum":"c","kind":"blob","size":6,"value":null})");
  EXPECT_EQ(
      value_json(DatagenValue::Blob(store::DatagenBlob{std::nullopt, 9, std::nullopt})).dump(),
      R"({"bytes":null,"checksum":null,"kind":"blob","size":9,"value":null})");
}

TEST(DatagenEventDtoTest, ResponseHasEveryFieldWithAbsentOptionalsNull) {
  DatagenEvent e;
  e.event_id = "e";
  e.item_id = "i";
  e.root_item_id = "i";
  e.item_seq = 1;
  e.checkpoint_id = "c";
  e.run_id = "r";
  e.writer_epoch = "9";
  e.event_ts_micros = kCreated;
  const Json out = DatagenEventToJson(e);
  EXPECT_EQ(out.size(), 26U);
  for (const char* key :
       {"parent_item_id", "step_name", "step_kind", "step_index", "enclosing_step", "selector_step",
        "field_name", "field_type", "codec_version", "value", "query_tags", "status", "error_type",
        "error_dump", "traceback"}) {
    ASSERT_TRUE(out.contains(key)) << key;
    EXPECT_TRUE(out[key].is_null()) << key;
  }
  EXPECT_EQ(out["event_type"], "ITEM_CREATED");
  EXPECT_EQ(out["writer_epoch"], "9");
  EXPECT_EQ(out["event_ts"], kCreatedText);
  EXPECT_EQ(out["schema_version"], 2);
  EXPECT_EQ(out["attempt"], 0);
}

TEST(DatagenEventDtoTest, RequiredFieldsAloneGetTheDocumentedDefaults) {
  const Json body = Json::parse(R"({"event_id": "e", "item_id": "i", "root_item_id": "i",
      "item_seq": 1, "checkpoint_id": "c", "event_type": "ITEM_CREATED", "run_id": "r",
      "writer_epoch": "w"})");
  Result<DatagenEvent> parsed = DatagenEventFromJson(body, kNow, "events[0]");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  DatagenEvent expected;
  expected.event_id = "e";
  expected.item_id = "i";
  expected.root_item_id = "i";
  expected.item_seq = 1;
  expected.checkpoint_id = "c";
  expected.event_type = store::DatagenEventType::kItemCreated;
  expected.run_id = "r";
  expected.writer_epoch = "w";
  expected.attempt = 0;
  expected.event_ts_micros = kNow;
  expected.schema_version = store::kDatagenSchemaVersion;
  EXPECT_EQ(*parsed, expected);
  EXPECT_TRUE(parsed->Validate().ok()) << parsed->Validate();
}

TEST(DatagenEventDtoTest, AParsedCheckpointEventPassesTheStoresValidation) {
  const Json body = Json::parse(R"({"event_id": "e2", "item_id": "i", "root_item_id": "i",
      "item_seq": 2, "checkpoint_id": "c", "event_type": "FIELD_APPEND", "run_id": "r",
      "writer_epoch": 12, "step_name": "gen", "step_kind": "leaf", "step_index": 0,
      "field_name": "f", "field_type": "json", "codec_version": 1,
      "value": {"kind": "json", "value": {"x": [1, 2]}}, "query_tags": ["t"],
      "event_ts": "2024-05-01T12:34:56.123456Z", "schema_version": 2, "extra": "ignored"})");
  Result<DatagenEvent> parsed = DatagenEventFromJson(body, kNow, "events[0]");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->writer_epoch, "12");  // an integer epoch becomes its decimal text
  EXPECT_EQ(parsed->value, DatagenValue::Json(R"({"x":[1,2]})"));
  EXPECT_EQ(parsed->query_tags_json, R"(["t"])");
  EXPECT_EQ(parsed->event_ts_micros, kCreated);
  EXPECT_TRUE(parsed->Validate().ok()) << parsed->Validate();
}

TEST(DatagenEventDtoTest, BlobSizeDefaultsToTheLengthOfItsBytes) {
  Result<DatagenValue> sized = [] {
    Result<DatagenEvent> e = DatagenEventFromJson(
        Json::parse(R"({"event_id": "e", "item_id": "i", "root_item_id": "i", "item_seq": 1,
            "checkpoint_id": "c", "event_type": "FIELD_SET", "run_id": "r",
            "writer_epoch": "w", "value": {"kind": "blob", "bytes": "aGVsbG8="}})"),
        kNow, "events[0]");
    if (!e.ok()) return Result<DatagenValue>(e.status());
    return Result<DatagenValue>(*e->value);
  }();
  ASSERT_TRUE(sized.ok()) << sized.status();
  EXPECT_EQ(*sized, DatagenValue::Blob("hello"));
  EXPECT_EQ(sized->blob().size, 5);
}

// A FIELD_SET event body whose "value" is `value` (JSON text).
Json EventWithValue(const char* value) {
  Json body = Json::parse(R"({"event_id": "e", "item_id": "i", "root_item_id": "i",
      "item_seq": 1, "checkpoint_id": "c", "event_type": "FIELD_SET", "run_id": "r",
      "writer_epoch": "w"})");
  body["value"] = Json::parse(value);
  return body;
}

TEST(DatagenEventDtoTest, ValuesOfEachKindAreReadFromTheirJsonForm) {
  struct Case {
    const char* value;
    DatagenValue expected;
  };
  const Case cases[] = {
      {R"({"kind": "int", "value": -9007199254740993})", DatagenValue::Int(-9007199254740993)},
      {R"({"kind": "int", "value": 4.0})", DatagenValue::Int(4)},
      {R"({"kind": "float", "value": 3})", DatagenValue::Float(3.0)},
      {R"({"kind": "float", "value": "-Infinity"})",
       DatagenValue::Float(-std::numeric_limits<double>::infinity())},
      {R"({"kind": "bool", "value": false})", DatagenValue::Bool(false)},
      {R"({"kind": "str", "value": "x", "bytes": "ignored", "size": 3})", DatagenValue::Str("x")},
      {R"({"kind": "json", "value": [1, {"b": 2, "a": 1}]})",
       DatagenValue::Json(R"([1,{"a":1,"b":2}])")},
      {R"({"kind": "json", "value": "s"})", DatagenValue::Json(R"("s")")},
      {R"({"kind": "blob", "bytes": "AAE=", "checksum": "k", "value": 5})",
       DatagenValue::Blob(std::string("\x00\x01", 2), "k")},
      {R"({"kind": "blob", "size": 77})",
       DatagenValue::Blob(store::DatagenBlob{std::nullopt, 77, std::nullopt})},
      {R"({"kind": "blob"})",
       DatagenValue::Blob(store::DatagenBlob{std::nullopt, 0, std::nullopt})},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.value);
    Result<DatagenEvent> parsed = DatagenEventFromJson(EventWithValue(c.value), kNow, "e");
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(parsed->value, c.expected);
  }
}

TEST(DatagenEventDtoTest, BadValuesAreRejectedNamingTheField) {
  struct Case {
    const char* value;
    const char* message;
  };
  const Case cases[] = {
      {R"("five")",
       "events[1].value: expected a datagen value object {kind, value?, bytes?, size?, "
       "checksum?}, found string \"five\""},
      {R"({"value": 5})", "events[1].value.kind is required"},
      {R"({"kind": 5})", "events[1].value.kind: expected a string, found number 5"},
      {R"({"kind": "complex", "value": 1})",
       "events[1].value.kind: unsupported datagen value kind 'complex': valid kinds are "
       "'int', 'float', 'bool', 'str', 'json', 'blob'"},
      {R"({"kind": "int"})", "events[1].value: datagen value of kind 'int' is missing 'value'"},
      {R"({"kind": "json", "value": null})",
       "events[1].value: datagen value of kind 'json' is missing 'value'"},
      {R"({"kind": "int", "value": "5"})",
       R"(events[1].value.value: expected an integer, found string "5")"},
      {R"({"kind": "int", "value": 1.5})",
       "events[1].value.value: expected an integer, found number 1.5"},
      {R"({"kind": "int", "value": 9223372036854775808})",
       "events[1].value.value: 9223372036854775808 is out of range for an integer"},
      {R"({"kind": "float", "value": "1.5"})",
       R"(events[1].value.value: expected a number, found string "1.5")"},
      {R"({"kind": "bool", "value": 1})",
       "events[1].value.value: expected a boolean, found number 1"},
      {R"({"kind": "str", "value": ["a"]})",
       "events[1].value.value: expected a string, found array"},
      {R"({"kind": "blob", "size": -1})", "events[1].value.size: must not be negative, got -1"},
      {R"({"kind": "blob", "checksum": 3})",
       "events[1].value.checksum: expected a string, found number 3"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.value);
    EXPECT_EQ(InvalidMessage(DatagenEventFromJson(EventWithValue(c.value), kNow, "events[1]")),
              c.message);
  }
  const std::string bad_bytes = InvalidMessage(DatagenEventFromJson(
      EventWithValue(R"({"kind": "blob", "bytes": "not base64"})"), kNow, "events[1]"));
  EXPECT_EQ(bad_bytes.rfind("events[1].value.bytes: invalid base64", 0), 0U) << bad_bytes;
}

TEST(DatagenEventDtoTest, BadFieldsAreRejectedNamingTheField) {
  struct Case {
    const char* field;
    const char* value;  // JSON text; nullptr removes the field
    const char* message;
  };
  const Case cases[] = {
      {"event_id", nullptr, "events[1].event_id is required"},
      {"item_id", "null", "events[1].item_id is required"},
      {"item_seq", nullptr, "events[1].item_seq is required"},
      {"writer_epoch", nullptr, "events[1].writer_epoch is required"},
      {"item_seq", "\"3\"", R"(events[1].item_seq: expected an integer, found string "3")"},
      {"event_type", "\"BOGUS\"", "events[1].event_type: unsupported datagen event type 'BOGUS'"},
      {"step_kind", "\"loopy\"", "events[1].step_kind: unsupported datagen step kind 'loopy'"},
      {"status", "\"done\"", "events[1].status: unsupported datagen item status 'done'"},
      {"attempt", "2147483648",
       "events[1].attempt: 2147483648 is out of range for a 32-bit integer"},
      {"writer_epoch", "1.5",
       "events[1].writer_epoch: expected a string (or an integer), found number 1.5"},
      {"error_dump", "{}", "events[1].error_dump: expected a string, found object"},
      {"event_ts", "\"2024-02-30T00:00:00Z\"", nullptr},
      {"event_ts", "[]",
       "events[1].event_ts: expected an RFC 3339 timestamp string or integer microseconds, "
       "found array"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.field) + " = " + (c.value ? c.value : "(absent)"));
    Json body = EventWithValue(R"({"kind": "int", "value": 1})");
    if (c.value == nullptr) {
      body.erase(c.field);
    } else {
      body[c.field] = Json::parse(c.value);
    }
    const std::string message = InvalidMessage(DatagenEventFromJson(body, kNow, "events[1]"));
    if (c.message != nullptr) {
      EXPECT_EQ(message, c.message);
    } else {
      EXPECT_EQ(message.rfind(std::string("events[1].") + c.field + ": ", 0), 0U) << message;
    }
  }
}

// --- Folds, overview, failures ----------------------------------------------------------------

TEST(DatagenFoldDtoTest, AFoldedItemHasTheDocumentedForm) {
  store::DatagenFoldedItem item;
  item.item_id = "src-1/gen:0";
  item.root_item_id = "src-1";
  item.parent_item_id = "src-1";
  item.status = store::DatagenItemStatus::kCompleted;
  item.last_item_seq = 6;
  item.last_attempt = 1;
  item.fields["answer"] = {false, {DatagenValue::Str("4")}};
  item.fields["notes"] = {true, {DatagenValue::Int(1), DatagenValue::Int(2)}};
  item.fields["image"] = {false,
                          {DatagenValue::Blob(store::DatagenBlob{std::nullopt, 3, std::nullopt})}};
  const store::DatagenStepPosition loop{"loop", store::DatagenStepKind::kLoop, 0, std::nullopt,
                                        std::nullopt};
  const store::DatagenStepPosition gen{"gen", store::DatagenStepKind::kLeaf, 2, "loop",
                                       std::nullopt};
  item.trajectory = {{gen, 4}, {loop, 5}};
  item.started = {loop};
  item.completed = {gen, loop};
  item.query_tags_json = R"({"lang":"en"})";
  item.blob_event_ids["image"] = "event-7";

  const Json expected = Json::parse(R"({
    "item_id": "src-1/gen:0", "root_item_id": "src-1", "parent_item_id": "src-1",
    "status": "completed", "last_item_seq": 6, "last_attempt": 1,
    "fields": {
      "answer": {"mode": "set", "values": [],
                 "value": {"kind": "str", "value": "4", "bytes": null, "size": null,
                           "checksum": null}},
      "image": {"mode": "set", "values": [],
                "value": {"kind": "blob", "value": null, "bytes": null, "size": 3,
                          "checksum": null}},
      "notes": {"mode": "append", "value": null, "values": [
        {"kind": "int", "value": 1, "bytes": null, "size": null, "checksum": null},
        {"kind": "int", "value": 2, "bytes": null, "size": null, "checksum": null}]}
    },
    "trajectory": [
      {"step_name": "gen", "step_kind": "leaf", "step_index": 2, "enclosing_step": "loop",
       "selector_step": null, "item_seq": 4},
      {"step_name": "loop", "step_kind": "loop", "step_index": 0, "enclosing_step": null,
       "selector_step": null, "item_seq": 5}],
    "started": [
      {"step_name": "loop", "step_kind": "loop", "step_index": 0, "enclosing_step": null,
       "selector_step": null}],
    "completed": [
      {"step_name": "gen", "step_kind": "leaf", "step_index": 2, "enclosing_step": "loop",
       "selector_step": null},
      {"step_name": "loop", "step_kind": "loop", "step_index": 0, "enclosing_step": null,
       "selector_step": null}],
    "query_tags": {"lang": "en"},
    "blob_event_ids": {"image": "event-7"}
  })");
  const Json out = DatagenFoldedItemToJson(item);
  EXPECT_EQ(out, expected) << out.dump();
}

TEST(DatagenFoldDtoTest, AFreshItemHasEmptyCollectionsAndNulls) {
  store::DatagenFoldedItem item;
  item.item_id = "a";
  item.root_item_id = "a";
  const Json out = DatagenFoldedItemToJson(item);
  EXPECT_EQ(out["parent_item_id"], nullptr);
  EXPECT_EQ(out["status"], "running");
  EXPECT_EQ(out["fields"], Json::object());
  EXPECT_EQ(out["trajectory"], Json::array());
  EXPECT_EQ(out["started"], Json::array());
  EXPECT_EQ(out["completed"], Json::array());
  EXPECT_EQ(out["query_tags"], nullptr);
  EXPECT_EQ(out["blob_event_ids"], Json::object());
}

TEST(DatagenFoldDtoTest, AFoldOfParsedEventsIsWrittenWithTheEventsValues) {
  // Events as a client sends them, folded by the store's rules, written back.
  const char* bodies[] = {
      R"({"event_id": "e1", "item_id": "i", "root_item_id": "i", "item_seq": 1,
          "checkpoint_id": "c0", "event_type": "ITEM_CREATED", "run_id": "r",
          "writer_epoch": "w", "status": "running", "query_tags": {"q": 1}})",
      R"({"event_id": "e2", "item_id": "i", "root_item_id": "i", "item_seq": 2,
          "checkpoint_id": "c1", "event_type": "FIELD_SET", "run_id": "r",
          "writer_epoch": "w", "step_name": "gen", "step_kind": "leaf", "step_index": 0,
          "field_name": "score", "field_type": "float", "codec_version": 1,
          "value": {"kind": "float", "value": 0.75}})",
      R"({"event_id": "e3", "item_id": "i", "root_item_id": "i", "item_seq": 3,
          "checkpoint_id": "c1", "event_type": "STEP_COMPLETED", "run_id": "r",
          "writer_epoch": "w", "step_name": "gen", "step_kind": "leaf", "step_index": 0})",
  };
  std::vector<DatagenEvent> events;
  for (const char* body : bodies) {
    Result<DatagenEvent> e = DatagenEventFromJson(Json::parse(body), kNow, "events");
    ASSERT_TRUE(e.ok()) << e.status();
    events.push_back(*e);
  }
  Result<std::optional<store::DatagenFoldedItem>> folded =
      store::FoldDatagenEvents(std::move(events));
  ASSERT_TRUE(folded.ok()) << folded.status();
  ASSERT_TRUE(folded->has_value());
  const Json out = DatagenFoldedItemToJson(**folded);
  EXPECT_EQ(out["fields"]["score"]["value"]["value"], 0.75);
  EXPECT_EQ(out["trajectory"][0]["item_seq"], 3);
  EXPECT_EQ(out["query_tags"], Json::parse(R"({"q": 1})"));
  EXPECT_EQ(out["last_item_seq"], 3);
}

TEST(DatagenOverviewDtoTest, TheOverviewHasTheDocumentedForm) {
  store::DatagenOverview overview;
  overview.items = 10;
  overview.running = 3;
  overview.completed = 6;
  overview.filtered = 1;
  overview.failures = 4;
  overview.failures_by_error_type = {{"ValueError", 3}, {"Timeout", 1}};
  overview.failures_by_run["run-a"] = {4, {{"ValueError", 3}, {"Timeout", 1}}, {"r1", "r2"}};
  overview.completed_steps = {{"gen", 12}, {"grade", 6}};
  const Json expected = Json::parse(R"({
    "items": 10, "running": 3, "completed": 6, "filtered": 1, "failures": 4,
    "failures_by_error_type": {"Timeout": 1, "ValueError": 3},
    "failures_by_run": {"run-a": {"failures": 4,
                                  "failures_by_error_type": {"Timeout": 1, "ValueError": 3},
                                  "sample_root_item_ids": ["r1", "r2"]}},
    "completed_steps": {"gen": 12, "grade": 6}})");
  EXPECT_EQ(DatagenOverviewToJson(overview), expected);

  const Json empty = DatagenOverviewToJson(store::DatagenOverview{});
  EXPECT_EQ(empty["failures_by_error_type"], Json::object());
  EXPECT_EQ(empty["failures_by_run"], Json::object());
  EXPECT_EQ(empty["completed_steps"], Json::object());
}

TEST(DatagenFailureDtoTest, AFailureHasTheDocumentedForm) {
  store::DatagenItemFailure failure;
  failure.at = {{"gen", store::DatagenStepKind::kLeaf, 1, std::nullopt, "router"}, 9};
  failure.run_id = "run-a";
  failure.attempt = 2;
  failure.error_type = "ValueError";
  failure.traceback = "tb";
  const Json expected = Json::parse(R"({
    "at": {"step_name": "gen", "step_kind": "leaf", "step_index": 1, "enclosing_step": null,
           "selector_step": "router", "item_seq": 9},
    "run_id": "run-a", "attempt": 2, "error_type": "ValueError", "error_dump": null,
    "traceback": "tb"})");
  EXPECT_EQ(DatagenItemFailureToJson(failure), expected);
}

}  // namespace
}  // namespace strata::server
