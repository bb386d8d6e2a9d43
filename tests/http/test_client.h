#pragma once
// Test only: a blocking HTTP/1.1 client over a real socket, every wait bounded by a timeout so
// that a server that never answers fails the test instead of hanging it.
#include "common/prelude.h"

#include <chrono>
#include <map>
#include <string>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>

namespace moe::http::test {

// A response as received.
struct TestResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // lowercase names
  std::string body;                              // de-chunked
};

// One connection to the server under test.
class TestClient {
 public:
  explicit TestClient(uint16_t port, std::chrono::milliseconds timeout = std::chrono::seconds(5));

  void send_raw(const std::string& bytes);
  // Sends a request with Host and Content-Length; `headers` are extra lines "Name: value\r\n".
  void send(const std::string& method, const std::string& target, const std::string& body = {},
            const std::string& headers = {});
  // Reads one whole response (chunked bodies are joined).
  TestResponse read_response();
  // send() then read_response().
  TestResponse request(const std::string& method, const std::string& target, const std::string& body = {});
  // Raw bytes until `needle` has arrived (all of them, from the last call on); throws on timeout or close.
  std::string read_until(const std::string& needle);
  // Whether the server closes the connection within `limit` (any bytes before the close are dropped).
  bool closed_by_server(std::chrono::milliseconds limit);
  void close();

 private:
  // Runs the client loop until `done` or the timeout; throws on timeout.
  void run_until(const bool& done, std::chrono::milliseconds limit);

  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
  std::chrono::milliseconds timeout_;
};

}  // namespace moe::http::test
