#pragma once
// The sockets actors and clients use, one class per role:
//   Inbox  — an actor's PULL socket (bound): decodes every frame into a msg::Message;
//   StageInbox — a pipeline stage's PULL socket (bound): a message plus, optionally, a raw
//            payload frame (the activations) handed over in ZeroMQ's buffer, without a copy;
//   Outbox — a PUSH socket (connected) to the next actor's Inbox;
//   RouterEndpoint — the ROUTER socket clients talk to: payloads with the address to reply to;
//   DealerEndpoint — a client's DEALER socket: requests out, replies in, any number in flight.
// Each runs on an io_context (see AsyncSocket for the threading rules).
#include <functional>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "moe/messages.h"
#include "transport/async_socket.h"

namespace moe::transport {

class Inbox {
 public:
  using Handler = std::function<void(msg::Message&&)>;
  // A frame that does not decode is logged and dropped: a PULL socket has nobody to answer.
  Inbox(boost::asio::io_context& io, Context& context, const std::string& bind_endpoint, Handler on_message,
        const SocketOptions& options = {});
  // The endpoint actually bound (tcp port resolved): what senders connect to.
  const std::string& endpoint() const { return endpoint_; }

 private:
  AsyncSocket socket_;
  std::string endpoint_;
};

class StageInbox {
 public:
  using Handler = std::function<void(msg::Message&&, std::optional<ReceivedFrame>&& payload)>;
  StageInbox(boost::asio::io_context& io, Context& context, const std::string& bind_endpoint, Handler on_message,
             const SocketOptions& options = {});
  const std::string& endpoint() const { return endpoint_; }

 private:
  AsyncSocket socket_;
  std::string endpoint_;
};

class Outbox {
 public:
  Outbox(boost::asio::io_context& io, Context& context, const std::string& connect_endpoint,
         const SocketOptions& options = {});
  void send(const msg::Message& message);
  // The message as a small header frame, then `payload` as raw bytes in a frame of its own (for a
  // StageInbox): no per-element encoding.
  void send(const msg::Message& header, std::string_view payload);
  size_t queued_messages() const { return socket_.queued_messages(); }

 private:
  AsyncSocket socket_;
};

// Who sent a client request: the frames ROUTER put before the payload (the peer's identity, plus
// the empty delimiter a REQ socket adds). A reply goes back with the same frames.
struct ClientAddress {
  std::vector<std::string> frames;
  bool operator==(const ClientAddress&) const = default;
  // Whether both name the same peer (its identity frame), whatever envelope each carries.
  bool same_peer(const ClientAddress& other) const {
    return !frames.empty() && !other.frames.empty() && frames.front() == other.frames.front();
  }
};

class RouterEndpoint {
 public:
  using RequestHandler = std::function<void(ClientAddress, std::string payload)>;
  // The client has disconnected: its connection closed (the address then holds only its identity
  // frame), or a reply to it could not be delivered.
  using GoneHandler = std::function<void(const ClientAddress&)>;

  RouterEndpoint(boost::asio::io_context& io, Context& context, const std::string& bind_endpoint,
                 RequestHandler on_request, GoneHandler on_gone, const SocketOptions& options = {});
  const std::string& endpoint() const { return endpoint_; }
  void reply(const ClientAddress& client, std::string payload);

 private:
  AsyncSocket socket_;
  std::string endpoint_;
};

class DealerEndpoint {
 public:
  using ReplyHandler = std::function<void(std::string payload)>;
  DealerEndpoint(boost::asio::io_context& io, Context& context, const std::string& connect_endpoint,
                 ReplyHandler on_reply, const SocketOptions& options = {});
  void send(std::string payload);

 private:
  AsyncSocket socket_;
};

}  // namespace moe::transport
