// Python values <-> datagen events and read results (datagen_events.h).
#include "python/datagen_events.h"

#include <fmt/format.h>

#include <limits>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "python/errors.h"
#include "strata/json.h"

namespace strata::python {
namespace {

using store::DatagenBlob;
using store::DatagenEvent;
using store::DatagenValue;

// --- In -------------------------------------------------------------------------------------

// A key of a mapping as text; "" for a str that is not valid Unicode (no key matches it).
std::string_view KeyText(py::handle key, const Path& path) {
  if (!PyUnicode_Check(key.ptr())) {
    ThrowInvalid(fmt::format("{}: keys must be strings, found {}", path.str(), Describe(key)));
  }
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(key.ptr(), &size);
  if (data == nullptr) {
    PyErr_Clear();
    return {};
  }
  return {data, static_cast<size_t>(size)};
}

// Calls `each(name, value, path_of_value)` for every key of `mapping` whose value is not None.
template <typename Each>
void ForEachKey(py::handle mapping, const Path& path, Each each) {
  py::dict dict = MappingAsDict(mapping, path);
  PyObject* key = nullptr;
  PyObject* value = nullptr;
  Py_ssize_t position = 0;
  while (PyDict_Next(dict.ptr(), &position, &key, &value) != 0) {
    if (value == Py_None) continue;
    const std::string_view name = KeyText(key, path);
    const Path value_path(path, name);
    each(name, py::handle(value), value_path);
  }
}

[[noreturn]] void Required(const Path& path, std::string_view key) {
  ThrowInvalid(fmt::format("{} is required", Path(path, key).str()));
}

int64_t ReadInt64(py::handle value, const Path& path) {
  return ReadInteger(value, path, std::numeric_limits<int64_t>::min(),
                     std::numeric_limits<int64_t>::max(), "an integer");
}

int32_t ReadInt32(py::handle value, const Path& path) {
  return static_cast<int32_t>(ReadInteger(value, path, std::numeric_limits<int32_t>::min(),
                                          std::numeric_limits<int32_t>::max(), "a 32-bit integer"));
}

// A str, or an int taken as its decimal text (writer_epoch, as the HTTP API reads it).
std::string ReadDecimalString(py::handle value, const Path& path) {
  PyObject* o = value.ptr();
  if (PyLong_Check(o) && !PyBool_Check(o)) return py::str(value).cast<std::string>();
  if (!PyUnicode_Check(o)) {
    ThrowInvalid(fmt::format("{}: expected a string (or an integer), found {}", path.str(),
                             Describe(value)));
  }
  return ReadString(value, path);
}

// A str parsed by one of the store's enum parsers; its message gets the path in front.
template <typename T>
T ReadEnum(py::handle value, const Path& path, Result<T> (*parse)(std::string_view)) {
  Result<T> parsed = parse(ReadString(value, path));
  if (!parsed.ok()) ThrowInvalid(fmt::format("{}: {}", path.str(), parsed.status().message()));
  return *parsed;
}

DatagenValue ReadValue(py::handle value, const Path& path) {
  try {
    MappingAsDict(value, path);
  } catch (const py::type_error&) {
    ThrowInvalid(fmt::format(
        "{}: expected a datagen value object {{kind, value?, bytes?, size?, checksum?}}, found {}",
        path.str(), Describe(value)));
  }
  std::optional<std::string> kind;
  py::handle inner;
  std::optional<std::string> bytes;
  std::optional<int64_t> size;
  std::optional<std::string> checksum;
  ForEachKey(value, path, [&](std::string_view name, py::handle v, const Path& p) {
    if (name == "kind") {
      kind = ReadString(v, p);
    } else if (name == "value") {
      inner = v;
    } else if (name == "bytes") {
      bytes = ReadBytes(v, p);
    } else if (name == "size") {
      size = ReadInt64(v, p);
    } else if (name == "checksum") {
      checksum = ReadString(v, p);
    }
  });
  if (!kind) Required(path, "kind");
  if (*kind == "blob") {
    if (size && *size < 0) {
      ThrowInvalid(
          fmt::format("{}: must not be negative, got {}", Path(path, "size").str(), *size));
    }
    DatagenBlob blob;
    blob.size = size ? *size : (bytes ? static_cast<int64_t>(bytes->size()) : 0);
    blob.bytes = std::move(bytes);
    blob.checksum = std::move(checksum);
    return DatagenValue::Blob(std::move(blob));
  }
  const bool known =
      *kind == "int" || *kind == "float" || *kind == "bool" || *kind == "str" || *kind == "json";
  if (!known) {
    ThrowInvalid(fmt::format(
        "{}: unsupported datagen value kind '{}': valid kinds are 'int', 'float', 'bool', "
        "'str', 'json', 'blob'",
        Path(path, "kind").str(), *kind));
  }
  if (!inner) {
    ThrowInvalid(
        fmt::format("{}: datagen value of kind '{}' is missing 'value'", path.str(), *kind));
  }
  const Path inner_path(path, "value");
  if (*kind == "int") return DatagenValue::Int(ReadInt64(inner, inner_path));
  if (*kind == "float") return DatagenValue::Float(ReadNumber(inner, inner_path));
  if (*kind == "bool") return DatagenValue::Bool(ReadBool(inner, inner_path));
  if (*kind == "str") return DatagenValue::Str(ReadString(inner, inner_path));
  return DatagenValue::Json(DatagenJsonTextFromPython(inner, inner_path));
}

enum class EventKey {
  kEventId,
  kItemId,
  kRootItemId,
  kParentItemId,
  kItemSeq,
  kCheckpointId,
  kEventType,
  kStepName,
  kStepKind,
  kStepIndex,
  kEnclosingStep,
  kSelectorStep,
  kAttempt,
  kRunId,
  kWriterEpoch,
  kFieldName,
  kFieldType,
  kCodecVersion,
  kValue,
  kQueryTags,
  kStatus,
  kErrorType,
  kErrorDump,
  kTraceback,
  kEventTs,
  kSchemaVersion,
};

const std::unordered_map<std::string_view, EventKey>& EventKeys() {
  static const auto* keys = new std::unordered_map<std::string_view, EventKey>{
      {"event_id", EventKey::kEventId},
      {"item_id", EventKey::kItemId},
      {"root_item_id", EventKey::kRootItemId},
      {"parent_item_id", EventKey::kParentItemId},
      {"item_seq", EventKey::kItemSeq},
      {"checkpoint_id", EventKey::kCheckpointId},
      {"event_type", EventKey::kEventType},
      {"step_name", EventKey::kStepName},
      {"step_kind", EventKey::kStepKind},
      {"step_index", EventKey::kStepIndex},
      {"enclosing_step", EventKey::kEnclosingStep},
      {"selector_step", EventKey::kSelectorStep},
      {"attempt", EventKey::kAttempt},
      {"run_id", EventKey::kRunId},
      {"writer_epoch", EventKey::kWriterEpoch},
      {"field_name", EventKey::kFieldName},
      {"field_type", EventKey::kFieldType},
      {"codec_version", EventKey::kCodecVersion},
      {"value", EventKey::kValue},
      {"query_tags", EventKey::kQueryTags},
      {"status", EventKey::kStatus},
      {"error_type", EventKey::kErrorType},
      {"error_dump", EventKey::kErrorDump},
      {"traceback", EventKey::kTraceback},
      {"event_ts", EventKey::kEventTs},
      {"schema_version", EventKey::kSchemaVersion},
  };
  return *keys;
}

// --- Out ------------------------------------------------------------------------------------

void SetText(py::dict& out, const char* key, std::string_view text) {
  out[key] = TextToPython(text);
}

void SetIfPresent(py::dict& out, const char* key, const std::optional<std::string>& text) {
  if (text) SetText(out, key, *text);
}

py::dict ValueToPython(const DatagenValue& value) {
  py::dict out;
  SetText(out, "kind", store::DatagenValueKindName(value.kind()));
  switch (value.kind()) {
    case DatagenValue::Kind::kInt:
      out["value"] = py::int_(value.int_value());
      break;
    case DatagenValue::Kind::kFloat:
      out["value"] = py::float_(value.float_value());
      break;
    case DatagenValue::Kind::kBool:
      out["value"] = py::bool_(value.bool_value());
      break;
    case DatagenValue::Kind::kStr:
      SetText(out, "value", value.text());
      break;
    case DatagenValue::Kind::kJson:
      out["value"] = StoredJsonToPython(value.text());
      break;
    case DatagenValue::Kind::kBlob: {
      const DatagenBlob& blob = value.blob();
      if (blob.bytes) out["bytes"] = py::bytes(*blob.bytes);
      out["size"] = py::int_(blob.size);
      SetIfPresent(out, "checksum", blob.checksum);
      break;
    }
  }
  return out;
}

void SetPosition(py::dict& out, const store::DatagenStepPosition& position) {
  SetText(out, "step_name", position.step_name);
  SetText(out, "step_kind", store::DatagenStepKindName(position.step_kind));
  out["step_index"] = py::int_(position.step_index);
  SetIfPresent(out, "enclosing_step", position.enclosing_step);
  SetIfPresent(out, "selector_step", position.selector_step);
}

py::dict PositionToPython(const store::DatagenStepPosition& position) {
  py::dict out;
  SetPosition(out, position);
  return out;
}

py::dict CursorToPython(const store::DatagenCursor& cursor) {
  py::dict out;
  SetPosition(out, cursor.position);
  out["item_seq"] = py::int_(cursor.item_seq);
  return out;
}

template <typename Map>
py::dict CountsToPython(const Map& counts) {
  py::dict out;
  for (const auto& [name, n] : counts) out[TextToPython(name)] = py::int_(n);
  return out;
}

py::list TextsToPython(const std::vector<std::string>& texts) {
  py::list out(texts.size());
  for (size_t i = 0; i < texts.size(); ++i) out[i] = TextToPython(texts[i]);
  return out;
}

}  // namespace

std::string DatagenJsonTextFromPython(py::handle value, const Path& path) {
  return ToJson(value, path).dump(-1, ' ', false, nlohmann::json::error_handler_t::strict);
}

DatagenEvent DatagenEventFromPython(py::handle event, const Path& path, int64_t now_micros) {
  DatagenEvent e;
  e.event_ts_micros = now_micros;
  bool has_event_id = false;
  bool has_item_id = false;
  bool has_root = false;
  bool has_seq = false;
  bool has_checkpoint = false;
  bool has_type = false;
  bool has_run = false;
  bool has_epoch = false;
  const auto& keys = EventKeys();
  ForEachKey(event, path, [&](std::string_view name, py::handle v, const Path& p) {
    const auto it = keys.find(name);
    if (it == keys.end()) return;  // unknown keys are ignored, as by the HTTP API
    switch (it->second) {
      case EventKey::kEventId:
        e.event_id = ReadString(v, p);
        has_event_id = true;
        break;
      case EventKey::kItemId:
        e.item_id = ReadString(v, p);
        has_item_id = true;
        break;
      case EventKey::kRootItemId:
        e.root_item_id = ReadString(v, p);
        has_root = true;
        break;
      case EventKey::kParentItemId:
        e.parent_item_id = ReadString(v, p);
        break;
      case EventKey::kItemSeq:
        e.item_seq = ReadInt64(v, p);
        has_seq = true;
        break;
      case EventKey::kCheckpointId:
        e.checkpoint_id = ReadString(v, p);
        has_checkpoint = true;
        break;
      case EventKey::kEventType:
        e.event_type = ReadEnum(v, p, &store::ParseDatagenEventType);
        has_type = true;
        break;
      case EventKey::kStepName:
        e.step_name = ReadString(v, p);
        break;
      case EventKey::kStepKind:
        e.step_kind = ReadEnum(v, p, &store::ParseDatagenStepKind);
        break;
      case EventKey::kStepIndex:
        e.step_index = ReadInt64(v, p);
        break;
      case EventKey::kEnclosingStep:
        e.enclosing_step = ReadString(v, p);
        break;
      case EventKey::kSelectorStep:
        e.selector_step = ReadString(v, p);
        break;
      case EventKey::kAttempt:
        e.attempt = ReadInt32(v, p);
        break;
      case EventKey::kRunId:
        e.run_id = ReadString(v, p);
        has_run = true;
        break;
      case EventKey::kWriterEpoch:
        e.writer_epoch = ReadDecimalString(v, p);
        has_epoch = true;
        break;
      case EventKey::kFieldName:
        e.field_name = ReadString(v, p);
        break;
      case EventKey::kFieldType:
        e.field_type = ReadString(v, p);
        break;
      case EventKey::kCodecVersion:
        e.codec_version = ReadInt32(v, p);
        break;
      case EventKey::kValue:
        e.value = ReadValue(v, p);
        break;
      case EventKey::kQueryTags:
        e.query_tags_json = DatagenJsonTextFromPython(v, p);
        break;
      case EventKey::kStatus:
        e.status = ReadEnum(v, p, &store::ParseDatagenItemStatus);
        break;
      case EventKey::kErrorType:
        e.error_type = ReadString(v, p);
        break;
      case EventKey::kErrorDump:
        e.error_dump = ReadString(v, p);
        break;
      case EventKey::kTraceback:
        e.traceback = ReadString(v, p);
        break;
      case EventKey::kEventTs:
        e.event_ts_micros = ReadTimestampMicros(v, p);
        break;
      case EventKey::kSchemaVersion:
        e.schema_version = ReadInt32(v, p);
        break;
    }
  });
  // In the HTTP API's order, so both name the same missing key first.
  if (!has_event_id) Required(path, "event_id");
  if (!has_item_id) Required(path, "item_id");
  if (!has_root) Required(path, "root_item_id");
  if (!has_seq) Required(path, "item_seq");
  if (!has_checkpoint) Required(path, "checkpoint_id");
  if (!has_type) Required(path, "event_type");
  if (!has_run) Required(path, "run_id");
  if (!has_epoch) Required(path, "writer_epoch");
  return e;
}

store::DatagenStepPosition DatagenPositionFromPython(py::handle position, const Path& path) {
  store::DatagenStepPosition out;
  std::optional<std::string> name;
  std::optional<store::DatagenStepKind> kind;
  std::optional<int64_t> index;
  // Each of these may be spelled two ways: the reference writer's and the event column's.
  const auto once = [&](bool already, std::string_view a, std::string_view b) {
    if (already) {
      ThrowInvalid(fmt::format("{}: give {} or {}, not both", path.str(), a, b));
    }
  };
  ForEachKey(position, path, [&](std::string_view key, py::handle v, const Path& p) {
    if (key == "step_name") {
      name = ReadString(v, p);
    } else if (key == "step_kind") {
      kind = ReadEnum(v, p, &store::ParseDatagenStepKind);
    } else if (key == "index" || key == "step_index") {
      once(index.has_value(), "index", "step_index");
      index = ReadInt64(v, p);
    } else if (key == "enclosing" || key == "enclosing_step") {
      once(out.enclosing_step.has_value(), "enclosing", "enclosing_step");
      out.enclosing_step = ReadString(v, p);
    } else if (key == "selector" || key == "selector_step") {
      once(out.selector_step.has_value(), "selector", "selector_step");
      out.selector_step = ReadString(v, p);
    }
  });
  if (!name) Required(path, "step_name");
  if (!kind) Required(path, "step_kind");
  if (!index) Required(path, "index");
  out.step_name = std::move(*name);
  out.step_kind = *kind;
  out.step_index = *index;
  return out;
}

std::vector<store::DatagenFieldWrite> DatagenFieldWritesFromPython(py::handle fields,
                                                                   const Path& path) {
  PyObject* o = fields.ptr();
  if (!PyList_Check(o) && !PyTuple_Check(o)) {
    ThrowInvalid(fmt::format("{}: expected an array of field objects, found {}", path.str(),
                             Describe(fields)));
  }
  std::vector<store::DatagenFieldWrite> out;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(o);
  PyObject** items = PySequence_Fast_ITEMS(o);
  out.reserve(static_cast<size_t>(n));
  for (Py_ssize_t i = 0; i < n; ++i) {
    const Path item(path, Path::Element{static_cast<size_t>(i)});
    std::optional<std::string> name;
    std::optional<DatagenValue> value;
    store::DatagenFieldWrite write{"", DatagenValue::Int(0)};
    ForEachKey(items[i], item, [&](std::string_view key, py::handle v, const Path& p) {
      if (key == "name") {
        name = ReadString(v, p);
      } else if (key == "value") {
        value = ReadValue(v, p);
      } else if (key == "op") {
        const std::string op = ReadString(v, p);
        if (op != "set" && op != "append") {
          ThrowInvalid(fmt::format("{}: unsupported field op '{}': valid ops are 'set', 'append'",
                                   p.str(), op));
        }
        write.append = op == "append";
      } else if (key == "field_type") {
        write.field_type = ReadString(v, p);
      } else if (key == "codec_version") {
        write.codec_version = ReadInt32(v, p);
      }
    });
    if (!name) Required(item, "name");
    if (!value) Required(item, "value");
    write.name = std::move(*name);
    write.value = std::move(*value);
    out.push_back(std::move(write));
  }
  return out;
}

py::dict DatagenEventToPython(const DatagenEvent& e) {
  py::dict out;
  SetText(out, "event_id", e.event_id);
  SetText(out, "item_id", e.item_id);
  SetText(out, "root_item_id", e.root_item_id);
  SetIfPresent(out, "parent_item_id", e.parent_item_id);
  out["item_seq"] = py::int_(e.item_seq);
  SetText(out, "checkpoint_id", e.checkpoint_id);
  SetText(out, "event_type", store::DatagenEventTypeName(e.event_type));
  SetIfPresent(out, "step_name", e.step_name);
  if (e.step_kind) SetText(out, "step_kind", store::DatagenStepKindName(*e.step_kind));
  if (e.step_index) out["step_index"] = py::int_(*e.step_index);
  SetIfPresent(out, "enclosing_step", e.enclosing_step);
  SetIfPresent(out, "selector_step", e.selector_step);
  out["attempt"] = py::int_(e.attempt);
  SetText(out, "run_id", e.run_id);
  SetText(out, "writer_epoch", e.writer_epoch);
  SetIfPresent(out, "field_name", e.field_name);
  SetIfPresent(out, "field_type", e.field_type);
  if (e.codec_version) out["codec_version"] = py::int_(*e.codec_version);
  if (e.value) out["value"] = ValueToPython(*e.value);
  if (e.query_tags_json) out["query_tags"] = StoredJsonToPython(*e.query_tags_json);
  if (e.status) SetText(out, "status", store::DatagenItemStatusName(*e.status));
  SetIfPresent(out, "error_type", e.error_type);
  SetIfPresent(out, "error_dump", e.error_dump);
  SetIfPresent(out, "traceback", e.traceback);
  SetText(out, "event_ts", json::FormatTimestamp(e.event_ts_micros));
  out["schema_version"] = py::int_(e.schema_version);
  return out;
}

py::dict DatagenFoldedItemToPython(const store::DatagenFoldedItem& item) {
  py::dict out;
  SetText(out, "item_id", item.item_id);
  SetText(out, "root_item_id", item.root_item_id);
  SetIfPresent(out, "parent_item_id", item.parent_item_id);
  SetText(out, "status", store::DatagenItemStatusName(item.status));
  out["last_item_seq"] = py::int_(item.last_item_seq);
  out["last_attempt"] = py::int_(item.last_attempt);
  py::dict fields;
  for (const auto& [name, state] : item.fields) {
    py::dict field;
    if (state.appended) {
      field["mode"] = "append";
      py::list values(state.values.size());
      for (size_t i = 0; i < state.values.size(); ++i) values[i] = ValueToPython(state.values[i]);
      field["values"] = std::move(values);
    } else {
      field["mode"] = "set";
      if (!state.values.empty()) field["value"] = ValueToPython(state.values.back());
    }
    fields[TextToPython(name)] = std::move(field);
  }
  out["fields"] = std::move(fields);
  py::list trajectory(item.trajectory.size());
  for (size_t i = 0; i < item.trajectory.size(); ++i) {
    trajectory[i] = CursorToPython(item.trajectory[i]);
  }
  out["trajectory"] = std::move(trajectory);
  const auto positions = [](const std::set<store::DatagenStepPosition>& set) {
    py::list list;
    for (const store::DatagenStepPosition& p : set) list.append(PositionToPython(p));
    return list;
  };
  if (!item.started.empty()) out["started"] = positions(item.started);
  if (!item.completed.empty()) out["completed"] = positions(item.completed);
  if (item.query_tags_json) out["query_tags"] = StoredJsonToPython(*item.query_tags_json);
  if (!item.blob_event_ids.empty()) {
    py::dict ids;
    for (const auto& [field, event_id] : item.blob_event_ids) {
      ids[TextToPython(field)] = TextToPython(event_id);
    }
    out["blob_event_ids"] = std::move(ids);
  }
  return out;
}

py::dict DatagenItemFailureToPython(const store::DatagenItemFailure& failure) {
  py::dict out;
  out["at"] = CursorToPython(failure.at);
  SetText(out, "run_id", failure.run_id);
  out["attempt"] = py::int_(failure.attempt);
  SetText(out, "error_type", failure.error_type);
  SetIfPresent(out, "error_dump", failure.error_dump);
  SetIfPresent(out, "traceback", failure.traceback);
  return out;
}

py::dict DatagenOverviewToPython(const store::DatagenOverview& overview) {
  py::dict out;
  out["items"] = py::int_(overview.items);
  out["running"] = py::int_(overview.running);
  out["completed"] = py::int_(overview.completed);
  out["filtered"] = py::int_(overview.filtered);
  out["failures"] = py::int_(overview.failures);
  out["failures_by_error_type"] = CountsToPython(overview.failures_by_error_type);
  py::dict runs;
  for (const auto& [run_id, run] : overview.failures_by_run) {
    py::dict bucket;
    bucket["failures"] = py::int_(run.failures);
    bucket["failures_by_error_type"] = CountsToPython(run.failures_by_error_type);
    bucket["sample_root_item_ids"] = TextsToPython(run.sample_root_item_ids);
    runs[TextToPython(run_id)] = std::move(bucket);
  }
  out["failures_by_run"] = std::move(runs);
  out["completed_steps"] = CountsToPython(overview.completed_steps);
  return out;
}

py::dict DatagenItemTreeToPython(const store::DatagenItemTree& tree) {
  py::dict nodes;
  for (const auto& [id, node] : tree.nodes) {
    py::dict entry;
    entry["item"] = DatagenFoldedItemToPython(node.item);
    entry["children"] = TextsToPython(node.children);
    nodes[TextToPython(id)] = std::move(entry);
  }
  py::dict out;
  out["roots"] = TextsToPython(tree.roots);
  out["nodes"] = std::move(nodes);
  return out;
}

}  // namespace strata::python
