// Python values <-> datagen events, step positions, field writes and read results
// (include/strata/datagen_store.h), in the dict shapes of lance-context's Python API: its wire
// DTOs with absent optional keys left out (not set to None).
//
// In (mappings; unknown keys are ignored and None is the same as absent, as the HTTP API reads
// JSON):
//   event      every DatagenEvent column under its name, query_tags_json as "query_tags" (any
//              JSON value), enums as their names ("FIELD_SET", "map_reduce", "running").
//              Required: event_id, item_id, root_item_id, item_seq, checkpoint_id, event_type,
//              run_id, writer_epoch (a str; an int is taken as its decimal text)
//              ("events[0].run_id is required"). Defaults: attempt 0, event_ts now (an RFC 3339
//              str, integer microseconds or an aware datetime), schema_version 2. Emptiness and
//              the per-type rules are the store's (DatagenEvent::Validate, run on append).
//   value      {"kind", "value"} for int / float / bool / str / json (any JSON value but
//              None), {"kind": "blob", "bytes", "size"?, "checksum"?} (bytes-like or a base64
//              str; size defaults to len(bytes)).
//   position   {"step_name", "step_kind", "index", "enclosing"?, "selector"?} as the
//              reference's writer takes it; "step_index", "enclosing_step" and
//              "selector_step" (the event columns' names) are taken too.
//   field      {"name", "value", "op"?: "set" | "append" (default "set"), "field_type"?
//              (default: the value's kind), "codec_version"? (default 1)}.
// Bad input throws StatusError(InvalidArgument) naming the value's path, as py_values.h does;
// a value that is not a mapping where one is needed, pybind11's TypeError.
//
// Out: dicts whose optional keys are present only when set —
//   value      {"kind", "value"} or {"kind": "blob", "size", "bytes"? (bytes; only from reads
//              that load blobs), "checksum"?};
//   event      the columns in schema order, event_ts an RFC 3339 str in UTC;
//   folded     {item_id, root_item_id, parent_item_id?, status, last_item_seq, last_attempt,
//              fields {name: {"mode": "set", "value"} | {"mode": "append", "values"}},
//              trajectory [cursor], started? [position], completed? [position], query_tags?,
//              blob_event_ids? {field: event_id}}, where a position is {step_name, step_kind,
//              step_index, enclosing_step?, selector_step?} and a cursor adds item_seq;
//   failure    {at: cursor, run_id, attempt, error_type, error_dump?, traceback?};
//   overview   {items, running, completed, filtered, failures, failures_by_error_type,
//              failures_by_run {run_id: {failures, failures_by_error_type,
//              sample_root_item_ids}}, completed_steps};
//   tree       {"roots": [id], "nodes": {id: {"item": folded, "children": [id]}}}.
// Everything here needs the GIL.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

#include "python/py_values.h"
#include "strata/datagen_store.h"

namespace strata::python {

// One event at `path` ("events[2]"); `now_micros` is the default event_ts.
store::DatagenEvent DatagenEventFromPython(py::handle event, const Path& path, int64_t now_micros);
store::DatagenStepPosition DatagenPositionFromPython(py::handle position, const Path& path);
// A list or tuple of field mappings.
std::vector<store::DatagenFieldWrite> DatagenFieldWritesFromPython(py::handle fields,
                                                                   const Path& path);
// Any JSON value but None, as its compact JSON text (query tags).
std::string DatagenJsonTextFromPython(py::handle value, const Path& path);

py::dict DatagenEventToPython(const store::DatagenEvent& event);
py::dict DatagenFoldedItemToPython(const store::DatagenFoldedItem& item);
py::dict DatagenItemFailureToPython(const store::DatagenItemFailure& failure);
py::dict DatagenOverviewToPython(const store::DatagenOverview& overview);
py::dict DatagenItemTreeToPython(const store::DatagenItemTree& tree);

}  // namespace strata::python
