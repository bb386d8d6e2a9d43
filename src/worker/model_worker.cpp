#include "worker/model_worker.h"

#include <chrono>
#include <random>
#include <utility>

#include "common/error.h"
#include "kernels/thread_pool.h"
#include "model/model_fingerprint.h"
#include "sampling/sampler.h"

namespace moe {
namespace {

ForwardBatch to_forward_batch(const msg::WorkerBatch& batch) {
  ForwardBatch forward;
  forward.token_ids = batch.token_ids;
  forward.positions = batch.positions;
  forward.sequences.reserve(batch.sequences.size());
  for (const auto& s : batch.sequences) forward.sequences.push_back({s.num_new_tokens, s.kv_slots, s.needs_logits});
  return forward;
}

msg::StepRouting to_message(StagedRouting&& staged, int first_layer) {
  msg::StepRouting out;
  out.step = staged.step;
  out.first_layer = first_layer;
  out.rows.num_layers = staged.num_moe_layers;
  out.rows.top_k = staged.top_k;
  out.rows.expert_ids = std::move(staged.ids);
  out.rows.weights = std::move(staged.weights);
  return out;
}

// Non-zero, and different for every worker started (0 means "no worker yet" to the scheduler).
uint64_t draw_instance() {
  std::random_device device;
  const uint64_t value = (uint64_t{device()} << 32) ^ device() ^
                         static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return value == 0 ? 1 : value;
}

}  // namespace

ModelWorker::ModelWorker(std::unique_ptr<Model> model, const ModelWorkerOptions& options)
    : load_model_(options.load_model),
      model_(std::move(model)),
      kv_(model_->make_kv_cache(options.settings.kv_slots)),
      on_routing_ready_(options.on_routing_ready),
      settings_(options.settings),
      instance_(draw_instance()) {
  first_moe_layer_ = moe_layers_of(model_->config().moe_layer_ids, model_->layers()).begin;
  if (settings_.capture_routing) capturer_ = make_capturer();
}

std::unique_ptr<RoutedExpertsCapturer> ModelWorker::make_capturer() const {
  const ModelConfig& c = model_->config();
  const LayerRange moe_layers = moe_layers_of(c.moe_layer_ids, model_->layers());
  const RoutingBufferShape shape{moe_layers.size(), settings_.max_batch_tokens, c.num_experts_per_tok,
                                 settings_.capture_router_weights};
  return std::make_unique<RoutedExpertsCapturer>(model_->make_copy_engine(shape, on_routing_ready_));
}

void ModelWorker::run_forward(const msg::WorkerBatch& batch,
                              const std::function<void(const ForwardBatch&, RoutingCapture*)>& run) {
  const ForwardBatch forward = to_forward_batch(batch);
  const bool capture = batch.capture_routing;
  if (capture && !capturer_) throw Error("routing capture asked of a worker started without it");
  if (capture && batch.capture_router_weights && !capturer_->with_weights())
    throw Error("router weights asked of a worker started without --enable-return-router-weights");
  if (capture) capturer_->begin_step(batch.step, forward.num_tokens());
  try {
    run(forward, capture ? capturer_.get() : nullptr);
  } catch (...) {
    if (capture) capturer_->end_step();  // keep the capturer's step sequence consistent
    throw;
  }
  if (capture) capturer_->end_step();
}

msg::WorkerResult ModelWorker::execute(const msg::WorkerBatch& batch) {
  run_forward(batch, [&](const ForwardBatch& forward, RoutingCapture* capture) {
    model_->forward(forward, kv_, logits_, capture);
  });
  return sample(batch);
}

std::optional<msg::WorkerResult> ModelWorker::execute_stage(const msg::WorkerBatch& batch, float* hidden) {
  run_forward(batch, [&](const ForwardBatch& forward, RoutingCapture* capture) {
    model_->forward_stage(forward, kv_, hidden, logits_, capture);
  });
  if (!model_->is_last_stage()) return std::nullopt;
  return sample(batch);
}

msg::WorkerResult ModelWorker::sample(const msg::WorkerBatch& batch) {
  msg::WorkerResult result;
  result.step = batch.step;
  const int64_t vocab = model_->config().vocab_size;
  std::vector<const msg::WorkerSequence*> samplers;  // logits row i belongs to samplers[i]
  for (const auto& s : batch.sequences)
    if (s.needs_logits) samplers.push_back(&s);
  // Each draw passes over the whole vocabulary a few times: a batch's draws share the kernel threads.
  std::vector<SampledToken> tokens(samplers.size());
  parallel_for(static_cast<int64_t>(samplers.size()), 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      tokens[i] = sample_token(logits_.data() + i * vocab, vocab, samplers[i]->sampling);
    }
  });
  bool any_logprob = false, any_top = false;
  for (const msg::WorkerSequence* s : samplers) {
    any_logprob |= s->sampling.return_logprob;
    any_top |= s->sampling.top_logprobs > 0;
  }
  for (SampledToken& token : tokens) {
    result.sampled_ids.push_back(token.id);
    if (any_logprob) result.logprobs.push_back(token.logprob);
    if (any_top) result.top_logprobs.push_back(std::move(token.top));
  }
  result.routing = take_ready_routing();
  result.worker_instance = instance_;
  return result;
}

msg::WeightsUpdated ModelWorker::update_weights(const msg::UpdateWeights& update) {
  msg::WeightsUpdated answer;
  answer.request = update;
  answer.worker_instance = instance_;
  try {
    if (!load_model_) throw Error("this model worker cannot load new weights");
    std::unique_ptr<Model> model = load_model_(update.model_path);
    if (auto mismatch = config_mismatch(model_->config(), model->config()))
      throw Error(update.model_path + " holds another model than the one serving (" + *mismatch +
                  "); new weights must keep the architecture and sizes");
    KvCache kv = model->make_kv_cache(settings_.kv_slots);
    answer.model_fingerprint = model_fingerprint(update.model_path);
    if (capturer_) {
      for (StagedRouting& staged : capturer_->drain())
        drained_routing_.push_back(to_message(std::move(staged), first_moe_layer_));
      capturer_.reset();  // before the model its copy engine may run on
    }
    model_ = std::move(model);  // the old model goes now, before its KV cache
    kv_ = std::move(kv);
    if (settings_.capture_routing) capturer_ = make_capturer();
    std::lock_guard lock(settings_mutex_);
    settings_.model_fingerprint = answer.model_fingerprint;
  } catch (const std::exception& e) {
    answer.message = std::string("loading ") + update.model_path + " failed: " + e.what();
    return answer;
  }
  answer.success = true;
  return answer;
}

std::vector<msg::StepRouting> ModelWorker::take_ready_routing() {
  std::vector<msg::StepRouting> out = std::exchange(drained_routing_, {});
  if (!capturer_) return out;
  for (StagedRouting& staged : capturer_->take_ready())
    out.push_back(to_message(std::move(staged), first_moe_layer_));
  return out;
}

}  // namespace moe
