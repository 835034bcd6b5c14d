// A closed-loop load driver for benchmarks of a server beside its embedded API: N client
// threads each run a Loop (an HTTP connection or an in-process caller) until a deadline, and
// the run reports requests, rows, latency samples and CPU time (the whole process, and the
// client threads alone). Also the loopback TCP floor and the machine's other load.
#pragma once

#include <boost/beast/http/verb.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "floor.h"
#include "strata/status.h"

namespace strata::bench {

// ---- Machine state ---------------------------------------------------------------------

// "1.23 4.56 7.89", the 1 / 5 / 15 minute load average.
std::string LoadAverage();
// Other builds and test runs that share the cores (cc1plus, ld, ctest, pytest, python3; not
// stopped ones), as "cc1plus x2, ctest x1", or "none".
std::string OtherLoad();

// Samples OtherLoad's processes every 0.5 s on a thread of its own from construction to
// Stop, so a run can say whether anything else ran during it, not only at its ends.
class LoadWatcher {
 public:
  LoadWatcher();
  ~LoadWatcher();  // stops
  LoadWatcher(const LoadWatcher&) = delete;
  LoadWatcher& operator=(const LoadWatcher&) = delete;

  // Stops sampling; idempotent.
  void Stop();
  // "none", or the most processes of each name seen at once and the share of samples that saw
  // any: "cc1plus up to 2, ld up to 1 (in 35% of samples)".
  std::string Summary() const;
  // The share of samples that saw any other process.
  double busy_share() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// ---- Loopback floor --------------------------------------------------------------------

struct LoopbackFloor {
  double rtt_p50_us = 0;  // 1-byte TCP ping-pong on 127.0.0.1, TCP_NODELAY
  double stream_bps = 0;  // one connection, 64 KiB writes
};

Result<LoopbackFloor> MeasureLoopback(int round_trips, int64_t stream_bytes);

// ---- HTTP client -----------------------------------------------------------------------

// One keep-alive HTTP/1.1 connection to 127.0.0.1 (Boost.Beast's synchronous client). Not
// thread-safe: one per client thread.
class HttpClient {
 public:
  HttpClient();
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  Status Connect(uint16_t port);
  // Sends one request (a POST body as application/json) and reads the response: its status,
  // its body in *response. IOError when the connection fails.
  Result<int> Send(boost::beast::http::verb method, const std::string& target, std::string body,
                   std::string* response);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// ---- Runs ------------------------------------------------------------------------------

// One client thread's work: Prepare (connect) before the clock starts, then Step until the
// deadline. Step builds its input, times only the request (*micros) and returns the rows it
// did.
class Loop {
 public:
  virtual ~Loop() = default;
  virtual Status Prepare() { return Status::OK(); }
  virtual Result<int64_t> Step(double* micros) = 0;
};

struct RunResult {
  int clients = 0;
  int64_t requests = 0, rows = 0, errors = 0;
  double seconds = 0;        // from the start to the last response
  std::vector<double> us;    // one latency sample per request
  double process_cpu_s = 0;  // the whole process (server + clients) during the run
  double client_cpu_s = 0;   // the client threads alone
  std::string first_error;   // of the failed steps, if any

  double rows_per_s() const { return seconds > 0 ? static_cast<double>(rows) / seconds : 0; }
  // Adds another run of the same client count (a later slice).
  void Add(RunResult other);
};

// Runs `clients` threads, each on the Loop that make(i) returns, for `seconds`. A thread
// stops after its fourth failed step.
RunResult RunClients(int clients, double seconds,
                     const std::function<std::unique_ptr<Loop>(int)>& make);

}  // namespace strata::bench
