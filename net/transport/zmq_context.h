#pragma once
// The ZeroMQ context of a process. inproc:// connects only sockets of one context, so the actors of
// one process share a single Context; it must outlive every socket made from it.
#include <memory>
#include <optional>
#include <string>

#include "transport/internal_key.h"

namespace zmq {
class context_t;
}

namespace moe::transport {

class ZapHandler;

class Context {
 public:
  explicit Context(int io_threads = 1);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  zmq::context_t& native() { return *context_; }

  // From now on the internal sockets (Inbox, StageInbox, Outbox) made from this context for
  // endpoints between processes (tcp://, ipc://) speak CURVE with `key`, and those bound accept a
  // connection only from a peer holding it. Call before making them.
  void authenticate_internal_peers(InternalKey key);
  // The key of authenticate_internal_peers(); null when internal sockets trust their peers.
  const InternalKey* internal_key() const { return internal_key_ ? &*internal_key_ : nullptr; }
  // Logs the handshakes the authenticating socket bound at `endpoint` refuses, which its monitor
  // publishes at `monitor_address`.
  void watch_refusals(const std::string& monitor_address, const std::string& endpoint);

 private:
  std::unique_ptr<zmq::context_t> context_;
  std::optional<InternalKey> internal_key_;
  std::unique_ptr<ZapHandler> zap_handler_;
};

}  // namespace moe::transport
