// The fold of one datagen item's events into its state (FoldDatagenEvents,
// include/strata/datagen_store.h): normalise (validate, dedupe by event_id, order by
// item_seq), then apply the events in order.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "strata/datagen_store.h"

namespace strata::store {
namespace {

Status ApplyField(DatagenFoldedItem& item, const DatagenEvent& event) {
  const std::string& name = *event.field_name;
  const DatagenValue& value = *event.value;
  const bool append = event.event_type == DatagenEventType::kFieldAppend;
  auto it = item.fields.find(name);
  if (it != item.fields.end()) {
    DatagenFieldState& state = it->second;
    if (state.appended != append) {
      return Status::InvalidArgument(
          fmt::format("field '{}' mixes FIELD_SET and FIELD_APPEND", name));
    }
    DatagenValue::Kind was = state.values.front().kind();
    if (was != value.kind()) {
      return Status::InvalidArgument(fmt::format("field '{}' changes value kind from {} to {}",
                                                 name, DatagenValueKindName(was),
                                                 DatagenValueKindName(value.kind())));
    }
    if (append) {
      state.values.push_back(value);
    } else {
      state.values = {value};
    }
  } else {
    item.fields.emplace(name, DatagenFieldState{append, {value}});
  }
  if (value.kind() == DatagenValue::Kind::kBlob) item.blob_event_ids[name] = event.event_id;
  return Status::OK();
}

}  // namespace

Result<std::optional<DatagenFoldedItem>> FoldDatagenEvents(std::vector<DatagenEvent> events) {
  for (const DatagenEvent& event : events) STRATA_RETURN_IF_ERROR(event.Validate());
  // Dedupe by event_id: identical copies collapse, a different one is an error.
  std::sort(events.begin(), events.end(),
            [](const DatagenEvent& a, const DatagenEvent& b) { return a.event_id < b.event_id; });
  std::vector<DatagenEvent> unique;
  unique.reserve(events.size());
  for (DatagenEvent& event : events) {
    if (!unique.empty() && unique.back().event_id == event.event_id) {
      if (!(unique.back() == event)) {
        return Status::InvalidArgument(
            fmt::format("event_id '{}' was reused with different content", event.event_id));
      }
      continue;
    }
    unique.push_back(std::move(event));
  }
  std::stable_sort(unique.begin(), unique.end(), [](const DatagenEvent& a, const DatagenEvent& b) {
    return a.item_seq < b.item_seq;  // event_id order within an item_seq is kept
  });
  if (unique.empty()) return std::optional<DatagenFoldedItem>();
  for (size_t i = 0; i < unique.size(); ++i) {
    if (unique[i].item_id != unique[0].item_id) {
      return Status::InvalidArgument("all events in a fold must belong to one item");
    }
    if (i > 0 && unique[i].item_seq == unique[i - 1].item_seq) {
      return Status::InvalidArgument(fmt::format("item '{}' has conflicting events at item_seq {}",
                                                 unique[i].item_id, unique[i].item_seq));
    }
  }
  const DatagenEvent& first = unique.front();
  if (first.event_type != DatagenEventType::kItemCreated) {
    return std::optional<DatagenFoldedItem>();  // never started
  }
  DatagenFoldedItem item;
  item.item_id = first.item_id;
  item.root_item_id = first.root_item_id;
  item.parent_item_id = first.parent_item_id;
  item.last_item_seq = first.item_seq;
  item.last_attempt = first.attempt;
  for (const DatagenEvent& event : unique) {
    item.last_item_seq = std::max(item.last_item_seq, event.item_seq);
    item.last_attempt = std::max(item.last_attempt, event.attempt);
    switch (event.event_type) {
      case DatagenEventType::kItemCreated:
        item.status = DatagenItemStatus::kRunning;
        if (event.query_tags_json) item.query_tags_json = event.query_tags_json;
        break;
      case DatagenEventType::kStepStarted:
        item.started.insert(*event.position());
        break;
      case DatagenEventType::kFieldSet:
      case DatagenEventType::kFieldAppend:
        STRATA_RETURN_IF_ERROR(ApplyField(item, event));
        break;
      case DatagenEventType::kStepCompleted:
        item.completed.insert(*event.position());
        item.trajectory.push_back(DatagenCursor{*event.position(), event.item_seq});
        break;
      case DatagenEventType::kFailed:
        break;  // failures are read separately (ItemFailures)
      case DatagenEventType::kTerminal:
        item.status = *event.status;
        break;
    }
  }
  return std::optional<DatagenFoldedItem>(std::move(item));
}

}  // namespace strata::store
