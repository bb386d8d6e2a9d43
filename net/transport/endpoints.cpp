#include "transport/endpoints.h"

#include <spdlog/spdlog.h>

#include "common/error.h"
#include "transport/message_codec.h"

namespace moe::transport {
namespace {

// The pipeline's sockets: between processes they authenticate their peers (SocketOptions::internal).
SocketOptions internal(SocketOptions options) {
  options.internal = true;
  return options;
}

}  // namespace

Inbox::Inbox(boost::asio::io_context& io, Context& context, const std::string& bind_endpoint, Handler on_message,
             const SocketOptions& options)
    : socket_(io, context, SocketKind::Pull, internal(options)), endpoint_(socket_.bind(bind_endpoint)) {
  socket_.on_receive([this, on_message = std::move(on_message)](Multipart&& frames) {
    if (frames.size() != 1) {
      spdlog::warn("inbox {}: dropped a message of {} frames (expected 1)", endpoint_, frames.size());
      return;
    }
    msg::Message message;
    try {
      message = decode_message(frames.front());
    } catch (const Error& e) {
      spdlog::warn("inbox {}: dropped a frame: {}", endpoint_, e.what());
      return;
    }
    on_message(std::move(message));
  });
}

StageInbox::StageInbox(boost::asio::io_context& io, Context& context, const std::string& bind_endpoint,
                       Handler on_message, const SocketOptions& options)
    : socket_(io, context, SocketKind::Pull, internal(options)), endpoint_(socket_.bind(bind_endpoint)) {
  socket_.on_receive_frames([this, on_message = std::move(on_message)](std::vector<ReceivedFrame>&& frames) {
    if (frames.size() != 1 && frames.size() != 2) {
      spdlog::warn("stage inbox {}: dropped a message of {} frames (expected 1 or 2)", endpoint_, frames.size());
      return;
    }
    msg::Message message;
    try {
      message = decode_message(std::string_view(frames[0].data(), frames[0].size()));
    } catch (const Error& e) {
      spdlog::warn("stage inbox {}: dropped a frame: {}", endpoint_, e.what());
      return;
    }
    std::optional<ReceivedFrame> payload;
    if (frames.size() == 2) payload.emplace(std::move(frames[1]));
    on_message(std::move(message), std::move(payload));
  });
}

Outbox::Outbox(boost::asio::io_context& io, Context& context, const std::string& connect_endpoint,
               const SocketOptions& options)
    : socket_(io, context, SocketKind::Push, internal(options)) {
  socket_.connect(connect_endpoint);
}

void Outbox::send(const msg::Message& message) { socket_.send({encode_message(message)}); }

void Outbox::send(const msg::Message& header, std::string_view payload) {
  socket_.send({encode_message(header), std::string(payload)});
}

RouterEndpoint::RouterEndpoint(boost::asio::io_context& io, Context& context, const std::string& bind_endpoint,
                               RequestHandler on_request, GoneHandler on_gone, const SocketOptions& options)
    : socket_(io, context, SocketKind::Router, options), endpoint_(socket_.bind(bind_endpoint)) {
  socket_.on_receive([on_request = std::move(on_request)](Multipart&& frames) {
    // ROUTER always prepends the identity; a message without a payload after it is not a request.
    if (frames.size() < 2) return;
    std::string payload = std::move(frames.back());
    frames.pop_back();
    on_request(ClientAddress{std::move(frames)}, std::move(payload));
  });
  socket_.on_unreachable([on_gone](Multipart&& frames) {
    frames.pop_back();
    on_gone(ClientAddress{std::move(frames)});
  });
  // A client waiting for a long reply that closes its socket is gone now, not when the reply bounces.
  socket_.on_disconnect([on_gone = std::move(on_gone)](const std::string& identity) { on_gone(ClientAddress{{identity}}); });
}

void RouterEndpoint::reply(const ClientAddress& client, std::string payload) {
  Multipart frames = client.frames;
  frames.push_back(std::move(payload));
  socket_.send(std::move(frames));
}

DealerEndpoint::DealerEndpoint(boost::asio::io_context& io, Context& context, const std::string& connect_endpoint,
                               ReplyHandler on_reply, const SocketOptions& options)
    : socket_(io, context, SocketKind::Dealer, options) {
  socket_.connect(connect_endpoint);
  socket_.on_receive([on_reply = std::move(on_reply)](Multipart&& frames) {
    // A server answering a REQ-style envelope puts an empty delimiter first; the payload is last.
    on_reply(std::move(frames.back()));
  });
}

void DealerEndpoint::send(std::string payload) { socket_.send({std::move(payload)}); }

}  // namespace moe::transport
