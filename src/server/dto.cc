// JSON bodies <-> store records for the HTTP API. The contract and every JSON form are in
// dto.h; this file has the type-checked readers (no nlohmann accessor runs on a value whose
// type was not checked first) and the writers.
#include "server/dto.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "strata/json.h"

namespace strata::server {
namespace {

using store::ContextPatch;
using store::ContextRecord;
using store::ContextRelationship;
using store::ContextStateMetadata;
using store::DatagenEvent;
using store::DatagenValue;
using store::RolloutRecord;
using store::RolloutRelationship;

// --- Paths and messages ---------------------------------------------------------------------

std::string PathOrBody(std::string_view where) {
  return where.empty() ? std::string("body") : std::string(where);
}

std::string Join(std::string_view path, std::string_view key) {
  if (path.empty()) return std::string(key);
  return fmt::format("{}.{}", path, key);
}

std::string Element(std::string_view path, size_t index) {
  return fmt::format("{}[{}]", path, index);
}

// "string \"abc\"", "number 1.5", "boolean true", "array", "object", "null".
std::string Describe(const Json& value) {
  if (value.is_number() || value.is_boolean()) {
    return fmt::format("{} {}", value.type_name(), value.dump());
  }
  if (value.is_string()) {
    constexpr size_t kQuoteLimit = 40;
    const auto& text = value.get_ref<const std::string&>();
    const bool cut = text.size() > kQuoteLimit;
    const Json shown(cut ? text.substr(0, kQuoteLimit) : text);
    // A cut may split a UTF-8 sequence: replace rather than throw.
    return fmt::format("string {}{}", shown.dump(-1, ' ', false, Json::error_handler_t::replace),
                       cut ? "..." : "");
  }
  return value.type_name();
}

Status TypeError(std::string_view path, std::string_view expected, const Json& found) {
  return Status::InvalidArgument(
      fmt::format("{}: expected {}, found {}", path, expected, Describe(found)));
}

Status WithPath(std::string_view path, const Status& status) {
  return Status::InvalidArgument(fmt::format("{}: {}", path, status.message()));
}

// --- Scalar readers: Result<T>(value, path of the value) -----------------------------------

Result<std::string> AsString(const Json& value, const std::string& path) {
  if (!value.is_string()) return TypeError(path, "a string", value);
  return value.get_ref<const std::string&>();
}

Result<bool> AsBool(const Json& value, const std::string& path) {
  if (!value.is_boolean()) return TypeError(path, "a boolean", value);
  return value.get<bool>();
}

// An integer in [min, max]; a float with a zero fraction counts (1e3, 3.0).
Result<int64_t> AsIntegerIn(const Json& value, const std::string& path, int64_t min, int64_t max,
                            std::string_view expected) {
  int64_t out = 0;
  if (value.is_number_unsigned()) {
    const auto unsigned_value = value.get<uint64_t>();
    if (unsigned_value > static_cast<uint64_t>(max)) {
      return Status::InvalidArgument(
          fmt::format("{}: {} is out of range for {}", path, value.dump(), expected));
    }
    out = static_cast<int64_t>(unsigned_value);
  } else if (value.is_number_integer()) {
    out = value.get<int64_t>();
  } else if (value.is_number_float()) {
    const auto d = value.get<double>();
    // [-2^63, 2^63): the doubles that convert to int64 exactly when integral.
    constexpr double kLimit = 9223372036854775808.0;
    if (!std::isfinite(d) || std::trunc(d) != d) return TypeError(path, expected, value);
    if (d < -kLimit || d >= kLimit) {
      return Status::InvalidArgument(
          fmt::format("{}: {} is out of range for {}", path, value.dump(), expected));
    }
    out = static_cast<int64_t>(d);
  } else {
    return TypeError(path, expected, value);
  }
  if (out < min || out > max) {
    return Status::InvalidArgument(
        fmt::format("{}: {} is out of range for {}", path, value.dump(), expected));
  }
  return out;
}

Result<int64_t> AsInt64(const Json& value, const std::string& path) {
  return AsIntegerIn(value, path, std::numeric_limits<int64_t>::min(),
                     std::numeric_limits<int64_t>::max(), "an integer");
}

Result<int32_t> AsInt32(const Json& value, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(int64_t v,
                          AsIntegerIn(value, path, std::numeric_limits<int32_t>::min(),
                                      std::numeric_limits<int32_t>::max(), "a 32-bit integer"));
  return static_cast<int32_t>(v);
}

Result<int8_t> AsInt8(const Json& value, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(int64_t v,
                          AsIntegerIn(value, path, std::numeric_limits<int8_t>::min(),
                                      std::numeric_limits<int8_t>::max(), "an 8-bit integer"));
  return static_cast<int8_t>(v);
}

Result<double> AsDouble(const Json& value, const std::string& path) {
  if (value.is_number()) return value.get<double>();
  if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (text == "Infinity") return std::numeric_limits<double>::infinity();
    if (text == "-Infinity") return -std::numeric_limits<double>::infinity();
  }
  return TypeError(path, "a number", value);
}

Result<float> AsFloat32(const Json& value, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(double d, AsDouble(value, path));
  if (std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max()) {
    return Status::InvalidArgument(
        fmt::format("{}: {} is out of range for a 32-bit float", path, value.dump()));
  }
  return static_cast<float>(d);
}

Result<int64_t> AsTimestamp(const Json& value, const std::string& path) {
  if (value.is_string()) {
    Result<int64_t> micros = json::ParseTimestamp(value.get_ref<const std::string&>());
    if (!micros.ok()) return WithPath(path, micros.status());
    return *micros;
  }
  if (value.is_number_integer()) return AsInt64(value, path);
  return TypeError(path, "an RFC 3339 timestamp string or integer microseconds", value);
}

Result<std::string> AsBase64Bytes(const Json& value, const std::string& path) {
  if (!value.is_string()) return TypeError(path, "a base64 string", value);
  Result<std::string> bytes = json::Base64Decode(value.get_ref<const std::string&>());
  if (!bytes.ok()) return WithPath(path, bytes.status());
  return std::move(bytes).value();
}

// Any JSON value (null never reaches a reader), stored as its compact dump.
Result<std::string> AsJsonText(const Json& value, const std::string& /*path*/) {
  return value.dump();
}

// A string verbatim, any other value as its compact dump (rollout user_metadata).
Result<std::string> AsTextOrJsonText(const Json& value, const std::string& /*path*/) {
  if (value.is_string()) return value.get_ref<const std::string&>();
  return value.dump();
}

// "records[0].writer_epoch": a string, or an integer taken as its decimal text.
Result<std::string> AsDecimalString(const Json& value, const std::string& path) {
  if (value.is_string()) return value.get_ref<const std::string&>();
  if (value.is_number_unsigned()) return std::to_string(value.get<uint64_t>());
  if (value.is_number_integer()) return std::to_string(value.get<int64_t>());
  return TypeError(path, "a string (or an integer)", value);
}

// A string parsed by `parse` (the stores' enum parsers), its message prefixed by the path.
template <typename T, typename Parse>
Result<T> AsEnum(const Json& value, const std::string& path, Parse parse) {
  STRATA_ASSIGN_OR_RETURN(std::string text, AsString(value, path));
  Result<T> parsed = parse(text);
  if (!parsed.ok()) return WithPath(path, parsed.status());
  return *parsed;
}

Result<store::DatagenEventType> AsEventType(const Json& value, const std::string& path) {
  return AsEnum<store::DatagenEventType>(value, path, store::ParseDatagenEventType);
}
Result<store::DatagenStepKind> AsStepKind(const Json& value, const std::string& path) {
  return AsEnum<store::DatagenStepKind>(value, path, store::ParseDatagenStepKind);
}
Result<store::DatagenItemStatus> AsItemStatus(const Json& value, const std::string& path) {
  return AsEnum<store::DatagenItemStatus>(value, path, store::ParseDatagenItemStatus);
}

// An array whose elements `read` converts; `expected` describes the whole array.
template <typename T, typename Read>
Result<std::vector<T>> AsArray(const Json& value, const std::string& path,
                               std::string_view expected, Read read) {
  if (!value.is_array()) return TypeError(path, expected, value);
  std::vector<T> out;
  out.reserve(value.size());
  for (size_t i = 0; i < value.size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(T element, read(value[i], Element(path, i)));
    out.push_back(std::move(element));
  }
  return out;
}

Result<std::vector<float>> AsFloat32Array(const Json& value, const std::string& path) {
  return AsArray<float>(value, path, "an array of numbers", AsFloat32);
}
Result<std::vector<int32_t>> AsInt32Array(const Json& value, const std::string& path) {
  return AsArray<int32_t>(value, path, "an array of 32-bit integers", AsInt32);
}
Result<std::vector<int8_t>> AsInt8Array(const Json& value, const std::string& path) {
  return AsArray<int8_t>(value, path, "an array of 8-bit integers", AsInt8);
}

// --- Objects ----------------------------------------------------------------------------------

// Reads the keys of one JSON object into fields. Absent and null keys are the same; the first
// error is kept and later reads do nothing, so a parser reads every field and checks status()
// once.
class ObjectReader {
 public:
  // REQUIRES: object.is_object().
  ObjectReader(const Json& object, std::string path) : object_(object), path_(std::move(path)) {}

  // The value of `key`, or nullptr when it is absent or null.
  const Json* Find(std::string_view key) const {
    const auto it = object_.find(key);
    if (it == object_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  std::string PathOf(std::string_view key) const { return Join(path_, key); }

  // Sets *out when the key holds a value; leaves it (nullopt or a default) otherwise.
  template <typename T, typename Read>
  void Optional(std::string_view key, std::optional<T>* out, Read read) {
    const Json* value = Next(key);
    if (value == nullptr) return;
    Result<T> result = read(*value, PathOf(key));
    if (!result.ok()) {
      status_ = std::move(result).status();
      return;
    }
    *out = std::move(result).value();
  }
  template <typename T, typename Read>
  void Defaulted(std::string_view key, T* out, Read read) {
    std::optional<T> value;
    Optional(key, &value, read);
    if (value) *out = std::move(*value);
  }
  // "<path> is required" when absent or null (or, with non_empty, an empty string).
  template <typename T, typename Read>
  void Required(std::string_view key, T* out, Read read, bool non_empty = false) {
    if (!status_.ok()) return;
    std::optional<T> value;
    Optional(key, &value, read);
    if (!status_.ok()) return;
    bool missing = !value.has_value();
    if constexpr (std::is_same_v<T, std::string>) {
      missing = missing || (non_empty && value->empty());
    }
    if (missing) {
      status_ = Status::InvalidArgument(fmt::format("{} is required", PathOf(key)));
      return;
    }
    *out = std::move(*value);
  }

  const Status& status() const { return status_; }

 private:
  const Json* Next(std::string_view key) const { return status_.ok() ? Find(key) : nullptr; }

  const Json& object_;
  std::string path_;
  Status status_;
};

template <typename Relationship>
Result<Relationship> AsRelationship(const Json& value, const std::string& path) {
  if (!value.is_object()) {
    return TypeError(path, "a relationship object {target_id, relation, weight?}", value);
  }
  ObjectReader reader(value, path);
  Relationship relationship;
  reader.Required("target_id", &relationship.target_id, AsString);
  reader.Required("relation", &relationship.relation, AsString);
  reader.Optional("weight", &relationship.weight, AsFloat32);
  STRATA_RETURN_IF_ERROR(reader.status());
  return relationship;
}

template <typename Relationship>
Result<std::vector<Relationship>> AsRelationships(const Json& value, const std::string& path) {
  return AsArray<Relationship>(value, path, "an array of relationship objects",
                               AsRelationship<Relationship>);
}

Result<ContextStateMetadata> AsStateMetadata(const Json& value, const std::string& path) {
  if (!value.is_object()) {
    return TypeError(path, "an object {step?, active_plan_id?, tokens_used?, custom?}", value);
  }
  ObjectReader reader(value, path);
  ContextStateMetadata state;
  reader.Optional("step", &state.step, AsInt32);
  reader.Optional("active_plan_id", &state.active_plan_id, AsString);
  reader.Optional("tokens_used", &state.tokens_used, AsInt32);
  reader.Optional("custom", &state.custom, AsString);
  STRATA_RETURN_IF_ERROR(reader.status());
  return state;
}

Result<DatagenValue> AsDatagenValue(const Json& value, const std::string& path) {
  if (!value.is_object()) {
    return TypeError(path, "a datagen value object {kind, value?, bytes?, size?, checksum?}",
                     value);
  }
  ObjectReader reader(value, path);
  std::string kind;
  reader.Required("kind", &kind, AsString);
  STRATA_RETURN_IF_ERROR(reader.status());
  if (kind == "blob") {
    store::DatagenBlob blob;
    std::optional<int64_t> size;
    reader.Optional("bytes", &blob.bytes, AsBase64Bytes);
    reader.Optional("size", &size, AsInt64);
    reader.Optional("checksum", &blob.checksum, AsString);
    STRATA_RETURN_IF_ERROR(reader.status());
    if (size && *size < 0) {
      return Status::InvalidArgument(
          fmt::format("{}: must not be negative, got {}", reader.PathOf("size"), *size));
    }
    blob.size = size ? *size : (blob.bytes ? static_cast<int64_t>(blob.bytes->size()) : 0);
    return DatagenValue::Blob(std::move(blob));
  }
  const Json* inner = reader.Find("value");
  const std::string inner_path = reader.PathOf("value");
  const bool known =
      kind == "int" || kind == "float" || kind == "bool" || kind == "str" || kind == "json";
  if (!known) {
    return Status::InvalidArgument(fmt::format(
        "{}: unsupported datagen value kind '{}': valid kinds are 'int', 'float', 'bool', "
        "'str', 'json', 'blob'",
        reader.PathOf("kind"), kind));
  }
  if (inner == nullptr) {
    return Status::InvalidArgument(
        fmt::format("{}: datagen value of kind '{}' is missing 'value'", path, kind));
  }
  if (kind == "int") {
    STRATA_ASSIGN_OR_RETURN(int64_t v, AsInt64(*inner, inner_path));
    return DatagenValue::Int(v);
  }
  if (kind == "float") {
    STRATA_ASSIGN_OR_RETURN(double v, AsDouble(*inner, inner_path));
    return DatagenValue::Float(v);
  }
  if (kind == "bool") {
    STRATA_ASSIGN_OR_RETURN(bool v, AsBool(*inner, inner_path));
    return DatagenValue::Bool(v);
  }
  if (kind == "str") {
    STRATA_ASSIGN_OR_RETURN(std::string v, AsString(*inner, inner_path));
    return DatagenValue::Str(std::move(v));
  }
  return DatagenValue::Json(inner->dump());
}

// Runs a parser, turning any nlohmann exception the type checks did not foresee (a dump of a
// programmatically built value holding invalid UTF-8) into InvalidArgument.
template <typename T, typename Parse>
Result<T> Guarded(std::string_view where, Parse parse) {
  try {
    return parse();
  } catch (const Json::exception& e) {
    return Status::InvalidArgument(fmt::format("{}: {}", PathOrBody(where), e.what()));
  }
}

// --- Writers ----------------------------------------------------------------------------------

Json NonFinite(double v) {
  if (std::isnan(v)) return "NaN";
  return v > 0 ? "Infinity" : "-Infinity";
}

Json Float64Json(double v) {
  if (!std::isfinite(v)) return NonFinite(v);
  return v;
}

// The shortest decimal that reads back to `v` as a float32, as a double (0.1f is written 0.1,
// not 0.10000000149011612).
Json Float32Json(float v) {
  if (!std::isfinite(v)) return NonFinite(v);
  std::array<char, 64> buffer{};
  const auto written = std::to_chars(buffer.data(), buffer.data() + buffer.size(), v);
  double shortest = v;
  if (written.ec == std::errc()) {
    double parsed = 0;
    const auto read = std::from_chars(buffer.data(), written.ptr, parsed);
    if (read.ec == std::errc()) shortest = parsed;
  }
  return shortest;
}

Json Float32Array(const std::vector<float>& values) {
  Json out = Json::array();
  for (float v : values) out.push_back(Float32Json(v));
  return out;
}

template <typename T>
Json OrNull(const std::optional<T>& value) {
  return value ? Json(*value) : Json();
}

Json OptionalFloat32(const std::optional<float>& value) {
  return value ? Float32Json(*value) : Json();
}

Json OptionalFloat32Array(const std::optional<std::vector<float>>& values) {
  return values ? Float32Array(*values) : Json();
}

Json OptionalTimestamp(const std::optional<int64_t>& micros) {
  return micros ? Json(json::FormatTimestamp(*micros)) : Json();
}

Json OptionalBase64(const std::optional<std::string>& bytes) {
  return bytes ? Json(json::Base64Encode(*bytes)) : Json();
}

// Stored JSON text as a JSON value; text that is not JSON as a string.
Json StoredJson(const std::string& text) {
  Json parsed = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  return parsed.is_discarded() ? Json(text) : parsed;
}

Json OptionalStoredJson(const std::optional<std::string>& text) {
  return text ? StoredJson(*text) : Json();
}

template <typename Relationship>
Json RelationshipsJson(const std::optional<std::vector<Relationship>>& relationships) {
  Json out = Json::array();
  if (!relationships) return out;
  for (const Relationship& r : *relationships) {
    out.push_back({{"target_id", r.target_id},
                   {"relation", r.relation},
                   {"weight", OptionalFloat32(r.weight)}});
  }
  return out;
}

Json StateMetadataJson(const std::optional<ContextStateMetadata>& state) {
  if (!state) return nullptr;
  return {{"step", OrNull(state->step)},
          {"active_plan_id", OrNull(state->active_plan_id)},
          {"tokens_used", OrNull(state->tokens_used)},
          {"custom", OrNull(state->custom)}};
}

Json DatagenValueJson(const DatagenValue& value) {
  using Kind = DatagenValue::Kind;
  Json out = {{"kind", std::string(store::DatagenValueKindName(value.kind()))},
              {"value", nullptr},
              {"bytes", nullptr},
              {"size", nullptr},
              {"checksum", nullptr}};
  switch (value.kind()) {
    case Kind::kInt:
      out["value"] = value.int_value();
      break;
    case Kind::kFloat:
      out["value"] = Float64Json(value.float_value());
      break;
    case Kind::kBool:
      out["value"] = value.bool_value();
      break;
    case Kind::kStr:
      out["value"] = value.text();
      break;
    case Kind::kJson:
      out["value"] = StoredJson(value.text());
      break;
    case Kind::kBlob:
      out["bytes"] = OptionalBase64(value.blob().bytes);
      out["size"] = value.blob().size;
      out["checksum"] = OrNull(value.blob().checksum);
      break;
  }
  return out;
}

Json PositionJson(const store::DatagenStepPosition& position) {
  return {{"step_name", position.step_name},
          {"step_kind", std::string(store::DatagenStepKindName(position.step_kind))},
          {"step_index", position.step_index},
          {"enclosing_step", OrNull(position.enclosing_step)},
          {"selector_step", OrNull(position.selector_step)}};
}

Json CursorJson(const store::DatagenCursor& cursor) {
  Json out = PositionJson(cursor.position);
  out["item_seq"] = cursor.item_seq;
  return out;
}

Json FieldStateJson(const store::DatagenFieldState& state) {
  Json values = Json::array();
  if (state.appended) {
    for (const DatagenValue& v : state.values) values.push_back(DatagenValueJson(v));
    return {{"mode", "append"}, {"value", nullptr}, {"values", std::move(values)}};
  }
  // A set field holds its one (last) value; an empty one cannot come out of a fold.
  Json value = state.values.empty() ? Json() : DatagenValueJson(state.values.back());
  return {{"mode", "set"}, {"value", std::move(value)}, {"values", std::move(values)}};
}

}  // namespace

// --- Context stores ---------------------------------------------------------------------------

Result<ContextRecord> ContextRecordFromJson(const Json& body, std::string_view where) {
  return Guarded<ContextRecord>(where, [&]() -> Result<ContextRecord> {
    if (!body.is_object()) return TypeError(PathOrBody(where), "an object", body);
    ObjectReader reader(body, std::string(where));
    ContextRecord record;
    record.relationships.emplace();
    reader.Defaulted("role", &record.role, AsString);
    reader.Defaulted("content_type", &record.content_type, AsString);
    reader.Optional("text_payload", &record.text_payload, AsString);
    reader.Optional("binary_payload", &record.binary_payload, AsBase64Bytes);
    reader.Optional("payload_uri", &record.payload_uri, AsString);
    reader.Optional("payload_size", &record.payload_size, AsInt64);
    reader.Optional("payload_checksum", &record.payload_checksum, AsString);
    reader.Optional("embedding", &record.embedding, AsFloat32Array);
    reader.Optional("bot_id", &record.bot_id, AsString);
    reader.Optional("session_id", &record.session_id, AsString);
    reader.Optional("tenant", &record.tenant, AsString);
    reader.Optional("source", &record.source, AsString);
    reader.Optional("external_id", &record.external_id, AsString);
    reader.Optional("state_metadata", &record.state_metadata, AsStateMetadata);
    reader.Optional("metadata", &record.metadata, AsJsonText);
    reader.Optional("relationships", &record.relationships, AsRelationships<ContextRelationship>);
    reader.Optional("expires_at", &record.expires_at_micros, AsTimestamp);
    reader.Optional("retention_policy", &record.retention_policy, AsString);
    reader.Optional("supersedes_id", &record.supersedes_id, AsString);
    STRATA_RETURN_IF_ERROR(reader.status());
    return record;
  });
}

Json ContextRecordToJson(const ContextRecord& record) {
  return {{"id", record.id},
          {"external_id", OrNull(record.external_id)},
          {"run_id", record.run_id},
          {"bot_id", OrNull(record.bot_id)},
          {"session_id", OrNull(record.session_id)},
          {"tenant", OrNull(record.tenant)},
          {"source", OrNull(record.source)},
          {"created_at", json::FormatTimestamp(record.created_at_micros)},
          {"role", record.role},
          {"content_type", record.content_type},
          {"text_payload", OrNull(record.text_payload)},
          {"binary_payload", OptionalBase64(record.binary_payload)},
          {"payload_uri", OrNull(record.payload_uri)},
          {"payload_size", OrNull(record.payload_size)},
          {"payload_checksum", OrNull(record.payload_checksum)},
          {"embedding", OptionalFloat32Array(record.embedding)},
          {"state_metadata", StateMetadataJson(record.state_metadata)},
          {"metadata", OptionalStoredJson(record.metadata)},
          {"relationships", RelationshipsJson(record.relationships)},
          {"expires_at", OptionalTimestamp(record.expires_at_micros)},
          {"retention_policy", OrNull(record.retention_policy)},
          {"lifecycle_status", record.lifecycle_status},
          {"retired_at", OptionalTimestamp(record.retired_at_micros)},
          {"retired_reason", OrNull(record.retired_reason)},
          {"supersedes_id", OrNull(record.supersedes_id)},
          {"superseded_by_id", OrNull(record.superseded_by_id)}};
}

Result<ContextPatch> ContextPatchFromJson(const Json& body, std::string_view where) {
  return Guarded<ContextPatch>(where, [&]() -> Result<ContextPatch> {
    if (!body.is_object()) return TypeError(PathOrBody(where), "an object", body);
    ObjectReader reader(body, std::string(where));
    ContextPatch patch;
    reader.Optional("bot_id", &patch.bot_id, AsString);
    reader.Optional("session_id", &patch.session_id, AsString);
    reader.Optional("tenant", &patch.tenant, AsString);
    reader.Optional("source", &patch.source, AsString);
    reader.Optional("state_metadata", &patch.state_metadata, AsStateMetadata);
    reader.Optional("metadata", &patch.metadata, AsJsonText);
    reader.Optional("relationships", &patch.relationships, AsRelationships<ContextRelationship>);
    reader.Optional("expires_at", &patch.expires_at_micros, AsTimestamp);
    reader.Optional("retention_policy", &patch.retention_policy, AsString);
    reader.Optional("lifecycle_status", &patch.lifecycle_status, AsString);
    reader.Optional("retired_at", &patch.retired_at_micros, AsTimestamp);
    reader.Optional("retired_reason", &patch.retired_reason, AsString);
    reader.Optional("embedding", &patch.embedding, AsFloat32Array);
    reader.Optional("payload_uri", &patch.payload_uri, AsString);
    reader.Optional("payload_size", &patch.payload_size, AsInt64);
    reader.Optional("payload_checksum", &patch.payload_checksum, AsString);
    STRATA_RETURN_IF_ERROR(reader.status());
    return patch;
  });
}

// --- Rollout stores ---------------------------------------------------------------------------

Result<RolloutRecord> RolloutRecordFromJson(const Json& body, int64_t now_micros,
                                            std::string_view where) {
  return Guarded<RolloutRecord>(where, [&]() -> Result<RolloutRecord> {
    if (!body.is_object()) return TypeError(PathOrBody(where), "an object", body);
    ObjectReader reader(body, std::string(where));
    RolloutRecord record;
    record.created_at_micros = now_micros;
    record.relationships.emplace();
    std::optional<std::string> problem_id;
    reader.Required("id", &record.id, AsString, /*non_empty=*/true);
    reader.Required("rollout_id", &record.rollout_id, AsString, /*non_empty=*/true);
    reader.Optional("problem_id", &problem_id, AsString);
    reader.Optional("dataset", &record.dataset, AsString);
    reader.Defaulted("sequence_order", &record.sequence_order, AsInt32);
    reader.Defaulted("role", &record.role, AsString);
    reader.Defaulted("created_at", &record.created_at_micros, AsTimestamp);
    reader.Optional("content", &record.content, AsString);
    reader.Defaulted("content_type", &record.content_type, AsString);
    reader.Optional("model_input_string", &record.model_input_string, AsString);
    reader.Optional("model_output_string", &record.model_output_string, AsString);
    reader.Optional("rationale", &record.rationale, AsString);
    reader.Optional("problem_text", &record.problem_text, AsString);
    reader.Optional("user_metadata", &record.user_metadata, AsTextOrJsonText);
    reader.Optional("input_tokens", &record.input_tokens, AsInt32Array);
    reader.Optional("output_tokens", &record.output_tokens, AsInt32Array);
    reader.Optional("num_input_tokens", &record.num_input_tokens, AsInt32);
    reader.Optional("num_output_tokens", &record.num_output_tokens, AsInt32);
    reader.Optional("output_logprobs", &record.output_logprobs, AsFloat32Array);
    reader.Optional("input_logprobs", &record.input_logprobs, AsFloat32Array);
    reader.Optional("ref_logprobs", &record.ref_logprobs, AsFloat32Array);
    reader.Optional("loss_mask", &record.loss_mask, AsInt8Array);
    reader.Optional("advantage", &record.advantage, AsFloat32);
    reader.Optional("reward", &record.reward, AsFloat32);
    reader.Optional("raw_reward", &record.raw_reward, AsFloat32);
    reader.Optional("grader_id", &record.grader_id, AsString);
    reader.Optional("score", &record.score, AsFloat32);
    reader.Optional("include_in_training", &record.include_in_training, AsBool);
    reader.Optional("exclude_reason", &record.exclude_reason, AsString);
    reader.Optional("policy_version", &record.policy_version, AsString);
    reader.Optional("relationships", &record.relationships, AsRelationships<RolloutRelationship>);
    reader.Optional("binary_payload", &record.binary_payload, AsBase64Bytes);
    reader.Optional("payload_size", &record.payload_size, AsInt64);
    reader.Optional("payload_checksum", &record.payload_checksum, AsString);
    reader.Optional("artifact_type", &record.artifact_type, AsString);
    reader.Optional("metadata", &record.metadata, AsJsonText);
    STRATA_RETURN_IF_ERROR(reader.status());
    record.problem_id = problem_id ? std::move(*problem_id) : record.rollout_id;
    return record;
  });
}

Json RolloutRecordToJson(const RolloutRecord& record) {
  Json out = {{"id", record.id},
              {"rollout_id", record.rollout_id},
              {"problem_id", record.problem_id},
              {"dataset", OrNull(record.dataset)},
              {"sequence_order", record.sequence_order},
              {"role", record.role},
              {"created_at", json::FormatTimestamp(record.created_at_micros)},
              {"content", OrNull(record.content)},
              {"content_type", record.content_type},
              {"model_input_string", OrNull(record.model_input_string)},
              {"model_output_string", OrNull(record.model_output_string)},
              {"rationale", OrNull(record.rationale)},
              {"problem_text", OrNull(record.problem_text)},
              {"user_metadata", OrNull(record.user_metadata)},
              {"input_tokens", OrNull(record.input_tokens)},
              {"output_tokens", OrNull(record.output_tokens)},
              {"num_input_tokens", OrNull(record.num_input_tokens)},
              {"num_output_tokens", OrNull(record.num_output_tokens)},
              {"output_logprobs", OptionalFloat32Array(record.output_logprobs)},
              {"input_logprobs", OptionalFloat32Array(record.input_logprobs)},
              {"ref_logprobs", OptionalFloat32Array(record.ref_logprobs)},
              {"loss_mask", OrNull(record.loss_mask)},
              {"advantage", OptionalFloat32(record.advantage)},
              {"reward", OptionalFloat32(record.reward)},
              {"raw_reward", OptionalFloat32(record.raw_reward)},
              {"grader_id", OrNull(record.grader_id)},
              {"score", OptionalFloat32(record.score)},
              {"include_in_training", OrNull(record.include_in_training)},
              {"exclude_reason", OrNull(record.exclude_reason)},
              {"policy_version", OrNull(record.policy_version)},
              {"relationships", RelationshipsJson(record.relationships)},
              {"payload_size", OrNull(record.payload_size)},
              {"payload_checksum", OrNull(record.payload_checksum)},
              {"artifact_type", OrNull(record.artifact_type)},
              {"metadata", OptionalStoredJson(record.metadata)}};
  if (record.binary_payload) out["binary_payload"] = json::Base64Encode(*record.binary_payload);
  return out;
}

// --- Datagen stores ---------------------------------------------------------------------------

Result<DatagenEvent> DatagenEventFromJson(const Json& body, int64_t now_micros,
                                          std::string_view where) {
  return Guarded<DatagenEvent>(where, [&]() -> Result<DatagenEvent> {
    if (!body.is_object()) return TypeError(PathOrBody(where), "an object", body);
    ObjectReader reader(body, std::string(where));
    DatagenEvent event;
    event.event_ts_micros = now_micros;
    reader.Required("event_id", &event.event_id, AsString);
    reader.Required("item_id", &event.item_id, AsString);
    reader.Required("root_item_id", &event.root_item_id, AsString);
    reader.Optional("parent_item_id", &event.parent_item_id, AsString);
    reader.Required("item_seq", &event.item_seq, AsInt64);
    reader.Required("checkpoint_id", &event.checkpoint_id, AsString);
    reader.Required("event_type", &event.event_type, AsEventType);
    reader.Optional("step_name", &event.step_name, AsString);
    reader.Optional("step_kind", &event.step_kind, AsStepKind);
    reader.Optional("step_index", &event.step_index, AsInt64);
    reader.Optional("enclosing_step", &event.enclosing_step, AsString);
    reader.Optional("selector_step", &event.selector_step, AsString);
    reader.Defaulted("attempt", &event.attempt, AsInt32);
    reader.Required("run_id", &event.run_id, AsString);
    reader.Required("writer_epoch", &event.writer_epoch, AsDecimalString);
    reader.Optional("field_name", &event.field_name, AsString);
    reader.Optional("field_type", &event.field_type, AsString);
    reader.Optional("codec_version", &event.codec_version, AsInt32);
    reader.Optional("value", &event.value, AsDatagenValue);
    reader.Optional("query_tags", &event.query_tags_json, AsJsonText);
    reader.Optional("status", &event.status, AsItemStatus);
    reader.Optional("error_type", &event.error_type, AsString);
    reader.Optional("error_dump", &event.error_dump, AsString);
    reader.Optional("traceback", &event.traceback, AsString);
    reader.Defaulted("event_ts", &event.event_ts_micros, AsTimestamp);
    reader.Defaulted("schema_version", &event.schema_version, AsInt32);
    STRATA_RETURN_IF_ERROR(reader.status());
    return event;
  });
}

Json DatagenEventToJson(const DatagenEvent& event) {
  Json step_kind =
      event.step_kind ? Json(std::string(store::DatagenStepKindName(*event.step_kind))) : Json();
  Json status =
      event.status ? Json(std::string(store::DatagenItemStatusName(*event.status))) : Json();
  return {{"event_id", event.event_id},
          {"item_id", event.item_id},
          {"root_item_id", event.root_item_id},
          {"parent_item_id", OrNull(event.parent_item_id)},
          {"item_seq", event.item_seq},
          {"checkpoint_id", event.checkpoint_id},
          {"event_type", std::string(store::DatagenEventTypeName(event.event_type))},
          {"step_name", OrNull(event.step_name)},
          {"step_kind", std::move(step_kind)},
          {"step_index", OrNull(event.step_index)},
          {"enclosing_step", OrNull(event.enclosing_step)},
          {"selector_step", OrNull(event.selector_step)},
          {"attempt", event.attempt},
          {"run_id", event.run_id},
          {"writer_epoch", event.writer_epoch},
          {"field_name", OrNull(event.field_name)},
          {"field_type", OrNull(event.field_type)},
          {"codec_version", OrNull(event.codec_version)},
          {"value", event.value ? DatagenValueJson(*event.value) : Json()},
          {"query_tags", OptionalStoredJson(event.query_tags_json)},
          {"status", std::move(status)},
          {"error_type", OrNull(event.error_type)},
          {"error_dump", OrNull(event.error_dump)},
          {"traceback", OrNull(event.traceback)},
          {"event_ts", json::FormatTimestamp(event.event_ts_micros)},
          {"schema_version", event.schema_version}};
}

Json DatagenFoldedItemToJson(const store::DatagenFoldedItem& item) {
  Json fields = Json::object();
  for (const auto& [name, state] : item.fields) fields[name] = FieldStateJson(state);
  Json trajectory = Json::array();
  for (const store::DatagenCursor& cursor : item.trajectory) {
    trajectory.push_back(CursorJson(cursor));
  }
  Json started = Json::array();
  for (const store::DatagenStepPosition& position : item.started) {
    started.push_back(PositionJson(position));
  }
  Json completed = Json::array();
  for (const store::DatagenStepPosition& position : item.completed) {
    completed.push_back(PositionJson(position));
  }
  return {{"item_id", item.item_id},
          {"root_item_id", item.root_item_id},
          {"parent_item_id", OrNull(item.parent_item_id)},
          {"status", std::string(store::DatagenItemStatusName(item.status))},
          {"last_item_seq", item.last_item_seq},
          {"last_attempt", item.last_attempt},
          {"fields", std::move(fields)},
          {"trajectory", std::move(trajectory)},
          {"started", std::move(started)},
          {"completed", std::move(completed)},
          {"query_tags", OptionalStoredJson(item.query_tags_json)},
          {"blob_event_ids", item.blob_event_ids}};
}

Json DatagenOverviewToJson(const store::DatagenOverview& overview) {
  Json runs = Json::object();
  for (const auto& [run_id, failures] : overview.failures_by_run) {
    runs[run_id] = {{"failures", failures.failures},
                    {"failures_by_error_type", failures.failures_by_error_type},
                    {"sample_root_item_ids", failures.sample_root_item_ids}};
  }
  return {{"items", overview.items},
          {"running", overview.running},
          {"completed", overview.completed},
          {"filtered", overview.filtered},
          {"failures", overview.failures},
          {"failures_by_error_type", overview.failures_by_error_type},
          {"failures_by_run", std::move(runs)},
          {"completed_steps", overview.completed_steps}};
}

Json DatagenItemFailureToJson(const store::DatagenItemFailure& failure) {
  return {{"at", CursorJson(failure.at)},
          {"run_id", failure.run_id},
          {"attempt", failure.attempt},
          {"error_type", failure.error_type},
          {"error_dump", OrNull(failure.error_dump)},
          {"traceback", OrNull(failure.traceback)}};
}

}  // namespace strata::server
