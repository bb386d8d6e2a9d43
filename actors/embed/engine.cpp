#include "moe/engine.h"

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

void Engine::start(msg::GenerateRequest request, OutputHandler on_output, DoneHandler on_done) {
  runtime_->tokenizer_loop().post([this, request = std::move(request), on_output = std::move(on_output),
                                   on_done = std::move(on_done)]() mutable {
    auto sink = std::make_shared<ReplySink>(request.sampling.n, std::move(on_output), std::move(on_done));
    runtime_->tokenizer().submit(
        request, [sink](const msg::TextOutput& output) { sink->deliver(output); },
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
