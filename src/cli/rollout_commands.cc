// `strata rollout add | list | get | trajectory | blob | flush | merge | compact | stats |
// verify`: a
// rollout store (include/strata/rollout_store.h, the store at the root of a local directory)
// from the command line.
#include "rollout_commands.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli_common.h"
#include "store_commands.h"
#include "strata/json.h"
#include "strata/object_store.h"
#include "strata/rollout_store.h"
#include "strata/storage_base.h"
#include "strata/table.h"
#include "table_cli.h"

namespace strata::cli {
namespace {

using store::RolloutRecord;
using store::RolloutStore;

// The rollout store in local directory `dir` (prefix ""), writing as shard `shard`. Without
// `create`, NotFound (and nothing created) when `dir` is not a directory or holds no store.
Result<std::unique_ptr<RolloutStore>> OpenStore(const std::string& dir, const std::string& shard,
                                                bool create = false, bool sync = true,
                                                bool seal_on_close = true) {
  std::error_code ec;
  const bool is_directory = std::filesystem::is_directory(dir, ec);
  if (!is_directory && !create) {
    return Status::NotFound(fmt::format("no rollout store at '{}': not a directory", dir));
  }
  std::shared_ptr<ObjectStore> objects;
  bool has_table = false;
  if (is_directory) {
    STRATA_ASSIGN_OR_RETURN(objects, OpenLocalObjectStore(dir, {.sync = sync}));
    STRATA_ASSIGN_OR_RETURN(has_table, table::Table::Exists(*objects, ""));
  }
  if (!has_table) {
    if (!create) return Status::NotFound(fmt::format("no rollout store at '{}'", dir));
    // Like `table create`: a store is only made in a new or empty directory.
    STRATA_RETURN_IF_ERROR(CheckNewOrEmptyDirectory(dir, "rollout store"));
  }
  if (objects == nullptr) {
    STRATA_ASSIGN_OR_RETURN(objects, OpenLocalObjectStore(dir, {.sync = sync}));
  }
  if (has_table) {
    // A store of another kind is refused before RolloutStore::Open, whose schema evolution
    // would add the rollout columns to it.
    Result<std::shared_ptr<table::Table>> base = table::Table::Open(objects, "");
    if (!base.ok()) return base.status().WithContext(dir);
    STRATA_ASSIGN_OR_RETURN(std::optional<std::string> owner,
                            store::OwningStoreKind(*objects, "", *(*base)->schema()));
    if (owner && *owner != store::kRolloutStoreKind && *owner != store::kUnrecordedStoreKind) {
      return Status::InvalidArgument(fmt::format(
          "{}: not a rollout store: it is a {} store (use `strata {} ...`)", dir, *owner, *owner));
    }
  }
  store::RolloutStoreOptions options;
  options.base.shard_id = shard;
  options.base.seal_on_close = seal_on_close;
  Result<std::unique_ptr<RolloutStore>> opened =
      RolloutStore::Open(std::move(objects), "", std::move(options), create);
  if (!opened.ok()) {
    // The schema checks at open refuse a table of another schema (e.g. `strata table create`).
    bool foreign = has_table && opened.status().code() == StatusCode::kInvalidArgument;
    return opened.status().WithContext(foreign ? fmt::format("{}: not a rollout store", dir) : dir);
  }
  return opened;
}

// --filter: RolloutFilters::FromJson, its errors prefixed with the option.
Result<store::RolloutFilters> ParseFilter(const std::string& text) {
  Result<store::RolloutFilters> parsed = store::RolloutFilters::FromJson(text);
  if (!parsed.ok()) return parsed.status().WithContext("--filter");
  return parsed;
}

Result<store::ListSource> ParseSource(const std::string& text) {
  if (text == "all") return store::ListSource::kAll;
  if (text == "wal") return store::ListSource::kWal;
  if (text == "fragments") return store::ListSource::kFragments;
  return Status::InvalidArgument(
      fmt::format("unknown source '{}': expected all, wal or fragments", text));
}

// --- Rows out ------------------------------------------------------------------------------

// The rollout schema without binary_payload: what list, get and trajectory print.
const SchemaPtr& NonBlobSchema() {
  static const SchemaPtr schema = [] {
    std::vector<FieldPtr> fields;
    for (const FieldPtr& f : store::RolloutSchema()->fields()) {
      if (f->name() != "binary_payload") fields.push_back(f);
    }
    return std::make_shared<Schema>(std::move(fields));
  }();
  return schema;
}

// The printed columns: every non-blob column, or the --columns list checked against them.
Result<std::vector<int>> ColumnIndices(const std::string& columns) {
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> names, ParseColumns(columns));
  std::vector<int> out;
  if (names.empty()) {
    for (int i = 0; i < NonBlobSchema()->num_fields(); ++i) out.push_back(i);
    return out;
  }
  for (const std::string& name : names) {
    int i = NonBlobSchema()->GetFieldIndex(name);
    if (i >= 0) {
      out.push_back(i);
    } else if (name == "binary_payload") {
      return Status::InvalidArgument(
          "--columns: binary_payload is not printed with rows; read it with `strata rollout blob`");
    } else {
      return Status::InvalidArgument(
          fmt::format("--columns: the rollout schema has no column '{}'", name));
    }
  }
  return out;
}

bool TableFormat(const RowOutputOptions& output) {
  if (!output.format.empty()) return output.format == "table";
  return ::isatty(STDOUT_FILENO) == 1;
}

// Prints records through a RowPrinter, projected to `columns`.
class RecordPrinter {
 public:
  RecordPrinter(const RowOutputOptions& output, std::vector<int> columns)
      : columns_(std::move(columns)), printer_(output, *NonBlobSchema()->Project(columns_)) {}

  Status Add(const std::vector<RolloutRecord>& records) {
    if (records.empty()) return Status::OK();
    STRATA_ASSIGN_OR_RETURN(RecordBatch batch,
                            store::EncodeRolloutRecords(records, NonBlobSchema()));
    STRATA_ASSIGN_OR_RETURN(RecordBatch projected, batch.Project(columns_));
    return printer_.Add(projected);
  }
  Status Finish() { return printer_.Finish(); }

 private:
  std::vector<int> columns_;
  RowPrinter printer_;
};

// --- add -----------------------------------------------------------------------------------

struct AddOptions {
  std::string dir;
  std::vector<std::string> files;
  std::string shard;
  bool flush = false;
  bool nosync = false;
  bool ignore_unknown_fields = false;
};

// Required columns that get a value when the input leaves them out (or null), as the
// reference server does: problem_id = rollout_id, sequence_order = 0, role = "assistant",
// created_at = now, content_type = "text/plain".
constexpr std::string_view kDefaultedColumns[] = {"problem_id", "sequence_order", "role",
                                                  "created_at", "content_type"};

// The rollout schema with the defaulted columns nullable, so the JSON reader lets them be
// missing; id and rollout_id stay required.
SchemaPtr AddInputSchema() {
  std::vector<FieldPtr> fields = store::RolloutSchema()->fields();
  for (FieldPtr& f : fields) {
    for (std::string_view name : kDefaultedColumns) {
      if (f->name() == name) f = f->WithNullable(true);
    }
  }
  return std::make_shared<Schema>(std::move(fields));
}

// Reads one JSON lines input into records with the defaults filled in; InvalidArgument
// (naming the row) for a value that does not fit or an empty id, rollout_id or problem_id.
Status ReadRecords(const std::string& path, const SchemaPtr& schema, bool ignore_unknown,
                   int64_t now_micros, std::vector<RolloutRecord>* out) {
  json::JsonReadOptions options{.ignore_unknown_fields = ignore_unknown, .batch_rows = 8192};
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<JsonLinesInput> input,
                          JsonLinesInput::Open(path, schema, options));
  const int problem_id = schema->GetFieldIndex("problem_id");
  const int created_at = schema->GetFieldIndex("created_at");
  int64_t rows = 0;
  return input->ForEachBatch(fmt::format("reading {}", path), [&](RecordBatch batch) -> Status {
    // Decoding leaves a null required column at the record's default (sequence_order 0,
    // role "assistant", content_type "text/plain"); the other two depend on the row.
    STRATA_ASSIGN_OR_RETURN(std::vector<RolloutRecord> records, store::DecodeRolloutRecords(batch));
    for (int64_t i = 0; i < batch.num_rows(); ++i) {
      RolloutRecord& r = records[i];
      ++rows;
      if (batch.column(problem_id).IsNull(i)) r.problem_id = r.rollout_id;
      if (batch.column(created_at).IsNull(i)) r.created_at_micros = now_micros;
      for (auto [name, value] : {std::pair<const char*, const std::string*>{"id", &r.id},
                                 {"rollout_id", &r.rollout_id},
                                 {"problem_id", &r.problem_id}}) {
        if (value->empty()) {
          return Status::InvalidArgument(
              fmt::format("record {}{}: '{}' must not be empty", rows,
                          r.id.empty() ? std::string() : fmt::format(" (id '{}')", r.id), name));
        }
      }
      out->push_back(std::move(r));
    }
    return Status::OK();
  });
}

Status RunAdd(const AddOptions& opt) {
  // Every input is read and checked before the store is opened, so bad input writes nothing
  // (and creates no store).
  const int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  SchemaPtr schema = AddInputSchema();
  std::vector<std::string> files = opt.files.empty() ? std::vector<std::string>{"-"} : opt.files;
  std::vector<RolloutRecord> records;
  for (const std::string& path : files) {
    Status s = ReadRecords(path, schema, opt.ignore_unknown_fields, now, &records);
    if (!s.ok()) return s.WithContext(path == "-" ? "stdin" : path);
  }
  if (records.empty()) return WriteStdout("no rows to add\n");
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RolloutStore> rollouts,
                          OpenStore(opt.dir, opt.shard, /*create=*/true, /*sync=*/!opt.nosync,
                                    /*seal_on_close=*/opt.flush));
  Result<uint64_t> added = rollouts->Add(records);
  const std::string shard = ShardName(opt.shard);
  if (added.status().code() == StatusCode::kFenced) {
    // Add retried once already. Rows are keyed by id, so adding the same rows again replaces
    // any that did get in with the same values.
    return added.status().WithContext(
        fmt::format("{}: another writer claimed shard '{}' while adding, so the {} rows were not "
                    "acknowledged; adding them again is safe (or add them with another --shard)",
                    opt.dir, shard, records.size()));
  }
  if (!added.ok()) return added.status().WithContext(opt.dir);
  if (opt.flush) {
    Result<store::FlushOutcome> flushed = rollouts->Flush();
    if (!flushed.ok()) return flushed.status().WithContext(opt.dir);
    if (*flushed == store::FlushOutcome::kFenced) {
      return Status::Fenced(fmt::format(
          "{}: the {} rows are durable, but another writer claimed shard '{}' before they were "
          "published; they become visible when that writer flushes (or run `strata rollout "
          "flush`)",
          opt.dir, records.size(), shard));
    }
    SetOutputFailureNote(fmt::format("the {} rows were durably added to shard '{}' and flushed",
                                     records.size(), shard));
    STRATA_RETURN_IF_ERROR(WriteStdout(
        fmt::format("added {} rows to shard '{}', flushed: visible now\n", records.size(), shard)));
    return FlushStdout();
  }
  SetOutputFailureNote(fmt::format(
      "the {} rows were {} to shard '{}' (visible after `strata rollout flush`)", records.size(),
      opt.nosync ? "added (not fsynced: --nosync)" : "durably added", shard));
  STRATA_RETURN_IF_ERROR(WriteStdout(fmt::format(
      "added {} rows to shard '{}' (durable; visible after `strata rollout flush` or `strata "
      "rollout merge`)\n",
      records.size(), shard)));
  // The store was opened with seal_on_close off: closing leaves the rows in the shard's WAL,
  // and the shard's next writer (flush, merge, the next add) replays and publishes them.
  Status closed = rollouts->Close();
  if (!closed.ok()) return closed.WithContext(opt.dir);
  return FlushStdout();
}

// --- list / get / trajectory / blob --------------------------------------------------------

struct ListOptions {
  std::string dir;
  std::string filter;
  int64_t limit = 100;
  int64_t offset = 0;
  std::string source = "all";
  std::string columns;
  RowOutputOptions output;
};

Status RunList(const ListOptions& opt) {
  store::RolloutFilters filters;
  if (!opt.filter.empty()) {
    STRATA_ASSIGN_OR_RETURN(filters, ParseFilter(opt.filter));
  }
  STRATA_ASSIGN_OR_RETURN(store::ListSource source, ParseSource(opt.source));
  STRATA_ASSIGN_OR_RETURN(std::vector<int> columns, ColumnIndices(opt.columns));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RolloutStore> rollouts, OpenStore(opt.dir, ""));
  Result<store::RolloutPage> page = rollouts->ListFiltered(filters, opt.limit, opt.offset, source);
  if (!page.ok()) return page.status().WithContext(opt.dir);
  RecordPrinter printer(opt.output, std::move(columns));
  STRATA_RETURN_IF_ERROR(printer.Add(page->records));
  STRATA_RETURN_IF_ERROR(printer.Finish());
  if (!page->has_more) return Status::OK();
  const int64_t next = opt.offset + static_cast<int64_t>(page->records.size());
  if (TableFormat(opt.output)) {
    return WriteStdout(fmt::format("(more rows follow: --offset {})\n", next));
  }
  std::fprintf(stderr, "strata: more rows follow: --offset %lld\n", static_cast<long long>(next));
  return Status::OK();
}

struct GetOptions {
  std::string dir;
  std::vector<std::string> ids;
  std::string columns;
  RowOutputOptions output;
};

Status RunGet(const GetOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::vector<int> columns, ColumnIndices(opt.columns));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RolloutStore> rollouts, OpenStore(opt.dir, ""));
  // Rows in the order the ids were given; the others are still printed when one is missing.
  RecordPrinter printer(opt.output, std::move(columns));
  std::vector<std::string> missing;
  for (const std::string& id : opt.ids) {
    Result<std::optional<RolloutRecord>> record = rollouts->GetById(id);
    if (!record.ok()) return record.status().WithContext(opt.dir);
    if (!*record) {
      missing.push_back(fmt::format("'{}'", id));
      continue;
    }
    STRATA_RETURN_IF_ERROR(printer.Add({**record}));
  }
  STRATA_RETURN_IF_ERROR(printer.Finish());
  if (!missing.empty()) {
    return Status::NotFound(
        fmt::format("no visible row with id {} in {}", fmt::join(missing, ", "), opt.dir));
  }
  return Status::OK();
}

struct TrajectoryOptions {
  std::string dir;
  std::string rollout_id;
  std::string columns;
  RowOutputOptions output;
};

Status RunTrajectory(const TrajectoryOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::vector<int> columns, ColumnIndices(opt.columns));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RolloutStore> rollouts, OpenStore(opt.dir, ""));
  Result<std::vector<RolloutRecord>> records = rollouts->GetTrajectory(opt.rollout_id);
  if (!records.ok()) return records.status().WithContext(opt.dir);
  RecordPrinter printer(opt.output, std::move(columns));
  STRATA_RETURN_IF_ERROR(printer.Add(*records));
  STRATA_RETURN_IF_ERROR(printer.Finish());
  if (records->empty()) {
    return Status::NotFound(
        fmt::format("no visible rows with rollout_id '{}' in {}", opt.rollout_id, opt.dir));
  }
  return Status::OK();
}

struct BlobOptions {
  std::string dir;
  std::string id;
  std::string output;
};

Status RunBlob(const BlobOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RolloutStore> rollouts, OpenStore(opt.dir, ""));
  Result<std::optional<std::string>> blob = rollouts->GetBlob(opt.id);
  if (!blob.ok()) return blob.status().WithContext(opt.dir);
  if (!*blob) {
    // GetBlob does not tell a missing row from a row without a payload; the message does.
    Result<std::optional<RolloutRecord>> row = rollouts->GetById(opt.id);
    if (!row.ok()) return row.status().WithContext(opt.dir);
    if (!*row)
      return Status::NotFound(fmt::format("no visible row with id '{}' in {}", opt.id, opt.dir));
    return Status::NotFound(fmt::format("row '{}' has no binary_payload", opt.id));
  }
  const std::string& bytes = **blob;
  if (opt.output.empty()) {
    STRATA_RETURN_IF_ERROR(WriteStdout(bytes));
    return FlushStdout();
  }
  {
    std::ofstream out(opt.output, std::ios::binary | std::ios::trunc);
    if (!out) return Status::IOError(fmt::format("cannot create '{}'", opt.output));
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) return Status::IOError(fmt::format("writing '{}' failed", opt.output));
  }
  std::fprintf(stderr, "wrote %zu bytes to %s\n", bytes.size(), opt.output.c_str());
  return Status::OK();
}

// --- stats / verify ----------------------------------------------------------------------------

struct StatsOptions {
  std::string dir;
  RowOutputOptions output;
};

Status RunStats(const StatsOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RolloutStore> rollouts, OpenStore(opt.dir, ""));
  Result<store::RolloutObservation> observed = rollouts->Observe();
  if (!observed.ok()) return observed.status().WithContext(opt.dir);
  const store::RolloutObservation& o = *observed;
  // One row, printed like any other (JSON line or aligned table).
  SchemaPtr schema =
      strata::schema({field("rows", int64()), field("fragments", int64()),
                      field("version", uint64()), field("last_updated", timestamp_us()),
                      field("pending_generations", int64()), field("unflushed_rows", int64())});
  STRATA_ASSIGN_OR_RETURN(
      RecordBatch row,
      json::RowsToBatch(schema,
                        fmt::format(R"({{"rows":{},"fragments":{},"version":{},)"
                                    R"("last_updated":{},"pending_generations":{},)"
                                    R"("unflushed_rows":{}}})",
                                    o.row_count, o.fragment_count, o.version, o.last_updated_micros,
                                    o.pending_generations, o.unflushed_rows)));
  RowPrinter printer(opt.output, schema);
  STRATA_RETURN_IF_ERROR(printer.Add(row));
  return printer.Finish();
}

// --- verify -----------------------------------------------------------------------------------

struct VerifyOptions {
  std::string dir;
  bool all_versions = false;
};

// The report format of `strata table verify`, over the base table and the LSM side.
Status RunVerify(const VerifyOptions& opt) {
  std::error_code ec;
  if (!std::filesystem::is_directory(opt.dir, ec)) {
    return Status::NotFound(fmt::format("no rollout store at '{}': not a directory", opt.dir));
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> objects, OpenLocalObjectStore(opt.dir));
  STRATA_ASSIGN_OR_RETURN(bool has_table, table::Table::Exists(*objects, ""));
  if (!has_table) return Status::NotFound(fmt::format("no rollout store at '{}'", opt.dir));
  Result<std::shared_ptr<table::Table>> base = table::Table::Open(objects, "");
  if (!base.ok()) {
    return base.status().WithContext(fmt::format(
        "{} (`strata table repair {} --drop-corrupt-versions` rolls back corrupt newest "
        "versions)",
        opt.dir, opt.dir));
  }
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> owner,
                          store::OwningStoreKind(*objects, "", *(*base)->schema()));
  if (!owner) {
    return Status::NotFound(fmt::format(
        "no rollout store at '{}': it holds a plain table (`strata table verify` checks it)",
        opt.dir));
  }
  Result<table::VerifyReport> verified =
      store::VerifyStore(objects, "", {.all_versions = opt.all_versions});
  if (!verified.ok()) return verified.status().WithContext(opt.dir);
  const table::VerifyReport& report = *verified;
  STRATA_RETURN_IF_ERROR(WriteStdout(FormatVerifyReport(report, (*base)->version())));
  if (report.ok()) return Status::OK();
  return Status::Corruption(fmt::format("{}: {} problems found", opt.dir, report.problems.size()));
}

}  // namespace

void AddRolloutCommands(CLI::App& app, int* exit_code) {
  CLI::App* group = app.add_subcommand(
      "rollout", "Add, read and merge RL rollouts in a rollout store in a local directory");
  group->require_subcommand(1);
  constexpr const char* kDirHelp = "Rollout store directory";
  constexpr const char* kShardHelp = "Writer identity (shard); default: \"default\"";
  constexpr const char* kColumnsHelp = "Comma-separated columns to print";

  auto add = std::make_shared<AddOptions>();
  CLI::App* add_cmd = group->add_subcommand(
      "add",
      "Add rows from JSON lines (durable on return, visible after a flush); nothing is "
      "written on bad input");
  add_cmd->add_option("DIR", add->dir, "Rollout store directory (created if missing)")->required();
  add_cmd->add_option("FILE", add->files, "JSON lines inputs ('-' or none for stdin)");
  add_cmd->add_option("--shard", add->shard, kShardHelp);
  add_cmd->add_flag("--flush", add->flush, "Seal the rows so they are visible on return");
  add_cmd->add_flag("--nosync", add->nosync,
                    "Do not fsync: the rows survive this process, not a machine crash");
  add_cmd->add_flag("--ignore-unknown-fields", add->ignore_unknown_fields,
                    "Skip keys that are not rollout columns");
  add_cmd->callback([add, exit_code] { *exit_code = Finish(RunAdd(*add)); });

  auto list = std::make_shared<ListOptions>();
  CLI::App* list_cmd = group->add_subcommand("list", "Print one page of rows in id order");
  list_cmd->add_option("DIR", list->dir, kDirHelp)->required();
  list_cmd->add_option("--filter", list->filter,
                       "JSON object of equality filters, e.g. '{\"rollout_id\": \"r1\"}'");
  list_cmd->add_option("--limit", list->limit, "Page size")
      ->check(IntegerAtLeast<int64_t>(0))
      ->capture_default_str();
  list_cmd->add_option("--offset", list->offset, "Skip this many matching rows first")
      ->check(IntegerAtLeast<int64_t>(0));
  list_cmd
      ->add_option("--source", list->source,
                   "all (base + pending generations), wal (pending generations) or fragments "
                   "(merged rows only)")
      ->check(CLI::IsMember({"all", "wal", "fragments"}))
      ->capture_default_str();
  list_cmd->add_option("--columns", list->columns, kColumnsHelp);
  AddRowOutputOptions(list_cmd, &list->output);
  list_cmd->callback([list, exit_code] { *exit_code = Finish(RunList(*list)); });

  auto get = std::make_shared<GetOptions>();
  CLI::App* get_cmd =
      group->add_subcommand("get", "Print the rows with these ids (exit 1 when an id is missing)");
  get_cmd->add_option("DIR", get->dir, kDirHelp)->required();
  get_cmd->add_option("ID", get->ids, "Row ids")->required();
  get_cmd->add_option("--columns", get->columns, kColumnsHelp);
  AddRowOutputOptions(get_cmd, &get->output);
  get_cmd->callback([get, exit_code] { *exit_code = Finish(RunGet(*get)); });

  auto trajectory = std::make_shared<TrajectoryOptions>();
  CLI::App* trajectory_cmd = group->add_subcommand(
      "trajectory", "Print the rows of one rollout by sequence_order (exit 1 when there are none)");
  trajectory_cmd->add_option("DIR", trajectory->dir, kDirHelp)->required();
  trajectory_cmd->add_option("ROLLOUT_ID", trajectory->rollout_id, "rollout_id")->required();
  trajectory_cmd->add_option("--columns", trajectory->columns, kColumnsHelp);
  AddRowOutputOptions(trajectory_cmd, &trajectory->output);
  trajectory_cmd->callback(
      [trajectory, exit_code] { *exit_code = Finish(RunTrajectory(*trajectory)); });

  auto blob = std::make_shared<BlobOptions>();
  CLI::App* blob_cmd =
      group->add_subcommand("blob", "Write the binary_payload of one row to stdout or a file");
  blob_cmd->add_option("DIR", blob->dir, kDirHelp)->required();
  blob_cmd->add_option("ID", blob->id, "Row id")->required();
  blob_cmd->add_option("--output,-o", blob->output, "Write to this file instead of stdout");
  blob_cmd->callback([blob, exit_code] { *exit_code = Finish(RunBlob(*blob)); });

  AddStoreMaintenanceCommands(
      *group, exit_code,
      [](const std::string& dir,
         const std::string& shard) -> Result<std::shared_ptr<store::StorageBase>> {
        STRATA_ASSIGN_OR_RETURN(std::unique_ptr<RolloutStore> rollouts, OpenStore(dir, shard));
        return BaseOf(std::move(rollouts));
      },
      {.rows = "rows", .dir_help = kDirHelp, .shard_help = kShardHelp});

  auto stats = std::make_shared<StatsOptions>();
  CLI::App* stats_cmd = group->add_subcommand(
      "stats", "Rows, fragments, version, pending generations and unflushed rows");
  stats_cmd->add_option("DIR", stats->dir, kDirHelp)->required();
  AddRowOutputOptions(stats_cmd, &stats->output);
  stats_cmd->callback([stats, exit_code] { *exit_code = Finish(RunStats(*stats)); });

  auto verify = std::make_shared<VerifyOptions>();
  CLI::App* verify_cmd = group->add_subcommand(
      "verify",
      "Check the base table, WAL segments, shard manifests and generations (exit 1 when there "
      "are problems)");
  verify_cmd->add_option("DIR", verify->dir, kDirHelp)->required();
  verify_cmd->add_flag("--all-versions", verify->all_versions,
                       "Check every kept version of the base table");
  verify_cmd->callback([verify, exit_code] { *exit_code = Finish(RunVerify(*verify)); });
}

}  // namespace strata::cli
