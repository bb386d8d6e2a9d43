#include "http/http_server.h"

#include "common/prelude.h"

#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "common/error.h"
#include "http/http_session.h"

namespace moe::http {

namespace asio = boost::asio;
using boost::system::error_code;

// The acceptor and the shared state, kept alive by the pending accept.
struct HttpServer::State : std::enable_shared_from_this<HttpServer::State> {
  State(asio::io_context& io, EngineFrontend& engine, HttpServerConfig config)
      : acceptor(io), shared(std::make_shared<ServerShared>(io, engine, std::move(config))) {}

  void accept() {
    acceptor.async_accept([self = shared_from_this()](error_code error, asio::ip::tcp::socket socket) {
      if (!self->acceptor.is_open()) return;  // stopped
      if (!error) std::make_shared<HttpSession>(std::move(socket), self->shared)->start();
      self->accept();  // a failed accept (too many open files...) must not stop the server
    });
  }

  asio::ip::tcp::acceptor acceptor;
  uint16_t port = 0;  // kept: the closed acceptor of a stopped server has no endpoint
  std::shared_ptr<ServerShared> shared;
};

HttpServer::HttpServer(asio::io_context& io, EngineFrontend& engine, HttpServerConfig config)
    : state_(std::make_shared<State>(io, engine, std::move(config))) {
  const HttpServerConfig& c = state_->shared->config;
  try {
    const asio::ip::tcp::endpoint endpoint(asio::ip::make_address(c.host), c.port);
    state_->acceptor.open(endpoint.protocol());
    state_->acceptor.set_option(asio::socket_base::reuse_address(true));
    state_->acceptor.bind(endpoint);
    state_->acceptor.listen(asio::socket_base::max_listen_connections);
    state_->port = state_->acceptor.local_endpoint().port();
  } catch (const boost::system::system_error& e) {
    throw Error("HTTP server cannot listen on " + c.host + ":" + std::to_string(c.port) + ": " + e.what());
  }
  state_->accept();
}

HttpServer::~HttpServer() { stop(); }

uint16_t HttpServer::port() const { return state_->port; }

void HttpServer::stop() {
  error_code ignored;
  state_->acceptor.close(ignored);
  // close() removes the session from the map, so walk a copy.
  std::vector<std::weak_ptr<HttpSession>> sessions;
  for (const auto& [raw, weak] : state_->shared->sessions) sessions.push_back(weak);
  for (const auto& weak : sessions) {
    if (const auto session = weak.lock()) session->close();
  }
}

}  // namespace moe::http
