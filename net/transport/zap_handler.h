#pragma once
// ZeroMQ's authentication handler (ZAP, RFC 27) for one Context: libzmq asks it, for every CURVE
// handshake a bound socket of that context completes, whether to accept the peer's public key. It
// accepts only the deployment's own key (internal_key.h) and logs every other, naming the peer's
// address. It also logs the handshakes the bound sockets refuse before any key is shown (a peer
// without CURVE, or with another server key), which their monitors report. It answers on a thread
// of its own, so a busy actor never delays a handshake.
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace zmq {
class context_t;
class socket_t;
}  // namespace zmq

namespace moe::transport {

class RefusalLog;

class ZapHandler {
 public:
  // Binds ZeroMQ's handler address in `context` and starts answering; `allowed_key` is the one
  // public key (32 raw bytes) accepted.
  ZapHandler(zmq::context_t& context, std::string allowed_key);
  // Joins the thread: call it after the context was shut down (zmq_ctx_shutdown), which ends it.
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  // Logs the refused handshakes that the monitor of the socket bound at `endpoint` publishes at
  // `monitor_address` (zmq_socket_monitor). Callable from any thread.
  void watch_refusals(const std::string& monitor_address, const std::string& endpoint);

 private:
  struct Watched;
  void run();
  // Answers one ZAP request waiting on socket_.
  void answer(RefusalLog& refusals);

  zmq::context_t& context_;
  std::unique_ptr<zmq::socket_t> socket_;
  std::string allowed_key_;
  std::mutex mutex_;
  std::vector<std::pair<std::string, std::string>> to_watch_;  // (monitor address, endpoint), for the thread
  std::thread thread_;
};

}  // namespace moe::transport
