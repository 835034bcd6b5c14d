// Python values <-> record and JSON values (py_values.h).
#include "python/py_values.h"

#include <fmt/format.h>
#include <pybind11/numpy.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <system_error>

#include "python/errors.h"
#include "strata/json.h"

namespace strata::python {
namespace {

// Python objects the readers use, looked up once when the module is imported (InitValues):
// looking them up lazily from a function-local static could deadlock, as an import may
// release the GIL while another thread waits on the static's guard holding it.
struct PythonObjects {
  py::object datetime_class;
  py::object epoch;            // datetime(1970, 1, 1, tzinfo=timezone.utc)
  py::object one_microsecond;  // timedelta(microseconds=1)
  py::object mapping_abc;      // collections.abc.Mapping
};
PythonObjects* objects = nullptr;  // leaked on purpose: lives as long as the interpreter

[[noreturn]] void Expected(const Path& path, std::string_view what, py::handle found) {
  ThrowInvalid(fmt::format("{}: expected {}, found {}", path.str(), what, Describe(found)));
}

[[noreturn]] void OutOfRange(const Path& path, py::handle value, std::string_view what) {
  ThrowInvalid(fmt::format("{}: {} is out of range for {}", path.str(),
                           py::repr(value).cast<std::string>(), what));
}

bool TypeNameIs(py::handle value, std::string_view name) {
  return std::string_view(Py_TYPE(value.ptr())->tp_name) == name;
}

bool IsNumpyArray(py::handle value) {
  // Checks the type's name first so that no value but an array makes the binding import
  // numpy's C API.
  return std::string_view(Py_TYPE(value.ptr())->tp_name).starts_with("numpy.") &&
         py::isinstance<py::array>(value);
}

// An object with __float__ (numpy floating scalars, Decimal) that is no str or bytes.
bool HasFloatConversion(PyObject* o) {
  return Py_TYPE(o)->tp_as_number != nullptr && Py_TYPE(o)->tp_as_number->nb_float != nullptr &&
         !PyUnicode_Check(o) && !PyBytes_Check(o);
}

}  // namespace

std::string Path::str() const {
  std::string parent = parent_ != nullptr ? parent_->str() : std::string();
  if (is_element_) return fmt::format("{}[{}]", parent, index_);
  if (parent_ == nullptr) return std::string(text_);
  return fmt::format("{}.{}", parent, text_);
}

namespace {

// Runs a Python call that may fail; turns its exception into InvalidArgument at `path`.
template <typename F>
auto Checked(const Path& path, F call) {
  try {
    return call();
  } catch (py::error_already_set& e) {
    ThrowInvalid(fmt::format("{}: {}", path.str(), e.what()));
  }
}

const py::array& CheckOneDimensional(const py::array& array, const Path& path) {
  if (array.ndim() != 1) {
    ThrowInvalid(fmt::format("{}: expected a 1-D array, found an array of {} dimensions",
                             path.str(), array.ndim()));
  }
  return array;
}

[[noreturn]] void WrongDtype(const Path& path, std::string_view what, const py::array& array) {
  ThrowInvalid(fmt::format("{}: expected {}, found a numpy array of dtype {}", path.str(), what,
                           py::str(array.dtype()).cast<std::string>()));
}

// The elements of a 1-D numeric numpy array as T, each checked by `check(double, index)`.
template <typename T, typename Check>
std::vector<T> FromDoubles(const py::array& array, Check check) {
  auto doubles = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(array);
  if (!doubles) throw py::error_already_set();
  std::vector<T> out(static_cast<size_t>(doubles.size()));
  const double* data = doubles.data();
  for (size_t i = 0; i < out.size(); ++i) out[i] = check(data[i], i);
  return out;
}

// `what` names one element ("a 32-bit integer"), `what_array` the whole ("an array of 32-bit
// integers").
template <typename Int>
std::vector<Int> IntegersFromArray(const py::array& array, const Path& path, std::string_view what,
                                   std::string_view what_array) {
  CheckOneDimensional(array, path);
  const char kind = array.dtype().kind();
  const auto in_range = [&](auto v, size_t i) {
    if (v < std::numeric_limits<Int>::min() || v > std::numeric_limits<Int>::max()) {
      ThrowInvalid(fmt::format("{}: {} is out of range for {}", Path(path, Path::Element{i}).str(),
                               v, what));
    }
    return static_cast<Int>(v);
  };
  if (kind == 'i' || (kind == 'u' && array.itemsize() < 8)) {
    if (kind == 'i' && array.itemsize() == sizeof(Int)) {
      auto same = py::array_t<Int, py::array::c_style | py::array::forcecast>::ensure(array);
      if (!same) throw py::error_already_set();
      return std::vector<Int>(same.data(), same.data() + same.size());
    }
    auto wide = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(array);
    if (!wide) throw py::error_already_set();
    std::vector<Int> out(static_cast<size_t>(wide.size()));
    for (size_t i = 0; i < out.size(); ++i) out[i] = in_range(wide.data()[i], i);
    return out;
  }
  if (kind == 'u') {
    auto wide = py::array_t<uint64_t, py::array::c_style | py::array::forcecast>::ensure(array);
    if (!wide) throw py::error_already_set();
    std::vector<Int> out(static_cast<size_t>(wide.size()));
    for (size_t i = 0; i < out.size(); ++i) {
      const uint64_t v = wide.data()[i];
      if (v > static_cast<uint64_t>(std::numeric_limits<Int>::max())) {
        ThrowInvalid(fmt::format("{}: {} is out of range for {}",
                                 Path(path, Path::Element{i}).str(), v, what));
      }
      out[i] = static_cast<Int>(v);
    }
    return out;
  }
  if (kind == 'f') {
    return FromDoubles<Int>(array, [&](double d, size_t i) {
      if (!std::isfinite(d) || std::trunc(d) != d) {
        ThrowInvalid(fmt::format("{}: expected {}, found number {}",
                                 Path(path, Path::Element{i}).str(), what, d));
      }
      return in_range(d, i);
    });
  }
  WrongDtype(path, what_array, array);
}

// A list or tuple read element by element, or a numpy array read by `from_array`.
template <typename T, typename ReadOne, typename FromArray>
std::vector<T> ReadList(py::handle value, const Path& path, std::string_view expected,
                        ReadOne read_one, FromArray from_array) {
  PyObject* o = value.ptr();
  if (PyList_Check(o) || PyTuple_Check(o)) {
    const py::tuple items = ItemsSnapshot(value);
    std::vector<T> out;
    out.reserve(items.size());
    for (size_t i = 0; i < items.size(); ++i) {
      const Path item(path, Path::Element{i});
      out.push_back(read_one(PyTuple_GET_ITEM(items.ptr(), static_cast<Py_ssize_t>(i)), item));
    }
    return out;
  }
  if (IsNumpyArray(value)) {
    return from_array(py::reinterpret_borrow<py::array>(value));
  }
  Expected(path, expected, value);
}

constexpr int kMaxJsonDepth = 256;

nlohmann::json ToJsonAt(py::handle value, const Path& path, const ToJsonOptions& options,
                        int depth) {
  if (depth > kMaxJsonDepth) {
    ThrowInvalid(fmt::format("{}: nested more than {} levels deep (or a container holds itself)",
                             path.str(), kMaxJsonDepth));
  }
  PyObject* o = value.ptr();
  if (o == Py_None) return nullptr;
  if (PyBool_Check(o)) return o == Py_True;
  if (PyLong_Check(o)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow == 0) return static_cast<int64_t>(v);
    const unsigned long long u = PyLong_AsUnsignedLongLong(o);
    if (PyErr_Occurred() != nullptr) {
      PyErr_Clear();
      OutOfRange(path, value, "a JSON integer (64 bits)");
    }
    return static_cast<uint64_t>(u);
  }
  if (PyFloat_Check(o)) {
    const double d = PyFloat_AS_DOUBLE(o);
    if (std::isfinite(d)) return d;
    if (!options.non_finite_as_strings) {
      ThrowInvalid(fmt::format("{}: {} is not a JSON number", path.str(),
                               py::repr(value).cast<std::string>()));
    }
    if (std::isnan(d)) return "NaN";
    return d > 0 ? "Infinity" : "-Infinity";
  }
  if (PyUnicode_Check(o)) return ReadString(value, path);
  if (PyList_Check(o) || PyTuple_Check(o)) {
    nlohmann::json out = nlohmann::json::array();
    const py::tuple items = ItemsSnapshot(value);
    for (size_t i = 0; i < items.size(); ++i) {
      const Path item(path, Path::Element{i});
      out.push_back(ToJsonAt(PyTuple_GET_ITEM(items.ptr(), static_cast<Py_ssize_t>(i)), item,
                             options, depth + 1));
    }
    return out;
  }
  const bool is_dict = PyDict_Check(o);
  if (is_dict || py::isinstance(value, objects->mapping_abc)) {
    nlohmann::json out = nlohmann::json::object();
    const py::dict dict = MappingAsDict(value, path);
    const py::list entries = dict.attr("items")();  // a snapshot, as ItemsSnapshot
    for (py::handle entry : entries) {
      const py::handle key = PyTuple_GET_ITEM(entry.ptr(), 0);
      const py::handle item = PyTuple_GET_ITEM(entry.ptr(), 1);
      if (!PyUnicode_Check(key.ptr())) {
        ThrowInvalid(
            fmt::format("{}: object keys must be strings, found {}", path.str(), Describe(key)));
      }
      std::string name = ReadString(key, path);
      const Path item_path(path, name);
      out[name] = ToJsonAt(item, item_path, options, depth + 1);
    }
    return out;
  }
  if (IsNumpyArray(value)) {
    return ToJsonAt(value.attr("tolist")(), path, options, depth + 1);
  }
  // numpy scalars, before bytes-like values: they have the buffer protocol too.
  if (std::string_view(Py_TYPE(o)->tp_name).starts_with("numpy.") && py::hasattr(value, "item")) {
    return ToJsonAt(value.attr("item")(), path, options, depth + 1);
  }
  if (PyObject_CheckBuffer(o) && options.bytes_as_base64) {
    return json::Base64Encode(ReadBytes(value, path));
  }
  if (options.datetimes && py::isinstance(value, objects->datetime_class)) {
    return json::FormatTimestamp(ReadTimestampMicros(value, path));
  }
  ThrowInvalid(fmt::format("{}: expected a JSON value, found {}", path.str(), Describe(value)));
}

}  // namespace

void InitValues() {
  if (objects != nullptr) return;
  auto* o = new PythonObjects();
  py::module_ datetime = py::module_::import("datetime");
  o->datetime_class = datetime.attr("datetime");
  o->epoch = datetime.attr("datetime")(1970, 1, 1,
                                       py::arg("tzinfo") = datetime.attr("timezone").attr("utc"));
  o->one_microsecond = datetime.attr("timedelta")(py::arg("microseconds") = 1);
  o->mapping_abc = py::module_::import("collections.abc").attr("Mapping");
  objects = o;
}

std::string Describe(py::handle value) {
  PyObject* o = value.ptr();
  if (o == Py_None) return "null";
  if (PyBool_Check(o)) return o == Py_True ? "boolean true" : "boolean false";
  if (PyLong_Check(o) || PyFloat_Check(o)) {
    return fmt::format("number {}", py::repr(value).cast<std::string>());
  }
  if (PyUnicode_Check(o)) {
    constexpr size_t kQuoteLimit = 40;
    Py_ssize_t size = 0;
    const char* data = PyUnicode_AsUTF8AndSize(o, &size);
    if (data == nullptr) {
      PyErr_Clear();
      return "string (not valid Unicode)";
    }
    std::string_view text(data, static_cast<size_t>(size));
    const bool cut = text.size() > kQuoteLimit;
    const nlohmann::json shown(std::string(cut ? text.substr(0, kQuoteLimit) : text));
    return fmt::format("string {}{}",
                       shown.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                       cut ? "..." : "");
  }
  if (PyList_Check(o) || PyTuple_Check(o)) return "array";
  if (PyDict_Check(o)) return "object";
  return Py_TYPE(o)->tp_name;
}

py::tuple ItemsSnapshot(py::handle list_or_tuple) {
  if (PyTuple_Check(list_or_tuple.ptr())) return py::reinterpret_borrow<py::tuple>(list_or_tuple);
  PyObject* copy = PySequence_Tuple(list_or_tuple.ptr());
  if (copy == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::tuple>(copy);
}

py::dict MappingAsDict(py::handle value, const Path& path) {
  if (PyDict_Check(value.ptr())) return py::reinterpret_borrow<py::dict>(value);
  if (py::isinstance(value, objects->mapping_abc)) {
    return py::dict(py::reinterpret_borrow<py::object>(value));
  }
  throw py::type_error(
      fmt::format("{} must be a mapping, found {}", path.str(), Py_TYPE(value.ptr())->tp_name));
}

std::string ReadString(py::handle value, const Path& path) {
  PyObject* o = value.ptr();
  if (!PyUnicode_Check(o)) Expected(path, "a string", value);
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(o, &size);
  if (data == nullptr) {
    PyErr_Clear();
    ThrowInvalid(
        fmt::format("{}: the string is not valid Unicode (it holds a lone surrogate)", path.str()));
  }
  return std::string(data, static_cast<size_t>(size));
}

int64_t ReadInteger(py::handle value, const Path& path, int64_t min, int64_t max,
                    std::string_view expected) {
  PyObject* o = value.ptr();
  if (PyBool_Check(o)) Expected(path, expected, value);
  int64_t out = 0;
  if (PyLong_Check(o)) {
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (overflow != 0) OutOfRange(path, value, expected);
    out = v;
  } else if (PyFloat_Check(o)) {
    // As the HTTP API reads JSON: a number with a zero fraction counts (3.0).
    const double d = PyFloat_AS_DOUBLE(o);
    constexpr double kLimit = 9223372036854775808.0;  // 2^63
    if (!std::isfinite(d) || std::trunc(d) != d) Expected(path, expected, value);
    if (d < -kLimit || d >= kLimit) OutOfRange(path, value, expected);
    out = static_cast<int64_t>(d);
  } else if (PyIndex_Check(o) && !PyUnicode_Check(o)) {  // numpy integers
    py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(o));
    if (!index) throw py::error_already_set();
    return ReadInteger(index, path, min, max, expected);
  } else if (HasFloatConversion(o)) {  // numpy floats other than float64
    py::object as_float = py::reinterpret_steal<py::object>(PyNumber_Float(o));
    if (!as_float) throw py::error_already_set();
    return ReadInteger(as_float, path, min, max, expected);
  } else {
    Expected(path, expected, value);
  }
  if (out < min || out > max) OutOfRange(path, value, expected);
  return out;
}

double ReadNumber(py::handle value, const Path& path) {
  PyObject* o = value.ptr();
  if (PyBool_Check(o)) Expected(path, "a number", value);
  if (PyFloat_Check(o)) return PyFloat_AS_DOUBLE(o);
  if (PyLong_Check(o)) {
    const double d = PyLong_AsDouble(o);
    if (d == -1.0 && PyErr_Occurred() != nullptr) {
      PyErr_Clear();
      OutOfRange(path, value, "a number");
    }
    return d;
  }
  if (PyUnicode_Check(o)) {
    // The HTTP API's spelling of the values JSON has no number for.
    const std::string text = ReadString(value, path);
    if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (text == "Infinity") return std::numeric_limits<double>::infinity();
    if (text == "-Infinity") return -std::numeric_limits<double>::infinity();
    Expected(path, "a number", value);
  }
  if (HasFloatConversion(o) || (PyIndex_Check(o) && !PyBytes_Check(o))) {
    py::object as_float = py::reinterpret_steal<py::object>(PyNumber_Float(o));
    if (!as_float) throw py::error_already_set();
    return PyFloat_AS_DOUBLE(as_float.ptr());
  }
  Expected(path, "a number", value);
}

float ReadFloat32(py::handle value, const Path& path) {
  const double d = ReadNumber(value, path);
  if (std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max()) {
    OutOfRange(path, value, "a 32-bit float");
  }
  return static_cast<float>(d);
}

bool ReadBool(py::handle value, const Path& path) {
  PyObject* o = value.ptr();
  if (PyBool_Check(o)) return o == Py_True;
  if (TypeNameIs(value, "numpy.bool_")) return PyObject_IsTrue(o) == 1;
  Expected(path, "a boolean", value);
}

int64_t ReadTimestampMicros(py::handle value, const Path& path) {
  PyObject* o = value.ptr();
  if (PyUnicode_Check(o)) {
    Result<int64_t> micros = json::ParseTimestamp(ReadString(value, path));
    if (!micros.ok()) ThrowInvalid(fmt::format("{}: {}", path.str(), micros.status().message()));
    return *micros;
  }
  if (PyLong_Check(o) && !PyBool_Check(o)) {
    return ReadInteger(value, path, std::numeric_limits<int64_t>::min(),
                       std::numeric_limits<int64_t>::max(), "an integer");
  }
  if (py::isinstance(value, objects->datetime_class)) {
    if (value.attr("utcoffset")().is_none()) {
      ThrowInvalid(fmt::format("{} must include timezone information", path.str()));
    }
    return Checked(path, [&] {
      py::object since_epoch = value.attr("__sub__")(objects->epoch);
      py::object micros = since_epoch.attr("__floordiv__")(objects->one_microsecond);
      return micros.cast<int64_t>();
    });
  }
  Expected(path, "an RFC 3339 timestamp string, integer microseconds or a timezone-aware datetime",
           value);
}

std::string ReadBytes(py::handle value, const Path& path) {
  PyObject* o = value.ptr();
  if (PyUnicode_Check(o)) {
    Result<std::string> bytes = json::Base64Decode(ReadString(value, path));
    if (!bytes.ok()) ThrowInvalid(fmt::format("{}: {}", path.str(), bytes.status().message()));
    return std::move(bytes).value();
  }
  if (PyBytes_Check(o)) {
    return std::string(PyBytes_AS_STRING(o), static_cast<size_t>(PyBytes_GET_SIZE(o)));
  }
  if (PyObject_CheckBuffer(o)) {
    Py_buffer view;
    if (PyObject_GetBuffer(o, &view, PyBUF_C_CONTIGUOUS) != 0) {
      PyErr_Clear();
      Expected(path, "bytes (a C-contiguous buffer)", value);
    }
    std::string out(static_cast<const char*>(view.buf), static_cast<size_t>(view.len));
    PyBuffer_Release(&view);
    return out;
  }
  Expected(path, "bytes or a base64 string", value);
}

std::vector<float> ReadFloat32List(py::handle value, const Path& path) {
  return ReadList<float>(
      value, path, "an array of numbers", ReadFloat32, [&](const py::array& array) {
        CheckOneDimensional(array, path);
        const char kind = array.dtype().kind();
        if (kind == 'f' && array.itemsize() == 4) {
          auto same = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(array);
          if (!same) throw py::error_already_set();
          return std::vector<float>(same.data(), same.data() + same.size());
        }
        if (kind != 'f' && kind != 'i' && kind != 'u') {
          WrongDtype(path, "an array of numbers", array);
        }
        return FromDoubles<float>(array, [&](double d, size_t i) {
          if (std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max()) {
            ThrowInvalid(fmt::format("{}: {} is out of range for a 32-bit float",
                                     Path(path, Path::Element{i}).str(), d));
          }
          return static_cast<float>(d);
        });
      });
}

constexpr std::string_view kInt32 = "a 32-bit integer";
constexpr std::string_view kInt8 = "an 8-bit integer";

std::vector<int32_t> ReadInt32List(py::handle value, const Path& path) {
  return ReadList<int32_t>(
      value, path, "an array of 32-bit integers",
      [](py::handle item, const Path& item_path) {
        return static_cast<int32_t>(ReadInteger(item, item_path,
                                                std::numeric_limits<int32_t>::min(),
                                                std::numeric_limits<int32_t>::max(), kInt32));
      },
      [&](const py::array& array) {
        return IntegersFromArray<int32_t>(array, path, kInt32, "an array of 32-bit integers");
      });
}

std::vector<int8_t> ReadInt8List(py::handle value, const Path& path) {
  return ReadList<int8_t>(
      value, path, "an array of 8-bit integers",
      [](py::handle item, const Path& item_path) {
        return static_cast<int8_t>(ReadInteger(item, item_path, std::numeric_limits<int8_t>::min(),
                                               std::numeric_limits<int8_t>::max(), kInt8));
      },
      [&](const py::array& array) {
        return IntegersFromArray<int8_t>(array, path, kInt8, "an array of 8-bit integers");
      });
}

nlohmann::json ToJson(py::handle value, const Path& path, const ToJsonOptions& options) {
  return ToJsonAt(value, path, options, 0);
}

py::str TextToPython(std::string_view text) {
  PyObject* s = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace");
  if (s == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(s);
}

py::float_ Float32ToPython(float value) {
  double shortest = value;
  if (std::isfinite(value)) {
    char buffer[64];
    const auto written = std::to_chars(buffer, buffer + sizeof(buffer), value);
    if (written.ec == std::errc()) {
      double parsed = 0;
      const auto read = std::from_chars(buffer, written.ptr, parsed);
      if (read.ec == std::errc()) shortest = parsed;
    }
  }
  return py::float_(shortest);
}

py::object JsonToPython(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null:
    case nlohmann::json::value_t::discarded:
      return py::none();
    case nlohmann::json::value_t::boolean:
      return py::bool_(value.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return py::int_(value.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return py::int_(value.get<uint64_t>());
    case nlohmann::json::value_t::number_float:
      return py::float_(value.get<double>());
    case nlohmann::json::value_t::string:
      return TextToPython(value.get_ref<const std::string&>());
    case nlohmann::json::value_t::array: {
      py::list out(value.size());
      for (size_t i = 0; i < value.size(); ++i) out[i] = JsonToPython(value[i]);
      return out;
    }
    case nlohmann::json::value_t::object: {
      py::dict out;
      for (auto it = value.begin(); it != value.end(); ++it) {
        out[TextToPython(it.key())] = JsonToPython(it.value());
      }
      return out;
    }
    case nlohmann::json::value_t::binary:
      break;
  }
  return py::none();
}

py::object MicrosToDatetime(int64_t micros) {
  return objects->epoch + objects->one_microsecond * py::int_(micros);
}

py::object Float32VectorToNumpy(std::vector<float> values) {
  auto owned = std::make_unique<std::vector<float>>(std::move(values));
  std::vector<float>* data = owned.get();
  py::capsule owner(data, [](void* p) { delete static_cast<std::vector<float>*>(p); });
  owned.release();  // the capsule owns it now
  return py::array_t<float>(static_cast<py::ssize_t>(data->size()), data->data(), owner);
}

py::object StoredJsonToPython(std::string_view text) {
  nlohmann::json parsed = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return TextToPython(text);
  return JsonToPython(parsed);
}

}  // namespace strata::python
