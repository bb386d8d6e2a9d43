#include "model/moe_block.h"

#include <vector>

#include "kernels/activation.h"
#include "kernels/linear.h"
#include "model/safetensors.h"

namespace moe {

ExpertWeights load_routed_experts(const Checkpoint& ckpt, const ModelConfig& config, const MoeTensorNames& names) {
  const int64_t hidden = config.hidden_size, width = config.moe_intermediate_size;
  ExpertWeights experts;
  experts.hidden_size = hidden;
  experts.intermediate_size = width;
  for (const MlpTensorNames& expert : names.experts) {
    experts.gate.push_back(ckpt.projection(expert.gate, width, hidden));
    experts.up.push_back(ckpt.projection(expert.up, width, hidden));
    experts.down.push_back(ckpt.projection(expert.down, hidden, width));
  }
  return experts;
}

MoeBlock::MoeBlock(const Checkpoint& ckpt, const ModelConfig& config, const MoeTensorNames& names, int capture_index)
    : capture_index_(capture_index),
      top_k_(config.num_experts_per_tok),
      normalize_top_k_(config.norm_topk_prob) {
  const int64_t hidden = config.hidden_size;
  router_ = ckpt.matrix(names.router, config.num_experts, hidden);
  experts_ = load_routed_experts(ckpt, config, names);
  if (names.shared_expert) {
    shared_expert_ = DenseMlp::load(ckpt, *names.shared_expert, hidden, config.shared_expert_intermediate_size);
    shared_gate_ = ckpt.matrix(names.shared_gate, 1, hidden);
  }
}

void MoeBlock::forward(const float* x, int64_t num_tokens, MoeRunner& runner, RoutingCapture* capture, float* out,
                       const ExpertLimit& limit) const {
  Routing routing;
  route_tokens(x, num_tokens, router_, top_k_, normalize_top_k_, routing, limit);
  if (capture) capture->on_routing(capture_index_, num_tokens, top_k_, routing.ids.data(), routing.weights.data());
  runner.run(x, num_tokens, routing, experts_, out);
  if (!shared_expert_) return;
  const int64_t hidden = experts_.hidden_size;
  // Kept per thread from call to call, as the model's other activations (see CausalLm's scratch).
  thread_local std::vector<float> shared, gate;
  shared.resize(static_cast<size_t>(num_tokens * hidden));
  gate.resize(static_cast<size_t>(num_tokens));
  shared_expert_->forward(x, num_tokens, shared.data());
  linear(x, num_tokens, shared_gate_, gate.data());
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float g = sigmoid(gate[t]);
    for (int64_t i = 0; i < hidden; ++i) out[t * hidden + i] += g * shared[t * hidden + i];
  }
}

}  // namespace moe
