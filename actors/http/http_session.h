#pragma once
// One client connection (internal to actors/http, Beast inside): reads requests one after another
// (keep-alive), hands each to the router, writes the answer whole or as a chunked SSE stream.
// While an answer is pending it keeps a read open to notice the client leaving.
#include "common/prelude.h"

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "http/http_exchange.h"
#include "http/http_server.h"
#include "http/request_router.h"

namespace moe::http {

class HttpSession;

// What every connection of one server shares; kept alive by the connections' pending operations.
struct ServerShared {
  ServerShared(boost::asio::io_context& io, EngineFrontend& engine, HttpServerConfig server_config)
      : config(std::move(server_config)),
        router(io, engine, config.keys, config.output_parsers, config.max_batch_prompts, config.ids_only) {}
  HttpServerConfig config;
  RequestRouter router;
  std::unordered_map<HttpSession*, std::weak_ptr<HttpSession>> sessions;  // open connections, for stop()
};

// One accepted connection, for as long as it is open.
class HttpSession final : public ResponseChannel, public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(boost::asio::ip::tcp::socket socket, std::shared_ptr<ServerShared> shared);

  // Registers with the server and reads the first request.
  void start();
  // Drops the connection now, aborting its request if one is running.
  void close();

  // ResponseChannel: the answer to the request being served.
  void send(HttpReply reply) override;
  void begin_stream() override;
  void write_stream(std::string data) override;
  void end_stream() override;

 private:
  // The header under the idle timeout, then the body under the request timeout.
  void read_header();
  void on_header(boost::system::error_code error);
  void read_body();
  void on_body(boost::system::error_code error);
  // A request that could not be read: 413 when too large, 400 when not HTTP, else the client left.
  void read_failed(boost::system::error_code error);
  // Hands a complete request to the router.
  void dispatch();
  // A request the server will not read further (malformed, too large): answer, then close.
  void refuse(int status, const std::string& message);

  // A read kept open while an answer is pending: an error means the client left (abort), data
  // is a pipelined request kept for later.
  void watch_client();
  void on_watch(boost::system::error_code error, size_t bytes);

  // Writes go out one at a time, in order; `last` marks the answer's final bytes.
  void enqueue(std::string bytes, bool last);
  void write_next();
  // The answer is out: read the next request (keep-alive) or close.
  void answer_written();
  // Closes after the answer, first reading (and dropping) what the client still sends, so that
  // the answer is not destroyed by a reset.
  void linger_then_close();
  // Reads and drops bytes until the connection ends.
  void drain();

  // One timer bounds whatever the connection waits for; when it fires the connection closes.
  void arm_deadline(std::chrono::milliseconds timeout);
  void disarm_deadline();

  boost::asio::ip::tcp::socket socket_;
  boost::asio::steady_timer deadline_;
  uint64_t deadline_generation_ = 0;  // a timer that fired after being re-armed is ignored
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::shared_ptr<ServerShared> shared_;
  std::shared_ptr<PendingAnswer> exchange_;

  std::deque<std::string> outbox_;
  bool writing_ = false;
  bool answering_ = false;     // a request was read and its answer is not fully written yet
  size_t body_bytes_ = 0;      // the body size of the request last read
  bool answer_queued_ = false; // the answer's last bytes are in the outbox
  bool keep_alive_ = true;
  bool chunked_ = true;        // HTTP/1.1 streams in chunks; 1.0 streams until the close
  unsigned version_ = 11;
  bool watching_ = false;
  bool closed_ = false;
};

}  // namespace moe::http
