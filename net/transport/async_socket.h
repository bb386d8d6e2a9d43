#pragma once
// A ZeroMQ socket driven by a Boost.Asio io_context: the loop waits on the socket's ZMQ_FD and the
// socket drains incoming messages and flushes queued sends whenever ZMQ_EVENTS says it can. No busy
// polling, no sleeping; sends never block (a message that does not fit waits in a queue).
// Use a socket only from the thread running its io_context (or before that thread starts), and run
// that io_context on one thread: the readiness of ZMQ_FD is edge-triggered.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace boost::asio {
class io_context;
}
namespace zmq {
class message_t;
}

namespace moe::transport {

class Context;

// The ZeroMQ socket types the engine uses: PUSH/PULL for the actor pipeline, ROUTER for clients,
// DEALER for a client's side.
enum class SocketKind { Push, Pull, Router, Dealer };

// One message of one or more frames, sent and received atomically.
using Multipart = std::vector<std::string>;

// Socket settings; the defaults suit the actor pipeline.
struct SocketOptions {
  int send_high_water_mark = 1000;  // messages ZeroMQ queues per peer before sends wait in our queue
  int receive_high_water_mark = 1000;
  // Undelivered messages are dropped at close, so shutting down never hangs on a dead peer.
  int linger_ms = 0;
  // A peer sending a bigger message is disconnected (protects a public ROUTER); -1 = no limit.
  int64_t max_message_bytes = -1;
  // A socket of the actor pipeline (Inbox, StageInbox, Outbox): to another process (tcp://, ipc://)
  // it speaks CURVE with the Context's internal key when the Context has one, and when bound it
  // accepts only peers that hold that key, logging the others (see Context::authenticate_internal_peers).
  bool internal = false;
};

// One received frame left in ZeroMQ's own buffer: nothing is copied, and the bytes are writable (a
// pipeline stage computes in place in the activations it received).
class ReceivedFrame {
 public:
  explicit ReceivedFrame(zmq::message_t&& frame);
  ~ReceivedFrame();
  ReceivedFrame(ReceivedFrame&&) noexcept;
  ReceivedFrame& operator=(ReceivedFrame&&) noexcept;
  char* data();
  size_t size() const;

 private:
  std::unique_ptr<zmq::message_t> frame_;
};

class AsyncSocket {
 public:
  using ReceiveHandler = std::function<void(Multipart&&)>;
  using FramesHandler = std::function<void(std::vector<ReceivedFrame>&&)>;
  // For ROUTER: a message whose peer (first frame) is no longer connected; it was not sent.
  using UnreachableHandler = std::function<void(Multipart&&)>;
  // For ROUTER: the identity of a peer whose connection closed (tcp:// and ipc:// peers).
  using DisconnectHandler = std::function<void(const std::string& identity)>;

  AsyncSocket(boost::asio::io_context& io, Context& context, SocketKind kind, const SocketOptions& options = {});
  ~AsyncSocket();
  AsyncSocket(const AsyncSocket&) = delete;
  AsyncSocket& operator=(const AsyncSocket&) = delete;

  // Binds and returns the endpoint actually bound (the port chosen for tcp://host:0 or :*).
  // Throws moe::Error naming the endpoint when binding fails.
  std::string bind(const std::string& endpoint);
  // Connects (ZeroMQ reconnects by itself; the peer need not be bound yet). Throws moe::Error.
  void connect(const std::string& endpoint);

  // Handles every message received from now on. An exception it throws is logged, not propagated.
  // Do not replace the handler from inside itself.
  void on_receive(ReceiveHandler handler);
  // As on_receive, with the frames left in ZeroMQ's buffers (for large payloads); replaces it.
  void on_receive_frames(FramesHandler handler);
  void on_unreachable(UnreachableHandler handler);
  // ROUTER only: reports each peer whose connection closes from now on, at once (a socket monitor
  // watches the connections), after any message it sent before closing.
  void on_disconnect(DisconnectHandler handler);

  // Queues `message`; it leaves as soon as ZeroMQ takes it, in order (per peer for ROUTER).
  void send(Multipart message);
  // Messages waiting in this socket's own queue (beyond ZeroMQ's high-water mark).
  size_t queued_messages() const;

  // Stops all activity and closes the ZeroMQ socket; queued messages are dropped.
  void close();

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace moe::transport
