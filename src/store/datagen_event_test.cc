// The datagen event model without a store: event ids, item ids, vocabulary, every event
// validation rule, the value_kind codec and every fold rule.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "store/datagen_test_util.h"
#include "strata/builder.h"
#include "strata/datagen_store.h"

namespace strata::store {
namespace {

using namespace std::string_literals;
using testing::Event;
using testing::Field;
using testing::Pos;

// --- Ids -------------------------------------------------------------------------------------

TEST(DatagenEventIdTest, MatchesUuid5ComputedIndependently) {
  // python3: uuid.uuid5(uuid.NAMESPACE_OID, item + "\0" + checkpoint + "\0" + str(ordinal))
  EXPECT_EQ(DatagenEventId("root-1", "root-1\0created"s, 0),
            "439d4ddf-fa7c-5f66-a40f-aa361a4c8ca1");
  EXPECT_EQ(DatagenEventId("a/gen:2",
                           "a/gen:2\0"s
                           "0\0"s
                           "gen\0"s
                           "3\0"s
                           "1",
                           2),
            "3e1465c3-406f-5717-ae29-808e4d98c9fd");
  EXPECT_EQ(DatagenEventId("src", "cp", 17), "5b2c780a-c6b7-5657-aa99-add61ff6f134");
}

TEST(NewTimeOrderedIdTest, IsAVersion7UuidAndIncreases) {
  std::string last;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = NewTimeOrderedId();
    ASSERT_EQ(id.size(), 36u) << id;
    for (size_t c : {8u, 13u, 18u, 23u}) EXPECT_EQ(id[c], '-') << id;
    EXPECT_EQ(id[14], '7') << id;                                          // version
    EXPECT_NE(std::string("89ab").find(id[19]), std::string::npos) << id;  // RFC variant
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef-"), std::string::npos) << id;
    // Hyphens sit at the same places, so text order is time order.
    EXPECT_LT(last, id);
    last = id;
  }
}

TEST(DatagenItemIdTest, PathOperations) {
  ASSERT_OK_AND_ASSIGN(DatagenItemId root, DatagenItemId::FromSourceKey("doc-7"));
  EXPECT_TRUE(root.IsRoot());
  EXPECT_EQ(root.Parent(), std::nullopt);
  EXPECT_EQ(root.OriginStep(), std::nullopt);
  EXPECT_EQ(root.BranchIdx(), std::nullopt);
  ASSERT_OK_AND_ASSIGN(DatagenItemId child, root.Child("split", 3));
  ASSERT_OK_AND_ASSIGN(DatagenItemId grandchild, child.Child("map", 12));
  EXPECT_EQ(grandchild.str(), "doc-7/split:3/map:12");
  EXPECT_FALSE(grandchild.IsRoot());
  EXPECT_EQ(grandchild.Parent(), child);
  EXPECT_EQ(grandchild.Root(), root);
  EXPECT_EQ(grandchild.OriginStep(), "map");
  EXPECT_EQ(grandchild.BranchIdx(), 12);
  ASSERT_OK_AND_ASSIGN(DatagenItemId parsed, DatagenItemId::Parse("doc-7/split:3/map:12"));
  EXPECT_EQ(parsed, grandchild);
  EXPECT_FALSE(root.Child("a/b", 0).ok());
  EXPECT_FALSE(root.Child("a:b", 0).ok());
  EXPECT_FALSE(root.Child("a", -1).ok());
}

TEST(DatagenItemIdTest, ParseErrors) {
  EXPECT_INVALID(DatagenItemId::Parse("").status(), "empty datagen item id");
  EXPECT_INVALID(DatagenItemId::FromSourceKey("").status(), "empty datagen item id");
  EXPECT_INVALID(DatagenItemId::Parse("a//b:1").status(), "malformed item id segment");
  EXPECT_INVALID(DatagenItemId::Parse("a/b").status(), "malformed item id segment");
  EXPECT_INVALID(DatagenItemId::Parse("a/:1").status(), "malformed item id segment");
  EXPECT_INVALID(DatagenItemId::Parse("/b:1").status(), "malformed item id segment");
  EXPECT_INVALID(DatagenItemId::Parse("a/b:x").status(), "non-integer branch index 'x'");
  EXPECT_INVALID(DatagenItemId::Parse("a/b:-1").status(), "non-integer branch index");
  EXPECT_INVALID(DatagenItemId::Parse("a/b:").status(), "non-integer branch index");
  EXPECT_INVALID(DatagenItemId::FromSourceKey("a/b").status(), "malformed item id segment");
}

TEST(DatagenVocabularyTest, NamesRoundTripAndUnknownsAreRejected) {
  for (auto t :
       {DatagenEventType::kItemCreated, DatagenEventType::kStepStarted, DatagenEventType::kFieldSet,
        DatagenEventType::kFieldAppend, DatagenEventType::kStepCompleted, DatagenEventType::kFailed,
        DatagenEventType::kTerminal}) {
    EXPECT_EQ(ParseDatagenEventType(DatagenEventTypeName(t)).value(), t);
  }
  EXPECT_INVALID(ParseDatagenEventType("STEP_SKIPPED").status(),
                 "unsupported datagen event type 'STEP_SKIPPED'");
  EXPECT_EQ(DatagenStepKindName(DatagenStepKind::kMapReduce), "map_reduce");
  EXPECT_EQ(ParseDatagenStepKind("sub_pipeline").value(), DatagenStepKind::kSubPipeline);
  EXPECT_FALSE(ParseDatagenStepKind("fork").ok());
  EXPECT_TRUE(IsDriverStep(DatagenStepKind::kSequence));
  EXPECT_TRUE(IsDriverStep(DatagenStepKind::kLoop));
  EXPECT_FALSE(IsDriverStep(DatagenStepKind::kBranch));
  EXPECT_TRUE(IsTerminalStatus(DatagenItemStatus::kFiltered));
  EXPECT_FALSE(IsTerminalStatus(DatagenItemStatus::kFailed));
  EXPECT_FALSE(ParseDatagenItemStatus("done").ok());
}

// --- Validation --------------------------------------------------------------------------------

TEST(DatagenValidationTest, EventRules) {
  const DatagenEvent ok = Event(DatagenEventType::kItemCreated, "a", 1);
  EXPECT_OK(ok.Validate());
  for (auto [member, name] : std::vector<std::pair<std::string DatagenEvent::*, std::string>>{
           {&DatagenEvent::event_id, "event_id"},
           {&DatagenEvent::item_id, "item_id"},
           {&DatagenEvent::root_item_id, "root_item_id"},
           {&DatagenEvent::checkpoint_id, "checkpoint_id"},
           {&DatagenEvent::run_id, "run_id"},
           {&DatagenEvent::writer_epoch, "writer_epoch"}}) {
    DatagenEvent e = ok;
    e.*member = "";
    EXPECT_INVALID(e.Validate(), name + " must not be empty");
  }
  DatagenEvent e = ok;
  e.item_seq = -1;
  EXPECT_INVALID(e.Validate(), "item_seq must not be negative");
  e = ok;
  e.attempt = -1;
  EXPECT_INVALID(e.Validate(), "attempt must not be negative");
  e = ok;
  e.schema_version = 0;
  EXPECT_INVALID(e.Validate(), "schema_version must be positive");

  const DatagenEvent field = Field("a", 2, "x", DatagenValue::Int(1));
  EXPECT_OK(field.Validate());
  e = field;
  e.field_name.reset();
  EXPECT_INVALID(e.Validate(), "FIELD_SET requires field_name");
  e = field;
  e.field_type.reset();
  EXPECT_INVALID(e.Validate(), "FIELD_SET requires field_type");
  e = field;
  e.codec_version.reset();
  EXPECT_INVALID(e.Validate(), "FIELD_SET requires codec_version");
  e = field;
  e.value.reset();
  EXPECT_INVALID(e.Validate(), "FIELD_SET requires a value");
  e = Field("a", 2, "x", DatagenValue::Int(1), /*append=*/true);
  e.step_kind.reset();
  EXPECT_INVALID(e.Validate(), "FIELD_APPEND requires step_kind");
  e = field;
  e.value = DatagenValue::Json("{not json");
  EXPECT_INVALID(e.Validate(), "contains invalid value_json");

  for (auto type : {DatagenEventType::kStepStarted, DatagenEventType::kStepCompleted,
                    DatagenEventType::kFailed}) {
    const DatagenEvent step = Event(type, "a", 3);
    EXPECT_OK(step.Validate());
    e = step;
    e.step_name.reset();
    EXPECT_INVALID(e.Validate(), std::string(DatagenEventTypeName(type)) + " requires step_name");
    e = step;
    e.step_index.reset();
    EXPECT_INVALID(e.Validate(), "requires step_index");
  }
  e = Event(DatagenEventType::kFailed, "a", 3);
  e.error_type.reset();
  EXPECT_INVALID(e.Validate(), "FAILED requires error_type");
  e = Event(DatagenEventType::kTerminal, "a", 4);
  EXPECT_OK(e.Validate());
  e.status = DatagenItemStatus::kFiltered;
  EXPECT_OK(e.Validate());
  e.status = DatagenItemStatus::kRunning;
  EXPECT_INVALID(e.Validate(), "TERMINAL requires status completed or filtered");
  e.status.reset();
  EXPECT_INVALID(e.Validate(), "TERMINAL requires status completed or filtered");
  e = ok;
  e.query_tags_json = "[1,";
  EXPECT_INVALID(e.Validate(), "invalid query_tags_json");
}

// --- Codec -------------------------------------------------------------------------------------

// A one-row batch of the given string columns (null = absent value) plus the required
// numbers, decoded.
Status DecodeRow(std::vector<std::pair<std::string, std::optional<std::string>>> strings) {
  std::vector<FieldPtr> fields;
  for (auto& [name, v] : strings) {
    fields.push_back(field(
        name, name.starts_with("value_") && name != "value_kind" ? large_utf8() : utf8(), true));
  }
  fields.push_back(field("schema_version", int32(), true));
  auto schema = std::make_shared<Schema>(fields);
  auto builder = RecordBatchBuilder::Make(schema).value();
  for (size_t k = 0; k < strings.size(); ++k) {
    const auto& v = strings[k].second;
    if (!v) {
      builder->builder(static_cast<int>(k))->AppendNull();
    } else if (fields[k]->type()->Equals(*utf8())) {
      EXPECT_OK(builder->GetAs<BinaryBuilder>(static_cast<int>(k))->Append(*v));
    } else {
      EXPECT_OK(builder->GetAs<LargeBinaryBuilder>(static_cast<int>(k))->Append(*v));
    }
  }
  builder->GetAs<Int32Builder>(static_cast<int>(strings.size()))->Append(2);
  return DecodeDatagenEvents(builder->Finish().value()).status();
}

TEST(DatagenCodecTest, DecodeValueKindRules) {
  std::vector<std::pair<std::string, std::optional<std::string>>> base = {
      {"event_id", "e1"},
      {"item_id", "a"},
      {"root_item_id", "a"},
      {"checkpoint_id", "c"},
      {"event_type", "ITEM_CREATED"},
      {"run_id", "r"},
      {"writer_epoch", "w"}};
  EXPECT_OK(DecodeRow(base));
  auto with = [&](std::vector<std::pair<std::string, std::optional<std::string>>> extra) {
    auto row = base;
    for (auto& e : extra) row.push_back(std::move(e));
    return DecodeRow(row);
  };
  EXPECT_INVALID(with({{"value_kind", "int"}}), "event 'e1': value_i64 must not be null");
  EXPECT_INVALID(with({{"value_kind", "float"}}), "value_f64 must not be null");
  EXPECT_INVALID(with({{"value_kind", "bool"}}), "value_bool must not be null");
  EXPECT_INVALID(with({{"value_kind", "str"}, {"value_str", std::nullopt}}),
                 "value_kind=str requires value_str");
  EXPECT_INVALID(with({{"value_kind", "json"}}), "value_kind=json requires value_json");
  EXPECT_INVALID(with({{"value_kind", "json"}, {"value_json", "{oops"}}),
                 "event 'e1' contains invalid value_json");
  EXPECT_INVALID(with({{"value_kind", "tensor"}}),
                 "event 'e1' has unsupported value_kind 'tensor'");
  EXPECT_INVALID(with({{"value_kind", "blob"}}), "value_kind=blob requires payload_size");
  EXPECT_OK(with({{"value_kind", "str"}, {"value_str", "hello"}}));
  EXPECT_OK(with({{"value_kind", "json"}, {"value_json", "{\"a\":1}"}}));
  auto unknown_type = base;
  unknown_type[4].second = "STEP_SKIPPED";
  EXPECT_INVALID(DecodeRow(unknown_type), "unsupported datagen event type 'STEP_SKIPPED'");
  // Decoded events are validated.
  auto empty_run = base;
  empty_run[5].second = "";
  EXPECT_INVALID(DecodeRow(empty_run), "run_id must not be empty");
}

TEST(DatagenCodecTest, RoundTripsEveryValueKindAndColumn) {
  std::vector<DatagenEvent> events;
  events.push_back(Event(DatagenEventType::kItemCreated, "a", 1));
  events.back().query_tags_json = R"({"lang":"en"})";
  events.back().parent_item_id = "p";
  int64_t seq = 2;
  for (DatagenValue v : {DatagenValue::Int(-5), DatagenValue::Float(2.5), DatagenValue::Bool(true),
                         DatagenValue::Str("s"), DatagenValue::Json("[1,2]"),
                         DatagenValue::Blob("\x00\x01"s, "crc")}) {
    events.push_back(Field("a", seq++, "f", v));
  }
  events.push_back(Event(DatagenEventType::kFailed, "a", seq++));
  events.back().error_dump = "dump";
  events.back().traceback = "tb";
  events.back().enclosing_step = "outer";
  events.back().selector_step = "sel";
  events.push_back(Event(DatagenEventType::kTerminal, "a", seq++));
  ASSERT_OK_AND_ASSIGN(RecordBatch batch, EncodeDatagenEvents(events, DatagenSchema()));
  EXPECT_EQ(batch.num_columns(), 34);
  ASSERT_OK_AND_ASSIGN(std::vector<DatagenEvent> decoded, DecodeDatagenEvents(batch));
  EXPECT_EQ(decoded, events);
}

// --- Fold --------------------------------------------------------------------------------------

TEST(DatagenFoldTest, AppliesEveryEventKind) {
  std::vector<DatagenEvent> events = {Event(DatagenEventType::kItemCreated, "a", 1)};
  events[0].query_tags_json = R"({"t":1})";
  events.push_back(Event(DatagenEventType::kStepStarted, "a", 2));
  events.back().set_position(Pos("loop", 0, DatagenStepKind::kLoop));
  events.push_back(Field("a", 3, "score", DatagenValue::Float(0.5)));
  events.push_back(Field("a", 4, "score", DatagenValue::Float(0.75)));
  events.push_back(Field("a", 5, "tags", DatagenValue::Str("x"), true));
  events.push_back(Field("a", 6, "tags", DatagenValue::Str("y"), true));
  events.push_back(Field("a", 7, "img", DatagenValue::Blob("png")));
  events.push_back(Event(DatagenEventType::kStepCompleted, "a", 8));
  events.push_back(Event(DatagenEventType::kFailed, "a", 9));
  events.back().attempt = 1;
  events.push_back(Event(DatagenEventType::kTerminal, "a", 10));
  events.back().status = DatagenItemStatus::kFiltered;
  // Any order in, item_seq order applied.
  std::reverse(events.begin(), events.end());
  ASSERT_OK_AND_ASSIGN(auto folded, FoldDatagenEvents(events));
  ASSERT_TRUE(folded.has_value());
  EXPECT_EQ(folded->status, DatagenItemStatus::kFiltered);
  EXPECT_EQ(folded->last_item_seq, 10);
  EXPECT_EQ(folded->last_attempt, 1);
  EXPECT_EQ(folded->query_tags_json, R"({"t":1})");
  EXPECT_EQ(folded->fields.at("score"), (DatagenFieldState{false, {DatagenValue::Float(0.75)}}));
  EXPECT_EQ(folded->fields.at("tags"),
            (DatagenFieldState{true, {DatagenValue::Str("x"), DatagenValue::Str("y")}}));
  EXPECT_EQ(folded->blob_event_ids.at("img"), "a#7#FIELD_SET");
  EXPECT_EQ(folded->started, std::set<DatagenStepPosition>{Pos("loop", 0, DatagenStepKind::kLoop)});
  EXPECT_EQ(folded->completed, std::set<DatagenStepPosition>{Pos("gen")});
  EXPECT_EQ(folded->trajectory, (std::vector<DatagenCursor>{DatagenCursor{Pos("gen"), 8}}));
}

TEST(DatagenFoldTest, FailedChangesNoStatus) {
  ASSERT_OK_AND_ASSIGN(auto folded,
                       FoldDatagenEvents({Event(DatagenEventType::kItemCreated, "a", 1),
                                          Event(DatagenEventType::kFailed, "a", 2)}));
  EXPECT_EQ(folded->status, DatagenItemStatus::kRunning);
}

TEST(DatagenFoldTest, NeverStarted) {
  ASSERT_OK_AND_ASSIGN(auto none, FoldDatagenEvents({}));
  EXPECT_FALSE(none.has_value());
  ASSERT_OK_AND_ASSIGN(none, FoldDatagenEvents({Event(DatagenEventType::kStepStarted, "a", 1),
                                                Event(DatagenEventType::kItemCreated, "a", 2)}));
  EXPECT_FALSE(none.has_value());
}

TEST(DatagenFoldTest, Errors) {
  const DatagenEvent created = Event(DatagenEventType::kItemCreated, "a", 1);
  EXPECT_INVALID(FoldDatagenEvents({created, Field("a", 2, "f", DatagenValue::Int(1)),
                                    Field("a", 3, "f", DatagenValue::Str("1"))})
                     .status(),
                 "field 'f' changes value kind from int to str");
  EXPECT_INVALID(FoldDatagenEvents({created, Field("a", 2, "f", DatagenValue::Int(1), true),
                                    Field("a", 3, "f", DatagenValue::Bool(true), true)})
                     .status(),
                 "field 'f' changes value kind from int to bool");
  EXPECT_INVALID(FoldDatagenEvents({created, Field("a", 2, "f", DatagenValue::Int(1)),
                                    Field("a", 3, "f", DatagenValue::Int(2), true)})
                     .status(),
                 "field 'f' mixes FIELD_SET and FIELD_APPEND");
  EXPECT_INVALID(FoldDatagenEvents({created, Field("a", 2, "f", DatagenValue::Int(1), true),
                                    Field("a", 3, "f", DatagenValue::Int(2))})
                     .status(),
                 "field 'f' mixes FIELD_SET and FIELD_APPEND");
  DatagenEvent same_seq = Event(DatagenEventType::kStepStarted, "a", 1);
  EXPECT_INVALID(FoldDatagenEvents({created, same_seq}).status(),
                 "item 'a' has conflicting events at item_seq 1");
  DatagenEvent reused = created;
  reused.writer_epoch = "other";
  EXPECT_INVALID(FoldDatagenEvents({created, reused}).status(),
                 "event_id 'a#1#ITEM_CREATED' was reused with different content");
  EXPECT_INVALID(
      FoldDatagenEvents({created, Event(DatagenEventType::kItemCreated, "b", 1)}).status(),
      "all events in a fold must belong to one item");
  DatagenEvent invalid = created;
  invalid.run_id = "";
  EXPECT_INVALID(FoldDatagenEvents({invalid}).status(), "run_id must not be empty");
}

TEST(DatagenFoldTest, IdenticalDuplicatesCollapse) {
  const DatagenEvent created = Event(DatagenEventType::kItemCreated, "a", 1);
  const DatagenEvent append = Field("a", 2, "f", DatagenValue::Int(1), true);
  ASSERT_OK_AND_ASSIGN(auto folded, FoldDatagenEvents({created, append, created, append}));
  EXPECT_EQ(folded->fields.at("f").values.size(), 1u);
  EXPECT_EQ(folded->last_item_seq, 2);
}

}  // namespace
}  // namespace strata::store
