// LanceDB and DuckDB as engines: a Node process (bench/compare/node/peer.mjs) spoken to over
// JSON lines on stdin/stdout (protocol in bench/compare/README.md). A peer that cannot start,
// dies or answers garbage becomes a Status naming the engine and its last stderr lines.
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "engine.h"
#include "floor.h"

extern char** environ;

namespace strata::bench::compare {
namespace {

using nlohmann::json;

// No workload of the full run takes close to this; a peer silent for longer is stuck.
constexpr int kRequestTimeoutSeconds = 3600;
constexpr size_t kStderrTailLines = 20;
constexpr const char* kInstallHint = "run bench/compare/node/install (npm ci from the lock file)";

std::string PackageOf(const std::string& engine) {
  return engine == "duckdb" ? "@duckdb/node-api" : "@lancedb/lancedb";
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return fmt::format("exited with code {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("was killed by signal {}", WTERMSIG(status));
  return fmt::format("ended with wait status {}", status);
}

std::string JsonText(const json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); }

// A workload response (README.md) as a StepResult; throws json exceptions on wrong types.
StepResult ToStepResult(const json& j) {
  if (!j.value("supported", true)) {
    return StepResult::Unsupported(j.value("reason", std::string("(no reason given)")));
  }
  StepResult r;
  r.seconds = j.value("seconds", 0.0);
  if (j.contains("latencies_us")) r.latencies_us = j.at("latencies_us").get<std::vector<double>>();
  r.ops = j.value("ops", int64_t{0});
  r.rows = j.value("rows", int64_t{0});
  r.bytes = j.value("bytes", int64_t{0});
  if (j.contains("answer") && !j.at("answer").is_null()) {
    const json& a = j.at("answer");
    r.answer = Answer{a.at("count").get<int64_t>(), a.at("digest").get<std::string>()};
  }
  r.total_rows = j.value("total_rows", int64_t{-1});
  r.note = j.value("note", std::string());
  if (j.contains("result_ids")) {
    r.result_ids = j.at("result_ids").get<std::vector<std::vector<std::string>>>();
  }
  return r;
}

class NodeEngine final : public Engine {
 public:
  NodeEngine(std::string engine, NodePeerOptions options)
      : engine_(std::move(engine)), options_(std::move(options)) {}
  ~NodeEngine() override { Stop(); }

  std::string name() const override { return engine_; }
  std::string durability() const override { return Described(durability_); }
  std::string settings() const override { return Described(settings_); }
  std::string version() const override { return Described(version_); }

  Status Open(const std::string& dir, const Dataset& data) override {
    (void)data;  // the peer reads the files WriteDatasetFiles wrote to options_.data_dir
    STRATA_RETURN_IF_ERROR(Spawn(dir));
    STRATA_ASSIGN_OR_RETURN(json described, Call({{"op", "describe"}}));
    try {
      durability_ = JsonText(described.value("durability", json("?")));
      settings_ = JsonText(described.value("settings", json("?")));
      version_ = JsonText(described.value("version", json("?")));
      described_ = true;
    } catch (const json::exception& e) {
      return Garbage("describe", described.dump(), e.what());
    }
    return Call({{"op", "open"}}).status();
  }

  Result<StepResult> Ingest(const Dataset&) override { return Step({{"op", "ingest"}}); }
  Result<StepResult> Puts(const Dataset&, int writers) override {
    return Step({{"op", "puts"}, {"writers", writers}});
  }
  Result<StepResult> Scan(const Dataset&) override { return Step({{"op", "scan"}}); }
  Result<StepResult> Lookup(const Dataset&) override { return Step({{"op", "lookup"}}); }
  Result<StepResult> GetMany(const Dataset&) override { return Step({{"op", "get_many"}}); }
  Result<StepResult> Overwrite(const Dataset&) override { return Step({{"op", "overwrite"}}); }
  Result<StepResult> Compact() override { return Step({{"op", "compact"}}); }
  Result<StepResult> VectorSearch(const Dataset&) override { return Step({{"op", "vector"}}); }
  Result<StepResult> HybridRetrieve(const Dataset&) override { return Step({{"op", "hybrid"}}); }
  Result<StepResult> Sql(const Dataset&) override { return Step({{"op", "sql"}}); }

  Status Close() override {
    if (pid_ <= 0) return Status::OK();
    Status st = Call({{"op", "close"}}).status();
    Stop();
    return st;
  }

 private:
  std::string Described(const std::string& value) const {
    return described_ ? value : "(peer not started)";
  }

  Status Spawn(const std::string& dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (options_.script.empty() || !fs::exists(options_.script, ec)) {
      return Status::NotFound(
          fmt::format("{}: the Node peer script '{}' does not exist (pass "
                      "--node-script bench/compare/node/peer.mjs)",
                      engine_, options_.script));
    }
    const fs::path package =
        fs::path(options_.script).parent_path() / "node_modules" / PackageOf(engine_);
    if (!fs::exists(package / "package.json", ec)) {
      return Status::NotFound(fmt::format("{}: npm package {} is not installed ({} missing): {}",
                                          engine_, PackageOf(engine_), package.string(),
                                          kInstallHint));
    }
    // Writing to a dead peer must give EPIPE (reported with its stderr), not kill us.
    ::signal(SIGPIPE, SIG_IGN);
    int in[2], out[2], err[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 ||
        ::pipe2(err, O_CLOEXEC) != 0) {
      return Status::IOError(fmt::format("{}: pipe: {}", engine_, std::strerror(errno)));
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], 0);
    posix_spawn_file_actions_adddup2(&actions, out[1], 1);
    posix_spawn_file_actions_adddup2(&actions, err[1], 2);
    std::vector<std::string> args = {options_.node, options_.script,  "--engine",
                                     engine_,       "--dir",          dir,
                                     "--data",      options_.data_dir};
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid = -1;
    const int rc =
        ::posix_spawnp(&pid, options_.node.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    ::close(out[1]);
    ::close(err[1]);
    if (rc != 0) {
      ::close(in[1]);
      ::close(out[0]);
      ::close(err[0]);
      return Status::NotFound(
          fmt::format("{}: cannot run '{}' ({}): install Node.js 18 or newer, then {}", engine_,
                      options_.node, std::strerror(rc), kInstallHint));
    }
    pid_ = pid;
    to_peer_ = in[1];
    from_peer_ = out[0];
    // The peer's stderr: kept as a tail for error messages and copied to DIR.log beside the
    // engine's directory (not inside it, where it would count as the engine's bytes).
    stderr_thread_ = std::thread([this, fd = err[0], log_path = dir + ".log"] {
      std::ofstream log(log_path, std::ios::app);
      std::string partial;
      char buf[4096];
      for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        log.write(buf, n);
        log.flush();
        partial.append(buf, static_cast<size_t>(n));
        for (size_t nl; (nl = partial.find('\n')) != std::string::npos;) {
          KeepStderrLine(partial.substr(0, nl));
          partial.erase(0, nl + 1);
        }
      }
      if (!partial.empty()) KeepStderrLine(partial);
      ::close(fd);
    });
    return Status::OK();
  }

  void KeepStderrLine(std::string line) {
    std::lock_guard<std::mutex> lock(stderr_mu_);
    stderr_tail_.push_back(std::move(line));
    if (stderr_tail_.size() > kStderrTailLines) stderr_tail_.pop_front();
  }

  // Waits up to `seconds` for the peer to exit, then kills it. Returns how it ended.
  std::string Reap(double seconds) {
    if (pid_ <= 0) return exit_description_;
    int status = 0;
    const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                             std::chrono::duration<double>(seconds));
    pid_t done = 0;
    while ((done = ::waitpid(pid_, &status, WNOHANG)) == 0 && Clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (done == 0) {
      ::kill(pid_, SIGKILL);  // the peer we started, by its id
      done = ::waitpid(pid_, &status, 0);
      exit_description_ = "did not exit and was killed";
    } else if (done == pid_) {
      exit_description_ = DescribeWaitStatus(status);
    } else {
      exit_description_ = fmt::format("could not be waited for ({})", std::strerror(errno));
    }
    pid_ = -1;
    if (stderr_thread_.joinable()) stderr_thread_.join();
    return exit_description_;
  }

  // Ends the peer: EOF on its stdin asks it to exit; it is killed if it does not.
  void Stop() {
    if (to_peer_ >= 0) ::close(to_peer_), to_peer_ = -1;
    if (pid_ > 0) Reap(5.0);
    if (from_peer_ >= 0) ::close(from_peer_), from_peer_ = -1;
    if (stderr_thread_.joinable()) stderr_thread_.join();
  }

  std::string StderrTail() {
    std::lock_guard<std::mutex> lock(stderr_mu_);
    if (stderr_tail_.empty()) return " (its stderr was empty)";
    std::string out = "; its last stderr lines:";
    bool missing_module = false;
    for (const std::string& line : stderr_tail_) {
      out += "\n    " + line;
      missing_module |= line.find("ERR_MODULE_NOT_FOUND") != std::string::npos ||
                        line.find("Cannot find package") != std::string::npos ||
                        line.find("Cannot find module") != std::string::npos;
    }
    if (missing_module) out += fmt::format("\n  a Node package is missing: {}", kInstallHint);
    return out;
  }

  Status PeerDied(const std::string& op, const std::string& what) {
    const std::string ended = Reap(5.0);
    return Status::Unavailable(
        fmt::format("{} peer {} during '{}' ({}){}", engine_, ended, op, what, StderrTail()));
  }

  Status Garbage(const std::string& op, const std::string& line, const std::string& why) {
    constexpr size_t kShown = 300;
    return Status::Corruption(fmt::format(
        "{} peer answered '{}' with something that is not a protocol response ({}): {}{}{}",
        engine_, op, why, line.substr(0, kShown), line.size() > kShown ? "..." : "", StderrTail()));
  }

  Result<std::string> ReadLine(const std::string& op) {
    for (;;) {
      const size_t nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      pollfd p{from_peer_, POLLIN, 0};
      const int ready = ::poll(&p, 1, kRequestTimeoutSeconds * 1000);
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        return PeerDied(op, fmt::format("no answer within {} s", kRequestTimeoutSeconds));
      }
      char buf[65536];
      const ssize_t n = ::read(from_peer_, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return PeerDied(op, fmt::format("read: {}", std::strerror(errno)));
      if (n == 0) return PeerDied(op, "its stdout closed before it answered");
      buffer_.append(buf, static_cast<size_t>(n));
    }
  }

  // One request, one response line; {"ok":false} becomes an error naming the engine.
  Result<json> Call(const json& request) {
    const std::string op = request.value("op", "?");
    if (pid_ <= 0) {
      return Status::Unavailable(
          fmt::format("{} peer is not running ({}), cannot send '{}'", engine_,
                      exit_description_.empty() ? "not opened" : exit_description_, op));
    }
    const std::string line = request.dump() + "\n";
    Status sent = WriteAll(to_peer_, line.data(), line.size());
    if (!sent.ok()) return PeerDied(op, "sending the request failed: " + sent.message());
    STRATA_ASSIGN_OR_RETURN(std::string reply, ReadLine(op));
    json j = json::parse(reply, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return Garbage(op, reply, "not a JSON object");
    const json ok = j.value("ok", json());
    if (!ok.is_boolean()) return Garbage(op, reply, "no boolean \"ok\"");
    if (!ok.get<bool>()) {
      return Status::Internal(fmt::format("{} '{}' failed in the peer: {}", engine_, op,
                                          JsonText(j.value("error", json("(no error text)")))));
    }
    return j;
  }

  Result<StepResult> Step(const json& request) {
    STRATA_ASSIGN_OR_RETURN(json reply, Call(request));
    try {
      return ToStepResult(reply);
    } catch (const json::exception& e) {
      return Garbage(request.value("op", "?"), reply.dump(), e.what());
    }
  }

  const std::string engine_;
  const NodePeerOptions options_;
  bool described_ = false;
  std::string durability_, settings_, version_;

  pid_t pid_ = -1;
  int to_peer_ = -1;    // the peer's stdin
  int from_peer_ = -1;  // the peer's stdout
  std::string buffer_;  // read from stdout, not yet a whole line
  std::string exit_description_;
  std::thread stderr_thread_;
  std::mutex stderr_mu_;
  std::deque<std::string> stderr_tail_;  // guarded by stderr_mu_
};

}  // namespace

std::unique_ptr<Engine> MakeNodeEngine(std::string engine, NodePeerOptions options) {
  return std::make_unique<NodeEngine>(std::move(engine), std::move(options));
}

}  // namespace strata::bench::compare
