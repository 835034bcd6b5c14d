// The JSON bodies of the HTTP API (the reference's DTOs, shared/reference/lance-context.md
// §4.2) <-> the stores' records. Requests are parsed leniently in the reference's way (unknown
// keys ignored, documented defaults filled in) and strictly in types: a value of the wrong
// type is InvalidArgument naming the field ("records[2].embedding: expected an array of
// numbers"); `where` prefixes every message ("records[2]"). Binary fields are base64 (strict,
// padded); timestamps are RFC 3339 on the way out and RFC 3339 (or integer microseconds) on
// the way in; JSON-typed fields (metadata, user_metadata, query_tags) are JSON values in the
// body and JSON text in the store. Responses leave out nothing: absent optionals are null.
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
// AddRecordRequest (no id, no run_id: the route sets both): role "user", content_type
// "text/plain", relationships [] by default; binary_payload base64; expires_at RFC 3339.
Result<store::ContextRecord> ContextRecordFromJson(const Json& body, std::string_view where);
// RecordDto: every ContextRecord field under its column name.
Json ContextRecordToJson(const store::ContextRecord& record);
// RecordPatchDto: every ContextPatch field, all optional (null = not patched).
Result<store::ContextPatch> ContextPatchFromJson(const Json& body, std::string_view where);

// --- Rollout stores -------------------------------------------------------------------
// AddRolloutRequest: id required (client-supplied), rollout_id (problem_id defaults to it),
// sequence_order 0, role "assistant", created_at now_micros when absent, content_type
// "text/plain", relationships [], binary_payload base64.
Result<store::RolloutRecord> RolloutRecordFromJson(const Json& body, int64_t now_micros,
                                                   std::string_view where);
// RolloutRecordDto (binary_payload only when the record holds one).
Json RolloutRecordToJson(const store::RolloutRecord& record);

// --- Datagen stores -------------------------------------------------------------------
// DatagenEventDto: writer_epoch as a decimal string, value {kind, value?, bytes? (base64),
// size?, checksum?}, event_ts now_micros when absent, attempt 0.
Result<store::DatagenEvent> DatagenEventFromJson(const Json& body, int64_t now_micros,
                                                 std::string_view where);
Json DatagenEventToJson(const store::DatagenEvent& event);
// FoldedDatagenItemDto, DatagenRunOverviewDto and the failures list.
Json DatagenFoldedItemToJson(const store::DatagenFoldedItem& item);
Json DatagenOverviewToJson(const store::DatagenOverview& overview);
Json DatagenItemFailureToJson(const store::DatagenItemFailure& failure);

}  // namespace strata::server
