// Record batches -> lists of Python dicts, one per row, as the HTTP API writes a generic
// store's rows (store::AppendRowsAsJson): only the batch's columns, null values left out,
// binary as base64 strings, timestamps as integer microseconds, NaN and the infinities as
// None, float32 values as the shortest decimal that reads back to them, vectors and lists as
// lists (null elements as None).
//
// With VectorFormat::kNumpy a vector column (fixed_size_list<float32>) is a read-only 1-D
// numpy float32 array instead, a view of the batch's memory (no copy; the array keeps the
// column alive) — or, for a vector holding a null element, a list as above.
#pragma once

#include <pybind11/pybind11.h>

#include <vector>

#include "strata/record_batch.h"

namespace strata::python {

enum class VectorFormat { kList, kNumpy };

// "list" or "numpy"; InvalidRequestError otherwise.
VectorFormat ReadVectorFormat(pybind11::handle value);

pybind11::list RowsToPython(const std::vector<RecordBatch>& batches, VectorFormat vectors);

}  // namespace strata::python
