// The maintenance commands shared by every typed store's command group (store_commands.h).
#include "store_commands.h"

#include <fmt/format.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "cli_common.h"
#include "strata/table.h"
#include "table_cli.h"

namespace strata::cli {

std::string ShardName(const std::string& shard) { return shard.empty() ? "default" : shard; }

namespace {

struct ShardOptions {
  std::string dir;
  std::string shard;
  bool all = false;  // merge: repeat until the shard has nothing pending
};

Status RunFlush(const StoreOpener& open, const StoreCommandTerms& terms, const ShardOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<store::StorageBase> base, open(opt.dir, opt.shard));
  const std::string shard = ShardName(opt.shard);
  // The counts cover every shard; another shard's damage must not keep this one's
  // acknowledged rows from being published, so it becomes a warning after the flush.
  Result<store::StoreObservation> before = base->Observe();
  // Opening the writer claims the shard, replays its WAL (rows added without --flush) and
  // publishes what it replayed; the flush seals anything left.
  Status opened = base->OpenWriter();
  if (!opened.ok()) return opened.WithContext(opt.dir);
  Result<store::FlushOutcome> flushed = base->Flush();
  if (!flushed.ok()) return flushed.status().WithContext(opt.dir);
  if (*flushed == store::FlushOutcome::kFenced) {
    return Status::Fenced(
        fmt::format("{}: another writer claimed shard '{}' while flushing; run the flush again",
                    opt.dir, shard));
  }
  Result<store::StoreObservation> after = base->Observe();
  if (!before.ok() || !after.ok()) {
    ReportWarning(opt.dir,
                  fmt::format("could not count the store's {}: {}", terms.rows,
                              (before.ok() ? after.status() : before.status()).ToString()));
    // Both steps succeeded: everything the shard's WAL held is visible now.
    return WriteStdout(
        fmt::format("flushed shard '{}': its added {} are visible (not counted, see the warning)\n",
                    shard, terms.rows));
  }
  const int64_t generations = after->pending_generations - before->pending_generations;
  const int64_t rows = after->generation_rows - before->generation_rows;
  if (generations <= 0) {
    return WriteStdout(fmt::format("nothing to flush in shard '{}'; {} generations pending\n",
                                   shard, after->pending_generations));
  }
  return WriteStdout(fmt::format(
      "flushed shard '{}': {} {} now visible in {} new generations; {} generations pending\n",
      shard, rows, terms.rows, generations, after->pending_generations));
}

// Merges; `committed` says whether a base version was committed before an error.
Status RunMerge(const StoreOpener& open, const StoreCommandTerms& terms, const ShardOptions& opt,
                bool* committed) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<store::StorageBase> base, open(opt.dir, opt.shard));
  const std::string shard = ShardName(opt.shard);
  // Merging needs the shard's writer (only the owner merges); opening it also publishes rows
  // still in the WAL, so they are merged too.
  Status opened = base->OpenWriter();
  if (!opened.ok()) return opened.WithContext(opt.dir);
  int generations = 0;
  int64_t rows = 0;
  uint64_t version = 0;
  int passes = 0;
  auto in_passes = [&] {
    return passes > 1 ? fmt::format(" in {} passes", passes) : std::string();
  };
  // What the passes so far committed, for a report that must say so.
  auto done = [&] {
    return fmt::format("merged {} {} of shard '{}'{} -> version {} committed", rows, terms.rows,
                       shard, in_passes(), version);
  };
  while (true) {
    // One pass folds at most merge_max_generations (8) generations in one base commit.
    Result<store::MergeReport> report = base->Cleanup();
    if (!report.ok()) {
      if (version == 0) return report.status().WithContext(opt.dir);
      *committed = true;
      return report.status().WithContext(
          fmt::format("{}: {}; the next merge pass failed", opt.dir, done()));
    }
    if (report->base_version != 0) {
      ++passes;
      version = report->base_version;
      rows += report->rows_merged;
    }
    generations += report->generations_reclaimed;
    if (!report->complete()) {
      *committed = version != 0;
      return report->follow_up.WithContext(fmt::format(
          "{}: {}; draining the merged generations from the shard manifest failed (the {} "
          "are read once; the next merge or writer of shard '{}' drains them)",
          opt.dir, done(), terms.rows, shard));
    }
    if (report->generations_reclaimed == 0 || !opt.all) break;
  }
  std::string out =
      generations == 0
          ? fmt::format("nothing to merge in shard '{}'; version {} unchanged\n", shard,
                        base->version())
          : fmt::format("merged {} generations ({} {}) of shard '{}'{} -> version {}\n",
                        generations, rows, terms.rows, shard, in_passes(),
                        version != 0 ? version : base->version());
  // PendingGenerations counts every shard: the damage of another shard is reported, and
  // does not fail this shard's merge.
  Result<int64_t> pending = base->PendingGenerations();
  if (!pending.ok()) {
    ReportWarning(opt.dir, "could not count the pending generations of the other shards: " +
                               pending.status().ToString());
  } else if (*pending > 0) {
    // Other shards are merged with --shard.
    out += fmt::format("{} generations still pending in the store's shards{}\n", *pending,
                       opt.all ? "" : " (--all merges this shard until it has none)");
  }
  Status written = WriteStdout(out);
  if (written.ok()) written = FlushStdout();
  if (written.ok() || version == 0) return written;
  // The merge is committed although its report could not be written.
  *committed = true;
  return written.WithContext(fmt::format("{}: {}", opt.dir, done()));
}

struct CompactOptions {
  std::string dir;
  CompactionBounds bounds;
};

Status RunCompact(const StoreOpener& open, const CompactOptions& opt) {
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<store::StorageBase> base, open(opt.dir, ""));
  RowProgress progress("compacting");
  table::CompactionOptions options{.target_rows_per_fragment = opt.bounds.target_rows,
                                   .max_source_fragments = opt.bounds.max_source_fragments,
                                   .progress = progress.Callback()};
  Result<table::CompactionResult> result = base->Compact(options);
  progress.Finish();
  if (!result.ok()) return result.status().WithContext(opt.dir);
  const table::CompactionResult& r = *result;
  if (r.version == 0) {
    return WriteStdout(fmt::format("nothing to compact; version {} unchanged\n", base->version()));
  }
  return WriteStdout(fmt::format(
      "compacted {} fragments into {} ({} rows written; read {}, wrote {}) -> version {}\n",
      r.fragments_removed, r.fragments_added, r.rows_written, FormatBytes(r.bytes_read),
      FormatBytes(r.bytes_written), r.version));
}

}  // namespace

void AddStoreMaintenanceCommands(CLI::App& group, int* exit_code, StoreOpener open,
                                 const StoreCommandTerms& terms) {
  const std::string& dir_help = terms.dir_help;
  const std::string& shard_help = terms.shard_help;

  auto flush = std::make_shared<ShardOptions>();
  CLI::App* flush_cmd = group.add_subcommand(
      "flush", fmt::format("Make a shard's added {} visible (replays its WAL, seals a generation)",
                           terms.rows));
  flush_cmd->add_option("DIR", flush->dir, dir_help)->required();
  flush_cmd->add_option("--shard", flush->shard, shard_help);
  flush_cmd->callback(
      [flush, open, terms, exit_code] { *exit_code = Finish(RunFlush(open, terms, *flush)); });

  auto merge = std::make_shared<ShardOptions>();
  CLI::App* merge_cmd =
      group.add_subcommand("merge", "Fold a shard's pending generations into the base table");
  merge_cmd->add_option("DIR", merge->dir, dir_help)->required();
  merge_cmd->add_option("--shard", merge->shard, shard_help);
  merge_cmd->add_flag("--all", merge->all,
                      "Repeat until the shard has nothing pending (one pass merges at most 8 "
                      "generations)");
  merge_cmd->callback([merge, open, terms, exit_code] {
    bool committed = false;
    Status status = RunMerge(open, terms, *merge, &committed);
    if (status.ok()) {
      *exit_code = 0;
      return;
    }
    ReportError(status);
    *exit_code = committed ? kExitMergeCommittedThenFailed : 1;
  });

  auto compact = std::make_shared<CompactOptions>();
  CLI::App* compact_cmd = group.add_subcommand(
      "compact", fmt::format("Merge small fragments of the base table (merged {})", terms.rows));
  compact_cmd->add_option("DIR", compact->dir, dir_help)->required();
  AddCompactionBoundOptions(compact_cmd, &compact->bounds);
  compact_cmd->callback(
      [compact, open, exit_code] { *exit_code = Finish(RunCompact(open, *compact)); });
}

Status CheckStoreKind(const std::shared_ptr<ObjectStore>& objects, const std::string& dir,
                      std::string_view kind) {
  Result<std::shared_ptr<table::Table>> base = table::Table::Open(objects, "");
  if (!base.ok()) return base.status().WithContext(dir);
  STRATA_ASSIGN_OR_RETURN(std::optional<std::string> owner,
                          store::OwningStoreKind(*objects, "", *(*base)->schema()));
  if (!owner) {
    return Status::InvalidArgument(fmt::format(
        "{}: not a {} store: it holds a plain table (use `strata table ...`)", dir, kind));
  }
  if (*owner != kind) {
    return Status::InvalidArgument(fmt::format(
        "{}: not a {} store: it is a {} store (use `strata {} ...`)", dir, kind, *owner, *owner));
  }
  return Status::OK();
}

}  // namespace strata::cli
