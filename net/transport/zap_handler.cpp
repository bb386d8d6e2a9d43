#include "transport/zap_handler.h"

#include <cstring>
#include <spdlog/spdlog.h>
#include <zmq.hpp>
#include <zmq_addon.hpp>

#include "common/thread_name.h"
#include "transport/refusal_log.h"

namespace moe::transport {
namespace {

// The frames of a ZAP request (RFC 27): version, request id, domain, address, identity,
// mechanism, then the mechanism's credentials (CURVE: the client's 32-byte public key).
enum ZapFrame { kVersion, kRequestId, kDomain, kAddress, kIdentity, kMechanism, kCredentials };

// How often the thread looks for sockets to watch that were bound meanwhile.
constexpr auto kPollInterval = std::chrono::milliseconds(200);

}  // namespace

// A bound socket's monitor, read on the handler's thread.
struct ZapHandler::Watched {
  zmq::socket_t monitor;
  std::string endpoint;
  RefusalLog refusals;
};

ZapHandler::ZapHandler(zmq::context_t& context, std::string allowed_key)
    : context_(context),
      socket_(std::make_unique<zmq::socket_t>(context, ZMQ_REP)),
      allowed_key_(std::move(allowed_key)) {
  socket_->set(zmq::sockopt::linger, 0);
  socket_->bind("inproc://zeromq.zap.01");  // the address libzmq asks, fixed by RFC 27
  thread_ = std::thread([this] { run(); });  // the socket moves to that thread (a full barrier)
}

ZapHandler::~ZapHandler() {
  if (thread_.joinable()) thread_.join();
}

void ZapHandler::watch_refusals(const std::string& monitor_address, const std::string& endpoint) {
  std::lock_guard lock(mutex_);
  to_watch_.emplace_back(monitor_address, endpoint);
}

void ZapHandler::answer(RefusalLog& refusals) {
  std::vector<zmq::message_t> request;
  if (!zmq::recv_multipart(*socket_, std::back_inserter(request), zmq::recv_flags::dontwait)) return;
  if (request.size() < kMechanism + 1) return;  // not RFC 27: libzmq never sends that
  const bool accepted = request.size() == kCredentials + 1 && request[kMechanism].to_string() == "CURVE" &&
                        request[kCredentials].to_string() == allowed_key_;
  if (!accepted)
    refusals.refused("internal endpoint: refused a connection from " + request[kAddress].to_string() +
                     ": its CURVE key is not this deployment's (--internal-key-file); nothing it sends is read");
  const std::string id = request[kRequestId].to_string();
  const std::vector<zmq::const_buffer> reply = {zmq::str_buffer("1.0"), zmq::buffer(id),
                                                accepted ? zmq::str_buffer("200") : zmq::str_buffer("400"),
                                                accepted ? zmq::str_buffer("OK") : zmq::str_buffer("unknown key"),
                                                zmq::str_buffer(""), zmq::str_buffer("")};
  zmq::send_multipart(*socket_, reply);
}

void ZapHandler::run() {
  name_this_thread("zmq-auth");
  RefusalLog key_refusals;
  std::vector<std::unique_ptr<Watched>> watched;
  try {
    while (true) {
      {
        std::lock_guard lock(mutex_);
        for (auto& [address, endpoint] : to_watch_) {
          auto w = std::make_unique<Watched>(Watched{zmq::socket_t(context_, ZMQ_PAIR), endpoint, {}});
          w->monitor.set(zmq::sockopt::linger, 0);
          w->monitor.connect(address);
          watched.push_back(std::move(w));
        }
        to_watch_.clear();
      }
      std::vector<zmq::pollitem_t> items = {{socket_->handle(), 0, ZMQ_POLLIN, 0}};
      for (const auto& w : watched) items.push_back({w->monitor.handle(), 0, ZMQ_POLLIN, 0});
      zmq::poll(items, kPollInterval);
      if (items[0].revents & ZMQ_POLLIN) answer(key_refusals);
      for (size_t i = 0; i < watched.size(); ++i) {
        if (!(items[i + 1].revents & ZMQ_POLLIN)) continue;
        std::vector<zmq::message_t> event;  // [id (2 bytes) and value (4 bytes), endpoint]
        while (zmq::recv_multipart(watched[i]->monitor, std::back_inserter(event), zmq::recv_flags::dontwait)) {
          uint32_t error = 0;
          if (!event.empty() && event[0].size() >= 6)
            std::memcpy(&error, static_cast<const char*>(event[0].data()) + 2, sizeof error);
          watched[i]->refusals.refused(fmt::format(
              "internal endpoint {}: refused a connection that did not authenticate with this deployment's key "
              "(--internal-key-file; ZeroMQ's error 0x{:x}); nothing it sent was read",
              watched[i]->endpoint, error));
          event.clear();
        }
      }
    }
  } catch (const zmq::error_t& e) {
    if (e.num() != ETERM) spdlog::error("internal authentication stopped: {}", e.what());
  }
  for (auto& w : watched) w->monitor.close();
  socket_->close();
}

}  // namespace moe::transport
