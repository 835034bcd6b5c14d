// `strata datagen append | checkpoint | events | fold | tree | failures | overview | status |
// blob | stats | flush | merge | compact`: a datagen event log (include/strata/datagen_store.h,
// the store at the root of a local directory) from the command line. Events go in and come
// out as JSON lines whose keys are the schema's columns (value_blob as base64).
#include "datagen_commands.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli_common.h"
#include "store_commands.h"
#include "strata/builder.h"
#include "strata/datagen_store.h"
#include "strata/json.h"
#include "strata/object_store.h"
#include "strata/storage_base.h"
#include "strata/table.h"
#include "table_cli.h"

namespace strata::cli {
namespace {

using store::DatagenEvent;
using store::DatagenStore;
using Json = nlohmann::ordered_json;

// The datagen store in local directory `dir` (prefix ""), writing as shard `shard`. Without
// `create`, NotFound (and nothing created) when `dir` holds no store. A table that another
// kind of store (or no store) owns is refused before anything is opened for writing.
Result<std::unique_ptr<DatagenStore>> OpenStore(const std::string& dir, const std::string& shard,
                                                bool create = false, bool sync = true) {
  std::error_code ec;
  const bool is_directory = std::filesystem::is_directory(dir, ec);
  if (!is_directory && !create) {
    return Status::NotFound(fmt::format("no datagen store at '{}': not a directory", dir));
  }
  std::shared_ptr<ObjectStore> objects;
  bool has_table = false;
  if (is_directory) {
    STRATA_ASSIGN_OR_RETURN(objects, OpenLocalObjectStore(dir, {.sync = sync}));
    STRATA_ASSIGN_OR_RETURN(has_table, table::Table::Exists(*objects, ""));
  }
  if (has_table) {
    Result<std::shared_ptr<table::Table>> base = table::Table::Open(objects, "");
    if (!base.ok()) return base.status().WithContext(dir);
    STRATA_ASSIGN_OR_RETURN(std::optional<std::string> kind,
                            store::OwningStoreKind(*objects, "", *(*base)->schema()));
    if (!kind) {
      return Status::InvalidArgument(
          fmt::format("{}: not a datagen store: it holds a plain table", dir));
    }
    if (*kind != store::kDatagenStoreKind) {
      return Status::InvalidArgument(
          fmt::format("{}: not a datagen store: it holds a {} store", dir, *kind));
    }
  } else {
    if (!create) return Status::NotFound(fmt::format("no datagen store at '{}'", dir));
    STRATA_RETURN_IF_ERROR(CheckNewOrEmptyDirectory(dir, "datagen store"));
  }
  if (objects == nullptr) {
    STRATA_ASSIGN_OR_RETURN(objects, OpenLocalObjectStore(dir, {.sync = sync}));
  }
  store::DatagenStoreOptions options;
  options.base.shard_id = shard;
  Result<std::unique_ptr<DatagenStore>> opened =
      DatagenStore::Open(std::move(objects), "", std::move(options), create);
  if (!opened.ok()) return opened.status().WithContext(dir);
  return opened;
}

// --- Events in -------------------------------------------------------------------------------

// Columns an input line may leave out (or set to null), filled as documented in docs/cli.md.
constexpr std::string_view kDefaultedColumns[] = {"event_id", "root_item_id", "attempt", "event_ts",
                                                  "schema_version"};

SchemaPtr InputSchema() {
  std::vector<FieldPtr> fields = store::DatagenSchema()->fields();
  for (FieldPtr& f : fields) {
    for (std::string_view name : kDefaultedColumns) {
      if (f->name() == name) f = f->WithNullable(true);
    }
  }
  return std::make_shared<Schema>(std::move(fields));
}

template <typename B>
B& As(ArrayBuilder& b) {
  return static_cast<B&>(b);
}

// A column of `type` with one value per row from `value`.
Result<Array> BuildColumn(const DataTypePtr& type, int64_t rows,
                          const std::function<Status(ArrayBuilder&, int64_t)>& value) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ArrayBuilder> builder, MakeBuilder(type));
  for (int64_t i = 0; i < rows; ++i) STRATA_RETURN_IF_ERROR(value(*builder, i));
  return builder->Finish();
}

// The input batch with the defaulted columns filled in: event_id derived from (item_id,
// checkpoint_id, item_seq), root_item_id and parent_item_id from the item id's path, attempt
// 0, event_ts now, schema_version 2.
Result<RecordBatch> FillDefaults(const RecordBatch& in, int64_t now_micros, int64_t first_row) {
  const Schema& schema = *in.schema();
  auto column = [&](std::string_view name) -> const Array& {
    return in.column(schema.GetFieldIndex(std::string(name)));
  };
  const Array& item = column("item_id");
  const Array& checkpoint = column("checkpoint_id");
  const Array& seq = column("item_seq");
  std::vector<Array> columns = in.columns();
  for (int k = 0; k < schema.num_fields(); ++k) {
    const std::string& name = schema.field(k)->name();
    const Array& given = in.column(k);
    if (given.null_count() == 0) continue;
    std::function<Status(ArrayBuilder&, int64_t)> fill;
    if (name == "event_id") {
      fill = [&](ArrayBuilder& b, int64_t i) {
        return As<BinaryBuilder>(b).Append(
            given.IsValid(i) ? std::string(given.StringValue(i))
                             : store::DatagenEventId(item.StringValue(i), checkpoint.StringValue(i),
                                                     static_cast<uint64_t>(seq.Value<int64_t>(i))));
      };
    } else if (name == "root_item_id" || name == "parent_item_id") {
      const bool root = name == "root_item_id";
      fill = [&, root](ArrayBuilder& b, int64_t i) -> Status {
        if (given.IsValid(i)) return As<BinaryBuilder>(b).Append(given.StringValue(i));
        Result<store::DatagenItemId> id = store::DatagenItemId::Parse(item.StringValue(i));
        if (!id.ok()) {
          return id.status().WithContext(fmt::format(
              "event {}: {} is not given and item_id does not parse", first_row + i, name));
        }
        if (root) return As<BinaryBuilder>(b).Append(id->Root().str());
        std::optional<store::DatagenItemId> parent = id->Parent();
        if (!parent) {
          b.AppendNull();
          return Status::OK();
        }
        return As<BinaryBuilder>(b).Append(parent->str());
      };
    } else if (name == "attempt" || name == "schema_version") {
      const int32_t fallback = name == "attempt" ? 0 : store::kDatagenSchemaVersion;
      fill = [&, fallback](ArrayBuilder& b, int64_t i) {
        As<Int32Builder>(b).Append(given.IsValid(i) ? given.Value<int32_t>(i) : fallback);
        return Status::OK();
      };
    } else if (name == "event_ts") {
      fill = [&](ArrayBuilder& b, int64_t i) {
        As<TimestampBuilder>(b).Append(given.IsValid(i) ? given.Value<int64_t>(i) : now_micros);
        return Status::OK();
      };
    } else {
      continue;  // a nullable column: null stays null
    }
    STRATA_ASSIGN_OR_RETURN(columns[k], BuildColumn(schema.field(k)->type(), in.num_rows(), fill));
  }
  return RecordBatch::Make(store::DatagenSchema(), in.num_rows(), std::move(columns));
}

// Every event of the inputs, defaults filled and decoded (so each is valid on its own).
Result<std::vector<DatagenEvent>> ReadEvents(const std::vector<std::string>& paths) {
  const int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  std::vector<DatagenEvent> events;
  for (const std::string& path : paths.empty() ? std::vector<std::string>{"-"} : paths) {
    const std::string where = path == "-" ? "stdin" : path;
    Result<std::unique_ptr<JsonLinesInput>> input =
        JsonLinesInput::Open(path, InputSchema(), json::JsonReadOptions{});
    if (!input.ok()) return input.status().WithContext(where);
    Status read =
        (*input)->ForEachBatch(fmt::format("reading {}", where), [&](RecordBatch batch) -> Status {
          STRATA_ASSIGN_OR_RETURN(
              RecordBatch filled,
              FillDefaults(batch, now, static_cast<int64_t>(events.size()) + 1));
          STRATA_ASSIGN_OR_RETURN(std::vector<DatagenEvent> decoded,
                                  store::DecodeDatagenEvents(filled));
          for (DatagenEvent& e : decoded) events.push_back(std::move(e));
          return Status::OK();
        });
    if (!read.ok()) return read.WithContext(where);
  }
  return events;
}

struct AppendOptions {
  std::string dir;
  std::vector<std::string> files;
  std::string shard;
  bool nosync = false;
};

Status RunAppend(const AppendOptions& opt) {
  // Everything is read and checked before the store is opened: bad input writes nothing.
  STRATA_ASSIGN_OR_RETURN(std::vector<DatagenEvent> events, ReadEvents(opt.files));
  if (events.empty()) return WriteStdout("no events to append\n");
  STRATA_RETURN_IF_ERROR(store::ValidateDatagenWriteBatch(events));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DatagenStore> datagen,
                          OpenStore(opt.dir, opt.shard, /*create=*/true, !opt.nosync));
  Result<uint64_t> version = datagen->Append(events);
  if (!version.ok()) return version.status().WithContext(opt.dir);
  // Lines that repeat an event (a retried write) are one event.
  std::set<std::string_view> distinct;
  for (const DatagenEvent& e : events) distinct.insert(e.event_id);
  SetOutputFailureNote(fmt::format("the {} events were appended", distinct.size()));
  return WriteStdout(
      fmt::format("appended {} events to shard '{}' (one put: durable and visible); "
                  "version {}\n",
                  distinct.size(), ShardName(opt.shard), *version));
}

Status RunCheckpoint(const AppendOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::vector<DatagenEvent> events, ReadEvents(opt.files));
  if (events.empty()) return WriteStdout("no checkpoints to append\n");
  // Consecutive events of one (item_id, checkpoint_id) form one checkpoint; every one is
  // checked before the first is written.
  std::vector<std::vector<DatagenEvent>> checkpoints;
  for (DatagenEvent& e : events) {
    if (checkpoints.empty() || checkpoints.back().front().item_id != e.item_id ||
        checkpoints.back().front().checkpoint_id != e.checkpoint_id) {
      checkpoints.emplace_back();
    }
    checkpoints.back().push_back(std::move(e));
  }
  for (size_t i = 0; i < checkpoints.size(); ++i) {
    Status valid = store::ValidateDatagenCheckpoint(checkpoints[i]);
    if (!valid.ok()) {
      return valid.WithContext(
          fmt::format("checkpoint {} (item '{}')", i + 1, checkpoints[i].front().item_id));
    }
  }
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DatagenStore> datagen,
                          OpenStore(opt.dir, opt.shard, /*create=*/true, !opt.nosync));
  uint64_t version = 0;
  for (size_t i = 0; i < checkpoints.size(); ++i) {
    Result<uint64_t> written = datagen->AppendCheckpoint(checkpoints[i]);
    if (!written.ok()) {
      return written.status().WithContext(fmt::format(
          "{}: checkpoint {} of {} failed ({} were appended; appending the input again is safe: "
          "the copies collapse)",
          opt.dir, i + 1, checkpoints.size(), i));
    }
    version = *written;
  }
  return WriteStdout(fmt::format("appended {} checkpoints ({} events) to shard '{}'; version {}\n",
                                 checkpoints.size(), events.size(), ShardName(opt.shard), version));
}

// --- Events and folds out ----------------------------------------------------------------------

// The events as JSON lines in the input format, without value_blob (`datagen blob` reads it).
Status PrintEvents(const std::vector<DatagenEvent>& events, const RowOutputOptions& output) {
  const SchemaPtr& full = store::DatagenSchema();
  std::vector<int> keep;
  for (int k = 0; k < full->num_fields(); ++k) {
    if (full->field(k)->name() != "value_blob") keep.push_back(k);
  }
  STRATA_ASSIGN_OR_RETURN(SchemaPtr schema, full->Project(keep));
  RowPrinter printer(output, schema);
  if (!events.empty()) {
    STRATA_ASSIGN_OR_RETURN(RecordBatch batch, store::EncodeDatagenEvents(events, full));
    STRATA_ASSIGN_OR_RETURN(RecordBatch projected, batch.Project(keep));
    STRATA_RETURN_IF_ERROR(printer.Add(projected));
  }
  return printer.Finish();
}

Json ToJson(const store::DatagenValue& v) {
  using Kind = store::DatagenValue::Kind;
  switch (v.kind()) {
    case Kind::kInt:
      return v.int_value();
    case Kind::kFloat:
      if (std::isnan(v.float_value())) return "NaN";
      if (std::isinf(v.float_value())) return v.float_value() > 0 ? "Infinity" : "-Infinity";
      return v.float_value();
    case Kind::kBool:
      return v.bool_value();
    case Kind::kStr:
      return v.text();
    case Kind::kJson: {
      Json parsed = Json::parse(v.text(), nullptr, /*allow_exceptions=*/false);
      return parsed.is_discarded() ? Json(v.text()) : parsed;
    }
    case Kind::kBlob: {
      Json blob = {{"blob_size", v.blob().size}};
      if (v.blob().checksum) blob["blob_checksum"] = *v.blob().checksum;
      return blob;
    }
  }
  return nullptr;
}

Json ToJson(const store::DatagenStepPosition& p) {
  Json out = {{"step_name", p.step_name},
              {"step_kind", std::string(store::DatagenStepKindName(p.step_kind))},
              {"step_index", p.step_index}};
  if (p.enclosing_step) out["enclosing_step"] = *p.enclosing_step;
  if (p.selector_step) out["selector_step"] = *p.selector_step;
  return out;
}

Json ToJson(const store::DatagenCursor& c) {
  Json out = ToJson(c.position);
  out["item_seq"] = c.item_seq;
  return out;
}

Json ToJson(const store::DatagenFoldedItem& item) {
  Json fields = Json::object();
  for (const auto& [name, state] : item.fields) {
    if (state.appended) {
      Json values = Json::array();
      for (const store::DatagenValue& v : state.values) values.push_back(ToJson(v));
      fields[name] = {{"append", values}};
    } else {
      fields[name] = {{"set", ToJson(state.values.back())}};
    }
  }
  Json trajectory = Json::array();
  for (const store::DatagenCursor& c : item.trajectory) trajectory.push_back(ToJson(c));
  Json started = Json::array();
  for (const auto& p : item.started) started.push_back(ToJson(p));
  Json completed = Json::array();
  for (const auto& p : item.completed) completed.push_back(ToJson(p));
  Json out = {{"item_id", item.item_id},
              {"root_item_id", item.root_item_id},
              {"parent_item_id", item.parent_item_id ? Json(*item.parent_item_id) : Json()},
              {"status", std::string(store::DatagenItemStatusName(item.status))},
              {"last_item_seq", item.last_item_seq},
              {"last_attempt", item.last_attempt},
              {"fields", fields},
              {"trajectory", trajectory},
              {"started", started},
              {"completed", completed}};
  out["query_tags"] =
      item.query_tags_json ? Json::parse(*item.query_tags_json, nullptr, false) : Json();
  out["blob_event_ids"] = item.blob_event_ids;
  return out;
}

Status PrintJson(const Json& value) {
  return WriteStdout(value.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n");
}

struct ReadOptions {
  std::string dir;
  std::string item;
  std::string root;
  std::string run;
  bool all = false;
  std::vector<std::string> ids;
  RowOutputOptions output;
};

Status RunEvents(const ReadOptions& opt) {
  if (opt.item.empty() == opt.root.empty()) {
    return Status::InvalidArgument("give exactly one of --item and --root");
  }
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DatagenStore> datagen, OpenStore(opt.dir, ""));
  Result<std::vector<DatagenEvent>> events =
      opt.item.empty() ? datagen->EventsForRoot(opt.root) : datagen->EventsForItem(opt.item);
  if (!events.ok()) return events.status().WithContext(opt.dir);
  return PrintEvents(*events, opt.output);
}

Status RunFold(const ReadOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DatagenStore> datagen, OpenStore(opt.dir, ""));
  Result<std::optional<store::DatagenFoldedItem>> folded = datagen->FoldItem(opt.item);
  if (!folded.ok()) return folded.status().WithContext(opt.dir);
  if (!*folded) {
    return Status::NotFound(
        fmt::format("item '{}' never started (no ITEM_CREATED) in {}", opt.item, opt.dir));
  }
  return PrintJson(ToJson(**folded));
}

Status RunTree(const ReadOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DatagenStore> datagen, OpenStore(opt.dir, ""));
  Result<store::DatagenItemTree> tree = datagen->ItemTree(opt.root);
  if (!tree.ok()) return tree.status().WithContext(opt.dir);
  if (tree->nodes.empty()) {
    return Status::NotFound(
        fmt::format("no started item under root '{}' in {}", opt.root, opt.dir));
  }
  Json nodes = Json::object();
  for (const auto& [id, node] : tree->nodes) {
    nodes[id] = {{"item", ToJson(node.item)}, {"children", node.children}};
  }
  return PrintJson({{"roots", tree->roots}, {"nodes", nodes}});
}

Status RunFailures(const ReadOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DatagenStore> datagen, OpenStore(opt.dir, ""));
  if (!opt.item.empty()) {
    Result<std::vector<store::DatagenItemFailure>> failures = datagen->ItemFailures(opt.item);
    if (!failures.ok()) return failures.status().WithContext(opt.dir);
    std::string out;
    for (const store::DatagenItemFailure& f : *failures) {
      Json line = {{"at", ToJson(f.at)},
                   {"run_id", f.run_id},
                   {"attempt", f.attempt},
                   {"error_type", f.error_type},
                   {"error_dump", f.error_dump ? Json(*f.error_dump) : Json()},
                   {"traceback", f.traceback ? Json(*f.traceback) : Json()}};
      out += line.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
    }
    return WriteStdout(out);
  }
  Result<std::vector<DatagenEvent>> events =
      datagen->Failures(opt.run.empty() ? std::nullopt : std::optional<std::string>(opt.run));
  if (!events.ok()) return events.status().WithContext(opt.dir);
  return PrintEvents(*events, opt.output);
}

Status RunOverview(const ReadOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DatagenStore> datagen, OpenStore(opt.dir, ""));
  Result<store::DatagenOverview> overview = datagen->Overview();
  if (!overview.ok()) return overview.status().WithContext(opt.dir);
  const store::DatagenOverview& o = *overview;
  Json runs = Json::object();
  for (const auto& [run, f] : o.failures_by_run) {
    runs[run] = {{"failures", f.failures},
                 {"failures_by_error_type", f.failures_by_error_type},
                 {"sample_root_item_ids", f.sample_root_item_ids}};
  }
  return PrintJson({{"items", o.items},
                    {"running", o.running},
                    {"completed", o.completed},
                    {"filtered", o.filtered},
                    {"failures", o.failures},
                    {"failures_by_error_type", o.failures_by_error_type},
                    {"failures_by_run", runs},
                    {"completed_steps", o.completed_steps}});
}

Status RunStatus(const ReadOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DatagenStore> datagen, OpenStore(opt.dir, ""));
  auto statuses = datagen->RootItemStatuses(opt.ids);
  if (!statuses.ok()) return statuses.status().WithContext(opt.dir);
  Json out = Json::object();
  for (const std::string& id : opt.ids) {
    const auto& status = statuses->at(id);
    out[id] = status ? Json(std::string(store::DatagenItemStatusName(*status))) : Json();
  }
  return PrintJson(out);
}

struct BlobOptions {
  std::string dir;
  std::string event_id;
  std::string output;
};

Status RunBlob(const BlobOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DatagenStore> datagen, OpenStore(opt.dir, ""));
  Result<std::optional<std::string>> blob = datagen->GetBlob(opt.event_id);
  if (!blob.ok()) return blob.status().WithContext(opt.dir);
  if (!*blob) {
    return Status::NotFound(
        fmt::format("no blob event '{}' in {} (no such event, or its value is not a blob)",
                    opt.event_id, opt.dir));
  }
  if (opt.output.empty()) {
    STRATA_RETURN_IF_ERROR(WriteStdout(**blob));
    return FlushStdout();
  }
  std::ofstream out(opt.output, std::ios::binary | std::ios::trunc);
  if (!out) return Status::IOError(fmt::format("cannot create '{}'", opt.output));
  out.write((*blob)->data(), static_cast<std::streamsize>((*blob)->size()));
  out.close();
  if (!out) return Status::IOError(fmt::format("writing '{}' failed", opt.output));
  std::fprintf(stderr, "wrote %zu bytes to %s\n", (*blob)->size(), opt.output.c_str());
  return Status::OK();
}

// --- stats ---------------------------------------------------------------------------------------

struct StatsOptions {
  std::string dir;
};

Status RunStats(const StatsOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DatagenStore> datagen, OpenStore(opt.dir, ""));
  Result<store::StoreObservation> observed = datagen->Observe();
  if (!observed.ok()) return observed.status().WithContext(opt.dir);
  const store::StoreObservation& o = *observed;
  return PrintJson({{"base_events", o.base_rows},
                    {"generation_events", o.generation_rows},
                    {"fragments", o.fragments},
                    {"version", o.version},
                    {"pending_generations", o.pending_generations}});
}

}  // namespace

void AddDatagenCommands(CLI::App& app, int* exit_code) {
  CLI::App* group = app.add_subcommand(
      "datagen", "Append and fold data-generation checkpoint events in a local directory");
  group->require_subcommand(1);
  constexpr const char* kDirHelp = "Datagen store directory";
  constexpr const char* kShardHelp = "Writer identity (shard); default: \"default\"";

  for (const bool checkpoint : {false, true}) {
    auto append = std::make_shared<AppendOptions>();
    CLI::App* cmd =
        checkpoint
            ? group->add_subcommand(
                  "checkpoint",
                  "Append checkpoints (consecutive events of one item_id and checkpoint_id, "
                  "ending in STEP_COMPLETED), each one atomic; nothing is written on bad input")
            : group->add_subcommand("append",
                                    "Append events from JSON lines in one put (durable and "
                                    "visible on return); nothing is written on bad input");
    cmd->add_option("DIR", append->dir, "Datagen store directory (created if missing)")->required();
    cmd->add_option("FILE", append->files, "JSON lines inputs ('-' or none for stdin)");
    cmd->add_option("--shard", append->shard, kShardHelp);
    cmd->add_flag("--nosync", append->nosync,
                  "Do not fsync: the events survive this process, not a machine crash");
    cmd->callback([append, exit_code, checkpoint] {
      *exit_code = Finish(checkpoint ? RunCheckpoint(*append) : RunAppend(*append));
    });
  }

  auto events = std::make_shared<ReadOptions>();
  CLI::App* events_cmd = group->add_subcommand(
      "events", "Print the events of one item or one root, by item_id, item_seq, event_id");
  events_cmd->add_option("DIR", events->dir, kDirHelp)->required();
  events_cmd->add_option("--item", events->item, "Item id");
  events_cmd->add_option("--root", events->root, "Root item id (the item and its descendants)");
  AddRowOutputOptions(events_cmd, &events->output);
  events_cmd->callback([events, exit_code] { *exit_code = Finish(RunEvents(*events)); });

  auto fold = std::make_shared<ReadOptions>();
  CLI::App* fold_cmd = group->add_subcommand(
      "fold", "Print an item's state folded from its events (exit 1 when it never started)");
  fold_cmd->add_option("DIR", fold->dir, kDirHelp)->required();
  fold_cmd->add_option("ITEM", fold->item, "Item id")->required();
  fold_cmd->callback([fold, exit_code] { *exit_code = Finish(RunFold(*fold)); });

  auto tree = std::make_shared<ReadOptions>();
  CLI::App* tree_cmd =
      group->add_subcommand("tree", "Print the folded items under a root, linked to parents");
  tree_cmd->add_option("DIR", tree->dir, kDirHelp)->required();
  tree_cmd->add_option("ROOT", tree->root, "Root item id")->required();
  tree_cmd->callback([tree, exit_code] { *exit_code = Finish(RunTree(*tree)); });

  auto failures = std::make_shared<ReadOptions>();
  CLI::App* failures_cmd = group->add_subcommand(
      "failures", "Print FAILED events (of one run), or one item's failures with --item");
  failures_cmd->add_option("DIR", failures->dir, kDirHelp)->required();
  failures_cmd->add_option("--run", failures->run, "Only this run_id");
  failures_cmd->add_option("--item", failures->item, "One item's failures, in item_seq order")
      ->excludes("--run");
  AddRowOutputOptions(failures_cmd, &failures->output);
  failures_cmd->callback([failures, exit_code] { *exit_code = Finish(RunFailures(*failures)); });

  auto overview = std::make_shared<ReadOptions>();
  CLI::App* overview_cmd = group->add_subcommand(
      "overview", "Root item counts by status, failure breakdowns and completed steps");
  overview_cmd->add_option("DIR", overview->dir, kDirHelp)->required();
  overview_cmd->callback([overview, exit_code] { *exit_code = Finish(RunOverview(*overview)); });

  auto status = std::make_shared<ReadOptions>();
  CLI::App* status_cmd = group->add_subcommand(
      "status", "Print the folded status of root items (null: never started)");
  status_cmd->add_option("DIR", status->dir, kDirHelp)->required();
  status_cmd->add_option("ROOT", status->ids, "Root item ids")->required();
  status_cmd->callback([status, exit_code] { *exit_code = Finish(RunStatus(*status)); });

  auto blob = std::make_shared<BlobOptions>();
  CLI::App* blob_cmd =
      group->add_subcommand("blob", "Write one blob event's bytes to stdout or a file");
  blob_cmd->add_option("DIR", blob->dir, kDirHelp)->required();
  blob_cmd->add_option("EVENT_ID", blob->event_id, "Event id")->required();
  blob_cmd->add_option("--output,-o", blob->output, "Write to this file instead of stdout");
  blob_cmd->callback([blob, exit_code] { *exit_code = Finish(RunBlob(*blob)); });

  auto stats = std::make_shared<StatsOptions>();
  CLI::App* stats_cmd = group->add_subcommand(
      "stats", "Events in the base table and in pending generations, fragments, version");
  stats_cmd->add_option("DIR", stats->dir, kDirHelp)->required();
  stats_cmd->callback([stats, exit_code] { *exit_code = Finish(RunStats(*stats)); });

  AddStoreMaintenanceCommands(
      *group, exit_code,
      [](const std::string& dir,
         const std::string& shard) -> Result<std::shared_ptr<store::StorageBase>> {
        STRATA_ASSIGN_OR_RETURN(std::unique_ptr<DatagenStore> store, OpenStore(dir, shard));
        return BaseOf(std::move(store));
      },
      {.rows = "events", .dir_help = kDirHelp, .shard_help = kShardHelp});
}

}  // namespace strata::cli
