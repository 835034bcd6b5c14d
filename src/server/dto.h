// The JSON bodies of the HTTP API (the reference's DTOs, shared/reference/lance-context.md
// §4.2) <-> the stores' records. Requests are parsed leniently in the reference's way (unknown
// keys ignored, null the same as absent, documented defaults filled in) and strictly in types:
// a value of the wrong type is InvalidArgument naming the field's path, which `where`
// prefixes ("records[2].embedding: expected an array of numbers, found string \"abc\""; an
// empty `where` names the top level "body"). A missing required field is "<path> is
// required". The parsers never throw. Responses leave out nothing: absent optionals are null
// (two exceptions are marked below). Strings are copied as stored, so dump a response with
// Json::error_handler_t::replace (a stored string need not be UTF-8).
//
// Value forms, both directions:
//   bytes            base64 strings (strict, padded; json::Base64Decode's message on error).
//   timestamps       in: an RFC 3339 string or integer microseconds since the epoch;
//                    out: RFC 3339 in UTC with six fraction digits (json::FormatTimestamp).
//   integers         JSON integers (a number with a zero fraction is taken), range-checked
//                    for int8 / int32 / int64 fields.
//   floats           JSON numbers; float32 fields reject magnitudes beyond float32 and are
//                    written in their shortest float32 form (0.1f as 0.1). NaN and the
//                    infinities are written as the strings "NaN", "Infinity", "-Infinity"
//                    and read back from them, as strata/json.h does.
//   JSON-typed       metadata (context and rollout), query_tags and a datagen "json" value:
//                    in: any JSON value but null, stored as its compact dump — always, also
//                    for a string (the string "x" is stored as the text "\"x\"", as the
//                    reference's serde_json::Value does); out: the stored text parsed back,
//                    or the text as a JSON string when it is not JSON (rows other writers
//                    made). Object keys come back sorted (nlohmann::json, like serde_json).
//   user_metadata    (rollout) a plain string, as the reference's Option<String>: stored and
//                    returned verbatim; any other JSON value is accepted and stored as its
//                    compact dump, and is returned as that text (a string).
//   relationships    arrays of {target_id, relation, weight?}; always an array in responses
//                    ([] when the record holds none), since the reference's DTOs make it a
//                    non-optional list.
//   state_metadata   {step?, active_plan_id?, tokens_used?, custom? (a string)}.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "strata/context_store.h"
#include "strata/datagen_store.h"
#include "strata/rollout_store.h"
#include "strata/status.h"

namespace strata::server {

using Json = nlohmann::json;

// --- Context stores -------------------------------------------------------------------
// AddRecordRequest: role "user", content_type "text/plain", relationships [] by default;
// text_payload, binary_payload, payload_uri, payload_size, payload_checksum, embedding,
// bot_id, session_id, tenant, source, external_id, state_metadata, metadata, expires_at,
// retention_policy, supersedes_id. Nothing else is read, as in the reference: id and run_id
// stay empty (the route sets both) and created_at 0 (ContextStore::Add stamps it), and the
// lifecycle fields keep their defaults (active, nothing retired or superseded) — lifecycle
// changes go through PATCH.
Result<store::ContextRecord> ContextRecordFromJson(const Json& body, std::string_view where);
// RecordDto: every ContextRecord field under its column name (binary_payload null when
// absent; relationships an array).
Json ContextRecordToJson(const store::ContextRecord& record);
// RecordPatchDto: every ContextPatch field, all optional (null = not patched; a patch
// cannot clear a field). An empty patch parses; the route refuses it (ContextPatch::empty).
Result<store::ContextPatch> ContextPatchFromJson(const Json& body, std::string_view where);

// --- Rollout stores -------------------------------------------------------------------
// AddRolloutRequest: id and rollout_id required (missing, null or "" is "<path> is
// required"), problem_id defaults to rollout_id (when absent or null), sequence_order 0, role
// "assistant", created_at now_micros when absent, content_type "text/plain", relationships
// [], binary_payload base64. Every RolloutRecord field is read under its column name, so a
// RolloutRecordToJson body reads back to the same record.
Result<store::RolloutRecord> RolloutRecordFromJson(const Json& body, int64_t now_micros,
                                                   std::string_view where);
// The records of an AddRolloutsRequest body ({"records": [...]}) read straight from its
// bytes, or nullopt when this fast path declines: it returns records only when parsing the
// body as a tree and RolloutRecordFromJson on each element would give the very same ones, and
// declines everything else (any error, duplicate keys, relationships, JSON-valued metadata,
// floats in integer fields, bodies over kFastRolloutBodyMax), which the caller then parses as
// a tree (dto_rollout_fast.cc).
inline constexpr size_t kFastRolloutBodyMax = size_t{64} << 20;
std::optional<std::vector<store::RolloutRecord>> FastRolloutRecords(std::string_view body,
                                                                    int64_t now_micros);
// RolloutRecordDto: every field; binary_payload only when the record holds one (the key is
// left out otherwise, as the reference does for rows read without their blob).
Json RolloutRecordToJson(const store::RolloutRecord& record);

// --- Datagen stores -------------------------------------------------------------------
// DatagenEventDto: every DatagenEvent field under its column name, query_tags_json as
// "query_tags" (a JSON value), enums as their names ("FIELD_SET", "map_reduce", "running").
// Required: event_id, item_id, root_item_id, item_seq, checkpoint_id, event_type, run_id,
// writer_epoch (a string; a JSON integer is taken as its decimal text). Defaults: attempt 0,
// event_ts now_micros, schema_version kDatagenSchemaVersion (the reference requires it; a
// missing one is filled in here). Emptiness and the per-type rules are left to
// DatagenEvent::Validate, which the store runs on append.
//
// A value is {"kind", "value", "bytes", "size", "checksum"} (a response has all five keys,
// null where unused):
//   int / float / bool / str   "value" is a JSON integer / number (or "NaN", "Infinity",
//                              "-Infinity") / boolean / string;
//   json                       "value" is any JSON value but null (stored as its dump);
//   blob                       "bytes" base64 (null in responses of reads without blob bytes),
//                              "size" (default: the length of bytes, else 0; not negative),
//                              "checksum" optional.
// A missing "value" is "<path>: datagen value of kind 'K' is missing 'value'"; an unknown
// kind "<path>.kind: unsupported datagen value kind 'K'".
Result<store::DatagenEvent> DatagenEventFromJson(const Json& body, int64_t now_micros,
                                                 std::string_view where);
Json DatagenEventToJson(const store::DatagenEvent& event);

// FoldedDatagenItemDto: {item_id, root_item_id, parent_item_id, status, last_item_seq,
// last_attempt, fields, trajectory, started, completed, query_tags, blob_event_ids}, where
//   fields          {name: {"mode": "set", "value": <value>, "values": []}
//                         | {"mode": "append", "value": null, "values": [<value>, ...]}}
//                   (the reference's DatagenFieldStateDto; values as in events);
//   trajectory      [{step_name, step_kind, step_index, enclosing_step, selector_step,
//                   item_seq}] in item_seq order (a cursor);
//   started,        [{step_name, step_kind, step_index, enclosing_step, selector_step}]
//   completed       (positions, sorted);
//   blob_event_ids  {field: event_id}.
Json DatagenFoldedItemToJson(const store::DatagenFoldedItem& item);
// DatagenRunOverviewDto: {items, running, completed, filtered, failures,
// failures_by_error_type {type: n}, failures_by_run {run_id: {failures,
// failures_by_error_type, sample_root_item_ids}}, completed_steps {step_name: n}}.
Json DatagenOverviewToJson(const store::DatagenOverview& overview);
// DatagenFailureDto: {at: <cursor>, run_id, attempt, error_type, error_dump, traceback}.
Json DatagenFoldedItemToJson(const store::DatagenFoldedItem& item);
Json DatagenOverviewToJson(const store::DatagenOverview& overview);
Json DatagenItemFailureToJson(const store::DatagenItemFailure& failure);

}  // namespace strata::server
