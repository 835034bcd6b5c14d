// Shared by the datagen tests: status expectations and event builders.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "strata/datagen_store.h"
#include "support/status_assertions.h"

// A Status expression is OK.
#define EXPECT_OK(expr)           \
  do {                            \
    Status _ok = (expr);          \
    EXPECT_TRUE(_ok.ok()) << _ok; \
  } while (0)

// A Status expression is InvalidArgument with a message containing `want`.
#define EXPECT_INVALID(expr, want)                                                     \
  do {                                                                                 \
    Status _s = (expr);                                                                \
    EXPECT_EQ(_s.code(), StatusCode::kInvalidArgument) << _s;                          \
    EXPECT_NE(_s.message().find(want), std::string::npos) << _s << " lacks: " << want; \
  } while (0)

namespace strata::store::testing {

inline DatagenStepPosition Pos(std::string step, int64_t index = 0,
                               DatagenStepKind kind = DatagenStepKind::kLeaf) {
  return DatagenStepPosition{std::move(step), kind, index, std::nullopt, std::nullopt};
}

// An event of `item` (a root) at `seq` with a unique id.
inline DatagenEvent Event(DatagenEventType type, std::string item, int64_t seq) {
  DatagenEvent e;
  e.event_id = fmt::format("{}#{}#{}", item, seq, DatagenEventTypeName(type));
  e.item_id = item;
  e.root_item_id = item.substr(0, item.find('/'));
  e.item_seq = seq;
  e.checkpoint_id = fmt::format("cp-{}-{}", item, seq);
  e.event_type = type;
  e.run_id = "run-1";
  e.writer_epoch = "epoch-1";
  e.event_ts_micros = 1'700'000'000'000'000 + seq;
  if (type == DatagenEventType::kItemCreated) e.status = DatagenItemStatus::kRunning;
  if (type != DatagenEventType::kItemCreated && type != DatagenEventType::kTerminal) {
    e.set_position(Pos("gen"));
  }
  if (type == DatagenEventType::kFailed) {
    e.error_type = "ValueError";
    e.status = DatagenItemStatus::kFailed;
  }
  if (type == DatagenEventType::kTerminal) e.status = DatagenItemStatus::kCompleted;
  return e;
}

inline DatagenEvent Field(std::string item, int64_t seq, std::string name, DatagenValue value,
                          bool append = false) {
  DatagenEvent e =
      Event(append ? DatagenEventType::kFieldAppend : DatagenEventType::kFieldSet, item, seq);
  e.field_name = std::move(name);
  e.field_type = std::string(DatagenValueKindName(value.kind()));
  e.codec_version = 1;
  e.value = std::move(value);
  return e;
}

// A checkpoint of `fields` (name -> value) completing step `step` of `item` from `seq` on.
inline std::vector<DatagenEvent> Checkpoint(
    const std::string& item, int64_t seq, const std::string& step,
    std::vector<std::pair<std::string, DatagenValue>> fields) {
  std::vector<DatagenEvent> out;
  for (auto& [name, value] : fields) out.push_back(Field(item, seq++, name, value));
  out.push_back(Event(DatagenEventType::kStepCompleted, item, seq));
  for (DatagenEvent& e : out) {
    e.checkpoint_id = "cp-" + item + "-" + step;
    e.set_position(Pos(step));
  }
  return out;
}

}  // namespace strata::store::testing
