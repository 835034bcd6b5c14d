// The datagen event model (include/strata/datagen_store.h): vocabulary, values, item ids,
// derived event ids, and the validation of single events, write batches and checkpoints.
#include <fmt/format.h>

#include <array>
#include <bit>
#include <charconv>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "strata/datagen_store.h"
#include "util/clock.h"
#include "util/uuid.h"

namespace strata::store {
namespace {

constexpr std::array<std::pair<DatagenEventType, std::string_view>, 7> kEventTypes = {{
    {DatagenEventType::kItemCreated, "ITEM_CREATED"},
    {DatagenEventType::kStepStarted, "STEP_STARTED"},
    {DatagenEventType::kFieldSet, "FIELD_SET"},
    {DatagenEventType::kFieldAppend, "FIELD_APPEND"},
    {DatagenEventType::kStepCompleted, "STEP_COMPLETED"},
    {DatagenEventType::kFailed, "FAILED"},
    {DatagenEventType::kTerminal, "TERMINAL"},
}};

constexpr std::array<std::pair<DatagenStepKind, std::string_view>, 9> kStepKinds = {{
    {DatagenStepKind::kRoot, "root"},
    {DatagenStepKind::kLeaf, "leaf"},
    {DatagenStepKind::kSequence, "sequence"},
    {DatagenStepKind::kLoop, "loop"},
    {DatagenStepKind::kMapReduce, "map_reduce"},
    {DatagenStepKind::kBranch, "branch"},
    {DatagenStepKind::kSubPipeline, "sub_pipeline"},
    {DatagenStepKind::kConditional, "conditional"},
    {DatagenStepKind::kRouter, "router"},
}};

constexpr std::array<std::pair<DatagenItemStatus, std::string_view>, 4> kStatuses = {{
    {DatagenItemStatus::kRunning, "running"},
    {DatagenItemStatus::kCompleted, "completed"},
    {DatagenItemStatus::kFiltered, "filtered"},
    {DatagenItemStatus::kFailed, "failed"},
}};

template <typename E, size_t N>
std::string_view NameOf(const std::array<std::pair<E, std::string_view>, N>& table, E value) {
  for (const auto& [e, name] : table) {
    if (e == value) return name;
  }
  return "?";
}

template <typename E, size_t N>
std::optional<E> Lookup(const std::array<std::pair<E, std::string_view>, N>& table,
                        std::string_view text) {
  for (const auto& [e, name] : table) {
    if (name == text) return e;
  }
  return std::nullopt;
}

bool IsFieldEvent(DatagenEventType type) {
  return type == DatagenEventType::kFieldSet || type == DatagenEventType::kFieldAppend;
}

// A non-negative decimal integer, nothing else.
std::optional<int64_t> ParseIndex(std::string_view text) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

}  // namespace

// --- Vocabulary ----------------------------------------------------------------------------

std::string_view DatagenEventTypeName(DatagenEventType type) { return NameOf(kEventTypes, type); }

Result<DatagenEventType> ParseDatagenEventType(std::string_view text) {
  if (auto type = Lookup(kEventTypes, text)) return *type;
  return Status::InvalidArgument(fmt::format("unsupported datagen event type '{}'", text));
}

std::string_view DatagenStepKindName(DatagenStepKind kind) { return NameOf(kStepKinds, kind); }

Result<DatagenStepKind> ParseDatagenStepKind(std::string_view text) {
  if (auto kind = Lookup(kStepKinds, text)) return *kind;
  return Status::InvalidArgument(fmt::format("unsupported datagen step kind '{}'", text));
}

bool IsDriverStep(DatagenStepKind kind) {
  return kind == DatagenStepKind::kSequence || kind == DatagenStepKind::kLoop;
}

std::string_view DatagenItemStatusName(DatagenItemStatus status) {
  return NameOf(kStatuses, status);
}

Result<DatagenItemStatus> ParseDatagenItemStatus(std::string_view text) {
  if (auto status = Lookup(kStatuses, text)) return *status;
  return Status::InvalidArgument(fmt::format("unsupported datagen item status '{}'", text));
}

bool IsTerminalStatus(DatagenItemStatus status) {
  return status == DatagenItemStatus::kCompleted || status == DatagenItemStatus::kFiltered;
}

// --- Values --------------------------------------------------------------------------------

DatagenValue DatagenValue::Int(int64_t v) {
  DatagenValue out;
  out.kind_ = Kind::kInt;
  out.int_ = v;
  return out;
}

DatagenValue DatagenValue::Float(double v) {
  DatagenValue out;
  out.kind_ = Kind::kFloat;
  out.float_ = v;
  return out;
}

DatagenValue DatagenValue::Bool(bool v) {
  DatagenValue out;
  out.kind_ = Kind::kBool;
  out.bool_ = v;
  return out;
}

DatagenValue DatagenValue::Str(std::string v) {
  DatagenValue out;
  out.kind_ = Kind::kStr;
  out.text_ = std::move(v);
  return out;
}

DatagenValue DatagenValue::Json(std::string v) {
  DatagenValue out;
  out.kind_ = Kind::kJson;
  out.text_ = std::move(v);
  return out;
}

DatagenValue DatagenValue::Blob(std::string bytes, std::optional<std::string> checksum) {
  DatagenBlob blob;
  blob.size = static_cast<int64_t>(bytes.size());
  blob.bytes = std::move(bytes);
  blob.checksum = std::move(checksum);
  return Blob(std::move(blob));
}

DatagenValue DatagenValue::Blob(DatagenBlob blob) {
  DatagenValue out;
  out.kind_ = Kind::kBlob;
  out.blob_ = std::move(blob);
  return out;
}

bool operator==(const DatagenValue& a, const DatagenValue& b) {
  if (a.kind_ != b.kind_) return false;
  switch (a.kind_) {
    case DatagenValue::Kind::kInt:
      return a.int_ == b.int_;
    case DatagenValue::Kind::kFloat:
      return std::bit_cast<uint64_t>(a.float_) == std::bit_cast<uint64_t>(b.float_);
    case DatagenValue::Kind::kBool:
      return a.bool_ == b.bool_;
    case DatagenValue::Kind::kStr:
    case DatagenValue::Kind::kJson:
      return a.text_ == b.text_;
    case DatagenValue::Kind::kBlob:
      return a.blob_ == b.blob_;
  }
  return false;
}

std::string_view DatagenValueKindName(DatagenValue::Kind kind) {
  switch (kind) {
    case DatagenValue::Kind::kInt:
      return "int";
    case DatagenValue::Kind::kFloat:
      return "float";
    case DatagenValue::Kind::kBool:
      return "bool";
    case DatagenValue::Kind::kStr:
      return "str";
    case DatagenValue::Kind::kJson:
      return "json";
    case DatagenValue::Kind::kBlob:
      return "blob";
  }
  return "?";
}

// --- Item ids ------------------------------------------------------------------------------

Result<DatagenItemId> DatagenItemId::Parse(std::string_view text) {
  if (text.empty()) return Status::InvalidArgument("empty datagen item id");
  size_t start = 0;
  bool first = true;
  while (true) {
    size_t slash = text.find('/', start);
    std::string_view segment = text.substr(
        start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
    if (segment.empty()) {
      return Status::InvalidArgument(
          fmt::format("malformed item id segment '{}' in '{}'", segment, text));
    }
    if (!first) {
      size_t colon = segment.rfind(':');
      if (colon == std::string_view::npos || colon == 0) {
        return Status::InvalidArgument(
            fmt::format("malformed item id segment '{}' in '{}'", segment, text));
      }
      std::string_view index = segment.substr(colon + 1);
      if (!ParseIndex(index)) {
        return Status::InvalidArgument(
            fmt::format("non-integer branch index '{}' in '{}'", index, text));
      }
    }
    first = false;
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  return DatagenItemId(std::string(text));
}

Result<DatagenItemId> DatagenItemId::FromSourceKey(std::string_view key) {
  if (key.empty()) return Status::InvalidArgument("empty datagen item id");
  if (key.find('/') != std::string_view::npos) {
    return Status::InvalidArgument(
        fmt::format("malformed item id segment: source key '{}' contains '/'", key));
  }
  return DatagenItemId(std::string(key));
}

Result<DatagenItemId> DatagenItemId::Child(std::string_view step, int64_t index) const {
  if (step.empty() || step.find_first_of("/:") != std::string_view::npos) {
    return Status::InvalidArgument(fmt::format(
        "step name '{}' of a child item id must be non-empty without '/' or ':'", step));
  }
  if (index < 0) {
    return Status::InvalidArgument(
        fmt::format("branch index {} of a child item id must not be negative", index));
  }
  return DatagenItemId(fmt::format("{}/{}:{}", text_, step, index));
}

std::optional<DatagenItemId> DatagenItemId::Parent() const {
  size_t slash = text_.rfind('/');
  if (slash == std::string::npos) return std::nullopt;
  return DatagenItemId(text_.substr(0, slash));
}

DatagenItemId DatagenItemId::Root() const {
  return DatagenItemId(text_.substr(0, text_.find('/')));
}

std::optional<std::string> DatagenItemId::OriginStep() const {
  size_t slash = text_.rfind('/');
  if (slash == std::string::npos) return std::nullopt;
  size_t colon = text_.rfind(':');
  return text_.substr(slash + 1, colon - slash - 1);
}

std::optional<int64_t> DatagenItemId::BranchIdx() const {
  if (IsRoot()) return std::nullopt;
  return ParseIndex(std::string_view(text_).substr(text_.rfind(':') + 1));
}

bool DatagenItemId::IsRoot() const { return text_.find('/') == std::string::npos; }

std::string DatagenEventId(std::string_view item_id, std::string_view checkpoint_id,
                           uint64_t ordinal) {
  std::string name;
  name.reserve(item_id.size() + checkpoint_id.size() + 24);
  name.append(item_id);
  name.push_back('\0');
  name.append(checkpoint_id);
  name.push_back('\0');
  name.append(std::to_string(ordinal));
  return UuidV5(NamespaceOid(), name).ToString();
}

std::string NewTimeOrderedId() { return UuidV7(*SystemClock(), *SystemRandom()).ToString(); }

// --- Events --------------------------------------------------------------------------------

std::optional<DatagenStepPosition> DatagenEvent::position() const {
  if (!step_name || !step_kind || !step_index) return std::nullopt;
  return DatagenStepPosition{*step_name, *step_kind, *step_index, enclosing_step, selector_step};
}

void DatagenEvent::set_position(const DatagenStepPosition& position) {
  step_name = position.step_name;
  step_kind = position.step_kind;
  step_index = position.step_index;
  enclosing_step = position.enclosing_step;
  selector_step = position.selector_step;
}

Status DatagenEvent::Validate() const {
  const std::string_view type = DatagenEventTypeName(event_type);
  auto empty = [&](std::string_view column) {
    return Status::InvalidArgument(
        fmt::format("event '{}': {} must not be empty", event_id, column));
  };
  if (event_id.empty()) return empty("event_id");
  if (item_id.empty()) return empty("item_id");
  if (root_item_id.empty()) return empty("root_item_id");
  if (checkpoint_id.empty()) return empty("checkpoint_id");
  if (run_id.empty()) return empty("run_id");
  if (writer_epoch.empty()) return empty("writer_epoch");
  if (item_seq < 0) {
    return Status::InvalidArgument(
        fmt::format("event '{}': item_seq must not be negative, got {}", event_id, item_seq));
  }
  if (attempt < 0) {
    return Status::InvalidArgument(
        fmt::format("event '{}': attempt must not be negative, got {}", event_id, attempt));
  }
  if (schema_version <= 0) {
    return Status::InvalidArgument(fmt::format(
        "event '{}': schema_version must be positive, got {}", event_id, schema_version));
  }
  auto need = [&](bool present, std::string_view column) {
    return present ? Status::OK()
                   : Status::InvalidArgument(
                         fmt::format("event '{}': {} requires {}", event_id, type, column));
  };
  auto provenance = [&]() -> Status {
    STRATA_RETURN_IF_ERROR(need(step_name.has_value(), "step_name"));
    STRATA_RETURN_IF_ERROR(need(step_kind.has_value(), "step_kind"));
    return need(step_index.has_value(), "step_index");
  };
  switch (event_type) {
    case DatagenEventType::kItemCreated:
      break;
    case DatagenEventType::kFieldSet:
    case DatagenEventType::kFieldAppend:
      STRATA_RETURN_IF_ERROR(need(field_name.has_value(), "field_name"));
      STRATA_RETURN_IF_ERROR(need(field_type.has_value(), "field_type"));
      STRATA_RETURN_IF_ERROR(need(codec_version.has_value(), "codec_version"));
      STRATA_RETURN_IF_ERROR(need(value.has_value(), "a value"));
      STRATA_RETURN_IF_ERROR(provenance());
      break;
    case DatagenEventType::kStepStarted:
    case DatagenEventType::kStepCompleted:
      STRATA_RETURN_IF_ERROR(provenance());
      break;
    case DatagenEventType::kFailed:
      STRATA_RETURN_IF_ERROR(need(error_type.has_value(), "error_type"));
      STRATA_RETURN_IF_ERROR(provenance());
      break;
    case DatagenEventType::kTerminal:
      if (!status || !IsTerminalStatus(*status)) {
        return Status::InvalidArgument(fmt::format(
            "event '{}': TERMINAL requires status completed or filtered, got {}", event_id,
            status ? DatagenItemStatusName(*status) : std::string_view("none")));
      }
      break;
  }
  if (value && value->kind() == DatagenValue::Kind::kJson &&
      !nlohmann::json::accept(value->text())) {
    return Status::InvalidArgument(fmt::format(
        "event '{}' contains invalid value_json: '{}' is not JSON", event_id, value->text()));
  }
  if (query_tags_json && !nlohmann::json::accept(*query_tags_json)) {
    return Status::InvalidArgument(
        fmt::format("event '{}' contains invalid query_tags_json: '{}' is not JSON", event_id,
                    *query_tags_json));
  }
  return Status::OK();
}

Status ValidateDatagenWriteBatch(const std::vector<DatagenEvent>& events) {
  std::map<std::string_view, const DatagenEvent*> by_id;
  std::map<std::pair<std::string_view, int64_t>, std::string_view> by_seq;
  for (const DatagenEvent& event : events) {
    STRATA_RETURN_IF_ERROR(event.Validate());
    auto [it, inserted] = by_id.emplace(event.event_id, &event);
    if (!inserted) {
      if (!(*it->second == event)) {
        return Status::InvalidArgument(
            fmt::format("event_id '{}' was reused with different content", event.event_id));
      }
      continue;  // an identical duplicate
    }
    auto [seq, fresh] =
        by_seq.emplace(std::pair(std::string_view(event.item_id), event.item_seq), event.event_id);
    if (!fresh) {
      return Status::InvalidArgument(fmt::format("item '{}' has duplicate item_seq {} in one batch",
                                                 event.item_id, event.item_seq));
    }
    if (event.value && event.value->kind() == DatagenValue::Kind::kBlob) {
      const DatagenBlob& blob = event.value->blob();
      if (!blob.bytes) {
        return Status::InvalidArgument(
            fmt::format("blob event '{}' has no bytes on the write path", event.event_id));
      }
      if (blob.size != static_cast<int64_t>(blob.bytes->size())) {
        return Status::InvalidArgument(
            fmt::format("blob event '{}' declares {} bytes but contains {}", event.event_id,
                        blob.size, blob.bytes->size()));
      }
    }
  }
  return Status::OK();
}

Status ValidateDatagenCheckpoint(const std::vector<DatagenEvent>& events) {
  if (events.empty()) return Status::InvalidArgument("checkpoint batch must not be empty");
  const DatagenEvent& first = events.front();
  auto mixes = [](std::string_view column, std::string_view a, std::string_view b) {
    return Status::InvalidArgument(
        fmt::format("checkpoint batch mixes {} values '{}' and '{}'", column, a, b));
  };
  int completed = 0;
  const DatagenEvent* step = nullptr;
  for (const DatagenEvent& event : events) {
    if (event.item_id != first.item_id) return mixes("item_id", first.item_id, event.item_id);
    if (event.checkpoint_id != first.checkpoint_id) {
      return mixes("checkpoint_id", first.checkpoint_id, event.checkpoint_id);
    }
    if (event.run_id != first.run_id) return mixes("run_id", first.run_id, event.run_id);
    if (event.writer_epoch != first.writer_epoch) {
      return mixes("writer_epoch", first.writer_epoch, event.writer_epoch);
    }
    if (event.attempt != first.attempt) {
      return mixes("attempt", std::to_string(first.attempt), std::to_string(event.attempt));
    }
    if (event.event_type == DatagenEventType::kStepCompleted) {
      ++completed;
      step = &event;
    } else if (!IsFieldEvent(event.event_type)) {
      return Status::InvalidArgument(
          "checkpoint batch may contain only FIELD_SET, FIELD_APPEND, and STEP_COMPLETED events");
    }
  }
  if (completed != 1) {
    return Status::InvalidArgument(fmt::format(
        "checkpoint batch requires exactly one STEP_COMPLETED event, found {}", completed));
  }
  auto identity = [](const DatagenEvent& e) {
    return std::tie(e.step_name, e.step_index, e.step_kind, e.enclosing_step, e.selector_step);
  };
  for (const DatagenEvent& event : events) {
    if (identity(event) != identity(*step)) {
      return Status::InvalidArgument(
          "all field events must share the STEP_COMPLETED step identity");
    }
  }
  return ValidateDatagenWriteBatch(events);
}

}  // namespace strata::store
