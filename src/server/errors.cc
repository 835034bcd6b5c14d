// Status -> HTTP status, error code and body.
#include "server/errors.h"

#include <nlohmann/json.hpp>

#include "strata/storage_base.h"

namespace strata::server {

HttpError ErrorFromStatus(const Status& status) {
  if (store::IsCompactionInProgress(status)) {
    return {409, "COMPACTION_IN_PROGRESS", "Compaction already in progress", 0};
  }
  switch (status.code()) {
    case StatusCode::kNotFound:
      return {404, "NOT_FOUND", status.message(), 0};
    case StatusCode::kAlreadyExists:
      return {409, "ALREADY_EXISTS", status.message(), 0};
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotSupported:
      return {400, "INVALID_REQUEST", status.message(), 0};
    case StatusCode::kUnavailable:
    case StatusCode::kBusy:
      return {503, "OVERLOADED", status.message(), 1};
    default:
      return {500, "INTERNAL", status.ToString(), 0};
  }
}

HttpError NotFoundError(std::string message) { return {404, "NOT_FOUND", std::move(message), 0}; }

HttpError InvalidRequest(std::string message) {
  return {400, "INVALID_REQUEST", std::move(message), 0};
}

std::string ErrorBody(const HttpError& error) {
  nlohmann::json body = {{"error", {{"code", error.code}, {"message", error.message}}}};
  // Messages may quote user input that is not UTF-8; replace rather than throw.
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace strata::server
