// `strata table compact | versions | checkout | verify | repair | inspect | cleanup`: looking
// after a table's versions, files and integrity from the command line.
#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli_common.h"
#include "strata/object_store.h"
#include "strata/pretty_print.h"
#include "strata/storage_base.h"
#include "strata/table.h"
#include "table_cli.h"

namespace strata::cli {
namespace {

// --- compact ---------------------------------------------------------------------------------

struct CompactOptions {
  std::string dir;
  CompactionBounds bounds;
  bool no_materialize_deletions = false;
};

Status RunCompact(const CompactOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> t, OpenTable(opt.dir));
  STRATA_RETURN_IF_ERROR(CheckTableChangeAllowed(
      opt.dir, *t,
      opt.no_materialize_deletions ? store::BaseTableChange::kCompactKeepingDeletions
                                   : store::BaseTableChange::kCompact));
  RowProgress progress("compacting");
  table::CompactionOptions options{.target_rows_per_fragment = opt.bounds.target_rows,
                                   .materialize_deletions = !opt.no_materialize_deletions,
                                   .max_source_fragments = opt.bounds.max_source_fragments,
                                   .progress = progress.Callback()};
  Result<table::CompactionResult> result = t->Compact(options);
  progress.Finish();
  if (!result.ok()) return result.status().WithContext(opt.dir);
  const table::CompactionResult& r = *result;
  if (r.version == 0) {
    return WriteStdout(fmt::format("nothing to compact; version {} unchanged\n", t->version()));
  }
  return WriteStdout(fmt::format(
      "compacted {} fragments into {} ({} rows written; files: {} removed, {} added; "
      "read {}, wrote {}) -> version {}\n",
      r.fragments_removed, r.fragments_added, r.rows_written, r.files_removed, r.files_added,
      FormatBytes(r.bytes_read), FormatBytes(r.bytes_written), r.version));
}

// --- versions / checkout ---------------------------------------------------------------------

std::string VersionLine(const table::VersionInfo& v) {
  return fmt::format("{:>6}  {}  {:<16} {:>10} rows  {:>5} fragments\n", v.version,
                     FormatTime(v.timestamp_micros), v.operation, v.num_rows, v.num_fragments);
}

struct VersionsOptions {
  std::string dir;
};

Status RunVersions(const VersionsOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> t, OpenTable(opt.dir));
  STRATA_ASSIGN_OR_RETURN(std::vector<table::VersionInfo> versions, t->ListVersions());
  std::string out;
  for (const table::VersionInfo& v : versions) out += VersionLine(v);
  return WriteStdout(out);
}

struct CheckoutOptions {
  std::string dir;
  uint64_t version = 0;
};

Status RunCheckout(const CheckoutOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> latest, OpenTable(opt.dir));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> old, latest->Checkout(opt.version));
  const table::Table& t = *old;
  STRATA_ASSIGN_OR_RETURN(table::TableStats stats, t.Stats());
  STRATA_ASSIGN_OR_RETURN(std::vector<table::VersionInfo> versions, latest->ListVersions());
  std::string out =
      fmt::format("{} version {} (latest is {})\n", opt.dir, t.version(), latest->version());
  for (const table::VersionInfo& v : versions) {
    if (v.version == t.version()) {
      out += fmt::format("committed {} by {}\n", FormatTime(v.timestamp_micros), v.operation);
    }
  }
  out += "schema:\n" + Indent(FormatSchema(*t.schema()));
  out += fmt::format("rows: {}, fragments: {}\n", stats.num_rows, stats.num_fragments);
  out += fmt::format(
      "read it with --version {0}, e.g.\n  strata table scan {1} --version {0}\n"
      "  strata table count {1} --version {0}\n",
      t.version(), opt.dir);
  return WriteStdout(out);
}

// --- verify / repair -------------------------------------------------------------------------

struct VerifyOptions {
  std::string dir;
  bool all_versions = false;
};

// A table whose newest manifest is corrupt does not open; say where the way out is.
Status NoteRollback(const Status& status, const std::string& dir) {
  if (!status.IsCorruption()) return status;
  return Status::Corruption(fmt::format(
      "{}; `strata table repair {}` shows how to roll the table back to its newest intact "
      "version",
      status.message(), dir));
}

Status RunVerify(const VerifyOptions& opt) {
  Result<std::shared_ptr<table::Table>> opened = OpenTable(opt.dir);
  if (!opened.ok()) return NoteRollback(opened.status(), opt.dir);
  const std::shared_ptr<table::Table>& t = *opened;
  STRATA_ASSIGN_OR_RETURN(table::VerifyReport report,
                          t->Verify({.all_versions = opt.all_versions}));
  STRATA_RETURN_IF_ERROR(WriteStdout(FormatVerifyReport(report, t->version())));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> objects, OpenLocalObjectStore(opt.dir));
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> owner,
                          store::OwningStoreKind(*objects, "", *t->schema()));
  if (owner) {
    std::fprintf(stderr,
                 "note: %s is a store: this checked its base table only; `strata rollout verify` "
                 "also checks its WAL segments, shard manifests and generations\n",
                 opt.dir.c_str());
  }
  if (report.ok()) return Status::OK();
  return Status::Corruption(fmt::format(
      "{}: {} problems found; `strata table repair` drops fragments whose files are missing",
      opt.dir, report.problems.size()));
}

struct RepairOptions {
  std::string dir;
  bool drop_corrupt_versions = false;
};

// "version 7" or "versions 7..9".
std::string VersionRange(const std::vector<table::RollbackReport::CorruptVersion>& corrupt) {
  if (corrupt.size() == 1) return fmt::format("version {}", corrupt[0].version);
  return fmt::format("versions {}..{}", corrupt.front().version, corrupt.back().version);
}

// The first step of repair: a table whose newest manifests are corrupt cannot be opened, so
// they are found (and, with --drop-corrupt-versions, rolled back) before anything else.
// Appends what it found or did to `out`; an error when the table is left unopenable.
Status RollBackCorruptVersions(const RepairOptions& opt, std::string* out) {
  std::error_code ec;
  if (!std::filesystem::is_directory(opt.dir, ec)) return OpenTable(opt.dir).status();
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> store, OpenLocalObjectStore(opt.dir));
  Result<table::RollbackReport> rollback =
      table::Table::RollBackCorruptVersions(store, "", {.apply = opt.drop_corrupt_versions});
  if (!rollback.ok()) return rollback.status().WithContext(opt.dir);
  const table::RollbackReport& r = *rollback;
  if (r.corrupt.empty()) return Status::OK();
  // The base table of a store: the rows its merges committed in the dropped versions were
  // drained from its shards, so they go with those versions. Said before and after.
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> owner,
                          store::OwningStoreKind(*store, "", Schema(std::vector<FieldPtr>{})));
  const std::string store_loss =
      owner ? fmt::format(
                  "; {} is a store: rows its merges committed in {} are lost with them (their "
                  "generations were drained from the shards), rows still pending in its "
                  "shards are kept",
                  opt.dir, VersionRange(r.corrupt))
            : std::string();
  for (const table::RollbackReport::CorruptVersion& v : r.corrupt) {
    *out += fmt::format("version {}: corrupt: {}\n", v.version, v.problem);
  }
  if (!r.committed_version) {
    STRATA_RETURN_IF_ERROR(WriteStdout(*out));
    return Status::Corruption(
        fmt::format(
            "{}: {} corrupt, the newest intact version is {}; nothing changed. `strata table "
            "repair "
            "{} --drop-corrupt-versions` drops {} and commits version {} with the content of "
            "version {} (no data file is deleted)",
            opt.dir,
            r.corrupt.size() == 1 ? VersionRange(r.corrupt) + " is"
                                  : VersionRange(r.corrupt) + " are",
            r.intact_version, opt.dir, VersionRange(r.corrupt), r.newest_version + 1,
            r.intact_version) +
        store_loss);
  }
  *out += fmt::format(
      "dropped {} (corrupt: {}); table now at version {} with the content of version {}{}\n",
      VersionRange(r.corrupt), r.corrupt.back().problem, *r.committed_version, r.intact_version,
      store_loss);
  return Status::OK();
}

Status RunRepair(const RepairOptions& opt) {
  std::string out;
  STRATA_RETURN_IF_ERROR(RollBackCorruptVersions(opt, &out));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> t, OpenTable(opt.dir));
  Result<table::RepairReport> report = t->Repair();
  if (!report.ok()) {
    STRATA_RETURN_IF_ERROR(WriteStdout(out));
    return report.status().WithContext(opt.dir);
  }
  if (report->dropped.empty()) {
    return WriteStdout(out + fmt::format("nothing {}to repair; version {} unchanged\n",
                                         out.empty() ? "" : "else ", report->read_version));
  }
  for (const table::RepairReport::DroppedFragment& f : report->dropped) {
    out += fmt::format("dropped fragment {} ({} rows): missing {}\n", f.fragment_id,
                       f.physical_rows, fmt::join(f.missing_files, ", "));
  }
  if (report->committed_version) {
    out += fmt::format("-> version {}\n", *report->committed_version);
  }
  return WriteStdout(out);
}

// --- inspect ---------------------------------------------------------------------------------

struct InspectOptions {
  std::string dir;
  uint64_t version = 0;
  int max_fragments = 50;
};

std::string FragmentLines(const table::FragmentInfo& f) {
  int64_t bytes = f.deletion_file_size;
  for (const table::DataFileInfo& file : f.data_files) bytes += file.size;
  std::string out = fmt::format("  fragment {}: {} rows ({} deleted), {} data files, {}\n", f.id,
                                f.physical_rows - f.deleted_rows, f.deleted_rows,
                                f.data_files.size(), FormatBytes(bytes));
  for (const table::DataFileInfo& file : f.data_files) {
    out += fmt::format("    {}  {}  {} batches, columns [{}]\n", file.path, FormatBytes(file.size),
                       file.num_batches, fmt::join(file.columns, ","));
  }
  if (!f.deletion_file.empty()) {
    out += fmt::format("    {}  {}  {} deleted rows\n", f.deletion_file,
                       FormatBytes(f.deletion_file_size), f.deleted_rows);
  }
  return out;
}

Status RunInspect(const InspectOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> t, OpenTable(opt.dir, opt.version));
  STRATA_ASSIGN_OR_RETURN(table::TableStats s, t->Stats());
  STRATA_ASSIGN_OR_RETURN(table::TableDescription d, t->Describe());
  std::string out = fmt::format("{}: table version {}, committed {} by {}\n", opt.dir, t->version(),
                                FormatTime(d.version.timestamp_micros), d.version.operation);
  out += "schema:\n" + Indent(FormatSchema(*t->schema()));
  out += fmt::format(
      "stats:\n  rows: {} live, {} deleted\n  fragments: {} ({} data files, {} deletion "
      "files, {} of data)\n  key index: {} segments, {} fragments not indexed\n",
      s.num_rows, s.num_deleted_rows, s.num_fragments, s.num_data_files, s.num_deletion_files,
      FormatBytes(s.data_bytes), s.num_index_segments, s.unindexed_fragments);
  out += "fragments:\n";
  for (size_t i = 0; i < d.fragments.size(); ++i) {
    if (i == static_cast<size_t>(opt.max_fragments)) {
      out += fmt::format("  ... {} more fragments\n", d.fragments.size() - i);
      break;
    }
    out += FragmentLines(d.fragments[i]);
  }
  out += "indexes:\n";
  if (d.indexes.empty()) out += "  (none)\n";
  for (const table::IndexInfo& index : d.indexes) {
    int64_t entries = 0, bytes = 0;
    for (const table::IndexSegmentInfo& segment : index.segments) {
      entries += segment.num_entries;
      bytes += segment.size;
    }
    out += fmt::format("  {} ({} on {}): {} segments, {} entries, {}\n", index.name, index.type,
                       index.column, index.segments.size(), entries, FormatBytes(bytes));
    for (const table::IndexSegmentInfo& segment : index.segments) {
      out += fmt::format("    {}  {}  {} entries, fragments [{}]\n", segment.path,
                         FormatBytes(segment.size), segment.num_entries,
                         fmt::join(segment.fragment_ids, ","));
    }
  }
  out += "table metadata:\n";
  KeyValueMetadata metadata = t->metadata();
  if (metadata.empty()) out += "  (none)\n";
  for (const auto& [k, v] : metadata.entries()) out += fmt::format("  {} = {}\n", k, v);
  return WriteStdout(out);
}

// --- cleanup ---------------------------------------------------------------------------------

// "7d", "12h", "30m", "45s", "2w" -> microseconds.
Result<int64_t> ParseDuration(const std::string& text) {
  int64_t count = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), count);
  const std::string unit(end, text.data() + text.size());
  int64_t unit_micros = unit == "s"   ? 1000000
                        : unit == "m" ? int64_t{60} * 1000000
                        : unit == "h" ? int64_t{3600} * 1000000
                        : unit == "d" ? int64_t{86400} * 1000000
                        : unit == "w" ? int64_t{7} * 86400 * 1000000
                                      : 0;
  if (ec != std::errc() || count < 0 || unit_micros == 0) {
    return Status::InvalidArgument(fmt::format(
        "bad duration '{}': expected a count and a unit s, m, h, d or w, e.g. 7d", text));
  }
  if (count > INT64_MAX / unit_micros) {
    return Status::InvalidArgument(fmt::format("duration '{}' is too long", text));
  }
  return count * unit_micros;
}

struct CleanupCommandOptions {
  std::string dir;
  std::string older_than = "14d";
  int keep = 1;
  bool delete_unreferenced = false;
};

Status RunCleanup(const CleanupCommandOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(int64_t older_than, ParseDuration(opt.older_than));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<table::Table> t, OpenTable(opt.dir));
  STRATA_RETURN_IF_ERROR(CheckTableChangeAllowed(
      opt.dir, *t,
      opt.delete_unreferenced ? store::BaseTableChange::kDeleteUnreferencedFiles
                              : store::BaseTableChange::kRemoveOldVersions));
  Result<table::CleanupResult> result =
      t->CleanupOldVersions({.older_than_micros = older_than,
                             .keep_at_least = opt.keep,
                             .delete_unreferenced = opt.delete_unreferenced});
  if (!result.ok()) return result.status().WithContext(opt.dir);
  return WriteStdout(fmt::format("removed {} versions and {} files ({})\n",
                                 result->versions_removed, result->files_removed,
                                 FormatBytes(result->bytes_removed)));
}

}  // namespace

void AddTableMaintenanceCommands(CLI::App& group, int* exit_code) {
  constexpr const char* kDirHelp = "Table directory";

  auto compact = std::make_shared<CompactOptions>();
  CLI::App* compact_cmd = group.add_subcommand(
      "compact", "Merge small fragments and rewrite fragments with many deleted rows");
  compact_cmd->add_option("DIR", compact->dir, kDirHelp)->required();
  AddCompactionBoundOptions(compact_cmd, &compact->bounds);
  compact_cmd->add_flag("--no-materialize-deletions", compact->no_materialize_deletions,
                        "Keep deletion vectors instead of rewriting fragments without the rows");
  compact_cmd->callback([compact, exit_code] { *exit_code = Finish(RunCompact(*compact)); });

  auto versions = std::make_shared<VersionsOptions>();
  CLI::App* versions_cmd = group.add_subcommand(
      "versions", "List kept versions: version, commit time, operation, rows, fragments");
  versions_cmd->add_option("DIR", versions->dir, kDirHelp)->required();
  versions_cmd->callback([versions, exit_code] { *exit_code = Finish(RunVersions(*versions)); });

  auto checkout = std::make_shared<CheckoutOptions>();
  CLI::App* checkout_cmd = group.add_subcommand(
      "checkout", "Show an old version and how to read it (--version on scan, count, get)");
  checkout_cmd->add_option("DIR", checkout->dir, kDirHelp)->required();
  checkout_cmd->add_option("VERSION", checkout->version, "Version number")
      ->required()
      ->check(IntegerAtLeast<uint64_t>(1));
  checkout_cmd->callback([checkout, exit_code] { *exit_code = Finish(RunCheckout(*checkout)); });

  auto verify = std::make_shared<VerifyOptions>();
  CLI::App* verify_cmd = group.add_subcommand(
      "verify", "Check every file of the latest version (exit 1 when there are problems)");
  verify_cmd->add_option("DIR", verify->dir, kDirHelp)->required();
  verify_cmd->add_flag("--all-versions", verify->all_versions, "Check every kept version");
  verify_cmd->callback([verify, exit_code] { *exit_code = Finish(RunVerify(*verify)); });

  auto repair = std::make_shared<RepairOptions>();
  CLI::App* repair_cmd = group.add_subcommand(
      "repair",
      "Commit a version without the fragments whose files are missing; roll back corrupt "
      "newest versions (with --drop-corrupt-versions)");
  repair_cmd->add_option("DIR", repair->dir, kDirHelp)->required();
  repair_cmd->add_flag("--drop-corrupt-versions", repair->drop_corrupt_versions,
                       "When the newest manifests are corrupt, commit the newest intact "
                       "version's content as a new version (without it: report only)");
  repair_cmd->callback([repair, exit_code] { *exit_code = Finish(RunRepair(*repair)); });

  auto inspect = std::make_shared<InspectOptions>();
  CLI::App* inspect_cmd = group.add_subcommand(
      "inspect", "Show the schema, statistics, fragments, files, indexes and metadata");
  inspect_cmd->add_option("DIR", inspect->dir, kDirHelp)->required();
  inspect_cmd->add_option("--version", inspect->version, "Inspect this version, not the latest")
      ->check(IntegerAtLeast<uint64_t>(1));
  inspect_cmd->add_option("--max-fragments", inspect->max_fragments, "List at most this many")
      ->check(IntegerAtLeast<int>(0))
      ->capture_default_str();
  inspect_cmd->callback([inspect, exit_code] { *exit_code = Finish(RunInspect(*inspect)); });

  auto cleanup = std::make_shared<CleanupCommandOptions>();
  CLI::App* cleanup_cmd =
      group.add_subcommand("cleanup", "Remove old versions and the files only they use");
  cleanup_cmd->add_option("DIR", cleanup->dir, kDirHelp)->required();
  cleanup_cmd
      ->add_option("--older-than", cleanup->older_than,
                   "Remove versions committed longer ago than this (7d, 12h, 30m, 0s)")
      ->check([](const std::string& text) {
        Result<int64_t> micros = ParseDuration(text);
        return micros.ok() ? std::string() : micros.status().message();
      })
      ->capture_default_str();
  cleanup_cmd->add_option("--keep", cleanup->keep, "Always keep this many newest versions")
      ->check(IntegerAtLeast<int>(1))
      ->capture_default_str();
  cleanup_cmd->add_flag(
      "--delete-unreferenced", cleanup->delete_unreferenced,
      "Also delete files no version references (only safe when nothing is writing)");
  cleanup_cmd->callback([cleanup, exit_code] { *exit_code = Finish(RunCleanup(*cleanup)); });
}

}  // namespace strata::cli
