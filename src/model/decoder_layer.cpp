#include "model/decoder_layer.h"

#include "kernels/norm.h"
#include "model/safetensors.h"

namespace moe {

DecoderLayer::DecoderLayer(const Checkpoint& ckpt, const ModelConfig& config, const LayerPlan& names, int kv_layer,
                           int capture_index, std::span<const int32_t> held_experts, const RankShards& shards,
                           Communicator* tensor_group)
    : hidden_(config.hidden_size), eps_(static_cast<float>(config.rms_norm_eps)), tensor_group_(tensor_group) {
  input_norm_ = ckpt.vector(names.input_norm, hidden_);
  post_attention_norm_ = ckpt.vector(names.post_attention_norm, hidden_);
  switch (names.attention) {
    case AttentionKind::Gqa: attention_.emplace(ckpt, config, names.gqa, kv_layer, shards.dense); break;
    case AttentionKind::Mla: mla_attention_.emplace(ckpt, config, names.mla, kv_layer, shards.dense); break;
  }
  switch (names.ffn) {
    case FfnKind::Moe: moe_.emplace(ckpt, config, names.moe, capture_index, held_experts, shards); break;
    case FfnKind::Dense: mlp_ = DenseMlp::load(ckpt, names.mlp, hidden_, config.intermediate_size, shards.dense); break;
  }
}

void DecoderLayer::complete_partial_sum(float* partial, size_t count) const {
  if (tensor_group_) tensor_group_->all_reduce_sum(partial, static_cast<int64_t>(count));
}

void DecoderLayer::forward(float* x, const ForwardBatch& batch, KvCache& kv, MoeRunner& runner,
                           RoutingCapture* capture, const ExpertLimit& limit, float* normed, float* branch) const {
  const int64_t T = batch.num_tokens(), H = hidden_;
  const size_t n = static_cast<size_t>(T * H);
  rms_norm(x, T, H, H, input_norm_.data(), eps_, normed);
  if (mla_attention_)
    mla_attention_->forward(normed, batch, kv, branch);
  else
    attention_->forward(normed, batch, kv, branch);
  complete_partial_sum(branch, n);
  for (size_t i = 0; i < n; ++i) x[i] += branch[i];
  rms_norm(x, T, H, H, post_attention_norm_.data(), eps_, normed);
  if (moe_)
    moe_->forward(normed, T, runner, capture, branch, limit);
  else
    mlp_->forward(normed, T, branch);
  complete_partial_sum(branch, n);
  for (size_t i = 0; i < n; ++i) x[i] += branch[i];
}

}  // namespace moe
