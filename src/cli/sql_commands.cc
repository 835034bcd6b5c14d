// `strata sql DIR SQL`: runs one read-only SELECT over the store in a local directory — a
// context, rollout, datagen or generic store, all StorageBases underneath — and prints the
// result as a table, JSON lines or CSV.
#include "sql_commands.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "cli_common.h"
#include "strata/builder.h"
#include "strata/json.h"
#include "strata/object_store.h"
#include "strata/pretty_print.h"
#include "strata/sql.h"
#include "strata/storage_base.h"
#include "strata/table.h"
#include "table_cli.h"

namespace strata::cli {
namespace {

struct SqlOptions {
  std::string dir;
  std::string sql;
  std::string format;    // table, jsonl, csv; "" = table on a terminal, jsonl otherwise
  int64_t max_rows = 0;  // 0 = all
  int max_cell_width = 40;
  bool stats = false;
};

// The store in `dir`, whatever its kind, opened for reading: its base table names the key
// column (the primary key) and the kind; no writer is opened and nothing is written.
Result<std::unique_ptr<store::StorageBase>> OpenAnyStore(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return Status::NotFound(fmt::format("no store at '{}': not a directory", dir));
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> objects,
                          OpenLocalObjectStore(dir, {.sync = false}));
  STRATA_ASSIGN_OR_RETURN(bool has_table, table::Table::Exists(*objects, ""));
  if (!has_table) return Status::NotFound(fmt::format("no store at '{}'", dir));
  Result<std::shared_ptr<table::Table>> base = table::Table::Open(objects, "");
  if (!base.ok()) return base.status().WithContext(dir);
  const SchemaPtr schema = (*base)->schema();
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> kind,
                          store::OwningStoreKind(*objects, "", *schema));
  std::optional<int> key = (*base)->primary_key_column();
  if (!kind.has_value() || !key.has_value()) {
    return Status::InvalidArgument(fmt::format(
        "{}: holds a plain table, not a store (SQL runs over stores; use `strata table scan`)",
        dir));
  }
  store::StorageBaseOptions options;
  options.key_column = schema->field(*key)->name();
  Result<std::unique_ptr<store::StorageBase>> opened =
      store::StorageBase::Open(std::move(objects), "", std::move(options),
                               /*create_if_missing=*/false);
  if (!opened.ok()) return opened.status().WithContext(dir);
  return opened;
}

// The text of a value in CSV and table cells: numbers as in JSON, text as is, blobs in base64,
// NULL empty (CSV) or "null" (tables print it).
std::string CellText(const sql::Value& value) {
  if (const auto* text = std::get_if<std::string>(&value)) return *text;
  if (const auto* blob = std::get_if<sql::Blob>(&value)) return json::Base64Encode(blob->bytes);
  if (std::holds_alternative<std::monostate>(value)) return "";
  std::string out;
  sql::AppendJson(value, &out);
  return out;
}

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

// JSON object keys for the columns: SQLite's names, a repeated one suffixed ":1", ":2", ...
std::vector<std::string> UniqueKeys(const std::vector<std::string>& columns) {
  std::vector<std::string> keys;
  for (const std::string& name : columns) {
    std::string key = name;
    for (int n = 1; std::find(keys.begin(), keys.end(), key) != keys.end(); ++n) {
      key = fmt::format("{}:{}", name, n);
    }
    keys.push_back(std::move(key));
  }
  return keys;
}

// The rows of a `table` result as one batch: a column whose values are all integers prints as
// int64, all numbers as float64, anything else as text.
Result<RecordBatch> TableBatch(const std::vector<std::string>& columns,
                               const std::vector<std::vector<sql::Value>>& rows) {
  std::vector<FieldPtr> fields;
  std::vector<Array> arrays;
  const std::vector<std::string> names = UniqueKeys(columns);
  for (size_t c = 0; c < columns.size(); ++c) {
    bool integers = true;
    bool numbers = true;
    for (const auto& row : rows) {
      const sql::Value& v = row[c];
      integers = integers &&
                 (std::holds_alternative<std::monostate>(v) || std::holds_alternative<int64_t>(v));
      numbers =
          numbers && (integers || std::holds_alternative<std::monostate>(v) ||
                      std::holds_alternative<int64_t>(v) || std::holds_alternative<double>(v));
    }
    std::unique_ptr<ArrayBuilder> builder;
    if (integers && !rows.empty()) {
      auto b = std::make_unique<Int64Builder>(int64());
      for (const auto& row : rows) {
        if (const auto* i = std::get_if<int64_t>(&row[c])) {
          b->Append(*i);
        } else {
          b->AppendNull();
        }
      }
      builder = std::move(b);
    } else if (numbers && !rows.empty()) {
      auto b = std::make_unique<Float64Builder>(float64());
      for (const auto& row : rows) {
        if (const auto* i = std::get_if<int64_t>(&row[c])) {
          b->Append(static_cast<double>(*i));
        } else if (const auto* d = std::get_if<double>(&row[c])) {
          b->Append(*d);
        } else {
          b->AppendNull();
        }
      }
      builder = std::move(b);
    } else {
      auto b = std::make_unique<BinaryBuilder>(utf8());
      for (const auto& row : rows) {
        if (std::holds_alternative<std::monostate>(row[c])) {
          b->AppendNull();
        } else {
          STRATA_RETURN_IF_ERROR(b->Append(CellText(row[c])));
        }
      }
      builder = std::move(b);
    }
    STRATA_ASSIGN_OR_RETURN(Array array, builder->Finish());
    fields.push_back(field(names[c], array.type()));
    arrays.push_back(std::move(array));
  }
  return RecordBatch::Make(schema(std::move(fields)), static_cast<int64_t>(rows.size()),
                           std::move(arrays));
}

Status RunSql(const SqlOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<store::StorageBase> base, OpenAnyStore(opt.dir));
  const std::string format =
      !opt.format.empty() ? opt.format : (::isatty(STDOUT_FILENO) == 1 ? "table" : "jsonl");
  std::vector<std::string> columns;
  std::vector<std::string> keys;
  std::vector<std::vector<sql::Value>> kept;  // table format only
  std::string out;
  auto flush = [&](bool always) -> Status {
    if (out.empty() || (!always && out.size() < (size_t{1} << 16))) return Status::OK();
    Status written = WriteStdout(out);
    out.clear();
    return written;
  };
  sql::QueryStats stats;
  Result<sql::QuerySummary> summary = sql::QueryEach(
      *base, opt.sql, {.max_rows = opt.max_rows},
      [&](const std::vector<std::string>& names) -> Status {
        columns = names;
        keys = UniqueKeys(names);
        if (format == "csv") {
          for (size_t c = 0; c < names.size(); ++c) {
            out += (c > 0 ? "," : "") + CsvField(names[c]);
          }
          out += "\r\n";
        }
        return Status::OK();
      },
      [&](std::vector<sql::Value> row) -> Status {
        if (format == "table") {
          kept.push_back(std::move(row));
          return Status::OK();
        }
        for (size_t c = 0; c < row.size(); ++c) {
          if (format == "csv") {
            out += (c > 0 ? "," : "") + CsvField(CellText(row[c]));
          } else {
            out += c > 0 ? "," : "{";
            sql::AppendJson(sql::Value(keys[c]), &out);
            out += ':';
            sql::AppendJson(row[c], &out);
          }
        }
        out += format == "csv" ? "\r\n" : (row.empty() ? "{}\n" : "}\n");
        return flush(false);
      },
      &stats);
  if (opt.stats) {
    std::string text = fmt::format("scans: {}, key lookups: {}, rows scanned: {}\n", stats.scans,
                                   stats.key_lookups, stats.rows_scanned);
    for (const std::string& f : stats.pushed_filters) {
      text += fmt::format("pushed filter: {}\n", f.empty() ? "(none)" : f);
    }
    text += fmt::format("columns read: {}\n", fmt::join(stats.columns_read, ", "));
    std::fputs(text.c_str(), stderr);
  }
  if (!summary.ok()) return summary.status().WithContext(opt.dir);
  if (format == "table") {
    STRATA_ASSIGN_OR_RETURN(RecordBatch batch, TableBatch(columns, kept));
    out += FormatTable({batch}, {.max_cell_width = opt.max_cell_width});
  }
  STRATA_RETURN_IF_ERROR(flush(true));
  if (summary->truncated) {
    ReportWarning(opt.dir, fmt::format("the result was cut at {} rows (--max-rows); it has more",
                                       opt.max_rows));
  }
  return Status::OK();
}

}  // namespace

void AddSqlCommands(CLI::App& app, int* exit_code) {
  auto opt = std::make_shared<SqlOptions>();
  CLI::App* cmd = app.add_subcommand(
      "sql",
      "Run one read-only SQL SELECT over a store (any kind) as the table `records` "
      "(docs/sql.md)");
  cmd->add_option("DIR", opt->dir, "Store directory (context, rollout, datagen or generic)")
      ->required();
  cmd->add_option("SQL", opt->sql,
                  "One SELECT / WITH statement over `records`, e.g. \"SELECT count(*) FROM "
                  "records\"")
      ->required();
  cmd->add_option("--format", opt->format,
                  "table, jsonl (one JSON object per row) or csv; default: table on a terminal, "
                  "jsonl otherwise")
      ->check(CLI::IsMember({"table", "jsonl", "csv"}));
  cmd->add_option("--max-rows", opt->max_rows,
                  "Print at most N rows (a warning says when there were more); 0 = all")
      ->check(IntegerAtLeast<int64_t>(0))
      ->capture_default_str();
  cmd->add_option("--max-cell-width", opt->max_cell_width, "Table cell width limit")
      ->check(IntegerAtLeast<int>(1))
      ->capture_default_str();
  cmd->add_flag("--stats", opt->stats,
                "Print to stderr what the query read: scans, key lookups, rows, the filters "
                "pushed to strata and the columns read");
  cmd->callback([opt, exit_code] { *exit_code = Finish(RunSql(*opt)); });
}

}  // namespace strata::cli
