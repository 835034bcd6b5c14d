// The closed-loop load driver, the loopback floor and the machine-state probes of the server
// benchmark.
#include "load_driver.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <algorithm>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <latch>
#include <map>
#include <mutex>
#include <thread>

namespace strata::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

// Other processes by name, as OtherLoad counts them; stopped (SIGSTOP) and zombie ones do not
// count.
std::map<std::string, int> CountOthers() {
  static const char* kNames[] = {"cc1plus", "ctest", "ld", "pytest", "python3"};
  std::map<std::string, int> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string pid = entry.path().filename().string();
    if (pid.empty() || !std::isdigit(static_cast<unsigned char>(pid[0]))) continue;
    std::ifstream in(entry.path() / "comm");
    std::string comm;
    if (!std::getline(in, comm)) continue;
    const char* const* name = std::find_if(std::begin(kNames), std::end(kNames),
                                           [&](const char* n) { return comm == n; });
    if (name == std::end(kNames)) continue;
    // /proc/PID/stat: "pid (comm) S ...": the state follows the last ')'.
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t paren = line.rfind(')');
    const char state =
        paren != std::string::npos && paren + 2 < line.size() ? line[paren + 2] : '?';
    if (state == 'T' || state == 't' || state == 'Z') continue;
    ++found[comm];
  }
  return found;
}

double CpuSeconds(int who) {
  rusage u{};
  ::getrusage(who, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace

std::string LoadAverage() {
  double load[3] = {0, 0, 0};
  if (::getloadavg(load, 3) != 3) return "unknown";
  return fmt::format("{:.2f} {:.2f} {:.2f}", load[0], load[1], load[2]);
}

std::string OtherLoad() {
  const std::map<std::string, int> found = CountOthers();
  if (found.empty()) return "none";
  std::string out;
  for (const auto& [name, n] : found) {
    out += fmt::format("{}{} x{}", out.empty() ? "" : ", ", name, n);
  }
  return out;
}

struct LoadWatcher::State {
  std::mutex mu;
  std::condition_variable wake;
  bool stop = false;                // guarded by mu
  std::map<std::string, int> most;  // guarded by mu
  int samples = 0, busy = 0;        // guarded by mu
  std::thread thread;
};

LoadWatcher::LoadWatcher() : state_(std::make_unique<State>()) {
  state_->thread = std::thread([s = state_.get()] {
    std::unique_lock lock(s->mu);
    while (!s->stop) {
      lock.unlock();
      const std::map<std::string, int> now = CountOthers();
      lock.lock();
      ++s->samples;
      if (!now.empty()) ++s->busy;
      for (const auto& [name, n] : now) s->most[name] = std::max(s->most[name], n);
      s->wake.wait_for(lock, std::chrono::milliseconds(500), [s] { return s->stop; });
    }
  });
}

LoadWatcher::~LoadWatcher() { Stop(); }

void LoadWatcher::Stop() {
  {
    std::lock_guard lock(state_->mu);
    state_->stop = true;
  }
  state_->wake.notify_all();
  if (state_->thread.joinable()) state_->thread.join();
}

std::string LoadWatcher::Summary() const {
  std::lock_guard lock(state_->mu);
  if (state_->most.empty()) return "none";
  std::string out;
  for (const auto& [name, n] : state_->most) {
    out += fmt::format("{}{} up to {}", out.empty() ? "" : ", ", name, n);
  }
  return fmt::format("{} (in {:.0f}% of samples)", out,
                     100.0 * state_->busy / std::max(1, state_->samples));
}

double LoadWatcher::busy_share() const {
  std::lock_guard lock(state_->mu);
  return static_cast<double>(state_->busy) / std::max(1, state_->samples);
}

Result<LoopbackFloor> MeasureLoopback(int round_trips, int64_t stream_bytes) {
  asio::io_context ioc;
  beast::error_code ec;
  tcp::acceptor acceptor(ioc);
  const tcp::endpoint any(asio::ip::make_address("127.0.0.1"), 0);
  acceptor.open(any.protocol(), ec);
  if (!ec) acceptor.bind(any, ec);
  if (!ec) acceptor.listen(1, ec);
  if (ec) return Status::IOError(fmt::format("loopback listen: {}", ec.message()));
  std::thread echo([&] {
    beast::error_code e;
    tcp::socket s = acceptor.accept(e);
    if (e) return;
    s.set_option(tcp::no_delay(true), e);
    char c = 0;
    for (int i = 0; i < round_trips; ++i) {
      if (asio::read(s, asio::buffer(&c, 1), e) != 1) return;
      if (asio::write(s, asio::buffer(&c, 1), e) != 1) return;
    }
    std::vector<char> chunk(1 << 16);
    int64_t got = 0;
    while (got < stream_bytes) {
      const size_t n = s.read_some(asio::buffer(chunk), e);
      if (e) return;
      got += static_cast<int64_t>(n);
    }
    asio::write(s, asio::buffer(&c, 1), e);
  });
  tcp::socket client(ioc);
  client.connect(acceptor.local_endpoint(), ec);
  if (!ec) client.set_option(tcp::no_delay(true), ec);
  std::vector<double> us;
  char c = 'x';
  for (int i = 0; i < round_trips && !ec; ++i) {
    const auto start = Clock::now();
    asio::write(client, asio::buffer(&c, 1), ec);
    if (!ec) asio::read(client, asio::buffer(&c, 1), ec);
    us.push_back(Seconds(start) * 1e6);
  }
  std::vector<char> chunk(1 << 16, 'y');
  const auto start = Clock::now();
  for (int64_t sent = 0; sent < stream_bytes && !ec; sent += static_cast<int64_t>(chunk.size())) {
    asio::write(client, asio::buffer(chunk), ec);
  }
  if (!ec) asio::read(client, asio::buffer(&c, 1), ec);
  const double stream_s = Seconds(start);
  client.close();
  echo.join();
  if (ec) return Status::IOError(fmt::format("loopback: {}", ec.message()));
  LoopbackFloor f;
  f.rtt_p50_us = Summarize(std::move(us)).p50_us;
  f.stream_bps = static_cast<double>(stream_bytes) / stream_s;
  return f;
}

struct HttpClient::State {
  asio::io_context ioc;
  tcp::socket socket{ioc};
  beast::flat_buffer buffer;
};

HttpClient::HttpClient() : state_(std::make_unique<State>()) {}

HttpClient::~HttpClient() {
  beast::error_code ec;
  state_->socket.shutdown(tcp::socket::shutdown_both, ec);
}

Status HttpClient::Connect(uint16_t port) {
  beast::error_code ec;
  state_->socket.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  if (!ec) state_->socket.set_option(tcp::no_delay(true), ec);
  if (ec) return Status::IOError(fmt::format("connect to port {}: {}", port, ec.message()));
  return Status::OK();
}

Result<int> HttpClient::Send(http::verb method, const std::string& target, std::string body,
                             std::string* response) {
  http::request<http::string_body> req{method, target, 11};
  req.set(http::field::host, "127.0.0.1");
  req.keep_alive(true);
  if (method == http::verb::post) {
    req.set(http::field::content_type, "application/json");
    req.body() = std::move(body);
    req.prepare_payload();
  }
  const std::string verb(http::to_string(method));
  beast::error_code ec;
  http::write(state_->socket, req, ec);
  if (ec) return Status::IOError(fmt::format("{} {}: write: {}", verb, target, ec.message()));
  http::response<http::string_body> res;
  http::read(state_->socket, state_->buffer, res, ec);
  if (ec) return Status::IOError(fmt::format("{} {}: read: {}", verb, target, ec.message()));
  *response = std::move(res.body());
  return static_cast<int>(res.result_int());
}

void RunResult::Add(RunResult other) {
  requests += other.requests;
  rows += other.rows;
  errors += other.errors;
  seconds += other.seconds;
  us.insert(us.end(), other.us.begin(), other.us.end());
  process_cpu_s += other.process_cpu_s;
  client_cpu_s += other.client_cpu_s;
  if (first_error.empty()) first_error = std::move(other.first_error);
}

RunResult RunClients(int clients, double seconds,
                     const std::function<std::unique_ptr<Loop>(int)>& make) {
  RunResult result;
  result.clients = clients;
  std::vector<std::unique_ptr<Loop>> loops;
  for (int i = 0; i < clients; ++i) loops.push_back(make(i));
  std::latch ready(clients);
  std::latch go(1);
  Clock::time_point deadline;
  std::mutex mu;
  std::vector<std::thread> threads;
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&, i] {
      Loop& loop = *loops[static_cast<size_t>(i)];
      const Status prepared = loop.Prepare();
      ready.count_down();
      go.wait();
      const double cpu0 = CpuSeconds(RUSAGE_THREAD);
      std::vector<double> us;
      int64_t rows = 0, requests = 0, errors = 0;
      std::string error = prepared.ok() ? "" : prepared.ToString();
      while (prepared.ok() && Clock::now() < deadline) {
        double micros = 0;
        Result<int64_t> done = loop.Step(&micros);
        if (!done.ok()) {
          if (error.empty()) error = done.status().ToString();
          if (++errors > 3) break;
          continue;
        }
        ++requests;
        rows += *done;
        us.push_back(micros);
      }
      const double cpu = CpuSeconds(RUSAGE_THREAD) - cpu0;
      std::lock_guard lock(mu);
      result.us.insert(result.us.end(), us.begin(), us.end());
      result.rows += rows;
      result.requests += requests;
      result.errors += errors + (prepared.ok() ? 0 : 1);
      result.client_cpu_s += cpu;
      if (result.first_error.empty()) result.first_error = std::move(error);
    });
  }
  ready.wait();
  const double cpu0 = CpuSeconds(RUSAGE_SELF);
  const auto start = Clock::now();
  deadline = start + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
  go.count_down();
  for (std::thread& t : threads) t.join();
  result.seconds = Seconds(start);
  result.process_cpu_s = CpuSeconds(RUSAGE_SELF) - cpu0;
  return result;
}

}  // namespace strata::bench
