// Python dicts <-> rollout records (rollout_records.h).
#include "python/rollout_records.h"

#include <fmt/format.h>
#include <sys/random.h>
#include <time.h>

#include <array>
#include <limits>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "python/errors.h"
#include "strata/json.h"

namespace strata::python {
namespace {

using store::RolloutRecord;
using store::RolloutRelationship;

// A random (version 4) UUID in its 36-character text form, from the kernel's random source.
std::string NewUuidV4() {
  std::array<unsigned char, 16> b{};
  size_t got = 0;
  while (got < b.size()) {
    const ssize_t n = getrandom(b.data() + got, b.size() - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (size_t i = 0; i < b.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out.push_back('-');
    out.push_back(kHex[b[i] >> 4]);
    out.push_back(kHex[b[i] & 15]);
  }
  return out;
}

// The columns, in schema order: the order of the dicts the reads return.
enum class Field : uint8_t {
  kId,
  kRolloutId,
  kProblemId,
  kDataset,
  kSequenceOrder,
  kRole,
  kCreatedAt,
  kContent,
  kContentType,
  kModelInputString,
  kModelOutputString,
  kRationale,
  kProblemText,
  kUserMetadata,
  kInputTokens,
  kOutputTokens,
  kNumInputTokens,
  kNumOutputTokens,
  kOutputLogprobs,
  kInputLogprobs,
  kRefLogprobs,
  kLossMask,
  kAdvantage,
  kReward,
  kRawReward,
  kGraderId,
  kScore,
  kIncludeInTraining,
  kExcludeReason,
  kPolicyVersion,
  kRelationships,
  kBinaryPayload,
  kPayloadSize,
  kPayloadChecksum,
  kArtifactType,
  kMetadata,
  kCount,
};

constexpr std::array<std::string_view, static_cast<size_t>(Field::kCount)> kFieldNames = {
    "id",
    "rollout_id",
    "problem_id",
    "dataset",
    "sequence_order",
    "role",
    "created_at",
    "content",
    "content_type",
    "model_input_string",
    "model_output_string",
    "rationale",
    "problem_text",
    "user_metadata",
    "input_tokens",
    "output_tokens",
    "num_input_tokens",
    "num_output_tokens",
    "output_logprobs",
    "input_logprobs",
    "ref_logprobs",
    "loss_mask",
    "advantage",
    "reward",
    "raw_reward",
    "grader_id",
    "score",
    "include_in_training",
    "exclude_reason",
    "policy_version",
    "relationships",
    "binary_payload",
    "payload_size",
    "payload_checksum",
    "artifact_type",
    "metadata",
};

const std::unordered_map<std::string_view, Field>& FieldsByName() {
  static const auto* fields = [] {
    auto* map = new std::unordered_map<std::string_view, Field>();
    for (size_t i = 0; i < kFieldNames.size(); ++i) {
      map->emplace(kFieldNames[i], static_cast<Field>(i));
    }
    return map;
  }();
  return *fields;
}

// The column names as interned Python strings, the keys of the dicts reads return. Made on
// first use; PyUnicode_InternFromString never releases the GIL, so the static's guard cannot
// deadlock against it.
const std::array<PyObject*, kFieldNames.size()>& Keys() {
  static const auto* keys = [] {
    auto* out = new std::array<PyObject*, kFieldNames.size()>();
    for (size_t i = 0; i < kFieldNames.size(); ++i) {
      (*out)[i] = PyUnicode_InternFromString(std::string(kFieldNames[i]).c_str());
    }
    return out;
  }();
  return *keys;
}

std::string_view KeyText(py::handle key, const Path& path) {
  if (!PyUnicode_Check(key.ptr())) {
    ThrowInvalid(fmt::format("{}: keys must be strings, found {}", path.str(), Describe(key)));
  }
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(key.ptr(), &size);
  if (data == nullptr) {
    PyErr_Clear();
    return {};  // not a column name
  }
  return {data, static_cast<size_t>(size)};
}

std::string RequiredString(py::handle value, const Path& path) {
  std::string s = ReadString(value, path);
  if (s.empty()) ThrowInvalid(fmt::format("{} is required", path.str()));
  return s;
}

int32_t ReadInt32(py::handle value, const Path& path) {
  return static_cast<int32_t>(ReadInteger(value, path, std::numeric_limits<int32_t>::min(),
                                          std::numeric_limits<int32_t>::max(), "a 32-bit integer"));
}

RolloutRelationship ReadRelationship(py::handle value, const Path& path) {
  py::dict dict = MappingAsDict(value, path);
  RolloutRelationship out;
  bool has_target = false;
  bool has_relation = false;
  const py::list entries = dict.attr("items")();  // a snapshot, as ItemsSnapshot
  for (py::handle entry : entries) {
    const py::handle key = PyTuple_GET_ITEM(entry.ptr(), 0);
    const py::handle item = PyTuple_GET_ITEM(entry.ptr(), 1);
    if (item.is_none()) continue;
    const std::string_view name = KeyText(key, path);
    const Path item_path(path, name);
    if (name == "target_id") {
      out.target_id = ReadString(item, item_path);
      has_target = true;
    } else if (name == "relation") {
      out.relation = ReadString(item, item_path);
      has_relation = true;
    } else if (name == "weight") {
      out.weight = ReadFloat32(item, item_path);
    }
  }
  if (!has_target) ThrowInvalid(fmt::format("{} is required", Path(path, "target_id").str()));
  if (!has_relation) ThrowInvalid(fmt::format("{} is required", Path(path, "relation").str()));
  return out;
}

std::vector<RolloutRelationship> ReadRelationships(py::handle value, const Path& path) {
  PyObject* o = value.ptr();
  if (!PyList_Check(o) && !PyTuple_Check(o)) {
    ThrowInvalid(fmt::format("{}: expected an array of relationship objects, found {}", path.str(),
                             Describe(value)));
  }
  std::vector<RolloutRelationship> out;
  const py::tuple items = ItemsSnapshot(value);
  out.reserve(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    const Path item(path, Path::Element{i});
    out.push_back(
        ReadRelationship(PyTuple_GET_ITEM(items.ptr(), static_cast<Py_ssize_t>(i)), item));
  }
  return out;
}

std::string JsonText(py::handle value, const Path& path) { return ToJson(value, path).dump(); }

// user_metadata: a string verbatim, anything else as its JSON text.
std::string TextOrJsonText(py::handle value, const Path& path) {
  if (PyUnicode_Check(value.ptr())) return ReadString(value, path);
  return JsonText(value, path);
}

void ReadField(Field field, py::handle v, const Path& p, RolloutRecord* r,
               std::optional<std::string>* problem_id) {
  switch (field) {
    case Field::kId:
      r->id = RequiredString(v, p);
      break;
    case Field::kRolloutId:
      r->rollout_id = RequiredString(v, p);
      break;
    case Field::kProblemId:
      *problem_id = ReadString(v, p);
      break;
    case Field::kDataset:
      r->dataset = ReadString(v, p);
      break;
    case Field::kSequenceOrder:
      r->sequence_order = ReadInt32(v, p);
      break;
    case Field::kRole:
      r->role = ReadString(v, p);
      break;
    case Field::kCreatedAt:
      r->created_at_micros = ReadTimestampMicros(v, p);
      break;
    case Field::kContent:
      r->content = ReadString(v, p);
      break;
    case Field::kContentType:
      r->content_type = ReadString(v, p);
      break;
    case Field::kModelInputString:
      r->model_input_string = ReadString(v, p);
      break;
    case Field::kModelOutputString:
      r->model_output_string = ReadString(v, p);
      break;
    case Field::kRationale:
      r->rationale = ReadString(v, p);
      break;
    case Field::kProblemText:
      r->problem_text = ReadString(v, p);
      break;
    case Field::kUserMetadata:
      r->user_metadata = TextOrJsonText(v, p);
      break;
    case Field::kInputTokens:
      r->input_tokens = ReadInt32List(v, p);
      break;
    case Field::kOutputTokens:
      r->output_tokens = ReadInt32List(v, p);
      break;
    case Field::kNumInputTokens:
      r->num_input_tokens = ReadInt32(v, p);
      break;
    case Field::kNumOutputTokens:
      r->num_output_tokens = ReadInt32(v, p);
      break;
    case Field::kOutputLogprobs:
      r->output_logprobs = ReadFloat32List(v, p);
      break;
    case Field::kInputLogprobs:
      r->input_logprobs = ReadFloat32List(v, p);
      break;
    case Field::kRefLogprobs:
      r->ref_logprobs = ReadFloat32List(v, p);
      break;
    case Field::kLossMask:
      r->loss_mask = ReadInt8List(v, p);
      break;
    case Field::kAdvantage:
      r->advantage = ReadFloat32(v, p);
      break;
    case Field::kReward:
      r->reward = ReadFloat32(v, p);
      break;
    case Field::kRawReward:
      r->raw_reward = ReadFloat32(v, p);
      break;
    case Field::kGraderId:
      r->grader_id = ReadString(v, p);
      break;
    case Field::kScore:
      r->score = ReadFloat32(v, p);
      break;
    case Field::kIncludeInTraining:
      r->include_in_training = ReadBool(v, p);
      break;
    case Field::kExcludeReason:
      r->exclude_reason = ReadString(v, p);
      break;
    case Field::kPolicyVersion:
      r->policy_version = ReadString(v, p);
      break;
    case Field::kRelationships:
      r->relationships = ReadRelationships(v, p);
      break;
    case Field::kBinaryPayload:
      r->binary_payload = ReadBytes(v, p);
      break;
    case Field::kPayloadSize:
      r->payload_size = ReadInteger(v, p, std::numeric_limits<int64_t>::min(),
                                    std::numeric_limits<int64_t>::max(), "an integer");
      break;
    case Field::kPayloadChecksum:
      r->payload_checksum = ReadString(v, p);
      break;
    case Field::kArtifactType:
      r->artifact_type = ReadString(v, p);
      break;
    case Field::kMetadata:
      r->metadata = JsonText(v, p);
      break;
    case Field::kCount:
      break;
  }
}

// --- Out ------------------------------------------------------------------------------------

py::object OrNone(const std::optional<std::string>& text) {
  return text ? py::object(TextToPython(*text)) : py::none();
}

template <typename T>
py::object OrNone(const std::optional<T>& value) {
  return value ? py::object(py::int_(*value)) : py::none();
}

py::object Float32OrNone(const std::optional<float>& value) {
  return value ? py::object(Float32ToPython(*value)) : py::none();
}

template <typename T>
py::object IntegersOrNone(const std::optional<std::vector<T>>& values) {
  if (!values) return py::none();
  py::list out(values->size());
  for (size_t i = 0; i < values->size(); ++i) out[i] = py::int_((*values)[i]);
  return out;
}

py::object FloatsOrNone(const std::optional<std::vector<float>>& values) {
  if (!values) return py::none();
  py::list out(values->size());
  for (size_t i = 0; i < values->size(); ++i) out[i] = Float32ToPython((*values)[i]);
  return out;
}

py::list Relationships(const std::optional<std::vector<RolloutRelationship>>& relationships) {
  py::list out;
  if (!relationships) return out;
  for (const RolloutRelationship& r : *relationships) {
    py::dict item;
    item["target_id"] = TextToPython(r.target_id);
    item["relation"] = TextToPython(r.relation);
    item["weight"] = Float32OrNone(r.weight);
    out.append(std::move(item));
  }
  return out;
}

}  // namespace

int64_t WallMicros() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

RolloutRecord RolloutRecordFromPython(py::handle record, const Path& path, int64_t now_micros) {
  py::dict dict = MappingAsDict(record, path);
  RolloutRecord r;
  r.created_at_micros = now_micros;
  r.relationships.emplace();
  std::optional<std::string> problem_id;
  const auto& fields = FieldsByName();
  PyObject* key = nullptr;
  PyObject* value = nullptr;
  Py_ssize_t position = 0;
  while (PyDict_Next(dict.ptr(), &position, &key, &value) != 0) {
    if (value == Py_None) continue;
    // Held for the step: a reader that runs Python code (a numpy scalar's __float__) may let
    // another thread change the dict. PyDict_Next itself stays within the dict's bounds.
    const py::object key_held = py::reinterpret_borrow<py::object>(key);
    const py::object value_held = py::reinterpret_borrow<py::object>(value);
    const std::string_view name = KeyText(key, path);
    const auto it = fields.find(name);
    if (it == fields.end()) continue;  // unknown keys are ignored, as by the HTTP API
    const Path field_path(path, name);
    ReadField(it->second, value, field_path, &r, &problem_id);
  }
  if (r.id.empty()) {
    // Generated only when the key is absent (or None); an empty id was refused above.
    r.id = NewUuidV4();
  }
  if (r.rollout_id.empty()) {
    ThrowInvalid(fmt::format("{} is required", Path(path, "rollout_id").str()));
  }
  r.problem_id = problem_id ? std::move(*problem_id) : r.rollout_id;
  return r;
}

py::dict RolloutRecordToPython(const RolloutRecord& r) {
  const auto& keys = Keys();
  py::dict out;
  const auto set = [&](Field field, py::object value) {
    if (PyDict_SetItem(out.ptr(), keys[static_cast<size_t>(field)], value.ptr()) != 0) {
      throw py::error_already_set();
    }
  };
  set(Field::kId, TextToPython(r.id));
  set(Field::kRolloutId, TextToPython(r.rollout_id));
  set(Field::kProblemId, TextToPython(r.problem_id));
  set(Field::kDataset, OrNone(r.dataset));
  set(Field::kSequenceOrder, py::int_(r.sequence_order));
  set(Field::kRole, TextToPython(r.role));
  set(Field::kCreatedAt, TextToPython(json::FormatTimestamp(r.created_at_micros)));
  set(Field::kContent, OrNone(r.content));
  set(Field::kContentType, TextToPython(r.content_type));
  set(Field::kModelInputString, OrNone(r.model_input_string));
  set(Field::kModelOutputString, OrNone(r.model_output_string));
  set(Field::kRationale, OrNone(r.rationale));
  set(Field::kProblemText, OrNone(r.problem_text));
  set(Field::kUserMetadata, OrNone(r.user_metadata));
  set(Field::kInputTokens, IntegersOrNone(r.input_tokens));
  set(Field::kOutputTokens, IntegersOrNone(r.output_tokens));
  set(Field::kNumInputTokens, OrNone(r.num_input_tokens));
  set(Field::kNumOutputTokens, OrNone(r.num_output_tokens));
  set(Field::kOutputLogprobs, FloatsOrNone(r.output_logprobs));
  set(Field::kInputLogprobs, FloatsOrNone(r.input_logprobs));
  set(Field::kRefLogprobs, FloatsOrNone(r.ref_logprobs));
  set(Field::kLossMask, IntegersOrNone(r.loss_mask));
  set(Field::kAdvantage, Float32OrNone(r.advantage));
  set(Field::kReward, Float32OrNone(r.reward));
  set(Field::kRawReward, Float32OrNone(r.raw_reward));
  set(Field::kGraderId, OrNone(r.grader_id));
  set(Field::kScore, Float32OrNone(r.score));
  set(Field::kIncludeInTraining,
      r.include_in_training ? py::object(py::bool_(*r.include_in_training)) : py::none());
  set(Field::kExcludeReason, OrNone(r.exclude_reason));
  set(Field::kPolicyVersion, OrNone(r.policy_version));
  set(Field::kRelationships, Relationships(r.relationships));
  set(Field::kPayloadSize, OrNone(r.payload_size));
  set(Field::kPayloadChecksum, OrNone(r.payload_checksum));
  set(Field::kArtifactType, OrNone(r.artifact_type));
  set(Field::kMetadata, r.metadata ? StoredJsonToPython(*r.metadata) : py::none());
  if (r.binary_payload) {
    // Reads never fetch the blob (get_blob does); a record that holds one is written as the
    // HTTP API writes it.
    set(Field::kBinaryPayload, TextToPython(json::Base64Encode(*r.binary_payload)));
  }
  return out;
}

}  // namespace strata::python
