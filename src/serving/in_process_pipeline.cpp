#include "serving/in_process_pipeline.h"

#include <chrono>

namespace moe {
namespace {

ServingModelInfo model_info(const ModelConfig& config) {
  return {config.vocab_size, config.num_moe_layers(), config.num_experts_per_tok, config.num_experts, {}};
}

}  // namespace

InProcessPipeline::InProcessPipeline(std::unique_ptr<Model> model, tokenizer::Tokenizer tokenizer,
                                     const InProcessPipelineOptions& options) {
  const ModelConfig config = model->config();
  service_ = std::make_unique<SchedulerService>(options.service, model_info(config));
  ModelWorkerOptions worker_options;
  worker_options.kv_slots = service_->kv_cache_slots();
  worker_options.max_batch_tokens = options.max_batch_tokens;
  worker_options.enable_routed_experts = options.service.enable_routed_experts;
  worker_options.capture_router_weights = options.service.enable_router_weights;
  worker_options.on_routing_ready = [this] {
    std::lock_guard lock(mutex_);
    ++rows_signals_;
    rows_ready_.notify_all();
  };
  worker_ = std::make_unique<ModelWorker>(std::move(model), worker_options);
  detokenizer_ = std::make_unique<DetokenizerState>(std::move(tokenizer), config.num_experts);
}

void InProcessPipeline::wait_for_rows() {
  std::unique_lock lock(mutex_);
  rows_ready_.wait_for(lock, std::chrono::milliseconds(50), [&] { return rows_signals_ > 0; });
  rows_signals_ = 0;
}

std::vector<msg::TextOutput> InProcessPipeline::run(const std::vector<msg::TokenizedRequest>& requests) {
  std::vector<msg::TextOutput> outputs;
  for (const auto& r : requests)
    if (auto error = service_->add_request(r)) errors_.push_back(*error);
  auto drain_output = [&] {
    auto result = detokenizer_->apply(service_->take_output());
    for (auto& o : result.outputs) outputs.push_back(std::move(o));
    for (auto& e : result.errors) errors_.push_back(std::move(e));
    for (const msg::Abort& stop : result.stopped) service_->finish_by_stop_string(stop.rid, stop.index, stop.kept_tokens);
  };
  // A few seconds without progress (rows that never arrive) ends the run rather than hanging it.
  for (int idle_rounds = 0; idle_rounds < 200;) {
    if (auto batch = service_->next_batch()) {
      service_->on_worker_result(worker_->execute(*batch));
      drain_output();
      idle_rounds = 0;
      continue;
    }
    // Nothing to run: the last rows may still be on their way from the copy thread.
    service_->on_routing(worker_->take_ready_routing());
    drain_output();
    if (!service_->has_unfinished() && !service_->awaiting_rows() && detokenizer_->live_completions() == 0) break;
    wait_for_rows();
    ++idle_rounds;
  }
  return outputs;
}

}  // namespace moe
