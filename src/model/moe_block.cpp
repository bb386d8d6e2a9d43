#include "model/moe_block.h"

#include <numeric>
#include <vector>

#include "common/error.h"
#include "kernels/activation.h"
#include "kernels/linear.h"
#include "model/safetensors.h"

namespace moe {

ExpertWeights load_routed_experts(const Checkpoint& ckpt, const ModelConfig& config, const MoeTensorNames& names,
                                  std::span<const int32_t> held, const TensorShard& shard) {
  const int64_t hidden = config.hidden_size, width = config.moe_intermediate_size;
  const IndexRange part = shard.even_part(width), all_hidden{0, hidden};
  ExpertWeights experts;
  experts.hidden_size = hidden;
  experts.intermediate_size = part.count;
  const size_t count = names.experts.size();
  experts.gate.resize(count);
  experts.up.resize(count);
  experts.down.resize(count);
  std::vector<int32_t> every(count);
  std::iota(every.begin(), every.end(), 0);
  for (const int32_t e : held.empty() ? std::span<const int32_t>(every) : held) {
    const MlpTensorNames& expert = names.experts.at(static_cast<size_t>(e));
    experts.gate[e] = ckpt.projection_block(expert.gate, width, hidden, part, all_hidden);
    experts.up[e] = ckpt.projection_block(expert.up, width, hidden, part, all_hidden);
    experts.down[e] = ckpt.projection_block(expert.down, hidden, width, all_hidden, part);
  }
  return experts;
}

MoeBlock::MoeBlock(const Checkpoint& ckpt, const ModelConfig& config, const MoeTensorNames& names, int capture_index,
                   std::span<const int32_t> held_experts, const RankShards& shards)
    : capture_index_(capture_index),
      top_k_(config.num_experts_per_tok),
      normalize_top_k_(config.norm_topk_prob),
      routing_kind_(config.routing),
      grouped_rule_{config.n_group, config.topk_group, config.norm_topk_prob,
                    static_cast<float>(config.routed_scaling_factor)} {
  const int64_t hidden = config.hidden_size;
  router_ = ckpt.matrix(names.router, config.num_experts, hidden);
  if (routing_kind_ == RoutingKind::SigmoidGrouped) {
    check_grouped_sigmoid_rule(config.num_experts, top_k_, grouped_rule_);
    correction_bias_ = ckpt.vector(names.correction_bias, config.num_experts);
  }
  experts_ = load_routed_experts(ckpt, config, names, held_experts, shards.expert);
  if (names.shared_expert) {
    shared_expert_ = DenseMlp::load(ckpt, *names.shared_expert, hidden, config.shared_expert_intermediate_size, shards.dense);
    if (!names.shared_gate.empty()) shared_gate_ = ckpt.matrix(names.shared_gate, 1, hidden);
  }
}

void MoeBlock::forward(const float* x, int64_t num_tokens, MoeRunner& runner, RoutingCapture* capture, float* out,
                       const ExpertLimit& limit) const {
  Routing routing;
  route(x, num_tokens, limit, routing);
  if (capture) capture->on_routing(capture_index_, num_tokens, top_k_, routing.ids.data(), routing.weights.data());
  runner.run(x, num_tokens, routing, experts_, out);
  if (shared_expert_) add_shared_expert(x, num_tokens, out);
}

void MoeBlock::route(const float* x, int64_t num_tokens, const ExpertLimit& limit, Routing& routing) const {
  switch (routing_kind_) {
    case RoutingKind::Softmax:
      route_tokens(x, num_tokens, router_, top_k_, normalize_top_k_, routing, limit);
      return;
    case RoutingKind::SigmoidGrouped:
      if (limit.active()) throw Error("an expert limit is implemented for softmax routing only");
      route_tokens_grouped_sigmoid(x, num_tokens, router_, correction_bias_.data(), top_k_, grouped_rule_, routing);
      return;
  }
}

void MoeBlock::add_shared_expert(const float* x, int64_t num_tokens, float* out) const {
  const int64_t hidden = experts_.hidden_size;
  // Kept per thread from call to call, as the model's other activations (see CausalLm's scratch).
  thread_local std::vector<float> shared, gate;
  shared.resize(static_cast<size_t>(num_tokens * hidden));
  shared_expert_->forward(x, num_tokens, shared.data());
  if (!shared_gate_) {
    for (int64_t i = 0; i < num_tokens * hidden; ++i) out[i] += shared[i];
    return;
  }
  gate.resize(static_cast<size_t>(num_tokens));
  linear(x, num_tokens, *shared_gate_, gate.data());
  for (int64_t t = 0; t < num_tokens; ++t) {
    const float g = sigmoid(gate[t]);
    for (int64_t i = 0; i < hidden; ++i) out[t * hidden + i] += g * shared[t * hidden + i];
  }
}

}  // namespace moe
