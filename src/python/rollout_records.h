// Python dicts <-> rollout records, as the HTTP API reads an AddRolloutRequest and writes a
// RolloutRecordDto (docs/server.md), so an embedded store and a remote one take the same dicts
// and give back the same ones.
//
// In: a mapping per record. Keys are the column names; unknown keys and None values are
// ignored (None is the same as absent). `id` is generated (a random UUID, version 4) when
// absent; `rollout_id` is required ("records[I].rollout_id is required"); problem_id defaults
// to rollout_id, sequence_order to 0, role to "assistant", created_at to the call's time,
// content_type to "text/plain". Values: strings for the text columns, ints for the integer
// ones, numbers for the float32 ones, a bool for include_in_training, lists / tuples / 1-D
// numpy arrays for the token, logprob and loss-mask lists, bytes (or a base64 string) for
// binary_payload, an RFC 3339 string, integer microseconds or a timezone-aware datetime for
// created_at, any JSON value for metadata (stored as compact JSON with sorted keys),
// a string (stored as is) or any JSON value for user_metadata, and a list of
// {target_id, relation, weight?} mappings for relationships.
//
// Out: a dict of every column but binary_payload (reads never return it: get_blob does), in
// schema order; absent values are None, created_at an RFC 3339 string in UTC, float32 values
// the shortest decimal that reads back to them, metadata the stored JSON parsed (or the text,
// when a row holds text that is not JSON), relationships always a list.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "python/py_values.h"
#include "strata/rollout_store.h"

namespace strata::python {

// Reads one record at `path` ("records[2]"). Throws StatusError(InvalidArgument) for a bad
// value and pybind11's TypeError for a record that is not a mapping.
store::RolloutRecord RolloutRecordFromPython(py::handle record, const Path& path,
                                             int64_t now_micros);

py::dict RolloutRecordToPython(const store::RolloutRecord& record);

// The wall clock, in microseconds since the Unix epoch (defaults of new records).
int64_t WallMicros();

}  // namespace strata::python
