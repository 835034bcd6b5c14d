// Status and Result<T>: how every strata operation reports success or a typed error.
//
// The engine never throws. A function that can fail returns Status (no value) or Result<T>
// (a value or a non-OK Status). Both are [[nodiscard]]; to drop an error on purpose call
// IgnoreError(), which makes the intent greppable. Thread safety: values, like std::string.
#pragma once

#include <cassert>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace strata {

// The closed set of error codes. Busy and Unavailable are retryable.
enum class StatusCode : unsigned char {
  kOk = 0,
  kNotFound,
  kAlreadyExists,
  kInvalidArgument,
  kCorruption,
  kIOError,
  kBusy,
  kFenced,
  kAborted,
  kUnavailable,
  kNotSupported,
  kInternal,
};

// "NotFound", "Corruption", ... as used in messages and the CLI.
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  // OK. Costs one null pointer; errors allocate.
  Status() noexcept = default;
  Status(StatusCode code, std::string message);

  Status(const Status& other);
  Status& operator=(const Status& other);
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;
  ~Status() = default;

  static Status OK() { return Status(); }
  static Status NotFound(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
  static Status AlreadyExists(std::string msg) {
    return {StatusCode::kAlreadyExists, std::move(msg)};
  }
  static Status InvalidArgument(std::string msg) {
    return {StatusCode::kInvalidArgument, std::move(msg)};
  }
  static Status Corruption(std::string msg) { return {StatusCode::kCorruption, std::move(msg)}; }
  static Status IOError(std::string msg) { return {StatusCode::kIOError, std::move(msg)}; }
  static Status Busy(std::string msg) { return {StatusCode::kBusy, std::move(msg)}; }
  static Status Fenced(std::string msg) { return {StatusCode::kFenced, std::move(msg)}; }
  static Status Aborted(std::string msg) { return {StatusCode::kAborted, std::move(msg)}; }
  static Status Unavailable(std::string msg) { return {StatusCode::kUnavailable, std::move(msg)}; }
  static Status NotSupported(std::string msg) {
    return {StatusCode::kNotSupported, std::move(msg)};
  }
  static Status Internal(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }

  bool ok() const { return state_ == nullptr; }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
  // Empty for OK.
  const std::string& message() const;

  bool IsNotFound() const { return code() == StatusCode::kNotFound; }
  bool IsAlreadyExists() const { return code() == StatusCode::kAlreadyExists; }
  bool IsInvalidArgument() const { return code() == StatusCode::kInvalidArgument; }
  bool IsCorruption() const { return code() == StatusCode::kCorruption; }
  bool IsIOError() const { return code() == StatusCode::kIOError; }
  bool IsBusy() const { return code() == StatusCode::kBusy; }
  bool IsFenced() const { return code() == StatusCode::kFenced; }
  bool IsAborted() const { return code() == StatusCode::kAborted; }
  bool IsUnavailable() const { return code() == StatusCode::kUnavailable; }
  bool IsNotSupported() const { return code() == StatusCode::kNotSupported; }
  // Busy and Unavailable: the same call may succeed later.
  bool IsRetryable() const { return IsBusy() || IsUnavailable(); }

  // "Corruption: bad footer" or "OK".
  std::string ToString() const;

  // The same code with "context: " in front of the message. OK stays OK.
  Status WithContext(std::string_view context) const;

  // Drops the status on purpose.
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code() == b.code() && a.message() == b.message();
  }

 private:
  struct State {
    StatusCode code;
    std::string message;
  };
  std::unique_ptr<State> state_;
};

std::ostream& operator<<(std::ostream& os, const Status& status);

// A value of type T, or the error that prevented producing it.
template <typename T>
class [[nodiscard]] Result {
 public:
  using ValueType = T;

  // NOLINTNEXTLINE(google-explicit-constructor): implicit from a value, as in absl::StatusOr.
  Result(T value) : storage_(std::in_place_index<1>, std::move(value)) {}
  // NOLINTNEXTLINE(google-explicit-constructor): implicit from an error status.
  Result(Status status) : storage_(std::in_place_index<0>, std::move(status)) {
    assert(!std::get<0>(storage_).ok() && "Result constructed from an OK status");
  }
  template <typename U>
  requires(std::is_convertible_v<U&&, T> && !std::is_same_v<std::decay_t<U>, Status> &&
           !std::is_same_v<std::decay_t<U>, T>)
      // NOLINTNEXTLINE(google-explicit-constructor)
      Result(U&& value)
      : storage_(std::in_place_index<1>, T(std::forward<U>(value))) {}

  bool ok() const { return storage_.index() == 1; }

  // Drops the value or the error on purpose.
  void IgnoreError() const {}

  // OK when a value is held.
  Status status() const& { return ok() ? Status::OK() : std::get<0>(storage_); }
  Status status() && { return ok() ? Status::OK() : std::get<0>(std::move(storage_)); }

  // REQUIRES: ok().
  const T& value() const& { return Checked(); }
  T& value() & { return Checked(); }
  T&& value() && { return std::move(Checked()); }
  const T& operator*() const& { return Checked(); }
  T& operator*() & { return Checked(); }
  T&& operator*() && { return std::move(Checked()); }
  const T* operator->() const { return &Checked(); }
  T* operator->() { return &Checked(); }

  T ValueOr(T fallback) const& { return ok() ? std::get<1>(storage_) : std::move(fallback); }

 private:
  T& Checked() {
    assert(ok() && "value() on an error Result");
    return std::get<1>(storage_);
  }
  const T& Checked() const {
    assert(ok() && "value() on an error Result");
    return std::get<1>(storage_);
  }
  std::variant<Status, T> storage_;
};

}  // namespace strata

#define STRATA_CONCAT_INNER_(a, b) a##b
#define STRATA_CONCAT_(a, b) STRATA_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function when `expr` is not OK.
#define STRATA_RETURN_IF_ERROR(expr)                 \
  do {                                               \
    ::strata::Status strata_status_ = (expr);        \
    if (!strata_status_.ok()) return strata_status_; \
  } while (0)

// `lhs = value of rexpr`, or returns its error. lhs may declare: `auto x`.
#define STRATA_ASSIGN_OR_RETURN(lhs, rexpr) \
  STRATA_ASSIGN_OR_RETURN_IMPL_(STRATA_CONCAT_(strata_result_, __LINE__), lhs, rexpr)
#define STRATA_ASSIGN_OR_RETURN_IMPL_(result, lhs, rexpr) \
  auto result = (rexpr);                                  \
  if (!result.ok()) return std::move(result).status();    \
  lhs = std::move(result).value()
