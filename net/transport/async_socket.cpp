#include "common/prelude.h"

#include "transport/async_socket.h"

#include <deque>
#include <map>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <spdlog/spdlog.h>
#include <zmq.hpp>

#include "common/error.h"
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
      : io(io), socket(context.native(), zmq_type(kind)), readiness(io), kind(kind) {
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
  zmq::socket_t socket;
  // Watches ZMQ_FD, which becomes readable whenever ZMQ_EVENTS may have changed.
  boost::asio::posix::stream_descriptor readiness;
  SocketKind kind;
  ReceiveHandler receive_handler;
  FramesHandler frames_handler;
  UnreachableHandler unreachable_handler;
  // Sends waiting for room, keyed by peer identity for ROUTER (a slow client must not hold up the
  // others) and under "" for the other kinds.
  std::map<std::string, std::deque<Multipart>> outgoing;
  size_t queued = 0;
  bool waiting = false;      // an async_wait on `readiness` is pending
  bool pump_posted = false;  // a pump() is queued on the io_context
  bool closed = false;

  // Queues a message behind its peer's earlier ones and makes sure a pump will send it.
  void enqueue(Multipart message) {
    const std::string peer = kind == SocketKind::Router && !message.empty() ? message.front() : std::string();
    outgoing[peer].push_back(std::move(message));
    ++queued;
    schedule_pump();
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
      if (frames_handler) {
        received = true;
        deliver_frames(std::move(frame));
        continue;
      }
      Multipart message;
      message.emplace_back(static_cast<const char*>(frame.data()), frame.size());
      while (frame.more()) {
        (void)socket.recv(frame);  // the rest of a message has arrived with its first frame
        message.emplace_back(static_cast<const char*>(frame.data()), frame.size());
      }
      received = true;
      try {
        receive_handler(std::move(message));
      } catch (const std::exception& e) {
        spdlog::error("zmq socket: a receive handler failed: {}", e.what());
      }
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

  // Idempotent; after it no handler of this socket runs again.
  void close() {
    if (closed) return;
    closed = true;
    boost::system::error_code ignored;
    readiness.cancel(ignored);
    readiness.release();  // the descriptor belongs to ZeroMQ: never close it ourselves
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
    impl_->socket.bind(endpoint);
  } catch (const zmq::error_t& e) {
    throw Error("cannot bind " + endpoint + ": " + e.what());
  }
  impl_->schedule_pump();
  return impl_->socket.get(zmq::sockopt::last_endpoint);
}

void AsyncSocket::connect(const std::string& endpoint) {
  try {
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

void AsyncSocket::send(Multipart message) {
  if (impl_->closed) throw Error("send on a closed socket");
  impl_->enqueue(std::move(message));
}

size_t AsyncSocket::queued_messages() const { return impl_->queued; }

void AsyncSocket::close() { impl_->close(); }

}  // namespace moe::transport
