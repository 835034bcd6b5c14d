// HttpServer: HTTP/1.1 over Boost.Beast — keep-alive connections on a few I/O threads, request
// bodies read with a per-route size limit and an idle timeout, handlers run on a bounded worker
// pool (so a slow storage call never stalls the I/O threads, and a client that disconnects
// cannot cancel a mutation half way), responses written whole, streamed from memory in pieces
// or sent chunked while a handler produces them, and a drain that refuses new requests while
// the admitted ones finish.
//
// Flow of one request: the header is read (idle timeout) and given to the Admitter on the I/O
// thread, which answers at once (unknown route, 401, 503 while draining, 413 for a declared
// Content-Length over the route's limit) or admits it with a body limit and a handler. The body
// is then read (each read waits at most body_idle_timeout for the next bytes: 408 "request body
// idle timeout"; a chunked body past the limit: 413), the handler runs on the worker pool, and
// its response is written (a write that makes no progress for write_idle_timeout ends the
// connection). Beast stays inside http_server.cc: handlers see HttpRequest / HttpResponse.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "strata/status.h"

namespace strata::server {

struct HttpResponse;

// A response body sent while it is produced (chunked transfer encoding; to an HTTP/1.0 request,
// which has none, a body that ends when the connection closes), for results too large to hold
// in memory. A handler gets one from HttpRequest::begin_chunked and writes to it from
// its worker thread; the connection's I/O thread sends the chunks.
class ChunkWriter {
 public:
  virtual ~ChunkWriter() = default;
  // Queues `bytes` as the next chunk (empty bytes are ignored). Blocks while more than
  // kChunkQueueBytes wait to be sent. Aborted once the connection is gone: stop producing.
  virtual Status Write(std::string bytes) = 0;
  // Ends the body (idempotent; the first call counts). OK sends the last chunk, completing
  // the response; an error closes the connection without it, so the client sees a truncated
  // body instead of a complete one. A handler that returns without calling it ends as with
  // an error.
  virtual void Finish(const Status& status) = 0;
};
inline constexpr size_t kChunkQueueBytes = size_t{1} << 20;

struct HttpRequest {
  std::string method;                                        // "GET", "POST", ...
  std::string target;                                        // as sent: path and query
  std::string path;                                          // target before '?', not decoded
  std::string query;                                         // target after '?', not decoded
  std::vector<std::pair<std::string, std::string>> headers;  // names lowercased
  std::string body;
  std::string remote;  // peer address
  // Set by the server for the handler: sends `head`'s status, content type and headers now
  // (its body is ignored) and returns the writer of the body. At most one call per request;
  // once called, the response the handler returns is ignored.
  std::function<std::shared_ptr<ChunkWriter>(const HttpResponse& head)> begin_chunked;

  // The first header named `lower_name`, or "" when absent.
  std::string_view Header(std::string_view lower_name) const;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  // When set, the body is these bytes, written in stream_chunk_bytes pieces (with a
  // Content-Length) instead of `body`.
  std::shared_ptr<const std::string> stream;
  size_t stream_chunk_bytes = size_t{256} * 1024;
  // Released once the response is written or the connection is gone (a blob budget
  // reservation for a download).
  std::shared_ptr<void> hold;
};

// What the admitter decides from a request's header.
struct Admission {
  // Set: answer with this at once (the body, if any, is not read; the connection closes).
  std::optional<HttpResponse> reject;
  uint64_t body_limit = 0;
  // Runs on the worker pool with the whole request.
  std::function<HttpResponse(HttpRequest&)> handler;
  // Called (on the worker pool, or the I/O thread for rejections and body errors) with the
  // request's status and wall seconds once its response is decided.
  std::function<void(int status, double seconds)> on_done;
};

using Admitter = std::function<Admission(const HttpRequest& header)>;

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 3000;  // 0: any free port (see HttpServer::port)
  int io_threads = 2;
  int worker_threads = 32;
  double body_idle_timeout_seconds = 120;
  // An idle keep-alive connection (waiting for a request header) is closed after this.
  double header_idle_timeout_seconds = 120;
  double write_idle_timeout_seconds = 120;
  // Called for a request whose body timed out (metrics, logs).
  std::function<void()> on_body_timeout;
};

class HttpServer {
 public:
  // Binds and starts the I/O threads and the worker pool. IOError when the address cannot be
  // bound (naming it).
  static Result<std::unique_ptr<HttpServer>> Start(HttpServerOptions options, Admitter admitter);
  // Stops as Stop.
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  uint16_t port() const;
  // Begins draining: requests admitted from now on are answered 503 by the admitter (it asks
  // draining()), connections are not kept alive. Thread safe, idempotent.
  void BeginDrain();
  bool draining() const;
  // Blocks until every admitted request's handler has returned and its response is written
  // (or its connection is gone).
  void WaitForInFlight();
  // Stops accepting, closes every connection, joins the threads. Idempotent.
  void Stop();

  struct State;

 private:
  explicit HttpServer(std::shared_ptr<State> state);
  std::shared_ptr<State> state_;
};

// Percent-decoding of a path segment or query component ('+' is a space in queries only).
// InvalidArgument for a malformed escape.
Result<std::string> UrlDecode(std::string_view text, bool plus_is_space);
// The query's parameters in order, decoded; a bare name has an empty value and
// has_value = false.
struct QueryParam {
  std::string name;
  std::string value;
  bool has_value = true;
};
Result<std::vector<QueryParam>> ParseQuery(std::string_view query);

}  // namespace strata::server
