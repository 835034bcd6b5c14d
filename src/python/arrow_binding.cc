// strata._strata.columns_to_arrow_stream: table columns from Python (numpy arrays or lists of
// Python values) as Arrow IPC stream bytes, written by strata's own IPC writer
// (include/strata/ipc.h) — how strata.Context stores a pandas DataFrame without pyarrow.
//
// A column is (name, values, timezone):
//   - values a 1-D numpy array of a bool, integer or float dtype: that Arrow type, read
//     straight from the array's memory (float NaN becomes null, as pyarrow's from_pandas does);
//   - timezone not None: values are int64 microseconds since the epoch (a numpy array), the
//     column a timestamp[us] in that time zone ("" for none); INT64_MIN (NaT) is null;
//   - values a list: None is null; all bool -> bool, all int -> int64, int and float -> float64,
//     str -> utf8, bytes-like -> binary; anything else is InvalidArgument naming the column.
#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "python/bindings.h"
#include "python/errors.h"
#include "python/gil.h"
#include "python/py_values.h"
#include "strata/builder.h"
#include "strata/ipc.h"
#include "strata/record_batch.h"
#include "strata/type.h"

namespace py = pybind11;

namespace strata::python {
namespace {

using Column = std::tuple<std::string, py::object, std::optional<std::string>>;

template <typename T>
Array NumpyColumn(const DataTypePtr& type, const py::array& values, bool nan_is_null,
                  std::optional<T> null_value) {
  auto contiguous = py::array_t<T, py::array::c_style | py::array::forcecast>::ensure(values);
  if (!contiguous) {
    ThrowInvalid(fmt::format("a {} column needs numeric values", type->ToString()));
  }
  NumericBuilder<T> builder(type);
  const T* data = contiguous.data();
  const int64_t n = contiguous.size();
  builder.Reserve(n);
  for (int64_t i = 0; i < n; ++i) {
    const T v = data[i];
    bool is_null = null_value && v == *null_value;
    if constexpr (std::is_floating_point_v<T>) is_null = nan_is_null && std::isnan(v);
    if (is_null) {
      builder.AppendNull();
    } else {
      builder.Append(v);
    }
  }
  return ValueOrThrow(builder.Finish());
}

std::pair<DataTypePtr, Array> FromNumpy(const std::string& name, const py::array& a) {
  if (a.ndim() != 1) {
    ThrowInvalid(
        fmt::format("column '{}': expected a 1-D array, found {} dimensions", name, a.ndim()));
  }
  const char kind = a.dtype().kind();
  const ssize_t size = a.dtype().itemsize();
  if (kind == 'b') {
    auto b = py::array_t<bool, py::array::c_style | py::array::forcecast>::ensure(a);
    BooleanBuilder builder;
    for (ssize_t i = 0; i < b.size(); ++i) builder.Append(b.data()[i]);
    return {boolean(), ValueOrThrow(builder.Finish())};
  }
  if (kind == 'i' || kind == 'u') {
    const bool u = kind == 'u';
    switch (size) {
      case 1:
        return u ? std::pair{uint8(), NumpyColumn<uint8_t>(uint8(), a, false, std::nullopt)}
                 : std::pair{int8(), NumpyColumn<int8_t>(int8(), a, false, std::nullopt)};
      case 2:
        return u ? std::pair{uint16(), NumpyColumn<uint16_t>(uint16(), a, false, std::nullopt)}
                 : std::pair{int16(), NumpyColumn<int16_t>(int16(), a, false, std::nullopt)};
      case 4:
        return u ? std::pair{uint32(), NumpyColumn<uint32_t>(uint32(), a, false, std::nullopt)}
                 : std::pair{int32(), NumpyColumn<int32_t>(int32(), a, false, std::nullopt)};
      case 8:
        return u ? std::pair{uint64(), NumpyColumn<uint64_t>(uint64(), a, false, std::nullopt)}
                 : std::pair{int64(), NumpyColumn<int64_t>(int64(), a, false, std::nullopt)};
      default:
        break;
    }
  }
  if (kind == 'f' && (size == 4 || size == 8)) {
    return size == 4 ? std::pair{float32(), NumpyColumn<float>(float32(), a, true, std::nullopt)}
                     : std::pair{float64(), NumpyColumn<double>(float64(), a, true, std::nullopt)};
  }
  ThrowInvalid(fmt::format("column '{}': unsupported numpy dtype {}", name,
                           py::str(a.dtype()).cast<std::string>()));
}

std::pair<DataTypePtr, Array> FromObjects(const std::string& name, const py::list& values) {
  enum class Kind { kNone, kBool, kInt, kFloat, kText, kBytes };
  Kind kind = Kind::kNone;
  for (py::handle v : values) {
    Kind k = Kind::kNone;
    if (v.is_none()) continue;
    if (PyBool_Check(v.ptr())) {
      k = Kind::kBool;
    } else if (PyLong_Check(v.ptr())) {
      k = Kind::kInt;
    } else if (PyFloat_Check(v.ptr())) {
      k = Kind::kFloat;
    } else if (PyUnicode_Check(v.ptr())) {
      k = Kind::kText;
    } else if (PyBytes_Check(v.ptr()) || PyByteArray_Check(v.ptr()) ||
               PyMemoryView_Check(v.ptr())) {
      k = Kind::kBytes;
    } else {
      ThrowInvalid(fmt::format("column '{}': values of type {} cannot be stored as Arrow", name,
                               Py_TYPE(v.ptr())->tp_name));
    }
    if (kind == Kind::kNone || kind == k) {
      kind = k;
    } else if ((kind == Kind::kInt && k == Kind::kFloat) ||
               (kind == Kind::kFloat && k == Kind::kInt)) {
      kind = Kind::kFloat;
    } else {
      ThrowInvalid(fmt::format("column '{}' mixes values of different types", name));
    }
  }
  const Path path(name);
  switch (kind) {
    case Kind::kBool: {
      BooleanBuilder b;
      for (py::handle v : values) v.is_none() ? b.AppendNull() : b.Append(v.ptr() == Py_True);
      return {boolean(), ValueOrThrow(b.Finish())};
    }
    case Kind::kInt: {
      Int64Builder b(int64());
      for (py::handle v : values) {
        if (v.is_none()) {
          b.AppendNull();
        } else {
          b.Append(ReadInteger(v, path, std::numeric_limits<int64_t>::min(),
                               std::numeric_limits<int64_t>::max(), "a 64-bit integer"));
        }
      }
      return {int64(), ValueOrThrow(b.Finish())};
    }
    case Kind::kFloat: {
      NumericBuilder<double> b(float64());
      for (py::handle v : values) {
        if (v.is_none()) {
          b.AppendNull();
        } else {
          b.Append(ReadNumber(v, path));
        }
      }
      return {float64(), ValueOrThrow(b.Finish())};
    }
    case Kind::kBytes: {
      BinaryBuilder b(binary());
      for (py::handle v : values) {
        if (v.is_none()) {
          b.AppendNull();
        } else {
          ThrowIfError(b.Append(ReadBytes(v, path)));
        }
      }
      return {binary(), ValueOrThrow(b.Finish())};
    }
    case Kind::kNone:
    case Kind::kText: {
      BinaryBuilder b(utf8());
      for (py::handle v : values) {
        if (v.is_none()) {
          b.AppendNull();
        } else {
          ThrowIfError(b.Append(ReadString(v, path)));
        }
      }
      return {utf8(), ValueOrThrow(b.Finish())};
    }
  }
  ThrowInvalid("unreachable");
}

py::bytes ColumnsToArrowStream(const std::vector<Column>& columns) {
  std::vector<FieldPtr> fields;
  std::vector<Array> arrays;
  std::optional<int64_t> rows;
  for (const auto& [name, values, timezone] : columns) {
    std::pair<DataTypePtr, Array> column;
    if (timezone) {
      const DataTypePtr type = timestamp_us(*timezone);
      column = {type, NumpyColumn<int64_t>(type, py::array(values), false,
                                           std::numeric_limits<int64_t>::min())};
    } else if (py::isinstance<py::array>(values)) {
      column = FromNumpy(name, py::array(values));
    } else if (py::isinstance<py::list>(values)) {
      column = FromObjects(name, py::list(values));
    } else {
      throw py::type_error(fmt::format("column '{}': expected a numpy array or a list, found {}",
                                       name, Py_TYPE(values.ptr())->tp_name));
    }
    if (rows && *rows != column.second.length()) {
      ThrowInvalid(fmt::format("column '{}' has {} rows, the first column {}", name,
                               column.second.length(), *rows));
    }
    rows = column.second.length();
    fields.push_back(field(name, column.first));
    arrays.push_back(std::move(column.second));
  }
  const SchemaPtr s = schema(std::move(fields));
  const RecordBatch batch = ValueOrThrow(RecordBatch::Make(s, rows.value_or(0), std::move(arrays)));
  Result<Buffer> written = Status::Internal("not written");
  {
    WithoutGil without_gil;
    written = ipc::WriteStreamToBuffer(s, {batch});
  }
  const Buffer buffer = ValueOrThrow(std::move(written));
  return py::bytes(reinterpret_cast<const char*>(buffer.data()),
                   static_cast<size_t>(buffer.size()));
}

}  // namespace

void BindArrow(py::module_& m) {
  m.def("columns_to_arrow_stream", &ColumnsToArrowStream, py::arg("columns"),
        "[(name, values, timezone)] -> Arrow IPC stream bytes of one record batch.");
}

}  // namespace strata::python
