// `strata generic create | add | list | get | flush | merge | compact | stats`: a generic
// store (include/strata/generic_store.h, the store at the root of a local directory) from the
// command line.
#include "generic_commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli_common.h"
#include "store_commands.h"
#include "strata/generic_store.h"
#include "strata/ipc.h"
#include "strata/object_store.h"
#include "strata/rollout_store.h"
#include "strata/storage_base.h"
#include "strata/table.h"
#include "table_cli.h"

namespace strata::cli {
namespace {

using store::GenericStore;

// The generic store in local directory `dir` (prefix ""), writing as shard `shard`. NotFound
// (nothing created) when `dir` is not a directory or holds no store; InvalidArgument naming
// the kind when a store of another kind (or a plain table) is there — nothing is changed.
Result<std::unique_ptr<GenericStore>> OpenStore(const std::string& dir, const std::string& shard,
                                                bool sync = true, bool seal_on_close = true) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return Status::NotFound(fmt::format("no generic store at '{}': not a directory", dir));
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> objects,
                          OpenLocalObjectStore(dir, {.sync = sync}));
  STRATA_ASSIGN_OR_RETURN(bool has_table, table::Table::Exists(*objects, ""));
  if (!has_table) {
    return Status::NotFound(fmt::format(
        "no generic store at '{}' (`strata generic create {} --schema FILE` makes one)", dir, dir));
  }
  STRATA_RETURN_IF_ERROR(CheckStoreKind(objects, dir, store::kGenericStoreKind));
  store::GenericStoreOptions options;
  options.base.shard_id = shard;
  options.base.seal_on_close = seal_on_close;
  Result<std::unique_ptr<GenericStore>> opened =
      GenericStore::OpenExisting(std::move(objects), "", std::move(options));
  if (!opened.ok()) {
    const bool foreign = opened.status().code() == StatusCode::kInvalidArgument;
    return opened.status().WithContext(foreign ? fmt::format("{}: not a generic store", dir) : dir);
  }
  return opened;
}

Result<store::ListSource> ParseSource(const std::string& text) {
  if (text == "all") return store::ListSource::kAll;
  if (text == "wal") return store::ListSource::kWal;
  if (text == "fragments") return store::ListSource::kFragments;
  return Status::InvalidArgument(
      fmt::format("unknown source '{}': expected all, wal or fragments", text));
}

// --- Rows out --------------------------------------------------------------------------------

struct OutputOptions {
  std::string format = "json";  // json (JSON Lines, the codec's form) or table
  int max_cell_width = 40;
};

void AddOutputOptions(CLI::App* cmd, OutputOptions* out) {
  cmd->add_option("--format", out->format,
                  "json (one JSON object per row: nulls left out, binary as base64, timestamps "
                  "as integer microseconds) or table")
      ->check(CLI::IsMember({"json", "jsonl", "table"}))
      ->capture_default_str();
  cmd->add_option("--max-cell-width", out->max_cell_width, "Table cell width limit")
      ->check(IntegerAtLeast<int>(1))
      ->capture_default_str();
}

// Prints rows as JSON Lines (store::AppendRowsAsJson) or one aligned table.
class Printer {
 public:
  Printer(const OutputOptions& options, SchemaPtr schema)
      : table_(options.format == "table"),
        rows_({.format = "table", .max_cell_width = options.max_cell_width}, std::move(schema)) {}

  Status Add(const RecordBatch& batch) {
    if (batch.num_rows() == 0) return Status::OK();
    if (table_) return rows_.Add(batch);
    std::string out;
    STRATA_RETURN_IF_ERROR(store::AppendRowsAsJson(batch, &out));
    return WriteStdout(out);
  }
  Status Finish() { return table_ ? rows_.Finish() : Status::OK(); }

 private:
  bool table_;
  RowPrinter rows_;
};

// The printed schema of `columns` (empty = the non-blob columns).
Result<SchemaPtr> PrintedSchema(const GenericStore& s, const std::vector<std::string>& columns) {
  std::vector<std::string> names = columns.empty() ? s.spec().NonBlobColumns() : columns;
  Result<std::vector<int>> indices = s.schema()->FieldIndices(names);
  if (!indices.ok()) return indices.status().WithContext("--columns");
  return s.schema()->Project(*indices);
}

// --- create ----------------------------------------------------------------------------------

struct CreateOptions {
  std::string dir;
  std::string schema;
  bool seal_on_add = false;
};

Status RunCreate(const CreateOptions& opt) {
  std::string text = opt.schema;
  if (text.empty() || text.front() != '{') {
    Result<std::string> read = ReadTextFile(opt.schema);
    if (!read.ok()) return read.status().WithContext("--schema");
    text = *std::move(read);
  }
  Result<store::SchemaSpec> spec = store::SchemaSpec::FromJson(text);
  if (spec.ok()) {
    Status valid = spec->Validate();
    if (!valid.ok()) spec = valid;
  }
  if (!spec.ok()) return spec.status().WithContext(fmt::format("--schema {}", opt.schema));
  std::error_code ec;
  if (std::filesystem::is_directory(opt.dir, ec)) {
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> existing, OpenLocalObjectStore(opt.dir));
    STRATA_ASSIGN_OR_RETURN(bool has_table, table::Table::Exists(*existing, ""));
    if (has_table) {
      return Status::AlreadyExists(fmt::format("{}: a store or table is already there", opt.dir));
    }
  }
  STRATA_RETURN_IF_ERROR(CheckNewOrEmptyDirectory(opt.dir, "generic store"));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> objects, OpenLocalObjectStore(opt.dir));
  store::GenericStoreOptions options;
  options.seal_on_add = opt.seal_on_add;
  Result<std::unique_ptr<GenericStore>> created =
      GenericStore::Open(std::move(objects), "", *spec, std::move(options));
  if (!created.ok()) return created.status().WithContext(opt.dir);
  return WriteStdout(
      fmt::format("created generic store {} with {} columns ({})\n", opt.dir, spec->columns.size(),
                  opt.seal_on_add ? "seal on add: rows are visible when add returns"
                                  : "deferred seal: rows are visible after a flush"));
}

// --- add -------------------------------------------------------------------------------------

struct AddOptions {
  std::string dir;
  std::vector<std::string> files;
  std::string format = "json";
  std::string shard;
  bool flush = false;
  bool nosync = false;
};

// Every batch of an Arrow IPC file (or stream; "-" for stdin).
Result<std::vector<RecordBatch>> ReadArrow(const std::string& path) {
  Buffer whole;
  if (path == "-") {
    STRATA_ASSIGN_OR_RETURN(std::string text, ReadTextFileOrStdin(path));
    whole = Buffer::Copy(text);
  } else {
    Result<std::shared_ptr<ipc::RandomAccessSource>> source = ipc::SourceFromFile(path);
    if (!source.ok()) return source.status();
    Result<std::unique_ptr<ipc::FileReader>> reader = ipc::FileReader::Open(*source);
    if (reader.ok()) return (*reader)->ReadAll();
    STRATA_ASSIGN_OR_RETURN(int64_t size, (*source)->Size());
    STRATA_ASSIGN_OR_RETURN(whole, (*source)->ReadAt(0, size));
  }
  Result<std::unique_ptr<ipc::StreamReader>> stream = ipc::StreamReader::Open(whole);
  if (!stream.ok()) {
    return stream.status().WithContext("neither an Arrow IPC file nor a stream");
  }
  std::vector<RecordBatch> out;
  while (true) {
    STRATA_ASSIGN_OR_RETURN(std::optional<RecordBatch> batch, (*stream)->Next());
    if (!batch) break;
    out.push_back(*std::move(batch));
  }
  return out;
}

Status RunAdd(const AddOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<GenericStore> generic,
                          OpenStore(opt.dir, opt.shard, /*sync=*/!opt.nosync,
                                    /*seal_on_close=*/opt.flush));
  // Every input is read and checked before anything is written, so bad input writes nothing.
  const std::vector<std::string> files =
      opt.files.empty() ? std::vector<std::string>{"-"} : opt.files;
  std::vector<RecordBatch> batches;
  int64_t rows = 0;
  for (const std::string& path : files) {
    const std::string where = path == "-" ? "stdin" : path;
    if (opt.format == "arrow") {
      Result<std::vector<RecordBatch>> read = ReadArrow(path);
      if (!read.ok()) return read.status().WithContext(where);
      for (RecordBatch& b : *read) {
        if (!b.schema()->Equals(*generic->schema(), /*check_metadata=*/false)) {
          return Status::InvalidArgument(fmt::format(
              "{}: record batch schema does not match the store schema:\n{}\nexpected:\n{}", where,
              b.schema()->ToString(), generic->schema()->ToString()));
        }
        rows += b.num_rows();
        batches.push_back(std::move(b));
      }
      continue;
    }
    Result<std::string> text = ReadTextFileOrStdin(path);
    if (!text.ok()) return text.status().WithContext(where);
    Result<RecordBatch> batch = store::EncodeJsonRows(generic->schema(), *text);
    if (!batch.ok()) return batch.status().WithContext(where);
    rows += batch->num_rows();
    batches.push_back(*std::move(batch));
  }
  if (rows == 0) return WriteStdout("no rows to add\n");
  const std::string shard = ShardName(opt.shard);
  Result<uint64_t> added = generic->AddBatches(batches);
  if (added.status().code() == StatusCode::kFenced) {
    return added.status().WithContext(
        fmt::format("{}: another writer claimed shard '{}' while adding, so the {} rows were not "
                    "acknowledged; adding them again is safe (or add them with another --shard)",
                    opt.dir, shard, rows));
  }
  if (!added.ok()) return added.status().WithContext(opt.dir);
  if (generic->seal_on_add() || opt.flush) {
    if (opt.flush) {
      Result<store::FlushOutcome> flushed = generic->Flush();
      if (!flushed.ok()) return flushed.status().WithContext(opt.dir);
      if (*flushed == store::FlushOutcome::kFenced) {
        return Status::Fenced(fmt::format(
            "{}: the {} rows are durable, but another writer claimed shard '{}' before they "
            "were published; they become visible when that writer flushes (or run `strata "
            "generic flush`)",
            opt.dir, rows, shard));
      }
    }
    SetOutputFailureNote(
        fmt::format("the {} rows were added to shard '{}' and are visible", rows, shard));
    STRATA_RETURN_IF_ERROR(
        WriteStdout(fmt::format("added {} rows to shard '{}': visible now\n", rows, shard)));
    return FlushStdout();
  }
  SetOutputFailureNote(
      fmt::format("the {} rows were {} to shard '{}' (visible after `strata generic flush`)", rows,
                  opt.nosync ? "added (not fsynced: --nosync)" : "durably added", shard));
  STRATA_RETURN_IF_ERROR(WriteStdout(
      fmt::format("added {} rows to shard '{}' (durable; visible after `strata generic flush` or "
                  "`strata generic merge`)\n",
                  rows, shard)));
  // Opened with seal_on_close off: the rows stay in the shard's WAL, and its next writer
  // (flush, merge, the next add) replays and publishes them.
  Status closed = generic->Close();
  if (!closed.ok()) return closed.WithContext(opt.dir);
  return FlushStdout();
}

// --- list / get ------------------------------------------------------------------------------

struct ListOptions {
  std::string dir;
  std::string filter;
  int64_t limit = 100;
  int64_t offset = 0;
  std::string source = "all";
  std::string columns;
  OutputOptions output;
};

Status RunList(const ListOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(store::ListSource source, ParseSource(opt.source));
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> columns, ParseColumns(opt.columns));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<GenericStore> generic, OpenStore(opt.dir, ""));
  STRATA_ASSIGN_OR_RETURN(SchemaPtr printed, PrintedSchema(*generic, columns));
  store::GenericListRequest request;
  request.source = source;
  request.columns = columns;
  request.filter = opt.filter;
  request.offset = opt.offset;
  // One more tells whether rows follow the page (none can follow the largest limit).
  request.limit = opt.limit < std::numeric_limits<int64_t>::max() ? opt.limit + 1 : opt.limit;
  Result<std::vector<RecordBatch>> listed = generic->List(request);
  if (!listed.ok()) return listed.status().WithContext(opt.dir);
  Printer printer(opt.output, printed);
  int64_t printed_rows = 0;
  bool more = false;
  for (const RecordBatch& batch : *listed) {
    const int64_t take = std::min(batch.num_rows(), opt.limit - printed_rows);
    if (take < batch.num_rows()) more = true;
    if (take <= 0) continue;
    STRATA_RETURN_IF_ERROR(printer.Add(batch.Slice(0, take)));
    printed_rows += take;
  }
  STRATA_RETURN_IF_ERROR(printer.Finish());
  if (!more) return Status::OK();
  std::fprintf(stderr, "strata: more rows follow: --offset %lld\n",
               static_cast<long long>(opt.offset + printed_rows));
  return Status::OK();
}

struct GetOptions {
  std::string dir;
  std::vector<std::string> ids;
  std::string columns;
  std::string source = "all";
  OutputOptions output;
};

Status RunGet(const GetOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(store::ListSource source, ParseSource(opt.source));
  STRATA_ASSIGN_OR_RETURN(std::vector<std::string> columns, ParseColumns(opt.columns));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<GenericStore> generic, OpenStore(opt.dir, ""));
  std::vector<std::string> read = columns;
  if (!read.empty() && std::find(read.begin(), read.end(), "id") == read.end()) {
    read.insert(read.begin(), "id");
  }
  STRATA_ASSIGN_OR_RETURN(SchemaPtr printed, PrintedSchema(*generic, read));
  Printer printer(opt.output, printed);
  std::set<std::string> found;
  for (size_t begin = 0; begin < opt.ids.size(); begin += 1024) {
    const size_t end = std::min(opt.ids.size(), begin + 1024);
    const std::vector<std::string> chunk(opt.ids.begin() + static_cast<std::ptrdiff_t>(begin),
                                         opt.ids.begin() + static_cast<std::ptrdiff_t>(end));
    Result<RecordBatch> rows = generic->GetMany(chunk, read, source);
    if (!rows.ok()) return rows.status().WithContext(opt.dir);
    const int id = rows->schema()->GetFieldIndex("id");
    for (int64_t i = 0; i < rows->num_rows(); ++i) {
      found.emplace(rows->column(id).StringValue(i));
    }
    STRATA_RETURN_IF_ERROR(printer.Add(*rows));
  }
  STRATA_RETURN_IF_ERROR(printer.Finish());
  std::vector<std::string> missing;
  for (const std::string& id : opt.ids) {
    if (found.count(id) == 0) missing.push_back(fmt::format("'{}'", id));
  }
  if (!missing.empty()) {
    return Status::NotFound(
        fmt::format("no visible row with id {} in {}", fmt::join(missing, ", "), opt.dir));
  }
  return Status::OK();
}

// --- stats ---------------------------------------------------------------------------------------

struct StatsOptions {
  std::string dir;
  OutputOptions output;
};

Status RunStats(const StatsOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<GenericStore> generic, OpenStore(opt.dir, ""));
  Result<store::StoreObservation> observed = generic->Observe();
  if (!observed.ok()) return observed.status().WithContext(opt.dir);
  const store::StoreObservation& o = *observed;
  SchemaPtr schema = strata::schema(
      {field("base_rows", int64()), field("generation_rows", int64()), field("fragments", int64()),
       field("version", int64()), field("last_updated", timestamp_us()),
       field("pending_generations", int64()), field("unflushed_rows", int64()),
       field("seal_on_add", boolean()), field("columns", int64())});
  STRATA_ASSIGN_OR_RETURN(
      RecordBatch row,
      store::EncodeJsonRows(
          schema,
          fmt::format(R"({{"base_rows":{},"generation_rows":{},"fragments":{},)"
                      R"("version":{},"last_updated":{},"pending_generations":{},)"
                      R"("unflushed_rows":{},"seal_on_add":{},"columns":{}}})",
                      o.base_rows, o.generation_rows, o.fragments, o.version, o.last_updated_micros,
                      o.pending_generations, o.unflushed_rows,
                      generic->seal_on_add() ? "true" : "false", generic->spec().columns.size())));
  Printer printer(opt.output, schema);
  STRATA_RETURN_IF_ERROR(printer.Add(row));
  return printer.Finish();
}

}  // namespace

void AddGenericCommands(CLI::App& app, int* exit_code) {
  CLI::App* group = app.add_subcommand(
      "generic",
      "Create, fill and read a generic store (any declared schema keyed by a string "
      "id) in a local directory");
  group->require_subcommand(1);
  constexpr const char* kDirHelp = "Generic store directory";
  constexpr const char* kShardHelp = "Writer identity (shard); default: \"default\"";
  constexpr const char* kColumnsHelp =
      "Comma-separated columns to print (blob columns only when named)";
  constexpr const char* kSourceHelp =
      "all (base + pending generations), wal (pending generations) or fragments (merged rows "
      "only)";

  auto create = std::make_shared<CreateOptions>();
  CLI::App* create_cmd = group->add_subcommand(
      "create", "Create a generic store from a schema spec in a new or empty directory");
  create_cmd->add_option("DIR", create->dir, kDirHelp)->required();
  create_cmd
      ->add_option("--schema", create->schema,
                   "Schema spec: a JSON file (or inline JSON) in the {\"columns\": [[name, type], "
                   "...]} form or strata's schema JSON ({\"fields\": [...]})")
      ->required();
  create_cmd->add_flag("--seal-on-add", create->seal_on_add,
                       "Seal every add so rows are visible on return (default: visible after a "
                       "flush)");
  create_cmd->callback([create, exit_code] { *exit_code = Finish(RunCreate(*create)); });

  auto add = std::make_shared<AddOptions>();
  CLI::App* add_cmd =
      group->add_subcommand("add", "Add rows (durable on return); nothing is written on bad input");
  add_cmd->add_option("DIR", add->dir, kDirHelp)->required();
  add_cmd->add_option("FILE", add->files, "Inputs ('-' or none for stdin)");
  add_cmd
      ->add_option("--format", add->format,
                   "json (JSON Lines or a JSON array of objects) or arrow (Arrow IPC file or "
                   "stream of the store schema)")
      ->check(CLI::IsMember({"json", "arrow"}))
      ->capture_default_str();
  add_cmd->add_option("--shard", add->shard, kShardHelp);
  add_cmd->add_flag("--flush", add->flush, "Seal the rows so they are visible on return");
  add_cmd->add_flag("--nosync", add->nosync,
                    "Do not fsync: the rows survive this process, not a machine crash");
  add_cmd->callback([add, exit_code] { *exit_code = Finish(RunAdd(*add)); });

  auto list = std::make_shared<ListOptions>();
  CLI::App* list_cmd = group->add_subcommand("list", "Print one page of rows in id order");
  list_cmd->add_option("DIR", list->dir, kDirHelp)->required();
  list_cmd->add_option("--filter", list->filter,
                       "Filter expression (docs/expressions.md), e.g. \"score > 0.5\"");
  list_cmd->add_option("--limit", list->limit, "Page size")
      ->check(IntegerAtLeast<int64_t>(0))
      ->capture_default_str();
  list_cmd->add_option("--offset", list->offset, "Skip this many matching rows first")
      ->check(IntegerAtLeast<int64_t>(0));
  list_cmd->add_option("--source", list->source, kSourceHelp)
      ->check(CLI::IsMember({"all", "wal", "fragments"}))
      ->capture_default_str();
  list_cmd->add_option("--columns", list->columns, kColumnsHelp);
  AddOutputOptions(list_cmd, &list->output);
  list_cmd->callback([list, exit_code] { *exit_code = Finish(RunList(*list)); });

  auto get = std::make_shared<GetOptions>();
  CLI::App* get_cmd = group->add_subcommand(
      "get", "Print the rows with these ids in the order given (exit 1 when an id is missing)");
  get_cmd->add_option("DIR", get->dir, kDirHelp)->required();
  get_cmd->add_option("ID", get->ids, "Row ids")->required();
  get_cmd->add_option("--columns", get->columns, kColumnsHelp);
  get_cmd->add_option("--source", get->source, kSourceHelp)
      ->check(CLI::IsMember({"all", "wal", "fragments"}))
      ->capture_default_str();
  AddOutputOptions(get_cmd, &get->output);
  get_cmd->callback([get, exit_code] { *exit_code = Finish(RunGet(*get)); });

  AddStoreMaintenanceCommands(
      *group, exit_code,
      [](const std::string& dir,
         const std::string& shard) -> Result<std::shared_ptr<store::StorageBase>> {
        STRATA_ASSIGN_OR_RETURN(std::unique_ptr<GenericStore> store, OpenStore(dir, shard));
        return BaseOf(std::move(store));
      },
      {.rows = "rows", .dir_help = kDirHelp, .shard_help = kShardHelp});

  auto stats = std::make_shared<StatsOptions>();
  CLI::App* stats_cmd = group->add_subcommand(
      "stats", "Base and pending rows, fragments, version, generations, seal mode");
  stats_cmd->add_option("DIR", stats->dir, kDirHelp)->required();
  AddOutputOptions(stats_cmd, &stats->output);
  stats_cmd->callback([stats, exit_code] { *exit_code = Finish(RunStats(*stats)); });
}

}  // namespace strata::cli
