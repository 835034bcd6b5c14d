// Record batches -> Python dicts (batch_rows.h).
#include "python/batch_rows.h"

#include <fmt/format.h>
#include <pybind11/numpy.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>

#include "python/errors.h"
#include "python/py_values.h"
#include "strata/json.h"

namespace py = pybind11;

namespace strata::python {
namespace {

// Values of one column; `owner` is the capsule numpy views of the column's vectors share.
class ColumnReader {
 public:
  ColumnReader(const Array& column, VectorFormat vectors) : column_(column), vectors_(vectors) {
    if (vectors_ == VectorFormat::kNumpy && column_.type_id() == TypeId::kFixedSizeList &&
        column_.values_array().type_id() == TypeId::kFloat32) {
      // One capsule per column holds the element array alive for every view of it.
      auto* held = new ArrayDataPtr(column_.values_array().data());
      owner_ = py::capsule(held, [](void* p) { delete static_cast<ArrayDataPtr*>(p); });
    }
  }

  py::object Value(int64_t i) const { return ValueOf(column_, i, /*top=*/true); }

 private:
  py::object ValueOf(const Array& a, int64_t i, bool top) const {
    if (a.IsNull(i)) return py::none();
    switch (a.type_id()) {
      case TypeId::kBool:
        return py::bool_(a.BoolValue(i));
      case TypeId::kInt8:
        return py::int_(a.Value<int8_t>(i));
      case TypeId::kInt16:
        return py::int_(a.Value<int16_t>(i));
      case TypeId::kInt32:
        return py::int_(a.Value<int32_t>(i));
      case TypeId::kInt64:
      case TypeId::kTimestamp:
        return py::int_(a.Value<int64_t>(i));
      case TypeId::kUInt8:
        return py::int_(a.Value<uint8_t>(i));
      case TypeId::kUInt16:
        return py::int_(a.Value<uint16_t>(i));
      case TypeId::kUInt32:
        return py::int_(a.Value<uint32_t>(i));
      case TypeId::kUInt64:
        return py::int_(a.Value<uint64_t>(i));
      case TypeId::kFloat32: {
        const float v = a.Value<float>(i);
        return std::isfinite(v) ? py::object(Float32ToPython(v)) : py::none();
      }
      case TypeId::kFloat64: {
        const double v = a.Value<double>(i);
        return std::isfinite(v) ? py::object(py::float_(v)) : py::none();
      }
      case TypeId::kUtf8:
      case TypeId::kLargeUtf8:
        return TextToPython(a.StringValue(i));
      case TypeId::kBinary:
      case TypeId::kLargeBinary:
        return TextToPython(json::Base64Encode(a.StringValue(i)));
      case TypeId::kFixedSizeList:
        if (top && owner_) {
          if (py::object view = VectorView(i)) return view;
        }
        [[fallthrough]];
      case TypeId::kList:
      case TypeId::kLargeList: {
        const auto [begin, end] = a.ValueRange(i);
        const Array values = a.values_array();
        py::list out(static_cast<size_t>(end - begin));
        for (int64_t j = begin; j < end; ++j) {
          out[static_cast<size_t>(j - begin)] = ValueOf(values, j, false);
        }
        return out;
      }
      case TypeId::kStruct: {
        py::dict out;
        const auto& fields = a.type()->fields();
        for (size_t k = 0; k < fields.size(); ++k) {
          out[TextToPython(fields[k]->name())] = ValueOf(a.field(static_cast<int>(k)), i, false);
        }
        return out;
      }
      case TypeId::kDictionary:
        return ValueOf(a.dictionary(), a.DictionaryIndex(i), false);
    }
    return py::none();
  }

  // A read-only numpy view of vector `i`; a null object when an element is null.
  py::object VectorView(int64_t i) const {
    const auto [begin, end] = column_.ValueRange(i);
    const Array values = column_.values_array();
    if (values.null_count() != 0) {
      for (int64_t j = begin; j < end; ++j) {
        if (values.IsNull(j)) return py::object();
      }
    }
    const float* data = values.values<float>() + begin;
    py::array_t<float> view({static_cast<py::ssize_t>(end - begin)},
                            {static_cast<py::ssize_t>(sizeof(float))}, data, owner_);
    // The memory is the store's: numpy must not write to it.
    py::detail::array_proxy(view.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
    return view;
  }

  const Array& column_;
  VectorFormat vectors_;
  py::capsule owner_;
};

}  // namespace

VectorFormat ReadVectorFormat(py::handle value) {
  const std::string text = ReadString(value, Path("vectors"));
  if (text == "list") return VectorFormat::kList;
  if (text == "numpy") return VectorFormat::kNumpy;
  ThrowInvalid(fmt::format("vectors: expected 'list' or 'numpy', found '{}'", text));
}

py::list RowsToPython(const std::vector<RecordBatch>& batches, VectorFormat vectors) {
  py::list out;
  for (const RecordBatch& batch : batches) {
    std::vector<py::str> names;
    std::vector<ColumnReader> readers;
    names.reserve(static_cast<size_t>(batch.num_columns()));
    readers.reserve(static_cast<size_t>(batch.num_columns()));
    for (int c = 0; c < batch.num_columns(); ++c) {
      names.push_back(TextToPython(batch.schema()->field(c)->name()));
      readers.emplace_back(batch.column(c), vectors);
    }
    for (int64_t row = 0; row < batch.num_rows(); ++row) {
      py::dict item;
      for (int c = 0; c < batch.num_columns(); ++c) {
        if (batch.column(c).IsNull(row)) continue;
        item[names[static_cast<size_t>(c)]] = readers[static_cast<size_t>(c)].Value(row);
      }
      out.append(std::move(item));
    }
  }
  return out;
}

}  // namespace strata::python
