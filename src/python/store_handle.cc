// Arguments every store binding reads (store_handle.h), and the GIL-free scope counters
// (gil.h).
#include "python/store_handle.h"

#include <limits>

namespace strata::python {

GilFreeStats& GilFreeCounters() {
  static GilFreeStats stats;  // trivially destructible atomics; constant-initialised
  return stats;
}

std::map<std::string, std::string> ReadStorageOptions(py::handle options) {
  std::map<std::string, std::string> out;
  if (options.is_none()) return out;
  const Path root("storage_options");
  py::dict dict = MappingAsDict(options, root);
  const py::list entries = dict.attr("items")();  // a snapshot, as ItemsSnapshot
  for (py::handle entry : entries) {
    const py::handle key = PyTuple_GET_ITEM(entry.ptr(), 0);
    const py::handle value = PyTuple_GET_ITEM(entry.ptr(), 1);
    const std::string name = ReadString(key, root);
    if (value.is_none()) continue;
    const Path path(root, name);
    PyObject* o = value.ptr();
    if (PyBool_Check(o)) {
      out[name] = o == Py_True ? "true" : "false";
    } else if (PyUnicode_Check(o)) {
      out[name] = ReadString(value, path);
    } else if (PyLong_Check(o) || PyFloat_Check(o)) {
      out[name] = py::str(value).cast<std::string>();
    } else {
      ThrowInvalid(fmt::format("{}: expected a string, boolean or number, found {}", path.str(),
                               Describe(value)));
    }
  }
  return out;
}

std::optional<int64_t> ReadCount(py::handle value, const char* name) {
  if (value.is_none()) return std::nullopt;
  const Path path(name);
  const int64_t n = ReadInteger(value, path, std::numeric_limits<int64_t>::min(),
                                std::numeric_limits<int64_t>::max(), "a non-negative integer");
  if (n < 0) {
    ThrowInvalid(fmt::format("{}: expected a non-negative integer, found number {}", name, n));
  }
  return n;
}

void WarnIfMergeFailed(const Status& merge, const std::string& uri) {
  if (merge.ok()) return;
  const std::string message = fmt::format(
      "'{}': the merge after this write failed (the write is durable; the next "
      "write merges again): {}",
      uri, merge.ToString());
  if (PyErr_WarnEx(PyExc_RuntimeWarning, message.c_str(), 1) != 0) throw py::error_already_set();
}

}  // namespace strata::python
