#include "transport/zmq_context.h"

#include <zmq.hpp>

#include "common/error.h"
#include "transport/zap_handler.h"

namespace moe::transport {

Context::Context(int io_threads) : context_(std::make_unique<zmq::context_t>(io_threads)) {}

// Terminating the context waits for its sockets to close (each closes with linger 0, see
// SocketOptions); the authentication handler's socket closes once shutdown() ends its wait.
Context::~Context() {
  if (zap_handler_) {
    context_->shutdown();
    zap_handler_.reset();
  }
}

void Context::authenticate_internal_peers(InternalKey key) {
  if (!zmq_has("curve")) throw Error("this libzmq is built without CURVE: internal sockets cannot authenticate peers");
  if (zap_handler_) throw Error("internal peers are authenticated already");
  zap_handler_ = std::make_unique<ZapHandler>(*context_, key.public_key_bytes());
  internal_key_ = std::move(key);
}

void Context::watch_refusals(const std::string& monitor_address, const std::string& endpoint) {
  if (zap_handler_) zap_handler_->watch_refusals(monitor_address, endpoint);
}

}  // namespace moe::transport
