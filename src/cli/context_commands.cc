// `strata context create | add | upsert | update | delete | list | get | related | search |
// retrieve | snapshot | fork | checkout | migrate-relationships | put-payload | fetch-payload |
// stats | flush | merge | compact`: a context store
// (include/strata/context_store.h, the store at the root of a local directory) from the command
// line. Records go in and come out as JSON Lines in the context schema's column names (timestamps
// as RFC 3339 text or integer microseconds in, RFC 3339 out; embeddings as arrays of numbers).
#include "context_commands.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli_common.h"
#include "store_commands.h"
#include "strata/context_store.h"
#include "strata/json.h"
#include "strata/object_store.h"
#include "strata/storage_base.h"
#include "strata/table.h"
#include "table_cli.h"

namespace strata::cli {
namespace {

using store::ContextRecord;
using store::ContextStore;
using Json = nlohmann::json;

constexpr const char* kDirHelp = "Directory holding the context store";
constexpr const char* kShardHelp = "Writer shard name (default: \"default\")";

// The context store in local directory `dir`. Without `create`, NotFound (nothing created)
// when there is none; a store of another kind is InvalidArgument naming it.
Result<std::unique_ptr<ContextStore>> OpenStore(const std::string& dir, const std::string& shard,
                                                bool create = false,
                                                store::ContextStoreOptions options = {}) {
  std::error_code ec;
  const bool is_directory = std::filesystem::is_directory(dir, ec);
  if (!is_directory && !create) {
    return Status::NotFound(fmt::format("no context store at '{}': not a directory", dir));
  }
  bool has_table = false;
  std::shared_ptr<ObjectStore> objects;
  if (is_directory) {
    STRATA_ASSIGN_OR_RETURN(objects, OpenLocalObjectStore(dir));
    STRATA_ASSIGN_OR_RETURN(has_table, table::Table::Exists(*objects, ""));
  }
  if (create) {
    if (has_table) {
      return Status::AlreadyExists(fmt::format("a store is already there: '{}'", dir));
    }
    STRATA_RETURN_IF_ERROR(CheckNewOrEmptyDirectory(dir, "context store"));
    if (objects == nullptr) {
      STRATA_ASSIGN_OR_RETURN(objects, OpenLocalObjectStore(dir));
    }
  } else if (!has_table) {
    return Status::NotFound(
        fmt::format("no context store at '{}' (`strata context create {}` makes one)", dir, dir));
  } else {
    STRATA_RETURN_IF_ERROR(CheckStoreKind(objects, dir, store::kContextStoreKind));
  }
  options.base.shard_id = shard;
  Result<std::unique_ptr<ContextStore>> opened =
      ContextStore::Open(std::move(objects), "", std::move(options), create);
  if (!opened.ok()) return opened.status().WithContext(dir);
  return opened;
}

// Where a command reads or writes: the store itself, one of its branches (--branch), and for
// reads a snapshot (--snapshot) or base version (--version) of either.
struct At {
  std::string branch;
  std::string snapshot;
  uint64_t version = 0;
};

Result<std::unique_ptr<ContextStore>> OpenAt(const std::string& dir, const std::string& shard,
                                             const At& at) {
  if (!at.snapshot.empty() && at.version != 0) {
    return Status::InvalidArgument("give at most one of --snapshot and --version");
  }
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ContextStore> s,
                          OpenStore(dir, at.branch.empty() ? shard : ""));
  if (!at.branch.empty()) {
    store::ContextStoreOptions options;
    options.base.shard_id = shard;
    Result<std::unique_ptr<ContextStore>> branch = s->OpenBranch(at.branch, std::move(options));
    if (!branch.ok()) return branch.status().WithContext(dir);
    STRATA_RETURN_IF_ERROR(s->Close());
    s = std::move(*branch);
  }
  Status pinned = !at.snapshot.empty() ? s->CheckoutSnapshot(at.snapshot)
                  : at.version != 0    ? s->Checkout(at.version)
                                       : Status::OK();
  if (!pinned.ok()) return pinned.WithContext(dir);
  return s;
}

// --branch on every command; --snapshot / --version on reads.
void AddAtOptions(CLI::App* cmd, At* at, bool reads) {
  cmd->add_option("--branch", at->branch, "Work on this branch of the store (see `fork`)");
  if (!reads) return;
  cmd->add_option("--snapshot", at->snapshot, "Read this snapshot (see `snapshot`)");
  cmd->add_option("--version", at->version, "Read this base table version")
      ->check(IntegerAtLeast<uint64_t>(1));
}

// JSON Lines of records in the store's columns (metadata as a JSON object or as JSON text).
// Every column may be left out: role "user",
// content_type "text/plain", lifecycle_status "active", created_at now and run_id one per
// call are filled in by the store.
Result<std::vector<ContextRecord>> ParseRecords(const ContextStore& store, std::string_view text) {
  std::vector<FieldPtr> relaxed;
  for (const FieldPtr& f : store.base().schema()->fields()) {
    relaxed.push_back(field(f->name(), f->type(), /*nullable=*/true, f->metadata()));
  }
  // `metadata` is JSON text in the store; a JSON object (or array) is taken as its text.
  std::string lines;
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    Json row = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (row.is_object() && row.contains("metadata") &&
        (row["metadata"].is_object() || row["metadata"].is_array())) {
      row["metadata"] = row["metadata"].dump();
      line = row.dump();
    }
    lines += line;
    lines += '\n';
  }
  STRATA_ASSIGN_OR_RETURN(RecordBatch batch,
                          json::RowsToBatch(std::make_shared<Schema>(std::move(relaxed)), lines));
  return store::DecodeContextRecords(batch);
}

Result<std::vector<ContextRecord>> ReadRecords(const ContextStore& store,
                                               const std::vector<std::string>& files) {
  std::vector<ContextRecord> out;
  const std::vector<std::string> inputs = files.empty() ? std::vector<std::string>{"-"} : files;
  for (const std::string& path : inputs) {
    const std::string where = path == "-" ? "stdin" : path;
    Result<std::string> text = ReadTextFileOrStdin(path);
    if (!text.ok()) return text.status().WithContext(where);
    Result<std::vector<ContextRecord>> records = ParseRecords(store, *text);
    if (!records.ok()) return records.status().WithContext(where);
    for (ContextRecord& r : *records) out.push_back(std::move(r));
  }
  return out;
}

// One record as a JSON object (nulls left out; metadata as JSON, not text).
Result<Json> RecordJson(const ContextStore& store, const ContextRecord& record) {
  STRATA_ASSIGN_OR_RETURN(RecordBatch batch,
                          store::EncodeContextRecords({record}, store.base().schema()));
  json::JsonWriteOptions options;
  options.omit_nulls = true;
  std::string line;
  STRATA_RETURN_IF_ERROR(json::AppendRowsToJsonLines(batch, &line, options));
  Json out = Json::parse(line);
  // metadata as the JSON it holds.
  if (record.metadata && Json::accept(*record.metadata)) {
    out["metadata"] = Json::parse(*record.metadata);
  }
  return out;
}

Status PrintJson(const Json& value) { return WriteStdout(value.dump() + "\n"); }

Status PrintRecords(const ContextStore& store, const std::vector<ContextRecord>& records) {
  for (const ContextRecord& r : records) {
    STRATA_ASSIGN_OR_RETURN(Json j, RecordJson(store, r));
    STRATA_RETURN_IF_ERROR(PrintJson(j));
  }
  return FlushStdout();
}

Result<store::RecordFilters> ParseFilter(const std::string& text) {
  if (text.empty()) return store::RecordFilters{};
  Result<store::RecordFilters> parsed = store::RecordFilters::FromJson(text);
  if (!parsed.ok()) return parsed.status().WithContext("--filter");
  return parsed;
}

Result<std::vector<float>> ParseVector(const std::string& text) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) {
    return Status::InvalidArgument("--vector must be a JSON array of numbers, e.g. [0.1, 0.2]");
  }
  std::vector<float> out;
  for (const Json& v : j) {
    if (!v.is_number()) {
      return Status::InvalidArgument(
          fmt::format("--vector must hold numbers only, found {}", v.dump()));
    }
    out.push_back(v.get<float>());
  }
  return out;
}

// --id / --external-id: exactly one.
Status CheckOneKey(const std::string& id, const std::string& external_id) {
  if (id.empty() == external_id.empty()) {
    return Status::InvalidArgument("give exactly one of --id and --external-id");
  }
  return Status::OK();
}

// --- Commands -----------------------------------------------------------------------------

struct CreateOptions {
  std::string dir;
  int32_t dim = store::kDefaultEmbeddingDim;
  std::string metric = "l2";
  std::vector<std::string> blob_columns;
};

Status RunCreate(const CreateOptions& opt) {
  store::ContextStoreOptions options;
  options.embedding_dim = opt.dim;
  STRATA_ASSIGN_OR_RETURN(options.distance_metric, store::ParseDistanceMetric(opt.metric));
  options.blob_columns = std::set<std::string>(opt.blob_columns.begin(), opt.blob_columns.end());
  // Validated before anything is created.
  store::ContextSchemaOptions schema;
  schema.embedding_dim = opt.dim;
  schema.blob_columns = options.blob_columns;
  STRATA_RETURN_IF_ERROR(store::ContextSchema(schema).status());
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ContextStore> created,
                          OpenStore(opt.dir, "", /*create=*/true, options));
  STRATA_RETURN_IF_ERROR(created->Close());
  return WriteStdout(fmt::format("created context store {} (embedding dim {}, metric {})\n",
                                 opt.dir, opt.dim,
                                 store::DistanceMetricName(*options.distance_metric)));
}

struct WriteOptions {
  std::string dir;
  std::vector<std::string> files;
  std::string shard;
  At at;
};

Status RunAdd(const WriteOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ContextStore> s, OpenAt(opt.dir, opt.shard, opt.at));
  STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> records, ReadRecords(*s, opt.files));
  if (records.empty()) return WriteStdout("no records to add\n");
  const size_t n = records.size();
  Result<uint64_t> added = s->Add(std::move(records));
  if (!added.ok()) return added.status().WithContext(opt.dir);
  STRATA_RETURN_IF_ERROR(s->Close());
  return WriteStdout(fmt::format("added {} records: visible now\n", n));
}

Status RunUpsert(const WriteOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ContextStore> s, OpenAt(opt.dir, opt.shard, opt.at));
  STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> records, ReadRecords(*s, opt.files));
  if (records.empty()) return WriteStdout("no records to upsert\n");
  Result<std::vector<store::UpsertResult>> done = s->UpsertManyByExternalId(std::move(records));
  if (!done.ok()) return done.status().WithContext(opt.dir);
  STRATA_RETURN_IF_ERROR(s->Close());
  for (const store::UpsertResult& r : *done) {
    Json j = {{"id", r.record.id},
              {"external_id", r.record.external_id.value_or("")},
              {"inserted", r.inserted}};
    if (r.replaced_id) j["replaced_id"] = *r.replaced_id;
    STRATA_RETURN_IF_ERROR(PrintJson(j));
  }
  return FlushStdout();
}

struct KeyOptions {
  std::string dir;
  std::string id;
  std::string external_id;
  std::string shard;
  std::string patch;
  At at;
};

Result<store::ContextPatch> ParsePatch(const ContextStore& s, const std::string& text) {
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return Status::InvalidArgument("--patch must be a JSON object");
  static const std::set<std::string> kPatchable = {
      "bot_id",           "session_id",       "tenant",        "source",
      "state_metadata",   "metadata",         "relationships", "expires_at",
      "retention_policy", "lifecycle_status", "retired_at",    "retired_reason",
      "embedding",        "payload_uri",      "payload_size",  "payload_checksum"};
  for (const auto& [key, value] : j.items()) {
    if (kPatchable.count(key) == 0) {
      return Status::InvalidArgument(
          fmt::format("--patch: '{}' cannot be updated (content is not patchable)", key));
    }
  }
  STRATA_ASSIGN_OR_RETURN(std::vector<ContextRecord> parsed, ParseRecords(s, j.dump()));
  const ContextRecord& r = parsed.front();
  store::ContextPatch patch;
  patch.bot_id = r.bot_id;
  patch.session_id = r.session_id;
  patch.tenant = r.tenant;
  patch.source = r.source;
  patch.state_metadata = r.state_metadata;
  patch.metadata = r.metadata;
  patch.relationships = r.relationships;
  patch.expires_at_micros = r.expires_at_micros;
  patch.retention_policy = r.retention_policy;
  if (j.contains("lifecycle_status")) patch.lifecycle_status = r.lifecycle_status;
  patch.retired_at_micros = r.retired_at_micros;
  patch.retired_reason = r.retired_reason;
  patch.embedding = r.embedding;
  patch.payload_uri = r.payload_uri;
  patch.payload_size = r.payload_size;
  patch.payload_checksum = r.payload_checksum;
  return patch;
}

// The commands on one record by --id or --external-id return whether a record was visible
// (exit status 1 when not).
Result<bool> RunUpdate(const KeyOptions& opt) {
  STRATA_RETURN_IF_ERROR(CheckOneKey(opt.id, opt.external_id));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ContextStore> s, OpenAt(opt.dir, opt.shard, opt.at));
  STRATA_ASSIGN_OR_RETURN(store::ContextPatch patch, ParsePatch(*s, opt.patch));
  Result<std::optional<store::UpdateResult>> updated =
      opt.id.empty() ? s->UpdateByExternalId(opt.external_id, patch) : s->UpdateById(opt.id, patch);
  if (!updated.ok()) return updated.status().WithContext(opt.dir);
  STRATA_RETURN_IF_ERROR(s->Close());
  if (!updated->has_value()) {
    STRATA_RETURN_IF_ERROR(WriteStdout("no visible record\n"));
    return false;
  }
  STRATA_ASSIGN_OR_RETURN(Json j, RecordJson(*s, (*updated)->record));
  j["replaced_id"] = (*updated)->replaced_id;
  STRATA_RETURN_IF_ERROR(PrintJson(j));
  STRATA_RETURN_IF_ERROR(FlushStdout());
  return true;
}

Result<bool> RunDelete(const KeyOptions& opt) {
  STRATA_RETURN_IF_ERROR(CheckOneKey(opt.id, opt.external_id));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ContextStore> s, OpenAt(opt.dir, opt.shard, opt.at));
  Result<bool> deleted =
      opt.id.empty() ? s->DeleteByExternalId(opt.external_id) : s->DeleteById(opt.id);
  if (!deleted.ok()) return deleted.status().WithContext(opt.dir);
  STRATA_RETURN_IF_ERROR(s->Close());
  STRATA_RETURN_IF_ERROR(WriteStdout(*deleted ? "deleted\n" : "no visible record\n"));
  return *deleted;
}

Result<bool> RunGet(const KeyOptions& opt) {
  STRATA_RETURN_IF_ERROR(CheckOneKey(opt.id, opt.external_id));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ContextStore> s, OpenAt(opt.dir, "", opt.at));
  Result<std::optional<ContextRecord>> got =
      opt.id.empty() ? s->GetByExternalId(opt.external_id) : s->GetById(opt.id);
  if (!got.ok()) return got.status().WithContext(opt.dir);
  if (!got->has_value()) return false;
  STRATA_RETURN_IF_ERROR(PrintRecords(*s, {**got}));
  return true;
}

struct ReadOptions {
  std::string dir;
  At at;
  std::string filter;
  int64_t limit = 100;
  int64_t offset = 0;
  bool include_expired = false;
  bool include_retired = false;
  bool no_embedding = false;
  // related
  std::string target;
  std::string relation;
  // search / retrieve
  std::string vector;
  std::string text;
  std::string scoring = "bm25";
  bool exact = false;
};

store::LifecycleQueryOptions Lifecycle(const ReadOptions& opt) {
  return {.include_expired = opt.include_expired, .include_retired = opt.include_retired};
}

Status RunList(const ReadOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(store::RecordFilters filters, ParseFilter(opt.filter));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ContextStore> s, OpenAt(opt.dir, "", opt.at));
  std::optional<store::ReadProjection> projection;
  if (opt.no_embedding) projection = store::ReadProjection{.embedding = false};
  Result<std::vector<ContextRecord>> listed =
      s->ListFiltered(filters, opt.limit, opt.offset, Lifecycle(opt), projection);
  if (!listed.ok()) return listed.status().WithContext(opt.dir);
  return PrintRecords(*s, *listed);
}

Status RunRelated(const ReadOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ContextStore> s, OpenAt(opt.dir, "", opt.at));
  Result<std::vector<ContextRecord>> related = s->ListRelated(
      opt.target, opt.relation.empty() ? std::nullopt : std::optional<std::string>(opt.relation),
      opt.limit);
  if (!related.ok()) return related.status().WithContext(opt.dir);
  return PrintRecords(*s, *related);
}

Status RunSearch(const ReadOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::vector<float> query, ParseVector(opt.vector));
  STRATA_ASSIGN_OR_RETURN(store::RecordFilters filters, ParseFilter(opt.filter));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ContextStore> s, OpenAt(opt.dir, "", opt.at));
  Result<std::vector<store::SearchResult>> found =
      s->Search(query, opt.limit, filters, Lifecycle(opt),
                opt.exact ? store::SearchMode::kExact : store::SearchMode::kAuto);
  if (!found.ok()) return found.status().WithContext(opt.dir);
  for (const store::SearchResult& r : *found) {
    STRATA_ASSIGN_OR_RETURN(Json j, RecordJson(*s, r.record));
    if (opt.no_embedding) j.erase("embedding");
    j["distance"] = r.distance;
    STRATA_RETURN_IF_ERROR(PrintJson(j));
  }
  return FlushStdout();
}

Status RunRetrieve(const ReadOptions& opt) {
  store::RetrieveOptions options;
  if (!opt.text.empty()) options.text = opt.text;
  if (!opt.vector.empty()) {
    STRATA_ASSIGN_OR_RETURN(options.vector, ParseVector(opt.vector));
  }
  STRATA_ASSIGN_OR_RETURN(options.filters, ParseFilter(opt.filter));
  options.limit = opt.limit;
  options.lifecycle = Lifecycle(opt);
  options.text_scoring =
      opt.scoring == "overlap" ? store::TextScoring::kOverlap : store::TextScoring::kBm25;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ContextStore> s, OpenAt(opt.dir, "", opt.at));
  Result<std::vector<store::RetrieveResult>> found = s->Retrieve(options);
  if (!found.ok()) return found.status().WithContext(opt.dir);
  for (const store::RetrieveResult& r : *found) {
    STRATA_ASSIGN_OR_RETURN(Json j, RecordJson(*s, r.record));
    if (opt.no_embedding) j.erase("embedding");
    j["score"] = r.score;
    if (r.vector_distance) j["vector_distance"] = *r.vector_distance;
    if (r.text_score) j["text_score"] = *r.text_score;
    j["matched_channels"] = r.matched_channels;
    STRATA_RETURN_IF_ERROR(PrintJson(j));
  }
  return FlushStdout();
}

Status RunStats(const ReadOptions& opt) {
  const std::string& dir = opt.dir;
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ContextStore> s, OpenAt(dir, "", opt.at));
  Result<std::vector<ContextRecord>> visible =
      s->ListFiltered({}, std::nullopt, 0, {}, store::ReadProjection{false, false, false});
  if (!visible.ok()) return visible.status().WithContext(dir);
  Result<int64_t> pending = s->base().PendingGenerations();
  if (!pending.ok()) return pending.status().WithContext(dir);
  Json j = {{"visible_records", visible->size()},
            {"embedding_dim", s->embedding_dim()},
            {"distance_metric", std::string(store::DistanceMetricName(s->distance_metric()))},
            {"blob_columns", s->blob_columns()},
            {"version", s->version()},
            {"pending_generations", *pending}};
  STRATA_RETURN_IF_ERROR(PrintJson(j));
  return FlushStdout();
}

struct VersionOptions {
  std::string dir;
  std::string name;  // snapshot label / branch name
  At at;
  bool list = false;
  std::string remove;
};

Json TagJson(const table::TagInfo& tag) {
  return {{"label", tag.label},
          {"version", tag.version},
          {"committed_at_micros", tag.timestamp_micros}};
}

// snapshot DIR LABEL | --list | --delete LABEL
Status RunSnapshot(const VersionOptions& opt) {
  if (opt.list + !opt.remove.empty() + !opt.name.empty() != 1) {
    return Status::InvalidArgument("give one of LABEL, --list and --delete LABEL");
  }
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ContextStore> s, OpenAt(opt.dir, "", opt.at));
  if (opt.list) {
    Result<std::vector<table::TagInfo>> tags = s->ListSnapshots();
    if (!tags.ok()) return tags.status().WithContext(opt.dir);
    for (const table::TagInfo& tag : *tags) STRATA_RETURN_IF_ERROR(PrintJson(TagJson(tag)));
    return FlushStdout();
  }
  if (!opt.remove.empty()) {
    Status deleted = s->DeleteSnapshot(opt.remove);
    if (!deleted.ok()) return deleted.WithContext(opt.dir);
    return WriteStdout(fmt::format("deleted snapshot {}\n", opt.remove));
  }
  Result<table::TagInfo> tag = s->Snapshot(opt.name);
  if (!tag.ok()) return tag.status().WithContext(opt.dir);
  STRATA_RETURN_IF_ERROR(s->Close());
  STRATA_RETURN_IF_ERROR(PrintJson(TagJson(*tag)));
  return FlushStdout();
}

// fork DIR BRANCH | --list | --delete BRANCH
Status RunFork(const VersionOptions& opt) {
  if (opt.list + !opt.remove.empty() + !opt.name.empty() != 1) {
    return Status::InvalidArgument("give one of BRANCH, --list and --delete BRANCH");
  }
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ContextStore> s, OpenAt(opt.dir, "", opt.at));
  if (opt.list) {
    Result<std::vector<table::BranchInfo>> branches = s->ListBranches();
    if (!branches.ok()) return branches.status().WithContext(opt.dir);
    for (const table::BranchInfo& b : *branches) {
      STRATA_RETURN_IF_ERROR(
          PrintJson({{"branch", b.name}, {"forked_from_version", b.forked_from}}));
    }
    return FlushStdout();
  }
  if (!opt.remove.empty()) {
    Status deleted = s->DeleteBranch(opt.remove);
    if (!deleted.ok()) return deleted.WithContext(opt.dir);
    return WriteStdout(fmt::format("deleted branch {}\n", opt.remove));
  }
  Result<std::unique_ptr<ContextStore>> branch = s->Fork(opt.name);
  if (!branch.ok()) return branch.status().WithContext(opt.dir);
  Json j = {{"branch", opt.name}, {"version", (*branch)->version()}};
  STRATA_RETURN_IF_ERROR((*branch)->Close());
  STRATA_RETURN_IF_ERROR(s->Close());
  STRATA_RETURN_IF_ERROR(PrintJson(j));
  return FlushStdout();
}

// checkout DIR --snapshot L | --version N | --branch B: the visible records there, as list
// prints them, after a one-line summary on stderr.
Status RunCheckout(const ReadOptions& opt) {
  if (opt.at.branch.empty() && opt.at.snapshot.empty() && opt.at.version == 0) {
    return Status::InvalidArgument("give --snapshot LABEL, --version N or --branch NAME");
  }
  STRATA_ASSIGN_OR_RETURN(store::RecordFilters filters, ParseFilter(opt.filter));
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ContextStore> s, OpenAt(opt.dir, "", opt.at));
  std::optional<store::ReadProjection> projection;
  if (opt.no_embedding) projection = store::ReadProjection{.embedding = false};
  Result<std::vector<ContextRecord>> listed =
      s->ListFiltered(filters, opt.limit, opt.offset, Lifecycle(opt), projection);
  if (!listed.ok()) return listed.status().WithContext(opt.dir);
  std::string where = opt.at.branch.empty() ? "" : fmt::format("branch {}, ", opt.at.branch);
  if (!opt.at.snapshot.empty()) where += fmt::format("snapshot {}, ", opt.at.snapshot);
  fmt::print(stderr, "{}base version {}: {} records shown\n", where, s->version(), listed->size());
  return PrintRecords(*s, *listed);
}

struct PayloadOptions {
  std::string dir;
  std::string uri;
  std::string file;  // put-payload input
  std::string id;
  std::string output;  // fetch-payload output ("" = stdout)
  std::string shard;
  At at;
};

Status RunMigrateRelationships(const PayloadOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ContextStore> s, OpenAt(opt.dir, opt.shard, opt.at));
  Result<bool> added = s->MigrateRelationshipsColumn();
  if (!added.ok()) return added.status().WithContext(opt.dir);
  STRATA_RETURN_IF_ERROR(s->Close());
  return WriteStdout(*added ? "added the relationships column\n"
                            : "the relationships column is already there\n");
}

Status RunPutPayload(const PayloadOptions& opt) {
  Result<std::string> bytes = ReadTextFileOrStdin(opt.file);
  if (!bytes.ok()) return bytes.status().WithContext(opt.file == "-" ? "stdin" : opt.file);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ContextStore> s, OpenAt(opt.dir, opt.shard, opt.at));
  Result<int64_t> length = s->PutPayload(opt.uri, *bytes);
  if (!length.ok()) return length.status().WithContext(opt.dir);
  return WriteStdout(fmt::format("{}\n", *length));
}

// Exit status 1 when no record is visible.
Result<bool> RunFetchPayload(const PayloadOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ContextStore> s, OpenAt(opt.dir, "", opt.at));
  Result<std::optional<std::string>> payload = s->FetchPayload(opt.id);
  if (!payload.ok()) return payload.status().WithContext(opt.dir);
  if (!payload->has_value()) {
    fmt::print(stderr, "no visible record '{}'\n", opt.id);
    return false;
  }
  const std::string& bytes = **payload;
  if (opt.output.empty()) {
    STRATA_RETURN_IF_ERROR(WriteStdout(bytes));
    STRATA_RETURN_IF_ERROR(FlushStdout());
    return true;
  }
  std::ofstream out(opt.output, std::ios::binary | std::ios::trunc);
  if (!out) return Status::IOError(fmt::format("cannot create '{}'", opt.output));
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) return Status::IOError(fmt::format("writing '{}' failed", opt.output));
  fmt::print(stderr, "wrote {} bytes to {}\n", bytes.size(), opt.output);
  return true;
}

void AddPayloadCommands(CLI::App* group, int* exit_code) {
  auto migrate = std::make_shared<PayloadOptions>();
  CLI::App* migrate_cmd = group->add_subcommand(
      "migrate-relationships",
      "Add the relationships column to a store made without it (all null for older records)");
  migrate_cmd->add_option("DIR", migrate->dir, kDirHelp)->required();
  migrate_cmd->add_option("--shard", migrate->shard, kShardHelp);
  AddAtOptions(migrate_cmd, &migrate->at, /*reads=*/false);
  migrate_cmd->callback(
      [migrate, exit_code] { *exit_code = Finish(RunMigrateRelationships(*migrate)); });

  auto put = std::make_shared<PayloadOptions>();
  CLI::App* put_cmd = group->add_subcommand(
      "put-payload",
      "Store FILE as the external payload URI (a key such as docs/a.pdf in the store's payload "
      "area; immutable); prints its length");
  put_cmd->add_option("DIR", put->dir, kDirHelp)->required();
  put_cmd->add_option("URI", put->uri, "Payload key, as records name it in payload_uri")
      ->required();
  put_cmd->add_option("FILE", put->file, "The payload's bytes ('-' for stdin)")->required();
  put_cmd->add_option("--shard", put->shard, kShardHelp);
  AddAtOptions(put_cmd, &put->at, /*reads=*/false);
  put_cmd->callback([put, exit_code] { *exit_code = Finish(RunPutPayload(*put)); });

  auto fetch = std::make_shared<PayloadOptions>();
  CLI::App* fetch_cmd = group->add_subcommand(
      "fetch-payload",
      "Write the external payload of the visible record --id (its payload_uri) to stdout or "
      "--output (exit 1: no visible record)");
  fetch_cmd->add_option("DIR", fetch->dir, kDirHelp)->required();
  fetch_cmd->add_option("--id", fetch->id, "Record id")->required();
  fetch_cmd->add_option("--output,-o", fetch->output, "Write to this file instead of stdout");
  AddAtOptions(fetch_cmd, &fetch->at, /*reads=*/true);
  fetch_cmd->callback([fetch, exit_code] {
    Result<bool> found = RunFetchPayload(*fetch);
    *exit_code = Finish(found.status());
    if (*exit_code == 0 && !*found) *exit_code = 1;
  });
}

// Registers a command on one record by --id or --external-id (with --shard when it writes);
// exit status 1 when `run` found no visible record.
CLI::App* AddKeyCommand(CLI::App* group, int* exit_code, const char* name, const char* help,
                        bool writes, Result<bool> (*run)(const KeyOptions&),
                        const std::shared_ptr<KeyOptions>& opt) {
  CLI::App* cmd = group->add_subcommand(name, help);
  cmd->add_option("DIR", opt->dir, kDirHelp)->required();
  cmd->add_option("--id", opt->id, "Record id");
  cmd->add_option("--external-id", opt->external_id, "Record external id");
  if (writes) cmd->add_option("--shard", opt->shard, kShardHelp);
  AddAtOptions(cmd, &opt->at, /*reads=*/!writes);
  cmd->callback([opt, exit_code, run] {
    Result<bool> found = run(*opt);
    *exit_code = Finish(found.status());
    if (*exit_code == 0 && !*found) *exit_code = 1;
  });
  return cmd;
}

// Registers `snapshot` or `fork`: DIR NAME, or --list, or --delete NAME.
void AddVersionCommand(CLI::App* group, int* exit_code, const char* name, const char* help,
                       const char* positional, const char* positional_help, const char* list_help,
                       const char* delete_help, Status (*run)(const VersionOptions&)) {
  auto opt = std::make_shared<VersionOptions>();
  CLI::App* cmd = group->add_subcommand(name, help);
  cmd->add_option("DIR", opt->dir, kDirHelp)->required();
  cmd->add_option(positional, opt->name, positional_help);
  cmd->add_flag("--list", opt->list, list_help);
  cmd->add_option("--delete", opt->remove, delete_help);
  AddAtOptions(cmd, &opt->at, /*reads=*/true);
  cmd->callback([opt, exit_code, run] { *exit_code = Finish(run(*opt)); });
}

void AddReadOptions(CLI::App* cmd, ReadOptions* opt, bool paged) {
  cmd->add_option("DIR", opt->dir, kDirHelp)->required();
  AddAtOptions(cmd, &opt->at, /*reads=*/true);
  cmd->add_option("--filter", opt->filter,
                  "RecordFilters as JSON: bot_id, session_id, role, content_type, tenant, "
                  "source, created_at {gte, lte}; any other key matches metadata");
  cmd->add_option("--limit", opt->limit, paged ? "Records per page" : "Results (default 10)")
      ->check(IntegerAtLeast<int64_t>(0))
      ->capture_default_str();
  if (paged) {
    cmd->add_option("--offset", opt->offset, "Skip this many records first")
        ->check(IntegerAtLeast<int64_t>(0));
  }
  cmd->add_flag("--include-expired", opt->include_expired, "Show expired records too");
  cmd->add_flag("--include-retired", opt->include_retired,
                "Show retired, superseded and other hidden lifecycle states too");
  cmd->add_flag("--no-embedding", opt->no_embedding, "Leave the embeddings out of the output");
}

}  // namespace

void AddContextCommands(CLI::App& app, int* exit_code) {
  CLI::App* group = app.add_subcommand(
      "context", "Agent memory: records with lifecycle, upserts, vector search and retrieval");
  group->require_subcommand(1);

  auto create = std::make_shared<CreateOptions>();
  CLI::App* create_cmd = group->add_subcommand("create",
                                               "Create a context store in a new "
                                               "directory");
  create_cmd->add_option("DIR", create->dir, kDirHelp)->required();
  create_cmd->add_option("--dim", create->dim, "Embedding dimension")->capture_default_str();
  create_cmd->add_option("--metric", create->metric, "Distance metric: l2, cosine or dot")
      ->capture_default_str();
  create_cmd->add_option("--blob", create->blob_columns,
                         "Store text_payload / binary_payload as a blob column (left out of "
                         "lists)");
  create_cmd->callback([create, exit_code] { *exit_code = Finish(RunCreate(*create)); });

  for (const char* name : {"add", "upsert"}) {
    auto write = std::make_shared<WriteOptions>();
    const bool add = std::string_view(name) == "add";
    CLI::App* cmd = group->add_subcommand(
        name, add ? "Add records from JSON Lines (visible on return; nothing written on bad "
                    "input)"
                  : "Insert or supersede records by external_id, all or nothing; prints one "
                    "result per record");
    cmd->add_option("DIR", write->dir, kDirHelp)->required();
    cmd->add_option("FILE", write->files, "JSON Lines inputs ('-' or none for stdin)");
    cmd->add_option("--shard", write->shard, kShardHelp);
    AddAtOptions(cmd, &write->at, /*reads=*/false);
    cmd->callback(
        [write, exit_code, add] { *exit_code = Finish(add ? RunAdd(*write) : RunUpsert(*write)); });
  }

  auto update = std::make_shared<KeyOptions>();
  AddKeyCommand(group, exit_code, "update",
                "Write a new version of a visible record with --patch applied (exit 1: none)",
                /*writes=*/true, &RunUpdate, update)
      ->add_option("--patch", update->patch, "JSON object of the fields to change")
      ->required();
  AddKeyCommand(group, exit_code, "delete", "Hide a visible record with a tombstone (exit 1: none)",
                /*writes=*/true, &RunDelete, std::make_shared<KeyOptions>());
  AddKeyCommand(group, exit_code, "get", "Print the visible record (exit 1: none)",
                /*writes=*/false, &RunGet, std::make_shared<KeyOptions>());

  auto list = std::make_shared<ReadOptions>();
  CLI::App* list_cmd = group->add_subcommand(
      "list", "Print visible records by (created_at, id), one JSON object per line");
  AddReadOptions(list_cmd, list.get(), /*paged=*/true);
  list_cmd->callback([list, exit_code] { *exit_code = Finish(RunList(*list)); });

  auto related = std::make_shared<ReadOptions>();
  CLI::App* related_cmd =
      group->add_subcommand("related", "Print visible records with a relationship to TARGET");
  related_cmd->add_option("DIR", related->dir, kDirHelp)->required();
  related_cmd->add_option("TARGET", related->target, "Target record id")->required();
  related_cmd->add_option("--relation", related->relation, "Only this relation");
  related_cmd->add_option("--limit", related->limit, "Most records")->capture_default_str();
  AddAtOptions(related_cmd, &related->at, /*reads=*/true);
  related_cmd->callback([related, exit_code] { *exit_code = Finish(RunRelated(*related)); });

  auto search = std::make_shared<ReadOptions>();
  search->limit = store::kDefaultSearchLimit;
  CLI::App* search_cmd = group->add_subcommand(
      "search", "Print the visible records nearest to --vector, with their distance");
  AddReadOptions(search_cmd, search.get(), /*paged=*/false);
  search_cmd->add_option("--vector", search->vector, "Query vector as a JSON array")->required();
  search_cmd->add_flag("--exact", search->exact,
                       "Score every record instead of using the vector index (if there is one)");
  search_cmd->callback([search, exit_code] { *exit_code = Finish(RunSearch(*search)); });

  auto retrieve = std::make_shared<ReadOptions>();
  retrieve->limit = store::kDefaultSearchLimit;
  CLI::App* retrieve_cmd = group->add_subcommand(
      "retrieve", "Hybrid retrieval: --text and / or --vector, fused by reciprocal rank");
  AddReadOptions(retrieve_cmd, retrieve.get(), /*paged=*/false);
  retrieve_cmd->add_option("--text", retrieve->text, "Query text");
  retrieve_cmd->add_option("--vector", retrieve->vector, "Query vector as a JSON array");
  retrieve_cmd->add_option("--scoring", retrieve->scoring, "Text score: bm25 or overlap")
      ->check(CLI::IsMember({"bm25", "overlap"}))
      ->capture_default_str();
  retrieve_cmd->callback([retrieve, exit_code] { *exit_code = Finish(RunRetrieve(*retrieve)); });

  auto stats = std::make_shared<ReadOptions>();
  CLI::App* stats_cmd = group->add_subcommand("stats", "Print the store's counts and options");
  stats_cmd->add_option("DIR", stats->dir, kDirHelp)->required();
  AddAtOptions(stats_cmd, &stats->at, /*reads=*/true);
  stats_cmd->callback([stats, exit_code] { *exit_code = Finish(RunStats(*stats)); });

  AddVersionCommand(group, exit_code, "snapshot",
                    "Name what readers see now (pending rows folded in) as LABEL; it stays "
                    "readable with --snapshot LABEL until deleted",
                    "LABEL", "Snapshot label ([A-Za-z0-9._-], 1-128)", "List the snapshots instead",
                    "Delete this snapshot instead", &RunSnapshot);
  AddVersionCommand(group, exit_code, "fork",
                    "Create branch BRANCH from what readers see now (or from --snapshot / "
                    "--version): a writable store of its own sharing this one's files; use it "
                    "with --branch BRANCH",
                    "BRANCH", "Branch name ([A-Za-z0-9._-], 1-128)", "List the branches instead",
                    "Delete this branch (and the files only it used) instead", &RunFork);

  auto checkout = std::make_shared<ReadOptions>();
  CLI::App* checkout_cmd = group->add_subcommand(
      "checkout",
      "Print the visible records of a snapshot, version or branch (a summary line on stderr)");
  AddReadOptions(checkout_cmd, checkout.get(), /*paged=*/true);
  checkout_cmd->callback([checkout, exit_code] { *exit_code = Finish(RunCheckout(*checkout)); });

  AddPayloadCommands(group, exit_code);

  AddStoreMaintenanceCommands(
      *group, exit_code,
      [](const std::string& dir,
         const std::string& shard) -> Result<std::shared_ptr<store::StorageBase>> {
        STRATA_ASSIGN_OR_RETURN(std::unique_ptr<ContextStore> s, OpenStore(dir, shard));
        return BaseOf(std::move(s));
      },
      {.rows = "records", .dir_help = kDirHelp, .shard_help = kShardHelp});
}

}  // namespace strata::cli
