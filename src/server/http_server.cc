// HttpServer on Boost.Beast: one Session per connection on a strand of the I/O context, a
// thread pool for handlers, and a registry of sessions so a drain can close idle ones.
#include "server/http_server.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "server/clock.h"
#include "server/errors.h"

namespace strata::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

std::string_view HttpRequest::Header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return value;
  }
  return {};
}

namespace {

std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(std::max(0.0, seconds) * 1000.0));
}

class Session;

}  // namespace

// Sessions unregister themselves under `mu` when destroyed, which may happen while the I/O
// context or the pool is destroyed: both are declared after `mu` so they go first.
struct HttpServer::State {
  HttpServerOptions options;
  Admitter admitter;
  uint16_t port = 0;
  std::atomic<bool> draining{false};

  std::mutex mu;
  std::condition_variable idle;
  int64_t in_flight = 0;                                // guarded by mu
  std::map<Session*, std::weak_ptr<Session>> sessions;  // guarded by mu
  bool stopped = false;                                 // guarded by mu

  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::unique_ptr<asio::thread_pool> pool;
  std::vector<std::thread> io_threads;

  void Accept();
  void BeginRequest() {
    std::lock_guard lock(mu);
    ++in_flight;
  }
  void EndRequest() {
    std::lock_guard lock(mu);
    if (--in_flight == 0) idle.notify_all();
  }
};

namespace {

// Printable ASCII (and tab) of a sane length: safe to put in a response header.
bool IsSafeHeaderValue(std::string_view value) {
  if (value.size() > 255) return false;
  return std::all_of(value.begin(), value.end(),
                     [](char c) { return c == '\t' || (c >= 0x20 && c < 0x7f); });
}

HttpResponse PlainError(int status, std::string code, std::string message) {
  HttpResponse r;
  r.status = status;
  r.body = ErrorBody(HttpError{status, std::move(code), std::move(message), 0});
  return r;
}

// The ChunkWriter of one request: a bounded queue between the handler's worker thread (Write,
// Finish) and the session's strand, which takes one chunk at a time and sends it. `kick` asks
// the strand to look at the queue again.
class SessionChunkWriter : public ChunkWriter {
 public:
  explicit SessionChunkWriter(std::function<void()> kick) : kick_(std::move(kick)) {}

  Status Write(std::string bytes) override {
    if (bytes.empty()) return Status::OK();
    {
      std::unique_lock lock(mu_);
      space_.wait(lock, [&] { return gone_ || finished_ || queued_ < kChunkQueueBytes; });
      if (gone_) return Status::Aborted("the client connection is gone");
      if (finished_) return Status::Internal("chunked response written after it was finished");
      queued_ += bytes.size();
      queue_.push_back(std::move(bytes));
    }
    kick_();
    return Status::OK();
  }

  void Finish(const Status& status) override {
    {
      std::lock_guard lock(mu_);
      if (finished_) return;
      finished_ = true;
      final_ = status;
    }
    kick_();
  }

  enum class Next { kChunk, kLast, kAbort, kWait };
  // On the strand: the next thing to send.
  Next Take(std::string* chunk) {
    std::lock_guard lock(mu_);
    if (!queue_.empty()) {
      *chunk = std::move(queue_.front());
      queue_.pop_front();
      queued_ -= chunk->size();
      space_.notify_all();
      return Next::kChunk;
    }
    if (!finished_) return Next::kWait;
    return final_.ok() ? Next::kLast : Next::kAbort;
  }

  // The connection is gone: Write fails from now on.
  void MarkGone() {
    std::lock_guard lock(mu_);
    gone_ = true;
    space_.notify_all();
  }

 private:
  const std::function<void()> kick_;
  std::mutex mu_;
  std::condition_variable space_;
  std::deque<std::string> queue_;  // guarded by mu_
  size_t queued_ = 0;              // guarded by mu_
  bool finished_ = false;          // guarded by mu_
  bool gone_ = false;              // guarded by mu_
  Status final_;                   // guarded by mu_
};

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, HttpServer::State* server)
      : stream_(std::move(socket)), server_(server) {
    beast::error_code ec;
    tcp::endpoint peer = stream_.socket().remote_endpoint(ec);
    if (!ec) remote_ = peer.address().to_string() + ":" + std::to_string(peer.port());
  }

  void Start() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->ReadHeader(); });
  }

  // From any thread: close the connection if it is between requests.
  void CloseIfIdle() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      if (!self->busy_) self->Close();
    });
  }
  void CloseNow() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] { self->Close(); });
  }

 private:
  void ReadHeader() {
    busy_ = false;
    body_unread_ = false;
    // An idle connection keeps at most kMaxReadCapacity of read buffer.
    if (buffer_.size() == 0 && buffer_.capacity() > kMaxReadCapacity) buffer_.shrink_to_fit();
    header_parser_.emplace();
    header_parser_->header_limit(64 * 1024);
    header_parser_->body_limit(std::numeric_limits<uint64_t>::max());
    stream_.expires_after(Millis(server_->options.header_idle_timeout_seconds));
    http::async_read_header(
        stream_, buffer_, *header_parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec) {
      // Idle keep-alive timeout, the peer closed, or a malformed header.
      if (ec != http::error::end_of_stream && ec != beast::error::timeout &&
          ec != asio::error::operation_aborted && ec != asio::error::connection_reset) {
        busy_ = true;
        started_ = MonotonicSeconds();
        keep_alive_ = false;
        body_unread_ = true;
        WriteResponse(PlainError(400, "INVALID_REQUEST", "malformed HTTP request"));
        return;
      }
      Close();
      return;
    }
    busy_ = true;
    started_ = MonotonicSeconds();
    const auto& header = header_parser_->get();
    request_ = HttpRequest{};
    request_.method = std::string(header.method_string());
    request_.target = std::string(header.target());
    const size_t q = request_.target.find('?');
    request_.path = request_.target.substr(0, q);
    if (q != std::string::npos) request_.query = request_.target.substr(q + 1);
    for (const auto& field : header) {
      std::string name(field.name_string());
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      request_.headers.emplace_back(std::move(name), std::string(field.value()));
    }
    request_.remote = remote_;
    http10_ = header.version() < 11;
    keep_alive_ = header.keep_alive() && !server_->draining.load();

    Admission admission = server_->admitter(request_);
    on_done_ = std::move(admission.on_done);
    if (admission.reject) {
      keep_alive_ = false;
      Finish(std::move(*admission.reject));
      return;
    }
    if (header_parser_->content_length() &&
        *header_parser_->content_length() > admission.body_limit) {
      keep_alive_ = false;
      Finish(PlainError(413, "PAYLOAD_TOO_LARGE",
                        fmt::format("request body of {} bytes exceeds this route's limit of {} "
                                    "bytes",
                                    *header_parser_->content_length(), admission.body_limit)));
      return;
    }
    // Admitted: the drain waits for this request from now on, while its body is read too.
    server_->BeginRequest();
    counted_ = true;
    handler_ = std::move(admission.handler);
    body_parser_.emplace(std::move(*header_parser_));
    header_parser_.reset();
    body_parser_->body_limit(admission.body_limit);
    ReserveForBody();
    // An HTTP/1.0 client cannot expect an interim response: its expectation is ignored
    // (RFC 9110 §10.1.1).
    const std::string_view expect = request_.Header("expect");
    if (body_parser_->get().version() >= 11 &&
        beast::iequals(beast::string_view(expect.data(), expect.size()), "100-continue")) {
      auto cont = std::make_shared<http::response<http::empty_body>>(http::status::continue_, 11);
      http::async_write(stream_, *cont,
                        [self = shared_from_this(), cont](beast::error_code wec, size_t) {
                          if (wec) {
                            self->Close();
                            return;
                          }
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  // Beast reads at most the read buffer's free capacity (but at least 512 bytes) per receive, and
  // the buffer only grows as far as headers needed: a 20 KB body would take ~40 receives, each a
  // trip through the reactor. Room for the whole body (up to kMaxReadCapacity) makes it one or two.
  void ReserveForBody() {
    const auto length = body_parser_->content_length();         // boost::optional
    const uint64_t body = length ? *length : kMaxReadCapacity;  // chunked: as much as allowed
    // At most kMaxReadCapacity in all (unless buffered bytes already take more), so that the
    // next request's ReadHeader does not shrink it away again.
    const size_t want =
        std::max(buffer_.size(),
                 static_cast<size_t>(std::min<uint64_t>(buffer_.size() + body, kMaxReadCapacity)));
    if (buffer_.capacity() < want) buffer_.reserve(want);
  }

  void ReadBody() {
    // Body bytes that came with the header (often all of them) are parsed here, without a
    // trip through the reactor and the body timer.
    while (!body_parser_->is_done() && buffer_.size() > 0) {
      beast::error_code ec;
      const size_t used = body_parser_->put(buffer_.data(), ec);
      buffer_.consume(used);
      if (ec == http::error::need_more) break;
      if (ec) {
        OnBody(ec);
        return;
      }
      if (used == 0) break;
    }
    if (body_parser_->is_done()) {
      Dispatch();
      return;
    }
    // A timer of our own instead of the stream's timeout, which would close the socket: the
    // 408 still has to be written. Each read has a generation so a timer that fired as the
    // read completed cannot cancel the next one.
    stream_.expires_never();
    const uint64_t generation = ++read_generation_;
    body_timer_.expires_after(Millis(server_->options.body_idle_timeout_seconds));
    body_timer_.async_wait([self = shared_from_this(), generation](beast::error_code ec) {
      if (ec || generation != self->read_generation_ || !self->reading_body_) return;
      self->body_timed_out_ = true;
      beast::error_code ignored;
      self->stream_.socket().cancel(ignored);
    });
    reading_body_ = true;
    http::async_read_some(
        stream_, buffer_, *body_parser_,
        [self = shared_from_this()](beast::error_code ec, size_t) { self->OnBody(ec); });
  }

  void OnBody(beast::error_code ec) {
    reading_body_ = false;
    body_timer_.cancel();
    if (body_timed_out_) ec = beast::error::timeout;
    if (ec == http::error::body_limit) {
      keep_alive_ = false;
      Finish(PlainError(413, "PAYLOAD_TOO_LARGE", "request body exceeds this route's limit"));
      return;
    }
    if (ec == beast::error::timeout) {
      keep_alive_ = false;
      if (server_->options.on_body_timeout) server_->options.on_body_timeout();
      spdlog::warn("{} {} from {}: request body idle timeout", request_.method, request_.path,
                   remote_);
      Finish(PlainError(408, "REQUEST_TIMEOUT", "request body idle timeout"));
      return;
    }
    // The connection ended before the body did: the client went away (below), not a
    // malformed body.
    if (ec && ec != http::error::partial_message &&
        ec.category() == http::make_error_code(http::error::bad_chunk).category()) {
      // A malformed body (bad chunk framing, ...): nothing was handled.
      keep_alive_ = false;
      Finish(PlainError(400, "INVALID_REQUEST",
                        fmt::format("malformed request body: {}", ec.message())));
      return;
    }
    if (ec) {
      // The client went away: nothing was handled.
      if (on_done_) on_done_(499, MonotonicSeconds() - started_);
      Close();
      return;
    }
    ReadBody();
  }

  void Dispatch() {
    stream_.expires_never();
    request_.body = std::move(body_parser_->get().body());
    body_parser_.reset();
    request_.begin_chunked = [this](const HttpResponse& head) { return BeginChunked(head); };
    handler_running_ = true;
    asio::post(*server_->pool, [self = shared_from_this()] {
      HttpResponse response;
      try {
        response = self->handler_(self->request_);
      } catch (const std::exception& e) {
        spdlog::error("{} {}: handler threw: {}", self->request_.method, self->request_.path,
                      e.what());
        response = PlainError(500, "INTERNAL", "internal error");
      } catch (...) {
        spdlog::error("{} {}: handler threw", self->request_.method, self->request_.path);
        response = PlainError(500, "INTERNAL", "internal error");
      }
      self->handler_ = nullptr;
      // A chunked response's status went out with its header; the handler's return is moot.
      std::shared_ptr<SessionChunkWriter> chunked = std::move(self->handler_writer_);
      if (chunked) {
        chunked->Finish(Status::Internal("the handler returned without finishing its response"));
        response.status = self->handler_writer_status_;
      }
      if (self->on_done_) self->on_done_(response.status, MonotonicSeconds() - self->started_);
      self->on_done_ = nullptr;
      asio::post(self->stream_.get_executor(),
                 [self, r = std::move(response), streamed = chunked != nullptr]() mutable {
                   self->handler_running_ = false;
                   if (self->closed_) {
                     self->chunked_.reset();
                     self->Release();  // the connection went away while the handler ran
                     return;
                   }
                   if (streamed) {
                     self->Pump();  // the last chunk waits for the handler to return
                     return;
                   }
                   self->WriteResponse(std::move(r));
                 });
    });
  }

  // On the handler's worker thread (HttpRequest::begin_chunked).
  std::shared_ptr<ChunkWriter> BeginChunked(const HttpResponse& head) {
    if (handler_writer_) return handler_writer_;
    auto writer = std::make_shared<SessionChunkWriter>([weak = weak_from_this()] {
      if (auto self = weak.lock()) {
        asio::post(self->stream_.get_executor(), [self] { self->Pump(); });
      }
    });
    handler_writer_ = writer;
    handler_writer_status_ = head.status;
    HttpResponse header_only;
    header_only.status = head.status;
    header_only.content_type = head.content_type;
    header_only.headers = head.headers;
    asio::post(stream_.get_executor(),
               [self = shared_from_this(), writer, h = std::move(header_only)]() mutable {
                 self->StartChunked(std::move(writer), h);
               });
    return writer;
  }

  // On the strand: sends the chunked response's header, then its chunks as they come.
  void StartChunked(std::shared_ptr<SessionChunkWriter> writer, const HttpResponse& head) {
    if (closed_) {
      writer->MarkGone();
      return;
    }
    if (server_->draining.load()) keep_alive_ = false;
    chunked_ = std::move(writer);
    chunked_head_.emplace(static_cast<http::status>(head.status), 11);
    try {
      SetHeaders(&*chunked_head_, head);
    } catch (const std::exception& e) {
      // Beast refuses some header values: end the connection (Close marks the writer gone).
      spdlog::error("{} {}: writing the response: {}", request_.method, request_.path, e.what());
      Close();
      return;
    }
    if (http10_) {
      // HTTP/1.0 has no chunked encoding: the body ends when the connection closes.
      keep_alive_ = false;
      chunked_head_->keep_alive(false);
    } else {
      chunked_head_->chunked(true);
    }
    chunked_serializer_.emplace(*chunked_head_);
    stream_.expires_after(Millis(server_->options.write_idle_timeout_seconds));
    http::async_write_header(stream_, *chunked_serializer_,
                             [self = shared_from_this()](beast::error_code ec, size_t) {
                               if (ec) {
                                 self->Close();
                                 return;
                               }
                               self->chunked_header_sent_ = true;
                               self->Pump();
                             });
  }

  // On the strand: sends the next queued chunk, or ends the chunked response once the handler
  // has finished it and returned.
  void Pump() {
    if (!chunked_ || !chunked_header_sent_ || chunk_writing_ || closed_) return;
    switch (chunked_->Take(&chunk_)) {
      case SessionChunkWriter::Next::kWait:
        return;
      case SessionChunkWriter::Next::kChunk: {
        chunk_writing_ = true;
        stream_.expires_after(Millis(server_->options.write_idle_timeout_seconds));
        auto written = [self = shared_from_this()](beast::error_code ec, size_t) {
          self->chunk_writing_ = false;
          if (ec) {
            self->Close();
            return;
          }
          self->Pump();
        };
        if (http10_) {
          asio::async_write(stream_, asio::buffer(chunk_), std::move(written));
        } else {
          asio::async_write(stream_, http::make_chunk(asio::buffer(chunk_)), std::move(written));
        }
        return;
      }
      case SessionChunkWriter::Next::kLast:
        if (handler_running_) return;
        if (http10_) {
          AfterWrite({});  // not kept alive: closing the connection ends the body
          return;
        }
        chunk_writing_ = true;
        stream_.expires_after(Millis(server_->options.write_idle_timeout_seconds));
        asio::async_write(stream_, http::make_chunk_last(),
                          [self = shared_from_this()](beast::error_code ec, size_t) {
                            self->chunk_writing_ = false;
                            self->AfterWrite(ec);
                          });
        return;
      case SessionChunkWriter::Next::kAbort:
        // The body cannot be completed: end the connection so the client sees it truncated.
        if (handler_running_) return;
        keep_alive_ = false;
        AfterWrite(asio::error::connection_aborted);
        return;
    }
  }

  // A response decided on the I/O thread (no handler ran).
  void Finish(HttpResponse response) {
    body_unread_ = true;  // refused before or while its body was read
    if (on_done_) on_done_(response.status, MonotonicSeconds() - started_);
    on_done_ = nullptr;
    WriteResponse(std::move(response));
  }

  void WriteResponse(HttpResponse response) {
    try {
      WriteResponseOrThrow(std::move(response));
    } catch (const std::exception& e) {
      // Beast refuses some header values (too long): end the connection, not the process.
      spdlog::error("{} {}: writing the response: {}", request_.method, request_.path, e.what());
      AfterWrite(asio::error::invalid_argument);
    }
  }

  void WriteResponseOrThrow(HttpResponse response) {
    if (server_->draining.load()) keep_alive_ = false;
    hold_ = std::move(response.hold);
    stream_.expires_after(Millis(server_->options.write_idle_timeout_seconds));
    if (response.stream) {
      stream_data_ = std::move(response.stream);
      stream_chunk_ = std::max<size_t>(1, response.stream_chunk_bytes);
      stream_offset_ = 0;
      stream_response_.emplace(static_cast<http::status>(response.status), 11);
      SetHeaders(&*stream_response_, response);
      stream_response_->content_length(stream_data_->size());
      stream_response_->body().data = nullptr;
      stream_response_->body().more = true;
      stream_serializer_.emplace(*stream_response_);
      http::async_write_header(
          stream_, *stream_serializer_,
          [self = shared_from_this()](beast::error_code ec, size_t) { self->OnStreamWrite(ec); });
      return;
    }
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(response.status), 11);
    SetHeaders(res.get(), response);
    res->body() = std::move(response.body);
    res->prepare_payload();
    http::async_write(
        stream_, *res,
        [self = shared_from_this(), res](beast::error_code ec, size_t) { self->AfterWrite(ec); });
  }

  template <class Message>
  void SetHeaders(Message* res, const HttpResponse& response) {
    res->set(http::field::server, "strata");
    if (!response.content_type.empty()) {
      // A content type stored with a record is user input: never let it split the header.
      res->set(http::field::content_type, IsSafeHeaderValue(response.content_type)
                                              ? response.content_type
                                              : std::string("application/octet-stream"));
    }
    for (const auto& [name, value] : response.headers) res->set(name, value);
    res->keep_alive(keep_alive_);
  }

  void OnStreamWrite(beast::error_code ec) {
    if (ec == http::error::need_buffer) ec = {};
    if (ec) {
      AfterWrite(ec);
      return;
    }
    if (stream_serializer_->is_done()) {
      AfterWrite(ec);
      return;
    }
    const size_t n = std::min(stream_chunk_, stream_data_->size() - stream_offset_);
    auto& body = stream_response_->body();
    body.data = const_cast<char*>(stream_data_->data() + stream_offset_);
    body.size = n;
    stream_offset_ += n;
    body.more = stream_offset_ < stream_data_->size();
    stream_.expires_after(Millis(server_->options.write_idle_timeout_seconds));
    http::async_write(
        stream_, *stream_serializer_,
        [self = shared_from_this()](beast::error_code wec, size_t) { self->OnStreamWrite(wec); });
  }

  void AfterWrite(beast::error_code ec) {
    chunked_serializer_.reset();
    chunked_head_.reset();
    chunked_.reset();
    chunked_header_sent_ = false;
    std::string().swap(chunk_);
    stream_serializer_.reset();
    stream_response_.reset();
    stream_data_.reset();
    hold_.reset();
    if (!ec && !keep_alive_ && body_unread_) {
      LingeringClose();
    } else if (ec || !keep_alive_) {
      Close();
    } else {
      ReadHeader();
    }
    Release();
  }

  // Closing a socket that still holds unread request bytes sends a reset, which can destroy
  // the response before the client reads it (a 413 for an upload that is still coming). So
  // after such a response the sending side is shut down and what the client still sends is
  // read and dropped, up to kLingerBytes or kLingerSeconds, before the socket is closed.
  static constexpr size_t kLingerBytes = size_t{4} << 20;
  static constexpr double kLingerSeconds = 2;
  void LingeringClose() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (ec) {
      Close();
      return;
    }
    linger_left_ = kLingerBytes;
    if (!linger_buffer_) linger_buffer_ = std::make_unique<char[]>(kLingerChunk);
    stream_.expires_after(Millis(kLingerSeconds));
    DrainUntilClosed();
  }
  void DrainUntilClosed() {
    stream_.async_read_some(asio::buffer(linger_buffer_.get(), kLingerChunk),
                            [self = shared_from_this()](beast::error_code ec, size_t n) {
                              if (ec || n >= self->linger_left_ || self->closed_) {
                                self->Close();
                                return;
                              }
                              self->linger_left_ -= n;
                              self->DrainUntilClosed();
                            });
  }

  // Ends the request's in-flight count (once).
  void Release() {
    if (!counted_) return;
    counted_ = false;
    server_->EndRequest();
  }

  void Close() {
    if (chunked_) chunked_->MarkGone();
    if (!closed_) {
      closed_ = true;
      beast::error_code ec;
      stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
      stream_.close();
    }
    // A running handler keeps the count until it returns (see Dispatch).
    if (!handler_running_) Release();
  }

 public:
  ~Session() {
    Release();
    std::lock_guard lock(server_->mu);
    server_->sessions.erase(this);
  }

 private:
  beast::tcp_stream stream_;
  asio::steady_timer body_timer_{stream_.get_executor()};
  uint64_t read_generation_ = 0;
  bool reading_body_ = false;
  bool body_timed_out_ = false;
  HttpServer::State* server_;
  std::string remote_;
  static constexpr uint64_t kMaxReadCapacity = uint64_t{64} * 1024;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::empty_body>> header_parser_;
  std::optional<http::request_parser<http::string_body>> body_parser_;
  HttpRequest request_;
  std::function<HttpResponse(HttpRequest&)> handler_;
  std::function<void(int, double)> on_done_;
  double started_ = 0;
  bool keep_alive_ = true;
  bool busy_ = false;
  // The response was decided before the request's body was read to its end.
  bool body_unread_ = false;
  static constexpr size_t kLingerChunk = size_t{16} * 1024;
  std::unique_ptr<char[]> linger_buffer_;
  size_t linger_left_ = 0;
  bool closed_ = false;
  // The request holds an in-flight count from its admission until its response is written or
  // its connection is gone with no handler running.
  bool counted_ = false;
  bool handler_running_ = false;
  std::shared_ptr<void> hold_;
  std::shared_ptr<const std::string> stream_data_;
  size_t stream_chunk_ = 0;
  size_t stream_offset_ = 0;
  std::optional<http::response<http::buffer_body>> stream_response_;
  std::optional<http::response_serializer<http::buffer_body>> stream_serializer_;
  // A chunked response: the writer as the handler's thread knows it (handler_writer_, until the
  // handler returns) and as the strand knows it (chunked_, until the response ends).
  std::shared_ptr<SessionChunkWriter> handler_writer_;
  int handler_writer_status_ = 200;
  std::shared_ptr<SessionChunkWriter> chunked_;
  std::optional<http::response<http::empty_body>> chunked_head_;
  std::optional<http::response_serializer<http::empty_body>> chunked_serializer_;
  bool chunked_header_sent_ = false;
  bool chunk_writing_ = false;
  bool http10_ = false;  // the request is HTTP/1.0: a streamed body is close-delimited
  std::string chunk_;
};

// Lets the process hold many connections: the soft descriptor limit up to the hard one.
void RaiseDescriptorLimit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
}

}  // namespace

void HttpServer::State::Accept() {
  acceptor.async_accept(asio::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
    if (!ec) {
      auto session = std::make_shared<Session>(std::move(socket), this);
      bool start = false;
      {
        std::lock_guard lock(mu);
        if (!stopped) {
          sessions.emplace(session.get(), session);
          start = true;
        }
      }
      if (start) session->Start();
    } else if (ec == asio::error::no_descriptors) {
      spdlog::warn("accept: out of file descriptors");
    }
    Accept();
  });
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options,
                                                      Admitter admitter) {
  RaiseDescriptorLimit();
  auto state = std::make_shared<State>();
  state->options = std::move(options);
  state->admitter = std::move(admitter);
  const HttpServerOptions& o = state->options;
  beast::error_code ec;
  const asio::ip::address address = asio::ip::make_address(o.host, ec);
  if (ec)
    return Status::InvalidArgument(fmt::format("invalid host '{}': {}", o.host, ec.message()));
  const tcp::endpoint endpoint(address, o.port);
  const std::string where = fmt::format("{}:{}", o.host, o.port);
  if (state->acceptor.open(endpoint.protocol(), ec); ec) {
    return Status::IOError(fmt::format("cannot listen on {}: {}", where, ec.message()));
  }
  if (state->acceptor.set_option(asio::socket_base::reuse_address(true), ec); ec) {
    return Status::IOError(fmt::format("cannot listen on {}: {}", where, ec.message()));
  }
  if (state->acceptor.bind(endpoint, ec); ec) {
    return Status::IOError(fmt::format("cannot listen on {}: {}", where, ec.message()));
  }
  if (state->acceptor.listen(asio::socket_base::max_listen_connections, ec); ec) {
    return Status::IOError(fmt::format("cannot listen on {}: {}", where, ec.message()));
  }
  state->port = state->acceptor.local_endpoint().port();
  state->pool = std::make_unique<asio::thread_pool>(std::max(1, o.worker_threads));
  state->Accept();
  for (int i = 0; i < std::max(1, o.io_threads); ++i) {
    state->io_threads.emplace_back([s = state.get()] {
      // An exception escaping a completion handler is logged; the thread keeps serving.
      while (true) {
        try {
          s->ioc.run();
          return;
        } catch (const std::exception& e) {
          spdlog::error("I/O thread: {}", e.what());
        }
      }
    });
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(state)));
}

HttpServer::HttpServer(std::shared_ptr<State> state) : state_(std::move(state)) {}

HttpServer::~HttpServer() { Stop(); }

uint16_t HttpServer::port() const { return state_->port; }

void HttpServer::BeginDrain() {
  if (state_->draining.exchange(true)) return;
  // Connections between requests will not get another one: close them now.
  std::vector<std::shared_ptr<Session>> open;
  {
    std::lock_guard lock(state_->mu);
    for (auto& [ptr, weak] : state_->sessions) {
      if (auto s = weak.lock()) open.push_back(std::move(s));
    }
  }
  for (auto& s : open) s->CloseIfIdle();
}

bool HttpServer::draining() const { return state_->draining.load(); }

void HttpServer::WaitForInFlight() {
  std::unique_lock lock(state_->mu);
  state_->idle.wait(lock, [&] { return state_->in_flight == 0; });
}

void HttpServer::Stop() {
  std::vector<std::shared_ptr<Session>> open;
  {
    std::lock_guard lock(state_->mu);
    if (state_->stopped) return;
    state_->stopped = true;
    for (auto& [ptr, weak] : state_->sessions) {
      if (auto s = weak.lock()) open.push_back(std::move(s));
    }
  }
  asio::post(state_->ioc, [s = state_.get()] {
    beast::error_code ec;
    s->acceptor.close(ec);
  });
  for (auto& s : open) s->CloseNow();
  open.clear();
  // Handlers still running finish (their sessions are closed, so nothing is written).
  state_->pool->join();
  state_->ioc.stop();
  for (std::thread& t : state_->io_threads) t.join();
  state_->io_threads.clear();
}

Result<std::string> UrlDecode(std::string_view text, bool plus_is_space) {
  std::string out;
  out.reserve(text.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size()) {
        return Status::InvalidArgument(fmt::format("malformed percent escape in '{}'", text));
      }
      const int hi = hex(text[i + 1]);
      const int lo = hex(text[i + 2]);
      if (hi < 0 || lo < 0) {
        return Status::InvalidArgument(fmt::format("malformed percent escape in '{}'", text));
      }
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (c == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(c);
    }
  }
  return out;
}

Result<std::vector<QueryParam>> ParseQuery(std::string_view query) {
  std::vector<QueryParam> params;
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view part = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (part.empty()) continue;
    const size_t eq = part.find('=');
    QueryParam p;
    STRATA_ASSIGN_OR_RETURN(p.name, UrlDecode(part.substr(0, eq), true));
    if (eq == std::string_view::npos) {
      p.has_value = false;
    } else {
      STRATA_ASSIGN_OR_RETURN(p.value, UrlDecode(part.substr(eq + 1), true));
    }
    params.push_back(std::move(p));
  }
  return params;
}

}  // namespace strata::server
