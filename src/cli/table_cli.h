// Plumbing shared by the `strata table` commands (table_commands.cc and
// table_maintenance_commands.cc): opening a table directory, key parsing, row output, progress.
#pragma once

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "strata/expr.h"
#include "strata/record_batch.h"
#include "strata/status.h"
#include "strata/storage_base.h"
#include "strata/table.h"

namespace strata::cli {

// The table in local directory `dir` (prefix ""): the latest version, or a read-only handle
// on `version` when it is not 0. NotFound when `dir` is not a directory or holds no table;
// a missing directory is not created.
Result<std::shared_ptr<table::Table>> OpenTable(const std::string& dir, uint64_t version = 0);

// OK when no typed store owns the table `t` in `dir`, or the store's rules allow `change`
// (storage_base.h); otherwise the store's refusal, naming `dir`, the store kind and the
// command to use instead (table_ownership.cc).
Status CheckTableChangeAllowed(const std::string& dir, const table::Table& t,
                               store::BaseTableChange change);

// A command-line key for the primary-key column `column`: an integer for integer columns,
// integer microseconds or RFC 3339 text for timestamps, the text itself otherwise.
Result<expr::Scalar> ParseKey(const std::string& text, const Field& column);
// ParseKey for each text; InvalidArgument when the table has no primary key.
Result<std::vector<expr::Scalar>> ParseKeys(const table::Table& table,
                                            const std::vector<std::string>& texts);

// "2026-11-29T21:04:05.123456Z".
std::string FormatTime(int64_t micros_since_epoch);
// Every line of `text` with two spaces in front.
std::string Indent(const std::string& text);
// The text of `table verify` and `rollout verify`: one line per problem, then
// "checked M manifests and F files (B) at version V: ok | N problems".
std::string FormatVerifyReport(const table::VerifyReport& report, uint64_t version);

// Exit status of a command: 0, or ReportError's.
int Finish(const Status& s);

// A one-line "<what>  42%  1200 of 2800 rows" display on stderr for table operations that
// report progress in rows, redrawn at most every 200 ms and only when stderr is a terminal.
class RowProgress {
 public:
  explicit RowProgress(std::string what);
  // A callback for the table API, or an empty one when stderr is not a terminal. The
  // callback refers to this object.
  table::ProgressCallback Callback();
  // Clears the line if anything was drawn.
  void Finish();

 private:
  std::string what_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_draw_;
};

// The fragment-bound knobs of every `compact` command (table and the stores).
struct CompactionBounds {
  int64_t target_rows = table::CompactionOptions{}.target_rows_per_fragment;
  int max_source_fragments = table::CompactionOptions{}.max_source_fragments;
};
// Registers --target-rows and --max-source-fragments.
void AddCompactionBoundOptions(CLI::App* cmd, CompactionBounds* out);

struct RowOutputOptions {
  std::string format;  // "jsonl", "table" or "" (table on a terminal, jsonl otherwise)
  int max_cell_width = 40;
  bool timestamps_as_micros = false;
};
// Registers --format, --max-cell-width and --timestamps-as-micros.
void AddRowOutputOptions(CLI::App* cmd, RowOutputOptions* out);

// Prints rows to stdout: JSON lines as they come, or one aligned table at Finish().
class RowPrinter {
 public:
  // `schema`: the columns printed (used for the header of an empty table).
  RowPrinter(const RowOutputOptions& options, SchemaPtr schema);
  Status Add(const RecordBatch& batch);
  Status Finish();

 private:
  RowOutputOptions options_;
  bool table_;
  SchemaPtr schema_;
  std::vector<RecordBatch> kept_;
};

// compact, versions, checkout, verify, repair, inspect and cleanup, on the `table` group.
void AddTableMaintenanceCommands(CLI::App& group, int* exit_code);

}  // namespace strata::cli
