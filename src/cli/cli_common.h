// Shared plumbing of the `strata` subcommands: error reporting, column lists, progress lines,
// JSON lines input and where new tables may be made.
#pragma once

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <type_traits>
#include <vector>

#include "strata/json.h"
#include "strata/record_batch.h"
#include "strata/status.h"
#include "strata/type.h"

namespace strata::cli {

// Exit status for a failed command: prints "strata: error: <status>" to stderr.
int ReportError(const Status& status);
// Damage or trouble that does not stop the command: prints "strata: warning: <where>:
// <message>" to stderr (never stdout, which holds the command's output).
void ReportWarning(std::string_view where, std::string_view message);

// --- Output errors: a command whose stdout cannot be written fails, whatever the command. ---

// Writes to stdout; IOError "writing the output failed: <reason>" (OutputError) on failure.
Status WriteStdout(std::string_view text);
// Flushes stdout; OutputError on failure.
Status FlushStdout();
// For a command whose work is done (and durable) before its last message is printed: a
// sentence saying so, added to the output error if that message cannot be written.
void SetOutputFailureNote(std::string note);
// The program's exit status after the command ran with `exit_code`: flushes stdout and, when
// anything written to it was lost (write, flush), reports the output error and returns
// nonzero unless the command already failed with that error. The one place every command's
// output is checked (main calls it).
int FinishOutput(int exit_code);

// A CLI11 check for an integer option of type T: decimal digits for a value within
// [min, T's maximum]. Used instead of CLI::PositiveNumber / NonNegativeNumber, which print a
// 309-digit range and let an int64/uint64 value past the type's range clamp silently.
template <typename T>
CLI::Validator IntegerAtLeast(T min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        const bool negative = !text.empty() && text.front() == '-';
        const std::string_view digits = std::string_view(text).substr(negative ? 1 : 0);
        if (digits.empty() || digits.find_first_not_of("0123456789") != std::string_view::npos) {
          return fmt::format("'{}' is not an integer", text);
        }
        T value{};
        const std::errc ec = std::from_chars(text.data(), text.data() + text.size(), value).ec;
        if (ec != std::errc() && !negative) {
          return fmt::format("{} is out of range (at most {})", text,
                             std::numeric_limits<T>::max());
        }
        if (ec != std::errc() || value < min) {
          return fmt::format("{} is out of range (at least {})", text, min);
        }
        return std::string();
      },
      min == 1   ? "POSITIVE"
      : min == 0 ? "NONNEGATIVE"
                 : fmt::format(">= {}", min));
}

// Splits "a,b , c" into {"a", "b", "c"}; an empty string gives an empty list.
std::vector<std::string> SplitColumns(const std::string& text);
// A --columns list: SplitColumns, and InvalidArgument naming a column given twice (each
// column is one key of a printed JSON object).
Result<std::vector<std::string>> ParseColumns(const std::string& text);

// A one-line progress display on stderr, redrawn at most every 200 ms and only when stderr is
// a terminal; Finish() clears the line.
class Progress {
 public:
  // `total_bytes` <= 0 when the input size is unknown.
  Progress(std::string what, int64_t total_bytes);
  void Update(int64_t rows, int64_t bytes);
  void Finish();

 private:
  std::string what_;
  int64_t total_bytes_;
  bool enabled_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

// The whole file; NotFound when it cannot be opened.
Result<std::string> ReadTextFile(const std::string& path);
// ReadTextFile, or all of stdin for "-".
Result<std::string> ReadTextFileOrStdin(const std::string& path);

// A schema given inline as a JSON object ("{...}") or as the path of a schema JSON file.
Result<SchemaPtr> LoadSchema(const std::string& spec);

// "12.3 MiB" style sizes.
std::string FormatBytes(int64_t bytes);

// A JSON lines input (a file, or stdin for "-") decoded by a JsonLinesReader that counts the
// bytes it has read, for Progress. Not thread safe.
class JsonLinesInput {
 public:
  // NotFound when `path` cannot be opened; the reader's errors otherwise.
  static Result<std::unique_ptr<JsonLinesInput>> Open(const std::string& path, SchemaPtr schema,
                                                      const json::JsonReadOptions& options);
  ~JsonLinesInput();
  JsonLinesInput(const JsonLinesInput&) = delete;
  JsonLinesInput& operator=(const JsonLinesInput&) = delete;

  const SchemaPtr& schema() const { return reader_->schema(); }

  // Calls `each` on every batch until the end of the input or the first error (the
  // reader's or `each`'s, returned as is), showing progress labelled `what` meanwhile.
  Status ForEachBatch(std::string what, const std::function<Status(RecordBatch batch)>& each);

 private:
  JsonLinesInput(std::FILE* file, int64_t total_bytes);

  std::FILE* file_;      // closed by the destructor unless it is stdin
  int64_t total_bytes_;  // -1 for stdin or when unknown
  int64_t bytes_read_ = 0;
  std::unique_ptr<json::JsonLinesReader> reader_;  // reads file_ through a source counting bytes
};

// OK when `dir` names nothing yet or an empty directory: the only places a new table or store
// (`what`, e.g. "table") is made. AlreadyExists otherwise (a file, or a directory holding
// something else); callers first check that `dir` holds no `what` to reuse.
Status CheckNewOrEmptyDirectory(const std::string& dir, std::string_view what);

}  // namespace strata::cli
