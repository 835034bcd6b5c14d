// Python dicts <-> context records (context_records.h).
#include "python/context_records.h"

#include <fmt/format.h>

#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "python/errors.h"

namespace strata::python {
namespace {

using store::ContextPatch;
using store::ContextRecord;
using store::ContextRelationship;
using store::ContextStateMetadata;

std::string_view KeyOf(PyObject* key, const Path& path) {
  if (!PyUnicode_Check(key)) {
    ThrowInvalid(fmt::format("{}: keys must be strings, found {}", path.str(), Describe(key)));
  }
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(key, &size);
  if (data == nullptr) throw py::error_already_set();
  return {data, static_cast<size_t>(size)};
}

// Calls `read(name, value, path)` for every key of the mapping whose value is not None.
template <typename Read>
void ForEachField(py::handle mapping, const Path& path, const Read& read) {
  py::dict dict = MappingAsDict(mapping, path);
  PyObject* key = nullptr;
  PyObject* value = nullptr;
  Py_ssize_t position = 0;
  while (PyDict_Next(dict.ptr(), &position, &key, &value) != 0) {
    if (value == Py_None) continue;
    // Held for the step: a reader that runs Python code (tzinfo.utcoffset, a numpy scalar's
    // __float__) may let another thread change the dict.
    const py::object key_held = py::reinterpret_borrow<py::object>(key);
    const py::object value_held = py::reinterpret_borrow<py::object>(value);
    const std::string_view name = KeyOf(key, path);
    const Path field_path(path, name);
    if (!read(name, py::handle(value), field_path)) {
      ThrowInvalid(fmt::format("{}: unknown field '{}'", path.str(), name));
    }
  }
}

int32_t ReadInt32(py::handle value, const Path& path) {
  return static_cast<int32_t>(ReadInteger(value, path, std::numeric_limits<int32_t>::min(),
                                          std::numeric_limits<int32_t>::max(), "a 32-bit integer"));
}

int64_t ReadInt64(py::handle value, const Path& path) {
  return ReadInteger(value, path, std::numeric_limits<int64_t>::min(),
                     std::numeric_limits<int64_t>::max(), "an integer");
}

// A str verbatim, anything else as its compact JSON text (keys sorted).
std::string TextOrJsonText(py::handle value, const Path& path) {
  if (PyUnicode_Check(value.ptr())) return ReadString(value, path);
  ToJsonOptions options;
  options.datetimes = true;
  return ToJson(value, path, options).dump();
}

std::string JsonText(py::handle value, const Path& path) {
  ToJsonOptions options;
  options.datetimes = true;
  return ToJson(value, path, options).dump();
}

ContextStateMetadata ReadStateMetadata(py::handle value, const Path& path) {
  ContextStateMetadata state;
  ForEachField(value, path, [&](std::string_view name, py::handle v, const Path& p) {
    if (name == "step") {
      state.step = ReadInt32(v, p);
    } else if (name == "active_plan_id") {
      state.active_plan_id = ReadString(v, p);
    } else if (name == "tokens_used") {
      state.tokens_used = ReadInt32(v, p);
    } else if (name == "custom") {
      state.custom = TextOrJsonText(v, p);
    } else {
      return false;
    }
    return true;
  });
  return state;
}

std::vector<ContextRelationship> ReadRelationships(py::handle value, const Path& path) {
  PyObject* o = value.ptr();
  if (!PyList_Check(o) && !PyTuple_Check(o)) {
    ThrowInvalid(fmt::format("{}: expected an array of relationship objects, found {}", path.str(),
                             Describe(value)));
  }
  std::vector<ContextRelationship> out;
  const py::tuple items = ItemsSnapshot(value);
  for (size_t i = 0; i < items.size(); ++i) {
    const Path item(path, Path::Element{i});
    ContextRelationship r;
    bool has_target = false;
    bool has_relation = false;
    ForEachField(items[i], item, [&](std::string_view name, py::handle v, const Path& p) {
      if (name == "target_id") {
        r.target_id = ReadString(v, p);
        has_target = true;
      } else if (name == "relation") {
        r.relation = ReadString(v, p);
        has_relation = true;
      } else if (name == "weight") {
        r.weight = ReadFloat32(v, p);
      } else {
        return false;
      }
      return true;
    });
    if (!has_target) ThrowInvalid(fmt::format("{} is required", Path(item, "target_id").str()));
    if (!has_relation) ThrowInvalid(fmt::format("{} is required", Path(item, "relation").str()));
    out.push_back(std::move(r));
  }
  return out;
}

// The fields a record and a patch share; false for any other name.
template <typename T>
bool ReadShared(std::string_view name, py::handle v, const Path& p, T* r) {
  if (name == "bot_id") {
    r->bot_id = ReadString(v, p);
  } else if (name == "session_id") {
    r->session_id = ReadString(v, p);
  } else if (name == "tenant") {
    r->tenant = ReadString(v, p);
  } else if (name == "source") {
    r->source = ReadString(v, p);
  } else if (name == "state_metadata") {
    r->state_metadata = ReadStateMetadata(v, p);
  } else if (name == "metadata") {
    r->metadata = JsonText(v, p);
  } else if (name == "relationships") {
    r->relationships = ReadRelationships(v, p);
  } else if (name == "expires_at") {
    r->expires_at_micros = ReadTimestampMicros(v, p);
  } else if (name == "retention_policy") {
    r->retention_policy = ReadString(v, p);
  } else if (name == "retired_at") {
    r->retired_at_micros = ReadTimestampMicros(v, p);
  } else if (name == "retired_reason") {
    r->retired_reason = ReadString(v, p);
  } else if (name == "embedding") {
    r->embedding = ReadFloat32List(v, p);
  } else if (name == "payload_uri") {
    r->payload_uri = ReadString(v, p);
  } else if (name == "payload_size") {
    r->payload_size = ReadInt64(v, p);
  } else if (name == "payload_checksum") {
    r->payload_checksum = ReadString(v, p);
  } else {
    return false;
  }
  return true;
}

py::object OrNone(const std::optional<std::string>& v) {
  return v ? py::object(TextToPython(*v)) : py::object(py::none());
}

template <typename T>
py::object IntOrNone(const std::optional<T>& v) {
  return v ? py::object(py::int_(*v)) : py::object(py::none());
}

py::object TimeOrNone(const std::optional<int64_t>& micros) {
  return micros ? MicrosToDatetime(*micros) : py::object(py::none());
}

}  // namespace

ContextRecord ContextRecordFromPython(py::handle record, const Path& path) {
  ContextRecord r;
  ForEachField(record, path, [&](std::string_view name, py::handle v, const Path& p) {
    if (ReadShared(name, v, p, &r)) return true;
    if (name == "id") {
      r.id = ReadString(v, p);
    } else if (name == "external_id") {
      r.external_id = ReadString(v, p);
    } else if (name == "run_id") {
      r.run_id = ReadString(v, p);
    } else if (name == "created_at") {
      r.created_at_micros = ReadTimestampMicros(v, p);
    } else if (name == "role") {
      r.role = ReadString(v, p);
    } else if (name == "lifecycle_status") {
      r.lifecycle_status = ReadString(v, p);
    } else if (name == "supersedes_id") {
      r.supersedes_id = ReadString(v, p);
    } else if (name == "superseded_by_id") {
      r.superseded_by_id = ReadString(v, p);
    } else if (name == "content_type") {
      r.content_type = ReadString(v, p);
    } else if (name == "text_payload") {
      r.text_payload = ReadString(v, p);
    } else if (name == "binary_payload") {
      r.binary_payload = ReadBytes(v, p);
    } else {
      return false;
    }
    return true;
  });
  return r;
}

ContextPatch ContextPatchFromPython(py::handle fields, const Path& path) {
  ContextPatch patch;
  ForEachField(fields, path, [&](std::string_view name, py::handle v, const Path& p) {
    if (ReadShared(name, v, p, &patch)) return true;
    if (name == "lifecycle_status") {
      patch.lifecycle_status = ReadString(v, p);
      return true;
    }
    return false;
  });
  return patch;
}

py::dict ContextRecordToPython(ContextRecord r) {
  py::dict out;
  out["id"] = TextToPython(r.id);
  out["external_id"] = OrNone(r.external_id);
  out["run_id"] = TextToPython(r.run_id);
  out["bot_id"] = OrNone(r.bot_id);
  out["session_id"] = OrNone(r.session_id);
  out["tenant"] = OrNone(r.tenant);
  out["source"] = OrNone(r.source);
  out["role"] = TextToPython(r.role);
  out["content_type"] = TextToPython(r.content_type);
  out["text"] = OrNone(r.text_payload);
  out["binary"] =
      r.binary_payload ? py::object(py::bytes(*r.binary_payload)) : py::object(py::none());
  out["payload_uri"] = OrNone(r.payload_uri);
  out["payload_size"] = IntOrNone(r.payload_size);
  out["payload_checksum"] = OrNone(r.payload_checksum);
  out["embedding"] =
      r.embedding ? Float32VectorToNumpy(std::move(*r.embedding)) : py::object(py::none());
  out["created_at"] = MicrosToDatetime(r.created_at_micros);
  if (r.state_metadata) {
    py::dict state;
    state["step"] = IntOrNone(r.state_metadata->step);
    state["active_plan_id"] = OrNone(r.state_metadata->active_plan_id);
    state["tokens_used"] = IntOrNone(r.state_metadata->tokens_used);
    state["custom"] = OrNone(r.state_metadata->custom);
    out["state_metadata"] = std::move(state);
  } else {
    out["state_metadata"] = py::none();
  }
  out["metadata"] = r.metadata ? StoredJsonToPython(*r.metadata) : py::object(py::none());
  py::list relationships;
  if (r.relationships) {
    for (const ContextRelationship& rel : *r.relationships) {
      py::dict d;
      d["target_id"] = TextToPython(rel.target_id);
      d["relation"] = TextToPython(rel.relation);
      d["weight"] = rel.weight ? py::object(Float32ToPython(*rel.weight)) : py::object(py::none());
      relationships.append(std::move(d));
    }
  }
  out["relationships"] = std::move(relationships);
  out["expires_at"] = TimeOrNone(r.expires_at_micros);
  out["retention_policy"] = OrNone(r.retention_policy);
  out["lifecycle_status"] = TextToPython(r.lifecycle_status);
  out["retired_at"] = TimeOrNone(r.retired_at_micros);
  out["retired_reason"] = OrNone(r.retired_reason);
  out["supersedes_id"] = OrNone(r.supersedes_id);
  out["superseded_by_id"] = OrNone(r.superseded_by_id);
  return out;
}

}  // namespace strata::python
