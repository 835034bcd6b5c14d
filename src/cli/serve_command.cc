// `strata serve`: options from flags over the environment over the defaults, the signal wait
// and the drain.
#include "serve_command.h"

#include <fmt/format.h>
#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <memory>

#include "cli_common.h"
#include "strata/server.h"

namespace strata::cli {

namespace {

struct ServeArgs {
  server::ServerOptions options;
  Status environment;  // a bad environment variable, reported when serve runs
  std::string auth_token_file;
  std::string port_file;
  bool no_sync = false;
  bool no_recode = false;
  bool no_access_log = false;
};

Result<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError(fmt::format("cannot read auth token file '{}'", path));
  std::string token((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' ')) {
    token.pop_back();
  }
  if (token.empty())
    return Status::InvalidArgument(fmt::format("auth token file '{}' is empty", path));
  return token;
}

Status RunServe(ServeArgs& args) {
  STRATA_RETURN_IF_ERROR(args.environment);
  server::ServerOptions& o = args.options;
  if (!args.auth_token_file.empty()) {
    STRATA_ASSIGN_OR_RETURN(o.auth_token, ReadToken(args.auth_token_file));
  }
  if (args.no_sync) o.sync = false;
  if (args.no_recode) o.recode_linked_generations = false;
  if (args.no_access_log) o.access_log = false;
  // Block the stop signals in every thread the server starts; this one waits for them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  STRATA_ASSIGN_OR_RETURN(std::unique_ptr<server::Server> s, server::Server::Start(o));
  if (!args.port_file.empty()) {
    const std::string tmp = args.port_file + ".tmp";
    {
      std::ofstream out(tmp);
      out << s->port() << "\n";
      if (!out) return Status::IOError(fmt::format("cannot write port file '{}'", tmp));
    }
    if (std::rename(tmp.c_str(), args.port_file.c_str()) != 0) {
      return Status::IOError(fmt::format("cannot write port file '{}'", args.port_file));
    }
  }
  int signal_number = 0;
  sigwait(&stop, &signal_number);
  fmt::print(stderr, "strata serve: {} received, draining\n",
             signal_number == SIGTERM ? "SIGTERM" : "SIGINT");
  return s->Shutdown();
}

}  // namespace

void AddServeCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ServeArgs>();
  server::ServerOptions& o = args->options;
  // The environment first, so flags given on the command line override it.
  args->environment =
      server::ApplyEnvironment(&o, [](const char* name) { return std::getenv(name); });
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Run the HTTP server (lance-context's /api/v1 API) on a data directory until SIGTERM");
  cmd->add_option("--data-dir", o.data_dir, "Directory of the stores (created if missing)")
      ->capture_default_str();
  cmd->add_option("--host", o.host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", o.port, "Port to listen on (0: any free port)")->capture_default_str();
  cmd->add_option("--instance-id", o.instance_id,
                  "Writer identity: the shard this server writes (env INSTANCE_ID, HOSTNAME)");
  cmd->add_option("--auth-token-file", args->auth_token_file,
                  "File holding the bearer token every request but /health must carry");
  cmd->add_option("--port-file", args->port_file,
                  "Write the port listened on to this file once serving");
  cmd->add_option("--flush-interval", o.flush_interval_seconds,
                  "Seconds between flush sweeps (0: off; env ROLLOUT_FLUSH_INTERVAL_SECS)")
      ->capture_default_str();
  cmd->add_option("--cleanup-interval", o.cleanup_interval_seconds,
                  "Seconds between merge sweeps (0: off; env ROLLOUT_CLEANUP_INTERVAL_SECS)")
      ->capture_default_str();
  cmd->add_option("--merge-after-generations", o.merge_after_generations,
                  "Merge a shard after this many pending generations (0: off)")
      ->capture_default_str();
  cmd->add_option("--context-merge-after-generations", o.context_merge_after_generations,
                  "Merge a context store's shard after this many pending generations (0: off)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--compaction-interval", o.compaction_interval_seconds,
                  "Seconds between compaction checks of open stores (0: off; env "
                  "COMPACTION_INTERVAL_SECS)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--compaction-min-fragments", o.compaction_min_fragments,
                  "Compact a store once its base table has this many fragments (env "
                  "MIN_FRAGMENTS)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--cache-capacity", o.cache_capacity, "Open store handles kept per kind")
      ->capture_default_str();
  cmd->add_option("--max-inflight-blob-bytes", o.max_inflight_blob_bytes,
                  "Blob bytes in flight before uploads and downloads are refused (0: no limit)")
      ->capture_default_str();
  cmd->add_option("--body-idle-timeout", o.body_idle_timeout_seconds,
                  "Seconds a request body may stall before 408")
      ->capture_default_str();
  cmd->add_option("--worker-threads", o.worker_threads, "Threads running storage calls")
      ->capture_default_str();
  cmd->add_option("--io-threads", o.io_threads, "Threads running network I/O")
      ->capture_default_str();
  cmd->add_flag("--no-sync", args->no_sync,
                "Do not fsync writes (\"process\" durability: survives kill -9, not power loss)");
  cmd->add_flag("--no-recode", args->no_recode,
                "Leave generations linked to the WAL until a merge (no background recode)");
  cmd->add_flag("--no-access-log", args->no_access_log, "Do not log every request");
  cmd->callback([args, exit_code] {
    Status s = RunServe(*args);
    *exit_code = s.ok() ? 0 : ReportError(s);
  });
}

}  // namespace strata::cli
