// Python dicts <-> context records and their patches, for strata.Context
// (python/strata/context.py), which normalises add()'s keyword arguments first (content ->
// text_payload / binary_payload, data_type -> content_type).
//
// In: a mapping per record keyed by the ContextRecord's fields as the HTTP API names them
// (docs/server.md): id, external_id, run_id, bot_id, session_id, tenant, source, created_at,
// role, state_metadata {step, active_plan_id, tokens_used, custom}, metadata (any JSON value,
// stored as compact JSON with sorted keys), relationships [{target_id, relation, weight?}],
// expires_at, retention_policy, lifecycle_status, retired_at, retired_reason, supersedes_id,
// superseded_by_id, content_type, text_payload, binary_payload (bytes-like), payload_uri,
// payload_size, payload_checksum, embedding (a list or a 1-D numpy array). None is the same
// as absent; an unknown key is InvalidArgument naming it. Timestamps: RFC 3339 strings,
// integer microseconds or timezone-aware datetimes.
//
// Out: the reference's record dict (lance-context §5.1): id, external_id, run_id, bot_id,
// session_id, tenant, source, role, content_type, text, binary, payload_uri, payload_size,
// payload_checksum, embedding (a numpy float32 array), created_at (a UTC datetime),
// state_metadata, metadata (the stored JSON parsed), relationships (a list), expires_at,
// retention_policy, lifecycle_status, retired_at, retired_reason, supersedes_id,
// superseded_by_id.
#pragma once

#include <pybind11/pybind11.h>

#include "python/py_values.h"
#include "strata/context_store.h"

namespace strata::python {

// Reads one record at `path` ("records[2]").
store::ContextRecord ContextRecordFromPython(py::handle record, const Path& path);

// Reads an update's fields (the keys ContextPatch has; anything else is refused by name).
store::ContextPatch ContextPatchFromPython(py::handle fields, const Path& path);

// Moves the record's vectors and strings into the dict.
py::dict ContextRecordToPython(store::ContextRecord record);

}  // namespace strata::python
