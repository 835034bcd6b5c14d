// The fast path of an AddRolloutsRequest body: simdjson's DOM (a validated tape, built at
// GB/s) read straight into RolloutRecords, instead of an nlohmann tree of maps and strings
// converted field by field (most of the HTTP side's CPU per row in strata-server-bench).
//
// Exactness rule: it returns records only when RolloutRecordFromJson would return the very
// same ones; anything it is not sure about (an error of any kind, duplicate keys, a value the
// tree path would convert in its own way) declines, and the caller parses the tree, which also
// writes the error messages. dto_test checks the rule on fixed and random bodies.
#include <simdjson.h>

#include <bitset>
#include <cmath>
#include <limits>

#include "server/dto.h"
#include "strata/json.h"

namespace strata::server {

namespace {

namespace sj = simdjson;

// Set to false by any value the fast path declines.
struct Reader {
  bool ok = true;

  // A string, or nullopt for null; declines other types.
  std::optional<std::string_view> String(sj::dom::element v) {
    if (v.is_null()) return std::nullopt;
    std::string_view s;
    if (v.get_string().get(s) != sj::SUCCESS) ok = false;
    return s;
  }
  // An integer in [min, max]; declines floats (the tree path takes 3.0 as 3), integers past
  // int64 and the rest.
  std::optional<int64_t> Integer(sj::dom::element v, int64_t min, int64_t max) {
    if (v.is_null()) return std::nullopt;
    int64_t n = 0;
    if (v.type() != sj::dom::element_type::INT64 || v.get_int64().get(n) != sj::SUCCESS ||
        n < min || n > max) {
      ok = false;
      return std::nullopt;
    }
    return n;
  }
  // A number as a float32, converted as the tree path does (integers through int64 / uint64
  // to double, then to float); declines -0.0 (the tree path reads "-0" as the integer 0),
  // strings ("NaN") and values out of float range.
  std::optional<float> Float(sj::dom::element v) {
    if (v.is_null()) return std::nullopt;
    double d = 0;
    bool read = false;
    switch (v.type()) {
      case sj::dom::element_type::INT64: {
        int64_t i = 0;
        read = v.get_int64().get(i) == sj::SUCCESS;
        d = static_cast<double>(i);
        break;
      }
      case sj::dom::element_type::UINT64: {
        uint64_t u = 0;
        read = v.get_uint64().get(u) == sj::SUCCESS;
        d = static_cast<double>(u);
        break;
      }
      case sj::dom::element_type::DOUBLE:
        read = v.get_double().get(d) == sj::SUCCESS && !(d == 0 && std::signbit(d));
        break;
      default:
        break;
    }
    if (!read || std::fabs(d) > std::numeric_limits<float>::max()) {
      ok = false;
      return std::nullopt;
    }
    return static_cast<float>(d);
  }
  std::optional<bool> Bool(sj::dom::element v) {
    if (v.is_null()) return std::nullopt;
    bool b = false;
    if (v.get_bool().get(b) != sj::SUCCESS) ok = false;
    return b;
  }
  // An array of `read(element)`; declines null elements (the tree path's message) and
  // anything `read` declines.
  template <typename T, typename Read>
  std::optional<std::vector<T>> Array(sj::dom::element v, const Read& read) {
    if (v.is_null()) return std::nullopt;
    sj::dom::array a;
    if (v.get_array().get(a) != sj::SUCCESS) {
      ok = false;
      return std::nullopt;
    }
    std::vector<T> out;
    out.reserve(a.size());
    for (sj::dom::element e : a) {
      if (e.is_null()) {
        ok = false;
        return std::nullopt;
      }
      std::optional<T> element = read(e);
      if (!ok || !element) {
        ok = false;
        return std::nullopt;
      }
      out.push_back(*element);
    }
    return out;
  }
  template <typename T>
  std::optional<std::vector<T>> IntArray(sj::dom::element v) {
    return Array<T>(v, [this](sj::dom::element e) -> std::optional<T> {
      std::optional<int64_t> n =
          Integer(e, std::numeric_limits<T>::min(), std::numeric_limits<T>::max());
      if (!n) return std::nullopt;
      return static_cast<T>(*n);
    });
  }
  std::optional<std::vector<float>> FloatArray(sj::dom::element v) {
    return Array<float>(v, [this](sj::dom::element e) { return Float(e); });
  }
};

template <typename T>
void Set(std::optional<T> value, std::optional<T>* out) {
  if (value) *out = std::move(value);
}
template <typename T>
void Set(std::optional<T> value, T* out) {
  if (value) *out = std::move(*value);
}
void Set(std::optional<std::string_view> value, std::optional<std::string>* out) {
  if (value) *out = std::string(*value);
}
void Set(std::optional<std::string_view> value, std::string* out) {
  if (value) *out = std::string(*value);
}

// The fields RolloutRecordFromJson reads, for the duplicate-key check.
enum Field {
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
  kFieldCount
};

struct FieldName {
  std::string_view name;
  Field field;
};
constexpr FieldName kFields[] = {{"id", kId},
                                 {"rollout_id", kRolloutId},
                                 {"problem_id", kProblemId},
                                 {"dataset", kDataset},
                                 {"sequence_order", kSequenceOrder},
                                 {"role", kRole},
                                 {"created_at", kCreatedAt},
                                 {"content", kContent},
                                 {"content_type", kContentType},
                                 {"model_input_string", kModelInputString},
                                 {"model_output_string", kModelOutputString},
                                 {"rationale", kRationale},
                                 {"problem_text", kProblemText},
                                 {"user_metadata", kUserMetadata},
                                 {"input_tokens", kInputTokens},
                                 {"output_tokens", kOutputTokens},
                                 {"num_input_tokens", kNumInputTokens},
                                 {"num_output_tokens", kNumOutputTokens},
                                 {"output_logprobs", kOutputLogprobs},
                                 {"input_logprobs", kInputLogprobs},
                                 {"ref_logprobs", kRefLogprobs},
                                 {"loss_mask", kLossMask},
                                 {"advantage", kAdvantage},
                                 {"reward", kReward},
                                 {"raw_reward", kRawReward},
                                 {"grader_id", kGraderId},
                                 {"score", kScore},
                                 {"include_in_training", kIncludeInTraining},
                                 {"exclude_reason", kExcludeReason},
                                 {"policy_version", kPolicyVersion},
                                 {"relationships", kRelationships},
                                 {"binary_payload", kBinaryPayload},
                                 {"payload_size", kPayloadSize},
                                 {"payload_checksum", kPayloadChecksum},
                                 {"artifact_type", kArtifactType},
                                 {"metadata", kMetadata}};

std::optional<Field> FieldOf(std::string_view key) {
  for (const FieldName& f : kFields) {
    if (f.name == key) return f.field;
  }
  return std::nullopt;
}

constexpr size_t kKeptParserBytes = size_t{256} << 10;

constexpr int32_t kI32Min = std::numeric_limits<int32_t>::min();
constexpr int32_t kI32Max = std::numeric_limits<int32_t>::max();

// One record, or nullopt (declined).
std::optional<store::RolloutRecord> FastRecord(sj::dom::element value, int64_t now_micros) {
  sj::dom::object object;
  if (value.get_object().get(object) != sj::SUCCESS) return std::nullopt;
  Reader r;
  store::RolloutRecord record;
  record.created_at_micros = now_micros;
  record.relationships.emplace();
  std::optional<std::string> problem_id;
  std::bitset<kFieldCount> seen;
  for (sj::dom::key_value_pair kv : object) {
    const std::optional<Field> field = FieldOf(kv.key);
    if (!field) continue;  // the tree path ignores unknown keys too
    if (seen.test(*field)) return std::nullopt;
    seen.set(*field);
    const sj::dom::element v = kv.value;
    switch (*field) {
      case kId:
        Set(r.String(v), &record.id);
        break;
      case kRolloutId:
        Set(r.String(v), &record.rollout_id);
        break;
      case kProblemId:
        Set(r.String(v), &problem_id);
        break;
      case kDataset:
        Set(r.String(v), &record.dataset);
        break;
      case kSequenceOrder: {
        std::optional<int64_t> n = r.Integer(v, kI32Min, kI32Max);
        if (n) record.sequence_order = static_cast<int32_t>(*n);
        break;
      }
      case kRole:
        Set(r.String(v), &record.role);
        break;
      case kCreatedAt: {
        if (v.is_null()) break;
        std::string_view text;
        if (v.get_string().get(text) == sj::SUCCESS) {
          Result<int64_t> micros = json::ParseTimestamp(text);
          if (!micros.ok()) return std::nullopt;
          record.created_at_micros = *micros;
        } else {
          std::optional<int64_t> n = r.Integer(v, std::numeric_limits<int64_t>::min(),
                                               std::numeric_limits<int64_t>::max());
          if (n) record.created_at_micros = *n;
        }
        break;
      }
      case kContent:
        Set(r.String(v), &record.content);
        break;
      case kContentType:
        Set(r.String(v), &record.content_type);
        break;
      case kModelInputString:
        Set(r.String(v), &record.model_input_string);
        break;
      case kModelOutputString:
        Set(r.String(v), &record.model_output_string);
        break;
      case kRationale:
        Set(r.String(v), &record.rationale);
        break;
      case kProblemText:
        Set(r.String(v), &record.problem_text);
        break;
      case kUserMetadata:
        // A string is kept verbatim; other values are stored as the tree's own dump.
        Set(r.String(v), &record.user_metadata);
        break;
      case kInputTokens:
        Set(r.IntArray<int32_t>(v), &record.input_tokens);
        break;
      case kOutputTokens:
        Set(r.IntArray<int32_t>(v), &record.output_tokens);
        break;
      case kNumInputTokens: {
        std::optional<int64_t> n = r.Integer(v, kI32Min, kI32Max);
        if (n) record.num_input_tokens = static_cast<int32_t>(*n);
        break;
      }
      case kNumOutputTokens: {
        std::optional<int64_t> n = r.Integer(v, kI32Min, kI32Max);
        if (n) record.num_output_tokens = static_cast<int32_t>(*n);
        break;
      }
      case kOutputLogprobs:
        Set(r.FloatArray(v), &record.output_logprobs);
        break;
      case kInputLogprobs:
        Set(r.FloatArray(v), &record.input_logprobs);
        break;
      case kRefLogprobs:
        Set(r.FloatArray(v), &record.ref_logprobs);
        break;
      case kLossMask:
        Set(r.IntArray<int8_t>(v), &record.loss_mask);
        break;
      case kAdvantage:
        Set(r.Float(v), &record.advantage);
        break;
      case kReward:
        Set(r.Float(v), &record.reward);
        break;
      case kRawReward:
        Set(r.Float(v), &record.raw_reward);
        break;
      case kGraderId:
        Set(r.String(v), &record.grader_id);
        break;
      case kScore:
        Set(r.Float(v), &record.score);
        break;
      case kIncludeInTraining:
        Set(r.Bool(v), &record.include_in_training);
        break;
      case kExcludeReason:
        Set(r.String(v), &record.exclude_reason);
        break;
      case kPolicyVersion:
        Set(r.String(v), &record.policy_version);
        break;
      case kBinaryPayload: {
        std::optional<std::string_view> text = r.String(v);
        if (!text) break;
        Result<std::string> bytes = json::Base64Decode(*text);
        if (!bytes.ok()) return std::nullopt;
        record.binary_payload = std::move(bytes).value();
        break;
      }
      case kPayloadSize: {
        std::optional<int64_t> n =
            r.Integer(v, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
        if (n) record.payload_size = *n;
        break;
      }
      case kPayloadChecksum:
        Set(r.String(v), &record.payload_checksum);
        break;
      case kArtifactType:
        Set(r.String(v), &record.artifact_type);
        break;
      case kRelationships: {
        // Only none: relationships take the tree path.
        sj::dom::array a;
        if (v.is_null()) break;
        if (v.get_array().get(a) != sj::SUCCESS || a.size() != 0) return std::nullopt;
        break;
      }
      case kMetadata:
        // JSON-valued metadata is stored as the tree's own dump: the tree path.
        if (!v.is_null()) return std::nullopt;
        break;
      case kFieldCount:
        break;
    }
    if (!r.ok) return std::nullopt;
  }
  if (record.id.empty() || record.rollout_id.empty()) return std::nullopt;  // "... is required"
  record.problem_id = problem_id ? std::move(*problem_id) : record.rollout_id;
  return record;
}

}  // namespace

std::optional<std::vector<store::RolloutRecord>> FastRolloutRecords(std::string_view body,
                                                                    int64_t now_micros) {
  // A parser holds ~14 bytes per byte of the largest document it parsed: each worker thread
  // keeps one for ordinary bodies; larger ones get a parser of their own, the largest none.
  if (body.size() > kFastRolloutBodyMax) return std::nullopt;
  thread_local sj::dom::parser kept(kKeptParserBytes);
  std::optional<sj::dom::parser> own;
  sj::dom::parser* parser = &kept;
  if (body.size() > kKeptParserBytes) parser = &own.emplace(body.size());
  sj::dom::element root;
  if (parser->parse(body.data(), body.size()).get(root) != sj::SUCCESS) return std::nullopt;
  sj::dom::object top;
  if (root.get_object().get(top) != sj::SUCCESS) return std::nullopt;
  std::optional<sj::dom::array> records;
  for (sj::dom::key_value_pair kv : top) {
    if (kv.key != "records") continue;
    if (records) return std::nullopt;  // a duplicate key: the tree keeps the last one
    sj::dom::array a;
    if (kv.value.get_array().get(a) != sj::SUCCESS) return std::nullopt;
    records = a;
  }
  if (!records || records->size() == 0) return std::nullopt;
  std::vector<store::RolloutRecord> out;
  out.reserve(records->size());
  for (sj::dom::element e : *records) {
    std::optional<store::RolloutRecord> record = FastRecord(e, now_micros);
    if (!record) return std::nullopt;
    out.push_back(std::move(*record));
  }
  return out;
}

}  // namespace strata::server
