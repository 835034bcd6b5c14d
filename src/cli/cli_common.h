// Shared plumbing of the `strata` subcommands: error reporting, column lists, progress lines.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "strata/status.h"
#include "strata/type.h"

namespace strata::cli {

// Exit status for a failed command: prints "strata: error: <status>" to stderr.
int ReportError(const Status& status);

// Splits "a,b , c" into {"a", "b", "c"}; an empty string gives an empty list.
std::vector<std::string> SplitColumns(const std::string& text);

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

// A schema given inline as a JSON object ("{...}") or as the path of a schema JSON file.
Result<SchemaPtr> LoadSchema(const std::string& spec);

// "12.3 MiB" style sizes.
std::string FormatBytes(int64_t bytes);

}  // namespace strata::cli
