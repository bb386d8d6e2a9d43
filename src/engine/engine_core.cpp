#include "engine/engine_core.h"

#include <chrono>
#include <utility>

#include "common/error.h"

namespace moe {
namespace {

ServingModelInfo serving_info(const ModelConfig& config) {
  return {config.num_moe_layers(), config.num_experts_per_tok, config.num_experts};
}

// The worker's options with the copy thread's signal and the weight loader hooked up.
ModelWorkerOptions signalling(ModelWorkerOptions options, std::function<void()> on_rows,
                              const EngineCoreOptions& core) {
  options.on_routing_ready = std::move(on_rows);
  options.load_checkpoint = core.load_checkpoint;
  return options;
}

// Every size, and the checkpoint the weights came from (what a memory resume loads again).
EngineSizing sized(const EngineCoreOptions& options, const ModelConfig& config) {
  EngineSizing sizing = size_engine(options.settings, config, {}, options.eos_token_ids, options.seed_source);
  sizing.service.weights.model_path = options.model_path;
  return sizing;
}

}  // namespace

EngineCore::EngineCore(std::unique_ptr<Model> model, tokenizer::Tokenizer tokenizer, const EngineCoreOptions& options)
    : sizing_(sized(options, model->config())),
      preparer_(tokenizer, options.prompt_format, sizing_.limits),
      service_(sizing_.service, serving_info(model->config())),
      worker_(std::move(model), signalling(sizing_.worker,
                                           [this] {
                                             std::lock_guard lock(mutex_);
                                             ++rows_signals_;
                                             rows_ready_.notify_all();
                                           },
                                           options)),
      detokenizer_(std::move(tokenizer), worker_.config().num_experts, sizing_.draft_num_experts,
                   {worker_.config().num_hidden_layers, worker_.config().moe_layer_ids}) {
  service_.on_heartbeat(worker_.heartbeat());  // the worker in this thread is the one steps go to
}

std::optional<msg::ErrorReply> EngineCore::submit(const msg::GenerateRequest& request) {
  std::optional<msg::ErrorReply> error;
  try {
    error = service_.add_request(preparer_.prepare(request));
  } catch (const Error& e) {
    error = refusal_reply(request.rid, e, "engine");
  }
  if (error) errors_.push_back(*error);
  return error;
}

bool EngineCore::step() {
  const msg::WorkerBatch* batch = service_.next_batch();  // schedule (before the last result)
  std::optional<msg::WorkerResult> result;
  if (batch) result = worker_.execute(*batch);  // execute
  const bool applied = apply_held_result();     // process the previous step's result
  if (result && service_.max_batches_in_flight() > 1)
    held_result_ = std::move(result);
  else if (result)
    service_.on_worker_result(*result);
  if (!batch && !applied) service_.on_routing(worker_.take_ready_routing());  // rows still copying
  detokenize();
  return batch != nullptr || applied;
}

bool EngineCore::apply_held_result() {
  if (!held_result_) return false;
  const msg::WorkerResult result = std::move(*held_result_);
  held_result_.reset();
  service_.on_worker_result(result);
  return true;
}

msg::WeightsUpdated EngineCore::update_weights(msg::UpdateWeights update) {
  apply_held_result();
  detokenize();
  service_.update_weights(std::move(update));
  // No step is ever in flight between two calls here, so the update goes to the worker at once
  // (unless the scheduler refused it: a load while the weights are released).
  if (const auto update = service_.next_weight_update()) service_.on_weights_updated(worker_.update_weights(*update));
  detokenize();
  return service_.take_weight_update_answers().front();
}

void EngineCore::detokenize() {
  DetokenizerState::Result result = detokenizer_.apply(service_.take_output());
  for (msg::TextOutput& o : result.outputs) outputs_.push_back(std::move(o));
  for (msg::ErrorReply& e : result.errors) errors_.push_back(std::move(e));
  for (const msg::Abort& stop : result.stopped) service_.finish_by_stop_string(stop.rid, stop.index, stop.kept_tokens);
}

bool EngineCore::idle() const {
  return !held_result_ && !service_.has_unfinished() && !service_.awaiting_rows() &&
         detokenizer_.live_completions() == 0;
}

void EngineCore::wait_for_rows() {
  std::unique_lock lock(mutex_);
  rows_ready_.wait_for(lock, std::chrono::milliseconds(50), [&] { return rows_signals_ > 0; });
  rows_signals_ = 0;
}

std::vector<msg::TextOutput> EngineCore::run(const std::vector<msg::GenerateRequest>& requests) {
  for (const msg::GenerateRequest& r : requests) submit(r);
  // A few seconds without progress (rows that never arrive) ends the run rather than hanging it.
  for (int idle_rounds = 0; idle_rounds < 200;) {
    if (step()) {
      idle_rounds = 0;
      continue;
    }
    if (idle()) break;
    wait_for_rows();
    ++idle_rounds;
  }
  return std::exchange(outputs_, {});
}

}  // namespace moe
