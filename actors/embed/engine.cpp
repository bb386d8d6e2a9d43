#include "moe/engine.h"

#include <future>

#include "api/api_error.h"
#include "client/reply_sink.h"
#include "pipeline/engine_runtime.h"
#include "pipeline/tokenizer_actor.h"
#include "transport/actor_loop.h"

namespace moe {
namespace {

actors::ServeOptions serve_options(const EngineOptions& o) {
  actors::ServeOptions s;
  static_cast<EngineOptions&>(s) = o;
  return s;
}

}  // namespace

Engine::Engine(const EngineOptions& options)
    : runtime_(std::make_unique<actors::EngineRuntime>(serve_options(options))) {}

Engine::~Engine() { runtime_->drain(std::chrono::milliseconds(0)); }

int64_t Engine::kv_slots() const { return runtime_->kv_slots(); }

std::string Engine::client_endpoint() const { return runtime_->client_endpoint(); }

msg::WeightsUpdated Engine::update_weights_from_disk(msg::UpdateWeights update) {
  auto answer = std::make_shared<std::promise<msg::WeightsUpdated>>();
  std::future<msg::WeightsUpdated> done = answer->get_future();
  runtime_->tokenizer_loop().post([this, answer, update = std::move(update)]() mutable {
    runtime_->tokenizer().update_weights(std::move(update),
                                         [answer](const msg::WeightsUpdated& result) { answer->set_value(result); });
  });
  return done.get();
}

ExpertLoad Engine::expert_load(bool reset) {
  try {
    return runtime_->expert_load(reset);
  } catch (const api::ApiError& e) {
    throw RequestError(msg::ErrorReply{"", e.what(), e.status(), "engine", e.param()});
  }
}

bool Engine::abort(const std::string& rid) {
  if (rid.empty()) return false;  // the tokenizer would read it as "every request"
  std::promise<bool> found;
  std::future<bool> done = found.get_future();
  runtime_->tokenizer_loop().post([this, &found, rid] {
    found.set_value(runtime_->tokenizer().abort_request(actors::kEmbeddingClient, rid, "aborted by moe::Engine::abort") > 0);
  });
  return done.get();
}

void Engine::start(msg::GenerateRequest request, OutputHandler on_output, DoneHandler on_done) {
  runtime_->tokenizer_loop().post([this, request = std::move(request), on_output = std::move(on_output),
                                   on_done = std::move(on_done)]() mutable {
    auto sink = std::make_shared<ReplySink>(request.sampling.n, std::move(on_output), std::move(on_done));
    runtime_->tokenizer().submit(
        actors::kEmbeddingClient, request, [sink](const msg::TextOutput& output) { sink->deliver(output); },
        [sink](const msg::ErrorReply& error) { sink->fail(error); });
  });
}

void Engine::start_collected(msg::GenerateRequest request, OutputsHandler on_done) {
  auto outputs = std::make_shared<std::vector<msg::TextOutput>>();
  auto [on_output, on_outputs_done] = collect_outputs(
      outputs, [outputs, on_done = std::move(on_done)](std::exception_ptr error) { on_done(error, std::move(*outputs)); });
  start(std::move(request), std::move(on_output), std::move(on_outputs_done));
}

}  // namespace moe
