#include "model/attention_layer.h"

#include <cstring>
#include <vector>

#include "kernels/linear.h"
#include "kernels/norm.h"
#include "model/attending_runs.h"
#include "model/safetensors.h"

namespace moe {

AttentionLayer::AttentionLayer(const Checkpoint& ckpt, const ModelConfig& config, const AttentionTensorNames& names,
                               int kv_layer, const TensorShard& shard, int64_t input_width)
    : kv_layer_(kv_layer),
      shape_{static_cast<int>(shard.query_heads(config.num_attention_heads).count),
             static_cast<int>(shard.kv_heads(config.num_attention_heads, config.num_key_value_heads).count),
             config.head_dim},
      norm_eps_(static_cast<float>(config.rms_norm_eps)),
      rotary_(config.head_dim, config.rotary_dim, config.rope_theta),
      w_(AttentionWeights<WeightView, VectorParam>::load(
          config, names,
          [&](const std::string& name, int64_t rows, int64_t cols, IndexRange row_part, IndexRange col_part) {
            return ckpt.projection_block(name, rows, cols, row_part, col_part);
          },
          [&](const std::string& name, int64_t n, IndexRange part) { return ckpt.vector_part(name, n, part); }, shard,
          input_width)) {}

void AttentionLayer::forward(const float* x, const ForwardBatch& batch, KvCache& kv, float* out) const {
  const int64_t T = batch.num_tokens();
  const int hd = shape_.head_dim;
  const int64_t q_width = w_.q_weight.rows, kv_width = w_.k_weight.rows;
  // Kept per thread from call to call, as the model's other activations (see CausalLm's scratch):
  // fresh zeroed vectors cost a memset (and, for a prefill, page faults) per layer.
  thread_local std::vector<float> q, k, v, attn;
  q.resize(static_cast<size_t>(T * q_width));
  k.resize(static_cast<size_t>(T * kv_width));
  v.resize(k.size());
  attn.resize(q.size());
  linear(x, T, w_.q_weight, q.data(), w_.q_bias.empty() ? nullptr : w_.q_bias.data());
  linear(x, T, w_.k_weight, k.data(), w_.k_bias.empty() ? nullptr : w_.k_bias.data());
  linear(x, T, w_.v_weight, v.data(), w_.v_bias.empty() ? nullptr : w_.v_bias.data());
  if (!w_.q_norm.empty()) {
    rms_norm(q.data(), T * shape_.num_heads, hd, hd, w_.q_norm.data(), norm_eps_, q.data());
    rms_norm(k.data(), T * shape_.num_kv_heads, hd, hd, w_.k_norm.data(), norm_eps_, k.data());
  }
  // Rotate and store every new token's key and value at its slot before any token attends.
  int64_t t = 0;
  for (const BatchSequence& seq : batch.sequences)
    for (int32_t i = 0; i < seq.num_new_tokens; ++i, ++t) {
      const int32_t pos = batch.positions[t];
      rotary_.apply(q.data() + t * q_width, shape_.num_heads, pos);
      rotary_.apply(k.data() + t * kv_width, shape_.num_kv_heads, pos);
      float* row = kv.row(kv_layer_, seq.new_token_slot(i));  // the key, then the value
      std::memcpy(row, k.data() + t * kv_width, kv_width * sizeof(float));
      std::memcpy(row + kv_width, v.data() + t * kv_width, kv_width * sizeof(float));
    }
  const AttendingRuns runs(batch);
  std::vector<AttentionSequence> sequences;
  for (const AttendingRun& run : runs.runs()) sequences.push_back({run.num_new, run.first_position, run.slots});
  const float* rows = kv.row(kv_layer_, 0);
  causal_attention(q.data(), sequences, rows, rows + kv_width, kv.row_size(kv_layer_), shape_, attn.data());
  linear(attn.data(), T, w_.o_weight, out);
}

}  // namespace moe
