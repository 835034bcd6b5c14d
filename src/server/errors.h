// HTTP errors of the API: the one place a Status becomes a status code and the error body
// {"error": {"code", "message"}} (shared/reference/lance-context.md §4.3).
#pragma once

#include <string>
#include <string_view>

#include "strata/status.h"

namespace strata::server {

struct HttpError {
  int status = 500;
  std::string code;  // NOT_FOUND, ALREADY_EXISTS, INVALID_REQUEST, INTERNAL,
                     // COMPACTION_IN_PROGRESS, OVERLOADED, UNAUTHORIZED, ...
  std::string message;
  // Seconds for a Retry-After header (OVERLOADED); 0 = none.
  int retry_after_seconds = 0;
};

// NotFound -> 404 NOT_FOUND; AlreadyExists -> 409 ALREADY_EXISTS; InvalidArgument and
// NotSupported -> 400 INVALID_REQUEST; a refused concurrent compaction -> 409
// COMPACTION_IN_PROGRESS "Compaction already in progress"; Unavailable (the pending-generation
// cap) and Busy (a read that kept racing merges) -> 503 OVERLOADED with Retry-After: 1;
// anything else (Corruption, IOError, Fenced, Aborted, Internal) -> 500 INTERNAL. The
// message is the status's message.
HttpError ErrorFromStatus(const Status& status);

HttpError NotFoundError(std::string message);
HttpError InvalidRequest(std::string message);

// {"error":{"code":"...","message":"..."}}
std::string ErrorBody(const HttpError& error);

}  // namespace strata::server
