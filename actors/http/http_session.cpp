#include "http/http_session.h"

#include <sstream>

#include <boost/asio/write.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>

#include "http/http_replies.h"
#include "http/memory_release.h"

namespace moe::http {
namespace {

namespace asio = boost::asio;
namespace beast_http = boost::beast::http;
using boost::system::error_code;

// What a client that announced `Expect: 100-continue` waits for before sending its body.
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
// While an answer is pending, bytes of a next (pipelined) request are kept up to this much.
constexpr size_t kMaxPipelinedBytes = 64 * 1024;
// The most unparsed bytes a connection may hold. Beast bounds the header (8 KiB) and the body, but
// not a chunked body's trailer fields, which it keeps until their end arrives: past this bound the
// read fails with buffer_overflow, answered 400 (without it, the trailer grew until the request timeout).
constexpr size_t kMaxBufferedBytes = 2 * kMaxPipelinedBytes;

// Errors that mean the bytes received are not HTTP (answered 400), as opposed to a connection
// that ended or timed out (closed without an answer).
bool is_malformed(const error_code& error) {
  return error.category() == beast_http::make_error_code(beast_http::error::bad_method).category() &&
         error != beast_http::error::end_of_stream && error != beast_http::error::partial_message;
}

// A message's header (with Beast's framing fields) as the bytes that go on the wire.
template <class Header>
std::string wire_text(const Header& header) {
  std::ostringstream out;
  out << header;
  return std::move(out).str();
}

// One chunk of a chunked body.
std::string chunk(const std::string& data) {
  std::ostringstream out;
  out << std::hex << data.size() << "\r\n" << data << "\r\n";
  return std::move(out).str();
}

}  // namespace

HttpSession::HttpSession(asio::ip::tcp::socket socket, std::shared_ptr<ServerShared> shared)
    : socket_(std::move(socket)),
      deadline_(socket_.get_executor()),
      buffer_(kMaxBufferedBytes),
      shared_(std::move(shared)) {}

void HttpSession::start() {
  shared_->sessions.emplace(this, weak_from_this());
  error_code ignored;
  socket_.set_option(asio::ip::tcp::no_delay(true), ignored);  // streamed tokens go out at once
  read_header();
}

void HttpSession::close() {
  if (closed_) return;
  closed_ = true;
  if (exchange_) exchange_->cancel();
  exchange_.reset();
  disarm_deadline();
  error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  shared_->sessions.erase(this);
}

void HttpSession::read_header() {
  if (closed_) return;
  parser_.emplace();
  parser_->body_limit(shared_->config.max_body_bytes);
  arm_deadline(shared_->config.idle_timeout);
  beast_http::async_read_header(socket_, buffer_, *parser_,
                                [self = shared_from_this()](error_code error, size_t) { self->on_header(error); });
}

void HttpSession::on_header(error_code error) {
  if (closed_) return;
  if (error) return read_failed(error);
  const auto& request = parser_->get();
  version_ = request.version();
  keep_alive_ = request.keep_alive();
  if (!boost::beast::iequals(request[beast_http::field::expect], "100-continue")) return read_body();
  asio::async_write(socket_, asio::buffer(kContinue), [self = shared_from_this()](error_code write_error, size_t) {
    if (write_error) return self->close();
    self->read_body();
  });
}

void HttpSession::read_body() {
  if (closed_) return;
  arm_deadline(shared_->config.request_timeout);
  beast_http::async_read(socket_, buffer_, *parser_,
                         [self = shared_from_this()](error_code error, size_t) { self->on_body(error); });
}

void HttpSession::on_body(error_code error) {
  if (closed_) return;
  if (error) return read_failed(error);
  dispatch();
}

void HttpSession::read_failed(error_code error) {
  // Beast reports a declared Content-Length over the limit with the header, a chunked body when it grows past it.
  if (error == beast_http::error::body_limit) {
    return refuse(413, "the request body is over the limit of " + std::to_string(shared_->config.max_body_bytes) +
                           " bytes");
  }
  if (is_malformed(error)) return refuse(400, "malformed HTTP request: " + error.message());
  close();  // the client left, or was too slow
}

void HttpSession::dispatch() {
  disarm_deadline();
  auto& message = parser_->get();
  HttpRequest request{std::string(message.method_string()), std::string(message.target()),
                      std::move(message.body()), std::string(message[beast_http::field::authorization])};
  body_bytes_ = request.body.size();
  parser_.reset();
  answering_ = true;
  answer_queued_ = false;
  std::shared_ptr<PendingAnswer> exchange = shared_->router.route(std::move(request), shared_from_this());
  if (answer_queued_ || closed_) return;
  exchange_ = std::move(exchange);
  watch_client();
}

void HttpSession::refuse(int status, const std::string& message) {
  keep_alive_ = false;
  answering_ = true;
  answer_queued_ = false;
  send(error_reply(api::ApiError(status, message)));
}

void HttpSession::watch_client() {
  if (watching_ || closed_ || buffer_.size() >= kMaxPipelinedBytes) return;
  watching_ = true;
  socket_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](error_code error, size_t bytes) {
    self->on_watch(error, bytes);
  });
}

void HttpSession::on_watch(error_code error, size_t bytes) {
  watching_ = false;
  if (closed_) return;
  if (!error) buffer_.commit(bytes);
  if (answering_) {
    // Data is a pipelined request, kept for later; an error means the client left.
    if (error) return close();
    return watch_client();
  }
  // The answer is written: the watch was cancelled (or raced it); read the next request.
  if (error && error != asio::error::operation_aborted) return close();
  read_header();
}

void HttpSession::send(HttpReply reply) {
  beast_http::response<beast_http::string_body> response{static_cast<beast_http::status>(reply.status), version_};
  response.set(beast_http::field::server, "moe-engine");
  response.set(beast_http::field::content_type, reply.content_type);
  for (const auto& [name, value] : reply.headers) response.set(name, value);
  response.keep_alive(keep_alive_);
  response.body() = std::move(reply.body);
  response.prepare_payload();
  std::string bytes = wire_text(response.base());
  bytes += response.body();
  enqueue(std::move(bytes), true);
}

void HttpSession::begin_stream() {
  beast_http::response<beast_http::empty_body> response{beast_http::status::ok, version_};
  response.set(beast_http::field::server, "moe-engine");
  response.set(beast_http::field::content_type, "text/event-stream");
  response.set(beast_http::field::cache_control, "no-cache");
  chunked_ = version_ >= 11;
  if (!chunked_) keep_alive_ = false;  // HTTP/1.0: the end of the stream is the end of the connection
  response.keep_alive(keep_alive_);
  response.chunked(chunked_);
  enqueue(wire_text(response.base()), false);
}

void HttpSession::write_stream(std::string data) {
  if (data.empty()) return;  // an empty chunk would end the body
  enqueue(chunked_ ? chunk(data) : std::move(data), false);
}

void HttpSession::end_stream() { enqueue(chunked_ ? "0\r\n\r\n" : "", true); }

void HttpSession::enqueue(std::string bytes, bool last) {
  if (closed_) return;
  if (!bytes.empty()) outbox_.push_back(std::move(bytes));
  answer_queued_ = answer_queued_ || last;
  if (!writing_) write_next();
}

void HttpSession::write_next() {
  if (outbox_.empty()) {
    if (answer_queued_ && answering_) answer_written();
    return;
  }
  writing_ = true;
  arm_deadline(shared_->config.write_timeout);
  asio::async_write(socket_, asio::buffer(outbox_.front()), [self = shared_from_this()](error_code error, size_t) {
    self->writing_ = false;
    if (self->closed_) return;
    if (error) return self->close();  // the client left or stopped reading: abort its request
    self->outbox_.pop_front();
    self->disarm_deadline();
    self->write_next();
  });
}

void HttpSession::answer_written() {
  answering_ = false;
  exchange_.reset();
  release_memory_after_request(body_bytes_);  // the request, its parse and its exchange are freed by now
  if (!keep_alive_) return linger_then_close();
  if (watching_) {
    socket_.cancel();  // on_watch then reads the next request
    return;
  }
  read_header();
}

void HttpSession::linger_then_close() {
  error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  arm_deadline(shared_->config.close_linger);
  drain();
}

void HttpSession::drain() {
  buffer_.clear();
  socket_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](error_code error, size_t) {
    if (error) return self->close();  // the client closed its side (or the linger ended)
    self->drain();
  });
}

void HttpSession::arm_deadline(std::chrono::milliseconds timeout) {
  const uint64_t generation = ++deadline_generation_;
  deadline_.expires_after(timeout);
  deadline_.async_wait([self = shared_from_this(), generation](error_code error) {
    if (!error && generation == self->deadline_generation_) self->close();
  });
}

void HttpSession::disarm_deadline() {
  ++deadline_generation_;
  deadline_.cancel();
}

}  // namespace moe::http
