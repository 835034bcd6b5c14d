// Status -> Python exceptions: the one place the python layer turns a strata::Status into an
// exception of the strata.errors module (python/strata/errors.py).
//
// Binding code calls the engine with the GIL released, then, holding it again, throws a
// StatusError for a failed Status; the translator RegisterErrorTranslator installs raises the
// matching Python class: NotFound -> NotFoundError, AlreadyExists -> AlreadyExistsError,
// InvalidArgument and NotSupported -> InvalidRequestError, Busy -> BusyError (or
// CompactionInProgressError for a Compact refused because another one runs), Unavailable ->
// UnavailableError, Fenced -> FencedError, and Corruption, IOError, Aborted, Internal ->
// InternalError with the code name in front of the message ("Corruption: ..."), as the HTTP
// server maps them (src/server/errors.cc). Every exception carries the Status code's name in
// its `status` attribute.
#pragma once

#include <exception>
#include <utility>

#include "strata/status.h"

namespace pybind11 {
class module_;
}

namespace strata::python {

// A non-OK Status on its way to Python. Thrown only by the binding code, never by the engine.
class StatusError : public std::exception {
 public:
  explicit StatusError(Status status) : status_(std::move(status)) {}
  const Status& status() const { return status_; }
  const char* what() const noexcept override { return status_.message().c_str(); }

 private:
  Status status_;
};

// Throws StatusError unless `status` is OK.
inline void ThrowIfError(const Status& status) {
  if (!status.ok()) throw StatusError(status);
}

// The value, or a StatusError.
template <typename T>
T ValueOrThrow(Result<T> result) {
  if (!result.ok()) throw StatusError(std::move(result).status());
  return std::move(result).value();
}

// Throws StatusError(InvalidArgument(message)): bad input found by the binding itself.
[[noreturn]] void ThrowInvalid(std::string message);

// Installs the translator of StatusError into strata.errors exceptions.
void RegisterErrorTranslator(pybind11::module_& module);

}  // namespace strata::python
