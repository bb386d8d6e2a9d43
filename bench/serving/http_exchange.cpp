#include "serving/http_exchange.h"

#include <boost/asio/connect.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/write.hpp>
#include <limits>

namespace moe::bench {

namespace beast = boost::beast;
namespace http = beast::http;

namespace {

// How much of a failed response's body is kept for its message.
constexpr size_t kErrorBodyBytes = 4096;

}  // namespace

HttpExchange::HttpExchange(HttpClient& client, uint64_t id, const BenchRequest& request)
    : client_(client), id_(id), socket_(client.io), reader_(client.api) {
  request_.method(http::verb::post);
  request_.target(client.url.base_path + api_path(client.api));
  request_.set(http::field::host, client.url.host + ":" + client.url.port);
  request_.set(http::field::content_type, "application/json");
  request_.set(http::field::accept, "text/event-stream");
  request_.keep_alive(true);
  request_.body() = request_body(client.api, request);
  request_.prepare_payload();
}

void HttpExchange::start() {
  if (client_.idle.empty()) {
    connect();
    return;
  }
  socket_ = std::move(client_.idle.back());
  client_.idle.pop_back();
  reused_connection_ = true;
  write();
}

void HttpExchange::cancel() {
  if (done_) return;  // finished: its connection may be back in the pool
  done_ = true;
  boost::system::error_code ignored;  // closing is all that matters, and it cannot fail usefully
  socket_.close(ignored);
}

void HttpExchange::connect() {
  boost::asio::async_connect(socket_, client_.server, [self = shared_from_this()](error_code ec, const auto&) {
    if (self->done_) return;
    if (ec) {
      const HttpUrl& url = self->client_.url;
      self->finish(Clock::now(), "connect to " + url.host + ":" + url.port + ": " + ec.message());
      return;
    }
    // Requests go out at once, as the server's events do; where it cannot be set they only go out later.
    error_code ignored;
    self->socket_.set_option(boost::asio::ip::tcp::no_delay(true), ignored);
    self->write();
  });
}

void HttpExchange::write() {
  http::async_write(socket_, request_, [self = shared_from_this()](error_code ec, size_t) { self->on_written(ec); });
}

void HttpExchange::on_written(error_code ec) {
  if (done_) return;
  if (ec) {
    retry_or_fail(ec, "send");
    return;
  }
  parser_.emplace();
  // A stream is as long as the generation. (Not boost::none: Boost 1.74 then fails every Content-Length.)
  parser_->body_limit(std::numeric_limits<std::uint64_t>::max());
  http::async_read_header(socket_, buffer_, *parser_,
                          [self = shared_from_this()](error_code ec, size_t) { self->on_header(ec); });
}

void HttpExchange::on_header(error_code ec) {
  if (done_) return;
  if (ec) {
    retry_or_fail(ec, "read the response");
    return;
  }
  status_ok_ = parser_->get().result() == http::status::ok;
  read_body();
}

void HttpExchange::read_body() {
  if (parser_->is_done()) {
    on_response_end(Clock::now());
    return;
  }
  parser_->get().body().data = chunk_;
  parser_->get().body().size = sizeof(chunk_);
  http::async_read_some(socket_, buffer_, *parser_,
                        [self = shared_from_this()](error_code ec, size_t) { self->on_body(ec); });
}

void HttpExchange::on_body(error_code ec) {
  const Clock::time_point at = Clock::now();  // the arrival of every event this read completes
  if (done_) return;
  if (ec == http::error::need_buffer) ec = {};  // chunk_ is full: the stream goes on
  if (ec) {
    finish(at, "read the stream: " + ec.message());
    return;
  }
  take_body_bytes(sizeof(chunk_) - parser_->get().body().size, at);
  read_body();
}

void HttpExchange::take_body_bytes(size_t count, Clock::time_point at) {
  if (!status_ok_) {
    const size_t room = kErrorBodyBytes - std::min(kErrorBodyBytes, error_body_.size());
    error_body_.append(chunk_, std::min(count, room));
    return;
  }
  for (const std::string& data : sse_.feed(std::string_view(chunk_, count))) {
    const StreamUpdate update = reader_.read(data);
    if (update.new_tokens > 0) client_.events.push_back({id_, at, update.new_tokens, false, {}});
    if (!update.error.empty() && stream_error_.empty()) stream_error_ = update.error;
  }
}

void HttpExchange::on_response_end(Clock::time_point at) {
  if (parser_->keep_alive()) client_.idle.push_back(std::move(socket_));
  if (!status_ok_) {
    finish(at, http_error_message(parser_->get().result_int(), error_body_));
  } else if (stream_error_.empty() && !reader_.done()) {
    finish(at, "the stream ended without data: [DONE]");
  } else {
    finish(at, stream_error_);
  }
}

void HttpExchange::retry_or_fail(error_code ec, const std::string& what) {
  if (!reused_connection_) {
    finish(Clock::now(), what + ": " + ec.message());
    return;
  }
  reused_connection_ = false;
  socket_ = boost::asio::ip::tcp::socket(client_.io);
  buffer_.clear();
  connect();
}

void HttpExchange::finish(Clock::time_point at, std::string error) {
  done_ = true;
  client_.events.push_back({id_, at, 0, true, std::move(error)});
}

}  // namespace moe::bench
