// `strata table create | append | scan | get | count | delete | add-columns`: a versioned table
// in a local directory, from the command line. Maintenance commands are in
// table_maintenance_commands.cc; both register through AddTableCommands.
#include "table_commands.h"

#include <fmt/format.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "cli_common.h"
#include "strata/ipc.h"
#include "strata/json.h"
#include "strata/pretty_print.h"
#include "strata/schema_json.h"
#include "strata/table.h"
#include "table_cli.h"

namespace strata::cli {

// --- Shared helpers (table_cli.h) ------------------------------------------------------------

Result<std::shared_ptr<table::Table>> OpenTable(const std::string& dir, uint64_t version) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return Status::NotFound(fmt::format("no table at '{}': not a directory", dir));
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> store, OpenLocalObjectStore(dir));
  Result<std::shared_ptr<table::Table>> opened = table::Table::Open(store, "");
  if (!opened.ok()) return opened.status().WithContext(dir);
  for (const std::string& warning : (*opened)->warnings()) {
    ReportWarning(dir, warning);
  }
  if (version == 0) return opened;
  return (*opened)->Checkout(version);
}

Result<expr::Scalar> ParseKey(const std::string& text, const Field& column) {
  const DataType& type = *column.type();
  auto parse_int = [&text]() -> std::optional<int64_t> {
    int64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
  };
  if (type.is_integer()) {
    std::optional<int64_t> value = parse_int();
    if (!value) {
      return Status::InvalidArgument(fmt::format("key '{}' is not an integer (column '{}' is {})",
                                                 text, column.name(), type.ToString()));
    }
    return expr::Scalar::Int64(*value);
  }
  if (type.id() == TypeId::kTimestamp) {
    // Integer microseconds, or RFC 3339 text read by the expression parser's TIMESTAMP literal.
    if (std::optional<int64_t> micros = parse_int()) return expr::Scalar::Timestamp(*micros);
    std::string quoted;
    for (char c : text) quoted += c == '\'' ? std::string("''") : std::string(1, c);
    Result<expr::Expr> parsed = expr::Parse(fmt::format("k = TIMESTAMP '{}'", quoted));
    if (!parsed.ok()) {
      return Status::InvalidArgument(fmt::format(
          "key '{}' is neither integer microseconds nor an RFC 3339 time (column '{}' is {})", text,
          column.name(), type.ToString()));
    }
    return parsed->operands()[1].literal();
  }
  return expr::Scalar::String(text);
}

Result<std::vector<expr::Scalar>> ParseKeys(const table::Table& table,
                                            const std::vector<std::string>& texts) {
  std::optional<int> key = table.primary_key_column();
  if (!key) {
    return Status::InvalidArgument(
        "the table has no primary key (create one with --primary-key); select rows with "
        "--filter on scan or delete instead");
  }
  std::vector<expr::Scalar> keys;
  for (const std::string& text : texts) {
    STRATA_ASSIGN_OR_RETURN(expr::Scalar value, ParseKey(text, *table.schema()->field(*key)));
    keys.push_back(std::move(value));
  }
  return keys;
}

std::string FormatTime(int64_t micros) {
  int64_t seconds = micros / 1000000;
  int64_t fraction = micros % 1000000;
  if (fraction < 0) {
    fraction += 1000000;
    --seconds;
  }
  std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, fraction);
}

std::string Indent(const std::string& text) {
  std::string out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) out += "  " + line + "\n";
  return out;
}

std::string FormatVerifyReport(const table::VerifyReport& report, uint64_t version) {
  std::string out;
  for (const std::string& problem : report.problems) out += problem + "\n";
  out +=
      fmt::format("checked {} manifests and {} files ({}) at version {}: {}\n",
                  report.manifests_checked, report.files_checked, FormatBytes(report.bytes_checked),
                  version, report.ok() ? "ok" : fmt::format("{} problems", report.problems.size()));
  return out;
}

void AddCompactionBoundOptions(CLI::App* cmd, CompactionBounds* out) {
  cmd->add_option("--target-rows", out->target_rows,
                  "Merge fragments with fewer live rows up to this many rows")
      ->check(IntegerAtLeast<int64_t>(1))
      ->capture_default_str();
  cmd->add_option("--max-source-fragments", out->max_source_fragments,
                  "Rewrite at most this many fragments (0 = no bound)")
      ->check(IntegerAtLeast<int>(0))
      ->capture_default_str();
}

RowProgress::RowProgress(std::string what)
    : what_(std::move(what)),
      enabled_(::isatty(STDERR_FILENO) == 1),
      last_draw_(std::chrono::steady_clock::now()) {}

table::ProgressCallback RowProgress::Callback() {
  if (!enabled_) return {};
  return [this](int64_t done, int64_t total) {
    auto now = std::chrono::steady_clock::now();
    if (now - last_draw_ < std::chrono::milliseconds(200)) return;
    last_draw_ = now;
    drawn_ = true;
    std::string pct = total > 0 ? fmt::format(" {:3.0f}%", 100.0 * done / total) : std::string();
    std::fprintf(stderr, "\r%s%s  %lld of %lld rows   ", what_.c_str(), pct.c_str(),
                 static_cast<long long>(done), static_cast<long long>(total));
    std::fflush(stderr);
  };
}

void RowProgress::Finish() {
  if (!drawn_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

std::string ResolveFormat(const std::string& format) {
  if (!format.empty()) return format;
  return ::isatty(STDOUT_FILENO) == 1 ? "table" : "jsonl";
}

RowPrinter::RowPrinter(const RowOutputOptions& options, SchemaPtr schema)
    : options_(options), table_(ResolveFormat(options.format) == "table"), schema_(schema) {}

Status RowPrinter::Add(const RecordBatch& batch) {
  if (batch.num_rows() == 0) return Status::OK();
  if (table_) {
    kept_.push_back(batch);
    return Status::OK();
  }
  std::string out;
  json::JsonWriteOptions json_options{.timestamps_as_micros = options_.timestamps_as_micros};
  STRATA_RETURN_IF_ERROR(json::AppendRowsToJsonLines(batch, &out, json_options));
  return WriteStdout(out);
}

Status RowPrinter::Finish() {
  if (table_) {
    if (kept_.empty()) kept_.push_back(RecordBatch::MakeEmpty(schema_));
    STRATA_RETURN_IF_ERROR(
        WriteStdout(FormatTable(kept_, {.max_cell_width = options_.max_cell_width})));
  }
  return FlushStdout();
}

void AddRowOutputOptions(CLI::App* cmd, RowOutputOptions* out) {
  cmd->add_option("--format", out->format,
                  "jsonl (one JSON object per row) or table; default: table on a terminal, "
                  "jsonl otherwise")
      ->check(CLI::IsMember({"jsonl", "table"}));
  cmd->add_option("--max-cell-width", out->max_cell_width, "Table cell width limit")
      ->check(IntegerAtLeast<int>(1))
      ->capture_default_str();
  cmd->add_flag("--timestamps-as-micros", out->timestamps_as_micros,
                "JSON: timestamps as integer microseconds instead of RFC 3339");
}

int Finish(const Status& s) { return s.ok() ? 0 : ReportError(s); }

namespace {

// --- create ----------------------------------------------------------------------------------

struct CreateOptions {
  std::string dir;
  std::string schema;
  std::string primary_key;
};

// The schema with kPrimaryKeyMetadata set on `column`, which must exist and be non-nullable.
Result<SchemaPtr> MarkPrimaryKey(const Schema& schema, const std::string& column,
                                 const std::string& source) {
  int i = schema.GetFieldIndex(column);
  if (i < 0) {
    return Status::InvalidArgument(
        fmt::format("--primary-key: the schema in {} has no column named '{}'", source, column));
  }
  const FieldPtr& key = schema.field(i);
  if (key->nullable()) {
    return Status::InvalidArgument(fmt::format(
        "--primary-key: column '{}' is nullable in {}; a primary key must be non-nullable "
        "(set \"nullable\": false on it)",
        column, source));
  }
  KeyValueMetadata metadata = key->metadata();
  metadata.Set(std::string(table::kPrimaryKeyMetadata), "true");
  std::vector<FieldPtr> fields = schema.fields();
  fields[i] = key->WithMetadata(std::move(metadata));
  return strata::schema(std::move(fields), schema.metadata());
}

Status RunCreate(const CreateOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(SchemaPtr schema, LoadSchema(opt.schema));
  if (!opt.primary_key.empty()) {
    STRATA_ASSIGN_OR_RETURN(schema, MarkPrimaryKey(*schema, opt.primary_key, opt.schema));
  }
  std::error_code ec;
  if (std::filesystem::is_directory(opt.dir, ec)) {
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> store, OpenLocalObjectStore(opt.dir));
    STRATA_ASSIGN_OR_RETURN(bool exists, table::Table::Exists(*store, ""));
    if (exists) {
      return Status::AlreadyExists(fmt::format("a table already exists at '{}'", opt.dir));
    }
  }
  STRATA_RETURN_IF_ERROR(CheckNewOrEmptyDirectory(opt.dir, "table"));
  // A failed create leaves the directory as it found it: gone when it did not exist (with
  // the parents made for it), empty when it was empty (anything in it then is ours).
  std::filesystem::path made_root;  // the outermost directory this create makes, if any
  for (std::filesystem::path p = std::filesystem::absolute(opt.dir, ec).lexically_normal();
       !p.empty() && !std::filesystem::exists(p, ec); p = p.parent_path()) {
    made_root = p;
    if (p == p.parent_path()) break;
  }
  // `ours`: the table there is the one this create made. Otherwise a table there belongs to a
  // create that raced this one and won: nothing is removed.
  auto undo = [&](const Status& failed, bool ours = false) {
    std::error_code ignored;
    if (!ours) {
      Result<std::shared_ptr<ObjectStore>> there = OpenLocalObjectStore(opt.dir);
      Result<bool> raced = there.ok() ? table::Table::Exists(**there, "") : Result<bool>(false);
      if (!raced.ok() || *raced) return failed.WithContext(opt.dir);
    }
    if (!made_root.empty()) {
      std::filesystem::remove_all(made_root, ignored);
    } else {
      std::vector<std::filesystem::path> made;
      for (const auto& entry : std::filesystem::directory_iterator(opt.dir, ignored)) {
        made.push_back(entry.path());
      }
      for (const std::filesystem::path& path : made) std::filesystem::remove_all(path, ignored);
    }
    return failed.WithContext(opt.dir);
  };
  Result<std::shared_ptr<ObjectStore>> store = OpenLocalObjectStore(opt.dir);
  if (!store.ok()) return undo(store.status());
  Result<std::shared_ptr<table::Table>> created = table::Table::Create(*store, "", schema);
  if (!created.ok()) return undo(created.status());
  const table::Table& t = **created;
  std::string key =
      t.primary_key_column()
          ? fmt::format(", primary key '{}'", t.schema()->field(*t.primary_key_column())->name())
          : std::string();
  // Exit status 1 means no table, even when only this message was lost.
  SetOutputFailureNote("the new table was not kept");
  Status printed = WriteStdout(fmt::format("created table at {}: {} columns{} -> version {}\n",
                                           opt.dir, t.schema()->num_fields(), key, t.version()));
  if (printed.ok()) printed = FlushStdout();
  if (!printed.ok()) return undo(printed, /*ours=*/true);
  return Status::OK();
}

// --- append ----------------------------------------------------------------------------------

struct AppendOptions {
  std::string dir;
  std::vector<std::string> files;
  std::string format = "auto";
  bool ignore_unknown_fields = false;
};

bool IsArrowInput(const std::string& path, const std::string& format) {
  if (format != "auto") return format == "arrow";
  std::string ext = std::filesystem::path(path).extension().string();
  return ext == ".arrow" || ext == ".arrows" || ext == ".ipc" || ext == ".feather";
}

Status ReadJsonInput(const std::string& path, const SchemaPtr& schema, bool ignore_unknown,
                     std::vector<RecordBatch>* out, int64_t* rows) {
  json::JsonReadOptions options{.ignore_unknown_fields = ignore_unknown, .batch_rows = 65536};
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<JsonLinesInput> input,
                          JsonLinesInput::Open(path, schema, options));
  return input->ForEachBatch(fmt::format("reading {}", path), [&](RecordBatch batch) {
    *rows += batch.num_rows();
    out->push_back(std::move(batch));
    return Status::OK();
  });
}

constexpr std::string_view kArrowFileMagic = "ARROW1";

// An Arrow IPC file (by its magic) or stream.
Status ReadArrowInput(const std::string& path, std::vector<RecordBatch>* out, int64_t* rows) {
  Buffer whole;
  if (path == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    whole = Buffer::Copy(ss.str());
  } else {
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ipc::RandomAccessSource> source,
                            ipc::SourceFromFile(path));
    STRATA_ASSIGN_OR_RETURN(int64_t size, source->Size());
    STRATA_ASSIGN_OR_RETURN(Buffer head,
                            source->ReadAt(0, std::min<int64_t>(size, kArrowFileMagic.size())));
    if (head.view() == kArrowFileMagic) {
      STRATA_ASSIGN_OR_RETURN(auto file, ipc::FileReader::Open(source));
      Progress progress(fmt::format("reading {}", path), size);
      for (int i = 0; i < file->num_batches(); ++i) {
        Result<RecordBatch> batch = file->ReadBatch(i);
        if (!batch.ok()) {
          progress.Finish();
          return batch.status();
        }
        *rows += batch->num_rows();
        out->push_back(*std::move(batch));
        progress.Update(*rows, size * (i + 1) / file->num_batches());
      }
      progress.Finish();
      return Status::OK();
    }
    STRATA_ASSIGN_OR_RETURN(whole, source->ReadAt(0, size));
  }
  Result<std::unique_ptr<ipc::StreamReader>> stream = ipc::StreamReader::Open(whole);
  if (!stream.ok()) {
    return stream.status().WithContext("neither an Arrow IPC file nor a stream");
  }
  while (true) {
    STRATA_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, (*stream)->Next());
    if (!batch) break;
    *rows += batch->num_rows();
    out->push_back(*std::move(batch));
  }
  return Status::OK();
}

Status RunAppend(const AppendOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> t, OpenTable(opt.dir));
  STRATA_RETURN_IF_ERROR(CheckTableChangeAllowed(opt.dir, *t, store::BaseTableChange::kAppend));
  // Every input is read (and checked against the schema) before anything is written, so the
  // whole append is one commit and bad input anywhere leaves the table unchanged.
  std::vector<RecordBatch> batches;
  int64_t rows = 0;
  for (const std::string& path : opt.files) {
    Status s = IsArrowInput(path, opt.format)
                   ? ReadArrowInput(path, &batches, &rows)
                   : ReadJsonInput(path, t->schema(), opt.ignore_unknown_fields, &batches, &rows);
    if (!s.ok()) return s.WithContext(path == "-" ? "stdin" : path);
  }
  if (rows == 0) {
    return WriteStdout(fmt::format("no rows to append; version {} unchanged\n", t->version()));
  }
  RowProgress progress("appending");
  Result<table::AppendResult> result = t->Append(batches, progress.Callback());
  progress.Finish();
  if (!result.ok()) return result.status().WithContext(opt.dir);
  SetOutputFailureNote(
      fmt::format("the {} rows were appended -> version {}", result->rows, result->version));
  return WriteStdout(fmt::format("appended {} rows in {} fragments -> version {}\n", result->rows,
                                 result->fragments, result->version));
}

// --- scan / get / count ----------------------------------------------------------------------

struct ScanCommandOptions {
  std::string dir;
  std::string filter;
  std::string columns;
  int64_t limit = -1;
  int64_t offset = 0;
  uint64_t version = 0;
  bool with_row_address = false;
  RowOutputOptions output;
};

Status RunScan(const ScanCommandOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> columns, ParseColumns(opt.columns));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> t, OpenTable(opt.dir, opt.version));
  table::ScanOptions scan{.columns = std::move(columns),
                          .filter = opt.filter,
                          .offset = opt.offset,
                          .with_row_address = opt.with_row_address};
  if (opt.limit >= 0) scan.limit = opt.limit;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<table::BatchIterator> it, t->Scan(scan));
  RowPrinter printer(opt.output, it->schema());
  while (true) {
    STRATA_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, it->Next());
    if (!batch) break;
    STRATA_RETURN_IF_ERROR(printer.Add(*batch));
  }
  return printer.Finish();
}

struct GetOptions {
  std::string dir;
  std::vector<std::string> keys;
  std::string columns;
  uint64_t version = 0;
  RowOutputOptions output;
};

Status RunGet(const GetOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> t, OpenTable(opt.dir, opt.version));
  STRATA_ASSIGN_OR_RETURN(std::vector<expr::Scalar> keys, ParseKeys(*t, opt.keys));
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> columns, ParseColumns(opt.columns));
  SchemaPtr schema = t->schema();
  if (!columns.empty()) {
    STRATA_ASSIGN_OR_RETURN(std::vector<int> indices, schema->FieldIndices(columns));
    STRATA_ASSIGN_OR_RETURN(schema, schema->Project(indices));
  }
  // One lookup per key: rows come out in the order the keys were given, and a missing key is
  // known even when the key column is not printed.
  RowPrinter printer(opt.output, schema);
  std::vector<std::string> missing;
  for (size_t i = 0; i < keys.size(); ++i) {
    STRATA_ASSIGN_OR_RETURN(RecordBatch rows, t->LookupKeys({keys[i]}, columns));
    if (rows.num_rows() == 0) missing.push_back(fmt::format("'{}'", opt.keys[i]));
    STRATA_RETURN_IF_ERROR(printer.Add(rows));
  }
  STRATA_RETURN_IF_ERROR(printer.Finish());
  if (!missing.empty()) {
    return Status::NotFound(fmt::format("no row with key {} in {} (version {})",
                                        fmt::join(missing, ", "), opt.dir, t->version()));
  }
  return Status::OK();
}

struct CountOptions {
  std::string dir;
  std::string filter;
  uint64_t version = 0;
};

Status RunCount(const CountOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> t, OpenTable(opt.dir, opt.version));
  STRATA_ASSIGN_OR_RETURN(int64_t rows, t->CountRows(opt.filter));
  return WriteStdout(fmt::format("{}\n", rows));
}

// --- delete / add-columns --------------------------------------------------------------------

struct DeleteOptions {
  std::string dir;
  std::string filter;
  std::vector<std::string> keys;
};

Status RunDelete(const DeleteOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> t, OpenTable(opt.dir));
  STRATA_RETURN_IF_ERROR(CheckTableChangeAllowed(opt.dir, *t, store::BaseTableChange::kDeleteRows));
  std::vector<expr::Scalar> keys;
  if (!opt.keys.empty()) {
    STRATA_ASSIGN_OR_RETURN(keys, ParseKeys(*t, opt.keys));
  }
  Result<table::DeleteResult> result =
      opt.keys.empty() ? t->Delete(opt.filter) : t->DeleteKeys(keys);
  if (!result.ok()) return result.status().WithContext(opt.dir);
  if (result->rows_deleted == 0) {
    return WriteStdout(fmt::format("deleted 0 rows; version {} unchanged\n", result->version));
  }
  return WriteStdout(
      fmt::format("deleted {} rows -> version {}\n", result->rows_deleted, result->version));
}

std::string Trim(std::string_view text) {
  size_t b = text.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  size_t e = text.find_last_not_of(" \t");
  return std::string(text.substr(b, e - b + 1));
}

// "name: type" -> a nullable field.
Result<FieldPtr> ParseColumnSpec(const std::string& spec) {
  size_t colon = spec.find(':');
  std::string name = colon == std::string::npos ? std::string() : Trim(spec.substr(0, colon));
  if (name.empty()) {
    return Status::InvalidArgument(
        fmt::format("--column '{}': expected 'name: type', e.g. 'score: float64'", spec));
  }
  std::string type_text = Trim(std::string_view(spec).substr(colon + 1));
  constexpr std::string_view kNotNull = "not null";
  if (type_text.size() >= kNotNull.size() &&
      type_text.substr(type_text.size() - kNotNull.size()) == kNotNull) {
    return Status::InvalidArgument(fmt::format(
        "--column '{}': added columns must be nullable (existing rows read them as null)", spec));
  }
  Result<DataTypePtr> type = ParseDataType(type_text);
  if (!type.ok()) return type.status().WithContext(fmt::format("--column '{}'", spec));
  return field(name, *type, /*nullable=*/true);
}

struct AddColumnsOptions {
  std::string dir;
  std::vector<std::string> columns;
};

Status RunAddColumns(const AddColumnsOptions& opt) {
  std::vector<FieldPtr> fields;
  std::vector<std::string> names;
  for (const std::string& spec : opt.columns) {
    STRATA_ASSIGN_OR_RETURN(FieldPtr f, ParseColumnSpec(spec));
    names.push_back(f->name());
    fields.push_back(std::move(f));
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> t, OpenTable(opt.dir));
  STRATA_RETURN_IF_ERROR(CheckTableChangeAllowed(opt.dir, *t, store::BaseTableChange::kAddColumns));
  Result<uint64_t> version = t->AddColumns(fields);
  if (!version.ok()) return version.status().WithContext(opt.dir);
  return WriteStdout(
      fmt::format("added columns {} -> version {}\n", fmt::join(names, ", "), *version));
}

}  // namespace

void AddTableCommands(CLI::App& app, int* exit_code) {
  CLI::App* group = app.add_subcommand(
      "table", "Create, load, query and maintain a versioned table in a local directory");
  group->require_subcommand(1);
  constexpr const char* kDirHelp = "Table directory";
  constexpr const char* kVersionHelp = "Read this version instead of the latest";

  auto create = std::make_shared<CreateOptions>();
  CLI::App* create_cmd =
      group->add_subcommand("create", "Create an empty table; refuses to overwrite a table");
  create_cmd->add_option("DIR", create->dir, "New table directory")->required();
  create_cmd->add_option("--schema", create->schema, "Schema JSON file (or an inline JSON object)")
      ->required();
  create_cmd->add_option("--primary-key", create->primary_key,
                         "Column to index as the primary key (must be non-nullable)");
  create_cmd->callback([create, exit_code] { *exit_code = Finish(RunCreate(*create)); });

  auto append = std::make_shared<AppendOptions>();
  CLI::App* append_cmd = group->add_subcommand(
      "append",
      "Append JSON lines or Arrow IPC files as one commit; nothing is written on bad "
      "input");
  append_cmd->add_option("DIR", append->dir, kDirHelp)->required();
  append_cmd->add_option("FILE", append->files, "Inputs ('-' for stdin)")->required();
  append_cmd
      ->add_option("--format", append->format,
                   "auto (.arrow/.arrows/.ipc/.feather are Arrow IPC, anything else JSON "
                   "lines), jsonl or arrow")
      ->check(CLI::IsMember({"auto", "jsonl", "arrow"}))
      ->capture_default_str();
  append_cmd->add_flag("--ignore-unknown-fields", append->ignore_unknown_fields,
                       "JSON: skip keys that are not columns of the table");
  append_cmd->callback([append, exit_code] { *exit_code = Finish(RunAppend(*append)); });

  auto scan = std::make_shared<ScanCommandOptions>();
  CLI::App* scan_cmd = group->add_subcommand("scan", "Print rows, optionally filtered");
  scan_cmd->add_option("DIR", scan->dir, kDirHelp)->required();
  scan_cmd->add_option("--filter", scan->filter, "Predicate, e.g. \"reward > 0.5\"");
  scan_cmd->add_option("--columns", scan->columns, "Comma-separated columns to print");
  scan_cmd->add_option("--limit", scan->limit, "Print at most this many rows")
      ->check(IntegerAtLeast<int64_t>(0));
  scan_cmd->add_option("--offset", scan->offset, "Skip this many matching rows first")
      ->check(IntegerAtLeast<int64_t>(0));
  scan_cmd->add_option("--version", scan->version, kVersionHelp)
      ->check(IntegerAtLeast<uint64_t>(1));
  scan_cmd->add_flag("--with-row-address", scan->with_row_address,
                     "Add the _rowaddr column (fragment id << 32 | row offset)");
  AddRowOutputOptions(scan_cmd, &scan->output);
  scan_cmd->callback([scan, exit_code] { *exit_code = Finish(RunScan(*scan)); });

  auto get = std::make_shared<GetOptions>();
  CLI::App* get_cmd = group->add_subcommand(
      "get", "Print the rows with these primary keys (exit 1 when a key is missing)");
  get_cmd->add_option("DIR", get->dir, kDirHelp)->required();
  get_cmd->add_option("KEY", get->keys, "Primary-key values")->required();
  get_cmd->add_option("--columns", get->columns, "Comma-separated columns to print");
  get_cmd->add_option("--version", get->version, kVersionHelp)->check(IntegerAtLeast<uint64_t>(1));
  AddRowOutputOptions(get_cmd, &get->output);
  get_cmd->callback([get, exit_code] { *exit_code = Finish(RunGet(*get)); });

  auto count = std::make_shared<CountOptions>();
  CLI::App* count_cmd = group->add_subcommand("count", "Print the number of live rows");
  count_cmd->add_option("DIR", count->dir, kDirHelp)->required();
  count_cmd->add_option("--filter", count->filter, "Count only the rows matching this predicate");
  count_cmd->add_option("--version", count->version, kVersionHelp)
      ->check(IntegerAtLeast<uint64_t>(1));
  count_cmd->callback([count, exit_code] { *exit_code = Finish(RunCount(*count)); });

  auto del = std::make_shared<DeleteOptions>();
  CLI::App* delete_cmd =
      group->add_subcommand("delete", "Delete rows by predicate or by primary key");
  delete_cmd->add_option("DIR", del->dir, kDirHelp)->required();
  CLI::Option_group* target = delete_cmd->add_option_group("target", "What to delete");
  target->add_option("--filter", del->filter, "Delete the rows matching this predicate");
  target->add_option("--key", del->keys, "Delete the rows with these primary keys");
  target->require_option(1);
  delete_cmd->callback([del, exit_code] { *exit_code = Finish(RunDelete(*del)); });

  auto add_columns = std::make_shared<AddColumnsOptions>();
  CLI::App* add_cmd =
      group->add_subcommand("add-columns", "Add nullable columns; existing rows read them as null");
  add_cmd->add_option("DIR", add_columns->dir, kDirHelp)->required();
  add_cmd->add_option("--column", add_columns->columns, "'name: type', e.g. 'score: float64'")
      ->required();
  add_cmd->callback([add_columns, exit_code] { *exit_code = Finish(RunAddColumns(*add_columns)); });

  AddTableMaintenanceCommands(*group, exit_code);
}

}  // namespace strata::cli
