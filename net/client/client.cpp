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
  // Operations (expert_load, abort, update_weights_from_disk) waiting for their answer, by rid (an
  // abort's is the rid of the request it ends); also only touched on the loop's thread.
  struct PendingOp {
    std::function<void(const transport::ClientReply&)> on_answer;
    DoneHandler on_done;
  };
  std::map<std::string, PendingOp> pending_ops;
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
    if (auto* output = std::get_if<msg::TextOutput>(&reply)) {
      auto it = pending.find(output->rid);
      if (it == pending.end()) return;  // forgotten after a timeout
      if (it->second.deliver(*output)) pending.erase(it);
      return;
    }
    const std::string& rid = std::visit([](const auto& answer) -> const std::string& { return answer.rid; }, reply);
    auto it = pending_ops.find(rid);
    if (it == pending_ops.end()) return;  // forgotten after a timeout
    const PendingOp op = std::move(it->second);
    pending_ops.erase(it);
    op.on_answer(reply);
    op.on_done(nullptr);
  }

  // Sends an operation's frame; its answer goes to `on_answer`, then `on_done` ends it. Any thread.
  void send_op(const std::string& rid, std::string frame, std::function<void(const transport::ClientReply&)> on_answer,
               DoneHandler on_done) {
    loop.post([this, rid, frame = std::move(frame), on_answer = std::move(on_answer),
               on_done = std::move(on_done)]() mutable {
      pending_ops[rid] = {std::move(on_answer), std::move(on_done)};
      dealer->send(frame);
    });
  }

  // Sends an operation and waits for its answer of type Answer; throws as wait() does.
  template <class Answer>
  Answer call(const std::string& rid, std::string frame, std::chrono::milliseconds timeout) {
    auto answer = std::make_shared<Answer>();
    auto finished = std::make_shared<std::promise<void>>();
    std::future<void> done = finished->get_future();
    send_op(
        rid, std::move(frame),
        [answer](const transport::ClientReply& reply) {
          if (auto* received = std::get_if<Answer>(&reply)) *answer = *received;
        },
        settle(finished));
    wait(rid, done, timeout);
    return std::move(*answer);
  }

  std::string new_rid() { return rid_prefix + std::to_string(next_rid++); }

  // Waits for `done`; on a timeout forgets `rid` (a late reply is dropped) and throws a 504.
  void wait(const std::string& rid, std::future<void>& done, std::chrono::milliseconds timeout) {
    if (done.wait_for(timeout) == std::future_status::timeout) {
      loop.post([this, rid] {
        pending.erase(rid);
        pending_ops.erase(rid);
      });
      throw RequestError(msg::ErrorReply{rid, "no reply from the server within " + std::to_string(timeout.count()) + " ms",
                                         504, "client", {}});
    }
    done.get();
  }

  void on_error(const msg::ErrorReply& error) {
    // Only a frame the server could not read comes back without a rid; which one cannot be told,
    // and every frame of this client is equally well-formed, so all of them are failed.
    if (error.rid.empty()) {
      for (auto& [rid, sink] : pending) sink.fail(error);
      for (auto& [rid, op] : pending_ops) op.on_done(request_error(error));
      pending.clear();
      pending_ops.clear();
      return;
    }
    if (auto it = pending.find(error.rid); it != pending.end()) {
      it->second.fail(error);
      pending.erase(it);
    } else if (auto op = pending_ops.find(error.rid); op != pending_ops.end()) {
      op->second.on_done(request_error(error));
      pending_ops.erase(op);
    }
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
  if (request.rid.empty()) request.rid = impl_->new_rid();
  const std::string rid = request.rid;
  impl_->loop.post([impl = impl_.get(), request = std::move(request), on_output = std::move(on_output),
                    on_done = std::move(on_done)]() mutable {
    auto [it, added] = impl->pending.try_emplace(request.rid, request.sampling.n, std::move(on_output), std::move(on_done));
    if (!added) {
      ReplySink(1, nullptr, std::move(on_done))
          .fail(msg::ErrorReply{request.rid, "rid '" + request.rid + "' is already in flight on this client", 400,
                                "client", {}});
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
  const transport::ExpertLoadRequest request{impl_->new_rid(), reset};
  impl_->send_op(
      request.rid, transport::encode_client_request(request),
      [on_load = std::move(on_load)](const transport::ClientReply& reply) {
        if (auto* answer = std::get_if<transport::ExpertLoadReply>(&reply)) on_load(answer->load);
      },
      std::move(on_done));
  return request.rid;
}

ExpertLoad Client::expert_load(bool reset, std::chrono::milliseconds timeout) {
  const transport::ExpertLoadRequest request{impl_->new_rid(), reset};
  return impl_->call<transport::ExpertLoadReply>(request.rid, transport::encode_client_request(request), timeout).load;
}

bool Client::abort(const std::string& rid, std::chrono::milliseconds timeout) {
  if (rid.empty()) return false;  // names no request (the server would refuse the frame)
  const transport::AbortRequest request{rid};
  return impl_->call<transport::AbortReply>(rid, transport::encode_client_request(request), timeout).aborted;
}

msg::WeightsUpdated Client::update_weights_from_disk(msg::UpdateWeights update, std::chrono::milliseconds timeout) {
  const transport::UpdateWeightsRequest request{impl_->new_rid(), std::move(update)};
  return impl_->call<transport::WeightsUpdatedReply>(request.rid, transport::encode_client_request(request), timeout)
      .answer;
}

}  // namespace moe
