// StatusError -> the exception classes of strata.errors (errors.h).
#include "python/errors.h"

#include <pybind11/pybind11.h>

#include <string>
#include <string_view>

#include "strata/storage_base.h"

namespace py = pybind11;

namespace strata::python {
namespace {

// The strata.errors class for a failed status, and the message it carries.
std::pair<const char*, std::string> ClassAndMessage(const Status& status) {
  if (store::IsCompactionInProgress(status)) {
    return {"CompactionInProgressError", "Compaction already in progress"};
  }
  switch (status.code()) {
    case StatusCode::kNotFound:
      return {"NotFoundError", status.message()};
    case StatusCode::kAlreadyExists:
      return {"AlreadyExistsError", status.message()};
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotSupported:
      return {"InvalidRequestError", status.message()};
    case StatusCode::kBusy:
      return {"BusyError", status.message()};
    case StatusCode::kUnavailable:
      return {"UnavailableError", status.message()};
    case StatusCode::kFenced:
      return {"FencedError", status.message()};
    default:
      return {"InternalError", status.ToString()};
  }
}

void Raise(const Status& status) {
  auto [name, message] = ClassAndMessage(status);
  py::object errors = py::module_::import("strata.errors");
  py::object cls = errors.attr(name);
  py::object exception = cls(message, py::arg("status") = StatusCodeName(status.code()));
  PyErr_SetObject(cls.ptr(), exception.ptr());
}

}  // namespace

void ThrowInvalid(std::string message) {
  throw StatusError(Status::InvalidArgument(std::move(message)));
}

void RegisterErrorTranslator(py::module_& /*module*/) {
  py::register_exception_translator([](std::exception_ptr thrown) {
    try {
      if (thrown) std::rethrow_exception(thrown);
    } catch (const StatusError& e) {
      try {
        Raise(e.status());
      } catch (py::error_already_set& failed) {
        // strata.errors could not be imported or instantiated: raise that instead.
        failed.restore();
      }
    }
  });
}

}  // namespace strata::python
