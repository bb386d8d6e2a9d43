#include "common/prelude.h"

#include "transport/async_socket.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <map>
#include <optional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <spdlog/spdlog.h>
#include <zmq.hpp>

#include "common/error.h"
#include "transport/peer_connections.h"
#include "transport/internal_socket_auth.h"
#include "transport/zmq_context.h"

namespace moe::transport {
namespace {

// Messages received per pass, and passes per turn before yielding to the loop's other handlers, so
// one busy socket cannot starve the rest of its actor.
constexpr int kReceiveBatch = 256;
constexpr int kPassesPerTurn = 4;

// ZeroMQ's constant for a socket kind.
int zmq_type(SocketKind kind) {
  switch (kind) {
    case SocketKind::Push: return ZMQ_PUSH;
    case SocketKind::Pull: return ZMQ_PULL;
    case SocketKind::Router: return ZMQ_ROUTER;
    case SocketKind::Dealer: return ZMQ_DEALER;
  }
  throw Error("unknown socket kind");
}

// What one non-blocking send attempt did: WouldBlock = the peer's queue is full, try again later.
enum class SendOutcome { Sent, WouldBlock, Unreachable };

}  // namespace

// Held by shared_ptr: handlers queued on the io_context hold weak references, so destroying the
// AsyncSocket never leaves a handler pointing at freed memory.
struct AsyncSocket::Impl : std::enable_shared_from_this<Impl> {
  Impl(boost::asio::io_context& io, Context& context, SocketKind kind, const SocketOptions& options)
      : io(io), context(context), socket(context.native(), zmq_type(kind)), readiness(io), kind(kind),
        internal(options.internal) {
    socket.set(zmq::sockopt::sndhwm, options.send_high_water_mark);
    socket.set(zmq::sockopt::rcvhwm, options.receive_high_water_mark);
    socket.set(zmq::sockopt::linger, options.linger_ms);
    socket.set(zmq::sockopt::maxmsgsize, options.max_message_bytes);
    // A reply to a vanished client must fail visibly (EHOSTUNREACH) instead of vanishing too.
    if (kind == SocketKind::Router) socket.set(zmq::sockopt::router_mandatory, true);
    readiness.assign(socket.get(zmq::sockopt::fd));
  }

  ~Impl() { close(); }

  boost::asio::io_context& io;
  Context& context;
  zmq::socket_t socket;
  // Watches ZMQ_FD, which becomes readable whenever ZMQ_EVENTS may have changed.
  boost::asio::posix::stream_descriptor readiness;
  SocketKind kind;
  bool internal;
  bool refusals_monitored = false;  // an authenticating bound socket: the ZapHandler logs its refusals
  ReceiveHandler receive_handler;
  FramesHandler frames_handler;
  UnreachableHandler unreachable_handler;
  // on_disconnect's: the monitor socket reporting this ROUTER's accepted and closed connections, its
  // ZMQ_FD, and which connection each peer spoke on.
  DisconnectHandler disconnect_handler;
  std::optional<zmq::socket_t> monitor;
  std::optional<boost::asio::posix::stream_descriptor> monitor_readiness;
  PeerConnections connections;
  // Sends waiting for room, keyed by peer identity for ROUTER (a slow client must not hold up the
  // others) and under "" for the other kinds.
  std::map<std::string, std::deque<Multipart>> outgoing;
  size_t queued = 0;
  bool waiting = false;      // an async_wait on `readiness` is pending
  bool pump_posted = false;  // a pump() is queued on the io_context
  bool closed = false;

  // Sends a message at once when nothing waits before it and ZeroMQ has room, else queues it behind
  // its peer's earlier ones; either way a pump follows. Sending at once matters when the caller is a
  // handler that goes on computing: a pipeline stage that has several batches waiting runs them
  // back to back within one receive pass, and a send left to the pump would wait for all of them,
  // so the next stage (or the scheduler) would sit idle. ROUTER replies always queue: their
  // undeliverable case is reported from the pump, never from inside send().
  void enqueue(Multipart message) {
    const std::string peer = kind == SocketKind::Router && !message.empty() ? message.front() : std::string();
    if (kind != SocketKind::Router && !closed && queued == 0 && send_now(message)) return;
    outgoing[peer].push_back(std::move(message));
    ++queued;
    schedule_pump();
  }

  // The immediate attempt of enqueue(); false when ZeroMQ has no room (the message then queues). The
  // send may consume ZMQ_FD's edge, so a pump is scheduled to read ZMQ_EVENTS again.
  bool send_now(const Multipart& message) {
    try {
      if (try_send(message) != SendOutcome::Sent) return false;
    } catch (const zmq::error_t& e) {
      spdlog::error("zmq socket failed ({}); closing it", e.what());
      close();
      return true;  // dropped with the socket, as the pump drops what it holds when it closes one
    }
    schedule_pump();
    return true;
  }

  // Runs pump() on the next turn of the loop (once, however often it is asked for meanwhile).
  void schedule_pump() {
    if (pump_posted || closed) return;
    pump_posted = true;
    boost::asio::post(io, [weak = weak_from_this()] {
      if (const auto self = weak.lock()) self->pump();
    });
  }

  // Moves messages until ZeroMQ can take no more either way, then waits on ZMQ_FD. ZMQ_FD is
  // edge-triggered and any send or receive may consume its edge, so ZMQ_EVENTS is read again after
  // every pass, and the loop only sleeps once a pass found nothing to do.
  void pump() {
    pump_posted = false;
    if (closed) return;
    const auto self = shared_from_this();  // a handler may destroy the AsyncSocket mid-pass
    try {
      for (int pass = 0;; ++pass) {
        if (pass == kPassesPerTurn) {
          schedule_pump();
          return;
        }
        const int events = socket.get(zmq::sockopt::events);
        bool progress = false;
        // ROUTER's POLLOUT only says some peer has room, and is off when no peer is left at all,
        // which is exactly when queued replies must be tried to learn that their peer is gone.
        if (queued > 0 && ((events & ZMQ_POLLOUT) || kind == SocketKind::Router)) progress |= flush();
        if (closed) return;
        if ((events & ZMQ_POLLIN) && (receive_handler || frames_handler)) progress |= receive_batch();
        if (closed) return;
        if (!progress) break;
      }
    } catch (const zmq::error_t& e) {
      spdlog::error("zmq socket failed ({}); closing it", e.what());
      close();
      return;
    }
    wait_for_readiness();
  }

  // Sleeps until ZMQ_FD signals; its handler pumps again.
  void wait_for_readiness() {
    if (waiting || closed) return;
    waiting = true;
    readiness.async_wait(boost::asio::posix::stream_descriptor::wait_read,
                         [weak = weak_from_this()](const boost::system::error_code& error) {
                           const auto self = weak.lock();
                           if (!self || self->closed) return;
                           self->waiting = false;
                           if (error) spdlog::warn("zmq socket: waiting on ZMQ_FD failed: {}", error.message());
                           self->pump();
                         });
  }

  // Sends what ZeroMQ takes; true when a message left (or was found undeliverable).
  bool flush() {
    bool progress = false;
    std::vector<Multipart> unreachable;
    for (auto it = outgoing.begin(); it != outgoing.end();) {
      std::deque<Multipart>& queue = it->second;
      while (!queue.empty()) {
        const SendOutcome outcome = try_send(queue.front());
        if (outcome == SendOutcome::WouldBlock) break;
        if (outcome == SendOutcome::Unreachable) unreachable.push_back(std::move(queue.front()));
        queue.pop_front();
        --queued;
        progress = true;
      }
      it = queue.empty() ? outgoing.erase(it) : std::next(it);
    }
    for (Multipart& message : unreachable) {
      if (closed) break;
      if (unreachable_handler) unreachable_handler(std::move(message));
    }
    return progress;
  }

  // One non-blocking attempt to hand a whole message to ZeroMQ.
  SendOutcome try_send(const Multipart& message) {
    for (size_t i = 0; i < message.size(); ++i) {
      const bool more = i + 1 < message.size();
      const zmq::send_flags flags = more ? zmq::send_flags::dontwait | zmq::send_flags::sndmore : zmq::send_flags::dontwait;
      try {
        // ZeroMQ accepts a message whole or not at all: only its first frame can meet a full queue.
        if (!socket.send(zmq::const_buffer(message[i].data(), message[i].size()), flags)) {
          return SendOutcome::WouldBlock;
        }
      } catch (const zmq::error_t& e) {
        if (e.num() == EHOSTUNREACH) return SendOutcome::Unreachable;
        throw;
      }
    }
    return SendOutcome::Sent;
  }

  // Receives up to a batch of messages and hands each to the handler; true when any arrived.
  bool receive_batch() {
    bool received = false;
    for (int i = 0; i < kReceiveBatch && (receive_handler || frames_handler) && !closed; ++i) {
      zmq::message_t frame;
      if (!socket.recv(frame, zmq::recv_flags::dontwait)) break;
      received = true;
      if (frames_handler) {
        deliver_frames(std::move(frame));
        continue;
      }
      Multipart message;
      int fd = -1;  // the connection it came on, which only the frames read off the wire know
      while (true) {
        message.emplace_back(static_cast<const char*>(frame.data()), frame.size());
        if (monitor) fd = std::max(fd, zmq_msg_get(frame.handle(), ZMQ_SRCFD));
        if (!frame.more()) break;
        (void)socket.recv(frame);  // the rest of a message has arrived with its first frame
      }
      // A message whose peer has gone since is still delivered: an abort it carries counts.
      const std::string gone_peer = monitor && !heard_from_peer(message.front(), fd) ? message.front() : "";
      try {
        receive_handler(std::move(message));
      } catch (const std::exception& e) {
        spdlog::error("zmq socket: a receive handler failed: {}", e.what());
      }
      if (!gone_peer.empty()) report_gone({gone_peer});
    }
    return received;
  }

  // The frames of one message, moved (not copied) out of ZeroMQ, to frames_handler.
  void deliver_frames(zmq::message_t&& first) {
    std::vector<ReceivedFrame> frames;
    bool more = first.more();
    frames.emplace_back(std::move(first));
    while (more) {
      zmq::message_t frame;
      (void)socket.recv(frame);  // the rest of a message has arrived with its first frame
      more = frame.more();
      frames.emplace_back(std::move(frame));
    }
    try {
      frames_handler(std::move(frames));
    } catch (const std::exception& e) {
      spdlog::error("zmq socket: a receive handler failed: {}", e.what());
    }
  }

  // Before the bind or connect to `endpoint`: an internal socket to another process speaks CURVE
  // with the context's key, if it has one.
  void authenticate(const std::string& endpoint, bool bound) {
    if (!internal || !use_internal_key(context, socket, endpoint, bound) || !bound) return;
    // Handshakes that fail before a key is shown (no CURVE, another server key) reach no ZAP
    // handler: the socket's monitor reports them, and the ZapHandler's thread logs them.
    static std::atomic<uint64_t> monitors{0};
    const std::string address = "inproc://moe-refusals-" + std::to_string(++monitors);
    if (zmq_socket_monitor(socket.handle(), address.c_str(),
                           ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) != 0)
      throw Error(std::string("cannot monitor an internal socket: ") + zmq_strerror(zmq_errno()));
    refusals_monitored = true;
    context.watch_refusals(address, endpoint);
  }

  // Starts the socket monitor on_disconnect needs (once).
  void watch_connections() {
    if (monitor) return;
    if (kind != SocketKind::Router || frames_handler)
      throw Error("on_disconnect: only a ROUTER socket read with on_receive reports disconnected peers");
    static std::atomic<uint64_t> monitors{0};
    const std::string address = "inproc://moe-connections-" + std::to_string(++monitors);
    if (zmq_socket_monitor(socket.handle(), address.c_str(), ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED) != 0)
      throw Error(std::string("cannot monitor a ROUTER socket: ") + zmq_strerror(zmq_errno()));
    monitor.emplace(context.native(), ZMQ_PAIR);
    monitor->set(zmq::sockopt::linger, 0);
    monitor->connect(address);
    monitor_readiness.emplace(io);
    monitor_readiness->assign(monitor->get(zmq::sockopt::fd));
    wait_for_connection_events();
  }

  // Applies every connection event the monitor holds; a message is only attributed after the
  // events queued before it (its connection's acceptance, an earlier closing of its descriptor).
  void read_connection_events() {
    std::vector<std::string> gone;
    zmq::message_t event;
    while (monitor && monitor->recv(event, zmq::recv_flags::dontwait)) {
      zmq::message_t endpoint;
      (void)monitor->recv(endpoint);  // the event's second frame arrives with its first
      if (event.size() < 6) continue;
      uint16_t id = 0;
      uint32_t fd = 0;
      std::memcpy(&id, event.data(), sizeof id);
      std::memcpy(&fd, static_cast<const char*>(event.data()) + sizeof id, sizeof fd);
      if (id == ZMQ_EVENT_ACCEPTED) connections.accepted(static_cast<int>(fd));
      if (id == ZMQ_EVENT_DISCONNECTED)
        for (std::string& peer : connections.closed(static_cast<int>(fd))) gone.push_back(std::move(peer));
    }
    report_gone(gone);
  }

  bool heard_from_peer(const std::string& identity, int fd) {
    read_connection_events();
    return connections.heard_from(identity, fd);
  }

  void report_gone(const std::vector<std::string>& peers) {
    for (const std::string& peer : peers) {
      if (closed || !disconnect_handler) return;
      try {
        disconnect_handler(peer);
      } catch (const std::exception& e) {
        spdlog::error("zmq socket: a disconnect handler failed: {}", e.what());
      }
    }
  }

  // Sleeps until the monitor has events (edge-triggered like ZMQ_FD: drained before each wait).
  void wait_for_connection_events() {
    if (closed || !monitor_readiness) return;
    monitor_readiness->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                                  [weak = weak_from_this()](const boost::system::error_code& error) {
                                    const auto self = weak.lock();
                                    if (!self || self->closed || error) return;
                                    try {
                                      self->read_connection_events();
                                    } catch (const zmq::error_t& e) {
                                      spdlog::error("zmq socket monitor failed ({}); disconnects go unnoticed", e.what());
                                      return;
                                    }
                                    self->wait_for_connection_events();
                                  });
  }

  // Idempotent; after it no handler of this socket runs again.
  void close() {
    if (closed) return;
    closed = true;
    if (refusals_monitored) zmq_socket_monitor(socket.handle(), nullptr, 0);
    boost::system::error_code ignored;
    readiness.cancel(ignored);
    readiness.release();  // the descriptor belongs to ZeroMQ: never close it ourselves
    if (monitor_readiness) {
      monitor_readiness->cancel(ignored);
      monitor_readiness->release();
      zmq_socket_monitor(socket.handle(), nullptr, 0);
      monitor->close();
    }
    socket.close();
  }
};

ReceivedFrame::ReceivedFrame(zmq::message_t&& frame) : frame_(std::make_unique<zmq::message_t>(std::move(frame))) {}
ReceivedFrame::~ReceivedFrame() = default;
ReceivedFrame::ReceivedFrame(ReceivedFrame&&) noexcept = default;
ReceivedFrame& ReceivedFrame::operator=(ReceivedFrame&&) noexcept = default;
char* ReceivedFrame::data() { return static_cast<char*>(frame_->data()); }
size_t ReceivedFrame::size() const { return frame_->size(); }

AsyncSocket::AsyncSocket(boost::asio::io_context& io, Context& context, SocketKind kind, const SocketOptions& options)
    : impl_(std::make_shared<Impl>(io, context, kind, options)) {
  impl_->schedule_pump();  // arms the first wait once the loop runs
}

AsyncSocket::~AsyncSocket() { impl_->close(); }

std::string AsyncSocket::bind(const std::string& endpoint) {
  try {
    impl_->authenticate(endpoint, true);
    impl_->socket.bind(endpoint);
  } catch (const zmq::error_t& e) {
    throw Error("cannot bind " + endpoint + ": " + e.what());
  }
  impl_->schedule_pump();
  return impl_->socket.get(zmq::sockopt::last_endpoint);
}

void AsyncSocket::connect(const std::string& endpoint) {
  try {
    impl_->authenticate(endpoint, false);
    impl_->socket.connect(endpoint);
  } catch (const zmq::error_t& e) {
    throw Error("cannot connect to " + endpoint + ": " + e.what());
  }
  impl_->schedule_pump();
}

void AsyncSocket::on_receive(ReceiveHandler handler) {
  impl_->receive_handler = std::move(handler);
  impl_->schedule_pump();  // messages may already be waiting
}

void AsyncSocket::on_receive_frames(FramesHandler handler) {
  impl_->receive_handler = nullptr;
  impl_->frames_handler = std::move(handler);
  impl_->schedule_pump();
}

void AsyncSocket::on_unreachable(UnreachableHandler handler) { impl_->unreachable_handler = std::move(handler); }

void AsyncSocket::on_disconnect(DisconnectHandler handler) {
  impl_->disconnect_handler = std::move(handler);
  impl_->watch_connections();
}

void AsyncSocket::send(Multipart message) {
  if (impl_->closed) throw Error("send on a closed socket");
  impl_->enqueue(std::move(message));
}

size_t AsyncSocket::queued_messages() const { return impl_->queued; }

void AsyncSocket::close() { impl_->close(); }

}  // namespace moe::transport
