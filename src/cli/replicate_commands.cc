// `strata replicate mark-base | export | apply | status | verify | trim | unmark | promote |
// follow`: incremental replication of a store in a local directory through a directory of
// published bundles (include/strata/replication.h, docs/replication.md).
#include "replicate_commands.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli_common.h"
#include "strata/object_store.h"
#include "strata/replication.h"
#include "strata/table.h"

namespace strata::cli {
namespace {

using namespace strata::replication;  // NOLINT(google-build-using-namespace): the CLI of it

int Finish(const Status& s) { return s.ok() ? 0 : ReportError(s); }

// The store in local directory `dir`; NotFound (nothing created) when there is none.
Result<StoreLocation> ExistingStore(const std::string& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    return Status::NotFound(fmt::format("no store at '{}': not a directory", dir));
  }
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> objects, OpenLocalObjectStore(dir));
  STRATA_ASSIGN_OR_RETURN(bool exists, table::Table::Exists(*objects, ""));
  if (!exists) return Status::NotFound(fmt::format("no store at '{}'", dir));
  return StoreLocation{std::move(objects), ""};
}

// A replica directory: an existing store, or a place where apply may create one.
Result<StoreLocation> ReplicaStore(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) {
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> objects, OpenLocalObjectStore(dir));
    STRATA_ASSIGN_OR_RETURN(bool exists, table::Table::Exists(*objects, ""));
    if (!exists) STRATA_RETURN_IF_ERROR(CheckNewOrEmptyDirectory(dir, "replica"));
    return StoreLocation{std::move(objects), ""};
  }
  STRATA_RETURN_IF_ERROR(CheckNewOrEmptyDirectory(dir, "replica"));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> objects, OpenLocalObjectStore(dir));
  return StoreLocation{std::move(objects), ""};
}

// The bundle directory: a local object store (created if missing), so a publish is a
// temporary file, fsync and a hard link that never overwrites.
Result<std::shared_ptr<ObjectStore>> BundleDirectory(const std::string& dir) {
  return OpenLocalObjectStore(dir);
}

Result<std::string> ReadSecret(const std::string& path) {
  if (path.empty()) return std::string();
  STRATA_ASSIGN_OR_RETURN(std::string secret, ReadTextFile(path));
  while (!secret.empty() && (secret.back() == '\n' || secret.back() == '\r')) secret.pop_back();
  if (secret.empty()) return Status::InvalidArgument(fmt::format("{}: the secret is empty", path));
  return secret;
}

std::string Position(const ChainState& s) { return fmt::format("{}.{}", s.cursor, s.part); }

std::string Short(const Hash256& h) { return ToHex(h).substr(0, 16); }

std::string StateLine(const ChainState& s) {
  return fmt::format("{}.{} (id {}, {})", s.cursor, s.part, Short(s.id), s.content.ToString());
}

// --- mark-base ------------------------------------------------------------------------------

struct MarkArgs {
  std::string source;
  std::string token;
  bool replace = false;
};

Status RunMark(const MarkArgs& args) {
  STRATA_ASSIGN_OR_RETURN(StoreLocation source, ExistingStore(args.source));
  MarkOptions options;
  options.replace = args.replace;
  STRATA_ASSIGN_OR_RETURN(MarkReport r, MarkBase(source, args.token, options));
  return WriteStdout(fmt::format(
      "marked {} as the base of chain {} (token '{}', {} store)\n  base state {}\n  schema hash "
      "{}\n  read base version {} in {:.3f} s\n",
      args.source, r.chain_id, r.token, r.store_kind, StateLine(r.base), Short(r.schema_hash),
      r.source_version, r.seconds));
}

// --- export -----------------------------------------------------------------------------------

struct ExportArgs {
  std::string source;
  std::string bundles;
  std::optional<uint64_t> since;
  bool full = false;
  std::string consumer;
  int64_t max_rows = 100000;
  int64_t max_bytes = int64_t{64} << 20;
  std::string secret_file;
};

std::string ExportLines(const ExportReport& r) {
  if (r.bundles.empty()) {
    return fmt::format("nothing changed since {} ({} rows read at base version {} in {:.3f} s)\n",
                       StateLine(r.from), r.rows_scanned, r.source_version, r.scan_seconds);
  }
  std::string out;
  for (const PublishedBundle& b : r.bundles) {
    out += fmt::format("published {}  part {}/{}  {} rows  {} deletions  {}  {} {}\n", b.key,
                       b.header.part, b.header.parts, b.header.row_count, b.header.deletion_count,
                       FormatBytes(b.bytes),
                       b.header.digest_kind == DigestKind::kHmacSha256 ? "hmac-sha256" : "sha256",
                       ToHex(b.digest));
  }
  out += fmt::format(
      "exported {} rows and {} deletions ({}) from {} to {}\n  read {} rows at base version {} "
      "in {:.3f} s, published in {:.3f} s, {:.3f} s in all\n",
      r.rows, r.deletions, FormatBytes(r.bytes), StateLine(r.from), StateLine(r.to), r.rows_scanned,
      r.source_version, r.scan_seconds, r.publish_seconds, r.seconds);
  return out;
}

Status RunExport(const ExportArgs& args) {
  STRATA_ASSIGN_OR_RETURN(StoreLocation source, ExistingStore(args.source));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> bundles, BundleDirectory(args.bundles));
  ExportOptions options;
  options.since = args.since;
  options.full = args.full;
  options.consumer = args.consumer;
  options.max_rows = args.max_rows;
  options.max_bytes = args.max_bytes;
  STRATA_ASSIGN_OR_RETURN(options.hmac_secret, ReadSecret(args.secret_file));
  STRATA_ASSIGN_OR_RETURN(ExportReport r, ExportChanges(source, *bundles, "", options));
  return WriteStdout(ExportLines(r));
}

// --- apply ------------------------------------------------------------------------------------

struct ApplyArgs {
  std::string replica;
  std::vector<std::string> bundles;  // files, or one directory
  std::string secret_file;
};

std::string ApplyLine(std::string_view what, const ApplyReport& r) {
  return fmt::format("applied {}  {} -> {}  {} rows  {} deletions  {}  version {}  {:.3f} s\n",
                     what, Position(r.from), Position(r.to), r.rows, r.deletions,
                     FormatBytes(r.bytes), r.replica_version, r.seconds);
}

Status RunApply(const ApplyArgs& args) {
  STRATA_ASSIGN_OR_RETURN(StoreLocation replica, ReplicaStore(args.replica));
  ApplyOptions options;
  STRATA_ASSIGN_OR_RETURN(options.hmac_secret, ReadSecret(args.secret_file));
  std::error_code ec;
  if (args.bundles.size() == 1 && std::filesystem::is_directory(args.bundles[0], ec)) {
    STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> bundles, BundleDirectory(args.bundles[0]));
    Result<ApplyPublishedReport> r = ApplyPublished(replica, *bundles, "", options);
    if (!r.ok()) return r.status();
    std::string out;
    for (const ApplyReport& a : r->applied) out += ApplyLine("bundle", a);
    out += r->applied.empty()
               ? "nothing to apply: no bundle continues the replica's state\n"
               : fmt::format(
                     "applied {} bundles: {} rows, {} deletions, {}; the replica is at "
                     "{}\n",
                     r->applied.size(), r->rows, r->deletions, FormatBytes(r->bytes),
                     StateLine(*r->state));
    return WriteStdout(out);
  }
  for (const std::string& path : args.bundles) {
    STRATA_ASSIGN_OR_RETURN(std::string bytes, ReadTextFile(path));
    Result<ApplyReport> r = ApplyChanges(replica, bytes, options);
    if (!r.ok()) return r.status().WithContext(path);
    STRATA_RETURN_IF_ERROR(WriteStdout(ApplyLine(path, *r)));
  }
  return Status::OK();
}

// --- status, verify, trim, unmark, promote ------------------------------------------------------

Status RunStatus(const std::string& dir) {
  STRATA_ASSIGN_OR_RETURN(StoreLocation location, ExistingStore(dir));
  STRATA_ASSIGN_OR_RETURN(SourceStatus source, GetSourceStatus(location));
  STRATA_ASSIGN_OR_RETURN(ReplicaStatus replica, GetReplicaStatus(location));
  std::string out;
  if (source.marked) {
    out += fmt::format("source of chain {} (token '{}', {} store)\n  base {}\n  trim floor {}\n",
                       source.chain_id, source.token, source.store_kind, StateLine(source.base),
                       source.trim_floor);
    out += fmt::format("  kept states ({}, {}):\n", source.states.size(),
                       FormatBytes(source.kept_bytes));
    for (const ChainState& s : source.states) out += fmt::format("    {}\n", StateLine(s));
    out += fmt::format("  consumers ({}):\n", source.consumers.size());
    for (const Consumer& c : source.consumers) {
      out +=
          fmt::format("    {}  cursor {}  last seen {} µs\n", c.id, c.cursor, c.last_seen_micros);
    }
  }
  if (replica.replica) {
    out += fmt::format(
        "replica of chain {} (token '{}', {} store)\n  state {}\n  base version {}, last "
        "applied at {} µs\n",
        replica.chain_id, replica.token, replica.store_kind, StateLine(replica.state),
        replica.version, replica.applied_at_micros);
  }
  if (out.empty()) out = fmt::format("{}: not marked, not a replica\n", dir);
  return WriteStdout(out);
}

// Exit 1 when the content does not match the recorded state.
int RunVerify(const std::string& dir) {
  Result<StoreLocation> location = ExistingStore(dir);
  if (!location.ok()) return ReportError(location.status());
  Result<VerifyResult> r = Verify(*location);
  if (!r.ok()) return ReportError(r.status());
  std::string out = fmt::format("{}: {} rows at base version {}, content {} ({:.3f} s)\n", dir,
                                r->rows, r->version, r->computed.ToString(), r->seconds);
  if (!r->state) {
    out += "no chain state records a checksum to compare with\n";
  } else if (r->matches()) {
    out += fmt::format("matches state {}\n", StateLine(*r->state));
  } else {
    out += fmt::format("DOES NOT MATCH state {}\n", StateLine(*r->state));
  }
  Status written = WriteStdout(out);
  if (!written.ok()) return ReportError(written);
  return !r->state || r->matches() ? 0 : 1;
}

Status RunTrim(const std::string& dir) {
  STRATA_ASSIGN_OR_RETURN(StoreLocation location, ExistingStore(dir));
  STRATA_ASSIGN_OR_RETURN(TrimReport r, Trim(location));
  return WriteStdout(fmt::format("trim floor {}: removed {} states ({})\n", r.floor,
                                 r.removed.size(), FormatBytes(r.bytes_removed)));
}

Status RunUnmark(const std::string& dir) {
  STRATA_ASSIGN_OR_RETURN(StoreLocation location, ExistingStore(dir));
  STRATA_RETURN_IF_ERROR(Unmark(location));
  return WriteStdout(fmt::format("{}: replication chain removed\n", dir));
}

Status RunPromote(const std::string& dir) {
  STRATA_ASSIGN_OR_RETURN(StoreLocation location, ExistingStore(dir));
  STRATA_RETURN_IF_ERROR(Promote(location));
  return WriteStdout(
      fmt::format("{}: promoted; it accepts local writes and no longer bundles\n", dir));
}

// --- follow -----------------------------------------------------------------------------------

struct FollowArgs {
  std::string source;
  std::string replica;
  std::string bundles;
  double interval = 1.0;
  int64_t rounds = 0;  // 0 = until interrupted
  std::string consumer = "follower";
  int64_t max_rows = 100000;
  std::string secret_file;
};

std::atomic<bool> g_stop{false};

Status RunFollow(const FollowArgs& args) {
  STRATA_ASSIGN_OR_RETURN(StoreLocation source, ExistingStore(args.source));
  STRATA_ASSIGN_OR_RETURN(StoreLocation replica, ReplicaStore(args.replica));
  STRATA_ASSIGN_OR_RETURN(std::shared_ptr<ObjectStore> bundles, BundleDirectory(args.bundles));
  FollowOptions options;
  options.consumer = args.consumer;
  options.export_options.max_rows = args.max_rows;
  STRATA_ASSIGN_OR_RETURN(std::string secret, ReadSecret(args.secret_file));
  options.export_options.hmac_secret = secret;
  options.apply_options.hmac_secret = secret;
  std::signal(SIGINT, [](int) { g_stop = true; });
  std::signal(SIGTERM, [](int) { g_stop = true; });
  for (int64_t round = 1; !g_stop && (args.rounds == 0 || round <= args.rounds); ++round) {
    const auto start = std::chrono::steady_clock::now();
    STRATA_ASSIGN_OR_RETURN(FollowReport r, FollowOnce(source, replica, *bundles, "", options));
    const ChainState& at = r.applied.state ? *r.applied.state : r.exported.to;
    STRATA_RETURN_IF_ERROR(WriteStdout(fmt::format(
        "round {}: cursor {}.{}  applied {} bundles ({} rows, {} deletions, {})  lag {:.3f} s, "
        "{} rows behind  {:.3f} s\n",
        round, at.cursor, at.part, r.applied.applied.size(), r.applied.rows, r.applied.deletions,
        FormatBytes(r.applied.bytes), r.lag_seconds, r.rows_behind, r.seconds)));
    STRATA_RETURN_IF_ERROR(FlushStdout());
    if (args.rounds != 0 && round == args.rounds) break;
    const auto next = start + std::chrono::duration<double>(args.interval);
    while (!g_stop && std::chrono::steady_clock::now() < next) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return Status::OK();
}

}  // namespace

void AddReplicateCommands(CLI::App& app, int* exit_code) {
  CLI::App* group = app.add_subcommand(
      "replicate", "Copy a store to replicas incrementally as verified, chained bundles");
  group->require_subcommand(1);
  const std::string secret_help =
      "File holding the shared secret: bundles are keyed (HMAC-SHA-256) and unkeyed ones refused";

  auto mark = std::make_shared<MarkArgs>();
  CLI::App* mark_cmd = group->add_subcommand(
      "mark-base", "Start a replication chain: fix the store's current content as its base");
  mark_cmd->add_option("SOURCE", mark->source, "Directory of the source store")->required();
  mark_cmd->add_option("--token", mark->token, "Name of the chain's base")->required();
  mark_cmd->add_flag("--replace", mark->replace,
                     "Re-mark a marked store (a new chain: replicas of the old one re-seed)");
  mark_cmd->callback([mark, exit_code] { *exit_code = Finish(RunMark(*mark)); });

  auto exp = std::make_shared<ExportArgs>();
  CLI::App* export_cmd = group->add_subcommand(
      "export", "Publish the rows changed since a chain state as bundles in a directory");
  export_cmd->add_option("SOURCE", exp->source, "Directory of the source store")->required();
  export_cmd->add_option("BUNDLES", exp->bundles, "Directory the bundles are published in")
      ->required();
  export_cmd->add_option("--since", exp->since, "Cursor to export from (default: the newest)")
      ->check(IntegerAtLeast<uint64_t>(0));
  export_cmd->add_flag("--full", exp->full,
                       "Export every row from the empty state (seeds or re-seeds a replica)");
  export_cmd->add_option("--consumer", exp->consumer,
                         "Register this replica id with --since as its acknowledged cursor");
  export_cmd->add_option("--max-rows", exp->max_rows, "Rows (and deletions) per bundle")
      ->check(IntegerAtLeast<int64_t>(1));
  export_cmd->add_option("--max-bytes", exp->max_bytes, "Uncompressed row bytes per bundle")
      ->check(IntegerAtLeast<int64_t>(1));
  export_cmd->add_option("--secret-file", exp->secret_file, secret_help);
  export_cmd->callback([exp, exit_code] { *exit_code = Finish(RunExport(*exp)); });

  auto apply = std::make_shared<ApplyArgs>();
  CLI::App* apply_cmd = group->add_subcommand(
      "apply", "Install bundles on a replica, in order (a directory: every one that continues)");
  apply_cmd->add_option("REPLICA", apply->replica, "Directory of the replica (created if new)")
      ->required();
  apply_cmd->add_option("BUNDLES", apply->bundles, "Bundle files, or one bundle directory")
      ->required();
  apply_cmd->add_option("--secret-file", apply->secret_file, secret_help);
  apply_cmd->callback([apply, exit_code] { *exit_code = Finish(RunApply(*apply)); });

  auto dir = std::make_shared<std::string>();
  CLI::App* status_cmd = group->add_subcommand(
      "status", "Show a store's chain: states kept, trim floor, consumers, or its replica state");
  status_cmd->add_option("STORE", *dir, "Directory of the store")->required();
  status_cmd->callback([dir, exit_code] { *exit_code = Finish(RunStatus(*dir)); });

  CLI::App* verify_cmd = group->add_subcommand(
      "verify", "Recompute a store's content checksum and compare it with its chain state");
  verify_cmd->add_option("STORE", *dir, "Directory of the store")->required();
  verify_cmd->callback([dir, exit_code] { *exit_code = RunVerify(*dir); });

  CLI::App* trim_cmd =
      group->add_subcommand("trim", "Drop the chain states no registered consumer still needs");
  trim_cmd->add_option("SOURCE", *dir, "Directory of the source store")->required();
  trim_cmd->callback([dir, exit_code] { *exit_code = Finish(RunTrim(*dir)); });

  CLI::App* unmark_cmd = group->add_subcommand(
      "unmark", "Remove the replication chain: its registry and every kept state");
  unmark_cmd->add_option("SOURCE", *dir, "Directory of the source store")->required();
  unmark_cmd->callback([dir, exit_code] { *exit_code = Finish(RunUnmark(*dir)); });

  CLI::App* promote_cmd = group->add_subcommand(
      "promote", "Make a replica a writable store (it stops accepting bundles)");
  promote_cmd->add_option("REPLICA", *dir, "Directory of the replica")->required();
  promote_cmd->callback([dir, exit_code] { *exit_code = Finish(RunPromote(*dir)); });

  auto follow = std::make_shared<FollowArgs>();
  CLI::App* follow_cmd = group->add_subcommand(
      "follow", "Keep a replica caught up: export, publish and apply every --interval");
  follow_cmd->add_option("SOURCE", follow->source, "Directory of the source store")->required();
  follow_cmd->add_option("REPLICA", follow->replica, "Directory of the replica (created if new)")
      ->required();
  follow_cmd->add_option("--bundles", follow->bundles, "Directory the bundles are published in")
      ->required();
  follow_cmd->add_option("--interval", follow->interval, "Seconds between rounds")
      ->check(CLI::Range(0.0, 86400.0));
  follow_cmd->add_option("--rounds", follow->rounds, "Stop after this many rounds (0: never)")
      ->check(IntegerAtLeast<int64_t>(0));
  follow_cmd->add_option("--consumer", follow->consumer, "The replica's id in the registry");
  follow_cmd->add_option("--max-rows", follow->max_rows, "Rows (and deletions) per bundle")
      ->check(IntegerAtLeast<int64_t>(1));
  follow_cmd->add_option("--secret-file", follow->secret_file, secret_help);
  follow_cmd->callback([follow, exit_code] { *exit_code = Finish(RunFollow(*follow)); });
}

}  // namespace strata::cli
