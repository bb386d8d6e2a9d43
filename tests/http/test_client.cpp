#include "test_client.h"

#include <algorithm>
#include <stdexcept>

#include <boost/asio/connect.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>

namespace moe::http::test {

namespace asio = boost::asio;
namespace beast_http = boost::beast::http;
using boost::system::error_code;

TestClient::TestClient(uint16_t port, std::chrono::milliseconds timeout) : socket_(io_), timeout_(timeout) {
  socket_.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
}

void TestClient::run_until(const bool& done, std::chrono::milliseconds limit) {
  io_.restart();
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done && std::chrono::steady_clock::now() < deadline) io_.run_one_until(deadline);
  if (done) return;
  socket_.cancel();
  io_.restart();
  io_.run();
  throw std::runtime_error("the server did not answer in time");
}

void TestClient::send_raw(const std::string& bytes) { asio::write(socket_, asio::buffer(bytes)); }

void TestClient::send(const std::string& method, const std::string& target, const std::string& body,
                      const std::string& headers) {
  send_raw(method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + headers +
           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
}

TestResponse TestClient::read_response() {
  beast_http::response_parser<beast_http::string_body> parser;
  parser.body_limit(1u << 30);
  bool done = false;
  error_code error;
  beast_http::async_read(socket_, buffer_, parser, [&](error_code e, size_t) {
    error = e;
    done = true;
  });
  run_until(done, timeout_);
  if (error) throw std::runtime_error("reading the response failed: " + error.message());
  TestResponse response;
  response.status = static_cast<int>(parser.get().result_int());
  for (const auto& field : parser.get()) {
    std::string name(field.name_string());
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    response.headers[name] = std::string(field.value());
  }
  response.body = parser.get().body();
  return response;
}

TestResponse TestClient::request(const std::string& method, const std::string& target, const std::string& body) {
  send(method, target, body);
  return read_response();
}

std::string TestClient::read_until(const std::string& needle) {
  // Asio's read_until copies a Beast buffer, so it reads into a string (after what Beast holds).
  const auto held = buffer_.data();
  std::string text(static_cast<const char*>(held.data()), held.size());
  buffer_.consume(held.size());
  bool done = text.find(needle) != std::string::npos;
  error_code error;
  if (!done) {
    asio::async_read_until(socket_, asio::dynamic_buffer(text), needle, [&](error_code e, size_t) {
      error = e;
      done = true;
    });
    run_until(done, timeout_);
  }
  if (error) throw std::runtime_error("reading failed: " + error.message());
  return text;
}

bool TestClient::closed_by_server(std::chrono::milliseconds limit) {
  bool closed = false;
  std::function<void()> read_more;
  char scratch[4096];
  read_more = [&] {
    socket_.async_read_some(asio::buffer(scratch), [&](error_code e, size_t) {
      if (e) {
        closed = true;
        return;
      }
      read_more();
    });
  };
  read_more();
  try {
    run_until(closed, limit);
  } catch (const std::runtime_error&) {
    return false;
  }
  return true;
}

void TestClient::close() {
  error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

}  // namespace moe::http::test
