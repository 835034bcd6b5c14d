// Python values <-> the values of strata's records and JSON, for the binding code.
//
// Readers take a Python object and the path of the value in the caller's argument
// ("records[2].reward", "rows[0].embedding") and throw StatusError(InvalidArgument)
// naming that path, what was expected and what was found, in the HTTP API's words (a Python
// str is a "string", int and float are a "number", list and tuple an "array", dict an
// "object", None "null"), so that the same bad value gets the same message from an embedded
// store and from `strata serve`. Readers and writers need the GIL.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace strata::python {

namespace py = pybind11;

// The path of a value in the caller's argument, built on the stack and turned into text only
// for an error message: with Path records("records"), Path row(records, Path::Element{2}) and
// Path field(row, "reward"), field.str() is "records[2].reward". A Path refers to its parent
// and its key: both must outlive it.
class Path {
 public:
  struct Element {
    size_t index;
  };
  explicit Path(std::string_view root) : text_(root) {}
  Path(const Path& parent, std::string_view key) : parent_(&parent), text_(key) {}
  Path(const Path& parent, Element element)
      : parent_(&parent), index_(element.index), is_element_(true) {}
  Path(const Path&) = delete;
  Path& operator=(const Path&) = delete;

  std::string str() const;

 private:
  const Path* parent_ = nullptr;
  std::string_view text_;
  size_t index_ = 0;
  bool is_element_ = false;
};

// Looks up the Python objects the readers use (datetime, collections.abc.Mapping). Called once
// by the module's initialisation, before any reader runs.
void InitValues();

// "string \"abc\"", "number 5", "boolean true", "array", "object", "null", or the Python type
// name of anything else ("bytes", "datetime").
std::string Describe(py::handle value);

// --- Readers --------------------------------------------------------------------------

// A str, as UTF-8.
std::string ReadString(py::handle value, const Path& path);
// An integer in [min, max]: an int (not a bool), a numpy integer, or a float with a zero
// fraction. `expected` names the type in messages ("a 32-bit integer").
int64_t ReadInteger(py::handle value, const Path& path, int64_t min, int64_t max,
                    std::string_view expected);
// A number: int, float or a numpy number (not a bool), or one of the strings "NaN",
// "Infinity", "-Infinity". Float32 refuses finite magnitudes beyond float32's range.
double ReadNumber(py::handle value, const Path& path);
float ReadFloat32(py::handle value, const Path& path);
// True or False (also numpy.bool_).
bool ReadBool(py::handle value, const Path& path);
// Microseconds since the Unix epoch from an int, an RFC 3339 string or a timezone-aware
// datetime.datetime (a naive one is refused: "<path> must include timezone information").
int64_t ReadTimestampMicros(py::handle value, const Path& path);
// Bytes from any object with the buffer protocol (bytes, bytearray, memoryview, a numpy
// array), or from a base64 str as the HTTP API takes them.
std::string ReadBytes(py::handle value, const Path& path);
// 1-D sequences: a list or tuple of elements the scalar readers take, or a 1-D numpy array
// of a numeric dtype (read without a Python object per element; a C-contiguous array of the
// element type is copied with one memcpy).
std::vector<float> ReadFloat32List(py::handle value, const Path& path);
std::vector<int32_t> ReadInt32List(py::handle value, const Path& path);
std::vector<int8_t> ReadInt8List(py::handle value, const Path& path);

// The items of a list or tuple as a tuple: a list is copied (its items, not their values), so
// that a reader calling Python code (a __float__, an __index__) that lets another thread run
// never walks a list that thread changes.
py::tuple ItemsSnapshot(py::handle list_or_tuple);

// A dict of a mapping (the object itself for a dict). Throws pybind11's TypeError ("<path>
// must be a mapping, found list") for anything else.
py::dict MappingAsDict(py::handle value, const Path& path);

// Python -> JSON. Strict by default: None, bool, int, float (finite), str, list / tuple,
// dict (str keys) and numpy arrays and scalars; anything else is refused naming its type.
struct ToJsonOptions {
  // bytes-like values become base64 strings (the generic store codec reads them back).
  bool bytes_as_base64 = false;
  // datetime.datetime values (timezone-aware) become RFC 3339 strings.
  bool datetimes = false;
  // NaN and the infinities become the strings "NaN", "Infinity", "-Infinity" (which the
  // codecs read back) instead of being refused.
  bool non_finite_as_strings = false;
};
nlohmann::json ToJson(py::handle value, const Path& path, const ToJsonOptions& options = {});

// --- Writers --------------------------------------------------------------------------

// UTF-8 text as a str; invalid bytes (rows other writers made) become U+FFFD.
py::str TextToPython(std::string_view text);
// The shortest decimal that reads back to `value` as a float32, as a Python float (0.1f is
// 0.1, not 0.10000000149011612), as the HTTP API writes float32 values.
py::float_ Float32ToPython(float value);
py::object JsonToPython(const nlohmann::json& value);
// Microseconds since the Unix epoch as a timezone-aware datetime.datetime in UTC (exact: no
// float rounding).
py::object MicrosToDatetime(int64_t micros);
// A float32 vector as a 1-D numpy float32 array that owns the vector's memory (no copy).
py::object Float32VectorToNumpy(std::vector<float> values);
// Stored JSON text as a Python value; text that is not JSON as a str.
py::object StoredJsonToPython(std::string_view text);

}  // namespace strata::python
