#pragma once
// One streamed request over HTTP/1.1, driven by callbacks on the HTTP transport's io_context: it
// takes a kept-alive connection (or opens one), posts the body, reads the SSE answer as it
// arrives and reports its tokens and its end as StreamEvents. Included only by the HTTP transport.
#include <utility>  // before Asio: Boost 1.74's awaitable.hpp uses std::exchange without it

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <memory>
#include <optional>
#include <vector>

#include "serving/bench_transport.h"
#include "serving/http_api.h"
#include "serving/http_url.h"
#include "serving/sse_decoder.h"

namespace moe::bench {

// What the exchanges of one transport share: the event loop, the server, idle connections, and
// the events not yet handed to the load generator.
struct HttpClient {
  HttpClient(HttpUrl server_url, HttpApi server_api) : url(std::move(server_url)), api(server_api) {}

  boost::asio::io_context io;
  HttpUrl url;
  HttpApi api;
  boost::asio::ip::tcp::resolver::results_type server;  // resolved once, before the first request
  std::vector<boost::asio::ip::tcp::socket> idle;       // kept-alive connections free for a request
  std::vector<StreamEvent> events;
};

class HttpExchange : public std::enable_shared_from_this<HttpExchange> {
 public:
  HttpExchange(HttpClient& client, uint64_t id, const BenchRequest& request);

  // Sends the request; events follow as the client's io_context runs.
  void start();

  // Closes the connection of an unfinished request; no event comes afterwards.
  void cancel();

 private:
  using Clock = std::chrono::steady_clock;
  using error_code = boost::beast::error_code;

  // Opens a new connection to the server, then writes.
  void connect();
  // Posts the request on socket_.
  void write();
  // The request is out: reads the response's header.
  void on_written(error_code ec);
  // A 200 starts the event stream; any other status is read as an error body.
  void on_header(error_code ec);
  // Reads the next bytes of the body into chunk_, or ends the response once it is complete.
  void read_body();
  // Some body bytes arrived: their time is the arrival time of the events they complete.
  void on_body(error_code ec);
  // Takes the body bytes a read put into chunk_: SSE events on success, the error body otherwise.
  void take_body_bytes(size_t count, Clock::time_point at);
  // The response is complete: the connection goes back to the pool when the server keeps it.
  void on_response_end(Clock::time_point at);
  // A kept-alive connection the server closed meanwhile fails before any answer; one fresh
  // connection is tried then. Otherwise the request fails with `what: <ec's message>`.
  void retry_or_fail(error_code ec, const std::string& what);
  // Reports the request's end (failed when `error` is not empty); nothing happens afterwards.
  void finish(Clock::time_point at, std::string error);

  HttpClient& client_;
  uint64_t id_;
  boost::beast::http::request<boost::beast::http::string_body> request_;
  boost::asio::ip::tcp::socket socket_;
  bool reused_connection_ = false;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::response_parser<boost::beast::http::buffer_body>> parser_;
  char chunk_[16384];
  SseDecoder sse_;
  StreamEventReader reader_;
  std::string stream_error_;  // the stream's first {"error": ...} event (or unreadable event)
  std::string error_body_;    // the body of a response whose status is not 200
  bool status_ok_ = false;    // the response is 200 (an SSE stream), not an error body
  bool done_ = false;         // finished or cancelled: handlers still queued do nothing
};

}  // namespace moe::bench
