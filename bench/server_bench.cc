// The HTTP server (`strata serve`) beside the embedded API, in one run on loopback: rollout and
// context adds over keep-alive HTTP/1.1 connections (one Beast client per thread) and through
// RolloutStore::Add / ContextStore::Add from the same number of threads, then GET by id beside
// GetById — each beside the disk and loopback floors measured in the same run.
//
//   build/release/bench/strata-server-bench [--seconds S] [--clients 1,8,64] [--batch N]
//       [--json FILE] [--dir DIR] [--no-sync] [--help for the rest]
#include <fmt/format.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <boost/beast/http/verb.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "floor.h"
#include "load_driver.h"
#include "strata/context_store.h"
#include "strata/maintenance.h"
#include "strata/merge_budget.h"
#include "strata/object_store.h"
#include "strata/rollout_store.h"
#include "strata/server.h"
#include "strata/storage_base.h"

namespace strata::bench {
namespace {

namespace http = boost::beast::http;
using Json = nlohmann::json;
using store::ContextRecord;
using store::ContextStore;
using store::RolloutRecord;
using store::RolloutStore;

constexpr std::string_view kStoreName = "bench";

struct Config {
  double seconds = 5;  // per add measurement and side
  int rounds = 3;      // slices each side's seconds are cut into, HTTP and embedded taking turns
  double get_seconds = 2;  // per GET measurement
  std::vector<int> clients = {1, 8, 64};
  int batch = 16;         // rows per request / per Add
  int text_bytes = 1024;  // rollout content, context text_payload
  int dim = 384;          // context embedding dimension
  std::vector<std::string> kinds = {"rollout", "context"};
  bool sync = true;
  bool embedded = true;  // false: HTTP runs alone (to profile the server)
  std::string parent_dir = "/tmp";
  std::string json_path;
  int64_t floor_mib = 256;
  int fdatasync_samples = 50;
  int io_threads = 2;  // ServerOptions defaults
  int worker_threads = 32;
  // ServerOptions::recode_linked_generations of both sides. Off by default, unlike the server:
  // a store recodes once its writes pause, which is during the other side's slices (and, with
  // 64 clients, never during its own), so each side's figures carried the other side's recodes
  // and the last measurement every earlier one's.
  bool recode = false;
  bool access_log = false;
  bool verbose = false;
  bool keep = false;
};

// Wrong results are reported, not fatal: the run goes on so every figure is printed.
std::vector<std::string> g_problems;
void Expect(bool ok, std::string what) {
  if (!ok) {
    fmt::print("  PROBLEM: {}\n", what);
    g_problems.push_back(std::move(what));
  }
}

// ---- Workload ----------------------------------------------------------------------------

// Rows are made from a small pool of texts and embeddings, so building a request costs the
// clients little beside what the server does with it. Every rollout row n has the id
// RolloutId(n); context ids are UUIDv4s (the server draws them; the embedded side draws its
// own).
struct Workload {
  int batch = 16;
  std::vector<std::string> texts;
  std::vector<std::vector<float>> embeddings;
  std::vector<std::string> embedding_json;  // the same values as JSON arrays
  double rollout_bytes_per_row = 0;         // JSON body bytes per row
  double context_bytes_per_row = 0;

  static constexpr size_t kPool = 64;

  explicit Workload(const Config& config) : batch(config.batch) {
    static const char* kWords[32] = {
        "the",    "agent", "called", "search", "tool",   "and",    "result", "answer",
        "plan",   "step",  "reward", "model",  "before", "after",  "check",  "value",
        "error",  "retry", "user",   "asked",  "for",    "code",   "test",   "passed",
        "failed", "file",  "line",   "output", "query",  "return", "state",  "done"};
    std::mt19937_64 rng(42);
    for (size_t i = 0; i < kPool; ++i) {
      std::string text;
      while (text.size() < static_cast<size_t>(config.text_bytes)) {
        text += kWords[rng() & 31];
        text += ' ';
      }
      text.resize(config.text_bytes);
      texts.push_back(std::move(text));
      // Values with six decimals, so the JSON text and the floats are the same numbers.
      std::vector<float> e;
      std::string j = "[";
      for (int d = 0; d < config.dim; ++d) {
        const int64_t micro = static_cast<int64_t>(rng() % 2000001) - 1000000;
        const std::string v = fmt::format("{:.6f}", static_cast<double>(micro) / 1e6);
        e.push_back(std::stof(v));
        if (d > 0) j += ',';
        j += v;
      }
      j += ']';
      embeddings.push_back(std::move(e));
      embedding_json.push_back(std::move(j));
    }
    std::string body;
    RolloutBody(0, &body);
    rollout_bytes_per_row = static_cast<double>(body.size()) / batch;
    ContextBody(0, &body);
    context_bytes_per_row = static_cast<double>(body.size()) / batch;
  }

  static std::string RolloutId(int64_t n) { return fmt::format("ro-{:012d}", n); }
  static float Reward(int64_t n) { return static_cast<float>(n % 1000) / 1000.0f; }

  // The AddRolloutsRequest of rows first .. first + batch - 1: appended piece by piece (a
  // client's serializer, not a format string parsed per row: on two cores the clients' CPU is
  // taken from the server). The text is the same as
  //   {"id":"ro-{:012d}","rollout_id":"traj-{:010d}","problem_id":"prob-{:06d}",
  //    "sequence_order":{:2d},"role":"assistant","content":"{}","reward":{:.3f},
  //    "policy_version":"v1"}
  // per row, with RolloutId, n / 16, (n / 16) % 5000, n % 16, the pool text and Reward(n).
  void RolloutBody(int64_t first, std::string* body) const {
    body->clear();
    body->append(R"({"records":[)");
    for (int i = 0; i < batch; ++i) {
      const int64_t n = first + i;
      if (i > 0) body->push_back(',');
      body->append(R"({"id":"ro-)");
      AppendZeroPadded(n, 12, body);
      body->append(R"(","rollout_id":"traj-)");
      AppendZeroPadded(n / 16, 10, body);
      body->append(R"(","problem_id":"prob-)");
      AppendZeroPadded((n / 16) % 5000, 6, body);
      body->append(R"(","sequence_order":)");
      if (n % 16 < 10) body->push_back(' ');
      AppendZeroPadded(n % 16, 1, body);
      body->append(R"(,"role":"assistant","content":")");
      body->append(texts[static_cast<size_t>(n) % kPool]);
      body->append(R"(","reward":0.)");  // Reward(n) = (n % 1000) / 1000
      AppendZeroPadded(n % 1000, 3, body);
      body->append(R"(,"policy_version":"v1"})");
    }
    body->append("]}");
  }

  // RolloutBody's rows, read back as JSON, hold RolloutRows' values: both sides add the same
  // data.
  Status CheckRolloutBody(int64_t first) const {
    std::string body;
    RolloutBody(first, &body);
    const Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
    const std::vector<RolloutRecord> rows = RolloutRows(first);
    if (!j.is_object() || !j.contains("records") || !j["records"].is_array() ||
        j["records"].size() != rows.size()) {
      return Status::Internal(fmt::format("rollout body of row {}: not {} records", first, batch));
    }
    for (size_t i = 0; i < rows.size(); ++i) {
      const Json& r = j["records"][i];
      const RolloutRecord& e = rows[i];
      const bool same = r.value("id", "") == e.id && r.value("rollout_id", "") == e.rollout_id &&
                        r.value("problem_id", "") == e.problem_id &&
                        r.value("sequence_order", -1) == e.sequence_order &&
                        r.value("role", "") == e.role && r.value("content", "") == e.content &&
                        r.value("reward", -1.0f) == e.reward &&
                        r.value("policy_version", "") == e.policy_version;
      if (!same) {
        return Status::Internal(fmt::format("rollout body of row {}: record {} is {}, not row {}",
                                            first, i, r.dump(), first + static_cast<int64_t>(i)));
      }
    }
    return Status::OK();
  }

  // n (>= 0) in decimal with at least `width` digits.
  static void AppendZeroPadded(int64_t n, int width, std::string* out) {
    char digits[20];
    int len = 0;
    do {
      digits[len++] = static_cast<char>('0' + n % 10);
      n /= 10;
    } while (n > 0);
    for (int i = len; i < width; ++i) out->push_back('0');
    while (len > 0) out->push_back(digits[--len]);
  }

  // The same rows as the server builds them from that body.
  std::vector<RolloutRecord> RolloutRows(int64_t first) const {
    std::vector<RolloutRecord> rows(static_cast<size_t>(batch));
    const int64_t now = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    for (int i = 0; i < batch; ++i) {
      const int64_t n = first + i;
      RolloutRecord& r = rows[static_cast<size_t>(i)];
      r.id = RolloutId(n);
      r.rollout_id = fmt::format("traj-{:010d}", n / 16);
      r.problem_id = fmt::format("prob-{:06d}", (n / 16) % 5000);
      r.sequence_order = static_cast<int32_t>(n % 16);
      r.created_at_micros = now;
      r.content = texts[static_cast<size_t>(n) % kPool];
      r.reward = Reward(n);
      r.policy_version = "v1";
      r.relationships.emplace();  // the server's JSON decoder sets an empty list
    }
    return rows;
  }

  // The AddRecordsRequest of `batch` records (text, embedding, session) from pool slot `seed`.
  void ContextBody(int64_t seed, std::string* body) const {
    body->clear();
    auto out = std::back_inserter(*body);
    fmt::format_to(out, R"({{"records":[)");
    for (int i = 0; i < batch; ++i) {
      const size_t p = static_cast<size_t>(seed + i) % kPool;
      fmt::format_to(out, R"({}{{"text_payload":"{}","embedding":{},"session_id":"s-{:08d}"}})",
                     i > 0 ? "," : "", texts[p], embedding_json[p], seed % 100000000);
    }
    body->append("]}");
  }

  std::vector<ContextRecord> ContextRows(int64_t seed, std::mt19937_64& rng) const {
    std::vector<ContextRecord> rows(static_cast<size_t>(batch));
    for (int i = 0; i < batch; ++i) {
      const size_t p = static_cast<size_t>(seed + i) % kPool;
      ContextRecord& r = rows[static_cast<size_t>(i)];
      r.id = Uuid(rng);
      r.text_payload = texts[p];
      r.embedding = embeddings[p];
      r.session_id = fmt::format("s-{:08d}", seed % 100000000);
    }
    return rows;
  }

  static std::string Uuid(std::mt19937_64& rng) {
    const uint64_t a = rng(), b = rng();
    return fmt::format("{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}", a >> 32, (a >> 16) & 0xffff,
                       a & 0xfff, 0x8000 | ((b >> 48) & 0x3fff), b & 0xffffffffffffULL);
  }
};

// ---- The loops -----------------------------------------------------------------------------

std::string RecordsTarget(std::string_view kind) {
  return fmt::format("/api/v1/{}s/{}/records", kind, kStoreName);
}

// POSTs `body` to `target` on `client`, timing the round trip into *micros; the response
// body of a 201, an error for any other status.
Result<std::string> PostRecords(HttpClient& client, const std::string& target, std::string body,
                                double* micros) {
  std::string response;
  const auto start = Clock::now();
  STRATA_ASSIGN_OR_RETURN(int status,
                          client.Send(http::verb::post, target, std::move(body), &response));
  *micros = Seconds(start) * 1e6;
  if (status != 201) return Status::Internal(fmt::format("HTTP {}: {}", status, response));
  return response;
}

class HttpRolloutAdd : public Loop {
 public:
  HttpRolloutAdd(uint16_t port, const Workload& w, std::atomic<int64_t>* next)
      : port_(port), w_(w), next_(next), target_(RecordsTarget("rollout")) {}
  Status Prepare() override { return client_.Connect(port_); }
  Result<int64_t> Step(double* micros) override {
    w_.RolloutBody(next_->fetch_add(w_.batch), &body_);
    STRATA_RETURN_IF_ERROR(PostRecords(client_, target_, std::move(body_), micros).status());
    return w_.batch;
  }

 private:
  HttpClient client_;
  uint16_t port_;
  const Workload& w_;
  std::atomic<int64_t>* next_;
  std::string target_, body_;
};

class EmbeddedRolloutAdd : public Loop {
 public:
  EmbeddedRolloutAdd(RolloutStore* s, const Workload& w, std::atomic<int64_t>* next)
      : s_(s), w_(w), next_(next) {}
  Result<int64_t> Step(double* micros) override {
    std::vector<RolloutRecord> rows = w_.RolloutRows(next_->fetch_add(w_.batch));
    const auto start = Clock::now();
    STRATA_RETURN_IF_ERROR(s_->Add(rows).status());
    *micros = Seconds(start) * 1e6;
    return w_.batch;
  }

 private:
  RolloutStore* s_;
  const Workload& w_;
  std::atomic<int64_t>* next_;
};

// Context ids come back in the response: every response is parsed (its count checked) and
// its ids kept for the GET section.
class HttpContextAdd : public Loop {
 public:
  HttpContextAdd(uint16_t port, const Workload& w, std::atomic<int64_t>* next,
                 std::vector<std::string>* ids)
      : port_(port), w_(w), next_(next), ids_(ids), target_(RecordsTarget("context")) {}
  Status Prepare() override { return client_.Connect(port_); }
  Result<int64_t> Step(double* micros) override {
    w_.ContextBody(next_->fetch_add(w_.batch), &body_);
    STRATA_ASSIGN_OR_RETURN(std::string response,
                            PostRecords(client_, target_, std::move(body_), micros));
    Json j = Json::parse(response, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j["ids"].is_array() ||
        j["ids"].size() != static_cast<size_t>(w_.batch)) {
      return Status::Internal(fmt::format("unexpected add response: {}", response));
    }
    for (const Json& id : j["ids"]) ids_->push_back(id.get<std::string>());
    return w_.batch;
  }

 private:
  HttpClient client_;
  uint16_t port_;
  const Workload& w_;
  std::atomic<int64_t>* next_;
  std::vector<std::string>* ids_;
  std::string target_, body_;
};

class EmbeddedContextAdd : public Loop {
 public:
  EmbeddedContextAdd(ContextStore* s, const Workload& w, std::atomic<int64_t>* next,
                     std::vector<std::string>* ids, uint64_t seed)
      : s_(s), w_(w), next_(next), ids_(ids), rng_(seed) {}
  Result<int64_t> Step(double* micros) override {
    std::vector<ContextRecord> rows = w_.ContextRows(next_->fetch_add(w_.batch), rng_);
    std::vector<std::string> ids;
    for (const ContextRecord& r : rows) ids.push_back(r.id);
    const auto start = Clock::now();
    STRATA_RETURN_IF_ERROR(s_->Add(std::move(rows)).status());
    // What the server's context routes do after each write (a no-op until the trigger is due;
    // like the server, a merge that loses a race is left to the next write).
    if (Status merged = s_->base().MaybeMerge().status(); !merged.ok() && !merged.IsBusy()) {
      return merged;
    }
    *micros = Seconds(start) * 1e6;
    ids_->insert(ids_->end(), ids.begin(), ids.end());
    return w_.batch;
  }

 private:
  ContextStore* s_;
  const Workload& w_;
  std::atomic<int64_t>* next_;
  std::vector<std::string>* ids_;
  std::mt19937_64 rng_;
};

// GET /api/v1/{kind}s/bench/records/{id} of random ids; the record must be there.
class HttpGet : public Loop {
 public:
  HttpGet(uint16_t port, std::string kind, const std::vector<std::string>& ids, uint64_t seed)
      : port_(port), target_(RecordsTarget(kind) + "/"), ids_(ids), rng_(seed) {}
  Status Prepare() override { return client_.Connect(port_); }
  Result<int64_t> Step(double* micros) override {
    const std::string& id = ids_[rng_() % ids_.size()];
    std::string response;
    const auto start = Clock::now();
    STRATA_ASSIGN_OR_RETURN(int status, client_.Send(http::verb::get, target_ + id, {}, &response));
    *micros = Seconds(start) * 1e6;
    if (status != 200 || response.find(fmt::format(R"("id":"{}")", id)) == std::string::npos) {
      return Status::Internal(fmt::format("GET {}: HTTP {}: {:.200}", id, status, response));
    }
    return 1;
  }

 private:
  HttpClient client_;
  uint16_t port_;
  std::string target_;
  const std::vector<std::string>& ids_;
  std::mt19937_64 rng_;
};

template <typename Store>
class EmbeddedGet : public Loop {
 public:
  EmbeddedGet(const Store* s, const std::vector<std::string>& ids, uint64_t seed)
      : s_(s), ids_(ids), rng_(seed) {}
  Result<int64_t> Step(double* micros) override {
    const std::string& id = ids_[rng_() % ids_.size()];
    const auto start = Clock::now();
    auto found = s_->GetById(id);
    *micros = Seconds(start) * 1e6;
    STRATA_RETURN_IF_ERROR(found.status());
    if (!found->has_value() || (*found)->id != id) {
      return Status::Internal(fmt::format("GetById {}: not found", id));
    }
    return 1;
  }

 private:
  const Store* s_;
  const std::vector<std::string>& ids_;
  std::mt19937_64 rng_;
};

// ---- The run -------------------------------------------------------------------------------

// The StorageBase options the server gives a handle (the server's `options`), so the embedded
// stores are configured as the server's are; like the server's context routes, the embedded
// context adds merge right after the write once it is due (EmbeddedContextAdd).
store::StorageBaseOptions ServerLikeBase(const server::ServerOptions& options,
                                         const std::shared_ptr<store::Maintenance>& maintenance,
                                         const std::shared_ptr<MergeBudget>& budget, bool context) {
  store::StorageBaseOptions base = server::ServerStoreOptions(options, context);
  base.merge_budget = budget;
  base.maintenance = maintenance;
  return base;
}

Result<int> Request(uint16_t port, http::verb method, const std::string& target, std::string body,
                    std::string* response) {
  HttpClient client;
  STRATA_RETURN_IF_ERROR(client.Connect(port));
  return client.Send(method, target, std::move(body), response);
}

const char* Durability(bool sync) { return sync ? "sync (fsync on)" : "process (no fsync)"; }

std::string Ms(double us) { return fmt::format("{:.2f}", us / 1000); }

// One add measurement: a kind, a side and a client count over all its slices.
struct AddFigures {
  std::string kind, side;
  double bytes_per_row = 0;
  RunResult run;
  Latency latency;

  double bytes_per_s() const { return run.rows_per_s() * bytes_per_row; }
  double cpu_us_per_row() const {
    return run.rows > 0 ? run.process_cpu_s * 1e6 / static_cast<double>(run.rows) : 0;
  }
  double client_cpu_us_per_row() const {
    return run.rows > 0 ? run.client_cpu_s * 1e6 / static_cast<double>(run.rows) : 0;
  }
};

void PrintAddHeader() {
  fmt::print("  {:>7}  {:<8} {:>9} {:>8} {:>8} {:>8} {:>9} {:>12} {:>5}\n", "clients", "side",
             "rows/s", "MB/s", "p50 ms", "p99 ms", "requests", "CPU us/row", "CPU");
}

void PrintAdd(const AddFigures& f) {
  std::string cpu = fmt::format("{:.0f}", f.cpu_us_per_row());
  if (f.side == "http") cpu += fmt::format(" ({:.0f})", f.client_cpu_us_per_row());
  const double cores = std::max(1u, std::thread::hardware_concurrency());
  fmt::print("  {:>7}  {:<8} {:>9.0f} {:>8.1f} {:>8} {:>8} {:>9} {:>12} {:>4.0f}%\n", f.run.clients,
             f.side, f.run.rows_per_s(), f.bytes_per_s() / 1e6, Ms(f.latency.p50_us),
             Ms(f.latency.p99_us), f.run.requests, cpu,
             100 * f.run.process_cpu_s / f.run.seconds / cores);
}

Json AddJson(const AddFigures& f) {
  return {{"kind", f.kind},
          {"side", f.side},
          {"clients", f.run.clients},
          {"rows", f.run.rows},
          {"requests", f.run.requests},
          {"errors", f.run.errors},
          {"seconds", f.run.seconds},
          {"rows_per_s", f.run.rows_per_s()},
          {"mb_per_s", f.bytes_per_s() / 1e6},
          {"p50_us", f.latency.p50_us},
          {"p99_us", f.latency.p99_us},
          {"max_us", f.latency.max_us},
          {"process_cpu_us_per_row", f.cpu_us_per_row()},
          {"client_cpu_us_per_row", f.client_cpu_us_per_row()},
          {"process_cpu_s", f.run.process_cpu_s},
          {"client_cpu_s", f.run.client_cpu_s}};
}

void ExpectNoErrors(const RunResult& r, std::string_view what) {
  Expect(r.errors == 0,
         fmt::format("{}: {} failed request(s) or client(s): {}", what, r.errors, r.first_error));
}

int Run(const Config& config) {
  const std::string pattern = config.parent_dir + "/server_bench-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    fmt::print(stderr, "cannot create a directory under {}\n", config.parent_dir);
    return 1;
  }
  const std::string root = buf.data();
  const std::string http_dir = root + "/http", embedded_dir = root + "/embedded";
  std::filesystem::create_directories(embedded_dir);
  if (config.access_log) {
    spdlog::set_default_logger(spdlog::basic_logger_mt("bench", root + "/server.log"));
  }
  if (!config.verbose) {
    // The stores warn on every read past 256 pending generations, which a context store (one
    // generation per add, no merge trigger by default) reaches; the count is printed instead.
    // strata's own logger reads STRATA_LOG_LEVEL before its first line; the server's lines
    // (startup, access log) go to spdlog's default logger.
    ::setenv("STRATA_LOG_LEVEL", "error", /*overwrite=*/0);
    if (!config.access_log) spdlog::set_level(spdlog::level::err);
  }
  Json out;
  const unsigned cores = std::thread::hardware_concurrency();
  fmt::print("strata-server-bench: {} cores, data in {}, durability {}\n", cores, root,
             Durability(config.sync));
  fmt::print("machine at start: load average {}; other processes: {}\n", LoadAverage(),
             OtherLoad());
  LoadWatcher watcher;
  out["machine"] = {{"cores", cores},
                    {"load_average_start", LoadAverage()},
                    {"other_processes_start", OtherLoad()}};

  // 0. Floors.
  Result<DiskFloor> disk = MeasureDiskFloor(config.floor_mib << 20, root, config.fdatasync_samples);
  Result<LoopbackFloor> loopback = MeasureLoopback(2000, config.floor_mib << 20);
  if (!disk.ok() || !loopback.ok()) {
    fmt::print(stderr, "floor: {} {}\n", disk.status().ToString(), loopback.status().ToString());
    return 1;
  }
  fmt::print(
      "floor: disk {} MiB write + fdatasync {}, page cache {}, 4 KiB append + fdatasync p50 "
      "{:.0f} us; loopback TCP 1-byte round trip p50 {:.1f} us, one stream {}\n",
      config.floor_mib, FormatRate(disk->sync_write_bps), FormatRate(disk->cached_write_bps),
      disk->fdatasync_4k_p50_us, loopback->rtt_p50_us, FormatRate(loopback->stream_bps));
  out["floor"] = {{"disk_write_fdatasync_bps", disk->sync_write_bps},
                  {"disk_page_cache_bps", disk->cached_write_bps},
                  {"fdatasync_4k_p50_us", disk->fdatasync_4k_p50_us},
                  {"loopback_rtt_p50_us", loopback->rtt_p50_us},
                  {"loopback_stream_bps", loopback->stream_bps}};

  const Workload w(config);
  for (const int64_t first : {int64_t{0}, int64_t{987'654'321'123}}) {
    if (Status s = w.CheckRolloutBody(first); !s.ok()) {
      fmt::print(stderr, "strata-server-bench: {}\n", s.ToString());
      return 1;
    }
  }
  fmt::print(
      "workload: {} rows per request; rollout rows ~{:.0f} B of JSON ({} B content), context "
      "rows ~{:.0f} B ({} B text_payload + {}-dim embedding); {} s per add measurement and side "
      "in {} alternating slices, {} s per GET measurement; background recodes {} on both sides\n",
      config.batch, w.rollout_bytes_per_row, config.text_bytes, w.context_bytes_per_row,
      config.text_bytes, config.dim, config.seconds, config.rounds, config.get_seconds,
      config.recode ? "on" : "off");
  out["config"] = {{"seconds", config.seconds},
                   {"rounds", config.rounds},
                   {"get_seconds", config.get_seconds},
                   {"clients", config.clients},
                   {"batch", config.batch},
                   {"text_bytes", config.text_bytes},
                   {"embedding_dim", config.dim},
                   {"sync", config.sync},
                   {"io_threads", config.io_threads},
                   {"worker_threads", config.worker_threads},
                   {"recode", config.recode},
                   {"access_log", config.access_log},
                   {"rollout_body_bytes_per_row", w.rollout_bytes_per_row},
                   {"context_body_bytes_per_row", w.context_bytes_per_row}};

  // The server, and the embedded stores configured as the server configures its own.
  server::ServerOptions options;
  options.data_dir = http_dir;
  options.port = 0;
  options.sync = config.sync;
  options.access_log = config.access_log;
  options.io_threads = config.io_threads;
  options.worker_threads = config.worker_threads;
  options.recode_linked_generations = config.recode;
  Result<std::unique_ptr<server::Server>> srv = server::Server::Start(options);
  if (!srv.ok()) {
    fmt::print(stderr, "server: {}\n", srv.status().ToString());
    return 1;
  }
  const uint16_t port = (*srv)->port();
  Result<std::shared_ptr<ObjectStore>> objects =
      OpenLocalObjectStore(embedded_dir, LocalObjectStoreOptions{.sync = config.sync});
  Result<std::shared_ptr<store::Maintenance>> maintenance = store::Maintenance::Create(
      store::MaintenanceOptions{.flush_interval_seconds = options.flush_interval_seconds,
                                .cleanup_interval_seconds = options.cleanup_interval_seconds});
  if (!objects.ok() || !maintenance.ok()) {
    fmt::print(stderr, "embedded store: {} {}\n", objects.status().ToString(),
               maintenance.status().ToString());
    return 1;
  }
  auto budget = std::make_shared<MergeBudget>(options.merge_memory_bytes);

  std::vector<AddFigures> adds;
  Json gets = Json::array();
  Json ratios = Json::array();
  for (const std::string& kind : config.kinds) {
    const bool rollout = kind == "rollout";
    std::string response;
    Result<int> created =
        rollout
            ? Request(port, http::verb::post, "/api/v1/rollouts", Json{{"name", kStoreName}}.dump(),
                      &response)
            : Request(port, http::verb::post, "/api/v1/contexts",
                      Json{{"name", kStoreName}, {"embedding_dim", config.dim}}.dump(), &response);
    if (!created.ok() || *created != 201) {
      fmt::print(stderr, "creating the {} store over HTTP: {} {}\n", kind,
                 created.status().ToString(), response);
      return 1;
    }
    const std::string prefix = fmt::format("{}.{}/", kStoreName, kind);
    std::unique_ptr<RolloutStore> rollouts;
    std::unique_ptr<ContextStore> contexts;
    Status opened;
    if (rollout) {
      store::RolloutStoreOptions o;
      o.base = ServerLikeBase(options, *maintenance, budget, /*context=*/false);
      Result<std::unique_ptr<RolloutStore>> s = RolloutStore::Open(*objects, prefix, std::move(o));
      opened = s.status();
      if (s.ok()) rollouts = std::move(*s);
    } else {
      store::ContextStoreOptions o;
      o.base = ServerLikeBase(options, *maintenance, budget, /*context=*/true);
      o.embedding_dim = config.dim;
      Result<std::unique_ptr<ContextStore>> s = ContextStore::Open(*objects, prefix, std::move(o));
      opened = s.status();
      if (s.ok()) contexts = std::move(*s);
    }
    if (!opened.ok()) {
      fmt::print(stderr, "embedded {} store: {}\n", kind, opened.ToString());
      return 1;
    }

    const double bytes_per_row = rollout ? w.rollout_bytes_per_row : w.context_bytes_per_row;
    fmt::print("\n== {} add: {} rows per request (~{:.1f} KB body), {} ==\n", kind, config.batch,
               bytes_per_row * config.batch / 1000, Durability(config.sync));
    fmt::print(
        "  (MB/s: request-body bytes, the embedded side counted as the same rows' JSON; CPU "
        "us/row: the whole process, (in brackets) the HTTP client threads' share; CPU: of all "
        "cores)\n");
    PrintAddHeader();
    std::atomic<int64_t> http_next{0}, embedded_next{0};
    uint64_t id_seeds = std::random_device{}();  // each embedded context client draws new ids
    std::vector<std::vector<std::string>> http_ids, embedded_ids;  // per client, contexts
    for (int clients : config.clients) {
      http_ids.resize(std::max(http_ids.size(), static_cast<size_t>(clients)));
      embedded_ids.resize(std::max(embedded_ids.size(), static_cast<size_t>(clients)));
      AddFigures h{kind, "http", bytes_per_row, {}, {}};
      AddFigures e{kind, "embedded", bytes_per_row, {}, {}};
      h.run.clients = e.run.clients = clients;
      // The two sides take turns, so a change of the disk's fdatasync regime (it flips
      // between ~0.5 and ~4 ms on the shared VM) or of other load hits both alike.
      const double slice = config.seconds / config.rounds;
      for (int round = 0; round < config.rounds; ++round) {
        h.run.Add(RunClients(clients, slice, [&](int i) -> std::unique_ptr<Loop> {
          if (rollout) return std::make_unique<HttpRolloutAdd>(port, w, &http_next);
          return std::make_unique<HttpContextAdd>(port, w, &http_next,
                                                  &http_ids[static_cast<size_t>(i)]);
        }));
        if (!config.embedded) continue;
        e.run.Add(RunClients(clients, slice, [&](int i) -> std::unique_ptr<Loop> {
          if (rollout) {
            return std::make_unique<EmbeddedRolloutAdd>(rollouts.get(), w, &embedded_next);
          }
          return std::make_unique<EmbeddedContextAdd>(
              contexts.get(), w, &embedded_next, &embedded_ids[static_cast<size_t>(i)], id_seeds++);
        }));
      }
      h.latency = Summarize(h.run.us);
      PrintAdd(h);
      ExpectNoErrors(h.run, fmt::format("{} HTTP add, {} clients", kind, clients));
      adds.push_back(h);
      if (!config.embedded) continue;
      e.latency = Summarize(e.run.us);
      PrintAdd(e);
      ExpectNoErrors(e.run, fmt::format("{} embedded add, {} clients", kind, clients));
      const double ratio = e.run.rows_per_s() > 0 ? h.run.rows_per_s() / e.run.rows_per_s() : 0;
      fmt::print("  {:>7}  HTTP / embedded rows/s = {:.0f}%\n", clients, 100 * ratio);
      ratios.push_back({{"kind", kind}, {"clients", clients}, {"http_over_embedded", ratio}});
      adds.push_back(e);
    }

    // GET by id. Rollout rows are deferred-seal: one more append with ?flush=true (and a
    // Flush on the embedded side) makes every row visible first.
    std::vector<std::string> http_keys, embedded_keys;
    if (rollout) {
      std::string body;
      w.RolloutBody(http_next.fetch_add(config.batch), &body);
      Result<int> flushed =
          Request(port, http::verb::post, RecordsTarget(kind) + "?flush=true", body, &response);
      Expect(flushed.ok() && *flushed == 201,
             fmt::format("append with ?flush=true: {} {}", flushed.status().ToString(), response));
      Expect(rollouts->Flush().ok(), "embedded Flush failed");
      for (int64_t n = 0; n < http_next.load(); ++n) http_keys.push_back(Workload::RolloutId(n));
      for (int64_t n = 0; n < embedded_next.load(); ++n) {
        embedded_keys.push_back(Workload::RolloutId(n));
      }
    } else {
      for (auto& v : http_ids) http_keys.insert(http_keys.end(), v.begin(), v.end());
      for (auto& v : embedded_ids) embedded_keys.insert(embedded_keys.end(), v.begin(), v.end());
    }
    // A second handle on the server's store (a reader: it never writes), so that GetById reads
    // the very rows the HTTP GETs read.
    Result<std::shared_ptr<ObjectStore>> server_objects =
        OpenLocalObjectStore(http_dir, LocalObjectStoreOptions{.sync = config.sync});
    std::unique_ptr<RolloutStore> server_rollouts;
    std::unique_ptr<ContextStore> server_contexts;
    if (server_objects.ok() && rollout) {
      store::RolloutStoreOptions o;
      o.base.shard_id = "bench-reader";
      auto s = RolloutStore::Open(*server_objects, prefix, std::move(o), false);
      if (s.ok()) server_rollouts = std::move(*s);
    } else if (server_objects.ok()) {
      store::ContextStoreOptions o;
      o.base.shard_id = "bench-reader";
      auto s = ContextStore::Open(*server_objects, prefix, std::move(o), false);
      if (s.ok()) server_contexts = std::move(*s);
    }
    if (server_rollouts == nullptr && server_contexts == nullptr) {
      fmt::print(stderr, "cannot open the server's {} store for reading\n", kind);
      return 1;
    }
    store::StorageBase& server_base = rollout ? server_rollouts->base() : server_contexts->base();
    store::StorageBase& embedded_base = rollout ? rollouts->base() : contexts->base();
    Result<int64_t> server_rows = server_base.Count();
    Result<int64_t> embedded_rows = embedded_base.Count();
    Expect(server_rows.ok() && *server_rows == static_cast<int64_t>(http_keys.size()),
           fmt::format(
               "{} rows written over HTTP, the store counts {}", http_keys.size(),
               server_rows.ok() ? std::to_string(*server_rows) : server_rows.status().ToString()));
    Expect(embedded_rows.ok() && *embedded_rows == static_cast<int64_t>(embedded_keys.size()),
           fmt::format("{} rows added embedded, the store counts {}", embedded_keys.size(),
                       embedded_rows.ok() ? std::to_string(*embedded_rows)
                                          : embedded_rows.status().ToString()));
    Result<store::StoreObservation> server_obs = server_base.Observe();
    Result<store::StoreObservation> embedded_obs = embedded_base.Observe();
    const int64_t server_gens = server_obs.ok() ? server_obs->pending_generations : -1;
    const int64_t embedded_gens = embedded_obs.ok() ? embedded_obs->pending_generations : -1;
    if (http_keys.empty() || (config.embedded && embedded_keys.empty())) {
      Expect(false, fmt::format("{}: no rows written, no GET measured", kind));
      continue;
    }

    fmt::print(
        "\n== {} GET by id: 1 client, random ids of the rows written (server store {} rows, {} "
        "pending generations; embedded store {} rows, {} pending generations) ==\n",
        kind, http_keys.size(), server_gens, embedded_keys.size(), embedded_gens);
    fmt::print("  {:<40} {:>9} {:>8} {:>8} {:>8}\n", "", "reads/s", "p50 ms", "p99 ms", "reads");
    auto get = [&](const std::string& what, const std::function<std::unique_ptr<Loop>()>& make) {
      RunResult warm =
          RunClients(1, std::min(0.2, config.get_seconds / 4), [&](int) { return make(); });
      ExpectNoErrors(warm, fmt::format("{} {} (warm-up)", kind, what));
      RunResult r = RunClients(1, config.get_seconds, [&](int) { return make(); });
      ExpectNoErrors(r, fmt::format("{} {}", kind, what));
      const Latency l = Summarize(r.us);
      fmt::print("  {:<40} {:>9.0f} {:>8} {:>8} {:>8}\n", what, r.rows_per_s(), Ms(l.p50_us),
                 Ms(l.p99_us), r.requests);
      gets.push_back({{"kind", kind},
                      {"what", what},
                      {"reads_per_s", r.rows_per_s()},
                      {"p50_us", l.p50_us},
                      {"p99_us", l.p99_us},
                      {"reads", r.requests},
                      {"errors", r.errors}});
    };
    get("HTTP GET .../records/{id}",
        [&] { return std::make_unique<HttpGet>(port, kind, http_keys, 7); });
    if (rollout) {
      get("GetById, same store (second handle)", [&] {
        return std::make_unique<EmbeddedGet<RolloutStore>>(server_rollouts.get(), http_keys, 7);
      });
      if (config.embedded) {
        get("GetById, the embedded run's store", [&] {
          return std::make_unique<EmbeddedGet<RolloutStore>>(rollouts.get(), embedded_keys, 7);
        });
      }
    } else {
      get("GetById, same store (second handle)", [&] {
        return std::make_unique<EmbeddedGet<ContextStore>>(server_contexts.get(), http_keys, 7);
      });
      if (config.embedded) {
        get("GetById, the embedded run's store", [&] {
          return std::make_unique<EmbeddedGet<ContextStore>>(contexts.get(), embedded_keys, 7);
        });
      }
    }
    const server::ServerOptions d;
    if (std::max(server_gens, embedded_gens) >= d.pending_generations_warn) {
      fmt::print(
          "  note: past the server's pending_generations_warn ({}); reads are refused past {} "
          "(rollout stores have no count trigger or cleanup sweeper by default)\n",
          d.pending_generations_warn, d.pending_generations_max);
    }
    if (server_rollouts) (void)server_rollouts->Close();
    if (server_contexts) (void)server_contexts->Close();
    const Status closed = rollouts ? rollouts->Close() : contexts->Close();
    Expect(closed.ok(), fmt::format("closing the embedded {} store: {}", kind, closed.ToString()));
  }

  const Status shut = (*srv)->Shutdown();
  Expect(shut.ok(), fmt::format("server shutdown: {}", shut.ToString()));
  (*maintenance)->Stop();

  // Summary: the issue's goal at the largest client count.
  const int most = *std::max_element(config.clients.begin(), config.clients.end());
  fmt::print("\n== summary ({}) ==\n", Durability(config.sync));
  for (const Json& r : ratios) {
    if (r["clients"] != most) continue;
    const double ratio = r["http_over_embedded"];
    fmt::print("  {} add at {} clients: HTTP = {:.0f}% of embedded rows/s (goal >= 70%: {})\n",
               r["kind"].get<std::string>(), most, 100 * ratio, ratio >= 0.7 ? "met" : "NOT met");
  }
  watcher.Stop();
  fmt::print("machine at end: load average {}; other processes: {}; during the run: {}\n",
             LoadAverage(), OtherLoad(), watcher.Summary());
  out["machine"]["load_average_end"] = LoadAverage();
  out["machine"]["other_processes_end"] = OtherLoad();
  out["machine"]["other_processes_during"] = watcher.Summary();
  out["machine"]["other_processes_busy_share"] = watcher.busy_share();
  Json add_json = Json::array();
  for (const AddFigures& f : adds) add_json.push_back(AddJson(f));
  out["add"] = add_json;
  out["ratio"] = ratios;
  out["get"] = gets;
  out["problems"] = g_problems;
  if (!config.json_path.empty()) {
    std::ofstream file(config.json_path);
    file << out.dump(2) << "\n";
    if (!file) Expect(false, fmt::format("cannot write {}", config.json_path));
  }
  if (!config.keep) {
    std::error_code ec;
    std::filesystem::remove_all(root, ec);
  }
  if (!g_problems.empty()) {
    fmt::print("PROBLEMS ({}):\n", g_problems.size());
    for (const std::string& p : g_problems) fmt::print("  {}\n", p);
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace strata::bench

int main(int argc, char** argv) {
  strata::bench::Config config;
  bool no_sync = false;
  bool no_embedded = false;
  CLI::App app{
      "strata-server-bench: rollout and context adds and GET by id over HTTP on loopback beside "
      "the embedded API (goal: HTTP adds >= 70% of embedded rows/s at 64 clients)"};
  app.add_option("--seconds", config.seconds, "seconds per add measurement and side (default 5)");
  app.add_option("--rounds", config.rounds,
                 "alternating HTTP / embedded slices per measurement (default 3)");
  app.add_option("--get-seconds", config.get_seconds, "seconds per GET measurement (default 2)");
  app.add_option("--clients", config.clients, "client thread counts (default 1,8,64)")
      ->delimiter(',');
  app.add_option("--batch", config.batch, "rows per request / Add (default 16)");
  app.add_option("--text-bytes", config.text_bytes,
                 "rollout content / context text_payload bytes (default 1024)");
  app.add_option("--dim", config.dim, "context embedding dimension (default 384)");
  app.add_option("--kinds", config.kinds, "store kinds: rollout,context (default both)")
      ->delimiter(',')
      ->check(CLI::IsMember({"rollout", "context"}));
  app.add_option("--json", config.json_path, "also write the figures to this JSON file");
  app.add_option("--dir", config.parent_dir,
                 "a fresh server_bench-XXXXXX directory is made (and removed) here (default /tmp)");
  app.add_flag("--no-sync", no_sync,
               "process durability on both sides (ServerOptions::sync and "
               "LocalObjectStoreOptions::sync off)");
  app.add_flag("--no-embedded", no_embedded,
               "HTTP runs only, no embedded runs or ratios (to profile the server alone)");
  app.add_option("--floor-mib", config.floor_mib,
                 "MiB written for the disk and loopback floors (default 256)");
  app.add_option("--fdatasync-samples", config.fdatasync_samples,
                 "4 KiB append + fdatasync samples for the floor (default 50)");
  app.add_option("--io-threads", config.io_threads, "server I/O threads (default 2)");
  app.add_option("--worker-threads", config.worker_threads, "server worker threads (default 32)");
  app.add_flag("--recode", config.recode,
               "both sides recode linked generations, as the server does by default (each "
               "side's recodes then run in the other side's slices)");
  app.add_flag("--access-log", config.access_log,
               "server access log on, to server.log in the data directory (default off)");
  app.add_flag("--verbose", config.verbose,
               "show the stores' warnings (default: errors only, unless STRATA_LOG_LEVEL is set)");
  app.add_flag("--keep", config.keep, "keep the data directory");
  CLI11_PARSE(app, argc, argv);
  config.sync = !no_sync;
  config.embedded = !no_embedded;
  if (config.seconds <= 0 || config.rounds <= 0 || config.get_seconds <= 0 || config.batch <= 0 ||
      config.text_bytes <= 0 || config.dim <= 0 || config.clients.empty() ||
      config.floor_mib <= 0 || config.fdatasync_samples <= 0 ||
      std::any_of(config.clients.begin(), config.clients.end(), [](int c) { return c <= 0; })) {
    fmt::print(stderr, "strata-server-bench: every count and duration must be > 0\n");
    return 2;
  }
  return strata::bench::Run(config);
}
