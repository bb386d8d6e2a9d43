#include "moe/client.h"

#include <atomic>
#include <cstdio>
#include <future>
#include <map>
#include <random>
#include <spdlog/spdlog.h>

#include "client/reply_sink.h"
#include "common/error.h"
#include "transport/actor_loop.h"
#include "transport/client_protocol.h"
#include "transport/endpoints.h"
#include "transport/zmq_context.h"

namespace moe {
namespace {

// What a DoneHandler gets for an error reply.
std::exception_ptr request_error(const msg::ErrorReply& error) { return std::make_exception_ptr(RequestError(error)); }

// A DoneHandler that settles `finished` with the request's outcome, for the blocking calls.
DoneHandler settle(std::shared_ptr<std::promise<void>> finished) {
  return [finished](std::exception_ptr error) { error ? finished->set_exception(error) : finished->set_value(); };
}

}  // namespace

struct Client::Impl {
  transport::Context context;
  transport::ActorLoop loop{context, "client"};
  transport::DealerEndpoint* dealer = nullptr;
  std::map<std::string, ReplySink> pending;  // only touched on the loop's thread
  // Expert-load requests waiting for their statistics (also only touched on the loop's thread).
  struct PendingLoad {
    ExpertLoadHandler on_load;
    DoneHandler on_done;
  };
  std::map<std::string, PendingLoad> pending_loads;
  std::string rid_prefix;                     // random per client, so rids of several clients differ
  std::atomic<uint64_t> next_rid{1};

  void on_reply(const std::string& frame) {
    transport::ClientReply reply;
    try {
      reply = transport::decode_client_reply(frame);
    } catch (const Error& e) {
      spdlog::warn("client: dropped a reply frame: {}", e.what());
      return;
    }
    if (auto* error = std::get_if<msg::ErrorReply>(&reply)) return on_error(*error);
    if (auto* load = std::get_if<transport::ExpertLoadReply>(&reply)) return on_expert_load(*load);
    const auto& output = std::get<msg::TextOutput>(reply);
    auto it = pending.find(output.rid);
    if (it == pending.end()) return;  // forgotten after a timeout
    if (it->second.deliver(output)) pending.erase(it);
  }

  // Waits for `done`; on a timeout forgets `rid` (a late reply is dropped) and throws a 504.
  void wait(const std::string& rid, std::future<void>& done, std::chrono::milliseconds timeout) {
    if (done.wait_for(timeout) == std::future_status::timeout) {
      loop.post([this, rid] {
        pending.erase(rid);
        pending_loads.erase(rid);
      });
      throw RequestError(msg::ErrorReply{rid, "no reply from the server within " + std::to_string(timeout.count()) + " ms",
                                         504, "client"});
    }
    done.get();
  }

  void on_error(const msg::ErrorReply& error) {
    // Only a frame the server could not read comes back without a rid; which one cannot be told,
    // and every frame of this client is equally well-formed, so all of them are failed.
    if (error.rid.empty()) {
      for (auto& [rid, sink] : pending) sink.fail(error);
      for (auto& [rid, load] : pending_loads) load.on_done(request_error(error));
      pending.clear();
      pending_loads.clear();
      return;
    }
    if (auto it = pending.find(error.rid); it != pending.end()) {
      it->second.fail(error);
      pending.erase(it);
    } else if (auto load = pending_loads.find(error.rid); load != pending_loads.end()) {
      load->second.on_done(request_error(error));
      pending_loads.erase(load);
    }
  }

  void on_expert_load(const transport::ExpertLoadReply& reply) {
    auto it = pending_loads.find(reply.rid);
    if (it == pending_loads.end()) return;  // forgotten after a timeout
    const PendingLoad load = std::move(it->second);
    pending_loads.erase(it);
    load.on_load(reply.load);
    load.on_done(nullptr);
  }
};

Client::Client(const std::string& endpoint) : impl_(std::make_unique<Impl>()) {
  char prefix[32];
  std::snprintf(prefix, sizeof(prefix), "cli-%08x-", static_cast<unsigned>(std::random_device{}()));
  impl_->rid_prefix = prefix;
  transport::SocketOptions options;
  options.receive_high_water_mark = 0;  // never drop a reply the application is slow to take
  impl_->dealer = &impl_->loop.make<transport::DealerEndpoint>(
      endpoint, [impl = impl_.get()](std::string payload) { impl->on_reply(payload); }, options);
  impl_->loop.start();
}

Client::~Client() {
  impl_->loop.stop();
  impl_->loop.join();
}

std::string Client::submit(msg::GenerateRequest request, OutputHandler on_output, DoneHandler on_done) {
  if (request.rid.empty()) request.rid = impl_->rid_prefix + std::to_string(impl_->next_rid++);
  const std::string rid = request.rid;
  impl_->loop.post([impl = impl_.get(), request = std::move(request), on_output = std::move(on_output),
                    on_done = std::move(on_done)]() mutable {
    auto [it, added] = impl->pending.try_emplace(request.rid, request.sampling.n, std::move(on_output), std::move(on_done));
    if (!added) {
      ReplySink(1, nullptr, std::move(on_done))
          .fail(msg::ErrorReply{request.rid, "rid '" + request.rid + "' is already in flight on this client", 400, "client"});
      return;
    }
    impl->dealer->send(transport::encode_client_request(request));
  });
  return rid;
}

std::vector<msg::TextOutput> Client::generate(msg::GenerateRequest request, std::chrono::milliseconds timeout) {
  request.stream = false;
  auto outputs = std::make_shared<std::vector<msg::TextOutput>>();
  auto finished = std::make_shared<std::promise<void>>();
  std::future<void> done = finished->get_future();
  auto [on_output, on_done] = collect_outputs(outputs, settle(finished));
  const std::string rid = submit(std::move(request), std::move(on_output), std::move(on_done));
  impl_->wait(rid, done, timeout);
  return std::move(*outputs);
}

void Client::generate_stream(msg::GenerateRequest request, OutputHandler on_chunk, std::chrono::milliseconds timeout) {
  request.stream = true;
  auto finished = std::make_shared<std::promise<void>>();
  std::future<void> done = finished->get_future();
  const std::string rid = submit(std::move(request), std::move(on_chunk), settle(finished));
  impl_->wait(rid, done, timeout);
}

std::string Client::submit_expert_load(bool reset, ExpertLoadHandler on_load, DoneHandler on_done) {
  transport::ExpertLoadRequest request{impl_->rid_prefix + std::to_string(impl_->next_rid++), reset};
  const std::string rid = request.rid;
  impl_->loop.post([impl = impl_.get(), request = std::move(request), on_load = std::move(on_load),
                    on_done = std::move(on_done)]() mutable {
    impl->pending_loads[request.rid] = {std::move(on_load), std::move(on_done)};
    impl->dealer->send(transport::encode_client_request(request));
  });
  return rid;
}

ExpertLoad Client::expert_load(bool reset, std::chrono::milliseconds timeout) {
  auto load = std::make_shared<ExpertLoad>();
  auto finished = std::make_shared<std::promise<void>>();
  std::future<void> done = finished->get_future();
  const std::string rid = submit_expert_load(
      reset, [load](const ExpertLoad& received) { *load = received; }, settle(finished));
  impl_->wait(rid, done, timeout);
  return std::move(*load);
}

}  // namespace moe
